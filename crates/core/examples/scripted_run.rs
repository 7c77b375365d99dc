//! Runs GeneralChatAgent over a scripted model and an in-memory calculator tool, printing every
//! event and the final state: the whole instruction loop with no network and no database.
//!
//! `cargo run -p rein-core --example scripted_run -- "what is 6 * 7?"`

use futures::executor::block_on;
use rein_core::engine::ports::ToolOutput;
use rein_core::state::{Budget, ModelRef};
use rein_core::testing::{FnTools, ScriptedLlm, ScriptedTurn, manifest};
use rein_core::usage::{TokenUsage, Usd};
use rein_core::{AgentRuntime, AgentState, GeneralChatAgent, Message, OperationId, RuntimeConfig};
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "What is 6 * 7?".to_owned());
    let llm = Arc::new(ScriptedLlm::new(
        [
            ScriptedTurn::tool(
                "call_1",
                "calculator__evaluate",
                r#"{"expression":"6 * 7"}"#,
            ),
            ScriptedTurn::text("6 * 7 = 42."),
        ],
        TokenUsage {
            input: 120,
            output: 12,
            total: 132,
            ..Default::default()
        },
        Usd::from_dollars(0.0004),
    ));
    let tools = Arc::new(FnTools::new().with("calculator/evaluate", |args| {
        let expr = args
            .get("expression")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let parts: Vec<f64> = expr
            .split('*')
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        Ok(ToolOutput::ok(parts.iter().product::<f64>().to_string()))
    }));
    let runtime = AgentRuntime::new(
        Arc::new(GeneralChatAgent::default()),
        RuntimeConfig {
            llm: Some(llm),
            tools: Some(tools),
            ..Default::default()
        },
    );
    let mut state = AgentState::new(OperationId::new())
        .with_tool(manifest("calculator", &["evaluate"]))
        .with_message(Message::user(question));
    state.model = Some(ModelRef {
        provider: "scripted".into(),
        model: "demo".into(),
    });
    state.max_steps = Some(10);
    state.budget = Budget {
        max_cost: Some(Usd::from_dollars(0.01)),
        ..Default::default()
    };

    let result = block_on(runtime.run(state, None));
    for e in &result.events {
        println!("{}", serde_json::to_string(e)?);
    }
    let s = &result.state;
    let answer = s
        .messages
        .last()
        .map(|m| m.text_content())
        .unwrap_or_default();
    println!(
        "status: {:?}, finish: {:?}",
        s.status,
        s.finish.as_ref().map(|f| f.reason)
    );
    println!(
        "steps: {}, tokens: {}, cost: {}",
        s.step_count, s.usage.llm.tokens.total, s.cost.total
    );
    println!("answer: {answer}");
    anyhow::ensure!(
        s.finish.as_ref().is_some_and(|f| f.reason.is_success()),
        "run did not complete"
    );
    Ok(())
}
