//! `rein task …` on the local database: create, list, show, edit, pause, resume, run (now, in
//! this process), delete, history, and the next due times in the task's zone and in UTC.
//! Scheduled fires run where a dispatcher runs (`rein serve` or `rein worker`).

use super::ended::finish_here;
use crate::agent_profile;
use crate::invocation::Invocation;
use crate::named::named;
use anyhow::{anyhow, bail};
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_operation::SpecOrigin;
use rein_scheduler::input::{apply_edit, check_agent, new_task, view};
use rein_scheduler::{
    Automation, CatchUp, LaunchError, Launcher, Overlap, Questions, ReviewState, RunError,
    RunState, SystemClock, Task, TaskInput, TaskService,
};
use rein_store::{SqlStore, Store, Tasks};
use std::sync::Arc;

/// Task settings given on the command line.
#[derive(clap::Args, Clone, Default)]
pub struct TaskFlags {
    /// Title.
    #[arg(long)]
    title: Option<String>,
    /// The whole prompt of every run.
    #[arg(long)]
    instruction: Option<String>,
    /// The agent that runs it.
    #[arg(long)]
    agent: Option<String>,
    /// Cron pattern (5 fields, or 6 with seconds first), e.g. "0 9 * * 1-5".
    #[arg(long)]
    cron: Option<String>,
    /// IANA time zone of the cron pattern (default UTC).
    #[arg(long)]
    tz: Option<String>,
    /// Heartbeat interval instead of a cron pattern (30m, 2h, 1d).
    #[arg(long)]
    every: Option<String>,
    /// Cancel a heartbeat run still going after this long.
    #[arg(long)]
    timeout: Option<String>,
    /// Manual runs only (drops the schedule or heartbeat).
    #[arg(long)]
    manual_only: bool,
    /// Scheduled or heartbeat runs allowed.
    #[arg(long)]
    max_executions: Option<u64>,
    /// skip (default), queue_one or allow.
    #[arg(long, value_parser = named::<Overlap>())]
    overlap: Option<Overlap>,
    /// skip_missed (default) or run_once.
    #[arg(long, value_parser = named::<CatchUp>())]
    catch_up: Option<CatchUp>,
    /// Consecutive failures that pause the task (default 3).
    #[arg(long)]
    failure_threshold: Option<u32>,
    /// Review state: none, pending, approved or changes_requested.
    #[arg(long, value_parser = named::<ReviewState>())]
    review: Option<ReviewState>,
    /// A task that must complete before this one runs (repeatable; on edit it replaces the
    /// list).
    #[arg(long = "after", value_name = "TASK_ID")]
    after: Vec<String>,
    /// Drop every dependency (edit).
    #[arg(long, conflicts_with = "after")]
    no_deps: bool,
    /// What runs do with their agent's questions: decline (default) or brief (also an urgent
    /// decision brief for you, answered with `rein brief resolve`).
    #[arg(long, value_parser = named::<Questions>())]
    questions: Option<Questions>,
}

impl TaskFlags {
    fn body(self) -> TaskInput {
        TaskInput {
            title: self.title,
            instruction: self.instruction,
            agent: self.agent,
            cron: self.cron,
            tz: self.tz,
            every: self.every,
            timeout: self.timeout,
            manual_only: self.manual_only.then_some(true),
            max_executions: self.max_executions,
            overlap: self.overlap,
            catch_up: self.catch_up,
            failure_threshold: self.failure_threshold,
            review: self.review,
            questions: self.questions,
            status: None,
            depends_on: if self.no_deps {
                Some(Vec::new())
            } else {
                (!self.after.is_empty()).then_some(self.after)
            },
        }
    }
}

/// `rein task` subcommands.
#[derive(clap::Subcommand)]
pub enum TaskCommand {
    /// Create a task.
    Create(TaskFlags),
    /// List tasks.
    List,
    /// Show a task, its next due times and its last runs.
    Show {
        /// Task id.
        id: String,
    },
    /// Change a task (a new --cron, --every or --max-executions restarts its automation).
    Edit {
        /// Task id.
        id: String,
        #[command(flatten)]
        flags: TaskFlags,
    },
    /// Pause a task.
    Pause {
        /// Task id.
        id: String,
    },
    /// Resume a task (fires missed while paused are not run).
    Resume {
        /// Task id.
        id: String,
    },
    /// Run a task now, here (not counted towards its execution cap).
    Run {
        /// Task id.
        id: String,
    },
    /// Delete a task.
    Delete {
        /// Task id.
        id: String,
    },
    /// Runs (with briefs) and skipped fires (with reasons), newest first.
    History {
        /// Task id.
        id: String,
    },
    /// The next due times, in the task's zone and in UTC.
    Next {
        /// Task id.
        id: String,
        /// How many.
        #[arg(long, default_value_t = 5)]
        count: usize,
    },
}

/// Starts a manual run in this process.
pub(crate) struct Local<'a> {
    store: Arc<SqlStore>,
    given: &'a Invocation,
    /// The local user, whose agents tasks run.
    user: String,
    started: std::sync::Mutex<Option<rein_operation::Driver>>,
    /// The host of the last launch: its system model reads the run when it ends.
    host: std::sync::Mutex<Option<rein_operation::Host>>,
}

impl Launcher for Local<'_> {
    fn launch<'b>(
        &'b self,
        task: &'b Task,
        trigger: rein_store::RunTrigger,
    ) -> BoxFuture<'b, Result<String, LaunchError>> {
        async move {
            let failed = |e: anyhow::Error| LaunchError::Failed(format!("{e:#}"));
            let host = crate::host::host(Arc::clone(&self.store), self.given, None)
                .await
                .map_err(failed)?;
            let origin = SpecOrigin {
                working_directory: std::env::current_dir()
                    .ok()
                    .map(|d| d.to_string_lossy().into_owned()),
                ..Default::default()
            };
            let opts = rein_server::tasks::run_options(
                &host,
                &*self.store,
                &self.user,
                task,
                trigger,
                origin,
            )
            .await?;
            let d = crate::host::printing_driver(&host, self.given.json);
            let id = d
                .start(&task.prompt(), &opts)
                .await
                .map_err(|e| LaunchError::Failed(e.to_string()))?;
            *self.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(d);
            *self.host.lock().unwrap_or_else(|p| p.into_inner()) = Some(host);
            Ok(id.to_string())
        }
        .boxed()
    }

    fn state<'b>(&'b self, _: &'b str) -> BoxFuture<'b, Result<RunState, RunError>> {
        async move { Ok(RunState::Running) }.boxed()
    }

    fn cancel<'b>(&'b self, _: &'b str) -> BoxFuture<'b, Result<(), RunError>> {
        async move { Ok(()) }.boxed()
    }

    fn read_run<'b>(
        &'b self,
        instructions: &'b str,
        input: String,
        schema: serde_json::Value,
    ) -> BoxFuture<'b, Result<Option<serde_json::Value>, RunError>> {
        async move {
            let host = self.host.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let Some(host) = host else {
                return Ok(None);
            };
            host.driver()
                .ask_system_model_json(instructions, input, "run_reading", schema)
                .await
                .map_err(RunError::failed)
        }
        .boxed()
    }
}

fn when(t: &DateTime<Utc>, tz: Option<&str>) -> String {
    match tz.and_then(|z| z.parse::<chrono_tz::Tz>().ok()) {
        Some(zone) => format!(
            "{}  ({})",
            t.with_timezone(&zone).format("%Y-%m-%d %H:%M:%S %Z"),
            t.format("%Y-%m-%d %H:%M:%S UTC")
        ),
        None => t.format("%Y-%m-%d %H:%M:%S UTC").to_string(),
    }
}

fn describe(t: &Task) -> String {
    match &t.automation {
        Automation::None => "manual".into(),
        Automation::Schedule { pattern, tz } => format!("cron \"{pattern}\" {tz}"),
        Automation::Heartbeat { every_secs, .. } => format!("every {every_secs}s"),
    }
}

/// A launcher that runs a task's runs in this process, as the local user.
pub(crate) fn launcher<'a>(store: &Arc<SqlStore>, given: &'a Invocation, user: &str) -> Local<'a> {
    Local {
        store: Arc::clone(store),
        given,
        user: user.to_owned(),
        started: std::sync::Mutex::new(None),
        host: std::sync::Mutex::new(None),
    }
}

/// Run to its end the run `op` of task `id` that `local` started, record its brief and its
/// end as the dispatcher does, and print how it ended.
pub(crate) async fn finish_local_run(
    store: &Arc<SqlStore>,
    tasks: &TaskService,
    local: &Local<'_>,
    id: &str,
    op: &str,
) -> anyhow::Result<u8> {
    let d = local
        .started
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
        .ok_or_else(|| anyhow!("the run did not start"))?;
    let op_id = super::operation_id(op)?;
    let end = d.run(op_id).await?;
    if let Some(stored) = store.load_operation(op_id).await?
        && let RunState::Ended {
            outcome,
            success,
            brief,
            cost,
            answer,
        } = RunState::of(&stored)
    {
        let task = tasks.get(id).await.ok();
        let reading = match (&task, answer.as_deref().filter(|a| !a.trim().is_empty())) {
            (Some(t), Some(a)) => rein_scheduler::reading::read(local, t, op, &outcome, a).await,
            _ => None,
        };
        let ended = rein_scheduler::briefing::Ended {
            outcome: &outcome,
            success,
            summary: brief.as_deref(),
            cost,
            answer: answer.as_deref(),
            reading: reading.as_ref(),
        };
        tasks.end_run(id, op, &ended).await?;
    }
    finish_here(store, op_id, &end).await
}

/// `rein task …`.
pub async fn command(
    store: Arc<SqlStore>,
    command: TaskCommand,
    given: &Invocation,
) -> anyhow::Result<u8> {
    let tasks = TaskService::new(store.clone(), Arc::new(SystemClock));
    let user = agent_profile::local_user(&store).await?;
    let json = given.json;
    let mine = |t: Task| -> anyhow::Result<Task> {
        if t.owner == user.id {
            Ok(t)
        } else {
            Err(anyhow!("no task {}", t.id))
        }
    };
    let print = |t: &Task| {
        if json {
            println!("{}", view(t));
        } else {
            let status = t.status.to_string();
            let reason = t
                .status_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            println!(
                "{}  {:<10} {:<28} {}{reason}",
                t.id,
                status,
                describe(t),
                t.title
            );
        }
    };
    match command {
        TaskCommand::Create(flags) => {
            let new = new_task(&flags.body())?;
            check_agent(&*store, &user.id, new.agent.as_deref()).await?;
            let t = tasks.create(&user.id, new).await?;
            print(&t);
        }
        TaskCommand::List => {
            for t in tasks.list(Some(&user.id)).await? {
                print(&t);
            }
        }
        TaskCommand::Show { id } => {
            let t = mine(tasks.get(&id).await?)?;
            print(&t);
            if !json {
                let tz = match &t.automation {
                    Automation::Schedule { tz, .. } => Some(tz.as_str()),
                    _ => None,
                };
                println!("  instruction: {}", t.instruction);
                println!(
                    "  runs: {} counted{}",
                    t.executions,
                    t.max_executions
                        .map(|m| format!(" of {m}"))
                        .unwrap_or_default()
                );
                for n in tasks.next(&id, 3).await? {
                    println!("  next: {}", when(&n, tz));
                }
            }
        }
        TaskCommand::Edit { id, flags } => {
            let current = mine(tasks.get(&id).await?)?;
            let body = flags.body();
            check_agent(&*store, &user.id, body.agent.as_deref()).await?;
            let t = apply_edit(&tasks, current, &body).await?;
            print(&t);
        }
        TaskCommand::Pause { id } => {
            mine(tasks.get(&id).await?)?;
            print(&tasks.pause(&id).await?);
        }
        TaskCommand::Resume { id } => {
            mine(tasks.get(&id).await?)?;
            print(&tasks.resume(&id).await?);
        }
        TaskCommand::Delete { id } => {
            mine(tasks.get(&id).await?)?;
            tasks.delete(&id).await?;
            eprintln!("deleted task {id}");
        }
        TaskCommand::Next { id, count } => {
            let t = mine(tasks.get(&id).await?)?;
            let tz = match &t.automation {
                Automation::Schedule { tz, .. } => Some(tz.clone()),
                _ => None,
            };
            let next = tasks.next(&id, count).await?;
            if next.is_empty() {
                bail!("task {id} runs only when started (no schedule or heartbeat)");
            }
            for n in next {
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"utc": n, "local": tz.as_deref().and_then(|z| z.parse::<chrono_tz::Tz>().ok()).map(|z| n.with_timezone(&z).to_rfc3339())})
                    );
                } else {
                    println!("{}", when(&n, tz.as_deref()));
                }
            }
        }
        TaskCommand::History { id } => {
            mine(tasks.get(&id).await?)?;
            for r in store.runs(&id, 100).await? {
                if json {
                    println!("{}", serde_json::to_string(&r)?);
                } else {
                    println!(
                        "run  {}  {:<9} {:<10} {}  {}  {}",
                        r.started_at.format("%Y-%m-%d %H:%M:%S"),
                        r.trigger,
                        r.outcome.as_deref().unwrap_or("running"),
                        r.cost,
                        r.operation_id,
                        r.brief.as_deref().unwrap_or("")
                    );
                }
            }
            for d in store.deliveries(&id, 100).await? {
                if d.status == rein_store::DeliveryStatus::Skipped {
                    if json {
                        println!("{}", serde_json::to_string(&d)?);
                    } else {
                        println!(
                            "skip {}  {:<9} {}",
                            d.due_at.format("%Y-%m-%d %H:%M:%S"),
                            d.kind,
                            d.reason.as_deref().unwrap_or("")
                        );
                    }
                }
            }
        }
        TaskCommand::Run { id } => {
            mine(tasks.get(&id).await?)?;
            let local = launcher(&store, given, &user.id);
            let op = tasks.run_now(&id, &local).await?;
            return finish_local_run(&store, &tasks, &local, &id, &op).await;
        }
    }
    Ok(crate::exit::DONE)
}
