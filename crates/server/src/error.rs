//! One error shape for every response: `{"error": {"code", "message", "details"?}}`. Bad input
//! is a 4xx naming what was wrong, never a 500.

pub use crate::error_code::ApiErrorCode;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// An API error: status, machine code, human message.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable code (`not_found`, `invalid_request`, ...).
    pub code: ApiErrorCode,
    /// What went wrong, for a person.
    pub message: String,
    /// Structured details.
    pub details: Option<serde_json::Value>,
    /// Seconds after which the request may succeed (sent as `Retry-After`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with a status and code.
    pub fn new(status: StatusCode, code: ApiErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    /// 400: the request is malformed; the message names the field.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            ApiErrorCode::InvalidRequest,
            message,
        )
    }

    /// 404: nothing there, or nothing this user may see (the two are not told apart).
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ApiErrorCode::NotFound, what)
    }

    /// 409: the request conflicts with the current state.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, ApiErrorCode::Conflict, message)
    }

    /// 409 `operation_busy`: the operation is running (here, or in another process whose
    /// lease may take up to `retry_after` seconds to run out); the request may be sent again.
    pub fn operation_busy(message: impl Into<String>, retry_after: u64) -> Self {
        let mut e = Self::new(StatusCode::CONFLICT, ApiErrorCode::OperationBusy, message);
        e.retry_after = Some(retry_after.max(1));
        e
    }

    /// 422: well-formed but not acceptable (unknown model, missing provider key).
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ApiErrorCode::Unprocessable,
            message,
        )
    }

    /// 422 `invalid_conversation`: each message is well-formed, but what the conversation
    /// holds cannot be answered (it ends with no user message, a part cannot be read).
    pub fn invalid_conversation(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ApiErrorCode::InvalidConversation,
            message,
        )
    }

    /// 401.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ApiErrorCode::Unauthorized,
            message,
        )
    }

    /// 500: a failure on the server's side (logged).
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ApiErrorCode::Internal,
            message,
        )
    }

    /// With structured details.
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }
}

/// The body of every error response, as sent and as a client reads it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// `error` in [`ErrorBody`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ErrorDetail {
    /// Stable code.
    pub code: ApiErrorCode,
    /// What went wrong, for a person.
    pub message: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<serde_json::Value>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let retry_after = self.retry_after;
        if self.status.is_server_error() {
            tracing::error!(code = self.code.as_str(), message = %self.message, "request failed");
        }
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
                details: self.details,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, secs.into());
        }
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 6750: a 401 names the scheme the client should use.
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"rein\""),
            );
        }
        response
    }
}

impl From<rein_store::StoreError> for ApiError {
    fn from(e: rein_store::StoreError) -> Self {
        use rein_store::StoreError as E;
        match e {
            E::OperationNotFound(id) => ApiError::not_found(format!("no operation {id}")),
            E::InterventionNotFound(id) => {
                ApiError::not_found(format!("no pending intervention for tool call {id}"))
            }
            E::AlreadyDecided(id) => {
                ApiError::conflict(format!("tool call {id} was already decided"))
            }
            E::Conflict(what) => ApiError::conflict(format!("{what} already exists")),
            E::NotFound(what) => ApiError::not_found(format!("no {what}")),
            E::InUse(what) => ApiError::conflict(what),
            // A file that is not one this rein loads: the request's content, not the server.
            e @ E::InvalidArchive(_) => ApiError::unprocessable(e.to_string()),
            ref e @ E::TopicBusy {
                ref operation,
                ref status,
                ..
            } => ApiError::new(StatusCode::CONFLICT, ApiErrorCode::TopicBusy, e.to_string())
                .with_details(serde_json::json!({"operation_id": operation, "status": status})),
            e @ E::AtCapacity { .. } => {
                let mut err = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ApiErrorCode::TooManyRunning,
                    format!("{e}; wait for one to end"),
                );
                err.retry_after = Some(2);
                err
            }
            other => ApiError::internal(other.to_string()),
        }
    }
}

impl From<rein_operation::DriverError> for ApiError {
    fn from(e: rein_operation::DriverError) -> Self {
        use rein_operation::DriverError as E;
        match e {
            E::Store(s) => s.into(),
            e @ E::Unrecorded { .. } => ApiError::internal(e.to_string()),
            E::NotFound(id) => ApiError::not_found(format!("no operation {id}")),
            E::Refused(r) => r.into(),
            e @ E::ModelUnavailable(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::ModelUnavailable,
                e.to_string(),
            ),
            e @ E::MissingTools { .. } => ApiError::new(
                StatusCode::CONFLICT,
                ApiErrorCode::MissingTools,
                e.to_string(),
            ),
            e @ E::InvalidTopic(_) => ApiError::bad_request(e.to_string()),
            // A decision that does not fit its call: not-waiting and unknown calls are the
            // operation's state (409); the rest is what the request said (422).
            E::Decision(d) => {
                use rein_core::engine::DecisionError as D;
                match d {
                    D::NotWaiting(_) | D::UnknownToolCall(_) | D::SubAgentRunning(_) => {
                        ApiError::conflict(d.to_string())
                    }
                    D::NoQuestion(_)
                    | D::QuestionNeedsAnswer(_)
                    | D::NotAQuestion(_)
                    | D::BadAnswer { .. } => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::DecisionDoesNotFit,
                        d.to_string(),
                    ),
                }
            }
            E::Branch(b) => {
                use rein_operation::BranchError as B;
                match b {
                    B::UnknownTopic(_) => ApiError::not_found(b.to_string()),
                    // The body names a message the conversation does not have: well-formed,
                    // the thing it refers to is missing (the route exists).
                    B::UnknownMessage { .. } => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::MessageMissing,
                        b.to_string(),
                    ),
                    B::NoTopic
                    | B::NotAUserMessage(_)
                    | B::NoPrompt(_)
                    | B::PromptWithRegenerate(_) => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::BranchDoesNotFit,
                        b.to_string(),
                    ),
                }
            }
            E::External(x) => surface_unavailable(x.into()),
            // Well-formed, naming a device the caller does not have.
            e @ E::UnknownDevice(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::DeviceMissing,
                e.to_string(),
            ),
            // Well-formed, naming knowledge bases the caller does not have.
            e @ E::UnknownKnowledge(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::KnowledgeMissing,
                e.to_string(),
            ),
            // Well-formed, but a spend cap no call could count against: nothing was written.
            e @ E::Unpriced(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::ModelUnpriced,
                e.to_string(),
            ),
            E::Grant(g) => {
                use rein_operation::grants::GrantError as G;
                match g {
                    G::NotPending { .. } => ApiError::conflict(g.to_string()),
                    G::EveryTime { .. } => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::GrantNotAllowed,
                        g.to_string(),
                    ),
                    G::Question(_) | G::NoAgent(_) => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::GrantDoesNotFit,
                        g.to_string(),
                    ),
                }
            }
            // The caller's own MCP server is down or misdefined: theirs to fix.
            e @ E::OwnMcpUnavailable { .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::McpUnavailable,
                e.to_string(),
            ),
            // Well-formed JSON that is not an operation file this rein reads.
            e @ E::Archive(_) => ApiError::unprocessable(e.to_string()),
            E::AgentImport(a) => {
                use rein_operation::AgentImportError as A;
                match a {
                    A::Settings(p) => p.into(),
                    e @ (A::Format(_) | A::MissingTools(_)) => {
                        ApiError::unprocessable(e.to_string())
                    }
                }
            }
            E::Replay(r) => {
                use rein_operation::ReplayError as R;
                match r {
                    R::NoStep { .. } => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::StepMissing,
                        r.to_string(),
                    ),
                    R::NoModels => ApiError::bad_request(r.to_string()),
                    R::NotAModelCall { .. }
                    | R::NotKept { .. }
                    | R::NoModelCall(_)
                    | R::Undecided { .. }
                    | R::Diverted { .. } => ApiError::new(
                        StatusCode::CONFLICT,
                        ApiErrorCode::ReplayDoesNotFit,
                        r.to_string(),
                    ),
                }
            }
            E::Fork(f) => {
                use rein_operation::ForkError as F;
                match f {
                    F::NoStep { .. } => ApiError::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        ApiErrorCode::StepMissing,
                        f.to_string(),
                    ),
                    F::NotKept { .. } | F::NotRunning { .. } | F::NotForkable { .. } => {
                        ApiError::new(
                            StatusCode::CONFLICT,
                            ApiErrorCode::ForkDoesNotFit,
                            f.to_string(),
                        )
                    }
                    F::WiderTools { .. } => ApiError::new(
                        StatusCode::FORBIDDEN,
                        ApiErrorCode::ForkWidens,
                        f.to_string(),
                    ),
                }
            }
            // Well-formed, naming skills the server does not have.
            e @ E::UnknownSkills(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::SkillMissing,
                e.to_string(),
            ),
        }
    }
}

impl From<rein_operation::goals::GoalRunError> for ApiError {
    fn from(e: rein_operation::goals::GoalRunError) -> Self {
        use rein_operation::goals::GoalRunError as E;
        match e {
            e @ E::NotFound(_) => ApiError::not_found(e.to_string()),
            e @ (E::BadObjective
            | E::BadAcceptance
            | E::BadLimits(_)
            | E::PlanRefused(_)
            | E::NoDecision(_)
            | E::VerifierIsWorker(_)) => ApiError::unprocessable(e.to_string()),
            e @ E::AgentMissing(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::AgentMissing,
                e.to_string(),
            ),
            // The goal is not where the decision can happen, or moved meanwhile.
            e @ (E::Refused(_) | E::Raced(_)) => ApiError::conflict(e.to_string()),
            E::Store(s) => s.into(),
        }
    }
}

impl From<rein_operation::attachment::UploadedError> for ApiError {
    fn from(e: rein_operation::attachment::UploadedError) -> Self {
        use rein_operation::attachment::UploadedError as E;
        match e {
            // Well-formed, naming a file the caller does not have.
            e @ E::Missing(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::FileMissing,
                e.to_string(),
            ),
            E::Store(s) => s.into(),
        }
    }
}

impl From<rein_operation::SpecError> for ApiError {
    fn from(e: rein_operation::SpecError) -> Self {
        use rein_operation::SpecError as E;
        match e {
            // The body names an agent the caller does not have: the request is well-formed,
            // the thing it refers to is missing (the route itself exists).
            E::AgentMissing(name) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::AgentMissing,
                format!("no agent `{name}`"),
            ),
            E::GroupMissing(name) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::GroupMissing,
                format!("no group `{name}`"),
            ),
            E::Profile(p) => p.into(),
            E::Store(s) => s.into(),
            e @ E::Workdir(_) => ApiError::unprocessable(e.to_string()),
        }
    }
}

impl From<rein_operation::Refusal> for ApiError {
    fn from(r: rein_operation::Refusal) -> Self {
        use rein_operation::Refusal as R;
        match r {
            // What the caller can change: wait, name the call, answer instead.
            r @ (R::NotWaiting { .. }
            | R::WhichQuestion { .. }
            | R::OnlyQuestions { .. }
            | R::AlreadyDecided(_)
            | R::NoSuchCall { .. }
            | R::Runtime(_)
            | R::SubAgents(_)
            | R::QueuedPrompt(_)
            | R::KeptChanging { .. }
            | R::DevicesOnlyOnServer { .. }
            | R::TopicBusy { .. }) => ApiError::conflict(r.to_string()),
            // The server's own fault.
            r @ (R::PromptNotKept(_) | R::NoWorkingDirectory(_)) => {
                ApiError::internal(r.to_string())
            }
        }
    }
}

impl From<rein_operation::mcp_pins::ApproveError> for ApiError {
    fn from(e: rein_operation::mcp_pins::ApproveError) -> Self {
        use rein_operation::mcp_pins::ApproveError as A;
        match e {
            e @ A::NotPinned { .. } => ApiError::not_found(e.to_string()),
            e @ (A::Unchanged { .. } | A::Stale { .. }) => ApiError::conflict(e.to_string()),
            A::Store(e) => e.into(),
        }
    }
}

impl From<rein_operation::ProfileError> for ApiError {
    fn from(e: rein_operation::ProfileError) -> Self {
        use rein_operation::ProfileError as P;
        match e {
            // A surface that is well-formed but not one this server offers.
            P::Route(r) => surface_unavailable(r),
            // What the API document cannot say: a map's keys, whether a regex compiles.
            e @ P::ToolRule { .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidToolRule,
                e.to_string(),
            ),
            e @ P::PriceKey { .. } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidPrices,
                e.to_string(),
            ),
            e @ (P::Name(_)
            | P::Skill(_)
            | P::Model { .. }
            | P::ToolKey(_)
            | P::Limit { .. }
            | P::Egress { .. }
            | P::Remote(_)) => ApiError::bad_request(e.to_string()),
        }
    }
}

impl From<rein_operation::a2a::RemoteError> for ApiError {
    fn from(e: rein_operation::a2a::RemoteError) -> Self {
        use rein_operation::a2a::RemoteError as R;
        match e {
            // A well-formed address rein may not or cannot use, a card it cannot read or use,
            // an agent it cannot reach.
            e @ (R::BadUrl { .. }
            | R::Private { .. }
            | R::PrivateNotAllowed(_)
            | R::Card { .. }
            | R::NoToken(_)
            | R::TokenEnv(_)
            | R::TaskEnded { .. }
            | R::Transport { .. }
            | R::Refused { .. }) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::RemoteAgentUnusable,
                e.to_string(),
            ),
        }
    }
}

fn surface_unavailable(e: rein_operation::surface::SurfaceError) -> ApiError {
    use rein_operation::external::ExternalError;
    use rein_operation::surface::SurfaceError as S;
    let code = match &e {
        S::External(ExternalError::Missing { .. }) => ApiErrorCode::ExternalMissing,
        _ => ApiErrorCode::SurfaceUnavailable,
    };
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, e.to_string())
}

impl From<rein_scheduler::TaskError> for ApiError {
    fn from(e: rein_scheduler::TaskError) -> Self {
        use rein_scheduler::{LaunchError, TaskError as E};
        match e {
            E::Store(s) => s.into(),
            E::NotFound(id) => ApiError::not_found(format!("no task {id}")),
            e @ E::AgentMissing(_) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::AgentMissing,
                e.to_string(),
            ),
            // Well-formed per the document, but not a task this server can run (a cron
            // pattern or zone it cannot read, fields that exclude each other).
            E::Schedule(s) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidTask,
                s.to_string(),
            ),
            E::Invalid(m) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidTask,
                m,
            ),
            E::Launch(e @ LaunchError::AgentMissing(_)) => ApiError::new(
                StatusCode::CONFLICT,
                ApiErrorCode::AgentMissing,
                e.to_string(),
            ),
            E::Launch(LaunchError::AtCapacity(m)) => {
                let mut err = ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ApiErrorCode::TooManyRunning,
                    m,
                );
                err.retry_after = Some(2);
                err
            }
            E::Launch(LaunchError::Failed(m)) => {
                ApiError::unprocessable(format!("the run could not start: {m}"))
            }
            e @ E::Corrupt { .. } => ApiError::internal(e.to_string()),
            e @ E::BriefNotFound(_) => ApiError::not_found(e.to_string()),
            e @ E::BriefResolved(_) => ApiError::conflict(e.to_string()),
            E::BadResolution(m) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ApiErrorCode::InvalidResolution,
                m,
            ),
            e @ E::Decide(_) => ApiError::conflict(e.to_string()),
        }
    }
}

/// The longest request target (path and query) the API reads; no route needs more.
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// 414 in the one error shape for a longer request target. (Past 64 KiB hyper answers 414
/// itself, with no body, before any route sees the request.)
pub async fn uri_limit(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let len = req.uri().path_and_query().map_or(0, |pq| pq.as_str().len());
    if len > MAX_URI_BYTES {
        return ApiError::new(
            StatusCode::URI_TOO_LONG,
            ApiErrorCode::UriTooLong,
            format!("the request target is {len} bytes; the API reads at most {MAX_URI_BYTES}"),
        )
        .into_response();
    }
    next.run(req).await
}

/// 404 for any path the API does not have.
pub async fn no_route() -> ApiError {
    ApiError::not_found("no such endpoint")
}

/// 405 for a method a path does not take.
pub async fn wrong_method() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ApiErrorCode::MethodNotAllowed,
        "this endpoint does not take that method",
    )
}
