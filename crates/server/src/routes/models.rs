//! `GET /v1/models`: the catalogued models (context window, capabilities, prices) and the
//! server's default.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

/// The catalog.
pub async fn list(State(app): State<AppState>, Caller(_): Caller) -> Json<Value> {
    let models: Vec<Value> = app.runner.catalog().models().map(|m| json!(m)).collect();
    Json(json!({"default": app.runner.host.default_model.key(), "models": models}))
}

/// The model catalog route and its document.
pub fn api() -> Api {
    Api::new().route(
        Method::Get,
        "/v1/models",
        "Catalogued models and the default",
        list,
    )
}
