//! The soak's end: let the server settle, read back what it holds, check the invariants,
//! print the figures, and judge the resources of a long run.

use super::load::{FOREVER_STEPS, Outcome, Reach, Scenario};
use super::server::{Launch, Stop};
use super::{Plan, Sample};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// Statuses an operation is not finished in.
const UNFINISHED: [&str; 7] = [
    "idle",
    "queued",
    "running",
    "waiting_for_human",
    "waiting_for_async_tool",
    "waiting_for_sub_agents",
    "interrupted",
];

/// What the server holds once the load stopped and everything settled.
#[derive(Debug, Default)]
pub struct Facts {
    /// Ledger entries and how often each was written.
    pub ledger: BTreeMap<String, usize>,
    /// Operations still unfinished after the wait (`id status`).
    pub unfinished: Vec<String>,
    /// Operations found waiting for a person no client followed.
    pub unattended: Vec<String>,
    /// The task's runs (the newest 200) and its scheduled executions.
    pub task_runs: Vec<Value>,
    pub task_executions: u64,
    /// Accepted ingestion jobs that did not end `done` (`id state`).
    pub jobs_unfinished: Vec<String>,
    pub jobs_accepted: usize,
    /// Files the knowledge base holds.
    pub kb_files: u64,
    /// Seconds the settling took.
    pub settled_in: f64,
}

/// Wait (at most 120 s) until no operation is unfinished, every accepted job ended and every
/// task run has its outcome, then read the ledger, the task and the knowledge base.
pub async fn settle(reach: &Reach, task: &str, jobs: &[String], launch: &Launch) -> Facts {
    let began = Instant::now();
    let deadline = began + Duration::from_secs(120);
    let mut facts = Facts {
        jobs_accepted: jobs.len(),
        ..Facts::default()
    };
    loop {
        let mut unfinished = Vec::new();
        for status in UNFINISHED {
            let listed = reach
                .get(&format!("/v1/operations?status={status}&limit=1000"))
                .await;
            for op in listed.as_array().map_or(&[][..], Vec::as_slice) {
                let id = op["id"].as_str().unwrap_or_default().to_owned();
                if status == "waiting_for_human" && !facts.unattended.contains(&id) {
                    facts.unattended.push(id.clone());
                }
                unfinished.push(format!("{id} {status}"));
            }
        }
        let mut jobs_unfinished = Vec::new();
        for id in jobs {
            let job = reach.get(&format!("/v1/knowledge-jobs/{id}")).await;
            if job["state"] != "done" {
                jobs_unfinished.push(format!("{id} {}", job["state"]));
            }
        }
        // A run's outcome is recorded just after its operation ends.
        let history = reach.get(&format!("/v1/tasks/{task}/history")).await;
        facts.task_runs = history["runs"].as_array().cloned().unwrap_or_default();
        let runs_ended = facts.task_runs.iter().all(|r| !r["outcome"].is_null());
        let ended = unfinished.is_empty() && jobs_unfinished.is_empty() && runs_ended;
        if ended || Instant::now() > deadline {
            facts.unfinished = unfinished;
            facts.jobs_unfinished = jobs_unfinished;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    facts.settled_in = began.elapsed().as_secs_f64();
    for line in std::fs::read_to_string(launch.ledger())
        .unwrap_or_default()
        .lines()
    {
        *facts.ledger.entry(line.to_owned()).or_default() += 1;
    }
    let shown = reach.get(&format!("/v1/tasks/{task}")).await;
    facts.task_executions = shown["task"]["executions"].as_u64().unwrap_or(0);
    facts.kb_files = reach.get("/v1/knowledge/soak").await["files"]
        .as_u64()
        .unwrap_or(0);
    facts
}

/// The invariants that hold however long the soak ran; each one broken, in words.
pub fn check(outcomes: &[Outcome], facts: &Facts, panics: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for o in outcomes {
        if let Some((expected, got)) = o.gaps.first() {
            found.push(format!(
                "{} ({:?}): its events were not gapless ({} gaps; expected seq {expected}, got {got})",
                o.op,
                o.scenario,
                o.gaps.len()
            ));
        }
        if o.status != "done" {
            // The trail is kept only for an operation whose end the client did not see.
            let trail = if o.trail.is_empty() {
                String::new()
            } else {
                format!("; the client's trail:\n    {}", o.trail.join("\n    "))
            };
            found.push(format!(
                "{} ({:?}) ended `{}`, not `done`{trail}",
                o.op, o.scenario, o.status
            ));
        }
        if o.scenario == Scenario::Forever && o.steps as u64 > FOREVER_STEPS + 1 {
            found.push(format!(
                "{} took {} steps past its limit of {FOREVER_STEPS}",
                o.op, o.steps
            ));
        }
    }
    // No effect twice; none that no operation asked for; a missing one only where the call
    // was interrupted and said so.
    let asked: BTreeSet<&str> = outcomes.iter().filter_map(|o| o.entry.as_deref()).collect();
    for (entry, times) in &facts.ledger {
        if *times > 1 {
            found.push(format!("ledger entry {entry} was written {times} times"));
        }
        if !asked.contains(entry.as_str()) {
            found.push(format!(
                "ledger entry {entry} was asked for by no operation"
            ));
        }
    }
    for o in outcomes.iter().filter(|o| o.scenario == Scenario::Ledger) {
        let entry = o.entry.as_deref().unwrap_or_default();
        if !facts.ledger.contains_key(entry) && !o.interrupted {
            found.push(format!(
                "{} ended without its ledger entry {entry}, and no call of it was interrupted",
                o.op
            ));
        }
    }
    for u in &facts.unfinished {
        found.push(format!("operation {u} did not finish"));
    }
    for u in &facts.unattended {
        found.push(format!(
            "operation {u} waited for a person no client was following"
        ));
    }
    let mut due = BTreeSet::new();
    for run in &facts.task_runs {
        if let Some(at) = run["due_at"].as_str()
            && !due.insert(at.to_owned())
        {
            found.push(format!("the task fired twice for due time {at}"));
        }
        if run["outcome"].is_null() {
            found.push(format!("task run {} has no outcome", run["operation_id"]));
        }
    }
    if facts.task_runs.is_empty() {
        found.push("the task never ran".to_owned());
    }
    for j in &facts.jobs_unfinished {
        found.push(format!("ingestion job {j} did not end done"));
    }
    if facts.kb_files < facts.jobs_accepted as u64 {
        found.push(format!(
            "the knowledge base holds {} files of {} accepted",
            facts.kb_files, facts.jobs_accepted
        ));
    }
    for p in panics {
        found.push(format!("the server panicked: {p}"));
    }
    found
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Milliseconds a `Calc` operation spent beyond its model's own time (four answers, each
/// after the model's delay), for those no restart interrupted, created in `[from, to)`.
fn added_ms(plan: &Plan, outcomes: &[Outcome], from: f64, to: f64) -> Vec<f64> {
    let model = plan.model_delay.as_secs_f64() * 1000.0 * 4.0;
    let mut v: Vec<f64> = outcomes
        .iter()
        .filter(|o| o.scenario == Scenario::Calc && !o.crossed_restart)
        .filter(|o| o.created_at >= from && o.created_at < to)
        .map(|o| (o.turnaround.as_secs_f64() * 1000.0 - model).max(0.0))
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The length of a latency window: ten minutes, or a quarter of a shorter run.
fn window(plan: &Plan) -> f64 {
    (plan.secs as f64 / 4.0).min(600.0)
}

/// Print what the soak measured: samples, latency by window, totals.
pub fn print(
    plan: &Plan,
    outcomes: &[Outcome],
    samples: &[Sample],
    restarts: &[(f64, Stop)],
    facts: &Facts,
    devices: usize,
) {
    eprintln!(
        "soak: samples (s, lifetime, resident MiB: anonymous + file-backed, descriptors, database MiB (its WAL))"
    );
    for s in samples {
        let db = s.db.map_or_else(
            || "-".to_owned(),
            |d| {
                format!(
                    "{:.1} (WAL {:.1})",
                    d.bytes as f64 / 1048576.0,
                    d.wal as f64 / 1048576.0
                )
            },
        );
        let r = s.resources;
        eprintln!(
            "  {:7.1} {:3} {:7.1} + {:7.1} {:5} {db}",
            s.at,
            s.lifetime,
            r.anon_kib as f64 / 1024.0,
            r.file_kib as f64 / 1024.0,
            r.fds
        );
    }
    let w = window(plan);
    eprintln!(
        "soak: added latency of a calculator operation (3 tool rounds, 4 model calls) by window of {w:.0} s, p50 / p99 ms (n)"
    );
    let mut from = 0.0;
    while from < plan.secs as f64 {
        let v = added_ms(plan, outcomes, from, from + w);
        eprintln!(
            "  {from:6.0}–{:6.0} s: {:8.1} / {:8.1} ({})",
            from + w,
            percentile(&v, 0.5),
            percentile(&v, 0.99),
            v.len()
        );
        from += w;
    }
    let mut creates: Vec<f64> = outcomes
        .iter()
        .filter(|o| !o.crossed_restart)
        .map(|o| o.create.as_secs_f64() * 1000.0)
        .collect();
    creates.sort_by(f64::total_cmp);
    let by = |s: Scenario| outcomes.iter().filter(|o| o.scenario == s).count();
    let kills = restarts.iter().filter(|(_, h)| *h == Stop::Kill).count();
    eprintln!(
        "soak: {} operations in {} s ({} calc, {} ledger, {} delegate, {} step-limited, {} follow-ups), \
         {} crossed a restart, {} stream reconnections; POST /v1/operations p50 {:.1} ms, p99 {:.1} ms",
        outcomes.len(),
        plan.secs,
        by(Scenario::Calc),
        by(Scenario::Ledger),
        by(Scenario::Delegate),
        by(Scenario::Forever),
        by(Scenario::FollowUp),
        outcomes.iter().filter(|o| o.crossed_restart).count(),
        outcomes.iter().map(|o| o.reconnects).sum::<usize>(),
        percentile(&creates, 0.5),
        percentile(&creates, 0.99),
    );
    eprintln!(
        "soak: {} restarts ({kills} SIGKILL, {} SIGTERM); {} approvals ({} answered busy first); {} ledger entries, {} calls interrupted; \
         the task ran {} times ({} scheduled executions); {} ingestions accepted, the base holds {} files; \
         {devices} device connections; settled in {:.1} s",
        restarts.len(),
        restarts.len() - kills,
        outcomes.iter().map(|o| o.approvals).sum::<usize>(),
        outcomes.iter().map(|o| o.busy_answers).sum::<usize>(),
        facts.ledger.len(),
        outcomes.iter().filter(|o| o.interrupted).count(),
        facts.task_runs.len(),
        facts.task_executions,
        facts.jobs_accepted,
        facts.kb_files,
        facts.settled_in,
    );
    let forever_steps = outcomes
        .iter()
        .filter(|o| o.scenario == Scenario::Forever)
        .map(|o| o.steps)
        .max()
        .unwrap_or(0);
    eprintln!(
        "soak: step-limited operations (limit {FOREVER_STEPS}) took at most {forever_steps} steps"
    );
    if let (Some(first), Some(last)) = (
        samples.iter().find_map(|s| s.db.map(|d| d.bytes)),
        samples.iter().rev().find_map(|s| s.db.map(|d| d.bytes)),
    ) && !outcomes.is_empty()
    {
        eprintln!(
            "soak: database {:.1} → {:.1} MiB, {:.1} KiB per operation",
            first as f64 / 1048576.0,
            last as f64 / 1048576.0,
            last.saturating_sub(first) as f64 / 1024.0 / outcomes.len() as f64
        );
    }
}

/// The resource verdicts of a long run; each one missed, in words. Warm-up is the first ten
/// minutes; memory (the server's own, anonymous: mapped database pages are the kernel's cache,
/// capped by `mmap_size`) and descriptors are compared between the ten minutes after it and the
/// last ten (each window spans whole server lifetimes), and within each lifetime between its
/// middle and its end (a leak grows between them; a restart would hide it from the first
/// comparison); latency p99 in every ten-minute window against the first one.
pub fn judge(plan: &Plan, outcomes: &[Outcome], samples: &[Sample]) -> Vec<String> {
    let mut missed = Vec::new();
    let secs = plan.secs as f64;
    let warm = 600.0;
    let in_window = |from: f64, to: f64| samples.iter().filter(move |s| s.at >= from && s.at < to);
    let peak =
        |from: f64, to: f64, f: fn(&Sample) -> u64| in_window(from, to).map(f).max().unwrap_or(0);
    let (base_rss, last_rss) = (
        peak(warm, warm + 600.0, |s| s.resources.anon_kib),
        peak(secs - 600.0, secs, |s| s.resources.anon_kib),
    );
    if last_rss as f64 > base_rss as f64 * 1.2 {
        missed.push(format!(
            "memory grew: peak anonymous RSS {:.1} MiB in the last ten minutes, {:.1} MiB after warm-up",
            last_rss as f64 / 1024.0,
            base_rss as f64 / 1024.0
        ));
    }
    let (base_fds, last_fds) = (
        peak(warm, warm + 600.0, |s| s.resources.fds),
        peak(secs - 600.0, secs, |s| s.resources.fds),
    );
    if last_fds > base_fds + 16 {
        missed.push(format!(
            "descriptors grew: at most {last_fds} open in the last ten minutes, {base_fds} after warm-up"
        ));
    }
    let lifetimes: BTreeSet<u64> = samples.iter().map(|s| s.lifetime).collect();
    let last_lifetime = lifetimes.last().copied();
    for l in lifetimes {
        // The first lifetime is warm-up; the last may be cut short by the end.
        if l == 0 || Some(l) == last_lifetime {
            continue;
        }
        let mine: Vec<&Sample> = samples.iter().filter(|s| s.lifetime == l).collect();
        let (Some(mid), Some(end)) = (mine.get(mine.len() / 2), mine.last()) else {
            continue;
        };
        let (mid_kib, end_kib) = (mid.resources.anon_kib, end.resources.anon_kib);
        if end_kib as f64 > mid_kib as f64 * 1.15 + 4096.0 {
            missed.push(format!(
                "memory grew within lifetime {l}: {:.1} MiB at {:.0} s, {:.1} MiB at {:.0} s",
                mid_kib as f64 / 1024.0,
                mid.at,
                end_kib as f64 / 1024.0,
                end.at
            ));
        }
    }
    let w = window(plan);
    let first = percentile(&added_ms(plan, outcomes, 0.0, w), 0.99);
    let mut from = w;
    while from + w <= secs {
        let p99 = percentile(&added_ms(plan, outcomes, from, from + w), 0.99);
        if p99 > 2.0 * first {
            missed.push(format!(
                "latency p99 {p99:.1} ms in {from:.0}–{:.0} s, over twice the first window's {first:.1} ms",
                from + w
            ));
        }
        from += w;
    }
    missed
}
