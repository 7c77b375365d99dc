//! `/v1/tasks`: a user's tasks (instruction, agent, automation, policies), running them now,
//! pausing and resuming, their next due times and their history (runs with briefs, skipped
//! fires with reasons).

use crate::AppState;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, Params};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use rein_scheduler::{
    Automation, CatchUp, NewTask, Overlap, ReviewState, Schedule, Task, TaskError, TaskService,
    TaskStatus, parse_interval,
};
use rein_store::Tasks;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// `POST /v1/tasks` and `PATCH /v1/tasks/{id}` body (on a patch every field is optional).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskIn {
    /// Title.
    pub title: Option<String>,
    /// The whole prompt of every run (no earlier chat is assumed).
    pub instruction: Option<String>,
    /// The agent that runs it.
    pub agent: Option<String>,
    /// Cron pattern (5 fields, or 6 with seconds first).
    pub cron: Option<String>,
    /// IANA time zone of the cron pattern (default UTC).
    pub tz: Option<String>,
    /// Heartbeat interval (`30m`, `2h`, ...), instead of a cron pattern.
    pub every: Option<String>,
    /// A heartbeat run still going after this long is cancelled.
    pub timeout: Option<String>,
    /// Manual runs only (drops the schedule or heartbeat).
    pub manual_only: Option<bool>,
    /// Scheduled or heartbeat runs allowed (counted from when the automation was set).
    pub max_executions: Option<u64>,
    /// `skip` (default), `queue_one` or `allow`.
    pub overlap: Option<String>,
    /// `skip_missed` (default) or `run_once`.
    pub catch_up: Option<String>,
    /// Consecutive failures that pause the task (default 3).
    pub failure_threshold: Option<u32>,
    /// Review state: `none`, `pending`, `approved` or `changes_requested`.
    pub review: Option<String>,
    /// `completed` or `archived` (pause and resume have their own calls).
    pub status: Option<String>,
}

/// `GET /v1/tasks/{id}/next` query.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NextQuery {
    /// How many (default 5, at most 100).
    pub count: Option<usize>,
}

impl From<TaskError> for ApiError {
    fn from(e: TaskError) -> Self {
        match e {
            TaskError::Store(s) => s.into(),
            TaskError::NotFound(id) => ApiError::not_found(format!("no task {id}")),
            TaskError::Schedule(s) => ApiError::bad_request(s.to_string()),
            TaskError::Invalid(m) => ApiError::bad_request(m),
            e @ TaskError::Corrupt { .. } => ApiError::internal(e.to_string()),
        }
    }
}

/// The overlap and catch-up policies a body names, if any.
fn policies(b: &TaskIn) -> Result<(Option<Overlap>, Option<CatchUp>), ApiError> {
    let overlap = b
        .overlap
        .as_deref()
        .map(|o| enum_of::<Overlap>("overlap", o, "skip, queue_one or allow"))
        .transpose()?;
    let catch_up = b
        .catch_up
        .as_deref()
        .map(|c| enum_of::<CatchUp>("catch_up", c, "skip_missed or run_once"))
        .transpose()?;
    Ok((overlap, catch_up))
}

fn enum_of<T: serde::de::DeserializeOwned>(
    field: &str,
    value: &str,
    allowed: &str,
) -> Result<T, ApiError> {
    serde_json::from_value(Value::String(value.to_owned()))
        .map_err(|_| ApiError::bad_request(format!("{field} `{value}`: use {allowed}")))
}

/// The automation a body asks for; `None` when it does not touch it.
pub fn automation(b: &TaskIn) -> Result<Option<Automation>, ApiError> {
    if b.manual_only == Some(true) {
        if b.cron.is_some() || b.every.is_some() {
            return Err(ApiError::bad_request("manual_only excludes cron and every"));
        }
        return Ok(Some(Automation::None));
    }
    match (&b.cron, &b.every) {
        (Some(_), Some(_)) => Err(ApiError::bad_request(
            "cron and every are mutually exclusive",
        )),
        (Some(pattern), None) => {
            let tz = b.tz.clone().unwrap_or_else(|| "UTC".into());
            Schedule::cron(pattern, &tz).map_err(|e| ApiError::bad_request(e.to_string()))?;
            Ok(Some(Automation::Schedule {
                pattern: pattern.clone(),
                tz,
            }))
        }
        (None, Some(every)) => Ok(Some(Automation::Heartbeat {
            every_secs: parse_interval(every).map_err(|e| ApiError::bad_request(e.to_string()))?,
            timeout_secs: b
                .timeout
                .as_deref()
                .map(parse_interval)
                .transpose()
                .map_err(|e| ApiError::bad_request(e.to_string()))?,
        })),
        (None, None) => {
            if b.tz.is_some() || b.timeout.is_some() {
                return Err(ApiError::bad_request(
                    "tz goes with cron and timeout with every",
                ));
            }
            Ok(None)
        }
    }
}

/// A task as the API shows it.
pub fn view(t: &Task) -> Value {
    let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
    v["id"] = json!(t.id);
    v["created_at"] = json!(t.created_at);
    v["updated_at"] = json!(t.updated_at);
    v
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

/// The new task a body describes (title and instruction required).
pub fn new_task(b: &TaskIn) -> Result<NewTask, ApiError> {
    let (overlap, catch_up) = policies(b)?;
    Ok(NewTask {
        title: b
            .title
            .clone()
            .ok_or_else(|| ApiError::bad_request("title is required"))?,
        instruction: b
            .instruction
            .clone()
            .ok_or_else(|| ApiError::bad_request("instruction is required"))?,
        agent: b.agent.clone(),
        automation: automation(b)?.unwrap_or_default(),
        max_executions: b.max_executions,
        overlap: overlap.unwrap_or_default(),
        catch_up: catch_up.unwrap_or_default(),
        failure_threshold: b.failure_threshold,
    })
}

/// Apply an edit body to task `id` (owned by the caller).
pub async fn apply_edit(tasks: &TaskService, current: Task, b: &TaskIn) -> Result<Task, ApiError> {
    let (overlap, catch_up) = policies(b)?;
    // A new pattern keeps the task's zone, and a new zone keeps its pattern.
    let mut wanted = b.clone();
    if let Automation::Schedule { pattern, tz } = &current.automation {
        if wanted.cron.is_some() && wanted.tz.is_none() {
            wanted.tz = Some(tz.clone());
        }
        if wanted.tz.is_some() && wanted.cron.is_none() && wanted.every.is_none() {
            wanted.cron = Some(pattern.clone());
        }
    }
    let new_automation = automation(&wanted)?;
    let review = b
        .review
        .as_deref()
        .map(|r| {
            enum_of::<ReviewState>("review", r, "none, pending, approved or changes_requested")
        })
        .transpose()?;
    let status = match b.status.as_deref() {
        None => None,
        Some("completed") => Some(TaskStatus::Completed),
        Some("archived") => Some(TaskStatus::Archived),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "status `{other}`: use completed or archived (pause and resume have their own calls)"
            )));
        }
    };
    let id = current.id.clone();
    let mut t = tasks
        .edit(&id, |t| {
            if let Some(v) = &b.title {
                t.title = v.clone();
            }
            if let Some(v) = &b.instruction {
                t.instruction = v.clone();
            }
            if b.agent.is_some() {
                t.agent = b.agent.clone();
            }
            if let Some(v) = overlap {
                t.overlap = v;
            }
            if let Some(v) = catch_up {
                t.catch_up = v;
            }
            if let Some(v) = b.failure_threshold {
                t.failure_threshold = v;
            }
            if let Some(v) = review {
                t.review = v;
            }
            if let Some(v) = status {
                t.status = v;
                t.status_reason = None;
            }
        })
        .await?;
    if new_automation.is_some() || b.max_executions.is_some() {
        let automation = new_automation.unwrap_or(current.automation);
        let cap = b.max_executions.or(current.max_executions);
        t = tasks.set_automation(&id, automation, cap).await?;
    }
    Ok(t)
}

/// `POST /v1/tasks`: 201.
pub async fn create(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(b): Body<TaskIn>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let new = new_task(&b)?;
    let t = app.tasks.create(&user.id, new).await?;
    Ok((StatusCode::CREATED, Json(view(&t))))
}

/// `GET /v1/tasks/{id}`: the task, its next due times, its last runs and fires.
pub async fn show(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
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
    Path(id): Path<String>,
    Body(b): Body<TaskIn>,
) -> Result<Json<Value>, ApiError> {
    let current = owned(&app, &user.id, &id).await?;
    let t = apply_edit(&app.tasks, current, &b).await?;
    Ok(Json(view(&t)))
}

/// `POST /v1/tasks/{id}/pause`.
pub async fn pause(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app.tasks.pause(&id).await?)))
}

/// `POST /v1/tasks/{id}/resume`: missed fires are not run.
pub async fn resume(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    owned(&app, &user.id, &id).await?;
    Ok(Json(view(&app.tasks.resume(&id).await?)))
}

/// `POST /v1/tasks/{id}/run`: 202 with the operation (a manual run; not counted in the cap).
pub async fn run(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    owned(&app, &user.id, &id).await?;
    app.runner.check_capacity(&user.id)?;
    let op = app.tasks.run_now(&id, app.launcher.as_ref()).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"operation_id": op}))))
}

/// `DELETE /v1/tasks/{id}`: 204.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    Path(id): Path<String>,
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
    Path(id): Path<String>,
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
    Path(id): Path<String>,
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
