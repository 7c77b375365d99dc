//! Evaluations: a dataset's cases run as real operations by one or more agents (each at a
//! version, if asked), headless and unattended, a few at a time, each within its own cost
//! limit; every case's assertions judged on what its run did ([`check`]); the run kept
//! ([`rein_store::Evals`]) with a summary per agent (pass rate, cost, p50/p95 latency); and
//! a run compared with an earlier one ([`regressions`]): a case that passed and now fails, or
//! costs or takes more than a tolerance allows.

pub mod check;
pub mod dataset;

use crate::{Driver, Host, SpecOrigin, StartOptions};
use check::{Checked, Judges, Outcome};
use dataset::EvalCase;
use futures::StreamExt;
use rein_core::intervention::ApprovalMode;
use rein_core::spec::AgentRef;
use rein_core::{OperationId, Role, Usd};
use rein_store::{Accounts, EvalRunRecord, Evals, SqlStore, Store};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An agent to evaluate: its name, and a version of it (`None`: as it is now).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentChoice {
    /// Name.
    pub name: String,
    /// Version.
    pub version: Option<u64>,
}

impl AgentChoice {
    /// `NAME` or `NAME@VERSION`.
    pub fn parse(s: &str) -> Result<Self, EvalError> {
        match s.split_once('@') {
            None => Ok(Self {
                name: s.to_owned(),
                version: None,
            }),
            Some((name, v)) => Ok(Self {
                name: name.to_owned(),
                version: Some(v.parse().map_err(|_| EvalError::BadAgent(s.to_owned()))?),
            }),
        }
    }

    /// As results name it.
    pub fn label(&self) -> String {
        match self.version {
            Some(v) => format!("{}@{v}", self.name),
            None => self.name.clone(),
        }
    }
}

/// One case run by one agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaseResult {
    /// The case.
    pub case: String,
    /// The agent (`name@version`).
    pub agent: String,
    /// Every assertion held.
    pub passed: bool,
    /// Each assertion's result.
    pub assertions: Vec<Checked>,
    /// Its answer.
    pub answer: String,
    /// What its operation cost, in USD.
    pub cost: f64,
    /// What judging it cost, in USD.
    pub judge_cost: f64,
    /// Milliseconds from its start to its end.
    pub latency_ms: u64,
    /// Steps.
    pub steps: u64,
    /// Its operation.
    pub operation: Option<String>,
    /// Why it could not run, when it could not.
    pub error: Option<String>,
}

/// One agent's figures in a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentSummary {
    /// The agent.
    pub agent: String,
    /// Cases passed.
    pub passed: u64,
    /// Cases.
    pub cases: u64,
    /// What its operations cost, in USD.
    pub cost: f64,
    /// Median latency.
    pub p50_ms: u64,
    /// 95th percentile latency.
    pub p95_ms: u64,
}

/// An evaluation run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvalRun {
    /// Id (`eval_` and a UUID).
    pub id: String,
    /// The dataset (its file name).
    pub dataset: String,
    /// When it ran.
    pub created_at: chrono::DateTime<chrono::Utc>,
    /// Per agent, in the order asked.
    pub summary: Vec<AgentSummary>,
    /// Per agent and case, in that order.
    pub results: Vec<CaseResult>,
}

/// Why an evaluation cannot run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// `NAME@VERSION` with a version that is not a number.
    #[error("{0:?} is not an agent: use NAME or NAME@VERSION")]
    BadAgent(String),
    /// No such agent.
    #[error("no agent `{0}`")]
    NoAgent(String),
    /// No such version of it.
    #[error("agent `{name}` has no version {version}")]
    NoVersion {
        /// The agent.
        name: String,
        /// The version.
        version: u64,
    },
    /// No agent named.
    #[error("name at least one agent (--agent NAME[@VERSION])")]
    NoAgents,
    /// A stored setting that cannot be read.
    #[error("agent `{0}`'s settings cannot be read: {1}")]
    Settings(String, String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] rein_store::StoreError),
}

/// How a server runs a case's operation (under its leases and admission) and waits for it to
/// stop, given the operation.
pub type Launch = Arc<dyn Fn(OperationId) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// Runs evaluations for one owner.
pub struct EvalRunner {
    /// Models, defaults, agents' specs.
    pub host: Host,
    /// The store.
    pub store: Arc<SqlStore>,
    /// Runs the cases' operations.
    pub driver: Arc<Driver>,
    /// Whose agents.
    pub agents_of: String,
    /// Their owner and working directory.
    pub origin: SpecOrigin,
    /// A case's operation is created with its running slot and lease claimed (a server's
    /// admission); `None`: unclaimed, run by this process.
    pub admission: Option<rein_store::Admission>,
    /// How a case's operation runs; `None`: [`Driver::run`] here.
    pub launch: Option<Launch>,
}

impl EvalRunner {
    /// Run every case with every agent, `concurrency` at a time; the run, kept.
    pub async fn run(
        &self,
        dataset: &str,
        cases: &[EvalCase],
        agents: &[AgentChoice],
        concurrency: usize,
    ) -> Result<EvalRun, EvalError> {
        if agents.is_empty() {
            return Err(EvalError::NoAgents);
        }
        let mut specs = Vec::new();
        let mut resolved = Vec::new();
        for a in agents {
            let spec = self.spec_of(a).await?;
            // Named by the version it runs, asked for or current: runs compare by it.
            resolved.push(AgentChoice {
                name: a.name.clone(),
                version: spec.agent.as_ref().and_then(|r| r.version).or(a.version),
            });
            specs.push(spec);
        }
        let agents = &resolved[..];
        let judge = self
            .host
            .system_model
            .clone()
            .unwrap_or_else(|| self.host.default_model.clone());
        let pricing = crate::pricing::Pricing::new(
            Arc::clone(&self.host.catalog),
            &rein_core::spec::OperationSpec::default(),
        );
        let judges = Judges {
            models: &*self.host.models,
            model: &judge,
            pricing: &pricing,
        };
        // Indices, agent by agent: the futures borrow nothing a closure is generic over.
        let jobs: Vec<(usize, usize)> = (0..agents.len())
            .flat_map(|a| (0..cases.len()).map(move |c| (a, c)))
            .collect();
        let judges = &judges;
        let specs = &specs;
        let mut results: Vec<(usize, CaseResult)> =
            futures::stream::iter(jobs.into_iter().enumerate())
                .map(|(i, (a, c))| async move {
                    (i, self.one(&agents[a], &specs[a], &cases[c], judges).await)
                })
                .buffer_unordered(concurrency.max(1))
                .collect()
                .await;
        results.sort_by_key(|(i, _)| *i);
        let results: Vec<CaseResult> = results.into_iter().map(|(_, r)| r).collect();
        let summary = agents
            .iter()
            .map(|a| summarize(&a.label(), &results))
            .collect();
        let run = EvalRun {
            id: format!("eval_{}", uuid::Uuid::now_v7().simple()),
            dataset: dataset.to_owned(),
            created_at: chrono::Utc::now(),
            summary,
            results,
        };
        self.store
            .put_eval_run(&EvalRunRecord {
                id: run.id.clone(),
                owner: self.origin.owner.clone(),
                dataset: run.dataset.clone(),
                created_at: run.created_at,
                summary: serde_json::to_value(&run.summary)
                    .map_err(|e| rein_store::StoreError::corrupt("eval summary", e))?,
                body: serde_json::to_value(&run)
                    .map_err(|e| rein_store::StoreError::corrupt("eval run", e))?,
            })
            .await?;
        Ok(run)
    }

    /// The spec agent `a` runs a case with: its settings (at its version), nobody watching.
    async fn spec_of(&self, a: &AgentChoice) -> Result<rein_core::spec::OperationSpec, EvalError> {
        let mut origin = self.origin.clone();
        let profile: crate::AgentProfile = match a.version {
            None => {
                let stored = crate::stored_agent(&*self.store, &self.agents_of, &a.name)
                    .await?
                    .ok_or_else(|| EvalError::NoAgent(a.name.clone()))?;
                origin.agent = Some(stored.agent);
                stored.profile
            }
            Some(version) => {
                let versions = self.store.agent_versions(&self.agents_of, &a.name).await?;
                if versions.is_empty()
                    && self
                        .store
                        .get_agent(&self.agents_of, &a.name)
                        .await?
                        .is_none()
                {
                    return Err(EvalError::NoAgent(a.name.clone()));
                }
                let v = versions
                    .into_iter()
                    .find(|v| v.version == version)
                    .ok_or_else(|| EvalError::NoVersion {
                        name: a.name.clone(),
                        version,
                    })?;
                origin.agent = Some(AgentRef {
                    name: a.name.clone(),
                    version: Some(version),
                });
                serde_json::from_value(v.config)
                    .map_err(|e| EvalError::Settings(a.name.clone(), e.to_string()))?
            }
        };
        let mut spec = self
            .host
            .spec(&profile, origin)
            .map_err(|e| EvalError::Settings(a.name.clone(), e.to_string()))?;
        // Nobody watches an evaluation: a call that would ask is refused, visibly.
        spec.approval = ApprovalMode::Headless;
        spec.unattended = true;
        Ok(spec)
    }

    /// Run `case` as `a` and judge it.
    async fn one(
        &self,
        a: &AgentChoice,
        spec: &rein_core::spec::OperationSpec,
        case: &EvalCase,
        judges: &Judges<'_>,
    ) -> CaseResult {
        let mut spec = spec.clone();
        if let Some(c) = case.max_cost {
            spec.budget.max_cost = Some(Usd::from_dollars(c));
        }
        let failed = |error: String, operation: Option<OperationId>| CaseResult {
            case: case.id.clone(),
            agent: a.label(),
            passed: false,
            assertions: Vec::new(),
            answer: String::new(),
            cost: 0.0,
            judge_cost: 0.0,
            latency_ms: 0,
            steps: 0,
            operation: operation.map(|o| o.to_string()),
            error: Some(error),
        };
        let opts = StartOptions {
            spec,
            trigger: Some(rein_store::Trigger::Cli),
            admission: self.admission.clone(),
            ..Default::default()
        };
        let id = match self.driver.start(&case.input, &opts).await {
            Ok(id) => id,
            Err(e) => return failed(e.to_string(), None),
        };
        match &self.launch {
            Some(launch) => launch(id).await,
            None => {
                if let Err(e) = self.driver.run(id).await {
                    return failed(e.to_string(), Some(id));
                }
            }
        }
        let outcome = match self.outcome(id).await {
            Ok(o) => o,
            Err(e) => return failed(e.to_string(), Some(id)),
        };
        let mut assertions = Vec::new();
        let mut judge_cost = 0.0;
        for assertion in &case.assertions {
            let (c, cost) = check::check(assertion, &case.input, &outcome, judges).await;
            judge_cost += cost;
            assertions.push(c);
        }
        CaseResult {
            case: case.id.clone(),
            agent: a.label(),
            passed: assertions.iter().all(|c| c.passed),
            assertions,
            answer: outcome.answer,
            cost: outcome.cost,
            judge_cost,
            latency_ms: outcome.latency_ms,
            steps: outcome.steps,
            operation: Some(id.to_string()),
            error: None,
        }
    }

    /// What operation `id` did, as assertions read it.
    async fn outcome(&self, id: OperationId) -> Result<Outcome, rein_store::StoreError> {
        let op = self
            .store
            .load_operation(id)
            .await?
            .ok_or_else(|| rein_store::StoreError::OperationNotFound(id.to_string()))?;
        let answer = op
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant && m.tool_calls.is_empty())
            .map(|m| m.text_content())
            .unwrap_or_default();
        let tool_calls = op
            .state
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .map(|c| {
                (
                    c.key(),
                    serde_json::from_str(&c.arguments)
                        .unwrap_or_else(|_| serde_json::Value::String(c.arguments.to_string())),
                )
            })
            .collect();
        let r = &op.record;
        let end = r.finished_at.unwrap_or(r.updated_at);
        Ok(Outcome {
            answer,
            tool_calls,
            steps: r.step_count,
            cost: r.cost.dollars(),
            latency_ms: u64::try_from((end - r.created_at).num_milliseconds()).unwrap_or(0),
        })
    }
}

/// `agent`'s figures among `results`.
fn summarize(agent: &str, results: &[CaseResult]) -> AgentSummary {
    let mine: Vec<&CaseResult> = results.iter().filter(|r| r.agent == agent).collect();
    let mut latencies: Vec<u64> = mine.iter().map(|r| r.latency_ms).collect();
    latencies.sort_unstable();
    let at = |q: f64| -> u64 {
        if latencies.is_empty() {
            return 0;
        }
        let i = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies[i.min(latencies.len() - 1)]
    };
    AgentSummary {
        agent: agent.to_owned(),
        passed: mine.iter().filter(|r| r.passed).count() as u64,
        cases: mine.len() as u64,
        cost: mine.iter().map(|r| r.cost).sum(),
        p50_ms: at(0.5),
        p95_ms: at(0.95),
    }
}

/// What got worse from `baseline` to `now`, for a case run by an agent of the same name (its
/// version may differ: that is what is compared).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Regression {
    /// The case.
    pub case: String,
    /// The agent now.
    pub agent: String,
    /// What got worse.
    pub what: String,
}

/// How much worse a case may get before it is a regression.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative cost and latency growth allowed (0.2: 20%).
    pub relative: f64,
    /// Latency growth always allowed, in milliseconds (timers jitter).
    pub latency_floor_ms: u64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Self {
            relative: 0.2,
            latency_floor_ms: 250,
        }
    }
}

/// The regressions from `baseline` to `now`.
pub fn regressions(baseline: &EvalRun, now: &EvalRun, tolerance: Tolerance) -> Vec<Regression> {
    let name = |agent: &str| agent.split('@').next().unwrap_or(agent).to_owned();
    let mut out = Vec::new();
    for r in &now.results {
        let Some(b) = baseline
            .results
            .iter()
            .find(|b| b.case == r.case && name(&b.agent) == name(&r.agent))
        else {
            continue;
        };
        let mut worse = |what: String| {
            out.push(Regression {
                case: r.case.clone(),
                agent: r.agent.clone(),
                what,
            })
        };
        if b.passed && !r.passed {
            let failed: Vec<&str> = r
                .assertions
                .iter()
                .filter(|c| !c.passed)
                .map(|c| c.kind.as_str())
                .collect();
            worse(format!(
                "passed with {}, fails now{}",
                b.agent,
                if failed.is_empty() {
                    r.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                } else {
                    format!(" ({})", failed.join(", "))
                }
            ));
        }
        if b.cost > 0.0 && r.cost > b.cost * (1.0 + tolerance.relative) {
            worse(format!("costs ${:.6} (was ${:.6})", r.cost, b.cost));
        }
        let allowed = ((b.latency_ms as f64) * (1.0 + tolerance.relative)) as u64;
        if r.latency_ms > allowed.max(b.latency_ms + tolerance.latency_floor_ms) {
            worse(format!(
                "takes {} ms (was {} ms)",
                r.latency_ms, b.latency_ms
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(results: &[(&str, bool, f64, u64)]) -> EvalRun {
        EvalRun {
            id: "eval_x".into(),
            dataset: "d".into(),
            created_at: chrono::Utc::now(),
            summary: Vec::new(),
            results: results
                .iter()
                .map(|(case, passed, cost, ms)| CaseResult {
                    case: (*case).into(),
                    agent: "a@1".into(),
                    passed: *passed,
                    assertions: Vec::new(),
                    answer: String::new(),
                    cost: *cost,
                    judge_cost: 0.0,
                    latency_ms: *ms,
                    steps: 1,
                    operation: None,
                    error: None,
                })
                .collect(),
        }
    }

    #[test]
    fn a_regression_is_a_lost_pass_or_growth_beyond_the_tolerance_and_the_floor() {
        let baseline = run(&[
            ("pass", true, 0.01, 100),
            ("cost", true, 0.01, 100),
            ("slow", true, 0.01, 100),
            ("jitter", true, 0.01, 100),
        ]);
        let mut now = run(&[
            ("pass", false, 0.01, 100),
            ("cost", true, 0.013, 100),
            ("slow", true, 0.01, 400),
            ("jitter", true, 0.01, 300),
        ]);
        now.results.iter_mut().for_each(|r| r.agent = "a@2".into());
        let worse = regressions(&baseline, &now, Tolerance::default());
        let cases: Vec<&str> = worse.iter().map(|r| r.case.as_str()).collect();
        assert_eq!(cases, ["pass", "cost", "slow"], "{worse:?}");
        assert!(
            worse[0].what.starts_with("passed with a@1, fails now"),
            "{worse:?}"
        );
        let none = regressions(&baseline, &baseline, Tolerance::default());
        assert!(none.is_empty());
    }
}
