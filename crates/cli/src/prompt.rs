//! Deciding on the terminal: while an operation waits for a person and stdin is a terminal,
//! ask about each pending call (approve, reject, always for this tool) and each question the
//! agent asked (`ask_user`: a number or key of an option, or free text), then continue it.

use anyhow::anyhow;
use rein_core::OperationId;
use rein_core::ToolCall;
use rein_core::question::{Answer, Question};
use rein_operation::{Decision, Driver, RunEnd};
use std::io::{BufRead, IsTerminal, Write};

/// Ask on the terminal for each pending call; the end unchanged when stdin is not a terminal.
pub(crate) async fn ask(
    driver: &Driver,
    id: OperationId,
    mut end: RunEnd,
) -> anyhow::Result<RunEnd> {
    let mut always: Vec<String> = Vec::new();
    while let RunEnd::WaitingForHuman { pending } = &end {
        if !std::io::stdin().is_terminal() {
            return Ok(end);
        }
        let Some(call) = pending.first().cloned() else {
            return Ok(end);
        };
        let decision = match Question::of_call(&call).and_then(Result::ok) {
            Some(question) => answer(&question)?,
            None => approval(&call, &mut always)?,
        };
        end = driver
            .decide(id, Some(&[call.id.to_string()]), decision, Some("cli"))
            .await?;
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

fn approval(call: &ToolCall, always: &mut Vec<String>) -> anyhow::Result<Decision> {
    let key = call.key();
    if always.contains(&key) {
        return Ok(Decision::Approve);
    }
    eprint!(
        "\napprove {key}({})? [y]es / [n]o / [a]lways for this tool: ",
        call.arguments
    );
    Ok(match read_line()?.to_ascii_lowercase().as_str() {
        "y" | "yes" => Decision::Approve,
        "a" | "always" => {
            always.push(key);
            Decision::Approve
        }
        _ => {
            eprint!("reason (optional): ");
            let reason = Some(read_line()?).filter(|r| !r.is_empty());
            Decision::Reject {
                reason,
                halt: false,
            }
        }
    })
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
