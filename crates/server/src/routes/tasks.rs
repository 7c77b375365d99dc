//! `/v1/tasks`: a user's tasks (instruction, agent, automation, policies), running them now,
//! pausing and resuming, their next due times and their history (runs with briefs, skipped
//! fires with reasons).

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, Params, Segment};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use rein_scheduler::input::{apply_edit, check_agent, new_task, view};
use rein_scheduler::{Automation, Task, TaskError, TaskInput};
use rein_store::Tasks;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// `GET /v1/tasks/{id}/next` query.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextQuery {
    /// How many (default 5, at most 100).
    pub count: Option<usize>,
}

/// Task ids are `task_` and 32 lowercase hex digits; anything else is a 400 naming it.
fn check_task_id(id: &str) -> Result<(), ApiError> {
    let ok = id.strip_prefix("task_").is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    if ok {
        Ok(())
    } else {
        let shown: String = id.chars().take(40).collect();
        Err(ApiError::bad_request(format!(
            "{shown:?} is not a task id (task_ and 32 hex digits)"
        )))
    }
}

async fn owned(app: &AppState, user: &str, id: &str) -> Result<Task, ApiError> {
    check_task_id(id)?;
    match app.tasks.get(id).await {
        Ok(t) if t.owner == user => Ok(t),
        Ok(_) | Err(TaskError::NotFound(_)) => Err(ApiError::not_found(format!("no task {id}"))),
        Err(e) => Err(e.into()),
    }
}

/// `GET /v1/tasks`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Vec<Value>>, ApiError> {
    Ok(Json(
        app.tasks
            .list(Some(&user.id))
            .await?
            .iter()
            .map(view)
            .collect(),
    ))
}

/// `POST /v1/tasks`: 201.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(b): Body<TaskInput>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let new = new_task(&b)?;
    check_agent(&*app.store, &user.id, new.agent.as_deref()).await?;
    let t = app.tasks.create(&user.id, new).await?;
    Ok((StatusCode::CREATED, Json(view(&t))))
}

/// `GET /v1/tasks/{id}`: the task, its next due times, its last runs and fires.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
) -> Result<Json<Value>, ApiError> {
    let t = owned(&app, &user.id, &id).await?;
    let next = app.tasks.next(&id, 5).await?;
    let runs = app.store.runs(&id, 20).await?;
    let deliveries = app.store.deliveries(&id, 20).await?;
    Ok(Json(
        json!({"task": view(&t), "next": next, "runs": runs, "deliveries": deliveries}),
    ))
}

/// `PATCH /v1/tasks/{id}`: change fields; a new cron, interval or cap restarts the automation.
pub async fn edit(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
    Body(b): Body<TaskInput>,
) -> Result<Json<Value>, ApiError> {
    let current = owned(&app, &user.id, &id).await?;
    check_agent(&*app.store, &user.id, b.agent.as_deref()).await?;
    let t = apply_edit(&app.tasks, current, &b).await?;
    Ok(Json(view(&t)))
}

/// `POST /v1/tasks/{id}/pause`.
pub async fn pause(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
) -> Result<Json<Value>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app.tasks.pause(&id).await?)))
}

/// `POST /v1/tasks/{id}/resume`: missed fires are not run.
pub async fn resume(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
) -> Result<Json<Value>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app.tasks.resume(&id).await?)))
}

/// `POST /v1/tasks/{id}/run`: 202 with the operation (a manual run; not counted in the cap).
pub async fn run(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    owned(&app, &user.id, &id).await?;
    let op = app.tasks.run_now(&id, app.launcher.as_ref()).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"operation_id": op}))))
}

/// `DELETE /v1/tasks/{id}`: 204.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
) -> Result<StatusCode, ApiError> {
    owned(&app, &user.id, &id).await?;
    app.tasks.delete(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/tasks/{id}/history`: runs (trigger, due time, outcome, brief) and fires (skip
/// reasons), newest first.
pub async fn history(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
) -> Result<Json<Value>, ApiError> {
    owned(&app, &user.id, &id).await?;
    let runs = app.store.runs(&id, 200).await?;
    let deliveries = app.store.deliveries(&id, 200).await?;
    Ok(Json(json!({"runs": runs, "deliveries": deliveries})))
}

/// `GET /v1/tasks/{id}/next?count=`: the next due times (UTC, RFC 3339).
pub async fn next(
    State(app): State<AppState>,
    Caller(user): Caller,
    Segment(id): Segment,
    Params(q): Params<NextQuery>,
) -> Result<Json<Value>, ApiError> {
    let t = owned(&app, &user.id, &id).await?;
    let times = app.tasks.next(&id, q.count.unwrap_or(5).min(100)).await?;
    let tz = match &t.automation {
        Automation::Schedule { tz, .. } => Some(tz.clone()),
        _ => None,
    };
    Ok(Json(json!({"tz": tz, "next": times})))
}
