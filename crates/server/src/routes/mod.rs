//! The `/v1` endpoints, with extractors that turn malformed input into the API's error shape.

pub mod agents;
pub mod events;
pub mod models;
pub mod operations;
pub mod tasks;
pub mod topics;

use crate::AppState;
use crate::api::{Input, OperationDoc};
use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use rein_core::OperationId;
use rein_operation::profile::check_name;
use rein_store::{OperationRecord, Store, StoredOperation, User};
use schemars::JsonSchema;
use schemars::generate::SchemaGenerator;
use serde::de::DeserializeOwned;
use serde_json::json;

/// A JSON body; malformed JSON, a wrong field or an oversized body is a 400 / 413 naming
/// what was wrong.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "payload_too_large",
                    "the request body is larger than the server accepts",
                ))
            }
            Err(rejection) => Err(ApiError::bad_request(rejection.body_text())),
        }
    }
}

impl<T: JsonSchema> Input for Body<T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        doc.body = Some(json!({
            "required": true,
            "content": {"application/json": {"schema": crate::api::schema_of::<T>(g)}}
        }));
        doc.error(
            400,
            "The body is not valid for this operation; the message names the field",
        );
        doc.error(413, "The body is larger than the server accepts");
    }
}

/// Query parameters; a malformed one is a 400 naming it.
pub struct Params<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Params<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Params(q.0))
            .map_err(|r| ApiError::bad_request(r.body_text()))
    }
}

macro_rules! path_param {
    ($(#[$doc:meta])* $name:ident, check: $check:expr, schema: $schema:expr) => {
        $(#[$doc])*
        pub struct $name(pub String);

        impl<S: Send + Sync> FromRequestParts<S> for $name {
            type Rejection = ApiError;

            async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
                // Not percent-encoded UTF-8: a 400 in the API's shape, not axum's text/plain.
                let raw = axum::extract::Path::<String>::from_request_parts(parts, state)
                    .await
                    .map_err(|r| ApiError::bad_request(format!("path: {}", r.body_text())))?
                    .0;
                let check: fn(&str) -> Result<(), ApiError> = $check;
                check(&raw)?;
                Ok($name(raw))
            }
        }

        impl Input for $name {
            fn document(doc: &mut OperationDoc, _g: &mut SchemaGenerator) {
                let name = doc.path_param().to_owned();
                doc.parameters.push(json!({
                    "name": name, "in": "path", "required": true, "schema": $schema
                }));
                doc.error(400, "Malformed id");
                doc.error(404, "Not found, or not yours");
            }
        }
    };
}

path_param!(
    /// `{id}` of an operation: a UUID.
    OperationPath,
    check: |s| operation_id(s).map(|_| ()),
    schema: json!({"type": "string", "format": "uuid"})
);

path_param!(
    /// `{id}` of a task: `task_` and 32 lowercase hex digits.
    TaskPath,
    check: check_task_id,
    schema: json!({"type": "string", "pattern": "^task_[0-9a-f]{32}$"})
);

path_param!(
    /// `{name}` of an agent: 1 to 64 ASCII letters, digits, `-` or `_`.
    AgentPath,
    check: |s| check_name(s).map_err(ApiError::from),
    schema: json!({"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"})
);

path_param!(
    /// `{id}` of a topic: 1 to 128 ASCII letters, digits, `-`, `_`, `.` or `:`.
    TopicPath,
    check: |s| rein_operation::check_topic_id(s).map_err(ApiError::from),
    schema: json!({"type": "string", "pattern": rein_operation::TOPIC_ID_PATTERN})
);

/// Task ids are `task_` and 32 lowercase hex digits; anything else is a 400 naming it.
fn check_task_id(id: &str) -> Result<(), ApiError> {
    let ok = id.strip_prefix("task_").is_some_and(|hex| {
        hex.len() == 32 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    });
    if ok {
        Ok(())
    } else {
        let shown: String = id.chars().take(40).collect();
        Err(ApiError::bad_request(format!(
            "{shown:?} is not a task id (task_ and 32 hex digits)"
        )))
    }
}

/// An operation id by its format (a UUID); anything else is a 400 naming it.
pub fn operation_id(id: &str) -> Result<OperationId, ApiError> {
    id.parse().map_err(|_| {
        let shown: String = id.chars().take(40).collect();
        ApiError::bad_request(format!("{shown:?} is not an operation id (a UUID)"))
    })
}

impl<T: JsonSchema> Input for Params<T> {
    fn document(doc: &mut OperationDoc, g: &mut SchemaGenerator) {
        // The struct's own schema (not a reference): each property is a query parameter.
        let schema = crate::api::inline_schema_of::<T>(g);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        if let Some(props) = schema["properties"].as_object() {
            for (name, prop) in props {
                let mut prop = prop.clone();
                let description = prop
                    .as_object_mut()
                    .and_then(|p| p.remove("description"))
                    .unwrap_or(serde_json::Value::Null);
                let mut param = json!({
                    "name": name, "in": "query",
                    "required": required.contains(&name.as_str()), "schema": prop
                });
                if !description.is_null() {
                    param["description"] = description;
                }
                doc.parameters.push(param);
            }
        }
        doc.error(400, "A query parameter is not valid; the message names it");
    }
}

/// The record (no state) of operation `id` if `user` owns it; 404 otherwise.
pub async fn owned_record(
    app: &AppState,
    user: &User,
    id: &str,
) -> Result<OperationRecord, ApiError> {
    let missing = || ApiError::not_found(format!("no operation {id}"));
    let parsed = operation_id(id)?;
    let op = app.store.operation(parsed).await?.ok_or_else(missing)?;
    if op.owner.as_deref() != Some(user.id.as_str()) {
        return Err(missing());
    }
    Ok(op)
}

/// The operation `id` if `user` owns it; 404 otherwise (existence is not revealed).
pub async fn owned_operation(
    app: &AppState,
    user: &User,
    id: &str,
) -> Result<StoredOperation, ApiError> {
    let missing = || ApiError::not_found(format!("no operation {id}"));
    let parsed = operation_id(id)?;
    let op = app
        .store
        .load_operation(parsed)
        .await?
        .ok_or_else(missing)?;
    if op.record.owner.as_deref() != Some(user.id.as_str()) {
        return Err(missing());
    }
    Ok(op)
}
