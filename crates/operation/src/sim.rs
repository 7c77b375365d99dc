//! Where a deterministic simulation takes hold of a run (builds with the `test-hooks` feature
//! only). The driver and the tool host pass named points on a run's path (before a step, before
//! and after its commit, before an at-most-once call reads its record and after it records its
//! intent, and every crash point of [`crate::driver`]); a simulation a test installs may hold
//! the run at any of them, to interleave it with other runs or to drop it there as a crash.
//! It may also switch on a planted bug, to prove that its checks find one. Without a
//! simulation, and on any thread it does not claim, every point passes at once: the simulation
//! answers per thread, so the other tests of the same process never see it.

use futures::future::BoxFuture;

/// A bug a simulation plants, to show that what it checks would catch it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bug {
    /// An at-most-once call runs without reading its record: a run resumed after its intent
    /// (or its result) was written runs the effect again.
    UnreadIntent,
}

/// What a simulation installed in this process answers.
pub trait Simulation: Send + Sync {
    /// What the run at `point` waits for before it goes on (`None`: it goes on at once).
    fn at(&self, point: &str) -> Option<BoxFuture<'static, ()>>;
    /// Whether `bug` is planted for the run asking.
    fn planted(&self, bug: Bug) -> bool;
}

#[cfg(feature = "test-hooks")]
static SIMULATION: std::sync::OnceLock<std::sync::Arc<dyn Simulation>> = std::sync::OnceLock::new();

/// Install `simulation` for the rest of the process; `false` (and nothing changes) when one is
/// installed already.
#[cfg(feature = "test-hooks")]
pub fn install(simulation: std::sync::Arc<dyn Simulation>) -> bool {
    SIMULATION.set(simulation).is_ok()
}

/// Pass `point`: wait there for as long as the simulation says.
#[cfg(feature = "test-hooks")]
pub(crate) async fn point(point: &str) {
    if let Some(wait) = SIMULATION.get().and_then(|s| s.at(point)) {
        wait.await;
    }
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) async fn point(_point: &str) {}

/// Whether the simulation planted `bug` for this run.
#[cfg(feature = "test-hooks")]
pub(crate) fn planted(bug: Bug) -> bool {
    SIMULATION.get().is_some_and(|s| s.planted(bug))
}

#[cfg(not(feature = "test-hooks"))]
pub(crate) fn planted(_bug: Bug) -> bool {
    false
}
