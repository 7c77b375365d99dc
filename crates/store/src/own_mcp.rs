//! MCP servers a user defined: a Streamable HTTP endpoint and the headers sent to it, whose
//! tools only their operations are offered. The headers (an `Authorization` token, say) are
//! held sealed ([`SealedKey`], one JSON object), as providers' keys are; which headers are set
//! is kept in the clear so they can be listed without opening them. The SQL behind
//! [`OwnMcpServers`] is `sql/own_mcp.rs`; rotating the secret key reseals the headers with the
//! providers' keys ([`crate::OwnProviders::reseal`]).

use crate::{SealedKey, StoreError};
use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// One MCP server a user defined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnMcpServer {
    /// Its name: the tool identifier its tools are offered under.
    pub name: String,
    /// Its Streamable HTTP endpoint.
    pub url: String,
    /// The names of the headers sent to it, sorted.
    pub header_names: Vec<String>,
    /// The headers (a JSON object of names to values), sealed; `None` when there are none.
    pub headers: Option<SealedKey>,
    /// Last set.
    pub updated_at: DateTime<Utc>,
}

/// MCP servers users defined. Every method is one statement.
pub trait OwnMcpServers {
    /// Set (insert or replace) `user_id`'s server `server.name`.
    fn put_own_mcp_server<'a>(
        &'a self,
        user_id: &'a str,
        server: &'a OwnMcpServer,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// `user_id`'s servers, by name.
    fn own_mcp_servers<'a>(
        &'a self,
        user_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<OwnMcpServer>, StoreError>>;

    /// Forget `user_id`'s server `name`; whether there was one.
    fn delete_own_mcp_server<'a>(
        &'a self,
        user_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;
}
