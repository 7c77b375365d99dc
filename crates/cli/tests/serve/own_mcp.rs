//! MCP servers users define, end to end: the admin allows an origin (`rein serve
//! --user-mcp-origin`), a user defines the reference server there from another machine with
//! a token header read from stdin (`rein --server URL settings mcp set NAME URL
//! --headers-stdin`); their runs are offered its tools and call it with the header, another
//! user's runs are not offered them; an origin the admin did not allow is refused before
//! anything connects; the header is written nowhere in the clear and survives a rotation of
//! the secret key; a removed server is offered no more.

use super::*;

const TOKEN: &str = "mcp-alice-e2e-61f0c2d9";

#[tokio::test]
async fn a_users_mcp_server_serves_only_their_runs_with_its_sealed_headers() {
    let Some((_mcp, port)) = crate::cli::everything_over_http().await else {
        return;
    };
    let (proxy, heads) = crate::cli::recording_proxy(format!("127.0.0.1:{port}")).await;
    let e = env(vec![
        Canned::openai_tools(&[("m1", "issues__echo", r#"{"message":"from alice"}"#)]),
        Canned::openai_text("Echoed."),
        Canned::openai_text("Bob's answer."),
        Canned::openai_text("After rotation."),
        Canned::openai_text("Without it."),
    ])
    .await;
    let origin = format!("http://{proxy}");
    let rein = e
        .start_with(&["--user-mcp-origin", &origin], &[("REIN_LOG", "debug")])
        .await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let mut said = String::new();

    // An origin the admin did not allow: refused, naming the ones allowed.
    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &["settings", "mcp", "set", "other", "http://127.0.0.1:9/mcp"],
        )
        .await;
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("not allowed here") && err.contains(&origin),
        "{err}"
    );
    said += &(out + &err);

    let mut set = e.remote(
        &rein,
        Some(&alice),
        &[
            "settings",
            "mcp",
            "set",
            "issues",
            &format!("{origin}/mcp"),
            "--headers-stdin",
        ],
    );
    set.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = set.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("Authorization: Bearer {TOKEN}\nX-Team: core\n").as_bytes())
            .await
            .unwrap();
    }
    let (code, out, err) = shaped(child.wait_with_output().await.unwrap());
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("stored MCP server issues") && err.contains("echo"),
        "{err}"
    );
    said += &(out + &err);

    let (code, out, err) = e
        .on_server(&rein, &alice, &["settings", "mcp", "list", "--json"])
        .await;
    assert_eq!(code, 0, "{err}");
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["allowed_origins"], json!([origin]));
    assert_eq!(list["servers"][0]["name"], "issues");
    assert_eq!(
        list["servers"][0]["header_names"],
        json!(["Authorization", "X-Team"])
    );
    said += &(out + &err);
    // Bob has none of his own.
    let (code, out, err) = e
        .on_server(&rein, &bob, &["settings", "mcp", "list", "--json"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["servers"],
        json!([])
    );

    // What an agent editor offers: alice's server's tools beside the built-ins, not bob's.
    let tools = |token: &str| {
        let url = format!("{}/v1/tools", rein.base);
        let token = token.to_owned();
        async move {
            let answer = reqwest::Client::new()
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status().as_u16(), 200);
            serde_json::from_slice::<Value>(&answer.bytes().await.unwrap()).unwrap()
        }
    };
    let offered = tools(&alice).await;
    let kinds: Vec<(String, String)> = offered["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["identifier"].as_str().unwrap().to_owned(),
                t["kind"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("issues".into(), "mcp".into())),
        "{offered}"
    );
    assert!(
        kinds.contains(&("calculator".into(), "builtin".into())),
        "{offered}"
    );
    let issues = offered["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["identifier"] == "issues")
        .unwrap();
    assert!(
        issues["apis"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["name"] == "echo"),
        "{issues}"
    );
    assert_eq!(offered["unreachable"], json!({}));
    let bobs = tools(&bob).await;
    assert!(
        !bobs["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["identifier"] == "issues"),
        "{bobs}"
    );

    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &["run", "--approval", "auto-run", "Echo from alice."],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Echoed."), "{out}");
    said += &(out + &err);
    let (code, out, err) = e.on_server(&rein, &bob, &["run", "Hi."]).await;
    assert_eq!(code, 0, "{err}");
    said += &(out + &err);
    // Her run pinned her server's tools for her alone, nothing held; bob has no pins of it.
    let (code, out, err) = e
        .on_server(
            &rein,
            &alice,
            &["settings", "mcp", "pins", "issues", "--json"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    let pins: Value = serde_json::from_str(&out).unwrap();
    let echo = pins["pins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["tool"] == "echo")
        .unwrap_or_else(|| panic!("{pins}"));
    assert_eq!(echo["server"], "issues");
    assert_eq!(echo["hash"].as_str().unwrap().len(), 64);
    assert_eq!(echo["change"], Value::Null);
    assert_eq!(echo["diff"], Value::Null);
    let (code, out, err) = e
        .on_server(
            &rein,
            &bob,
            &["settings", "mcp", "pins", "issues", "--json"],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["pins"],
        json!([])
    );
    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &[
                "settings",
                "mcp",
                "approve",
                "issues",
                "echo",
                "--hash",
                &"0".repeat(64),
            ],
        )
        .await;
    assert_eq!(code, 1);
    assert!(err.contains("nothing to approve"), "{err}");

    let requests = e.model.requests();
    assert!(
        requests[0]
            .offered_tools()
            .contains(&"issues__echo".to_owned()),
        "alice's run is offered her server's tools"
    );
    let result = requests[1].tool_result("m1");
    assert!(result.contains("from alice"), "{result}");
    assert!(
        !requests[2]
            .offered_tools()
            .iter()
            .any(|t| t.starts_with("issues__")),
        "bob's run is not offered alice's server"
    );
    let seen = heads.lock().unwrap().clone();
    assert!(!seen.is_empty());
    for head in &seen {
        let head = head.to_ascii_lowercase();
        assert!(
            head.contains(&format!("authorization: bearer {TOKEN}"))
                && head.contains("x-team: core"),
            "{head}"
        );
    }

    // The operator rotates the secret key; a server started with the new one opens the
    // headers still.
    let mut log = rein.stderr.lock().unwrap().join("\n");
    assert!(log.contains("MCP server defined"), "{log}");
    drop(rein);
    let (new_key, told) = e.rotate_key(1).await;
    said += &told;
    heads.lock().unwrap().clear();
    let rein = e
        .start_with(
            &[
                "--secret-key-file",
                &new_key.display().to_string(),
                "--user-mcp-origin",
                &origin,
            ],
            &[("REIN_LOG", "debug")],
        )
        .await;
    let (code, out, err) = e.on_server(&rein, &alice, &["run", "Again."]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("After rotation."), "{out}");
    said += &(out + &err);
    assert!(
        e.model.requests()[3]
            .offered_tools()
            .contains(&"issues__echo".to_owned())
    );
    let seen = heads.lock().unwrap().clone();
    assert!(
        seen.iter().all(|h| h.contains(TOKEN)) && !seen.is_empty(),
        "the new server sent the header it opened with the new key"
    );

    // Removed, it is offered no more.
    let (code, out, err) = e
        .on_server(&rein, &alice, &["settings", "mcp", "remove", "issues"])
        .await;
    assert_eq!(code, 0, "{err}");
    said += &(out + &err);
    let (code, out, err) = e.on_server(&rein, &alice, &["run", "Once more."]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Without it."), "{out}");
    assert!(
        !e.model.requests()[4]
            .offered_tools()
            .iter()
            .any(|t| t.starts_with("issues__"))
    );

    log += &rein.stderr.lock().unwrap().join("\n");
    e.assert_nowhere(TOKEN, &log, &said);
}
