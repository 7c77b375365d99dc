//! Roles end to end: `rein serve --init-admin NAME` makes the first admin and prints their
//! token once; an admin manages users from another machine (`rein --server URL user …`), a
//! member cannot; an admin makes and revokes users' tokens from there (`rein token`);
//! disabling a user stops their tokens at once and ends their open event streams; the
//! operator manages users on the database's machine (`rein user …`).

use super::*;

#[tokio::test]
async fn the_first_admin_manages_users_and_disabling_one_ends_their_streams() {
    let e = env(vec![ledger("l1", "x")]).await;
    let rein = e.start_with(&["--init-admin", "root"], &[]).await;
    rein.wait_for("their token (shown once): ").await;
    let root = rein
        .stderr
        .lock()
        .unwrap()
        .iter()
        .find_map(|l| {
            l.split("their token (shown once): ")
                .nth(1)
                .map(str::to_owned)
        })
        .unwrap();
    let bob = e.token("bob").await;

    let (code, out, err) = e.on_server(&rein, &root, &["user", "list"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("root") && out.contains("admin"), "{out}");
    assert!(out.contains("bob") && out.contains("member"), "{out}");
    let (code, out, err) = e
        .on_server(&rein, &root, &["user", "create", "dave", "--role", "admin"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("dave") && out.contains("admin"), "{out}");
    let (code, _, err) = e.on_server(&rein, &bob, &["user", "list"]).await;
    assert_eq!(code, 1, "a member has no user admin");
    assert!(err.contains("no such route"), "{err}");

    // Bob's operation waits for an approval with its stream open; disabling bob ends it.
    let (status, created) = e
        .call(
            &rein,
            "POST",
            "/v1/operations",
            Some(&bob),
            Some(json!({"input": "pay", "approval": "allow-list"})),
        )
        .await;
    assert_eq!(status, 202, "{created}");
    let op = created["operation_id"].as_str().unwrap().to_owned();
    let mut stream = e.events(&rein, &op, &bob, None).await;
    let mut seen = Vec::new();
    stream.until("human_approve_required", &mut seen).await;
    let (code, out, err) = e.on_server(&rein, &root, &["user", "disable", "bob"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("disabled"), "{out}");
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        while stream.next().await.is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "bob's stream stayed open after he was disabled"
    );
    let (status, _) = e
        .call(&rein, "GET", "/v1/operations", Some(&bob), None)
        .await;
    assert_eq!(status, 401);

    // The operator, on the database's machine, enables him again.
    let out = e
        .command(&["user", "enable", "bob"])
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, _) = e
        .call(&rein, "GET", "/v1/operations", Some(&bob), None)
        .await;
    assert_eq!(status, 200);
    let out = e.command(&["user", "list"]).output().await.unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("dave") && l.contains("admin")),
        "{listed}"
    );
    // An admin makes and revokes a user's tokens from another machine; a member cannot.
    let (code, out, err) = e
        .on_server(
            &rein,
            &root,
            &["token", "create", "--user", "bob", "--label", "ci"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let made = out.trim().to_owned();
    assert!(made.starts_with("rein_"), "{out}");
    let (status, _) = e.call(&rein, "GET", "/v1/me", Some(&made), None).await;
    assert_eq!(status, 200, "the new token is bob's");
    let (code, out, _) = e
        .on_server(&rein, &root, &["token", "list", "--user", "bob"])
        .await;
    assert_eq!(code, 0);
    let id = out
        .lines()
        .find(|l| l.contains("  ci  "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    let (code, _, err) = e
        .on_server(&rein, &root, &["token", "revoke", "--user", "bob", &id])
        .await;
    assert_eq!(code, 0, "{err}");
    let (status, _) = e.call(&rein, "GET", "/v1/me", Some(&made), None).await;
    assert_eq!(status, 401, "revoked at once");
    let (code, _, err) = e
        .on_server(&rein, &root, &["token", "revoke", "--user", "bob", &id])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no active token"), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &root, &["token", "create", "--user", "nobody"])
        .await;
    assert_eq!(code, 1, "a server's admin creates users with `user create`");
    assert!(err.contains("no user `nobody`"), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &bob, &["token", "list", "--user", "root"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no such route"), "{err}");
    // A member lists and revokes their own tokens without --user; a token cannot make one.
    let (code, out, err) = e.on_server(&rein, &bob, &["token", "list", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    let own: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        own.iter()
            .any(|t| t["id"] == id.as_str() && t["revoked_at"].is_string()),
        "bob's own list holds the token revoked above: {out}"
    );
    let (code, _, err) = e.on_server(&rein, &bob, &["token", "revoke", &id]).await;
    assert_eq!(code, 1);
    assert!(err.contains("you have no active token"), "{err}");
    let (code, _, err) = e
        .on_server(&rein, &bob, &["token", "create", "--user", "bob"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("no such route"), "{err}");
    let local = e.command(&["token", "list"]).output().await.unwrap();
    assert!(!local.status.success());
    assert!(
        String::from_utf8_lossy(&local.stderr).contains("--user NAME"),
        "{local:?}"
    );

    // Passwords and sessions from another machine: the admin sets bob's (read from stdin),
    // bob signs in, the admin lists and ends his sessions.
    let mut set = e.remote(&rein, Some(&root), &["user", "password", "bob"]);
    set.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = set.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"bobs long password\n").await.unwrap();
    }
    let (code, _, err) = shaped(child.wait_with_output().await.unwrap());
    assert_eq!(code, 0, "{err}");
    let signed_in = json!({"name": "bob", "password": "bobs long password"});
    let (status, session) = e
        .call(&rein, "POST", "/v1/sessions", None, Some(signed_in))
        .await;
    assert_eq!(status, 201, "{session}");
    let (code, out, err) = e
        .on_server(&rein, &root, &["user", "sessions", "bob"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ses_")).count(),
        1,
        "{out}"
    );
    let (code, _, err) = e
        .on_server(&rein, &root, &["user", "sessions", "bob", "--end"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("1 session ended"), "{err}");

    // A read-only token that expires: it reads, and changes nothing.
    let (code, out, err) = e
        .on_server(
            &rein,
            &root,
            &[
                "token",
                "create",
                "--user",
                "bob",
                "--scope",
                "read",
                "--expires-in",
                "1",
                "--label",
                "reader",
            ],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let reader = out.trim().to_owned();
    let (status, me) = e.call(&rein, "GET", "/v1/me", Some(&reader), None).await;
    assert_eq!((status, me["name"].as_str()), (200, Some("bob")));
    let (code, _, err) = e
        .on_server(&rein, &reader, &["user", "password", "bob"])
        .await;
    assert_eq!(
        code, 1,
        "no password on stdin is refused before anything is sent"
    );
    assert!(err.contains("no password on stdin"), "{err}");
    let (status, answer) = e
        .call(
            &rein,
            "POST",
            "/v1/agents",
            Some(&reader),
            Some(json!({"name": "helper", "config": {}})),
        )
        .await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (403, Some("insufficient_scope")),
        "{answer}"
    );
    let (code, out, _) = e
        .on_server(&rein, &root, &["token", "list", "--user", "bob"])
        .await;
    assert_eq!(code, 0);
    let listed = out
        .lines()
        .find(|l| l.contains("  reader  "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        listed.contains("scopes read") && listed.contains("expires "),
        "{listed}"
    );

    // Caps over the server's defaults, set from another machine: the flags given change,
    // `--clear` returns to the defaults.
    let (code, out, err) = e
        .on_server(
            &rein,
            &root,
            &["user", "caps", "bob", "--daily-cost", "0.5"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("caps 0.500000 USD/day"), "{out}");
    let (code, out, _) = e
        .on_server(
            &rein,
            &root,
            &["user", "caps", "bob", "--monthly-tokens", "9000"],
        )
        .await;
    assert_eq!(code, 0);
    assert!(
        out.contains("caps 0.500000 USD/day, 9000 tokens/month"),
        "{out}"
    );
    let (code, out, _) = e
        .on_server(&rein, &root, &["user", "caps", "bob", "--clear"])
        .await;
    assert_eq!(code, 0);
    assert!(!out.contains("caps"), "{out}");
    let (code, _, err) = e
        .on_server(&rein, &bob, &["user", "caps", "bob", "--daily-cost", "100"])
        .await;
    assert_eq!(code, 1, "a member sets no caps, not even their own");
    assert!(err.contains("no such route"), "{err}");

    // The last admins cannot lock the server out: root cannot disable root.
    let (code, _, err) = e
        .on_server(&rein, &root, &["user", "disable", "root"])
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("cannot disable yourself"), "{err}");
}
