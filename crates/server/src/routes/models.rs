//! `GET /v1/models`: the catalogued models (context window, capabilities, prices) and the
//! server's default, and in the same document OpenAI's list shape (`object: list`, `data`), so
//! an OpenAI client pointed at `/v1` finds what `/v1/chat/completions` takes: the caller's
//! agents as `agent/NAME`, then the catalogued `provider/model`s.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use axum::Json;
use axum::extract::State;
use rein_store::Accounts;
use serde_json::{Value, json};

/// The catalog, and the models OpenAI clients may name.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Value>, ApiError> {
    let models: Vec<Value> = app.runner.catalog().models().map(|m| json!(m)).collect();
    let openai = |id: String, owner: &str| json!({"id": id, "object": "model", "created": 0, "owned_by": owner});
    let mut data: Vec<Value> = app
        .store
        .list_agents(&user.id)
        .await?
        .into_iter()
        .map(|a| openai(format!("agent/{}", a.name), "rein"))
        .collect();
    data.extend(
        app.runner
            .catalog()
            .models()
            .map(|m| openai(m.id.clone(), m.id.split('/').next().unwrap_or("rein"))),
    );
    Ok(Json(json!({
        "default": app.runner.host.default_model.key(),
        "models": models,
        "object": "list",
        "data": data,
    })))
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
