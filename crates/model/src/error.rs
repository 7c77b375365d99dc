//! Model errors: one classification for every provider, with the provider's own type, code
//! and message kept, and the retry decision made once.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of failure this is (defined in rein-core, so the classification reaches an
/// operation's state and events intact).
pub use rein_core::failure::ErrorKind;

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
