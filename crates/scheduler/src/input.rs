//! What people send to create or change a task (the API's body and the CLI's flags alike),
//! its validation, and how it becomes a new task or an edit. Bad input is a
//! [`TaskError::Invalid`] or [`TaskError::Schedule`] naming the field; an agent that does not
//! exist is [`TaskError::AgentMissing`].

use crate::schedule::{Schedule, parse_interval};
use crate::service::{NewTask, TaskService};
use crate::task::{
    Automation, CatchUp, Overlap, Questions, ReviewState, Task, TaskError, TaskStatus,
};
use rein_store::Accounts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// `POST /v1/tasks` and `PATCH /v1/tasks/{id}` body (on a patch every field is optional).
#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskInput {
    /// Title (not blank).
    #[schemars(pattern(r"\S"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The whole prompt of every run (no earlier chat is assumed; not blank).
    #[schemars(pattern(r"\S"))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    /// The agent that runs it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Cron pattern (5 fields, or 6 with seconds first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// IANA time zone of the cron pattern (default UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tz: Option<String>,
    /// Heartbeat interval (`30m`, `2h`, ...), instead of a cron pattern.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// A heartbeat run still going after this long is cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Manual runs only (drops the schedule or heartbeat).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manual_only: Option<bool>,
    /// Scheduled or heartbeat runs allowed (counted from when the automation was set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_executions: Option<u64>,
    /// `skip` (default), `queue_one` or `allow`.
    #[serde(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overlap: Option<Overlap>,
    /// `skip_missed` (default) or `run_once`.
    #[serde(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<CatchUp>,
    /// Consecutive failures that pause the task (default 3).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<u32>,
    /// Review state: `none`, `pending`, `approved` or `changes_requested`.
    #[serde(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewState>,
    /// `completed` or `archived` (pause and resume have their own calls).
    #[serde(default)]
    #[schemars(schema_with = "status_schema")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskStatus>,
    /// Tasks of yours that must complete before this one runs (replaces the list on a patch;
    /// `[]` clears it). A cycle is refused.
    #[serde(default)]
    #[schemars(length(max = 50))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
    /// What its runs do with a question their agent asks: `decline` (default: the agent is
    /// told nobody is available) or `brief` (also an urgent decision brief for you; it holds
    /// the next runs until answered, and your answer reaches the next run).
    #[serde(default)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub questions: Option<Questions>,
}

fn status_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "null"], "enum": ["completed", "archived", null]})
}

/// `POST /v1/tasks` body: a [`TaskInput`] whose `title` and `instruction` are required, without
/// `review` and `status` (a new task starts unreviewed and active; [`new_task`] refuses them).
/// Its schema is `TaskInput`'s, narrowed accordingly.
#[derive(Clone, Debug, Deserialize)]
#[serde(transparent)]
pub struct NewTaskInput(pub TaskInput);

impl JsonSchema for NewTaskInput {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "NewTaskInput".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut schema = TaskInput::json_schema(g);
        if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            props.remove("review");
            props.remove("status");
            for field in ["title", "instruction"] {
                if let Some(p) = props.get_mut(field) {
                    p["type"] = json!("string");
                }
            }
        }
        schema.insert("required".into(), json!(["title", "instruction"]));
        schema
    }
}

/// The automation a body asks for; `None` when it does not touch it.
pub fn automation(b: &TaskInput) -> Result<Option<Automation>, TaskError> {
    if b.manual_only == Some(true) {
        if b.cron.is_some() || b.every.is_some() {
            return Err(TaskError::invalid("manual_only excludes cron and every"));
        }
        return Ok(Some(Automation::None));
    }
    match (&b.cron, &b.every) {
        (Some(_), Some(_)) => Err(TaskError::invalid("cron and every are mutually exclusive")),
        (Some(pattern), None) => {
            let tz = b.tz.clone().unwrap_or_else(|| "UTC".into());
            Schedule::cron(pattern, &tz).map_err(|e| TaskError::invalid(e.to_string()))?;
            Ok(Some(Automation::Schedule {
                pattern: pattern.clone(),
                tz,
            }))
        }
        (None, Some(every)) => Ok(Some(Automation::Heartbeat {
            every_secs: parse_interval(every).map_err(|e| TaskError::invalid(e.to_string()))?,
            timeout_secs: b
                .timeout
                .as_deref()
                .map(parse_interval)
                .transpose()
                .map_err(|e| TaskError::invalid(e.to_string()))?,
        })),
        (None, None) => {
            if b.tz.is_some() || b.timeout.is_some() {
                return Err(TaskError::invalid(
                    "tz goes with cron and timeout with every",
                ));
            }
            Ok(None)
        }
    }
}

/// A task as the API shows it: its settings and state with its id and times (which the stored
/// settings keep in columns of their own).
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskView {
    /// Its id.
    pub id: String,
    /// When it was created.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// When it last changed.
    pub updated_at: chrono::DateTime<chrono::Utc>,
    /// Everything else.
    #[serde(flatten)]
    pub task: Task,
}

impl TaskView {
    /// How `t` is shown.
    pub fn of(t: &Task) -> Self {
        Self {
            id: t.id.clone(),
            created_at: t.created_at,
            updated_at: t.updated_at,
            task: t.clone(),
        }
    }

    /// The task shown (its owner is not shown: empty).
    pub fn into_task(self) -> Task {
        Task {
            id: self.id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            ..self.task
        }
    }
}

/// A required text field: present and not blank.
fn required(field: &str, v: &Option<String>) -> Result<String, TaskError> {
    match v {
        Some(v) if !v.trim().is_empty() => Ok(v.clone()),
        Some(_) => Err(TaskError::invalid(format!("{field} is empty"))),
        None => Err(TaskError::invalid(format!("{field} is required"))),
    }
}

/// The new task a body describes (title and instruction required). A new task starts
/// unreviewed and active, so a body that sets `review` or `status` is refused rather than
/// half-applied: those are edits of an existing task.
pub fn new_task(b: &TaskInput) -> Result<NewTask, TaskError> {
    for (field, set) in [
        ("review", b.review.is_some()),
        ("status", b.status.is_some()),
    ] {
        if set {
            return Err(TaskError::invalid(format!(
                "{field} cannot be set when creating a task: PATCH the task once it exists"
            )));
        }
    }
    Ok(NewTask {
        title: required("title", &b.title)?,
        instruction: required("instruction", &b.instruction)?,
        agent: b.agent.clone(),
        automation: automation(b)?.unwrap_or_default(),
        max_executions: b.max_executions,
        overlap: b.overlap.unwrap_or_default(),
        catch_up: b.catch_up.unwrap_or_default(),
        failure_threshold: b.failure_threshold,
        depends_on: b.depends_on.clone().unwrap_or_default(),
        questions: b.questions.unwrap_or_default(),
    })
}

/// Apply an edit body to task `id` (owned by the caller).
pub async fn apply_edit(
    tasks: &TaskService,
    current: Task,
    b: &TaskInput,
) -> Result<Task, TaskError> {
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
    let (overlap, catch_up, review, asked) = (b.overlap, b.catch_up, b.review, b.questions);
    let status = match b.status {
        None => None,
        Some(s @ (TaskStatus::Completed | TaskStatus::Archived)) => Some(s),
        Some(other @ (TaskStatus::Active | TaskStatus::Paused | TaskStatus::Failed)) => {
            return Err(TaskError::invalid(format!(
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
            if let Some(v) = &b.depends_on {
                t.depends_on = v.clone();
            }
            if let Some(v) = asked {
                t.questions = v;
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

/// Refuse a task for an agent the owner does not have (tasks run stored agents).
pub async fn check_agent(
    accounts: &dyn Accounts,
    owner: &str,
    agent: Option<&str>,
) -> Result<(), TaskError> {
    if let Some(name) = agent
        && accounts.get_agent(owner, name).await?.is_none()
    {
        return Err(TaskError::AgentMissing(name.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body() -> TaskInput {
        TaskInput {
            title: Some("Morning".into()),
            instruction: Some("Check the ledger.".into()),
            ..Default::default()
        }
    }

    #[test]
    fn create_refuses_review_and_status_instead_of_ignoring_them() {
        for b in [
            TaskInput {
                review: Some(ReviewState::Approved),
                ..body()
            },
            TaskInput {
                status: Some(TaskStatus::Archived),
                ..body()
            },
        ] {
            let err = new_task(&b)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains("cannot be set when creating"), "{err}");
        }
        assert!(new_task(&body()).is_ok());
    }

    #[test]
    fn create_names_a_missing_or_blank_field() {
        let missing = new_task(&TaskInput {
            title: None,
            ..body()
        });
        assert!(matches!(missing, Err(TaskError::Invalid(m)) if m == "title is required"));
        let blank = new_task(&TaskInput {
            instruction: Some("  ".into()),
            ..body()
        });
        assert!(matches!(blank, Err(TaskError::Invalid(m)) if m == "instruction is empty"));
    }
}
