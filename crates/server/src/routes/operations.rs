//! `/v1/operations`: start, list, inspect, cancel, resume, and decide pending tool calls.

use crate::AppState;
use crate::api::Reply;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, OperationPath, Params, owned_operation, owned_record};
use crate::runner::Job;
use axum::Json;
use axum::extract::State;
use rein_core::spec::OperationSpec;
use rein_core::state::Status;
use rein_operation::{AgentProfile, Decision, RunEnd, StartOptions, Turn};
use rein_store::{
    Intervention, InterventionStatus, OperationFilter, OperationRecord, StepRecord, Store, Topics,
    Trigger,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/operations` body: what to do and where, and how it runs: the settings an agent is
/// made of (`POST /v1/agents`), each over the agent's (or the group supervisor's). A cost
/// limit with a model nothing prices is refused (422 `model_unpriced`), as are an unknown
/// skill (`skill_missing`) or knowledge base (`knowledge_missing`) and a surface the server
/// does not enable (`surface_unavailable`; a missing program: `external_missing`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct CreateOperation {
    /// The user's request (not blank); required unless `regenerate`, which takes none
    /// (422 `input_missing` / `branch_does_not_fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"\S"))]
    pub input: Option<String>,
    /// Edit this user message of `topic`: `input` is its new text, a sibling of it that starts
    /// a new branch (the old one is kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::routes::topics::MESSAGE_ID_PATTERN))]
    pub edit: Option<String>,
    /// Answer again the user message of `topic` this message is or answers: the new answer
    /// is a sibling of the old one (kept). Not with `edit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = crate::routes::topics::MESSAGE_ID_PATTERN))]
    pub regenerate: Option<String>,
    /// Run as this agent of yours (its model, system role, tools and limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Run as this group of yours instead (not with `agent`: 422 `agent_and_group`): its
    /// members talk in rounds under its supervisor, one operation tree with one budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Continue this conversation (yours), or start one under this id; a new one otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(rein_operation::TOPIC_ID_PATTERN))]
    pub topic: Option<String>,
    /// Files you uploaded (`POST /v1/files`) to send with `input`, in order: images to models
    /// that can see them (a note to others), text inlined within the context's per-file limit,
    /// anything else named (422 `file_missing` for an id that is not yours).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), inner(regex(pattern = rein_store::FILE_ID_PATTERN)))]
    pub attachments: Vec<String>,
    /// How it runs (the type's document lists these settings beside the fields above; unknown
    /// fields are refused by `routes::Body`, which reads its `additionalProperties`, because
    /// serde cannot deny them beside a flattened struct).
    #[serde(flatten)]
    pub profile: AgentProfile,
}

/// `GET /v1/operations/{id}/context` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextQuery {
    /// Only the call made at this step.
    #[serde(default)]
    pub step: Option<u32>,
}

/// `202` answer: the operation is committed and will run.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Created {
    /// The operation.
    pub operation_id: String,
    /// Its conversation.
    pub topic_id: String,
    /// `idle` (it starts now) or `queued` (another operation of the conversation is running
    /// or waiting: it starts when that one ends; `POST …/cancel` drops it).
    pub status: String,
    /// With `queued`: the operation it waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_behind: Option<String>,
}

/// `GET /v1/operations` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only operations in this status.
    #[serde(default)]
    pub status: Option<Status>,
    /// Only this agent's.
    #[serde(default)]
    pub agent: Option<String>,
    /// Only this conversation's (its operations and their sub-agents').
    #[serde(default)]
    #[schemars(pattern(rein_operation::TOPIC_ID_PATTERN))]
    pub topic: Option<String>,
    /// Only operations that are not sub-agents.
    #[serde(default)]
    pub top_level: bool,
    /// At most this many (default 100, at most 1000).
    #[serde(default)]
    pub limit: Option<u32>,
}

/// What an operation consumed and what it cost, in totals and per model and tool.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OperationUsage {
    /// Calls, tokens and time.
    pub usage: rein_core::usage::Usage,
    /// Money.
    pub cost: rein_core::usage::Cost,
}

/// An operation with its step timeline and what waits for a decision.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OperationDetail {
    /// The record (status, tokens, cost, finish reason, what it is doing, ...).
    pub operation: OperationRecord,
    /// What it may do (model, system role, allowed tools, approval mode, budgets, agent and
    /// its version), fixed when it started.
    #[schemars(with = "serde_json::Value")]
    pub spec: OperationSpec,
    /// One entry per committed step.
    pub steps: Vec<StepRecord>,
    /// Tool calls waiting for a decision, in it or in any of its sub-agents (each names the
    /// operation that asked; decide them here).
    pub pending: Vec<Intervention>,
    /// Its sub-agents and theirs (parents before their sub-agents).
    pub sub_agents: Vec<OperationRecord>,
    /// Per-model and per-tool usage and cost.
    pub usage: OperationUsage,
    /// Where it stopped, absent while it runs: `done` (with `reason` and `detail`),
    /// `waiting_for_human` (`pending`: every call of its tree awaiting a decision),
    /// `queued`, `waiting_for_async_tool` (`calls`), `waiting_for_sub_agents` (`children`),
    /// `interrupted` (`reason`, `can_resume`) or `error` (`message`).
    #[serde(default)]
    #[schemars(with = "Option<serde_json::Value>")]
    pub end: Option<RunEnd>,
    /// The skills admitted in it so far (by the model or from the start): a conversation's
    /// next turn starts with them.
    #[serde(default)]
    pub activated_skills: Vec<String>,
    /// What the providers' prompt caches served of its model calls' input, and saved.
    #[serde(default)]
    pub cache: rein_operation::pricing::CacheUse,
}

impl OperationDetail {
    /// `op` with its steps, what waits for a decision anywhere in its tree, its sub-agents,
    /// where it stopped and what prompt caches saved (priced with `catalog` and the prices it
    /// started with): one shape for the API and the CLI's local commands.
    pub async fn load(
        store: &dyn Store,
        catalog: std::sync::Arc<rein_model::Catalog>,
        op: rein_store::StoredOperation,
    ) -> Result<Self, rein_store::StoreError> {
        let steps = store.steps(op.record.id).await?;
        // Approvals anywhere in its tree are decided through it.
        let pending = rein_operation::tree::pending_approvals(store, op.record.id).await?;
        let sub_agents = rein_operation::tree::descendants(store, op.record.id).await?;
        let usage = OperationUsage {
            usage: op.state.usage.clone(),
            cost: op.state.cost.clone(),
        };
        let cache =
            rein_operation::pricing::Pricing::new(catalog, &op.spec).cache_use(&op.state.usage);
        let end = if pending.is_empty() {
            RunEnd::of_state(&op.state)
        } else {
            Some(RunEnd::WaitingForHuman {
                pending: pending.iter().map(|i| i.call.clone()).collect(),
            })
        };
        let activated_skills = op
            .state
            .activated_skills
            .iter()
            .map(|s| s.name.clone())
            .collect();
        Ok(Self {
            spec: op.spec,
            operation: op.record,
            steps,
            pending,
            sub_agents,
            usage,
            end,
            activated_skills,
            cache,
        })
    }
}

/// One decision in `POST /v1/operations/{id}/interventions`: one shape for approvals and
/// questions (`ask_user` calls are answered or declined, never approved).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionIn {
    /// The pending call.
    pub tool_call_id: String,
    /// `approve`, `reject`, `answer` or `select`.
    pub decision: DecisionKind,
    /// Why (rejections; the model reads it).
    #[serde(default)]
    pub reason: Option<String>,
    /// Stop the operation for good (rejections).
    #[serde(default)]
    pub halt: bool,
    /// The answer to a question (`answer`).
    #[serde(default)]
    #[schemars(length(min = 1, max = 20000))]
    pub text: Option<String>,
    /// The key of the chosen option (`select`).
    #[serde(default)]
    #[schemars(length(min = 1, max = 100))]
    pub option: Option<String>,
    /// With `approve`: also grant the call's tool from now on, for `operation` (its tree),
    /// `topic` (its conversation) or `agent` (every operation of its agent, a new version of
    /// the agent). Pending calls of the tree the grant covers are approved with it. A call
    /// the blacklist or the guard flagged is asked every time: 422 `grant_not_allowed`.
    #[serde(default)]
    pub grant: Option<rein_core::intervention::GrantScope>,
}

/// What a person decides about a pending call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionKind {
    /// Run the call.
    Approve,
    /// Do not run it (a question: decline to answer).
    Reject,
    /// Answer a question with `text`.
    Answer,
    /// Answer a question with one of its options (`option`).
    Select,
}

impl DecisionIn {
    /// The body entry that asks the server for `decision` on `tool_call_id` (what a client
    /// sends; [`DecisionIn::decision_for`] reads it back), with `grant` for an approval that
    /// also grants the call's tool.
    pub fn of(
        tool_call_id: &str,
        decision: &Decision,
        grant: Option<rein_core::intervention::GrantScope>,
    ) -> Self {
        use rein_core::question::Answer;
        let blank = Self {
            tool_call_id: tool_call_id.to_owned(),
            decision: DecisionKind::Approve,
            reason: None,
            halt: false,
            text: None,
            option: None,
            grant: None,
        };
        match decision {
            Decision::Approve => Self { grant, ..blank },
            Decision::Reject { reason, halt } => Self {
                decision: DecisionKind::Reject,
                reason: reason.clone(),
                halt: *halt,
                ..blank
            },
            Decision::Answer(Answer::Text(text)) => Self {
                decision: DecisionKind::Answer,
                text: Some(text.clone()),
                ..blank
            },
            Decision::Answer(Answer::Option(key)) => Self {
                decision: DecisionKind::Select,
                option: Some(key.clone()),
                ..blank
            },
        }
    }

    /// The driver's decision, after checking it fits the pending call it names: a question is
    /// answered (with text, or an option it has) or declined, never approved; only a question
    /// is answered; a question past its expiry has taken its default.
    fn decision_for(self, pending: &rein_store::Intervention) -> Result<Decision, ApiError> {
        use rein_core::question::{Answer, Question};
        let unfit = |m: String| {
            ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                crate::error_code::ApiErrorCode::DecisionDoesNotFit,
                m,
            )
        };
        let id = &self.tool_call_id;
        if self.grant.is_some() && self.decision != DecisionKind::Approve {
            return Err(unfit(format!(
                "`grant` for tool call {id} goes with `approve` only"
            )));
        }
        let question = Question::of_call(&pending.call).and_then(Result::ok);
        let answer = match (self.decision, self.text, self.option) {
            (DecisionKind::Approve, _, _) if question.is_some() => {
                return Err(unfit(format!(
                    "tool call {id} is a question: answer it (`answer` with `text`, `select` with `option`) or `reject` it"
                )));
            }
            (DecisionKind::Approve, _, _) => return Ok(Decision::Approve),
            (DecisionKind::Reject, _, _) => {
                return Ok(Decision::Reject {
                    reason: self.reason,
                    halt: self.halt,
                });
            }
            (DecisionKind::Answer, Some(text), _) => Answer::Text(text),
            (DecisionKind::Select, _, Some(key)) => Answer::Option(key),
            (DecisionKind::Answer, None, _) => {
                return Err(unfit(format!("`answer` for tool call {id} needs `text`")));
            }
            (DecisionKind::Select, _, None) => {
                return Err(unfit(format!("`select` for tool call {id} needs `option`")));
            }
        };
        let Some(question) = question else {
            return Err(unfit(format!(
                "tool call {id} is not a question; approve or reject it"
            )));
        };
        if let Some(at) = pending.expires_at.filter(|t| *t <= chrono::Utc::now()) {
            return Err(ApiError::conflict(format!(
                "the question of tool call {id} expired at {}; its default applies",
                at.to_rfc3339()
            )));
        }
        question
            .answered(&answer)
            .map_err(|e| unfit(format!("answer to tool call {id} does not fit: {e}")))?;
        Ok(Decision::Answer(answer))
    }
}

/// `POST /v1/operations/{id}/interventions` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Decisions {
    /// At least one.
    #[schemars(length(min = 1))]
    #[serde(deserialize_with = "crate::routes::objects")]
    pub decisions: Vec<DecisionIn>,
}

/// What a control request did.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Accepted {
    /// The operation.
    pub operation_id: String,
    /// Its status now.
    pub status: String,
}

pub(crate) fn status_name(s: Status) -> String {
    s.to_string()
}

/// How operation `record` ended, for a person reading a protocol's answer: "operation ID
/// ended: WHY" (its finish detail, error, finish reason or status, the first it has).
pub(crate) fn why_ended(record: &rein_store::OperationRecord) -> String {
    let why = record
        .finish_detail
        .clone()
        .or(record.error.clone())
        .or(record.finish_reason.map(|r| r.to_string()))
        .unwrap_or_else(|| status_name(record.status));
    format!("operation {} ended: {why}", record.id)
}

/// `POST /v1/operations`: `202 {operation_id, topic_id}` once the operation is committed.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(req): Body<CreateOperation>,
) -> Result<Reply<202, Created>, ApiError> {
    start(&app, user, req).await.map(Reply)
}

/// Start what `req` asks of `user` (checked as `POST /v1/operations` checks it: the topic is
/// theirs or new, the spec within what they may do and their spending caps), its running slot
/// claimed; the same for every door that starts operations (the MCP server's tools).
pub async fn start(
    app: &AppState,
    user: rein_store::User,
    req: CreateOperation,
) -> Result<Created, ApiError> {
    start_in(app, user, req, None).await
}

/// [`start`] working in `workdir` rather than where the user's operations work (a door that
/// was told its own directory and checked it: an ACP session's `cwd`).
pub async fn start_in(
    app: &AppState,
    user: rein_store::User,
    req: CreateOperation,
    workdir: Option<String>,
) -> Result<Created, ApiError> {
    let turn = match (&req.edit, &req.regenerate) {
        (Some(_), Some(_)) => {
            return Err(ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                crate::error_code::ApiErrorCode::BranchDoesNotFit,
                "edit a message or regenerate an answer, not both",
            ));
        }
        (Some(m), None) => Turn::Edit(crate::routes::topics::message_id("edit", m)?),
        (None, Some(m)) => Turn::Regenerate(crate::routes::topics::message_id("regenerate", m)?),
        (None, None) => Turn::Continue,
    };
    // A blank input breaks the document's pattern (400); a missing one is well-formed, but
    // only a regeneration goes without (422).
    if req
        .input
        .as_deref()
        .is_some_and(|i| !crate::routes::says_something(i))
    {
        return Err(ApiError::bad_request("input is empty"));
    }
    let input = req.input.clone().unwrap_or_default();
    if input.is_empty() && !matches!(turn, Turn::Regenerate(_)) {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            crate::error_code::ApiErrorCode::InputMissing,
            "input is missing or blank: say what to do (only `regenerate` takes none)",
        ));
    }
    if !req.attachments.is_empty() && matches!(turn, Turn::Regenerate(_)) {
        return Err(ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            crate::error_code::ApiErrorCode::BranchDoesNotFit,
            "a regeneration answers the message again as it was: attach files to an input",
        ));
    }
    let attachments =
        rein_operation::attachment::from_uploads(&*app.store, &user.id, &req.attachments).await?;
    if let Some(topic) = &req.topic {
        rein_operation::check_topic_id(topic)?;
        match app.store.topic_owner(topic).await? {
            // A new conversation under the caller's chosen id.
            None => {}
            Some(Some(owner)) if owner == user.id => {}
            Some(_) => return Err(ApiError::not_found(format!("no topic {topic}"))),
        }
    }
    let over = &req.profile;
    let mut origin = app.runner.host.origin(&*app.store, &user.id).await?;
    if workdir.is_some() {
        origin.working_directory = workdir;
    }
    let host = &app.runner.host;
    let spec = match (&req.group, &req.agent) {
        (Some(_), Some(_)) => {
            // Each field is valid alone; together they ask for two different runs.
            return Err(ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                crate::error_code::ApiErrorCode::AgentAndGroup,
                "name an agent or a group, not both",
            ));
        }
        (Some(group), None) => {
            host.group_spec(&*app.store, &user.id, group, over, origin)
                .await?
        }
        (None, agent) => {
            host.agent_spec(&*app.store, &user.id, agent.as_deref(), over, origin)
                .await?
        }
    };
    // Within the caller's spending caps, or not at all (429); what they leave is its cost limit.
    let mut spec = spec;
    crate::caps::admit(app, &user, &mut spec).await?;
    // Created with its running slot and lease claimed, or not at all (429).
    let opts = StartOptions {
        spec,
        topic_id: req.topic.clone(),
        turn,
        trigger: Some(Trigger::Api),
        admission: Some(app.runner.admission()),
        attachments,
        ..Default::default()
    };
    let driver = app.runner.driver();
    let begun = driver.begin(&input, &opts).await?;
    let id = begun.id;
    let topic_id = req.topic.clone().unwrap_or_else(|| format!("topic_{id}"));
    // A queued operation is started by whoever ends the one before it.
    let status = if begun.queued_behind.is_some() {
        "queued"
    } else {
        app.runner.spawn(id, user.id, driver, Job::Run).await?;
        "idle"
    };
    Ok(Created {
        operation_id: id.to_string(),
        topic_id,
        status: status.into(),
        queued_behind: begun.queued_behind.map(|b| b.to_string()),
    })
}

/// `GET /v1/operations`: the caller's operations, newest first.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
    Params(q): Params<ListQuery>,
) -> Result<Json<Vec<OperationRecord>>, ApiError> {
    if let Some(topic) = &q.topic {
        rein_operation::check_topic_id(topic)?;
    }
    let ops = app
        .store
        .list_operations(&OperationFilter {
            status: q.status,
            owner: Some(user.id),
            agent: q.agent,
            topic: q.topic,
            top_level: q.top_level,
            limit: q.limit.unwrap_or(100).min(1000),
            ..Default::default()
        })
        .await?;
    Ok(Json(ops))
}

/// `GET /v1/operations/{id}`: the record, the step timeline and pending decisions.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
) -> Result<Json<OperationDetail>, ApiError> {
    let op = owned_operation(&app, &user, &id).await?;
    Ok(Json(
        OperationDetail::load(&*app.store, app.runner.host.catalog.clone(), op).await?,
    ))
}

/// `GET /v1/operations/{id}/context`: what each model call admitted (tokens per item, each
/// context processor's effect), in order.
pub async fn context(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
    Params(q): Params<ContextQuery>,
) -> Result<Json<Vec<rein_operation::context_report::CallContext>>, ApiError> {
    let record = owned_record(&app, &user, &id).await?;
    let calls =
        rein_operation::context_report::call_contexts(&*app.store, record.id, q.step).await?;
    Ok(Json(calls))
}

/// `POST /v1/operations/{id}/cancel`: a running operation stops at its next boundary
/// (keeping partial output); a parked one ends now.
pub async fn cancel(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
) -> Result<Reply<202, Accepted>, ApiError> {
    let record = owned_record(&app, &user, &id).await?;
    if record.status.is_terminal() {
        return Err(ApiError::conflict(format!(
            "operation {id} already ended ({})",
            status_name(record.status)
        )));
    }
    app.runner.driver().cancel(record.id).await?;
    let now = app
        .store
        .operation_status(record.id)
        .await?
        .unwrap_or(record.status);
    Ok(Reply(Accepted {
        operation_id: id,
        status: status_name(now),
    }))
}

/// `POST /v1/operations/{id}/resume`: continue an interrupted operation (or one whose process
/// died) from its last committed step.
pub async fn resume(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
) -> Result<Reply<202, Accepted>, ApiError> {
    let op = owned_record(&app, &user, &id).await?;
    match op.status {
        s if s.is_terminal() => {
            return Err(ApiError::conflict(format!(
                "operation {id} already ended ({})",
                status_name(s)
            )));
        }
        // Unless a decision was recorded and its step never committed (the process stopped
        // in between): the resume carries it out.
        Status::WaitingForHuman if !decided_while_waiting(&app, op.id).await? => {
            return Err(ApiError::conflict(format!(
                "operation {id} waits for a decision: POST its interventions"
            )));
        }
        _ => {}
    }
    app.runner
        .spawn(op.id, user.id, app.runner.driver(), Job::Resume)
        .await?;
    Ok(Reply(Accepted {
        operation_id: id,
        status: "running".into(),
    }))
}

/// Whether a call `id` waits on was decided already: the decision was recorded, and the process
/// stopped before the step it allowed was committed.
async fn decided_while_waiting(
    app: &AppState,
    id: rein_core::OperationId,
) -> Result<bool, ApiError> {
    let Some(op) = app.store.load_operation(id).await? else {
        return Ok(false);
    };
    let decided = app.store.interventions(id).await?;
    Ok(op.state.pending_tool_calls.iter().any(|c| {
        decided
            .iter()
            .any(|i| i.call.id == c.id && i.status != InterventionStatus::Pending)
    }))
}

/// `GET /v1/operations/{id}/interventions`: every approval request, decided or not.
pub async fn interventions(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
) -> Result<Json<Vec<Intervention>>, ApiError> {
    let op = owned_record(&app, &user, &id).await?;
    Ok(Json(app.store.interventions(op.id).await?))
}

/// `POST /v1/operations/{id}/interventions`: decide pending calls (single-use: a call already
/// decided is a 409), then the operation continues in the background.
pub async fn decide(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
    Body(body): Body<Decisions>,
) -> Result<Reply<202, Accepted>, ApiError> {
    if body.decisions.is_empty() {
        return Err(ApiError::bad_request("decisions is empty"));
    }
    let op = owned_record(&app, &user, &id).await?;
    apply_decisions(&app, &user, &op, body.decisions).await?;
    Ok(Reply(Accepted {
        operation_id: id,
        status: "running".into(),
    }))
}

/// Decide pending calls of operation `op` (the caller's, at the top of its tree) and continue
/// it in the background: each decision names a call the tree waits on and fits it, nothing
/// is decided twice, grants are recorded first. Answers what the continuing run's end waits on.
pub(crate) async fn apply_decisions(
    app: &AppState,
    user: &rein_store::User,
    op: &rein_store::OperationRecord,
    wanted: Vec<DecisionIn>,
) -> Result<crate::runner::Ended, ApiError> {
    let id = op.id;
    // A sub-agent's approvals are decided through the operation at the top of its tree.
    let known = rein_operation::tree::interventions(&*app.store, op.id).await?;
    let mut seen = std::collections::HashSet::new();
    let mut decisions = Vec::with_capacity(wanted.len());
    let mut grants = Vec::new();
    for d in wanted {
        if !seen.insert(d.tool_call_id.clone()) {
            return Err(ApiError::bad_request(format!(
                "tool call {} is decided twice in this request",
                d.tool_call_id
            )));
        }
        match known.iter().find(|i| *i.call.id == *d.tool_call_id) {
            None => {
                return Err(ApiError::not_found(format!(
                    "operation {id} has no approval request or question for tool call {}",
                    d.tool_call_id
                )));
            }
            Some(i) if i.status != InterventionStatus::Pending => {
                return Err(ApiError::conflict(format!(
                    "tool call {} was already decided",
                    d.tool_call_id
                )));
            }
            Some(i) => {
                let call = d.tool_call_id.clone();
                if let Some(scope) = d.grant {
                    grants.push((call.clone(), scope));
                }
                decisions.push((call, d.decision_for(i)?, None));
            }
        }
    }
    if !matches!(
        op.status,
        Status::WaitingForHuman | Status::WaitingForSubAgents
    ) {
        return Err(ApiError::conflict(format!(
            "operation {id} is {}, not waiting for a decision",
            status_name(op.status)
        )));
    }
    // Grants are recorded before anything is decided: a refused one decides nothing.
    let driver = app.runner.driver();
    for (call, scope) in grants {
        let (grant, covered) = driver
            .grant_call(op.id, &call, scope, Some(&user.name))
            .await?;
        for other in covered {
            if seen.insert(other.clone()) {
                decisions.push((
                    other,
                    Decision::Approve,
                    Some(format!("grant {}", grant.id)),
                ));
            }
        }
    }
    app.runner
        .spawn(op.id, user.id.clone(), driver, Job::Decide(decisions))
        .await
}

/// The operation routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/operations",
            "Start an operation; answered once it is committed with its running slot",
            create,
        )
        .route(
            Method::Get,
            "/v1/operations",
            "Your operations, newest first",
            list,
        )
        .route(
            Method::Get,
            "/v1/operations/{id}",
            "An operation, its spec, step timeline and pending decisions",
            show,
        )
        .route(
            Method::Get,
            "/v1/operations/{id}/context",
            "What each model call admitted: tokens per item and each context processor's effect",
            context,
        )
        .route(
            Method::Post,
            "/v1/operations/{id}/cancel",
            "Cancel (a running operation stops at its next boundary)",
            cancel,
        )
        .route(
            Method::Post,
            "/v1/operations/{id}/resume",
            "Continue from the last committed step",
            resume,
        )
        .route(
            Method::Get,
            "/v1/operations/{id}/interventions",
            "Approval requests, decided or not",
            interventions,
        )
        .route(
            Method::Post,
            "/v1/operations/{id}/interventions",
            "Approve or reject pending tool calls (single-use)",
            decide,
        )
        .route(
            Method::Get,
            "/v1/operations/{id}/events",
            "Server-Sent Events from the durable log; resume with Last-Event-ID or ?after=",
            crate::routes::events::stream,
        )
}
