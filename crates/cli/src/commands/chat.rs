//! `rein chat`: a conversation on one topic, a turn per line. Lines starting with `/` are
//! commands: `/approve`, `/reject [reason]`, `/cancel`, `/model provider/model`, `/history`,
//! `/regenerate` (another answer to the last message), `/edit TEXT` (replace the last message
//! you wrote), `/branch [N]` (list the branch points, or show alternative N of the last one),
//! `/skill NAME`, `/help`, `/exit`. Regenerating and editing add sibling branches; nothing is
//! overwritten. While the agent waits for an answer to its question
//! (`ask_user`), a plain line answers it and `/reject` declines. Works the same with a terminal
//! or with lines piped in, here or on a server (`--server`: each turn is an operation there, in
//! your topic there). Skills admitted in one turn (by `/skill` or by the model) stay admitted in
//! the next. Ctrl-C ends the chat (a turn in progress is left to finish, or to `rein op
//! resume`).

use super::{Backend, Start};
use crate::{agent_profile, exit};
use anyhow::bail;
use rein_core::OperationId;
use rein_core::message::Role;
use rein_core::question::{Answer, Question};
use rein_operation::topic::TopicTree;
use rein_operation::{AgentProfile, Decision, RunEnd, Turn};
use std::io::Write;
use tokio::io::{AsyncBufReadExt, BufReader};

/// `rein chat` options.
#[derive(clap::Args)]
pub struct ChatArgs {
    /// Continue this conversation (its history is shown first); a new one otherwise.
    #[arg(long)]
    topic: Option<String>,
    /// Chat with this agent.
    #[arg(long, conflicts_with = "group")]
    agent: Option<String>,
    /// Chat with this group (its members answer in rounds).
    #[arg(long)]
    group: Option<String>,
    /// Every turn's settings, over the agent's (`--model` can be switched later with /model).
    #[command(flatten)]
    settings: agent_profile::AgentFlags,
}

const HELP: &str = "commands: /approve, /reject [reason], /cancel, /model provider/model, /skill NAME, /history, /regenerate, /edit TEXT, /branch [N], /help, /exit";

fn text(m: &rein_core::Message) -> String {
    m.text_content()
}

/// The topic's tree, if it has one yet.
async fn tree_of(on: &impl Backend, topic: Option<&str>) -> anyhow::Result<Option<TopicTree>> {
    match topic {
        Some(t) => Ok(Some(on.topic(t).await?)),
        None => Ok(None),
    }
}

/// The active branch as it reads (see [`super::topics::print_path`]).
async fn history(on: &impl Backend, topic: &str) -> anyhow::Result<()> {
    super::topics::print_path(&on.topic(topic).await?);
    Ok(())
}

/// The last message of the active path with the `role`.
fn last_of(tree: &TopicTree, role: Role) -> Option<rein_core::MessageId> {
    tree.path()
        .iter()
        .rev()
        .find(|m| m.role == role && m.kind == rein_core::message::MessageKind::Normal)
        .map(|m| m.id)
}

/// `/branch [N]`: without N, list the branch points of the active path; with N, show
/// alternative N of the last one.
async fn branch(on: &impl Backend, topic: Option<&str>, arg: &str) -> anyhow::Result<()> {
    let Some(tree) = tree_of(on, topic).await? else {
        eprintln!("(nothing yet)");
        return Ok(());
    };
    let Some(last) = tree.branches.last() else {
        eprintln!("no branches yet: /regenerate or /edit TEXT make one");
        return Ok(());
    };
    if arg.is_empty() {
        for b in &tree.branches {
            let start: String = tree
                .messages
                .iter()
                .find(|m| m.id == b.message)
                .map(|m| text(m).chars().take(50).collect())
                .unwrap_or_default();
            eprintln!("[{}/{}] {start}", b.index, b.alternatives.len());
        }
        eprintln!("/branch N shows alternative N of the last one");
        return Ok(());
    }
    let chosen = arg
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| last.alternatives.get(i));
    let (Some(&message), Some(topic)) = (chosen, topic) else {
        eprintln!(
            "choose 1 to {} (the last branch point's alternatives)",
            last.alternatives.len()
        );
        return Ok(());
    };
    super::topics::print_path(&on.activate(topic, message).await?);
    Ok(())
}

fn prompt() {
    eprint!("you> ");
    let _ = std::io::stderr().flush();
}

/// Run the chat until `/exit` or the end of input, each turn where `on` runs it.
pub async fn chat(on: &impl Backend, args: ChatArgs) -> anyhow::Result<u8> {
    let mut over = args.settings.profile();
    // Every turn is an operation of its own, with the agent's settings and this chat's.
    let who = agent_profile::RunAs::of(args.agent.as_deref(), args.group.as_deref());
    let mut model = on.model_of(who, &over).await?;
    let mut topic = args.topic.clone();
    if let Some(t) = &topic {
        history(on, t).await?;
    }
    let mut parked: Option<OperationId> = None;
    // The open question of the parked operation (its call id), answered by a plain line.
    let mut question: Option<String> = None;
    let mut code = exit::DONE;
    eprintln!("rein chat · {model} · {HELP}");
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    prompt();
    while let Some(line) = lines.next_line().await? {
        let line = line.trim();
        if line.is_empty() {
            prompt();
            continue;
        }
        let mut end = None;
        let mut id = None;
        // A turn to start: a plain line, or a regeneration or an edit.
        let mut begin: Option<(String, Turn)> = None;
        if let Some(cmd) = line.strip_prefix('/') {
            let (name, rest) = cmd.split_once(' ').unwrap_or((cmd, ""));
            match name {
                "exit" | "quit" => break,
                "help" => eprintln!("{HELP}"),
                "history" => match &topic {
                    Some(t) => history(on, t).await?,
                    None => eprintln!("(nothing yet)"),
                },
                "branch" => branch(on, topic.as_deref(), rest.trim()).await?,
                "regenerate" | "edit" if parked.is_some() => {
                    eprintln!("the last turn waits for a decision: /approve, /reject or /cancel");
                }
                "regenerate" => match tree_of(on, topic.as_deref()).await? {
                    Some(tree) => match tree.path().last() {
                        Some(m) => begin = Some((String::new(), Turn::Regenerate(m.id))),
                        None => eprintln!("(nothing to regenerate yet)"),
                    },
                    None => eprintln!("(nothing to regenerate yet)"),
                },
                "edit" if !rest.trim().is_empty() => {
                    match tree_of(on, topic.as_deref())
                        .await?
                        .and_then(|t| last_of(&t, Role::User))
                    {
                        Some(m) => begin = Some((rest.trim().to_owned(), Turn::Edit(m))),
                        None => eprintln!("(no message of yours to edit yet)"),
                    }
                }
                "edit" => eprintln!("/edit TEXT replaces your last message with TEXT"),
                "model" if !rest.trim().is_empty() => {
                    let next = rest.trim().to_owned();
                    let switched = AgentProfile {
                        model: Some(next.clone()),
                        ..over.clone()
                    };
                    match on.model_of(who, &switched).await {
                        Ok(m) => {
                            over = switched;
                            model = m;
                            eprintln!("model: {model}");
                        }
                        Err(e) => eprintln!("error: {e:#}"),
                    }
                }
                "model" => eprintln!("model: {model}"),
                "skill" if !rest.trim().is_empty() => {
                    let name = rest.trim().to_owned();
                    if !on.skill_names().await?.contains(&name) {
                        eprintln!("no skill `{name}` (see `rein skill list`)");
                    } else {
                        let mut skills = over.skills.clone().unwrap_or_default();
                        if !skills.contains(&name) {
                            skills.push(name.clone());
                        }
                        let with = AgentProfile {
                            skills: Some(skills),
                            ..over.clone()
                        };
                        match on.model_of(who, &with).await {
                            Ok(_) => {
                                over = with;
                                eprintln!("skill {name} is admitted from the next turn on");
                            }
                            Err(e) => eprintln!("error: {e:#}"),
                        }
                    }
                }
                "skill" => {
                    let active = over.skills.clone().unwrap_or_default();
                    let names = on.skill_names().await?;
                    eprintln!(
                        "active: {}; available: {}",
                        if active.is_empty() {
                            "none".into()
                        } else {
                            active.join(", ")
                        },
                        if names.is_empty() {
                            "none".into()
                        } else {
                            names.join(", ")
                        }
                    );
                }
                "approve" | "reject" | "cancel" => match parked {
                    None => eprintln!("nothing is waiting for a decision"),
                    Some(op) => {
                        let r = match name {
                            "approve" => on.decide(op, None, Decision::Approve).await,
                            "reject" => {
                                let reason =
                                    (!rest.trim().is_empty()).then(|| rest.trim().to_owned());
                                on.decide(
                                    op,
                                    None,
                                    Decision::Reject {
                                        reason,
                                        halt: false,
                                    },
                                )
                                .await
                            }
                            _ => on.cancel(op).await,
                        };
                        match r {
                            Ok(e) => {
                                end = Some(e);
                                id = Some(op);
                            }
                            // A decision that does not fit (approving a question): say why.
                            Err(e) => eprintln!("{e:#}"),
                        }
                    }
                },
                other => eprintln!("unknown command /{other}; {HELP}"),
            }
        } else if let Some(op) = parked {
            // A plain line answers the open question; anything else waits for a command.
            let Some(call) = question.clone() else {
                eprintln!(
                    "operation {op} waits for a decision: /approve, /reject [reason] or /cancel"
                );
                prompt();
                continue;
            };
            let answer = Decision::Answer(Answer::Text(line.to_owned()));
            match on.decide(op, Some(vec![call]), answer).await {
                Ok(e) => {
                    end = Some(e);
                    id = Some(op);
                }
                // An answer that does not fit: say why and keep asking.
                Err(e) => {
                    eprintln!("{e:#}");
                    prompt();
                    continue;
                }
            }
        } else {
            begin = Some((line.to_owned(), Turn::Continue));
        }
        if let Some((prompt, turn)) = begin {
            let ran = on
                .run(Start {
                    prompt: &prompt,
                    who,
                    over: &over,
                    attachments: &[],
                    topic: topic.as_deref(),
                    turn,
                    interrupt: false,
                })
                .await?;
            topic = Some(ran.topic);
            end = Some(ran.end);
            id = Some(ran.id);
        }
        if let (Some(end), Some(op)) = (end, id) {
            parked = None;
            // The next turn is a new operation: it starts with the skills this one admitted.
            let admitted = on.operation(op).await?.activated_skills;
            let mut skills = over.skills.clone().unwrap_or_default();
            for s in admitted {
                if !skills.contains(&s) {
                    skills.push(s);
                }
            }
            if !skills.is_empty() {
                over.skills = Some(skills);
            }
            if let RunEnd::WaitingForHuman { pending } = &end {
                question = None;
                for c in pending {
                    match Question::of_call(c).and_then(Result::ok) {
                        Some(q) => {
                            eprintln!("? {}", q.question);
                            for o in &q.options {
                                eprintln!("  {} — {}", o.key, o.label);
                            }
                            eprintln!("answer by typing it, or /reject [reason] to decline");
                            question.get_or_insert_with(|| c.id.to_string());
                        }
                        None => eprintln!(
                            "approve {}({})? /approve or /reject [reason]",
                            c.key(),
                            c.arguments
                        ),
                    }
                }
                parked = Some(op);
            } else {
                code = super::decide::finish(on, op, &end).await?;
            }
        }
        prompt();
    }
    eprintln!();
    if let Some(t) = &topic {
        eprintln!("topic: {t} (continue with: rein chat --topic {t})");
    }
    if parked.is_some() {
        bail!("left with a call waiting for a decision");
    }
    Ok(code)
}
