//! `rein login URL`: the CLI on another machine asks the server for a login, the person
//! approves its code while signed in (what the web UI's `#login=CODE` dialog sends), and the
//! CLI receives a token of theirs once and keeps it as a profile (`servers.toml`, 0600) that
//! `--server NAME` uses; `rein logout` revokes that token on the server. `--token-stdin` signs
//! in with a token instead.

use super::*;

/// `rein ARGS` on the other machine: its own `REIN_HOME`, no token in the environment.
fn elsewhere(e: &Env, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rein"));
    c.args(args);
    c.env_clear()
        .envs(rein_testkit::coverage_env())
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("REIN_HOME", e.dir.join("elsewhere"))
        .env("HOSTNAME", "laptop");
    c
}

async fn run(c: &mut Command) -> (i32, String, String) {
    shaped(c.output().await.unwrap())
}

#[tokio::test]
async fn login_is_approved_by_code_kept_as_a_profile_and_logout_revokes_its_token() {
    let e = env(vec![]).await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;

    let mut login = elsewhere(&e, &["login", &rein.base, "--name", "work"])
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(login.stderr.take().unwrap()).lines();
    let asked = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("login says where to approve")
        .unwrap()
        .unwrap();
    let code = asked
        .split("approve code ")
        .nth(1)
        .and_then(|r| r.split(';').next())
        .unwrap_or_else(|| panic!("{asked}"))
        .to_owned();
    assert!(
        asked.contains(&format!("{}/#login={code}", rein.base)),
        "{asked}"
    );
    // What the web UI shows before approving, then the approval.
    let (status, ask) = e
        .call(
            &rein,
            "GET",
            &format!("/v1/logins/{code}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 200, "{ask}");
    assert_eq!(ask["client"], "rein CLI on laptop");
    let (status, _) = e
        .call(&rein, "GET", &format!("/v1/logins/{code}"), None, None)
        .await;
    assert_eq!(status, 401, "approving needs a signed-in person");
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/logins/not-a-code/approve",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = e
        .call(
            &rein,
            "POST",
            "/v1/logins/BCDF-GHJK/approve",
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 404, "no such login");
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/logins/{code}/approve"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let (status, _) = e
        .call(
            &rein,
            "POST",
            &format!("/v1/logins/{code}/approve"),
            Some(&bob),
            None,
        )
        .await;
    assert_eq!(status, 404, "approved once");
    let done = tokio::time::timeout(Duration::from_secs(20), login.wait())
        .await
        .expect("login ends once approved")
        .unwrap();
    let mut rest = String::new();
    while let Ok(Some(l)) = lines.next_line().await {
        rest.push_str(&l);
        rest.push('\n');
    }
    assert!(done.success(), "{rest}");
    assert!(
        rest.contains("signed in to") && rest.contains("as alice"),
        "{rest}"
    );

    // The profile holds alice's new token, readable by this user only.
    let file = e.dir.join("elsewhere/servers.toml");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    let kept: toml::Value = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let token = kept["servers"]["work"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        kept["servers"]["work"]["url"].as_str(),
        Some(rein.base.as_str())
    );
    let (code_, _, err) = run(&mut elsewhere(
        &e,
        &["--server", "work", "agent", "create", "from-laptop"],
    ))
    .await;
    assert_eq!(code_, 0, "{err}");
    let (status, _) = e
        .call(&rein, "GET", "/v1/agents/from-laptop", Some(&alice), None)
        .await;
    assert_eq!(status, 200, "the profile acts as alice");
    // A URL finds the profile's token too; an unknown name says what there is.
    let (code_, _, err) = run(&mut elsewhere(
        &e,
        &["--server", &rein.base, "agent", "show", "from-laptop"],
    ))
    .await;
    assert_eq!(code_, 0, "{err}");
    let (code_, _, err) = run(&mut elsewhere(&e, &["--server", "home", "op", "list"])).await;
    assert_eq!(code_, 1);
    assert!(err.contains("there are work"), "{err}");

    // Logging out revokes the token on the server and forgets the profile.
    let (code_, _, err) = run(&mut elsewhere(&e, &["logout"])).await;
    assert_eq!(code_, 0, "{err}");
    assert!(err.contains("its token is revoked"), "{err}");
    let (status, _) = e.call(&rein, "GET", "/v1/agents", Some(&token), None).await;
    assert_eq!(status, 401, "the token no longer works");
    let (status, _) = e.call(&rein, "GET", "/v1/agents", Some(&alice), None).await;
    assert_eq!(status, 200, "alice's other tokens do");
    let (code_, _, err) = run(&mut elsewhere(&e, &["--server", "work", "op", "list"])).await;
    assert_eq!(code_, 1);
    assert!(err.contains("there are none"), "{err}");

    // A token on stdin: checked before it is kept.
    for (token, ok) in [("rein_not-a-token", false), (bob.as_str(), true)] {
        use tokio::io::AsyncWriteExt;
        let mut c = elsewhere(&e, &["login", &rein.base, "--name", "b", "--token-stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = c.stdin.take().unwrap();
        stdin
            .write_all(format!("{token}\n").as_bytes())
            .await
            .unwrap();
        drop(stdin);
        let out = c.wait_with_output().await.unwrap();
        assert_eq!(
            out.status.success(),
            ok,
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (code_, _, err) = run(&mut elsewhere(&e, &["--server", "b", "agent", "list"])).await;
    assert_eq!(code_, 0, "{err}");
}

#[tokio::test]
async fn a_login_nobody_approves_is_refused_when_polled_and_the_public_route_is_bounded() {
    let e = env(vec![]).await;
    let rein = e.start(&[]).await;
    let (status, started) = e
        .call(
            &rein,
            "POST",
            "/v1/logins",
            None,
            Some(json!({"client": "probe"})),
        )
        .await;
    assert_eq!(status, 201, "{started}");
    assert_eq!(started["expires_in"], 600);
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/login-tokens",
            None,
            Some(json!({"login": started["login"]})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (409, Some("authorization_pending"))
    );
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/login-tokens",
            None,
            Some(json!({"login": "login_guessed"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("expired_token"))
    );
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/logins",
            None,
            Some(json!({"client": "  "})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    // At most 100 wait at once: the 101st is a 429 naming the limit.
    for _ in 1..100 {
        let (status, _) = e
            .call(
                &rein,
                "POST",
                "/v1/logins",
                None,
                Some(json!({"client": "flood"})),
            )
            .await;
        assert_eq!(status, 201);
    }
    let (status, body) = e
        .call(
            &rein,
            "POST",
            "/v1/logins",
            None,
            Some(json!({"client": "flood"})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (429, Some("too_many_logins"))
    );
}
