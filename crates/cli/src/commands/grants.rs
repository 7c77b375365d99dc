//! `rein grant list|revoke`: what you granted ("always for this tool" at a prompt, `rein
//! approve --grant`, the API's and the web UI's "always"). A revoked grant covers nothing
//! from the next call on.

use super::Backend;
use crate::grants::{GrantCommand, line};

/// Run a grant command.
pub async fn run(on: &impl Backend, command: GrantCommand, json: bool) -> anyhow::Result<()> {
    match command {
        GrantCommand::List { scope, all } => {
            let grants = on.grants(scope, all).await?;
            if json {
                for g in &grants {
                    println!("{}", serde_json::to_string(g)?);
                }
            } else if grants.is_empty() {
                eprintln!("no grants: answer `always` at an approval prompt to make one");
            } else {
                for g in &grants {
                    println!("{}", line(g));
                }
            }
        }
        GrantCommand::Revoke { id } => {
            let g = on.revoke_grant(&id).await?;
            if json {
                println!("{}", serde_json::to_string(&g)?);
            } else {
                eprintln!("revoked {}: {} asks again from its next call", g.id, g.tool);
            }
        }
    }
    Ok(())
}
