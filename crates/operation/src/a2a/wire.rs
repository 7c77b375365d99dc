//! A2A 1.0's JSON (the protocol's protobuf messages in their JSON form: camelCase fields,
//! enums by name, empty fields left out), only what rein reads and writes: one set of types
//! for rein's server (`rein-server`'s `a2a` door) and its client (remote agents). A closed set
//! of values (a task's state, a message's role) is an enum from the moment it is read.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol version rein speaks (the `A2A-Version` header and the card's interfaces).
pub const VERSION: &str = "1.0";
/// The domain of A2A's `google.rpc.ErrorInfo` error details.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";
/// The header a push notification carries its configuration's token in.
pub const NOTIFICATION_TOKEN: &str = "X-A2A-Notification-Token";

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskState {
    /// Accepted, not started (queued behind its conversation's running operation).
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Running.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Parked on an approval or a question: the client answers with a message.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Answered: the answer is the task's artifact.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended without the work done (an error, a limit, a stop short of an answer).
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Cancelled by its owner.
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Refused before anything ran (a spending cap, a busy slot, a setting not allowed).
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waiting for the client to authenticate (another agent's state; rein's tasks never
    /// wait on it, and its client ends a remote task that does as failed).
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Whether nothing more happens to the task.
    pub fn is_terminal(self) -> bool {
        match self {
            TaskState::Completed
            | TaskState::Failed
            | TaskState::Canceled
            | TaskState::Rejected => true,
            TaskState::Submitted
            | TaskState::Working
            | TaskState::InputRequired
            | TaskState::AuthRequired => false,
        }
    }

    /// Whether a stream of the task ends here (terminal, or waiting on the client).
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }
}

/// Who says a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// rein.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// One part of a message or an artifact, as it goes out.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Structured data (a JSON value).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// A file's bytes, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A file's address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The file's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// The part's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// A data part.
    pub fn data(data: Value) -> Self {
        Self {
            data: Some(data),
            ..Self::default()
        }
    }
}

/// A message.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Its id (the sender's).
    pub message_id: String,
    /// The conversation (a rein topic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// The task it belongs to (an operation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who says it.
    pub role: Role,
    /// What it says.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// The sender's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A task's state, with what rein says about it.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// What it waits for or why it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When it got here (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// What a task produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id within the task.
    pub artifact_id: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its content.
    pub parts: Vec<Part>,
}

/// A task: one rein operation.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// The operation's id.
    pub id: String,
    /// Its conversation (topic).
    pub context_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// Its answer, once completed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages of the task.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// rein's figures: status, steps, tokens, cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

/// A change of a task's state, streamed or pushed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// Its new status.
    pub status: TaskStatus,
}

/// An artifact of a task, streamed or pushed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// Its conversation.
    pub context_id: String,
    /// The artifact.
    pub artifact: Artifact,
    /// Whether this chunk adds to the artifact's earlier ones (rather than replacing them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub append: bool,
    /// Whether this is the artifact's last chunk (proto JSON leaves a false one out).
    #[serde(default)]
    pub last_chunk: bool,
}

/// One item of a stream (and a push notification's body): exactly one of its fields.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as it stands (a stream's first item).
    Task(Task),
    /// Its state changed.
    StatusUpdate(TaskStatusUpdateEvent),
    /// It produced an artifact.
    ArtifactUpdate(TaskArtifactUpdateEvent),
    /// A message instead of a task (another agent's direct answer; rein always answers with
    /// a task).
    Message(Message),
}

/// `SendMessage` / `SendStreamingMessage` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The message.
    pub message: Message,
    /// How to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendConfiguration>,
}

/// How to answer a message.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendConfiguration {
    /// Answer at once with the task submitted, not when it ends or waits.
    #[serde(default)]
    pub return_immediately: bool,
    /// At most this many messages of the task's history in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
    /// Where to push the task's updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<PushConfigWire>,
}

/// `GetTask` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The task.
    pub id: String,
    /// At most this many messages of its history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
}

/// `CancelTask` and `SubscribeToTask` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    /// The task.
    pub id: String,
}

/// `ListTasks` params.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// Only this conversation's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Only tasks in this state (`TASK_STATE_UNSPECIFIED`: any).
    #[serde(
        default,
        deserialize_with = "state_filter",
        skip_serializing_if = "Option::is_none"
    )]
    pub status: Option<TaskState>,
    /// At most this many (1–100, 50 by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<u32>,
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// At most this many messages of each task's history (none by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<u32>,
    /// With each task's artifacts.
    #[serde(default)]
    pub include_artifacts: bool,
}

/// `ListTasks` answer (proto JSON leaves empty fields out: each has a default).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListTasksResponse {
    /// The page.
    pub tasks: Vec<Task>,
    /// The next page's token (empty on the last).
    pub next_page_token: String,
    /// The page's size as asked.
    pub page_size: u32,
    /// How many tasks match.
    pub total_size: u32,
}

/// A push-notification configuration as the protocol spells it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigWire {
    /// Its id (rein chooses one when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task (absent inside a message's configuration: that message's task).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Where to post updates.
    pub url: String,
    /// Echoed in `X-A2A-Notification-Token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// The `Authorization` to send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
}

/// `Authorization: SCHEME CREDENTIALS` on each push.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authentication {
    /// `Bearer`, `Basic`, …
    pub scheme: String,
    /// What follows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigRef {
    /// The task.
    pub task_id: String,
    /// The configuration.
    pub id: String,
}

/// `ListTaskPushNotificationConfigs` params.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushConfigsOf {
    /// The task.
    pub task_id: String,
}

/// A state to filter on: a state's name, or the protocol's "unspecified" (none).
fn state_filter<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<TaskState>, D::Error> {
    match Option::<String>::deserialize(d)?.as_deref() {
        None | Some("" | "TASK_STATE_UNSPECIFIED") => Ok(None),
        Some(name) => {
            TaskState::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(name))
                .map(Some)
        }
    }
}
