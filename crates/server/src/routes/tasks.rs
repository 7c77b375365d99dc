//! `/v1/tasks`: a user's tasks (instruction, agent, automation, policies), running them now,
//! pausing and resuming, their next due times and their history (runs with briefs, skipped
//! fires with reasons).

use crate::AppState;
use crate::api::{Api, Method};
use crate::api::{NoContent, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, Params, TaskPath};
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use rein_scheduler::input::{NewTaskInput, TaskView, apply_edit, check_agent, new_task};
use rein_scheduler::{Automation, Task, TaskError, TaskInput};
use rein_store::{Delivery, TaskRun, Tasks};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/tasks/{id}/next` query.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextQuery {
    /// How many (default 5, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
}

/// `GET /v1/tasks/{id}` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskDetail {
    /// The task.
    pub task: TaskView,
    /// Its next due times (UTC).
    pub next: Vec<DateTime<Utc>>,
    /// Its last runs, newest first.
    pub runs: Vec<TaskRun>,
    /// Its last fires (with skip reasons), newest first.
    pub deliveries: Vec<Delivery>,
}

/// `GET /v1/tasks/{id}/history` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct TaskHistory {
    /// Runs (trigger, outcome, cost, brief), newest first.
    pub runs: Vec<TaskRun>,
    /// Fires (with skip reasons), newest first.
    pub deliveries: Vec<Delivery>,
}

/// `GET /v1/tasks/{id}/next` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct NextTimes {
    /// The zone of its cron pattern, when it has one.
    pub tz: Option<String>,
    /// The next due times (UTC).
    pub next: Vec<DateTime<Utc>>,
}

/// `POST /v1/tasks/{id}/run` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct RunStarted {
    /// The run's operation.
    pub operation_id: String,
}

async fn owned(app: &AppState, user: &str, id: &str) -> Result<Task, ApiError> {
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
) -> Result<Json<Vec<TaskView>>, ApiError> {
    Ok(Json(
        app.tasks
            .list(Some(&user.id))
            .await?
            .iter()
            .map(TaskView::of)
            .collect(),
    ))
}

/// `POST /v1/tasks`: 201.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(NewTaskInput(b)): Body<NewTaskInput>,
) -> Result<Reply<201, TaskView>, ApiError> {
    let new = new_task(&b)?;
    check_agent(&*app.store, &user.id, new.agent.as_deref()).await?;
    let t = app.tasks.create(&user.id, new).await?;
    Ok(Reply(TaskView::of(&t)))
}

/// `GET /v1/tasks/{id}`: the task, its next due times, its last runs and fires.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
) -> Result<Json<TaskDetail>, ApiError> {
    let t = owned(&app, &user.id, &id).await?;
    Ok(Json(TaskDetail {
        task: TaskView::of(&t),
        next: app.tasks.next(&id, 5).await?,
        runs: app.store.runs(&id, 20).await?,
        deliveries: app.store.deliveries(&id, 20).await?,
    }))
}

/// `PATCH /v1/tasks/{id}`: change fields; a new cron, interval or cap restarts the automation.
pub async fn edit(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
    Body(b): Body<TaskInput>,
) -> Result<Json<TaskView>, ApiError> {
    let current = owned(&app, &user.id, &id).await?;
    check_agent(&*app.store, &user.id, b.agent.as_deref()).await?;
    let t = apply_edit(&app.tasks, current, &b).await?;
    Ok(Json(TaskView::of(&t)))
}

/// `POST /v1/tasks/{id}/pause`.
pub async fn pause(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
) -> Result<Json<TaskView>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(TaskView::of(&app.tasks.pause(&id).await?)))
}

/// `POST /v1/tasks/{id}/resume`: missed fires are not run.
pub async fn resume(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
) -> Result<Json<TaskView>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(TaskView::of(&app.tasks.resume(&id).await?)))
}

/// `POST /v1/tasks/{id}/run`: 202 with the operation (a manual run; not counted in the cap).
pub async fn run(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
) -> Result<Reply<202, RunStarted>, ApiError> {
    owned(&app, &user.id, &id).await?;
    let operation_id = app.tasks.run_now(&id, app.launcher.as_ref()).await?;
    Ok(Reply(RunStarted { operation_id }))
}

/// `DELETE /v1/tasks/{id}`: 204.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
) -> Result<NoContent, ApiError> {
    owned(&app, &user.id, &id).await?;
    app.tasks.delete(&id).await?;
    Ok(NoContent)
}

/// `GET /v1/tasks/{id}/history`: runs (trigger, due time, outcome, brief) and fires (skip
/// reasons), newest first.
pub async fn history(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
) -> Result<Json<TaskHistory>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(TaskHistory {
        runs: app.store.runs(&id, 200).await?,
        deliveries: app.store.deliveries(&id, 200).await?,
    }))
}

/// `GET /v1/tasks/{id}/next?count=`: the next due times (UTC, RFC 3339).
pub async fn next(
    State(app): State<AppState>,
    Caller(user): Caller,
    TaskPath(id): TaskPath,
    Params(q): Params<NextQuery>,
) -> Result<Json<NextTimes>, ApiError> {
    let t = owned(&app, &user.id, &id).await?;
    let times = app.tasks.next(&id, q.count.unwrap_or(5).min(100)).await?;
    let tz = match &t.automation {
        Automation::Schedule { tz, .. } => Some(tz.clone()),
        _ => None,
    };
    Ok(Json(NextTimes { tz, next: times }))
}

/// The task routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(Method::Get, "/v1/tasks", "Your tasks", list)
        .route(Method::Post, "/v1/tasks", "Create a task", create)
        .route(
            Method::Get,
            "/v1/tasks/{id}",
            "A task, its next due times, its last runs and fires",
            show,
        )
        .route(
            Method::Patch,
            "/v1/tasks/{id}",
            "Change fields; a new cron, interval or cap restarts the automation",
            edit,
        )
        .route(Method::Delete, "/v1/tasks/{id}", "Delete a task", delete)
        .route(Method::Post, "/v1/tasks/{id}/pause", "Pause a task", pause)
        .route(
            Method::Post,
            "/v1/tasks/{id}/resume",
            "Resume a paused task (missed fires are not run)",
            resume,
        )
        .route(
            Method::Post,
            "/v1/tasks/{id}/run",
            "Run the task now (a manual run, not counted in the cap)",
            run,
        )
        .route(
            Method::Get,
            "/v1/tasks/{id}/history",
            "Runs with their outcomes and briefs, and skipped fires with reasons",
            history,
        )
        .route(
            Method::Get,
            "/v1/tasks/{id}/next",
            "The next due times (UTC)",
            next,
        )
}
