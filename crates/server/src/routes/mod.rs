//! The `/v1` endpoints, with extractors that turn malformed input into the API's error shape.

pub mod agents;
pub mod events;
pub mod models;
pub mod operations;
pub mod tasks;
pub mod topics;

use crate::AppState;
use crate::error::ApiError;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use rein_core::OperationId;
use rein_store::{OperationRecord, Store, StoredOperation, User};
use serde::de::DeserializeOwned;

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

/// A path parameter (`{id}`, `{name}`); one that is not percent-encoded UTF-8 is a 400 in the
/// API's error shape, not axum's plain-text rejection.
pub struct Segment(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Segment {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<String>::from_request_parts(parts, state)
            .await
            .map(|p| Segment(p.0))
            .map_err(|r| ApiError::bad_request(format!("path: {}", r.body_text())))
    }
}

/// An operation id by its format (a UUID); anything else is a 400 naming it.
pub fn operation_id(id: &str) -> Result<OperationId, ApiError> {
    id.parse().map_err(|_| {
        let shown: String = id.chars().take(40).collect();
        ApiError::bad_request(format!("{shown:?} is not an operation id (a UUID)"))
    })
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
