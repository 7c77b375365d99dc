//! The device's ledger: what it did with each call, on disk, so a call that arrives again
//! (after a reconnect, or a restart of the device) is answered, never run twice.

use rein_server::devices::protocol::{DeviceCall, DeviceMessage};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// What this device did with each call, on disk: a line when a call starts (written before
/// it runs), one when it ends (with its result), one when the server recorded the result.
pub(super) struct Ledger {
    file: std::fs::File,
    calls: HashMap<String, Entry>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Entry {
    call: String,
    operation: rein_core::OperationId,
    state: LedgerState,
    #[serde(default)]
    success: bool,
    #[serde(default)]
    content: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum LedgerState {
    Started,
    Done,
    Settled,
}

impl Ledger {
    /// Read the ledger at `path` (created when missing), keeping what is not settled.
    pub(super) fn open(path: &Path) -> anyhow::Result<Self> {
        let mut calls: HashMap<String, Entry> = HashMap::new();
        if let Ok(text) = std::fs::read_to_string(path) {
            for line in text.lines() {
                if let Ok(e) = serde_json::from_str::<Entry>(line) {
                    calls.insert(e.call.clone(), e);
                }
            }
        }
        calls.retain(|_, e| e.state != LedgerState::Settled);
        // Rewritten without what was settled, so it does not grow without end.
        let tmp = path.with_extension("ledger.tmp");
        {
            let mut f = std::fs::File::create(&tmp)?;
            for e in calls.values() {
                writeln!(f, "{}", serde_json::to_string(e)?)?;
            }
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)?;
        let file = std::fs::OpenOptions::new().append(true).open(path)?;
        Ok(Self { file, calls })
    }

    fn write(&mut self, e: Entry) -> std::io::Result<()> {
        let line = serde_json::to_string(&e).map_err(std::io::Error::other)?;
        writeln!(self.file, "{line}")?;
        self.file.sync_data()?;
        self.calls.insert(e.call.clone(), e);
        Ok(())
    }

    /// The answer to a call seen before: its recorded result, or, for one that started and
    /// never finished (this device stopped while it ran), that its outcome is unknown.
    pub(super) fn outcome(&mut self, call_id: &str) -> Option<DeviceMessage> {
        let e = self.calls.get(call_id)?.clone();
        let (success, content) = match e.state {
            LedgerState::Started => {
                let content = "Interrupted: this device stopped while the call ran; whether it took effect is unknown.".to_owned();
                let done = Entry {
                    state: LedgerState::Done,
                    success: false,
                    content: content.clone(),
                    ..e.clone()
                };
                let _ = self.write(done);
                (false, content)
            }
            _ => (e.success, e.content.clone()),
        };
        Some(DeviceMessage::Result {
            operation_id: e.operation,
            call_id: e.call,
            success,
            content,
        })
    }

    pub(super) fn start(&mut self, call: &DeviceCall) -> std::io::Result<()> {
        self.write(Entry {
            call: call.call_id.clone(),
            operation: call.operation_id,
            state: LedgerState::Started,
            success: false,
            content: String::new(),
        })
    }

    pub(super) fn finish(
        &mut self,
        call: &DeviceCall,
        success: bool,
        content: &str,
    ) -> std::io::Result<()> {
        self.write(Entry {
            call: call.call_id.clone(),
            operation: call.operation_id,
            state: LedgerState::Done,
            success,
            content: content.to_owned(),
        })
    }

    pub(super) fn settle(&mut self, call_id: &str) {
        if let Some(e) = self.calls.get(call_id).cloned() {
            let _ = self.write(Entry {
                state: LedgerState::Settled,
                ..e
            });
            self.calls.remove(call_id);
        }
    }

    /// Results the server has not confirmed.
    pub(super) fn unsettled(&self) -> Vec<DeviceMessage> {
        self.calls
            .values()
            .filter(|e| e.state == LedgerState::Done)
            .map(|e| DeviceMessage::Result {
                operation_id: e.operation,
                call_id: e.call.clone(),
                success: e.success,
                content: e.content.clone(),
            })
            .collect()
    }
}
