//! `rein task …`, on this machine's database or a server's: create, list, show, edit, pause,
//! resume, run (now: in this process, or on the server, followed to where it stops), delete,
//! history, and the next due times in the task's zone and in UTC. Scheduled fires run where a
//! dispatcher runs (`rein serve` or `rein worker`).

use super::ended::finish_here;
use super::{Remote, remote::segment};
use crate::invocation::Invocation;
use crate::named::named;
use anyhow::{anyhow, bail};
use chrono::{DateTime, Utc};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_operation::SpecOrigin;
use rein_scheduler::input::{TaskView, apply_edit, check_agent, new_task};
use rein_scheduler::{
    Automation, CatchUp, LaunchError, Launcher, Overlap, Questions, ReviewState, RunError,
    RunState, Task, TaskInput, TaskService,
};
use rein_server::routes::tasks::{NextQuery, NextTimes, RunStarted, TaskDetail, TaskHistory};
use rein_store::{SqlStore, Store, Tasks};
use reqwest::Method;
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

    fn decide_goal<'b>(
        &'b self,
        owner: &'b str,
        goal: &'b str,
        action: &'b str,
        comment: Option<&'b str>,
    ) -> BoxFuture<'b, Result<(), RunError>> {
        async move {
            let host = crate::host::host(Arc::clone(&self.store), self.given, None)
                .await
                .map_err(|e| RunError::Failed(format!("{e:#}")))?;
            let driver = Arc::new(host.driver());
            let runner = rein_operation::goals::GoalRunner::new(
                host,
                Arc::clone(&self.store),
                driver,
                owner.to_owned(),
                SpecOrigin::default(),
            );
            runner
                .decide_from_brief(owner, goal, action, comment)
                .await
                .map_err(|e| RunError::GoalRefused(e.to_string()))?;
            Ok(())
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

/// What `rein task` needs from where it runs.
pub trait Scheduled {
    /// Create a task of yours.
    async fn create_task(&self, input: TaskInput) -> anyhow::Result<Task>;

    /// Your tasks.
    async fn tasks(&self) -> anyhow::Result<Vec<Task>>;

    /// One of your tasks and its next due times (at most 5).
    async fn task(&self, id: &str) -> anyhow::Result<(Task, Vec<DateTime<Utc>>)>;

    /// Change the fields `input` gives.
    async fn edit_task(&self, id: &str, input: TaskInput) -> anyhow::Result<Task>;

    /// Pause (`false`) or resume (`true`) a task.
    async fn set_task_active(&self, id: &str, active: bool) -> anyhow::Result<Task>;

    /// Delete a task.
    async fn delete_task(&self, id: &str) -> anyhow::Result<()>;

    /// The zone of its cron pattern, and its next `count` due times.
    async fn task_next(
        &self,
        id: &str,
        count: usize,
    ) -> anyhow::Result<(Option<String>, Vec<DateTime<Utc>>)>;

    /// Its runs and fires, newest first.
    async fn task_history(&self, id: &str) -> anyhow::Result<TaskHistory>;

    /// Run it now (not counted towards its cap), followed to where the run stops; the exit
    /// code.
    async fn run_task(&self, id: &str) -> anyhow::Result<u8>;
}

fn print(t: &Task, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(&TaskView::of(t))?);
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
    Ok(())
}

/// `rein task …`.
pub async fn run(on: &impl Scheduled, command: TaskCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        TaskCommand::Create(flags) => print(&on.create_task(flags.body()).await?, json)?,
        TaskCommand::List => {
            for t in on.tasks().await? {
                print(&t, json)?;
            }
        }
        TaskCommand::Show { id } => {
            let (t, next) = on.task(&id).await?;
            print(&t, json)?;
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
                for n in next.iter().take(3) {
                    println!("  next: {}", when(n, tz));
                }
            }
        }
        TaskCommand::Edit { id, flags } => print(&on.edit_task(&id, flags.body()).await?, json)?,
        TaskCommand::Pause { id } => print(&on.set_task_active(&id, false).await?, json)?,
        TaskCommand::Resume { id } => print(&on.set_task_active(&id, true).await?, json)?,
        TaskCommand::Delete { id } => {
            on.delete_task(&id).await?;
            eprintln!("deleted task {id}");
        }
        TaskCommand::Next { id, count } => {
            let (tz, next) = on.task_next(&id, count).await?;
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
            let history = on.task_history(&id).await?;
            for r in history.runs {
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
            for d in history.deliveries {
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
        TaskCommand::Run { id } => return on.run_task(&id).await,
    }
    Ok(crate::exit::DONE)
}

impl super::Local {
    /// Task `id` when it is the local user's; the service and the user's id with it.
    async fn own_task(&self, id: &str) -> anyhow::Result<(Task, TaskService, String)> {
        let (tasks, user) = self.task_service().await?;
        let t = tasks.get(id).await?;
        if t.owner != user {
            bail!("no task {id}");
        }
        Ok((t, tasks, user))
    }
}

impl Scheduled for super::Local {
    async fn create_task(&self, input: TaskInput) -> anyhow::Result<Task> {
        let (tasks, user) = self.task_service().await?;
        let new = new_task(&input)?;
        check_agent(&**self.store().await?, &user, new.agent.as_deref()).await?;
        Ok(tasks.create(&user, new).await?)
    }

    async fn tasks(&self) -> anyhow::Result<Vec<Task>> {
        let (tasks, user) = self.task_service().await?;
        Ok(tasks.list(Some(&user)).await?)
    }

    async fn task(&self, id: &str) -> anyhow::Result<(Task, Vec<DateTime<Utc>>)> {
        let (t, tasks, _) = self.own_task(id).await?;
        let next = tasks.next(id, 5).await?;
        Ok((t, next))
    }

    async fn edit_task(&self, id: &str, input: TaskInput) -> anyhow::Result<Task> {
        let (current, tasks, user) = self.own_task(id).await?;
        check_agent(&**self.store().await?, &user, input.agent.as_deref()).await?;
        Ok(apply_edit(&tasks, current, &input).await?)
    }

    async fn set_task_active(&self, id: &str, active: bool) -> anyhow::Result<Task> {
        let (_, tasks, _) = self.own_task(id).await?;
        Ok(if active {
            tasks.resume(id).await?
        } else {
            tasks.pause(id).await?
        })
    }

    async fn delete_task(&self, id: &str) -> anyhow::Result<()> {
        let (_, tasks, _) = self.own_task(id).await?;
        Ok(tasks.delete(id).await?)
    }

    async fn task_next(
        &self,
        id: &str,
        count: usize,
    ) -> anyhow::Result<(Option<String>, Vec<DateTime<Utc>>)> {
        let (t, tasks, _) = self.own_task(id).await?;
        let tz = match t.automation {
            Automation::Schedule { tz, .. } => Some(tz),
            Automation::None | Automation::Heartbeat { .. } => None,
        };
        Ok((tz, tasks.next(id, count).await?))
    }

    async fn task_history(&self, id: &str) -> anyhow::Result<TaskHistory> {
        self.own_task(id).await?;
        let store = self.store().await?;
        Ok(TaskHistory {
            runs: store.runs(id, 100).await?,
            deliveries: store.deliveries(id, 100).await?,
        })
    }

    async fn run_task(&self, id: &str) -> anyhow::Result<u8> {
        let (_, tasks, user) = self.own_task(id).await?;
        let store = self.store().await?;
        let local = launcher(store, &self.given, &user);
        let op = tasks.run_now(id, &local).await?;
        finish_local_run(store, &tasks, &local, id, &op).await
    }
}

impl Scheduled for Remote {
    async fn create_task(&self, input: TaskInput) -> anyhow::Result<Task> {
        let v: TaskView = self.call(Method::POST, "/v1/tasks", Some(&input)).await?;
        Ok(v.into_task())
    }

    async fn tasks(&self) -> anyhow::Result<Vec<Task>> {
        let list: Vec<TaskView> = self.call(Method::GET, "/v1/tasks", None::<&()>).await?;
        Ok(list.into_iter().map(TaskView::into_task).collect())
    }

    async fn task(&self, id: &str) -> anyhow::Result<(Task, Vec<DateTime<Utc>>)> {
        let path = format!("/v1/tasks/{}", segment(id));
        let d: TaskDetail = self.call(Method::GET, &path, None::<&()>).await?;
        Ok((d.task.into_task(), d.next))
    }

    async fn edit_task(&self, id: &str, input: TaskInput) -> anyhow::Result<Task> {
        let path = format!("/v1/tasks/{}", segment(id));
        let v: TaskView = self.call(Method::PATCH, &path, Some(&input)).await?;
        Ok(v.into_task())
    }

    async fn set_task_active(&self, id: &str, active: bool) -> anyhow::Result<Task> {
        let action = if active { "resume" } else { "pause" };
        let path = format!("/v1/tasks/{}/{action}", segment(id));
        let v: TaskView = self.call(Method::POST, &path, None::<&()>).await?;
        Ok(v.into_task())
    }

    async fn delete_task(&self, id: &str) -> anyhow::Result<()> {
        let path = format!("/v1/tasks/{}", segment(id));
        self.call_empty(Method::DELETE, &path).await
    }

    async fn task_next(
        &self,
        id: &str,
        count: usize,
    ) -> anyhow::Result<(Option<String>, Vec<DateTime<Utc>>)> {
        let path = format!("/v1/tasks/{}/next", segment(id));
        let n: NextTimes = self.get(&path, &NextQuery { count: Some(count) }).await?;
        Ok((n.tz, n.next))
    }

    async fn task_history(&self, id: &str) -> anyhow::Result<TaskHistory> {
        let path = format!("/v1/tasks/{}/history", segment(id));
        self.call(Method::GET, &path, None::<&()>).await
    }

    async fn run_task(&self, id: &str) -> anyhow::Result<u8> {
        let path = format!("/v1/tasks/{}/run", segment(id));
        let started: RunStarted = self.call(Method::POST, &path, None::<&()>).await?;
        // The run is the server's: followed as `rein --server run` follows a run.
        let op = super::operation_id(&started.operation_id)?;
        let end = self.follow_new(op).await?;
        // The server settles the run (its outcome, brief and handoff) once the operation
        // stops: wait for that, as a run here returns after settling it, so `task history`
        // right after says how it went.
        if matches!(
            end,
            rein_operation::RunEnd::Done { .. } | rein_operation::RunEnd::Error { .. }
        ) {
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
            loop {
                let history = self.task_history(id).await?;
                let settled = history
                    .runs
                    .iter()
                    .any(|r| r.operation_id == started.operation_id && r.finished_at.is_some());
                if settled || tokio::time::Instant::now() >= deadline {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
        super::decide::finish(self, op, &end).await
    }
}
