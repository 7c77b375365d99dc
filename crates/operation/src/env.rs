//! Every environment variable rein reads or sets, by name, in one place: the CLI, the server
//! and anything embedding them refer to these constants, and `scripts/check-types` refuses a
//! `"REIN_…"` literal anywhere else in the crates' sources. Precedence, where a setting has
//! several sources: a command-line flag, then its variable here, then the configuration file
//! (`REIN_CONFIG`), then the built-in default.

/// Database: a SQLite file path or a `postgres://` URL.
pub const DATABASE_URL: &str = "REIN_DATABASE_URL";
/// rein's home directory (the default database, skills, cassettes); default `~/.rein`.
pub const HOME: &str = "REIN_HOME";
/// The configuration file; default `~/.config/rein/config.toml`.
pub const CONFIG: &str = "REIN_CONFIG";
/// The default model, `provider/model`.
pub const MODEL: &str = "REIN_MODEL";
/// The model for rein's own small jobs (titles, memories, run readings).
pub const SYSTEM_MODEL: &str = "REIN_SYSTEM_MODEL";
/// The embedding model for memories and knowledge.
pub const EMBED_MODEL: &str = "REIN_EMBED_MODEL";
/// What shell commands may touch (`workspace-write`, `read-only`, `off`).
pub const SANDBOX: &str = "REIN_SANDBOX";
/// When a step's commit must be on disk (`pipelined`, `sync`).
pub const DURABILITY: &str = "REIN_DURABILITY";
/// Where knowledge vectors are searched (`in-process`, `pgvector`).
pub const VECTOR_SEARCH: &str = "REIN_VECTOR_SEARCH";
/// Worker threads of the async runtime.
pub const THREADS: &str = "REIN_THREADS";
/// How long a server's claim on an operation lasts without renewal, in seconds.
pub const LEASE_SECS: &str = "REIN_LEASE_SECS";
/// How long a stopping server lets its runs reach a step boundary, in seconds.
pub const GRACE_SECS: &str = "REIN_GRACE_SECS";
/// The `rein serve` the CLI talks to.
pub const SERVER: &str = "REIN_SERVER";
/// The secret key sealing users' stored provider keys itself (base64 of 32 bytes).
pub const SECRET_KEY: &str = "REIN_SECRET_KEY";
/// The file holding that secret key (default `secret.key` in the home directory).
pub const SECRET_KEY_FILE: &str = "REIN_SECRET_KEY_FILE";
/// The API (or device) token the CLI sends to a server.
pub const TOKEN: &str = "REIN_TOKEN";
/// The log filter (`tracing_subscriber`'s syntax).
pub const LOG: &str = "REIN_LOG";
/// Set for an external agent's process: the session it continues.
pub const EXTERNAL_SESSION: &str = "REIN_EXTERNAL_SESSION";
/// Prefix of the variables naming an external agent's program (`REIN_EXTERNAL_CLAUDE_CODE`).
pub const EXTERNAL_PREFIX: &str = "REIN_EXTERNAL_";
/// The web search backend's API key (over the configuration file's `[web.search] api_key`).
pub const WEB_SEARCH_API_KEY: &str = "REIN_WEB_SEARCH_API_KEY";
/// Tests and documentation: rewrite the generated reference files instead of comparing them.
pub const UPDATE_DOCS: &str = "REIN_UPDATE_DOCS";

/// Test hooks (builds with the `test-hooks` feature read them; a production build ignores them).
pub mod test {
    /// A commit point at which the driver pauses, so a test can kill the process there.
    pub const PAUSE_AT: &str = "REIN_TEST_PAUSE_AT";
    /// `1`: register the test tools (the ledger).
    pub const TOOLS: &str = "REIN_TEST_TOOLS";
    /// The file the ledger tool appends to.
    pub const LEDGER: &str = "REIN_TEST_LEDGER";
    /// `1`: a connected device drops its connection after a call (reconnection tests).
    pub const DEVICE_DROP: &str = "REIN_TEST_DEVICE_DROP";
}
