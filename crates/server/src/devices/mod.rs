//! The device gateway: devices that joined with `rein connect` hold a WebSocket
//! ([`session`]); operations on `device:NAME` defer their calls of the device's tools (the
//! operation waits in `waiting_for_async_tool`); the gateway sends each awaited call to its
//! device once the step that made it is committed ([`dispatch`]), and turns the device's answer
//! into the call's result (the operation then runs on). A device that is away keeps its calls
//! waiting up to [`DeviceGateway::offline_timeout`], then they fail visibly.
//!
//! At most once across reconnects: a call is sent again on every new connection until it is
//! answered; the device records each call in its ledger before running it and answers a call
//! it has seen from the ledger (its result, or "interrupted" when it stopped mid-call), never
//! running it twice; its results are sent again until the server says `settled`.

pub mod agents;
pub mod dispatch;
pub mod protocol;
pub mod session;

use protocol::ServerMessage;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, mpsc};

/// How long an offline device's calls wait by default.
pub const DEFAULT_OFFLINE_TIMEOUT: Duration = Duration::from_secs(300);

/// One live connection of a device.
struct Connection {
    /// Which connection (a newer one replaces it).
    epoch: u64,
    /// Frames to send it.
    tx: mpsc::UnboundedSender<ServerMessage>,
    /// Calls sent on this connection.
    sent: HashSet<String>,
}

/// An external agent running on a device: whose, where, and its reader.
struct RunningAgent {
    owner: String,
    device: String,
    tx: mpsc::UnboundedSender<agents::AgentFrame>,
}

/// The devices connected to this server, and what was sent to them.
pub struct DeviceGateway {
    connections: Mutex<HashMap<(String, String), Connection>>,
    /// The external agents running on devices, by operation.
    agents: Mutex<HashMap<rein_core::OperationId, RunningAgent>>,
    /// Calls a device took (acknowledged), by call id: one that is never answered was maybe
    /// run, and says so when it fails.
    taken: Mutex<HashSet<String>>,
    epochs: AtomicU64,
    /// Wakes the dispatcher (a connection came, a step parked on a device).
    pub wake: Notify,
    /// How long calls wait for a device that is not connected.
    pub offline_timeout: Duration,
}

impl Default for DeviceGateway {
    fn default() -> Self {
        Self::new(DEFAULT_OFFLINE_TIMEOUT)
    }
}

impl DeviceGateway {
    /// A gateway whose offline devices' calls fail after `offline_timeout`.
    pub fn new(offline_timeout: Duration) -> Self {
        Self {
            connections: Mutex::default(),
            agents: Mutex::default(),
            taken: Mutex::default(),
            epochs: AtomicU64::new(1),
            wake: Notify::new(),
            offline_timeout,
        }
    }

    fn connections(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Connection>> {
        self.connections.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Register a connection of device `name` of `owner` (a previous one is dropped, which
    /// ends its session); returns its epoch.
    pub(crate) fn connect(
        &self,
        owner: &str,
        name: &str,
        tx: mpsc::UnboundedSender<ServerMessage>,
    ) -> u64 {
        let epoch = self.epochs.fetch_add(1, Ordering::Relaxed);
        self.connections().insert(
            (owner.to_owned(), name.to_owned()),
            Connection {
                epoch,
                tx,
                sent: HashSet::new(),
            },
        );
        self.wake.notify_one();
        epoch
    }

    /// Forget connection `epoch` of the device (a newer one stays); the agents it ran lose
    /// their device.
    pub(crate) fn disconnect(&self, owner: &str, name: &str, epoch: u64) {
        let mut c = self.connections();
        let key = (owner.to_owned(), name.to_owned());
        if c.get(&key).is_some_and(|conn| conn.epoch == epoch) {
            c.remove(&key);
            drop(c);
            let mut agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
            agents.retain(|_, a| {
                let lost = a.owner == owner && a.device == name;
                if lost {
                    let _ = a.tx.send(agents::AgentFrame::Lost);
                }
                !lost
            });
        }
    }

    pub(crate) fn register_agent(
        &self,
        op: rein_core::OperationId,
        owner: &str,
        device: &str,
        tx: mpsc::UnboundedSender<agents::AgentFrame>,
    ) {
        self.agents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(
                op,
                RunningAgent {
                    owner: owner.to_owned(),
                    device: device.to_owned(),
                    tx,
                },
            );
    }

    pub(crate) fn forget_agent(&self, op: rein_core::OperationId) {
        self.agents
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&op);
    }

    /// Hand what device `name` of `owner` reported about the agent of `op` to its reader
    /// (nothing when that device runs no agent for it).
    pub(crate) fn agent_frame(
        &self,
        owner: &str,
        name: &str,
        op: rein_core::OperationId,
        frame: agents::AgentFrame,
    ) {
        let agents = self.agents.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = agents.get(&op)
            && a.owner == owner
            && a.device == name
        {
            let _ = a.tx.send(frame);
        }
    }

    /// Send `message` to the device if it is connected; whether it was.
    pub(crate) fn send_if_connected(
        &self,
        owner: &str,
        name: &str,
        message: ServerMessage,
    ) -> bool {
        match self.connections().get(&(owner.to_owned(), name.to_owned())) {
            Some(conn) => conn.tx.send(message).is_ok(),
            None => false,
        }
    }

    /// Whether device `name` of `owner` is connected.
    pub fn is_connected(&self, owner: &str, name: &str) -> bool {
        self.connections()
            .contains_key(&(owner.to_owned(), name.to_owned()))
    }

    /// Close the connection of a revoked device.
    pub fn drop_device(&self, owner: &str, name: &str) {
        let removed = self
            .connections()
            .remove(&(owner.to_owned(), name.to_owned()));
        if let Some(conn) = removed {
            let _ = conn.tx.send(ServerMessage::Refused {
                reason: "this device was revoked".into(),
            });
        }
    }

    /// Send `message` for call `call_id` to the device unless this connection had it already;
    /// whether the device is connected.
    pub(crate) fn send_call(
        &self,
        owner: &str,
        name: &str,
        call_id: &str,
        message: impl FnOnce() -> ServerMessage,
    ) -> bool {
        let mut c = self.connections();
        let Some(conn) = c.get_mut(&(owner.to_owned(), name.to_owned())) else {
            return false;
        };
        if conn.sent.insert(call_id.to_owned()) && conn.tx.send(message()).is_err() {
            conn.sent.remove(call_id);
        }
        true
    }

    /// Send `message` to the device, if connected.
    pub(crate) fn send(&self, owner: &str, name: &str, message: ServerMessage) {
        if let Some(conn) = self.connections().get(&(owner.to_owned(), name.to_owned())) {
            let _ = conn.tx.send(message);
        }
    }

    pub(crate) fn mark_taken(&self, call_id: &str) {
        self.taken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(call_id.to_owned());
    }

    pub(crate) fn was_taken(&self, call_id: &str) -> bool {
        self.taken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(call_id)
    }

    pub(crate) fn forget(&self, call_id: &str) {
        self.taken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(call_id);
    }
}
