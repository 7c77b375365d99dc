//! Shared fixtures for rein-core's integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use futures::executor::block_on;
use rein_core::engine::ports::ToolOutput;
use rein_core::intervention::{InterventionConfig, InterventionPolicy};
use rein_core::state::ModelRef;
use rein_core::testing::{FnTools, ScriptedLlm, ScriptedTurn, manifest};
use rein_core::usage::{TokenUsage, Usd};
use rein_core::*;
use std::sync::Arc;

pub struct Harness {
    pub runtime: AgentRuntime,
    pub llm: Arc<ScriptedLlm>,
    pub tools: Arc<FnTools>,
}

pub fn usage(total: u64) -> TokenUsage {
    TokenUsage {
        input: total - total / 4,
        output: total / 4,
        total,
        ..Default::default()
    }
}

/// Calculator (`calculator/evaluate` returns "42"), shell (`shell/run` echoes its command),
/// and a costly tool whose cost in nanodollars is its `cost` argument.
pub fn default_tools() -> FnTools {
    FnTools::new()
        .with("calculator/evaluate", |_| Ok(ToolOutput::ok("42")))
        .with("shell/run", |a| {
            Ok(ToolOutput::ok(format!(
                "ran: {}",
                a["command"].as_str().unwrap_or_default()
            )))
        })
        .with("costly/spend", |a| {
            let mut out = ToolOutput::ok("spent");
            out.cost = Usd::from_nanos(a["cost"].as_u64().unwrap_or(0));
            Ok(out)
        })
}

pub fn harness_with(
    turns: Vec<ScriptedTurn>,
    agent: GeneralChatAgent,
    config: RuntimeConfig,
    call_cost: Usd,
) -> Harness {
    let llm = Arc::new(ScriptedLlm::new(turns, usage(100), call_cost));
    let tools = Arc::new(default_tools());
    let runtime = AgentRuntime::new(
        Arc::new(agent),
        RuntimeConfig {
            llm: Some(llm.clone()),
            tools: Some(tools.clone()),
            ..config
        },
    );
    Harness {
        runtime,
        llm,
        tools,
    }
}

pub fn harness(turns: Vec<ScriptedTurn>) -> Harness {
    harness_with(
        turns,
        GeneralChatAgent::default(),
        RuntimeConfig::default(),
        Usd::ZERO,
    )
}

/// A state asking `question`, with calculator, shell (approval `required`) and costly tools.
pub fn state(question: &str) -> AgentState {
    let mut shell = manifest("shell", &["run"]);
    shell.intervention = Some(InterventionConfig::Policy(InterventionPolicy::Required));
    let mut s = AgentState::new(OperationId::new())
        .with_tool(manifest("calculator", &["evaluate"]))
        .with_tool(shell)
        .with_tool(manifest("costly", &["spend"]))
        .with_message(Message::user(question));
    s.model = Some(ModelRef {
        provider: "scripted".into(),
        model: "m1".into(),
    });
    s
}

pub fn run(h: &Harness, state: AgentState) -> StepResult {
    block_on(h.runtime.run(state, None))
}

pub fn step(h: &Harness, state: AgentState, ctx: Option<RuntimeContext>) -> StepResult {
    block_on(h.runtime.step(state, ctx))
}

pub fn calc(id: &str) -> ScriptedTurn {
    ScriptedTurn::tool(id, "calculator__evaluate", r#"{"expression":"6*7"}"#)
}

pub fn finish_reason(s: &AgentState) -> Option<FinishReason> {
    s.finish.as_ref().map(|f| f.reason)
}

pub fn event_types(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

pub fn tool_messages(s: &AgentState) -> Vec<&Message> {
    s.messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.as_ref())
        .collect()
}
