//! `rein approve`, `rein answer` and `rein reject`: decide pending calls of a parked operation,
//! follow it to where it stops next (asking on a terminal for what it asks then), and say how
//! it stopped.

use super::{Backend, Granted, operation_id};
use anyhow::{anyhow, bail};
use rein_core::OperationId;
use rein_core::intervention::GrantScope;
use rein_core::question::Answer;
use rein_operation::{Decision, RunEnd};

// `rein approve ID [--call C]... [--all] [--grant SCOPE]` (the command's help is its variant's).
#[derive(clap::Args)]
pub struct ApproveArgs {
    /// Operation id.
    id: String,
    /// Tool call ids (default: every pending call).
    #[arg(long = "call")]
    calls: Vec<String>,
    /// Approve every pending call.
    #[arg(long)]
    all: bool,
    /// Also grant the call's tool from now on, for this operation, topic (conversation) or
    /// agent (one `--call`; refused for a call the blacklist or the guard flagged).
    #[arg(long, value_name = "SCOPE", value_parser = super::grants::scope_parser(), requires = "calls", conflicts_with = "all")]
    grant: Option<GrantScope>,
}

// `rein answer ID [--call C] TEXT` or `--option KEY`.
#[derive(clap::Args)]
pub struct AnswerArgs {
    /// Operation id.
    id: String,
    /// The answer (free text, or an option's key or label).
    #[arg(required_unless_present = "option", conflicts_with = "option")]
    text: Option<String>,
    /// The question's tool call id (default: the one open question).
    #[arg(long = "call")]
    call: Option<String>,
    /// Choose the option with this key.
    #[arg(long)]
    option: Option<String>,
}

// `rein reject ID [--call C]... [--reason R] [--halt]`.
#[derive(clap::Args)]
pub struct RejectArgs {
    /// Operation id.
    id: String,
    /// Tool call ids (default: every pending call).
    #[arg(long = "call")]
    calls: Vec<String>,
    /// Why (the model reads it).
    #[arg(long)]
    reason: Option<String>,
    /// Stop the operation instead of letting the model continue.
    #[arg(long)]
    halt: bool,
}

/// Approve the calls `a` names (all pending ones by default), granting the tool when asked.
pub async fn approve(on: &impl Backend, a: ApproveArgs) -> anyhow::Result<u8> {
    let ApproveArgs {
        id,
        calls,
        all,
        grant,
    } = a;
    let id = operation_id(&id)?;
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

/// Answer the open question (or the one `--call` names).
pub async fn answer(on: &impl Backend, a: AnswerArgs) -> anyhow::Result<u8> {
    let AnswerArgs {
        id,
        text,
        call,
        option,
    } = a;
    let id = operation_id(&id)?;
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

/// Reject the calls `a` names (all pending ones by default).
pub async fn reject(on: &impl Backend, a: RejectArgs) -> anyhow::Result<u8> {
    let RejectArgs {
        id,
        calls,
        reason,
        halt,
    } = a;
    let id = operation_id(&id)?;
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
    if detail.spec.group.is_some() {
        // The members' turns, from the conversation (here or on the server alike).
        let tree = on.topic(&detail.operation.topic_id).await?;
        crate::output::turns(&tree.path());
    }
    Ok(super::ended::print(
        id,
        end,
        Some(&detail.operation),
        &detail.pending,
    ))
}
