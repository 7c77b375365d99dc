//! The simulation's executor: it polls each simulated process's runs on the test's own thread,
//! one at a time, and lets a run go on only to its next gate: a point rein passes
//! (`rein_operation::sim`, before a step, around a commit, around an at-most-once call's
//! record) or a call of the simulated model or tools. Between two gates a run's store work
//! finishes before anything else runs, so the only interleavings are the ones the seed chooses
//! at gates, and the same seed makes the same history. A run dropped at a gate is a process
//! killed there: whatever it had not committed is gone.
//!
//! The store's own threads and the tokio runtime's timers still run for real; a run that waits
//! on them is waited for (with a deadline: a run that makes no progress for
//! [`HUNG_AFTER`] is a hang, reported as one).

use futures::future::BoxFuture;
use rein_operation::sim::{Bug, Simulation};
use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

/// How long a run may wait on the store or a timer without progress before it counts as hung.
pub const HUNG_AFTER: Duration = Duration::from_secs(60);

thread_local! {
    /// Whether a run of this thread's simulation is being polled now: gates hold only then.
    static POLLING: Cell<bool> = const { Cell::new(false) };
    /// The gate the polled run stopped at, if it stopped at one.
    static PARKED: RefCell<Option<(&'static str, Arc<AtomicBool>)>> = const { RefCell::new(None) };
    /// The bug planted for this thread's simulation.
    static PLANTED: Cell<Option<Bug>> = const { Cell::new(None) };
    /// How long each commit of this thread's runs waits before it is written, outside the
    /// simulation (a test holding a commit up: `driver::pipelined`).
    static COMMIT_DELAY: Cell<Option<Duration>> = const { Cell::new(None) };
}

/// Install [`Hook`] for the rest of the test process (once, whoever asks first).
pub fn install() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        assert!(rein_operation::sim::install(Arc::new(Hook)));
    });
}

/// From now on, every commit of a run polled on this thread waits `delay` first (`None`: no
/// more). A test on a current-thread runtime uses it to hold commits up while a step runs.
pub fn delay_commits(delay: Option<Duration>) {
    COMMIT_DELAY.set(delay);
}

/// Plant `bug` (or none) for the simulations this thread runs.
pub fn plant(bug: Option<Bug>) {
    PLANTED.set(bug);
}

/// What rein asks at its simulation points: a gate on the simulation's thread, nothing
/// elsewhere.
pub struct Hook;

impl Simulation for Hook {
    fn at(&self, point: &str) -> Option<BoxFuture<'static, ()>> {
        let name = match point {
            "step" => "step",
            "commit" => "commit",
            "committed" => "committed",
            "tool-check" => "tool-check",
            p if p.starts_with("tool:") => "tool-recorded",
            _ => "point",
        };
        if !POLLING.get() {
            return COMMIT_DELAY
                .get()
                .filter(|_| name == "commit")
                .map(|d| Box::pin(tokio::time::sleep(d)) as BoxFuture<'static, ()>);
        }
        Some(Box::pin(gate(name)))
    }

    fn planted(&self, bug: Bug) -> bool {
        PLANTED.get() == Some(bug)
    }
}

/// A point where the polled run stops until the executor lets it through (the simulated
/// model and tools call one before they answer). Outside the simulation's polls it passes.
pub fn gate(name: &'static str) -> Gate {
    Gate { name, open: None }
}

pub struct Gate {
    name: &'static str,
    open: Option<Arc<AtomicBool>>,
}

impl Future for Gate {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if !POLLING.get() {
            return Poll::Ready(());
        }
        let flag = self
            .open
            .get_or_insert_with(|| Arc::new(AtomicBool::new(false)))
            .clone();
        if flag.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        PARKED.with_borrow_mut(|p| {
            // Runs in the simulation go one path at a time: a second gate in one poll would be
            // a path that could be doing store work while the executor thinks it waits.
            assert!(
                p.is_none(),
                "two gates reached in one poll ({:?} and {}): the simulation's runs must make \
                 one call at a time",
                p.as_ref().map(|g| g.0),
                self.name
            );
            *p = Some((self.name, flag));
        });
        Poll::Pending
    }
}

/// Wakes the executor's thread when a run waiting on the store or a timer can go on.
#[derive(Default)]
struct Signal {
    woken: Mutex<bool>,
    cv: Condvar,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let mut woken = self.woken.lock().unwrap_or_else(|e| e.into_inner());
        *woken = true;
        self.cv.notify_one();
    }
}

/// One run of one simulated process.
struct Run<T> {
    node: usize,
    label: String,
    future: Pin<Box<dyn Future<Output = T> + Send>>,
    /// The gate it waits at (`None` before its first poll).
    at: Option<(&'static str, Arc<AtomicBool>)>,
    signal: Arc<Signal>,
}

/// Where a run got to when it was let through its gate.
pub enum Advanced<T> {
    /// It waits at the next gate (named).
    At(&'static str),
    /// It ended.
    Done(T),
}

/// The runs of every simulated process, polled only when the simulation says.
pub struct Executor<T> {
    runs: Vec<Option<Run<T>>>,
}

impl<T> Executor<T> {
    pub fn new() -> Self {
        Self { runs: Vec::new() }
    }

    /// Add a run of process `node`; it starts when first advanced.
    pub fn spawn(
        &mut self,
        node: usize,
        label: String,
        future: impl Future<Output = T> + Send + 'static,
    ) -> usize {
        self.runs.push(Some(Run {
            node,
            label,
            future: Box::pin(future),
            at: None,
            signal: Arc::default(),
        }));
        self.runs.len() - 1
    }

    /// The runs not ended or dropped, in the order they were added.
    pub fn live(&self) -> Vec<usize> {
        (0..self.runs.len())
            .filter(|&i| self.runs[i].is_some())
            .collect()
    }

    /// Drop every run of process `node` where it waits: the process was killed.
    pub fn kill(&mut self, node: usize) -> usize {
        let mut killed = 0;
        for slot in &mut self.runs {
            if slot.as_ref().is_some_and(|r| r.node == node) {
                *slot = None;
                killed += 1;
            }
        }
        killed
    }

    /// Let run `i` through its gate and poll it until it reaches the next one or ends.
    pub fn advance(&mut self, i: usize) -> Advanced<T> {
        let Some(run) = self.runs[i].as_mut() else {
            panic!("run {i} is not live");
        };
        if let Some((_, open)) = run.at.take() {
            open.store(true, Ordering::SeqCst);
        }
        let waker = Waker::from(Arc::clone(&run.signal));
        let mut cx = Context::from_waker(&waker);
        loop {
            *run.signal.woken.lock().unwrap_or_else(|e| e.into_inner()) = false;
            POLLING.set(true);
            let polled = run.future.as_mut().poll(&mut cx);
            POLLING.set(false);
            let parked = PARKED.take();
            match polled {
                Poll::Ready(out) => {
                    self.runs[i] = None;
                    return Advanced::Done(out);
                }
                Poll::Pending => {
                    if let Some((name, open)) = parked {
                        run.at = Some((name, open));
                        return Advanced::At(name);
                    }
                    // Waiting on the store's threads or a timer: wait for its wake-up.
                    let woken = run.signal.woken.lock().unwrap_or_else(|e| e.into_inner());
                    let (woken, timeout) = run
                        .signal
                        .cv
                        .wait_timeout_while(woken, HUNG_AFTER, |w| !*w)
                        .unwrap_or_else(|e| e.into_inner());
                    assert!(
                        !timeout.timed_out() || *woken,
                        "{} made no progress for {HUNG_AFTER:?}: it hangs",
                        run.label
                    );
                }
            }
        }
    }

    /// Advance run `i` through every gate until it ends.
    pub fn finish(&mut self, i: usize) -> T {
        loop {
            if let Advanced::Done(out) = self.advance(i) {
                return out;
            }
        }
    }
}
