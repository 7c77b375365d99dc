//! Registering a remote agent: its card fetched from the address its owner gives (through the
//! address guard), checked to describe an A2A 1.x agent with a JSON-RPC endpoint, and kept as
//! a [`RemoteAgent`] with what rein shows of it.

use super::client::{guard, http_url};
use super::wire::VERSION;
use super::{CardSummary, RemoteAgent, RemoteError};
use crate::profile::AgentProfile;
use rein_core::spec::Surface;
use serde_json::Value;

/// The path a card is published under, relative to the agent's address.
pub const WELL_KNOWN: &str = ".well-known/agent-card.json";
/// The largest card rein reads.
const MAX_CARD_BYTES: usize = 1 << 20;

/// Where the card of the agent at `url` is: `url` itself when it names a `.json` document,
/// else its well-known path under `url`.
pub fn card_url(url: &str) -> Result<reqwest::Url, RemoteError> {
    let parsed = http_url(url)?;
    if parsed.path().ends_with(".json") {
        return Ok(parsed);
    }
    let mut base = parsed;
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.join(WELL_KNOWN).map_err(|e| RemoteError::BadUrl {
        url: url.to_owned(),
        why: e.to_string(),
    })
}

/// Agent `name`'s settings as they are kept: a remote agent's card read and checked (unless
/// `before`, what it was, registered the same address, token variable and rule), its surface
/// `a2a:NAME`; any other agent as given. `private_allowed`: whether this host lets a remote
/// agent be on a loopback or private address (the CLI does, for its own user; a server only
/// when started with `--allow-private-hooks`).
pub async fn registered(
    name: &str,
    mut profile: AgentProfile,
    before: Option<&AgentProfile>,
    private_allowed: bool,
) -> Result<AgentProfile, RemoteError> {
    let Some(wanted) = profile.a2a.take() else {
        return Ok(profile);
    };
    if wanted.private && !private_allowed {
        return Err(RemoteError::PrivateNotAllowed(wanted.url));
    }
    let same = |b: &RemoteAgent| {
        b.url == wanted.url
            && b.token_env == wanted.token_env
            && b.private == wanted.private
            && !b.card.endpoint.is_empty()
    };
    let kept = match before.and_then(|b| b.a2a.as_ref()).filter(|b| same(b)) {
        Some(b) => b.clone(),
        None => register(wanted).await?,
    };
    profile.a2a = Some(kept);
    profile.surface = Some(Surface::A2a(name.to_owned()));
    Ok(profile)
}

/// Read and check the card of the agent at `wanted.url` and return `wanted` with what it
/// says (its endpoint, name, skills); why it cannot be used otherwise.
pub async fn register(mut wanted: RemoteAgent) -> Result<RemoteAgent, RemoteError> {
    if let Some(var) = wanted.token_env.as_ref().filter(|v| !valid_env_name(v)) {
        return Err(RemoteError::TokenEnv(var.chars().take(130).collect()));
    }
    let at = card_url(&wanted.url)?;
    let http = guard(&at, wanted.private)
        .await?
        .client(std::time::Duration::from_secs(15))?;
    let card_err = |why: String| RemoteError::Card {
        url: at.to_string(),
        why,
    };
    // A card published to the agent's users only (rein's per-agent cards) takes its token.
    let token = wanted
        .token_env
        .as_ref()
        .and_then(|v| std::env::var(v).ok())
        .filter(|t| !t.is_empty());
    let mut request = http.get(at.clone()).header("Accept", "application/json");
    if let Some(t) = &token {
        request = request.bearer_auth(t);
    }
    let response = request
        .send()
        .await
        .map_err(|e| card_err(format!("cannot be fetched: {e}")))?;
    let status = response.status();
    if !status.is_success() {
        let hint = match (status.as_u16(), &wanted.token_env, &token) {
            (401 | 403, None, _) => " (it wants a token: name its variable with --token-env)",
            (401 | 403, Some(_), None) => " (its token's variable is not set here)",
            _ => "",
        };
        return Err(card_err(format!("answered HTTP {status}{hint}")));
    }
    let bytes = response
        .bytes()
        .await
        .map_err(|e| card_err(format!("cannot be read: {e}")))?;
    if bytes.len() > MAX_CARD_BYTES {
        return Err(card_err(format!(
            "is {} bytes, over the {MAX_CARD_BYTES} rein reads",
            bytes.len()
        )));
    }
    let card: Value =
        serde_json::from_slice(&bytes).map_err(|e| card_err(format!("is not JSON: {e}")))?;
    let mut summary = summary(&card).map_err(card_err)?;
    // The endpoint is reached under the same rule as the card.
    let endpoint = http_url(&summary.endpoint)?;
    guard(&endpoint, wanted.private).await?;
    summary.endpoint = endpoint.to_string();
    wanted.card = summary;
    Ok(wanted)
}

/// What rein keeps of `card`; why it is not an A2A 1.x card with a JSON-RPC interface.
fn summary(card: &Value) -> Result<CardSummary, String> {
    let name = card
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.trim().is_empty())
        .ok_or("it has no name")?;
    let interfaces = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .ok_or("it lists no supportedInterfaces (an A2A 1.0 card does)")?;
    let jsonrpc = interfaces
        .iter()
        .filter(|i| i.get("protocolBinding").and_then(Value::as_str) == Some("JSONRPC"))
        .find(|i| {
            i.get("protocolVersion")
                .and_then(Value::as_str)
                .is_some_and(|v| v.split('.').next() == VERSION.split('.').next())
        })
        .ok_or_else(|| {
            let offered: Vec<String> = interfaces
                .iter()
                .map(|i| {
                    format!(
                        "{} {}",
                        i.get("protocolBinding")
                            .and_then(Value::as_str)
                            .unwrap_or("?"),
                        i.get("protocolVersion")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                    )
                })
                .collect();
            format!(
                "it offers no JSONRPC interface of protocol version {VERSION} (it offers: {})",
                if offered.is_empty() {
                    "nothing".to_owned()
                } else {
                    offered.join(", ")
                }
            )
        })?;
    let endpoint = jsonrpc
        .get("url")
        .and_then(Value::as_str)
        .filter(|u| !u.is_empty())
        .ok_or("its JSONRPC interface has no url")?;
    let skills = card
        .get("skills")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|s| {
                    let id = s.get("id").and_then(Value::as_str)?;
                    let label = s.get("name").and_then(Value::as_str).unwrap_or(id);
                    Some(format!("{id}: {label}"))
                })
                .take(100)
                .collect()
        })
        .unwrap_or_default();
    Ok(CardSummary {
        name: name.chars().take(200).collect(),
        description: card
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .chars()
            .take(1000)
            .collect(),
        endpoint: endpoint.to_owned(),
        version: jsonrpc
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(VERSION)
            .to_owned(),
        streaming: card
            .pointer("/capabilities/streaming")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        skills,
    })
}

/// Whether `name` can name an environment variable.
fn valid_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && name.len() <= 128
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_card_without_a_jsonrpc_1_interface_is_refused_naming_what_it_offers() {
        let card = json!({"name": "x", "supportedInterfaces": [
            {"url": "http://h/rpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": "http://h/old", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ]});
        let why = summary(&card).unwrap_err();
        assert!(why.contains("GRPC 1.0, JSONRPC 0.3"), "{why}");
        assert!(summary(&json!({"supportedInterfaces": []})).is_err());
        assert!(
            summary(&json!({"name": "x", "url": "http://h"}))
                .unwrap_err()
                .contains("supportedInterfaces")
        );
        let good = json!({"name": "helper", "description": "d",
            "capabilities": {"streaming": true},
            "skills": [{"id": "tool:calculator", "name": "Calculator"}, {"id": "bare"}],
            "supportedInterfaces": [{"url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}]});
        let s = summary(&good).unwrap();
        assert_eq!(s.endpoint, "http://h/a2a");
        assert!(s.streaming);
        assert_eq!(s.skills, ["tool:calculator: Calculator", "bare: bare"]);
    }

    #[test]
    fn the_card_is_found_under_the_agents_address() {
        let at = |u: &str| card_url(u).map(|u| u.to_string()).unwrap_or_default();
        assert_eq!(
            at("http://h:1/a2a/helper"),
            "http://h:1/a2a/helper/.well-known/agent-card.json"
        );
        assert_eq!(at("https://h/"), "https://h/.well-known/agent-card.json");
        assert_eq!(at("https://h/card.json"), "https://h/card.json");
        assert!(card_url("ftp://h/x").is_err());
        assert!(card_url("not a url").is_err());
        assert!(valid_env_name("REMOTE_TOKEN"));
        assert!(!valid_env_name("1X") && !valid_env_name("A-B") && !valid_env_name(""));
    }

    #[tokio::test]
    async fn a_token_variable_that_is_no_variable_name_is_refused_before_anything_is_fetched() {
        let wanted = RemoteAgent {
            url: "http://127.0.0.1:9/a2a/x".into(),
            token_env: Some("MY-TOKEN".into()),
            private: true,
            card: Default::default(),
        };
        let refused = register(wanted).await.unwrap_err().to_string();
        assert!(
            refused.starts_with("token_env `MY-TOKEN` is not an environment variable's name"),
            "{refused}"
        );
    }
}
