//! Commits made by other processes sharing the PostgreSQL database wake this process's event
//! streams and its task dispatcher at once (`LISTEN`): a stream of an operation running on
//! another node follows it commit by commit, and a dispatcher waiting for a run that ends on
//! another node ticks, instead of both waiting for their one-second poll, which stays as the
//! fallback for notices lost while the listening connection was down. An operation another
//! process handed over as it stopped wakes this process's recovery sweep, which takes it up.

use crate::hub::{Hub, Signal};
use rein_store::{Notice, SqlStore};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long to wait before listening again after the listener failed.
const RETRY: Duration = Duration::from_secs(5);

/// Forward other processes' commit notices to `hub` and `dispatcher`, and their hand-overs
/// to `recovery`, until `shutdown`; returns at once on SQLite, where no other process commits.
pub async fn forward(
    store: Arc<SqlStore>,
    hub: Arc<Hub>,
    dispatcher: Arc<Notify>,
    recovery: Arc<Notify>,
    shutdown: CancellationToken,
) {
    loop {
        let mut notices = match store.commit_notices().await {
            Ok(Some(n)) => n,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen to commit notices; streams poll the log");
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(RETRY) => continue,
                }
            }
        };
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => return,
                next = notices.next() => next,
            };
            match next {
                // Streams of that operation read the log from their cursor.
                Ok(Notice::Committed(id)) => {
                    hub.send(id, || Signal::Wake);
                    dispatcher.notify_one();
                }
                Ok(Notice::Released(id)) => {
                    tracing::info!(operation = %id, "another process handed an operation over");
                    recovery.notify_one();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "commit notices interrupted; listening again");
                    break;
                }
            }
        }
    }
}
