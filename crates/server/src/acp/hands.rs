//! The editor's hands: the file and shell calls of its sessions' operations done in the editor
//! when it offers to (`fs/read_text_file`, `fs/write_text_file`, `terminal/*`), so the model
//! reads what the editor's buffers hold, the editor sees every write, and commands run in a
//! terminal the person watches. Which calls, and their results' wording, are
//! [`rein_tools::delegate`]'s; the approval and the command guard decided before a call got
//! here; a command runs under `rein sandbox` (this program), confined as rein's shell confines
//! it, unless the operation's sandbox is off.

use super::editor::Editor;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::ToolOutput;
use rein_core::spec::{Sandbox, SandboxMode};
use rein_operation::client_tools::{ClientCall, ClientTools};
use rein_tools::delegate::{self, CommandEnd, Delegable};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The tool host's way to an editor.
struct Hands(Arc<Editor>);

impl Editor {
    /// What a tool host asks to do the calls of this editor's sessions.
    pub fn hands(self: &Arc<Self>) -> Arc<dyn ClientTools> {
        Arc::new(Hands(Arc::clone(self)))
    }
}

impl ClientTools for Hands {
    fn run<'a>(&'a self, call: ClientCall<'a>) -> Option<BoxFuture<'a, ToolOutput>> {
        let offers = self.0.offers_for(call.topic);
        let can = match &call.call {
            Delegable::Read { .. } => offers.read,
            Delegable::Write { .. } => offers.write,
            Delegable::Edit { .. } => offers.read && offers.write,
            Delegable::Run { .. } => offers.terminal,
        };
        if !can {
            return None;
        }
        let session = call.topic;
        Some(
            async move {
                match call.call {
                    Delegable::Read {
                        path,
                        asked,
                        start,
                        end,
                    } => match self.read(session, &path).await {
                        Ok(text) => delegate::read_output(&text, &asked, start, end),
                        Err(why) => ToolOutput::failed(format!("cannot read `{asked}`: {why}")),
                    },
                    Delegable::Write {
                        path,
                        shown,
                        content,
                    } => match self.write(session, &path, &content).await {
                        Ok(()) => delegate::write_output(content.len(), &shown),
                        Err(why) => ToolOutput::failed(format!("cannot write `{shown}`: {why}")),
                    },
                    Delegable::Edit {
                        path,
                        asked,
                        shown,
                        old,
                        new,
                    } => {
                        let text = match self.read(session, &path).await {
                            Ok(text) => text,
                            Err(why) => {
                                return ToolOutput::failed(format!("cannot read `{asked}`: {why}"));
                            }
                        };
                        let text = match delegate::edited(&text, &asked, &old, &new) {
                            Ok(text) => text,
                            Err(refused) => return ToolOutput::failed(refused.to_string()),
                        };
                        match self.write(session, &path, &text).await {
                            Ok(()) => delegate::edit_output(&shown),
                            Err(why) => {
                                ToolOutput::failed(format!("cannot write `{shown}`: {why}"))
                            }
                        }
                    }
                    Delegable::Run {
                        command,
                        workdir,
                        timeout,
                        sandbox,
                    } => {
                        // A sub-agent's call is not one the session shows.
                        let shown = self
                            .0
                            .shows(session, call.operation_id)
                            .then_some(call.call_id);
                        self.command(session, shown, &command, &workdir, timeout, sandbox)
                            .await
                    }
                }
            }
            .boxed(),
        )
    }
}

impl Hands {
    /// The text of `path` as the editor holds it (its unsaved changes too).
    async fn read(&self, session: &str, path: &Path) -> Result<String, String> {
        let answer = self
            .0
            .ask(
                "fs/read_text_file",
                json!({"sessionId": session, "path": path}),
            )
            .await
            .map_err(|e| said(&e))?;
        answer["content"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "the editor's answer has no content".to_owned())
    }

    /// Have the editor write `content` to `path` (its folder made here first).
    async fn write(&self, session: &str, path: &Path, content: &str) -> Result<(), String> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create its directory: {e}"))?;
        }
        self.0
            .ask(
                "fs/write_text_file",
                json!({"sessionId": session, "path": path, "content": content}),
            )
            .await
            .map(|_| ())
            .map_err(|e| said(&e))
    }

    /// Run `command` in a terminal of the editor's, in `workdir`, confined by `sandbox`, shown
    /// under call `call_id` (when the session shows the call); killed after `timeout`.
    async fn command(
        &self,
        session: &str,
        call_id: Option<&str>,
        command: &str,
        workdir: &Path,
        timeout: Duration,
        sandbox: Sandbox,
    ) -> ToolOutput {
        let (program, args) = match confined(command, workdir, sandbox) {
            Ok(argv) => argv,
            Err(why) => return ToolOutput::failed(why),
        };
        let created = self
            .0
            .ask(
                "terminal/create",
                json!({
                    "sessionId": session,
                    "command": program,
                    "args": args,
                    "cwd": workdir,
                    "outputByteLimit": delegate::output_limit(),
                }),
            )
            .await;
        let terminal = match created {
            Ok(v) => match v["terminalId"].as_str() {
                Some(id) => id.to_owned(),
                None => {
                    return ToolOutput::failed(
                        "the editor made no terminal for the command; nothing was run",
                    );
                }
            },
            Err(e) => {
                return ToolOutput::failed(format!(
                    "the editor could not start the command: {}; nothing was run",
                    said(&e)
                ));
            }
        };
        // Whatever happens to this call from here (the process stopping drops it), the terminal
        // is let go.
        self.0.running(session, &terminal, true);
        let held = Held {
            editor: Arc::clone(&self.0),
            session: session.to_owned(),
            terminal: terminal.clone(),
            released: false,
        };
        let ids = json!({"sessionId": session, "terminalId": terminal});
        if let Some(call_id) = call_id {
            self.0
                .update(
                    session,
                    json!({
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "status": "in_progress",
                        "content": [{"type": "terminal", "terminalId": terminal}],
                    }),
                )
                .await;
        }
        let waited =
            tokio::time::timeout(timeout, self.0.ask("terminal/wait_for_exit", ids.clone())).await;
        let end = match waited {
            Ok(Ok(exit)) => exit_of(&exit),
            Ok(Err(e)) => {
                held.release(true).await;
                return ToolOutput::failed(format!(
                    "the editor lost the command: {}; it may or may not have run",
                    said(&e)
                ));
            }
            Err(_) => {
                let _ = self.0.ask("terminal/kill", ids.clone()).await;
                CommandEnd::TimedOut(timeout)
            }
        };
        let output = self.0.ask("terminal/output", ids).await;
        held.release(false).await;
        match output {
            Ok(o) => delegate::run_output(
                &end,
                o["output"].as_str().unwrap_or_default(),
                o["truncated"].as_bool().unwrap_or(false),
            ),
            Err(e) => delegate::run_output(
                &end,
                &format!("(the editor did not give the output: {})", said(&e)),
                false,
            ),
        }
    }
}

/// A terminal of the editor's, released once (killed first when its call was dropped).
struct Held {
    editor: Arc<Editor>,
    session: String,
    terminal: String,
    released: bool,
}

impl Held {
    async fn release(mut self, kill: bool) {
        self.released = true;
        self.editor.running(&self.session, &self.terminal, false);
        let ids = json!({"sessionId": self.session, "terminalId": self.terminal});
        if kill {
            let _ = self.editor.ask("terminal/kill", ids.clone()).await;
        }
        let _ = self.editor.ask("terminal/release", ids).await;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        self.editor.running(&self.session, &self.terminal, false);
        // The call was dropped mid-command (the operation was cancelled): stop the command.
        let editor = Arc::clone(&self.editor);
        let ids = json!({"sessionId": self.session, "terminalId": self.terminal});
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = editor.ask("terminal/kill", ids.clone()).await;
                let _ = editor.ask("terminal/release", ids).await;
            });
        }
    }
}

/// The program and arguments that run `command` (with `sh -c`) in `workdir` confined by
/// `sandbox`: this program's `rein sandbox` around it, unless the sandbox is off.
fn confined(
    command: &str,
    workdir: &Path,
    sandbox: Sandbox,
) -> Result<(String, Vec<String>), String> {
    let shell = ["sh".to_owned(), "-c".to_owned(), command.to_owned()];
    if sandbox.mode == SandboxMode::Off {
        let [program, rest @ ..] = shell;
        return Ok((program, rest.to_vec()));
    }
    let rein = std::env::current_exe().map_err(|e| {
        format!("cannot find rein's own program to confine the command with: {e}; nothing was run")
    })?;
    let mut args = vec![
        "sandbox".to_owned(),
        "--sandbox".to_owned(),
        sandbox.mode.as_str().to_owned(),
        "--workdir".to_owned(),
        workdir.display().to_string(),
    ];
    if sandbox.network {
        args.push("--network".to_owned());
    }
    args.push("--".to_owned());
    args.extend(shell);
    Ok((rein.display().to_string(), args))
}

/// How a command ended, from `terminal/wait_for_exit`'s answer.
fn exit_of(exit: &Value) -> CommandEnd {
    match (exit["exitCode"].as_i64(), exit["signal"].as_str()) {
        (Some(code), _) => CommandEnd::Exited(i32::try_from(code).unwrap_or(i32::MAX)),
        (None, Some(signal)) => CommandEnd::Signalled(signal.to_owned()),
        (None, None) => CommandEnd::Signalled("unknown".to_owned()),
    }
}

/// What an editor's error says.
fn said(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(m) => m.to_owned(),
        None => error.to_string(),
    }
}
