//! The soak's `rein serve`: one process at a time on the soak's database, restarted on demand
//! (SIGKILL or SIGTERM), and what the operating system says of it (resident memory, open
//! descriptors) and of its database (bytes on disk).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// Lines of the server's stderr kept (the last ones), for a failure's message.
const KEPT_LINES: usize = 400;

/// How a server is stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGKILL: whatever was mid-step is left to its lease running out.
    Kill,
    /// SIGTERM: steps under way commit, then their operations are handed over.
    Term,
}

/// How to start `rein` on the soak's database.
pub struct Launch {
    /// The `rein` binary.
    pub bin: PathBuf,
    /// What `--db` takes.
    pub db: String,
    /// `REIN_HOME`, where the ledger is written too.
    pub home: PathBuf,
    /// The model's `OPENAI_BASE_URL`.
    pub model: String,
}

impl Launch {
    /// `rein --db DB ARGS` with the soak's environment.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        c.args(["--db", &self.db]).args(args);
        c.env_clear()
            .envs(rein_testkit::coverage_env())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("REIN_HOME", &self.home)
            .env("OPENAI_BASE_URL", &self.model)
            .env("OPENAI_API_KEY", "sk-soak")
            .env("REIN_TEST_TOOLS", "1")
            .env("REIN_TEST_LEDGER", self.ledger());
        // Profiling: the servers log what `REIN_SOAK_LOG` asks (`sqlx::query=debug` gives each
        // statement and its time) into `log_file()`.
        if let Ok(filter) = std::env::var("REIN_SOAK_LOG") {
            c.env("REIN_LOG", filter);
        }
        c
    }

    /// The file the ledger tool appends each call's entry to.
    pub fn ledger(&self) -> PathBuf {
        self.home.join("ledger.txt")
    }

    /// `rein token create ARGS…`: the token printed.
    pub async fn token(&self, args: &[&str]) -> String {
        let mut full = vec!["token", "create"];
        full.extend_from_slice(args);
        let out = self.command(&full).output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }
}

/// A server's resident memory and open descriptors.
#[derive(Clone, Copy, Debug)]
pub struct Resources {
    /// Its own memory (heap, stacks): what a leak grows.
    pub anon_kib: u64,
    /// Pages of files it maps: its binary, and the SQLite database (each connection maps up to
    /// 256 MiB of it), which the kernel can take back at any time.
    pub file_kib: u64,
    pub fds: u64,
}

/// The server of the moment.
struct Running {
    child: Child,
    pid: u32,
}

/// Where the servers' stderr goes in full when `REIN_SOAK_LOG` is set
/// (`REIN_SOAK_LOG_FILE`, else `rein-soak-server.log` in the temporary directory).
pub fn log_file() -> Option<PathBuf> {
    std::env::var_os("REIN_SOAK_LOG")?;
    Some(std::env::var_os("REIN_SOAK_LOG_FILE").map_or_else(
        || std::env::temp_dir().join("rein-soak-server.log"),
        PathBuf::from,
    ))
}

/// The servers' stderr: the last lines, the panics, and everything in the log file if asked.
#[derive(Default)]
struct Stderr {
    kept: Mutex<VecDeque<String>>,
    panics: Mutex<Vec<String>>,
    log: Option<Mutex<std::io::BufWriter<std::fs::File>>>,
}

/// The soak's server, across its restarts.
pub struct Server {
    launch: Launch,
    running: tokio::sync::Mutex<Option<Running>>,
    /// Where clients find the server of the moment (`http://127.0.0.1:PORT`).
    pub base: watch::Sender<String>,
    /// What the servers wrote on stderr, across restarts.
    stderr: Arc<Stderr>,
    pid: Mutex<Option<u32>>,
}

impl Server {
    pub fn new(launch: Launch) -> Arc<Self> {
        Arc::new(Self {
            launch,
            running: tokio::sync::Mutex::new(None),
            base: watch::channel(String::new()).0,
            stderr: Arc::new(Stderr {
                log: log_file().map(|path| {
                    let file = std::fs::File::create(&path).expect("the soak's log file");
                    Mutex::new(std::io::BufWriter::new(file))
                }),
                ..Stderr::default()
            }),
            pid: Mutex::new(None),
        })
    }

    pub fn launch(&self) -> &Launch {
        &self.launch
    }

    /// Start a server (none may be running) and wait until it listens.
    pub async fn start(&self) {
        let mut running = self.running.lock().await;
        assert!(running.is_none(), "one server at a time");
        let mut c = self.launch.command(&[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--heartbeat-secs",
            "1",
            "--grace-secs",
            "5",
            "--max-running",
            "64",
        ]);
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = c.spawn().expect("rein serve starts");
        let Some(stderr) = child.stderr.take() else {
            unreachable!("stderr was piped just now")
        };
        let mut lines = tokio::io::BufReader::new(stderr).lines();
        let base = loop {
            let Ok(Some(line)) = lines.next_line().await else {
                panic!("the server exited before listening:\n{}", self.last_lines());
            };
            self.keep(line.clone());
            if let Some(addr) = line.strip_prefix("rein: listening on ") {
                break addr.to_owned();
            }
        };
        let stderr = Arc::clone(&self.stderr);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                stderr.keep(line);
            }
        });
        let pid = child.id().expect("a running child has a pid");
        *self.pid.lock().unwrap() = Some(pid);
        *running = Some(Running { child, pid });
        self.base.send_replace(base);
    }

    /// Stop the server of the moment as `how` says and wait until it is gone.
    pub async fn stop(&self, how: Stop) {
        let mut running = self.running.lock().await;
        let Some(mut r) = running.take() else {
            return;
        };
        *self.pid.lock().unwrap() = None;
        match how {
            Stop::Kill => {
                let _ = r.child.start_kill();
            }
            Stop::Term => {
                let _ = std::process::Command::new("kill")
                    .args(["-TERM", &r.pid.to_string()])
                    .status();
            }
        }
        // A SIGTERM'd server waits at most its grace (5 s) for steps to commit.
        if tokio::time::timeout(Duration::from_secs(30), r.child.wait())
            .await
            .is_err()
        {
            let _ = r.child.start_kill();
            let _ = r.child.wait().await;
            panic!(
                "the server did not stop within 30 s of {how:?}:\n{}",
                self.last_lines()
            );
        }
    }

    /// Stop as `how` says, then start again on the same database.
    pub async fn restart(&self, how: Stop) {
        self.stop(how).await;
        self.start().await;
    }

    /// What the operating system says of the server of the moment.
    pub fn sample(&self) -> Option<Resources> {
        let pid = (*self.pid.lock().unwrap())?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let kib = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        };
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
        Some(Resources {
            anon_kib: kib("RssAnon:")?,
            file_kib: kib("RssFile:")?,
            fds,
        })
    }

    /// The last lines the servers wrote on stderr.
    pub fn last_lines(&self) -> String {
        let kept = self.stderr.kept.lock().unwrap();
        kept.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Lines that said a thread panicked, across restarts.
    pub fn panics(&self) -> Vec<String> {
        self.stderr.panics.lock().unwrap().clone()
    }

    /// Write out what the log file was given so far.
    pub fn flush_log(&self) {
        if let Some(log) = &self.stderr.log {
            use std::io::Write;
            let _ = log.lock().unwrap().flush();
        }
    }

    fn keep(&self, line: String) {
        self.stderr.keep(line);
    }
}

impl Stderr {
    fn keep(&self, line: String) {
        if line.contains("panicked") {
            self.panics.lock().unwrap().push(line.clone());
        }
        if let Some(log) = &self.log {
            use std::io::Write;
            let _ = writeln!(log.lock().unwrap(), "{line}");
        }
        let mut kept = self.kept.lock().unwrap();
        if kept.len() == KEPT_LINES {
            kept.pop_front();
        }
        kept.push_back(line);
    }
}

/// What a SQLite database takes on disk.
#[derive(Clone, Copy, Debug)]
pub struct DbSize {
    /// The file with its WAL and shared memory.
    pub bytes: u64,
    /// The WAL alone: it grows when checkpoints cannot keep up with the writes.
    pub wal: u64,
}

/// What the database takes on disk, or `None` for a database elsewhere (PostgreSQL).
pub fn database_size(db: &str) -> Option<DbSize> {
    if db.starts_with("postgres") {
        return None;
    }
    let size = |suffix: &str| std::fs::metadata(format!("{db}{suffix}")).map_or(0, |m| m.len());
    Some(DbSize {
        bytes: size("") + size("-wal") + size("-shm"),
        wal: size("-wal"),
    })
}
