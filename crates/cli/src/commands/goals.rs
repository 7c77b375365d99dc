//! `rein goal`: objectives worked towards over many operations (rein-operation's
//! [`rein_operation::goals`]). `create` plans and runs one until it rests (achieved, waiting
//! for a person, or over), printing each step; `run` follows one on; the decisions (`pause`,
//! `resume`, `cancel`, `retry`, `skip`, `replan`, `accept`, `reject`) are committed as the
//! person's. On this machine's database the goal runs in this process; through a server
//! (`--server`) the server runs it and this command follows it.

use super::remote::Remote;
use super::{Backend, Local};
use crate::exit;
use anyhow::Context;
use clap::Subcommand;
use rein_core::goal::{GoalDecision, GoalEvent, GoalStatus, WorkStatus};
use rein_core::ids::GoalId;
use rein_operation::goals::GoalRunner;
use rein_server::routes::goals::{
    CreateGoal, GoalEvents, GoalLimitsIn, GoalList, GoalPlanEdit, GoalView,
};
use rein_store::Goals;
use reqwest::Method;
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
        /// Print it again each time it changes, until it rests (it runs elsewhere: a server,
        /// or another `rein goal run`).
        #[arg(long)]
        watch: bool,
    },
    /// Start no new work (running ones finish and are verified).
    Pause {
        /// The goal.
        id: String,
    },
    /// Go on after a pause, or after its budget interrupted it (with new limits).
    Resume {
        /// The goal.
        id: String,
        /// Its new cost limit in USD (every work, planning and verification, in all).
        #[arg(long, value_name = "USD", value_parser = crate::amounts::usd)]
        cost_limit: Option<rein_core::Usd>,
        /// Its new token limit.
        #[arg(long, value_name = "N")]
        token_limit: Option<u64>,
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
    /// Print the plan's works still to do as JSON, or replace them with `--edit FILE`'s (the
    /// works that passed or were retired are kept; no work may be running).
    Plan {
        /// The goal.
        id: String,
        /// A JSON file (`-`: standard input) of `{"works": [{"id", "instruction",
        /// "assignee", "depends_on", "acceptance"}]}`, as this command prints it.
        #[arg(long, value_name = "FILE")]
        edit: Option<std::path::PathBuf>,
        /// Why, kept with the revision.
        #[arg(long, default_value = "")]
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
    #[arg(long, default_value = "stop", value_parser = crate::named::named::<rein_core::goal::OnBudget>())]
    on_budget: rein_core::goal::OnBudget,
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
    #[arg(long, value_name = "MODEL", conflicts_with = "verifier_agent")]
    verifier: Option<String>,
    /// An agent of yours that verifies works and accepts the goal instead of a model: each
    /// judgement is an operation of it, with its tools, ending with the verdict as JSON.
    #[arg(long, value_name = "NAME")]
    verifier_agent: Option<String>,
    /// Create it only; `rein goal run ID` runs it.
    #[arg(long)]
    detach: bool,
}

fn goal_id(id: &str) -> anyhow::Result<GoalId> {
    id.parse()
        .map_err(|_| anyhow::anyhow!("`{id}` is not a goal id (a UUID, as `rein goal list` shows)"))
}

/// What `rein goal` needs from where it runs.
pub trait Goaled {
    /// Keep a new goal of yours.
    async fn create_goal(&self, new: CreateGoal) -> anyhow::Result<GoalView>;

    /// Your goals, newest first.
    async fn goals(&self) -> anyhow::Result<Vec<GoalView>>;

    /// One of your goals.
    async fn goal(&self, id: GoalId) -> anyhow::Result<GoalView>;

    /// Your decision on one of your goals; the goal after it.
    async fn decide_goal(&self, id: GoalId, decision: GoalDecision) -> anyhow::Result<GoalView>;

    /// New limits for goal `id`; the goal after them.
    async fn set_goal_limits(&self, id: GoalId, limits: GoalLimitsIn) -> anyhow::Result<GoalView>;

    /// Your plan for goal `id`'s works still to do; the goal after it.
    async fn edit_goal_plan(&self, id: GoalId, edit: GoalPlanEdit) -> anyhow::Result<GoalView>;

    /// Run (here) or follow (a server runs it) goal `id` until it rests, telling `seen` each
    /// committed event after commit `after`; its status then.
    async fn run_goal(
        &self,
        id: GoalId,
        after: u64,
        seen: &mut (dyn FnMut(&GoalEvent) -> anyhow::Result<()> + Send),
    ) -> anyhow::Result<GoalStatus>;
}

impl Local {
    /// A runner of the local user's goals, its works in the current directory.
    async fn goal_runner(&self) -> anyhow::Result<(GoalRunner, rein_store::User)> {
        let store = Arc::clone(self.store().await?);
        let host = self.host().await?.clone();
        let user = crate::agent_profile::local_user(&store).await?;
        let origin = rein_operation::SpecOrigin {
            working_directory: std::env::current_dir()
                .ok()
                .map(|d| d.to_string_lossy().into_owned()),
            ..Default::default()
        };
        let driver = Arc::new(host.driver());
        let runner = GoalRunner::new(host, store, driver, user.id.clone(), origin);
        Ok((runner, user))
    }

    async fn goal_view(
        &self,
        runner: &GoalRunner,
        owner: &str,
        id: GoalId,
    ) -> anyhow::Result<GoalView> {
        let record = self
            .store()
            .await?
            .goal(Some(owner), id)
            .await?
            .with_context(|| format!("no goal {id}"))?;
        let ledger = runner.ledger(&record).await?;
        let rests = runner.at_rest(&record, &ledger).await?;
        Ok(GoalView::of(record, ledger, rests))
    }
}

impl Goaled for Local {
    async fn create_goal(&self, new: CreateGoal) -> anyhow::Result<GoalView> {
        let (runner, user) = self.goal_runner().await?;
        let new =
            rein_server::routes::goals::new_goal(new).map_err(|e| anyhow::anyhow!(e.message))?;
        let record = runner.create(&user.id, new).await?;
        self.goal_view(&runner, &user.id, record.goal.id).await
    }

    async fn goals(&self) -> anyhow::Result<Vec<GoalView>> {
        let (runner, user) = self.goal_runner().await?;
        let mut out = Vec::new();
        for r in self.store().await?.list_goals(&user.id, 200).await? {
            let ledger = runner.ledger(&r).await?;
            let rests = runner.at_rest(&r, &ledger).await?;
            out.push(GoalView::of(r, ledger, rests));
        }
        Ok(out)
    }

    async fn goal(&self, id: GoalId) -> anyhow::Result<GoalView> {
        let (runner, user) = self.goal_runner().await?;
        self.goal_view(&runner, &user.id, id).await
    }

    async fn decide_goal(&self, id: GoalId, decision: GoalDecision) -> anyhow::Result<GoalView> {
        let (runner, user) = self.goal_runner().await?;
        runner.decide(&user.id, id, &user.name, decision).await?;
        self.goal_view(&runner, &user.id, id).await
    }

    async fn set_goal_limits(&self, id: GoalId, limits: GoalLimitsIn) -> anyhow::Result<GoalView> {
        let (runner, user) = self.goal_runner().await?;
        let cost = limits.cost_limit.map(rein_core::Usd::from_dollars);
        runner
            .set_limits(&user.id, id, &user.name, cost, limits.token_limit)
            .await?;
        self.goal_view(&runner, &user.id, id).await
    }

    async fn edit_goal_plan(&self, id: GoalId, edit: GoalPlanEdit) -> anyhow::Result<GoalView> {
        let (runner, user) = self.goal_runner().await?;
        let proposed = rein_core::goal::plan::ProposedPlan { works: edit.works };
        runner
            .edit_plan(&user.id, id, &user.name, &proposed, &edit.why)
            .await?;
        self.goal_view(&runner, &user.id, id).await
    }

    async fn run_goal(
        &self,
        id: GoalId,
        after: u64,
        seen: &mut (dyn FnMut(&GoalEvent) -> anyhow::Result<()> + Send),
    ) -> anyhow::Result<GoalStatus> {
        // One runner for the whole run: it knows which works' operations it runs.
        let (runner, user) = self.goal_runner().await?;
        let store = Arc::clone(self.store().await?);
        let mut last = after;
        loop {
            let a = runner.advance(id).await?;
            for e in store.goal_events(id, last).await? {
                last = e.seq;
                seen(&e.event)?;
            }
            if !a.waiting {
                return Ok(self.goal_view(&runner, &user.id, id).await?.goal.status);
            }
            if a.committed == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

impl Goaled for Remote {
    async fn create_goal(&self, new: CreateGoal) -> anyhow::Result<GoalView> {
        self.call(Method::POST, "/v1/goals", Some(&new)).await
    }

    async fn goals(&self) -> anyhow::Result<Vec<GoalView>> {
        let list: GoalList = self.get("/v1/goals", &()).await?;
        Ok(list.goals)
    }

    async fn goal(&self, id: GoalId) -> anyhow::Result<GoalView> {
        self.get(&format!("/v1/goals/{id}"), &()).await
    }

    async fn decide_goal(&self, id: GoalId, decision: GoalDecision) -> anyhow::Result<GoalView> {
        self.call(
            Method::POST,
            &format!("/v1/goals/{id}/decisions"),
            Some(&decision),
        )
        .await
    }

    async fn set_goal_limits(&self, id: GoalId, limits: GoalLimitsIn) -> anyhow::Result<GoalView> {
        self.call(
            Method::POST,
            &format!("/v1/goals/{id}/limits"),
            Some(&limits),
        )
        .await
    }

    async fn edit_goal_plan(&self, id: GoalId, edit: GoalPlanEdit) -> anyhow::Result<GoalView> {
        self.call(Method::PUT, &format!("/v1/goals/{id}/plan"), Some(&edit))
            .await
    }

    async fn run_goal(
        &self,
        id: GoalId,
        after: u64,
        seen: &mut (dyn FnMut(&GoalEvent) -> anyhow::Result<()> + Send),
    ) -> anyhow::Result<GoalStatus> {
        // The server runs it; this follows its events until it rests.
        let mut last = after;
        loop {
            let events: GoalEvents = self
                .get(&format!("/v1/goals/{id}/events"), &[("after", last)])
                .await?;
            for e in &events.events {
                last = e.seq;
                seen(&e.event)?;
            }
            let view = self.goal(id).await?;
            if view.seq == last && view.rests {
                return Ok(view.goal.status);
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
    }
}

/// Run `command` where `on` says.
pub async fn run(on: &impl Backend, command: GoalCommand, json: bool) -> anyhow::Result<u8> {
    let decide = |id: String, decision: GoalDecision| async move {
        let v = on.decide_goal(goal_id(&id)?, decision).await?;
        println!("goal {} is {}", v.goal.id, v.goal.status);
        Ok::<u8, anyhow::Error>(exit::DONE)
    };
    match command {
        GoalCommand::Create(a) => {
            let v = on
                .create_goal(CreateGoal {
                    objective: a.objective,
                    acceptance: a.acceptance,
                    agent: a.agent,
                    cost_limit: a.cost_limit.map(rein_core::Usd::dollars),
                    token_limit: a.token_limit,
                    on_budget: Some(a.on_budget),
                    max_attempts: Some(a.max_attempts),
                    max_parallel: Some(a.max_parallel),
                    deadline: a.deadline,
                    planner: a.planner,
                    verifier: a.verifier,
                    verifier_agent: a.verifier_agent,
                })
                .await?;
            println!("goal {}", v.goal.id);
            if a.detach {
                return Ok(exit::DONE);
            }
            follow(on, v.goal.id, v.seq, json).await
        }
        GoalCommand::Run { id } => {
            let id = goal_id(&id)?;
            let seq = on.goal(id).await?.seq;
            follow(on, id, seq, json).await
        }
        GoalCommand::List => {
            let goals = on.goals().await?;
            for v in &goals {
                if json {
                    println!("{}", serde_json::to_string(v)?);
                } else {
                    println!(
                        "{}  {:<15}  {}",
                        v.goal.id,
                        v.goal.status.as_str(),
                        v.goal.objective.lines().next().unwrap_or_default()
                    );
                }
            }
            Ok(exit::DONE)
        }
        GoalCommand::Show { id, watch } => {
            let id = goal_id(&id)?;
            let mut last = None;
            loop {
                let v = on.goal(id).await?;
                if last != Some(v.seq) {
                    if json {
                        println!("{}", serde_json::to_string(&v)?);
                    } else {
                        if last.is_some() {
                            println!();
                        }
                        print!("{}", shown(&v));
                    }
                    last = Some(v.seq);
                }
                if !watch || v.rests {
                    return Ok(exit::DONE);
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        }
        GoalCommand::Pause { id } => decide(id, GoalDecision::Pause).await,
        GoalCommand::Resume {
            id,
            cost_limit,
            token_limit,
        } => {
            if cost_limit.is_some() || token_limit.is_some() {
                on.set_goal_limits(
                    goal_id(&id)?,
                    GoalLimitsIn {
                        cost_limit: cost_limit.map(rein_core::Usd::dollars),
                        token_limit,
                    },
                )
                .await?;
            }
            decide(id, GoalDecision::Resume).await
        }
        GoalCommand::Cancel { id } => decide(id, GoalDecision::Cancel).await,
        GoalCommand::Retry { id, work } => decide(id, GoalDecision::Retry { work }).await,
        GoalCommand::Skip { id, work } => decide(id, GoalDecision::Skip { work }).await,
        GoalCommand::Replan { id, why } => decide(id, GoalDecision::Replan { why }).await,
        GoalCommand::Plan { id, edit, why } => {
            let id = goal_id(&id)?;
            let Some(file) = edit else {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&to_do(&on.goal(id).await?))?
                );
                return Ok(exit::DONE);
            };
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin()).context("reading the plan from stdin")?
            } else {
                std::fs::read_to_string(&file)
                    .with_context(|| format!("reading the plan {}", file.display()))?
            };
            let plan: rein_core::goal::plan::ProposedPlan = serde_json::from_str(&text)
                .with_context(|| {
                    format!(
                        "{} is not a plan: {{\"works\": [{{\"id\", \"instruction\", \"assignee\", \"depends_on\", \"acceptance\"}}]}}",
                        file.display()
                    )
                })?;
            let v = on
                .edit_goal_plan(
                    id,
                    GoalPlanEdit {
                        works: plan.works,
                        why,
                    },
                )
                .await?;
            let revision = v.goal.revisions.last().map(|r| r.n).unwrap_or_default();
            println!("goal {} is {} (plan {revision})", v.goal.id, v.goal.status);
            Ok(exit::DONE)
        }
        GoalCommand::Accept { id, note } => decide(id, GoalDecision::Accept { note }).await,
        GoalCommand::Reject { id, why } => decide(id, GoalDecision::Reject { why }).await,
    }
}

/// Run or follow goal `id` from commit `after` until it rests, printing each committed event;
/// the exit code says how it rests (0 achieved, 3 waiting for you, 1 failed or cancelled).
async fn follow(on: &impl Backend, id: GoalId, after: u64, json: bool) -> anyhow::Result<u8> {
    let mut print = |e: &GoalEvent| -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string(e)?);
        } else {
            eprintln!("goal: {}", line(e));
        }
        Ok(())
    };
    let status = on.run_goal(id, after, &mut print).await?;
    if !json {
        let v = on.goal(id).await?;
        eprintln!(
            "goal {} is {}{}",
            id,
            v.goal.status,
            v.goal
                .reason
                .as_deref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        );
    }
    Ok(match status {
        GoalStatus::Achieved => exit::DONE,
        GoalStatus::NeedsAttention
        | GoalStatus::Paused
        | GoalStatus::Planning
        | GoalStatus::Running => exit::WAITING,
        GoalStatus::Failed | GoalStatus::Cancelled => exit::ERROR,
    })
}

/// The works of `v`'s plan still to do, as a plan a person edits (the passed and retired ones
/// are kept by any revision, so they are left out).
fn to_do(v: &GoalView) -> rein_core::goal::plan::ProposedPlan {
    rein_core::goal::plan::ProposedPlan {
        works: v
            .goal
            .works
            .iter()
            .filter(|w| !matches!(w.status, WorkStatus::Passed | WorkStatus::Retired))
            .map(|w| rein_core::goal::plan::ProposedWork {
                id: w.id.clone(),
                instruction: w.instruction.clone(),
                assignee: w.assignee.clone(),
                depends_on: w.depends_on.clone(),
                acceptance: w.acceptance.clone(),
            })
            .collect(),
    }
}

/// One line for a committed event.
fn line(e: &GoalEvent) -> String {
    match e {
        GoalEvent::Planned { works, revision } | GoalEvent::Edited { works, revision } => format!(
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
        GoalEvent::LimitsSet {
            by,
            cost_limit,
            token_limit,
        } => {
            let mut set = Vec::new();
            if let Some(c) = cost_limit {
                set.push(format!("cost limit {c}"));
            }
            if let Some(t) = token_limit {
                set.push(format!("token limit {t}"));
            }
            format!("{by} set its {}", set.join(" and "))
        }
        GoalEvent::Decided { by, decision } => format!("{by} decided: {decision:?}"),
    }
}

/// The graph as text.
fn shown(v: &GoalView) -> String {
    use std::fmt::Write;
    let g = &v.goal;
    let mut out = format!(
        "goal       {}\nobjective  {}\nstatus     {}{}\nspent      ${:.4}, {} tokens\n",
        g.id,
        g.objective,
        g.status,
        g.reason
            .as_deref()
            .map(|x| format!(" ({x})"))
            .unwrap_or_default(),
        v.spent_usd,
        v.spent_tokens
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
