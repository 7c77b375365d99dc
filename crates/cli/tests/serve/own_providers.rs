//! Providers users bring, end to end: a user stores their key from another machine (`rein
//! --server URL settings provider set openai --key-stdin`), their runs send it and another
//! user's send the server's; nothing the processes wrote (the server's debug log, every
//! command's output, the database's files) holds the key in the clear; the operator rotates
//! the secret key on the database's machine and a server started with the new one still
//! opens it.

use super::*;

const KEY: &str = "sk-alice-e2e-4b1d9c07aa";

fn authorization(r: &rein_model::testing::Recorded) -> String {
    r.header("authorization").to_owned()
}

#[tokio::test]
async fn a_users_own_key_serves_their_runs_and_is_written_nowhere_in_the_clear() {
    let e = env(vec![
        Canned::openai_text("Alice's answer."),
        Canned::openai_text("Bob's answer."),
        Canned::openai_text("Alice again."),
    ])
    .await;
    let rein = e.start(&[("REIN_LOG", "debug")]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let mut said = String::new();

    let mut set = e.remote(
        &rein,
        Some(&alice),
        &["settings", "provider", "set", "openai", "--key-stdin"],
    );
    set.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = set.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(format!("{KEY}\n").as_bytes())
            .await
            .unwrap();
    }
    let (code, out, err) = shaped(child.wait_with_output().await.unwrap());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("openai") && err.contains("yours"), "{err}");
    said += &(out + &err);

    let (code, out, err) = e
        .on_server(&rein, &alice, &["settings", "provider", "list", "--json"])
        .await;
    assert_eq!(code, 0, "{err}");
    let list: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list[0]["provider"], "openai");
    assert_eq!(list[0]["has_key"], true);
    said += &(out + &err);

    let (code, out, err) = e.on_server(&rein, &alice, &["run", "Hi."]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Alice's answer."), "{out}");
    said += &(out + &err);
    let (code, out, err) = e.on_server(&rein, &bob, &["run", "Hi."]).await;
    assert_eq!(code, 0, "{err}");
    said += &(out + &err);
    let (code, out, err) = e.on_server(&rein, &alice, &["op", "list", "--json"]).await;
    assert_eq!(code, 0, "{err}");
    said += &(out + &err);

    let requests = e.model.requests();
    assert_eq!(authorization(&requests[0]), format!("Bearer {KEY}"));
    assert_eq!(authorization(&requests[1]), "Bearer sk-test");

    // Here (no --server) the environment holds keys: the command says so.
    let out = e
        .command(&["settings", "provider", "list"])
        .output()
        .await
        .unwrap();
    let (code, _, err) = shaped(out);
    assert_eq!(code, 1);
    assert!(err.contains("give --server"), "{err}");

    // The operator moves the stored keys to a new secret key; a server started with it opens
    // Alice's key still.
    let mut log = rein.stderr.lock().unwrap().join("\n");
    assert!(log.contains("provider settings stored"), "{log}");
    drop(rein);
    let (new_key, told) = e.rotate_key(1).await;
    said += &told;
    let rein = e
        .start_with(
            &["--secret-key-file", &new_key.display().to_string()],
            &[("REIN_LOG", "debug")],
        )
        .await;
    let (code, out, err) = e.on_server(&rein, &alice, &["run", "Again."]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Alice again."), "{out}");
    said += &(out + &err);
    assert_eq!(
        authorization(&e.model.requests()[2]),
        format!("Bearer {KEY}")
    );

    log += &rein.stderr.lock().unwrap().join("\n");
    e.assert_nowhere(KEY, &log, &said);
}

/// A knowledge base's embeddings are its owner's calls: the server's ingester embeds alice's
/// file and her search's query with her own key; bob's base, with none of his own, uses the
/// server's.
#[tokio::test]
async fn a_users_knowledge_is_embedded_with_their_own_key() {
    let e = env(vec![
        Canned::openai_embeddings(&[&[1.0, 0.0]]),
        Canned::openai_embeddings(&[&[1.0, 0.0]]),
        Canned::openai_embeddings(&[&[0.0, 1.0]]),
    ])
    .await;
    let rein = e.start(&[]).await;
    let alice = e.token("alice").await;
    let bob = e.token("bob").await;
    let (status, body) = e
        .call(
            &rein,
            "PUT",
            "/v1/settings/providers/openai",
            Some(&alice),
            Some(json!({"api_key": KEY})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let docs = e.dir.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    std::fs::write(
        docs.join("notes.md"),
        "# Notes\n\nThe code word is aubergine.\n",
    )
    .unwrap();
    let docs = docs.display().to_string();
    for (token, base) in [(&alice, "hers"), (&bob, "his")] {
        let (code, _, err) = e
            .on_server(
                &rein,
                token,
                &[
                    "kb",
                    "create",
                    base,
                    "--embed-model",
                    "openai/text-embedding-3-small",
                ],
            )
            .await;
        assert_eq!(code, 0, "{err}");
        let (code, _, err) = e.on_server(&rein, token, &["kb", "add", base, &docs]).await;
        assert_eq!(code, 0, "{err}");
        if base == "hers" {
            let (code, out, err) = e
                .on_server(&rein, token, &["kb", "search", base, "code word"])
                .await;
            assert_eq!(code, 0, "{err}");
            assert!(out.contains("aubergine"), "{out}");
        }
    }
    let embeddings: Vec<String> = e
        .model
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/embeddings"))
        .map(authorization)
        .collect();
    assert_eq!(
        embeddings,
        [
            format!("Bearer {KEY}"),
            format!("Bearer {KEY}"),
            "Bearer sk-test".to_owned()
        ],
        "alice's file and query with her key, bob's file with the server's"
    );
}
