//! What a front-end protocol's request does to one of the caller's conversations (its topic,
//! named by the protocol's thread or chat id): start an operation with a new user message,
//! decide what the conversation's parked operation waits on, or only look at it again. Shared
//! by AG-UI (`agui.rs`) and the AI SDK's UI message stream (`ui_stream.rs`), which differ only
//! in how they spell requests and events.

use crate::AppState;
use crate::error::ApiError;
use crate::routes::operations::DecisionIn;
use crate::runner::Job;
use rein_core::message::ContentPart;
use rein_core::state::{Status, TodoItem};
use rein_core::{Message, OperationId};
use rein_operation::StartOptions;
use rein_store::{Store, Topics as _};

/// What the request asks of the conversation.
pub enum Asked {
    /// A new user message: start an operation.
    Say(Said),
    /// Decisions on the calls its parked operation waits on.
    Decide(Vec<DecisionIn>),
    /// Nothing new: show the conversation as it stands (and follow a run under way).
    Look,
}

/// A new user message and how to answer it.
pub struct Said {
    /// Its text.
    pub prompt: String,
    /// Its images and files.
    pub attachments: Vec<ContentPart>,
    /// The conversation before it, as the client holds it (used only for a new conversation:
    /// an existing one is rein's own record).
    pub history: Vec<Message>,
    /// Added to the system role.
    pub instructions: Vec<String>,
    /// `agent/NAME`, `provider/model`, or the caller's default agent.
    pub model: Option<String>,
}

/// Who answers a new message and what it attaches, as both protocols name them (AG-UI's
/// `forwardedProps`, beside the AI SDK transport's messages).
#[derive(Clone, Debug, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct Answering {
    /// One of your agents (default: your default agent).
    #[serde(default)]
    pub agent: Option<String>,
    /// `provider/model` on the default agent.
    #[serde(default)]
    #[schemars(length(max = 200), pattern(r"^[^/]+/.+$"))]
    pub model: Option<String>,
    /// Your uploads (`POST /v1/files`) attached to the new message.
    #[serde(default)]
    #[schemars(length(max = 16), inner(regex(pattern = rein_store::FILE_ID_PATTERN)))]
    pub attachments: Vec<String>,
}

impl Answering {
    /// Refuse (400) what the schema refuses, whether or not the request reads it: a model is
    /// `provider/model` of at most 200 characters, an upload a file id, at most 16 of them.
    pub fn check(&self) -> Result<(), ApiError> {
        if let Some(m) = &self.model
            && (m.chars().count() > 200
                || !m
                    .split_once('/')
                    .is_some_and(|(p, rest)| !p.is_empty() && !rest.is_empty()))
        {
            let shown: String = m.chars().take(60).collect();
            return Err(ApiError::bad_request(format!(
                "model {shown:?} is not provider/model (at most 200 characters)"
            )));
        }
        if self.attachments.len() > 16 {
            return Err(ApiError::bad_request("at most 16 attachments"));
        }
        if let Some(bad) = self
            .attachments
            .iter()
            .find(|a| !rein_store::valid_file_id(a))
        {
            let shown: String = bad.chars().take(60).collect();
            return Err(ApiError::bad_request(format!(
                "{shown:?} is not a file id (file- and 32 hex digits)"
            )));
        }
        Ok(())
    }

    /// Who answers: `agent/NAME`, a `provider/model` on the default agent, or (neither) the
    /// caller's default agent; naming both is a 422.
    pub fn answerer(&self) -> Result<Option<String>, ApiError> {
        match (&self.agent, &self.model) {
            (Some(_), Some(_)) => Err(ApiError::unprocessable(
                "name an agent or a model, not both",
            )),
            (Some(agent), None) => Ok(Some(format!("agent/{agent}"))),
            (None, model) => Ok(model.clone()),
        }
    }
}

/// A message's own images and files, then the caller's `uploads` (file ids) it names.
pub async fn with_uploads(
    app: &AppState,
    owner: &str,
    mut parts: Vec<ContentPart>,
    uploads: &[String],
) -> Result<Vec<ContentPart>, ApiError> {
    parts.extend(rein_operation::attachment::from_uploads(&*app.store, owner, uploads).await?);
    Ok(parts)
}

/// The operation a request follows, and from where.
pub struct Turn {
    /// The operation.
    pub id: OperationId,
    /// Follow its events after this one (`None`: from its start).
    pub cursor: Option<u64>,
    /// Its plan where the following starts.
    pub plan: Vec<TodoItem>,
    /// Its status when the request was answered.
    pub status: Status,
    /// Tool calls the client was shown before the cursor (the calls a decision answers).
    pub shown: Vec<String>,
}

/// Check `topic` is a valid conversation id that is the caller's or nobody's; answers whether
/// it exists.
pub async fn own_topic(app: &AppState, user: &str, topic: &str) -> Result<bool, ApiError> {
    rein_operation::check_topic_id(topic)?;
    match app.store.topic_owner(topic).await? {
        None => Ok(false),
        Some(Some(owner)) if owner == user => Ok(true),
        Some(_) => Err(ApiError::not_found(format!("no conversation {topic}"))),
    }
}

/// The operation holding conversation `topic` (running, parked, or its last one).
pub async fn holder(
    app: &AppState,
    topic: &str,
) -> Result<Option<(OperationId, Status)>, ApiError> {
    // `except` names no operation: a fresh id.
    Ok(app.store.topic_holder(topic, OperationId::new()).await?)
}

/// Do what `asked` asks of `user`'s conversation `topic`; `None` when there is nothing to
/// follow (a look at a conversation with no operation).
pub async fn take(
    app: &AppState,
    user: &rein_store::User,
    topic: &str,
    asked: Asked,
) -> Result<Option<Turn>, ApiError> {
    let exists = own_topic(app, &user.id, topic).await?;
    let holding = if exists {
        holder(app, topic).await?
    } else {
        None
    };
    match asked {
        Asked::Say(said) => {
            if let Some((id, status)) = holding
                && matches!(
                    status,
                    Status::WaitingForHuman | Status::WaitingForSubAgents
                )
            {
                return Err(ApiError::conflict(format!(
                    "conversation {topic} waits for a decision (operation {id}): answer what it asks before saying more"
                )));
            }
            let model = said.model.as_deref();
            let spec =
                crate::routes::openai::spec_for(app, user, model, None, said.instructions).await?;
            let driver = app.runner.driver();
            let opts = StartOptions {
                spec,
                history: if exists { Vec::new() } else { said.history },
                topic_id: Some(topic.to_owned()),
                trigger: Some(rein_store::Trigger::Api),
                admission: Some(app.runner.admission()),
                attachments: said.attachments,
                ..Default::default()
            };
            let begun = driver.begin(&said.prompt, &opts).await?;
            if begun.queued_behind.is_none() {
                app.runner
                    .spawn(begun.id, user.id.clone(), driver, Job::Run)
                    .await?;
            }
            Ok(Some(Turn {
                id: begun.id,
                cursor: None,
                plan: Vec::new(),
                status: Status::Queued,
                shown: Vec::new(),
            }))
        }
        Asked::Decide(decisions) => {
            let Some((id, _)) = holding else {
                return Err(ApiError::conflict(format!(
                    "conversation {topic} has no operation waiting for a decision"
                )));
            };
            let op = crate::routes::owned_record(app, user, &id.to_string()).await?;
            let cursor = crate::routes::follow::last_seq(app, id).await?;
            let plan = plan_of(app, id).await?;
            let shown = waiting(app, id)
                .await?
                .iter()
                .map(|w| w.call.id.to_string())
                .collect();
            crate::routes::operations::apply_decisions(app, user, &op, decisions).await?;
            Ok(Some(Turn {
                id,
                cursor,
                plan,
                status: Status::Running,
                shown,
            }))
        }
        Asked::Look => match holding {
            None => Ok(None),
            Some((id, status)) => Ok(Some(Turn {
                id,
                cursor: crate::routes::follow::last_seq(app, id).await?,
                plan: plan_of(app, id).await?,
                status,
                shown: Vec::new(),
            })),
        },
    }
}

/// Operation `id`'s plan as it stands.
pub async fn plan_of(app: &AppState, id: OperationId) -> Result<Vec<TodoItem>, ApiError> {
    Ok(app
        .store
        .load_operation(id)
        .await?
        .map(|op| op.state.todos.clone())
        .unwrap_or_default())
}

/// The interrupts of a parked operation `id`: each call its tree waits on, with why it asks.
pub async fn waiting(
    app: &AppState,
    id: OperationId,
) -> Result<Vec<rein_store::Intervention>, ApiError> {
    Ok(rein_operation::tree::pending_approvals(&*app.store, id).await?)
}

/// Whether an event of this kind parks its operation on a person: worth a look at what it
/// waits on.
pub fn asks_a_person(kind: &rein_core::event::EventKind) -> bool {
    use rein_core::event::EventKind;
    matches!(
        kind,
        EventKind::HumanApproveRequired { .. }
            | EventKind::HumanPromptRequired { .. }
            | EventKind::HumanSelectRequired { .. }
    )
}

/// Where a run a door follows stands, for a door that asks its client as calls come (MCP,
/// ACP).
pub enum Standing {
    /// It runs, or waits on nothing new.
    Going,
    /// Its tree waits on these calls, not yet put to the person.
    Asks(Vec<rein_store::Intervention>),
    /// It ended, or was interrupted (cancelled, a budget): this run is over.
    Stopped,
}

/// Where operation `id` stands, the calls in `asked` already put to the person.
pub async fn standing(
    app: &AppState,
    id: OperationId,
    asked: &std::collections::HashSet<String>,
) -> Result<Standing, ApiError> {
    match app.store.operation_status(id).await? {
        None => Ok(Standing::Stopped),
        Some(s) if s.is_terminal() || s == Status::Interrupted => Ok(Standing::Stopped),
        Some(Status::WaitingForHuman | Status::WaitingForSubAgents) => {
            let fresh: Vec<_> = waiting(app, id)
                .await?
                .into_iter()
                .filter(|w| !asked.contains(&w.call.id.to_string()))
                .collect();
            Ok(if fresh.is_empty() {
                Standing::Going
            } else {
                Standing::Asks(fresh)
            })
        }
        Some(_) => Ok(Standing::Going),
    }
}

/// `beats` of operation `id` with each [`Beat::Decided`](crate::routes::beats::Beat) replaced
/// by the results it names.
pub async fn resolved(
    app: &AppState,
    id: OperationId,
    beats: Vec<crate::routes::beats::Beat>,
) -> Vec<crate::routes::beats::Beat> {
    let mut out = Vec::with_capacity(beats.len());
    for b in beats {
        match b {
            crate::routes::beats::Beat::Decided(ids) => {
                out.extend(decided(app, id, &ids).await.unwrap_or_default());
            }
            other => out.push(other),
        }
    }
    out
}

/// The results of calls `ids` of operation `id` decided without a result event, from its
/// messages (a call with no result yet says nothing).
async fn decided(
    app: &AppState,
    id: OperationId,
    ids: &[String],
) -> Result<Vec<crate::routes::beats::Beat>, ApiError> {
    let Some(op) = app.store.load_operation(id).await? else {
        return Ok(Vec::new());
    };
    Ok(ids
        .iter()
        .filter_map(|call| {
            let m = op.state.messages.iter().find(|m| {
                m.role == rein_core::message::Role::Tool && m.tool_call_id.as_deref() == Some(call)
            })?;
            Some(crate::routes::beats::Beat::ToolResult {
                id: call.clone(),
                message: m.id.to_string(),
                status: m
                    .tool_status
                    .unwrap_or(rein_core::message::ToolStatus::Succeeded),
                content: m.text_content(),
            })
        })
        .collect())
}
