//! `POST /v1/operations/{id}/fork`: a new operation from the state one of yours had right
//! after one of its committed steps, with another model, instructions, narrower tools or
//! another approval mode (`rein_operation::Driver::fork`); it runs at once, like any.

use crate::AppState;
use crate::api::{Api, Method, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, OperationPath, owned_record};
use crate::runner::Job;
use axum::extract::State;
use rein_core::intervention::ApprovalMode;
use rein_operation::{ForkChanges, ForkOptions};
use rein_store::Trigger;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `POST /v1/operations/{id}/fork` body. Each setting left out stays the original's. A step
/// the operation does not have is refused (422 `step_missing`), as is one after which it
/// waited or had ended (409 `fork_does_not_fit`) and tools it could not use (403
/// `fork_widens`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForkOperation {
    /// The committed step (its `step_index` in the timeline) whose state the fork starts from;
    /// 0 is the state it started with, before its first step.
    pub step: u64,
    /// Another model, `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(rein_operation::profile::MODEL_PATTERN))]
    pub model: Option<String>,
    /// Other instructions: they replace the conversation's system message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_role: Option<String>,
    /// Tools it may call (`identifier` or `identifier/api`), among those the original could.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "rein_operation::profile::tool_keys_schema")]
    pub tools: Option<Vec<String>>,
    /// Another approval mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalMode>,
}

/// `202` answer: the fork is committed and runs.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Forked {
    /// The new operation.
    pub operation_id: String,
    /// Its conversation (new).
    pub topic_id: String,
    /// The operation it forked.
    pub forked_from: String,
    /// The step it started after.
    pub step: u64,
}

/// `POST /v1/operations/{id}/fork`.
pub async fn fork(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
    Body(req): Body<ForkOperation>,
) -> Result<Reply<202, Forked>, ApiError> {
    let original = owned_record(&app, &user, &id).await?;
    let model = req
        .model
        .as_deref()
        .map(rein_operation::profile::model_ref)
        .transpose()?;
    // Within the caller's spending caps, as a new operation is.
    let left = app
        .config
        .caps
        .admit(&*app.store, &user, chrono::Utc::now())
        .await?;
    let driver = app.runner.driver();
    let fork = driver
        .fork(&ForkOptions {
            from: original.id,
            at: req.step,
            changes: ForkChanges {
                model,
                system_role: req.system_role,
                tools: req.tools,
                approval: req.approval,
            },
            trigger: Trigger::Api,
            admission: Some(app.runner.admission()),
            max_cost: left.cost,
            max_tokens: left.tokens,
        })
        .await?;
    app.runner.spawn(fork.id, user.id, driver, Job::Run).await?;
    Ok(Reply(Forked {
        operation_id: fork.id.to_string(),
        topic_id: fork.topic_id,
        forked_from: original.id.to_string(),
        step: req.step,
    }))
}

/// The route and its document.
pub fn api() -> Api {
    Api::new().route(
        Method::Post,
        "/v1/operations/{id}/fork",
        "Fork: a new operation from the state after one of this operation's committed steps, with another model, instructions, narrower tools or approval mode",
        fork,
    )
}
