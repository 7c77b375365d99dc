//! `/v1/goals`: the caller's goals (rein-operation's [`rein_operation::goals`]), created,
//! listed, shown with their graph and spending, decided on, and their events read. The server
//! advances them in the background ([`crate::goals`]); nothing here waits for a goal to move.

use crate::AppState;
use crate::api::{Api, Method, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, GoalPath, Params, goal_id};
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use rein_core::goal::plan::{ProposedPlan, ProposedWork};
use rein_core::goal::{Goal, GoalDecision, GoalEvent, GoalLimits, GoalSettings, OnBudget};
use rein_core::state::{BudgetPolicy, ModelRef};
use rein_operation::goals::NewGoal;
use rein_store::{GoalRecord, Goals};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/goals` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateGoal {
    /// What to achieve (some text that is not only spaces).
    #[schemars(length(min = 1, max = 8000), pattern(r"\S"))]
    pub objective: String,
    /// What the final acceptance checks (default: the objective).
    #[serde(default)]
    #[schemars(length(max = 8000))]
    pub acceptance: Option<String>,
    /// The agent works are assigned to by default (default: your default agent); 422
    /// `agent_missing` when you have none of that name.
    #[serde(default)]
    #[schemars(pattern(rein_operation::profile::AGENT_NAME_PATTERN))]
    pub agent: Option<String>,
    /// The whole goal's cost limit in USD.
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub cost_limit: Option<f64>,
    /// The whole goal's token limit.
    #[serde(default)]
    pub token_limit: Option<u64>,
    /// What a spent budget does: `stop` (the goal fails) or `interrupt` (it waits for you).
    #[serde(default)]
    pub on_budget: Option<OnBudget>,
    /// Attempts a work gets before it is blocked (1 to 20; default 3).
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    pub max_attempts: Option<u32>,
    /// Works running at once (1 to 32; default 4).
    #[serde(default)]
    #[schemars(range(min = 1, max = 32))]
    pub max_parallel: Option<u32>,
    /// When it must be done by.
    #[serde(default)]
    pub deadline: Option<DateTime<Utc>>,
    /// The model that plans, `provider/model` (default: the system model, else the default).
    #[serde(default)]
    #[schemars(pattern(rein_operation::profile::MODEL_PATTERN))]
    pub planner: Option<String>,
    /// The model that verifies works and accepts the goal (default: the planner).
    #[serde(default)]
    #[schemars(pattern(rein_operation::profile::MODEL_PATTERN))]
    pub verifier: Option<String>,
    /// An agent of yours that verifies works and accepts the goal instead of `verifier`: each
    /// judgement an operation of it, with its tools (422 when you have none of that name, or
    /// when it is `agent`).
    #[serde(default)]
    #[schemars(pattern(rein_operation::profile::AGENT_NAME_PATTERN))]
    pub verifier_agent: Option<String>,
}

/// A goal's settings as the API shows them.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GoalSettingsView {
    /// The default agent of its works.
    pub agent: Option<String>,
    /// The planner, `provider/model`.
    pub planner: Option<String>,
    /// The verifier, `provider/model`.
    pub verifier: Option<String>,
    /// The verifier agent, when an agent judges instead of a model.
    pub verifier_agent: Option<String>,
    /// Its cost limit in USD.
    pub cost_limit: Option<f64>,
    /// Its token limit.
    pub token_limit: Option<u64>,
    /// What a spent budget does.
    pub on_budget: BudgetPolicy,
    /// When it must be done by.
    pub deadline: Option<DateTime<Utc>>,
}

/// A goal: its graph, settings and what it has spent.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GoalView {
    /// The graph.
    pub goal: Goal,
    /// How it runs.
    pub settings: GoalSettingsView,
    /// What it has spent in USD: its own calls and its works' operations.
    pub spent_usd: f64,
    /// Tokens, all told.
    pub spent_tokens: u64,
    /// Commits so far.
    pub seq: u64,
    /// Whether it rests: over, or waiting for a person with nothing else to do (a follower
    /// stops here).
    pub rests: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

/// `GET /v1/goals` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GoalList {
    /// Newest first.
    pub goals: Vec<GoalView>,
}

/// `GET /v1/goals/{id}/events` query.
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalEventsQuery {
    /// Only events after this commit.
    #[serde(default)]
    pub after: u64,
}

/// One committed event.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GoalEventView {
    /// Its commit.
    pub seq: u64,
    /// What happened.
    pub event: GoalEvent,
    /// When.
    pub at: DateTime<Utc>,
}

/// `GET /v1/goals/{id}/events` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct GoalEvents {
    /// In order.
    pub events: Vec<GoalEventView>,
}

/// `PUT /v1/goals/{id}/plan` body: your plan for the goal's works still to do.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GoalPlanEdit {
    /// The works still to do (the works that passed or were retired are kept; a work of the
    /// current plan left out is dropped, one named again starts afresh).
    #[schemars(length(max = 200))]
    pub works: Vec<ProposedWork>,
    /// Why, kept with the revision (default: "edited by hand").
    #[serde(default)]
    #[schemars(length(max = 8000))]
    pub why: String,
}

/// `POST /v1/goals/{id}/limits` body: what the goal may spend in all from now on (at least
/// one of the two).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("minProperties" = 1))]
pub struct GoalLimitsIn {
    /// The new cost limit in USD (absent: kept).
    #[serde(default)]
    #[schemars(range(min = 0.0))]
    pub cost_limit: Option<f64>,
    /// The new token limit (absent: kept).
    #[serde(default)]
    pub token_limit: Option<u64>,
}

async fn view(app: &AppState, r: GoalRecord) -> Result<GoalView, ApiError> {
    let runner = crate::goals::runner(app, &r.owner).await?;
    let ledger = runner.ledger(&r).await?;
    let rests = runner.at_rest(&r, &ledger).await?;
    Ok(GoalView::of(r, ledger, rests))
}

impl GoalView {
    /// `r` as the API shows it, with what its ledger says it spent and whether it rests.
    pub fn of(r: GoalRecord, ledger: rein_operation::goals::Ledger, rests: bool) -> Self {
        let s = &r.settings;
        GoalView {
            settings: GoalSettingsView {
                agent: s.agent.clone(),
                planner: s.planner.as_ref().map(ModelRef::key),
                verifier: s.verifier.as_ref().map(ModelRef::key),
                verifier_agent: s.verifier_agent.clone(),
                cost_limit: s.budget.max_cost.map(|c| c.dollars()),
                token_limit: s.budget.max_tokens,
                on_budget: s.budget.on_exceeded,
                deadline: s.deadline,
            },
            goal: r.goal,
            spent_usd: ledger.cost.dollars(),
            spent_tokens: ledger.tokens,
            seq: r.seq,
            rests,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// What `body` asks, as a new goal (a refusal names the field).
pub fn new_goal(body: CreateGoal) -> Result<NewGoal, ApiError> {
    if body.verifier.is_some() && body.verifier_agent.is_some() {
        return Err(ApiError::unprocessable(
            "verifier and verifier_agent: name a verifier model or a verifier agent, not both",
        ));
    }
    let cost_limit = usd_limit(body.cost_limit)?;
    let defaults = GoalLimits::default();
    Ok(NewGoal {
        objective: body.objective,
        acceptance: body.acceptance,
        settings: GoalSettings {
            agent: body.agent,
            planner: model("planner", body.planner)?,
            verifier: model("verifier", body.verifier)?,
            verifier_agent: body.verifier_agent,
            budget: rein_core::state::Budget {
                max_cost: cost_limit,
                max_tokens: body.token_limit,
                on_exceeded: body.on_budget.unwrap_or_default().policy(),
                ..Default::default()
            },
            deadline: body.deadline,
        },
        limits: GoalLimits {
            max_attempts: body.max_attempts.unwrap_or(defaults.max_attempts),
            max_parallel: body.max_parallel.unwrap_or(defaults.max_parallel),
            ..defaults
        },
    })
}

/// A `cost_limit` as asked: a finite number of USD, 0 or more (400 otherwise).
fn usd_limit(dollars: Option<f64>) -> Result<Option<rein_core::Usd>, ApiError> {
    match dollars {
        Some(c) if !c.is_finite() || c < 0.0 => Err(ApiError::bad_request(
            "cost_limit: a number of USD, 0 or more",
        )),
        c => Ok(c.map(rein_core::Usd::from_dollars)),
    }
}

fn model(field: &str, m: Option<String>) -> Result<Option<ModelRef>, ApiError> {
    m.map(|m| {
        rein_operation::profile::model_ref(&m)
            .map_err(|e| ApiError::unprocessable(format!("{field}: {e}")))
    })
    .transpose()
}

/// `POST /v1/goals`: keep a new goal; the server plans and runs it in the background.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(new): Body<CreateGoal>,
) -> Result<Reply<201, GoalView>, ApiError> {
    let new = new_goal(new)?;
    let runner = crate::goals::runner(&app, &user.id).await?;
    let record = runner.create(&user.id, new).await?;
    app.goals_wake.notify_one();
    Ok(Reply(view(&app, record).await?))
}

/// `GET /v1/goals`: the caller's goals, newest first (at most 200).
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<GoalList>, ApiError> {
    let mut goals = Vec::new();
    for r in app.store.list_goals(&user.id, 200).await? {
        goals.push(view(&app, r).await?);
    }
    Ok(Json(GoalList { goals }))
}

/// `owner`'s goal `id` (a path parameter, parsed here), or 404.
pub(crate) async fn owned(app: &AppState, owner: &str, id: &str) -> Result<GoalRecord, ApiError> {
    let id = goal_id(id)?;
    app.store
        .goal(Some(owner), id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no goal {id}")))
}

/// `GET /v1/goals/{id}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    GoalPath(id): GoalPath,
) -> Result<Json<GoalView>, ApiError> {
    let r = owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app, r).await?))
}

/// `POST /v1/goals/{id}/decisions`: a person's decision (retry or skip a work, replan, pause,
/// resume, cancel, accept, reject), committed as theirs.
pub async fn decide(
    State(app): State<AppState>,
    Caller(user): Caller,
    GoalPath(id): GoalPath,
    Body(decision): Body<GoalDecision>,
) -> Result<Json<GoalView>, ApiError> {
    let r = owned(&app, &user.id, &id).await?;
    let runner = crate::goals::runner(&app, &user.id).await?;
    runner
        .decide(&user.id, r.goal.id, &user.name, decision)
        .await?;
    app.goals_wake.notify_one();
    let r = owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app, r).await?))
}

/// `PUT /v1/goals/{id}/plan`: replace the works still to do with yours, checked as a
/// planner's plan is and committed as a revision made by you. 409 while a work runs (pause
/// the goal and let it finish), 422 naming what is wrong with the plan.
pub async fn edit_plan(
    State(app): State<AppState>,
    Caller(user): Caller,
    GoalPath(id): GoalPath,
    Body(edit): Body<GoalPlanEdit>,
) -> Result<Json<GoalView>, ApiError> {
    let r = owned(&app, &user.id, &id).await?;
    let runner = crate::goals::runner(&app, &user.id).await?;
    let proposed = ProposedPlan { works: edit.works };
    runner
        .edit_plan(&user.id, r.goal.id, &user.name, &proposed, &edit.why)
        .await?;
    app.goals_wake.notify_one();
    let r = owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app, r).await?))
}

/// `POST /v1/goals/{id}/limits`: new limits for the whole goal, committed as yours; a work's
/// operation its old share interrupted gets its share of the new ones (then resume the goal).
pub async fn set_limits(
    State(app): State<AppState>,
    Caller(user): Caller,
    GoalPath(id): GoalPath,
    Body(limits): Body<GoalLimitsIn>,
) -> Result<Json<GoalView>, ApiError> {
    let cost = usd_limit(limits.cost_limit)?;
    let r = owned(&app, &user.id, &id).await?;
    let runner = crate::goals::runner(&app, &user.id).await?;
    runner
        .set_limits(&user.id, r.goal.id, &user.name, cost, limits.token_limit)
        .await?;
    app.goals_wake.notify_one();
    let r = owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app, r).await?))
}

/// `GET /v1/goals/{id}/events`: its committed events after `after`, in order.
pub async fn events(
    State(app): State<AppState>,
    Caller(user): Caller,
    GoalPath(id): GoalPath,
    Params(q): Params<GoalEventsQuery>,
) -> Result<Json<GoalEvents>, ApiError> {
    let r = owned(&app, &user.id, &id).await?;
    let events = app
        .store
        .goal_events(r.goal.id, q.after)
        .await?
        .into_iter()
        .map(|e| GoalEventView {
            seq: e.seq,
            event: e.event,
            at: e.at,
        })
        .collect();
    Ok(Json(GoalEvents { events }))
}

/// The goal routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/goals",
            "Create a goal: the server plans it into works, runs each as an operation, verifies it independently and accepts the whole",
            create,
        )
        .route(Method::Get, "/v1/goals", "Your goals, newest first", list)
        .route(
            Method::Get,
            "/v1/goals/{id}",
            "A goal with its graph (works, attempts, verdicts, plan revisions) and what it spent",
            show,
        )
        .route(
            Method::Post,
            "/v1/goals/{id}/decisions",
            "Decide on a goal: retry or skip a work, replan, pause, resume, cancel, accept, reject",
            decide,
        )
        .route(
            Method::Post,
            "/v1/goals/{id}/limits",
            "Set a goal's cost and token limits (an interrupted goal then resumes where it stopped)",
            set_limits,
        )
        .route(
            Method::Put,
            "/v1/goals/{id}/plan",
            "Edit a goal's plan: your works replace the ones still to do, as a revision of yours",
            edit_plan,
        )
        .route(
            Method::Get,
            "/v1/goals/{id}/events",
            "A goal's committed events, in order",
            events,
        )
        .route(
            Method::Get,
            "/v1/goals/{id}/stream",
            "A goal's committed events as Server-Sent Events, then each new one until the goal is over",
            super::goal_stream::stream,
        )
}
