//! Deterministic simulation of the runtime: several processes (drivers over one real SQLite
//! store) run a few operations at once, and a seed decides every interleaving at the points
//! where rein can be held (`rein_operation::sim`) and where the simulated model and tools
//! answer; it also kills processes there, jumps the clock past leases, delivers people's
//! decisions late, twice or not at all. After each history every operation is driven to its
//! end from what is on disk, then the invariants are checked:
//!
//! - no effect ran twice (an at-most-once call's effect, counted by the tool itself), and a
//!   call recorded as succeeded ran exactly once;
//! - no committed step was lost or rewritten (every event a commit acknowledged is stored, the
//!   same, at its place);
//! - events gapless, every message stored once, usage counted once, one step row per commit;
//! - budgets never exceeded by more than one step's spend (steps and tokens);
//! - every operation parked or cut short by a crash resumes to an end.
//!
//! The same seed makes the same history (the executor lets one run go at a time, see
//! `simulation/executor.rs`); a failing seed is printed with its history and the command that
//! replays it, and is kept in [`REGRESSIONS`] once the bug is fixed.

#[path = "simulation/executor.rs"]
pub(crate) mod executor;

use crate::common::in_process::{InProcessModel, tool_call};
use executor::{Advanced, Executor, gate, plant};
use futures::FutureExt;
use futures::future::BoxFuture;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::event::EventKind;
use rein_core::intervention::{ApprovalMode, InterventionConfig, InterventionPolicy};
use rein_core::state::{ModelRef, Status};
use rein_core::tool::{Effect, ExecStatus, ToolManifest};
use rein_core::{OperationId, Role, TokenUsage};
use rein_model::{Catalog, ChatRequest, ModelEvent, StopReason};
use rein_operation::sim::Bug;
use rein_operation::{
    Decision, Driver, DriverError, Durability, RunEnd, StartOptions, Tool, ToolContext,
};
use rein_store::{SqlStore, Store, Synchronous};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// Seeds that once failed, replayed first on every run.
const REGRESSIONS: &[u64] = &[
    // A process killed after a person's approval was recorded and before the step it allowed
    // committed: the operation waited for a decision forever, refusing each one as already
    // made. A recorded decision is now carried out on resume, or when it comes again.
    26,
];

/// Seeds per CI run, unless `REIN_SIM_SEEDS` says otherwise.
const SEEDS: u64 = 5_000;

/// Processes at most in one history.
const MAX_NODES: usize = 3;

/// Tokens one simulated model call spends.
const CALL_TOKENS: u64 = 110;

/// What an operation's model asks for, turn by turn, before it answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Call {
    /// An at-most-once effect.
    Effect,
    /// A pure call, safe to repeat.
    Pure,
}

/// The simulated model's answers: each operation's from the request alone (its prompt names its
/// plan; the tool results so far say which turn it is), so a call re-issued after a crash gets
/// the same answer. Each answer waits at the gate `model` first.
struct Model {
    plans: Arc<Mutex<HashMap<String, Vec<Call>>>>,
}

impl Model {
    fn turn(&self, req: &ChatRequest) -> Vec<ModelEvent> {
        let prompt = req
            .messages
            .iter()
            .find(|m| m.role == Role::User)
            .map(|m| m.text_content())
            .unwrap_or_default();
        let plan = self
            .plans
            .lock()
            .unwrap()
            .get(&prompt)
            .cloned()
            .unwrap_or_default();
        let turn = req.messages.iter().filter(|m| m.role == Role::Tool).count();
        let mut out = vec![ModelEvent::Start {
            response_id: None,
            model: Some("sim".into()),
        }];
        let reason = match plan.get(turn) {
            Some(call) if !req.tools.is_empty() => {
                let name = match call {
                    Call::Effect => "ledger__effect",
                    Call::Pure => "ledger__pure",
                };
                out.extend(tool_call(&format!("c{turn}"), name, "{}"));
                StopReason::ToolUse
            }
            _ => {
                out.push(ModelEvent::TextDelta {
                    text: format!("{prompt}: done"),
                });
                StopReason::EndTurn
            }
        };
        out.push(ModelEvent::Usage {
            usage: TokenUsage {
                input: CALL_TOKENS - 10,
                output: 10,
                total: CALL_TOKENS,
                ..Default::default()
            },
        });
        out.push(ModelEvent::Stop { reason, raw: None });
        out
    }
}

/// Effects by idempotency key (`operation:call`), counted where they happen.
type Ledger = Arc<Mutex<BTreeMap<String, u32>>>;

/// The simulated tools: `effect` (at most once, each run counted) and `pure`; each waits at
/// the gate `tool` before it runs.
struct LedgerTool {
    runs: Ledger,
}

impl Tool for LedgerTool {
    fn manifest(&self) -> ToolManifest {
        // Asks in manual mode, runs in auto-run.
        let mut m = rein_core::testing::manifest("ledger", &["effect", "pure"]);
        m.intervention = Some(InterventionConfig::Policy(InterventionPolicy::Required));
        m
    }
    fn effect(&self, api: &str) -> Effect {
        if api == "effect" {
            Effect::AtMostOnce
        } else {
            Effect::Pure
        }
    }
    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        api: &'a str,
        _: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            gate("tool").await;
            if api == "effect" {
                *self
                    .runs
                    .lock()
                    .unwrap()
                    .entry(cx.idempotency_key.clone())
                    .or_default() += 1;
            }
            Ok(ToolOutput::ok(format!("{api} done")))
        }
        .boxed()
    }
}

/// One operation of a history, as the seed made it.
#[derive(Debug)]
struct Op {
    id: OperationId,
    plan: Vec<Call>,
    manual: bool,
    max_steps: Option<u32>,
    max_tokens: Option<u64>,
}

/// What a run of a simulated process was doing.
#[derive(Clone, Copy, Debug)]
enum Job {
    Resume,
    Approve,
    Reject,
}

type Ended = (usize, Job, Result<RunEnd, DriverError>);

/// One process: a driver over the shared store, and its name as a lease holder. A restarted
/// process has a new name and none of its runs; its driver object is reused (what a driver
/// keeps between runs is caches of token counts), since making one per restart would be most
/// of a history's cost.
struct Node {
    name: String,
    driver: Arc<Driver>,
}

/// What every history shares on one thread: the store, the catalog, and what the simulated
/// model, tools and commits record.
struct Bench {
    store: Arc<SqlStore>,
    catalog: Arc<Catalog>,
    plans: Arc<Mutex<HashMap<String, Vec<Call>>>>,
    ledger: Ledger,
    /// Every event a commit acknowledged, as JSON, by operation and sequence number.
    committed: Arc<Mutex<BTreeMap<(OperationId, u64), Value>>>,
    /// The drivers processes run (one per simulated process slot, the last for the final
    /// recovery).
    drivers: Vec<Arc<Driver>>,
    runtime: tokio::runtime::Runtime,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Bench {
    fn new() -> Self {
        executor::install();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let dir = std::env::temp_dir().join(format!("rein-sim-{}", OperationId::new()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("rein.db");
        let store = runtime
            .block_on(SqlStore::open(path.to_str().unwrap(), Synchronous::Normal))
            .unwrap();
        let mut bench = Self {
            store: Arc::new(store),
            catalog: Arc::new(Catalog::builtin().unwrap()),
            plans: Arc::default(),
            ledger: Arc::default(),
            committed: Arc::default(),
            drivers: Vec::new(),
            runtime,
            _dir: TempDir(dir),
        };
        bench.drivers = (0..=MAX_NODES).map(|_| Arc::new(bench.driver())).collect();
        bench
    }

    /// Process slot `n` under `name`.
    fn node(&self, n: usize, name: String) -> Node {
        Node {
            name,
            driver: Arc::clone(&self.drivers[n]),
        }
    }

    fn driver(&self) -> Driver {
        let committed = Arc::clone(&self.committed);
        Driver::new(
            self.store.clone(),
            Arc::new({
                let model = Model {
                    plans: Arc::clone(&self.plans),
                };
                InProcessModel::new(move |req| model.turn(req)).waiting(|| gate("model").boxed())
            }),
            ModelRef {
                provider: "openai".into(),
                model: "gpt-4o-mini".into(),
            },
            Arc::clone(&self.catalog),
        )
        // One path per run: a pipelined commit lands beside the next step, two paths at once
        // (its own test is `driver::pipelined`).
        .with_durability(Durability::Sync)
        .with_tool(Arc::new(LedgerTool {
            runs: Arc::clone(&self.ledger),
        }))
        .with_commit_hook(Arc::new(move |id, events| {
            let mut seen = committed.lock().unwrap();
            for e in events {
                seen.insert((id, e.seq), serde_json::to_value(e).unwrap());
            }
        }))
    }

    /// Run `f` on the store from the simulation's thread, outside any simulated run.
    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        let _in = self.runtime.enter();
        futures::executor::block_on(f)
    }
}

/// One simulated history: what happened, and what it broke.
struct History {
    seed: u64,
    trace: Vec<String>,
    violations: Vec<String>,
}

/// The simulated clock, for leases (what the store compares them with is what it is told).
struct Clock(chrono::DateTime<chrono::Utc>);

const LEASE: chrono::TimeDelta = chrono::TimeDelta::seconds(30);

fn simulate(bench: &Bench, seed: u64) -> History {
    let _in = bench.runtime.enter();
    // What the last history recorded is checked already; keeping it would grow with every seed.
    bench.plans.lock().unwrap().clear();
    bench.ledger.lock().unwrap().clear();
    bench.committed.lock().unwrap().clear();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut h = History {
        seed,
        trace: Vec::new(),
        violations: Vec::new(),
    };
    let node_count = rng.random_range(2..=MAX_NODES);
    let mut nodes: Vec<Node> = (0..node_count)
        .map(|n| bench.node(n, format!("s{seed}n{n}g0")))
        .collect();
    let mut generation = vec![0u32; node_count];
    let mut clock = Clock(chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap());
    let mut exec: Executor<Ended> = Executor::new();
    // Which run of the executor is which node's, on which operation.
    let mut runs: HashMap<usize, (usize, usize)> = HashMap::new();

    // The operations, started by the first process.
    let ops: Vec<Op> = (0..rng.random_range(1..=3u64))
        .map(|k| {
            let plan = (0..rng.random_range(0..=4))
                .map(|_| {
                    if rng.random_bool(0.5) {
                        Call::Effect
                    } else {
                        Call::Pure
                    }
                })
                .collect();
            Op {
                id: OperationId(uuid::Uuid::from_u128(
                    (u128::from(seed) << 64) | u128::from(k) | (1 << 127),
                )),
                plan,
                manual: rng.random_bool(0.4),
                max_steps: rng.random_bool(0.3).then(|| rng.random_range(1..=4)),
                max_tokens: rng
                    .random_bool(0.2)
                    .then(|| rng.random_range(CALL_TOKENS..5 * CALL_TOKENS)),
            }
        })
        .collect();
    for (k, op) in ops.iter().enumerate() {
        let prompt = format!("sim {seed} op {k}");
        bench
            .plans
            .lock()
            .unwrap()
            .insert(prompt.clone(), op.plan.clone());
        let mut spec = rein_operation::OperationSpec {
            approval: if op.manual {
                ApprovalMode::Manual
            } else {
                ApprovalMode::AutoRun
            },
            max_steps: op.max_steps,
            ..Default::default()
        };
        spec.budget.max_tokens = op.max_tokens;
        let options = StartOptions {
            spec,
            id: Some(op.id),
            ..Default::default()
        };
        let driver = Arc::clone(&nodes[0].driver);
        let i = exec.spawn(0, format!("start op{k}"), async move {
            let r = driver
                .start(&prompt, &options)
                .await
                .map(|_| RunEnd::Released);
            (k, Job::Resume, r)
        });
        if let (_, _, Err(e)) = exec.finish(i) {
            h.violations.push(format!("op{k} could not start: {e}"));
            return h;
        }
        h.trace.push(format!("op{k} {op:?}"));
    }

    let status = |id: OperationId| -> Status {
        bench
            .block_on(bench.store.operation_status(id))
            .unwrap()
            .unwrap()
    };

    // The history: each action chosen by the seed among what can happen now.
    for _ in 0..rng.random_range(10..120) {
        let live = exec.live();
        let roll = rng.random_range(0..100);
        if roll < 55 && !live.is_empty() {
            let i = live[rng.random_range(0..live.len())];
            let (node, op) = runs[&i];
            match exec.advance(i) {
                Advanced::At(gate) => h.trace.push(format!("n{node} op{op} -> {gate}")),
                Advanced::Done((k, job, r)) => {
                    h.trace.push(format!("n{node} op{k} {job:?} ended {r:?}"));
                    ended(&mut h, k, job, &r);
                    let name = nodes[node].name.clone();
                    bench
                        .block_on(bench.store.release_operation(ops[k].id, &name))
                        .unwrap();
                }
            }
        } else if roll < 75 {
            // A process takes an operation up (a resume, or a person's decision delivered to
            // it), holding its lease as a server's runner does.
            let k = rng.random_range(0..ops.len());
            let node = rng.random_range(0..nodes.len());
            if live.iter().any(|i| runs[i] == (node, k)) {
                continue;
            }
            let st = status(ops[k].id);
            if st.is_terminal() {
                continue;
            }
            let job = if st == Status::WaitingForHuman && rng.random_bool(0.8) {
                if rng.random_bool(0.75) {
                    Job::Approve
                } else {
                    Job::Reject
                }
            } else {
                Job::Resume
            };
            let until = clock.0 + LEASE;
            let leased = bench
                .block_on(
                    bench
                        .store
                        .lease_operation(ops[k].id, &nodes[node].name, until, clock.0),
                )
                .unwrap();
            if !leased {
                h.trace
                    .push(format!("n{node} op{k} {job:?}: leased elsewhere"));
                continue;
            }
            let i = spawn(&mut exec, &nodes[node], node, k, ops[k].id, job);
            runs.insert(i, (node, k));
            // Idle or running is not in the history: the record says running once a process
            // reports activity on its first step, which a background writer does in real time.
            let shown = if st.is_parked() {
                format!("{st:?}")
            } else {
                "ready".into()
            };
            h.trace
                .push(format!("n{node} op{k} {job:?} begins ({shown})"));
        } else if roll < 90 {
            // A process is killed where its runs wait, and starts again.
            let node = rng.random_range(0..nodes.len());
            let killed = exec.kill(node);
            generation[node] += 1;
            nodes[node] = bench.node(node, format!("s{seed}n{node}g{}", generation[node]));
            h.trace.push(format!("n{node} killed ({killed} runs)"));
        } else {
            // Time passes: every lease not renewed runs out.
            clock.0 += LEASE + chrono::TimeDelta::seconds(rng.random_range(1..60));
            h.trace.push("clock jumps past the leases".into());
        }
    }

    // Every process stops; one comes back and drives each operation to its end.
    for node in 0..nodes.len() {
        exec.kill(node);
    }
    clock.0 += LEASE * 4;
    let last = bench.node(MAX_NODES, format!("s{seed}final"));
    for (k, op) in ops.iter().enumerate() {
        let mut tries = 0;
        loop {
            let st = status(op.id);
            if st.is_terminal() {
                break;
            }
            tries += 1;
            if tries > 3 * op.plan.len() + 6 {
                h.violations
                    .push(format!("op{k} does not end: it stays {st:?}"));
                break;
            }
            // A resume first: it carries out a decision recorded before a stop; then, if the
            // operation still waits, a person approves.
            let job = if st == Status::WaitingForHuman && tries % 2 == 0 {
                Job::Approve
            } else {
                Job::Resume
            };
            let i = spawn(&mut exec, &last, MAX_NODES, k, op.id, job);
            let (_, _, r) = exec.finish(i);
            h.trace.push(format!("final op{k} {job:?} ended {r:?}"));
            ended(&mut h, k, job, &r);
        }
    }
    check(bench, &ops, &mut h);
    h
}

fn spawn(
    exec: &mut Executor<Ended>,
    node: &Node,
    n: usize,
    k: usize,
    id: OperationId,
    job: Job,
) -> usize {
    let driver = Arc::clone(&node.driver);
    exec.spawn(n, format!("n{n} op{k} {job:?}"), async move {
        let r = match job {
            Job::Resume => driver.resume(id).await,
            Job::Approve => driver.decide(id, None, Decision::Approve, None).await,
            Job::Reject => {
                driver
                    .decide(
                        id,
                        None,
                        Decision::Reject {
                            reason: Some("not now".into()),
                            halt: false,
                        },
                        None,
                    )
                    .await
            }
        };
        (k, job, r)
    })
}

/// A run's error is a violation unless it is a refusal the history explains (a decision that
/// came after another one, or for a call no longer pending).
fn ended(h: &mut History, k: usize, job: Job, r: &Result<RunEnd, DriverError>) {
    if let Err(e) = r {
        // A decision that came after another one: the operation no longer waits, or the call
        // was decided (the same call, by someone else).
        let explained = matches!(
            (job, e),
            (
                Job::Approve | Job::Reject,
                DriverError::Refused(
                    rein_operation::Refusal::NotWaiting { .. }
                        | rein_operation::Refusal::AlreadyDecided(_)
                ) | DriverError::Store(rein_store::StoreError::AlreadyDecided(_))
            )
        );
        if !explained {
            h.violations.push(format!("op{k} {job:?} failed: {e}"));
        }
    }
}

/// The invariants, on what the store holds after the history.
fn check(bench: &Bench, ops: &[Op], h: &mut History) {
    let store = &bench.store;
    let ledger = bench.ledger.lock().unwrap();
    let committed = bench.committed.lock().unwrap();
    for (k, op) in ops.iter().enumerate() {
        let v = &mut h.violations;
        let loaded = bench
            .block_on(store.load_operation(op.id))
            .unwrap()
            .unwrap();
        let events = bench.block_on(store.events(op.id, None)).unwrap();
        let stored: BTreeMap<u64, Value> = events
            .iter()
            .map(|e| (e.seq, serde_json::to_value(e).unwrap()))
            .collect();
        // No committed step lost or rewritten.
        for ((id, seq), event) in committed.range((op.id, 0)..=(op.id, u64::MAX)) {
            debug_assert_eq!(*id, op.id);
            match stored.get(seq) {
                Some(e) if e == event => {}
                Some(e) => v.push(format!(
                    "op{k}: event {seq} was committed as {event}, is {e}"
                )),
                None => v.push(format!("op{k}: committed event {seq} is gone")),
            }
        }
        // Gapless events; one step row per commit.
        if stored.keys().copied().ne(0..stored.len() as u64) {
            v.push(format!("op{k}: events not gapless: {:?}", stored.keys()));
        }
        let steps = bench.block_on(store.steps(op.id)).unwrap();
        if steps.len() as u64 != loaded.record.commit_seq {
            v.push(format!(
                "op{k}: {} step rows for {} commits",
                steps.len(),
                loaded.record.commit_seq
            ));
        }
        // Messages once, usage once.
        let state = &loaded.state;
        let ids: std::collections::HashSet<_> = state.messages.iter().map(|m| m.id).collect();
        if ids.len() != state.messages.len() {
            v.push(format!("op{k}: a message is stored twice"));
        }
        let answers = state
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count() as u64;
        if state.usage.llm.calls != answers {
            v.push(format!(
                "op{k}: {} model calls counted for {answers} answers",
                state.usage.llm.calls
            ));
        }
        // Budgets: crossed by at most one step's spend. The steps that spend (a model call, a
        // tool run) number at most the limit plus the final answer it forces. (A step that
        // only parks for a person spends nothing: an approved call runs one step later than
        // in auto-run, and is not one more.)
        if let Some(max) = op.max_steps {
            let spent: std::collections::BTreeSet<u32> = events
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        EventKind::LlmStart { .. } | EventKind::ToolPending { .. }
                    )
                })
                .map(|e| e.step)
                .collect();
            if spent.len() > max as usize + 1 {
                v.push(format!(
                    "op{k}: {} steps spent (steps {spent:?}), limit {max}",
                    spent.len()
                ));
            }
        }
        if let Some(max) = op.max_tokens
            && state.usage.llm.tokens.total > max + CALL_TOKENS
        {
            v.push(format!(
                "op{k}: {} tokens, limit {max}",
                state.usage.llm.tokens.total
            ));
        }
        // No effect twice; a recorded success ran once.
        for turn in 0..op.plan.len() {
            let call = format!("c{turn}");
            let ran = ledger
                .get(&format!("{}:{call}", op.id))
                .copied()
                .unwrap_or(0);
            if ran > 1 {
                v.push(format!("op{k}: the effect of {call} ran {ran} times"));
            }
            let record = bench.block_on(store.tool_execution(op.id, &call)).unwrap();
            if let Some(r) = record
                && r.effect == Effect::AtMostOnce
                && r.status == ExecStatus::Succeeded
                && ran != 1
            {
                v.push(format!(
                    "op{k}: {call} is recorded as succeeded but ran {ran} times"
                ));
            }
        }
    }
}

/// What the histories of a run did, summed.
#[derive(Debug, Default)]
struct Tally {
    operations: usize,
    gates: usize,
    kills: usize,
    clock_jumps: usize,
    decisions: usize,
}

impl Tally {
    fn add(&mut self, h: &History) {
        for line in &h.trace {
            self.operations += usize::from(line.contains(" Op {"));
            self.gates += usize::from(line.contains(" -> "));
            self.kills += usize::from(line.ends_with(" runs)"));
            self.clock_jumps += usize::from(line.starts_with("clock jumps"));
            self.decisions +=
                usize::from(line.contains("Approve begins") || line.contains("Reject begins"));
        }
    }

    fn merge(mut self, o: Tally) -> Tally {
        self.operations += o.operations;
        self.gates += o.gates;
        self.kills += o.kills;
        self.clock_jumps += o.clock_jumps;
        self.decisions += o.decisions;
        self
    }
}

/// Run `seeds` on this thread, each on the thread's store: the histories that broke something,
/// and what they all did.
fn run_seeds(
    seeds: impl Iterator<Item = u64>,
    bug: Option<Bug>,
    stop_at_first: bool,
) -> (Vec<History>, Tally) {
    plant(bug);
    let bench = Bench::new();
    let mut failed = Vec::new();
    let mut tally = Tally::default();
    for seed in seeds {
        let h = simulate(&bench, seed);
        tally.add(&h);
        if !h.violations.is_empty() {
            failed.push(h);
            if stop_at_first {
                break;
            }
        }
    }
    plant(None);
    (failed, tally)
}

fn report(h: &History) -> String {
    format!(
        "seed {} broke: {}\nits history:\n  {}\nreplay it with REIN_SIM_SEED={} cargo test -p \
         rein-operation --test operation-tests simulation::seeded -- --nocapture",
        h.seed,
        h.violations.join("; "),
        h.trace.join("\n  "),
        h.seed
    )
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {v:?}"))
    })
}

#[test]
fn seeded_histories_keep_every_invariant() {
    if let Some(seed) = env_u64("REIN_SIM_SEED") {
        let bench = Bench::new();
        let h = simulate(&bench, seed);
        println!("{}", h.trace.join("\n"));
        assert!(h.violations.is_empty(), "{}", report(&h));
        return;
    }
    let seeds = env_u64("REIN_SIM_SEEDS").unwrap_or(SEEDS);
    let started = std::time::Instant::now();
    // Two threads, each with its own store, take alternate seeds.
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            std::thread::spawn(move || {
                let mine = REGRESSIONS
                    .iter()
                    .copied()
                    .chain(0..seeds)
                    .skip(t as usize)
                    .step_by(2);
                run_seeds(mine, None, false)
            })
        })
        .collect();
    let (failed, tally) = threads.into_iter().map(|t| t.join().unwrap()).fold(
        (Vec::new(), Tally::default()),
        |(mut failed, tally), (f, t)| {
            failed.extend(f);
            (failed, tally.merge(t))
        },
    );
    println!(
        "simulation: {} seeds (+{} regressions) in {:.1} s, {} failed; {} operations, {} \
         gates passed, {} processes killed, {} clock jumps past the leases, {} decisions",
        seeds,
        REGRESSIONS.len(),
        started.elapsed().as_secs_f64(),
        failed.len(),
        tally.operations,
        tally.gates,
        tally.kills,
        tally.clock_jumps,
        tally.decisions
    );
    assert!(
        failed.is_empty(),
        "{}",
        failed.iter().map(report).collect::<Vec<_>>().join("\n\n")
    );
}

/// A seed is a history: run again on another store, it makes the same choices, meets the same
/// gates in the same order and ends the same way, which is what makes a failing seed a
/// regression test.
#[test]
fn a_seed_replays_the_same_history() {
    let traces = |bench: &Bench| -> Vec<Vec<String>> {
        (0..40).map(|seed| simulate(bench, seed).trace).collect()
    };
    let (first, second) = (traces(&Bench::new()), traces(&Bench::new()));
    for (seed, (a, b)) in first.iter().zip(&second).enumerate() {
        if let Some(at) = (0..a.len().max(b.len())).find(|&i| a.get(i) != b.get(i)) {
            panic!(
                "seed {seed} made two histories; from step {at} on:\n  {:?}\nand\n  {:?}",
                &a[at.min(a.len())..a.len().min(at + 6)],
                &b[at.min(b.len())..b.len().min(at + 6)]
            );
        }
    }
    let gates: usize = first.iter().map(Vec::len).sum();
    assert!(
        gates > 40 * 10,
        "the histories did little: {gates} steps in all"
    );
}

/// The checks are worth something only if they catch a bug: with one planted (an
/// at-most-once call that does not read its record), a seed within the CI budget breaks "no
/// effect twice".
#[test]
fn a_planted_bug_is_found() {
    let started = std::time::Instant::now();
    let (failed, _) = run_seeds(0..2_000, Some(Bug::UnreadIntent), true);
    let Some(h) = failed.first() else {
        panic!("2,000 seeds did not find the planted bug");
    };
    println!(
        "the planted bug was found by seed {} in {:.1} s: {}",
        h.seed,
        started.elapsed().as_secs_f64(),
        h.violations.join("; ")
    );
    assert!(
        h.violations.iter().any(|v| v.contains("ran 2 times")),
        "{}",
        report(h)
    );
}
