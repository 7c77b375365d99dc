//! What a Responses API request asked for ([`ResponseRequest`]), kept beside the operation
//! that answers it: the operation is the response (its status, messages and usage), this is
//! what the response shows of the request (the model as named, instructions, the response it
//! continues, background, metadata). The SQL behind [`Responses`] is `sql/responses.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::OperationId;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One Responses API request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseRequest {
    /// The operation answering it.
    pub operation_id: OperationId,
    /// The model as the request named it (`agent/NAME`, `provider/model`).
    pub model: String,
    /// Its instructions.
    pub instructions: Option<String>,
    /// The response it continues.
    pub previous_response_id: Option<String>,
    /// Whether it was asked to run in the background.
    pub background: bool,
    /// The caller's keys.
    pub metadata: BTreeMap<String, String>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// Responses API requests (written with their operation: `NewOperation::response`). Every
/// method is one statement.
pub trait Responses {
    /// `owner`'s request answered by `operation` (none: not a response of theirs).
    fn response<'a>(
        &'a self,
        owner: &'a str,
        operation: OperationId,
    ) -> BoxFuture<'a, Result<Option<ResponseRequest>, StoreError>>;
}
