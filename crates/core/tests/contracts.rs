//! JSON contracts: every instruction and event variant round-trips through serde unchanged and
//! carries its snake_case `type`; the tool-batch merge adds deltas, so totals equal the sum of
//! the parts for any base.

use crate::common;

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use rein_core::event::{AgentEvent, Amount, EventKind, StreamChunk};
use rein_core::instruction::*;
use rein_core::phase::{LlmResultPayload, Phase, RuntimeContext};
use rein_core::state::{
    BudgetKind, BudgetPolicy, FinishReason, HumanPrompt, HumanSelect, ModelRef, SelectOption,
    Status,
};
use rein_core::testing::ScriptedTurn;
use rein_core::usage::{TokenUsage, Usd};
use rein_core::{MessageId, OperationId, ToolCall, ToolStatus};
use uuid::Uuid;

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 _./:{}\"\\\\-]{0,16}"
}

fn mid() -> impl Strategy<Value = MessageId> {
    any::<u128>().prop_map(|n| MessageId(Uuid::from_u128(n)))
}

fn call() -> impl Strategy<Value = ToolCall> {
    (text(), text(), text(), text(), option::of(text())).prop_map(|(id, i, a, args, sig)| {
        ToolCall {
            id: id.into(),
            identifier: i.into(),
            api: a.into(),
            arguments: args.into(),
            thought_signature: sig.map(Into::into),
        }
    })
}

fn calls() -> impl Strategy<Value = Vec<ToolCall>> {
    vec(call(), 0..3)
}

fn finish_reason() -> impl Strategy<Value = FinishReason> {
    use FinishReason::*;
    prop::sample::select(vec![
        Completed,
        UserRequested,
        UserAborted,
        MaxStepsCompleted,
        CostLimitExceeded,
        TokenLimitExceeded,
        LoopDetected,
        ToolNameErrors,
        Timeout,
        AgentDecision,
        QueuedMessageInterrupt,
        ErrorRecovery,
        SystemShutdown,
    ])
}

fn task() -> impl Strategy<Value = SubAgentTask> {
    (
        text(),
        text(),
        any::<bool>(),
        option::of(any::<u64>()),
        option::of(text()),
        (
            option::of(text()),
            option::of(text()),
            option::of(prop::collection::vec(text(), 0..3)),
        ),
    )
        .prop_map(|(d, i, inh, t, a, (call, role, tools))| SubAgentTask {
            description: d,
            instruction: i,
            inherit_messages: inh,
            timeout_ms: t,
            target_agent_id: a,
            tool_call_id: call,
            system_role: role,
            tools,
        })
}

fn json_value() -> impl Strategy<Value = Option<serde_json::Value>> {
    option::of(
        (text(), any::<i32>())
            .prop_map(|(k, v)| serde_json::json!({ k: v, "list": [v, null, true] })),
    )
}

fn options() -> impl Strategy<Value = Vec<SelectOption>> {
    vec(
        (text(), text()).prop_map(|(label, value)| SelectOption { label, value }),
        0..3,
    )
}

fn ids() -> impl Strategy<Value = std::collections::BTreeMap<String, MessageId>> {
    btree_map(text(), mid(), 0..3)
}

fn instruction() -> impl Strategy<Value = Instruction> {
    let llm = (
        option::of(mid()),
        option::of(mid()),
        any::<bool>(),
        option::of((text(), text())),
        option::of(vec(text(), 0..3)),
        any::<bool>(),
    )
        .prop_map(|(p, a, c, m, allowed, first)| Instruction::CallLlm {
            payload: CallLlmPayload {
                parent_message_id: p,
                assistant_message_id: a,
                create_assistant_message: c,
                model: m.map(|(provider, model)| ModelRef {
                    provider: provider.into(),
                    model: model.into(),
                }),
                allowed_tools: allowed,
                is_first_message: first,
            },
        });
    prop_oneof![
        llm,
        (option::of(mid()), call(), option::of(mid())).prop_map(|(p, c, e)| {
            Instruction::CallTool {
                payload: CallToolPayload {
                    parent_message_id: p,
                    tool_call: c,
                    existing_tool_message_id: e,
                },
            }
        }),
        (option::of(mid()), calls(), ids()).prop_map(|(p, c, e)| Instruction::CallToolsBatch {
            payload: CallToolsBatchPayload {
                parent_message_id: p,
                tool_calls: c,
                existing_tool_message_ids: e
            }
        }),
        (option::of(mid()), calls(), option::of(text()), ids()).prop_map(|(p, c, r, e)| {
            Instruction::ResolveAbortedTools {
                payload: ResolveAbortedToolsPayload {
                    parent_message_id: p,
                    tool_calls: c,
                    reason: r,
                    existing_tool_message_ids: e,
                },
            }
        }),
        (
            option::of(mid()),
            calls(),
            prop::sample::select(vec![
                BlockedReason::Security,
                BlockedReason::ToolNotAllowed,
                BlockedReason::UnknownToolName,
                BlockedReason::StepLimit
            ]),
            option::of(text())
        )
            .prop_map(|(p, c, r, t)| Instruction::ResolveBlockedTools {
                payload: ResolveBlockedToolsPayload {
                    parent_message_id: p,
                    tool_calls: c,
                    blocked_reason: r,
                    blocked_content: t
                }
            }),
        (option::of(mid()), task()).prop_map(|(p, t)| Instruction::ExecSubAgent {
            payload: ExecSubAgentPayload {
                parent_message_id: p,
                task: Box::new(t)
            }
        }),
        (option::of(mid()), vec(task(), 0..3)).prop_map(|(p, t)| Instruction::ExecSubAgents {
            payload: ExecSubAgentsPayload {
                parent_message_id: p,
                tasks: t
            }
        }),
        (text(), option::of(text()), json_value()).prop_map(|(prompt, reason, metadata)| {
            Instruction::RequestHumanPrompt {
                prompt,
                reason,
                metadata,
            }
        }),
        (
            options(),
            any::<bool>(),
            option::of(text()),
            option::of(text()),
            json_value()
        )
            .prop_map(|(options, multi, prompt, reason, metadata)| {
                Instruction::RequestHumanSelect {
                    options,
                    multi,
                    prompt,
                    reason,
                    metadata,
                }
            }),
        (
            calls(),
            option::of(text()),
            option::of(mid()),
            any::<bool>()
        )
            .prop_map(|(c, r, p, s)| Instruction::RequestHumanApprove {
                pending_tool_calls: c,
                reason: r,
                parent_message_id: p,
                skip_create_tool_message: s,
                reasons: Default::default(),
            }),
        (any::<u64>(), option::of(text())).prop_map(|(n, s)| Instruction::CompressContext {
            payload: CompressContextPayload {
                current_token_count: n,
                existing_summary: s
            }
        }),
        (finish_reason(), option::of(text())).prop_map(|(reason, reason_detail)| {
            Instruction::Finish {
                reason,
                reason_detail,
            }
        }),
    ]
}

fn kind() -> impl Strategy<Value = InstructionKind> {
    use InstructionKind::*;
    prop::sample::select(vec![
        CallLlm,
        CallTool,
        CallToolsBatch,
        ResolveAbortedTools,
        ResolveBlockedTools,
        ExecSubAgent,
        ExecSubAgents,
        RequestHumanPrompt,
        RequestHumanSelect,
        RequestHumanApprove,
        CompressContext,
        Finish,
    ])
}

fn usd() -> impl Strategy<Value = Usd> {
    (0u64..1_000_000_000_000_000).prop_map(Usd::from_nanos)
}

fn tokens() -> impl Strategy<Value = TokenUsage> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(a, b, c, d, e, f)| TokenUsage {
            input: a.into(),
            output: b.into(),
            total: c.into(),
            cached_read: d.into(),
            cache_write: e.into(),
            reasoning: f.into(),
        })
}

fn status() -> impl Strategy<Value = Status> {
    use Status::*;
    prop::sample::select(vec![
        Idle,
        Running,
        WaitingForHuman,
        WaitingForAsyncTool,
        WaitingForSubAgents,
        Interrupted,
        Done,
        Error,
    ])
}

fn tool_status() -> impl Strategy<Value = ToolStatus> {
    use ToolStatus::*;
    prop::sample::select(vec![
        Pending, Approved, Succeeded, Failed, Rejected, Aborted, Blocked,
    ])
}

fn amount() -> impl Strategy<Value = Amount> {
    prop_oneof![
        any::<u64>().prop_map(Amount::Tokens),
        usd().prop_map(Amount::Usd)
    ]
}

fn chunk() -> impl Strategy<Value = StreamChunk> {
    prop_oneof![
        text().prop_map(|text| StreamChunk::Text { text }),
        text().prop_map(|text| StreamChunk::Reasoning { text }),
        (any::<u32>(), option::of(text()), option::of(text()), text()).prop_map(
            |(index, id, name, arguments)| StreamChunk::ToolCall {
                index,
                id,
                name,
                arguments
            }
        ),
    ]
}

fn event_kind() -> impl Strategy<Value = EventKind> {
    prop_oneof![
        text().prop_map(|phase| EventKind::StepStart {
            phase: phase.into()
        }),
        (mid(), option::of(text())).prop_map(|(a, model)| EventKind::LlmStart {
            assistant_message_id: a,
            model
        }),
        (mid(), chunk()).prop_map(|(a, chunk)| EventKind::LlmStream {
            assistant_message_id: a,
            chunk
        }),
        (
            mid(),
            text(),
            calls(),
            tokens(),
            usd(),
            usd(),
            option::of(text())
        )
            .prop_map(
                |(a, content, tool_calls, usage, cost, cache_saved, stop_reason)| {
                    EventKind::LlmResult {
                        assistant_message_id: a,
                        content,
                        tool_calls,
                        usage,
                        cost,
                        cache_saved,
                        stop_reason,
                    }
                }
            ),
        (any::<u32>(), any::<u32>(), any::<u64>(), option::of(text())).prop_map(
            |(attempt, max_attempts, delay_ms, error_kind)| EventKind::StreamRetry {
                attempt,
                max_attempts,
                delay_ms,
                error_kind
            }
        ),
        calls().prop_map(|tool_calls| EventKind::ToolPending { tool_calls }),
        (text(), mid(), tool_status(), text(), any::<u64>()).prop_map(
            |(tool_call_id, tool_message_id, status, content, duration_ms)| {
                EventKind::ToolResult {
                    tool_call_id: tool_call_id.into(),
                    tool_message_id,
                    status,
                    content,
                    duration_ms,
                }
            }
        ),
        (
            calls(),
            option::of(mid()),
            text(),
            option::of(text()),
            0usize..9
        )
            .prop_map(
                |(pending_tool_calls, parent_message_id, explanation, node, source)| {
                    use rein_core::intervention::{ApprovalReason, ReasonSource};
                    let sources = [
                        ReasonSource::Blacklist,
                        ReasonSource::Guard,
                        ReasonSource::Audit,
                        ReasonSource::ToolPolicy,
                        ReasonSource::Mode,
                        ReasonSource::AllowList,
                        ReasonSource::UnknownTool,
                        ReasonSource::Skill,
                        ReasonSource::Grant,
                    ];
                    let source = sources[source];
                    let reasons = pending_tool_calls
                        .iter()
                        .map(|c| {
                            let reason = ApprovalReason {
                                source,
                                rule: Some(format!("rule:{}", source.as_str())),
                                explanation: explanation.clone(),
                                node: node.clone(),
                                every_time: source.every_time(),
                            };
                            (c.id.to_string(), reason)
                        })
                        .collect();
                    EventKind::HumanApproveRequired {
                        pending_tool_calls,
                        parent_message_id,
                        reasons,
                    }
                }
            ),
        (text(), option::of(text()), json_value()).prop_map(|(prompt, reason, metadata)| {
            EventKind::HumanPromptRequired {
                prompt: HumanPrompt {
                    prompt,
                    reason,
                    metadata,
                },
            }
        }),
        (options(), any::<bool>(), option::of(text())).prop_map(|(options, multi, prompt)| {
            EventKind::HumanSelectRequired {
                select: HumanSelect {
                    options,
                    multi,
                    prompt,
                    reason: None,
                    metadata: None,
                },
            }
        }),
        (mid(), any::<u32>()).prop_map(|(summary_message_id, compressed_count)| {
            EventKind::CompressionComplete {
                summary_message_id,
                compressed_count,
            }
        }),
        text().prop_map(|message| EventKind::CompressionError { message }),
        (
            prop::sample::select(vec![
                BudgetKind::Tokens,
                BudgetKind::Cost,
                BudgetKind::ModelCallCost,
                BudgetKind::ToolCallCost
            ]),
            amount(),
            amount(),
            prop::sample::select(vec![
                BudgetPolicy::Stop,
                BudgetPolicy::Interrupt,
                BudgetPolicy::Warn
            ])
        )
            .prop_map(
                |(budget, limit, actual, policy)| EventKind::BudgetExceeded {
                    budget,
                    limit,
                    actual,
                    policy
                }
            ),
        (text(), any::<bool>())
            .prop_map(|(reason, can_resume)| EventKind::Interrupted { reason, can_resume }),
        (option::of(text()), text(), text()).prop_map(|(agent, title, call)| {
            EventKind::SubAgentStarted {
                sub_agent: OperationId::new(),
                agent,
                title,
                tool_call_id: call,
            }
        }),
        (
            option::of(text()),
            status(),
            any::<bool>(),
            usd(),
            any::<u64>()
        )
            .prop_map(|(agent, status, success, cost, total_tokens)| {
                EventKind::SubAgentEnded {
                    sub_agent: OperationId::new(),
                    agent,
                    status,
                    success,
                    cost,
                    total_tokens,
                }
            }),
        (text(), any::<u32>()).prop_map(|(reason, resumed_from_step)| EventKind::Resumed {
            reason,
            resumed_from_step
        }),
        (status(), vec(kind(), 0..3)).prop_map(|(status, instructions)| EventKind::StepComplete {
            status,
            instructions
        }),
        (finish_reason(), option::of(text())).prop_map(|(reason, reason_detail)| EventKind::Done {
            reason,
            reason_detail
        }),
        (text(), text()).prop_map(|(code, message)| EventKind::Error {
            code: rein_core::failure::FailureCode::named(&code),
            message
        }),
    ]
}

fn event() -> impl Strategy<Value = AgentEvent> {
    (any::<u128>(), any::<u32>(), any::<u64>(), event_kind()).prop_map(|(op, step, seq, kind)| {
        AgentEvent {
            operation_id: OperationId(Uuid::from_u128(op)),
            step,
            seq,
            kind,
        }
    })
}

proptest! {
    // A fixed seed: the same cases on every run, so CI never meets a case by chance.
    #![proptest_config(proptest::test_runner::Config {
        cases: 256,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x00c0_47ac),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]
    #[test]
    fn instructions_round_trip(ins in instruction()) {
        let json = serde_json::to_value(&ins).unwrap();
        prop_assert_eq!(json["type"].as_str(), Some(ins.kind().as_str()));
        let back: Instruction = serde_json::from_value(json).unwrap();
        prop_assert_eq!(back, ins);
    }

    #[test]
    fn events_round_trip(ev in event()) {
        let text = serde_json::to_string(&ev).unwrap();
        let back: AgentEvent = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, ev);
    }

    /// Any base usage and cost, any number of batched calls with any costs: the merged totals
    /// are the base plus the sum of the calls, never the base counted once per call.
    #[test]
    fn batch_merge_adds_deltas(
        base_llm in tokens(),
        base_llm_cost in usd(),
        base_tool_calls in 0u64..50,
        base_tool_cost in 0u64..1_000_000,
        costs in vec(0u64..1_000_000, 1..6),
    ) {
        let mut s = common::state("batch");
        s.usage.record_llm("scripted/m1", &base_llm, 3);
        s.cost.record_llm("scripted/m1", base_llm_cost);
        for _ in 0..base_tool_calls {
            s.usage.record_tool("costly/spend", true, 2);
        }
        s.cost.record_tool("costly/spend", Usd::from_nanos(base_tool_cost));
        let base = s.clone();
        let calls: Vec<ToolCall> = costs
            .iter()
            .enumerate()
            .map(|(i, c)| ToolCall::new(format!("t{i}"), "costly", "spend", format!(r#"{{"cost":{c}}}"#)))
            .collect();
        let h = common::harness(vec![ScriptedTurn::text("unused")]);
        let ctx = RuntimeContext::new(Phase::LlmResult(LlmResultPayload {
            assistant_message_id: MessageId::new(),
            content: String::new(),
            tool_calls: calls,
            stop_reason: None,
            final_call: false,
        }));
        let r = common::step(&h, s, Some(ctx));
        let sum: u64 = costs.iter().sum();
        let n = costs.len() as u64;
        prop_assert_eq!(r.state.cost.total, base.cost.total + Usd::from_nanos(sum));
        prop_assert_eq!(r.state.cost.tools, base.cost.tools + Usd::from_nanos(sum));
        prop_assert_eq!(r.state.cost.llm, base.cost.llm);
        prop_assert_eq!(r.state.cost.by_tool["costly/spend"], Usd::from_nanos(base_tool_cost + sum));
        prop_assert_eq!(r.state.usage.tools.calls, base.usage.tools.calls + n);
        prop_assert_eq!(r.state.usage.by_tool["costly/spend"].calls, base_tool_calls + n);
        prop_assert_eq!(&r.state.usage.llm, &base.usage.llm);
        prop_assert_eq!(common::tool_messages(&r.state).len() as u64, n);
    }
}

#[test]
fn phase_context_json_shape_is_stable() {
    let ctx = RuntimeContext::new(Phase::Init);
    assert_eq!(
        serde_json::to_value(&ctx).unwrap(),
        serde_json::json!({"phase": {"kind": "init"}, "step": {"has_queued_messages": false}})
    );
    let ins = Instruction::finish(FinishReason::Completed, "ok");
    assert_eq!(
        serde_json::to_string(&ins).unwrap(),
        r#"{"type":"finish","reason":"completed","reason_detail":"ok"}"#
    );
}

/// An operation's owner is typed, and stored as it always was (`user_id` among the host's
/// metadata): a state written before the field existed reads its owner, and an owned state
/// reads the same in a build that knows only the untyped form.
#[test]
fn the_owner_is_typed_and_stored_under_its_earlier_name() {
    use rein_core::state::Metadata;
    let old: Metadata =
        serde_json::from_value(serde_json::json!({"user_id": "u-1", "agent_id": "a"})).unwrap();
    assert_eq!(old.owner.as_deref(), Some("u-1"));
    assert!(old.extra.is_empty(), "{:?}", old.extra);
    let written = serde_json::to_value(&old).unwrap();
    assert_eq!(written["user_id"], "u-1");
    let none = serde_json::to_value(Metadata::default()).unwrap();
    assert!(none.get("user_id").is_none(), "{none}");
}
