//! Pipelined commits ([`Durability::Pipelined`]): a step's commit lands while the next step
//! runs, so a model call does not wait for the write of the step before it. What makes that
//! safe is what may run before the commit lands: only work that is safe to repeat. A model call
//! is (after a crash, the lost step is run again and asks again); so is a pure tool. Anything
//! else waits at [`Landing::wait`] first: a tool with effects runs only once every earlier step
//! is on disk, so its intent is recorded after the model step that asked for it, as in
//! [`Durability::Sync`]. The run's live previews are held while a commit is in flight and sent
//! after its events, so a stream sees the same order in both modes.

use rein_core::engine::EventSink;
use rein_core::engine::ports::PortError;
use rein_core::failure::Fault;
use rein_core::{AgentEvent, MessageId};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// When a step's commit must be on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Every commit lands before the next step starts (LangGraph's `sync`).
    Sync,
    /// A step that leaves the operation running (no person asked, nothing spawned, not ended)
    /// commits while the next step runs; effects and every stop wait for it. A crash loses at
    /// most that step, which is run again: its model call asked again, its pure tools run
    /// again. The default.
    #[default]
    Pipelined,
}

impl Durability {
    /// Its name in configuration (`sync`, `pipelined`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Pipelined => "pipelined",
        }
    }
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sync" => Ok(Self::Sync),
            "pipelined" => Ok(Self::Pipelined),
            other => Err(format!(
                "durability {other:?} is not one of: sync, pipelined"
            )),
        }
    }
}

/// Where the commit before the running step is.
#[derive(Clone, Debug)]
enum Flight {
    /// On disk (or there was none).
    Landed,
    /// Being written; it adds these messages.
    Writing(Arc<HashSet<MessageId>>),
    /// It did not land (a store failure, or another process committed that step first): the
    /// running step is thrown away, so nothing of it may take effect.
    Lost,
}

/// One run's view of its commit in flight, shared by the driver (which starts and ends it),
/// the tool port (which waits before an effect), the model port (which knows the messages it
/// adds, and the one the step's check found) and the live sink (which holds previews until it
/// lands).
pub(crate) struct Landing {
    flight: watch::Sender<Flight>,
    /// Previews of the running step, held while the commit before it is in flight.
    held: Mutex<Vec<AgentEvent>>,
    /// A message the driver read as existing just before the running step (its check).
    checked: Mutex<Option<MessageId>>,
    sink: Option<Arc<dyn EventSink>>,
}

impl Landing {
    /// Nothing in flight; previews go to `sink`.
    pub(crate) fn new(sink: Option<Arc<dyn EventSink>>) -> Arc<Self> {
        Arc::new(Self {
            flight: watch::channel(Flight::Landed).0,
            held: Mutex::new(Vec::new()),
            checked: Mutex::new(None),
            sink,
        })
    }

    /// A commit adding `messages` is being written.
    pub(crate) fn begin(&self, messages: HashSet<MessageId>) {
        self.flight
            .send_replace(Flight::Writing(Arc::new(messages)));
    }

    /// The commit in flight ended: on disk (`true`, the held previews go out now, after its
    /// events) or not (they are dropped with the step they preview).
    pub(crate) fn end(&self, landed: bool) {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let previews = std::mem::take(&mut *held);
        self.flight
            .send_replace(if landed { Flight::Landed } else { Flight::Lost });
        if landed && let Some(sink) = &self.sink {
            for e in &previews {
                sink.publish(e);
            }
        }
    }

    /// Back to nothing in flight (the run continues from what is on disk).
    pub(crate) fn reset(&self) {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).clear();
        self.flight.send_replace(Flight::Landed);
    }

    /// Wait until every earlier commit of the run is on disk. An error (a store fault: the
    /// step is not recorded) when it did not land.
    pub(crate) async fn wait(&self) -> Result<(), PortError> {
        let mut rx = self.flight.subscribe();
        let flight = rx
            .wait_for(|f| !matches!(f, Flight::Writing(_)))
            .await
            .map(|f| f.clone())
            .unwrap_or(Flight::Lost);
        match flight {
            Flight::Landed => Ok(()),
            Flight::Writing(_) | Flight::Lost => Err(PortError::new(
                Fault::Store,
                "the step before this one was not recorded",
            )),
        }
    }

    /// Whether the commit in flight adds message `id` (it exists once that commit lands, and
    /// nothing of the running step is committed before).
    pub(crate) fn adds(&self, id: MessageId) -> bool {
        matches!(&*self.flight.borrow(), Flight::Writing(m) if m.contains(&id))
    }

    /// The running step's check read message `id` as existing (`None`: it read none, or the
    /// step ended).
    pub(crate) fn checked(&self, id: Option<MessageId>) {
        *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = id;
    }

    /// Whether message `id` is known to exist for the running step without reading the store:
    /// the commit in flight adds it, or the step's check just read it.
    pub(crate) fn knows(&self, id: MessageId) -> bool {
        self.adds(id) || *self.checked.lock().unwrap_or_else(|p| p.into_inner()) == Some(id)
    }
}

impl EventSink for Landing {
    fn publish(&self, event: &AgentEvent) {
        let Some(sink) = &self.sink else { return };
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        // Decided under the lock `end` takes: a preview is held or sent, never both or lost.
        if matches!(&*self.flight.borrow(), Flight::Writing(_)) {
            held.push(event.clone());
        } else {
            drop(held);
            sink.publish(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durability_reads_its_two_names_and_refuses_others() {
        for d in [Durability::Sync, Durability::Pipelined] {
            assert_eq!(d.as_str().parse::<Durability>(), Ok(d));
        }
        let e = "async".parse::<Durability>().unwrap_err();
        assert!(
            e.contains("\"async\"") && e.contains("sync, pipelined"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_wait_ends_when_the_commit_lands_and_fails_when_it_is_lost() {
        let landing = Landing::new(None);
        assert!(landing.wait().await.is_ok(), "nothing in flight");
        let id = MessageId::new();
        landing.begin(HashSet::from([id]));
        assert!(landing.adds(id));
        assert!(!landing.adds(MessageId::new()));
        let waiting = {
            let l = Arc::clone(&landing);
            tokio::spawn(async move { l.wait().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        landing.end(true);
        assert!(waiting.await.unwrap().is_ok());
        assert!(!landing.adds(id), "landed: nothing in flight");
        landing.begin(HashSet::new());
        landing.end(false);
        let e = landing.wait().await.unwrap_err();
        assert!(e.code.is_unrecorded(), "{e:?}");
        landing.reset();
        assert!(landing.wait().await.is_ok());
    }

    #[test]
    fn previews_wait_for_the_commit_in_flight_and_go_after_it() {
        struct Seen(Mutex<Vec<u64>>);
        impl EventSink for Seen {
            fn publish(&self, e: &AgentEvent) {
                self.0.lock().unwrap().push(e.seq);
            }
        }
        let seen = Arc::new(Seen(Mutex::default()));
        let landing = Landing::new(Some(Arc::clone(&seen) as Arc<dyn EventSink>));
        let event = |seq| AgentEvent {
            operation_id: rein_core::OperationId::new(),
            step: 1,
            seq,
            kind: rein_core::event::EventKind::StepStart {
                phase: "user_input".into(),
            },
        };
        landing.publish(&event(1));
        landing.begin(HashSet::new());
        landing.publish(&event(2));
        landing.publish(&event(3));
        assert_eq!(*seen.0.lock().unwrap(), [1]);
        landing.end(true);
        assert_eq!(*seen.0.lock().unwrap(), [1, 2, 3]);
        landing.begin(HashSet::new());
        landing.publish(&event(4));
        landing.end(false);
        landing.publish(&event(5));
        assert_eq!(
            *seen.0.lock().unwrap(),
            [1, 2, 3, 5],
            "a lost step's previews are dropped"
        );
    }
}
