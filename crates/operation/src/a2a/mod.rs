//! Remote agents over A2A 1.0 (`a2a:NAME` surfaces): what rein keeps of one when a user
//! registers it ([`RemoteAgent`], its card read and checked by [`card::register`]), how rein
//! speaks to it ([`client`]: JSON-RPC over HTTP, streamed answers as server-sent events), and
//! the protocol's JSON shared with rein's own A2A server ([`wire`]). The driver runs a task
//! on one (`driver/a2a.rs`).

pub mod card;
pub mod client;
pub mod wire;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A remote A2A agent as its owner registered it: where its card is, the JSON-RPC endpoint
/// the card names, how rein authenticates to it, and what the card said of it when it was
/// read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoteAgent {
    /// The agent's card (`https://host/.well-known/agent-card.json`), or the address it is
    /// published under (the card's well-known path is added).
    #[schemars(length(min = 1, max = 2000))]
    pub url: String,
    /// The environment variable holding the bearer token rein sends it, read by the process
    /// that runs the delegation (never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"))]
    pub token_env: Option<String>,
    /// Whether it may be on a loopback or private address (refused otherwise: the address is
    /// resolved and checked before every request).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub private: bool,
    /// What its card says (filled in when it is registered; what a request gives is ignored).
    #[serde(default)]
    pub card: CardSummary,
}

/// What rein keeps of a remote agent's card.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CardSummary {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// What it says it does.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its JSON-RPC endpoint.
    #[serde(default)]
    pub endpoint: String,
    /// The protocol version that endpoint speaks.
    #[serde(default)]
    pub version: String,
    /// Whether it streams its answers (`SendStreamingMessage`).
    #[serde(default)]
    pub streaming: bool,
    /// Its skills, `id: name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<String>,
}

/// Why a remote agent cannot be registered or reached.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Its address is not an `http(s)` URL with a host.
    #[error("A2A agent URL `{url}`: {why}")]
    BadUrl {
        /// As given.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// It resolves to a loopback, private or link-local address and was not registered as
    /// private.
    #[error(
        "A2A agent URL `{url}` resolves to {ip}, a loopback or private address: register it with --a2a-private (allow_private) to reach it"
    )]
    Private {
        /// As given.
        url: String,
        /// The address.
        ip: String,
    },
    /// The card could not be fetched or does not describe an A2A 1.x JSON-RPC agent.
    #[error("A2A agent card at {url}: {why}")]
    Card {
        /// Where it was read.
        url: String,
        /// What is wrong.
        why: String,
    },
    /// A private address asked for where this host does not allow one.
    #[error(
        "A2A agent URL `{0}`: this server does not reach loopback or private addresses (its operator allows them with --allow-private-hooks)"
    )]
    PrivateNotAllowed(String),
    /// A token variable that cannot name an environment variable.
    #[error(
        "token_env `{0}` is not an environment variable's name (a letter or `_`, then letters, digits or `_`, at most 128)"
    )]
    TokenEnv(String),
    /// Its token's environment variable is not set in this process.
    #[error("A2A agent: the environment variable {0} (its token) is not set")]
    NoToken(String),
    /// The request did not get an answer (connection, timeout, a body that is not JSON-RPC).
    #[error("A2A agent at {endpoint}: {why}")]
    Transport {
        /// The endpoint.
        endpoint: String,
        /// What happened.
        why: String,
    },
    /// Its task ended there without an answer (failed, rejected, cancelled, or waiting for
    /// an authentication rein cannot give).
    #[error("remote agent `{agent}` {why}")]
    TaskEnded {
        /// The agent's name (rein's).
        agent: String,
        /// What happened, with what the agent said.
        why: String,
    },
    /// It answered with a JSON-RPC error.
    #[error("A2A agent at {endpoint} refused {method}: {message} ({code})")]
    Refused {
        /// The endpoint.
        endpoint: String,
        /// The method.
        method: &'static str,
        /// The error's code.
        code: i64,
        /// Its message.
        message: String,
    },
}
