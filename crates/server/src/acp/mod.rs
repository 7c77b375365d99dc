//! rein as an Agent Client Protocol agent (`rein acp`): an editor (Zed, a JetBrains IDE, a
//! Neovim client) spawns rein and talks JSON-RPC 2.0 over its stdin and stdout, one message per
//! line, as the database's local user.
//!
//! - `initialize` (protocol version 1; sessions can be loaded; prompts take text and embedded
//!   text resources), `authenticate` (nothing to do).
//! - `session/new` makes a conversation (a rein topic; the session id is its id) and
//!   `session/load` replays one of the user's as `user_message_chunk` and
//!   `agent_message_chunk` updates; the session's operations work in its `cwd` (inside the
//!   server's working directory, `--workdir`, when there is one).
//! - `session/prompt` runs one operation on the conversation as `POST /v1/operations` does
//!   (the agent `rein acp --agent NAME` names, or the default one): the model's words stream
//!   as `agent_message_chunk`s (reasoning as `agent_thought_chunk`s), each tool call is a
//!   `tool_call` then `tool_call_update`s (in progress, completed or failed with its output),
//!   the plan a `plan`; a call that needs an approval asks the editor with
//!   `session/request_permission` (allow once; allow always, a grant for the conversation;
//!   reject), a question with options asks the same way with its options, a free-text question
//!   ends the turn with the question (the next prompt answers it). The turn ends with
//!   `end_turn`, `max_tokens` (a token budget), `max_turn_requests` (a step or cost limit) or
//!   `cancelled`; a failed operation is the prompt's error, naming why.
//! - `session/cancel` cancels the turn: its operation (and a command running in the editor's
//!   terminal for it), or, when it comes before the operation started, the operation once it
//!   has. One prompt at a time per session.
//! - When the editor offers them (`clientCapabilities`), its file system and terminal do the
//!   work of `files.read`, `files.write`, `files.edit` and `shell.run` for the operations of
//!   its sessions ([`hands`]): after the approval and the command guard, as any call, and in
//!   the terminal under `rein sandbox`, so the sandbox holds there too.

mod editor;
mod hands;

pub use editor::{Editor, Offers};

use crate::AppState;
use crate::routes::follow::{Seen, follow};
use crate::routes::front_turn::Standing;
use crate::routes::operations::{CreateOperation, DecisionIn, DecisionKind};
use rein_core::OperationId;
use rein_core::event::{EventKind, StreamChunk};
use rein_core::message::Role;
use rein_core::question::Question;
use rein_core::state::{FinishReason, Status};
use rein_operation::AgentProfile;
use rein_store::{Store as _, Topics as _, User};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The ACP version rein speaks.
pub const PROTOCOL_VERSION: u64 = 1;
/// Longest line (one message) rein reads: 16 MiB.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Serve `user` over stdin and stdout until the editor closes stdin; `editor` is the one
/// `app`'s tool host knows (its calls go to it).
pub async fn serve_stdio(
    app: AppState,
    user: User,
    agent: Option<String>,
    editor: Arc<Editor>,
) -> std::io::Result<()> {
    serve(
        app,
        user,
        agent,
        editor,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await
}

/// Serve `user` over `input` and `output` until `input` ends.
pub async fn serve<R, W>(
    app: AppState,
    user: User,
    agent: Option<String>,
    editor: Arc<Editor>,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: tokio::io::AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Some(mut outgoing) = editor.outgoing() else {
        return Err(std::io::Error::other("this editor is connected already"));
    };
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(message) = outgoing.recv().await {
            let mut line = message.to_string();
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                return;
            }
        }
    });
    let acp = Arc::new(Acp {
        app,
        user,
        agent,
        editor: Arc::clone(&editor),
        sessions: Mutex::default(),
    });
    let mut lines = BufReader::new(input);
    let mut line = String::new();
    loop {
        line.clear();
        let n = lines.read_line(&mut line).await?;
        if n == 0 {
            break;
        }
        if line.len() > MAX_LINE {
            acp.send(error(Value::Null, -32600, "a message longer than 16 MiB"))
                .await;
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let message: Value = match serde_json::from_str(line.trim()) {
            Ok(m) => m,
            Err(e) => {
                acp.send(error(Value::Null, -32700, &format!("not JSON: {e}")))
                    .await;
                continue;
            }
        };
        Arc::clone(&acp).take(message).await;
    }
    // The editor went away: running operations go on (as a closed event stream leaves them),
    // with rein's own tools.
    editor.closed().await;
    drop(acp);
    let _ = writer.await;
    Ok(())
}

/// One connection's state.
struct Acp {
    app: AppState,
    user: User,
    agent: Option<String>,
    editor: Arc<Editor>,
    sessions: Mutex<HashMap<String, Session>>,
}

/// A session: a conversation and what runs on it.
#[derive(Clone, Debug, Default)]
struct Session {
    /// A prompt is being taken, from its request's arrival to its answer (one at a time).
    turn: bool,
    /// `session/cancel` came before the turn's operation started: it is cancelled once it has.
    cancelled: bool,
    /// The operation of the prompt under way.
    running: Option<OperationId>,
    /// An operation that ended its turn on a free-text question: the next prompt answers it.
    asking: Option<OperationId>,
    /// Where its operations work: the `cwd` the editor gave (canonical), inside `--workdir`
    /// when there is one.
    cwd: Option<String>,
}

/// A JSON-RPC error to give back.
struct Failure {
    code: i64,
    message: String,
}

impl Failure {
    fn params(message: impl Into<String>) -> Self {
        Self {
            code: -32602,
            message: message.into(),
        }
    }

    fn internal(message: impl Into<String>) -> Self {
        Self {
            code: -32603,
            message: message.into(),
        }
    }
}

impl From<crate::error::ApiError> for Failure {
    fn from(e: crate::error::ApiError) -> Self {
        if e.status.is_client_error() {
            Self::params(e.message)
        } else {
            Self::internal(e.message)
        }
    }
}

impl From<rein_store::StoreError> for Failure {
    fn from(e: rein_store::StoreError) -> Self {
        Self::internal(e.to_string())
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A prompt's params.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptParams {
    session_id: String,
    prompt: Vec<Value>,
}

/// A session's id in params.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct SessionRef {
    session_id: String,
}

impl Acp {
    async fn send(&self, message: Value) {
        self.editor.send(message).await;
    }

    /// Take one message from the editor: a request (answered in the background, so a prompt
    /// does not hold up a cancel), a notification, or the answer to a request of rein's.
    async fn take(self: Arc<Self>, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let id = message.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                // A prompt's turn opens as its request is read, before any later message (a
                // cancel right behind it) is: the cancel then finds the turn.
                if method == "session/prompt"
                    && let Err(f) = self.open_turn(&params).await
                {
                    self.send(error(id, f.code, &f.message)).await;
                    return;
                }
                tokio::spawn(async move {
                    let answer = match self.request(&method, params).await {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(f) => error(id, f.code, &f.message),
                    };
                    self.send(answer).await;
                });
            }
            (Some(method), None) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                if method == "session/cancel"
                    && let Ok(s) = serde_json::from_value::<SessionRef>(params)
                {
                    self.cancel(&s.session_id).await;
                }
            }
            (None, Some(id)) => {
                let Some(n) = id.as_i64() else { return };
                let answer = match message.get("error") {
                    Some(e) => Err(e.clone()),
                    None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                };
                self.editor.answered(n, answer).await;
            }
            (None, None) => {
                self.send(error(
                    Value::Null,
                    -32600,
                    "neither a request, a notification nor an answer",
                ))
                .await;
            }
        }
    }

    /// Ask the editor `method`; its answer (`Err`: its error, or the connection closed).
    async fn ask(&self, method: &str, params: Value) -> Result<Value, Value> {
        self.editor.ask(method, params).await
    }

    /// Tell the editor something about session `session`.
    async fn update(&self, session: &str, update: Value) {
        self.editor.update(session, update).await;
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, Failure> {
        match method {
            "initialize" => {
                self.editor
                    .set_offers(Offers::of(&params["clientCapabilities"]));
                Ok(json!({
                "protocolVersion": PROTOCOL_VERSION,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                    "mcpCapabilities": {"http": false, "sse": false},
                },
                "authMethods": [],
                "agentInfo": {"name": "rein", "title": "rein", "version": env!("CARGO_PKG_VERSION")},
                }))
            }
            "authenticate" => Ok(json!({})),
            "session/new" => {
                let cwd = self.cwd(&params)?;
                let topic = rein_store::new_topic_id();
                self.editor.opened(&topic);
                self.sessions.lock().await.insert(
                    topic.clone(),
                    Session {
                        cwd,
                        ..Session::default()
                    },
                );
                Ok(json!({"sessionId": topic}))
            }
            "session/load" => {
                let cwd = self.cwd(&params)?;
                let s: SessionRef = serde_json::from_value(params)
                    .map_err(|e| Failure::params(format!("params: {e}")))?;
                self.load(&s.session_id, cwd).await?;
                Ok(Value::Null)
            }
            "session/prompt" => {
                let p: PromptParams = serde_json::from_value(params)
                    .map_err(|e| Failure::params(format!("params: {e}")))?;
                let session = p.session_id.clone();
                let answered = self.prompt(p).await;
                if let Some(s) = self.sessions.lock().await.get_mut(&session) {
                    s.turn = false;
                    s.cancelled = false;
                    s.running = None;
                }
                answered
            }
            other => Err(Failure {
                code: -32601,
                message: format!("rein does not offer `{other}`"),
            }),
        }
    }

    /// The directory a session's params give (`cwd`, an absolute path to a directory), as
    /// its operations work in it: canonical, and inside `--workdir` when `rein acp` has one.
    fn cwd(&self, params: &Value) -> Result<Option<String>, Failure> {
        let given = match params.get("cwd") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) => s.clone(),
            Some(other) => return Err(Failure::params(format!("cwd: a path, not {other}"))),
        };
        let path = std::path::Path::new(&given);
        if !path.is_absolute() {
            return Err(Failure::params(format!(
                "cwd `{given}` is not an absolute path"
            )));
        }
        let dir = std::fs::canonicalize(path)
            .ok()
            .filter(|d| d.is_dir())
            .ok_or_else(|| Failure::params(format!("cwd `{given}` is not a directory")))?;
        if let Some(root) = &self.app.runner.host.working_directory {
            let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.into());
            if !dir.starts_with(&root) {
                return Err(Failure::params(format!(
                    "cwd `{given}` is outside the directory rein acp works in ({}, its --workdir)",
                    root.display()
                )));
            }
        }
        Ok(Some(dir.display().to_string()))
    }

    /// Replay conversation `topic` (the user's) to the editor; it works in `cwd` from now on.
    async fn load(&self, topic: &str, cwd: Option<String>) -> Result<(), Failure> {
        rein_operation::check_topic_id(topic).map_err(|e| Failure::params(e.to_string()))?;
        match self.app.store.topic_owner(topic).await? {
            Some(Some(owner)) if owner == self.user.id => {}
            _ => return Err(Failure::params(format!("no session {topic}"))),
        }
        for m in self.app.store.topic_messages(topic).await? {
            let kind = match m.role {
                Role::User => "user_message_chunk",
                Role::Assistant => "agent_message_chunk",
                Role::System | Role::Tool => continue,
            };
            let text = m.text_content();
            if text.trim().is_empty() {
                continue;
            }
            self.update(
                topic,
                json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
            )
            .await;
        }
        self.sessions
            .lock()
            .await
            .entry(topic.to_owned())
            .or_default()
            .cwd = cwd;
        self.editor.opened(topic);
        Ok(())
    }

    /// Open a prompt's turn on the session its params name: refused when the session is
    /// unknown or a prompt is under way.
    async fn open_turn(&self, params: &Value) -> Result<(), Failure> {
        let Some(session) = params.get("sessionId").and_then(Value::as_str) else {
            // The prompt's own parsing names what is wrong.
            return Ok(());
        };
        let mut sessions = self.sessions.lock().await;
        let s = sessions.get_mut(session).ok_or_else(|| {
            Failure::params(format!(
                "no session {session}: session/new or session/load first"
            ))
        })?;
        if s.turn {
            return Err(Failure::params(
                "a prompt is already running in this session",
            ));
        }
        s.turn = true;
        s.cancelled = false;
        Ok(())
    }

    async fn cancel(&self, session: &str) {
        let running = {
            let mut sessions = self.sessions.lock().await;
            let Some(s) = sessions.get_mut(session) else {
                return;
            };
            if s.running.is_none() && s.turn {
                s.cancelled = true;
            }
            s.running
        };
        if let Some(id) = running
            && let Err(e) = self.app.runner.driver().cancel(id).await
        {
            tracing::warn!(operation = %id, error = %e, "an ACP cancel failed");
        }
        // A command under way in the editor's terminal is stopped too (in the background: the
        // editor's answers are read by the loop that called this).
        let editor = Arc::clone(&self.editor);
        let session = session.to_owned();
        tokio::spawn(async move { editor.kill_terminals(&session).await });
    }

    /// One prompt turn: an operation (or the answer to the question the last turn ended on),
    /// followed to its end or to what the editor cannot be asked.
    async fn prompt(&self, p: PromptParams) -> Result<Value, Failure> {
        let session = p.session_id.clone();
        let text = prompt_text(&p.prompt)?;
        let asking = {
            let mut sessions = self.sessions.lock().await;
            let s = sessions.get_mut(&session).ok_or_else(|| {
                Failure::params(format!(
                    "no session {session}: session/new or session/load first"
                ))
            })?;
            s.asking.take()
        };
        // Events from here on are the turn's: a continued operation's earlier ones are not.
        // A call decided here is not asked again while the run that continues records it.
        let (id, cursor, decided) = match asking {
            Some(id) => {
                let cursor = crate::routes::follow::last_seq(&self.app, id).await?;
                let call = self.answer_question(id, &text).await?;
                (id, cursor, HashSet::from([call]))
            }
            None => (self.start(&session, &text).await?, None, HashSet::new()),
        };
        self.editor.prompting(&session, id);
        let cancelled = match self.sessions.lock().await.get_mut(&session) {
            Some(s) => {
                s.running = Some(id);
                s.cancelled
            }
            None => false,
        };
        if cancelled {
            self.cancel(&session).await;
        }
        let ended = self.follow(&session, id, cursor, decided).await;
        if let Ok(Turn::Asked) = ended
            && let Some(s) = self.sessions.lock().await.get_mut(&session)
        {
            s.asking = Some(id);
        }
        match ended? {
            Turn::Asked => Ok(json!({"stopReason": "end_turn"})),
            Turn::Ended => self.stop_reason(id).await,
        }
    }

    async fn start(&self, session: &str, text: &str) -> Result<OperationId, Failure> {
        let cwd = self
            .sessions
            .lock()
            .await
            .get(session)
            .and_then(|s| s.cwd.clone());
        let created = crate::routes::operations::start_in(
            &self.app,
            self.user.clone(),
            CreateOperation {
                input: Some(text.to_owned()),
                edit: None,
                regenerate: None,
                agent: self.agent.clone(),
                group: None,
                topic: Some(session.to_owned()),
                attachments: Vec::new(),
                profile: AgentProfile::default(),
            },
            cwd,
        )
        .await?;
        created
            .operation_id
            .parse()
            .map_err(|_| Failure::internal("an operation id that does not parse"))
    }

    /// Answer the free-text question operation `id` waits on with `text`; the call answered.
    async fn answer_question(&self, id: OperationId, text: &str) -> Result<String, Failure> {
        let pending = crate::routes::front_turn::waiting(&self.app, id).await?;
        let Some(w) = pending
            .iter()
            .find(|w| Question::of_call(&w.call).is_some())
        else {
            return Err(Failure::params(
                "the question this session asked is no longer waiting",
            ));
        };
        let decision = DecisionIn {
            tool_call_id: w.call.id.to_string(),
            decision: DecisionKind::Answer,
            reason: None,
            halt: false,
            text: Some(text.to_owned()),
            option: None,
            grant: None,
        };
        let call = decision.tool_call_id.clone();
        self.decide(id, vec![decision]).await?;
        Ok(call)
    }

    async fn decide(&self, id: OperationId, decisions: Vec<DecisionIn>) -> Result<(), Failure> {
        let record = crate::routes::owned_record(&self.app, &self.user, &id.to_string()).await?;
        crate::routes::operations::apply_decisions(&self.app, &self.user, &record, decisions)
            .await?;
        Ok(())
    }

    /// Follow operation `id` (after event `cursor`) for session `session` until it ends, or
    /// ends the turn on a question the editor answers with its next prompt; calls in `asked`
    /// are decided already.
    async fn follow(
        &self,
        session: &str,
        id: OperationId,
        cursor: Option<u64>,
        mut asked: HashSet<String>,
    ) -> Result<Turn, Failure> {
        let mut events = follow(self.app.clone(), id, cursor, None);
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        let mut streamed = HashSet::new();
        // Answers whose words were streamed; another's come whole with its result.
        let mut spoke = HashSet::new();
        let mut plan = Vec::new();
        loop {
            let look = tokio::select! {
                _ = tick.tick() => true,
                seen = events.recv() => match seen {
                    None => return Ok(Turn::Ended),
                    Some(Seen::Preview(e)) => {
                        if let EventKind::LlmStream { chunk, assistant_message_id } = &e.kind
                            && streamed.insert(e.seq)
                        {
                            spoke.insert(*assistant_message_id);
                            self.chunk(session, chunk).await;
                        }
                        false
                    }
                    Some(Seen::Committed(e)) => {
                        match &e.kind {
                            EventKind::LlmStream { chunk, assistant_message_id } if streamed.insert(e.seq) => {
                                spoke.insert(*assistant_message_id);
                                self.chunk(session, chunk).await;
                            }
                            EventKind::LlmResult { assistant_message_id, content, tool_calls, .. } => {
                                if !spoke.contains(assistant_message_id) {
                                    self.chunk(session, &StreamChunk::Text { text: content.clone() }).await;
                                }
                                for call in tool_calls {
                                    self.update(session, json!({
                                        "sessionUpdate": "tool_call",
                                        "toolCallId": call.id.to_string(),
                                        "title": call.key(),
                                        "kind": tool_kind(call),
                                        "status": "pending",
                                        "rawInput": serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::Null),
                                    })).await;
                                }
                            }
                            EventKind::ToolPending { tool_calls } => {
                                for call in tool_calls {
                                    self.update(session, json!({
                                        "sessionUpdate": "tool_call_update",
                                        "toolCallId": call.id.to_string(),
                                        "status": "in_progress",
                                    })).await;
                                }
                            }
                            EventKind::ToolResult { tool_call_id, status, content, .. } => {
                                let failed = !matches!(status, rein_core::message::ToolStatus::Succeeded);
                                self.update(session, json!({
                                    "sessionUpdate": "tool_call_update",
                                    "toolCallId": tool_call_id.to_string(),
                                    "status": if failed { "failed" } else { "completed" },
                                    "content": [{"type": "content", "content": {"type": "text", "text": content}}],
                                })).await;
                            }
                            EventKind::StepComplete { .. } => {
                                let now = crate::routes::front_turn::plan_of(&self.app, id).await?;
                                if now != plan {
                                    plan = now;
                                    self.update(session, json!({
                                        "sessionUpdate": "plan",
                                        "entries": plan.iter().map(|t| json!({
                                            "content": t.text,
                                            "priority": "medium",
                                            "status": plan_status(t.status),
                                        })).collect::<Vec<_>>(),
                                    })).await;
                                }
                            }
                            _ => {}
                        }
                        crate::routes::front_turn::asks_a_person(&e.kind)
                    }
                },
            };
            if !look {
                continue;
            }
            let fresh = match crate::routes::front_turn::standing(&self.app, id, &asked).await? {
                Standing::Going => continue,
                // Interrupted (a cancel while the model answered) ends the turn too.
                Standing::Stopped => return Ok(Turn::Ended),
                Standing::Asks(fresh) => fresh,
            };
            let mut decisions = Vec::with_capacity(fresh.len());
            for w in &fresh {
                asked.insert(w.call.id.to_string());
                let decided = match Question::of_call(&w.call) {
                    Some(Ok(q)) if q.options.is_empty() => {
                        self.update(
                            session,
                            json!({
                                "sessionUpdate": "agent_message_chunk",
                                "content": {"type": "text", "text": q.question},
                            }),
                        )
                        .await;
                        return Ok(Turn::Asked);
                    }
                    Some(Ok(q)) => self.choose(session, w, &q).await,
                    Some(Err(_)) | None => self.permit(session, w).await,
                };
                let Some(d) = decided else {
                    // The editor cancelled the turn (it sends `session/cancel` too): the
                    // operation ends with it, and its end ends the turn.
                    if let Err(e) = self.app.runner.driver().cancel(id).await {
                        tracing::debug!(operation = %id, error = %e, "an ACP turn's operation was not cancelled");
                    }
                    decisions.clear();
                    break;
                };
                decisions.push(d);
            }
            if !decisions.is_empty() {
                self.decide(id, decisions).await?;
            }
        }
    }

    /// Ask the editor whether `w`'s call may run (`None`: it cancelled the turn).
    async fn permit(&self, session: &str, w: &rein_store::Intervention) -> Option<DecisionIn> {
        let call = &w.call;
        let why = w.reason.as_ref().map(|r| r.line());
        let answer = self
            .ask(
                "session/request_permission",
                json!({
                    "sessionId": session,
                    "toolCall": {
                        "toolCallId": call.id.to_string(),
                        "title": match &why { Some(w) => format!("{} ({w})", call.key()), None => call.key() },
                        "kind": tool_kind(call),
                        "status": "pending",
                        "rawInput": serde_json::from_str::<Value>(&call.arguments).unwrap_or(Value::Null),
                    },
                    "options": [
                        {"optionId": "allow_once", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "allow_always", "name": "Always allow in this conversation", "kind": "allow_always"},
                        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
                    ],
                }),
            )
            .await;
        let chosen = selected(answer);
        let mut d = DecisionIn {
            tool_call_id: call.id.to_string(),
            decision: DecisionKind::Reject,
            reason: None,
            halt: false,
            text: None,
            option: None,
            grant: None,
        };
        match chosen.as_deref() {
            Some("allow_once") => d.decision = DecisionKind::Approve,
            Some("allow_always") => {
                d.decision = DecisionKind::Approve;
                // A call the blacklist or the guard flagged cannot be granted: it is asked every
                // time, so "always" approves this one only.
                if w.reason.as_ref().is_none_or(|r| !r.every_time) {
                    d.grant = Some(rein_core::intervention::GrantScope::Topic);
                }
            }
            Some(_) => d.reason = Some("rejected in the editor".into()),
            None => return None,
        }
        Some(d)
    }

    /// Ask the editor to choose among question `q`'s options (`None`: it cancelled the turn).
    async fn choose(
        &self,
        session: &str,
        w: &rein_store::Intervention,
        q: &Question,
    ) -> Option<DecisionIn> {
        let mut options: Vec<Value> = q
            .options
            .iter()
            .map(|o| json!({"optionId": o.key, "name": o.label, "kind": "allow_once"}))
            .collect();
        options.push(
            json!({"optionId": "__decline", "name": "Decline to answer", "kind": "reject_once"}),
        );
        let answer = self
            .ask(
                "session/request_permission",
                json!({
                    "sessionId": session,
                    "toolCall": {
                        "toolCallId": w.call.id.to_string(),
                        "title": q.question,
                        "kind": "think",
                        "status": "pending",
                    },
                    "options": options,
                }),
            )
            .await;
        let mut d = DecisionIn {
            tool_call_id: w.call.id.to_string(),
            decision: DecisionKind::Reject,
            reason: None,
            halt: false,
            text: None,
            option: None,
            grant: None,
        };
        match selected(answer) {
            Some(key) if key != "__decline" => {
                d.decision = DecisionKind::Select;
                d.option = Some(key);
            }
            Some(_) => {}
            None => return None,
        }
        Some(d)
    }

    /// How operation `id`'s turn ended, as ACP says it; a failure is the prompt's error.
    async fn stop_reason(&self, id: OperationId) -> Result<Value, Failure> {
        let record = crate::routes::owned_record(&self.app, &self.user, &id.to_string()).await?;
        let reason = match (record.status, record.finish_reason) {
            (Status::Done, Some(FinishReason::Completed | FinishReason::AgentDecision)) => {
                "end_turn"
            }
            (Status::Done, Some(FinishReason::TokenLimitExceeded)) => "max_tokens",
            (
                Status::Done,
                Some(
                    FinishReason::MaxStepsCompleted
                    | FinishReason::StepLimitExceeded
                    | FinishReason::CostLimitExceeded,
                ),
            ) => "max_turn_requests",
            (Status::Done, Some(FinishReason::UserRequested | FinishReason::UserAborted)) => {
                "cancelled"
            }
            (Status::Interrupted, _) if record.cancel_requested => "cancelled",
            _ => {
                return Err(Failure::internal(crate::routes::operations::why_ended(
                    &record,
                )));
            }
        };
        Ok(json!({"stopReason": reason}))
    }

    async fn chunk(&self, session: &str, chunk: &StreamChunk) {
        let (kind, text) = match chunk {
            StreamChunk::Text { text } => ("agent_message_chunk", text),
            StreamChunk::Reasoning { text } => ("agent_thought_chunk", text),
            StreamChunk::ToolCall { .. } => return,
        };
        if text.is_empty() {
            return;
        }
        self.update(
            session,
            json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}}),
        )
        .await;
    }
}

/// How a prompt turn ended.
enum Turn {
    /// The operation ended.
    Ended,
    /// It asked a free-text question, which the next prompt answers.
    Asked,
}

/// The option the editor chose (`None`: it cancelled, or the request failed).
fn selected(answer: Result<Value, Value>) -> Option<String> {
    let outcome = answer.ok()?.get("outcome")?.clone();
    (outcome.get("outcome")?.as_str()? == "selected")
        .then(|| outcome.get("optionId")?.as_str().map(str::to_owned))
        .flatten()
}

/// A prompt's text: its text blocks, embedded text resources as fenced blocks, links named.
fn prompt_text(blocks: &[Value]) -> Result<String, Failure> {
    let mut parts = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(b["text"].as_str().unwrap_or_default().to_owned()),
            Some("resource") => {
                let r = &b["resource"];
                let uri = r["uri"].as_str().unwrap_or_default();
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => {
                        parts.push(format!("<resource uri=\"{uri}\">\n{text}\n</resource>"))
                    }
                    None => {
                        return Err(Failure::params(format!(
                            "prompt[{i}]: rein takes embedded text resources, not binary ones"
                        )));
                    }
                }
            }
            Some("resource_link") => {
                parts.push(format!("(see {})", b["uri"].as_str().unwrap_or_default()));
            }
            Some(other) => {
                return Err(Failure::params(format!(
                    "prompt[{i}]: rein takes text, embedded text resources and links, not `{other}`"
                )));
            }
            None => {
                return Err(Failure::params(format!(
                    "prompt[{i}]: a content block has a type"
                )));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(Failure::params("the prompt says nothing"));
    }
    Ok(text)
}

/// What kind of tool call `call` is, as an editor shows it.
fn tool_kind(call: &rein_core::ToolCall) -> &'static str {
    match call.key().as_str() {
        "files/read" | "files/list" => "read",
        "files/write" | "files/edit" => "edit",
        "shell/run" => "execute",
        "web/fetch" => "fetch",
        k if k.starts_with("files/") || k.starts_with("knowledge/") || k.starts_with("memory/") => {
            "search"
        }
        k if k.starts_with("todo/") => "think",
        _ => "other",
    }
}

fn plan_status(s: rein_core::state::TodoStatus) -> &'static str {
    match s {
        rein_core::state::TodoStatus::Pending => "pending",
        rein_core::state::TodoStatus::InProgress => "in_progress",
        rein_core::state::TodoStatus::Done => "completed",
    }
}
