//! Running a child process the way the shell and the interpreter do: in a private temporary
//! directory removed after it, entering its sandbox and resource limits between `fork` and
//! `exec`, under a supervisor that kills whatever it leaves behind (Linux), with a wall-clock
//! limit and its output capped (the head and the tail kept).

use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// A command's own temporary directory (`rein-shell-PID-N` under the system's, mode 0700),
/// removed with everything in it when dropped.
pub(crate) struct PrivateTmp(pub(crate) std::path::PathBuf);

impl PrivateTmp {
    pub(crate) fn new() -> std::io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let mut b = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
        // A process killed before its drop leaves its directory behind, and a later process
        // may get its pid: a name that exists is passed over, never shared.
        let mut tries = 0;
        loop {
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("rein-shell-{}-{n}", std::process::id()));
            match b.create(&dir) {
                Ok(()) => return Ok(Self(dir)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && tries < 1000 => {
                    tries += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Resource limits a child sets on itself before it runs (`setrlimit`, between `fork` and
/// `exec`): what one call may take of the machine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rlimits {
    /// Bytes of address space (`RLIMIT_AS`): an allocation past it fails.
    pub(crate) address_space: Option<u64>,
    /// Seconds of CPU time (`RLIMIT_CPU`): the process is killed past it.
    pub(crate) cpu_secs: Option<u64>,
    /// Bytes one file may grow to (`RLIMIT_FSIZE`): a write past it fails.
    pub(crate) file_size: Option<u64>,
}

impl Rlimits {
    /// No limits beyond the process's own.
    pub(crate) const NONE: Rlimits = Rlimits {
        address_space: None,
        cpu_secs: None,
        file_size: None,
    };

    /// Set the limits on the calling process: only system calls on stack values, so it may run
    /// between `fork` and `exec`.
    #[cfg(unix)]
    #[allow(unsafe_code)] // setrlimit on a stack value
    fn apply(&self) -> std::io::Result<()> {
        let set = |resource, value: Option<u64>| -> std::io::Result<()> {
            let Some(v) = value else { return Ok(()) };
            let limit = libc::rlimit {
                rlim_cur: v as libc::rlim_t,
                rlim_max: v as libc::rlim_t,
            };
            // SAFETY: a plain system call reading a value on the stack.
            if unsafe { libc::setrlimit(resource, &limit) } != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        };
        set(libc::RLIMIT_AS, self.address_space)?;
        set(libc::RLIMIT_CPU, self.cpu_secs)?;
        set(libc::RLIMIT_FSIZE, self.file_size)
    }
}

/// Run `cmd` under a supervisor that kills whatever it leaves behind ([`crate::reaper`]), the
/// command itself taking `limits` and entering `c` (its sandbox) before it runs.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // the one way to act in the child between fork and exec
pub(crate) fn supervise(
    cmd: &mut tokio::process::Command,
    mut c: Option<crate::sandbox::Confinement>,
    limits: Rlimits,
) {
    // SAFETY: `supervise`, `apply` and `enter` only make system calls on stack values (no
    // allocation, no locks), which is what may run in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            crate::reaper::supervise(|| {
                limits.apply()?;
                c.as_mut().map_or(Ok(()), |c| c.enter())
            })
        });
    }
}

/// Have `cmd`'s process take `limits` and enter `c` before it runs the command (no supervisor
/// off Linux).
#[cfg(all(unix, not(target_os = "linux")))]
#[allow(unsafe_code)] // the one way to act in the child between fork and exec
pub(crate) fn supervise(
    cmd: &mut tokio::process::Command,
    mut c: Option<crate::sandbox::Confinement>,
    limits: Rlimits,
) {
    // SAFETY: `apply` and `enter` only make system calls, which is what may run after fork.
    unsafe {
        cmd.pre_exec(move || {
            limits.apply()?;
            c.as_mut().map_or(Ok(()), |c| c.enter())
        });
    }
}

/// Keeps the first and last `cap / 2` bytes of a stream and counts what it drops.
#[derive(Default)]
struct Capped {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    dropped: usize,
}

impl Capped {
    fn push(&mut self, bytes: &[u8], cap: usize) {
        let half = cap / 2;
        for b in bytes {
            if self.head.len() < half {
                self.head.push(*b);
            } else {
                self.tail.push_back(*b);
                if self.tail.len() > half {
                    self.tail.pop_front();
                    self.dropped += 1;
                }
            }
        }
    }

    fn text(&self) -> String {
        let head = String::from_utf8_lossy(&self.head);
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let tail = String::from_utf8_lossy(&tail);
        if self.dropped > 0 {
            format!("{head}\n[... {} bytes omitted ...]\n{tail}", self.dropped)
        } else {
            format!("{head}{tail}")
        }
    }
}

async fn drain(mut r: impl AsyncRead + Unpin, cap: usize) -> Capped {
    let mut out = Capped::default();
    let mut buf = [0u8; 8192];
    while let Ok(n) = r.read(&mut buf).await {
        if n == 0 {
            break;
        }
        out.push(&buf[..n], cap);
    }
    out
}

/// How a child run by [`finish`] ended, and what it printed (capped).
pub(crate) struct Finished {
    /// Its exit status; `Err` when it ran past its time limit (it and its children were killed).
    pub(crate) status:
        Result<std::io::Result<std::process::ExitStatus>, tokio::time::error::Elapsed>,
    /// Its standard output.
    pub(crate) stdout: String,
    /// Its standard error.
    pub(crate) stderr: String,
}

impl Finished {
    /// Its output as a result shows it: `--- stdout ---` and `--- stderr ---` sections, each
    /// only when the stream said something.
    pub(crate) fn sections(&self) -> String {
        let mut text = String::new();
        for (name, said) in [("stdout", &self.stdout), ("stderr", &self.stderr)] {
            if !said.is_empty() {
                text.push_str(&format!("--- {name} ---\n{said}\n"));
            }
        }
        text
    }

    /// Whether it ran to the end and exited 0.
    pub(crate) fn succeeded(&self) -> bool {
        matches!(&self.status, Ok(Ok(s)) if s.success())
    }
}

/// Wait for `child` (spawned in its own process group, with piped output) at most `timeout`,
/// reading `cap` bytes of each stream; past the limit it is killed with everything it started.
pub(crate) async fn finish(
    mut child: tokio::process::Child,
    timeout: Duration,
    cap: usize,
) -> Finished {
    let pid = child.id();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let out = tokio::spawn(async move {
        if let Some(s) = stdout {
            drain(s, cap).await
        } else {
            Capped::default()
        }
    });
    let err = tokio::spawn(async move {
        if let Some(s) = stderr {
            drain(s, cap).await
        } else {
            Capped::default()
        }
    });
    let status = tokio::time::timeout(timeout, child.wait()).await;
    let timed_out = status.is_err();
    if timed_out && let Some(pid) = pid {
        // The supervisor kills the command and everything it started, then exits; the
        // whole group is killed only if it does not within the grace period.
        let _ = tokio::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .await;
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = tokio::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .status()
                .await;
            let _ = child.kill().await;
        }
    }
    // A process that escaped the group could keep the pipes open: do not wait forever.
    let grace = Duration::from_secs(2);
    let out = tokio::time::timeout(grace, out)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let err = tokio::time::timeout(grace, err)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Finished {
        status,
        stdout: out.text(),
        stderr: err.text(),
    }
}

#[cfg(test)]
mod tests {
    /// A directory a killed process with the same pid left behind is passed over.
    #[test]
    fn a_left_behind_directory_of_the_same_name_is_passed_over() {
        let first = super::PrivateTmp::new().unwrap();
        let next_name =
            |n: u64| std::env::temp_dir().join(format!("rein-shell-{}-{n}", std::process::id()));
        let taken: u64 = first
            .0
            .file_name()
            .and_then(|f| f.to_str())
            .and_then(|f| f.rsplit('-').next())
            .and_then(|n| n.parse().ok())
            .unwrap();
        // What the next two calls would be named, left behind by "another process".
        for n in [taken + 1, taken + 2] {
            let _ = std::fs::create_dir(next_name(n));
        }
        let second = super::PrivateTmp::new().unwrap();
        assert!(second.0.exists());
        assert_ne!(second.0, next_name(taken + 1));
        for n in [taken + 1, taken + 2] {
            let _ = std::fs::remove_dir(next_name(n));
        }
    }
}
