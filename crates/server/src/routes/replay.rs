//! `POST /v1/operations/{id}/replay` and `…/replay/chain`: one step's model call of one of your
//! operations sent again to models you name, or its whole trajectory replayed by another
//! model (`rein_operation::Driver::replay`, `replay_chain`). The operation is not changed and
//! no tool runs; what the calls spend counts in your usage and spending caps.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, OperationPath, owned_record};
use axum::Json;
use axum::extract::State;
use rein_operation::{ChainReplay, ReplayOptions, StepReplay};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Models one replay may ask at most.
pub const MAX_MODELS: usize = 8;
/// Runs per model one replay may ask at most.
pub const MAX_RUNS: u32 = 5;

/// `POST /v1/operations/{id}/replay` body. A step that made no model call is refused (409
/// `replay_does_not_fit`), as is one the operation does not have (422 `step_missing`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayStep {
    /// The step whose model call is sent again (its `step_index` in the timeline).
    pub step: u64,
    /// The models to ask, `provider/model` (its own reproduces the request it sent).
    #[schemars(length(min = 1, max = 8), inner(regex(pattern = rein_operation::profile::MODEL_PATTERN)))]
    pub models: Vec<String>,
    /// Runs per model (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 5))]
    pub runs: Option<u32>,
}

/// `POST /v1/operations/{id}/replay/chain` body.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayChain {
    /// The model that replays every model call, `provider/model`.
    #[schemars(regex(pattern = rein_operation::profile::MODEL_PATTERN))]
    pub model: String,
}

/// `POST /v1/operations/{id}/replay`.
pub async fn replay(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
    Body(req): Body<ReplayStep>,
) -> Result<Json<StepReplay>, ApiError> {
    let original = owned_record(&app, &user, &id).await?;
    if req.models.is_empty() || req.models.len() > MAX_MODELS {
        return Err(ApiError::bad_request(format!(
            "models: name 1 to {MAX_MODELS} models"
        )));
    }
    let runs = req.runs.unwrap_or(1);
    if !(1..=MAX_RUNS).contains(&runs) {
        return Err(ApiError::bad_request(format!(
            "runs: 1 to {MAX_RUNS} per model"
        )));
    }
    let models = req
        .models
        .iter()
        .map(|m| rein_operation::profile::model_ref(m))
        .collect::<Result<Vec<_>, _>>()?;
    // Refused once a spending cap is reached, as a new operation is.
    app.config
        .caps
        .admit(&*app.store, &user, chrono::Utc::now())
        .await?;
    let replayed = app
        .runner
        .driver()
        .replay(&ReplayOptions {
            from: original.id,
            step: req.step,
            models,
            runs,
        })
        .await?;
    Ok(Json(replayed))
}

/// `POST /v1/operations/{id}/replay/chain`.
pub async fn chain(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
    Body(req): Body<ReplayChain>,
) -> Result<Json<ChainReplay>, ApiError> {
    let original = owned_record(&app, &user, &id).await?;
    let model = rein_operation::profile::model_ref(&req.model)?;
    app.config
        .caps
        .admit(&*app.store, &user, chrono::Utc::now())
        .await?;
    let replayed = app
        .runner
        .driver()
        .replay_chain(original.id, &model)
        .await?;
    Ok(Json(replayed))
}

/// The routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Post,
            "/v1/operations/{id}/replay",
            "Send one step's model call again to the models you name: each answer, its tool calls, tokens, cost and latency beside the original's",
            replay,
        )
        .route(
            Method::Post,
            "/v1/operations/{id}/replay/chain",
            "Replay every model call of the operation with another model, from the original's states, until it asks for other tools",
            chain,
        )
}
