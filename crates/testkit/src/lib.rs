//! rein-testkit owns how rein's tests treat what they need from outside the workspace
//! (PostgreSQL, the npm MCP reference servers, Chromium and playwright-core): a test that cannot
//! run must never read as a pass nobody notices.
//!
//! Under `CI=true` a missing prerequisite fails the test, naming it. Elsewhere the test is
//! skipped with a `SKIP` line written straight to the process's stderr (libtest captures only
//! the `print!` family, so the line shows in a plain `cargo test`, not only under
//! `--nocapture`), and appended to the file named by `REIN_SKIP_LOG`, which the test script
//! lists in its summary.

use std::io::Write;

/// Whether this run is CI's (`CI` set to anything but `false`/`0`/empty).
pub fn under_ci() -> bool {
    ci_value(std::env::var("CI").ok().as_deref())
}

fn ci_value(v: Option<&str>) -> bool {
    v.is_some_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// `test` cannot run because `missing` (what is absent and how to get it). Panics under CI;
/// otherwise reports the skip and returns, and the test should return at once.
pub fn skip(test: &str, missing: &str) {
    assert!(!under_ci(), "{test} cannot run under CI=true: {missing}");
    let line = format!("SKIP {test}: {missing}\n");
    // Straight to the file descriptor, past libtest's output capture.
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(log) = std::env::var_os("REIN_SKIP_LOG")
        && let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The PostgreSQL URL the backend tests use (`REIN_TEST_DATABASE_URL`), or `None` after
/// reporting `test` as skipped (a failure under CI).
pub fn database_url(test: &str) -> Option<String> {
    match std::env::var("REIN_TEST_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            skip(
                test,
                "REIN_TEST_DATABASE_URL is not set (a PostgreSQL URL; scripts/test sets it when \
                 PostgreSQL answers on 127.0.0.1:5432)",
            );
            None
        }
    }
}

/// A schema of its own on the test PostgreSQL database, so tests that share the database never
/// see each other's rows. Dropped by [`Scratch::drop`].
pub struct Scratch {
    admin_url: String,
    schema: String,
    /// The database URL with `search_path` set to the schema.
    pub url: String,
}

/// A fresh schema named `{prefix}_{unique}` on the test database, or `None` after reporting
/// `test` as skipped (a failure under CI) when there is no database.
///
/// # Panics
/// When the database does not answer or refuses the schema: the test cannot run.
pub async fn postgres_scratch(test: &str, prefix: &str) -> Option<Scratch> {
    let admin_url = database_url(test)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let schema = format!("{prefix}_{}_{nanos}", std::process::id());
    admin(&admin_url, &format!("CREATE SCHEMA {schema}")).await;
    let sep = if admin_url.contains('?') { '&' } else { '?' };
    let url = format!("{admin_url}{sep}options=-c%20search_path%3D{schema}");
    Some(Scratch {
        admin_url,
        schema,
        url,
    })
}

impl Scratch {
    /// Drop the schema and everything in it. A connection still holding a lock in it (a
    /// process the test left behind) makes this fail after 20 s, with a note, instead of
    /// waiting forever; the schema is then left for a later cleanup.
    pub async fn drop(self) {
        use sqlx::{Connection, Executor};
        let sql = format!(
            "SET lock_timeout = '20s'; DROP SCHEMA {} CASCADE",
            self.schema
        );
        let dropped = match sqlx::PgConnection::connect(&self.admin_url).await {
            Ok(mut conn) => conn.execute(sqlx::AssertSqlSafe(sql)).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = dropped {
            eprintln!("note: scratch schema {} was not dropped: {e}", self.schema);
        }
    }
}

async fn admin(url: &str, sql: &str) {
    use sqlx::{Connection, Executor};
    let mut conn = sqlx::PgConnection::connect(url)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {url}: {e}"));
    conn.execute(sqlx::AssertSqlSafe(sql.to_owned()))
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// The entry script of the npm MCP reference server `package` (`server-everything`,
/// `server-filesystem`) that scripts/test installs into the workspace's `.mcp-servers/` (or
/// `$REIN_MCP_SERVERS`), or `None` after reporting `test` as skipped (a failure under CI).
pub fn mcp_server(test: &str, package: &str) -> Option<String> {
    let root = std::env::var_os("REIN_MCP_SERVERS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.mcp-servers")
        });
    let script = root.join(format!(
        "node_modules/@modelcontextprotocol/{package}/dist/index.js"
    ));
    if script.is_file() {
        Some(script.to_string_lossy().into_owned())
    } else {
        skip(
            test,
            &format!(
                "{} is missing; scripts/test installs it (npm install --prefix .mcp-servers @modelcontextprotocol/{package})",
                script.display()
            ),
        );
        None
    }
}

/// The folder of the workspace's `.jsclients/` (where scripts/test installs the npm client
/// libraries front-ends use: `@ag-ui/client`, `ai`) when `package` is installed there, or
/// `None` after reporting `test` as skipped (a failure under CI).
pub fn js_clients(test: &str, package: &str) -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.jsclients");
    if root
        .join("node_modules")
        .join(package)
        .join("package.json")
        .is_file()
    {
        Some(root)
    } else {
        skip(
            test,
            &format!(
                "{package} is not installed in {}; scripts/test installs it (npm install --prefix .jsclients {package})",
                root.display()
            ),
        );
        None
    }
}

/// The Python of the workspace's `.pyclients/venv` (where scripts/test installs the official
/// `openai` and `mcp` Python SDKs) when it can import `module`, or `None` after reporting `test`
/// as skipped (a failure under CI).
pub fn python_with(test: &str, module: &str) -> Option<std::path::PathBuf> {
    let python =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.pyclients/venv/bin/python");
    let imports = std::process::Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if imports {
        Some(python)
    } else {
        skip(
            test,
            &format!(
                "{} cannot import {module}; scripts/test installs it there",
                python.display()
            ),
        );
        None
    }
}

/// What an instrumented build (`cargo llvm-cov`, see scripts/coverage) needs a child process
/// to keep when a test clears its environment: where to write its profile, so the code the
/// `rein` processes run is counted too. Empty in a plain run.
pub fn coverage_env() -> Vec<(String, String)> {
    ["LLVM_PROFILE_FILE"]
        .iter()
        .filter_map(|k| std::env::var(k).ok().map(|v| ((*k).to_owned(), v)))
        .collect()
}

/// The database an end-to-end test's `rein` processes share: a SQLite file in the test's
/// folder, or with `REIN_E2E_DATABASE=postgres` (the matrix scripts/test runs) a scratch schema
/// on the test PostgreSQL, dropped when this is.
pub struct E2eDatabase {
    /// What `--db` takes.
    pub url: String,
    scratch: Option<Scratch>,
}

impl E2eDatabase {
    /// The database for a test working in `dir`. Panics when PostgreSQL is asked for and
    /// `REIN_TEST_DATABASE_URL` names none (the matrix must not pass by running on SQLite).
    pub async fn new(dir: &std::path::Path) -> Self {
        match std::env::var("REIN_E2E_DATABASE").as_deref() {
            Ok("postgres") => {
                let scratch = postgres_scratch("an end-to-end test on PostgreSQL", "rein_e2e")
                    .await
                    .unwrap_or_else(|| {
                        panic!("REIN_E2E_DATABASE=postgres needs REIN_TEST_DATABASE_URL")
                    });
                Self {
                    url: scratch.url.clone(),
                    scratch: Some(scratch),
                }
            }
            _ => Self {
                url: dir.join("rein.db").to_string_lossy().into_owned(),
                scratch: None,
            },
        }
    }
}

impl Drop for E2eDatabase {
    fn drop(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            // Dropped on a runtime's thread: drop the schema from a thread of its own.
            let _ = std::thread::spawn(move || {
                if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    rt.block_on(scratch.drop());
                }
            })
            .join();
        }
    }
}

/// A small, valid PDF whose page `i` shows `pages[i]` as one line of Helvetica (WinAnsi
/// encoding): what a knowledge base's PDF reader is tested with, built here rather than
/// checked in as an opaque binary.
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    // Objects: 1 catalog, 2 page tree, 3 font, then each page and its content stream.
    let mut objects: Vec<String> = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".into(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {} >>",
            (0..pages.len())
                .map(|i| format!("{} 0 R", 4 + 2 * i))
                .collect::<Vec<_>>()
                .join(" "),
            pages.len()
        ),
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
    ];
    for (i, text) in pages.iter().enumerate() {
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] \
             /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * i
        ));
        let escaped = text
            .replace('\\', "\\\\")
            .replace('(', "\\(")
            .replace(')', "\\)");
        let stream = format!("BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET");
        objects.push(format!(
            "<< /Length {} >>\nstream\n{stream}\nendstream",
            stream.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// Poll `probe` every 20 ms until it gives `Some`; when 20 s pass first, the test fails naming
/// `what`. A deadline for a loaded machine, never a fixed wait.
pub async fn eventually<T, F>(what: &str, mut probe: impl FnMut() -> F) -> T
where
    F: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} did not happen within 20 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A `rein serve` a test started, once it listens.
pub struct Listening {
    /// The process (killed when dropped, if it was spawned with `kill_on_drop`).
    pub child: tokio::process::Child,
    /// `http://host:port`, from its `rein: listening on` line.
    pub base: String,
    /// Every line it wrote on stderr so far, kept as they come.
    pub stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// Spawn `cmd` (a `rein serve` on port 0, its stderr piped) and wait for the line saying where
/// it listens; its later stderr lines keep being collected.
///
/// # Panics
/// When it cannot start or exits before listening: the test cannot go on.
pub async fn listening(cmd: &mut tokio::process::Command) -> Listening {
    use tokio::io::AsyncBufReadExt;
    let mut child = cmd
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("rein serve cannot start: {e}"));
    let Some(stderr) = child.stderr.take() else {
        unreachable!("stderr was piped just now")
    };
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let base = loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("the server exited before listening"),
            Err(e) => panic!("the server's stderr cannot be read: {e}"),
        };
        kept.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line.clone());
        if let Some(addr) = line.strip_prefix("rein: listening on ") {
            break addr.to_owned();
        }
    };
    let sink = std::sync::Arc::clone(&kept);
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
    Listening {
        child,
        base,
        stderr: kept,
    }
}

#[cfg(test)]
mod tests {
    use super::ci_value;

    #[test]
    fn ci_is_on_for_any_value_but_false_zero_or_empty() {
        for (v, ci) in [
            (Some("true"), true),
            (Some("1"), true),
            (Some("false"), false),
            (Some("0"), false),
            (Some(" "), false),
            (None, false),
        ] {
            assert_eq!(ci_value(v), ci, "{v:?}");
        }
    }
}
