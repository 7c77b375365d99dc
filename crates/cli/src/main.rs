//! The `rein` command line: the flags (`Cli`, `Command`), one `dispatch` of every command to
//! where it runs (`commands::Local` or `commands::Remote`), and the process's runtime.

mod agent_profile;
mod amounts;
mod commands;
mod host;
mod invocation;
mod named;
mod output;
mod prompt;
mod queue;
#[cfg(test)]
mod reference;
mod replay_table;
mod telemetry;
#[cfg(feature = "test-hooks")]
mod test_tools;

use anyhow::bail;
use clap::{Parser, Subcommand};
use commands::{
    agents, backup, briefs, chat, config, connect, decide, devices, gc, grants, groups, knowledge,
    login, memory, models, operations, run, serve, settings, skills, tasks, tokens, topics, usage,
    users,
};
use invocation::Invocation;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Exit codes (documented in the README).
pub(crate) mod exit {
    pub const DONE: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const WAITING: u8 = 3;
    pub const INTERRUPTED: u8 = 4;
    /// `rein eval run --baseline`: something got worse.
    pub const REGRESSED: u8 = 5;
}

#[derive(Parser)]
#[command(name = "rein", version, about = "A bounded, durable agent runtime")]
struct Cli {
    /// Database: a SQLite file path or a postgres:// URL (default: $REIN_DATABASE_URL, else rein.db in $REIN_HOME or ~/.rein).
    #[arg(long, global = true)]
    db: Option<String>,
    /// Where knowledge vectors are searched: in-process (exact; the default) or pgvector (on
    /// PostgreSQL with pgvector 0.8+: its HNSW index, approximate; created when missing, which
    /// needs a superuser).
    #[arg(
        long,
        global = true,
        env = rein_operation::env::VECTOR_SEARCH,
        value_name = "WHERE",
        value_parser = named::named::<rein_store::VectorIndex>(),
        default_value = "in-process"
    )]
    vector_search: rein_store::VectorIndex,
    /// Serve model calls from this cassette instead of the network (nothing is billed; a folder
    /// named like the cassette next to it is the default working directory).
    #[arg(long, global = true, value_name = "CASSETTE")]
    replay: Option<PathBuf>,
    /// Record model exchanges into this cassette.
    #[arg(long, global = true, value_name = "CASSETTE")]
    record: Option<PathBuf>,
    /// Print every event as a JSON line on stdout.
    #[arg(long, global = true)]
    json: bool,
    /// Connect an MCP server; its tools are named after NAME. Repeatable. COMMAND is a program
    /// and its arguments separated by spaces (stdio), or an http:// or https:// URL (Streamable
    /// HTTP).
    #[arg(long = "mcp", global = true, value_name = "NAME=COMMAND")]
    mcp: Vec<String>,
    /// Talk to a `rein serve` at this URL (or of this `rein login` profile) instead of the local
    /// database: run, chat, op, approve, answer, reject, grant, agent, group, topic, task,
    /// brief, kb, memory, user, token, usage, artifact, settings provider, models, device (skill, config,
    /// migrate, gc, backup, export, import, settings rotate-key, serve, worker and sandbox run
    /// here only); the token is $REIN_TOKEN, else the profile's.
    #[arg(long, global = true, value_name = "URL|NAME", env = rein_operation::env::SERVER)]
    server: Option<String>,
    /// What shell commands may touch: workspace-write (the working directory and a private
    /// temporary directory), read-only, or off (unconfined). Agents can narrow it, never widen it.
    #[arg(long, global = true, env = rein_operation::env::SANDBOX, default_value = "workspace-write", value_parser = named::named::<rein_core::spec::SandboxMode>())]
    sandbox: rein_core::spec::SandboxMode,
    /// Let sandboxed shell commands use the network.
    #[arg(long, global = true)]
    network: bool,
    /// Worker threads of the async runtime (default: the machine's cores for `serve` and
    /// `worker`, 2 for other commands).
    #[arg(long, global = true, env = rein_operation::env::THREADS, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Run an agent on a prompt.
    Run(run::RunArgs),
    /// Chat on a topic, a turn per line (/approve, /reject, /cancel, /model, /history).
    Chat(chat::ChatArgs),
    /// Serve the HTTP API and the web UI.
    Serve(serve::ServeArgs),
    /// Serve your agents to an MCP host over stdin and stdout, as the database's local user:
    /// `run` and `run_NAME` for agents stored with `--expose true` (the options of `rein
    /// serve`; `--addr` and what concerns HTTP are not used).
    Mcp(serve::ServeArgs),
    /// Be an Agent Client Protocol agent for an editor (Zed, JetBrains, Neovim) over stdin and
    /// stdout, as the database's local user: each session a conversation, each prompt an
    /// operation whose approvals the editor asks you (the options of `rein serve`).
    Acp(serve::AcpArgs),
    /// Run one command confined as the shell tool confines the agent's (`--sandbox`,
    /// `--network`): `rein acp` has the editor's terminal run commands this way.
    Sandbox(commands::sandbox::SandboxArgs),
    /// Join a `rein serve` (`--server URL`, a device token in REIN_TOKEN) as a device: its
    /// operations on `device:NAME` run their file and shell tools here.
    Connect(connect::ConnectArgs),
    /// Sign in to a `rein serve` (approve the login in its web UI, or --token-stdin) and keep
    /// it as a profile for `--server NAME`.
    Login(login::LoginArgs),
    /// Sign out of a server profile: its token is revoked there and the profile forgotten.
    Logout(login::LogoutArgs),
    /// A server's devices (`--server URL`): list, revoke.
    Device {
        #[command(subcommand)]
        command: devices::DeviceCommand,
    },
    /// Evaluations: a dataset's cases run by agents (and their versions), each case's
    /// assertions judged, runs kept and compared with a baseline.
    Eval {
        #[command(subcommand)]
        command: commands::evals::EvalCommand,
    },
    /// Goals: an objective planned into works, each run as an operation and verified by
    /// another model, accepted only on evidence.
    Goal {
        #[command(subcommand)]
        command: commands::goals::GoalCommand,
    },
    /// MCP tool definitions pinned in this machine's database: list them with the changes held
    /// (a server that changed a tool's description or parameters), approve a change.
    Pin {
        #[command(subcommand)]
        command: commands::pins::PinCommand,
    },
    /// What you granted ("always for this tool"): list, revoke.
    Grant {
        #[command(subcommand)]
        command: grants::GrantCommand,
    },
    /// Users of a server: list, create, show, change a role, disable, enable (here: the
    /// operator; with --server: admins).
    User {
        #[command(subcommand)]
        command: users::UserCommand,
    },
    /// Manage API tokens for `rein serve`.
    Token {
        #[command(subcommand)]
        command: tokens::TokenCommand,
    },
    /// Manage tasks: manual, cron and heartbeat automation.
    Task {
        #[command(subcommand)]
        command: tasks::TaskCommand,
    },
    /// Dispatch due tasks and run operations, without the HTTP API (scale-out on PostgreSQL).
    Worker(serve::WorkerArgs),
    /// Bring the database's schema up to date and list its migrations. Every command migrates
    /// when it opens the database (one process at a time); this does only that, as the one-off
    /// step of an upgrade before new replicas start.
    Migrate,
    /// What your operations spent since a day, by day, agent, model or user.
    Usage(usage::UsageArgs),
    /// Files tool calls produced (plots, tables, reports): list them, get one.
    Artifact {
        #[command(subcommand)]
        command: commands::artifacts::ArtifactCommand,
    },
    /// Your settings on a server: the model providers you bring (your API keys, base URLs);
    /// and, on the database's host, moving stored keys to a new secret key.
    Settings {
        #[command(subcommand)]
        command: settings::SettingsCommand,
    },
    /// Compact old finished operations: their steps, events and tool results go, their record
    /// and messages stay (a dry run unless --apply).
    Gc(gc::GcArgs),
    /// Copy this machine's SQLite database to a new file while it is in use.
    Backup(backup::BackupArgs),
    /// Write all of a user's data (agents, conversations, operations, knowledge, memories,
    /// tasks, briefs) to one archive, to move them to another database.
    Export(commands::portable::ExportArgs),
    /// Load an archive `rein export` wrote, as a user of this database.
    Import(commands::portable::ImportArgs),
    /// Manage agents (model, system role, tools, approval mode, limits).
    Agent {
        #[command(subcommand)]
        command: agents::AgentCommand,
    },
    /// Manage groups: agents that talk in rounds under a supervisor (`run --group`).
    Group {
        #[command(subcommand)]
        command: groups::GroupCommand,
    },
    /// Knowledge bases: add files and folders, search them.
    Kb {
        #[command(subcommand)]
        command: knowledge::KbCommand,
    },
    /// What rein learnt about you from conversations: list, show, edit, forget; turn it off.
    Memory {
        #[command(subcommand)]
        command: memory::MemoryCommand,
    },
    /// Conversations: list, search, show (with versions), rename, delete.
    Topic {
        #[command(subcommand)]
        command: topics::TopicCommand,
    },
    /// Briefs: what task runs and agents report for your attention; resolve them.
    Brief {
        #[command(subcommand)]
        command: briefs::BriefCommand,
    },
    /// Manage skills (Agent Skills folders: a SKILL.md with instructions, and resources).
    Skill {
        #[command(subcommand)]
        command: skills::SkillCommand,
    },
    /// List the catalogued models (context window, capabilities, prices), or with `--remote`
    /// what a provider itself serves.
    Models {
        /// Ask this provider (`openai`, `anthropic`, `google`, `ollama`, ...) for its models,
        /// with this machine's key for it (with --server: the server asks, with yours there).
        #[arg(long, value_name = "PROVIDER")]
        remote: Option<String>,
    },
    /// Show the effective configuration.
    Config {
        #[command(subcommand)]
        command: config::ConfigCommand,
    },
    /// Inspect and steer operations.
    Op {
        #[command(subcommand)]
        command: operations::OpCommand,
    },
    /// Approve pending tool calls of a parked operation and continue it.
    Approve(decide::ApproveArgs),
    /// Answer a question the agent asked (`ask_user`) and continue the operation.
    Answer(decide::AnswerArgs),
    /// Reject pending tool calls of a parked operation (for a question: decline to answer).
    Reject(decide::RejectArgs),
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    let sandbox = rein_core::spec::Sandbox {
        mode: cli.sandbox,
        network: cli.network,
    };
    if let Command::Sandbox(args) = cli.command {
        // Nothing of this machine's configuration or database is needed.
        return commands::sandbox::run(sandbox, args).await;
    }
    let config = rein_operation::settings::Settings::load()?;
    let given = Invocation {
        sandbox,
        cli_replay: cli.replay.clone(),
        cli_record: cli.record.clone(),
        mcp: cli.mcp.clone(),
        json: cli.json,
        config,
    };
    if let Some(path) = &cli.replay
        && !cli.json
    {
        eprintln!(
            "rein: replaying {}: the model's answers are recorded ones, no model is called and nothing is billed",
            path.display()
        );
    }
    // Signing in and out is about a server, whichever one `--server` names.
    match cli.command {
        Command::Login(args) => return login::login(args, cli.json).await,
        Command::Logout(args) => return login::logout(args, cli.json).await,
        _ => {}
    }
    match &cli.server {
        Some(server) => {
            if let Command::Connect(args) = cli.command {
                return connect::connect(server, args, &given).await;
            }
            let remote = commands::Remote::new(server, cli.json)?;
            dispatch(&remote, cli.command, cli.json).await
        }
        None => {
            let local = commands::Local::new(
                rein_operation::settings::database(cli.db.as_deref())?,
                cli.vector_search,
                given,
            );
            dispatch(&local, cli.command, cli.json).await
        }
    }
}

/// Run `command` where `on` says: every command once, for this machine's database and for a
/// server; the ones that need this machine ask `on.local()`, which a server refuses.
async fn dispatch(on: &impl commands::Backend, command: Command, json: bool) -> anyhow::Result<u8> {
    match command {
        Command::Op { command } => operations::run(on, command, json).await,
        Command::Approve(a) => decide::approve(on, a).await,
        Command::Answer(a) => decide::answer(on, a).await,
        Command::Reject(a) => decide::reject(on, a).await,
        Command::Grant { command } => {
            grants::run(on, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Agent { command } => {
            agents::run(on, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Device { command } => {
            devices::run(on, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Models { remote: None } => {
            on.print_models(json).await?;
            Ok(exit::DONE)
        }
        Command::Models {
            remote: Some(provider),
        } => {
            models::print_provider_models(&on.provider_models(&provider).await?, json);
            Ok(exit::DONE)
        }
        Command::Config {
            command: config::ConfigCommand::Show { model },
        } => {
            let l = on.local()?;
            config::show(
                &l.given.config,
                &l.target,
                model.as_deref(),
                &l.given.mcp,
                json,
            )?;
            Ok(exit::DONE)
        }
        Command::Login(_) | Command::Logout(_) => {
            bail!("login and logout are handled before a command is dispatched")
        }
        Command::Connect(_) => {
            bail!("this command talks to a rein server: give --server URL (or REIN_SERVER)")
        }
        Command::Sandbox(_) => bail!("`rein sandbox` runs before a command is dispatched"),
        Command::Group { command } => groups::run(on, command, json).await,
        Command::Goal { command } => commands::goals::run(on, command, json).await,
        Command::Eval { command } => commands::evals::run(on.local()?, command, json).await,
        Command::Brief { command } => briefs::run(on, command, json).await,
        Command::Topic { command } => topics::run(on, command, json).await,
        Command::Kb { command } => knowledge::run(on, command, json).await,
        Command::Memory { command } => memory::run(on, command, json).await,
        Command::Skill { command } => {
            let l = on.local()?;
            skills::command(command, &l.given.config, json)?;
            Ok(exit::DONE)
        }
        Command::Chat(a) => chat::chat(on, a).await,
        Command::Task { command } => tasks::run(on, command, json).await,
        Command::Worker(a) => {
            let l = on.local()?;
            serve::worker(Arc::clone(l.store().await?), a, &l.given).await?;
            Ok(exit::DONE)
        }
        Command::Migrate => commands::migrate::run(on.local()?, json).await,
        Command::Gc(a) => gc::run(on.local()?, a, json).await,
        Command::Pin { command } => commands::pins::run(on.local()?, command, json).await,
        Command::Backup(a) => backup::run(on.local()?, a, json).await,
        Command::Export(a) => commands::portable::export(on.local()?, a, json).await,
        Command::Import(a) => commands::portable::import(on.local()?, a, json).await,
        Command::Serve(a) => {
            let l = on.local()?;
            serve::serve(Arc::clone(l.store().await?), a, &l.given).await?;
            Ok(exit::DONE)
        }
        Command::Mcp(a) => {
            let l = on.local()?;
            serve::mcp(Arc::clone(l.store().await?), a, &l.given).await?;
            Ok(exit::DONE)
        }
        Command::Acp(a) => {
            let l = on.local()?;
            serve::acp(Arc::clone(l.store().await?), a, &l.given).await?;
            Ok(exit::DONE)
        }
        Command::User { command } => users::run(on, command, json).await,
        Command::Usage(a) => usage::run(on, a, json).await,
        Command::Artifact { command } => commands::artifacts::run(on, command, json).await,
        Command::Settings { command } => settings::run(on, command, json).await,
        Command::Token { command } => tokens::run(on, command, json).await,
        Command::Run(a) => run::run(on, a).await,
    }
}

/// mimalloc: a busy server's steps allocate and free from many threads at once, where it
/// spent about a third less CPU per committed step than the system allocator (547 µs against
/// 805 at 1,000 operations at once: `cargo bench -p rein-operation --bench load -- 1000 normal`;
/// docs/performance.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs go to stderr: always for the server, for other commands only when REIN_LOG asks.
    let serving = matches!(cli.command, Command::Serve(_));
    let threads = cli.threads.map_or_else(
        || {
            if matches!(
                cli.command,
                Command::Serve(_) | Command::Worker(_) | Command::Mcp(_) | Command::Acp(_)
            ) {
                std::thread::available_parallelism().map_or(2, |n| n.get())
            } else {
                2
            }
        },
        usize::from,
    );
    let telemetry = telemetry::init(
        std::env::var(rein_operation::env::LOG)
            .ok()
            .filter(|f| !f.is_empty())
            .or_else(|| serving.then(|| "info".to_owned())),
    );
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    let code = match runtime.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit::ERROR)
        }
    };
    telemetry.shutdown();
    code
}

#[cfg(test)]
mod tests {
    /// `docs/cli.md` is what the flags say (`REIN_UPDATE_DOCS=1` writes it again).
    #[test]
    fn cli_reference() {
        use clap::CommandFactory;
        let rendered = crate::reference::markdown(&mut crate::Cli::command());
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cli.md");
        if std::env::var_os(rein_operation::env::UPDATE_DOCS).is_some() {
            std::fs::write(&path, &rendered).expect("docs/cli.md is writable");
            return;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            kept == rendered,
            "docs/cli.md differs from the command line's definitions; write it again with \
             REIN_UPDATE_DOCS=1 cargo test -p rein-cli --bin rein cli_reference"
        );
    }
}
