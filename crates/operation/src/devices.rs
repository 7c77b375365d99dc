//! Operations on a connected device (`device:NAME`): rein's brain runs where the operation
//! does, the device's tools run on the device. Which tools a device offers comes from its
//! record ([`DeviceDirectory`]); an operation on it is offered those in place of this host's
//! file and shell tools, each marked [`ToolKind::Device`] so the tool host defers its calls
//! (the operation waits in `waiting_for_async_tool`) instead of running them here. The server's
//! device gateway sends them and answers them ([`crate::Driver::complete_async_tool`]).

use futures::future::BoxFuture;
use rein_core::tool::{ToolKind, ToolManifest, ToolManifestMap};
use rein_store::StoreError;
use std::sync::Arc;

/// Where a host finds the devices operations may target.
pub trait DeviceDirectory: Send + Sync {
    /// The tools device `name` of `owner` offers (`None`: no such device).
    fn tools<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<ToolManifest>>, StoreError>>;
}

/// The built-in tools a device runs in place of this host's own.
pub const DEVICE_BUILTINS: [&str; 2] = ["files", "shell"];

/// The manifests of an operation on a device that offers `offered`: this host's tools without
/// its file and shell tools, plus the device's, each marked as the device's. A device's `files`
/// and `shell` keep this host's manifests (their schemas and their approval policy, so the
/// command guard and the approvals apply before anything is sent); its other tools (its MCP
/// servers) keep their schemas and get no policy of their own (calls are approved as any
/// tool's, by the operation's mode).
pub fn device_manifests(host: &ToolManifestMap, offered: Vec<ToolManifest>) -> ToolManifestMap {
    let mut map: ToolManifestMap = host
        .iter()
        .filter(|(id, _)| !DEVICE_BUILTINS.contains(&id.as_str()))
        .map(|(id, m)| (id.clone(), Arc::clone(m)))
        .collect();
    for mut m in offered {
        if host.contains_key(&m.identifier) && !DEVICE_BUILTINS.contains(&m.identifier.as_str()) {
            // A device tool cannot stand in for one of this host's other tools.
            continue;
        }
        if let Some(own) = host.get(&m.identifier) {
            m = (**own).clone();
        } else {
            m.intervention = None;
            for api in &mut m.apis {
                api.intervention = None;
            }
        }
        m.kind = ToolKind::Device;
        map.insert(m.identifier.clone(), Arc::new(m));
    }
    map
}

/// Devices as a store keeps them (a server's: the tools each announced when it last
/// connected).
pub struct StoredDevices(pub Arc<dyn rein_store::Devices>);

impl DeviceDirectory for StoredDevices {
    fn tools<'a>(
        &'a self,
        owner: Option<&'a str>,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<ToolManifest>>, StoreError>> {
        Box::pin(async move {
            let Some(owner) = owner else {
                return Ok(None);
            };
            Ok(self.0.device(owner, name).await?.map(|d| d.tools))
        })
    }
}
