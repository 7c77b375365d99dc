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
use rein_model::catalog::ModelInfo;
use rein_store::Accounts;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `GET /v1/models` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ModelList {
    /// The server's default model, `provider/model`.
    pub default: String,
    /// The catalog: each model's context window, capabilities and prices.
    #[schemars(with = "Vec<serde_json::Value>")]
    pub models: Vec<ModelInfo>,
    /// `list`, as OpenAI's answer says.
    pub object: String,
    /// What `/v1/chat/completions` takes as `model`, in OpenAI's shape.
    pub data: Vec<OpenAiModel>,
}

/// A model as OpenAI's list shows one.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OpenAiModel {
    /// `agent/NAME` or `provider/model`.
    pub id: String,
    /// `model`.
    pub object: String,
    /// Always 0.
    pub created: u64,
    /// `rein` for agents, the provider otherwise.
    pub owned_by: String,
}

/// The catalog, and the models OpenAI clients may name.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<ModelList>, ApiError> {
    let models: Vec<ModelInfo> = app
        .runner
        .catalog()
        .models()
        .map(|m| (**m).clone())
        .collect();
    let openai = |id: String, owner: &str| OpenAiModel {
        id,
        object: "model".into(),
        created: 0,
        owned_by: owner.into(),
    };
    let mut data: Vec<OpenAiModel> = app
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
    Ok(Json(ModelList {
        default: app.runner.host.default_model.key(),
        models,
        object: "list".into(),
        data,
    }))
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
