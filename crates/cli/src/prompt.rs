//! Deciding on the terminal: while an operation waits for a person and stdin is a terminal,
//! ask about each pending call (approve, reject, or approve always: a grant for the
//! operation, the conversation or the agent, kept in the database) with why it asks, and each
//! question the agent asked (`ask_user`: a number or key of an option, or free text), then
//! continue it. A call the blacklist or the guard flagged is asked every time: no "always" is
//! offered for it.

use crate::commands::{Backend, Granted};
use anyhow::anyhow;
use rein_core::OperationId;
use rein_core::ToolCall;
use rein_core::intervention::{ApprovalReason, GrantScope};
use rein_core::question::{Answer, Question};
use rein_operation::{Decision, RunEnd};
use std::io::{BufRead, IsTerminal, Write};

/// What a person said about a pending call.
enum Said {
    /// Decide it.
    Decision(Decision),
    /// Approve it and grant its tool for a scope.
    Always(GrantScope),
}

/// Ask on the terminal for each pending call, deciding it where the operation lives (`on`);
/// the end unchanged when stdin is not a terminal.
pub(crate) async fn ask(
    on: &impl Backend,
    id: OperationId,
    mut end: RunEnd,
) -> anyhow::Result<RunEnd> {
    while let RunEnd::WaitingForHuman { pending } = &end {
        if !std::io::stdin().is_terminal() {
            return Ok(end);
        }
        let Some(call) = pending.first().cloned() else {
            return Ok(end);
        };
        let said = match Question::of_call(&call).and_then(Result::ok) {
            Some(question) => Said::Decision(answer(&question)?),
            None => {
                let reason = on
                    .operation(id)
                    .await?
                    .pending
                    .into_iter()
                    .find(|i| i.call.id == call.id)
                    .and_then(|i| i.reason);
                approval(&call, reason.as_ref())?
            }
        };
        end = match said {
            Said::Decision(decision) => {
                on.decide(id, Some(vec![call.id.to_string()]), decision)
                    .await?
            }
            Said::Always(scope) => match on.approve_always(id, &call.id, scope).await? {
                Granted::Made { end, grant } => {
                    eprintln!(
                        "granted {} for {} ({}; `rein grant revoke {}` undoes it)",
                        grant.tool,
                        scope.phrase(),
                        grant.id,
                        grant.id
                    );
                    end
                }
                // Not for this call (no agent, flagged since): say why and ask again.
                Granted::Refused(why) => {
                    eprintln!("{why}");
                    end
                }
            },
        };
    }
    Ok(end)
}

fn read_line() -> anyhow::Result<String> {
    std::io::stderr().flush()?;
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line)? == 0 {
        return Err(anyhow!("stdin closed while a decision was asked"));
    }
    Ok(line.trim().to_owned())
}

fn approval(call: &ToolCall, reason: Option<&ApprovalReason>) -> anyhow::Result<Said> {
    let key = call.key();
    eprintln!("\napprove {key}({})?", call.arguments);
    let every_time = reason.is_some_and(|r| r.every_time);
    if let Some(r) = reason {
        eprintln!("  why: {} ({})", r.line(), r.source.as_str());
        if every_time {
            eprintln!("  asked every time: no grant covers a call this rule flags");
        }
    }
    if every_time {
        eprint!("[y]es / [n]o: ");
    } else {
        eprint!("[y]es / [n]o / always for this [o]peration, this [c]onversation, this [a]gent: ");
    }
    let said = read_line()?.to_ascii_lowercase();
    let always = |scope| {
        if every_time {
            None
        } else {
            Some(Said::Always(scope))
        }
    };
    let chosen = match said.as_str() {
        "y" | "yes" => Some(Said::Decision(Decision::Approve)),
        "o" | "operation" => always(GrantScope::Operation),
        "c" | "conversation" => always(GrantScope::Topic),
        "a" | "agent" => always(GrantScope::Agent),
        _ => None,
    };
    if let Some(chosen) = chosen {
        return Ok(chosen);
    }
    eprint!("reason (optional): ");
    let reason = Some(read_line()?).filter(|r| !r.is_empty());
    Ok(Said::Decision(Decision::Reject {
        reason,
        halt: false,
    }))
}

/// Ask until the answer fits: an option's number, key or label, or free text; an empty line
/// takes the default, or declines when there is none.
fn answer(q: &Question) -> anyhow::Result<Decision> {
    eprintln!("\n? {}", q.question);
    for (n, o) in q.options.iter().enumerate() {
        eprintln!("  {}) {} — {}", n + 1, o.key, o.label);
    }
    let hint = match &q.default {
        Some(d) => format!("empty takes the default `{d}`"),
        None => "empty declines".to_owned(),
    };
    loop {
        if q.options.is_empty() {
            eprint!("answer ({hint}): ");
        } else {
            eprint!("choose 1-{} or type a key ({hint}): ", q.options.len());
        }
        let line = read_line()?;
        let given = match (line.is_empty(), &q.default) {
            (true, Some(d)) => Answer::Text(d.clone()),
            (true, None) => {
                return Ok(Decision::Reject {
                    reason: Some("the user declined to answer".into()),
                    halt: false,
                });
            }
            (false, _) => match line.parse::<usize>() {
                Ok(n) if (1..=q.options.len()).contains(&n) => {
                    Answer::Option(q.options[n - 1].key.clone())
                }
                _ => Answer::Text(line),
            },
        };
        match q.answered(&given) {
            Ok(_) => return Ok(Decision::Answer(given)),
            Err(e) => eprintln!("{e}"),
        }
    }
}
