//! `rein goal`: objectives worked towards over many operations (rein-operation's
//! [`rein_operation::goals`]). `create` plans and runs one in the foreground until it rests
//! (achieved, waiting for a person, or over), printing each step; `run` continues one; the
//! decisions (`pause`, `resume`, `cancel`, `retry`, `skip`, `replan`, `accept`, `reject`) are
//! committed as the person's. On this machine's database only, for now.

use super::Backend;
use crate::exit;
use anyhow::Context;
use clap::Subcommand;
use rein_core::goal::{GoalDecision, GoalEvent, GoalLimits, GoalSettings, GoalStatus, WorkStatus};
use rein_core::ids::GoalId;
use rein_operation::goals::{GoalRunner, NewGoal};
use rein_store::{GoalRecord, Goals};
use std::sync::Arc;

/// `rein goal` subcommands.
#[derive(Subcommand)]
pub enum GoalCommand {
    /// Create a goal and run it until it rests (achieved, waiting for you, or over).
    Create(CreateArgs),
    /// Continue a goal until it rests.
    Run {
        /// The goal.
        id: String,
    },
    /// Your goals, newest first.
    List,
    /// A goal's graph: works with their status, attempts, verdicts and cost.
    Show {
        /// The goal.
        id: String,
    },
    /// Start no new work (running ones finish and are verified).
    Pause {
        /// The goal.
        id: String,
    },
    /// Go on after a pause (or an interrupted budget, once raised).
    Resume {
        /// The goal.
        id: String,
    },
    /// Stop the goal and its works' operations.
    Cancel {
        /// The goal.
        id: String,
    },
    /// Give a blocked work one more attempt.
    Retry {
        /// The goal.
        id: String,
        /// The work.
        work: String,
    },
    /// Let a work go (works after it may start).
    Skip {
        /// The goal.
        id: String,
        /// The work.
        work: String,
    },
    /// Plan again, keeping the works that passed.
    Replan {
        /// The goal.
        id: String,
        /// Why.
        #[arg(long)]
        why: String,
    },
    /// Count the goal achieved, on your word.
    Accept {
        /// The goal.
        id: String,
        /// What you say.
        #[arg(long, default_value = "")]
        note: String,
    },
    /// End the goal as not achieved.
    Reject {
        /// The goal.
        id: String,
        /// Why.
        #[arg(long)]
        why: String,
    },
}

/// `rein goal create`'s arguments.
#[derive(clap::Args)]
pub struct CreateArgs {
    /// What to achieve.
    objective: String,
    /// The agent works are assigned to by default (default: your default agent).
    #[arg(long)]
    agent: Option<String>,
    /// What the final acceptance checks (default: the objective).
    #[arg(long)]
    acceptance: Option<String>,
    /// The whole goal's cost limit in USD (every work, planning and verification).
    #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
    cost_limit: Option<rein_core::Usd>,
    /// The whole goal's token limit.
    #[arg(long, value_name = "N")]
    token_limit: Option<u64>,
    /// What a spent budget does: stop (the goal fails) or interrupt (it waits for you).
    #[arg(long, default_value = "stop", value_parser = crate::named::named::<rein_core::state::BudgetPolicy>())]
    on_budget: rein_core::state::BudgetPolicy,
    /// Attempts a work gets before it is blocked.
    #[arg(long, default_value_t = 3)]
    max_attempts: u32,
    /// Works running at once.
    #[arg(long, default_value_t = 4)]
    max_parallel: u32,
    /// When it must be done by (RFC 3339).
    #[arg(long)]
    deadline: Option<chrono::DateTime<chrono::Utc>>,
    /// The model that plans (`provider/model`; default: the system model, else the default).
    #[arg(long, value_name = "MODEL")]
    planner: Option<String>,
    /// The model that verifies works and accepts the goal (default: the planner).
    #[arg(long, value_name = "MODEL")]
    verifier: Option<String>,
    /// Create it only; `rein goal run ID` runs it.
    #[arg(long)]
    detach: bool,
}

fn goal_id(id: &str) -> anyhow::Result<GoalId> {
    id.parse()
        .map_err(|_| anyhow::anyhow!("`{id}` is not a goal id (a UUID, as `rein goal list` shows)"))
}

/// Run `command` on this machine's database.
pub async fn run(on: &impl Backend, command: GoalCommand, json: bool) -> anyhow::Result<u8> {
    let l = on.local()?;
    let store = Arc::clone(l.store().await?);
    let host = l.host().await?.clone();
    let user = crate::agent_profile::local_user(&store).await?;
    let origin = rein_operation::SpecOrigin {
        working_directory: std::env::current_dir()
            .ok()
            .map(|d| d.to_string_lossy().into_owned()),
        ..Default::default()
    };
    let driver = Arc::new(host.driver());
    let runner = GoalRunner::new(host, Arc::clone(&store), driver, user.id.clone(), origin);
    let owner = user.id.as_str();
    let decide = |id: String, decision: GoalDecision| {
        let runner = &runner;
        async move {
            let goal = runner
                .decide(owner, goal_id(&id)?, &user.name, decision)
                .await?;
            println!("goal {} is {}", goal.id, goal.status);
            Ok::<u8, anyhow::Error>(exit::DONE)
        }
    };
    match command {
        GoalCommand::Create(a) => {
            let model = |m: Option<String>| {
                m.map(|m| rein_operation::profile::model_ref(&m))
                    .transpose()
                    .context("--planner/--verifier")
            };
            let record = runner
                .create(
                    owner,
                    NewGoal {
                        objective: a.objective,
                        acceptance: a.acceptance,
                        settings: GoalSettings {
                            agent: a.agent,
                            planner: model(a.planner)?,
                            verifier: model(a.verifier)?,
                            budget: rein_core::state::Budget {
                                max_cost: a.cost_limit,
                                max_tokens: a.token_limit,
                                on_exceeded: a.on_budget,
                                ..Default::default()
                            },
                            deadline: a.deadline,
                        },
                        limits: GoalLimits {
                            max_attempts: a.max_attempts,
                            max_parallel: a.max_parallel,
                            ..GoalLimits::default()
                        },
                    },
                )
                .await?;
            println!("goal {}", record.goal.id);
            if a.detach {
                return Ok(exit::DONE);
            }
            follow(&runner, &store, record.goal.id, json).await
        }
        GoalCommand::Run { id } => follow(&runner, &store, goal_id(&id)?, json).await,
        GoalCommand::List => {
            let goals = store.list_goals(owner, 200).await?;
            if json {
                for r in &goals {
                    println!("{}", serde_json::to_string(&summary(r))?);
                }
            } else {
                for r in &goals {
                    println!(
                        "{}  {:<15}  {}",
                        r.goal.id,
                        r.goal.status.as_str(),
                        r.goal.objective.lines().next().unwrap_or_default()
                    );
                }
            }
            Ok(exit::DONE)
        }
        GoalCommand::Show { id } => {
            let record = store
                .goal(Some(owner), goal_id(&id)?)
                .await?
                .with_context(|| format!("no goal {id}"))?;
            let ledger = runner.ledger(&record).await?;
            if json {
                let mut v = serde_json::to_value(&record.goal)?;
                v["settings"] = serde_json::to_value(&record.settings)?;
                v["spent_usd"] = serde_json::json!(ledger.cost.dollars());
                v["spent_tokens"] = serde_json::json!(ledger.tokens);
                println!("{v}");
            } else {
                print!("{}", shown(&record, ledger));
            }
            Ok(exit::DONE)
        }
        GoalCommand::Pause { id } => decide(id, GoalDecision::Pause).await,
        GoalCommand::Resume { id } => decide(id, GoalDecision::Resume).await,
        GoalCommand::Cancel { id } => decide(id, GoalDecision::Cancel).await,
        GoalCommand::Retry { id, work } => decide(id, GoalDecision::Retry { work }).await,
        GoalCommand::Skip { id, work } => decide(id, GoalDecision::Skip { work }).await,
        GoalCommand::Replan { id, why } => decide(id, GoalDecision::Replan { why }).await,
        GoalCommand::Accept { id, note } => decide(id, GoalDecision::Accept { note }).await,
        GoalCommand::Reject { id, why } => decide(id, GoalDecision::Reject { why }).await,
    }
}

fn summary(r: &GoalRecord) -> serde_json::Value {
    serde_json::json!({
        "id": r.goal.id,
        "status": r.goal.status,
        "objective": r.goal.objective,
        "works": r.goal.works.len(),
        "created_at": r.created_at,
    })
}

/// Run goal `id` until it rests, printing each committed event; the exit code says how it
/// rests (0 achieved, 3 waiting for you, 1 failed or cancelled).
async fn follow(
    runner: &GoalRunner,
    store: &rein_store::SqlStore,
    id: GoalId,
    json: bool,
) -> anyhow::Result<u8> {
    let mut seen = store
        .goal(None, id)
        .await?
        .with_context(|| format!("no goal {id}"))?
        .seq;
    loop {
        let a = runner.advance(id).await?;
        for e in store.goal_events(id, seen).await? {
            seen = e.seq;
            if json {
                println!("{}", serde_json::to_string(&e.event)?);
            } else {
                eprintln!("goal: {}", line(&e.event));
            }
        }
        if !a.waiting {
            let record = store
                .goal(None, id)
                .await?
                .with_context(|| format!("no goal {id}"))?;
            if !json {
                eprintln!(
                    "goal {} is {}{}",
                    id,
                    record.goal.status,
                    record
                        .goal
                        .reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                );
            }
            return Ok(match record.goal.status {
                GoalStatus::Achieved => exit::DONE,
                GoalStatus::NeedsAttention
                | GoalStatus::Paused
                | GoalStatus::Planning
                | GoalStatus::Running => exit::WAITING,
                GoalStatus::Failed | GoalStatus::Cancelled => exit::ERROR,
            });
        }
        if a.committed == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }
}

/// One line for a committed event.
fn line(e: &GoalEvent) -> String {
    match e {
        GoalEvent::Planned { works, revision } => format!(
            "plan {} by {}: {}",
            revision.n,
            revision.by,
            works
                .iter()
                .map(|w| if w.depends_on.is_empty() {
                    w.id.clone()
                } else {
                    format!("{} (after {})", w.id, w.depends_on.join(", "))
                })
                .collect::<Vec<_>>()
                .join(", ")
        ),
        GoalEvent::PlanFailed { why } => format!("no plan: {why}"),
        GoalEvent::WorkStarted {
            work,
            attempt,
            operation,
        } => format!("{work}: attempt {attempt} started (operation {operation})"),
        GoalEvent::WorkEnded { work, attempt, end } => match end {
            rein_core::goal::AttemptEnd::Finished { .. } => {
                format!("{work}: attempt {attempt} finished; verifying")
            }
            rein_core::goal::AttemptEnd::Failed { why } => {
                format!("{work}: attempt {attempt} failed: {why}")
            }
        },
        GoalEvent::Verified {
            work,
            attempt,
            verdict,
        } => {
            if verdict.passed {
                format!("{work}: attempt {attempt} passed")
            } else {
                format!(
                    "{work}: attempt {attempt} did not pass: {}",
                    verdict.gaps.join("; ")
                )
            }
        }
        GoalEvent::Accepted { verdict } => {
            if verdict.passed {
                "the final acceptance passed".to_owned()
            } else {
                format!(
                    "the final acceptance found gaps: {}",
                    verdict.gaps.join("; ")
                )
            }
        }
        GoalEvent::BudgetSpent { why, .. } => format!("budget: {why}"),
        GoalEvent::Decided { by, decision } => format!("{by} decided: {decision:?}"),
    }
}

/// The graph as text.
fn shown(r: &GoalRecord, ledger: rein_operation::goals::Ledger) -> String {
    use std::fmt::Write;
    let g = &r.goal;
    let mut out = format!(
        "goal       {}\nobjective  {}\nstatus     {}{}\nspent      ${:.4}, {} tokens\n",
        g.id,
        g.objective,
        g.status,
        g.reason
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        ledger.cost.dollars(),
        ledger.tokens
    );
    if let Some(by) = &g.decided_by {
        let _ = writeln!(out, "decided    {by}");
    }
    for w in &g.works {
        let mark = match w.status {
            WorkStatus::Passed => "✓",
            WorkStatus::Blocked | WorkStatus::Failed => "✗",
            WorkStatus::Retired => "-",
            WorkStatus::Running | WorkStatus::Verifying => "…",
            WorkStatus::Pending | WorkStatus::Ready => " ",
        };
        let _ = writeln!(
            out,
            "{mark} {:<16} {:<10} attempts {}{}",
            w.id,
            w.status.as_str(),
            w.attempts.len(),
            if w.depends_on.is_empty() {
                String::new()
            } else {
                format!("  after {}", w.depends_on.join(", "))
            }
        );
        for a in &w.attempts {
            let verdict = match &a.verdict {
                Some(v) if v.passed => "passed".to_owned(),
                Some(v) => format!("gaps: {}", v.gaps.join("; ")),
                None => "not judged".to_owned(),
            };
            let _ = writeln!(out, "    {} op {}  {verdict}", a.n, a.operation);
        }
    }
    if let Some(v) = &g.verdict {
        let _ = writeln!(
            out,
            "acceptance {}",
            if v.passed {
                "passed".to_owned()
            } else {
                format!("gaps: {}", v.gaps.join("; "))
            }
        );
    }
    out
}
