//! The standard context pipeline over 1,000 / 10,000 / 100,000-message histories (a user turn,
//! an assistant calling two tools, their results, an answer; every tenth user turn carries an
//! image; the model has no vision, so images are rewritten). Prints time and allocations per
//! run and per message. Allocations per message stay flat (every processor is one pass); time
//! per message rises once the history no longer fits in the CPU caches.
//! `cargo bench -p rein-context --bench pipeline`
#![allow(clippy::unwrap_used, clippy::expect_used)]
// The shared counting allocator needs `unsafe impl GlobalAlloc`.
#![allow(unsafe_code)]

use chrono::Utc;
use rein_context::{AgentFacts, ContextInput, ModelFacts, Pipeline, StepFacts};
use rein_core::message::{ContentPart, Message, ToolCall, ToolStatus};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

#[path = "../../../bench/support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::ALLOCATIONS;

fn history(len: usize) -> Vec<Arc<Message>> {
    let mut out = vec![Arc::new(Message::system("You are a planner."))];
    let mut n: usize = 0;
    while out.len() < len {
        let mut u = Message::user(format!(
            "question {n}: what about the next leg of the trip?"
        ));
        if n.is_multiple_of(10) {
            u.content.push(ContentPart::Image {
                url: format!("https://example.com/{n}.png"),
                media_type: None,
                detail: None,
            });
        }
        out.push(Arc::new(u));
        let mut a = Message::assistant("Let me check.");
        let calls = [
            ToolCall::new(
                format!("a{n}"),
                "web",
                "fetch",
                r#"{"url":"https://example.com"}"#,
            ),
            ToolCall::new(
                format!("b{n}"),
                "calculator",
                "evaluate",
                r#"{"expression":"2*21"}"#,
            ),
        ];
        a.tool_calls = calls.to_vec();
        let a = Arc::new(a);
        for c in &calls {
            out.push(Arc::new(Message::tool_result(
                c,
                Some(a.id),
                ToolStatus::Succeeded,
                "result text",
            )));
        }
        out.insert(out.len() - 2, a);
        out.push(Arc::new(Message::assistant(format!("Answer {n}."))));
        n += 1;
    }
    out
}

fn main() {
    let pipeline = Pipeline::standard();
    let agent = AgentFacts {
        name: Some("planner".into()),
        system_role: Some("Plan trips.".into()),
        memories: vec!["Vegetarian".into()],
        max_tool_result_chars: Some(4_000),
        ..Default::default()
    };
    let model = ModelFacts {
        id: "openai/gpt-4o-mini".into(),
        vision: false,
        alternating_roles: true,
    };
    let step = StepFacts {
        now: Some(Utc::now()),
        working_directory: Some("/srv/work".into()),
        ..Default::default()
    };
    let estimator = rein_context::TiktokenEstimator::default();
    println!(
        "{:>9}  {:>12}  {:>12}  {:>12}  {:>10}  {:>16}",
        "messages", "ms/run", "ns/message", "allocs/run", "allocs/msg", "ms/run+report"
    );
    for len in [1_000usize, 10_000, 100_000] {
        let messages = history(len);
        let input = ContextInput {
            messages: &messages,
            agent: &agent,
            model: &model,
            step: &step,
        };
        let runs = (2_000_000 / len).clamp(5, 200);
        black_box(pipeline.run(&input));
        let allocs_before = ALLOCATIONS.load(Ordering::Relaxed);
        let start = Instant::now();
        for _ in 0..runs {
            black_box(pipeline.run(black_box(&input)));
        }
        let elapsed = start.elapsed();
        let allocs = (ALLOCATIONS.load(Ordering::Relaxed) - allocs_before) as f64 / runs as f64;
        let per_run = elapsed.as_secs_f64() / runs as f64;
        // The same run with the context report the model port makes for every call (token
        // counts remembered per message, as across the steps of an operation).
        black_box(rein_context::report::explain(&pipeline, &input, &estimator));
        let start = Instant::now();
        for _ in 0..runs {
            black_box(rein_context::report::explain(
                &pipeline,
                black_box(&input),
                &estimator,
            ));
        }
        let reported = start.elapsed().as_secs_f64() / runs as f64;
        println!(
            "{:>9}  {:>12.3}  {:>12.1}  {:>12.0}  {:>10.3}  {:>16.3}",
            messages.len(),
            per_run * 1e3,
            per_run * 1e9 / messages.len() as f64,
            allocs,
            allocs / messages.len() as f64,
            reported * 1e3
        );
    }
}
