//! `rein grant …`'s arguments and how a grant is shown (the command is
//! `commands::grants`).

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
