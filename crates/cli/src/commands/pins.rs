//! `rein pin list|approve`: the MCP tool definitions pinned in this machine's database
//! (`rein_operation::mcp_pins`). A tool whose server now lists another definition is held —
//! not offered to operations — and listed with the change as a diff until it is approved.

use super::Local;
use rein_store::{McpPin, PinOwner};

/// `rein pin …`.
#[derive(clap::Subcommand)]
pub enum PinCommand {
    /// Pinned MCP tools, each held change with its diff (`-` pinned, `+` what the server lists
    /// now).
    List {
        /// A user's own MCP servers (their id) instead of the configured ones.
        #[arg(long, value_name = "USER_ID")]
        user: Option<String>,
    },
    /// Approve a held change: operations started from now on are offered the tool with its new
    /// definition.
    Approve {
        /// The MCP server (the name its tools are offered under). Not `server`: that is the
        /// global `--server`'s name, which clap would give it.
        #[arg(value_name = "SERVER")]
        mcp_server: String,
        /// The tool's name on that server.
        tool: String,
        /// A user's own MCP server (their id) instead of a configured one.
        #[arg(long, value_name = "USER_ID")]
        user: Option<String>,
    },
}

/// One line for a pin, and its diff when a change is held with `approve` (the command that
/// approves it) to say how.
pub(crate) fn shown(p: &McpPin, approve: &str) -> String {
    let mut out = format!(
        "{}/{}  pinned {}  sha256:{}",
        p.server,
        p.tool,
        p.pinned_at.format("%Y-%m-%d %H:%M"),
        &p.hash[..p.hash.len().min(12)]
    );
    if let (Some(change), Some(diff)) = (&p.change, rein_operation::mcp_pins::diff(p)) {
        out.push_str(&format!(
            "\n  HELD since {}: the server lists another definition (sha256:{}); `{approve}` offers it again\n",
            change.seen_at.format("%Y-%m-%d %H:%M"),
            &change.hash[..change.hash.len().min(12)],
        ));
        for line in diff.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out.trim_end().to_owned()
}

/// Run a pin command on this machine's database.
pub async fn run(l: &Local, command: PinCommand, json: bool) -> anyhow::Result<u8> {
    let store = l.store().await?;
    match command {
        PinCommand::List { user } => {
            let whose = user.as_deref().map_or(PinOwner::Process, PinOwner::User);
            let pins = rein_store::McpPins::mcp_pins(&**store, whose).await?;
            if json {
                for p in &pins {
                    let mut v = serde_json::to_value(p)?;
                    v["diff"] = rein_operation::mcp_pins::diff(p).into();
                    println!("{v}");
                }
            } else if pins.is_empty() {
                eprintln!(
                    "no MCP tool is pinned yet: a tool is pinned the first time an operation is offered it"
                );
            } else {
                for p in &pins {
                    let approve = format!("rein pin approve {} {}", p.server, p.tool);
                    println!("{}", shown(p, &approve));
                }
            }
            Ok(crate::exit::DONE)
        }
        PinCommand::Approve {
            mcp_server: server,
            tool,
            user,
        } => {
            let whose = user.as_deref().map_or(PinOwner::Process, PinOwner::User);
            let pin =
                rein_operation::mcp_pins::approve(&**store, whose, &server, &tool, None).await?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "server": server, "tool": tool, "approved": pin.change.map(|c| c.hash) })
                );
            } else {
                eprintln!(
                    "approved: operations started from now on are offered {server}/{tool} with its new definition"
                );
            }
            Ok(crate::exit::DONE)
        }
    }
}
