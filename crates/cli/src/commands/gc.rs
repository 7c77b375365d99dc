//! `rein gc`: let go of what old finished operations no longer need. Operations that finished
//! (done or failed) more than `--older-than` days ago keep their record and their
//! conversation's messages; their step records, event log and tool results are deleted, in
//! batches (`--apply`; without it, only counted). Running, parked, queued and interrupted
//! operations are never touched. With `--topics-older-than DAYS`, conversations nobody touched
//! for that long go too (their messages and threads; their operations' records stay), unless an
//! operation in them is not done or failed. `rein serve --retain-days N --retain-topic-days N`
//! does the same in the background.

use super::Local;
use rein_store::Compacted;

/// `rein gc` options.
#[derive(clap::Args)]
pub struct GcArgs {
    /// Compact operations that finished more than this many days ago.
    #[arg(long, value_name = "DAYS", default_value_t = 30)]
    pub older_than: u32,
    /// Delete (without it: only say what would go).
    #[arg(long)]
    pub apply: bool,
    /// Operations per transaction.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub batch: u64,
    /// Also delete conversations that got no message for this many days (their operations'
    /// records stay).
    #[arg(long, value_name = "DAYS")]
    pub topics_older_than: Option<u32>,
}

/// Say what `c` removed (or would).
pub fn said(c: &Compacted, applied: bool) -> String {
    format!(
        "{} {}: {} steps, {} events, {} tool results {}",
        crate::output::count(c.operations, "finished operation"),
        if applied { "compacted" } else { "to compact" },
        c.steps,
        c.events,
        c.tool_executions,
        if applied {
            "deleted"
        } else {
            "would be deleted (--apply deletes them)"
        }
    )
}

/// Run `rein gc` on this machine's database.
pub async fn run(l: &Local, a: GcArgs, json: bool) -> anyhow::Result<u8> {
    let store = l.store().await?;
    let before = chrono::Utc::now() - chrono::Duration::days(i64::from(a.older_than));
    let c = rein_store::compact_all(&**store, before, a.batch, a.apply).await?;
    let topics = match a.topics_older_than {
        Some(days) => {
            let before = chrono::Utc::now() - chrono::Duration::days(i64::from(days));
            Some(rein_store::delete_stale_topics(&**store, before, a.batch, a.apply).await?)
        }
        None => None,
    };
    if json {
        println!(
            "{}",
            serde_json::json!({
                "applied": a.apply, "before": before, "operations": c.operations,
                "steps": c.steps, "events": c.events, "tool_executions": c.tool_executions,
                "topics": topics,
            })
        );
    } else {
        eprintln!("{}", said(&c, a.apply));
        if let Some(n) = topics {
            eprintln!(
                "{} {}",
                crate::output::count(n, "untouched conversation"),
                if a.apply {
                    "deleted"
                } else {
                    "to delete (--apply deletes them)"
                }
            );
        }
    }
    Ok(crate::exit::DONE)
}
