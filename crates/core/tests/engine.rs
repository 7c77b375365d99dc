//! The engine: step semantics, executor precedence, errors, force-finish, budgets, batches,
//! interruption and resume.

use crate::common;

use common::*;
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::PortError;
use rein_core::engine::{ExecContext, ExecError, ExecOutput, Executor, ExecutorTable};
use rein_core::event::{Amount, EventKind};
use rein_core::instruction::{Instruction, InstructionKind};
use rein_core::phase::{LlmResultPayload, Phase};
use rein_core::state::{Budget, BudgetKind, BudgetPolicy};
use rein_core::testing::ScriptedTurn;
use rein_core::usage::Usd;
use rein_core::*;
use std::sync::Arc;

#[test]
fn a_plain_answer_completes_in_one_counted_step_with_contiguous_events() {
    let h = harness(vec![ScriptedTurn::text("Hello there")]);
    let r = run(&h, state("hi"));
    assert_eq!(r.state.status, Status::Done);
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(r.state.step_count, 1, "the finishing step does not count");
    assert_eq!(
        event_types(&r.events),
        [
            "step_start",
            "llm_start",
            "llm_stream",
            "llm_stream",
            "llm_result",
            "step_complete",
            "step_start",
            "done",
            "step_complete"
        ]
    );
    let seqs: Vec<u64> = r.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (0..r.events.len() as u64).collect::<Vec<_>>());
    assert_eq!(r.state.next_event_seq, r.events.len() as u64);
    assert_eq!(r.events.last().unwrap().step, 2);
    let answer = r.state.messages.last().unwrap();
    assert_eq!(
        (answer.role, answer.text_content().as_str()),
        (Role::Assistant, "Hello there")
    );
    assert_eq!(answer.parent_id, Some(r.state.messages[0].id));
    assert_eq!(r.state.usage.llm.calls, 1);
    assert_eq!(r.state.usage.by_model["scripted/m1"].tokens.total, 100);
}

#[test]
fn a_tool_round_trip_links_messages_and_accounts_usage() {
    let h = harness(vec![calc("c1"), ScriptedTurn::text("It is 42")]);
    let r = run(&h, state("6*7?"));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(h.tools.calls(), ["calculator/evaluate"]);
    let roles: Vec<Role> = r.state.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
    let (asst, tool) = (&r.state.messages[1], &r.state.messages[2]);
    assert_eq!(tool.parent_id, Some(asst.id));
    assert_eq!(tool.tool_call_id.as_deref(), Some("c1"));
    assert_eq!(tool.tool_status, Some(ToolStatus::Succeeded));
    assert_eq!(tool.text_content(), "42");
    assert_eq!(r.state.usage.by_tool["calculator/evaluate"].calls, 1);
    assert_eq!(r.state.usage.llm.calls, 2);
    assert_eq!(r.state.step_count, 3);
}

/// Finishes with its label as detail, to observe which executor won.
struct Labelled(&'static str);

impl Executor for Labelled {
    fn execute<'a>(
        &'a self,
        _ins: Instruction,
        state: &'a mut AgentState,
        _cx: &'a ExecContext<'a>,
    ) -> BoxFuture<'a, Result<ExecOutput, ExecError>> {
        async move {
            state.status = Status::Done;
            state.finish = Some(rein_core::state::Finish {
                reason: FinishReason::AgentDecision,
                detail: Some(self.0.into()),
            });
            Ok(ExecOutput::new(None))
        }
        .boxed()
    }
}

/// An agent that always finishes and may bring its own executors.
struct Finisher(Option<&'static str>);

impl Agent for Finisher {
    fn runner(&self, _: &RuntimeContext, _: &AgentState) -> Result<Vec<Instruction>, AgentError> {
        Ok(vec![Instruction::finish(
            FinishReason::Completed,
            "builtin",
        )])
    }
    fn executors(&self) -> ExecutorTable {
        match self.0 {
            Some(label) => {
                ExecutorTable::new().with(InstructionKind::Finish, Arc::new(Labelled(label)))
            }
            None => ExecutorTable::new(),
        }
    }
}

#[test]
fn executor_precedence_is_builtin_then_config_then_agent() {
    let detail = |agent: Finisher, config: Option<&'static str>| {
        let mut cfg = RuntimeConfig::default();
        if let Some(l) = config {
            cfg.executors
                .insert(InstructionKind::Finish, Arc::new(Labelled(l)));
        }
        let rt = AgentRuntime::new(Arc::new(agent), cfg);
        let r = futures::executor::block_on(rt.step(state("x"), None));
        r.state.finish.unwrap().detail.unwrap()
    };
    assert_eq!(detail(Finisher(None), None), "builtin");
    assert_eq!(detail(Finisher(None), Some("config")), "config");
    assert_eq!(detail(Finisher(Some("agent")), Some("config")), "agent");
}

#[test]
fn a_missing_executor_is_an_error_result_not_a_panic() {
    let rt = AgentRuntime::new(
        Arc::new(GeneralChatAgent::default()),
        RuntimeConfig::default(),
    );
    let input = state("hi");
    let r = futures::executor::block_on(rt.step(input.clone(), None));
    assert_eq!(r.state.status, Status::Error);
    let err = r.state.error.as_ref().unwrap();
    assert_eq!(err.code, "executor_missing");
    assert!(err.message.contains("call_llm"), "{}", err.message);
    assert_eq!(r.state.messages, input.messages, "the input state is kept");
    assert_eq!(r.state.step_count, 1);
    assert!(r.next_context.is_none());
    assert!(matches!(
        r.events.last().unwrap().kind,
        EventKind::Error { .. }
    ));
}

#[test]
fn a_provider_failure_fails_the_step_from_the_input_state() {
    let h = harness(vec![ScriptedTurn::Fail(PortError::new(
        rein_core::failure::ErrorKind::RateLimit,
        "slow down",
    ))]);
    let r = run(&h, state("hi"));
    assert_eq!(r.state.status, Status::Error);
    assert_eq!(r.state.error.as_ref().unwrap().code, "rate_limit");
    assert_eq!(
        r.state.messages.len(),
        1,
        "no half-written assistant message"
    );
}

#[test]
fn stepping_a_parked_operation_does_nothing_until_a_decision() {
    let h = harness(vec![
        ScriptedTurn::ToolCalls(vec![(
            "s1".into(),
            "shell__run".into(),
            r#"{"command":"ls"}"#.into(),
        )]),
        ScriptedTurn::text("unused"),
    ]);
    let parked = run(&h, state("go")).state;
    assert_eq!(parked.status, Status::WaitingForHuman);
    let again = step(&h, parked.clone(), None);
    assert_eq!(again.state, parked);
    assert!(again.events.is_empty() && again.next_context.is_none());
    assert_eq!(
        h.llm.remaining(),
        1,
        "the model was not called behind the human's back"
    );
}

/// A brain with nothing to say.
struct Mute;

impl Agent for Mute {
    fn runner(&self, _: &RuntimeContext, _: &AgentState) -> Result<Vec<Instruction>, AgentError> {
        Ok(Vec::new())
    }
}

#[test]
fn a_brain_without_instructions_fails_visibly() {
    let rt = AgentRuntime::new(Arc::new(Mute), RuntimeConfig::default());
    let r = futures::executor::block_on(rt.step(state("x"), None));
    assert_eq!(r.state.status, Status::Error);
    assert_eq!(r.state.error.unwrap().code, "agent_no_instructions");
}

#[test]
fn stepping_a_finished_operation_does_nothing() {
    let h = harness(vec![ScriptedTurn::text("done")]);
    let done = run(&h, state("hi")).state;
    let again = step(&h, done.clone(), None);
    assert_eq!(again.state, done);
    assert!(again.events.is_empty() && again.next_context.is_none());
}

#[test]
fn crossing_max_steps_forces_a_tool_free_final_answer() {
    let h = harness(vec![calc("c1"), ScriptedTurn::text("Summary: 42")]);
    let mut s = state("loop");
    s.max_steps = Some(2);
    let r = run(&h, s);
    assert_eq!(
        finish_reason(&r.state),
        Some(FinishReason::MaxStepsCompleted)
    );
    assert!(r.state.force_finish);
    let seen = h.llm.seen();
    assert_eq!(
        seen.iter().map(|s| s.force_finish).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(
        r.state.messages.last().unwrap().text_content(),
        "Summary: 42"
    );
}

#[test]
fn tool_calls_after_force_finish_are_not_run() {
    let h = harness(vec![calc("c1"), calc("c2")]);
    let mut s = state("loop");
    s.max_steps = Some(2);
    let r = run(&h, s);
    let f = r.state.finish.as_ref().unwrap();
    assert_eq!(f.reason, FinishReason::MaxStepsCompleted);
    assert!(f.detail.as_deref().unwrap().contains("not run"));
    assert_eq!(
        h.tools.calls().len(),
        1,
        "only the call before the limit ran"
    );
}

fn budget_run(budget: Budget, turns: Vec<ScriptedTurn>, call_cost: Usd) -> (StepResult, Harness) {
    let h = harness_with(
        turns,
        GeneralChatAgent::default(),
        RuntimeConfig::default(),
        call_cost,
    );
    let mut s = state("spend");
    s.budget = budget;
    (run(&h, s), h)
}

fn budget_events(r: &StepResult) -> Vec<(BudgetKind, BudgetPolicy)> {
    r.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::BudgetExceeded { budget, policy, .. } => Some((*budget, *policy)),
            _ => None,
        })
        .collect()
}

#[test]
fn cost_budget_stop_finishes_visibly() {
    let budget = Budget {
        max_cost: Some(Usd::from_dollars(0.015)),
        ..Default::default()
    };
    let (r, h) = budget_run(
        budget,
        vec![calc("c1"), calc("c2"), ScriptedTurn::text("x")],
        Usd::from_dollars(0.01),
    );
    let f = r.state.finish.as_ref().unwrap();
    assert_eq!(f.reason, FinishReason::CostLimitExceeded);
    assert!(
        f.detail
            .as_deref()
            .unwrap()
            .contains("0.020000 USD > 0.015000 USD"),
        "{f:?}"
    );
    assert_eq!(budget_events(&r), [(BudgetKind::Cost, BudgetPolicy::Stop)]);
    assert_eq!(
        h.tools.calls().len(),
        1,
        "the second call's tools never ran"
    );
    assert!(!f.reason.is_success());
}

#[test]
fn token_budget_stop() {
    let budget = Budget {
        max_tokens: Some(150),
        ..Default::default()
    };
    let (r, _) = budget_run(budget, vec![calc("c1"), ScriptedTurn::text("x")], Usd::ZERO);
    assert_eq!(
        finish_reason(&r.state),
        Some(FinishReason::TokenLimitExceeded)
    );
    assert_eq!(
        budget_events(&r),
        [(BudgetKind::Tokens, BudgetPolicy::Stop)]
    );
}

#[test]
fn budget_interrupt_parks_resumably() {
    let budget = Budget {
        max_cost: Some(Usd::from_dollars(0.005)),
        on_exceeded: BudgetPolicy::Interrupt,
        ..Default::default()
    };
    let (r, h) = budget_run(
        budget,
        vec![calc("c1"), ScriptedTurn::text("42")],
        Usd::from_dollars(0.01),
    );
    assert_eq!(r.state.status, Status::Interrupted);
    let i = r.state.interruption.as_ref().unwrap();
    assert!(
        i.can_resume && i.reason.contains("Cost limit exceeded"),
        "{i:?}"
    );
    assert!(r.next_context.is_none());
    // Raise the budget and resume: the run continues where it stopped.
    let mut s = r.state;
    s.budget.max_cost = Some(Usd::from_dollars(1.0));
    let resumed = h.runtime.resume(s, "budget raised").unwrap();
    assert!(matches!(resumed.events[0].kind, EventKind::Resumed { .. }));
    let done = futures::executor::block_on(h.runtime.run(resumed.state, resumed.next_context));
    assert_eq!(finish_reason(&done.state), Some(FinishReason::Completed));
}

#[test]
fn budget_warn_reports_once_and_the_run_continues() {
    let budget = Budget {
        max_cost: Some(Usd::from_dollars(0.005)),
        on_exceeded: BudgetPolicy::Warn,
        ..Default::default()
    };
    let (r, _) = budget_run(
        budget,
        vec![calc("c1"), calc("c2"), ScriptedTurn::text("42")],
        Usd::from_dollars(0.01),
    );
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(budget_events(&r), [(BudgetKind::Cost, BudgetPolicy::Warn)]);
    assert!(r.state.budget_warnings.contains(&BudgetKind::Cost));
}

#[test]
fn per_model_call_cost_limit_is_enforced() {
    let budget = Budget {
        max_model_call_cost: Some(Usd::from_dollars(0.005)),
        ..Default::default()
    };
    let (r, h) = budget_run(
        budget,
        vec![calc("c1"), ScriptedTurn::text("x")],
        Usd::from_dollars(0.01),
    );
    assert_eq!(
        finish_reason(&r.state),
        Some(FinishReason::CostLimitExceeded)
    );
    assert_eq!(
        budget_events(&r),
        [(BudgetKind::ModelCallCost, BudgetPolicy::Stop)]
    );
    assert!(h.tools.calls().is_empty());
}

#[test]
fn per_tool_call_cost_limit_is_enforced_for_single_and_batched_calls() {
    let budget = Budget {
        max_tool_call_cost: Some(Usd::from_nanos(1_000)),
        ..Default::default()
    };
    let spend = |id: &str, n: u64| {
        (
            id.to_owned(),
            "costly__spend".to_owned(),
            format!(r#"{{"cost":{n}}}"#),
        )
    };
    let (r, _) = budget_run(
        budget.clone(),
        vec![
            ScriptedTurn::ToolCalls(vec![spend("a", 5_000)]),
            ScriptedTurn::text("x"),
        ],
        Usd::ZERO,
    );
    assert_eq!(
        budget_events(&r),
        [(BudgetKind::ToolCallCost, BudgetPolicy::Stop)]
    );
    assert_eq!(
        finish_reason(&r.state),
        Some(FinishReason::CostLimitExceeded)
    );

    let (r, _) = budget_run(
        budget.clone(),
        vec![
            ScriptedTurn::ToolCalls(vec![spend("a", 10), spend("b", 5_000), spend("c", 10)]),
            ScriptedTurn::text("x"),
        ],
        Usd::ZERO,
    );
    assert_eq!(
        budget_events(&r),
        [(BudgetKind::ToolCallCost, BudgetPolicy::Stop)]
    );
    if let Some(EventKind::BudgetExceeded { actual, .. }) = r
        .events
        .iter()
        .map(|e| &e.kind)
        .find(|k| matches!(k, EventKind::BudgetExceeded { .. }))
    {
        assert_eq!(*actual, Amount::Usd(Usd::from_nanos(5_000)));
    }

    // Cheap calls pass.
    let (r, _) = budget_run(
        budget,
        vec![
            ScriptedTurn::ToolCalls(vec![spend("a", 10), spend("b", 20)]),
            ScriptedTurn::text("x"),
        ],
        Usd::ZERO,
    );
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    assert_eq!(r.state.cost.tools, Usd::from_nanos(30));
}

#[test]
fn a_batch_runs_concurrently_merges_in_call_order_and_dedupes_ids() {
    let calls = vec![
        (
            "a".to_owned(),
            "calculator__evaluate".to_owned(),
            "{}".to_owned(),
        ),
        (
            "b".to_owned(),
            "costly__spend".to_owned(),
            r#"{"cost":7}"#.to_owned(),
        ),
        (
            "a".to_owned(),
            "calculator__evaluate".to_owned(),
            "{}".to_owned(),
        ),
        (
            "c".to_owned(),
            "calculator__evaluate".to_owned(),
            r#"{"x":1}"#.to_owned(),
        ),
    ];
    let h = harness(vec![
        ScriptedTurn::ToolCalls(calls),
        ScriptedTurn::text("done"),
    ]);
    let r = run(&h, state("batch"));
    assert_eq!(finish_reason(&r.state), Some(FinishReason::Completed));
    let ids: Vec<&str> = tool_messages(&r.state)
        .iter()
        .map(|m| m.tool_call_id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c"], "call order, duplicate id dropped");
    assert_eq!(r.state.usage.tools.calls, 3);
    assert_eq!(r.state.cost.total, Usd::from_nanos(7));
    let step2 = r
        .events
        .iter()
        .find(|e| matches!(e.kind, EventKind::StepComplete { .. }) && e.step == 2)
        .unwrap();
    if let EventKind::StepComplete { instructions, .. } = &step2.kind {
        assert_eq!(instructions, &[InstructionKind::CallToolsBatch]);
    }
}

#[test]
fn an_interrupt_request_stops_between_instructions_and_resume_continues() {
    let h = harness(vec![ScriptedTurn::text("hello")]);
    h.runtime.interrupt_handle().interrupt("user pressed stop");
    let r = step(&h, state("hi"), None);
    assert_eq!(r.state.status, Status::Interrupted);
    let i = r.state.interruption.as_ref().unwrap();
    assert_eq!(i.reason, "user pressed stop");
    assert!(matches!(
        i.interrupted_instruction.as_deref(),
        Some(Instruction::CallLlm { .. })
    ));
    assert!(h.llm.seen().is_empty(), "the model was never called");

    let resumed = h.runtime.resume(r.state, "go on").unwrap();
    assert_eq!(resumed.state.status, Status::Running);
    let done = futures::executor::block_on(h.runtime.run(resumed.state, resumed.next_context));
    assert_eq!(finish_reason(&done.state), Some(FinishReason::Completed));
}

#[test]
fn resume_is_refused_when_not_interrupted_or_final() {
    let h = harness(vec![]);
    let err = h.runtime.resume(state("x"), "r").unwrap_err();
    assert_eq!(err, RuntimeError::NotInterrupted(Status::Idle));
    let stopped = h.runtime.interrupt(state("x"), "killed", false);
    assert!(matches!(
        stopped.events[0].kind,
        EventKind::Interrupted {
            can_resume: false,
            ..
        }
    ));
    let err = h.runtime.resume(stopped.state, "r").unwrap_err();
    assert_eq!(err, RuntimeError::CannotResume("killed".into()));
}

#[test]
fn an_error_phase_finishes_with_error_recovery() {
    let h = harness(vec![]);
    let ctx = RuntimeContext::new(Phase::Error(rein_core::phase::ErrorPayload {
        code: rein_core::failure::Fault::Internal.into(),
        message: "tool host went away".into(),
    }));
    let r = step(&h, state("x"), Some(ctx));
    let f = r.state.finish.unwrap();
    assert_eq!(
        (f.reason, f.detail.as_deref()),
        (FinishReason::ErrorRecovery, Some("tool host went away"))
    );
}

#[test]
fn llm_result_payload_is_the_one_the_agent_reads() {
    // The call_llm executor's next context is exactly what GeneralChatAgent consumes.
    let h = harness(vec![calc("c1")]);
    let r = step(&h, state("x"), None);
    let Some(RuntimeContext {
        phase:
            Phase::LlmResult(LlmResultPayload {
                tool_calls,
                assistant_message_id,
                ..
            }),
        ..
    }) = r.next_context
    else {
        panic!("expected llm_result, got {:?}", r.next_context);
    };
    assert_eq!(tool_calls[0].key(), "calculator/evaluate");
    assert_eq!(r.state.messages[1].id, assistant_message_id);
}

#[test]
fn crossing_the_limit_on_a_step_that_asked_for_tools_still_ends_with_an_answer() {
    // max 1: step 1 asks for a tool, step 2 crosses the limit on that request.
    let h = harness(vec![calc("c1"), ScriptedTurn::text("Answer: 42")]);
    let mut s = state("loop");
    s.max_steps = Some(1);
    let r = run(&h, s);
    assert_eq!(
        finish_reason(&r.state),
        Some(FinishReason::MaxStepsCompleted)
    );
    assert_eq!(
        h.tools.calls().len(),
        0,
        "the call after the limit did not run"
    );
    let results = tool_messages(&r.state);
    assert_eq!(results.len(), 1, "the call is answered");
    assert!(results[0].text_content().contains("step limit"));
    let seen = h.llm.seen();
    assert_eq!(
        seen.iter().map(|s| s.force_finish).collect::<Vec<_>>(),
        [false, true]
    );
    assert_eq!(
        r.state.messages.last().unwrap().text_content(),
        "Answer: 42"
    );
}

mod force_finish_property {
    use super::common::*;
    use proptest::prelude::*;
    use rein_core::testing::ScriptedTurn;
    use rein_core::{FinishReason, Role};

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x0f1e_15e5),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Whatever the step limit and whenever the model asks for tools: the last model call of
        /// an operation that hit the limit offers no tools, there are at most `max + 1` model
        /// calls, and when that last call answers with text the user gets it.
        #[test]
        fn every_step_limit_ends_with_a_tool_free_final_call(
            max in 1u32..=12,
            tools in prop::collection::vec(any::<bool>(), 30),
        ) {
            let turns: Vec<ScriptedTurn> = tools
                .iter()
                .enumerate()
                .map(|(i, t)| if *t {
                    // Distinct arguments, so the loop breaker stays out of it.
                    ScriptedTurn::tool(format!("c{i}"), "calculator__evaluate", format!(r#"{{"expression":"{i}*7"}}"#))
                } else {
                    ScriptedTurn::text(format!("answer {i}"))
                })
                .collect();
            let h = harness(turns);
            let mut s = state("loop");
            s.max_steps = Some(max);
            let r = run(&h, s);
            let seen = h.llm.seen();
            prop_assert!(seen.len() as u32 <= max + 1, "{} calls with max {max}", seen.len());
            match finish_reason(&r.state) {
                Some(FinishReason::MaxStepsCompleted) => {
                    prop_assert!(seen.last().unwrap().force_finish, "the last call offered tools");
                    let last = r.state.messages.last().unwrap();
                    let final_turn_was_text = !tools[seen.len() - 1];
                    if final_turn_was_text {
                        prop_assert_eq!(last.role, Role::Assistant);
                        prop_assert_eq!(last.text_content(), format!("answer {}", seen.len() - 1));
                    }
                }
                Some(FinishReason::Completed) => {
                    prop_assert!(!tools[seen.len() - 1], "completed on a text answer");
                }
                other => prop_assert!(false, "unexpected end {:?}", other),
            }
        }
    }
}
