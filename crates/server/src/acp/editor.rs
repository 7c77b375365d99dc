//! The editor at the other end of an ACP connection: the messages rein sends it, the requests
//! of rein's waiting for its answer, and what it said it can do (`clientCapabilities`). The
//! connection ([`super::serve`]) and the tool host ([`super::hands`]) both talk to it.

use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use tokio::sync::{Mutex, mpsc, oneshot};

/// What the editor offers to do for rein (ACP's client capabilities).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offers {
    /// `fs/read_text_file`.
    pub read: bool,
    /// `fs/write_text_file`.
    pub write: bool,
    /// `terminal/*`.
    pub terminal: bool,
}

impl Offers {
    /// What `initialize`'s `clientCapabilities` offer (anything unsaid is not offered).
    pub fn of(capabilities: &Value) -> Self {
        let yes = |v: &Value| v.as_bool() == Some(true);
        Self {
            read: yes(&capabilities["fs"]["readTextFile"]),
            write: yes(&capabilities["fs"]["writeTextFile"]),
            terminal: yes(&capabilities["terminal"]),
        }
    }
}

/// One editor.
pub struct Editor {
    /// Where messages for the editor go; none once the connection closed (its writer then
    /// ends).
    out: std::sync::Mutex<Option<mpsc::Sender<Value>>>,
    /// Taken once by the connection that writes to the editor.
    outgoing: std::sync::Mutex<Option<mpsc::Receiver<Value>>>,
    next_id: AtomicI64,
    /// Requests rein sent the editor, by id, waiting for its answer.
    waiting: Mutex<HashMap<i64, oneshot::Sender<Result<Value, Value>>>>,
    offers: std::sync::Mutex<Offers>,
    /// The conversations opened on this connection (`session/new`, `session/load`): the calls
    /// of their operations are the editor's to do, when it offers to.
    sessions: std::sync::Mutex<HashSet<String>>,
    /// The operation each session's prompt runs (its calls are shown in the session; its
    /// sub-agents' are not).
    prompts: std::sync::Mutex<HashMap<String, rein_core::OperationId>>,
    /// The terminals running a command for each session (a cancel kills them).
    terminals: std::sync::Mutex<HashMap<String, HashSet<String>>>,
}

impl Default for Editor {
    fn default() -> Self {
        Self::new()
    }
}

impl Editor {
    /// An editor not yet connected.
    pub fn new() -> Self {
        let (out, outgoing) = mpsc::channel(256);
        Self {
            out: std::sync::Mutex::new(Some(out)),
            outgoing: std::sync::Mutex::new(Some(outgoing)),
            next_id: AtomicI64::new(0),
            waiting: Mutex::default(),
            offers: std::sync::Mutex::default(),
            sessions: std::sync::Mutex::default(),
            prompts: std::sync::Mutex::default(),
            terminals: std::sync::Mutex::default(),
        }
    }

    /// The messages for the editor, in order (once: the connection's writer takes them).
    pub(super) fn outgoing(&self) -> Option<mpsc::Receiver<Value>> {
        self.outgoing
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    pub(super) async fn send(&self, message: Value) {
        let out = self.out.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(out) = out {
            let _ = out.send(message).await;
        }
    }

    /// Ask the editor `method`; its answer (`Err`: its error, or the connection closed).
    pub(super) async fn ask(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting.lock().await.insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        rx.await
            .unwrap_or_else(|_| Err(json!("the editor went away")))
    }

    /// The editor answered request `id` of rein's.
    pub(super) async fn answered(&self, id: i64, answer: Result<Value, Value>) {
        if let Some(tx) = self.waiting.lock().await.remove(&id) {
            let _ = tx.send(answer);
        }
    }

    /// Tell the editor something about session `session`.
    pub(super) async fn update(&self, session: &str, update: Value) {
        self.send(json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session, "update": update},
        }))
        .await;
    }

    pub(super) fn set_offers(&self, offers: Offers) {
        *self.offers.lock().unwrap_or_else(|p| p.into_inner()) = offers;
    }

    /// What the editor offers for conversation `topic` (nothing when it is not one of this
    /// connection's sessions).
    pub(super) fn offers_for(&self, topic: &str) -> Offers {
        if self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(topic)
        {
            *self.offers.lock().unwrap_or_else(|p| p.into_inner())
        } else {
            Offers::default()
        }
    }

    pub(super) fn opened(&self, topic: &str) {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(topic.to_owned());
    }

    /// Session `session`'s prompt runs operation `id`.
    pub(super) fn prompting(&self, session: &str, id: rein_core::OperationId) {
        self.prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.to_owned(), id);
    }

    /// Whether operation `id` is the one session `session`'s prompt runs (its tool calls are
    /// the session's to show).
    pub(super) fn shows(&self, session: &str, id: rein_core::OperationId) -> bool {
        self.prompts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            == Some(&id)
    }

    /// Terminal `terminal` runs a command for `session` (`false`: no longer).
    pub(super) fn running(&self, session: &str, terminal: &str, running: bool) {
        let mut all = self.terminals.lock().unwrap_or_else(|p| p.into_inner());
        if running {
            all.entry(session.to_owned())
                .or_default()
                .insert(terminal.to_owned());
        } else if let Some(set) = all.get_mut(session) {
            set.remove(terminal);
            if set.is_empty() {
                all.remove(session);
            }
        }
    }

    /// Kill the commands running in `session`'s terminals (the turn was cancelled): each call
    /// ends with its command killed, and its operation then ends cancelled.
    pub(super) async fn kill_terminals(&self, session: &str) {
        let running: Vec<String> = self
            .terminals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(session)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default();
        for terminal in running {
            let _ = self
                .ask(
                    "terminal/kill",
                    json!({"sessionId": session, "terminalId": terminal}),
                )
                .await;
        }
    }

    /// The connection closed: nothing is the editor's to do any more, rein's requests waiting
    /// for it fail, and what was left to send is the writer's last.
    pub(super) async fn closed(&self) {
        self.out.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.waiting.lock().await.clear();
    }
}
