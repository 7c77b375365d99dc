//! Devices: machines that joined a server with `rein connect`. Each belongs to one user and is
//! reached through a device token (an API token bound to the device's name, which authenticates
//! that device's connection and nothing else). A device's record keeps the tools it announced
//! when it last connected, so an operation can target it, and its calls wait, while it is away.
//! The SQL behind [`Devices`] is `sql/devices.rs`.

use crate::StoreError;
use crate::accounts::{ApiToken, User};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use rein_core::tool::ToolManifest;
use serde::{Deserialize, Serialize};

/// A device as last seen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// Its user's id.
    pub owner: String,
    /// Its name, unique per user.
    pub name: String,
    /// The tools it offers (their manifests, as it announced them).
    pub tools: Vec<ToolManifest>,
    /// The directory its tools work in.
    pub workdir: Option<String>,
    /// Its operating system and architecture.
    pub platform: Option<String>,
    /// When it last connected or answered.
    pub last_seen: DateTime<Utc>,
    /// When it first connected.
    pub created_at: DateTime<Utc>,
}

/// Devices and their tokens. Every method is one transaction.
pub trait Devices: Send + Sync {
    /// Store a device token's hash: it connects device `device` of `user_id`.
    fn add_device_token<'a>(
        &'a self,
        user_id: &'a str,
        token_hash: &'a str,
        device: &'a str,
    ) -> BoxFuture<'a, Result<ApiToken, StoreError>>;
    /// The user and device a (not revoked) device token hash connects; records the use.
    fn device_for_token<'a>(
        &'a self,
        token_hash: &'a str,
    ) -> BoxFuture<'a, Result<Option<(User, String)>, StoreError>>;
    /// Record a device as it connects (its tools, directory and platform), or refresh it.
    fn put_device<'a>(&'a self, device: &'a DeviceRecord) -> BoxFuture<'a, Result<(), StoreError>>;
    /// One device of a user.
    fn device<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<DeviceRecord>, StoreError>>;
    /// A user's devices by name.
    fn list_devices<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, Result<Vec<DeviceRecord>, StoreError>>;
    /// Forget a device and revoke its tokens; whether it was known.
    fn revoke_device<'a>(
        &'a self,
        owner: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
