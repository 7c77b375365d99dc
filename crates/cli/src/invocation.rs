//! [`Invocation`]: what one run of `rein` was given (its global flags and the configuration
//! file), read once in `main` and handed to every command that runs on this machine.

/// What this run of `rein` was given: the command line's global flags and the configuration
/// file.
pub struct Invocation {
    /// The shell's sandbox of this process's operations.
    pub sandbox: rein_core::spec::Sandbox,
    /// `--replay CASSETTE`.
    pub cli_replay: Option<std::path::PathBuf>,
    /// `--record CASSETTE`.
    pub cli_record: Option<std::path::PathBuf>,
    /// `--json`: events as JSON lines.
    pub json: bool,
    /// `--mcp NAME=COMMAND`, as given.
    pub mcp: Vec<String>,
    /// The configuration file (and what the environment sets over it).
    pub config: rein_operation::settings::Settings,
}
