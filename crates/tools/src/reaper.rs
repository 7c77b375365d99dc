//! Everything a shell command starts dies with it (Linux). Between `fork` and `exec` the
//! spawned process becomes a small supervisor: it marks itself the child subreaper (so every
//! orphaned descendant — a `setsid … &` loop, a double-forked daemon — becomes its child
//! instead of init's), forks the command, and waits. When the command ends, or the supervisor
//! is told to stop (`SIGTERM`: the call timed out or was cancelled; or `rein` itself died,
//! through the parent-death signal), it kills every descendant left and reaps them before it
//! exits with the command's status. So by the time the call returns nothing it started runs.
//! (It watches for rein's death by its parent changing, not by a parent-death signal: that
//! signal follows the *thread* that forked, and a runtime's threads come and go.)
//!
//! What escapes: a process that asks something outside the tree to start it (a systemd user
//! unit over D-Bus, `at`), and, where Landlock cannot scope signals (ABI < 6), a command that
//! `SIGKILL`s its supervisor first. The code in the child allocates nothing and takes no lock:
//! only system calls on stack buffers, as between `fork` and `exec` must be.

#![allow(unsafe_code)] // system calls between fork and exec; each is commented where it is made

/// What the supervisor does when told to stop.
const STOP: libc::c_int = libc::SIGTERM;

/// Exit status when the command could not be waited for.
const FAILED: libc::c_int = 125;

/// Become the supervisor of the command: returns `Ok` in the command's process (which then
/// `exec`s, after `enter` confined it), and never returns in the supervisor.
///
/// # Safety
/// Call only in a child between `fork` and `exec` (a `pre_exec` hook): it forks, and the
/// supervisor exits with `_exit`.
pub(crate) unsafe fn supervise(enter: impl FnOnce() -> std::io::Result<()>) -> std::io::Result<()> {
    // SAFETY (this block): plain system calls on stack values.
    unsafe {
        let parent = libc::getppid();
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        let mut wanted: libc::sigset_t = std::mem::zeroed();
        let mut before: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut wanted);
        libc::sigaddset(&mut wanted, libc::SIGCHLD);
        libc::sigaddset(&mut wanted, STOP);
        libc::sigprocmask(libc::SIG_BLOCK, &wanted, &mut before);
        let command = libc::fork();
        if command < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if command == 0 {
            // The command: its own signal mask back; it dies if its supervisor is killed.
            libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            return enter();
        }
        // The supervisor holds none of the command's files: the pipes reach end of file when
        // the command's side closes, and the parent learns from the command's `exec`, not ours.
        close_all();
        let status = wait_for(command, &wanted, parent);
        kill_descendants();
        exit_like(status)
    }
}

/// The last system call's error number (reading it allocates nothing).
fn errno() -> libc::c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Close every file descriptor of this process.
unsafe fn close_all() {
    // SAFETY: closing descriptors this process holds; close_range exists since Linux 5.9,
    // else each possible descriptor is closed in turn.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            let mut limit: libc::rlimit = std::mem::zeroed();
            let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur.min(65_536) as libc::c_int
            } else {
                1024
            };
            for fd in 0..max {
                libc::close(fd);
            }
        }
    }
}

/// Wait until `command` exits (its wait status), killing it first when the supervisor is told
/// to stop or rein (`parent`) is gone; other children are reaped on the way.
unsafe fn wait_for(
    command: libc::pid_t,
    signals: &libc::sigset_t,
    parent: libc::pid_t,
) -> libc::c_int {
    // SAFETY: waiting for signals and children with stack values.
    unsafe {
        let tick = libc::timespec {
            tv_sec: 0,
            tv_nsec: 500_000_000,
        };
        loop {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let sig = libc::sigtimedwait(signals, &mut info, &tick);
            if sig == STOP || libc::getppid() != parent {
                libc::kill(command, libc::SIGKILL);
            }
            loop {
                let mut status = 0;
                let pid = libc::waitpid(-1, &mut status, libc::WNOHANG);
                if pid == command {
                    return status;
                }
                if pid <= 0 {
                    if pid < 0 && errno() == libc::ECHILD {
                        return FAILED << 8;
                    }
                    break;
                }
            }
        }
    }
}

/// Kill and reap every descendant: orphans are this subreaper's children, so kill its
/// children until it has none (their own children come to it as they die).
unsafe fn kill_descendants() {
    // SAFETY: signals and waits on this process's own children; /proc read into stack buffers.
    unsafe {
        let me = libc::getpid();
        loop {
            let found = for_each_child(me, |pid| {
                libc::kill(pid, libc::SIGKILL);
            });
            let mut status = 0;
            let reaped = libc::waitpid(-1, &mut status, if found { 0 } else { libc::WNOHANG });
            if reaped < 0 && errno() == libc::ECHILD {
                return;
            }
            if reaped == 0 && !found {
                // Children exist that /proc did not list yet: look again shortly.
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 10_000_000,
                };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
    }
}

/// Call `f` with each child of `parent`, found by reading `/proc/*/stat`; whether any was.
unsafe fn for_each_child(parent: libc::pid_t, mut f: impl FnMut(libc::pid_t)) -> bool {
    // SAFETY: open/getdents64/read/close on stack buffers.
    unsafe {
        let proc_dir = libc::open(
            c"/proc".as_ptr(),
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        );
        if proc_dir < 0 {
            return false;
        }
        let mut found = false;
        let mut entries = [0u8; 4096];
        loop {
            let n = libc::syscall(
                libc::SYS_getdents64,
                proc_dir,
                entries.as_mut_ptr(),
                entries.len(),
            );
            if n <= 0 {
                break;
            }
            let n = n as usize;
            let mut at = 0usize;
            while at + 19 < n {
                // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), name.
                let reclen = u16::from_ne_bytes([entries[at + 16], entries[at + 17]]) as usize;
                if reclen == 0 || at + reclen > n {
                    break;
                }
                let name = &entries[at + 19..at + reclen];
                if let Some(pid) = number(name)
                    && parent_of(pid) == Some(parent)
                {
                    found = true;
                    f(pid);
                }
                at += reclen;
            }
        }
        libc::close(proc_dir);
        found
    }
}

/// The decimal number a NUL-terminated name spells, if it is one.
fn number(name: &[u8]) -> Option<libc::pid_t> {
    let mut n: libc::pid_t = 0;
    let mut digits = 0;
    for &b in name {
        if b == 0 {
            break;
        }
        if !b.is_ascii_digit() {
            return None;
        }
        n = n
            .checked_mul(10)?
            .checked_add(libc::pid_t::from(b - b'0'))?;
        digits += 1;
    }
    (digits > 0).then_some(n)
}

/// The parent of `pid` as `/proc/PID/stat` says (`None` when it is gone).
unsafe fn parent_of(pid: libc::pid_t) -> Option<libc::pid_t> {
    let mut path = [0u8; 32];
    let prefix = b"/proc/";
    path[..prefix.len()].copy_from_slice(prefix);
    let mut at = prefix.len();
    let mut digits = [0u8; 12];
    let mut len = 0;
    let mut rest = pid;
    loop {
        digits[len] = b'0' + (rest % 10) as u8;
        len += 1;
        rest /= 10;
        if rest == 0 || len == digits.len() {
            break;
        }
    }
    for i in (0..len).rev() {
        path[at] = digits[i];
        at += 1;
    }
    let suffix = b"/stat\0";
    path[at..at + suffix.len()].copy_from_slice(suffix);
    // SAFETY: a NUL-terminated path on the stack, read into a stack buffer.
    let (read, stat) = unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut stat = [0u8; 512];
        let read = libc::read(fd, stat.as_mut_ptr().cast(), stat.len());
        libc::close(fd);
        (read, stat)
    };
    if read <= 0 {
        return None;
    }
    let stat = &stat[..read as usize];
    // "pid (comm) state ppid …": the name may hold spaces and parentheses; the last ')' ends it.
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = stat.get(close + 2..)?.split(|&b| b == b' ');
    fields.next()?;
    number(fields.next()?)
}

/// Leave as the command did: its exit code, or the signal that ended it.
unsafe fn exit_like(status: libc::c_int) -> ! {
    // SAFETY: ending this process.
    unsafe {
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            libc::signal(sig, libc::SIG_DFL);
            let mut only: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut only);
            libc::sigaddset(&mut only, sig);
            libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
            libc::kill(libc::getpid(), sig);
        }
        libc::_exit(if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            FAILED
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_are_read_from_names_up_to_their_end() {
        assert_eq!(super::number(b"1234\0xyz"), Some(1234));
        assert_eq!(super::number(b"self\0"), None);
        assert_eq!(super::number(b"\0"), None);
        assert_eq!(super::number(b"99999999999999\0"), None);
    }

    #[test]
    fn this_process_parent_is_read_from_proc() {
        // SAFETY: reading this process's own stat.
        let parent = unsafe { super::parent_of(libc::getpid()) };
        // SAFETY: a plain system call.
        assert_eq!(parent, Some(unsafe { libc::getppid() }));
    }
}
