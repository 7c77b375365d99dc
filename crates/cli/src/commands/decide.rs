//! `rein approve`, `rein answer` and `rein reject`: decide pending calls of a parked operation,
//! follow it to where it stops next (asking on a terminal for what it asks then), and say how
//! it stopped.

use super::{Backend, Granted};
use anyhow::{anyhow, bail};
use rein_core::OperationId;
use rein_core::intervention::GrantScope;
use rein_core::question::Answer;
use rein_operation::{Decision, RunEnd};

/// `rein approve ID [--call C]... [--all] [--grant SCOPE]`.
pub async fn approve(
    on: &impl Backend,
    id: OperationId,
    calls: Vec<String>,
    all: bool,
    grant: Option<GrantScope>,
) -> anyhow::Result<u8> {
    let end = match (grant, calls.as_slice()) {
        (Some(scope), [call]) => match on.approve_always(id, call, scope).await? {
            Granted::Made { end, grant } => {
                eprintln!(
                    "granted {} for {} ({})",
                    grant.tool,
                    scope.phrase(),
                    grant.id
                );
                end
            }
            Granted::Refused(why) => bail!("{why}"),
        },
        (Some(_), _) => bail!("--grant goes with exactly one --call"),
        (None, _) => {
            let calls = (!all && !calls.is_empty()).then_some(calls);
            on.decide(id, calls, Decision::Approve).await?
        }
    };
    let end = crate::prompt::ask(on, id, end).await?;
    finish(on, id, &end).await
}

/// `rein answer ID [--call C] TEXT` or `--option KEY`.
pub async fn answer(
    on: &impl Backend,
    id: OperationId,
    text: Option<String>,
    call: Option<String>,
    option: Option<String>,
) -> anyhow::Result<u8> {
    let answer = match (text, option) {
        (_, Some(key)) => Answer::Option(key),
        (Some(text), None) => Answer::Text(text),
        (None, None) => return Err(anyhow!("give the answer, or --option KEY")),
    };
    let end = on
        .decide(id, call.map(|c| vec![c]), Decision::Answer(answer))
        .await?;
    let end = crate::prompt::ask(on, id, end).await?;
    finish(on, id, &end).await
}

/// `rein reject ID [--call C]... [--reason R] [--halt]`.
pub async fn reject(
    on: &impl Backend,
    id: OperationId,
    calls: Vec<String>,
    reason: Option<String>,
    halt: bool,
) -> anyhow::Result<u8> {
    let calls = (!calls.is_empty()).then_some(calls);
    let end = on
        .decide(id, calls, Decision::Reject { reason, halt })
        .await?;
    finish(on, id, &end).await
}

/// Say how `id` stopped (`end`); the exit code. A group's answer is its members' turns, read
/// from this machine's database (a server's are in its topic's thread).
pub async fn finish(on: &impl Backend, id: OperationId, end: &RunEnd) -> anyhow::Result<u8> {
    let detail = on.operation(id).await?;
    if detail.spec.group.is_some()
        && let Ok(local) = on.local()
        && let Some(op) = rein_store::Store::load_operation(&**local.store().await?, id).await?
    {
        crate::output::turns(&op.state);
    }
    Ok(super::ended::print(
        id,
        end,
        Some(&detail.operation),
        &detail.pending,
    ))
}
