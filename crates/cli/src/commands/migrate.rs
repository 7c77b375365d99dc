//! `rein migrate`: bring the database's schema up to date (opening it does) and list its
//! migrations.

use super::Local;
use crate::exit;

/// List the applied migrations and the schema version this build knows.
pub async fn run(l: &Local, json: bool) -> anyhow::Result<u8> {
    let store = l.store().await?;
    let applied = store.migrations_applied().await?;
    let known = rein_store::Schema::current(store.dialect()).latest();
    let version = applied.last().map_or(0, |m| m.version);
    if json {
        println!(
            "{}",
            serde_json::json!({"schema_version": version, "known": known, "migrations": applied})
        );
    } else {
        for m in &applied {
            println!("{:>4}  {}  {}", m.version, m.applied_at, m.description);
        }
        println!("schema version {version}; this rein knows {known}");
    }
    Ok(exit::DONE)
}
