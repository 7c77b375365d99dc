//! How an operation stopped, said once for every command that ran or decided one (`run`,
//! `chat`, `approve`, `answer`, `reject`, `op resume|cancel`, `task run`), here or on a
//! server: a summary line on stderr, what to do next, and the exit code.

use crate::{exit, output};
use rein_core::OperationId;
use rein_operation::RunEnd;
use rein_store::{Intervention, OperationRecord};

/// Print how `id` stopped (`end`), with its record's figures when there is one and why each
/// pending call asks; the exit code that says it.
pub fn print(
    id: OperationId,
    end: &RunEnd,
    record: Option<&OperationRecord>,
    pending: &[Intervention],
) -> u8 {
    let summary = record
        .map(|r| {
            format!(
                "{} · {} tokens · {} · op {id}",
                output::count(r.step_count, "step"),
                r.total_tokens,
                r.cost
            )
        })
        .unwrap_or_else(|| format!("op {id}"));
    match end {
        RunEnd::Queued => {
            eprintln!(
                "\nqueued behind another operation of its conversation · {summary}\nit starts when that one ends; drop it with: rein op cancel {id}"
            );
            exit::WAITING
        }
        RunEnd::Done { reason, detail } => {
            let d = detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            eprintln!(
                "\n{} ({}){d} · {summary}",
                if reason.is_success() {
                    "done"
                } else {
                    "stopped"
                },
                reason
            );
            if reason.is_success() {
                exit::DONE
            } else {
                exit::ERROR
            }
        }
        RunEnd::WaitingForHuman { pending: calls } => {
            eprintln!("\nwaiting for a person · {summary}");
            let mut questions = false;
            for c in calls {
                match rein_core::question::Question::of_call(c).and_then(Result::ok) {
                    Some(q) => {
                        questions = true;
                        let options: Vec<String> = q
                            .options
                            .iter()
                            .map(|o| format!("{} ({})", o.key, o.label))
                            .collect();
                        let options = if options.is_empty() {
                            String::new()
                        } else {
                            format!(" [{}]", options.join(", "))
                        };
                        eprintln!("  question {}: {}{options}", c.id, q.question);
                    }
                    None => {
                        eprintln!("  pending {} {}({})", c.id, c.key(), c.arguments);
                        if let Some(r) = pending
                            .iter()
                            .find(|i| i.call.id == c.id)
                            .and_then(|i| i.reason.as_ref())
                        {
                            eprintln!("{}", output::why(r));
                        }
                    }
                }
            }
            if questions {
                eprintln!(
                    "answer with: rein answer {id} \"...\"   or: rein answer {id} --option KEY"
                );
            }
            if calls.iter().any(|c| !rein_core::engine::is_question(c)) {
                eprintln!(
                    "continue with: rein approve {id}   or: rein reject {id} --reason \"...\""
                );
            }
            exit::WAITING
        }
        RunEnd::WaitingForAsyncTool { calls } => {
            eprintln!(
                "\nwaiting for {} call(s) a device runs · {summary}",
                calls.len()
            );
            exit::WAITING
        }
        RunEnd::WaitingForSubAgents { children } => {
            eprintln!(
                "\nwaiting for {} sub-agent(s) another process runs · {summary}",
                children.len()
            );
            for c in children {
                eprintln!("  sub-agent {c}");
            }
            exit::WAITING
        }
        RunEnd::Released => {
            eprintln!(
                "\nstopped between two steps as this process stopped · {summary} (resume with: rein op resume {id})"
            );
            exit::INTERRUPTED
        }
        RunEnd::Interrupted { reason, can_resume } => {
            let hint = if *can_resume {
                format!(" (resume with: rein op resume {id})")
            } else {
                String::new()
            };
            eprintln!("\ninterrupted: {reason} · {summary}{hint}");
            exit::INTERRUPTED
        }
        RunEnd::Error { message } => {
            eprintln!("\nerror: {message} · {summary}");
            exit::ERROR
        }
    }
}

/// How a run or decision of this process stopped (read from `store`), said as [`print`] says
/// it; the exit code.
pub async fn finish_here(
    store: &rein_store::SqlStore,
    id: OperationId,
    end: &RunEnd,
) -> anyhow::Result<u8> {
    let op = rein_store::Store::load_operation(store, id).await?;
    // A group's answer is its members' turns.
    if let Some(op) = &op
        && op.spec.group.is_some()
    {
        crate::output::turns(&op.state.messages.iter().map(|m| &**m).collect::<Vec<_>>());
    }
    let pending = rein_operation::tree::pending_approvals(store, id)
        .await
        .unwrap_or_default();
    Ok(print(id, end, op.as_ref().map(|o| &o.record), &pending))
}
