//! The soak's users: each runs operations one after another, in a fixed mix of scenarios,
//! follows each one's events to its end across the server's restarts (resuming with
//! `Last-Event-ID`), approves what it parks, and records what it saw.

use super::model;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How long a client keeps retrying one request while the server restarts.
const PATIENCE: Duration = Duration::from_secs(90);

/// How long a client follows one operation's events before it reports that the operation did
/// not end (with what it saw) and goes on to its next.
const FOLLOW: Duration = Duration::from_secs(300);

/// What an operation of the soak does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// Three calculator rounds, then the answer.
    Calc,
    /// One ledger call (an effect run at most once) that asks first; the client approves it.
    Ledger,
    /// A sub-agent does the work.
    Delegate,
    /// The model calls tools for ever; the step limit (4) ends it.
    Forever,
    /// A second question in the conversation of a finished one.
    FollowUp,
}

/// The mix each client runs through, in order, again and again.
pub const MIX: [Scenario; 8] = [
    Scenario::Calc,
    Scenario::Ledger,
    Scenario::Calc,
    Scenario::Delegate,
    Scenario::FollowUp,
    Scenario::Calc,
    Scenario::Forever,
    Scenario::Ledger,
];

/// The step limit of `Forever`.
pub const FOREVER_STEPS: u64 = 4;

/// What a client saw of one operation.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub scenario: Scenario,
    pub op: String,
    /// Its status once its events ended (`done`, `error`, …).
    pub status: String,
    /// Steps its record holds.
    pub steps: usize,
    /// Seconds into the soak when it was created and when its end was seen.
    pub created_at: f64,
    pub ended_at: f64,
    /// How long `POST /v1/operations` took.
    pub create: Duration,
    /// From the request to the end event.
    pub turnaround: Duration,
    /// A restart happened while it ran (its latency is not the server's alone).
    pub crossed_restart: bool,
    /// Event sequence numbers that did not follow the one before (expected, got).
    pub gaps: Vec<(u64, u64)>,
    /// Reconnections of its event stream.
    pub reconnects: usize,
    /// Calls approved.
    pub approvals: usize,
    /// Decisions answered `operation_busy` (a stopped process's lease not yet run out).
    pub busy_answers: usize,
    /// The ledger entry it asked for (`Ledger`).
    pub entry: Option<String>,
    /// A tool result said its call was interrupted by a stop and not repeated (it may or may
    /// not have taken effect).
    pub interrupted: bool,
    /// What the client saw and did while the operation ran, in order (events by sequence
    /// number and type, the calls it found pending, the answers to its decisions): told when
    /// the operation does not end, dropped when it does.
    pub trail: Vec<String>,
}

/// What clients share: how to reach the server of the moment.
#[derive(Clone)]
pub struct Reach {
    pub http: reqwest::Client,
    pub base: watch::Receiver<String>,
    pub token: String,
    /// Restarts so far (incremented before each stop).
    pub restarts: Arc<AtomicU64>,
    pub start: Instant,
}

/// What a request came back with, or that the server could not be reached.
enum Reply {
    Got(u16, Value),
    Unreachable,
}

impl Reach {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base.borrow().as_str())
    }

    async fn once(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Reply {
        let mut req = self
            .http
            .request(method, self.url(path))
            .bearer_auth(&self.token)
            .timeout(Duration::from_secs(30));
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        let Ok(resp) = req.send().await else {
            return Reply::Unreachable;
        };
        let status = resp.status().as_u16();
        match resp.bytes().await {
            Ok(bytes) => Reply::Got(
                status,
                serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            ),
            Err(_) => Reply::Unreachable,
        }
    }

    /// A request that is safe to repeat, repeated while the server is away or restarting.
    pub async fn call(&self, method: reqwest::Method, path: &str, body: Option<&Value>) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.once(method.clone(), path, body).await {
                Reply::Got(status, v) if (200..300).contains(&status) => return v,
                // Starting up or shutting down, or the operation is busy for now.
                Reply::Got(502..=504, _) | Reply::Unreachable => {}
                Reply::Got(409, v) if v["error"]["code"] == "operation_busy" => {}
                Reply::Got(status, v) => panic!("{method} {path}: {status} {v}"),
            }
            assert!(
                Instant::now() < deadline,
                "{method} {path}: the server was away for {PATIENCE:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn get(&self, path: &str) -> Value {
        self.call(reqwest::Method::GET, path, None).await
    }

    /// Start an operation in conversation `topic`, which holds `before` operations already:
    /// when the request's answer is lost, the conversation tells whether it was started, so
    /// an operation is never started twice.
    async fn create(&self, topic: &str, body: &Value, before: usize) -> (String, Duration) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let asked = Instant::now();
            match self
                .once(reqwest::Method::POST, "/v1/operations", Some(body))
                .await
            {
                Reply::Got(202, v) => {
                    let id = v["operation_id"].as_str().expect("an operation id");
                    return (id.to_owned(), asked.elapsed());
                }
                // The user's running slots are all taken (a busy moment): back off.
                Reply::Got(429, _) => {}
                Reply::Got(502..=504, _) | Reply::Unreachable => {
                    let listed = self
                        .get(&format!("/v1/operations?topic={topic}&top_level=true"))
                        .await;
                    let top = listed.as_array().map_or(&[][..], Vec::as_slice);
                    if top.len() > before {
                        // Newest first: the one this request started.
                        let id = top[0]["id"].as_str().expect("an operation id");
                        return (id.to_owned(), asked.elapsed());
                    }
                }
                Reply::Got(status, v) => panic!("POST /v1/operations: {status} {v}"),
            }
            assert!(
                Instant::now() < deadline,
                "POST /v1/operations: the server was away for {PATIENCE:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Approve every call `op` has parked; the number approved, and the answers that said the
    /// operation was busy (to be tried again). What it found and was answered goes on `trail`.
    async fn approve_pending(&self, op: &str, trail: &mut Vec<String>) -> (usize, usize) {
        let detail = self.get(&format!("/v1/operations/{op}")).await;
        let ids: Vec<String> = detail["pending"]
            .as_array()
            .map_or(&[][..], Vec::as_slice)
            .iter()
            .filter_map(|p| p["call"]["id"].as_str().map(str::to_owned))
            .collect();
        trail.push(format!(
            "{:.1} s: {} pending {ids:?}",
            self.now(),
            detail["operation"]["status"]
        ));
        let (mut approved, mut busy) = (0, 0);
        for id in ids {
            let decision = json!({"decisions": [{"tool_call_id": id, "decision": "approve"}]});
            let path = format!("/v1/operations/{op}/interventions");
            let deadline = Instant::now() + PATIENCE;
            loop {
                match self
                    .once(reqwest::Method::POST, &path, Some(&decision))
                    .await
                {
                    Reply::Got(202, _) => {
                        trail.push(format!("{:.1} s: approved {id}", self.now()));
                        approved += 1;
                        break;
                    }
                    // Still held by a process that stopped while it parked: its lease runs
                    // out within the time the answer gives.
                    Reply::Got(409, v) if v["error"]["code"] == "operation_busy" => {
                        busy += 1;
                    }
                    // Decided already (an answer lost in a restart), or no longer parked.
                    Reply::Got(409, v) => {
                        trail.push(format!("{:.1} s: {id} refused 409 {v}", self.now()));
                        break;
                    }
                    Reply::Got(502..=504, _) | Reply::Unreachable => {}
                    Reply::Got(status, v) => panic!("POST {path}: {status} {v}"),
                }
                assert!(Instant::now() < deadline, "POST {path}: away too long");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
        (approved, busy)
    }

    /// Follow `op`'s committed events from the start to its end, reconnecting after restarts
    /// from the last event seen, approving what it parks: whether its end was seen within
    /// [`FOLLOW`].
    async fn follow(&self, op: &str, out: &mut Outcome) -> bool {
        let mut next: u64 = 0;
        let deadline = Instant::now() + FOLLOW;
        loop {
            if Instant::now() >= deadline {
                return false;
            }
            let mut req = self
                .http
                .get(self.url(&format!("/v1/operations/{op}/events?live=false")))
                .bearer_auth(&self.token);
            if next > 0 {
                req = req.header("last-event-id", (next - 1).to_string());
            }
            let resp = match req.send().await {
                Ok(r) if r.status().is_success() => r,
                _ => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let mut stream = Sse::new(resp, deadline);
            while let Some((seq, event)) = stream.next().await {
                if seq != next {
                    out.gaps.push((next, seq));
                }
                next = seq + 1;
                out.trail.push(format!(
                    "{:.1} s: event {seq} {}",
                    self.now(),
                    event["type"].as_str().unwrap_or("?")
                ));
                match event["type"].as_str() {
                    Some("human_approve_required") => {
                        let (approved, busy) = self.approve_pending(op, &mut out.trail).await;
                        out.approvals += approved;
                        out.busy_answers += busy;
                    }
                    Some("done" | "error") => return true,
                    Some("tool_result") => {
                        out.interrupted |= event.to_string().contains("was interrupted");
                    }
                    _ => {}
                }
            }
            out.reconnects += 1;
            out.trail.push(format!(
                "{:.1} s: the stream ended; reconnecting",
                self.now()
            ));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn now(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// Run one operation of `scenario` in conversation `topic` (holding `before` already)
    /// to its end.
    async fn run(&self, scenario: Scenario, topic: &str, before: usize, tag: &str) -> Outcome {
        let mut body = json!({"topic": topic});
        let mut entry = None;
        let input = match scenario {
            Scenario::Calc | Scenario::FollowUp => model::CALC.to_owned(),
            Scenario::Ledger => {
                // Allow-list mode with the calculator alone allowed: the ledger call asks.
                body["approval"] = json!("allow-list");
                body["allow"] = json!(["calculator"]);
                entry = Some(tag.to_owned());
                format!("{} {tag}", model::LEDGER)
            }
            Scenario::Delegate => model::DELEGATE.to_owned(),
            Scenario::Forever => {
                body["max_steps"] = json!(FOREVER_STEPS);
                model::FOREVER.to_owned()
            }
        };
        body["input"] = json!(input);
        let restarts_before = self.restarts.load(Ordering::SeqCst);
        let asked = Instant::now();
        let created_at = self.now();
        let (op, create) = self.create(topic, &body, before).await;
        let mut out = Outcome {
            scenario,
            op: op.clone(),
            status: String::new(),
            steps: 0,
            created_at,
            ended_at: 0.0,
            create,
            turnaround: Duration::ZERO,
            crossed_restart: false,
            gaps: Vec::new(),
            reconnects: 0,
            approvals: 0,
            busy_answers: 0,
            entry,
            interrupted: false,
            trail: Vec::new(),
        };
        let ended = self.follow(&op, &mut out).await;
        if ended {
            // Told only of an operation that does not end: not kept for the thousands that do.
            out.trail = Vec::new();
        }
        out.turnaround = asked.elapsed();
        out.ended_at = self.now();
        out.crossed_restart = self.restarts.load(Ordering::SeqCst) != restarts_before;
        let detail = self.get(&format!("/v1/operations/{op}")).await;
        out.status = detail["operation"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !ended {
            // What the server holds of it now: still parked with the call pending (the client
            // missed it), or decided and stopped (the server lost the decision).
            out.trail.push(format!(
                "{:.1} s: its end not seen within {FOLLOW:?}; the server says {}, pending {}, interventions {}",
                self.now(),
                detail["operation"]["status"],
                detail["pending"],
                self.get(&format!("/v1/operations/{op}/interventions")).await
            ));
            out.status = format!("{} (its end not seen within {FOLLOW:?})", out.status);
        }
        out.steps = detail["operation"]["step_count"].as_u64().unwrap_or(0) as usize;
        out
    }
}

/// One user: runs the mix until `stop`, then finishes the operation under way. Each outcome
/// goes to `seen` as it ends, so what a client saw survives its panic (a refused request).
pub async fn client(
    reach: Reach,
    id: usize,
    stop: Arc<AtomicBool>,
    seen: Arc<std::sync::Mutex<Vec<Outcome>>>,
) {
    let keep = |o: Outcome| seen.lock().unwrap_or_else(|p| p.into_inner()).push(o);
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let scenario = MIX[n % MIX.len()];
        let tag = format!("c{id}-{n}");
        let topic = format!("soak-{tag}");
        if scenario == Scenario::FollowUp {
            // The first question, then the follow-up in the same conversation.
            keep(reach.run(Scenario::Calc, &topic, 0, &tag).await);
            keep(reach.run(scenario, &topic, 1, &tag).await);
        } else {
            keep(reach.run(scenario, &topic, 0, &tag).await);
        }
        n += 1;
    }
}

/// Committed events of an SSE response: `(seq, event)`, heartbeats and previews skipped;
/// `None` at the stream's end, when nothing came for 60 s (a stream that stalled), or at the
/// operation's deadline: heartbeats keep a stream of an operation parked for good alive, so
/// the time between chunks alone would never end it.
struct Sse {
    resp: reqwest::Response,
    /// Bytes, not text: a chunk may end inside a character.
    buf: Vec<u8>,
    deadline: Instant,
}

impl Sse {
    fn new(resp: reqwest::Response, deadline: Instant) -> Self {
        Self {
            resp,
            buf: Vec::new(),
            deadline,
        }
    }

    async fn next(&mut self) -> Option<(u64, Value)> {
        loop {
            if let Some(at) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..at + 2).collect();
                let block = String::from_utf8_lossy(&block);
                let mut id = None;
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = v.trim().parse().ok();
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data.push_str(v);
                    }
                }
                if let Some(id) = id
                    && let Ok(event) = serde_json::from_str(&data)
                {
                    return Some((id, event));
                }
                continue;
            }
            let limit = (Instant::now() + Duration::from_secs(60)).min(self.deadline);
            match tokio::time::timeout_at(limit.into(), self.resp.chunk()).await {
                Ok(Ok(Some(bytes))) => self.buf.extend_from_slice(&bytes),
                Ok(Ok(None) | Err(_)) | Err(_) => return None,
            }
        }
    }
}
