//! `/v1/devices`: the caller's devices (joined with `rein connect`), whether each is connected
//! now and what it offers; revoking one (its tokens stop working, its connection closes). The
//! devices' own WebSocket (`/v1/devices/connect`) is [`crate::devices::session`].

use crate::AppState;
use crate::api::NoContent;
use crate::api::{Api, Method};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::routes::DevicePath;
use axum::Json;
use axum::extract::State;
use rein_store::Devices;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A device as listed.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DeviceOut {
    /// Its name (`device:NAME` targets it).
    pub name: String,
    /// Connected now.
    pub connected: bool,
    /// The tools it offers, by identifier.
    pub tools: Vec<String>,
    /// The directory its tools work in.
    pub workdir: Option<String>,
    /// Its operating system and architecture.
    pub platform: Option<String>,
    /// When it last connected.
    pub last_seen: chrono::DateTime<chrono::Utc>,
}

/// `GET /v1/devices` answer.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct DeviceList {
    /// By name.
    pub devices: Vec<DeviceOut>,
}

/// `GET /v1/devices`.
pub async fn list(
    State(app): State<AppState>,
    Caller(user): Caller,
) -> Result<Json<DeviceList>, ApiError> {
    let devices = app
        .store
        .list_devices(&user.id)
        .await?
        .into_iter()
        .map(|d| DeviceOut {
            connected: app.devices.is_connected(&user.id, &d.name),
            tools: d.tools.iter().map(|t| t.identifier.clone()).collect(),
            name: d.name,
            workdir: d.workdir,
            platform: d.platform,
            last_seen: d.last_seen,
        })
        .collect();
    Ok(Json(DeviceList { devices }))
}

/// `DELETE /v1/devices/{name}`.
pub async fn revoke(
    State(app): State<AppState>,
    Caller(user): Caller,
    DevicePath(name): DevicePath,
) -> Result<NoContent, ApiError> {
    if !app.store.revoke_device(&user.id, &name).await? {
        return Err(ApiError::not_found(format!("no device `{name}`")));
    }
    app.devices.drop_device(&user.id, &name);
    Ok(NoContent)
}

/// The device routes and their documents.
pub fn api() -> Api {
    Api::new()
        .route(
            Method::Get,
            "/v1/devices",
            "Your devices: connected or not, and what they offer",
            list,
        )
        .route(
            Method::Delete,
            "/v1/devices/{name}",
            "Revoke a device: its tokens stop working and its connection closes",
            revoke,
        )
}
