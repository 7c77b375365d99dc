//! [`Remote`]: commands against a `rein serve` over its HTTP API (`--server URL`, the token from
//! `$REIN_TOKEN`). Requests and answers are the server's own types. A decision, a resume or a
//! cancel is followed on the operation's event stream, printed as a local run prints it (a
//! step at a time, as committed), until the operation stops again; where it stopped is what
//! the server's `GET /v1/operations/{id}` says (`end`).

use super::{Backend, Granted, Local, Ran, Start};
use crate::agent_profile::RunAs;
use crate::output::Printer;
use anyhow::{anyhow, bail};
use rein_core::engine::EventSink;
use rein_core::intervention::GrantScope;
use rein_core::state::Status;
use rein_core::{AgentEvent, OperationId};
use rein_operation::context_report::CallContext;
use rein_operation::{AgentProfile, Decision, RunEnd, Turn};
use rein_server::error::{ApiErrorCode, ErrorBody};
use rein_server::routes::agents::{Agent, NewAgent};
use rein_server::routes::devices::{DeviceList, DeviceOut};
use rein_server::routes::events::EventsQuery;
use rein_server::routes::grants::{GrantList, GrantQuery};
use rein_server::routes::models::ModelList;
use rein_server::routes::operations::{
    Accepted, ContextQuery, CreateOperation, Created, DecisionIn, Decisions, ListQuery,
    OperationDetail,
};
use rein_server::routes::skills::SkillList;
use rein_store::{GrantRecord, OperationRecord};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A server and the token to use with it.
#[derive(Clone)]
pub struct Remote {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
    json: bool,
}

/// An error answer of the server.
#[derive(Debug, thiserror::Error)]
#[error("{message} ({status})")]
pub struct Refused {
    /// Its HTTP status.
    pub status: reqwest::StatusCode,
    /// Its code, when the body had one.
    pub code: Option<ApiErrorCode>,
    /// What the server said (or that it said nothing readable).
    pub message: String,
}

impl Remote {
    /// The server `--server` names (a URL or a profile of `rein login`), with `$REIN_TOKEN`
    /// or the profile's token; `json` prints followed events as JSON lines.
    pub fn new(server: &str, json: bool) -> anyhow::Result<Self> {
        let (url, token) = super::login::Profiles::resolve(server)?;
        Self::with_token(&url, token, json)
    }

    /// The server at `url` with `token`.
    pub fn with_token(url: &str, token: Option<String>, json: bool) -> anyhow::Result<Self> {
        if !url.starts_with("http://") && !url.starts_with("https://") {
            bail!("--server `{url}` is not an http:// or https:// URL");
        }
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            token,
            http: reqwest::Client::builder().build()?,
            json,
        })
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    /// Send `r`; an error answer becomes [`Refused`] (with a hint when no token was given).
    async fn send(&self, r: reqwest::RequestBuilder) -> anyhow::Result<reqwest::Response> {
        let resp = r
            .send()
            .await
            .map_err(|e| anyhow!("cannot reach {}: {e}", self.base))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let body: Option<ErrorBody> = serde_json::from_slice(&resp.bytes().await?).ok();
        let (code, message) = match body {
            Some(b) => (Some(b.error.code), b.error.message),
            None => (
                None,
                format!("{} answered without an error body", self.base),
            ),
        };
        if status == reqwest::StatusCode::UNAUTHORIZED && self.token.is_none() {
            bail!(
                "{message} (sign in with `rein login {}`, or set REIN_TOKEN)",
                self.base
            );
        }
        Err(Refused {
            status,
            code,
            message,
        }
        .into())
    }

    /// The JSON answer to `path`, read as a `T` (an answer this build cannot read is an error
    /// naming the route: the server is another version).
    async fn read<T: DeserializeOwned>(
        &self,
        path: &str,
        resp: reqwest::Response,
    ) -> anyhow::Result<T> {
        let bytes = resp.bytes().await?;
        serde_json::from_slice(&bytes).map_err(|e| {
            anyhow!(
                "{} answered {path} with what this rein cannot read: {e}",
                self.base
            )
        })
    }

    /// `method path` with `body`, answered with a `T`.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&(impl Serialize + Sync)>,
    ) -> anyhow::Result<T> {
        let mut r = self.request(method, path);
        if let Some(b) = body {
            r = r
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(b)?);
        }
        let resp = self.send(r).await?;
        self.read(path, resp).await
    }

    /// `GET path?query`, answered with a `T`.
    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &(impl Serialize + Sync),
    ) -> anyhow::Result<T> {
        self.with_query(Method::GET, path, query).await
    }

    /// `method path?query` without a body, answered with a `T`.
    pub(crate) async fn with_query<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        query: &(impl Serialize + Sync),
    ) -> anyhow::Result<T> {
        let resp = self.send(self.request(method, path).query(query)).await?;
        self.read(path, resp).await
    }

    /// `method path?query` answered with no body.
    pub(crate) async fn send_with_query(
        &self,
        method: Method,
        path: &str,
        query: &(impl Serialize + Sync),
    ) -> anyhow::Result<()> {
        self.send(self.request(method, path).query(query)).await?;
        Ok(())
    }

    /// `POST path?query` with `form` (multipart), answered with a `T`.
    pub(crate) async fn upload<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &(impl Serialize + Sync),
        form: reqwest::multipart::Form,
    ) -> anyhow::Result<T> {
        let resp = self
            .send(
                self.request(Method::POST, path)
                    .query(query)
                    .multipart(form),
            )
            .await?;
        self.read(path, resp).await
    }

    /// `method path` with `body`, answered with no body.
    pub(crate) async fn send_body(
        &self,
        method: Method,
        path: &str,
        body: &(impl Serialize + Sync),
    ) -> anyhow::Result<()> {
        let r = self
            .request(method, path)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(body)?);
        self.send(r).await?;
        Ok(())
    }

    /// `GET path`, answered with bytes (a file's).
    pub(crate) async fn bytes(&self, path: &str) -> anyhow::Result<Vec<u8>> {
        let resp = self.send(self.request(Method::GET, path)).await?;
        Ok(resp.bytes().await?.to_vec())
    }

    /// A request answered with no body.
    pub(crate) async fn call_empty(&self, method: Method, path: &str) -> anyhow::Result<()> {
        self.send(self.request(method, path)).await?;
        Ok(())
    }

    /// The event stream of `id` after `after`; the server listens for commits (and, with
    /// `live`, previews) from when this returns.
    async fn open_stream(
        &self,
        id: OperationId,
        after: Option<u64>,
        (follow, live): (bool, bool),
    ) -> anyhow::Result<reqwest::Response> {
        let query = EventsQuery {
            after,
            live: Some(live),
            follow: Some(follow),
        };
        self.send(
            self.request(Method::GET, &format!("/v1/operations/{id}/events"))
                .query(&query),
        )
        .await
    }

    /// Hand each event of `resp` to `each` (with whether it previews a step in progress)
    /// until it says stop (`false`) or the stream ends; the last committed sequence number
    /// seen (`after` when none).
    async fn read_stream(
        id: OperationId,
        mut resp: reqwest::Response,
        after: Option<u64>,
        each: &mut (dyn FnMut(&AgentEvent, bool) -> anyhow::Result<bool> + Send),
    ) -> anyhow::Result<Option<u64>> {
        let mut cursor = after;
        let mut buf = String::new();
        while let Some(bytes) = resp.chunk().await? {
            buf.push_str(&String::from_utf8_lossy(&bytes));
            while let Some(at) = buf.find("\n\n") {
                let block: String = buf.drain(..at + 2).collect();
                let preview = block.lines().any(|l| l == "event: live");
                for data in block.lines().filter_map(|l| l.strip_prefix("data: ")) {
                    let event: AgentEvent = serde_json::from_str(data)
                        .map_err(|e| anyhow!("an event of operation {id} cannot be read: {e}"))?;
                    if !preview {
                        cursor = Some(event.seq);
                    }
                    if !each(&event, preview)? {
                        return Ok(cursor);
                    }
                }
            }
        }
        Ok(cursor)
    }

    /// The last committed event's sequence number of `id`.
    async fn last_seq(&self, id: OperationId) -> anyhow::Result<Option<u64>> {
        let resp = self.open_stream(id, None, (false, false)).await?;
        Self::read_stream(id, resp, None, &mut |_, _| Ok(true)).await
    }

    /// Do `act` to `id` on the server, then print its events as each step commits them (the
    /// answer's words a step at a time) until it stops running; where it stopped. The stream
    /// is opened before `act` and starts after the last event before it, so nothing the
    /// server does for it is missed or printed twice.
    async fn acting(
        &self,
        id: OperationId,
        act: impl Future<Output = anyhow::Result<()>>,
    ) -> anyhow::Result<RunEnd> {
        let cursor = self.last_seq(id).await?;
        let resp = self.open_stream(id, cursor, (true, true)).await?;
        act.await?;
        self.follow(id, resp, cursor).await
    }

    /// Print the events of `id`, an operation the server just started, from its first one
    /// (its stream from the start is all of it) to where it stops.
    pub(crate) async fn follow_new(&self, id: OperationId) -> anyhow::Result<RunEnd> {
        let resp = self.open_stream(id, None, (true, true)).await?;
        self.follow(id, resp, None).await
    }

    /// Print the events of `id` from `resp` (opened after `cursor`, with previews) as the
    /// model streams them, until it stops running; where it stopped (`GET
    /// /v1/operations/{id}`'s `end`).
    async fn follow(
        &self,
        id: OperationId,
        mut resp: reqwest::Response,
        mut cursor: Option<u64>,
    ) -> anyhow::Result<RunEnd> {
        let printer = Printer::new(self.json);
        let mut shown = Shown::after(cursor);
        loop {
            let mut stopping = false;
            cursor = Self::read_stream(id, resp, cursor, &mut |e, preview| {
                if shown.admit(e.seq, preview) {
                    printer.publish(e);
                }
                // The stream stays open while an operation is parked: a committed step's end
                // is where to ask whether it still runs (a preview's is not: its commit, which
                // says where the operation stands, may not be made yet).
                stopping = !preview && e.operation_id == id && ends_a_run(&e.kind);
                Ok(!stopping)
            })
            .await?;
            let end = self.operation(id).await?.end;
            // The server runs its sub-agents (and a queued turn) itself: a run through it goes
            // on to where the operation waits for a person or stops, as a run here does.
            let server_goes_on = matches!(
                end,
                Some(RunEnd::WaitingForSubAgents { .. } | RunEnd::Queued)
            );
            if let Some(end) = end.filter(|_| !server_goes_on) {
                // It may have run on past the event that made us ask: what the log holds
                // after it is printed before the end.
                let rest = self.open_stream(id, cursor, (false, false)).await?;
                Self::read_stream(id, rest, cursor, &mut |e, preview| {
                    if shown.admit(e.seq, preview) {
                        printer.publish(e);
                    }
                    Ok(true)
                })
                .await?;
                return Ok(end);
            }
            if !stopping && !server_goes_on {
                bail!("the event stream of operation {id} ended while it still runs");
            }
            resp = self.open_stream(id, cursor, (true, true)).await?;
        }
    }

    /// Post `decisions` on `id` and follow it.
    async fn post_decisions(
        &self,
        id: OperationId,
        decisions: Vec<DecisionIn>,
    ) -> anyhow::Result<RunEnd> {
        self.acting(id, async {
            let _: Accepted = self
                .call(
                    Method::POST,
                    &format!("/v1/operations/{id}/interventions"),
                    Some(&Decisions { decisions }),
                )
                .await?;
            Ok(())
        })
        .await
    }
}

/// `name` as one path segment: a name given on the command line (`a/b`, `x?y`) names that
/// agent or device, never another route; the server then answers for the name as given.
pub(crate) fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Which events of a followed operation were printed: a preview of the step in progress is
/// printed when it comes next after what was printed (one that arrives ahead of a commit the
/// stream has not sent yet waits for its committed copy), and a committed event once, unless
/// its preview was.
struct Shown {
    /// The sequence number the next printed event must have or pass.
    next: u64,
}

impl Shown {
    fn after(cursor: Option<u64>) -> Self {
        Self {
            next: cursor.map_or(0, |c| c + 1),
        }
    }

    /// Whether to print the event numbered `seq` (a preview or committed).
    fn admit(&mut self, seq: u64, preview: bool) -> bool {
        let print = if preview {
            seq == self.next
        } else {
            seq >= self.next
        };
        if print {
            self.next = seq + 1;
        }
        print
    }
}

/// Whether an event may be the last of a run: its step ended, or the operation stopped.
fn ends_a_run(kind: &rein_core::event::EventKind) -> bool {
    use rein_core::event::EventKind as K;
    match kind {
        K::StepComplete { .. }
        | K::Done { .. }
        | K::Error { .. }
        | K::Interrupted { .. }
        | K::HumanApproveRequired { .. }
        | K::HumanPromptRequired { .. }
        | K::HumanSelectRequired { .. } => true,
        K::StepStart { .. }
        | K::LlmStart { .. }
        | K::LlmStream { .. }
        | K::ContextReport { .. }
        | K::LlmResult { .. }
        | K::StreamRetry { .. }
        | K::ToolPending { .. }
        | K::ToolResult { .. }
        | K::CompressionComplete { .. }
        | K::CompressionError { .. }
        | K::BudgetExceeded { .. }
        | K::SubAgentStarted { .. }
        | K::SubAgentEnded { .. }
        | K::Resumed { .. } => false,
    }
}

impl Backend for Remote {
    fn local(&self) -> anyhow::Result<&Local> {
        bail!("this command runs on the local database; drop --server (or unset REIN_SERVER)")
    }

    async fn operations(&self, status: Option<Status>) -> anyhow::Result<Vec<OperationRecord>> {
        self.get(
            "/v1/operations",
            &ListQuery {
                status,
                limit: Some(200),
                ..Default::default()
            },
        )
        .await
    }

    async fn operation(&self, id: OperationId) -> anyhow::Result<OperationDetail> {
        self.call(Method::GET, &format!("/v1/operations/{id}"), None::<&()>)
            .await
    }

    async fn call_contexts(&self, id: OperationId, step: u32) -> anyhow::Result<Vec<CallContext>> {
        self.get(
            &format!("/v1/operations/{id}/context"),
            &ContextQuery { step: Some(step) },
        )
        .await
    }

    async fn events(
        &self,
        id: OperationId,
        after: Option<u64>,
        follow: bool,
        each: &mut (dyn FnMut(&AgentEvent) -> anyhow::Result<()> + Send),
    ) -> anyhow::Result<()> {
        let resp = self.open_stream(id, after, (follow, false)).await?;
        Self::read_stream(id, resp, after, &mut |e, _| each(e).map(|()| true)).await?;
        Ok(())
    }

    async fn run(&self, turn: Start<'_>) -> anyhow::Result<Ran> {
        // Read here (the same refusals as a run here), each uploaded before anything starts.
        let mut attachments = Vec::with_capacity(turn.attachments.len());
        for path in turn.attachments {
            let (name, bytes) = rein_operation::attachment::read(path)?;
            let form = reqwest::multipart::Form::new()
                .text("purpose", "user_data")
                .part(
                    "file",
                    reqwest::multipart::Part::bytes(bytes).file_name(name),
                );
            let file: rein_server::routes::files::FileOut = self
                .upload("/v1/files", &Vec::<(String, String)>::new(), form)
                .await?;
            attachments.push(file.id);
        }
        let (agent, group) = match turn.who {
            RunAs::Agent(agent) => (agent.map(str::to_owned), None),
            RunAs::Group(group) => (None, Some(group.to_owned())),
        };
        let (input, edit, regenerate) = match turn.turn {
            Turn::Continue => (Some(turn.prompt.to_owned()), None, None),
            Turn::Edit(m) => (Some(turn.prompt.to_owned()), Some(m.to_string()), None),
            Turn::Regenerate(m) => (None, None, Some(m.to_string())),
        };
        let created: Created = self
            .call(
                Method::POST,
                "/v1/operations",
                Some(&CreateOperation {
                    input,
                    edit,
                    regenerate,
                    agent,
                    group,
                    topic: turn.topic.map(str::to_owned),
                    attachments,
                    profile: turn.over.clone(),
                }),
            )
            .await?;
        let id = super::operation_id(&created.operation_id)?;
        // Ctrl-C cancels it on the server, as it cancels a run here; following it then shows
        // where it stopped.
        let me = self.clone();
        let interrupt = turn.interrupt.then(|| {
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    let path = format!("/v1/operations/{id}/cancel");
                    if let Err(e) = me.call::<Accepted>(Method::POST, &path, None::<&()>).await {
                        eprintln!("cannot cancel {id}: {e:#}");
                    }
                }
            })
        });
        let end = self.follow_new(id).await;
        if let Some(i) = interrupt {
            i.abort();
        }
        Ok(Ran {
            id,
            topic: created.topic_id,
            end: end?,
        })
    }

    async fn skill_names(&self) -> anyhow::Result<Vec<String>> {
        let list: SkillList = self.call(Method::GET, "/v1/skills", None::<&()>).await?;
        Ok(list.skills.into_iter().map(|s| s.name).collect())
    }

    async fn model_of(&self, who: RunAs<'_>, over: &AgentProfile) -> anyhow::Result<String> {
        // The server checks the settings when a turn starts; the model is what they name.
        if let Some(m) = &over.model {
            rein_operation::profile::model_ref(m)?;
            return Ok(m.clone());
        }
        let named = match who {
            RunAs::Agent(Some(agent)) => self.agent(agent).await?.config.model,
            RunAs::Agent(None) | RunAs::Group(_) => None,
        };
        Ok(named.unwrap_or_else(|| "the server's default model".to_owned()))
    }

    async fn resume(&self, id: OperationId) -> anyhow::Result<RunEnd> {
        let path = format!("/v1/operations/{id}/resume");
        self.acting(id, async {
            let _: Accepted = self.call(Method::POST, &path, None::<&()>).await?;
            Ok(())
        })
        .await
    }

    async fn cancel(&self, id: OperationId) -> anyhow::Result<RunEnd> {
        let path = format!("/v1/operations/{id}/cancel");
        self.acting(id, async {
            let _: Accepted = self.call(Method::POST, &path, None::<&()>).await?;
            Ok(())
        })
        .await
    }

    async fn export_operation(
        &self,
        id: OperationId,
    ) -> anyhow::Result<rein_store::OperationArchive> {
        let path = format!("/v1/operations/{id}/export");
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn import_operation(
        &self,
        archive: &rein_store::OperationArchive,
    ) -> anyhow::Result<(OperationId, String)> {
        let imported: rein_server::routes::archive::ImportedOperation = self
            .call(Method::POST, "/v1/operations/import", Some(archive))
            .await?;
        Ok((
            super::operation_id(&imported.operation_id)?,
            imported.topic_id,
        ))
    }

    async fn replay(
        &self,
        id: OperationId,
        request: &rein_server::routes::replay::ReplayStep,
    ) -> anyhow::Result<rein_operation::StepReplay> {
        let path = format!("/v1/operations/{id}/replay");
        self.call(Method::POST, &path, Some(request)).await
    }

    async fn replay_chain(
        &self,
        id: OperationId,
        request: &rein_server::routes::replay::ReplayChain,
    ) -> anyhow::Result<rein_operation::ChainReplay> {
        let path = format!("/v1/operations/{id}/replay/chain");
        self.call(Method::POST, &path, Some(request)).await
    }

    async fn fork(
        &self,
        id: OperationId,
        request: &rein_server::routes::fork::ForkOperation,
    ) -> anyhow::Result<(OperationId, RunEnd)> {
        let path = format!("/v1/operations/{id}/fork");
        let forked: rein_server::routes::fork::Forked =
            self.call(Method::POST, &path, Some(request)).await?;
        let fork = super::operation_id(&forked.operation_id)?;
        eprintln!(
            "forked {id} after step {} as {fork} (conversation {})",
            request.step, forked.topic_id
        );
        Ok((fork, self.follow_new(fork).await?))
    }

    async fn decide(
        &self,
        id: OperationId,
        calls: Option<Vec<String>>,
        decision: Decision,
    ) -> anyhow::Result<RunEnd> {
        let calls = match calls {
            Some(c) => c,
            None => {
                let detail = self.operation(id).await?;
                let status = detail.operation.status;
                if status != rein_core::state::Status::WaitingForHuman {
                    // As the driver says it here.
                    bail!("operation {id} is {status:?}, not waiting for a decision");
                }
                detail
                    .pending
                    .into_iter()
                    .map(|p| p.call.id.to_string())
                    .collect()
            }
        };
        if calls.is_empty() {
            bail!("operation {id} has no pending tool call");
        }
        let decisions = calls
            .iter()
            .map(|c| DecisionIn::of(c, &decision, None))
            .collect();
        self.post_decisions(id, decisions).await
    }

    async fn approve_always(
        &self,
        id: OperationId,
        call: &str,
        scope: GrantScope,
    ) -> anyhow::Result<Granted> {
        let decision = DecisionIn::of(call, &Decision::Approve, Some(scope));
        let end = match self.post_decisions(id, vec![decision]).await {
            Ok(end) => end,
            Err(e) => {
                return match e.downcast::<Refused>() {
                    Ok(r) if r.code == Some(ApiErrorCode::GrantNotAllowed) => {
                        Ok(Granted::Refused(r.message))
                    }
                    Ok(r) => Err(r.into()),
                    Err(e) => Err(e),
                };
            }
        };
        // The grant the server made for this call.
        let grant = self
            .grants(Some(scope), false)
            .await?
            .into_iter()
            .find(|g| g.tool_call_id.as_deref() == Some(call))
            .ok_or_else(|| anyhow!("the server lists no grant made for tool call {call}"))?;
        Ok(Granted::Made {
            end,
            grant: Box::new(grant),
        })
    }

    async fn grants(
        &self,
        scope: Option<GrantScope>,
        revoked: bool,
    ) -> anyhow::Result<Vec<GrantRecord>> {
        let list: GrantList = self
            .get(
                "/v1/grants",
                &GrantQuery {
                    scope,
                    target: None,
                    revoked,
                },
            )
            .await?;
        Ok(list.grants)
    }

    async fn revoke_grant(&self, id: &str) -> anyhow::Result<GrantRecord> {
        self.call(
            Method::DELETE,
            &format!("/v1/grants/{}", segment(id)),
            None::<&()>,
        )
        .await
    }

    async fn agents(&self) -> anyhow::Result<Vec<Agent>> {
        self.call(Method::GET, "/v1/agents", None::<&()>).await
    }

    async fn agent(&self, name: &str) -> anyhow::Result<Agent> {
        self.call(
            Method::GET,
            &format!("/v1/agents/{}", segment(name)),
            None::<&()>,
        )
        .await
    }

    async fn export_agent(&self, name: &str) -> anyhow::Result<rein_operation::AgentArchive> {
        let path = format!("/v1/agents/{name}/export");
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn import_agent(&self, archive: &rein_operation::AgentArchive) -> anyhow::Result<Agent> {
        self.call(Method::POST, "/v1/agents/import", Some(archive))
            .await
    }

    async fn create_agent(&self, name: &str, config: AgentProfile) -> anyhow::Result<Agent> {
        self.call(
            Method::POST,
            "/v1/agents",
            Some(&NewAgent {
                name: name.to_owned(),
                config,
            }),
        )
        .await
    }

    async fn update_agent(&self, name: &str, config: AgentProfile) -> anyhow::Result<Agent> {
        self.call(
            Method::PUT,
            &format!("/v1/agents/{}", segment(name)),
            Some(&config),
        )
        .await
    }

    async fn delete_agent(&self, name: &str) -> anyhow::Result<()> {
        self.call_empty(Method::DELETE, &format!("/v1/agents/{}", segment(name)))
            .await
    }

    async fn agent_versions(
        &self,
        name: &str,
    ) -> anyhow::Result<Vec<rein_server::routes::agents::AgentVersionOut>> {
        let list: rein_server::routes::agents::AgentVersions = self
            .call(
                Method::GET,
                &format!("/v1/agents/{}/versions", segment(name)),
                None::<&()>,
            )
            .await?;
        Ok(list.versions)
    }

    async fn rollback_agent(&self, name: &str, version: u64) -> anyhow::Result<Agent> {
        self.call(
            Method::POST,
            &format!("/v1/agents/{}/rollback", segment(name)),
            Some(&rein_server::routes::agents::RollbackIn { version }),
        )
        .await
    }

    async fn devices(&self) -> anyhow::Result<Vec<DeviceOut>> {
        let list: DeviceList = self.call(Method::GET, "/v1/devices", None::<&()>).await?;
        Ok(list.devices)
    }

    async fn revoke_device(&self, name: &str) -> anyhow::Result<()> {
        self.call_empty(Method::DELETE, &format!("/v1/devices/{}", segment(name)))
            .await
    }

    async fn print_models(&self, json: bool) -> anyhow::Result<()> {
        let list: ModelList = self.call(Method::GET, "/v1/models", None::<&()>).await?;
        for m in &list.models {
            if json {
                println!("{}", serde_json::to_string(m)?);
            } else {
                let mark = if m.id == list.default { "*" } else { " " };
                println!("{mark} {}", m.id);
            }
        }
        Ok(())
    }

    async fn provider_models(
        &self,
        provider: &str,
    ) -> anyhow::Result<rein_server::routes::models::ProviderModels> {
        let path = format!("/v1/models/providers/{}", segment(provider));
        self.call(Method::GET, &path, None::<&()>).await
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_is_one_path_segment() {
        assert_eq!(super::segment("helper-2_x.y~"), "helper-2_x.y~");
        assert_eq!(super::segment("a/b?c d"), "a%2Fb%3Fc%20d");
        assert_eq!(super::segment("é"), "%C3%A9");
    }

    #[test]
    fn each_event_is_printed_once_whether_previewed_or_committed() {
        let mut shown = super::Shown::after(Some(3));
        // A step streams 4..=6, then commits 4..=7 (its end is only in the commit).
        let printed: Vec<(u64, bool)> = [
            (4, true),
            (5, true),
            (6, true),
            (4, false),
            (5, false),
            (6, false),
            (7, false),
            // The next step's preview runs ahead of a commit (9) the stream has not sent.
            (10, true),
            (8, true),
            (8, false),
            (9, false),
            (10, false),
        ]
        .into_iter()
        .filter(|&(seq, preview)| shown.admit(seq, preview))
        .collect();
        assert_eq!(
            printed,
            [
                (4, true),
                (5, true),
                (6, true),
                (7, false),
                (8, true),
                (9, false),
                (10, false)
            ]
        );
        // Nothing followed yet: the first event is numbered 0.
        assert!(super::Shown::after(None).admit(0, true));
    }
}
