//! Wake-ups for event streams. The durable event log is the only source of numbered events;
//! the hub only tells a stream of one operation that a step was committed (read the log now)
//! and passes along live events of the step in progress (shown as previews, never numbered:
//! a step that is not committed may still be re-run after a crash).

use rein_core::engine::ports::EventSink;
use rein_core::{AgentEvent, OperationId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// What a stream is told.
#[derive(Clone, Debug)]
pub enum Signal {
    /// A step of the operation was committed.
    Committed,
    /// An event of the step in progress.
    Live(Arc<AgentEvent>),
}

/// Per-operation broadcast channels, created by the first subscriber and dropped with the last.
#[derive(Default)]
pub struct Hub {
    channels: Mutex<HashMap<OperationId, broadcast::Sender<Signal>>>,
}

/// Signals a slow subscriber may fall behind by before it re-reads the log.
const CAPACITY: usize = 1024;

impl Hub {
    /// Subscribe to one operation's signals.
    pub fn subscribe(&self, id: OperationId) -> broadcast::Receiver<Signal> {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(id)
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe()
    }

    /// Tell the operation's subscribers, if any.
    pub fn send(&self, id: OperationId, signal: impl FnOnce() -> Signal) {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(&id)
            && tx.send(signal()).is_err()
        {
            // Nobody listens any more.
            map.remove(&id);
        }
    }

    /// Whether anyone listens to the operation.
    pub fn has_subscribers(&self, id: OperationId) -> bool {
        let map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.get(&id).is_some_and(|tx| tx.receiver_count() > 0)
    }
}

/// The driver's live sink: events of running steps go to their streams' previews.
pub struct HubSink(pub Arc<Hub>);

impl EventSink for HubSink {
    fn publish(&self, event: &AgentEvent) {
        self.0
            .send(event.operation_id, || Signal::Live(Arc::new(event.clone())));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_reach_only_the_operations_subscribers_and_idle_channels_are_dropped() {
        let hub = Hub::default();
        let (a, b) = (OperationId::new(), OperationId::new());
        let mut rx = hub.subscribe(a);
        hub.send(a, || Signal::Committed);
        let mut built = false;
        hub.send(b, || {
            built = true;
            Signal::Committed
        });
        assert!(!built, "no subscriber: the signal is not even built");
        assert!(matches!(rx.try_recv(), Ok(Signal::Committed)));
        assert!(rx.try_recv().is_err());
        drop(rx);
        hub.send(a, || Signal::Committed);
        assert!(!hub.has_subscribers(a));
    }
}
