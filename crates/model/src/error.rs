//! Model errors: one classification for every provider, with the provider's own type, code
//! and message kept, and the retry decision made once.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of failure this is: the caller's decision (retry, shrink context, fix the key)
/// depends on it, not on which vendor answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Missing or wrong credentials (401).
    Auth,
    /// Credentials lack access (403).
    Permission,
    /// Unknown model or endpoint (404).
    NotFound,
    /// Too many requests (429).
    RateLimit,
    /// The provider is overloaded (Anthropic 529, `overloaded_error`).
    Overloaded,
    /// The prompt does not fit the model's window.
    ContextLengthExceeded,
    /// The request is malformed or unsupported.
    InvalidRequest,
    /// A safety filter refused the content.
    ContentFiltered,
    /// Billing or quota exhausted (not transient).
    Quota,
    /// The provider failed (5xx, in-stream server errors).
    ServerError,
    /// The connection failed.
    Network,
    /// The request timed out.
    Timeout,
    /// The stream ended before it finished.
    StreamInterrupted,
    /// The model returned nothing.
    EmptyCompletion,
    /// The stream could not be parsed.
    MalformedStream,
    /// The caller cancelled.
    Cancelled,
    /// A requested capability is missing (checked before sending).
    Unsupported,
    /// A hook vetoed the call.
    Vetoed,
    /// Configuration is missing or wrong (no base URL, no key).
    Config,
    /// A replayed request does not match the cassette.
    ReplayMismatch,
}

impl ErrorKind {
    /// Whether a failure of this kind may succeed when tried again unchanged.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::RateLimit
                | ErrorKind::Overloaded
                | ErrorKind::ServerError
                | ErrorKind::Network
                | ErrorKind::Timeout
                | ErrorKind::StreamInterrupted
                | ErrorKind::EmptyCompletion
        )
    }

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Auth => "auth",
            ErrorKind::Permission => "permission",
            ErrorKind::NotFound => "not_found",
            ErrorKind::RateLimit => "rate_limit",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ContextLengthExceeded => "context_length_exceeded",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::ContentFiltered => "content_filtered",
            ErrorKind::Quota => "quota",
            ErrorKind::ServerError => "server_error",
            ErrorKind::Network => "network",
            ErrorKind::Timeout => "timeout",
            ErrorKind::StreamInterrupted => "stream_interrupted",
            ErrorKind::EmptyCompletion => "empty_completion",
            ErrorKind::MalformedStream => "malformed_stream",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Vetoed => "vetoed",
            ErrorKind::Config => "config",
            ErrorKind::ReplayMismatch => "replay_mismatch",
        }
    }
}

/// A classified provider failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub struct ModelError {
    /// Classification.
    pub kind: ErrorKind,
    /// HTTP status of the response that carried it (200 for in-stream errors).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// Provider error type (`invalid_request_error`, `overloaded_error`, `RESOURCE_EXHAUSTED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_type: Option<String>,
    /// Provider error code (`context_length_exceeded`, `429`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_code: Option<String>,
    /// The provider's message.
    pub message: String,
    /// Whether retrying unchanged may succeed.
    pub retryable: bool,
    /// How long the provider asked to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_ms: Option<u64>,
    /// Provider request id, for support tickets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind.as_str())?;
        if let Some(s) = self.http_status {
            write!(f, " (HTTP {s})")?;
        }
        if let Some(c) = self
            .provider_code
            .as_deref()
            .or(self.provider_type.as_deref())
        {
            write!(f, " [{c}]")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl ModelError {
    /// An error of `kind` with `message`; retryable when the kind is transient.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            http_status: None,
            provider_type: None,
            provider_code: None,
            message: message.into(),
            retryable: kind.is_transient(),
            retry_after_ms: None,
            request_id: None,
        }
    }

    /// Builder: HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }
}

/// Classify a failure from its HTTP status and the provider's type, code and message.
pub fn classify(
    status: u16,
    provider_type: Option<&str>,
    code: Option<&str>,
    message: &str,
) -> ErrorKind {
    let t = provider_type.unwrap_or_default().to_ascii_lowercase();
    let c = code.unwrap_or_default().to_ascii_lowercase();
    let m = message.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| t.contains(n) || c.contains(n));
    if any(&[
        "context_length",
        "context_window",
        "string_above_max_length",
    ]) || m.contains("maximum context length")
        || m.contains("prompt is too long")
        || m.contains("context window")
        || m.contains("too many tokens")
    {
        return ErrorKind::ContextLengthExceeded;
    }
    if any(&["insufficient_quota", "billing", "quota_exceeded"]) || m.contains("credit balance") {
        return ErrorKind::Quota;
    }
    if any(&["overloaded"]) || status == 529 {
        return ErrorKind::Overloaded;
    }
    if any(&["content_filter", "content_policy", "safety"]) {
        return ErrorKind::ContentFiltered;
    }
    match status {
        401 => return ErrorKind::Auth,
        403 => return ErrorKind::Permission,
        404 => return ErrorKind::NotFound,
        408 | 504 => return ErrorKind::Timeout,
        429 => return ErrorKind::RateLimit,
        500..=599 => return ErrorKind::ServerError,
        400..=499 => {
            if any(&["authentication", "invalid_api_key", "unauthenticated"]) {
                return ErrorKind::Auth;
            }
            if any(&["permission"]) {
                return ErrorKind::Permission;
            }
            if any(&["not_found", "model_not_found"]) {
                return ErrorKind::NotFound;
            }
            return ErrorKind::InvalidRequest;
        }
        _ => {}
    }
    if any(&["rate_limit", "resource_exhausted"]) {
        ErrorKind::RateLimit
    } else if any(&["authentication", "invalid_api_key"]) {
        ErrorKind::Auth
    } else if any(&["invalid_request"]) {
        ErrorKind::InvalidRequest
    } else {
        ErrorKind::ServerError
    }
}

/// Parse a `retry-after` header value: seconds (possibly fractional). HTTP dates are not
/// worth a date parser here; they are rare on model APIs and fall back to backoff.
pub fn parse_retry_after_secs(v: &str) -> Option<u64> {
    let secs: f64 = v.trim().parse().ok()?;
    (secs.is_finite() && secs >= 0.0).then(|| (secs * 1000.0).round() as u64)
}

/// Parse a Google duration (`"21s"`, `"1.5s"`) to milliseconds.
pub fn parse_google_duration(v: &str) -> Option<u64> {
    parse_retry_after_secs(v.trim().strip_suffix('s')?)
}
