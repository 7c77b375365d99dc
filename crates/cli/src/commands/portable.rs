//! `rein export --user NAME FILE` and `rein import FILE`: a user's data as one archive, to move
//! them to another database (SQLite or PostgreSQL, either way). The archive is JSON Lines: a
//! header (`rein_store::ArchiveHeader`), then one row per line (`rein_store::PortableRow`).
//! Both run on the database's machine (the operator's commands, like `rein backup`). An import
//! makes its user; adding to one who exists takes `--merge` (a name may be someone else here).

use super::Local;
use anyhow::{Context as _, bail};
use rein_store::{Accounts, ArchiveHeader, Portable, PortableRow, StoreError};
use std::io::{BufRead as _, Write as _};
use std::path::PathBuf;

/// `rein export` options.
#[derive(clap::Args)]
pub struct ExportArgs {
    /// Whose data.
    #[arg(long, value_name = "NAME")]
    pub user: String,
    /// The archive (a new file: an existing one is not overwritten).
    pub file: PathBuf,
}

/// `rein import` options.
#[derive(clap::Args)]
pub struct ImportArgs {
    /// The archive `rein export` wrote.
    pub file: PathBuf,
    /// The user it becomes (default: the name in the archive), made as a member.
    #[arg(long = "as", value_name = "NAME")]
    pub as_user: Option<String>,
    /// Add it to a user who already exists here (without it, an existing name is refused: it
    /// may be someone else).
    #[arg(long)]
    pub merge: bool,
}

/// Run `rein export`.
pub async fn export(l: &Local, a: ExportArgs, json: bool) -> anyhow::Result<u8> {
    let store = l.store().await?;
    let Some(user) = store.user_by_name(&a.user).await? else {
        bail!("no user `{}` in {}", a.user, l.target);
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    // Everything rein holds of the user, in the clear: for its owner's eyes only.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options
        .open(&a.file)
        .with_context(|| format!("{} (give a new file)", a.file.display()))?;
    let mut out = std::io::BufWriter::new(file);
    let header = ArchiveHeader {
        rein_export: rein_store::ARCHIVE_FORMAT,
        exported_at: chrono::Utc::now(),
        user_id: user.id.clone(),
        user_name: user.name.clone(),
    };
    write_line(&mut out, &header)?;
    let mut rows = 0u64;
    store
        .export_user(&user.id, &mut |row: PortableRow| {
            rows += 1;
            write_line(&mut out, &row)
                .map_err(|e| StoreError::Unsupported(format!("writing the archive: {e}")))
        })
        .await?;
    out.flush()?;
    out.get_ref().sync_all()?;
    if json {
        println!(
            "{}",
            serde_json::json!({"file": a.file.display().to_string(), "user": user.name, "rows": rows})
        );
    } else {
        eprintln!(
            "exported {rows} rows of {} to {}",
            user.name,
            a.file.display()
        );
    }
    Ok(crate::exit::DONE)
}

/// `v` as one line of JSON.
fn write_line<T: serde::Serialize>(out: &mut impl std::io::Write, v: &T) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, v)?;
    out.write_all(b"\n")
}

/// Run `rein import`.
pub async fn import(l: &Local, a: ImportArgs, json: bool) -> anyhow::Result<u8> {
    let file = std::fs::File::open(&a.file).with_context(|| a.file.display().to_string())?;
    let mut lines = std::io::BufReader::new(file).lines();
    let first = lines
        .next()
        .transpose()?
        .with_context(|| format!("{} is empty", a.file.display()))?;
    let header: ArchiveHeader = serde_json::from_str(&first)
        .with_context(|| format!("{} is not a rein export (its first line)", a.file.display()))?;
    if header.rein_export != rein_store::ARCHIVE_FORMAT {
        bail!(
            "{} is format {} of rein's archives; this rein reads format {}",
            a.file.display(),
            header.rein_export,
            rein_store::ARCHIVE_FORMAT
        );
    }
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let line = line?;
        if line.is_empty() {
            continue;
        }
        let row: PortableRow = serde_json::from_str(&line)
            .with_context(|| format!("{} line {}: not a row", a.file.display(), n + 2))?;
        rows.push(row);
    }
    let store = l.store().await?;
    let name = a.as_user.unwrap_or_else(|| header.user_name.clone());
    let user = match store.user_by_name(&name).await? {
        Some(u) if a.merge => u,
        Some(_) => bail!(
            "{} already has a user `{name}`: give --as NEW_NAME, or --merge to add the archive to them",
            l.target
        ),
        None => {
            rein_operation::profile::check_name(&name)?;
            store.create_user(&name).await?
        }
    };
    let imported = store
        .import_user(&header.user_id, &user.id, &rows)
        .await
        .map_err(|e| match e {
            StoreError::Conflict(what) => anyhow::anyhow!(
                "{what} is already in {}: an archive goes into another database, once",
                l.target
            ),
            other => other.into(),
        })?;
    if json {
        println!(
            "{}",
            serde_json::json!({"user": user.name, "tables": imported.tables})
        );
    } else {
        for (table, n) in &imported.tables {
            println!("{table:<20} {n}");
        }
        eprintln!(
            "imported {} rows as {} into {}",
            rows.len(),
            user.name,
            l.target
        );
    }
    Ok(crate::exit::DONE)
}
