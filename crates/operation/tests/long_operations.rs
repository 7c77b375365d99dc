//! A long operation on every native protocol: a model that reads page after page until its
//! context has to be compressed at least twice, then answers. The scripted server refuses
//! what each provider refuses (`rein_model::testing::validate`), so an invalid request after
//! a compression (no message, a result without its call, a first message that is not the
//! person's) fails the operation. Asserted on every request the operation sent: accepted, the
//! person's instruction carried verbatim; after each compression, the newest page verbatim.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::message::MessageKind;
use rein_core::state::ModelRef;
use rein_core::tool::ToolManifest;
use rein_model::registry::{ProviderConfig, Quirks};
use rein_model::testing::streams::{anthropic, gemini, ollama, responses};
use rein_model::testing::{Canned, serve};
use rein_model::transport::Timeouts;
use rein_model::{Catalog, Protocol, Provider, ReqwestTransport};
use rein_operation::{Driver, RunEnd, StartOptions, Tool, ToolContext};
use rein_store::{Effect, Store};
use serde_json::json;
use std::sync::Arc;

use crate::common;

/// Pages the model reads before it answers.
const PAGES: usize = 12;
/// Words on a page (about one token each): three pages fill half the 10,000-token window.
const WORDS: usize = 1_500;
const INSTRUCTION: &str = "Read every page, then tell me what they say.";
const ANSWER: &str = "Every page says word.";

/// Page `n`: its number, then [`WORDS`] words.
fn page_text(n: u64) -> String {
    format!("page {n}: {}", "word ".repeat(WORDS).trim_end())
}

/// Returns the page its `page` argument names.
struct Pages;

impl Tool for Pages {
    fn manifest(&self) -> ToolManifest {
        rein_core::testing::manifest("pages", &["read"])
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::Pure
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        let n = args["page"].as_u64().unwrap_or(0);
        async move { Ok(ToolOutput::ok(page_text(n))) }.boxed()
    }
}

/// A protocol as this test drives it.
struct Wire {
    protocol: Protocol,
    provider: &'static str,
    model: &'static str,
    /// Appended to the server's address to make the provider's base URL.
    path: &'static str,
    /// The model's turn reading page `n`.
    read: fn(usize) -> Canned,
    /// The model's text answer.
    answer: fn(&str) -> Canned,
}

fn wires() -> Vec<Wire> {
    vec![
        Wire {
            protocol: Protocol::OpenaiChat,
            provider: "openai",
            model: "gpt-4o-mini",
            path: "/v1",
            read: |n| {
                Canned::openai_tools(&[(
                    &format!("call_{n}"),
                    "pages__read",
                    &json!({ "page": n }).to_string(),
                )])
            },
            answer: Canned::openai_text,
        },
        Wire {
            protocol: Protocol::Anthropic,
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            path: "/v1",
            read: |n| {
                anthropic(
                    &[
                        json!({"text": format!("Reading page {n}.")}),
                        json!({"id": format!("toolu_{n}"), "name": "pages__read", "input": {"page": n}}),
                    ],
                    "tool_use",
                )
            },
            answer: |t| anthropic(&[json!({ "text": t })], "end_turn"),
        },
        Wire {
            protocol: Protocol::Gemini,
            provider: "gemini",
            model: "gemini-2.5-flash",
            path: "/v1beta",
            read: |n| {
                gemini(&[json!({"functionCall": {"name": "pages__read", "args": {"page": n}}})])
            },
            answer: |t| gemini(&[json!({ "text": t })]),
        },
        Wire {
            protocol: Protocol::Ollama,
            provider: "ollama",
            model: "qwen3:8b",
            path: "",
            read: |n| {
                ollama(
                    None,
                    "",
                    &[json!({"function": {"name": "pages__read", "arguments": {"page": n}}})],
                )
            },
            answer: |t| ollama(None, t, &[]),
        },
        Wire {
            protocol: Protocol::OpenaiResponses,
            provider: "openai-responses",
            model: "o4-mini",
            path: "/v1",
            read: |n| {
                responses(
                    Some("The next page."),
                    "",
                    &[(
                        &format!("call_{n}"),
                        "pages__read",
                        &json!({ "page": n }).to_string(),
                    )],
                )
            },
            answer: |t| responses(None, t, &[]),
        },
    ]
}

#[tokio::test]
async fn a_long_operation_compresses_twice_on_every_protocol_and_every_request_is_accepted() {
    for w in wires() {
        let mut script: Vec<Canned> = (1..=PAGES).map(w.read).collect();
        script.push((w.answer)(ANSWER));
        let server = serve(script, 11).await;
        // Summaries answer the requests that carry the summarizer's instructions.
        server.route(
            "You compress conversations",
            (1..=PAGES)
                .map(|k| (w.answer)(&format!("NOTES {k}: pages read so far say word.")))
                .collect(),
        );
        let config = ProviderConfig {
            id: w.provider.into(),
            protocol: w.protocol,
            base_url: format!("{}{}", server.base, w.path),
            api_key: Some("k".into()),
            headers: Default::default(),
            quirks: Quirks::default(),
        };
        let provider = Provider::new(
            config,
            Arc::new(ReqwestTransport::new(Timeouts::default()).unwrap()),
        );
        let (_, store) = common::temp_store("rein-long").await;
        let agent = rein_core::agent::GeneralChatAgentConfig {
            compression: rein_core::agent::CompressionConfig {
                window_tokens: 10_000,
                threshold_ratio: Some(0.55),
                ..Default::default()
            },
            ..Default::default()
        };
        let model = ModelRef {
            provider: w.provider.into(),
            model: w.model.into(),
        };
        let d = Driver::new(
            store.clone(),
            Arc::new(provider),
            model,
            Arc::new(Catalog::builtin().unwrap()),
        )
        .with_tool(Arc::new(Pages))
        .with_agent(agent);
        let opts = StartOptions {
            spec: rein_operation::OperationSpec {
                allowed_tools: Some(vec!["pages".into()]),
                ..Default::default()
            },
            ..Default::default()
        };
        let id = d.start(INSTRUCTION, &opts).await.unwrap();
        let end = d.run(id).await.unwrap();
        let requests = server.requests();
        for (i, r) in requests.iter().enumerate() {
            assert!(
                r.refused.is_none(),
                "{}: request {i} would be refused: {:?}\n{:.2000}",
                w.model,
                r.refused,
                r.body.to_string()
            );
        }
        assert!(matches!(&end, RunEnd::Done { .. }), "{}: {end:?}", w.model);
        let is_summary = |r: &rein_model::testing::Recorded| {
            r.system_text().contains("You compress conversations")
        };
        let summaries = requests.iter().filter(|r| is_summary(r)).count();
        assert!(
            summaries >= 2,
            "{}: {summaries} compressions in {} requests; the last: {:.3000}",
            w.model,
            requests.len(),
            requests
                .last()
                .map(|r| r.body.to_string())
                .unwrap_or_default()
        );
        let mut newest_page = 0;
        let mut after_summary = false;
        for r in &requests {
            if is_summary(r) {
                after_summary = true;
                continue;
            }
            assert!(
                r.carries(INSTRUCTION),
                "{}: the person's instruction is in every request",
                w.model
            );
            if after_summary {
                assert!(
                    r.carries(&page_text(newest_page)),
                    "{}: page {newest_page}, the newest, is kept whole after a compression",
                    w.model
                );
                assert!(
                    r.carries("NOTES "),
                    "{}: the summary is sent after a compression",
                    w.model
                );
                after_summary = false;
            }
            newest_page += 1;
        }
        let op = store.load_operation(id).await.unwrap().unwrap();
        // The working context holds one summary, the latest, which merged the ones before.
        let kept: Vec<String> = op
            .state
            .messages
            .iter()
            .filter(|m| m.kind == MessageKind::CompressionSummary)
            .map(|m| m.text_content())
            .collect();
        assert_eq!(
            kept,
            [format!("NOTES {summaries}: pages read so far say word.")],
            "{}",
            w.model
        );
        assert!(op.state.messages.iter().any(|m| m.text_content() == ANSWER));
    }
}
