//! The reference loop, entirely in memory: user input → 10 rounds of [model asks for one
//! `calculator` call → tool returns "42"] → final text → finish.
//!
//! First prints a plain report over 1,000 operations (µs per operation, per round, per step),
//! then runs a criterion measurement of one operation. `cargo bench -p rein-core --bench engine_loop`
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The shared counting allocator needs `unsafe impl GlobalAlloc`.
#![allow(unsafe_code)]

use criterion::Criterion;
use futures::FutureExt;
use futures::executor::block_on;
use futures::future::BoxFuture;
use rein_core::engine::ports::{
    LlmOutput, LlmPort, LlmProgress, LlmRequest, PortError, RawToolCall, ToolOutput, ToolPort,
};
use rein_core::event::StreamChunk;
use rein_core::state::ModelRef;
use rein_core::testing::manifest;
use rein_core::usage::{TokenUsage, Usd};
use rein_core::*;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

#[path = "../../../bench/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::ALLOCATIONS;

const ROUNDS: usize = 10;
const OPERATIONS: usize = 1_000;

/// Asks for the calculator until the conversation holds ten tool results, then answers.
struct LoopModel;

impl LlmPort for LoopModel {
    fn call<'a>(
        &'a self,
        req: LlmRequest<'a>,
        on_chunk: &'a (dyn Fn(LlmProgress) + Send + Sync),
    ) -> BoxFuture<'a, Result<LlmOutput, PortError>> {
        let done = req
            .state
            .messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .count();
        async move {
            let usage = TokenUsage {
                input: 200,
                output: 20,
                total: 220,
                ..Default::default()
            };
            let mut out = LlmOutput {
                usage,
                cost: Usd::from_nanos(50_000),
                elapsed_ms: 1,
                ..Default::default()
            };
            if done < ROUNDS {
                let arguments = format!(r#"{{"expression":"6*7+{done}"}}"#);
                on_chunk(LlmProgress::Chunk(StreamChunk::ToolCall {
                    index: 0,
                    id: Some(format!("call_{done}")),
                    name: Some("calculator__evaluate".into()),
                    arguments: arguments.clone(),
                }));
                out.tool_calls.push(RawToolCall {
                    id: format!("call_{done}"),
                    name: "calculator__evaluate".into(),
                    arguments,
                    thought_signature: None,
                });
            } else {
                on_chunk(LlmProgress::Chunk(StreamChunk::Text {
                    text: "The answer is 42.".into(),
                }));
                out.content = "The answer is 42.".into();
            }
            Ok(out)
        }
        .boxed()
    }
}

struct Calculator;

impl ToolPort for Calculator {
    fn call<'a>(
        &'a self,
        _call: &'a ToolCall,
        _state: &'a AgentState,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async { Ok(ToolOutput::ok("42")) }.boxed()
    }
}

fn runtime() -> AgentRuntime {
    AgentRuntime::new(
        Arc::new(GeneralChatAgent::default()),
        RuntimeConfig {
            llm: Some(Arc::new(LoopModel)),
            tools: Some(Arc::new(Calculator)),
            ..Default::default()
        },
    )
}

fn initial() -> AgentState {
    let mut s = AgentState::new(OperationId::new())
        .with_tool(manifest("calculator", &["evaluate"]))
        .with_message(Message::user("Compute 6*7 ten times."));
    s.model = Some(ModelRef {
        provider: "bench".into(),
        model: "loop".into(),
    });
    s.max_steps = Some(100);
    s
}

/// One operation; returns how many `step` calls it took.
fn operation(rt: &AgentRuntime) -> usize {
    let mut state = initial();
    let mut ctx = None;
    let mut steps = 0;
    loop {
        let r = block_on(rt.step(state, ctx));
        steps += 1;
        state = r.state;
        ctx = r.next_context;
        if ctx.is_none() {
            break;
        }
    }
    assert_eq!(
        state.finish.as_ref().map(|f| f.reason),
        Some(FinishReason::Completed)
    );
    black_box(&state);
    steps
}

fn report(rt: &AgentRuntime) {
    // Warm up allocators and caches.
    for _ in 0..50 {
        operation(rt);
    }
    let allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    let mut steps = 0;
    for _ in 0..OPERATIONS {
        steps += operation(rt);
    }
    let us = start.elapsed().as_secs_f64() * 1e6;
    let allocations = ALLOCATIONS.load(Ordering::Relaxed) - allocations_before;
    println!(
        "reference loop: {OPERATIONS} operations, {ROUNDS} rounds each, {} steps each",
        steps / OPERATIONS
    );
    println!("  {:>10.2} µs per operation", us / OPERATIONS as f64);
    println!("  {:>10.2} µs per round", us / (OPERATIONS * ROUNDS) as f64);
    println!("  {:>10.2} µs per step", us / steps as f64);
    println!(
        "  {:>10.1} allocations per step",
        allocations as f64 / steps as f64
    );
}

fn main() {
    let rt = runtime();
    report(&rt);
    let mut c = Criterion::default().configure_from_args();
    c.bench_function("reference_loop_operation", |b| b.iter(|| operation(&rt)));
    c.final_summary();
}
