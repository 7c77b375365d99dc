//! GeneralChatAgent, phase by phase: approvals, headless refusals, scope, unknown-name
//! feedback and its limit, the loop breaker, queued messages, compression, human questions,
//! cancellation and sub-agent follow-ups.

use crate::common;

use common::*;
use futures::FutureExt;
use futures::executor::block_on;
use futures::future::BoxFuture;
use rein_core::agent::CompressionConfig;
use rein_core::engine::ports::{PortError, Summarizer, Summary, ToolOutput};
use rein_core::engine::{
    DecisionError, ExecContext, ExecError, ExecOutput, Executor, abort_pending, answer_prompt,
    approve_tool_call, reject_tool_call,
};
use rein_core::event::EventKind;
use rein_core::instruction::{BlockedReason, Instruction, InstructionKind};
use rein_core::intervention::ApprovalMode;
use rein_core::message::MessageKind;
use rein_core::phase::{Phase, StepContext, SubAgentsResultPayload, ToolFollowUp};
use rein_core::testing::{FnTools, ScriptedLlm, ScriptedTurn};
use rein_core::usage::Usd;
use rein_core::*;
use std::sync::Arc;

fn shell(id: &str, cmd: &str) -> (String, String, String) {
    (
        id.into(),
        "shell__run".into(),
        serde_json::json!({"command": cmd}).to_string(),
    )
}

fn calc_call(id: &str) -> (String, String, String) {
    (
        id.into(),
        "calculator__evaluate".into(),
        r#"{"expression":"6*7"}"#.into(),
    )
}

fn instructions_of(r: &StepResult, step: u32) -> Vec<String> {
    r.events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::StepComplete { instructions, .. } if e.step == step => {
                Some(instructions.iter().map(|k| k.as_str().to_owned()).collect())
            }
            _ => None,
        })
        .unwrap_or_default()
}

#[test]
fn mixed_batch_runs_safe_calls_first_and_parks_the_sensitive_one() {
    let h = harness(vec![
        ScriptedTurn::ToolCalls(vec![calc_call("safe"), shell("risky", "ls")]),
        ScriptedTurn::text("all done"),
    ]);
    let r = run(&h, state("go"));
    assert_eq!(r.state.status, Status::WaitingForHuman);
    assert_eq!(
        instructions_of(&r, 2),
        ["call_tool", "request_human_approve"]
    );
    assert_eq!(
        h.tools.calls(),
        ["calculator/evaluate"],
        "safe call ran, risky one waits"
    );
    let pending: Vec<&str> = r
        .state
        .pending_tool_calls
        .iter()
        .map(|c| c.id.as_ref())
        .collect();
    assert_eq!(pending, ["risky"]);
    let statuses: Vec<_> = tool_messages(&r.state)
        .iter()
        .map(|m| m.tool_status.unwrap())
        .collect();
    assert_eq!(statuses, [ToolStatus::Succeeded, ToolStatus::Pending]);
    assert!(
        r.events
            .iter()
            .any(|e| matches!(e.kind, EventKind::HumanApproveRequired { .. }))
    );
    assert_eq!(r.state.usage.human.approval_requests, 1);

    // Approve: the pending row is filled in place and the run completes.
    let (s, ctx) = approve_tool_call(r.state.clone(), "risky").unwrap();
    let done = block_on(h.runtime.run(s, Some(ctx)));
    assert_eq!(finish_reason(&done.state), Some(FinishReason::Completed));
    assert_eq!(h.tools.calls(), ["calculator/evaluate", "shell/run"]);
    let tools = tool_messages(&done.state);
    assert_eq!(tools.len(), 2, "no duplicate row for the approved call");
    assert_eq!(tools[1].tool_status, Some(ToolStatus::Succeeded));
    assert_eq!(tools[1].text_content(), "ran: ls");

    // A decision is single-use.
    let err = approve_tool_call(r.state.clone(), "nope").unwrap_err();
    assert_eq!(err, DecisionError::UnknownToolCall("nope".into()));
    let err = approve_tool_call(done.state, "risky").unwrap_err();
    assert!(matches!(err, DecisionError::NotWaiting(Status::Done)));
}

#[test]
fn two_pending_calls_re_park_after_the_first_decision() {
    let h = harness(vec![
        ScriptedTurn::ToolCalls(vec![shell("s1", "ls"), shell("s2", "pwd")]),
        ScriptedTurn::text("ok"),
    ]);
    let parked = run(&h, state("go"));
    assert_eq!(parked.state.pending_tool_calls.len(), 2);
    let (s, ctx) = approve_tool_call(parked.state, "s1").unwrap();
    let r = block_on(h.runtime.run(s, Some(ctx)));
    assert_eq!(
        r.state.status,
        Status::WaitingForHuman,
        "s2 still needs a decision"
    );
    assert_eq!(
        r.state
            .pending_tool_calls
            .iter()
            .map(|c| c.id.as_ref())
            .collect::<Vec<_>>(),
        ["s2"]
    );
    assert_eq!(
        tool_messages(&r.state).len(),
        2,
        "re-park creates no new rows"
    );
    assert_eq!(
        r.state.usage.human.approval_requests, 1,
        "a re-park is not a new request"
    );

    // Reject and continue: the model reads the rejection.
    let (s, ctx) = reject_tool_call(r.state, "s2", Some("not now"), false).unwrap();
    let r = block_on(h.runtime.run(s, ctx));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    let rejected = tool_messages(&r.state)[1];
    assert_eq!(rejected.tool_status, Some(ToolStatus::Rejected));
    assert!(rejected.text_content().contains("not now"));
    assert_eq!(h.tools.calls(), ["shell/run"]);
}

#[test]
fn reject_and_halt_stops_for_good() {
    let h = harness(vec![ScriptedTurn::ToolCalls(vec![shell("s1", "ls")])]);
    let parked = run(&h, state("go"));
    let (s, ctx) = reject_tool_call(parked.state, "s1", None, true).unwrap();
    assert!(ctx.is_none());
    assert_eq!(s.status, Status::Interrupted);
    assert!(!s.interruption.as_ref().unwrap().can_resume);
    assert!(h.runtime.resume(s, "please").is_err());
}

#[test]
fn aborting_pending_approvals_settles_them_and_finishes() {
    let h = harness(vec![ScriptedTurn::ToolCalls(vec![shell("s1", "ls")])]);
    let parked = run(&h, state("go"));
    let (s, ctx) = abort_pending(parked.state, "user closed the tab");
    let r = block_on(h.runtime.run(s, Some(ctx)));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::UserAborted));
    assert_eq!(
        tool_messages(&r.state)[0].tool_status,
        Some(ToolStatus::Aborted)
    );
    assert!(r.state.pending_tool_calls.is_empty());
}

#[test]
fn cancelling_a_parked_operation_settles_pending_calls() {
    let h = harness(vec![ScriptedTurn::ToolCalls(vec![shell("s1", "ls")])]);
    let parked = run(&h, state("go"));
    let interrupted = h.runtime.interrupt(parked.state, "cancelled via API", true);
    let r = step(&h, interrupted.state, None);
    assert_eq!(
        instructions_of(&r, r.state.step_count + 1),
        ["resolve_aborted_tools", "finish"]
    );
    assert_eq!(finish_reason(&r.state), Some(FinishReason::UserRequested));
    assert_eq!(
        tool_messages(&r.state)[0].tool_status,
        Some(ToolStatus::Aborted)
    );
    assert!(h.tools.calls().is_empty());
}

#[test]
fn headless_refuses_with_a_readable_result_and_continues() {
    let h = harness(vec![
        ScriptedTurn::ToolCalls(vec![shell("s1", "sudo rm -rf ~/")]),
        ScriptedTurn::text("I cannot do that"),
    ]);
    let mut s = state("wipe my home");
    s.intervention.approval_mode = ApprovalMode::Headless;
    let r = run(&h, s);
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert!(h.tools.calls().is_empty(), "the command never ran");
    let t = tool_messages(&r.state)[0];
    assert_eq!(t.tool_status, Some(ToolStatus::Blocked));
    assert!(t.text_content().contains("Blocked by security policy"));
}

#[test]
fn auto_run_cannot_bypass_an_always_rule() {
    let h = harness(vec![ScriptedTurn::ToolCalls(vec![
        shell("s1", "bash -c 'rm -rf /'"),
        shell("s2", "ls"),
    ])]);
    let mut s = state("go");
    s.intervention.approval_mode = ApprovalMode::AutoRun;
    let r = run(&h, s);
    assert_eq!(r.state.status, Status::WaitingForHuman);
    assert_eq!(h.tools.calls(), ["shell/run"], "only `ls` ran");
    assert_eq!(&*r.state.pending_tool_calls[0].id, "s1");
}

#[test]
fn allow_list_scope_omitted_empty_and_partial() {
    let turns = || {
        vec![
            ScriptedTurn::ToolCalls(vec![calc_call("c1"), shell("s1", "ls")]),
            ScriptedTurn::text("ok"),
        ]
    };
    let with_scope = |scope: Option<Vec<String>>| {
        let cfg = GeneralChatAgentConfig {
            allowed_tools: scope,
            ..Default::default()
        };
        let h = harness_with(
            turns(),
            GeneralChatAgent::new(cfg),
            RuntimeConfig::default(),
            Usd::ZERO,
        );
        let mut s = state("go");
        s.intervention.approval_mode = ApprovalMode::AutoRun;
        let r = run(&h, s);
        (r, h)
    };
    let (r, h) = with_scope(None);
    assert_eq!(h.tools.calls().len(), 2);
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));

    let (r, h) = with_scope(Some(vec![]));
    assert!(
        h.tools.calls().is_empty(),
        "an explicit empty list blocks everything"
    );
    assert!(tool_messages(&r.state).iter().all(|m| {
        m.tool_status == Some(ToolStatus::Blocked)
            && m.text_content()
                .contains("not allowed in the current execution scope")
    }));

    let (r, h) = with_scope(Some(vec!["calculator".into()]));
    assert_eq!(h.tools.calls(), ["calculator/evaluate"]);
    assert_eq!(
        instructions_of(&r, 2),
        ["resolve_blocked_tools", "call_tool"]
    );
}

#[test]
fn unknown_tool_names_get_feedback_then_end_visibly_after_three_rounds() {
    let bad = || ScriptedTurn::tool("x", "calculator_evaluate_v2", "{}");
    let h = harness(vec![
        bad(),
        bad(),
        bad(),
        bad(),
        ScriptedTurn::text("never reached"),
    ]);
    let r = run(&h, state("go"));
    assert_eq!(r.state.status, Status::Done);
    let f = r.state.finish.as_ref().unwrap();
    assert_eq!(f.reason, FinishReason::ToolNameErrors);
    assert!(!f.reason.is_success(), "never a silent completion");
    assert!(
        f.detail
            .as_deref()
            .unwrap()
            .contains("calculator_evaluate_v2")
    );
    assert_eq!(r.state.tool_name_error_rounds, 3);
    assert_eq!(h.llm.remaining(), 1, "the fourth bad round ended the run");
    let feedback = tool_messages(&r.state)[0].text_content();
    assert!(
        feedback.contains("`calculator_evaluate_v2` does not exist"),
        "{feedback}"
    );
    assert!(
        feedback.contains("calculator__evaluate, costly__spend, shell__run"),
        "{feedback}"
    );
    assert!(h.tools.calls().is_empty());
}

#[test]
fn a_corrected_name_after_feedback_completes() {
    let h = harness(vec![
        ScriptedTurn::tool("x", "calc", "{}"),
        calc("c1"),
        ScriptedTurn::text("42"),
    ]);
    let r = run(&h, state("go"));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(r.state.tool_name_error_rounds, 1);
    assert_eq!(h.tools.calls(), ["calculator/evaluate"]);
}

#[test]
fn malformed_arguments_become_a_tool_error_the_model_can_read() {
    let h = harness(vec![
        ScriptedTurn::tool("c1", "calculator__evaluate", "{\"expression\": "),
        ScriptedTurn::text("sorry"),
    ]);
    let r = run(&h, state("go"));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    let t = tool_messages(&r.state)[0];
    assert_eq!(t.tool_status, Some(ToolStatus::Failed));
    assert!(
        t.text_content().contains("not valid JSON"),
        "{}",
        t.text_content()
    );
    assert!(h.tools.calls().is_empty());
    assert_eq!(r.state.usage.by_tool["calculator/evaluate"].errors, 1);
}

#[test]
fn the_loop_breaker_ends_five_identical_calls_in_a_row() {
    let same = |id: &str, args: &str| ScriptedTurn::tool(id, "calculator__evaluate", args);
    let h = harness(vec![
        same("1", r#"{"a":1,"b":2}"#),
        same("2", r#"{"b":2, "a":1}"#),
        same("3", r#"{"a":1,"b":2}"#),
        same("4", r#"{"a":1,"b":2}"#),
        same("5", r#"{"a":1,"b":2}"#),
        ScriptedTurn::text("unreachable"),
    ]);
    let r = run(&h, state("go"));
    let f = r.state.finish.as_ref().unwrap();
    assert_eq!(f.reason, FinishReason::LoopDetected);
    assert!(f.detail.as_deref().unwrap().contains("5 times in a row"));
    assert_eq!(
        h.tools.calls().len(),
        4,
        "key order does not make calls different"
    );

    // Different arguments reset the count.
    let h = harness(vec![
        same("1", r#"{"a":1}"#),
        same("2", r#"{"a":1}"#),
        same("3", r#"{"a":2}"#),
        same("4", r#"{"a":1}"#),
        same("5", r#"{"a":1}"#),
        ScriptedTurn::text("fine"),
    ]);
    assert_eq!(
        finish_reason(&run(&h, state("go")).state),
        Some(FinishReason::Completed)
    );

    // Configurable off.
    let cfg = GeneralChatAgentConfig {
        loop_breaker: None,
        ..Default::default()
    };
    let turns: Vec<_> = (0..6)
        .map(|i| same(&i.to_string(), "{}"))
        .chain([ScriptedTurn::text("ok")])
        .collect();
    let h = harness_with(
        turns,
        GeneralChatAgent::new(cfg),
        RuntimeConfig::default(),
        Usd::ZERO,
    );
    assert_eq!(
        finish_reason(&run(&h, state("go")).state),
        Some(FinishReason::Completed)
    );
}

#[test]
fn a_queued_user_message_interrupts_softly_after_tools() {
    let h = harness(vec![calc("c1"), ScriptedTurn::text("unused")]);
    let r = step(&h, state("go"), None);
    let mut ctx = r.next_context.unwrap();
    ctx.step = StepContext {
        has_queued_messages: true,
        ..Default::default()
    };
    let r = step(&h, r.state, Some(ctx));
    let mut ctx = r.next_context.unwrap();
    ctx.step.has_queued_messages = true;
    let r = step(&h, r.state, Some(ctx));
    assert_eq!(
        finish_reason(&r.state),
        Some(FinishReason::QueuedMessageInterrupt)
    );
}

#[test]
fn stale_pending_rows_from_an_older_turn_do_not_park() {
    let h = harness(vec![
        ScriptedTurn::ToolCalls(vec![shell("old", "ls")]),
        calc("c1"),
        ScriptedTurn::text("ok"),
    ]);
    let parked = run(&h, state("go"));
    // Leave the old approval undecided but move on: the user asks something new.
    let mut s = parked.state;
    s.status = Status::Running;
    s.pending_tool_calls.clear();
    s.push_message(Message::user("never mind, compute instead"));
    let r = run(&h, s);
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(h.tools.calls(), ["calculator/evaluate"]);
}

struct Echo;

impl Summarizer for Echo {
    fn summarize<'a>(
        &'a self,
        messages: &'a [Arc<Message>],
        existing: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Summary, PortError>> {
        async move {
            Ok(Summary {
                text: format!(
                    "summary of {} messages (had summary: {})",
                    messages.len(),
                    existing.is_some()
                ),
                usage: usage(40),
                cost: Usd::from_nanos(5),
                model_key: "scripted/summarizer".into(),
            })
        }
        .boxed()
    }
}

fn long_conversation() -> AgentState {
    let mut s = state("first question");
    for i in 0..6 {
        s.push_message(Message::assistant(format!(
            "answer {i} {}",
            "x".repeat(400)
        )));
        s.push_message(Message::user(format!("follow-up {i}")));
    }
    s
}

fn small_window() -> GeneralChatAgent {
    GeneralChatAgent::new(GeneralChatAgentConfig {
        compression: CompressionConfig {
            window_tokens: 1_000,
            threshold_ratio: Some(0.5),
            ..Default::default()
        },
        ..Default::default()
    })
}

#[test]
fn an_oversized_context_is_compressed_before_the_model_call() {
    let cfg = RuntimeConfig {
        summarizer: Some(Arc::new(Echo)),
        ..Default::default()
    };
    let h = harness_with(
        vec![ScriptedTurn::text("fresh answer")],
        small_window(),
        cfg,
        Usd::ZERO,
    );
    let r = run(&h, long_conversation());
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(instructions_of(&r, 1), ["compress_context"]);
    assert_eq!(instructions_of(&r, 2), ["call_llm"]);
    let kinds: Vec<(Role, MessageKind)> =
        r.state.messages.iter().map(|m| (m.role, m.kind)).collect();
    assert_eq!(
        kinds,
        [
            (Role::User, MessageKind::CompressionSummary),
            (Role::User, MessageKind::Normal),
            (Role::Assistant, MessageKind::Normal)
        ],
        "summary, the kept last user message, the new answer"
    );
    assert_eq!(
        r.state.messages[0].text_content(),
        "summary of 12 messages (had summary: false)"
    );
    assert_eq!(r.state.messages[1].text_content(), "follow-up 5");
    assert_eq!(r.state.usage.by_model["scripted/summarizer"].calls, 1);
    assert_eq!(h.llm.seen()[0].message_count, 2);
}

#[test]
fn compression_keeps_the_newest_messages_within_the_token_budget() {
    // Heuristic estimator: "follow-up 5" is 7 tokens, each long answer 107; a budget of 125
    // keeps follow-up 4, answer 5 and follow-up 5, and summarizes the 10 before them.
    let cfg = RuntimeConfig {
        summarizer: Some(Arc::new(Echo)),
        keep_recent_tokens: 125,
        ..Default::default()
    };
    let h = harness_with(
        vec![ScriptedTurn::text("fresh answer")],
        small_window(),
        cfg,
        Usd::ZERO,
    );
    let r = run(&h, long_conversation());
    assert_eq!(instructions_of(&r, 1), ["compress_context"]);
    let texts: Vec<String> = r
        .state
        .messages
        .iter()
        .map(|m| m.text_content().chars().take(11).collect())
        .collect();
    assert_eq!(
        texts,
        [
            "summary of ",
            "follow-up 4",
            "answer 5 xx",
            "follow-up 5",
            "fresh answe"
        ]
    );
    assert_eq!(
        r.state.messages[0].text_content(),
        "summary of 10 messages (had summary: false)"
    );
}

#[test]
fn compression_keeps_the_newest_tool_round_whole_and_the_instruction_before_it() {
    let mut s = long_conversation();
    let call = ToolCall::new("c1", "calculator", "evaluate", "{}");
    let mut a = Message::assistant("x".repeat(2_000));
    a.tool_calls.push(call.clone());
    let a_id = a.id;
    s.push_message(a);
    s.push_message(Message::tool_result(
        &call,
        Some(a_id),
        ToolStatus::Succeeded,
        "2",
    ));
    // The budget fits the small result but not the long assistant message that called it: the
    // round is the model's latest work, so both stay, and never the result without its call.
    let cfg = RuntimeConfig {
        summarizer: Some(Arc::new(Echo)),
        keep_recent_tokens: 50,
        ..Default::default()
    };
    let h = harness_with(
        vec![ScriptedTurn::text("fresh answer")],
        small_window(),
        cfg,
        Usd::ZERO,
    );
    let r = run(&h, s);
    assert_eq!(instructions_of(&r, 1), ["compress_context"]);
    let m = &r.state.messages;
    assert_eq!(m[0].kind, MessageKind::CompressionSummary);
    assert_eq!(
        m[0].text_content(),
        "summary of 12 messages (had summary: false)",
        "everything but the instruction and the newest round"
    );
    // Then the person's latest instruction, verbatim, then the round.
    assert_eq!(
        (m[1].role, m[1].text_content().as_str()),
        (Role::User, "follow-up 5")
    );
    assert_eq!(m[2].tool_calls[0].id.as_ref(), "c1");
    assert_eq!(m[3].tool_call_id.as_deref(), Some("c1"));
    assert_eq!(m[4].text_content(), "fresh answer");
}

#[test]
fn compression_without_a_summarizer_reports_and_continues() {
    let h = harness_with(
        vec![ScriptedTurn::text("answer anyway")],
        small_window(),
        RuntimeConfig::default(),
        Usd::ZERO,
    );
    let r = run(&h, long_conversation());
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert!(r.events.iter().any(|e| matches!(&e.kind, EventKind::CompressionError { message } if message.contains("no summarizer"))));
    assert_eq!(r.state.messages.len(), 14, "nothing lost");
}

/// Asks the human a question first, then behaves like GeneralChatAgent.
struct Asker(GeneralChatAgent);

impl Agent for Asker {
    fn runner(
        &self,
        ctx: &RuntimeContext,
        state: &AgentState,
    ) -> Result<Vec<Instruction>, AgentError> {
        match ctx.phase {
            Phase::UserInput(_) => Ok(vec![Instruction::RequestHumanPrompt {
                prompt: "Which city?".into(),
                reason: None,
                metadata: None,
            }]),
            _ => self.0.runner(ctx, state),
        }
    }
}

#[test]
fn a_human_prompt_parks_and_the_answer_resumes_with_human_response() {
    let llm = Arc::new(ScriptedLlm::new(
        [ScriptedTurn::text("Sunny in Oslo")],
        usage(10),
        Usd::ZERO,
    ));
    let rt = AgentRuntime::new(
        Arc::new(Asker(GeneralChatAgent::default())),
        RuntimeConfig {
            llm: Some(llm),
            tools: Some(Arc::new(FnTools::new())),
            ..Default::default()
        },
    );
    let r = block_on(rt.run(state("weather?"), None));
    assert_eq!(r.state.status, Status::WaitingForHuman);
    assert_eq!(
        r.state.pending_human_prompt.as_ref().unwrap().prompt,
        "Which city?"
    );
    let (s, ctx) = answer_prompt(r.state, "Oslo").unwrap();
    assert!(matches!(ctx.phase, Phase::HumanResponse(_)));
    let r = block_on(rt.run(s, Some(ctx)));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(r.state.messages[1].text_content(), "Oslo");
    assert_eq!(
        answer_prompt(r.state, "again").unwrap_err(),
        DecisionError::NotWaiting(Status::Done)
    );
}

/// A sub-agent executor that parks the operation on one child per task, as a host does.
struct SubAgents;

impl Executor for SubAgents {
    fn execute<'a>(
        &'a self,
        ins: Instruction,
        state: &'a mut AgentState,
        _cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            let Instruction::ExecSubAgents { payload } = ins else {
                return Err(ExecError::new(
                    rein_core::failure::Fault::ExecutorMismatch,
                    "expected exec_sub_agents",
                ));
            };
            state.delegated.clear();
            for task in payload.tasks {
                state.sub_agents.push(rein_core::state::SubAgentRun {
                    operation_id: OperationId::new(),
                    tool_call_id: task.tool_call_id.clone().unwrap_or_default(),
                    agent: task.target_agent_id.clone(),
                    title: task.description.clone(),
                });
            }
            state.status = Status::WaitingForSubAgents;
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}

fn ended(id: OperationId, answer: &str, cost: Usd, ok: bool) -> rein_core::engine::SubAgentEnd {
    let mut c = rein_core::usage::Cost::default();
    c.record_llm("p/m", cost);
    rein_core::engine::SubAgentEnd {
        operation_id: id,
        status: Status::Done,
        finish: Some(rein_core::state::Finish {
            reason: if ok {
                FinishReason::Completed
            } else {
                FinishReason::CostLimitExceeded
            },
            detail: None,
        }),
        error: None,
        answer: Some(answer.into()),
        usage: Default::default(),
        cost: c,
    }
}

#[test]
fn a_tool_follow_up_parks_on_sub_agents_whose_answers_answer_the_call() {
    let task = rein_core::instruction::SubAgentTask {
        description: "research".into(),
        instruction: "find facts".into(),
        inherit_messages: false,
        timeout_ms: None,
        target_agent_id: None,
        tool_call_id: None,
        system_role: None,
        tools: None,
    };
    let tools = FnTools::new().with("calculator/evaluate", move |_| {
        Ok(ToolOutput {
            follow_up: Some(ToolFollowUp::SubAgents {
                tasks: vec![task.clone(), task.clone()],
            }),
            ..ToolOutput::ok("delegated")
        })
    });
    let llm = Arc::new(ScriptedLlm::new(
        [calc("c1"), ScriptedTurn::text("merged")],
        usage(10),
        Usd::ZERO,
    ));
    let mut cfg = RuntimeConfig {
        llm: Some(llm.clone()),
        tools: Some(Arc::new(tools)),
        ..Default::default()
    };

    // Without a sub-agent executor the run fails visibly.
    let rt = AgentRuntime::new(Arc::new(GeneralChatAgent::default()), cfg.clone());
    let r = block_on(rt.run(state("go"), None));
    assert_eq!(r.state.status, Status::Error);
    assert!(r.state.error.unwrap().message.contains("exec_sub_agents"));

    let llm = Arc::new(ScriptedLlm::new(
        [calc("c1"), ScriptedTurn::text("merged")],
        usage(10),
        Usd::ZERO,
    ));
    cfg.llm = Some(llm);
    cfg.executors
        .insert(InstructionKind::ExecSubAgents, Arc::new(SubAgents));
    let rt = AgentRuntime::new(Arc::new(GeneralChatAgent::default()), cfg);
    let mut r = block_on(rt.run(state("go"), None));
    assert_eq!(r.state.status, Status::WaitingForSubAgents);
    assert!(r.state.delegated.is_empty());
    let runs = r.state.sub_agents.clone();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r.tool_call_id == "c1"));
    // The delegating call waits on its sub-agents, not on a human.
    assert_eq!(
        r.state.tool_message_mut("c1").and_then(|m| m.tool_status),
        Some(ToolStatus::Pending)
    );
    let own = r.state.cost.total;

    // Not all ended: refused.
    let partial = [ended(
        runs[0].operation_id,
        "first",
        Usd::from_dollars(1.0),
        true,
    )];
    assert_eq!(
        rt.sub_agents_ended(r.state.clone(), &partial).unwrap_err(),
        DecisionError::SubAgentRunning(runs[1].operation_id)
    );
    let ends = [
        ended(
            runs[1].operation_id,
            "second",
            Usd::from_dollars(2.0),
            false,
        ),
        ended(runs[0].operation_id, "first", Usd::from_dollars(1.0), true),
    ];
    let e = rt.sub_agents_ended(r.state, &ends).unwrap();
    assert_eq!(e.state.status, Status::Running);
    assert!(e.state.sub_agents.is_empty());
    // Costs roll up exactly; the answers come back in task order, the failure visibly.
    assert_eq!(e.state.cost.total, own + Usd::from_dollars(3.0));
    let mut s = e.state;
    let result = s.tool_message_mut("c1").unwrap().clone();
    assert_eq!(result.tool_status, Some(ToolStatus::Failed));
    let text = result.text_content();
    let (a, b) = (
        text.find("first").unwrap(),
        text.find("Not completed").unwrap(),
    );
    assert!(a < b, "{text}");
    assert!(text.contains("cost_limit_exceeded"), "{text}");
    let ended_events = e
        .events
        .iter()
        .filter(|ev| matches!(ev.kind, EventKind::SubAgentEnded { .. }))
        .count();
    assert_eq!(ended_events, 2);
    let r = block_on(rt.run(s, e.next_context));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(r.state.messages.last().unwrap().text_content(), "merged");
}

#[test]
fn every_phase_has_a_decision() {
    let agent = GeneralChatAgent::default();
    let s = state("x");
    let call = ToolCall::new("c", "calculator", "evaluate", "{}");
    let mid = MessageId::new();
    let phases = [
        Phase::Init,
        Phase::UserInput(Default::default()),
        Phase::HumanResponse(Default::default()),
        Phase::SubAgentResult(SubAgentsResultPayload {
            parent_message_id: None,
            results: vec![],
        }),
        Phase::SubAgentsBatchResult(SubAgentsResultPayload {
            parent_message_id: None,
            results: vec![],
        }),
        Phase::CompressionResult(Default::default()),
        Phase::ToolsBatchResult(rein_core::phase::ToolsBatchResultPayload {
            parent_message_id: None,
            results: vec![],
        }),
        Phase::HumanApprovedTool(rein_core::phase::HumanApprovedToolPayload {
            tool_call: call.clone(),
            parent_message_id: Some(mid),
            tool_message_id: None,
        }),
        Phase::HumanAbort(rein_core::phase::HumanAbortPayload {
            parent_message_id: Some(mid),
            reason: "r".into(),
            tool_calls: vec![call.clone()],
        }),
        Phase::Error(rein_core::phase::ErrorPayload {
            code: rein_core::failure::Fault::Internal.into(),
            message: "m".into(),
        }),
    ];
    let expected = [
        vec!["call_llm"],
        vec!["call_llm"],
        vec!["call_llm"],
        vec!["call_llm"],
        vec!["call_llm"],
        vec!["call_llm"],
        vec!["call_llm"],
        vec!["call_tool"],
        vec!["resolve_aborted_tools", "finish"],
        vec!["finish"],
    ];
    for (phase, want) in phases.into_iter().zip(expected) {
        let name = phase.name();
        let got: Vec<&str> = agent
            .runner(&RuntimeContext::new(phase), &s)
            .unwrap()
            .iter()
            .map(|i| i.kind().as_str())
            .collect();
        assert_eq!(got, want, "phase {name}");
    }
    // After compression the model call always gets a fresh assistant message.
    let out = agent
        .runner(
            &RuntimeContext::new(Phase::CompressionResult(Default::default())),
            &s,
        )
        .unwrap();
    assert!(
        matches!(&out[0], Instruction::CallLlm { payload } if payload.create_assistant_message)
    );
    // Blocked reasons are typed on the wire.
    assert_eq!(
        serde_json::to_value(BlockedReason::UnknownToolName).unwrap(),
        "unknown_tool_name"
    );
}

#[test]
fn only_offered_tool_schemas_count_toward_the_compression_threshold() {
    let mut s = state("hi");
    s.push_message(Message::assistant("hello"));
    s.push_message(Message::user("and now?"));
    let mut big = rein_core::testing::manifest("encyclopedia", &["lookup"]);
    big.apis[0].description = "x".repeat(8_000);
    s = s.with_tool(big);
    s = s.with_tool(rein_core::testing::manifest("calculator", &["evaluate"]));
    let ctx = RuntimeContext::new(Phase::UserInput(Default::default()));
    let kind = |agent: GeneralChatAgent| agent.runner(&ctx, &s).unwrap()[0].kind();
    // 8,000 bytes of schema is ~2,000 tokens, over a 500-token threshold.
    assert_eq!(kind(small_window()), InstructionKind::CompressContext);
    let mut narrow = small_window().config().clone();
    narrow.allowed_tools = Some(vec!["calculator".into()]);
    assert_eq!(
        kind(GeneralChatAgent::new(narrow)),
        InstructionKind::CallLlm,
        "the encyclopedia is not offered, so its schema does not count"
    );
    // Under progressive disclosure an inactive tool counts as its listed line only...
    let mut progressive = small_window().config().clone();
    progressive.progressive_tools = Some(vec!["calculator".into()]);
    assert_eq!(
        kind(GeneralChatAgent::new(progressive.clone())),
        InstructionKind::CallLlm
    );
    // ...until the model activates it: then its whole schema is sent, and counted.
    let mut activated = s.clone();
    activated
        .activated_tools
        .push(rein_core::tool::ActivatedTool {
            identifier: "encyclopedia".into(),
            activated_at_step: 1,
            source: "discovery".into(),
        });
    assert_eq!(
        GeneralChatAgent::new(progressive)
            .runner(&ctx, &activated)
            .unwrap()[0]
            .kind(),
        InstructionKind::CompressContext
    );
}
