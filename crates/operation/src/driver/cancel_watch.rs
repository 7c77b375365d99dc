//! Cancel requests for the runs a process drives, found by one poll for all of them: a request
//! (`Store::request_cancel`, made by any process) cancels the run within [`POLL`]. Each run
//! used to poll its own record, so a thousand runs in flight made four thousand queries a
//! second, more than their commits; now a poll is one query per 500 runs.

use rein_core::OperationId;
use rein_store::Store;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How often cancel requests are looked for.
const POLL: Duration = Duration::from_millis(250);

/// The runs being watched and the task that polls for them. Shared by every driver of a
/// process ([`crate::Host::driver`]); a driver made alone has its own.
pub struct CancelWatch {
    store: Arc<dyn Store>,
    state: Arc<Mutex<Watched>>,
}

#[derive(Default)]
struct Watched {
    /// Each watched operation's runs: a key (to stop watching that one) and what to cancel.
    runs: HashMap<OperationId, Vec<(u64, CancellationToken)>>,
    next: u64,
    /// The polling task while anything is watched. It clears this itself, under the lock, when
    /// nothing is left; one whose runtime went away shows as finished and is started again.
    poller: Option<tokio::task::JoinHandle<()>>,
}

fn lock(m: &Mutex<Watched>) -> std::sync::MutexGuard<'_, Watched> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CancelWatch {
    /// Watch for cancel requests in `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            state: Arc::default(),
        }
    }

    /// Cancel `token` when operation `id` gets a cancel request, until the returned guard is
    /// dropped.
    pub(crate) fn watch(&self, id: OperationId, token: CancellationToken) -> Watching {
        let mut w = lock(&self.state);
        let key = w.next;
        w.next += 1;
        w.runs.entry(id).or_default().push((key, token));
        if w.poller.as_ref().is_none_or(|p| p.is_finished()) {
            w.poller = Some(tokio::spawn(poll(
                Arc::clone(&self.store),
                Arc::clone(&self.state),
            )));
        }
        Watching {
            state: Arc::clone(&self.state),
            id,
            key,
        }
    }
}

async fn poll(store: Arc<dyn Store>, state: Arc<Mutex<Watched>>) {
    loop {
        tokio::time::sleep(POLL).await;
        let ids: Vec<OperationId> = {
            let mut w = lock(&state);
            if w.runs.is_empty() {
                w.poller = None;
                return;
            }
            w.runs.keys().copied().collect()
        };
        // A failed poll is tried again at the next tick; the run's own store calls report
        // a database that is gone.
        let Ok(cancelled) = store.cancels_requested(&ids).await else {
            continue;
        };
        let w = lock(&state);
        for id in cancelled {
            for (_, token) in w.runs.get(&id).into_iter().flatten() {
                token.cancel();
            }
        }
    }
}

/// A run being watched; dropping it stops watching.
pub(crate) struct Watching {
    state: Arc<Mutex<Watched>>,
    id: OperationId,
    key: u64,
}

impl Drop for Watching {
    fn drop(&mut self) {
        let mut w = lock(&self.state);
        if let Some(runs) = w.runs.get_mut(&self.id) {
            runs.retain(|(k, _)| *k != self.key);
            if runs.is_empty() {
                w.runs.remove(&self.id);
            }
        }
    }
}
