//! `rein sandbox`: run one command confined as rein's shell tool confines its commands. rein
//! has an editor's terminal run the agent's commands this way (`rein acp`), so the sandbox
//! holds there too; a person can use it to see what a command may do under a mode.

use std::path::PathBuf;

/// `rein sandbox`'s arguments (the mode is the global `--sandbox`, the network `--network`).
#[derive(clap::Args)]
pub struct SandboxArgs {
    /// The directory the command runs in (writable in `workspace-write`; default: the current
    /// one).
    #[arg(long, value_name = "DIR")]
    workdir: Option<PathBuf>,
    /// The program and its arguments (after `--`).
    #[arg(required = true, last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Run it; the command's exit code (128 + the signal for one a signal ended), or an error
/// saying why nothing ran.
pub async fn run(sandbox: rein_core::spec::Sandbox, args: SandboxArgs) -> anyhow::Result<u8> {
    let workdir = match args.workdir {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    let workdir = std::fs::canonicalize(&workdir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| anyhow::anyhow!("--workdir {}: not a directory", workdir.display()))?;
    let status = rein_tools::shell::run_confined(sandbox, &workdir, &args.command).await?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> u8 {
    #[cfg(unix)]
    if let Some(signal) = std::os::unix::process::ExitStatusExt::signal(&status) {
        return u8::try_from(128 + signal).unwrap_or(u8::MAX);
    }
    status
        .code()
        .map_or(u8::MAX, |c| u8::try_from(c).unwrap_or(u8::MAX))
}
