//! The models of a user's operations on a server: providers made with the base URLs and API
//! keys the user brought ([`rein_store::OwnProviders`]), over the process's own; the process's
//! keys serve users who brought none only while it lends them ([`OwnProviderKeys::lend_keys`]).
//! A run loads its owner's providers once, when it starts, and opens their sealed keys in
//! memory only; a key that does not open refuses only the provider it is for.

use crate::models::{ModelSource, ModelUnavailable};
use crate::secrets::SecretKey;
use rein_core::state::ModelRef;
use rein_model::registry::canonical;
use rein_model::{ModelProvider, UserProvider};
use rein_store::{OwnProvider, OwnProviders, StoreError};
use std::collections::BTreeMap;
use std::sync::Arc;

/// What a provider id looks like (`openai`, `azure`, `my-gateway`).
pub const PROVIDER_ID_PATTERN: &str = "^[a-z0-9][a-z0-9._-]{0,63}$";

/// The longest API key a user may store, in bytes.
pub const MAX_KEY_BYTES: usize = 4096;
/// The longest base URL a user may store, in bytes.
pub const MAX_BASE_URL_BYTES: usize = 2048;

/// How a process serves users' own providers.
#[derive(Clone, Debug)]
pub struct OwnProviderKeys {
    /// Opens users' stored keys (`None`: this process cannot; their providers are refused).
    pub secret: Option<SecretKey>,
    /// Whether this process's own keys serve a user who stored none for a provider.
    pub lend_keys: bool,
    /// Whether users may point a provider at a base URL of their own (the server then sends
    /// requests wherever they say).
    pub base_urls: bool,
}

/// Where `owner`'s model calls go in a process serving users' own providers as `keys` says:
/// their own providers over `base` (just `base` without `keys`, or for no owner).
pub async fn models_for(
    keys: Option<&OwnProviderKeys>,
    store: &(dyn OwnProviders + Sync),
    base: &Arc<dyn ModelSource>,
    owner: Option<&str>,
) -> Result<Arc<dyn ModelSource>, StoreError> {
    match keys {
        Some(keys) => keys.models(store, base, owner).await,
        None => Ok(Arc::clone(base)),
    }
}

/// What a user brings for one provider: their API key, their base URL, or both.
#[derive(Clone, Default)]
pub struct Bring {
    /// Their API key.
    pub api_key: Option<String>,
    /// Their base URL (`http://` or `https://`).
    pub base_url: Option<String>,
}

impl std::fmt::Debug for Bring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bring")
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .field("base_url", &self.base_url)
            .finish()
    }
}

/// Why a user's provider is not stored.
#[derive(Debug, thiserror::Error)]
pub enum BringRefusal {
    /// This process keeps no users' providers (no secret key to seal them with).
    #[error("this server does not keep users' own providers")]
    NotServed,
    /// Neither a key nor a base URL.
    #[error("give an API key, a base URL, or both")]
    Empty,
    /// A provider id that is not one.
    #[error("`{0}` is not a provider id (lowercase letters, digits, `-`, `_`, `.`; at most 64)")]
    BadProvider(String),
    /// A provider this server cannot make, even with the key.
    #[error("provider `{provider}` cannot be used here: {reason}")]
    UnknownProvider {
        /// The id.
        provider: String,
        /// Why (an unknown id needs a base URL).
        reason: String,
    },
    /// An API key that cannot be one.
    #[error("the API key {0}")]
    BadKey(&'static str),
    /// A base URL that cannot be one.
    #[error("base URL `{given}`: {why}")]
    BadBaseUrl {
        /// What was given (cut).
        given: String,
        /// Why.
        why: &'static str,
    },
    /// The admin does not let users choose base URLs.
    #[error("this server does not let users choose a provider's base URL")]
    BaseUrlsOff,
    /// Sealing failed.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Refuse a provider id that is not one ([`PROVIDER_ID_PATTERN`]).
pub fn check_provider_id(id: &str) -> Result<(), BringRefusal> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c));
    if ok {
        Ok(())
    } else {
        Err(BringRefusal::BadProvider(id.chars().take(80).collect()))
    }
}

fn check_key(key: &str) -> Result<(), BringRefusal> {
    if key.is_empty() {
        return Err(BringRefusal::BadKey("is empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(BringRefusal::BadKey("is longer than 4096 bytes"));
    }
    // It goes into a request header.
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BringRefusal::BadKey(
            "has spaces, control or non-ASCII characters",
        ));
    }
    Ok(())
}

fn check_base_url(url: &str) -> Result<(), BringRefusal> {
    let bad = |why| BringRefusal::BadBaseUrl {
        given: url.chars().take(120).collect(),
        why,
    };
    if url.len() > MAX_BASE_URL_BYTES {
        return Err(bad("longer than 2048 bytes"));
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| bad("it must start with http:// or https://"))?;
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if host.is_empty() || host.contains('@') {
        return Err(bad("it must name a host, without credentials"));
    }
    if !url.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("it has spaces, control or non-ASCII characters"));
    }
    Ok(())
}

impl OwnProviderKeys {
    /// Store what `owner` brings for `provider` (its canonical id), replacing what they had:
    /// the key sealed, checked first that this process could make the provider with it.
    pub async fn bring(
        &self,
        store: &(dyn OwnProviders + Sync),
        base: &dyn ModelSource,
        owner: &str,
        provider: &str,
        bring: Bring,
    ) -> Result<OwnProvider, BringRefusal> {
        let Some(secret) = &self.secret else {
            return Err(BringRefusal::NotServed);
        };
        check_provider_id(provider)?;
        let provider = canonical(provider);
        if bring.api_key.is_none() && bring.base_url.is_none() {
            return Err(BringRefusal::Empty);
        }
        if let Some(key) = &bring.api_key {
            check_key(key)?;
        }
        if let Some(url) = &bring.base_url {
            if !self.base_urls {
                return Err(BringRefusal::BaseUrlsOff);
            }
            check_base_url(url)?;
        }
        // The one resolution operations use decides whether the provider can be made.
        let probe = ModelRef {
            provider: provider.into(),
            model: "model".into(),
        };
        let probe_key = bring.api_key.as_deref().or(Some("key"));
        base.provider_for_user(
            &probe,
            &UserProvider {
                base_url: bring.base_url.as_deref(),
                api_key: probe_key,
                lend_key: false,
            },
        )
        .map_err(|e| BringRefusal::UnknownProvider {
            provider: provider.to_owned(),
            reason: e.reason,
        })?;
        let key = bring
            .api_key
            .as_deref()
            .map(|k| secret.seal(owner, provider, k))
            .transpose()?;
        let own = OwnProvider {
            provider: provider.to_owned(),
            base_url: bring.base_url,
            key,
            updated_at: chrono::Utc::now(),
        };
        store.put_own_provider(owner, &own).await?;
        Ok(own)
    }
}

/// Why stored keys were not moved to a new secret key.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    /// A stored key does not open under the current secret key.
    #[error(transparent)]
    Secret(#[from] crate::secrets::SecretError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Reseal every stored key from `old` to `new`, in one transaction; how many. A key sealed
/// with `new` already is left alone (a rotation run again), one that does not open under
/// `old` refuses the whole rotation, naming it.
pub async fn rotate(
    store: &(dyn OwnProviders + Sync),
    old: &SecretKey,
    new: &SecretKey,
) -> Result<u64, RotateError> {
    let mut moved = Vec::new();
    for stored in store.sealed_keys().await? {
        if stored.key.key_id == new.id() {
            continue;
        }
        let label = stored.place.label();
        let key = old.open(&stored.user_id, &label, &stored.key)?;
        moved.push(rein_store::Resealed {
            key: new.seal(&stored.user_id, &label, &key)?,
            user_id: stored.user_id,
            place: stored.place,
            was: stored.key.key_id,
        });
    }
    Ok(store.reseal(&moved).await?)
}

/// One provider as its user brought it, opened.
struct Opened {
    base_url: Option<String>,
    /// The key, or why it does not open.
    api_key: Option<Result<String, String>>,
}

impl OwnProviderKeys {
    /// The models of `owner`'s operations: `base` where they brought nothing and keys are lent.
    pub async fn models(
        &self,
        store: &(dyn OwnProviders + Sync),
        base: &Arc<dyn ModelSource>,
        owner: Option<&str>,
    ) -> Result<Arc<dyn ModelSource>, StoreError> {
        let Some(owner) = owner else {
            return Ok(Arc::clone(base));
        };
        let stored = store.own_providers(owner).await?;
        if stored.is_empty() && self.lend_keys {
            return Ok(Arc::clone(base));
        }
        let own = stored
            .into_iter()
            .map(|p| {
                let api_key = p.key.map(|sealed| match &self.secret {
                    Some(secret) => secret
                        .open(owner, &p.provider, &sealed)
                        .map_err(|e| e.to_string()),
                    None => Err(crate::secrets::SecretError::NoKey.to_string()),
                });
                let opened = Opened {
                    base_url: p.base_url,
                    api_key,
                };
                (p.provider, opened)
            })
            .collect();
        Ok(Arc::new(OwnerModels {
            base: Arc::clone(base),
            own,
            lend_keys: self.lend_keys,
        }))
    }
}

/// One owner's providers for one run.
struct OwnerModels {
    base: Arc<dyn ModelSource>,
    own: BTreeMap<String, Opened>,
    lend_keys: bool,
}

impl ModelSource for OwnerModels {
    fn provider(&self, model: &ModelRef) -> Result<Arc<dyn ModelProvider>, ModelUnavailable> {
        let Some(own) = self.own.get(canonical(&model.provider)) else {
            if self.lend_keys {
                return self.base.provider(model);
            }
            return self.base.provider_for_user(
                model,
                &UserProvider {
                    base_url: None,
                    api_key: None,
                    lend_key: false,
                },
            );
        };
        let api_key = match &own.api_key {
            Some(Ok(key)) => Some(key.as_str()),
            Some(Err(why)) => {
                return Err(ModelUnavailable {
                    model: model.key(),
                    reason: why.clone(),
                });
            }
            None => None,
        };
        self.base.provider_for_user(
            model,
            &UserProvider {
                base_url: own.base_url.as_deref(),
                api_key,
                lend_key: self.lend_keys,
            },
        )
    }
}
