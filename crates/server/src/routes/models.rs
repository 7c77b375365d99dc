//! `GET /v1/models`: the catalogued models (context window, capabilities, prices) and the
//! server's default, and in the same document OpenAI's list shape (`object: list`, `data`), so
//! an OpenAI client pointed at `/v1` finds what `/v1/chat/completions` takes: the caller's
//! agents as `agent/NAME`, then the catalogued `provider/model`s. `GET
//! /v1/models/providers/{provider}` asks a provider itself what it serves, with the caller's own
//! key for it when they brought one.

use crate::AppState;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::ProviderPath;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
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
    pub models: Vec<ModelInfo>,
    /// `list`, as OpenAI's answer says.
    pub object: String,
    /// What `/v1/chat/completions` takes as `model`, in OpenAI's shape.
    pub data: Vec<OpenAiModel>,
    /// Present when the models answer from a recorded cassette (`rein --replay`): no model is
    /// called, nothing is billed, and only what it recorded gets a real answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<Replay>,
}

/// A server whose models answer from a recorded cassette.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Replay {
    /// The cassette's file name.
    pub cassette: String,
    /// The questions it answers, each a new conversation's first message, in recorded order.
    pub questions: Vec<String>,
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
        replay: app.config.replay.clone(),
    }))
}

/// The model catalog route and its document.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/models",
            "Catalogued models and the default",
            list,
        )
        .route(
            Method::Get,
            "/v1/models/providers/{provider}",
            "What a model provider itself serves, asked with your key for it or the server's",
            provider_models,
        )
}

/// What a provider itself serves (`GET /v1/models/providers/{provider}`).
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProviderModels {
    /// The provider asked.
    pub provider: String,
    /// Its models, by id, sorted.
    pub models: Vec<ProviderModel>,
}

impl ProviderModels {
    /// What `provider` listed as `ids`, sorted, each marked as `priced` says of its
    /// `provider/model` key.
    pub fn of(provider: &str, mut ids: Vec<String>, priced: impl Fn(&str) -> bool) -> Self {
        ids.sort();
        Self {
            models: ids
                .into_iter()
                .map(|id| ProviderModel {
                    priced: priced(&format!("{provider}/{id}")),
                    id,
                })
                .collect(),
            provider: provider.to_owned(),
        }
    }
}

/// One model a provider lists.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct ProviderModel {
    /// Its id at the provider.
    pub id: String,
    /// Whether this server prices it (its catalog or configuration): a cost limit refuses an
    /// unpriced model.
    pub priced: bool,
}

/// `GET /v1/models/providers/{provider}`: ask the provider itself what it serves, with your own
/// key for it when you brought one (else the server's, where it lends it).
pub async fn provider_models(
    State(app): State<AppState>,
    Caller(user): Caller,
    ProviderPath(provider): ProviderPath,
) -> Result<Json<ProviderModels>, ApiError> {
    let host = &app.runner.host;
    let models = host.models_of(Some(&user.id)).await?;
    let asked = rein_core::state::ModelRef {
        provider: provider.as_str().into(),
        model: "-".into(),
    };
    let source = models
        .provider(&asked)
        .map_err(rein_operation::DriverError::from)?;
    let ids = source.list_models().await.map_err(|e| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            ApiErrorCode::ProviderFailed,
            format!("provider `{provider}` did not list its models: {e}"),
        )
    })?;
    let catalog = app.runner.catalog();
    Ok(Json(ProviderModels::of(source.id(), ids, |key| {
        host.prices.contains_key(key) || catalog.models().any(|m| m.id == key)
    })))
}
