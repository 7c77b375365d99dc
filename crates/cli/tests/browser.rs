//! The web UI in real headless Chromium (Debian `chromium`, driven by npm `playwright-core`,
//! both installed by `.ci/run`): start an operation, approve its pending call after a reload,
//! see it finish and the inspector's timeline, then create a task and run it from its page. Screenshots are kept under the target
//! directory (`browser-artifacts/`), a `failure.png` too when a step fails. Without Chromium or
//! playwright-core it fails under `CI=true` and otherwise prints a SKIP line naming what is
//! missing.

use rein_core::OperationId;
use rein_model::testing::{Canned, serve};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn prerequisites() -> Result<(PathBuf, PathBuf), String> {
    let chromium = std::env::var_os("REIN_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !chromium.exists() {
        return Err(format!(
            "no Chromium at {} (apt-get install chromium, or set REIN_CHROMIUM)",
            chromium.display()
        ));
    }
    let playwright = workspace().join(".browser/node_modules/playwright-core");
    if !playwright.exists() {
        return Err(format!(
            "no playwright-core at {} (npm install --prefix .browser playwright-core)",
            playwright.display()
        ));
    }
    Ok((chromium, playwright))
}

/// What a web app test runs with: Chromium, playwright-core (axe-core beside it, for the
/// accessibility checks) and a fresh directory; `None` after reporting the skip (a failure
/// under CI=true).
struct Browser {
    chromium: PathBuf,
    playwright: PathBuf,
    dir: PathBuf,
}

fn browser(test: &str, prefix: &str) -> Option<Browser> {
    let found = prerequisites().and_then(|(chromium, playwright)| {
        let axe = playwright.with_file_name("axe-core");
        if axe.join("axe.min.js").exists() {
            Ok((chromium, playwright))
        } else {
            Err(format!(
                "no axe-core at {} (npm install --prefix .browser axe-core)",
                axe.display()
            ))
        }
    });
    match found {
        Ok((chromium, playwright)) => {
            let dir = std::env::temp_dir().join(format!("{prefix}-{}", OperationId::new()));
            std::fs::create_dir_all(&dir).unwrap();
            Some(Browser {
                chromium,
                playwright,
                dir,
            })
        }
        Err(missing) => {
            rein_testkit::skip(test, &missing);
            None
        }
    }
}

/// The sizes every web app flow runs at, each on a fresh server (`REIN_VIEWPORT` for the
/// script): a desktop, and a phone where the sections are in a drawer and the inspector a sheet.
const SIZES: [&str; 2] = ["1280x800", "390x844"];

/// `rein serve --no-auth` on a fresh database in `dir`, its models at `model` (the scripted
/// server), with the test tools; the process (killed when dropped) and its address.
async fn serve_ui(dir: &Path, model: &str) -> (tokio::process::Child, String) {
    serve_ui_with(dir, model, &[]).await
}

/// [`serve_ui`] with more environment variables.
async fn serve_ui_with(
    dir: &Path,
    model: &str,
    envs: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    serve_ui_flags(dir, model, &[], envs).await
}

/// [`serve_ui`] with more flags and environment variables.
async fn serve_ui_flags(
    dir: &Path,
    model: &str,
    flags: &[&str],
    envs: &[(&str, &str)],
) -> (tokio::process::Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_clear()
        .envs(rein_testkit::coverage_env())
        .args(["--db", &dir.join("rein.db").to_string_lossy()])
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--no-auth",
            "--heartbeat-secs",
            "1",
        ])
        .args(flags)
        .env("OPENAI_BASE_URL", format!("{model}/v1"))
        .env("OPENAI_API_KEY", "sk-test")
        .env("REIN_TEST_TOOLS", "1")
        .env("REIN_TEST_LEDGER", dir.join("ledger.txt"))
        .envs(envs.iter().copied());
    listening(cmd, dir).await
}

/// Start `cmd` (a `rein serve` on loopback port 0, its environment cleared by the caller) with
/// `PATH` and `dir` as its home; the process (killed when dropped) and the address it listens
/// on.
async fn listening(mut cmd: Command, dir: &Path) -> (tokio::process::Child, String) {
    cmd.env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", dir)
        .stdout(Stdio::null())
        .kill_on_drop(true);
    let served = rein_testkit::listening(&mut cmd).await;
    (served.child, served.base)
}

/// GET `url` (JSON) until `done` holds for the answer, for at most 30 s (`what` names it).
async fn get_until(
    http: &reqwest::Client,
    url: &str,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let body = http.get(url).send().await.unwrap().bytes().await.unwrap();
        let answer: serde_json::Value = serde_json::from_slice(&body).unwrap();
        if done(&answer) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no {what} within 30 s: {answer}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// [`serve_ui`] with a system model whose turns (routed by their instructions) name the
/// conversation "Installing rein" and learn one memory from it, "The user installs rein.".
async fn serve_learning(
    dir: &Path,
    model: &rein_model::testing::Server,
) -> (tokio::process::Child, String) {
    model.route(
        "You name conversations",
        vec![Canned::openai_text("Installing rein")],
    );
    model.route(
        "You keep a memory of durable facts",
        vec![Canned::openai_text(
            &json!({"memories": [{"category": "project", "subject": "tool", "text": "The user installs rein.", "message_id": "x"}]})
                .to_string(),
        )],
    );
    serve_ui_with(
        dir,
        &model.base,
        &[("REIN_SYSTEM_MODEL", "openai/gpt-4o-mini")],
    )
    .await
}

/// What a [`serve_learning`] server's knowledge tests end with: learning turned off and the
/// memory corrected ("The user installs rein with cargo."), private to agent `helper`; the
/// first request carried the guide's chunk.
async fn learnt_and_cited(http: &reqwest::Client, base: &str, model: &rein_model::testing::Server) {
    get_until(
        http,
        &format!("{base}/v1/memories"),
        "learning turned off, the memory corrected and private to the agent",
        |m| {
            m["extraction"] == false
                && m["memories"][0]["text"] == "The user installs rein with cargo."
                && m["memories"][0]["private_to"] == "helper"
        },
    )
    .await;
    let asked = model.requests()[0].body.to_string();
    assert!(asked.contains("Run cargo install rein-cli"), "{asked}");
}

/// `rein serve` with accounts (no `--no-auth`) on a fresh database in `dir`, whose `users`
/// (name, password) are made first; the process (killed when dropped) and its address.
async fn serve_accounts(dir: &Path, users: &[(&str, &str)]) -> (tokio::process::Child, String) {
    let db = dir.join("rein.db").to_string_lossy().into_owned();
    let rein = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rein"));
        cmd.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("REIN_HOME", dir)
            .args(["--db", &db])
            .args(args);
        cmd
    };
    for (name, password) in users {
        let made = rein(&["user", "create", name]).output().unwrap();
        assert!(made.status.success(), "{made:?}");
        let mut set = rein(&["user", "password", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            use std::io::Write;
            writeln!(set.stdin.take().unwrap(), "{password}").unwrap();
        }
        let set = set.wait_with_output().unwrap();
        assert!(set.status.success(), "{set:?}");
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_clear()
        .envs(rein_testkit::coverage_env())
        .args(["--db", &db])
        .args(["serve", "--addr", "127.0.0.1:0"]);
    listening(cmd, dir).await
}

/// What the demo-button tests end with: the five operations their buttons started, each
/// done and billed nothing.
async fn demo_ran_five_unbilled(base: &str) {
    let ops = json_call(
        &reqwest::Client::new(),
        reqwest::Method::GET,
        &format!("{base}/v1/operations"),
        None,
    )
    .await;
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 5, "{ops:#?}");
    for op in ops {
        assert_eq!(op["status"], "done", "{op:#}");
        assert_eq!(op["cost"].as_f64(), Some(0.0), "{op:#}");
    }
}

/// `rein --replay` of the demo cassette serving on a random port with a throwaway home in
/// `dir`, started from the repository's root without `--workdir` (the cassette's folder is
/// its working directory).
async fn demo_server(dir: &Path) -> (tokio::process::Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_clear()
        .envs(rein_testkit::coverage_env())
        .current_dir(workspace())
        .args(["--replay", "crates/cli/cassettes/demo.jsonl"])
        .args(["serve", "--no-auth", "--addr", "127.0.0.1:0"]);
    listening(cmd, dir).await
}

/// The JSON answer of `method` `url` (with `body` as JSON, if any).
async fn json_call(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut req = http.request(method, url);
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    let bytes = req.send().await.unwrap().bytes().await.unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// The model's turns of the grants tests: a ledger entry appended twice (granted the second
/// time), a third whose arguments the guard flags (`rm -rf ~`), each answered; then `more`.
fn ledger_turns(more: Vec<Canned>) -> Vec<Canned> {
    let append = |id: &str, entry: &str| {
        Canned::openai_tools(&[(id, "ledger__append", &json!({"entry": entry}).to_string())])
    };
    let mut turns = vec![
        append("l1", "one"),
        Canned::openai_text("Appended one."),
        append("l2", "two"),
        Canned::openai_text("Appended two."),
        Canned::openai_tools(&[(
            "l3",
            "ledger__append",
            &json!({"entry": "three", "command": "rm -rf ~"}).to_string(),
        )]),
        Canned::openai_text("Skipped three."),
    ];
    turns.extend(more);
    turns
}

/// Run `tests/browser/SCRIPT` against `base` in Chromium; its JSON report (the last line it
/// prints) and the folder its screenshots went to.
async fn run_script(
    script: &str,
    base: &str,
    chromium: &Path,
    playwright: &Path,
) -> (serde_json::Value, PathBuf) {
    run_script_with(script, base, chromium, playwright, &[]).await
}

/// [`run_script`] with more environment variables for the script.
async fn run_script_with(
    script: &str,
    base: &str,
    chromium: &Path,
    playwright: &Path,
    envs: &[(&str, &str)],
) -> (serde_json::Value, PathBuf) {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-artifacts");
    std::fs::create_dir_all(&out).unwrap();
    let run = Command::new("node")
        .arg(workspace().join("crates/cli/tests/browser").join(script))
        .arg(base)
        .arg(&out)
        .env("REIN_PLAYWRIGHT", playwright)
        .env("REIN_CHROMIUM", chromium)
        .envs(envs.iter().copied())
        .output()
        .await
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let report = serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap_or_else(|_| {
        panic!(
            "no report from the browser script:\n{stdout}\n{}",
            String::from_utf8_lossy(&run.stderr)
        )
    });
    (report, out)
}

#[tokio::test]
async fn the_ui_streams_approves_after_a_reload_and_shows_the_inspector() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(
        vec![
            Canned::openai_tools(&[("l1", "ledger__append", r#"{"entry":"paid"}"#)]),
            Canned::openai_text("Appended."),
            Canned::openai_text("Checked."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    // An agent that asks before every call.
    let created = reqwest::Client::new()
        .post(format!("{base}/v1/agents"))
        .header("content-type", "application/json")
        .body(json!({"name": "careful", "config": {"approval": "allow-list"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);

    let (report, out) = run_script("ui.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    assert_eq!(
        report["sawLive"], true,
        "the answer was previewed while it streamed"
    );
    for shot in [
        "1-approval-requested",
        "2-restored-after-reload",
        "3-done",
        "4-inspector",
    ] {
        assert!(out.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
    let ledger = std::fs::read_to_string(dir.join("ledger.txt")).unwrap();
    assert_eq!(ledger.lines().count(), 1, "approved once, ran once");
    eprintln!("screenshots: {}", out.display());
}

/// Approvals say why they ask; "always" is a grant the server keeps and applies (no card for
/// the next call of the tool in that conversation), never for a call the guard flags; revoking
/// it in the Grants dialog makes the tool ask again.
#[tokio::test]
async fn the_ui_shows_why_a_call_asks_and_grants_live_on_the_server() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's grants in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-grants-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(
        ledger_turns(vec![
            Canned::openai_tools(&[(
                "l4",
                "ledger__append",
                &json!({"entry": "four"}).to_string(),
            )]),
            Canned::openai_text("Appended four."),
        ]),
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let created = reqwest::Client::new()
        .post(format!("{base}/v1/agents"))
        .header("content-type", "application/json")
        .body(json!({"name": "careful", "config": {"approval": "allow-list"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let (report, out) = run_script("grants.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let ledger = std::fs::read_to_string(dir.join("ledger.txt")).unwrap();
    assert_eq!(
        ledger.lines().collect::<Vec<_>>(),
        ["one", "two", "four"],
        "the granted call ran, the flagged one did not"
    );
}

/// A sign-in from another device (`rein login`) is approved in the UI: the dialog names the
/// client and the code, Approve gives the client one token, Deny leaves the login waiting.
#[tokio::test]
async fn the_ui_approves_a_login_from_another_device() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's login approval in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-login-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(Vec::new(), 3).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("login.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    assert_eq!(report["user"], "local", "the --no-auth server's one user");
}

/// Signing in by password on a server with tokens, in Chromium: the cookie out of the page's
/// reach, the UI's changes carrying the CSRF token and a bare request refused, a reload
/// keeping the session, signing out ending it, and a name locked after five failures.
#[tokio::test]
async fn the_ui_signs_in_by_password_with_a_session_cookie_and_csrf_token() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's password sign-in in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-signin-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let (_server, base) = serve_accounts(
        &dir,
        &[("ann", "anns long password"), ("bob", "bobs long password")],
    )
    .await;
    let (report, out) = run_script("signin.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    assert!(
        report["locked"].as_str().is_some_and(|s| s.contains("bob")),
        "{report:#}"
    );
}

/// Signing in to the web app on a server with accounts: the sign-in screen, a wrong password
/// refused, the right one opening the app; its changes carry the session's CSRF token; a
/// login from another device approved; signing out.
#[tokio::test]
async fn the_web_app_signs_in_approves_a_device_login_and_signs_out() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's sign-in in Chromium", "rein-web-signin")
    else {
        return;
    };
    let (_server, base) = serve_accounts(&dir, &[("ann", "anns long password")]).await;
    let (report, out) = run_script("app_signin.cjs", &base, &chromium, &playwright).await;
    let shots = out.display();
    assert_eq!(report["ok"], true, "{report:#}\nscreenshots in {shots}");
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(text("chinese").contains("登录"), "{report:#}");
    assert!(!text("chinese").contains("Password"), "{report:#}");
    assert!(
        text("refused").to_lowercase().contains("password"),
        "{report:#}"
    );
    assert!(
        text("dialog").contains("rein CLI on laptop")
            && text("dialog").contains("Approve only if you started it"),
        "{report:#}"
    );
    assert_eq!(report["claimed"], 200, "{report:#}");
    assert_eq!(report["tokenGiven"], true, "{report:#}");
    // Her own token: a member is not offered `admin`; read only, it reads as her and changes
    // nothing; revoked, it stops.
    assert_eq!(report["offered"], json!(["read", "run"]), "{report:#}");
    assert_eq!(report["ownGiven"], true, "{report:#}");
    assert!(text("ownRow").contains("read"), "{report:#}");
    assert_eq!(
        report["ownRowHoldsIt"], false,
        "the list never shows a token"
    );
    assert_eq!(text("reads"), "ann", "{report:#}");
    assert_eq!(report["changes"], 403, "{report:#}");
    assert_eq!(report["afterRevoke"], 401, "{report:#}");
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env_clear()
        .envs(rein_testkit::coverage_env())
        .env("REIN_HOME", &dir)
        .args(["--db", &dir.join("rein.db").to_string_lossy()])
        .args(["agent", "list", "--json"])
        .output()
        .unwrap();
    // The agent belongs to ann: the CLI's local user has none.
    assert!(listed.status.success(), "{listed:?}");
    assert!(!String::from_utf8_lossy(&listed.stdout).contains("helper"));
}

/// Signing in to the web app through a real OpenID Connect provider (the `oidc-provider`
/// package, run here): the sign-in offers it, its login and consent bring carol back to the
/// app signed in (a member, made
/// by her first sign-in; her second finds the same user), signing out ends the session, a
/// denied consent comes back told why, and a callback this browser did not start signs nobody
/// in.
#[tokio::test]
async fn the_ui_signs_in_through_an_openid_connect_provider() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("OpenID Connect sign-in in Chromium", &missing);
            return;
        }
    };
    let provider_pkg = workspace().join(".browser/node_modules/oidc-provider");
    if !provider_pkg.exists() {
        rein_testkit::skip(
            "OpenID Connect sign-in in Chromium",
            "no oidc-provider in .browser (npm install --prefix .browser oidc-provider)",
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("rein-ui-oidc-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut idp = Command::new("node")
        .arg(workspace().join("crates/cli/tests/browser/oidc-provider.cjs"))
        .env("REIN_OIDC_PROVIDER", &provider_pkg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let mut said = BufReader::new(idp.stdout.take().unwrap()).lines();
    let issuer = loop {
        let line = said
            .next_line()
            .await
            .unwrap()
            .expect("the provider exited");
        if let Some(url) = line.strip_prefix("issuer ") {
            break url.to_owned();
        }
    };
    let secret = dir.join("client-secret");
    std::fs::write(&secret, "rein-secret\n").unwrap();
    let db = dir.join("rein.db").to_string_lossy().into_owned();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_clear()
        .envs(rein_testkit::coverage_env())
        .args(["--db", &db])
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(["--oidc-issuer", &issuer, "--oidc-client-id", "rein"])
        .args(["--oidc-client-secret-file", &secret.to_string_lossy()])
        .args(["--oidc-label", "Test IdP"]);
    let (_server, base) = listening(cmd, &dir).await;
    // Kept open to the end: the provider reads one line.
    let mut idp_stdin = idp.stdin.take().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        idp_stdin
            .write_all(format!("{base}/v1/oidc/callback\n").as_bytes())
            .await
            .unwrap();
    }
    while said
        .next_line()
        .await
        .unwrap()
        .expect("the provider exited")
        != "ready"
    {}
    tokio::spawn(async move { while let Ok(Some(_)) = said.next_line().await {} });

    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let offered: serde_json::Value = serde_json::from_slice(
        &http
            .get(format!("{base}/v1/oidc"))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(offered, json!({"enabled": true, "label": "Test IdP"}));
    // A callback this browser did not start: sent back told why, with no session.
    let forged = http
        .get(format!("{base}/v1/oidc/callback?code=abc&state=xyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 303);
    let location = forged.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("/#signin-error="), "{location}");
    assert!(
        forged
            .headers()
            .get_all("set-cookie")
            .iter()
            .all(|c| !c.to_str().unwrap().starts_with("rein_session=rein_s_")),
        "a forged callback set a session"
    );

    for round in 1..=2 {
        let (report, out) = run_script("oidc.cjs", &base, &chromium, &playwright).await;
        let shots = out.display();
        assert_eq!(
            report["ok"], true,
            "round {round}: {report:#}\nscreenshots in {shots}"
        );
        assert!(
            report["label"].as_str().unwrap().contains("Test IdP"),
            "{report:#}"
        );
        assert_eq!(report["me"]["name"], "carol", "{report:#}");
        assert_eq!(report["me"]["role"], "member", "{report:#}");
        assert_eq!(report["leftOver"], false, "the sign-in's cookie stayed");
        assert_eq!(report["after"], 401, "signed out, the session ends");
        let denied = report["denied"].as_str().unwrap();
        assert!(denied.contains("refused"), "{denied}");
    }
    let users = std::process::Command::new(env!("CARGO_BIN_EXE_rein"))
        .env_clear()
        .envs(rein_testkit::coverage_env())
        .env("REIN_HOME", &dir)
        .args(["--db", &db, "user", "list"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&users.stdout);
    assert_eq!(
        listed.lines().filter(|l| l.starts_with("carol")).count(),
        1,
        "two sign-ins, one user: {listed}"
    );
    assert!(
        !listed.contains("dave"),
        "a denied sign-in made a user: {listed}"
    );
    drop(idp_stdin);
}

/// The usage page in Chromium: the caps that apply with meters, today's cost as a bar, and the
/// sums by model and agent, all equal to what the two operations recorded.
#[tokio::test]
async fn the_ui_shows_usage_and_caps() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's usage page in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-usage-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(
        vec![
            Canned::openai_text_costing("one", 0.25),
            Canned::openai_text_costing("two", 0.25),
        ],
        3,
    )
    .await;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_clear()
        .envs(rein_testkit::coverage_env())
        .args(["--db", &dir.join("rein.db").to_string_lossy()])
        .args(["serve", "--addr", "127.0.0.1:0", "--no-auth"])
        .args(["--daily-cost-cap", "2", "--daily-token-cap", "1000"])
        .env("OPENAI_BASE_URL", format!("{}/v1", model.base))
        .env("OPENAI_API_KEY", "sk-test");
    let (_server, base) = listening(cmd, &dir).await;
    let http = reqwest::Client::new();
    for input in ["one", "two"] {
        let answer = http
            .post(format!("{base}/v1/operations"))
            .header("content-type", "application/json")
            .body(json!({"input": input}).to_string())
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let created: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        let id = created["operation_id"].as_str().unwrap();
        get_until(
            &http,
            &format!("{base}/v1/operations/{id}"),
            "a finished operation",
            |o| o["operation"]["status"] == "done",
        )
        .await;
    }
    let (report, out) = run_script("usage.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let caps = report["caps"].as_array().unwrap();
    assert_eq!(caps.len(), 2, "a cost and a token meter: {report:#}");
    let cost = caps[0]["text"].as_str().unwrap();
    assert!(cost.contains("Your daily cap: $0.5000 of $2.00"), "{cost}");
    assert_eq!(caps[0]["width"], "25%", "a quarter of the cap is spent");
    let tokens = caps[1]["text"].as_str().unwrap();
    assert!(tokens.contains("240 of 1000 tokens"), "{tokens}");
    let bars = report["bars"].as_array().unwrap();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(bars.len(), 1, "{report:#}");
    assert_eq!(bars[0]["day"], today.as_str());
    assert!(
        bars[0]["height"].as_f64().unwrap() > 100.0,
        "the one day is the tallest"
    );
    assert!(
        bars[0]["tip"]
            .as_str()
            .unwrap()
            .contains("$0.5000, 2 operations")
    );
    let totals = report["totals"].as_array().unwrap();
    assert_eq!(totals.len(), 2);
    for t in totals {
        assert!(t.as_str().unwrap().contains("$0.5000"), "{t}");
    }
}

/// Attachments in Chromium: a CSV picked and a screenshot pasted are uploaded and shown as
/// chips, the message goes with both (the model gets the CSV's text and the PNG as an image),
/// the transcript shows the picture and the file, and an upload over `--max-upload-mib` is
/// refused with the server's reason.
#[tokio::test]
async fn the_ui_attaches_a_file_and_a_pasted_screenshot_to_a_message() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's attachments in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-attach-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(vec![Canned::openai_text("North leads.")], 3).await;
    let (_server, base) = serve_ui_flags(&dir, &model.base, &["--max-upload-mib", "1"], &[]).await;
    let (report, out) = run_script("attach.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("chips").contains("sales.csv (text/csv)")
            && text("chips").contains("screenshot.png (image/png)"),
        "{report:#}"
    );
    assert!(
        text("user").contains("Which region leads?") && text("user").contains("file: sales.csv"),
        "{report:#}"
    );
    assert_eq!(report["chipsAfter"], true, "the chips go with the message");
    assert!(
        text("refused").contains("at most 1048576 bytes"),
        "{report:#}"
    );
    let sent = model.requests()[0].body.to_string();
    assert!(
        sent.contains("north,30"),
        "the CSV's text reached the model: {sent}"
    );
    assert!(
        sent.contains("data:image/png;base64,iVBORw0KGgo"),
        "the screenshot reached the model as an image: {sent}"
    );
}

/// The providers dialog in Chromium: a key typed into a password field is stored, listed as
/// "your key" and never shown again (not even in the page), a base URL with credentials is
/// refused with the reason, and removing the provider leaves none; an MCP server (the
/// reference server over HTTP) added with a token header is listed by the header's name and
/// its tools, the token nowhere in the page, and another origin is refused naming the allowed;
/// a working directory outside the allowed root is refused, one inside it chosen.
#[tokio::test]
async fn the_ui_stores_a_users_own_provider_key_without_showing_it() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's providers dialog in Chromium", &missing);
            return;
        }
    };
    let Some((_mcp, port)) = crate::cli::everything_over_http().await else {
        return;
    };
    let origin = format!("http://127.0.0.1:{port}");
    let dir = std::env::temp_dir().join(format!("rein-ui-providers-{}", OperationId::new()));
    let root = dir.join("work");
    std::fs::create_dir_all(root.join("alice")).unwrap();
    let root = std::fs::canonicalize(&root).unwrap().display().to_string();
    let model = serve(vec![], 3).await;
    let (_server, base) = serve_ui_flags(
        &dir,
        &model.base,
        &["--user-mcp-origin", &origin, "--user-workdir-root", &root],
        &[],
    )
    .await;
    let (report, out) = run_script_with(
        "providers.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_UI_WORKDIR_ROOT", &root)],
    )
    .await;
    let shots = out.display();
    assert_eq!(report["ok"], true, "{report:#}\nscreenshots in {shots}");
    assert!(
        report["empty"].as_str().unwrap().contains("None"),
        "{report:#}"
    );
    assert_eq!(report["keyType"], "password");
    assert_eq!(report["saved"], "Saved openai.");
    assert_eq!(report["keyAfter"], "", "the key field is emptied");
    let listed = report["listed"].as_str().unwrap();
    assert!(
        listed.contains("openai") && listed.contains("your key"),
        "{listed}"
    );
    assert!(!listed.contains("sk-ui-"), "{listed}");
    assert!(
        report["refused"]
            .as_str()
            .unwrap()
            .contains("without credentials"),
        "{report:#}"
    );
    assert_eq!(report["pageHoldsKey"], false);
    let answer = reqwest::get(format!("{base}/v1/settings/providers"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(answer, "[]");
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(text("origins").contains(&origin), "{report:#}");
    assert!(
        text("mcpRefused").contains("not allowed here"),
        "{report:#}"
    );
    assert!(
        text("mcpSaved").starts_with("Added issues:") && text("mcpSaved").contains("echo"),
        "{report:#}"
    );
    assert_eq!(report["headersAfter"], "", "the headers field is emptied");
    assert!(
        text("mcpListed").contains("issues") && text("mcpListed").contains("Authorization"),
        "{report:#}"
    );
    assert!(!text("mcpListed").contains("mcp-ui-"), "{report:#}");
    assert_eq!(report["pageHoldsToken"], false);
    let answer: serde_json::Value = serde_json::from_str(
        &reqwest::get(format!("{base}/v1/settings/mcp"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(answer["servers"], json!([]), "removed in the page");
    assert!(text("wdBefore").contains("no directory"), "{report:#}");
    assert!(text("wdRefused").contains("outside"), "{report:#}");
    assert_eq!(text("wdChosen"), format!("{root}/alice"), "{report:#}");
}

/// A delegated task's thread in the UI: under the call that spawned it, collapsible, with the
/// sub-agent's tool card, answer, status and cost; then a group conversation started from the
/// picker, each turn naming its speaker; then a failed run's reason shown in the conversation.
#[tokio::test]
async fn the_ui_shows_a_delegated_tasks_thread_with_the_sub_agents_tool_card() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's threads in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-threads-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(Vec::new(), 5).await;
    model.route(
        "ROLE-BOSS",
        vec![
            Canned::openai_tools(&[(
                "d1",
                "agents__delegate",
                &json!({"title": "multiply", "task": "What is 17*23?", "agent": "helper"})
                    .to_string(),
            )]),
            Canned::openai_text("The helper says 391."),
        ],
    );
    model.route(
        "ROLE-HELPER",
        vec![
            Canned::openai_tools(&[(
                "h1",
                "calculator__evaluate",
                &json!({"expression": "17*23"}).to_string(),
            )]),
            Canned::openai_text("391"),
        ],
    );
    let (_server, base) = serve_ui(&dir, &model.base).await;
    model.route("ROLE-ANN", vec![Canned::openai_text("ann waves")]);
    model.route("ROLE-BOB", vec![Canned::openai_text("bob waves back")]);
    // Refused by the provider (not retried): the run fails and says why.
    model.route(
        "ROLE-BROKEN",
        vec![Canned::json(
            400,
            &json!({"error": {"message": "quota exceeded for this demo", "type": "invalid_request_error"}}),
        )],
    );
    for (name, config) in [
        (
            "boss",
            json!({"system_role": "ROLE-BOSS: you delegate.", "approval": "auto-run"}),
        ),
        (
            "helper",
            json!({"system_role": "ROLE-HELPER: you calculate.", "tools": ["calculator"]}),
        ),
        ("ann", json!({"system_role": "ROLE-ANN: be brief."})),
        ("bob", json!({"system_role": "ROLE-BOB: be brief."})),
        (
            "broken",
            json!({"system_role": "ROLE-BROKEN: never answers."}),
        ),
    ] {
        let created = reqwest::Client::new()
            .post(format!("{base}/v1/agents"))
            .header("content-type", "application/json")
            .body(json!({"name": name, "config": config}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(created.status().as_u16(), 201);
    }
    let created = reqwest::Client::new()
        .post(format!("{base}/v1/groups"))
        .header("content-type", "application/json")
        .body(
            json!({"name": "duo", "config": {"members": ["ann", "bob"], "policy": "round_robin", "max_rounds": 2}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    let (report, out) = run_script("threads.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    for shot in [
        "threads-1-collapsed",
        "threads-2-open",
        "threads-3-group",
        "threads-4-failure",
    ] {
        assert!(out.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
}

/// The README's main command in Chromium: the demo answers its question three times in a row
/// (each a new conversation), reads a file of its working directory, and runs a shell command
/// once it is approved.
#[tokio::test]
async fn the_readme_demo_answers_again_and_again_and_asks_before_the_shell() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the README demo in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-demo-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    // As in the README, with a random port and a throwaway home.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rein"));
    cmd.env_clear()
        .envs(rein_testkit::coverage_env())
        .arg("--replay")
        .arg(cli.join("cassettes/demo.jsonl"))
        .args(["serve", "--no-auth", "--addr", "127.0.0.1:0", "--workdir"])
        .arg(cli.join("cassettes/demo"));
    let (_server, base) = listening(cmd, &dir).await;
    let (report, out) = run_script("demo.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    for shot in ["demo-1-answers", "demo-2-approval", "demo-3-shell"] {
        assert!(out.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
}

/// Every button the README demo offers works on the replay: its banner's example questions,
/// regenerate, edit (into a question it does not know: its note, not an error), the shell
/// approved "always" and rejected with a reason; the inspector names the model as a replay,
/// and no operation costs anything. The server runs from the repository's root without
/// `--workdir`: the cassette's own folder is where its tools read.
#[tokio::test]
async fn every_button_of_the_readme_demo_gets_an_answer_from_the_replay() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the README demo's buttons in Chromium",
        "rein-ui-demo-buttons",
    )
    else {
        return;
    };
    let (_server, base) = demo_server(&dir).await;
    let (report, out) = run_script("demo_buttons.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    demo_ran_five_unbilled(&base).await;
}

/// Every button of the README demo in the web app, the page the README's command opens: the
/// banner's example, regenerate, edit, "always" for the shell, and (on a phone) a rejection
/// with a reason, each answered by the replay; five operations, all done, none billed.
#[tokio::test]
async fn every_button_of_the_readme_demo_in_the_web_app_gets_an_answer_from_the_replay() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the README demo's buttons in the web app in Chromium",
        "rein-web-demo-buttons",
    )
    else {
        return;
    };
    let (_server, base) = demo_server(&dir).await;
    let (report, out) = run_script("app_demo_buttons.cjs", &base, &chromium, &playwright).await;
    let shots = out.display();
    assert_eq!(report["ok"], true, "{report:#}\nscreenshots in {shots}");
    assert_eq!(report["cost"], "$0.00", "{report:#}");
    demo_ran_five_unbilled(&base).await;
}

/// The web app (`/app/`, built from `web/`, embedded): its conversation list and a
/// transcript at a desktop's and a phone's width (the list a drawer there), in English and in
/// Chinese with no English UI string left, the replay banner, what the page loads (its
/// script and style, sent gzipped, within the issue's budget of 150 KB), and a
/// conversation held in it (a call rejected with a reason, an answer streamed), the usage
/// screen; axe-core finds
/// no serious or critical violation at either width, in either language, light or dark.
#[tokio::test]
async fn the_web_app_lists_and_shows_conversations_on_a_phone_and_in_chinese() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app in Chromium", "rein-web-app")
    else {
        return;
    };
    let (_server, base) = demo_server(&dir).await;
    let http = reqwest::Client::new();
    for question in ["What is 17 * 23?", "What does notes.txt say?"] {
        let created = json_call(
            &http,
            reqwest::Method::POST,
            &format!("{base}/v1/operations"),
            Some(json!({ "input": question })),
        )
        .await;
        let op = created["operation_id"].as_str().unwrap().to_owned();
        get_until(
            &http,
            &format!("{base}/v1/operations/{op}"),
            "the demo question answered",
            |d| d["operation"]["status"] == "done",
        )
        .await;
    }
    let (report, out) = run_script("app.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let sizes: Vec<i64> = report["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .take(2)
        .map(|n| n.as_i64().unwrap())
        .collect();
    assert!(
        sizes.len() == 2 && sizes.iter().all(|&n| n > 0),
        "the app's script and stylesheet are sent gzipped: {sizes:?}"
    );
    let loaded: i64 = sizes.iter().sum();
    assert!(loaded < 150 * 1024, "{loaded} bytes");
    for shot in [
        "app-1-wide-en",
        "app-1-wide-en-dark",
        "app-2-phone-en",
        "app-3-zh-390",
        "app-3-zh-1280",
    ] {
        assert!(out.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
}

/// The web app renders an answer as Markdown (a table, a code block with a copy button, a
/// link opening elsewhere) and what HTML a model writes harmlessly: no script runs, no event
/// handler or `javascript:` link survives.
#[tokio::test]
async fn the_web_app_renders_markdown_and_nothing_a_model_writes_runs() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's Markdown in Chromium", "rein-web-markdown")
    else {
        return;
    };
    let answer = "Here it is:\n\n| expression | value |\n|---|---|\n| 17 * 23 | 391 |\n\n```rust\nfn main() {}\n```\n\nSee [the docs](https://example.com/docs).\n\n<script>window.pwned = true</script><img src=x onerror=\"window.pwned = true\"> [click](javascript:window.pwned=true)";
    let model = serve(vec![Canned::openai_text(answer)], 3).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("app_markdown.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
}

/// What a tool call produced, in the web app: the interpreter writes a chart, a CSV and an
/// HTML report (kept as artifacts); the chart shows as an image, the CSV as a table, the
/// report in a frame sandboxed away from the app (its script reads no cookie, reaches no API).
#[tokio::test]
async fn the_web_app_shows_a_calls_chart_table_and_report_and_the_report_is_sandboxed() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's artifacts in Chromium", "rein-web-artifacts")
    else {
        return;
    };
    let code = r#"
import struct, zlib
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
rows = b"".join(b"\x00" + bytes([30, 90, 200]) * 3 for _ in range(2))
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 2, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
open("chart.png", "wb").write(png)
open("sales.csv", "w").write('month,sales\nJan,10\n"Feb, late",12\n')
open("report.html", "w").write("""<!doctype html><html><body><h1>Quarterly report</h1><p id=c></p><p id=a></p>
<script>
let c = "cookie: blocked";
try { if (document.cookie.includes("rein_probe")) c = "cookie: read"; } catch (e) {}
document.getElementById("c").textContent = c;
fetch("/v1/topics").then(() => { document.getElementById("a").textContent = "api: reached"; },
  () => { document.getElementById("a").textContent = "api: blocked"; })
  .finally(() => { document.body.dataset.done = "yes"; });
</script></body></html>""")
"#;
    let model = serve(
        vec![
            Canned::openai_tools(&[("p1", "python__run", &json!({ "code": code }).to_string())]),
            Canned::openai_text("Here is the chart, the table and the report."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("app_artifacts.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
}

/// One second of silence as MP3 (MPEG-1 Layer III, 128 kbit/s, 44.1 kHz, mono): 39 frames of
/// 417 bytes whose side information says no bits were coded.
fn silent_mp3() -> Vec<u8> {
    let mut frame = vec![0u8; 417];
    frame[..4].copy_from_slice(&[0xFF, 0xFB, 0x90, 0xC4]);
    frame.repeat(39)
}

/// The web app's play button reads an answer aloud through `POST /v1/audio/speech` (the
/// server's speech model, the answer's text) and plays it to its end; its microphone button
/// records (Chromium's fake microphone), sends the recording to `POST /v1/audio/transcriptions`
/// (a form OpenAI takes: a `webm` file and the server's model) and writes what was heard into
/// the message box.
#[tokio::test]
async fn the_web_app_reads_an_answer_aloud_and_writes_down_a_spoken_message() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's speech in Chromium", "rein-web-speech")
    else {
        return;
    };
    let model = serve(
        vec![
            Canned::openai_text("The answer is forty-two."),
            Canned {
                status: 200,
                headers: vec![("content-type".into(), "audio/mpeg".into())],
                body: silent_mp3(),
                max_piece: 4096,
                stall_after: None,
                delay: None,
            },
            Canned::json(200, &json!({"text": "Hello from the microphone."})),
        ],
        3,
    )
    .await;
    let config = dir.join("rein.toml");
    std::fs::write(
        &config,
        "speech_model = \"openai/gpt-4o-mini-tts\"\ntranscription_model = \"openai/gpt-4o-transcribe\"\n",
    )
    .unwrap();
    let (_server, base) = serve_ui_with(
        &dir,
        &model.base,
        &[("REIN_CONFIG", config.to_str().unwrap())],
    )
    .await;
    let (report, out) = run_script("app_speech.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let requests = model.requests();
    let spoken = requests
        .iter()
        .find(|r| r.path.ends_with("/audio/speech"))
        .expect("the speech endpoint was called");
    assert!(spoken.refused.is_none(), "{:?}", spoken.refused);
    assert_eq!(spoken.body["input"], "The answer is forty-two.");
    assert_eq!(spoken.body["model"], "gpt-4o-mini-tts");
    let heard = requests
        .iter()
        .find(|r| r.path.ends_with("/audio/transcriptions"))
        .expect("the transcription endpoint was called");
    assert!(heard.refused.is_none(), "{:?}", heard.refused);
    let form = String::from_utf8_lossy(&heard.raw);
    assert!(form.contains("filename=\"recording.webm\""), "{form:.400}");
    assert!(form.contains("gpt-4o-transcribe"), "{form:.400}");
    // What the fake microphone recorded is a WebM file (EBML's magic number first).
    let at = heard
        .raw
        .windows(4)
        .position(|w| w == [0x1A, 0x45, 0xDF, 0xA3])
        .expect("a WebM recording");
    assert!(
        heard.raw.len() - at > 1000,
        "a moment of sound was recorded"
    );
}

/// The web app lists 120 conversations 50 at a time, each page after the last one listed,
/// each conversation once, newest first.
#[tokio::test]
async fn the_web_app_pages_a_long_conversation_list() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's pages in Chromium", "rein-web-pages")
    else {
        return;
    };
    let model = serve(vec![], 3).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let http = reqwest::Client::new();
    for i in 0..120 {
        let made = json_call(
            &http,
            reqwest::Method::POST,
            &format!("{base}/v1/topics"),
            Some(json!({"id": format!("t{i:03}"), "title": format!("Topic {i:03}")})),
        )
        .await;
        assert_eq!(made["id"], format!("t{i:03}"), "{made}");
    }
    let (report, out) = run_script("app_pages.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
}

/// In the web app, "always for this conversation" is a grant the server keeps and applies (no
/// card for the next call of the tool there), never offered for a call the guard flags.
#[tokio::test]
async fn the_web_app_grants_on_the_server_and_a_guarded_call_still_asks() {
    for size in SIZES {
        the_web_app_grants_on_the_server_and_a_guarded_call_still_asks_at(size).await;
    }
}

async fn the_web_app_grants_on_the_server_and_a_guarded_call_still_asks_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's grants in Chromium", "rein-web-grants")
    else {
        return;
    };
    let model = serve(ledger_turns(Vec::new()), 3).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let created = json_call(
        &reqwest::Client::new(),
        reqwest::Method::POST,
        &format!("{base}/v1/agents"),
        Some(json!({"name": "careful", "config": {"approval": "allow-list"}})),
    )
    .await;
    assert_eq!(created["name"], "careful", "{created}");
    let (report, out) = run_script_with(
        "app_grants.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    assert_eq!(
        report["ok"],
        true,
        "at {size}: {report:#}\nscreenshots in {}",
        out.display()
    );
    let ledger = std::fs::read_to_string(dir.join("ledger.txt")).unwrap();
    assert_eq!(
        ledger.lines().collect::<Vec<_>>(),
        ["one", "two"],
        "the granted call ran, the flagged one did not"
    );
}

/// The web app's settings and agent editor: a provider key, an MCP server's token and the
/// brief hook's secret go in and never come back; an agent made with pickers (a catalogued
/// model, a built-in and the MCP server's tools, one allowed without asking, allow-list
/// approval, a step limit) is stored as chosen and shown again after a reload; changed, then
/// rolled back to its first version (kept as the third).
#[tokio::test]
async fn the_web_app_keeps_settings_secret_and_makes_an_agent_with_pickers() {
    for size in SIZES {
        the_web_app_keeps_settings_secret_and_makes_an_agent_with_pickers_at(size).await;
    }
}

async fn the_web_app_keeps_settings_secret_and_makes_an_agent_with_pickers_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the web app's settings and agents in Chromium",
        "rein-web-settings",
    )
    else {
        return;
    };
    let Some((_mcp, port)) = crate::cli::everything_over_http().await else {
        return;
    };
    let origin = format!("http://127.0.0.1:{port}");
    // A skill the server offers, and a file it leaves out (no front matter).
    for (name, text) in [
        (
            "pdf-tools",
            "---\nname: pdf-tools\ndescription: Read PDF files.\n---\nRead page by page.\n",
        ),
        ("broken", "no front matter here\n"),
    ] {
        std::fs::create_dir_all(dir.join("skills").join(name)).unwrap();
        std::fs::write(dir.join("skills").join(name).join("SKILL.md"), text).unwrap();
    }
    let model = serve(vec![], 3).await;
    let (_server, base) = serve_ui_flags(
        &dir,
        &model.base,
        &["--user-mcp-origin", &origin, "--allow-private-hooks"],
        &[],
    )
    .await;
    let (report, out) = run_script_with(
        "app_settings.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("skills").contains("pdf-tools")
            && text("skills").contains("Read PDF files.")
            && text("skills").contains("Left out")
            && text("skills").contains("broken"),
        "{report:#}"
    );
    assert_eq!(text("keyType"), "password");
    assert_eq!(text("keyAfter"), "", "the key field is emptied");
    assert!(
        text("listed").contains("openai") && text("listed").contains("key stored"),
        "{report:#}"
    );
    assert!(text("refused").contains("credentials"), "{report:#}");
    assert!(
        text("mcpSaved").starts_with("issues answered with"),
        "{report:#}"
    );
    assert!(text("mcpListed").contains("Authorization"), "{report:#}");
    assert!(
        text("hookShown").contains("http://127.0.0.1:9/briefs"),
        "{report:#}"
    );
    assert_eq!(text("hookSecretAfter"), "");
    assert_eq!(report["pageHoldsSecrets"], json!([]), "{report:#}");
    // The test tools (REIN_TEST_TOOLS) are custom tools.
    assert_eq!(
        report["groups"],
        json!(["Built in", "MCP servers", "Custom"]),
        "{report:#}"
    );
    assert_eq!(report["filtered"], json!(["calculator"]), "{report:#}");
    assert_eq!(
        report["allowOffered"],
        json!(["calculator", "issues"]),
        "{report:#}"
    );
    assert_eq!(
        report["kept"],
        json!({"model": "openai/gpt-4o-mini", "tools": ["calculator", "issues"], "allow": ["calculator"], "approval": "allow-list", "steps": "7"}),
        "{report:#}"
    );
    let versions = report["versions"].to_string();
    assert!(
        versions.contains("Version 2")
            && versions.contains("changed: max_steps")
            && versions.contains("Roll back to version 1"),
        "{report:#}"
    );
    assert_eq!(
        report["rolledBack"],
        json!({"notice": "Rolled back: the old settings are the newest version.", "steps": "7", "current": "3"}),
        "{report:#}"
    );
    let http = reqwest::Client::new();
    let agent = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/agents/reviewer"),
        None,
    )
    .await;
    assert_eq!(agent["version"], 3, "{agent}");
    assert_eq!(agent["config"]["model"], "openai/gpt-4o-mini", "{agent}");
    assert_eq!(
        agent["config"]["tools"],
        json!(["calculator", "issues"]),
        "{agent}"
    );
    assert_eq!(agent["config"]["allow"], json!(["calculator"]), "{agent}");
    assert_eq!(agent["config"]["approval"], "allow-list", "{agent}");
    assert_eq!(agent["config"]["max_steps"], 7, "{agent}");
    let providers = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/settings/providers"),
        None,
    )
    .await;
    assert_eq!(providers[0]["has_key"], true, "{providers}");
    assert!(!providers.to_string().contains("sk-app-"), "{providers}");
    let mcp = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/settings/mcp"),
        None,
    )
    .await;
    assert_eq!(mcp["servers"], json!([]), "removed in the page: {mcp}");
}

/// A conversation in the web app with attachments (picked, pasted, dropped; one removed)
/// that reach the model, an upload refused with why, a question answered by an option (the
/// answer reaches the model), an agent's file write and edit shown as diffs, the inspector
/// on that operation, then the conversation renamed and deleted.
#[tokio::test]
async fn the_web_app_attaches_files_answers_a_question_and_renames_and_deletes() {
    for size in SIZES {
        the_web_app_attaches_files_answers_a_question_and_renames_and_deletes_at(size).await;
    }
}

async fn the_web_app_attaches_files_answers_a_question_and_renames_and_deletes_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's chat in Chromium", "rein-web-chat")
    else {
        return;
    };
    let question = json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    let model = serve(
        vec![
            Canned::openai_text("North leads."),
            Canned::openai_tools(&[("q1", "ask_user__ask", &question.to_string())]),
            Canned::openai_text("Holding the release."),
            Canned::openai_tools(&[(
                "w1",
                "files__write",
                &json!({"path": "notes.txt", "content": "one\ntwo\n"}).to_string(),
            )]),
            Canned::openai_tools(&[(
                "w2",
                "files__edit",
                &json!({"path": "notes.txt", "old_text": "two", "new_text": "three"}).to_string(),
            )]),
            Canned::openai_text("Notes written."),
        ],
        3,
    )
    .await;
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    let (_server, base) = serve_ui_flags(
        &dir,
        &model.base,
        &[
            "--max-upload-mib",
            "1",
            "--workdir",
            &work.to_string_lossy(),
        ],
        &[],
    )
    .await;
    let created = json_call(
        &reqwest::Client::new(),
        reqwest::Method::POST,
        &format!("{base}/v1/agents"),
        Some(json!({"name": "writer", "config": {"approval": "auto-run"}})),
    )
    .await;
    assert_eq!(created["name"], "writer", "{created}");
    let (report, out) = run_script_with(
        "app_chat.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    assert_eq!(
        report["before"],
        json!(["sales.csv", "screenshot.png", "note.txt"]),
        "{report:#}"
    );
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("user").contains("Which region leads?") && text("user").contains("sales.csv"),
        "{report:#}"
    );
    assert_eq!(report["chipsAfter"], 0, "the chips go with the message");
    assert!(
        text("refused").contains("at most 1048576 bytes"),
        "{report:#}"
    );
    assert_eq!(text("asked"), "Deploy to production now?");
    assert_eq!(report["options"], json!(["Deploy", "Wait"]));
    let requests = model.requests();
    assert_eq!(requests.len(), 6);
    assert_eq!(text("removed"), "- removed: two");
    assert_eq!(text("added"), "+ added: three");
    assert_eq!(report["written"], json!(["+ added: one", "+ added: two"]));
    assert_eq!(
        std::fs::read_to_string(work.join("notes.txt")).unwrap(),
        "one\nthree\n"
    );
    // The inspector: the last operation (write, edit, answer) ended; a row per step it counts,
    // none said to be running; three model calls with what they admitted; usage by model.
    let inspector = &report["inspector"];
    assert_eq!(inspector["facts"]["Status"], "done", "{inspector:#}");
    let rows = inspector["rows"].as_array().unwrap();
    assert_eq!(
        inspector["facts"]["Steps"],
        rows.len().to_string(),
        "{inspector:#}"
    );
    assert!(
        rows.iter().all(|r| r[6] != "running"),
        "a finished step said to be running: {inspector:#}"
    );
    assert_eq!(rows.last().unwrap()[6], "completed", "{inspector:#}");
    assert_eq!(inspector["calls"], 3, "{inspector:#}");
    assert!(
        inspector["items"]
            .as_array()
            .unwrap()
            .contains(&json!("history")),
        "{inspector:#}"
    );
    assert_eq!(inspector["usage"][0], "openai/gpt-4o-mini", "{inspector:#}");
    let sent = requests[0].body.to_string();
    assert!(
        sent.contains("north,30"),
        "the CSV's text reached the model: {sent}"
    );
    assert!(
        sent.contains("data:image/png;base64,iVBORw0KGgo"),
        "the pasted screenshot reached the model as an image: {sent}"
    );
    assert!(
        !sent.contains("dropped note"),
        "the removed file stayed behind: {sent}"
    );
    assert_eq!(requests[2].tool_result("q1"), "The user chose `no` (Wait).");
    let topics = json_call(
        &reqwest::Client::new(),
        reqwest::Method::GET,
        &format!("{base}/v1/topics"),
        None,
    )
    .await;
    assert_eq!(topics, json!([]), "deleted in the page");
}

/// Tasks and the inbox in the web app: a failed run's urgent brief counted, listed and
/// resolved; a task created, run now (its run shown with outcome and brief), edited to run
/// every hour with a cap, paused and resumed; a second task that waits for the first.
#[tokio::test]
async fn the_web_app_resolves_a_brief_and_makes_runs_edits_and_chains_tasks() {
    for size in SIZES {
        the_web_app_resolves_a_brief_and_makes_runs_edits_and_chains_tasks_at(size).await;
    }
}

async fn the_web_app_resolves_a_brief_and_makes_runs_edits_and_chains_tasks_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the web app's tasks and inbox in Chromium",
        "rein-web-tasks",
    )
    else {
        return;
    };
    let model = serve(
        vec![
            Canned::json(400, &json!({"error": {"message": "model refused"}})),
            Canned::openai_text("Checked."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let http = reqwest::Client::new();
    let created = json_call(
        &http,
        reqwest::Method::POST,
        &format!("{base}/v1/tasks"),
        Some(json!({"title": "Queue watch", "instruction": "Check the queue.", "every": "1s", "max_executions": 1})),
    )
    .await;
    assert_eq!(created["title"], "Queue watch", "{created}");
    get_until(
        &http,
        &format!("{base}/v1/briefs?unresolved=true"),
        "an urgent brief",
        |list| list["unread"] == 1,
    )
    .await;
    let (report, out) = run_script_with(
        "app_tasks.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("card").contains("Queue watch") && text("card").contains("model refused"),
        "{report:#}"
    );
    assert!(
        report["actions"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("acknowledge"))),
        "{report:#}"
    );
    assert!(
        text("resolved").contains("Resolved: acknowledge"),
        "{report:#}"
    );
    assert!(
        text("runs").contains("By hand")
            && text("runs").contains("completed")
            && text("runs").contains("Checked."),
        "{report:#}"
    );
    assert!(
        text("next").contains("Next:"),
        "an hourly task has due times: {report:#}"
    );
    assert!(text("pausedState").starts_with("Paused"), "{report:#}");
    let tasks = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/tasks"),
        None,
    )
    .await;
    let named = |title: &str| {
        tasks
            .as_array()
            .and_then(|l| l.iter().find(|t| t["title"] == title))
            .cloned()
            .unwrap_or_else(|| panic!("no task {title}: {tasks}"))
    };
    let digest = named("Daily digest");
    assert_eq!(
        digest["automation"],
        json!({"mode": "heartbeat", "every_secs": 3600}),
        "{digest}"
    );
    assert_eq!(digest["max_executions"], 3, "{digest}");
    assert_eq!(digest["status"], "active", "resumed: {digest}");
    let weekly = named("Weekly report");
    assert_eq!(weekly["depends_on"], json!([digest["id"]]), "{weekly}");
}

/// Goals in the web app: one asked for in the form is planned and run by the server; the
/// graph shows its works coloured by status with their attempts' operations and verdicts and
/// the budget spent of its limit; "Try again" on a blocked work runs it again and the goal is
/// achieved on its final check.
#[tokio::test]
async fn the_web_app_creates_a_goal_shows_its_graph_and_retries_a_blocked_work() {
    for size in SIZES {
        the_web_app_creates_a_goal_shows_its_graph_and_retries_a_blocked_work_at(size).await;
    }
}

async fn the_web_app_creates_a_goal_shows_its_graph_and_retries_a_blocked_work_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's goals in Chromium", "rein-web-goals")
    else {
        return;
    };
    // The workers (the default agent) answer from the shared queue, in order: a, then b twice.
    let model = serve(
        vec![
            Canned::openai_text("Services: auth, billing."),
            Canned::openai_text("Migrated auth and billing."),
            Canned::openai_text("Migrated; rollback: snapshot then restore."),
        ],
        3,
    )
    .await;
    let verdict = |passed: bool, gaps: &[&str]| {
        Canned::openai_text(
            &json!({"passed": passed, "gaps": gaps, "evidence": ["read the output"]}).to_string(),
        )
    };
    model.route(
        "You plan long-horizon work",
        vec![Canned::openai_text(
            &json!({"works": [
                {"id": "a", "instruction": "List the services.", "assignee": null, "depends_on": [], "acceptance": "every service is listed"},
                {"id": "b", "instruction": "Migrate each listed service.", "assignee": null, "depends_on": ["a"], "acceptance": "each has a rollback plan"},
            ]})
            .to_string(),
        )],
    );
    model.route("reviewer of work `a`", vec![verdict(true, &[])]);
    model.route(
        "reviewer of work `b`",
        vec![verdict(false, &["no rollback plan"]), verdict(true, &[])],
    );
    model.route("reviewer of the whole objective", vec![verdict(true, &[])]);
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script_with(
        "app_goals.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    assert!(
        text("status").contains("Needs you")
            && text("status").contains("did not pass in 1 attempt"),
        "{report:#}"
    );
    assert!(text("budget").contains("of $5"), "{report:#}");
    assert_eq!(report["meter"]["max"], 5, "{report:#}");
    assert_eq!(text("after"), "After a", "{report:#}");
    assert!(
        text("attempt").contains("no rollback plan")
            && text("attempt").contains("Migrated auth and billing.")
            && text("attempt").contains("done"),
        "the attempt shows its verdict, its answer and its operation: {report:#}"
    );
    assert!(text("final").contains("passed"), "{report:#}");
    assert!(
        text("revisions").contains("Plan 1 by planner:"),
        "{report:#}"
    );
    assert!(
        text("listed").contains("Migrate the services"),
        "{report:#}"
    );
    let goals = json_call(
        &reqwest::Client::new(),
        reqwest::Method::GET,
        &format!("{base}/v1/goals"),
        None,
    )
    .await;
    let goal = &goals["goals"][0];
    assert_eq!(goal["goal"]["status"], "achieved", "{goal:#}");
    assert_eq!(goal["settings"]["cost_limit"], 5.0, "{goal:#}");
    assert_eq!(goal["goal"]["limits"]["max_attempts"], 1, "{goal:#}");
    assert_eq!(
        goal["goal"]["acceptance"], "every service migrated with a rollback plan",
        "{goal:#}"
    );
}

/// Replaying and forking from the inspector: "Replay" on a model call compares two other
/// models' answers with the original's; "Fork" on a step after which the operation went on,
/// another model and instructions in its form; the fork's conversation opens and streams the
/// other model's answer, and its inspector names where it came from.
#[tokio::test]
async fn the_web_app_replays_a_call_and_forks_an_operation_from_its_timeline() {
    for size in SIZES {
        the_web_app_replays_a_call_and_forks_an_operation_from_its_timeline_at(size).await;
    }
}

async fn the_web_app_replays_a_call_and_forks_an_operation_from_its_timeline_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "forking from the web app's inspector in Chromium",
        "rein-web-fork",
    )
    else {
        return;
    };
    let model = serve(
        vec![
            Canned::openai_tools(&[(
                "c1",
                "calculator__evaluate",
                &json!({"expression": "6*7"}).to_string(),
            )]),
            Canned::openai_text("6 × 7 = 42."),
        ],
        3,
    )
    .await;
    // The other models, each its own script (the replay asks them at once): gpt-4o answers
    // the replay, then the fork.
    model.route(
        "model openai/gpt-4o.",
        vec![
            Canned::openai_text("About 42.").with_usage(60, 6),
            Canned::openai_text("Forty-two."),
        ],
    );
    model.route(
        "model openai/gpt-4.1-nano.",
        vec![Canned::openai_text("Forty two").with_usage(40, 4)],
    );
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script_with(
        "app_fork.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    let rows = report["rows"].as_array().unwrap();
    let forkable: Vec<u64> = rows
        .iter()
        .filter(|r| r["fork"] == true)
        .map(|r| r["step"].as_u64().unwrap())
        .collect();
    assert_eq!(
        forkable,
        (1..rows.len() as u64).collect::<Vec<_>>(),
        "every step but the last, after which it ended: {report:#}"
    );
    assert_eq!(report["model"], "openai/gpt-4o-mini", "{report:#}");
    assert_eq!(
        report["facts"]["Model"], "openai/gpt-4o",
        "the inspector follows the fork's conversation: {report:#}"
    );
    let forked = report["facts"]["Forked from"].as_str().unwrap_or_default();
    assert!(forked.ends_with("after step 2"), "{report:#}");
    assert!(
        report["transcript"]
            .as_str()
            .unwrap()
            .contains("What is 6*7?"),
        "the fork's conversation holds the original's up to the step: {report:#}"
    );
    // The comparison: the original, then each model's answer with its scripted usage.
    let compared = report["compared"].as_array().unwrap();
    let row = |m: &str| {
        compared
            .iter()
            .find(|r| r["model"] == m && r["run"] != 0)
            .unwrap_or_else(|| panic!("{m}: {report:#}"))["cells"]
            .clone()
    };
    assert_eq!(compared[0]["run"], 0, "{report:#}");
    assert_eq!(compared[0]["model"], "openai/gpt-4o-mini");
    assert!(
        compared[0]["cells"][8]
            .as_str()
            .unwrap()
            .contains("calculator/evaluate")
    );
    let four = row("openai/gpt-4o");
    assert_eq!(four[2], "60 / 6", "{report:#}");
    assert_eq!(four[7], "other");
    assert_eq!(four[8], "About 42.");
    assert_eq!(row("openai/gpt-4.1-nano")[2], "40 / 4");
    let requests = model.requests();
    assert_eq!(requests.len(), 5, "{report:#}");
    let fork = requests
        .iter()
        .find(|r| r.system_text().contains("Answer in words."))
        .expect("the fork's request");
    assert_eq!(fork.body["model"], "gpt-4o");
    assert_eq!(fork.tool_result("c1"), "42");
}

/// Evaluations in the web app: two runs of a dataset by two versions of an agent (started
/// through `POST /v1/evals`) are listed; compared, a case the second version fails shows why.
#[tokio::test]
async fn the_web_app_compares_evaluation_runs() {
    for size in SIZES {
        the_web_app_compares_evaluation_runs_at(size).await;
    }
}

async fn the_web_app_compares_evaluation_runs_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser("the web app's evaluations in Chromium", "rein-web-evals")
    else {
        return;
    };
    let model = serve(vec![], 3).await;
    model.route(
        "Version one.",
        vec![
            Canned::openai_text("It is 4."),
            Canned::openai_text("It is 9."),
        ],
    );
    model.route(
        "Version two.",
        vec![
            Canned::openai_text("It is 4."),
            Canned::openai_text("No idea."),
        ],
    );
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let http = reqwest::Client::new();
    let cases = json!([
        {"id": "two-plus-two", "input": "2+2?", "assert": [{"type": "contains", "value": "4"}]},
        {"id": "three-squared", "input": "3*3?", "assert": [{"type": "contains", "value": "9"}]},
    ]);
    let agent = json_call(
        &http,
        reqwest::Method::POST,
        &format!("{base}/v1/agents"),
        Some(json!({"name": "solver", "config": {"system_role": "Version one."}})),
    )
    .await;
    assert_eq!(agent["version"], 1, "{agent}");
    let first = json_call(
        &http,
        reqwest::Method::POST,
        &format!("{base}/v1/evals"),
        Some(json!({"dataset": "arithmetic", "cases": cases, "agents": ["solver"], "concurrency": 1})),
    )
    .await;
    assert_eq!(first["summary"][0]["passed"], 2, "{first:#}");
    let edited = json_call(
        &http,
        reqwest::Method::PUT,
        &format!("{base}/v1/agents/solver"),
        Some(json!({"system_role": "Version two."})),
    )
    .await;
    assert_eq!(edited["version"], 2, "{edited}");
    let second = json_call(
        &http,
        reqwest::Method::POST,
        &format!("{base}/v1/evals"),
        Some(json!({"dataset": "arithmetic", "cases": cases, "agents": ["solver@2"], "concurrency": 1})),
    )
    .await;
    assert_eq!(second["summary"][0]["passed"], 1, "{second:#}");
    let (report, out) = run_script_with(
        "app_evals.cjs",
        &base,
        &chromium,
        &playwright,
        &[("REIN_VIEWPORT", size)],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    assert_eq!(report["listed"].as_array().unwrap().len(), 2, "{report:#}");
    let heads = report["heads"].as_array().unwrap();
    assert!(
        heads[1].as_str().unwrap().starts_with("solver@2"),
        "newest first: {report:#}"
    );
    assert!(
        heads[2].as_str().unwrap().starts_with("solver@1"),
        "a run of the agent as it was is named by its version: {report:#}"
    );
    let row = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "three-squared")
        .unwrap_or_else(|| panic!("{report:#}"))
        .clone();
    assert_eq!(row["cells"][0]["pass"], false, "{report:#}");
    assert!(
        row["cells"][0]["text"]
            .as_str()
            .unwrap()
            .contains("contains: \"9\" is not in the answer"),
        "{report:#}"
    );
    assert_eq!(row["cells"][1]["pass"], true, "{report:#}");
    assert!(
        report["passed"][0].as_str().unwrap().starts_with("1/2"),
        "{report:#}"
    );
    assert!(
        report["passed"][1].as_str().unwrap().starts_with("2/2"),
        "{report:#}"
    );
}

/// A stream cut while its operation runs: the web app resumes it after the last event it saw
/// and shows the answer without a reload.
#[tokio::test]
async fn the_web_app_resumes_a_stream_cut_while_the_operation_runs() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the web app's stream resumption in Chromium",
        "rein-web-stream",
    )
    else {
        return;
    };
    // The answer takes a while: the operation still runs when the first stream is cut.
    let model = serve(
        vec![Canned::openai_text("Done slowly.").after(std::time::Duration::from_secs(2))],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("app_stream.cjs", &base, &chromium, &playwright).await;
    let shots = out.display();
    assert_eq!(report["ok"], true, "{report:#}\nscreenshots in {shots}");
    assert_eq!(
        report["cursors"],
        json!([null, "1"]),
        "one cut stream, resumed after its last event: {report:#}"
    );
}

/// Knowledge and memories in the web app: a folder uploaded to a new base (the binary file
/// skipped with why) and searched; an agent given the base searches it (the card's hits cite
/// their chunks) and answers with a citation that opens the chunk; the memory it learnt is
/// private to it, corrected, and learning turned off.
#[tokio::test]
async fn the_web_app_indexes_a_folder_cites_it_and_corrects_a_memory() {
    for size in SIZES {
        the_web_app_indexes_a_folder_cites_it_and_corrects_a_memory_at(size).await;
    }
}

async fn the_web_app_indexes_a_folder_cites_it_and_corrects_a_memory_at(size: &str) {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the web app's knowledge and memories in Chromium",
        "rein-web-knowledge",
    )
    else {
        return;
    };
    let folder = dir.join("docs");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("guide.md"),
        "# Guide\n\n## Install\n\nRun cargo install rein-cli to get the binary.\n",
    )
    .unwrap();
    std::fs::write(
        folder.join("notes.txt"),
        "The pump starts with the red button.\n",
    )
    .unwrap();
    std::fs::write(folder.join("blob.bin"), [0u8, 159, 146, 150, 0, 1, 2, 3]).unwrap();
    let model = serve(
        vec![
            Canned::openai_tools(&[(
                "k1",
                "knowledge__search",
                &json!({"query": "install"}).to_string(),
            )]),
            Canned::openai_text("Install it with cargo [docs/guide.md:3-5]."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_learning(&dir, &model).await;
    let (report, out) = run_script_with(
        "app_knowledge.cjs",
        &base,
        &chromium,
        &playwright,
        &[
            ("REIN_UI_FOLDER", &folder.to_string_lossy()),
            ("REIN_VIEWPORT", size),
        ],
    )
    .await;
    let shots = out.display();
    assert_eq!(
        report["ok"], true,
        "at {size}: {report:#}\nscreenshots in {shots}"
    );
    let text = |k: &str| report[k].as_str().unwrap_or_default().to_owned();
    let outcomes = report["outcomes"].to_string();
    assert!(
        outcomes.contains("docs/blob.bin skipped:") && outcomes.contains("docs/guide.md"),
        "{report:#}"
    );
    assert!(text("hit").contains("docs/guide.md:"), "{report:#}");
    assert!(
        report["searched"].as_array().is_some_and(|l| l
            .iter()
            .any(|c| c.as_str().is_some_and(|c| c.starts_with("[docs/guide.md:")))),
        "the search card's hits cite the guide: {report:#}"
    );
    assert_eq!(text("cite"), "[docs/guide.md:3-5]");
    assert!(
        text("passage").contains("cargo install rein-cli"),
        "{report:#}"
    );
    assert!(
        text("where").contains("manuals") && text("where").contains("Guide › Install"),
        "{report:#}"
    );
    assert_eq!(report["learning"], true, "learning starts on");
    assert!(text("memory").contains("only for helper"), "{report:#}");
    let http = reqwest::Client::new();
    let agent = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/agents/helper"),
        None,
    )
    .await;
    assert_eq!(agent["config"]["knowledge"], json!(["manuals"]), "{agent}");
    assert_eq!(agent["config"]["memory"], "agent", "{agent}");
    learnt_and_cited(&http, &base, &model).await;
}

/// `rein ARGS` on the database in `dir` (the one [`serve_ui`] serves).
fn rein_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
    c.env_clear()
        .envs(rein_testkit::coverage_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", dir)
        .args(["--db", &dir.join("rein.db").to_string_lossy()])
        .args(args);
    c
}

/// User `local`'s device `laptop` working in `dir/laptop` (`rein connect` with a device token
/// made on the database; killed when dropped), once the server at `base` lists it connected.
async fn laptop_connected(dir: &Path, base: &str) -> tokio::process::Child {
    let laptop = dir.join("laptop");
    std::fs::create_dir_all(&laptop).unwrap();
    let out = rein_in(
        dir,
        &["token", "create", "--user", "local", "--device", "laptop"],
    )
    .output()
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let device = rein_in(
        dir,
        &[
            "--server",
            base,
            "connect",
            "--name",
            "laptop",
            "--workdir",
            &laptop.to_string_lossy(),
        ],
    )
    .env("REIN_TOKEN", token)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .kill_on_drop(true)
    .spawn()
    .unwrap();
    get_until(
        &reqwest::Client::new(),
        &format!("{base}/v1/devices"),
        "the device connected",
        |list| list["devices"][0]["connected"] == true,
    )
    .await;
    device
}

/// An archive (`rein import`'s format) of user `local` holding conversations titled
/// `title` of `pairs` question/answer pairs each ("Question N." / "Answer N."), one message
/// after another.
fn conversations_archive(path: &Path, conversations: &[(&str, usize)]) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let at = |i: usize| {
        (chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap()
            + chrono::Duration::milliseconds(i as i64))
        .to_utc()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
    };
    let line = |out: &mut std::io::BufWriter<std::fs::File>, v: serde_json::Value| {
        writeln!(out, "{v}").unwrap();
    };
    line(
        &mut out,
        json!({"rein_export": 1, "exported_at": at(0), "user_id": "usr_archive", "user_name": "local"}),
    );
    let mut n = 0usize;
    for (c, (title, pairs)) in conversations.iter().enumerate() {
        let topic = format!("topic-perf-{c}");
        let id = |i: usize| format!("00000000-0000-7000-8000-{:012x}", c * 1_000_000 + i);
        line(
            &mut out,
            json!({"table": "topics", "row": {"active_message": id(2 * pairs - 1), "agent": null, "created_at": at(n), "id": topic, "owner": "usr_archive", "title": title, "title_source": null}}),
        );
        for i in 0..2 * pairs {
            n += 1;
            let (role, text) = if i % 2 == 0 {
                ("user", format!("Question {}.", i / 2 + 1))
            } else {
                ("assistant", format!("Answer {}.", i / 2 + 1))
            };
            let parent = (i > 0).then(|| id(i - 1));
            let body = json!({"id": id(i), "role": role, "content": [{"type": "text", "text": text}], "parent_id": parent, "created_at": at(n)});
            line(
                &mut out,
                json!({"table": "messages", "row": {"body": body.to_string(), "created_at": at(n), "id": id(i), "parent_id": parent, "role": role, "status": null, "thread_id": null, "tool_call_id": null, "topic_id": topic}}),
            );
        }
    }
    out.flush().unwrap();
}

/// The web app with a conversation of 10,000 messages: it opens at its latest message drawing
/// a window of them, and scrolling up draws more until the first; the figures (transfer, time
/// to open, longest frame, beside a 100-message conversation measured in the same run) are
/// printed, and kept in docs/performance.md.
#[tokio::test]
async fn the_web_app_opens_and_scrolls_a_conversation_of_ten_thousand_messages() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the web app with 10,000 messages in Chromium",
        "rein-web-perf",
    )
    else {
        return;
    };
    let archive = dir.join("big.jsonl");
    conversations_archive(&archive, &[("Short", 50), ("Long", 5_000)]);
    let imported = Command::new(env!("CARGO_BIN_EXE_rein"))
        .env_clear()
        .envs(rein_testkit::coverage_env())
        .env("REIN_HOME", &dir)
        .args(["--db", &dir.join("rein.db").to_string_lossy()])
        .args(["import", &archive.to_string_lossy()])
        .output()
        .await
        .unwrap();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let model = serve(vec![], 3).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("app_perf.cjs", &base, &chromium, &playwright).await;
    let shots = out.display();
    assert_eq!(report["ok"], true, "{report:#}\nscreenshots in {shots}");
    for size in ["short", "long"] {
        assert_eq!(report[size]["reached"], true, "{report:#}");
    }
    let drawn = report["long"]["drawn"].as_u64().unwrap();
    assert!(
        (1..=60).contains(&drawn),
        "the long conversation opens with a window of messages: {report:#}"
    );
    let at_top = report["long"]["drawnAtTop"].as_u64().unwrap();
    assert!(
        (1..=180).contains(&at_top),
        "at its first message it still draws a window, not all: {report:#}"
    );
    eprintln!(
        "web app with big data: transfer {} B gzipped; list drawn {} ms after navigation; open: {} ms for 10,000 messages, {} ms for 100 (anchor); longest frame scrolling to the first: {} ms over {} frames for 10,000, {} ms over {} frames for 100 (anchor)",
        report["transfer"],
        report["listMs"],
        report["long"]["openMs"],
        report["short"]["openMs"],
        report["long"]["longestFrameMs"],
        report["long"]["frames"],
        report["short"]["longestFrameMs"],
        report["short"]["frames"],
    );
    eprintln!(
        "frames over 50 ms scrolling 10,000: {}",
        report["long"]["over50"]
    );
}

/// Groups, devices and administration in the web app: a group of two agents in turn; the
/// connected device listed with its tools, then revoked; a user created, made an admin, given
/// a token that is revoked, and disabled by the admin.
#[tokio::test]
async fn the_web_app_makes_a_group_revokes_a_device_and_administers_users() {
    let Some(Browser {
        chromium,
        playwright,
        dir,
    }) = browser(
        "the web app's groups, devices and users in Chromium",
        "rein-web-people",
    )
    else {
        return;
    };
    // The server's no-auth user is `local`, an admin here (made before the server starts).
    let made = rein_in(&dir, &["user", "create", "local", "--role", "admin"])
        .output()
        .await
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let model = serve(vec![], 3).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let _device = laptop_connected(&dir, &base).await;
    let http = reqwest::Client::new();
    for name in ["critic", "writer"] {
        let made = json_call(
            &http,
            reqwest::Method::POST,
            &format!("{base}/v1/agents"),
            Some(json!({"name": name})),
        )
        .await;
        assert_eq!(made["name"], name, "{made}");
    }
    let (report, out) = run_script("app_people.cjs", &base, &chromium, &playwright).await;
    let shots = out.display();
    assert_eq!(report["ok"], true, "{report:#}\nscreenshots in {shots}");
    assert_eq!(report["order"], "Speaking order: critic → writer");
    assert_eq!(
        report["kept"],
        json!({"members": ["critic", "writer"], "policy": "round_robin", "rounds": "4"})
    );
    let device = report["device"].as_str().unwrap();
    assert!(
        device.contains("laptop") && device.contains("connected") && device.contains("files"),
        "{device}"
    );
    assert_eq!(
        report["users"],
        json!(["bob:admin:disabled", "local:admin:enabled"])
    );
    let token = report["token"].as_str().unwrap();
    assert!(token.starts_with("rein_"), "{report:#}");
    let row = report["tokenRow"].as_str().unwrap();
    assert!(
        row.contains("ci") && row.contains("read") && !row.contains("run") && !row.contains(token),
        "{row}"
    );
    assert!(
        report["revokedRow"].as_str().unwrap().contains("revoked"),
        "{report:#}"
    );
    let tokens = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/users/bob/tokens"),
        None,
    )
    .await;
    assert_eq!(tokens["tokens"][0]["label"], "ci", "{tokens}");
    assert_eq!(tokens["tokens"][0]["scopes"], json!(["read"]), "{tokens}");
    assert!(
        tokens["tokens"][0]["revoked_at"].is_string(),
        "revoked in the page: {tokens}"
    );
    let group = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/groups/council"),
        None,
    )
    .await;
    assert_eq!(
        group["config"]["members"],
        json!(["critic", "writer"]),
        "{group}"
    );
    assert_eq!(group["config"]["policy"], "round_robin", "{group}");
    assert_eq!(group["config"]["max_rounds"], 4, "{group}");
    let devices = json_call(
        &http,
        reqwest::Method::GET,
        &format!("{base}/v1/devices"),
        None,
    )
    .await;
    assert_eq!(devices["devices"], json!([]), "revoked: {devices}");
}

/// The skills picker sends the chosen skill with the message, and the inspector shows what
/// the model call admitted.
#[tokio::test]
async fn the_ui_admits_a_picked_skill_and_the_inspector_explains_the_call() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip(
                "the web UI's skills and context report in Chromium",
                &missing,
            );
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-skills-{}", OperationId::new()));
    let skill = dir.join("skills/pdf-tools");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: pdf-tools\ndescription: Read PDF files.\n---\nSKILL-BODY: read page by page.\n",
    )
    .unwrap();
    let model = serve(vec![Canned::openai_text("Read with the skill.")], 5).await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("skills.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .system_text()
            .contains("SKILL-BODY: read page by page.")
    );
    for shot in ["skills-1-picker", "skills-2-inspector"] {
        assert!(out.join(format!("{shot}.png")).exists(), "{shot}.png");
    }
}

/// The inbox: a failed heartbeat run's urgent brief is counted, listed and resolved in the UI;
/// then the agent's question in a conversation is answered with one of its options, and the
/// answer reaches the model as the call's result.
#[tokio::test]
async fn the_ui_inbox_resolves_an_urgent_brief_and_a_question_is_answered_by_an_option() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's inbox in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-inbox-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let question = json!({
        "question": "Deploy to production now?",
        "options": [{"key": "yes", "label": "Deploy"}, {"key": "no", "label": "Wait"}]
    });
    let model = serve(
        vec![
            Canned::json(400, &json!({"error": {"message": "model refused"}})),
            Canned::openai_tools(&[("q1", "ask_user__ask", &question.to_string())]),
            Canned::openai_text("Holding the release."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let http = reqwest::Client::new();
    let created = http
        .post(format!("{base}/v1/tasks"))
        .header("content-type", "application/json")
        .body(json!({"title": "Queue watch", "instruction": "Check the queue.", "every": "1s", "max_executions": 1}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(created.status().as_u16(), 201);
    // The run fails and its brief is written before the browser opens (the model's answers
    // are taken in order).
    get_until(
        &http,
        &format!("{base}/v1/briefs?unresolved=true"),
        "an urgent brief",
        |list| list["unread"] == 1,
    )
    .await;
    let (report, out) = run_script("inbox.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].tool_result("q1"), "The user chose `no` (Wait).");
}

#[tokio::test]
async fn the_ui_renders_markdown_safely_switches_versions_and_manages_conversations() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's conversation tree in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-tree-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let answer = "# Plan\n\nHere is **bold**, *italic* and `code`.\n\n```rust\nfn main() {\n    let x = 42; // the answer\n}\n```\n\n| Name | Value |\n|------|-------|\n| a | 1 |\n\n<img src=x onerror=\"window.__pwned=1\"> and [click](javascript:window.__pwned=2) and https://example.com/docs.";
    let model = serve(
        vec![
            Canned::openai_text(answer),
            Canned::openai_text("Second take."),
            Canned::openai_text("Edited answer."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let (report, out) = run_script("conversation.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    // What the model saw: the regeneration without the first answer, the edit without the
    // question it replaced.
    let conversation = |i: usize| model.requests()[i].conversation_texts();
    assert_eq!(conversation(1), ["Show me a plan"]);
    assert_eq!(conversation(2), ["Show me the edited plan"]);
    // Deleted with its operations' records kept.
    let http = reqwest::Client::new();
    let body = http
        .get(format!("{base}/v1/operations"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let ops: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let ops = ops.as_array().unwrap();
    assert_eq!(ops.len(), 3, "{ops:?}");
    let topic = ops[0]["topic_id"].as_str().unwrap();
    let tree = http
        .get(format!("{base}/v1/topics/{topic}/tree"))
        .send()
        .await
        .unwrap();
    assert_eq!(tree.status().as_u16(), 404);
}

#[tokio::test]
async fn the_ui_lists_a_connected_device_runs_a_conversation_on_it_and_revokes_it() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's devices in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-devices-{}", OperationId::new()));
    let laptop = dir.join("laptop");
    std::fs::create_dir_all(&laptop).unwrap();
    let write = json!({"path": "note.txt", "content": "from the browser"}).to_string();
    let model = serve(
        vec![
            Canned::openai_tools(&[("w1", "files__write", &write)]),
            Canned::openai_text("Done on the laptop."),
        ],
        3,
    )
    .await;
    let (_server, base) = serve_ui(&dir, &model.base).await;
    let _device = laptop_connected(&dir, &base).await;
    let (report, out) = run_script("devices.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    assert_eq!(
        std::fs::read_to_string(laptop.join("note.txt")).unwrap(),
        "from the browser"
    );
}

#[tokio::test]
async fn the_ui_uploads_to_a_knowledge_base_attaches_it_and_opens_a_citation() {
    let (chromium, playwright) = match prerequisites() {
        Ok(p) => p,
        Err(missing) => {
            rein_testkit::skip("the web UI's knowledge bases in Chromium", &missing);
            return;
        }
    };
    let dir = std::env::temp_dir().join(format!("rein-ui-knowledge-{}", OperationId::new()));
    std::fs::create_dir_all(&dir).unwrap();
    let model = serve(
        vec![Canned::openai_text("Install it with cargo [guide.md:3-5].")],
        3,
    )
    .await;
    // The system model names the conversation and learns one memory from it, which the
    // script corrects in the memories panel.
    let (_server, base) = serve_learning(&dir, &model).await;
    let (report, out) = run_script("knowledge.cjs", &base, &chromium, &playwright).await;
    assert_eq!(
        report["ok"],
        true,
        "{report:#}\nscreenshots in {}",
        out.display()
    );
    let http = reqwest::Client::new();
    // The agent was saved with the base, and the answer's request carried its chunk.
    get_until(
        &http,
        &format!("{base}/v1/agents/helper"),
        "the agent saved with its knowledge",
        |a| a["config"]["knowledge"] == json!(["manuals"]),
    )
    .await;
    learnt_and_cited(&http, &base, &model).await;
}
