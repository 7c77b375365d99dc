//! The shell's second wall (Linux): each command runs confined by Landlock, reading anywhere
//! and writing only where its operation's [`Sandbox`] allows (the working directory and a
//! private temporary directory in `workspace-write`, only the temporary directory in
//! `read-only`), with no new privileges, and without IPv4 or IPv6 sockets unless the sandbox
//! allows the network (a seccomp filter refuses `socket` for those families, and `io_uring`,
//! which could open one behind the filter's back). The command guard runs first; this is what
//! still holds when it misses something. Where Landlock is not available, a mode other than
//! `off` is refused: nothing runs unconfined unless the operator said so.
//!
//! The rules are prepared in the parent ([`prepare`]); the child only enters them between
//! `fork` and `exec` ([`Confinement::enter`]), which makes system calls and allocates nothing.

use rein_core::spec::{Sandbox, SandboxMode};
use std::path::Path;
use std::sync::OnceLock;

/// The Landlock ABI that scopes abstract Unix sockets and signals to the sandbox (Linux 6.12).
pub const SCOPING_ABI: i32 = 6;

/// What confines commands on this machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mechanism {
    /// Landlock with this ABI version.
    Landlock {
        /// The kernel's Landlock ABI.
        abi: i32,
    },
    /// Nothing: why.
    Unavailable(String),
}

impl Mechanism {
    /// The mechanism of this machine (probed once).
    pub fn detect() -> &'static Mechanism {
        static DETECTED: OnceLock<Mechanism> = OnceLock::new();
        DETECTED.get_or_init(probe)
    }

    /// One line for start-up messages: what confines commands in `default` mode, and what
    /// happens where nothing can.
    pub fn describe(&self, default: Sandbox) -> String {
        let network = if default.network {
            "network allowed"
        } else {
            "no network"
        };
        match (self, default.mode) {
            (_, SandboxMode::Off) => {
                "shell sandbox: off (commands run with this process's rights)".into()
            }
            (Mechanism::Landlock { abi }, mode) => format!(
                "shell sandbox: Landlock (ABI {abi}) and seccomp, {} by default, {network}, {}; processes a command starts die with it",
                mode.as_str(),
                if *abi >= SCOPING_ABI {
                    "abstract Unix sockets and signals scoped to the command"
                } else {
                    "abstract Unix sockets and signals NOT scoped (Landlock ABI 6 needed: a command can reach abstract sockets and signal this user's processes)"
                }
            ),
            (Mechanism::Unavailable(why), mode) => format!(
                "shell sandbox: unavailable ({why}); shell commands in {} mode are refused (`--sandbox off` runs them unconfined)",
                mode.as_str()
            ),
        }
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // one system call with no memory behind it (see below)
fn probe() -> Mechanism {
    // landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) answers the ABI.
    // SAFETY: a null attribute with size 0 and the version flag reads nothing from memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32,
        )
    };
    if abi >= 1 {
        Mechanism::Landlock {
            abi: i32::try_from(abi).unwrap_or(i32::MAX),
        }
    } else {
        let e = std::io::Error::last_os_error();
        Mechanism::Unavailable(match e.raw_os_error() {
            Some(libc::ENOSYS) => "this kernel has no Landlock".into(),
            Some(libc::EOPNOTSUPP) => "Landlock is disabled on this kernel".into(),
            _ => format!("Landlock cannot be used: {e}"),
        })
    }
}

#[cfg(not(target_os = "linux"))]
fn probe() -> Mechanism {
    Mechanism::Unavailable("the sandbox needs Linux (Landlock)".into())
}

/// Why a command cannot be confined as asked; it is not run.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// No mechanism on this machine.
    #[error(
        "the shell's sandbox ({mode}) is not available here: {why}; nothing was run (an operator can allow unconfined commands with `--sandbox off`)"
    )]
    Unavailable {
        /// The mode asked for.
        mode: &'static str,
        /// Why there is none.
        why: String,
    },
    /// The rules could not be built.
    #[error("the shell's sandbox could not be prepared: {0}; nothing was run")]
    Prepare(String),
}

/// Devices a confined command may still read and write (writing elsewhere in `/dev` could
/// reach disks).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Rules prepared in the parent for one command.
pub struct Confinement {
    #[cfg(target_os = "linux")]
    ruleset: Option<landlock::RulesetCreated>,
    #[cfg(target_os = "linux")]
    seccomp: Option<seccompiler::BpfProgram>,
}

/// Where a confined command may read.
#[derive(Clone, Copy, Debug)]
pub enum Reads<'a> {
    /// Anywhere (the shell: a command reads the project and the system as its user can).
    Everywhere,
    /// Only beneath these paths (those that exist), besides what it may write (the
    /// interpreter: the system's programs and libraries, never a home directory or another
    /// conversation's workspace).
    Only(&'a [&'a Path]),
}

/// The confinement of a command in `workdir` with the private temporary directory `tmp`;
/// `None` in `off` mode.
pub fn prepare(
    sandbox: Sandbox,
    workdir: &Path,
    tmp: &Path,
) -> Result<Option<Confinement>, SandboxError> {
    prepare_reading(sandbox, workdir, tmp, Reads::Everywhere)
}

/// [`prepare`], reading only where `reads` says.
pub fn prepare_reading(
    sandbox: Sandbox,
    workdir: &Path,
    tmp: &Path,
    reads: Reads<'_>,
) -> Result<Option<Confinement>, SandboxError> {
    if sandbox.mode == SandboxMode::Off {
        return Ok(None);
    }
    match Mechanism::detect() {
        Mechanism::Unavailable(why) => Err(SandboxError::Unavailable {
            mode: sandbox.mode.as_str(),
            why: why.clone(),
        }),
        #[cfg(target_os = "linux")]
        Mechanism::Landlock { abi } => linux::prepare(*abi, sandbox, workdir, tmp, reads).map(Some),
        #[cfg(not(target_os = "linux"))]
        Mechanism::Landlock { .. } => {
            let _ = (workdir, tmp, reads);
            Err(SandboxError::Prepare(
                "Landlock exists only on Linux".into(),
            ))
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::{Confinement, DEVICES, Reads, SandboxError};
    use landlock::{
        ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
        path_beneath_rules,
    };
    use rein_core::spec::{Sandbox, SandboxMode};
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    use std::collections::BTreeMap;
    use std::path::Path;

    pub(super) fn prepare(
        abi: i32,
        sandbox: Sandbox,
        workdir: &Path,
        tmp: &Path,
        reads: Reads<'_>,
    ) -> Result<Confinement, SandboxError> {
        let fail = |e: &dyn std::fmt::Display| SandboxError::Prepare(e.to_string());
        let scoping = abi >= super::SCOPING_ABI;
        let abi = ABI::from(abi);
        let mut writable = vec![tmp];
        if sandbox.mode == SandboxMode::WorkspaceWrite {
            writable.push(workdir);
        }
        let mut ruleset = Ruleset::default()
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| fail(&e))?;
        if scoping {
            // No abstract Unix socket made outside, and no signal to a process outside.
            ruleset = ruleset.scope(Scope::from_all(abi)).map_err(|e| fail(&e))?;
        }
        let ruleset = ruleset
            .create()
            .map_err(|e| fail(&e))?
            .add_rules(path_beneath_rules(
                match reads {
                    Reads::Everywhere => vec![Path::new("/")],
                    Reads::Only(paths) => paths.iter().copied().filter(|p| p.exists()).collect(),
                },
                AccessFs::from_read(abi),
            ))
            .map_err(|e| fail(&e))?
            .add_rules(path_beneath_rules(
                DEVICES,
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
            .map_err(|e| fail(&e))?
            .add_rules(path_beneath_rules(writable, AccessFs::from_all(abi)))
            .map_err(|e| fail(&e))?;
        let seccomp = if sandbox.network {
            None
        } else {
            Some(no_network().map_err(|e| fail(&e))?)
        };
        Ok(Confinement {
            ruleset: Some(ruleset),
            seccomp,
        })
    }

    /// A filter refusing (`EACCES`) IPv4 and IPv6 sockets and `io_uring`; everything else
    /// (Unix sockets too) is allowed.
    fn no_network() -> Result<BpfProgram, seccompiler::BackendError> {
        let family = |f: i32| -> Result<SeccompRule, seccompiler::BackendError> {
            SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                u64::from(f.unsigned_abs()),
            )?])
        };
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        rules.insert(
            libc::SYS_socket,
            vec![family(libc::AF_INET)?, family(libc::AF_INET6)?],
        );
        // An empty rule list matches the call whatever its arguments.
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
        let arch: seccompiler::TargetArch = std::env::consts::ARCH.try_into()?;
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES.unsigned_abs()),
            arch,
        )?;
        filter.try_into()
    }

    impl Confinement {
        /// Enter the confinement: called in the child between `fork` and `exec`, so it only
        /// makes system calls (errors carry the OS error code, never an allocation).
        pub fn enter(&mut self) -> std::io::Result<()> {
            let denied = || std::io::Error::from_raw_os_error(libc::EPERM);
            if let Some(ruleset) = self.ruleset.take() {
                match ruleset.restrict_self() {
                    Ok(s) if s.ruleset != RulesetStatus::NotEnforced && s.no_new_privs => {}
                    _ => return Err(denied()),
                }
            }
            if let Some(filter) = &self.seccomp {
                seccompiler::apply_filter(filter).map_err(|_| denied())?;
            }
            Ok(())
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Confinement {
    /// Nothing to enter off Linux ([`prepare`] refuses every mode but `off` there).
    pub fn enter(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
