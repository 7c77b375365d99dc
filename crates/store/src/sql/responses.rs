//! [`Responses`] in SQL on both backends (metadata as a JSON object, instants as
//! microseconds).

use super::statement::Statement;
use super::{SqlStore, from_micros, micros};
use crate::StoreError;
use crate::responses::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::OperationId;
use sqlx::Row;

impl Responses for SqlStore {
    fn response<'a>(
        &'a self,
        owner: &'a str,
        operation: OperationId,
    ) -> BoxFuture<'a, Result<Option<ResponseRequest>, StoreError>> {
        async move {
            let Some(row) = sqlx::query(
                "SELECT model, instructions, previous_response_id, background, metadata, \
                 created_at FROM responses WHERE owner = $1 AND operation_id = $2",
            )
            .bind(owner)
            .bind(operation.to_string())
            .fetch_optional(&self.pool)
            .await?
            else {
                return Ok(None);
            };
            let metadata: String = row.try_get("metadata")?;
            Ok(Some(ResponseRequest {
                operation_id: operation,
                model: row.try_get("model")?,
                instructions: row.try_get("instructions")?,
                previous_response_id: row.try_get("previous_response_id")?,
                background: row.try_get::<i64, _>("background")? != 0,
                metadata: serde_json::from_str(&metadata)
                    .map_err(|e| StoreError::corrupt("response metadata", e))?,
                created_at: from_micros(row.try_get("created_at")?, "response created_at")?,
            }))
        }
        .boxed()
    }
}

/// What keeps `owner`'s request `r` (also run in the transaction that creates its operation).
pub(super) fn insert_response(owner: &str, r: &ResponseRequest) -> Result<Statement, StoreError> {
    let metadata = serde_json::to_string(&r.metadata)
        .map_err(|e| StoreError::corrupt("response metadata", e))?;
    Ok(Statement::new(
        "INSERT INTO responses (operation_id, owner, model, instructions, \
         previous_response_id, background, metadata, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .arg(r.operation_id.to_string())
    .arg(owner)
    .arg(r.model.as_str())
    .arg(r.instructions.clone())
    .arg(r.previous_response_id.clone())
    .arg(i64::from(r.background))
    .arg(metadata)
    .arg(micros(r.created_at)))
}
