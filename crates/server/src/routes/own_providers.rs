//! `/v1/settings/providers`: the model providers a user brings (their API key, their base
//! URL), which only their operations use. A key goes in and never comes out: answers say only
//! whether one is stored (`rein_operation::own_models` seals it with the server's secret key).

use crate::AppState;
use crate::api::{Api, Method, NoContent};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::error_code::ApiErrorCode;
use crate::routes::{Body, ProviderPath};
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use rein_operation::own_models::{Bring, BringRefusal};
use rein_store::{OwnProvider, OwnProviders};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `PUT /v1/settings/providers/{provider}` body: what you bring for it, replacing what you had.
#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BringIn {
    /// Your API key for it (stored sealed; never shown again).
    #[schemars(length(min = 1, max = 4096))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// Your base URL for it (`http://` or `https://`); the server's key is never sent there.
    #[schemars(length(min = 1, max = 2048))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// A provider you brought, as the API shows it: never the key.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct OwnProviderOut {
    /// The provider id.
    pub provider: String,
    /// Your base URL for it (`null`: the server's).
    pub base_url: Option<String>,
    /// Whether your API key for it is stored.
    pub has_key: bool,
    /// Last set.
    pub updated_at: DateTime<Utc>,
}

impl From<OwnProvider> for OwnProviderOut {
    fn from(p: OwnProvider) -> Self {
        Self {
            provider: p.provider,
            base_url: p.base_url,
            has_key: p.key.is_some(),
            updated_at: p.updated_at,
        }
    }
}

impl From<BringRefusal> for ApiError {
    fn from(e: BringRefusal) -> Self {
        match e {
            BringRefusal::NotServed => ApiError::conflict(e.to_string()),
            BringRefusal::BadProvider(_) => ApiError::bad_request(e.to_string()),
            BringRefusal::Empty
            | BringRefusal::UnknownProvider { .. }
            | BringRefusal::BadKey(_)
            | BringRefusal::BadBaseUrl { .. }
            | BringRefusal::BaseUrlsOff => ApiError::unprocessable(e.to_string()),
            BringRefusal::Secret(e) => ApiError::internal(e.to_string()),
            BringRefusal::Store(e) => e.into(),
        }
    }
}

/// `GET /v1/settings/providers`: the providers you brought.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<Vec<OwnProviderOut>>, ApiError> {
    let own = app.store.own_providers(&user.id).await?;
    Ok(Json(own.into_iter().map(OwnProviderOut::from).collect()))
}

/// `PUT /v1/settings/providers/{provider}`: bring your key or base URL for a provider.
pub async fn put(
    State(app): State<AppState>,
    Caller(user): Caller,
    ProviderPath(provider): ProviderPath,
    Body(req): Body<BringIn>,
) -> Result<Json<OwnProviderOut>, ApiError> {
    let host = &app.runner.host;
    let keys = host
        .own_provider_keys
        .as_ref()
        .ok_or(BringRefusal::NotServed)?;
    let own = keys
        .bring(
            &*app.store,
            &*host.models,
            &user.id,
            &provider,
            Bring {
                api_key: req.api_key,
                base_url: req.base_url,
            },
        )
        .await?;
    tracing::info!(user = %user.name, provider = %own.provider, "provider settings stored");
    Ok(Json(own.into()))
}

/// `DELETE /v1/settings/providers/{provider}`: forget what you brought for a provider.
pub async fn delete(
    State(app): State<AppState>,
    Caller(user): Caller,
    ProviderPath(provider): ProviderPath,
) -> Result<NoContent, ApiError> {
    let canonical = rein_model::registry::canonical(&provider);
    if app.store.delete_own_provider(&user.id, canonical).await? {
        Ok(NoContent)
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            ApiErrorCode::NotFound,
            format!("you have no settings for provider `{canonical}`"),
        ))
    }
}

/// The provider settings routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/settings/providers",
            "The model providers you brought (never their keys)",
            list,
        )
        .route(
            Method::Put,
            "/v1/settings/providers/{provider}",
            "Bring your API key or base URL for a model provider; your operations use it",
            put,
        )
        .route(
            Method::Delete,
            "/v1/settings/providers/{provider}",
            "Forget your settings for a model provider",
            delete,
        )
}
