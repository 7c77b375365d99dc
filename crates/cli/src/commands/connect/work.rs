//! What a device does with what the server sends: a call run here after it is checked again,
//! and an external agent started here and streamed back.

use super::Device;
use rein_core::spec::{Sandbox, SandboxMode};
use rein_server::devices::protocol::{DeviceCall, DeviceMessage};
use rein_tools::ToolContext;
use std::sync::Arc;
use std::time::Duration;

impl Device {
    /// Start the external agent the server asks for, if this device runs that kind (its own
    /// configuration says which, as for `rein run`): in its working directory, its output
    /// streamed through `out` until it ends or is stopped. Returns what stops it.
    pub(super) fn start_agent(
        &self,
        start: rein_server::devices::protocol::AgentStart,
        out: tokio::sync::mpsc::UnboundedSender<DeviceMessage>,
    ) -> Arc<tokio::sync::Notify> {
        use rein_operation::external::{self, AgentRun};
        let stop = Arc::new(tokio::sync::Notify::new());
        let op = start.operation_id;
        let refuse = |why: String| {
            let _ = out.send(DeviceMessage::AgentEnded {
                operation_id: op,
                code: None,
                stderr: String::new(),
                refused: Some(why),
            });
        };
        let Ok(kind) = start.kind.parse::<rein_core::spec::ExternalKind>() else {
            refuse(format!("no agent kind `{}`", start.kind));
            return stop;
        };
        let Some(command) = self.external.get(kind) else {
            refuse(format!(
                "device `{}` does not run {} (enable it there: [external.{}] or {})",
                self.name,
                kind.as_str(),
                kind.as_str(),
                external::env_var(kind)
            ));
            return stop;
        };
        let program = match external::resolve_program(kind, &command.program) {
            Ok(p) => p,
            Err(e) => {
                refuse(format!("on device `{}`: {e}", self.name));
                return stop;
            }
        };
        let args: Vec<String> = command.args.iter().cloned().chain(start.args).collect();
        let env: Vec<(&str, String)> = start
            .session
            .map(|s| (external::jsonl::SESSION_ENV, s))
            .into_iter()
            .collect();
        let mut proc =
            match external::process::spawn(&program, &args, &self.workdir, &env, start.input) {
                Ok(p) => p,
                Err(e) => {
                    refuse(format!(
                        "on device `{}`: cannot start {}: {e}",
                        self.name,
                        program.display()
                    ));
                    return stop;
                }
            };
        let stopped = Arc::clone(&stop);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    line = proc.next_line() => match line {
                        Some(line) => {
                            let _ = out.send(DeviceMessage::AgentLine { operation_id: op, line });
                        }
                        None => break,
                    },
                    () = stopped.notified() => {
                        proc.stop().await;
                        break;
                    }
                }
            }
            let (code, stderr) = match Box::new(proc).finish(Duration::from_secs(5)).await {
                Ok(end) => end,
                Err(why) => (None, why.to_string()),
            };
            let _ = out.send(DeviceMessage::AgentEnded {
                operation_id: op,
                code,
                stderr,
                refused: None,
            });
        });
        stop
    }

    /// Run one call here: checked again (its tool, its arguments, the command guard: a
    /// command the guard flags runs only when a person approved it), in the stricter of this
    /// device's sandbox and the operation's.
    pub(super) async fn run(&self, call: &DeviceCall) -> (bool, String) {
        let Some(tool) = self.tools.get(&call.tool) else {
            return (false, format!("This device has no tool `{}`.", call.tool));
        };
        let args: serde_json::Value = match serde_json::from_str(&call.arguments) {
            Ok(a) => a,
            Err(e) => return (false, format!("The arguments are not JSON: {e}")),
        };
        if let Err(e) = self.tools.validate(&call.tool, &call.api, &args) {
            return (
                false,
                format!("Invalid arguments for `{}/{}`: {e}", call.tool, call.api),
            );
        }
        let rules = rein_core::intervention::default_security_blacklist();
        if let Some(rule) = rein_core::intervention::blacklist_match(rules, &args)
            && !call.approved
        {
            return (
                false,
                format!(
                    "Refused on the device: the command guard flags it ({}); it runs only after a person approves it.",
                    rule.id
                ),
            );
        }
        let cx = ToolContext {
            knowledge: Vec::new(),
            egress: None,
            owner: None,
            operation_id: call.operation_id,
            working_directory: Some(self.workdir.clone()),
            idempotency_key: format!("{}:{}", call.operation_id, call.call_id),
            available_tools: self
                .tools
                .manifests()
                .into_iter()
                .map(|m| m.identifier)
                .collect(),
            scope: format!("device:{}", self.name),
            skill_dirs: Vec::new(),
            question_briefs: false,
            sandbox: stricter(self.sandbox, call.sandbox),
            topic: None,
            earlier_calls: 0,
            job: Default::default(),
            files_owner: "local".into(),
        };
        match Arc::clone(tool).call(&cx, &call.api, args).await {
            Ok(out) => (out.success, out.content),
            Err(e) => (false, format!("Tool `{}` failed: {}", call.tool, e.message)),
        }
    }
}

/// The stricter of two sandboxes: the narrower mode, network only when both allow it.
fn stricter(a: Sandbox, b: Sandbox) -> Sandbox {
    let rank = |m: SandboxMode| match m {
        SandboxMode::ReadOnly => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::Off => 2,
    };
    let mode = if rank(a.mode) <= rank(b.mode) {
        a.mode
    } else {
        b.mode
    };
    Sandbox {
        mode,
        network: (a.network || a.mode == SandboxMode::Off)
            && (b.network || b.mode == SandboxMode::Off),
    }
}
