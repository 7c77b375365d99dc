//! Fan-out of one operation's events to its streams. The durable event log is the only source
//! of numbered events: the hub carries exactly what a commit made durable (serialized once,
//! shared by every stream of the operation), so a stream that is in step sends it without a
//! database read, and a stream that is not (it fell behind, or the batch does not follow its
//! cursor) reads the log instead. Live events of the step in progress travel too, as previews:
//! a step that is not committed may still be re-run after a crash, so they are never numbered.

use rein_core::engine::ports::EventSink;
use rein_core::event::EventKind;
use rein_core::{AgentEvent, OperationId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

/// One event, serialized once for every stream.
#[derive(Clone, Debug)]
pub struct WireEvent {
    /// Sequence number (the SSE id).
    pub seq: u64,
    /// A `done` or `error` event.
    pub terminal: bool,
    /// The event as JSON.
    pub json: Arc<str>,
}

impl WireEvent {
    /// Serialize `e`; `None` (logged) if it cannot be.
    pub fn of(e: &AgentEvent) -> Option<Self> {
        match serde_json::to_string(e) {
            Ok(json) => Some(Self {
                seq: e.seq,
                terminal: matches!(e.kind, EventKind::Done { .. } | EventKind::Error { .. }),
                json: json.into(),
            }),
            Err(err) => {
                tracing::error!(operation = %e.operation_id, seq = e.seq, error = %err, "event not serializable");
                None
            }
        }
    }
}

/// What a stream is told.
#[derive(Clone, Debug)]
pub enum Signal {
    /// A commit made these events durable, in order.
    Committed(Arc<[WireEvent]>),
    /// An event of the step in progress (a preview).
    Live(Arc<WireEvent>),
    /// Something changed (a run ended): re-read the log.
    Wake,
}

/// Per-operation broadcast channels, created by the first subscriber and dropped with the last
/// ([`Subscription`]'s drop).
#[derive(Default)]
pub struct Hub {
    channels: Mutex<HashMap<OperationId, broadcast::Sender<Signal>>>,
}

/// Signals a slow subscriber may fall behind by before it re-reads the log.
const CAPACITY: usize = 1024;

/// One stream's subscription to an operation's signals. The operation's channel goes with its
/// last subscription: a channel is a ring of [`CAPACITY`] slots (tens of KiB), and one kept for
/// every operation ever watched grew a busy server's memory ~0.4 MiB a second (the soak test,
/// `docs/reliability.md`), since an operation that ended is sent nothing more that would find
/// its channel unheard.
pub struct Subscription {
    hub: Arc<Hub>,
    id: OperationId,
    rx: broadcast::Receiver<Signal>,
}

impl Subscription {
    /// The next signal (`Lagged` when this stream fell behind by more than [`CAPACITY`]).
    pub async fn recv(&mut self) -> Result<Signal, broadcast::error::RecvError> {
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut map = self.hub.channels.lock().unwrap_or_else(|p| p.into_inner());
        // Under the lock nobody subscribes meanwhile; this receiver still counts.
        if map.get(&self.id).is_some_and(|tx| tx.receiver_count() <= 1) {
            map.remove(&self.id);
        }
    }
}

impl Hub {
    /// Subscribe to one operation's signals.
    pub fn subscribe(self: &Arc<Self>, id: OperationId) -> Subscription {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        let rx = map
            .entry(id)
            .or_insert_with(|| broadcast::channel(CAPACITY).0)
            .subscribe();
        Subscription {
            hub: Arc::clone(self),
            id,
            rx,
        }
    }

    /// Operations whose channel is open (each has a stream listening).
    pub fn channels(&self) -> usize {
        self.channels
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// Tell the operation's subscribers, if any (`signal` is only built when there are).
    pub fn send(&self, id: OperationId, signal: impl FnOnce() -> Signal) {
        let mut map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(tx) = map.get(&id)
            && tx.send(signal()).is_err()
        {
            // Nobody listens any more.
            map.remove(&id);
        }
    }

    /// Hand a commit's events to the operation's streams.
    pub fn committed(&self, id: OperationId, events: &[AgentEvent]) {
        self.send(id, || {
            Signal::Committed(events.iter().filter_map(WireEvent::of).collect())
        });
    }

    /// Event streams listening now, over every operation.
    pub fn streams(&self) -> usize {
        let map = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        map.values().map(broadcast::Sender::receiver_count).sum()
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
            .send(event.operation_id, || match WireEvent::of(event) {
                Some(w) => Signal::Live(Arc::new(w)),
                None => Signal::Wake,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_reach_only_the_operations_subscribers_and_idle_channels_are_dropped() {
        let hub = Arc::new(Hub::default());
        let (a, b) = (OperationId::new(), OperationId::new());
        let mut rx = hub.subscribe(a);
        hub.send(a, || Signal::Wake);
        let mut built = false;
        hub.send(b, || {
            built = true;
            Signal::Wake
        });
        assert!(!built, "no subscriber: the signal is not even built");
        assert!(matches!(rx.rx.try_recv(), Ok(Signal::Wake)));
        assert!(rx.rx.try_recv().is_err());
        drop(rx);
        hub.send(a, || Signal::Wake);
        assert!(!hub.has_subscribers(a));
    }

    #[test]
    fn an_operations_channel_goes_with_its_last_subscription_though_nothing_is_sent() {
        let hub = Arc::new(Hub::default());
        let (a, b) = (OperationId::new(), OperationId::new());
        let first = hub.subscribe(a);
        let second = hub.subscribe(a);
        let other = hub.subscribe(b);
        assert_eq!(hub.channels(), 2);
        drop(first);
        assert_eq!(hub.channels(), 2, "a still has a stream");
        drop(second);
        assert_eq!(hub.channels(), 1, "a's channel went with its last stream");
        assert!(!hub.has_subscribers(a));
        assert!(hub.has_subscribers(b));
        drop(other);
        assert_eq!(hub.channels(), 0);
        // Subscribing again opens a new channel that works.
        let mut again = hub.subscribe(a);
        hub.send(a, || Signal::Wake);
        assert!(matches!(again.rx.try_recv(), Ok(Signal::Wake)));
    }

    #[test]
    fn a_commit_is_serialized_once_with_its_end_marked() {
        let hub = Arc::new(Hub::default());
        let id = OperationId::new();
        let mut rx = hub.subscribe(id);
        let events = [
            AgentEvent {
                operation_id: id,
                step: 1,
                seq: 7,
                kind: EventKind::StepStart {
                    phase: "init".into(),
                },
            },
            AgentEvent {
                operation_id: id,
                step: 1,
                seq: 8,
                kind: EventKind::Done {
                    reason: rein_core::state::FinishReason::Completed,
                    reason_detail: None,
                },
            },
        ];
        hub.committed(id, &events);
        let Ok(Signal::Committed(batch)) = rx.rx.try_recv() else {
            panic!("expected a committed batch");
        };
        assert_eq!(batch.iter().map(|w| w.seq).collect::<Vec<_>>(), [7, 8]);
        assert_eq!(
            batch.iter().map(|w| w.terminal).collect::<Vec<_>>(),
            [false, true]
        );
        let back: AgentEvent = serde_json::from_str(&batch[1].json).unwrap();
        assert_eq!(back, events[1]);
    }
}
