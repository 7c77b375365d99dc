//! `GET /v1/operations/{id}/export` and `POST /v1/operations/import`: one of your operations as
//! a portable file, and such a file loaded as yours under new ids
//! (`rein_operation::Driver::export_operation`, `import_operation`; the format:
//! docs/formats/operation.schema.json). An import this server could not run (a model it cannot
//! reach, tools it lacks) is refused, naming what is missing.

use crate::AppState;
use crate::api::{Api, Method, Reply};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::{Body, OperationPath, owned_record};
use axum::Json;
use axum::extract::State;
use rein_store::OperationArchive;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `201` answer of an import.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ImportedOperation {
    /// Its id here (new).
    pub operation_id: String,
    /// Its conversation here (new).
    pub topic_id: String,
}

/// `GET /v1/operations/{id}/export`.
pub async fn export(
    State(app): State<AppState>,
    Caller(user): Caller,
    OperationPath(id): OperationPath,
) -> Result<Json<OperationArchive>, ApiError> {
    let record = owned_record(&app, &user, &id).await?;
    Ok(Json(app.runner.driver().export_operation(record.id).await?))
}

/// `POST /v1/operations/import`.
pub async fn import(
    State(app): State<AppState>,
    Caller(user): Caller,
    Body(archive): Body<OperationArchive>,
) -> Result<Reply<201, ImportedOperation>, ApiError> {
    let (id, topic) = app
        .runner
        .driver()
        .import_operation(&archive, Some(&user.id))
        .await?;
    Ok(Reply(ImportedOperation {
        operation_id: id.to_string(),
        topic_id: topic,
    }))
}

/// The routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/operations/{id}/export",
            "The operation as a portable file: its conversation and everything it recorded",
            export,
        )
        .route(
            Method::Post,
            "/v1/operations/import",
            "Load an exported operation as yours, under new ids (refused, naming it, when this server lacks its model or tools)",
            import,
        )
}
