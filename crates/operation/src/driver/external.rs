//! Running an operation on an external agent CLI (`external:KIND`): the CLI is the brain and
//! the executor; rein starts it in the operation's working directory, records each of its model
//! turns as a committed step (its text, reasoning, the tool calls it ran and their results,
//! usage and cost), and bounds it: the step, token, cost and wall-time limits stop its process
//! group, and so does a cancellation. A run is started at most once: the commit that marks it
//! running comes before the process, and a process that died while its agent ran leaves an
//! operation that is settled as failed (what the agent did after the last commit is unknown),
//! never started again.

use super::open::Loaded;
use super::{Driver, RunEnd, end_of};
use crate::error::DriverError;
use crate::error::Refusal;
use crate::external::record::emit;
use crate::external::transcript::{ObservedStep, Transcript};
use crate::external::{self, ExternalError};
use rein_core::engine::StepResult;
use rein_core::event::{Amount, EventKind};
use rein_core::failure::Fault;
use rein_core::instruction::InstructionKind;
use rein_core::message::ExternalSession;
use rein_core::spec::{ExternalKind, Surface};
use rein_core::state::{BudgetKind, BudgetPolicy, Finish, FinishReason, StateError, Status};
use rein_core::usage::TokenUsage;
use rein_core::{AgentEvent, AgentState};
use std::time::{Duration, Instant};

/// How long a CLI may linger after its output has ended before it is stopped.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Why a run was stopped before the agent finished.
pub(super) enum Stop {
    /// Another process settled the operation meanwhile.
    Settled,
    Cancelled,
    Time(u64),
    Steps(u32),
    Budget(BudgetKind, Amount, Amount),
}

impl Driver {
    /// Run operation `run` on the external agent `kind` (see the module's documentation).
    pub(super) async fn drive_external(
        &self,
        run: &mut Loaded,
        kind: ExternalKind,
    ) -> Result<RunEnd, DriverError> {
        match run.committed.status {
            s if s.is_terminal() => return Ok(end_of(&run.committed)),
            Status::Running => {
                let msg = "the process running the external agent stopped before the agent finished; what it did after the last recorded step is unknown, so it is not started again (send a new message to continue its session)";
                return self
                    .end_external(run, Err((Fault::ExternalInterrupted, msg.into())))
                    .await;
            }
            Status::Interrupted => return self.settle_cancel(run, "cancelled on request").await,
            _ => {}
        }
        if run.cancel_requested {
            return self.settle_cancel(run, "cancelled on request").await;
        }
        let inv = external::invocation::invocation(&run.committed, kind);
        let (args, input) = external::invocation_args(kind, &inv);
        let session = inv.resume.clone().filter(|_| kind == ExternalKind::Jsonl);
        let launch = match &run.spec.surface {
            Surface::ExternalOnDevice { device, .. } => {
                let remote =
                    self.remote_agents
                        .clone()
                        .ok_or_else(|| Refusal::DevicesOnlyOnServer {
                            operation: run.id,
                            device: device.clone(),
                        })?;
                Launch::Device(
                    remote,
                    external::RemoteStart {
                        owner: run.spec.owner.clone().unwrap_or_default(),
                        device: device.clone(),
                        operation_id: run.id,
                        kind,
                        args,
                        input,
                        session,
                    },
                )
            }
            _ => {
                let command = self
                    .external
                    .get(kind)
                    .cloned()
                    .ok_or(DriverError::External(ExternalError::NotEnabled(
                        kind.as_str(),
                    )))?;
                let program = match external::resolve_program(kind, &command.program) {
                    Ok(p) => p,
                    Err(e) => {
                        return self
                            .end_external(run, Err((Fault::ExternalMissing, e.to_string())))
                            .await;
                    }
                };
                let dir = match &run.spec.working_directory {
                    Some(d) => std::path::PathBuf::from(d),
                    None => std::env::current_dir().map_err(Refusal::NoWorkingDirectory)?,
                };
                let args = command.args.iter().cloned().chain(args).collect();
                Launch::Local {
                    program,
                    args,
                    dir,
                    session,
                    input,
                }
            }
        };
        // Marked running before the process starts: a crash from here on never starts it twice.
        let mut started = run.committed.clone();
        started.status = Status::Running;
        self.commit(run, external_step(started, Vec::new())).await?;
        let mut proc = match launch.start(kind) {
            Ok(p) => p,
            Err(e) => {
                return self
                    .end_external(run, Err((Fault::ExternalFailed, e.to_string())))
                    .await;
            }
        };
        let deadline = deadline_of(&run.spec);
        let watcher = self.watch_cancel(run.id);
        let mut reader = external::reader(kind);
        let mut transcript = Transcript::default();
        let mut warned: Vec<BudgetKind> = Vec::new();
        let stop = 'read: loop {
            let line = tokio::select! {
                line = proc.next_line() => line,
                () = self.cancel.cancelled() => break 'read Some(Stop::Cancelled),
                () = sleep_until(deadline) => {
                    break 'read Some(Stop::Time(run.spec.time_limit_secs.unwrap_or_default()))
                }
            };
            let observed = match line {
                Some(line) => reader.line(&line),
                None => break None,
            };
            for o in observed {
                if let Some(step) = transcript.push(o) {
                    self.record_external(run, kind, &transcript, step).await?;
                    if run.committed.status.is_terminal() {
                        break 'read Some(Stop::Settled);
                    }
                    if let Some(stop) = self.over_limit(run, &mut warned).await? {
                        break 'read Some(stop);
                    }
                }
                // A step begun past the limit is the one too many.
                if let Some(max) = run.spec.max_steps
                    && run.committed.step_count >= max
                    && transcript.has_open()
                {
                    break 'read Some(Stop::Steps(max));
                }
            }
        };
        drop(watcher);
        if let Some(stop) = stop {
            proc.stop().await;
            let _ = proc.finish(EXIT_GRACE).await;
            if matches!(stop, Stop::Settled) {
                return Ok(end_of(&run.committed));
            }
            if let Some(step) = transcript.close() {
                self.record_external(run, kind, &transcript, step).await?;
            }
            return self
                .end_stopped(run, stop, "the external agent was stopped")
                .await;
        }
        for o in reader.end() {
            if let Some(step) = transcript.push(o) {
                self.record_external(run, kind, &transcript, step).await?;
            }
        }
        // A final answer the CLI only gave in its closing line is the last step's text.
        if !transcript.answered
            && let Some(text) = transcript.result.take().filter(|t| !t.is_empty())
        {
            transcript.push(external::Observed::Turn);
            transcript.push(external::Observed::Text(text));
        }
        if let Some(step) = transcript.close() {
            self.record_external(run, kind, &transcript, step).await?;
        }
        let ended = proc.finish(EXIT_GRACE).await;
        self.reconcile_totals(run, kind, &transcript);
        let (code, stderr) = match ended {
            Ok(ended) => ended,
            Err(why) => {
                let msg = format!("external agent `{}`: {why}", kind.as_str());
                return self
                    .end_external(run, Err((Fault::ExternalFailed, msg)))
                    .await;
            }
        };
        let outcome = match (transcript.failure.take(), code) {
            (Some(failure), _) => Err((Fault::ExternalFailed, failure)),
            (None, Some(0)) => Ok((FinishReason::Completed, String::new())),
            (None, code) => {
                let how = code.map_or_else(
                    || "was killed by a signal".to_owned(),
                    |c| format!("exited with status {c}"),
                );
                let said = if stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {stderr}")
                };
                Err((
                    Fault::ExternalFailed,
                    format!("external agent `{}` {how}{said}", kind.as_str()),
                ))
            }
        };
        self.end_external(run, outcome).await
    }

    /// End a run that `stop` stopped; `subject` says what happened to the agent ("the
    /// external agent was stopped"), the start of the end's detail.
    pub(super) async fn end_stopped(
        &self,
        run: &mut Loaded,
        stop: Stop,
        subject: &str,
    ) -> Result<RunEnd, DriverError> {
        let (reason, detail) = match stop {
            Stop::Settled => return Ok(end_of(&run.committed)),
            Stop::Cancelled => return self.settle_cancel(run, "cancelled on request").await,
            Stop::Time(s) => (
                FinishReason::Timeout,
                format!("{subject} after its time limit of {s} s"),
            ),
            Stop::Steps(n) => (
                FinishReason::StepLimitExceeded,
                format!("{subject} after {n} steps, its limit"),
            ),
            Stop::Budget(kind, limit, actual) => {
                let reason = if kind == BudgetKind::Tokens {
                    FinishReason::TokenLimitExceeded
                } else {
                    FinishReason::CostLimitExceeded
                };
                let detail = format!(
                    "{subject}: {} limit {} reached ({})",
                    budget_name(kind),
                    amount(limit),
                    amount(actual)
                );
                let event = EventKind::BudgetExceeded {
                    budget: kind,
                    limit,
                    actual,
                    policy: BudgetPolicy::Stop,
                };
                return self
                    .end_external_with(run, Ok((reason, detail)), vec![event])
                    .await;
            }
        };
        self.end_external(run, Ok((reason, detail))).await
    }

    /// Commit one observed step of the agent.
    async fn record_external(
        &self,
        run: &mut Loaded,
        kind: ExternalKind,
        transcript: &Transcript,
        step: ObservedStep,
    ) -> Result<(), DriverError> {
        let mut state = run.committed.clone();
        let model = transcript.model.as_deref();
        let mut priced = self.priced(&run.spec, kind, model, &step.tokens);
        priced.cost = step.cost.or(priced.cost);
        let session = transcript.session.clone().map(|id| ExternalSession {
            kind: kind.as_str().to_owned(),
            id,
        });
        let events = external::record::record(
            &mut state,
            run.seq + 1,
            kind.as_str(),
            model,
            session,
            step,
            priced,
        );
        self.publish(&events);
        self.commit(run, external_step(state, events)).await?;
        Ok(())
    }

    /// What `tokens` of `model` cost at the operation's or the catalog's price, and what the
    /// prompt cache saved on them, for the kinds whose provider is known.
    fn priced(
        &self,
        spec: &rein_core::spec::OperationSpec,
        kind: ExternalKind,
        model: Option<&str>,
        tokens: &TokenUsage,
    ) -> external::record::Priced {
        let provider = match kind {
            ExternalKind::ClaudeCode => "anthropic",
            ExternalKind::Codex => "openai",
            ExternalKind::Jsonl => return Default::default(),
        };
        let Some(model) = model else {
            return Default::default();
        };
        let pricing = crate::pricing::Pricing::new(std::sync::Arc::clone(&self.catalog), spec);
        external::record::Priced {
            cost: pricing.cost(provider, model, tokens, None),
            cache_saved: pricing.cache_saved(provider, model, tokens),
        }
    }

    /// The CLI's own totals, where it reported them, replace what the turns added up to (rein
    /// only adds what they exceed: an estimate already counted is not taken back).
    fn reconcile_totals(&self, run: &mut Loaded, kind: ExternalKind, t: &Transcript) {
        let key = external::record::model_key(kind.as_str(), t.model.as_deref());
        let state = &mut run.committed;
        if let Some(tokens) = &t.totals.0 {
            let counted = state.usage.llm.tokens;
            let extra = TokenUsage {
                input: tokens.input.saturating_sub(counted.input),
                output: tokens.output.saturating_sub(counted.output),
                total: tokens.total.saturating_sub(counted.total),
                cached_read: tokens.cached_read.saturating_sub(counted.cached_read),
                cache_write: tokens.cache_write.saturating_sub(counted.cache_write),
                reasoning: 0,
            };
            if extra != TokenUsage::default() {
                state.usage.record_llm(&key, &extra, 0);
                state.usage.llm.calls = state.usage.llm.calls.saturating_sub(1);
            }
        }
        if let Some(cost) = t.totals.1
            && cost > state.cost.total
        {
            state
                .cost
                .record_llm(&key, cost.saturating_sub(state.cost.total));
        }
    }

    /// A limit the run has crossed: its own, or what its parent's tree has left (a `warn`
    /// policy only reports it, once per limit).
    pub(super) async fn over_limit(
        &self,
        run: &mut Loaded,
        warned: &mut Vec<BudgetKind>,
    ) -> Result<Option<Stop>, DriverError> {
        let state = &run.committed;
        let b = &run.spec.budget;
        let above = run.spec.delegation.as_ref().map(|d| &d.parent_budget);
        let max_tokens = tighter(b.max_tokens, above.and_then(|a| a.max_tokens));
        let max_cost = tighter(b.max_cost, above.and_then(|a| a.max_cost));
        let tokens = state
            .usage
            .llm
            .tokens
            .total
            .max(state.usage.llm.tokens.input + state.usage.llm.tokens.output);
        let mut crossed = None;
        if let Some(max) = max_tokens
            && tokens > max
        {
            crossed = Some((
                BudgetKind::Tokens,
                Amount::Tokens(max),
                Amount::Tokens(tokens),
            ));
        } else if let Some(max) = max_cost
            && state.cost.total > max
        {
            crossed = Some((
                BudgetKind::Cost,
                Amount::Usd(max),
                Amount::Usd(state.cost.total),
            ));
        }
        let Some((kind, limit, actual)) = crossed else {
            return Ok(None);
        };
        if b.on_exceeded != BudgetPolicy::Warn {
            return Ok(Some(Stop::Budget(kind, limit, actual)));
        }
        if !warned.contains(&kind) {
            warned.push(kind);
            let mut state = run.committed.clone();
            let events = emit(
                &mut state,
                vec![EventKind::BudgetExceeded {
                    budget: kind,
                    limit,
                    actual,
                    policy: BudgetPolicy::Warn,
                }],
            );
            self.publish(&events);
            self.commit(run, external_step(state, events)).await?;
        }
        Ok(None)
    }

    /// End the run: finished for `reason`, or failed with `code`.
    pub(super) async fn end_external(
        &self,
        run: &mut Loaded,
        outcome: Result<(FinishReason, String), (Fault, String)>,
    ) -> Result<RunEnd, DriverError> {
        self.end_external_with(run, outcome, Vec::new()).await
    }

    pub(super) async fn end_external_with(
        &self,
        run: &mut Loaded,
        outcome: Result<(FinishReason, String), (Fault, String)>,
        mut kinds: Vec<EventKind>,
    ) -> Result<RunEnd, DriverError> {
        let mut state = run.committed.clone();
        match outcome {
            Ok((reason, detail)) => {
                let detail = (!detail.is_empty()).then_some(detail);
                state.status = Status::Done;
                state.finish = Some(Finish {
                    reason,
                    detail: detail.clone(),
                });
                kinds.push(EventKind::Done {
                    reason,
                    reason_detail: detail,
                });
            }
            Err((code, message)) => {
                state.status = Status::Error;
                state.error = Some(StateError {
                    code: code.into(),
                    message: message.clone(),
                });
                kinds.push(EventKind::Error {
                    code: code.into(),
                    message,
                });
            }
        }
        let events = emit(&mut state, kinds);
        self.publish(&events);
        self.commit(run, external_step(state, events)).await?;
        // A conversation someone has is titled, as after rein's own answers.
        if run.committed.status == Status::Done && !run.spec.unattended {
            self.title_topic(&run.committed).await;
        }
        Ok(end_of(&run.committed))
    }

    pub(super) fn publish(&self, events: &[AgentEvent]) {
        if let Some(sink) = &self.sink {
            for e in events {
                sink.publish(e);
            }
        }
    }
}

/// Where an agent is started, with what.
enum Launch {
    /// Here, as a process group.
    Local {
        program: std::path::PathBuf,
        args: Vec<String>,
        dir: std::path::PathBuf,
        session: Option<String>,
        input: String,
    },
    /// On a device, through the server's gateway.
    Device(
        std::sync::Arc<dyn external::RemoteAgents>,
        external::RemoteStart,
    ),
}

impl Launch {
    /// Start it; why it could not start otherwise.
    fn start(
        self,
        kind: ExternalKind,
    ) -> Result<Box<dyn external::AgentRun>, external::StartError> {
        match self {
            Launch::Local {
                program,
                args,
                dir,
                session,
                input,
            } => {
                let env: Vec<(&str, String)> = session
                    .map(|id| (external::jsonl::SESSION_ENV, id))
                    .into_iter()
                    .collect();
                external::process::spawn(&program, &args, &dir, &env, input)
                    .map(|p| Box::new(p) as Box<dyn external::AgentRun>)
                    .map_err(|source| external::StartError::Spawn {
                        kind,
                        program: program.clone(),
                        source,
                    })
            }
            Launch::Device(remote, start) => remote.start(start),
        }
    }
}

/// A commit of what the external agent did (or of its start and end).
pub(super) fn external_step(state: AgentState, events: Vec<AgentEvent>) -> StepResult {
    let mut r = StepResult::transition(state, events, None);
    r.instructions = vec![InstructionKind::ExternalTurn];
    r
}

/// The smaller of two limits (`None`: no limit).
fn tighter<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// When a run starting now must end: its time limit from now (`None`: no limit).
pub(super) fn deadline_of(spec: &rein_core::spec::OperationSpec) -> Option<Instant> {
    spec.time_limit_secs
        .map(|s| Instant::now() + Duration::from_secs(s))
}

/// Sleep until `deadline`; forever without one.
pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d.into()).await,
        None => std::future::pending().await,
    }
}

fn budget_name(kind: BudgetKind) -> &'static str {
    match kind {
        BudgetKind::Tokens => "token",
        _ => "cost",
    }
}

fn amount(a: Amount) -> String {
    match a {
        Amount::Tokens(n) => format!("{n} tokens"),
        Amount::Usd(u) => format!("${:.4}", u.dollars()),
    }
}
