//! The terminal prompt on a real terminal (`script` gives `rein` a pseudo-terminal): yes, no
//! with a reason, the agent's questions asked until the answer fits; it says why each call
//! asks; "always for this operation" is a grant kept in the database, so the next
//! call of the tool runs without a prompt; a call the guard flags says it is asked every time
//! and offers no "always"; `rein grant list|revoke` shows and ends the grant.

use super::*;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A `rein` process on a pseudo-terminal: what it wrote so far, and its keyboard.
struct Terminal {
    child: tokio::process::Child,
    seen: Arc<Mutex<String>>,
    keys: tokio::process::ChildStdin,
}

impl Terminal {
    /// Wait until the terminal shows `needle` after what was already consumed (20 s at most);
    /// what it showed up to and including it.
    async fn expect(&mut self, needle: &str) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            {
                let mut seen = self.seen.lock().unwrap();
                if let Some(at) = seen.find(needle) {
                    let upto: String = seen.drain(..at + needle.len()).collect();
                    return upto;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "`{needle}` did not appear within 20 s; the terminal shows:\n{}",
                self.seen.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn type_line(&mut self, line: &str) {
        self.keys
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        self.keys.flush().await.unwrap();
    }
}

fn on_terminal(e: &Env, args: &[&str]) -> Terminal {
    let rein = std::iter::once(env!("CARGO_BIN_EXE_rein").to_owned())
        .chain(e.target(args))
        .chain(
            args.iter()
                .map(|a| format!("'{}'", a.replace('\'', "'\\''"))),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let mut script = e.cmd(&[]);
    // `e.cmd` prepared `rein`; the same environment runs `script`, which runs it on a pty.
    let std = script.as_std_mut();
    let envs: Vec<(std::ffi::OsString, std::ffi::OsString)> = std
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let mut c = Command::new("script");
    c.args(["-qfec", &rein, "/dev/null"])
        .env_clear()
        .envs(envs)
        .env("TERM", "dumb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = c.spawn().expect("script (util-linux) runs");
    let mut out = child.stdout.take().unwrap();
    let keys = child.stdin.take().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = out.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]).replace('\r', ""));
        }
    });
    Terminal { child, seen, keys }
}

#[tokio::test]
async fn on_a_terminal_rein_run_asks_inline_and_takes_yes_and_no_with_a_reason() {
    if which("script").is_none() {
        rein_testkit::skip(
            "the terminal approval prompt",
            "util-linux `script` is not installed",
        );
        return;
    }
    let e = env(vec![
        calc("c1", "2+2"),
        calc("c2", "3+3"),
        Canned::openai_text("4, and 3+3 by hand."),
    ])
    .await;
    let mut t = on_terminal(&e, &["run", "--approval", "allow-list", "Add twice."]);
    let first = t.expect("[a]gent: ").await;
    assert!(first.contains("approve calculator/evaluate({"), "{first}");
    t.type_line("y").await;
    t.expect("[a]gent: ").await;
    t.type_line("n").await;
    t.expect("reason (optional): ").await;
    t.type_line("do it by hand").await;
    t.expect("4, and 3+3 by hand.").await;
    let status = tokio::time::timeout(Duration::from_secs(60), t.child.wait())
        .await
        .expect("rein ends after the answer")
        .unwrap();
    assert!(status.success());
    let requests = e.server.requests();
    assert_eq!(requests.len(), 3);
    let results: Vec<String> = requests[2].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| rein_model::testing::data_text(m["content"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(results[0], "4");
    assert!(results[1].contains("do it by hand"), "{results:?}");
}

#[tokio::test]
async fn on_a_terminal_rein_run_asks_the_agents_question_until_the_answer_fits() {
    if which("script").is_none() {
        rein_testkit::skip(
            "the terminal question prompt",
            "util-linux `script` is not installed",
        );
        return;
    }
    let e = env(vec![
        ask_deploy("q1"),
        Canned::openai_text("Holding the release."),
    ])
    .await;
    // Auto-run runs calls unasked, but a question still waits for the person.
    let mut t = on_terminal(
        &e,
        &["run", "--approval", "auto-run", "Ship it if I agree."],
    );
    let asked = t.expect("choose 1-2 or type a key").await;
    assert!(asked.contains("? Deploy to production now?"), "{asked}");
    assert!(asked.contains("2) no — Wait"), "{asked}");
    t.type_line("later").await;
    t.expect("`later` is not one of the options: yes, no").await;
    t.expect("choose 1-2 or type a key").await;
    t.type_line("2").await;
    t.expect("Holding the release.").await;
    let status = tokio::time::timeout(Duration::from_secs(60), t.child.wait())
        .await
        .expect("rein ends after the answer")
        .unwrap();
    assert!(status.success());
    let requests = e.server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].tool_result("q1"), "The user chose `no` (Wait).");
}

#[tokio::test]
async fn the_terminal_prompt_says_why_grants_for_the_operation_and_never_for_a_flagged_call() {
    if which("script").is_none() {
        rein_testkit::skip(
            "the terminal prompt on a pty",
            "no `script` (util-linux) to give rein a terminal",
        );
        return;
    }
    let e = env(vec![
        ledger("l1", "one"),
        ledger("l2", "two"),
        Canned::openai_tools(&[(
            "l3",
            "ledger__append",
            &serde_json::json!({"entry": "three", "command": "rm -rf ~"}).to_string(),
        )]),
        Canned::openai_text("Two appended, one refused."),
    ])
    .await;
    let mut t = on_terminal(
        &e,
        &[
            "run",
            "--approval",
            "allow-list",
            "--allow",
            "calculator",
            "append",
        ],
    );
    let first = t.expect("[a]gent: ").await;
    assert!(first.contains("approve ledger/append("), "{first}");
    assert!(
        first.contains(
            "why: ledger/append is not on the allow-list [approval_mode:allow_list] (mode)"
        ),
        "{first}"
    );
    t.type_line("o").await;
    let granted = t.expect("undoes it)").await;
    assert!(
        granted.contains("granted ledger/append for this operation (grant_"),
        "{granted}"
    );
    // l2 runs under the grant; l3 asks, every time, with no "always".
    let flagged = t.expect("[y]es / [n]o: ").await;
    assert!(
        flagged.contains("security_blacklist:rm_home_dir"),
        "{flagged}"
    );
    assert!(flagged.contains("asked every time"), "{flagged}");
    assert!(!flagged.contains("[o]peration"), "{flagged}");
    t.type_line("n").await;
    t.expect("reason (optional): ").await;
    t.type_line("").await;
    t.expect("Two appended, one refused.").await;
    let status = tokio::time::timeout(Duration::from_secs(20), t.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        std::fs::read_to_string(e.ledger())
            .unwrap()
            .lines()
            .collect::<Vec<_>>(),
        ["one", "two"]
    );
    // The grant is in the database, listed and revoked by the CLI.
    let (code, out, err) = e.rein(&["grant", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ledger/append for operation"), "{out}");
    let id = out.split_whitespace().next().unwrap().to_owned();
    let (code, _, err) = e.rein(&["grant", "revoke", &id]).await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("asks again"), "{err}");
    let (_, out, err) = e.rein(&["grant", "list"]).await;
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("no grants"), "{err}");
    let (code, _, err) = e.rein(&["grant", "revoke", "grant_x"]).await;
    assert_ne!(code, 0);
    assert!(err.contains("not a grant id"), "{err}");
}
