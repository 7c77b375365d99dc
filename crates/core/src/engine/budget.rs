//! Budget enforcement, run by the engine after every instruction that spends (model calls,
//! tool calls, compression), whichever executor ran it.

use super::builtin::finish;
use super::executor::ExecContext;
use crate::event::{Amount, EventKind};
use crate::instruction::InstructionKind;
use crate::state::{AgentState, BudgetKind, BudgetPolicy, FinishReason};
use crate::usage::{Cost, Usd};

/// Whether instructions of `kind` spend budget (and so are checked against it once they ran).
/// Every kind is named, so a new instruction is placed here on purpose.
pub(crate) fn spends(kind: InstructionKind) -> bool {
    match kind {
        InstructionKind::CallLlm
        | InstructionKind::CallTool
        | InstructionKind::CallToolsBatch
        | InstructionKind::CompressContext
        | InstructionKind::ExecSubAgent
        | InstructionKind::ExecSubAgents => true,
        // An external agent's turn is bounded while it streams, by the driver that runs it
        // (`rein-operation`'s external driver stops the process when a limit is crossed).
        InstructionKind::ExternalTurn => false,
        InstructionKind::ResolveAbortedTools
        | InstructionKind::ResolveBlockedTools
        | InstructionKind::RequestHumanPrompt
        | InstructionKind::RequestHumanSelect
        | InstructionKind::RequestHumanApprove
        | InstructionKind::Finish => false,
    }
}

fn total_tokens(state: &AgentState) -> u64 {
    let t = &state.usage.llm.tokens;
    t.total.max(t.input + t.output)
}

/// Check every budget after an instruction of `kind` that cost `delta`, where the tool calls
/// it ran cost `tool_call_costs` each. Applies the budget policy to the first exceeded budget.
pub(crate) fn enforce(
    state: &mut AgentState,
    cx: &ExecContext<'_>,
    kind: InstructionKind,
    delta: &Cost,
    tool_call_costs: &[Usd],
) {
    let b = state.budget.clone();
    let mut exceeded: Vec<(BudgetKind, Amount, Amount)> = Vec::new();
    if let Some(max) = b.max_tokens {
        let used = total_tokens(state);
        if used > max {
            exceeded.push((
                BudgetKind::Tokens,
                Amount::Tokens(max),
                Amount::Tokens(used),
            ));
        }
    }
    if let Some(max) = b.max_cost
        && state.cost.total > max
    {
        exceeded.push((
            BudgetKind::Cost,
            Amount::Usd(max),
            Amount::Usd(state.cost.total),
        ));
    }
    if let Some(max) = b.max_model_call_cost
        && kind == InstructionKind::CallLlm
        && delta.llm > max
    {
        exceeded.push((
            BudgetKind::ModelCallCost,
            Amount::Usd(max),
            Amount::Usd(delta.llm),
        ));
    }
    if let Some(max) = b.max_tool_call_cost {
        let per_call = if tool_call_costs.is_empty() && kind == InstructionKind::CallTool {
            delta.tools
        } else {
            tool_call_costs.iter().copied().max().unwrap_or(Usd::ZERO)
        };
        if per_call > max {
            exceeded.push((
                BudgetKind::ToolCallCost,
                Amount::Usd(max),
                Amount::Usd(per_call),
            ));
        }
    }
    let Some((first, limit, actual)) = exceeded.first().copied() else {
        return;
    };
    match b.on_exceeded {
        BudgetPolicy::Warn => {
            for (budget, limit, actual) in exceeded {
                if state.budget_warnings.insert(budget) {
                    cx.emit(EventKind::BudgetExceeded {
                        budget,
                        limit,
                        actual,
                        policy: BudgetPolicy::Warn,
                    });
                }
            }
        }
        BudgetPolicy::Stop => {
            cx.emit(EventKind::BudgetExceeded {
                budget: first,
                limit,
                actual,
                policy: BudgetPolicy::Stop,
            });
            let reason = if first == BudgetKind::Tokens {
                FinishReason::TokenLimitExceeded
            } else {
                FinishReason::CostLimitExceeded
            };
            finish(state, cx, reason, Some(describe(first, limit, actual)));
        }
        BudgetPolicy::Interrupt => {
            cx.emit(EventKind::BudgetExceeded {
                budget: first,
                limit,
                actual,
                policy: BudgetPolicy::Interrupt,
            });
            super::interrupt_in_place(state, cx, describe(first, limit, actual), true, None);
        }
    }
}

fn show(a: Amount) -> String {
    match a {
        Amount::Tokens(t) => format!("{t} tokens"),
        Amount::Usd(u) => u.to_string(),
    }
}

fn describe(kind: BudgetKind, limit: Amount, actual: Amount) -> String {
    let what = match kind {
        BudgetKind::Tokens => "Token limit exceeded",
        BudgetKind::Cost => "Cost limit exceeded",
        BudgetKind::ModelCallCost => "Per-model-call cost limit exceeded",
        BudgetKind::ToolCallCost => "Per-tool-call cost limit exceeded",
    };
    format!("{what}: {} > {}", show(actual), show(limit))
}
