//! `rein --server URL settings workdir`: a user shows, chooses and forgets the directory their
//! operations work in on a server started with `--user-workdir-root`; the operation they run
//! next works there (its file tool writes into it); here, without a server, the command says
//! where such settings live.

use super::*;

#[tokio::test]
async fn a_user_chooses_their_workdir_from_another_machine_and_their_run_works_there() {
    let e = env(vec![
        Canned::openai_tools(&[(
            "w1",
            "files__write",
            &json!({"path": "note.txt", "content": "written here"}).to_string(),
        )]),
        Canned::openai_text("Written."),
    ])
    .await;
    let root = e.dir.join("workdirs");
    let mine = root.join("alice");
    std::fs::create_dir_all(&mine).unwrap();
    let root_arg = root.display().to_string();
    let rein = e.start_with(&["--user-workdir-root", &root_arg], &[]).await;
    let alice = e.token("alice").await;

    let (code, out, err) = e.on_server(&rein, &alice, &["settings", "workdir"]).await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(none"), "{out}");
    let mine_arg = mine.display().to_string();
    let (code, out, err) = e
        .on_server(&rein, &alice, &["settings", "workdir", &mine_arg])
        .await;
    assert_eq!(code, 0, "{err}");
    let canonical = std::fs::canonicalize(&mine).unwrap().display().to_string();
    assert_eq!(out.trim(), canonical);
    let (code, _, err) = e
        .on_server(&rein, &alice, &["settings", "workdir", "/"])
        .await;
    assert_eq!(code, 1);
    assert!(
        err.contains("outside the directories this server allows"),
        "{err}"
    );

    let (code, _, err) = e
        .on_server(
            &rein,
            &alice,
            &["run", "--approval", "auto-run", "Write a note."],
        )
        .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(mine.join("note.txt")).unwrap(),
        "written here"
    );

    let (code, out, err) = e
        .on_server(&rein, &alice, &["settings", "workdir", "--clear"])
        .await;
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(none"), "{out}");
    let out = e.command(&["settings", "workdir"]).output().await.unwrap();
    let (code, _, err) = shaped(out);
    assert_eq!(code, 1);
    assert!(err.contains("give --server"), "{err}");
}
