//! What people do to tasks: create, change the automation, pause, resume, run now, delete;
//! and to the briefs their runs give: list, open (read), resolve (which acts on the task).
//! Every change to the automation issues a new generation token before anything new is
//! planned, so a fire planned under the old automation that arrives late is skipped.

use crate::briefing::Resolve;
use crate::clock::Clock;
use crate::dispatcher::Launcher;
use crate::task::Feedback;
use crate::task::{Automation, CatchUp, Overlap, Task, TaskError, TaskStatus, new_generation};
use chrono::{DateTime, Duration, Utc};
use rein_store::{
    Brief, BriefFilter, Delivery, DeliveryStatus, Resolution, RunTrigger, TaskRun, TaskStore,
};
use std::sync::Arc;

/// A new task's fields.
#[derive(Clone, Debug, Default)]
pub struct NewTask {
    /// Title.
    pub title: String,
    /// The prompt of every run.
    pub instruction: String,
    /// The agent that runs it.
    pub agent: Option<String>,
    /// Automation.
    pub automation: Automation,
    /// Scheduled/heartbeat runs allowed.
    pub max_executions: Option<u64>,
    /// Overlap policy.
    pub overlap: Overlap,
    /// Catch-up policy.
    pub catch_up: CatchUp,
    /// Consecutive failures that pause it (default 3).
    pub failure_threshold: Option<u32>,
    /// Tasks that must complete first.
    pub depends_on: Vec<String>,
    /// What its runs do with their agent's questions.
    pub questions: crate::task::Questions,
}

/// Task operations over a store.
pub struct TaskService {
    store: Arc<dyn TaskStore>,
    clock: Arc<dyn Clock>,
}

impl TaskService {
    /// Operations on `store`.
    pub fn new(store: Arc<dyn TaskStore>, clock: Arc<dyn Clock>) -> Self {
        Self { store, clock }
    }

    /// A user's tasks (everyone's with `None`).
    pub async fn list(&self, owner: Option<&str>) -> Result<Vec<Task>, TaskError> {
        self.store
            .list_tasks(owner)
            .await?
            .into_iter()
            .map(Task::from_row)
            .collect()
    }

    /// Replace the title, instruction, agent, overlap, catch-up and failure threshold (the
    /// automation has its own call, which restarts it).
    pub async fn edit(&self, id: &str, change: impl FnOnce(&mut Task)) -> Result<Task, TaskError> {
        let mut task = self.get(id).await?;
        let expected = task.updated_at;
        let (automation, generation) = (task.automation.clone(), task.generation.clone());
        let deps = task.depends_on.clone();
        change(&mut task);
        if task.automation != automation || task.generation != generation {
            return Err(TaskError::Invalid(
                "change the automation with set_automation (it restarts the schedule)".into(),
            ));
        }
        task.validate()?;
        if task.depends_on != deps {
            self.check_deps(&task).await?;
            // New dependencies start it again once they have completed.
            task.unblocked = false;
        }
        self.write(task, Some(expected)).await
    }

    /// Refuse dependencies that are not the owner's tasks or would make a cycle.
    async fn check_deps(&self, task: &Task) -> Result<(), TaskError> {
        if task.depends_on.is_empty() {
            return Ok(());
        }
        let all = self.list(Some(&task.owner)).await?;
        crate::deps::check(task, &all)
    }

    /// The next `count` due times of the task's automation.
    pub async fn next(&self, id: &str, count: usize) -> Result<Vec<DateTime<Utc>>, TaskError> {
        let task = self.get(id).await?;
        let Some(schedule) = task.automation.schedule()? else {
            return Ok(Vec::new());
        };
        Ok(schedule.upcoming(self.clock.now(), count)?)
    }

    /// One task.
    pub async fn get(&self, id: &str) -> Result<Task, TaskError> {
        self.store
            .get_task(id)
            .await?
            .map(Task::from_row)
            .transpose()?
            .ok_or_else(|| TaskError::NotFound(id.to_owned()))
    }

    async fn write(
        &self,
        mut task: Task,
        expected: Option<DateTime<Utc>>,
    ) -> Result<Task, TaskError> {
        let now = self.clock.now();
        match expected {
            None => {
                task.updated_at = now;
                self.store.put_task(&task.to_row()?).await?;
            }
            Some(e) => {
                task.updated_at = now.max(e + Duration::microseconds(1));
                if !self.store.replace_task(&task.to_row()?, e).await? {
                    return Err(TaskError::Invalid(format!(
                        "task {} changed meanwhile; read it again",
                        task.id
                    )));
                }
            }
        }
        Ok(task)
    }

    /// Plan the first heartbeat of `task`'s current generation.
    async fn first_beat(&self, task: &Task) -> Result<(), TaskError> {
        if let (Automation::Heartbeat { every_secs, .. }, TaskStatus::Active) =
            (&task.automation, task.status)
        {
            let now = self.clock.now();
            self.store
                .add_delivery(&Delivery {
                    task_id: task.id.clone(),
                    due_at: now
                        + Duration::seconds(i64::try_from(*every_secs).unwrap_or(i64::MAX / 2)),
                    kind: RunTrigger::Heartbeat,
                    generation: task.generation.clone(),
                    status: DeliveryStatus::Pending,
                    claimed_by: None,
                    lease_until: None,
                    reason: None,
                    operation_id: None,
                    created_at: now,
                })
                .await?;
        }
        Ok(())
    }

    /// Create a task for `owner`.
    pub async fn create(&self, owner: &str, new: NewTask) -> Result<Task, TaskError> {
        let now = self.clock.now();
        let task = Task {
            id: format!("task_{}", uuid::Uuid::now_v7().simple()),
            owner: owner.to_owned(),
            title: new.title,
            instruction: new.instruction,
            agent: new.agent,
            status: TaskStatus::Active,
            status_reason: None,
            review: Default::default(),
            automation: new.automation,
            max_executions: new.max_executions,
            executions: 0,
            overlap: new.overlap,
            catch_up: new.catch_up,
            failure_threshold: new
                .failure_threshold
                .unwrap_or(crate::task::DEFAULT_FAILURE_THRESHOLD),
            consecutive_failures: 0,
            generation: new_generation(),
            planned_until: Some(now),
            feedback: Vec::new(),
            handoffs: Vec::new(),
            depends_on: new.depends_on,
            questions: new.questions,
            unblocked: false,
            created_at: now,
            updated_at: now,
        };
        task.validate()?;
        self.check_deps(&task).await?;
        let task = self.write(task, None).await?;
        self.first_beat(&task).await?;
        Ok(task)
    }

    /// Replace the automation (and its cap): a new generation, the execution count restarted,
    /// nothing missed planned.
    pub async fn set_automation(
        &self,
        id: &str,
        automation: Automation,
        max_executions: Option<u64>,
    ) -> Result<Task, TaskError> {
        let mut task = self.get(id).await?;
        let expected = task.updated_at;
        task.automation = automation;
        task.max_executions = max_executions;
        task.executions = 0;
        task.generation = new_generation();
        task.planned_until = Some(self.clock.now());
        if task.status == TaskStatus::Completed {
            task.status = TaskStatus::Active;
            task.status_reason = None;
        }
        task.validate()?;
        // The new token is stored before the new automation plans anything.
        let task = self.write(task, Some(expected)).await?;
        self.first_beat(&task).await?;
        Ok(task)
    }

    /// Pause: nothing runs until resumed.
    pub async fn pause(&self, id: &str) -> Result<Task, TaskError> {
        let mut task = self.get(id).await?;
        let expected = task.updated_at;
        task.status = TaskStatus::Paused;
        task.status_reason = Some("paused by a person".into());
        self.write(task, Some(expected)).await
    }

    /// Resume: a new generation; fires missed while paused are not run.
    pub async fn resume(&self, id: &str) -> Result<Task, TaskError> {
        let mut task = self.get(id).await?;
        let expected = task.updated_at;
        if task.status == TaskStatus::Active {
            return Ok(task);
        }
        task.status = TaskStatus::Active;
        task.status_reason = None;
        task.consecutive_failures = 0;
        task.generation = new_generation();
        task.planned_until = Some(self.clock.now());
        let task = self.write(task, Some(expected)).await?;
        self.first_beat(&task).await?;
        Ok(task)
    }

    /// Run now through `launcher` (does not count towards the execution cap); returns the
    /// operation id.
    pub async fn run_now(&self, id: &str, launcher: &dyn Launcher) -> Result<String, TaskError> {
        let task = self.get(id).await?;
        if let Some(why) = crate::deps::blocker(&*self.store, &task).await? {
            return Err(TaskError::Invalid(why));
        }
        let started = self.clock.now();
        let op = launcher.launch(&task, RunTrigger::Manual).await?;
        // The feedback its prompt carried is taken by it.
        self.edit_body(id, |t| t.take_feedback(&op, started))
            .await?;
        self.store
            .add_run(&TaskRun::started(
                op.clone(),
                task.id.clone(),
                RunTrigger::Manual,
                None,
                self.clock.now(),
            ))
            .await?;
        Ok(op)
    }

    /// Record the end of the run `operation_id` started by [`TaskService::run_now`] (in this
    /// process, outside the dispatcher): its brief and its end, as the dispatcher does.
    pub async fn end_run(
        &self,
        task_id: &str,
        operation_id: &str,
        end: &crate::briefing::Ended<'_>,
    ) -> Result<(), TaskError> {
        let Some(run) = self
            .store
            .runs(task_id, 200)
            .await?
            .into_iter()
            .find(|r| r.operation_id == operation_id)
        else {
            return Ok(());
        };
        let task = match self.get(task_id).await {
            Ok(t) => Some(t),
            Err(TaskError::NotFound(_)) => None,
            Err(e) => return Err(e),
        };
        crate::briefing::record_run_end(&*self.store, task.as_ref(), &run, end, self.clock.now())
            .await
    }

    /// `owner`'s briefs, newest first (`unresolved`: only those still waiting).
    pub async fn briefs(
        &self,
        owner: &str,
        task: Option<&str>,
        unresolved: bool,
        limit: u32,
    ) -> Result<Vec<Brief>, TaskError> {
        Ok(self
            .store
            .list_briefs(&BriefFilter {
                owner: Some(owner.to_owned()),
                task_id: task.map(str::to_owned),
                unresolved,
                limit,
            })
            .await?)
    }

    /// One of `owner`'s briefs, marked read.
    pub async fn open_brief(&self, owner: &str, id: &str) -> Result<Brief, TaskError> {
        let brief = self.owned_brief(owner, id).await?;
        if brief.read_at.is_none() {
            self.store.mark_brief_read(id, self.clock.now()).await?;
            return self.owned_brief(owner, id).await;
        }
        Ok(brief)
    }

    async fn owned_brief(&self, owner: &str, id: &str) -> Result<Brief, TaskError> {
        self.store
            .get_brief(id)
            .await?
            .filter(|b| b.owner == owner)
            .ok_or_else(|| TaskError::BriefNotFound(id.to_owned()))
    }

    /// Resolve one of `owner`'s briefs with an action it offers, once, then act on its task
    /// (see [`crate::briefing`]): returns the brief as resolved and the run `retry` started.
    pub async fn resolve_brief(
        &self,
        owner: &str,
        id: &str,
        action: &str,
        comment: Option<&str>,
        launcher: &dyn Launcher,
    ) -> Result<(Brief, Option<String>), TaskError> {
        let brief = self.owned_brief(owner, id).await?;
        if brief.resolution.is_some() {
            return Err(TaskError::BriefResolved(id.to_owned()));
        }
        let act = crate::briefing::resolution_of(&brief, action, comment)?;
        let now = self.clock.now();
        // A parked run's calls are decided before the resolution is recorded: a run that no
        // longer waits refuses, and the brief stays open.
        if let Resolve::Decide { approve, reason } = &act {
            let op = brief.operation_id.clone().unwrap_or_default();
            launcher
                .decide(&op, *approve, reason.as_deref(), owner)
                .await
                .map_err(TaskError::Decide)?;
        }
        // So is a goal's decision: a goal that cannot take it refuses, and the brief stays open.
        if let Resolve::Goal { goal } = &act {
            launcher
                .decide_goal(owner, goal, action, comment)
                .await
                .map_err(TaskError::Decide)?;
        }
        let resolution = Resolution {
            action: action.to_owned(),
            comment: comment
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            by: Some(owner.to_owned()),
            at: now,
        };
        // Recorded first: of two people resolving at once, one acts.
        if !self.store.resolve_brief(id, &resolution).await? {
            return Err(TaskError::BriefResolved(id.to_owned()));
        }
        let task = brief.task_id.clone().unwrap_or_default();
        let started = match act {
            Resolve::Recorded | Resolve::Goal { .. } => None,
            Resolve::Decide { .. } => brief.operation_id.clone(),
            Resolve::Retry => Some(self.run_now(&task, launcher).await?),
            Resolve::Approve => {
                self.edit_body(&task, crate::briefing::approve).await?;
                None
            }
            Resolve::Feedback(comment) => {
                let brief_id = id.to_owned();
                self.edit_body(&task, move |t| {
                    t.feedback.push(Feedback {
                        comment: comment.clone(),
                        brief_id: brief_id.clone(),
                        at: now,
                        taken_by: None,
                    });
                    true
                })
                .await?;
                None
            }
        };
        Ok((self.owned_brief(owner, id).await?, started))
    }

    /// Change a task's body (retried on a concurrent edit); `change` says whether it changed.
    async fn edit_body(
        &self,
        id: &str,
        change: impl Fn(&mut Task) -> bool,
    ) -> Result<(), TaskError> {
        self.get(id).await?;
        crate::task::update_task(&*self.store, id, self.clock.now(), change).await?;
        Ok(())
    }

    /// Delete (its deliveries still due are skipped as "deleted").
    pub async fn delete(&self, id: &str) -> Result<(), TaskError> {
        if self.store.delete_task(id).await? {
            Ok(())
        } else {
            Err(TaskError::NotFound(id.to_owned()))
        }
    }
}
