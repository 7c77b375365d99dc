//! `rein acp`: the official Agent Client Protocol TypeScript SDK (`@agentclientprotocol/sdk`,
//! installed by scripts/test into `.jsclients/`) spawning rein as an editor does.

use super::*;

/// An editor spawns `rein acp --agent careful`: a prompt streams its answer, shows its tool
/// call and asks permission (allowed); another's permission is rejected (the model reads it);
/// a free-text question ends a turn and the next prompt answers it; "always allow" on a shell
/// call covers the conversation's next one but not a command the guard flags (asked again,
/// rejected); a turn cancelled at its permission, and one cancelled while the model answers,
/// end `cancelled`; an unknown session is
/// refused; a second connection loads the session and sees the conversation replayed.
#[tokio::test]
async fn an_editor_drives_rein_acp_through_permissions_questions_and_a_cancel() {
    let Some(clients) = rein_testkit::js_clients(
        "the ACP SDK spawning `rein acp`",
        "@agentclientprotocol/sdk",
    ) else {
        return;
    };
    let e = env(Vec::new()).await;
    e.model.route(
        "ROLE-CAREFUL",
        vec![
            calc("k1", "2+2"),
            Canned::openai_text("2 + 2 = 4."),
            calc("k2", "3+3"),
            Canned::openai_text("I did not add them."),
            Canned::openai_tools(&[(
                "q1",
                "ask_user__ask",
                &json!({"question": "Which environment?"}).to_string(),
            )]),
            Canned::openai_text("Deploying to production."),
            shell_call("s1", "echo hi && pwd"),
            Canned::openai_text("Said hi."),
            shell_call("s2", "echo hi again"),
            Canned::openai_text("Said hi again."),
            shell_call("s3", "ls -l /etc/passwd"),
            Canned::openai_text("Not looking."),
            calc("k3", "4+4"),
            Canned::openai_text("One, two, three.").after(std::time::Duration::from_secs(5)),
        ],
    );
    let out = e
        .command(&[
            "agent",
            "create",
            "careful",
            "--system",
            "ROLE-CAREFUL: you calculate.",
            "--tools",
            "calculator,ask_user,shell",
            "--approval",
            "allow-list",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let project = e.dir.join("project");
    // The editor's session works in a folder of the project (`cwd`), inside --workdir.
    let folder = project.join("app");
    std::fs::create_dir_all(&folder).unwrap();
    let workdir = project.display().to_string();
    let cwd = std::fs::canonicalize(&folder)
        .unwrap()
        .display()
        .to_string();
    let spawn = spawned(&e, &["acp", "--agent", "careful", "--workdir", &workdir]);
    let r = node_report(
        "acp.cjs",
        &[&clients.to_string_lossy()],
        &[("REIN_ACP", &spawn.to_string()), ("ACP_CWD", &cwd)],
    )
    .await;
    assert!(
        r["outsideCwd"]
            .as_str()
            .is_some_and(|m| m.contains("outside the directory rein acp works in")),
        "{r:#}"
    );
    assert_eq!(r["init"]["protocolVersion"], 1, "{r:#}");
    let session = r["session"].as_str().unwrap().to_owned();
    assert_eq!(r["init"]["agentCapabilities"]["loadSession"], true);
    assert_eq!(r["init"]["agentInfo"]["name"], "rein");
    let turns = r["turns"].as_array().unwrap();
    let said = |t: &Value| -> String {
        t["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    };
    // Allowed.
    assert_eq!(turns[0]["stopReason"], "end_turn", "{r:#}");
    assert_eq!(said(&turns[0]), "2 + 2 = 4.", "{r:#}");
    let kinds: Vec<&str> = turns[0]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["toolCallId"] == "k1")
        .map(|u| u["status"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds.first(), Some(&"pending"), "{r:#}");
    assert_eq!(kinds.last(), Some(&"completed"), "{r:#}");
    let result = turns[0]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == "k1")
        .unwrap();
    assert_eq!(result["content"][0]["content"]["text"], "4", "{r:#}");
    assert_eq!(r["permissions"][0]["input"], json!({"expression": "2+2"}));
    assert_eq!(
        r["permissions"][0]["options"],
        json!(["allow_once", "allow_always", "reject_once"])
    );
    // Rejected: the model reads it.
    assert_eq!(said(&turns[1]), "I did not add them.", "{r:#}");
    assert!(
        e.model
            .requests()
            .iter()
            .any(|q| q.body.to_string().contains("rejected in the editor")),
        "the rejection reaches the model"
    );
    // A question ends a turn; the next prompt answers it.
    assert_eq!(turns[2]["stopReason"], "end_turn");
    assert_eq!(said(&turns[2]), "Which environment?", "{r:#}");
    assert_eq!(said(&turns[3]), "Deploying to production.", "{r:#}");
    assert!(
        e.model
            .requests()
            .iter()
            .any(|q| q.body.to_string().contains("Yes, deploy now.")),
        "the answer reaches the model"
    );
    // "Always" covers the next shell call of the conversation, not a guarded one; the shell
    // runs in the session's cwd.
    assert_eq!(said(&turns[4]), "Said hi.", "{r:#}");
    let ran = turns[4]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == "s1")
        .unwrap();
    assert_eq!(ran["status"], "completed", "{r:#}");
    assert!(
        ran["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains(&format!("hi\n{cwd}")),
        "the shell ran in the session's cwd: {r:#}"
    );
    assert_eq!(said(&turns[5]), "Said hi again.", "{r:#}");
    assert_eq!(said(&turns[6]), "Not looking.", "{r:#}");
    let asked: Vec<&str> = r["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["input"]["command"]
                .as_str()
                .or(p["input"]["expression"].as_str())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        asked,
        ["2+2", "3+3", "echo hi && pwd", "ls -l /etc/passwd", "4+4"],
        "the granted call is not asked; the guarded one is: {r:#}"
    );
    assert!(
        r["permissions"][3]["title"]
            .as_str()
            .unwrap()
            .contains("etc_passwd"),
        "the guard's reason is shown: {r:#}"
    );
    // Cancelled at its permission, and while the model was answering.
    assert_eq!(turns[7]["stopReason"], "cancelled", "{r:#}");
    assert_eq!(turns[8]["stopReason"], "cancelled", "{r:#}");
    assert_eq!(said(&turns[8]), "", "{r:#}");
    assert!(
        r["unknownSession"]
            .as_str()
            .unwrap()
            .contains("no session topic_nope"),
        "{r:#}"
    );
    assert_eq!(r["firstStderrSaysListening"], false, "no HTTP listener");
    // Loaded on a new connection: the conversation replayed.
    let replayed = r["replayed"].as_array().unwrap();
    assert!(
        replayed.contains(&json!(["user_message_chunk", "Add 2 and 2."]))
            && replayed.contains(&json!(["agent_message_chunk", "2 + 2 = 4."])),
        "{r:#}"
    );
    // The operations are the local user's, in the database like any other.
    let out = e.command(&["op", "list", "--json"]).output().await.unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        listed.lines().filter(|l| l.contains(&*session)).count(),
        8,
        "eight prompts ran as operations (the question's answer continued its own): {listed}"
    );
}

/// An editor that offers its file system and terminal does the file and shell work of its
/// session's operations: a read sees its unsaved buffer, a write and an edit reach its buffers
/// and not the disk, a command runs in its terminal under `rein sandbox` (in the session's
/// directory, writing inside it, refused outside it by the sandbox), a command the guard flags
/// is asked and, rejected, never reaches a terminal, one that runs too long is killed; every
/// terminal is released.
#[tokio::test]
async fn an_editor_offering_its_files_and_terminal_does_the_work() {
    let Some(clients) = rein_testkit::js_clients(
        "the ACP SDK as an editor with a file system and a terminal",
        "@agentclientprotocol/sdk",
    ) else {
        return;
    };
    if let rein_tools::sandbox::Mechanism::Unavailable(why) =
        rein_tools::sandbox::Mechanism::detect()
    {
        rein_testkit::skip("an_editor_offering_its_files_and_terminal", why);
        return;
    }
    let e = env(Vec::new()).await;
    let call =
        |id: &str, tool: &str, args: Value| Canned::openai_tools(&[(id, tool, &args.to_string())]);
    e.model.route(
        "ROLE-HANDY",
        vec![
            call("r1", "files__read", json!({"path": "notes.txt"})),
            Canned::openai_text("Read."),
            call(
                "w1",
                "files__write",
                json!({"path": "out/new.txt", "content": "written through the editor\n"}),
            ),
            Canned::openai_text("Wrote."),
            call(
                "e1",
                "files__edit",
                json!({"path": "notes.txt", "old_text": "unsaved line", "new_text": "edited line"}),
            ),
            Canned::openai_text("Edited."),
            shell_call("s1", "echo from-terminal && pwd && touch inside.txt"),
            Canned::openai_text("Ran."),
            shell_call("s2", "touch ../outside.txt"),
            Canned::openai_text("Could not."),
            shell_call("s3", "cat /etc/passwd"),
            Canned::openai_text("Not run."),
            call(
                "s4",
                "shell__run",
                json!({"command": "sleep 30", "timeout_secs": 1}),
            ),
            Canned::openai_text("Too slow."),
            shell_call("s5", "sleep 20"),
            Canned::openai_text("never said: the turn was cancelled"),
        ],
    );
    let out = e
        .command(&[
            "agent",
            "create",
            "handy",
            "--system",
            "ROLE-HANDY: you work on files.",
            "--tools",
            "files,shell",
            "--approval",
            "auto-run",
        ])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let project = e.dir.join("project");
    let folder = project.join("app");
    std::fs::create_dir_all(&folder).unwrap();
    let cwd = std::fs::canonicalize(&folder).unwrap();
    std::fs::write(cwd.join("notes.txt"), "saved on disk\n").unwrap();
    let notes = cwd.join("notes.txt").display().to_string();
    let buffers = json!({ &notes: "first line\nunsaved line from the editor\n" });
    let prompts = json!([
        "Read.", "Write.", "Edit.", "Run.", "Escape.", "Guarded.", "Slow.", "Wait."
    ]);
    let spawn = spawned(
        &e,
        &[
            "acp",
            "--agent",
            "handy",
            "--workdir",
            &project.display().to_string(),
        ],
    );
    let r = node_report(
        "acp_hands.cjs",
        &[&clients.to_string_lossy()],
        &[
            ("REIN_ACP", &spawn.to_string()),
            ("ACP_CWD", &cwd.display().to_string()),
            ("ACP_BUFFERS", &buffers.to_string()),
            ("ACP_PROMPTS", &prompts.to_string()),
        ],
    )
    .await;
    let turns = r["turns"].as_array().unwrap();
    let stops: Vec<&str> = turns
        .iter()
        .filter_map(|t| t["stopReason"].as_str())
        .collect();
    assert_eq!(
        stops,
        [&["end_turn"; 7][..], &["cancelled"]].concat(),
        "{r:#}"
    );
    let result = |id: &str| -> String {
        e.model
            .requests()
            .iter()
            .rev()
            .find(|q| {
                q.body
                    .to_string()
                    .contains(&format!("\"tool_call_id\":\"{id}\""))
            })
            .map(|q| q.tool_result(id))
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    // Read: the editor's buffer, worded as files.read words it.
    assert_eq!(result("r1"), "first line\nunsaved line from the editor\n");
    assert!(
        r["reads"].as_array().unwrap().contains(&json!(notes)),
        "{r:#}"
    );
    // Write: the editor's buffer, not the disk.
    let written = cwd.join("out/new.txt");
    assert_eq!(result("w1"), "wrote 27 bytes to out/new.txt");
    assert_eq!(
        r["writes"][written.display().to_string()],
        "written through the editor\n",
        "{r:#}"
    );
    assert!(!written.exists(), "rein did not write the file itself");
    // Edit: read from the buffer, replaced, written back through the editor.
    assert_eq!(result("e1"), "edited notes.txt");
    assert_eq!(
        r["writes"][&notes], "first line\nedited line from the editor\n",
        "{r:#}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "saved on disk\n"
    );
    // A command: in the editor's terminal, under `rein sandbox`, in the session's directory.
    let terminals = r["terminals"].as_array().unwrap();
    assert_eq!(
        terminals.len(),
        4,
        "the guarded command reached no terminal: {r:#}"
    );
    let first = &terminals[0];
    assert_eq!(first["command"], env!("CARGO_BIN_EXE_rein"), "{r:#}");
    assert_eq!(first["cwd"], cwd.display().to_string(), "{r:#}");
    let args: Vec<&str> = first["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        args,
        [
            "sandbox",
            "--sandbox",
            "workspace-write",
            "--workdir",
            &cwd.display().to_string(),
            "--",
            "sh",
            "-c",
            "echo from-terminal && pwd && touch inside.txt"
        ],
        "{r:#}"
    );
    assert_eq!(first["outputByteLimit"], 16384, "{r:#}");
    let ran = result("s1");
    assert!(
        ran.starts_with("exit code: 0\n--- output ---\nfrom-terminal\n")
            && ran.contains(&cwd.display().to_string()),
        "{ran}"
    );
    assert!(
        cwd.join("inside.txt").exists(),
        "the command wrote inside its directory"
    );
    let shown = turns[3]["updates"].as_array().unwrap().iter().any(|u| {
        u["toolCallId"] == "s1"
            && u["content"][0]["type"] == "terminal"
            && u["content"][0]["terminalId"] == first["id"]
    });
    assert!(
        shown,
        "the editor is shown the terminal under the call: {r:#}"
    );
    // The sandbox holds in the editor's terminal: no write outside the directory.
    let escaped = result("s2");
    assert!(escaped.starts_with("exit code: 1"), "{escaped}");
    assert!(
        !project.join("outside.txt").exists(),
        "the sandbox refused the write"
    );
    // The guard asked; the editor rejected; nothing ran.
    let asked: Vec<&str> = r["permissions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["input"]["command"].as_str())
        .collect();
    assert_eq!(
        asked,
        ["cat /etc/passwd"],
        "only the guarded command is asked: {r:#}"
    );
    assert!(
        result("s3").contains("rejected in the editor"),
        "{}",
        result("s3")
    );
    // Too slow: killed after its time.
    let slow = result("s4");
    assert!(slow.starts_with("timed out after 1 s"), "{slow}");
    // Cancelled while its command ran: the command is killed, the turn ends cancelled (no
    // model call after it).
    let waited = turns[7]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|u| u["toolCallId"] == "s5")
        .and_then(|u| u["content"][0]["content"]["text"].as_str())
        .unwrap_or_default();
    assert!(
        waited.starts_with("killed by a signal (SIGTERM)"),
        "{waited}"
    );
    assert_eq!(
        r["kills"],
        json!([terminals[2]["id"], terminals[3]["id"]]),
        "{r:#}"
    );
    // Every terminal let go.
    let mut released: Vec<&str> = r["released"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    released.sort_unstable();
    assert_eq!(released, ["term-0", "term-1", "term-2", "term-3"], "{r:#}");
}

fn shell_call(id: &str, command: &str) -> Canned {
    Canned::openai_tools(&[(id, "shell__run", &json!({"command": command}).to_string())])
}
