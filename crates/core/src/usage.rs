//! Usage and cost accounting.
//!
//! Every counter only grows, so the effect of one executor is exactly `after.delta_since(before)`;
//! the tool-batch merge adds those deltas to the base (LobeHub adds absolute totals and counts the
//! base once per tool). Money is kept as integer nano-dollars so sums are exact and order-free.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Add, AddAssign};
use std::sync::Arc;

/// An amount in US dollars, stored as integer nanodollars. On the wire it is a JSON number of
/// dollars (`0.0125`); values round-trip exactly up to about 9 million dollars.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Usd {
    nanos: u64,
}

#[cfg(feature = "schemars")]
impl schemars::JsonSchema for Usd {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Usd".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "number",
            "minimum": 0,
            "description": "US dollars"
        })
    }
}

impl Usd {
    /// Zero dollars.
    pub const ZERO: Usd = Usd { nanos: 0 };

    /// From integer nanodollars.
    pub const fn from_nanos(nanos: u64) -> Self {
        Self { nanos }
    }

    /// From a dollar amount; negative, NaN and infinite amounts become zero.
    pub fn from_dollars(dollars: f64) -> Self {
        if dollars.is_finite() && dollars > 0.0 {
            // Saturating float-to-int conversion is the intended clamp here.
            Self {
                nanos: (dollars * 1e9).round() as u64,
            }
        } else {
            Self::ZERO
        }
    }

    /// Integer nanodollars.
    pub const fn nanos(self) -> u64 {
        self.nanos
    }

    /// Dollars as a float (for display and the wire).
    pub fn dollars(self) -> f64 {
        self.nanos as f64 / 1e9
    }

    /// `self - other`, floored at zero.
    pub fn saturating_sub(self, other: Usd) -> Usd {
        Usd::from_nanos(self.nanos.saturating_sub(other.nanos))
    }

    /// Whether this is zero.
    pub fn is_zero(self) -> bool {
        self.nanos == 0
    }
}

impl Add for Usd {
    type Output = Usd;
    fn add(self, rhs: Usd) -> Usd {
        Usd::from_nanos(self.nanos.saturating_add(rhs.nanos))
    }
}

impl AddAssign for Usd {
    fn add_assign(&mut self, rhs: Usd) {
        *self = *self + rhs;
    }
}

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6} USD", self.dollars())
    }
}

impl Serialize for Usd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(self.dollars())
    }
}

impl<'de> Deserialize<'de> for Usd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        if !v.is_finite() || v < 0.0 {
            return Err(serde::de::Error::custom(format!(
                "a USD amount must be a non-negative number, got {v}"
            )));
        }
        Ok(Usd::from_dollars(v))
    }
}

/// What a model costs, in USD per million tokens: from the model catalog, or configured (the
/// configuration file's `[prices."provider/model"]`, an agent's or a request's `prices`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Uncached input.
    pub input: f64,
    /// Output (reasoning included).
    pub output: f64,
    /// Input read from the prompt cache (the input price when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input written to the prompt cache (the input price when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Prices {
    /// The cost of `usage` (whose `input` includes cached reads and writes).
    pub fn cost(&self, usage: &TokenUsage) -> Usd {
        let fresh = usage
            .input
            .saturating_sub(usage.cached_read)
            .saturating_sub(usage.cache_write);
        let dollars = (fresh as f64 * self.input
            + usage.cached_read as f64 * self.cache_read.unwrap_or(self.input)
            + usage.cache_write as f64 * self.cache_write.unwrap_or(self.input)
            + usage.output as f64 * self.output)
            / 1e6;
        Usd::from_dollars(dollars)
    }

    /// Whether every price is a finite, non-negative number.
    pub fn valid(&self) -> bool {
        [
            Some(self.input),
            Some(self.output),
            self.cache_read,
            self.cache_write,
        ]
        .into_iter()
        .flatten()
        .all(|p| p.is_finite() && p >= 0.0)
    }
}

/// Token counts of one model call (or a sum of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct TokenUsage {
    /// Input tokens, including cached ones.
    pub input: u64,
    /// Output tokens, including reasoning.
    pub output: u64,
    /// input + output as reported by the provider.
    pub total: u64,
    /// Input tokens served from the provider's prompt cache.
    pub cached_read: u64,
    /// Input tokens written to the provider's prompt cache.
    pub cache_write: u64,
    /// Output tokens spent on reasoning.
    pub reasoning: u64,
}

impl TokenUsage {
    /// Field-wise sum.
    pub fn add(&mut self, o: &TokenUsage) {
        self.input += o.input;
        self.output += o.output;
        self.total += o.total;
        self.cached_read += o.cached_read;
        self.cache_write += o.cache_write;
        self.reasoning += o.reasoning;
    }

    /// Field-wise `self - base`, floored at zero.
    pub fn delta_since(&self, base: &TokenUsage) -> TokenUsage {
        TokenUsage {
            input: self.input.saturating_sub(base.input),
            output: self.output.saturating_sub(base.output),
            total: self.total.saturating_sub(base.total),
            cached_read: self.cached_read.saturating_sub(base.cached_read),
            cache_write: self.cache_write.saturating_sub(base.cache_write),
            reasoning: self.reasoning.saturating_sub(base.reasoning),
        }
    }
}

/// Calls and tokens attributed to one model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ModelUsage {
    /// Number of calls.
    pub calls: u64,
    /// Tokens of those calls.
    pub tokens: TokenUsage,
    /// Wall time spent in those calls.
    pub time_ms: u64,
}

/// Calls, failures and time attributed to one tool (or all tools).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct ToolUsage {
    /// Number of calls.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Wall time spent executing.
    pub time_ms: u64,
}

impl ToolUsage {
    fn add(&mut self, o: &ToolUsage) {
        self.calls += o.calls;
        self.errors += o.errors;
        self.time_ms += o.time_ms;
    }

    fn delta_since(&self, b: &ToolUsage) -> ToolUsage {
        ToolUsage {
            calls: self.calls.saturating_sub(b.calls),
            errors: self.errors.saturating_sub(b.errors),
            time_ms: self.time_ms.saturating_sub(b.time_ms),
        }
    }
}

impl ModelUsage {
    fn add(&mut self, o: &ModelUsage) {
        self.calls += o.calls;
        self.tokens.add(&o.tokens);
        self.time_ms += o.time_ms;
    }

    fn delta_since(&self, b: &ModelUsage) -> ModelUsage {
        ModelUsage {
            calls: self.calls.saturating_sub(b.calls),
            tokens: self.tokens.delta_since(&b.tokens),
            time_ms: self.time_ms.saturating_sub(b.time_ms),
        }
    }
}

/// Requests made to a human.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct HumanUsage {
    /// Approval requests (one per parked batch).
    pub approval_requests: u64,
    /// Free-text prompts.
    pub prompt_requests: u64,
    /// Selection prompts.
    pub select_requests: u64,
}

impl HumanUsage {
    fn add(&mut self, o: &HumanUsage) {
        self.approval_requests += o.approval_requests;
        self.prompt_requests += o.prompt_requests;
        self.select_requests += o.select_requests;
    }

    fn delta_since(&self, b: &HumanUsage) -> HumanUsage {
        HumanUsage {
            approval_requests: self.approval_requests.saturating_sub(b.approval_requests),
            prompt_requests: self.prompt_requests.saturating_sub(b.prompt_requests),
            select_requests: self.select_requests.saturating_sub(b.select_requests),
        }
    }
}

/// Everything an operation consumed, in totals and per model / per tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Usage {
    /// All model calls.
    pub llm: ModelUsage,
    /// Per model, keyed `provider/model`.
    pub by_model: BTreeMap<Arc<str>, ModelUsage>,
    /// All tool calls.
    pub tools: ToolUsage,
    /// Per tool, keyed `identifier/api`.
    pub by_tool: BTreeMap<Arc<str>, ToolUsage>,
    /// Human interaction.
    pub human: HumanUsage,
}

/// Update the entry for `key`, allocating the key only when it is new (the hot path records
/// into existing entries).
fn update<T: Default>(map: &mut BTreeMap<Arc<str>, T>, key: &str, f: impl FnOnce(&mut T)) {
    match map.get_mut(key) {
        Some(v) => f(v),
        None => {
            let mut v = T::default();
            f(&mut v);
            map.insert(Arc::from(key), v);
        }
    }
}

fn merge_map<T: Default>(
    into: &mut BTreeMap<Arc<str>, T>,
    from: &BTreeMap<Arc<str>, T>,
    add: fn(&mut T, &T),
) {
    for (k, v) in from {
        add(into.entry(k.clone()).or_default(), v);
    }
}

fn delta_map<T: Default + PartialEq + Clone>(
    now: &BTreeMap<Arc<str>, T>,
    base: &BTreeMap<Arc<str>, T>,
    sub: fn(&T, &T) -> T,
) -> BTreeMap<Arc<str>, T> {
    let zero = T::default();
    now.iter()
        .filter_map(|(k, v)| {
            let d = sub(v, base.get(k).unwrap_or(&zero));
            (d != zero).then(|| (k.clone(), d))
        })
        .collect()
}

impl Usage {
    /// Record one model call.
    pub fn record_llm(&mut self, model_key: &str, tokens: &TokenUsage, time_ms: u64) {
        let one = ModelUsage {
            calls: 1,
            tokens: *tokens,
            time_ms,
        };
        self.llm.add(&one);
        update(&mut self.by_model, model_key, |m| m.add(&one));
    }

    /// Record one tool call.
    pub fn record_tool(&mut self, tool_key: &str, success: bool, time_ms: u64) {
        let one = ToolUsage {
            calls: 1,
            errors: u64::from(!success),
            time_ms,
        };
        self.tools.add(&one);
        update(&mut self.by_tool, tool_key, |t| t.add(&one));
    }

    /// Add another usage (typically a delta) to this one.
    pub fn add(&mut self, o: &Usage) {
        self.llm.add(&o.llm);
        merge_map(&mut self.by_model, &o.by_model, ModelUsage::add);
        self.tools.add(&o.tools);
        merge_map(&mut self.by_tool, &o.by_tool, ToolUsage::add);
        self.human.add(&o.human);
    }

    /// What was added since `base` (counters only grow, so this is exact).
    pub fn delta_since(&self, base: &Usage) -> Usage {
        Usage {
            llm: self.llm.delta_since(&base.llm),
            by_model: delta_map(&self.by_model, &base.by_model, ModelUsage::delta_since),
            tools: self.tools.delta_since(&base.tools),
            by_tool: delta_map(&self.by_tool, &base.by_tool, ToolUsage::delta_since),
            human: self.human.delta_since(&base.human),
        }
    }
}

/// Money spent by an operation, in totals and per model / per tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct Cost {
    /// Everything.
    pub total: Usd,
    /// All model calls.
    pub llm: Usd,
    /// All tool calls.
    pub tools: Usd,
    /// Per model, keyed `provider/model`.
    pub by_model: BTreeMap<Arc<str>, Usd>,
    /// Per tool, keyed `identifier/api`.
    pub by_tool: BTreeMap<Arc<str>, Usd>,
}

fn add_usd(a: &mut Usd, b: &Usd) {
    *a += *b;
}

fn sub_usd(a: &Usd, b: &Usd) -> Usd {
    a.saturating_sub(*b)
}

impl Cost {
    /// Record the cost of one model call.
    pub fn record_llm(&mut self, model_key: &str, cost: Usd) {
        if cost.is_zero() {
            return;
        }
        self.llm += cost;
        self.total += cost;
        update(&mut self.by_model, model_key, |c| *c += cost);
    }

    /// Record the cost of one tool call.
    pub fn record_tool(&mut self, tool_key: &str, cost: Usd) {
        if cost.is_zero() {
            return;
        }
        self.tools += cost;
        self.total += cost;
        update(&mut self.by_tool, tool_key, |c| *c += cost);
    }

    /// Add another cost (typically a delta) to this one.
    pub fn add(&mut self, o: &Cost) {
        self.total += o.total;
        self.llm += o.llm;
        self.tools += o.tools;
        merge_map(&mut self.by_model, &o.by_model, add_usd);
        merge_map(&mut self.by_tool, &o.by_tool, add_usd);
    }

    /// What was added since `base`.
    pub fn delta_since(&self, base: &Cost) -> Cost {
        Cost {
            total: self.total.saturating_sub(base.total),
            llm: self.llm.saturating_sub(base.llm),
            tools: self.tools.saturating_sub(base.tools),
            by_model: delta_map(&self.by_model, &base.by_model, sub_usd),
            by_tool: delta_map(&self.by_tool, &base.by_tool, sub_usd),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usd_round_trips_through_json() {
        for nanos in [0u64, 1, 999, 12_345_678, 9_000_000_000_000_000] {
            let v = Usd::from_nanos(nanos);
            let json = serde_json::to_string(&v).unwrap();
            let back: Usd = serde_json::from_str(&json).unwrap();
            assert_eq!(back, v, "{json}");
        }
    }

    #[test]
    fn negative_usd_is_rejected_with_a_message() {
        let err = serde_json::from_str::<Usd>("-1.5").unwrap_err().to_string();
        assert!(err.contains("non-negative"), "{err}");
    }

    #[test]
    fn delta_then_add_restores() {
        let mut base = Usage::default();
        base.record_llm(
            "p/m",
            &TokenUsage {
                input: 10,
                output: 5,
                total: 15,
                ..Default::default()
            },
            3,
        );
        let mut after = base.clone();
        after.record_tool("calc/add", true, 7);
        after.record_tool("calc/add", false, 1);
        let d = after.delta_since(&base);
        assert_eq!(d.tools.calls, 2);
        assert_eq!(d.tools.errors, 1);
        assert!(d.by_model.is_empty());
        let mut re = base.clone();
        re.add(&d);
        assert_eq!(re, after);
    }
}
