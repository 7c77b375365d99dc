//! `rein device list|revoke`: a server's devices.

use super::Backend;

/// `rein device …` (against `--server URL`).
#[derive(clap::Subcommand)]
pub enum DeviceCommand {
    /// Your devices: connected or not, their tools and directory.
    List,
    /// Revoke a device: its tokens stop working and its connection closes.
    Revoke {
        /// The device's name.
        name: String,
    },
}

/// Run a device command.
pub async fn run(on: &impl Backend, command: DeviceCommand, json: bool) -> anyhow::Result<()> {
    match command {
        DeviceCommand::List => {
            for d in on.devices().await? {
                if json {
                    println!("{}", serde_json::to_string(&d)?);
                } else {
                    println!(
                        "{:<20} {:<13} {:<30} {}  last seen {}",
                        d.name,
                        if d.connected { "connected" } else { "offline" },
                        d.tools.join(","),
                        d.workdir.as_deref().unwrap_or("-"),
                        d.last_seen.to_rfc3339()
                    );
                }
            }
        }
        DeviceCommand::Revoke { name } => {
            on.revoke_device(&name).await?;
            eprintln!("revoked device {name}");
        }
    }
    Ok(())
}
