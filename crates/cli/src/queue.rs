//! Waiting for one's turn in a conversation: an operation queued behind another of its topic
//! (one conversation runs one operation at a time) is run as soon as that one ends, whoever
//! ended it. The wait shows once on stderr; Ctrl-C leaves it queued (`rein op cancel ID` drops
//! it).

use rein_core::OperationId;
use rein_operation::{Driver, RunEnd};
use std::time::Duration;

/// Run `id`; while it is queued, wait for its turn and run it then.
pub(crate) async fn run_in_turn(driver: &Driver, id: OperationId) -> anyhow::Result<RunEnd> {
    let mut said = false;
    let cancel = driver.cancel_token();
    loop {
        let end = driver.run(id).await?;
        if end != RunEnd::Queued {
            return Ok(end);
        }
        if !said {
            eprintln!(
                "queued: another operation of this conversation is running or waiting; this one starts when it ends (rein op cancel {id} drops it)"
            );
            said = true;
        }
        tokio::select! {
            () = cancel.cancelled() => return Ok(RunEnd::Queued),
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
    }
}
