//! Starting an external agent as its own process group (so stopping it stops everything it
//! started), feeding it the prompt, and reading its output.

use std::path::Path;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// The most of its standard error kept, for the message of a failed run.
const STDERR_TAIL: usize = 4 * 1024;

/// A running external agent.
pub struct Running {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    stderr: tokio::task::JoinHandle<String>,
}

/// Start `program args…` in `dir` with `env` added, `input` on its standard input.
pub fn spawn(
    program: &Path,
    args: &[String],
    dir: &Path,
    env: &[(&str, String)],
    input: String,
) -> std::io::Result<Running> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    let mut child = cmd.spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // Written beside the reading: a prompt larger than the pipe must not block the run.
        tokio::spawn(async move {
            let _ = stdin.write_all(input.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no standard output"))?;
    let stderr = child.stderr.take();
    let stderr = tokio::spawn(async move {
        let mut tail = Vec::new();
        if let Some(mut s) = stderr {
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
        }
        let start = tail.len().saturating_sub(STDERR_TAIL);
        String::from_utf8_lossy(&tail[start..]).trim().to_owned()
    });
    Ok(Running {
        child,
        lines: BufReader::new(stdout).lines(),
        stderr,
    })
}

impl Running {
    /// Stop it and everything it started (SIGKILL to its process group).
    pub async fn kill(&mut self) {
        #[cfg(unix)]
        if let Some(pid) = self.child.id() {
            let _ = tokio::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await;
        }
        let _ = self.child.kill().await;
    }

    /// Wait for it to exit (its output has ended); one that lingers past `grace` is stopped.
    /// Returns its exit code (`None`: killed by a signal) and the end of its standard error.
    pub async fn finish(mut self, grace: std::time::Duration) -> (Option<i32>, String) {
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(s) => s.ok(),
            Err(_) => {
                self.kill().await;
                self.child.wait().await.ok()
            }
        };
        let stderr = tokio::time::timeout(grace, self.stderr)
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        (status.and_then(|s| s.code()), stderr)
    }
}

impl super::AgentRun for Running {
    fn next_line(&mut self) -> futures::future::BoxFuture<'_, Option<String>> {
        Box::pin(async move { self.lines.next_line().await.ok().flatten() })
    }

    fn stop(&mut self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(self.kill())
    }

    fn finish(
        self: Box<Self>,
        grace: std::time::Duration,
    ) -> futures::future::BoxFuture<'static, Result<(Option<i32>, String), super::EndUnknown>> {
        Box::pin(async move { Ok(Running::finish(*self, grace).await) })
    }
}
