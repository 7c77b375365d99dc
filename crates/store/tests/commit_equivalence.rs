//! A commit writes only what a step changed (the small state, new or changed messages, the
//! message order from the first changed position, the tool manifests when they change). This
//! property test runs random operations through the real engine (scripted model and tools:
//! answers, tool rounds, parallel calls, unknown tools, approvals granted and refused, a
//! compression-like rewrite of the conversation, tools added mid-run, an edited message) and
//! checks after every commit that loading the operation gives exactly the state and next
//! context the engine holds in memory, on SQLite and on PostgreSQL.

use crate::common;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rein_core::engine::{StepResult, approve_tool_call, reject_tool_call};
use rein_core::intervention::{InterventionConfig, InterventionPolicy};
use rein_core::phase::RuntimeContext;
use rein_core::state::ModelRef;
use rein_core::testing::{FnTools, ScriptedLlm, ScriptedTurn, manifest};
use rein_core::usage::{TokenUsage, Usd};
use rein_core::*;
use rein_store::*;
use std::sync::Arc;

/// One thing that happens to an operation between two commits.
#[derive(Clone, Debug)]
enum Move {
    /// The model answers: `(calls, of which this many are the approval-gated shell)`; zero
    /// calls is a text answer.
    Model {
        calls: usize,
        shell: usize,
        unknown: bool,
    },
    /// A human decides every pending call: approve or reject.
    Decide { approve: bool },
    /// The conversation's older messages are replaced by a summary (what compression does).
    Rewrite { keep: usize },
    /// A tool is installed mid-run (the manifests change).
    AddTool,
    /// The last message is edited in place (same id, new content).
    Edit,
}

fn moves() -> impl Strategy<Value = Vec<Move>> {
    let one = prop_oneof![
        4 => (0usize..4, 0usize..2, any::<bool>())
            .prop_map(|(calls, shell, unknown)| Move::Model { calls, shell: shell.min(calls), unknown }),
        2 => any::<bool>().prop_map(|approve| Move::Decide { approve }),
        1 => (0usize..4).prop_map(|keep| Move::Rewrite { keep }),
        1 => Just(Move::AddTool),
        1 => Just(Move::Edit),
    ];
    prop::collection::vec(one, 1..14)
}

fn initial_state() -> AgentState {
    let mut shell = manifest("shell", &["run"]);
    shell.intervention = Some(InterventionConfig::Policy(InterventionPolicy::Required));
    let mut s = AgentState::new(OperationId::new())
        .with_tool(manifest("calculator", &["evaluate"]))
        .with_tool(shell)
        .with_message(Message::system("You are terse."))
        .with_message(Message::user("Compute things."));
    s.model = Some(ModelRef {
        provider: "scripted".into(),
        model: "m1".into(),
    });
    s.max_steps = Some(40);
    s
}

fn runtime_for(turn: ScriptedTurn) -> AgentRuntime {
    let llm = Arc::new(ScriptedLlm::new(
        vec![turn],
        TokenUsage {
            input: 90,
            output: 10,
            total: 100,
            ..Default::default()
        },
        Usd::from_nanos(1_000),
    ));
    let tools = FnTools::new()
        .with("calculator/evaluate", |_| {
            Ok(rein_core::engine::ports::ToolOutput::ok("42"))
        })
        .with("shell/run", |_| {
            Ok(rein_core::engine::ports::ToolOutput::ok("ran"))
        });
    AgentRuntime::new(
        Arc::new(GeneralChatAgent::default()),
        RuntimeConfig {
            llm: Some(llm),
            tools: Some(Arc::new(tools)),
            ..Default::default()
        },
    )
}

fn turn(calls: usize, shell: usize, unknown: bool, n: usize) -> ScriptedTurn {
    if calls == 0 {
        return ScriptedTurn::text(format!("answer {n}"));
    }
    let list = (0..calls)
        .map(|i| {
            let name = if i < shell {
                "shell__run"
            } else if unknown && i == calls - 1 {
                "nonexistent__tool"
            } else {
                "calculator__evaluate"
            };
            let args = if i < shell {
                format!(r#"{{"command":"echo {n}-{i}"}}"#)
            } else {
                format!(r#"{{"expression":"{n}+{i}"}}"#)
            };
            (format!("call_{n}_{i}"), name.to_owned(), args)
        })
        .collect();
    ScriptedTurn::ToolCalls(list)
}

/// Commit `r` after `committed`, then check that the store gives back exactly `r`.
async fn commit_and_check(
    store: &SqlStore,
    topic: &str,
    seq: &mut u64,
    committed: &mut AgentState,
    r: StepResult,
) -> Option<RuntimeContext> {
    *seq += 1;
    let commit = StepCommit {
        operation_id: r.state.operation_id,
        step_index: *seq,
        topic_id: topic.to_owned(),
        changes: StateChanges::between(committed, &r.state),
        state: r.state.clone(),
        next_context: r.next_context.clone(),
        instructions: r.instructions.iter().map(|k| (*k).into()).collect(),
        events: r.events.clone(),
        tool_executions: r.tool_executions.clone(),
        interventions: Vec::new(),
        thread_id: None,
        children: Vec::new(),
    };
    assert_eq!(
        store.commit_step(&commit).await.unwrap(),
        CommitOutcome::Committed
    );
    let loaded = store
        .load_operation(r.state.operation_id)
        .await
        .unwrap()
        .unwrap();
    assert!(loaded.missing_messages.is_empty());
    assert_eq!(loaded.state, r.state, "load(commit(step {seq})) differs");
    assert_eq!(loaded.next_context, r.next_context);
    assert_eq!(loaded.record.commit_seq, *seq);
    *committed = r.state;
    r.next_context
}

async fn play(store: &SqlStore, moves: &[Move]) {
    let state = initial_state();
    let topic = common::topic_of(&state);
    store
        .create_operation(&common::new_operation(&state, Default::default()))
        .await
        .unwrap();
    let loaded = store
        .load_operation(state.operation_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(loaded.state, state, "load(create)");
    let (mut committed, mut seq) = (state, 0u64);
    let mut next = loaded.next_context;
    for (n, m) in moves.iter().enumerate() {
        if committed.status.is_terminal() {
            break;
        }
        let r = match m {
            Move::Model {
                calls,
                shell,
                unknown,
            } => {
                let Some(ctx) = next.clone() else { continue };
                if committed.status.is_blocked() {
                    continue;
                }
                let runtime = runtime_for(turn(*calls, *shell, *unknown, n));
                // A step may need more than one engine step before the model is asked again
                // (tool results first); each is committed and checked.
                runtime.step(committed.clone(), Some(ctx)).await
            }
            Move::Decide { approve } => {
                let Some(call) = committed.pending_tool_calls.first().cloned() else {
                    continue;
                };
                if *approve {
                    let (s, ctx) = approve_tool_call(committed.clone(), &call.id).unwrap();
                    runtime_for(ScriptedTurn::text("unused"))
                        .step(s, Some(ctx))
                        .await
                } else {
                    let (s, ctx) =
                        reject_tool_call(committed.clone(), &call.id, Some("no"), false).unwrap();
                    StepResult::transition(s, Vec::new(), ctx)
                }
            }
            Move::Rewrite { keep } => {
                let mut s = committed.clone();
                let cut = s.messages.len().saturating_sub(*keep).max(1);
                let mut summary = Message::user(format!("Summary of {cut} messages."));
                summary.parent_id = None;
                let rest: Vec<_> = s.messages.split_off(cut);
                s.messages = vec![Arc::new(summary)];
                s.messages.extend(rest);
                StepResult::transition(s, Vec::new(), next.clone())
            }
            Move::AddTool => {
                let mut s = committed.clone();
                let id = format!("extra{n}");
                Arc::make_mut(&mut s.tool_manifests)
                    .insert(id.clone(), Arc::new(manifest(&id, &["go"])));
                StepResult::transition(s, Vec::new(), next.clone())
            }
            Move::Edit => {
                let mut s = committed.clone();
                let Some(last) = s.messages.last().map(|m| m.id) else {
                    continue;
                };
                if let Some(m) = s.message_mut(last) {
                    m.set_text(format!("edited at move {n}"));
                }
                StepResult::transition(s, Vec::new(), next.clone())
            }
        };
        next = commit_and_check(store, &topic, &mut seq, &mut committed, r).await;
    }
}

fn check(store: &SqlStore, cases: u32) {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let handle = tokio::runtime::Handle::current();
    runner
        .run(&moves(), |moves| {
            tokio::task::block_in_place(|| handle.block_on(play(store, &moves)));
            Ok(())
        })
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_load_equals_the_committed_state_after_every_step() {
    let (store, dir) = common::sqlite_store("equivalence").await;
    check(&store, 64);
    common::remove(store, dir).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_load_equals_the_committed_state_after_every_step() {
    let Some(scratch) =
        rein_testkit::postgres_scratch("postgres_commit_equivalence", "rein_equivalence").await
    else {
        return;
    };
    let store = SqlStore::open(&scratch.url, Synchronous::Normal)
        .await
        .unwrap();
    check(&store, 32);
    store.close().await;
    scratch.drop().await;
}
