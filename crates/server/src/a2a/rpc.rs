//! A2A's JSON-RPC 2.0 envelope: the request as read, the answer and the error as written (each
//! error with A2A's code and a `google.rpc.ErrorInfo` detail naming its reason).

use super::wire::ERROR_DOMAIN;
use crate::error::ApiError;
use serde_json::{Value, json};

/// A JSON-RPC request.
#[derive(Debug)]
pub struct Request {
    /// Its id (echoed; `null` when absent).
    pub id: Value,
    /// The method.
    pub method: Method,
    /// Its params (an object; `{}` when absent).
    pub params: Value,
}

/// The methods of A2A 1.0's JSON-RPC binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Start a task, or answer one that waits; the task once it ends or waits.
    SendMessage,
    /// The same, its updates streamed.
    SendStreamingMessage,
    /// A task as it stands.
    GetTask,
    /// The caller's tasks on the endpoint's agent.
    ListTasks,
    /// Stop a task.
    CancelTask,
    /// Stream a task under way again.
    SubscribeToTask,
    /// Post a task's updates to a URL.
    CreateTaskPushNotificationConfig,
    /// One such configuration.
    GetTaskPushNotificationConfig,
    /// A task's configurations.
    ListTaskPushNotificationConfigs,
    /// Forget one.
    DeleteTaskPushNotificationConfig,
    /// The card as the caller sees it.
    GetExtendedAgentCard,
}

impl Method {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "SendMessage" => Self::SendMessage,
            "SendStreamingMessage" => Self::SendStreamingMessage,
            "GetTask" => Self::GetTask,
            "ListTasks" => Self::ListTasks,
            "CancelTask" => Self::CancelTask,
            "SubscribeToTask" => Self::SubscribeToTask,
            "CreateTaskPushNotificationConfig" => Self::CreateTaskPushNotificationConfig,
            "GetTaskPushNotificationConfig" => Self::GetTaskPushNotificationConfig,
            "ListTaskPushNotificationConfigs" => Self::ListTaskPushNotificationConfigs,
            "DeleteTaskPushNotificationConfig" => Self::DeleteTaskPushNotificationConfig,
            "GetExtendedAgentCard" => Self::GetExtendedAgentCard,
            _ => return None,
        })
    }

    /// Whether it changes something (a read-only token may not call it).
    pub fn changes(self) -> bool {
        match self {
            Self::SendMessage
            | Self::SendStreamingMessage
            | Self::CancelTask
            | Self::CreateTaskPushNotificationConfig
            | Self::DeleteTaskPushNotificationConfig => true,
            Self::GetTask
            | Self::ListTasks
            | Self::SubscribeToTask
            | Self::GetTaskPushNotificationConfig
            | Self::ListTaskPushNotificationConfigs
            | Self::GetExtendedAgentCard => false,
        }
    }

    /// Whether its answer is a stream of events.
    pub fn streams(self) -> bool {
        matches!(self, Self::SendStreamingMessage | Self::SubscribeToTask)
    }
}

/// Why an A2A request failed, with the protocol's code for each.
#[derive(Debug, thiserror::Error)]
pub enum A2aError {
    /// The body is not JSON.
    #[error("the body is not JSON: {0}")]
    Parse(String),
    /// Not a JSON-RPC 2.0 request.
    #[error("{0}")]
    InvalidRequest(String),
    /// No such method.
    #[error(
        "no method `{0}`: A2A 1.0's JSON-RPC methods are SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, the *TaskPushNotificationConfig* methods and GetExtendedAgentCard"
    )]
    MethodNotFound(String),
    /// The params do not fit the method.
    #[error("{0}")]
    InvalidParams(String),
    /// rein failed.
    #[error("{0}")]
    Internal(String),
    /// No such task of the caller's.
    #[error("no task {0}")]
    TaskNotFound(String),
    /// The task has ended.
    #[error("{0}")]
    TaskNotCancelable(String),
    /// What the task's state does not allow.
    #[error("{0}")]
    Unsupported(String),
    /// A part rein does not take.
    #[error("{0}")]
    ContentType(String),
    /// Another protocol version.
    #[error("{0}")]
    Version(String),
}

impl A2aError {
    /// Its JSON-RPC code.
    pub fn code(&self) -> i64 {
        match self {
            Self::Parse(_) => -32700,
            Self::InvalidRequest(_) => -32600,
            Self::MethodNotFound(_) => -32601,
            Self::InvalidParams(_) => -32602,
            Self::Internal(_) => -32603,
            Self::TaskNotFound(_) => -32001,
            Self::TaskNotCancelable(_) => -32002,
            Self::Unsupported(_) => -32004,
            Self::ContentType(_) => -32005,
            Self::Version(_) => -32009,
        }
    }

    /// Its `ErrorInfo` reason.
    fn reason(&self) -> &'static str {
        match self {
            Self::Parse(_) | Self::InvalidRequest(_) => "INVALID_REQUEST",
            Self::MethodNotFound(_) => "METHOD_NOT_FOUND",
            Self::InvalidParams(_) => "INVALID_PARAMS",
            Self::Internal(_) => "INTERNAL_ERROR",
            Self::TaskNotFound(_) => "TASK_NOT_FOUND",
            Self::TaskNotCancelable(_) => "TASK_NOT_CANCELABLE",
            Self::Unsupported(_) => "UNSUPPORTED_OPERATION",
            Self::ContentType(_) => "CONTENT_TYPE_NOT_SUPPORTED",
            Self::Version(_) => "VERSION_NOT_SUPPORTED",
        }
    }

    /// The JSON-RPC error answer to request `id`.
    pub fn answer(&self, id: &Value) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": self.code(),
                "message": self.to_string(),
                "data": [{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": self.reason(),
                    "domain": ERROR_DOMAIN,
                }],
            },
        })
    }
}

impl From<ApiError> for A2aError {
    /// A refusal of rein's API: the caller's to fix (with the API's words), or the server's.
    fn from(e: ApiError) -> Self {
        if e.status.is_client_error() {
            Self::InvalidParams(e.message)
        } else {
            Self::Internal(e.message)
        }
    }
}

impl From<rein_store::StoreError> for A2aError {
    fn from(e: rein_store::StoreError) -> Self {
        tracing::warn!(error = %e, "an A2A request failed in the store");
        Self::Internal("the store failed; try again".into())
    }
}

/// The success answer to request `id`.
pub fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Read a JSON-RPC request from `body`; the error keeps the id when there was one.
pub fn parse(body: &[u8]) -> Result<Request, (Value, A2aError)> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| (Value::Null, A2aError::Parse(e.to_string())))?;
    let Value::Object(mut fields) = value else {
        return Err((
            Value::Null,
            A2aError::InvalidRequest(
                "a JSON-RPC request is an object (batches are not taken)".into(),
            ),
        ));
    };
    let id = fields.remove("id").unwrap_or(Value::Null);
    if !matches!(id, Value::Null | Value::String(_) | Value::Number(_)) {
        return Err((
            Value::Null,
            A2aError::InvalidRequest("id must be a string, a number or null".into()),
        ));
    }
    if fields.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((
            id,
            A2aError::InvalidRequest("jsonrpc must be \"2.0\"".into()),
        ));
    }
    let Some(name) = fields.get("method").and_then(Value::as_str) else {
        return Err((
            id,
            A2aError::InvalidRequest("method must be a string".into()),
        ));
    };
    let Some(method) = Method::parse(name) else {
        return Err((id, A2aError::MethodNotFound(name.to_owned())));
    };
    let params = match fields.remove("params") {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err((
                id,
                A2aError::InvalidParams("params must be an object".into()),
            ));
        }
    };
    Ok(Request { id, method, params })
}

/// `params` as `T`, or an error naming what does not fit.
pub fn params<T: serde::de::DeserializeOwned>(params: Value) -> Result<T, A2aError> {
    serde_json::from_value(params).map_err(|e| A2aError::InvalidParams(format!("params: {e}")))
}

/// Check the `A2A-Version` a client sent: rein speaks 1.0 (a missing header means 0.3).
pub fn check_version(headers: &axum::http::HeaderMap) -> Result<(), A2aError> {
    let given = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty());
    let Some(given) = given else {
        return Err(A2aError::Version(
            "no A2A-Version header, which means 0.3: rein speaks A2A 1.0 (send `A2A-Version: 1.0`)"
                .into(),
        ));
    };
    let mut parts = given.split('.');
    let (major, minor) = (parts.next(), parts.next().unwrap_or("0"));
    if major == Some("1") && minor == "0" {
        Ok(())
    } else {
        Err(A2aError::Version(format!(
            "A2A-Version {given} is not spoken here: rein speaks A2A 1.0"
        )))
    }
}
