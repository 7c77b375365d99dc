//! What a model call costs, and whether an operation's spend caps can be kept at all. The
//! provider's own figure wins when its response carries one (gateways such as OpenRouter
//! report `usage.cost`); else the price the operation was started with for that model (the
//! configuration file's `[prices."provider/model"]`, the agent's or the request's `prices`,
//! written in its spec); else the model catalog's. A cost limit with a model that has none of
//! these would be a limit that never trips, so such an operation is refused before anything
//! is written ([`unpriced`]).

use rein_core::spec::OperationSpec;
use rein_core::state::ModelRef;
use rein_core::usage::Prices;
use rein_core::{TokenUsage, Usd};
use rein_model::Catalog;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Prices for one operation: its own, then the catalog's.
#[derive(Clone, Debug)]
pub struct Pricing {
    catalog: Arc<Catalog>,
    own: Arc<BTreeMap<String, Prices>>,
}

impl Pricing {
    /// The prices `spec` was started with, over `catalog`.
    pub fn new(catalog: Arc<Catalog>, spec: &OperationSpec) -> Self {
        Self {
            catalog,
            own: Arc::new(spec.prices.clone()),
        }
    }

    /// The prices of `provider/model`, if any are known.
    pub fn prices(&self, provider: &str, model: &str) -> Option<Prices> {
        self.own
            .get(&format!("{provider}/{model}"))
            .copied()
            .or_else(|| self.catalog.lookup(provider, model).map(|m| m.prices))
    }

    /// What `usage` of `provider/model` cost: what the provider reported, else its price;
    /// `None` when neither is known.
    pub fn cost(
        &self,
        provider: &str,
        model: &str,
        usage: &TokenUsage,
        reported: Option<Usd>,
    ) -> Option<Usd> {
        reported.or_else(|| self.prices(provider, model).map(|p| p.cost(usage)))
    }
}

/// What the providers' prompt caches did for an operation's model calls.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
pub struct CacheUse {
    /// Input tokens of every model call.
    pub input_tokens: u64,
    /// Of those, read from the provider's cache.
    pub read_tokens: u64,
    /// Of those, written to it.
    pub written_tokens: u64,
    /// What the calls would have cost with every cached token at the input price, less what
    /// they cost (cache writes priced above the input count against it; never below zero;
    /// models without a price count nothing).
    #[schemars(with = "f64")]
    pub saved: Usd,
}

impl Pricing {
    /// What the prompt cache saved on `usage` of `provider/model`: its cost with every cached
    /// token at the input price, less its cost (cache writes priced above the input count
    /// against it; never below zero; zero without a price).
    pub fn cache_saved(&self, provider: &str, model: &str, usage: &TokenUsage) -> Usd {
        let Some(p) = self.prices(provider, model) else {
            return Usd::ZERO;
        };
        let plain = TokenUsage {
            cached_read: 0,
            cache_write: 0,
            ..*usage
        };
        p.cost(&plain).saturating_sub(p.cost(usage))
    }

    /// What the prompt caches did for the model calls of `usage`.
    pub fn cache_use(&self, usage: &rein_core::usage::Usage) -> CacheUse {
        let t = &usage.llm.tokens;
        let mut plain = Usd::ZERO;
        let mut spent = Usd::ZERO;
        for (key, m) in &usage.by_model {
            let Some((provider, model)) = key.split_once('/') else {
                continue;
            };
            let Some(p) = self.prices(provider, model) else {
                continue;
            };
            // Summed before the floor: a model whose writes cost more than its reads saved
            // takes from what the others saved.
            plain += p.cost(&TokenUsage {
                cached_read: 0,
                cache_write: 0,
                ..m.tokens
            });
            spent += p.cost(&m.tokens);
        }
        CacheUse {
            input_tokens: t.input,
            read_tokens: t.cached_read,
            written_tokens: t.cache_write,
            saved: plain.saturating_sub(spent),
        }
    }
}

/// A spend cap the operation could not keep: the limit and the model without a price.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{limit} is set, but model {model} has no price, so its calls would count as $0 and the limit would never stop them; price it with [prices.\"{model}\"] input = …, output = … (USD per million tokens) in the configuration file, or `prices` on the agent or the request"
)]
pub struct Unpriced {
    /// `provider/model`.
    pub model: String,
    /// Which limit (`cost_limit`, `model_call_cost_limit`).
    pub limit: &'static str,
}

/// The first model `spec` would call that has no price while one of its spend caps is set;
/// `None` when every cap can be kept (or none is set). Its own model, its compression model,
/// and for a sub-agent what its tree may still spend all count.
pub fn unpriced(spec: &OperationSpec, catalog: &Arc<Catalog>) -> Option<Unpriced> {
    let parent = spec.delegation.as_ref().map(|d| &d.parent_budget);
    let limit = if spec.budget.max_cost.is_some() || parent.is_some_and(|b| b.max_cost.is_some()) {
        "cost_limit"
    } else if spec.budget.max_model_call_cost.is_some() {
        "model_call_cost_limit"
    } else {
        return None;
    };
    let pricing = Pricing::new(Arc::clone(catalog), spec);
    let priced = |m: &ModelRef| pricing.prices(&m.provider, &m.model).is_some();
    spec.model
        .iter()
        .chain(spec.compression_model.iter())
        .find(|m| !priced(m))
        .map(|m| Unpriced {
            model: m.key(),
            limit,
        })
}
