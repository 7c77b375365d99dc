//! Whatever the transcript and the window, what is sent is a request every provider takes.
//! Random transcripts (tool batches answered or cut off, questions, delegations, text turns,
//! queued user messages, earlier summaries) are compressed the way the engine decides
//! ([`Kept`]) under random budgets, run through the standard context pipeline with random
//! history limits, result caps and force-finish, rendered by each of the five protocols, and
//! checked by that provider's rules (`rein_model::testing::validate`). The person's latest
//! instruction is in every request, verbatim.

use proptest::prelude::*;
use rein_context::{AgentFacts, ContextInput, ModelFacts, Pipeline, StepFacts};
use rein_core::agent::HeuristicEstimator;
use rein_core::engine::builtin::Kept;
use rein_core::message::{Message, MessageKind, Role, ToolCall, ToolStatus};
use rein_model::testing::validate::check;
use rein_model::{ChatRequest, Protocol, ToolChoice, ToolSpec};
use std::sync::Arc;

/// One turn of a generated transcript.
#[derive(Clone, Debug)]
enum Turn {
    /// The assistant answers in text.
    Text(usize),
    /// A batch of calls (tool, how long each result is, whether it was answered).
    Calls(Vec<(u8, usize, bool)>),
    /// A user message that arrived later (queued behind the operation).
    User(usize),
    /// A summary an earlier compression left.
    Summary,
}

fn turn() -> impl Strategy<Value = Turn> {
    prop_oneof![
        (1usize..400).prop_map(Turn::Text),
        proptest::collection::vec((0u8..3, 0usize..3000, proptest::bool::weighted(0.9)), 1..4)
            .prop_map(Turn::Calls),
        (1usize..200).prop_map(Turn::User),
        Just(Turn::Summary),
    ]
}

/// The tools the calls name: a calculator, a question to the person, a delegation.
const TOOLS: [(&str, &str); 3] = [
    ("calculator", "evaluate"),
    ("ask_user", "ask"),
    ("agents", "delegate"),
];

const INSTRUCTION: &str = "Fetch the reports and total them.";

fn transcript(turns: &[Turn]) -> Vec<Arc<Message>> {
    let mut out = vec![
        Arc::new(Message::system("You are careful.")),
        Arc::new(Message::user(INSTRUCTION)),
    ];
    let mut n = 0;
    for t in turns {
        match t {
            Turn::Text(len) => out.push(Arc::new(Message::assistant("w ".repeat(*len)))),
            Turn::Calls(calls) => {
                let mut assistant = Message::assistant("");
                let mut results = Vec::new();
                for (tool, len, answered) in calls {
                    n += 1;
                    let (identifier, api) = TOOLS[usize::from(*tool)];
                    let call = ToolCall::new(format!("call_{n}"), identifier, api, "{}");
                    if *answered {
                        results.push(Message::tool_result(
                            &call,
                            Some(assistant.id),
                            ToolStatus::Succeeded,
                            "r ".repeat(*len),
                        ));
                    }
                    assistant.tool_calls.push(call);
                }
                out.push(Arc::new(assistant));
                out.extend(results.into_iter().map(Arc::new));
            }
            Turn::User(len) => {
                // A later person's message is the latest instruction from then on; the first
                // one stays the one checked, so later ones quote it.
                out.push(Arc::new(Message::user(format!(
                    "{INSTRUCTION} {}",
                    "u ".repeat(*len)
                ))))
            }
            Turn::Summary => {
                let mut m = Message::user("Earlier: some reports were fetched.");
                m.kind = MessageKind::CompressionSummary;
                out.push(Arc::new(m));
            }
        }
    }
    out
}

fn tools() -> Vec<ToolSpec> {
    TOOLS
        .iter()
        .map(|(identifier, api)| ToolSpec {
            name: format!("{identifier}__{api}"),
            description: format!("{identifier} {api}"),
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_kept_context_passes_every_providers_rules(
        turns in proptest::collection::vec(turn(), 0..14),
        keep in 0u64..6000,
        compress in any::<bool>(),
        history_limit in proptest::option::of(1usize..12),
        result_cap in proptest::option::of(50usize..2000),
        force_finish in any::<bool>(),
        alternating in any::<bool>(),
    ) {
        let mut messages = transcript(&turns);
        if compress {
            let kept = Kept::of(&messages, keep, &HeuristicEstimator);
            if kept.replaced(&messages).len() >= 2 {
                let mut summary = Message::user("Summary: reports fetched, totals pending.");
                summary.kind = MessageKind::CompressionSummary;
                kept.apply(&mut messages, summary);
            }
        }
        // Compression keeps the person's latest instruction in the state, verbatim.
        let latest = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User && m.kind == MessageKind::Normal)
            .map(|m| m.text_content());
        prop_assert!(latest.as_deref().is_some_and(|t| t.starts_with(INSTRUCTION)));
        let agent = AgentFacts {
            history_limit,
            max_tool_result_chars: result_cap,
            ..Default::default()
        };
        let model = ModelFacts { alternating_roles: alternating, ..Default::default() };
        let step = StepFacts { force_finish, ..Default::default() };
        let out = Pipeline::standard().run(&ContextInput {
            messages: &messages,
            agent: &agent,
            model: &model,
            step: &step,
        });
        let mut req = ChatRequest::new("model-x", out.messages.clone());
        req.tools = tools();
        req.tool_choice = if out.tools_enabled { ToolChoice::Auto } else { ToolChoice::None };
        // Every protocol: a new one is checked here as soon as its rules are written.
        for protocol in Protocol::ALL {
            let w = protocol.build(&req, true);
            if let Err(e) = check(protocol, &w.body) {
                return Err(TestCaseError::fail(format!(
                    "{protocol:?} would refuse it: {e}\nsent: {}",
                    w.body
                )));
            }
            prop_assert!(
                w.body.to_string().contains(INSTRUCTION),
                "{protocol:?}: the instruction is missing"
            );
        }
    }
}
