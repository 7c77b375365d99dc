//! `rein grant list|revoke`: what you granted ("always for this tool" at a prompt, `rein
//! approve --grant`, the API's and the web UI's "always"). A revoked grant covers nothing
//! from the next call on.

use super::Backend;
use rein_core::intervention::GrantScope;
use rein_store::GrantRecord;

/// `rein grant …`.
#[derive(clap::Subcommand)]
pub enum GrantCommand {
    /// Your grants, newest first.
    List {
        /// Only this scope: operation, topic or agent.
        #[arg(long, value_parser = scope_parser())]
        scope: Option<GrantScope>,
        /// Revoked grants too.
        #[arg(long)]
        all: bool,
    },
    /// Revoke a grant: the tool asks again from its next call on.
    Revoke {
        /// The grant's id (`grant_…`).
        #[arg(value_parser = grant_id)]
        id: String,
    },
}

/// A clap parser for a grant scope that lists the scopes in `--help` and its errors.
pub fn scope_parser() -> impl clap::builder::TypedValueParser<Value = GrantScope> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(GrantScope::ALL.map(GrantScope::as_str))
        .try_map(|s| s.parse::<GrantScope>())
}

/// A grant id as the command line gives it, refused before anything is asked of the store or
/// the server when it cannot be one.
fn grant_id(id: &str) -> Result<String, String> {
    if rein_store::valid_grant_id(id) {
        Ok(id.to_owned())
    } else {
        Err(format!(
            "`{id}` is not a grant id (grant_ and 32 hex digits)"
        ))
    }
}

/// One line for a grant.
pub fn line(g: &GrantRecord) -> String {
    let revoked = g
        .revoked_at
        .map(|t| format!("  revoked {}", t.format("%Y-%m-%d %H:%M")))
        .unwrap_or_default();
    format!(
        "{}  {} for {} {}  since {}{revoked}",
        g.id,
        g.tool,
        g.scope,
        g.target,
        g.created_at.format("%Y-%m-%d %H:%M")
    )
}

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
