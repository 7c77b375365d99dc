//! The built-in tools and the registry, against a real filesystem, a real shell and a real
//! (loopback) HTTP server.

use rein_core::OperationId;
use rein_tools::web::{WebConfig, html_to_text, is_internal};
use rein_tools::{BuiltinConfig, ToolContext, ToolRegistry};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn workdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rein-tools-{}", OperationId::new()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "fn one() {}\nfn two() {}\n// TODO: three\n",
    )
    .unwrap();
    std::fs::write(dir.join("README.md"), "# demo\n").unwrap();
    dir
}

fn cx(dir: &std::path::Path) -> ToolContext {
    ToolContext {
        topic: None,
        earlier_calls: 0,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        operation_id: OperationId::new(),
        working_directory: Some(dir.to_path_buf()),
        idempotency_key: "k".into(),
        available_tools: Vec::new(),
        scope: "user:test/agent:test".into(),
        skill_dirs: Vec::new(),
        question_briefs: false,
        sandbox: Default::default(),
    }
}

async fn call(
    reg: &ToolRegistry,
    cx: &ToolContext,
    tool: &str,
    api: &str,
    args: Value,
) -> (bool, String) {
    reg.validate(tool, api, &args)
        .unwrap_or_else(|e| panic!("{tool}.{api} rejected {args}: {e}"));
    let out = reg.get(tool).unwrap().call(cx, api, args).await.unwrap();
    (out.success, out.content)
}

fn registry() -> ToolRegistry {
    let config = BuiltinConfig {
        web: WebConfig {
            allow: vec!["127.0.0.1".parse().unwrap()],
            timeout: Duration::from_secs(5),
            ..Default::default()
        },
        shell: rein_tools::shell::ShellConfig {
            max_output: 1000,
            ..Default::default()
        },
        interpreter: Default::default(),
    };
    ToolRegistry::with_builtins(&config).unwrap()
}

#[test]
fn arguments_are_validated_against_the_schema_with_readable_errors() {
    let reg = registry();
    assert!(
        reg.validate("calculator", "evaluate", &json!({"expression": "1+1"}))
            .is_ok()
    );
    let e = reg
        .validate("calculator", "evaluate", &json!({}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("\"expression\" is a required property"), "{e}");
    let e = reg
        .validate("files", "read", &json!({"path": 3, "mode": "x"}))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("at /path") && e.contains("not of type \"string\""),
        "{e}"
    );
    assert!(e.contains("mode"), "{e}");
    assert_eq!(
        reg.validate("files", "nope", &json!({})).unwrap_err(),
        rein_tools::ArgumentsRefused::UnknownApi {
            identifier: "files".into(),
            api: "nope".into()
        }
    );
}

#[tokio::test]
async fn files_read_write_edit_list_glob_grep_inside_the_working_directory() {
    let dir = workdir();
    let (reg, cx) = (registry(), cx(&dir));
    assert_eq!(
        call(
            &reg,
            &cx,
            "files",
            "read",
            json!({"path": "src/lib.rs", "start_line": 2, "end_line": 2})
        )
        .await,
        (true, "fn two() {}\n".into())
    );
    assert!(
        call(
            &reg,
            &cx,
            "files",
            "write",
            json!({"path": "notes/a.txt", "content": "alpha beta"})
        )
        .await
        .0
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes/a.txt")).unwrap(),
        "alpha beta"
    );
    assert!(
        call(
            &reg,
            &cx,
            "files",
            "edit",
            json!({"path": "notes/a.txt", "old_text": "beta", "new_text": "gamma"})
        )
        .await
        .0
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes/a.txt")).unwrap(),
        "alpha gamma"
    );
    let (ok, msg) = call(
        &reg,
        &cx,
        "files",
        "edit",
        json!({"path": "src/lib.rs", "old_text": "fn ", "new_text": "pub fn "}),
    )
    .await;
    assert!(!ok && msg.contains("occurs 2 times"), "{msg}");
    assert_eq!(
        call(&reg, &cx, "files", "list", json!({})).await.1,
        "README.md\nnotes/\nsrc/"
    );
    assert_eq!(
        call(&reg, &cx, "files", "glob", json!({"pattern": "**/*.rs"}))
            .await
            .1,
        "src/lib.rs"
    );
    assert_eq!(
        call(&reg, &cx, "files", "grep", json!({"pattern": "TODO"}))
            .await
            .1,
        "src/lib.rs:3: // TODO: three"
    );
}

#[tokio::test]
async fn files_refuse_every_way_out_of_the_working_directory() {
    let dir = workdir();
    let (reg, cx) = (registry(), cx(&dir));
    std::os::unix::fs::symlink("/etc", dir.join("etc-link")).unwrap();
    std::os::unix::fs::symlink(dir.join("loop-a"), dir.join("loop-b")).unwrap();
    std::os::unix::fs::symlink(dir.join("loop-b"), dir.join("loop-a")).unwrap();
    let cases = [
        (
            "read",
            json!({"path": "../outside.txt"}),
            "outside the working directory",
        ),
        (
            "read",
            json!({"path": "/etc/passwd"}),
            "outside the working directory",
        ),
        (
            "read",
            json!({"path": "etc-link/passwd"}),
            "through a symbolic link",
        ),
        (
            "write",
            json!({"path": "etc-link/evil", "content": "x"}),
            "through a symbolic link",
        ),
        ("read", json!({"path": "loop-a"}), "cannot be resolved"),
        (
            "list",
            json!({"path": "src/../../"}),
            "outside the working directory",
        ),
    ];
    for (api, args, want) in cases {
        let (ok, msg) = call(&reg, &cx, "files", api, args.clone()).await;
        assert!(!ok, "{api} {args} must be refused");
        assert!(msg.contains(want), "{api} {args}: {msg}");
    }
    let none = ToolContext {
        topic: None,
        earlier_calls: 0,
        job: Default::default(),
        files_owner: "local".into(),
        knowledge: Vec::new(),
        egress: None,
        owner: None,
        working_directory: None,
        ..cx.clone()
    };
    let (ok, msg) = call(&reg, &none, "files", "list", json!({})).await;
    assert!(!ok && msg.contains("no working directory"), "{msg}");
}

#[tokio::test]
async fn shell_runs_in_the_working_directory_with_timeout_and_capped_output() {
    let dir = workdir();
    let (reg, cx) = (registry(), cx(&dir));
    let (ok, out) = call(
        &reg,
        &cx,
        "shell",
        "run",
        json!({"command": "ls src && echo err >&2"}),
    )
    .await;
    assert!(ok, "{out}");
    assert!(
        out.starts_with("exit code: 0")
            && out.contains("lib.rs")
            && out.contains("--- stderr ---\nerr"),
        "{out}"
    );
    let (ok, out) = call(&reg, &cx, "shell", "run", json!({"command": "exit 3"})).await;
    assert!(!ok && out.starts_with("exit code: 3"), "{out}");
    let started = std::time::Instant::now();
    let (ok, out) = call(
        &reg,
        &cx,
        "shell",
        "run",
        json!({"command": "sleep 30 & sleep 30", "timeout_secs": 1}),
    )
    .await;
    assert!(!ok && out.contains("timed out after 1 s"), "{out}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the child group was killed"
    );
    let (_, out) = call(
        &reg,
        &cx,
        "shell",
        "run",
        json!({"command": "seq 1 100000"}),
    )
    .await;
    assert!(
        out.contains("bytes omitted")
            && out.contains("\n1\n2\n")
            && out.trim_end().ends_with("100000"),
        "head and tail kept"
    );
    let manifest = reg.get("shell").unwrap().manifest();
    assert_eq!(
        serde_json::to_value(&manifest.intervention).unwrap(),
        json!("required")
    );
}

/// A loopback HTTP server answering every request with `response`.
async fn http(response: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf).await;
            let _ = s.write_all(response.as_bytes()).await;
            let _ = s.shutdown().await;
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn web_fetch_reads_pages_and_refuses_internal_targets_even_behind_a_redirect() {
    let reg = registry();
    let cx = cx(&workdir());
    let page = "<html><head><style>p{}</style><script>alert(1)</script></head><body><h1>Title</h1><p>Hello &amp; welcome</p><ul><li>one</li><li>two</li></ul></body></html>";
    let ok = http(format!("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}", page.len())).await;
    let (fine, text) = call(
        &reg,
        &cx,
        "web",
        "fetch",
        json!({"url": format!("{ok}/doc")}),
    )
    .await;
    assert!(fine, "{text}");
    assert!(
        text.ends_with("# Title\n\nHello & welcome\n\n- one\n- two"),
        "{text:?}"
    );

    for target in [
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:8080/",
        "http://0.0.0.0/",
        "file:///etc/passwd",
    ] {
        let (fine, msg) = call(&reg, &cx, "web", "fetch", json!({"url": target})).await;
        assert!(!fine && msg.starts_with("refused"), "{target}: {msg}");
    }
    let strict = ToolRegistry::with_builtins(&BuiltinConfig::default()).unwrap();
    let (fine, msg) = call(
        &strict,
        &cx,
        "web",
        "fetch",
        json!({"url": format!("{ok}/doc")}),
    )
    .await;
    assert!(
        !fine && msg.contains("127.0.0.1, a loopback"),
        "loopback refused unless allowed: {msg}"
    );
    let redirect = http("HTTP/1.1 302 Found\r\nlocation: http://169.254.169.254/latest/meta-data/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into()).await;
    let (fine, msg) = call(&reg, &cx, "web", "fetch", json!({"url": redirect})).await;
    assert!(
        !fine && msg.contains("169.254.169.254"),
        "the redirect target is checked too: {msg}"
    );
}

#[test]
fn internal_address_classification() {
    for ip in [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        // IPv4-compatible forms of internal addresses.
        "::127.0.0.1",
        "::10.0.0.1",
        "::169.254.169.254",
        // NAT64 (well-known prefix) of internal addresses, and the local-use NAT64 prefix.
        "64:ff9b::127.0.0.1",
        "64:ff9b::7f00:1",
        "64:ff9b::192.168.0.1",
        "64:ff9b::a9fe:a9fe",
        "64:ff9b:1::8.8.8.8",
        // 6to4 of an internal address, Teredo, site-local, documentation.
        "2002:7f00:1::1",
        "2002:c0a8:101::1",
        "2001:0:4136:e378::1",
        "fec0::1",
        "2001:db8::1",
    ] {
        assert!(is_internal(ip.parse().unwrap()), "{ip}");
    }
    for ip in [
        "93.184.216.34",
        "1.1.1.1",
        "2606:4700::1111",
        "64:ff9b::8.8.8.8",
        "::ffff:8.8.8.8",
        "2002:808:808::1",
    ] {
        assert!(!is_internal(ip.parse().unwrap()), "{ip}");
    }
    assert_eq!(
        html_to_text("a&#39;b &#x41; &unknown; <b>c</b>"),
        "a'b A &unknown; c"
    );
}

/// A document store that holds nothing (only the manifests matter here).
struct NoDocs;

impl rein_tools::documents::Documents for NoDocs {
    fn put<'a>(
        &'a self,
        _: &'a rein_core::document::Document,
    ) -> futures::future::BoxFuture<'a, Result<(), rein_tools::documents::DocumentsError>> {
        Box::pin(async { Ok(()) })
    }
    fn get<'a>(
        &'a self,
        _: rein_core::document::DocumentKind,
        _: &'a str,
        _: &'a str,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Option<rein_core::document::Document>, rein_tools::documents::DocumentsError>,
    > {
        Box::pin(async { Ok(None) })
    }
    fn list<'a>(
        &'a self,
        _: rein_core::document::DocumentKind,
        _: &'a str,
        _: usize,
    ) -> futures::future::BoxFuture<
        'a,
        Result<Vec<rein_core::document::Document>, rein_tools::documents::DocumentsError>,
    > {
        Box::pin(async { Ok(Vec::new()) })
    }
    fn delete<'a>(
        &'a self,
        _: rein_core::document::DocumentKind,
        _: &'a str,
        _: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<bool, rein_tools::documents::DocumentsError>> {
        Box::pin(async { Ok(false) })
    }
}

#[test]
fn derived_schemas_are_plain_objects_providers_accept() {
    // With a search backend and a place for workspaces, so `web.search` and `python.run` are
    // offered and checked too.
    let search = rein_tools::search::SearchConfig::new(
        rein_tools::search::SearchBackend::Searxng,
        Some("http://127.0.0.1:9"),
        None,
    )
    .unwrap();
    let config = BuiltinConfig {
        web: WebConfig {
            search: Some(search),
            ..Default::default()
        },
        interpreter: rein_tools::interpreter::InterpreterConfig {
            workspaces: Some(std::env::temp_dir()),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut reg = ToolRegistry::with_builtins(&config).unwrap();
    let docs: std::sync::Arc<dyn rein_tools::documents::Documents> = std::sync::Arc::new(NoDocs);
    reg.register(std::sync::Arc::new(rein_tools::documents::Memory::new(
        docs.clone(),
    )))
    .unwrap();
    reg.register(std::sync::Arc::new(rein_tools::documents::Notes::new(docs)))
        .unwrap();
    let mut seen = 0;
    for m in reg.manifests() {
        for api in &m.apis {
            let p = &api.parameters;
            let text = p.to_string();
            assert_eq!(p["type"], "object", "{}/{}: {text}", m.identifier, api.name);
            assert_eq!(
                p["additionalProperties"], false,
                "{}/{}",
                m.identifier, api.name
            );
            assert!(
                !text.contains("$ref") && !text.contains("$schema") && p.get("title").is_none(),
                "{text}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 22, "every built-in API checked");
    let read = reg
        .manifests()
        .into_iter()
        .find(|m| m.identifier == "files")
        .unwrap();
    let p = &read.apis[0].parameters;
    assert_eq!(p["required"], json!(["path"]));
    assert_eq!(p["properties"]["start_line"]["minimum"], 1);
    assert!(
        p["properties"]["path"]["description"]
            .as_str()
            .unwrap()
            .contains("working directory")
    );
}
