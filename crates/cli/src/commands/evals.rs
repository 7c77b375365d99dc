//! `rein eval run|list|show`: a dataset's cases run by agents (and versions of them) as real
//! operations on this machine's database, each case's assertions judged, the run kept and
//! printed as a table per agent (pass rate, cost, p50/p95 latency) with the cases that failed;
//! with `--baseline FILE` (an earlier run's `--json`), the exit code says whether anything
//! regressed. Runs here only for now (`--server` is refused, naming why).

use super::Local;
use crate::exit;
use rein_operation::evals::{self, AgentChoice, EvalRun, EvalRunner, Tolerance};
use rein_store::Evals;
use std::sync::Arc;

/// `rein eval …`.
#[derive(clap::Subcommand)]
pub enum EvalCommand {
    /// Run a dataset (JSONL: one case per line, `{"id", "input", "assert": [...]}`; see
    /// docs/evals.md) with each agent.
    Run {
        /// The dataset.
        dataset: std::path::PathBuf,
        /// An agent to evaluate, `NAME` or `NAME@VERSION` (repeatable).
        #[arg(long = "agent", value_name = "NAME[@VERSION]", required = true)]
        agents: Vec<String>,
        /// Cases run at once.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=64))]
        concurrency: u64,
        /// An earlier run (its `--json` output, or `rein eval show ID --json`): exit 5 when a
        /// case that passed there fails now, or costs or takes more than the tolerance allows.
        #[arg(long, value_name = "FILE")]
        baseline: Option<std::path::PathBuf>,
        /// Relative cost and latency growth allowed against the baseline.
        #[arg(long, default_value_t = 0.2)]
        tolerance: f64,
        /// Latency growth always allowed against the baseline, in milliseconds (timers and a
        /// busy machine jitter).
        #[arg(long, value_name = "MS", default_value_t = 250)]
        latency_floor_ms: u64,
    },
    /// Your runs, newest first.
    List,
    /// One run: its table, or with `--json` the whole run.
    Show {
        /// Its id (`eval_…`).
        id: String,
    },
}

/// Run an `eval` command on this machine; the exit code.
pub async fn run(on: &Local, command: EvalCommand, json: bool) -> anyhow::Result<u8> {
    let store = Arc::clone(on.store().await?);
    match command {
        EvalCommand::Run {
            dataset,
            agents,
            concurrency,
            baseline,
            tolerance,
            latency_floor_ms,
        } => {
            let text = std::fs::read_to_string(&dataset)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dataset.display()))?;
            let cases = evals::dataset::parse(&text)
                .map_err(|e| anyhow::anyhow!("{}: {e}", dataset.display()))?;
            let baseline: Option<EvalRun> = match &baseline {
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
                    Some(serde_json::from_str(&text).map_err(|e| {
                        anyhow::anyhow!("{} is not an evaluation run: {e}", path.display())
                    })?)
                }
                None => None,
            };
            let agents = agents
                .iter()
                .map(|a| AgentChoice::parse(a))
                .collect::<Result<Vec<_>, _>>()?;
            let host = on.host().await?.clone();
            let user = crate::agent_profile::local_user(&store).await?;
            let runner = EvalRunner {
                driver: Arc::new(host.driver()),
                host,
                store: Arc::clone(&store),
                agents_of: user.id,
                origin: rein_operation::SpecOrigin {
                    working_directory: std::env::current_dir()
                        .ok()
                        .map(|d| d.to_string_lossy().into_owned()),
                    ..Default::default()
                },
                admission: None,
                launch: None,
            };
            let name = dataset
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let run = runner
                .run(
                    &name,
                    &cases,
                    &agents,
                    usize::try_from(concurrency).unwrap_or(4),
                )
                .await?;
            if json {
                println!("{}", serde_json::to_string(&run)?);
            } else {
                table(&run);
            }
            if let Some(b) = baseline {
                let worse = evals::regressions(
                    &b,
                    &run,
                    Tolerance {
                        relative: tolerance,
                        latency_floor_ms,
                    },
                );
                for r in &worse {
                    eprintln!("regression: {} ({}): {}", r.case, r.agent, r.what);
                }
                if !worse.is_empty() {
                    eprintln!("{} regressions against {}", worse.len(), b.id);
                    return Ok(exit::REGRESSED);
                }
                eprintln!("no regression against {}", b.id);
            }
        }
        EvalCommand::List => {
            for r in store.eval_runs(None).await? {
                if json {
                    println!(
                        "{}",
                        serde_json::json!({"id": r.id, "dataset": r.dataset, "created_at": r.created_at, "summary": r.summary})
                    );
                } else {
                    let summary: Vec<evals::AgentSummary> =
                        serde_json::from_value(r.summary).unwrap_or_default();
                    let agents: Vec<String> = summary
                        .iter()
                        .map(|s| format!("{} {}/{}", s.agent, s.passed, s.cases))
                        .collect();
                    println!(
                        "{}  {}  {:<24} {}",
                        r.id,
                        r.created_at.format("%Y-%m-%d %H:%M"),
                        r.dataset,
                        agents.join(", ")
                    );
                }
            }
        }
        EvalCommand::Show { id } => {
            let r = store
                .eval_run(None, &id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no evaluation run {id}"))?;
            let run: EvalRun = serde_json::from_value(r.body)
                .map_err(|e| anyhow::anyhow!("evaluation run {id} cannot be read: {e}"))?;
            if json {
                println!("{}", serde_json::to_string(&run)?);
            } else {
                table(&run);
            }
        }
    }
    Ok(exit::DONE)
}

/// The run as a table per agent, then each failed case with why.
fn table(run: &EvalRun) {
    println!("evaluation {} of {}", run.id, run.dataset);
    println!(
        "{:<28} {:>9} {:>6} {:>12} {:>9} {:>9}",
        "agent", "passed", "rate", "cost (USD)", "p50", "p95"
    );
    for s in &run.summary {
        let rate = if s.cases == 0 {
            0.0
        } else {
            100.0 * s.passed as f64 / s.cases as f64
        };
        println!(
            "{:<28} {:>9} {:>5.0}% {:>12.6} {:>6} ms {:>6} ms",
            s.agent,
            format!("{}/{}", s.passed, s.cases),
            rate,
            s.cost,
            s.p50_ms,
            s.p95_ms
        );
    }
    for r in run.results.iter().filter(|r| !r.passed) {
        let why: Vec<String> = match &r.error {
            Some(e) => vec![e.clone()],
            None => r
                .assertions
                .iter()
                .filter(|c| !c.passed)
                .map(|c| format!("{}: {}", c.kind, c.detail))
                .collect(),
        };
        println!("✗ {} ({}): {}", r.case, r.agent, why.join("; "));
    }
}
