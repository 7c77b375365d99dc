//! rein as an MCP server: `/mcp` on `rein serve` (Streamable HTTP, `rmcp`'s transport) and
//! `rein mcp` (stdio, as the database's local user), so any MCP host (an editor, a desktop
//! assistant, another agent) runs the caller's agents as tools.
//!
//! - **Tools**: `run` (the caller's default agent) and `run_NAME` for each of their agents
//!   stored with `expose: true`; arguments `prompt` and an optional `topic` (a conversation to
//!   continue or to start under that id). A call starts an operation as `POST /v1/operations`
//!   does (the same checks, caps and running slots) and answers when it ends: the final answer
//!   as text, with `{operation_id, topic_id, status, answer}` as structured content (`isError`
//!   when it failed or stopped short). With a progress token, each committed step and tool
//!   result is a progress notification.
//! - **Approvals**: a call the operation parks on becomes an elicitation (approve, or reject
//!   with a reason) when the client declared the capability; the decision is applied as
//!   `POST /v1/operations/{id}/interventions` applies it and the operation goes on. Without
//!   the capability, or for a question, the result says the operation waits and how to decide
//!   (the operation stays parked, resumable as any other).
//! - **Resources**: the caller's 20 most recent operations (`rein://operations/ID`, read as
//!   JSON: status, topic, answer).
//!
//! Over HTTP, auth is the server's: a bearer token (or a session), checked on every request by
//! [`guard`], which also refuses a browser `Origin` other than the server's own (DNS
//! rebinding). Each request acts as its own caller: an MCP session id names a connection,
//! never an identity. Over stdio the process's user is the caller ([`serve_stdio`]).

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::follow::{Seen, follow};
use crate::routes::front_turn::Standing;
use crate::routes::operations::{CreateOperation, DecisionIn, DecisionKind, start};
use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rein_core::event::EventKind;
use rein_core::state::Status;
use rein_core::{OperationId, ToolCall};
use rein_operation::AgentProfile;
use rein_store::{Accounts as _, OperationFilter, Store as _, User};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};
use std::sync::Arc;

/// The `/mcp` service: one [`McpDoor`] per MCP session, every request authenticated first.
pub fn service(
    app: AppState,
) -> rmcp::transport::streamable_http_server::StreamableHttpService<
    McpDoor,
    rmcp::transport::streamable_http_server::session::local::LocalSessionManager,
> {
    let door = McpDoor {
        app: app.clone(),
        user: None,
    };
    let config = rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
        // [`guard`] checks `Origin` against the request's own `Host`, wherever the server is
        // deployed; rmcp's list of loopback hosts would refuse a server behind a domain.
        .disable_allowed_hosts()
        .with_cancellation_token(app.shutdown.child_token());
    rmcp::transport::streamable_http_server::StreamableHttpService::new(
        move || Ok(door.clone()),
        Arc::default(),
        config,
    )
}

/// Authenticate a `/mcp` request (its caller goes into the request's extensions, where
/// [`McpDoor`] reads it) and refuse a browser page of another origin.
pub async fn guard(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    if let Err(e) = crate::origin::own_pages_only(&parts.headers) {
        return e.into_response();
    }
    match Caller::from_request_parts(&mut parts, &app).await {
        Ok(Caller(user)) => {
            parts.extensions.insert(user);
            next.run(Request::from_parts(parts, body)).await
        }
        Err(e) => e.into_response(),
    }
}

/// Serve `user`'s agents over stdin and stdout until the client closes them.
pub async fn serve_stdio(app: AppState, user: User) -> Result<(), std::io::Error> {
    use rmcp::ServiceExt as _;
    let door = McpDoor {
        app,
        user: Some(user),
    };
    let running = door
        .serve(rmcp::transport::stdio())
        .await
        .map_err(std::io::Error::other)?;
    running.waiting().await.map_err(std::io::Error::other)?;
    Ok(())
}

/// One MCP session's handler: the server's state, and the caller when the transport has one
/// for good (stdio); over HTTP the caller comes with each request.
#[derive(Clone)]
pub struct McpDoor {
    app: AppState,
    user: Option<User>,
}

/// The agent a `run…` tool runs: `None` for the caller's default agent.
fn agent_of(tool: &str) -> Option<Option<&str>> {
    match tool {
        "run" => Some(None),
        t => t.strip_prefix("run_").map(Some),
    }
}

/// The arguments of every `run…` tool.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    /// What to ask the agent.
    #[schemars(length(min = 1, max = 100_000))]
    prompt: String,
    /// A conversation to continue (yours), or a new one's id (`topic_…`); a new conversation
    /// when absent.
    #[serde(default)]
    #[schemars(length(max = 128))]
    topic: Option<String>,
}

/// What a person decides in an approval's elicitation.
#[derive(Debug, serde::Deserialize)]
struct Decided {
    decision: DecisionKind,
    #[serde(default)]
    reason: Option<String>,
}

impl McpDoor {
    /// Who sent the request being handled.
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Result<User, McpError> {
        if let Some(user) = &self.user {
            return Ok(user.clone());
        }
        ctx.extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<User>())
            .cloned()
            .ok_or_else(|| {
                McpError::internal_error("the request has no authenticated caller", None)
            })
    }

    /// The credential an HTTP request carries (none over stdio), so a call stops following
    /// its operation once it is revoked, as an event stream does.
    fn credential(&self, ctx: &RequestContext<RoleServer>) -> Option<crate::auth::Credential> {
        let parts = ctx.extensions.get::<axum::http::request::Parts>()?;
        crate::auth::credential(&self.app, &parts.headers)
    }
    /// The caller's exposed agents, by name.
    async fn exposed(&self, user: &User) -> Result<Vec<(String, AgentProfile)>, McpError> {
        let agents = self
            .app
            .store
            .list_agents(&user.id)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(agents
            .into_iter()
            .filter_map(|a| {
                let profile: AgentProfile = serde_json::from_value(a.config).ok()?;
                (profile.expose == Some(true)).then_some((a.name, profile))
            })
            .collect())
    }

    /// Run `prompt` on `agent` for `user`, following the operation to its end (or a decision
    /// the client cannot make here).
    async fn run(
        &self,
        user: User,
        agent: Option<String>,
        args: RunArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let created = start(
            &self.app,
            user.clone(),
            CreateOperation {
                input: Some(args.prompt),
                edit: None,
                regenerate: None,
                agent,
                group: None,
                topic: args.topic,
                attachments: Vec::new(),
                profile: AgentProfile::default(),
            },
        )
        .await
        .map_err(failed)?;
        let id: OperationId = created
            .operation_id
            .parse()
            .map_err(|_| McpError::internal_error("an operation id that does not parse", None))?;
        let progress = ctx.meta.get_progress_token();
        let elicits = ctx
            .peer
            .peer_info()
            .is_some_and(|p| p.capabilities.elicitation.is_some());
        let credential = self.credential(ctx);
        let mut events = follow(self.app.clone(), id, None, credential.clone());
        // A sub-agent's park leaves no event in this operation's log: the tree is looked at
        // on a timer too.
        let mut tick = tokio::time::interval(std::time::Duration::from_millis(500));
        let mut asked = std::collections::HashSet::new();
        let mut done = 0u32;
        loop {
            let look = tokio::select! {
                () = ctx.ct.cancelled() => {
                    // The client gave up on the call: the operation goes on, as a closed
                    // event stream leaves it.
                    return Err(McpError::internal_error(format!("the call was cancelled; operation {id} goes on"), None));
                }
                _ = tick.tick() => true,
                seen = events.recv() => match seen {
                    None => break,
                    Some(Seen::Preview(_)) => false,
                    Some(Seen::Committed(event)) => {
                        if let Some(token) = &progress
                            && let Some(message) = progress_message(&event.kind)
                        {
                            done += 1;
                            self.progress(ctx, token, done, message).await;
                        }
                        crate::routes::front_turn::asks_a_person(&event.kind)
                    }
                },
            };
            if !look {
                continue;
            }
            let fresh = match crate::routes::front_turn::standing(&self.app, id, &asked)
                .await
                .map_err(failed)?
            {
                Standing::Going => continue,
                // Ended, or interrupted (cancelled, a budget): this run is over; the result says
                // how. What the log still holds for this client is told first (a fast run can
                // end before its events came through; the stream ends with the operation, and an
                // interrupted one's is given two seconds).
                Standing::Stopped => {
                    let rest = async {
                        while let Some(seen) = events.recv().await {
                            if let (Seen::Committed(event), Some(token)) = (&seen, &progress)
                                && let Some(message) = progress_message(&event.kind)
                            {
                                done += 1;
                                self.progress(ctx, token, done, message).await;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), rest).await;
                    break;
                }
                Standing::Asks(fresh) => fresh,
            };
            if fresh
                .iter()
                .any(|w| rein_core::question::Question::of_call(&w.call).is_some())
            {
                return Ok(waiting(id, &created.topic_id, "an answer to a question"));
            }
            if !elicits {
                return Ok(waiting(id, &created.topic_id, "an approval"));
            }
            let mut decisions = Vec::with_capacity(fresh.len());
            for w in &fresh {
                asked.insert(w.call.id.to_string());
                let why = w.reason.as_ref().map(|r| r.line());
                match self.elicit(ctx, &w.call, why.as_deref()).await {
                    Some(d) => decisions.push(d),
                    None => return Ok(waiting(id, &created.topic_id, "an approval")),
                }
            }
            let op = crate::routes::owned_record(&self.app, &user, &id.to_string())
                .await
                .map_err(failed)?;
            crate::routes::operations::apply_decisions(&self.app, &user, &op, decisions)
                .await
                .map_err(failed)?;
        }
        if !crate::auth::still_valid(&self.app, credential.as_ref()).await {
            return Err(McpError::invalid_request(
                format!("the token was revoked while operation {id} ran; it goes on"),
                None,
            ));
        }
        self.ended(id, &created.topic_id).await
    }

    /// Ask the client's user about `call`: approve, or reject with a reason; `None` when they
    /// dismissed it (the operation stays parked).
    async fn elicit(
        &self,
        ctx: &RequestContext<RoleServer>,
        call: &ToolCall,
        why: Option<&str>,
    ) -> Option<DecisionIn> {
        let schema = json!({
            "type": "object",
            "properties": {
                "decision": {"type": "string", "enum": ["approve", "reject"], "title": "Decision"},
                "reason": {"type": "string", "title": "Why (a rejection; the model reads it)"}
            },
            "required": ["decision"]
        });
        let Value::Object(schema) = schema else {
            return None;
        };
        let requested_schema = ElicitationSchema::from_json_schema(schema).ok()?;
        let message = format!(
            "rein asks before running {} with {}{}",
            call.key(),
            call.arguments,
            why.map(|w| format!(" ({w})")).unwrap_or_default()
        );
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        let answer = ctx.peer.create_elicitation(params).await.ok()?;
        let decided = match answer.action {
            ElicitationAction::Accept => {
                serde_json::from_value::<Decided>(answer.content.unwrap_or_default()).ok()?
            }
            ElicitationAction::Decline => Decided {
                decision: DecisionKind::Reject,
                reason: None,
            },
            // Dismissed, or an action of a later protocol: the operation stays parked.
            _ => return None,
        };
        let decision = match decided.decision {
            DecisionKind::Approve => DecisionKind::Approve,
            DecisionKind::Reject | DecisionKind::Answer | DecisionKind::Select => {
                DecisionKind::Reject
            }
        };
        Some(DecisionIn {
            tool_call_id: call.id.to_string(),
            decision,
            reason: decided.reason.filter(|r| !r.trim().is_empty()),
            halt: false,
            text: None,
            option: None,
            grant: None,
        })
    }

    async fn progress(
        &self,
        ctx: &RequestContext<RoleServer>,
        token: &ProgressToken,
        done: u32,
        message: String,
    ) {
        let note =
            ProgressNotificationParam::new(token.clone(), f64::from(done)).with_message(message);
        if let Err(e) = ctx.peer.notify_progress(note).await {
            tracing::debug!(error = %e, "an MCP progress notification was not delivered");
        }
    }

    /// The result of operation `id` once it ended (or the server stopped following it).
    async fn ended(&self, id: OperationId, topic: &str) -> Result<CallToolResult, McpError> {
        let op = self
            .app
            .store
            .load_operation(id)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?
            .ok_or_else(|| McpError::internal_error(format!("operation {id} is gone"), None))?;
        let record = &op.record;
        let answer = op.state.final_answer().unwrap_or_default();
        let status = record.status;
        let succeeded =
            status == Status::Done && record.finish_reason.is_some_and(|r| r.is_success());
        let text = if succeeded {
            answer.clone()
        } else {
            let detail = record
                .finish_detail
                .clone()
                .or(record.error.clone())
                .unwrap_or_default();
            format!("operation {id} ended {status}: {detail}")
        };
        let mut result = if succeeded {
            CallToolResult::success(vec![ContentBlock::text(text)])
        } else {
            CallToolResult::error(vec![ContentBlock::text(text)])
        };
        result.structured_content = Some(json!({
            "operation_id": id.to_string(),
            "topic_id": topic,
            "status": status,
            "answer": answer,
        }));
        Ok(result)
    }
}

/// An API refusal as an MCP error: what the caller asked wrongly is theirs to fix (invalid
/// params, with the API's words), anything else the server's.
fn failed(e: ApiError) -> McpError {
    if e.status.is_client_error() {
        McpError::invalid_params(e.message, None)
    } else {
        McpError::internal_error(e.message, None)
    }
}

/// What a committed event tells a client waiting on its call, if anything.
fn progress_message(kind: &EventKind) -> Option<String> {
    match kind {
        EventKind::StepStart { .. } => Some("a step started".into()),
        EventKind::ToolResult { tool_call_id, .. } => Some(format!("tool call {tool_call_id} ran")),
        EventKind::LlmResult { .. } => Some("the model answered".into()),
        _ => None,
    }
}

/// The result of a call whose operation waits for what this client cannot give here.
fn waiting(id: OperationId, topic: &str, what: &str) -> CallToolResult {
    let text = format!(
        "operation {id} waits for {what}: decide it in rein's web app, with `rein decide {id}`, or with POST /v1/operations/{id}/interventions; it then goes on (follow it with the resource rein://operations/{id})"
    );
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({
        "operation_id": id.to_string(),
        "topic_id": topic,
        "status": "waiting_for_human",
    }));
    result
}

fn run_tool(name: String, description: String) -> Tool {
    let schema = schemars::schema_for!(RunArgs);
    let Value::Object(input) = serde_json::to_value(schema).unwrap_or_default() else {
        return Tool::new(name, description, Arc::new(serde_json::Map::new()));
    };
    Tool::new(name, description, Arc::new(input))
}

impl ServerHandler for McpDoor {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("rein", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "Each tool runs one of your rein agents on a prompt, to its answer; pass `topic` to continue a conversation.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let user = self.caller(&ctx)?;
        let mut tools = vec![run_tool(
            "run".into(),
            "Run your default rein agent on a prompt and answer with what it says.".into(),
        )];
        for (name, profile) in self.exposed(&user).await? {
            let about = profile
                .system_role
                .as_deref()
                .map(|s| s.chars().take(200).collect::<String>())
                .unwrap_or_default();
            tools.push(run_tool(
                format!("run_{name}"),
                format!(
                    "Run your rein agent `{name}` on a prompt and answer with what it says. {about}"
                )
                .trim_end()
                .to_owned(),
            ));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let user = self.caller(&ctx)?;
        let unknown = || McpError::invalid_params(format!("no tool `{}`", request.name), None);
        let agent = agent_of(&request.name).ok_or_else(unknown)?;
        if let Some(name) = agent
            && !self.exposed(&user).await?.iter().any(|(n, _)| n == name)
        {
            return Err(unknown());
        }
        let args: RunArgs =
            serde_json::from_value(Value::Object(request.arguments.clone().unwrap_or_default()))
                .map_err(|e| McpError::invalid_params(format!("arguments: {e}"), None))?;
        if !crate::routes::says_something(&args.prompt) {
            return Err(McpError::invalid_params("prompt is empty", None));
        }
        // What the tool's input schema says, held here: serde does not read schemars' limits.
        if args.prompt.chars().count() > 100_000 {
            return Err(McpError::invalid_params(
                "prompt: at most 100000 characters",
                None,
            ));
        }
        let agent = agent.map(str::to_owned);
        Ok(self.run(user, agent, args, &ctx).await?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let user = self.caller(&ctx)?;
        let ops = self
            .app
            .store
            .list_operations(&OperationFilter {
                owner: Some(user.id),
                top_level: true,
                limit: 20,
                ..Default::default()
            })
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        Ok(ListResourcesResult::with_all_items(
            ops.into_iter()
                .map(|o| {
                    let title = o
                        .prompt
                        .as_deref()
                        .map(|p| p.chars().take(80).collect::<String>())
                        .unwrap_or_else(|| format!("operation {}", o.id));
                    Resource::new(format!("rein://operations/{}", o.id), o.id.to_string())
                        .with_title(title)
                        .with_description(format!("{} · {}", o.status, o.created_at.to_rfc3339()))
                        .with_mime_type("application/json")
                })
                .collect(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let user = self.caller(&ctx)?;
        let missing = || McpError::resource_not_found(format!("no resource {}", request.uri), None);
        let id = request
            .uri
            .strip_prefix("rein://operations/")
            .ok_or_else(missing)?;
        let record = crate::routes::owned_record(&self.app, &user, id)
            .await
            .map_err(|_| missing())?;
        let answer = self
            .app
            .store
            .load_operation(record.id)
            .await
            .ok()
            .flatten()
            .and_then(|op| op.state.final_answer());
        let shown = json!({
            "operation_id": record.id.to_string(),
            "topic_id": record.topic_id,
            "status": record.status,
            "finish_reason": record.finish_reason,
            "answer": answer,
            "created_at": record.created_at,
        });
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(shown.to_string(), request.uri.clone())
                .with_mime_type("application/json"),
        ])
        .into())
    }
}
