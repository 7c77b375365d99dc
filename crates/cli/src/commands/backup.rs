//! `rein backup FILE`: a consistent copy of this machine's SQLite database, taken while other
//! processes use it (SQLite's `VACUUM INTO`); the copy opens as `--db FILE`. A PostgreSQL
//! database is copied with `pg_dump` (docs/deploy.md says how), which this refuses naming.

use super::Local;
use std::path::PathBuf;

/// `rein backup` options.
#[derive(clap::Args)]
pub struct BackupArgs {
    /// The copy (a new file: an existing one is not overwritten).
    pub file: PathBuf,
}

/// Run `rein backup`.
pub async fn run(l: &Local, a: BackupArgs, json: bool) -> anyhow::Result<u8> {
    let store = l.store().await?;
    rein_store::Retention::backup(&**store, &a.file)
        .await
        .map_err(|e| match e {
            rein_store::StoreError::Conflict(f) => anyhow::anyhow!("{f} exists: give a new file"),
            other => anyhow::anyhow!("{other}"),
        })?;
    let bytes = std::fs::metadata(&a.file).map(|m| m.len()).unwrap_or(0);
    if json {
        println!(
            "{}",
            serde_json::json!({"file": a.file.display().to_string(), "bytes": bytes})
        );
    } else {
        eprintln!(
            "backed up {} to {} ({bytes} bytes)",
            l.target,
            a.file.display()
        );
    }
    Ok(crate::exit::DONE)
}
