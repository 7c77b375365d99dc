//! The default security blacklist: 37 rules (15 `always`, 22 `required`) over the `command`
//! and `path` arguments. The shell rules are predicates over the command's syntax tree (see
//! [`super::shell`]); the text rules are regexes matched against the raw command and against
//! every simple command as it would run (quotes removed, known variables substituted), so
//! `cat /etc/pass''wd` reads as `cat /etc/passwd`. The SSH-key rule's "not followed by `.pub`"
//! is spelled without lookahead so the `regex` crate (linear time, no backtracking) suffices.

use super::matcher::ArgumentMatcher;
use super::policy::{InterventionPolicy, SecurityRule};
use super::shell::ShellPredicate;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// Programs that print, copy or open a file's contents.
const READERS: &str = r"(?:cat|less|more|head|tail|vi|vim|nvim|nano|emacs|code|bat|view|grep|rg|strings|xxd|od|base64|cp|scp|rsync|curl|tac|nl|awk|sed)";

enum M {
    Shell(ShellPredicate),
    /// A regex over a `path` value.
    Re(&'static str),
    /// A regex over a command line and the simple commands it runs.
    Cmd(&'static str),
    /// A reader program followed, anywhere later, by this pattern (in a command).
    Read(&'static str),
}

const RULES: &[(&str, &str, InterventionPolicy, M)] = {
    use InterventionPolicy::{Always as A, Required as R};
    &[
        (
            "rm_home_dir",
            "command",
            A,
            M::Shell(ShellPredicate::RmRecursiveHomeTarget),
        ),
        (
            "rm_root_dir",
            "command",
            A,
            M::Shell(ShellPredicate::RmRecursiveRootTarget),
        ),
        (
            "rm_force_recursive_dot",
            "command",
            A,
            M::Shell(ShellPredicate::RmForceDotTarget),
        ),
        (
            "etc_passwd",
            "command",
            A,
            M::Cmd(r"/etc/(?:passwd|shadow|gshadow)\b"),
        ),
        ("sudoers", "command", A, M::Cmd(r"/etc/sudoers")),
        (
            "fork_bomb",
            "command",
            A,
            M::Shell(ShellPredicate::ForkBomb),
        ),
        (
            "disk_write",
            "command",
            A,
            M::Shell(ShellPredicate::DiskWrite),
        ),
        (
            "disable_firewall",
            "command",
            R,
            M::Cmd(
                r"\bufw\s+disable\b|\biptables\s+(?:-F|--flush)\b|\bsystemctl\s+(?:stop|disable)\s+(?:firewalld|ufw|nftables)\b",
            ),
        ),
        ("ssh_config", "command", R, M::Cmd(r"/etc/ssh/sshd_config")),
        (
            "remove_system_packages",
            "command",
            R,
            M::Cmd(
                r"\b(?:apt|apt-get|yum|dnf|pacman|zypper)\b.*\b(?:remove|purge|erase|autoremove)\b.*\b(?:systemd|linux-image\S*|kernel\S*|glibc|libc6|bash|sudo|coreutils)\b|\bpacman\s+-R\w*\s+.*\b(?:systemd|linux|glibc|bash|sudo)\b",
            ),
        ),
        (
            "kernel_params",
            "command",
            A,
            M::Cmd(r"(?:\becho\b.*>\s*|\btee\s+(?:-a\s+)?)/proc/sys/"),
        ),
        (
            "direct_memory_access",
            "command",
            A,
            M::Cmd(r"/dev/(?:mem|kmem|port)\b"),
        ),
        (
            "recursive_permission_change",
            "command",
            A,
            M::Shell(ShellPredicate::RecursivePermissionChange),
        ),
        (
            "move_protected_path",
            "command",
            A,
            M::Shell(ShellPredicate::MoveProtectedPath),
        ),
        (
            "suid_shells",
            "command",
            A,
            M::Cmd(
                r"\bchmod\b.*(?:\b[0-7]?[4-7][0-7]{3}\b|[ugo]*\+s\b).*\b(?:sh|bash|zsh|dash|ksh|python\d*(?:\.\d+)?|perl|ruby|node)\b",
            ),
        ),
        (
            "download_execute",
            "command",
            A,
            M::Shell(ShellPredicate::DownloadExecute),
        ),
        (
            "privilege_escalation",
            "command",
            A,
            M::Shell(ShellPredicate::PrivilegeEscalation),
        ),
        (
            "shell_unanalysable",
            "command",
            A,
            M::Shell(ShellPredicate::Unanalysable),
        ),
        (
            "env_files",
            "command",
            R,
            M::Read(r#"(?:^|[\s/'"=])\.env(?:\.[\w.-]+)?(?:$|[\s'";|&>])"#),
        ),
        (
            "env_files",
            "path",
            R,
            M::Re(r"(?:^|/)\.env(?:\.[\w.-]+)?$"),
        ),
        (
            "ssh_private_keys",
            "command",
            R,
            M::Read(
                r"\bid_(?:rsa|ed25519|ecdsa|dsa)(?:$|[^.\w]|\.(?:$|[^p]|p(?:$|[^u])|pu(?:$|[^b])))",
            ),
        ),
        (
            "ssh_private_keys",
            "path",
            R,
            M::Re(r"(?:^|/)\.ssh/id_(?:rsa|ed25519|ecdsa|dsa)$"),
        ),
        (
            "aws_credentials",
            "command",
            R,
            M::Read(r"\.aws/credentials"),
        ),
        (
            "aws_credentials",
            "path",
            R,
            M::Re(r"(?:^|/)\.aws/credentials"),
        ),
        (
            "docker_config",
            "command",
            R,
            M::Read(r"\.docker/config\.json"),
        ),
        (
            "docker_config",
            "path",
            R,
            M::Re(r"(?:^|/)\.docker/config\.json$"),
        ),
        ("kube_config", "command", R, M::Read(r"\.kube/config\b")),
        ("kube_config", "path", R, M::Re(r"(?:^|/)\.kube/config$")),
        (
            "git_credentials",
            "command",
            R,
            M::Read(r"\.git-credentials\b"),
        ),
        (
            "git_credentials",
            "path",
            R,
            M::Re(r"(?:^|/)\.git-credentials$"),
        ),
        ("npmrc", "command", R, M::Read(r"\.npmrc\b")),
        ("npmrc", "path", R, M::Re(r"(?:^|/)\.npmrc$")),
        (
            "history_files",
            "command",
            R,
            M::Read(r"\.(?:bash_history|zsh_history|history)\b"),
        ),
        (
            "history_files",
            "path",
            R,
            M::Re(r"(?:^|/)\.(?:bash_history|zsh_history|history)$"),
        ),
        (
            "browser_credentials",
            "command",
            R,
            M::Read(r"(?:Cookies|Login Data|Web Data)\b"),
        ),
        (
            "gcp_credentials",
            "command",
            R,
            M::Read(r"\.config/gcloud/\S*\.json"),
        ),
        (
            "gcp_credentials",
            "path",
            R,
            M::Re(r"(?:^|/)\.config/gcloud/.*\.json$"),
        ),
    ]
};

fn build() -> Vec<SecurityRule> {
    let mut out = Vec::with_capacity(RULES.len());
    for (id, arg, policy, m) in RULES {
        let matcher = match m {
            M::Shell(p) => Ok(ArgumentMatcher::Shell(*p)),
            M::Re(re) => ArgumentMatcher::regex(re),
            M::Cmd(re) => ArgumentMatcher::shell_regex(re),
            M::Read(re) => ArgumentMatcher::shell_regex(&format!(r"\b{READERS}\b.*{re}")),
        };
        // The table is static and covered by tests; a bad pattern would be a build-time bug,
        // and skipping the rule (with a test failing on the count) beats panicking at runtime.
        if let Ok(matcher) = matcher {
            out.push(SecurityRule {
                id: (*id).to_owned(),
                matchers: BTreeMap::from([((*arg).to_owned(), matcher)]),
                policy: *policy,
            });
        }
    }
    out
}

static DEFAULT: LazyLock<Vec<SecurityRule>> = LazyLock::new(build);

/// The default security blacklist (compiled once).
pub fn default_security_blacklist() -> &'static [SecurityRule] {
    &DEFAULT
}

static DEFAULT_ARGS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut names: Vec<&'static str> = RULES.iter().map(|(_, arg, _, _)| *arg).collect();
    names.sort_unstable();
    names.dedup();
    names
});

/// Argument names the default blacklist looks at: a call without any of them cannot match.
pub(crate) fn default_blacklist_args() -> &'static [&'static str] {
    &DEFAULT_ARGS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_37_rules_compile_with_their_policy_split() {
        let rules = default_security_blacklist();
        assert_eq!(rules.len(), 37);
        let always = rules
            .iter()
            .filter(|r| r.policy == InterventionPolicy::Always)
            .count();
        assert_eq!((always, rules.len() - always), (15, 22));
    }
}
