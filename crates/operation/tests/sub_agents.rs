//! Delegation end to end: a parent operation that hands tasks to sub-agents (stored agents
//! with their own roles and tool scopes), against a scripted OpenAI-protocol server that
//! answers each agent from its own script (routed by the agent's system role), on a SQLite
//! file.

use crate::common;

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::event::EventKind;
use rein_core::intervention::{ApprovalMode, InterventionConfig, InterventionPolicy};
use rein_core::state::{Budget, BudgetPolicy, FinishReason, Status};
use rein_core::tool::ToolManifest;
use rein_core::{OperationId, Role, Usd};
use rein_model::Catalog;
use rein_model::testing::{Canned, Server, serve};
use rein_operation::{
    AgentProfile, Decision, Driver, OperationSpec, RunEnd, StartOptions, StoredAgents, Tool,
    ToolContext,
};
use rein_store::{Accounts, AgentRecord, Effect, SqlStore, Store, Trigger};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A side-effecting tool that runs at most once per call, counts its runs, and needs
/// approval when `policy` says so.
struct Ledger {
    runs: Arc<AtomicU32>,
    policy: InterventionPolicy,
}

impl Tool for Ledger {
    fn manifest(&self) -> ToolManifest {
        let mut m = rein_core::testing::manifest("ledger", &["append"]);
        m.intervention = Some(InterventionConfig::Policy(self.policy));
        m
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::AtMostOnce
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        _: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            self.runs.fetch_add(1, Ordering::SeqCst);
            Ok(ToolOutput::ok("appended"))
        }
        .boxed()
    }
}

struct Env {
    server: Server,
    store: Arc<SqlStore>,
    runs: Arc<AtomicU32>,
    local: String,
}

const BOSS: &str = "ROLE-BOSS: you coordinate.";
const RESEARCHER: &str = "ROLE-RESEARCHER: you find facts.";
const WRITER: &str = "ROLE-WRITER: you write prose.";

async fn env() -> Env {
    let (_, store) = common::temp_store("rein-subagents").await;
    let local = store.create_user("local").await.unwrap().id;
    for (name, role, tools) in [
        (
            "researcher",
            RESEARCHER,
            vec!["calculator", "ledger", "files"],
        ),
        ("writer", WRITER, vec!["todo", "shell"]),
    ] {
        let profile = AgentProfile {
            system_role: Some(role.into()),
            tools: Some(tools.into_iter().map(str::to_owned).collect()),
            ..Default::default()
        };
        store
            .put_agent(&AgentRecord {
                owner: local.clone(),
                name: name.into(),
                config: serde_json::to_value(&profile).unwrap(),
                version: 0,
                created_at: chrono::Utc::now(),
                updated_at: chrono::Utc::now(),
            })
            .await
            .unwrap();
    }
    Env {
        server: serve(Vec::new(), 11).await,
        store,
        runs: Arc::new(AtomicU32::new(0)),
        local,
    }
}

fn driver(e: &Env, policy: InterventionPolicy) -> Driver {
    Driver::new(
        e.store.clone(),
        Arc::new(common::openai_provider(&e.server.base)),
        common::gpt_4o_mini(),
        Arc::new(Catalog::builtin().unwrap()),
    )
    .with_tool(Arc::new(Ledger {
        runs: e.runs.clone(),
        policy,
    }))
    .with_agents(Arc::new(StoredAgents {
        accounts: e.store.clone(),
        local_user: Some(e.local.clone()),
        fixed: Default::default(),
    }))
}

fn tools(calls: &[(&str, &str, serde_json::Value)]) -> Canned {
    let args: Vec<String> = calls.iter().map(|(_, _, a)| a.to_string()).collect();
    let refs: Vec<(&str, &str, &str)> = calls
        .iter()
        .zip(&args)
        .map(|((id, name, _), a)| (*id, *name, a.as_str()))
        .collect();
    Canned::openai_tools(&refs)
}

fn delegate_both() -> Canned {
    tools(&[(
        "d1",
        "agents__delegate_many",
        serde_json::json!({"tasks": [
            {"title": "facts", "task": "Find the answer.", "agent": "researcher"},
            {"title": "prose", "task": "Write a line.", "agent": "writer"},
        ]}),
    )])
}

/// The parent hands the researcher a task of counting.
fn delegate_counting() -> Canned {
    tools(&[(
        "d1",
        "agents__delegate",
        serde_json::json!({"title": "facts", "task": "Count.", "agent": "researcher"}),
    )])
}

/// The parent hands the researcher a booking (a ledger entry).
fn delegate_booking() -> Canned {
    tools(&[(
        "d1",
        "agents__delegate",
        serde_json::json!({"title": "book", "task": "Append.", "agent": "researcher"}),
    )])
}

/// A calculator call (one step of the researcher's counting).
fn calc(id: &str) -> Canned {
    tools(&[(
        id,
        "calculator__evaluate",
        serde_json::json!({"expression": "1+1"}),
    )])
}

fn spec(allowed: Option<&[&str]>, approval: ApprovalMode, budget: Budget) -> OperationSpec {
    OperationSpec {
        system_role: Some(BOSS.into()),
        allowed_tools: allowed.map(|l| l.iter().map(|s| (*s).to_owned()).collect()),
        approval,
        budget,
        ..Default::default()
    }
}

async fn start(d: &Driver, spec: OperationSpec) -> OperationId {
    d.start(
        "Research and write.",
        &StartOptions {
            spec,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

async fn children(e: &Env, parent: OperationId) -> Vec<rein_store::OperationRecord> {
    rein_operation::tree::descendants(&*e.store, parent)
        .await
        .unwrap()
}

/// One model call of the scripted server (100 in, 20 out) on gpt-4o-mini.
fn per_call() -> Usd {
    Catalog::builtin()
        .unwrap()
        .cost(
            "openai",
            "gpt-4o-mini",
            &rein_core::usage::TokenUsage {
                input: 100,
                output: 20,
                total: 120,
                ..Default::default()
            },
        )
        .unwrap()
}

#[tokio::test]
async fn two_agents_work_in_parallel_within_their_scopes_and_their_answers_and_costs_roll_up() {
    let e = env().await;
    e.server.route(
        "ROLE-BOSS",
        vec![
            delegate_both(),
            Canned::openai_text("Final: RESEARCH 391 and PROSE hello."),
        ],
    );
    e.server.route(
        "ROLE-RESEARCHER",
        vec![
            tools(&[(
                "r1",
                "calculator__evaluate",
                serde_json::json!({"expression": "17*23"}),
            )]),
            Canned::openai_text("RESEARCH 391"),
        ],
    );
    e.server
        .route("ROLE-WRITER", vec![Canned::openai_text("PROSE hello")]);
    let d = driver(&e, InterventionPolicy::Never);
    let id = start(
        &d,
        spec(
            Some(&["agents", "calculator", "todo", "ledger"]),
            ApprovalMode::AutoRun,
            Budget::default(),
        ),
    )
    .await;
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );

    // Each agent was offered exactly its scope within the parent's.
    let requests = e.server.requests();
    let offered = |marker: &str| {
        requests
            .iter()
            .filter(|r| r.system_text().contains(marker))
            .map(|r| r.offered_tools())
            .collect::<Vec<_>>()
    };
    for o in offered("ROLE-RESEARCHER") {
        assert_eq!(o, ["calculator__evaluate", "ledger__append"]);
    }
    for o in offered("ROLE-WRITER") {
        assert_eq!(o, ["todo__write"]);
    }
    let boss = offered("ROLE-BOSS");
    assert!(boss[0].contains(&"agents__delegate_many".to_owned()));
    // The sub-agents at depth 1 may still delegate (the limit is 3), but only within the
    // parent's allow-list, which names `agents`; the researcher's and writer's do not.
    assert_eq!(offered("ROLE-RESEARCHER").len(), 2);

    // Two children, recorded as the parent's, in its topic's threads.
    let kids = children(&e, id).await;

    assert_eq!(kids.len(), 2);
    let parent = e.store.load_operation(id).await.unwrap().unwrap();
    for k in &kids {
        assert_eq!(k.trigger, Trigger::SubAgent);
        assert_eq!(k.parent_operation, Some(id));
        assert_eq!(k.root_operation, Some(id));
        assert_eq!(k.depth, 1);
        assert_eq!(k.status, Status::Done);
        assert_eq!(k.topic_id, parent.record.topic_id);
    }
    let threads = e.store.threads(&parent.record.topic_id).await.unwrap();
    let mut titles: Vec<&str> = threads.iter().map(|t| t.title.as_str()).collect();
    titles.sort();
    assert_eq!(titles, ["facts", "prose"]);
    let researcher = kids
        .iter()
        .find(|k| k.agent.as_deref() == Some("researcher"))
        .unwrap();
    let thread = e
        .store
        .thread_messages(&researcher.id.to_string())
        .await
        .unwrap();
    assert!(thread.iter().any(|m| m.text_content() == "RESEARCH 391"));
    assert!(thread.iter().any(|m| m.role == Role::Tool));
    // The topic's own conversation holds none of the sub-agents' messages.
    let main = e
        .store
        .topic_messages(&parent.record.topic_id)
        .await
        .unwrap();
    assert!(!main.iter().any(|m| m.text_content() == "RESEARCH 391"));

    // Both answers came back as the delegating call's result, in task order, and the parent's
    // second model call read them.
    let result = parent
        .state
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("d1"))
        .unwrap()
        .text_content();
    let (a, b) = (
        result.find("RESEARCH 391").unwrap(),
        result.find("PROSE hello").unwrap(),
    );
    assert!(a < b, "{result}");
    let last_boss = requests
        .iter()
        .rfind(|r| r.system_text().contains("ROLE-BOSS"))
        .unwrap();
    assert!(last_boss.body.to_string().contains("PROSE hello"));

    // Costs roll up exactly: the parent's total is its own two calls plus its children's.
    let one = per_call();
    assert!(one > Usd::ZERO);
    let kid_cost = kids.iter().fold(Usd::ZERO, |a, k| a + k.cost);
    assert_eq!(kid_cost, one + one + one);
    assert_eq!(parent.record.cost, kid_cost + one + one);
    assert_eq!(parent.state.usage.llm.calls, 5);

    // The parent's stream tells who started and ended, with what they cost.
    let events = e.store.events(id, None).await.unwrap();
    let started = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::SubAgentStarted { .. }))
        .count();
    let ended: Vec<Usd> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SubAgentEnded { cost, success, .. } => {
                assert!(success);
                Some(*cost)
            }
            _ => None,
        })
        .collect();
    assert_eq!(started, 2);
    assert_eq!(ended.iter().fold(Usd::ZERO, |a, c| a + *c), kid_cost);
}

#[tokio::test]
async fn unknown_agents_and_the_depth_limit_are_refused_visibly_without_a_child() {
    let e = env().await;
    e.server.route(
        "ROLE-BOSS",
        vec![
            tools(&[(
                "d1",
                "agents__delegate",
                serde_json::json!({"title": "x", "task": "y", "agent": "nobody"}),
            )]),
            Canned::openai_text("I will do it myself."),
        ],
    );
    let d = driver(&e, InterventionPolicy::Never);
    let mut s = spec(None, ApprovalMode::AutoRun, Budget::default());
    let id = start(&d, s.clone()).await;
    d.run(id).await.unwrap();
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let result = op
        .state
        .messages
        .iter()
        .find(|m| m.tool_call_id.as_deref() == Some("d1"))
        .unwrap();
    assert_eq!(result.tool_status, Some(rein_core::ToolStatus::Failed));
    assert!(result.text_content().contains("There is no agent `nobody`"));
    assert!(children(&e, id).await.is_empty());

    // With a depth limit of 0 the tool is not even offered.
    s.sub_agents.max_depth = 0;
    e.server.push(Canned::openai_text("alone"));
    let id = start(&d, s).await;
    d.run(id).await.unwrap();
    let last = e.server.requests().pop().unwrap();
    assert!(
        !last
            .offered_tools()
            .iter()
            .any(|t| t.starts_with("agents__")),
        "{:?}",
        last.offered_tools()
    );
}

#[tokio::test]
async fn a_parent_cost_limit_crossed_inside_a_child_stops_the_tree() {
    let e = env().await;
    let one = per_call();
    e.server.route(
        "ROLE-BOSS",
        vec![delegate_counting(), Canned::openai_text("never asked")],
    );
    e.server.route(
        "ROLE-RESEARCHER",
        vec![
            calc("r1"),
            calc("r2"),
            calc("r3"),
            calc("r4"),
            Canned::openai_text("done"),
        ],
    );
    let d = driver(&e, InterventionPolicy::Never);
    // The parent may spend 3.5 calls: its own first call leaves 2.5 for the child.
    let budget = Budget {
        max_cost: Some(Usd::from_nanos(one.nanos() * 7 / 2)),
        on_exceeded: BudgetPolicy::Stop,
        ..Default::default()
    };
    let id = start(&d, spec(None, ApprovalMode::AutoRun, budget)).await;
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::CostLimitExceeded,
                ..
            }
        ),
        "{end:?}"
    );
    let kids = children(&e, id).await;
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].status, Status::Done);
    assert_eq!(kids[0].finish_reason, Some(FinishReason::UserRequested));
    assert!(
        kids[0]
            .finish_detail
            .as_deref()
            .unwrap_or_default()
            .contains("cost limit"),
        "{:?}",
        kids[0].finish_detail
    );
    // The child made its third call (the one that crossed), and no fourth.
    assert_eq!(kids[0].cost, one + one + one);
    let parent = e.store.operation(id).await.unwrap().unwrap();
    assert_eq!(parent.cost, one + kids[0].cost);
    assert_eq!(
        e.server
            .requests()
            .iter()
            .filter(|r| r.system_text().contains("ROLE-BOSS"))
            .count(),
        1,
        "the parent never called the model again"
    );
}

#[tokio::test]
async fn an_interrupt_policy_parks_the_tree_and_resume_continues_it() {
    let e = env().await;
    let one = per_call();
    e.server.route(
        "ROLE-BOSS",
        vec![delegate_counting(), Canned::openai_text("final")],
    );
    e.server.route(
        "ROLE-RESEARCHER",
        vec![calc("r1"), calc("r2"), Canned::openai_text("counted")],
    );
    let d = driver(&e, InterventionPolicy::Never);
    let budget = Budget {
        max_cost: Some(Usd::from_nanos(one.nanos() * 5 / 2)),
        on_exceeded: BudgetPolicy::Interrupt,
        ..Default::default()
    };
    let id = start(&d, spec(None, ApprovalMode::AutoRun, budget)).await;
    let end = d.run(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Interrupted {
                can_resume: true,
                ..
            }
        ),
        "{end:?}"
    );
    let kid = children(&e, id).await.remove(0);
    assert_eq!(kid.status, Status::Interrupted);
    assert_eq!(
        e.store.operation(id).await.unwrap().unwrap().status,
        Status::Interrupted
    );
    // Resuming the parent resumes the tree: the child takes its next step (a model call that
    // answers), and since the limit is still crossed the tree parks again at that boundary, as
    // an interrupt policy does until the budget is raised.
    let before = e.server.requests().len();
    let end = d.resume(id).await.unwrap();
    assert_eq!(e.server.requests().len(), before + 1);
    let kid_state = e.store.load_operation(kid.id).await.unwrap().unwrap();
    assert_eq!(kid_state.record.status, Status::Interrupted);
    assert!(
        kid_state
            .state
            .messages
            .iter()
            .any(|m| m.text_content() == "counted")
    );
    assert_eq!(kid_state.record.cost, one + one + one);
    let RunEnd::Interrupted { reason, can_resume } = end else {
        panic!("{end:?}");
    };
    assert!(can_resume);
    assert!(reason.contains("the parent's cost limit"), "{reason}");
    assert_eq!(
        e.store.operation(id).await.unwrap().unwrap().status,
        Status::Interrupted
    );
}

#[tokio::test]
async fn a_childs_approval_is_decided_through_the_root_and_then_the_parent_completes() {
    let e = env().await;
    e.server.route(
        "ROLE-BOSS",
        vec![
            delegate_booking(),
            Canned::openai_text("The ledger was updated."),
        ],
    );
    e.server.route(
        "ROLE-RESEARCHER",
        vec![
            tools(&[("l1", "ledger__append", serde_json::json!({}))]),
            Canned::openai_text("appended once"),
        ],
    );
    let d = driver(&e, InterventionPolicy::Required);
    let id = start(&d, spec(None, ApprovalMode::Manual, Budget::default())).await;
    let end = d.run(id).await.unwrap();
    let RunEnd::WaitingForHuman { pending } = end else {
        panic!("{end:?}");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(&*pending[0].id, "l1");
    let kid = children(&e, id).await.remove(0);
    assert_eq!(kid.status, Status::WaitingForHuman);
    let root_pending = rein_operation::tree::pending_approvals(&*e.store, id)
        .await
        .unwrap();
    assert_eq!(root_pending.len(), 1);
    assert_eq!(root_pending[0].operation_id, kid.id);
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);

    // A fresh driver (another process) decides through the root.
    let d2 = driver(&e, InterventionPolicy::Required);
    let end = d2
        .decide(id, Some(&["l1".to_owned()]), Decision::Approve, Some("me"))
        .await
        .unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::Completed,
                ..
            }
        ),
        "{end:?}"
    );
    assert_eq!(e.runs.load(Ordering::SeqCst), 1);
    let kid = e.store.operation(kid.id).await.unwrap().unwrap();
    assert_eq!(kid.status, Status::Done);
    // A second decision is refused.
    assert!(
        d2.decide(id, Some(&["l1".to_owned()]), Decision::Approve, None)
            .await
            .is_err()
    );
}

#[tokio::test]
async fn cancelling_a_parent_cancels_its_parked_children() {
    let e = env().await;
    e.server.route(
        "ROLE-BOSS",
        vec![tools(&[(
            "d1",
            "agents__delegate",
            serde_json::json!({"title": "book", "task": "Append.", "agent": "researcher"}),
        )])],
    );
    e.server.route(
        "ROLE-RESEARCHER",
        vec![tools(&[("l1", "ledger__append", serde_json::json!({}))])],
    );
    let d = driver(&e, InterventionPolicy::Required);
    let id = start(&d, spec(None, ApprovalMode::Manual, Budget::default())).await;
    d.run(id).await.unwrap();
    let end = d.cancel(id).await.unwrap();
    assert!(
        matches!(
            end,
            RunEnd::Done {
                reason: FinishReason::UserRequested,
                ..
            }
        ),
        "{end:?}"
    );
    let kid = children(&e, id).await.remove(0);
    assert_eq!(kid.status, Status::Done);
    assert_eq!(kid.finish_reason, Some(FinishReason::UserRequested));
    assert_eq!(e.runs.load(Ordering::SeqCst), 0);
}

/// A crash right after each commit of a delegation (the parent parking with its children
/// created, each child's steps, the parent taking the results): the run dies there, another
/// driver resumes the root, and the tree ends as if nothing happened: no child created twice,
/// the at-most-once tool run once, usage counted once.
#[tokio::test]
async fn a_crash_after_any_commit_of_a_delegation_resumes_without_doing_anything_twice() {
    let mut k = 1;
    loop {
        let e = env().await;
        // Spare answers: a step re-run after the crash asks the model again.
        e.server.route(
            "ROLE-BOSS",
            vec![
                delegate_booking(),
                Canned::openai_text("final"),
                Canned::openai_text("final"),
            ],
        );
        e.server.route(
            "ROLE-RESEARCHER",
            vec![
                tools(&[("l1", "ledger__append", serde_json::json!({}))]),
                Canned::openai_text("appended"),
                Canned::openai_text("appended"),
            ],
        );
        let commits = Arc::new(AtomicU32::new(0));
        let c = commits.clone();
        let crashing =
            driver(&e, InterventionPolicy::Never).with_commit_hook(Arc::new(move |_, _| {
                if c.fetch_add(1, Ordering::SeqCst) + 1 == k {
                    panic!("crash after commit {k}");
                }
            }));
        let id = start(
            &crashing,
            spec(None, ApprovalMode::AutoRun, Budget::default()),
        )
        .await;
        let crashing = Arc::new(crashing);
        let run = tokio::spawn({
            let d = crashing.clone();
            async move { d.run(id).await }
        })
        .await;
        let crashed = run.is_err();
        if crashed {
            let d = driver(&e, InterventionPolicy::Never);
            let end = d.resume(id).await.unwrap();
            assert!(
                matches!(
                    end,
                    RunEnd::Done {
                        reason: FinishReason::Completed,
                        ..
                    }
                ),
                "crash after commit {k}: {end:?}"
            );
        }
        let kids = children(&e, id).await;
        assert_eq!(kids.len(), 1, "crash after commit {k}");
        assert!(e.runs.load(Ordering::SeqCst) <= 1, "crash after commit {k}");
        let parent = e.store.load_operation(id).await.unwrap().unwrap();
        assert_eq!(parent.record.status, Status::Done, "crash after commit {k}");
        let child = e.store.operation(kids[0].id).await.unwrap().unwrap();
        let own: Usd = parent
            .state
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .filter_map(|m| m.usage)
            .fold(Usd::ZERO, |a, _| a + per_call());
        assert_eq!(
            parent.record.cost,
            own + child.cost,
            "crash after commit {k}: usage counted once"
        );
        if !crashed {
            // The run never reached commit k: every boundary was covered.
            assert!(k > 4, "too few commits: {k}");
            break;
        }
        k += 1;
    }
}

/// The supervisor's answer naming the next speaker (a forced tool call, not streamed).
fn next_speaker(speaker: &str, reason: &str) -> Canned {
    let args = serde_json::json!({"speaker": speaker, "instruction": format!("{speaker}, go on"), "reason": reason});
    Canned::json(
        200,
        &serde_json::json!({
            "id": "chatcmpl-s", "object": "chat.completion", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "s1", "type": "function", "function": {"name": "next_speaker", "arguments": args.to_string()}}]
            }}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        }),
    )
}

#[tokio::test]
async fn a_group_of_three_runs_four_rounds_with_labelled_context_until_its_supervisor_stops() {
    let e = env().await;
    for name in ["ann", "bob", "cy"] {
        let profile = AgentProfile {
            system_role: Some(format!(
                "ROLE-{}: you speak your mind.",
                name.to_uppercase()
            )),
            ..Default::default()
        };
        e.store
            .put_agent(&AgentRecord {
                owner: e.local.clone(),
                name: name.into(),
                config: serde_json::to_value(&profile).unwrap(),
                version: 0,
                created_at: chrono::Utc::now(),
                updated_at: chrono::Utc::now(),
            })
            .await
            .unwrap();
    }
    e.server.route(
        "ROLE-SUPERVISOR",
        vec![
            next_speaker("ann", ""),
            next_speaker("bob", ""),
            next_speaker("cy", ""),
            next_speaker("ann", ""),
            next_speaker("done", "the plan is agreed"),
            // Never asked: the supervisor stopped.
            next_speaker("bob", ""),
        ],
    );
    e.server.route(
        "ROLE-ANN",
        vec![Canned::openai_text("ann-1"), Canned::openai_text("ann-2")],
    );
    e.server
        .route("ROLE-BOB", vec![Canned::openai_text("bob-1")]);
    e.server.route("ROLE-CY", vec![Canned::openai_text("cy-1")]);
    let d = driver(&e, InterventionPolicy::Never);
    let members: Vec<String> = ["ann", "bob", "cy"].map(str::to_owned).to_vec();
    let mut spec = OperationSpec {
        system_role: Some("ROLE-SUPERVISOR: plan a trip.".into()),
        approval: ApprovalMode::AutoRun,
        group: Some(rein_core::spec::GroupSpec {
            name: "trio".into(),
            members: members.clone(),
            policy: rein_core::spec::SpeakerPolicy::Model,
            max_rounds: 10,
        }),
        ..Default::default()
    };
    spec.sub_agents.agents = Some(members);
    let id = d
        .start(
            "Plan a weekend.",
            &StartOptions {
                spec,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let end = d.run(id).await.unwrap();
    let RunEnd::Done { reason, detail } = &end else {
        panic!("{end:?}");
    };
    assert_eq!(*reason, FinishReason::Completed);
    assert!(
        detail
            .as_deref()
            .unwrap_or_default()
            .contains("the plan is agreed"),
        "{end:?}"
    );

    // Four turns, each recorded with its author, in order.
    let op = e.store.load_operation(id).await.unwrap().unwrap();
    let turns: Vec<(String, String)> = op
        .state
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .map(|m| (m.author.clone().unwrap_or_default(), m.text_content()))
        .collect();
    let want: Vec<(String, String)> = [
        ("ann", "ann-1"),
        ("bob", "bob-1"),
        ("cy", "cy-1"),
        ("ann", "ann-2"),
    ]
    .iter()
    .map(|(a, t)| ((*a).to_owned(), (*t).to_owned()))
    .collect();
    assert_eq!(turns, want);
    let kids = children(&e, id).await;
    let mut agents: Vec<String> = kids.iter().filter_map(|k| k.agent.clone()).collect();
    agents.sort();
    assert_eq!(agents, ["ann", "ann", "bob", "cy"]);

    // Each speaker read the others' words labelled with their authors, and its own as its own.
    let requests = e.server.requests();
    let of = |marker: &str| -> Vec<String> {
        requests
            .iter()
            .filter(|r| r.system_text().contains(marker))
            .map(|r| r.body["messages"].to_string())
            .collect()
    };
    let bob = of("ROLE-BOB");
    assert_eq!(bob.len(), 1);
    assert!(
        bob[0].contains(r#"[Message from agent \"ann\"]\nann-1"#),
        "{}",
        bob[0]
    );
    assert!(bob[0].contains("Plan a weekend."));
    let ann = of("ROLE-ANN");
    assert_eq!(ann.len(), 2);
    let second: serde_json::Value = serde_json::from_str(&ann[1]).unwrap();
    let own = second
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"].to_string().contains("ann-1"))
        .unwrap();
    assert_eq!(own["role"], "assistant", "its own words stay its own");
    assert!(ann[1].contains(r#"[Message from agent \"bob\"]\nbob-1"#));
    assert!(ann[1].contains(r#"[Message from agent \"cy\"]\ncy-1"#));
    assert!(
        ann[1].contains(r#"[Task from agent \"supervisor\"]\nann, go on"#),
        "{}",
        ann[1]
    );

    // The supervisor was asked five times and its stop was honoured.
    assert_eq!(of("ROLE-SUPERVISOR").len(), 5);
    // One budget: the supervisor's calls and every turn.
    let kid_cost = kids.iter().fold(Usd::ZERO, |a, k| a + k.cost);
    assert_eq!(
        op.record.cost,
        kid_cost + Usd::from_nanos(per_call().nanos() * 5)
    );
}

/// Deciding a sub-agent's call on the sub-agent itself (not through the root) also carries its
/// tree on: once the sub-agent ends, its parent takes the answer and completes.
#[tokio::test]
async fn a_decision_made_on_the_sub_agent_itself_carries_the_tree_on() {
    let e = env().await;
    e.server.route(
        "ROLE-BOSS",
        vec![delegate_booking(), Canned::openai_text("Booked.")],
    );
    e.server.route(
        "ROLE-RESEARCHER",
        vec![
            tools(&[("l1", "ledger__append", serde_json::json!({}))]),
            Canned::openai_text("appended"),
        ],
    );
    let d = driver(&e, InterventionPolicy::Required);
    let id = start(&d, spec(None, ApprovalMode::Manual, Budget::default())).await;
    d.run(id).await.unwrap();
    let kid = children(&e, id).await.remove(0);
    let end = d
        .decide(kid.id, None, Decision::Approve, None)
        .await
        .unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let root = e.store.operation(id).await.unwrap().unwrap();
    assert_eq!(root.status, Status::Done);
    assert_eq!(root.finish_reason, Some(FinishReason::Completed));
    assert_eq!(e.runs.load(Ordering::SeqCst), 1);
}

/// A task the model wrote with a NUL in it becomes the child's first message and its record's
/// prompt with the character shown (PostgreSQL refuses U+0000), and the tree runs on.
#[tokio::test]
async fn a_task_with_control_characters_reaches_the_child_shown() {
    let e = env().await;
    e.server.route(
        "ROLE-BOSS",
        vec![
            tools(&[(
                "d1",
                "agents__delegate",
                serde_json::json!({"title": "facts", "task": "Count\u{0} now.", "agent": "researcher"}),
            )]),
            Canned::openai_text("It counted."),
        ],
    );
    e.server
        .route("ROLE-RESEARCHER", vec![Canned::openai_text("Counted.")]);
    let d = driver(&e, InterventionPolicy::Never);
    let id = start(&d, spec(None, ApprovalMode::AutoRun, Budget::default())).await;
    let end = d.run(id).await.unwrap();
    assert!(matches!(end, RunEnd::Done { .. }), "{end:?}");
    let kids = children(&e, id).await;
    assert_eq!(kids.len(), 1);
    assert_eq!(kids[0].prompt.as_deref(), Some("Count\u{2400} now."));
    let child = e.store.load_operation(kids[0].id).await.unwrap().unwrap();
    assert!(
        child
            .state
            .messages
            .iter()
            .any(|m| m.role == rein_core::Role::User && m.text_content() == "Count\u{2400} now."),
        "{:?}",
        child.state.messages
    );
}
