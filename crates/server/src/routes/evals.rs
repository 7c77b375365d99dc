//! `/v1/evals`: evaluation runs — a dataset's cases run by your agents (and versions of them)
//! as operations, each case's assertions judged (`rein_operation::evals`) — started, listed
//! and shown. A run answers when it is done; its cases run as the server runs any operation
//! (a running slot and a lease each), within your spending caps (each case's cost limit at
//! most what they leave).

use crate::AppState;
use crate::api::{Api, Method, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, EvalPath};
use axum::Json;
use axum::extract::State;
use rein_operation::evals::dataset::{EvalCase, check_case};
use rein_operation::evals::{AgentChoice, AgentSummary, EvalError, EvalRun, EvalRunner};
use rein_store::Evals;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Cases one run may have at most.
pub const MAX_CASES: usize = 200;
/// Agents one run may compare at most.
pub const MAX_AGENTS: usize = 4;

/// `POST /v1/evals` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewEval {
    /// What to call the dataset.
    #[schemars(length(min = 1, max = 200))]
    pub dataset: String,
    /// Its cases (1 to 200; ids unique).
    #[schemars(length(min = 1, max = 200))]
    pub cases: Vec<EvalCase>,
    /// The agents, `NAME` or `NAME@VERSION` (1 to 4).
    #[schemars(length(min = 1, max = 4))]
    pub agents: Vec<String>,
    /// Cases run at once (1 to 8; default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 8))]
    pub concurrency: Option<u32>,
}

/// A run as listed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct EvalListed {
    /// Its id.
    pub id: String,
    /// The dataset.
    pub dataset: String,
    /// When.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Per agent.
    pub summary: Vec<AgentSummary>,
}

/// `GET /v1/evals` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct EvalList {
    /// Newest first.
    pub runs: Vec<EvalListed>,
}

fn refused(e: EvalError) -> ApiError {
    match e {
        EvalError::Store(s) => s.into(),
        e @ (EvalError::BadAgent(_)
        | EvalError::NoAgent(_)
        | EvalError::NoVersion { .. }
        | EvalError::NoAgents
        | EvalError::Settings(..)) => ApiError::unprocessable(e.to_string()),
    }
}

/// `POST /v1/evals`: run it; the run when done.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(req): Body<NewEval>,
) -> Result<Reply<201, EvalRun>, ApiError> {
    if req.cases.is_empty() || req.cases.len() > MAX_CASES {
        return Err(ApiError::bad_request(format!("cases: 1 to {MAX_CASES}")));
    }
    if req.agents.is_empty() || req.agents.len() > MAX_AGENTS {
        return Err(ApiError::bad_request(format!("agents: 1 to {MAX_AGENTS}")));
    }
    let concurrency = req.concurrency.unwrap_or(4);
    if !(1..=8).contains(&concurrency) {
        return Err(ApiError::bad_request("concurrency: 1 to 8"));
    }
    let mut seen = std::collections::HashSet::new();
    for c in &req.cases {
        check_case(c).map_err(|why| ApiError::unprocessable(format!("case {:?}: {why}", c.id)))?;
        if !seen.insert(c.id.as_str()) {
            return Err(ApiError::unprocessable(format!(
                "case id {:?} is used twice",
                c.id
            )));
        }
    }
    let agents = req
        .agents
        .iter()
        .map(|a| AgentChoice::parse(a))
        .collect::<Result<Vec<_>, _>>()
        .map_err(refused)?;
    // Within the caller's spending caps: each case at most what they leave.
    let left = app
        .config
        .caps
        .admit(&*app.store, &user, chrono::Utc::now())
        .await?;
    let mut cases = req.cases;
    if let Some(cap) = left.cost {
        for c in &mut cases {
            let limit = c.max_cost.unwrap_or(f64::MAX).min(cap.dollars());
            c.max_cost = Some(limit);
        }
    }
    let origin = app.runner.host.origin(&*app.store, &user.id).await?;
    // Each case runs as the server runs any operation: its slot and lease claimed as it is
    // created, run by the runner, which renews the lease (so no other process takes it up).
    let launch: rein_operation::evals::Launch = {
        let app = app.clone();
        let owner = user.id.clone();
        Arc::new(move |id| {
            let app = app.clone();
            let owner = owner.clone();
            Box::pin(async move {
                match app
                    .runner
                    .spawn(id, owner, app.runner.driver(), crate::runner::Job::Run)
                    .await
                {
                    Ok(ended) => {
                        ended.wait().await;
                    }
                    Err(e) => {
                        tracing::warn!(operation = %id, error = %e.message, "an evaluation case did not start")
                    }
                }
            })
        })
    };
    let runner = EvalRunner {
        host: app.runner.host.clone(),
        store: Arc::clone(&app.store),
        driver: Arc::new(app.runner.driver()),
        agents_of: user.id.clone(),
        origin,
        admission: Some(app.runner.admission()),
        launch: Some(launch),
    };
    let run = runner
        .run(&req.dataset, &cases, &agents, concurrency as usize)
        .await
        .map_err(refused)?;
    Ok(Reply(run))
}

/// `GET /v1/evals`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<EvalList>, ApiError> {
    let runs = app
        .store
        .eval_runs(Some(&user.id))
        .await?
        .into_iter()
        .map(|r| EvalListed {
            summary: serde_json::from_value(r.summary).unwrap_or_default(),
            id: r.id,
            dataset: r.dataset,
            created_at: r.created_at,
        })
        .collect();
    Ok(Json(EvalList { runs }))
}

/// `GET /v1/evals/{id}`.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    EvalPath(id): EvalPath,
) -> Result<Json<EvalRun>, ApiError> {
    let r = app
        .store
        .eval_run(Some(&user.id), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no evaluation run {id}")))?;
    let run = serde_json::from_value(r.body)
        .map_err(|e| ApiError::internal(format!("evaluation run {id}: {e}")))?;
    Ok(Json(run))
}

/// The routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/evals",
            "Run an evaluation: each case by each agent as an operation, its assertions judged; answered when done",
            create,
        )
        .route(Method::Get, "/v1/evals", "Your evaluation runs, newest first", list)
        .route(Method::Get, "/v1/evals/{id}", "One evaluation run with every case's result", show)
}
