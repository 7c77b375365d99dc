//! The analysis's deadline. brush-parser backtracks exponentially or loops on some shapes;
//! `limits` refuses the ones fuzzing found, and this bounds the rest: each analysis runs on a
//! thread of its own, and a caller that has waited [`DEADLINE`] gets "unanalysable" (the
//! command needs a person) instead of waiting on. A stuck parse cannot be stopped inside its
//! thread, so the thread is left to finish; while [`MAX_STUCK`] of them are still running,
//! every command is unanalysable at once (failing closed) rather than starting another.

use super::Analysis;
use super::walk::Walker;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, mpsc};
use std::time::Duration;

/// How long a caller waits for one analysis. Real commands take well under a millisecond.
pub(super) const DEADLINE: Duration = Duration::from_secs(2);
/// Analyses past their deadline (still running) before the guard stops starting new ones.
pub(super) const MAX_STUCK: usize = 4;

/// The bound every analysis of this process shares.
pub(super) static SHARED: LazyLock<Bound> = LazyLock::new(|| Bound::new(DEADLINE, MAX_STUCK));

/// A deadline and how many analyses may be left running past it.
pub(super) struct Bound {
    deadline: Duration,
    max_stuck: usize,
    stuck: Arc<AtomicUsize>,
}

/// Where one analysis is, as its caller and its thread see it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Job {
    Running,
    /// Its caller stopped waiting: the thread owes [`Bound::stuck`] a decrement.
    Abandoned,
    Done,
}

impl Bound {
    pub(super) fn new(deadline: Duration, max_stuck: usize) -> Self {
        Self {
            deadline,
            max_stuck,
            stuck: Arc::default(),
        }
    }

    /// Analyses still running past their deadline.
    pub(super) fn stuck(&self) -> usize {
        self.stuck.load(Ordering::SeqCst)
    }

    /// `analyze(command)` on a thread of its own, waited for at most the deadline.
    pub(super) fn analyze<F>(&self, command: &str, analyze: F) -> Analysis
    where
        F: FnOnce(&str) -> Analysis + Send + 'static,
    {
        let stuck = self.stuck();
        if stuck >= self.max_stuck {
            return Walker::unanalysable(
                command,
                &format!(
                    "{stuck} earlier analyses are still running past their deadline, so no command is analysed until they end"
                ),
            );
        }
        let (done, result) = mpsc::sync_channel(1);
        let job = Arc::new(Mutex::new(Job::Running));
        let theirs = Arc::clone(&job);
        let counter = Arc::clone(&self.stuck);
        let owned = command.to_owned();
        let spawned = std::thread::Builder::new()
            .name("rein-shell-guard-analysis".into())
            .spawn(move || {
                let analysis = analyze(&owned);
                let mut job = lock(&theirs);
                if *job == Job::Abandoned {
                    counter.fetch_sub(1, Ordering::SeqCst);
                }
                *job = Job::Done;
                let _ = done.send(analysis);
            });
        if spawned.is_err() {
            return Walker::unanalysable(command, "no thread could be started to analyse it");
        }
        match result.recv_timeout(self.deadline) {
            Ok(analysis) => analysis,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let mut j = lock(&job);
                if *j == Job::Done {
                    // It finished as the wait ended.
                    drop(j);
                    return result.recv().unwrap_or_else(|_| failed(command));
                }
                *j = Job::Abandoned;
                self.stuck.fetch_add(1, Ordering::SeqCst);
                Walker::unanalysable(
                    command,
                    &format!(
                        "its analysis took longer than {} ms",
                        self.deadline.as_millis()
                    ),
                )
            }
            // The analysis panicked.
            Err(mpsc::RecvTimeoutError::Disconnected) => failed(command),
        }
    }
}

fn failed(command: &str) -> Analysis {
    Walker::unanalysable(command, "the analysis failed on it")
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::ShellPredicate;
    use std::time::Instant;

    fn reason(a: &Analysis) -> String {
        a.find(ShellPredicate::Unanalysable)
            .map(|f| f.detail.clone())
            .unwrap_or_default()
    }

    /// An analysis that does not end in time leaves its caller with "unanalysable" at the
    /// deadline; past the bound of stuck analyses every command is unanalysable at once (the
    /// analysis is not even started); once the stuck one ends, commands are analysed again.
    #[test]
    fn a_stuck_analysis_is_cut_off_at_the_deadline_and_the_stuck_ones_are_bounded() {
        let bound = Bound::new(Duration::from_millis(20), 1);
        let (release, held) = mpsc::channel::<()>();
        let started = Instant::now();
        let cut = bound.analyze("( ( ( stuck", move |c| {
            let _ = held.recv();
            crate::syntax::analyze_guarded(c)
        });
        assert!(started.elapsed() >= Duration::from_millis(20));
        assert_eq!(reason(&cut), "its analysis took longer than 20 ms");
        assert_eq!(bound.stuck(), 1);

        let refused = bound.analyze("ls", |_| panic!("not started while one is stuck"));
        assert!(
            reason(&refused).contains("1 earlier analyses are still running"),
            "{}",
            reason(&refused)
        );

        drop(release);
        let waited = Instant::now();
        while bound.stuck() > 0 {
            assert!(
                waited.elapsed() < Duration::from_secs(10),
                "the released analysis never ended"
            );
            std::thread::yield_now();
        }
        let again = bound.analyze("rm -rf /", crate::syntax::analyze_guarded);
        assert!(again.find(ShellPredicate::RmRecursiveRootTarget).is_some());
        assert!(again.find(ShellPredicate::Unanalysable).is_none());
    }

    /// A panicking analysis is a failed one: unanalysable, and nothing left stuck.
    #[test]
    fn a_panicking_analysis_is_unanalysable() {
        let bound = Bound::new(Duration::from_secs(5), 1);
        let failed = bound.analyze("ls", |_| panic!("a parser bug"));
        assert_eq!(reason(&failed), "the analysis failed on it");
        assert_eq!(bound.stuck(), 0);
    }
}
