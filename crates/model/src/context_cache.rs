//! Gemini's explicit context caches, for providers configured with the
//! `context_cache_min_tokens` quirk. Gemini caches repeated prefixes on its own (implicit
//! caching, no guarantee of a hit); an explicit cache is a `cachedContents` resource that holds
//! a request's long-lived part, and every request that names it is billed at the cached price
//! for that part. rein puts there what stays the same for a whole operation and beyond: the
//! system instruction, the tool declarations and the tool config. A request naming a cache must
//! not set those three itself (Gemini refuses it), so they move out of the body.
//!
//! Caches are kept per provider, by what they hold, for their time to live (five minutes, an
//! hour with the prompt cache's `long_ttl`), and made again when they run out. Everything here
//! fails open: a cache Gemini will not make (too small, a model without caching) is not asked
//! for again while it would have lived, and a request whose cache has gone is sent again whole.

use crate::transport::{HttpCall, Method};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The body fields a cache holds and a request naming one must not set.
const HELD: [&str; 3] = ["systemInstruction", "tools", "toolConfig"];

/// A cache is not named once it has less than this left to live: a request that starts just
/// before it expires would find it gone.
const MARGIN: Duration = Duration::from_secs(30);

/// The explicit caches of one provider.
#[derive(Default)]
pub(crate) struct ContextCaches {
    entries: Mutex<HashMap<u64, Entry>>,
}

/// A cache by what it holds.
#[derive(Clone, Debug)]
struct Entry {
    /// `cachedContents/…`; `None`: Gemini would not make it.
    name: Option<String>,
    /// When to make it (or ask) again.
    until: Instant,
}

/// The cache a call names.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Named {
    key: u64,
}

/// What [`ContextCaches::prepare`] needs of the provider.
pub(crate) struct Setup<'a> {
    /// The model id at the provider.
    pub model: &'a str,
    /// Requests whose held part is estimated at fewer tokens are sent whole.
    pub min_tokens: u64,
    /// How long a cache lives.
    pub ttl: Duration,
}

impl ContextCaches {
    /// The `cachedContents` body for `call`'s held part, its key, and whether it is worth a
    /// cache: `None` when the call has nothing to hold, withdraws or forces the tools (a
    /// one-off tool config not worth a cache of its own), or is estimated below the minimum.
    fn held(setup: &Setup<'_>, body: &Value) -> Option<(u64, Value)> {
        let mode = &body["toolConfig"]["functionCallingConfig"]["mode"];
        if !(mode.is_null() || mode == "AUTO") {
            return None;
        }
        let mut held = serde_json::Map::new();
        for field in HELD {
            if let Some(v) = body.get(field) {
                held.insert(field.to_owned(), v.clone());
            }
        }
        if !held.contains_key("systemInstruction") && !held.contains_key("tools") {
            return None;
        }
        let text = Value::Object(held.clone()).to_string();
        // About four bytes a token: Gemini counts them itself and refuses a cache that is too
        // small, which only costs one refused call per prefix.
        if (text.len() as u64) / 4 < setup.min_tokens {
            return None;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        setup.model.hash(&mut hasher);
        text.hash(&mut hasher);
        held.insert("model".into(), json!(format!("models/{}", setup.model)));
        held.insert("ttl".into(), json!(format!("{}s", setup.ttl.as_secs())));
        Some((hasher.finish(), Value::Object(held)))
    }

    /// Make `call` (a Gemini `generateContent` call) name a cache of its system instruction,
    /// tools and tool config, making one with `create` when none lives: `Some` when it does.
    /// `create` posts a `cachedContents` body and returns the resource's name.
    pub(crate) async fn prepare<F, Fut>(
        &self,
        setup: &Setup<'_>,
        call: &mut HttpCall,
        create: F,
    ) -> Option<Named>
    where
        F: FnOnce(HttpCall) -> Fut,
        Fut: std::future::Future<Output = Result<String, crate::ModelError>>,
    {
        let (key, held) = Self::held(setup, &call.body)?;
        let now = Instant::now();
        let known = self.lock().get(&key).cloned();
        let name = match known {
            Some(e) if e.until > now + MARGIN => e.name?,
            _ => {
                let request = HttpCall {
                    method: Method::Post,
                    base_url: call.base_url.clone(),
                    path: "/cachedContents".into(),
                    headers: call.headers.clone(),
                    body: held,
                    raw: None,
                };
                let made = create(request).await;
                let until = now + setup.ttl;
                // Forget what has run out (a server sees many prefixes over its life).
                self.lock().retain(|_, e| e.until > now);
                match made {
                    Ok(name) => {
                        self.lock().insert(
                            key,
                            Entry {
                                name: Some(name.clone()),
                                until,
                            },
                        );
                        name
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, model = setup.model, "Gemini made no context cache; sending the prefix whole");
                        self.lock().insert(key, Entry { name: None, until });
                        return None;
                    }
                }
            }
        };
        if let Some(body) = call.body.as_object_mut() {
            for field in HELD {
                body.remove(field);
            }
            body.insert("cachedContent".into(), Value::String(name));
        }
        Some(Named { key })
    }

    /// The cache `named` is gone (Gemini said it does not know it): make it again next time.
    pub(crate) fn forget(&self, named: Named) {
        self.lock().remove(&named.key);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The name in a `cachedContents` response.
pub(crate) fn created_name(body: &Value) -> Option<String> {
    body["name"].as_str().map(str::to_owned)
}
