//! Providers by id: the preset table (shipped in the crate), user configuration over it, and
//! environment variables (`<PROVIDER>_BASE_URL`, `<PROVIDER>_API_KEY`, `OLLAMA_HOST`). A model
//! is addressed as `provider/model`; an unknown provider with a base URL is treated as
//! OpenAI-compatible.

use crate::error::{ErrorKind, ModelError};
use crate::protocol::Protocol;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

const BUILTIN: &str = include_str!("../data/providers.json");

/// Where a provider deviates from its protocol's defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Quirks {
    /// Name of the output-limit field (`max_completion_tokens` for OpenAI).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<String>,
    /// `false` when the server rejects `stream_options`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<bool>,
    /// `false` when the server has no function calling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<bool>,
    /// Header carrying the key instead of `Authorization: Bearer` (`api-key` for Azure).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_header: Option<String>,
    /// Azure OpenAI's deployment scheme: requests go to
    /// `/openai/deployments/<model>/…?api-version=<this>` under the resource's endpoint (the
    /// model id names the deployment). Set from `AZURE_API_VERSION`; without it the base URL is
    /// used as an OpenAI-compatible one (Azure's `/openai/v1` API).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `true` when the server takes `prompt_cache_key` (OpenAI's own API): requests that
    /// share a prefix name it, so they reach the same cache.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_cache_key: Option<bool>,
    /// Gemini: put the system instruction, tool declarations and tool config of requests
    /// estimated at this many tokens or more into an explicit context cache
    /// (`cachedContents`, five minutes or an hour with `prompt_cache_hour`) that later requests
    /// name, so that part is billed at the cached price on every call; unset: Gemini's
    /// implicit caching only. Gemini's own minimum is 1,024 tokens for Flash models and 4,096
    /// for Pro.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_cache_min_tokens: Option<u64>,
}

/// One provider preset or configuration entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderPreset {
    /// Id used in `provider/model`.
    pub id: String,
    /// Wire protocol.
    pub protocol: Protocol,
    /// Default base URL (empty when it must be configured, e.g. Azure).
    #[serde(default)]
    pub base_url: String,
    /// Environment variable holding the key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Deviations.
    #[serde(default)]
    pub quirks: Quirks,
    /// Headers every request carries (OpenRouter's app attribution), under the user's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// The provider id an alias stands for: `google` is Gemini (the id LobeHub and Google's own
/// tools use; `GOOGLE_API_KEY` or `GEMINI_API_KEY`); every other id is its own.
pub fn canonical(id: &str) -> &str {
    match id {
        "google" => "gemini",
        other => other,
    }
}

/// User configuration for one provider (every field optional).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProviderOverride {
    /// Protocol (for providers not in the presets).
    pub protocol: Option<Protocol>,
    /// Base URL.
    pub base_url: Option<String>,
    /// API key.
    pub api_key: Option<String>,
    /// Extra headers.
    pub headers: BTreeMap<String, String>,
    /// Deviations.
    pub quirks: Option<Quirks>,
}

/// Everything needed to talk to one provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderConfig {
    /// Provider id.
    pub id: String,
    /// Wire protocol.
    pub protocol: Protocol,
    /// Base URL.
    pub base_url: String,
    /// API key, if any.
    pub api_key: Option<String>,
    /// Extra headers.
    pub headers: BTreeMap<String, String>,
    /// Deviations.
    pub quirks: Quirks,
}

#[derive(Deserialize)]
struct File {
    providers: Vec<ProviderPreset>,
}

/// Reads environment variables (injectable so tests do not touch the process environment).
pub type Env = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Resolves `provider/model` addresses.
pub struct Registry {
    presets: BTreeMap<String, ProviderPreset>,
    overrides: BTreeMap<String, ProviderOverride>,
    env: Box<Env>,
}

fn env_name(id: &str, suffix: &str) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{id}_{suffix}")
}

impl Registry {
    /// The shipped presets, reading the process environment.
    pub fn builtin() -> Result<Self, ModelError> {
        Self::new(
            BUILTIN,
            BTreeMap::new(),
            Box::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
        )
    }

    /// Presets from JSON text, `overrides` from configuration, and an environment reader.
    pub fn new(
        presets_json: &str,
        overrides: BTreeMap<String, ProviderOverride>,
        env: Box<Env>,
    ) -> Result<Self, ModelError> {
        let file: File = serde_json::from_str(presets_json).map_err(|e| {
            ModelError::new(ErrorKind::Config, format!("invalid provider presets: {e}"))
        })?;
        let presets = file
            .providers
            .into_iter()
            .map(|p| (p.id.clone(), p))
            .collect();
        Ok(Self {
            presets,
            overrides,
            env,
        })
    }

    /// The shipped preset JSON.
    pub fn builtin_presets_json() -> &'static str {
        BUILTIN
    }

    /// Preset ids.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.presets.keys().map(String::as_str)
    }

    /// Split `provider/model` (the model may itself contain `/`).
    pub fn split(address: &str) -> Result<(&str, &str), ModelError> {
        match address.split_once('/') {
            Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok((p, m)),
            _ => Err(ModelError::new(
                ErrorKind::Config,
                format!(
                    "model `{address}` must be addressed as provider/model (for example openai/gpt-4o-mini)"
                ),
            )),
        }
    }

    /// The configuration of provider `id`, refusing a provider that needs a key and has none
    /// (the error names the variable to set).
    pub fn provider_with_key(&self, id: &str) -> Result<ProviderConfig, ModelError> {
        let config = self.provider(id)?;
        if config.api_key.is_none()
            && let Some(var) = self.presets.get(id).and_then(|p| p.api_key_env.as_deref())
        {
            return Err(ModelError::new(
                ErrorKind::Config,
                format!("missing API key for provider `{id}`: set {var}"),
            ));
        }
        Ok(config)
    }

    /// The configuration of provider `id` (or an alias of one: [`canonical`]).
    pub fn provider(&self, id: &str) -> Result<ProviderConfig, ModelError> {
        self.configure(id, None)
    }

    /// The configuration of provider `id` for a user who brought their own base URL or API key
    /// ([`UserProvider`]): theirs over the server's. With `lend_key` off the server's own key is
    /// never used, and a provider that needs one and has none of theirs is refused, saying how
    /// to store it.
    pub fn provider_for_user(
        &self,
        id: &str,
        own: &UserProvider<'_>,
    ) -> Result<ProviderConfig, ModelError> {
        let config = self.configure(id, Some(own))?;
        if config.api_key.is_none()
            && let Some(var) = self
                .presets
                .get(canonical(id))
                .and_then(|p| p.api_key_env.as_deref())
        {
            return Err(ModelError::new(
                ErrorKind::Config,
                if own.lend_key && own.base_url.is_none() {
                    format!(
                        "missing API key for provider `{id}`: set {var}, or store your own with `rein settings provider set {id} --key-stdin`"
                    )
                } else if own.lend_key {
                    format!(
                        "missing API key for provider `{id}`: the server's key is not sent to a base URL you chose; store your own with `rein settings provider set {id} --key-stdin`"
                    )
                } else {
                    format!(
                        "missing API key for provider `{id}`: this server lends none; store your own with `rein settings provider set {id} --key-stdin`"
                    )
                },
            ));
        }
        Ok(config)
    }

    fn configure(
        &self,
        id: &str,
        own: Option<&UserProvider<'_>>,
    ) -> Result<ProviderConfig, ModelError> {
        let given = id;
        let id = canonical(id);
        let preset = self.presets.get(id);
        let over = self.overrides.get(id).cloned().unwrap_or_default();
        let env = &self.env;
        // The environment overrides the configuration file, which overrides the presets.
        let mut base = own
            .and_then(|o| o.base_url.map(str::to_owned))
            .or_else(|| env(&env_name(given, "BASE_URL")))
            .or_else(|| env(&env_name(id, "BASE_URL")))
            .or_else(|| (id == "ollama").then(|| env("OLLAMA_HOST")).flatten())
            .or_else(|| over.base_url.clone())
            .or_else(|| preset.map(|p| p.base_url.clone()).filter(|b| !b.is_empty()));
        if let Some(b) = &mut base
            && !b.contains("://")
        {
            // OLLAMA_HOST is commonly `host:port`.
            *b = format!("http://{b}");
        }
        let Some(base_url) = base else {
            return Err(ModelError::new(
                ErrorKind::Config,
                match preset {
                    Some(_) => format!(
                        "provider `{id}` needs a base URL: set {} or configure it",
                        env_name(id, "BASE_URL")
                    ),
                    None => format!(
                        "unknown provider `{id}`: set {} to use an OpenAI-compatible server, or configure it",
                        env_name(id, "BASE_URL")
                    ),
                },
            ));
        };
        // The server's key never goes to a base URL a user chose: it would hand it to them.
        let lend = own.is_none_or(|o| o.lend_key && o.base_url.is_none());
        let api_key = own.and_then(|o| o.api_key.map(str::to_owned)).or_else(|| {
            if !lend {
                return None;
            }
            env(&env_name(given, "API_KEY"))
                .or_else(|| env(&env_name(id, "API_KEY")))
                .or_else(|| preset.and_then(|p| p.api_key_env.as_deref()).and_then(env))
                .or_else(|| (id == "gemini").then(|| env("GOOGLE_API_KEY")).flatten())
                .or_else(|| over.api_key.clone())
        });
        let protocol = over
            .protocol
            .or(preset.map(|p| p.protocol))
            .unwrap_or(Protocol::OpenaiChat);
        let mut quirks = over
            .quirks
            .clone()
            .or(preset.map(|p| p.quirks.clone()))
            .unwrap_or_default();
        if let Some(v) = env(&env_name(id, "API_VERSION")) {
            quirks.api_version = Some(v);
        }
        let mut headers = preset.map(|p| p.headers.clone()).unwrap_or_default();
        headers.extend(over.headers);
        Ok(ProviderConfig {
            id: id.to_owned(),
            protocol,
            // Azure's deployment scheme builds its own path under the resource's endpoint.
            base_url: if quirks.api_version.is_some() {
                base_url.trim_end_matches('/').to_owned()
            } else {
                protocol.base_url(&base_url)
            },
            api_key,
            headers,
            quirks,
        })
    }
}

/// What a user brought for one provider, over the server's configuration of it.
#[derive(Clone, Copy, Debug, Default)]
pub struct UserProvider<'a> {
    /// Their base URL (`None`: the server's).
    pub base_url: Option<&'a str>,
    /// Their API key (`None`: the server's, when it lends it and they chose no base URL).
    pub api_key: Option<&'a str>,
    /// Whether the server's own key serves when they have none.
    pub lend_key: bool,
}

impl Registry {
    /// A provider for `provider/model` over `transport`, with `catalog` for capability checks;
    /// returns it with the model id.
    pub fn resolve(
        &self,
        address: &str,
        transport: std::sync::Arc<dyn crate::Transport>,
        catalog: Option<std::sync::Arc<crate::Catalog>>,
    ) -> Result<(crate::Provider, String), ModelError> {
        let (id, model) = Self::split(address)?;
        let provider = crate::Provider::new(self.provider(id)?, transport);
        let provider = match catalog {
            Some(c) => provider.with_catalog(c),
            None => provider,
        };
        Ok((provider, model.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(vars: &[(&str, &str)]) -> Registry {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect();
        Registry::new(
            BUILTIN,
            BTreeMap::new(),
            Box::new(move |k| vars.get(k).cloned()),
        )
        .unwrap()
    }

    #[test]
    fn presets_env_and_unknown_providers() {
        let r = registry(&[
            ("DEEPSEEK_API_KEY", "sk-d"),
            ("OLLAMA_HOST", "10.0.0.5:11434"),
            ("MYLAB_BASE_URL", "http://lab:9000/v1"),
        ]);
        assert!(
            r.ids()
                .filter(|id| r.presets[*id].protocol == Protocol::OpenaiChat)
                .count()
                >= 30
        );
        let d = r.provider("deepseek").unwrap();
        assert_eq!(
            (d.base_url.as_str(), d.api_key.as_deref()),
            ("https://api.deepseek.com/v1", Some("sk-d"))
        );
        assert_eq!(
            r.provider("ollama").unwrap().base_url,
            "http://10.0.0.5:11434"
        );
        let lab = r.provider("mylab").unwrap();
        assert_eq!(
            (lab.protocol, lab.base_url.as_str()),
            (Protocol::OpenaiChat, "http://lab:9000/v1")
        );
        let err = r.provider("nowhere").unwrap_err();
        assert!(err.message.contains("NOWHERE_BASE_URL"), "{err}");
        let err = r.provider("azure").unwrap_err();
        assert!(err.message.contains("AZURE_BASE_URL"), "{err}");
        assert_eq!(
            Registry::split("openrouter/openai/gpt-4o").unwrap(),
            ("openrouter", "openai/gpt-4o")
        );
        assert!(Registry::split("gpt-4o").is_err());
    }

    #[test]
    fn the_environment_overrides_the_configuration_which_overrides_the_presets() {
        let overrides = BTreeMap::from([(
            "deepseek".to_owned(),
            ProviderOverride {
                base_url: Some("http://config:1/v1".into()),
                api_key: Some("from-config".into()),
                ..Default::default()
            },
        )]);
        let with = |vars: &'static [(&'static str, &'static str)]| {
            Registry::new(
                BUILTIN,
                overrides.clone(),
                Box::new(move |k| {
                    vars.iter()
                        .find(|(n, _)| *n == k)
                        .map(|(_, v)| (*v).to_owned())
                }),
            )
            .unwrap()
            .provider_with_key("deepseek")
            .unwrap()
        };
        let config = with(&[]);
        assert_eq!(
            (config.base_url.as_str(), config.api_key.as_deref()),
            ("http://config:1/v1", Some("from-config"))
        );
        let env = with(&[
            ("DEEPSEEK_BASE_URL", "http://env:2/v1"),
            ("DEEPSEEK_API_KEY", "from-env"),
        ]);
        assert_eq!(
            (env.base_url.as_str(), env.api_key.as_deref()),
            ("http://env:2/v1", Some("from-env"))
        );
        let err = registry(&[]).provider_with_key("deepseek").unwrap_err();
        assert!(err.message.contains("set DEEPSEEK_API_KEY"), "{err}");
    }

    /// A user's own key and base URL come before the server's; the server's key is lent only
    /// when it lends keys and only to the server's base URL.
    #[test]
    fn a_users_own_provider_comes_before_the_servers() {
        let r = registry(&[("OPENAI_API_KEY", "sk-server")]);
        let mine = UserProvider {
            base_url: None,
            api_key: Some("sk-mine"),
            lend_key: true,
        };
        let c = r.provider_for_user("openai", &mine).unwrap();
        assert_eq!(c.api_key.as_deref(), Some("sk-mine"));
        assert_eq!(c.base_url, r.provider("openai").unwrap().base_url);

        let lent = UserProvider {
            lend_key: true,
            ..Default::default()
        };
        let c = r.provider_for_user("openai", &lent).unwrap();
        assert_eq!(c.api_key.as_deref(), Some("sk-server"));

        let unlent = UserProvider::default();
        let e = r.provider_for_user("openai", &unlent).unwrap_err();
        assert!(e.to_string().contains("lends none"), "{e}");

        // Their own base URL never receives the server's key.
        let elsewhere = UserProvider {
            base_url: Some("http://127.0.0.1:9/v1"),
            api_key: None,
            lend_key: true,
        };
        let e = r.provider_for_user("openai", &elsewhere).unwrap_err();
        assert!(
            e.to_string().contains("not sent to a base URL you chose"),
            "{e}"
        );
        let c = r
            .provider_for_user(
                "openai",
                &UserProvider {
                    api_key: Some("sk-mine"),
                    ..elsewhere
                },
            )
            .unwrap();
        assert_eq!(c.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(c.api_key.as_deref(), Some("sk-mine"));
    }
}
