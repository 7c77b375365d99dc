//! Cached tokens priced as the catalog says, on every protocol that reports them: an
//! operation of two model calls, the first answered with a provider's recorded response
//! (prompt-cache reads, and on Anthropic writes), the second with a plain answer. The
//! operation's usage is the sum of what the responses reported (normalized as the fixture's
//! notes say), its cost the catalog's prices applied to it (the prices are written out here,
//! so a catalog or normalization change shows), and what the cache saved follows.

use rein_core::state::ModelRef;
use rein_core::usage::TokenUsage;
use rein_model::testing::streams::{gemini, responses, stream};
use rein_model::testing::{Canned, serve};
use rein_model::{Catalog, Protocol};
use rein_operation::pricing::Pricing;
use rein_operation::{Driver, RunEnd, StartOptions};
use rein_store::Store;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::common;

/// A provider's recorded stream and the usage its notes say it normalizes to.
fn fixture(name: &str) -> (Canned, TokenUsage) {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../model/tests/fixtures/providers/"
    );
    let body = std::fs::read_to_string(format!("{dir}{name}.sse")).unwrap();
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{dir}{name}.meta.json")).unwrap())
            .unwrap();
    let u = &meta["expected"]["usage"];
    let n = |k: &str| u[k].as_u64().unwrap_or(0);
    let usage = TokenUsage {
        input: n("input_tokens"),
        output: n("output_tokens"),
        total: n("total_tokens"),
        cached_read: n("cached_input_tokens"),
        cache_write: n("cache_creation_input_tokens"),
        reasoning: n("reasoning_tokens"),
    };
    (stream(body, "text/event-stream"), usage)
}

/// What the scripted helpers' streams report: 100 input tokens, 20 output, nothing cached.
const PLAIN: TokenUsage = TokenUsage {
    input: 100,
    output: 20,
    total: 120,
    cached_read: 0,
    cache_write: 0,
    reasoning: 0,
};

struct Case {
    protocol: Protocol,
    provider: &'static str,
    model: &'static str,
    path: &'static str,
    /// The two responses and their usage.
    calls: [(Canned, TokenUsage); 2],
    /// The catalog's prices in USD per million: input, output, cache read, cache write.
    prices: [f64; 4],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            protocol: Protocol::Anthropic,
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            path: "/v1",
            calls: [
                fixture("anthropic/stream-thinking-text-tool-use"),
                fixture("anthropic/stream-text-end-turn"),
            ],
            prices: [3.0, 15.0, 0.3, 3.75],
        },
        Case {
            protocol: Protocol::OpenaiChat,
            provider: "openai",
            model: "gpt-4o-mini",
            path: "/v1",
            calls: [
                (
                    Canned::openai_tools(&[("c1", "get_weather", r#"{"city":"Paris"}"#)]),
                    PLAIN,
                ),
                fixture("openai-chat/stream-text-usage"),
            ],
            prices: [0.15, 0.6, 0.075, 0.0],
        },
        Case {
            protocol: Protocol::OpenaiResponses,
            provider: "openai-responses",
            model: "o4-mini",
            path: "/v1",
            calls: [
                fixture("openai-responses/stream-reasoning-text-function-call"),
                (responses(None, "Sunny.", &[]), PLAIN),
            ],
            prices: [1.1, 4.4, 0.275, 0.0],
        },
        Case {
            protocol: Protocol::Gemini,
            provider: "gemini",
            model: "gemini-2.5-flash",
            path: "/v1beta",
            calls: [
                fixture("gemini/stream-thought-text-function-call"),
                (gemini(&[json!({"text": "Sunny."})]), PLAIN),
            ],
            prices: [0.3, 2.5, 0.075, 0.0],
        },
    ]
}

/// `usage` at `prices` (per million): uncached input, cache reads and writes at their own
/// prices, output (reasoning included) at the output price.
fn priced(usage: &TokenUsage, [input, output, read, write]: [f64; 4]) -> f64 {
    let uncached = usage.input - usage.cached_read - usage.cache_write;
    (uncached as f64 * input
        + usage.cached_read as f64 * read
        + usage.cache_write as f64 * write
        + usage.output as f64 * output)
        / 1e6
}

#[tokio::test]
async fn cached_usage_of_every_protocol_is_priced_by_the_catalog_and_summed_on_the_operation() {
    for case in cases() {
        let name = case.provider;
        let mut expected = TokenUsage::default();
        let mut cost = 0.0;
        let mut canned = Vec::new();
        for (response, usage) in case.calls {
            expected.add(&usage);
            cost += priced(&usage, case.prices);
            canned.push(response);
        }
        let server = serve(canned, 11).await;
        let provider = common::provider_at(
            case.provider,
            case.protocol,
            &format!("{}{}", server.base, case.path),
        );
        let (_, store) = common::temp_store("rein-cache-pricing").await;
        let catalog = Arc::new(Catalog::builtin().unwrap());
        let d = Driver::new(
            store.clone(),
            Arc::new(provider),
            ModelRef {
                provider: case.provider.into(),
                model: case.model.into(),
            },
            Arc::clone(&catalog),
        );
        let id = d
            .start("What is the weather in Paris?", &StartOptions::default())
            .await
            .unwrap();
        let end = d.run(id).await.unwrap();
        assert!(matches!(end, RunEnd::Done { .. }), "{name}: {end:?}");
        for r in server.requests() {
            assert!(r.refused.is_none(), "{name}: {:?}", r.refused);
        }
        let op = store.load_operation(id).await.unwrap().unwrap();
        let tokens = op.state.usage.llm.tokens;
        assert_eq!(
            (
                tokens.input,
                tokens.output,
                tokens.cached_read,
                tokens.cache_write
            ),
            (
                expected.input,
                expected.output,
                expected.cached_read,
                expected.cache_write
            ),
            "{name}"
        );
        assert!(
            expected.cached_read > 0,
            "{name}: the fixture reads the cache"
        );
        let spent = op.state.cost.total.dollars();
        assert!((spent - cost).abs() < 1e-8, "{name}: {spent} != {cost}");
        // What the cache saved: every cached token at the input price, less what they cost.
        let [input, _, read, write] = case.prices;
        let saved = (expected.cached_read as f64 * (input - read)
            + expected.cache_write as f64 * (input - write))
            / 1e6;
        let cache = Pricing::new(catalog, &op.spec).cache_use(&op.state.usage);
        assert_eq!(cache.input_tokens, expected.input, "{name}");
        assert_eq!(cache.read_tokens, expected.cached_read, "{name}");
        assert!(
            (cache.saved.dollars() - saved.max(0.0)).abs() < 1e-8,
            "{name}: {} != {saved}",
            cache.saved
        );
    }
}
