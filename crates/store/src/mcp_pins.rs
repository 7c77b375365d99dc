//! MCP tool definitions pinned by hash when first listed (trust on first use), so a server that
//! changes a tool's description or parameters after it was pinned — a "rug pull" planting
//! instructions in what the model reads — finds the tool held until a person approves the
//! change. The change is kept beside the pin, to be shown as a diff. The SQL is
//! `sql/mcp_pins.rs`.

use crate::StoreError;
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// Whose pins: the process's configured servers (`Process`), or one user's own servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinOwner<'a> {
    /// The servers this process's configuration names (approved by whoever runs it).
    Process,
    /// The servers a user defined.
    User(&'a str),
}

impl PinOwner<'_> {
    /// The stored owner column: `''` for the process.
    pub fn column(&self) -> &str {
        match self {
            PinOwner::Process => "",
            PinOwner::User(id) => id,
        }
    }
}

/// A definition seen that differs from the pinned one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PinChange {
    /// Its hash.
    pub hash: String,
    /// The definition (canonical JSON text).
    pub definition: String,
    /// When it was first seen.
    pub seen_at: DateTime<Utc>,
}

/// One pinned tool of one MCP server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpPin {
    /// The server (its tool identifier).
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// The pinned definition's hash (SHA-256, hex).
    pub hash: String,
    /// The pinned definition (canonical JSON text: description and parameters).
    pub definition: String,
    /// When it was pinned or last approved.
    pub pinned_at: DateTime<Utc>,
    /// A different definition the server now lists, held until approved.
    pub change: Option<PinChange>,
}

/// Pinned MCP tool definitions. Every method is one statement.
pub trait McpPins {
    /// `owner`'s pins, by server and tool.
    fn mcp_pins<'a>(
        &'a self,
        owner: PinOwner<'a>,
    ) -> BoxFuture<'a, Result<Vec<McpPin>, StoreError>>;

    /// Pin `pin` unless its tool is pinned already; whether it was pinned now.
    fn pin_mcp_tool<'a>(
        &'a self,
        owner: PinOwner<'a>,
        pin: &'a McpPin,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Keep `change` beside `server`'s pinned `tool` (none: the server lists the pinned
    /// definition again); whether there is such a pin.
    fn set_mcp_change<'a>(
        &'a self,
        owner: PinOwner<'a>,
        server: &'a str,
        tool: &'a str,
        change: Option<&'a PinChange>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Make the held change of `server`'s `tool` its pin, if its hash is `hash` (the change a
    /// person saw); whether it did.
    fn approve_mcp_change<'a>(
        &'a self,
        owner: PinOwner<'a>,
        server: &'a str,
        tool: &'a str,
        hash: &'a str,
        at: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
