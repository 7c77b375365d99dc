//! The default security blacklist, case by case: what must require a human and what must not.

use crate::common;

use rein_core::intervention::{Action, ApprovalMode, blacklist_match, default_security_blacklist};
use rein_core::{InterventionChecker, ToolCall};
use serde_json::json;

/// (argument name, value, expected rule id or None).
const CASES: &[(&str, &str, Option<&str>)] = &[
    // Recursive rm of root, home and dot, through every disguise we know.
    ("command", "rm -rf /", Some("rm_root_dir")),
    ("command", "rm -rf ~", Some("rm_home_dir")),
    ("command", "rm -rf ~/", Some("rm_home_dir")),
    ("command", "sudo  rm -r -f ~/", Some("rm_home_dir")),
    ("command", "bash -c 'rm -rf /'", Some("rm_root_dir")),
    ("command", "timeout 5 rm -fr $HOME", Some("rm_home_dir")),
    ("command", "rm -rf $HOME/", Some("rm_home_dir")),
    ("command", "rm -rf ${HOME}", Some("rm_home_dir")),
    ("command", "rm -rf /home/alice", Some("rm_home_dir")),
    ("command", "rm -rf /Users/bob/", Some("rm_home_dir")),
    ("command", "rm -Rf /*", Some("rm_root_dir")),
    ("command", "rm --recursive --force /", Some("rm_root_dir")),
    ("command", "cd /tmp && rm -rf /", Some("rm_root_dir")),
    ("command", "echo hi; rm -rf ~", Some("rm_home_dir")),
    ("command", "ls\nrm -rf ~", Some("rm_home_dir")),
    ("command", "true || rm -rf /", Some("rm_root_dir")),
    ("command", "sudo -u root rm -rf /", Some("rm_root_dir")),
    ("command", "env FOO=1 rm -rf /", Some("rm_root_dir")),
    ("command", "nohup rm -rf / &", Some("rm_root_dir")),
    ("command", "sh -c \"sudo rm -rf ~\"", Some("rm_home_dir")),
    (
        "command",
        "bash -lc 'timeout 10 rm -rf $HOME'",
        Some("rm_home_dir"),
    ),
    ("command", "eval rm -rf /", Some("rm_root_dir")),
    ("command", "env -S 'rm -rf /'", Some("rm_root_dir")),
    ("command", "rm -rf //", Some("rm_root_dir")),
    ("command", "rm -rf /tmp/..", Some("rm_root_dir")),
    ("command", "rm -rf /./", Some("rm_root_dir")),
    ("command", "rm -rf ${TARGET:-/}", Some("rm_root_dir")),
    ("command", "rm -rf {/,/tmp/x}", Some("rm_root_dir")),
    ("command", "rm -rf /usr", Some("rm_root_dir")),
    ("command", "FOO=bar rm -rf /etc", Some("rm_root_dir")),
    ("command", "sudo rm -rf -- /", Some("rm_root_dir")),
    ("command", "/bin/rm -rf ~alice", Some("rm_home_dir")),
    ("command", "rm -rf .", Some("rm_force_recursive_dot")),
    ("command", "rm -rf ./", Some("rm_force_recursive_dot")),
    ("command", "rm -fr ..", Some("rm_force_recursive_dot")),
    ("command", "rm -rf ~ > /dev/null 2>&1", Some("rm_home_dir")),
    // The regex rules.
    ("command", "cat /etc/passwd", Some("etc_passwd")),
    ("command", "sudo cat /etc/shadow", Some("etc_passwd")),
    (
        "command",
        "echo 'x ALL=(ALL) NOPASSWD:ALL' >> /etc/sudoers",
        Some("sudoers"),
    ),
    ("command", ":(){ :|:& };:", Some("fork_bomb")),
    (
        "command",
        "dd if=/dev/zero of=/dev/sda bs=1M",
        Some("disk_write"),
    ),
    ("command", "mkfs.ext4 /dev/sdb1", Some("disk_write")),
    ("command", "fdisk /dev/nvme0n1", Some("disk_write")),
    ("command", "ufw disable", Some("disable_firewall")),
    ("command", "iptables -F", Some("disable_firewall")),
    (
        "command",
        "systemctl stop firewalld",
        Some("disable_firewall"),
    ),
    ("command", "vim /etc/ssh/sshd_config", Some("ssh_config")),
    (
        "command",
        "apt-get remove -y systemd",
        Some("remove_system_packages"),
    ),
    (
        "command",
        "echo 1 > /proc/sys/net/ipv4/ip_forward",
        Some("kernel_params"),
    ),
    ("command", "cat /dev/mem", Some("direct_memory_access")),
    (
        "command",
        "chown -R nobody /etc",
        Some("recursive_permission_change"),
    ),
    ("command", "chmod u+s /bin/bash", Some("suid_shells")),
    (
        "command",
        "chmod 4755 /usr/bin/python3",
        Some("suid_shells"),
    ),
    ("command", "cat .env", Some("env_files")),
    ("command", "cat ~/.ssh/id_rsa", Some("ssh_private_keys")),
    (
        "command",
        "less /home/me/.aws/credentials",
        Some("aws_credentials"),
    ),
    (
        "command",
        "cat ~/.docker/config.json",
        Some("docker_config"),
    ),
    ("command", "cat ~/.kube/config", Some("kube_config")),
    ("command", "cat ~/.git-credentials", Some("git_credentials")),
    ("command", "cat ~/.npmrc", Some("npmrc")),
    (
        "command",
        "tail -n 50 ~/.bash_history",
        Some("history_files"),
    ),
    (
        "command",
        "cp \"$HOME/Library/Application Support/Google/Chrome/Default/Login Data\" /tmp/x",
        Some("browser_credentials"),
    ),
    (
        "command",
        "cat ~/.config/gcloud/application_default_credentials.json",
        Some("gcp_credentials"),
    ),
    ("path", ".env", Some("env_files")),
    ("path", "/srv/app/.env.production", Some("env_files")),
    ("path", "/home/me/.ssh/id_ed25519", Some("ssh_private_keys")),
    ("path", "/root/.aws/credentials", Some("aws_credentials")),
    ("path", "/home/u/.docker/config.json", Some("docker_config")),
    ("path", "/home/u/.kube/config", Some("kube_config")),
    ("path", "/home/u/.git-credentials", Some("git_credentials")),
    ("path", "/home/u/.npmrc", Some("npmrc")),
    ("path", "/home/u/.zsh_history", Some("history_files")),
    (
        "path",
        "/home/u/.config/gcloud/legacy_credentials/a/adc.json",
        Some("gcp_credentials"),
    ),
    // Ordinary work that must not be stopped.
    ("command", "rm -rf ./build", None),
    ("command", "rm -rf build/ target/", None),
    ("command", "rm -r node_modules", None),
    ("command", "rm -f /tmp/file.txt", None),
    ("command", "rm -rf /tmp/rein-test", None),
    ("command", "rm -rf ~/projects/old", None),
    ("command", "rm -rf \"$BUILD_DIR/cache\"", None),
    ("command", "rm ~/notes.txt", None),
    ("command", "rm -f .", None),
    ("command", "echo \"rm -rf /\"", None),
    ("command", "git rm -r --cached .", None),
    ("command", "python -c \"print('rm -rf /')\"", None),
    ("command", "ls -la /", None),
    ("command", "cat README.md", None),
    ("command", "cat ~/.ssh/id_rsa.pub", None),
    ("command", "cat .envrc", None),
    ("command", "grep -r TODO src/", None),
    ("command", "cargo build --release", None),
    (
        "command",
        "dd if=/dev/zero of=./disk.img bs=1M count=10",
        None,
    ),
    ("command", "mkfs.ext4 ./disk.img", None),
    ("command", "chmod 644 README.md", None),
    ("command", "chown -R me ./build", None),
    ("command", "apt-get install -y curl", None),
    ("command", "echo hello > /tmp/out.txt", None),
    ("command", "cat /proc/sys/net/ipv4/ip_forward", None),
    ("command", "kubectl get pods", None),
    ("command", "find . -name '*.tmp' -delete", None),
    ("command", "npm run build", None),
    ("path", "src/main.rs", None),
    ("path", "/home/u/.ssh/id_rsa.pub", None),
    ("path", "/home/u/.ssh/known_hosts", None),
    ("path", "docs/environment.md", None),
];

#[test]
fn default_blacklist_table() {
    assert!(CASES.len() >= 60, "the table must keep at least 60 cases");
    let rules = default_security_blacklist();
    let mut failures = Vec::new();
    for (arg, value, expected) in CASES {
        let got = blacklist_match(rules, &json!({ *arg: value })).map(|r| r.id.as_str());
        if got != *expected {
            failures.push(format!(
                "{arg}={value:?}: expected {expected:?}, got {got:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn always_rules_bind_auto_run_and_headless_required_rules_do_not() {
    let checker = InterventionChecker::new();
    let mut state = common::state("x");
    let call = |cmd: &str| ToolCall::new("c1", "shell", "run", json!({"command": cmd}).to_string());

    state.intervention.approval_mode = ApprovalMode::AutoRun;
    let d = checker.explain(&call("sudo rm -rf ~/"), &state);
    assert_eq!(d.action, Action::RequireApproval);
    assert_eq!(
        d.matched_rule.as_deref(),
        Some("security_blacklist:rm_home_dir")
    );
    assert!(d.reason.contains("cannot be bypassed"), "{}", d.reason);
    // `required` rules (reading .env) yield to auto-run.
    assert_eq!(checker.check(&call("cat .env"), &state), Action::Execute);

    state.intervention.approval_mode = ApprovalMode::Headless;
    assert_eq!(checker.check(&call("rm -rf /"), &state), Action::Block);
    assert_eq!(checker.check(&call("cat .env"), &state), Action::Execute);

    state.intervention.approval_mode = ApprovalMode::Manual;
    let d = checker.explain(&call("cat .env"), &state);
    assert_eq!(d.action, Action::RequireApproval);
    assert_eq!(
        d.matched_rule.as_deref(),
        Some("security_blacklist:env_files")
    );

    // An explicit empty blacklist disables it; `None` means the default.
    state.security_blacklist = Some(Vec::new());
    state.intervention.approval_mode = ApprovalMode::AutoRun;
    assert_eq!(checker.check(&call("rm -rf /"), &state), Action::Execute);
}
