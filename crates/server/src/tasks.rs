//! Tasks in the server: the launcher that turns a due task into an operation (a fresh topic
//! per run, the task's instruction as the whole prompt, its agent's settings), and the
//! dispatcher loop `rein serve` and `rein worker` run.

use crate::error::ApiError;
use crate::routes::agents::AgentConfig;
use crate::runner::{Job, Runner};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::OperationId;
use rein_core::message::Role;
use rein_core::state::Status;
use rein_operation::StartOptions;
use rein_scheduler::{Dispatcher, Launcher, RunState, Task};
use rein_store::{Accounts, SqlStore, Store, Trigger};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Briefs longer than this are cut (the full answer stays in the run's topic).
pub const BRIEF_CHARS: usize = 280;

/// The operation's answer: the text of its last assistant message that has any.
pub fn last_answer(state: &rein_core::AgentState) -> Option<String> {
    state
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant && !m.text_content().trim().is_empty())
        .map(|m| m.text_content())
}

/// A run's brief: its answer when short; otherwise its opening sentences up to
/// [`BRIEF_CHARS`], cut at a sentence (or word) boundary and marked as cut.
pub fn brief_of(answer: &str) -> String {
    let text = answer.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= BRIEF_CHARS {
        return text;
    }
    let head: String = text.chars().take(BRIEF_CHARS).collect();
    let cut = head
        .rfind(['.', '!', '?'])
        .map(|i| i + 1)
        .filter(|i| *i >= BRIEF_CHARS / 3)
        .or_else(|| head.rfind(' '))
        .unwrap_or(head.len());
    format!("{} …", head[..cut].trim_end())
}

/// Starts task runs as operations of the task's owner.
pub struct ServerLauncher {
    /// Runs operations.
    pub runner: Arc<Runner>,
    /// The store.
    pub store: Arc<SqlStore>,
}

fn message(e: ApiError) -> String {
    e.message
}

impl ServerLauncher {
    async fn start(&self, task: &Task, trigger: &str) -> Result<String, ApiError> {
        let agent = match &task.agent {
            Some(name) => self
                .store
                .get_agent(&task.owner, name)
                .await?
                .and_then(|a| serde_json::from_value::<AgentConfig>(a.config).ok()),
            None => None,
        };
        let settings = agent.clone().unwrap_or_default();
        let model = settings
            .model
            .clone()
            .unwrap_or_else(|| self.runner.default_model.clone());
        let driver = self.runner.driver(&model, agent.as_ref())?;
        let opts = StartOptions {
            owner: Some(task.owner.clone()),
            agent: task.agent.clone(),
            trigger: Some(match trigger {
                "schedule" => Trigger::Schedule,
                "heartbeat" => Trigger::Heartbeat,
                _ => Trigger::Api,
            }),
            ..settings.start_options()?
        };
        let id = driver.start(&task.instruction, &opts).await?;
        self.runner
            .spawn(id, task.owner.clone(), driver, Job::Run)
            .await?;
        Ok(id.to_string())
    }
}

impl Launcher for ServerLauncher {
    fn launch<'a>(
        &'a self,
        task: &'a Task,
        trigger: &'a str,
    ) -> BoxFuture<'a, Result<String, String>> {
        self.start(task, trigger)
            .map(|r| r.map_err(message))
            .boxed()
    }

    fn state<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Result<RunState, String>> {
        async move {
            let id: OperationId = operation_id
                .parse()
                .map_err(|_| format!("`{operation_id}` is not an operation id"))?;
            // The record alone while the run goes on (the dispatcher asks every second); the
            // state, for the brief, only once it ended.
            let record = self
                .store
                .operation(id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no operation {operation_id}"))?;
            match record.status {
                Status::WaitingForHuman => return Ok(RunState::WaitingForHuman),
                Status::Idle | Status::Running => return Ok(RunState::Running),
                _ => {}
            }
            let op = self
                .store
                .load_operation(id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no operation {operation_id}"))?;
            Ok(match op.record.status {
                Status::WaitingForHuman => RunState::WaitingForHuman,
                Status::Idle | Status::Running => RunState::Running,
                // Interrupted, done or failed: the run is over.
                status => {
                    let success = op.record.finish_reason.is_some_and(|r| r.is_success());
                    let outcome = op
                        .record
                        .finish_reason
                        .and_then(|r| serde_json::to_value(r).ok())
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_else(|| format!("{status:?}").to_lowercase());
                    let answer = last_answer(&op.state);
                    let brief = answer.map(|a| brief_of(&a));
                    RunState::Ended {
                        outcome,
                        success,
                        brief,
                        cost: op.record.cost,
                    }
                }
            })
        }
        .boxed()
    }

    fn cancel<'a>(&'a self, operation_id: &'a str) -> BoxFuture<'a, Result<(), String>> {
        async move {
            let id: OperationId = operation_id
                .parse()
                .map_err(|_| format!("`{operation_id}` is not an operation id"))?;
            let record = self
                .store
                .operation(id)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("no operation {operation_id}"))?;
            let driver = self.runner.driver_for(&record).await.map_err(message)?;
            driver
                .cancel(id)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        .boxed()
    }
}

/// Tick `dispatcher` every `every` until `stop`.
pub async fn dispatch_loop(dispatcher: Dispatcher, every: Duration, stop: CancellationToken) {
    loop {
        if let Err(e) = dispatcher.tick().await {
            tracing::warn!(error = %e, "dispatcher tick failed; retrying");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn briefs_keep_short_answers_and_cut_long_ones_at_a_sentence() {
        assert_eq!(
            brief_of("All quiet.\n\nNothing new."),
            "All quiet. Nothing new."
        );
        let long = format!(
            "First finding is here. {}",
            "More detail follows in this sentence. ".repeat(20)
        );
        let b = brief_of(&long);
        assert!(b.chars().count() <= BRIEF_CHARS + 2, "{b}");
        assert!(b.ends_with(". …"), "{b}");
        let words = "word ".repeat(100);
        assert!(brief_of(&words).ends_with("word …"));
    }
}
