//! `GET /healthz`, for load balancers and orchestrators: no token needed, nothing private in
//! it. `200` with the database's schema version while this process serves; `503` once it is
//! stopping (it finishes the steps under way and hands their operations over) or when the
//! database does not answer, so a balancer sends new requests elsewhere.

use crate::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde_json::{Value, json};

/// `GET /healthz`.
pub async fn check(State(app): State<AppState>) -> (StatusCode, Json<Value>) {
    if app.runner.is_stopping() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "stopping"})),
        );
    }
    match app.store.migrations_applied().await {
        Ok(applied) => (
            StatusCode::OK,
            Json(json!({
                "status": "ok",
                "schema_version": applied.last().map_or(0, |m| m.version),
            })),
        ),
        Err(e) => {
            tracing::warn!(error = %e, "health check: the database does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "database_unavailable"})),
            )
        }
    }
}
