//! The `rein` command line: the flags (`Cli`, `Command`), one `dispatch` of every command to
//! where it runs (`commands::Local` or `commands::Remote`), and the process's runtime.

mod agents;
mod briefs;
mod chat;
mod commands;
mod connect;
mod grants;
mod groups;
mod host;
mod knowledge;
mod memory;
mod named;
mod output;
mod prompt;
mod queue;
#[cfg(test)]
mod reference;
mod serve;
mod skills;
mod tasks;
mod telemetry;
#[cfg(feature = "test-hooks")]
mod test_tools;
mod topics;

use anyhow::{anyhow, bail};
use clap::{Parser, Subcommand};
use rein_core::OperationId;
use rein_core::state::Status;
use rein_operation::RunEnd;
use rein_store::{SqlStore, Store};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Exit codes (documented in the README).
pub(crate) mod exit {
    pub const DONE: u8 = 0;
    pub const ERROR: u8 = 1;
    pub const WAITING: u8 = 3;
    pub const INTERRUPTED: u8 = 4;
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
    /// Serve model calls from this cassette instead of the network.
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
    /// Talk to a `rein serve` at this URL instead of the local database (op, approve, answer,
    /// reject, grant, agent, models, device); the token is read from $REIN_TOKEN.
    #[arg(long, global = true, value_name = "URL", env = rein_operation::env::SERVER)]
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
    Run(RunArgs),
    /// Chat on a topic, a turn per line (/approve, /reject, /cancel, /model, /history).
    Chat(chat::ChatArgs),
    /// Serve the HTTP API and the web UI.
    Serve(serve::ServeArgs),
    /// Join a `rein serve` (`--server URL`, a device token in REIN_TOKEN) as a device: its
    /// operations on `device:NAME` run their file and shell tools here.
    Connect(connect::ConnectArgs),
    /// A server's devices (`--server URL`): list, revoke.
    Device {
        #[command(subcommand)]
        command: DeviceCommand,
    },
    /// What you granted ("always for this tool"): list, revoke.
    Grant {
        #[command(subcommand)]
        command: grants::GrantCommand,
    },
    /// Manage API tokens for `rein serve`.
    Token {
        #[command(subcommand)]
        command: serve::TokenCommand,
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
        /// Ask this provider (`openai`, `anthropic`, `google`, `ollama`, ...) for its models.
        #[arg(long, value_name = "PROVIDER")]
        remote: Option<String>,
    },
    /// Show the effective configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Inspect and steer operations.
    Op {
        #[command(subcommand)]
        command: OpCommand,
    },
    /// Approve pending tool calls of a parked operation and continue it.
    Approve {
        /// Operation id.
        id: String,
        /// Tool call ids (default: every pending call).
        #[arg(long = "call")]
        calls: Vec<String>,
        /// Approve every pending call.
        #[arg(long)]
        all: bool,
        /// Also grant the call's tool from now on, for this operation, topic (conversation) or
        /// agent (one `--call`; refused for a call the blacklist or the guard flagged).
        #[arg(long, value_name = "SCOPE", value_parser = grants::scope_parser(), requires = "calls", conflicts_with = "all")]
        grant: Option<rein_core::intervention::GrantScope>,
    },
    /// Answer a question the agent asked (`ask_user`) and continue the operation.
    Answer {
        /// Operation id.
        id: String,
        /// The answer (free text, or an option's key or label).
        #[arg(required_unless_present = "option", conflicts_with = "option")]
        text: Option<String>,
        /// The question's tool call id (default: the one open question).
        #[arg(long = "call")]
        call: Option<String>,
        /// Choose the option with this key.
        #[arg(long)]
        option: Option<String>,
    },
    /// Reject pending tool calls of a parked operation (for a question: decline to answer).
    Reject {
        /// Operation id.
        id: String,
        /// Tool call ids (default: every pending call).
        #[arg(long = "call")]
        calls: Vec<String>,
        /// Why (the model reads it).
        #[arg(long)]
        reason: Option<String>,
        /// Stop the operation instead of letting the model continue.
        #[arg(long)]
        halt: bool,
    },
}

#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// The prompt.
    pub prompt: String,
    /// Run as this agent (its model, system role, tools, approval mode and limits; flags win).
    #[arg(long, conflicts_with = "group")]
    pub agent: Option<String>,
    /// Run as this group: its members talk in rounds under its supervisor (one budget).
    #[arg(long)]
    pub group: Option<String>,
    #[command(flatten)]
    pub settings: agents::AgentFlags,
    /// Attach a file to the prompt (repeatable): images are shown to models that can see
    /// them, text files are inlined (long ones cut), other files are named only.
    #[arg(long, value_name = "PATH")]
    pub attach: Vec<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// The configuration in effect (file, environment, flags), secrets masked.
    Show {
        /// As if `--model` were given.
        #[arg(long)]
        model: Option<String>,
    },
}

/// `rein device …` (against `--server URL`).
#[derive(Subcommand)]
pub(crate) enum DeviceCommand {
    /// Your devices: connected or not, their tools and directory.
    List,
    /// Revoke a device: its tokens stop working and its connection closes.
    Revoke {
        /// The device's name.
        name: String,
    },
}

#[derive(Subcommand)]
pub(crate) enum OpCommand {
    /// List operations.
    List {
        /// Only operations in this status.
        #[arg(long, value_parser = named::named::<Status>())]
        status: Option<Status>,
    },
    /// Show an operation and its step timeline.
    Show {
        id: String,
        /// Also its sub-agents (and theirs), with their status, cost and pending approvals.
        #[arg(long)]
        tree: bool,
        /// Instead, what the model call of this step admitted: tokens per item (system role,
        /// memories, knowledge, skills, tool list and schemas, history, summary) and what each
        /// context processor changed.
        #[arg(long, value_name = "STEP", conflicts_with = "tree")]
        context: Option<u32>,
    },
    /// Print an operation's events.
    Events {
        /// Operation id.
        id: String,
        /// Only events after this sequence number.
        #[arg(long)]
        after: Option<u64>,
        /// Keep printing new events until the operation ends.
        #[arg(long)]
        follow: bool,
    },
    /// Continue an operation from its last committed step (after a crash or an interruption).
    Resume { id: String },
    /// Cancel an operation.
    Cancel { id: String },
}

pub(crate) fn parse_id(id: &str) -> anyhow::Result<OperationId> {
    id.parse()
        .map_err(|_| anyhow!("`{id}` is not an operation id"))
}

/// This process's settings: the command line's global flags and the configuration file.
pub(crate) struct Context_ {
    /// The shell's sandbox of this process's operations.
    pub sandbox: rein_core::spec::Sandbox,
    /// `--replay CASSETTE`.
    pub cli_replay: Option<PathBuf>,
    /// `--record CASSETTE`.
    pub cli_record: Option<PathBuf>,
    /// `--json`: events as JSON lines.
    pub json: bool,
    /// `--mcp NAME=COMMAND`, as given.
    pub mcp: Vec<String>,
    /// The configuration file (and what the environment sets over it).
    pub config: rein_operation::settings::Settings,
}

/// How a local run or decision stopped, said as every command says it; the exit code.
pub(crate) async fn finish(store: &SqlStore, id: OperationId, end: &RunEnd) -> anyhow::Result<u8> {
    let op = store.load_operation(id).await?;
    // A group's answer is its members' turns.
    if let Some(op) = &op
        && op.spec.group.is_some()
    {
        output::turns(&op.state);
    }
    let pending = rein_operation::tree::pending_approvals(store, id)
        .await
        .unwrap_or_default();
    Ok(commands::ended::print(
        id,
        end,
        op.as_ref().map(|o| &o.record),
        &pending,
    ))
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    let config = rein_operation::settings::Settings::load()?;
    let ctx = Context_ {
        sandbox: rein_core::spec::Sandbox {
            mode: cli.sandbox,
            network: cli.network,
        },
        cli_replay: cli.replay.clone(),
        cli_record: cli.record.clone(),
        mcp: cli.mcp.clone(),
        json: cli.json,
        config,
    };
    match &cli.server {
        Some(server) => {
            if let Command::Connect(args) = cli.command {
                return connect::connect(server, args, &ctx).await;
            }
            let remote = commands::Remote::new(server, cli.json)?;
            dispatch(&remote, cli.command, cli.json).await
        }
        None => {
            let local = commands::Local::new(
                rein_operation::settings::database(cli.db.as_deref())?,
                cli.vector_search,
                ctx,
            );
            dispatch(&local, cli.command, cli.json).await
        }
    }
}

/// Run `command` where `on` says: every command once, for this machine's database and for a
/// server; the ones that need this machine ask `on.local()`, which a server refuses.
async fn dispatch(on: &impl commands::Backend, command: Command, json: bool) -> anyhow::Result<u8> {
    match command {
        Command::Op { command } => commands::operations::run(on, command, json).await,
        Command::Approve {
            id,
            calls,
            all,
            grant,
        } => commands::decide::approve(on, parse_id(&id)?, calls, all, grant).await,
        Command::Answer {
            id,
            text,
            call,
            option,
        } => commands::decide::answer(on, parse_id(&id)?, text, call, option).await,
        Command::Reject {
            id,
            calls,
            reason,
            halt,
        } => commands::decide::reject(on, parse_id(&id)?, calls, reason, halt).await,
        Command::Grant { command } => {
            commands::grants::run(on, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Agent { command } => {
            commands::agents::run(on, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Device { command } => {
            commands::devices::run(on, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Models { remote: None } => {
            on.print_models(json).await?;
            Ok(exit::DONE)
        }
        Command::Models {
            remote: Some(provider),
        } => {
            let l = on.local()?;
            agents::remote_models(&l.ctx.config, &provider, json).await?;
            Ok(exit::DONE)
        }
        Command::Config {
            command: ConfigCommand::Show { model },
        } => {
            let l = on.local()?;
            commands::config::show(&l.ctx.config, &l.target, model.as_deref(), &l.ctx.mcp, json)?;
            Ok(exit::DONE)
        }
        Command::Connect(_) => {
            bail!("this command talks to a rein server: give --server URL (or REIN_SERVER)")
        }
        Command::Group { command } => {
            let l = on.local()?;
            groups::command(l.store().await?, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Brief { command } => {
            let l = on.local()?;
            briefs::command(Arc::clone(l.store().await?), command, &l.ctx).await
        }
        Command::Topic { command } => {
            let l = on.local()?;
            topics::command(Arc::clone(l.store().await?), command, &l.ctx).await
        }
        Command::Kb { command } => {
            let l = on.local()?;
            let (models, _) = host::models(&l.ctx)?;
            knowledge::command(l.store().await?, &*models, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Memory { command } => {
            let l = on.local()?;
            let store = l.store().await?;
            let host = host::host(Arc::clone(store), &l.ctx, None).await?;
            memory::command(store, &host, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Skill { command } => {
            let l = on.local()?;
            skills::command(command, &l.ctx.config, json)?;
            Ok(exit::DONE)
        }
        Command::Chat(a) => {
            let l = on.local()?;
            chat::chat(Arc::clone(l.store().await?), a, &l.ctx).await
        }
        Command::Task { command } => {
            let l = on.local()?;
            tasks::command(Arc::clone(l.store().await?), command, &l.ctx).await
        }
        Command::Worker(a) => {
            let l = on.local()?;
            serve::worker(Arc::clone(l.store().await?), a, &l.ctx).await?;
            Ok(exit::DONE)
        }
        Command::Migrate => commands::migrate::run(on.local()?, json).await,
        Command::Serve(a) => {
            let l = on.local()?;
            serve::serve(Arc::clone(l.store().await?), a, &l.ctx).await?;
            Ok(exit::DONE)
        }
        Command::Token { command } => {
            let l = on.local()?;
            serve::token(l.store().await?, command, json).await?;
            Ok(exit::DONE)
        }
        Command::Run(a) => commands::run::run(on.local()?, a).await,
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Logs go to stderr: always for the server, for other commands only when REIN_LOG asks.
    let serving = matches!(cli.command, Command::Serve(_));
    let threads = cli.threads.map_or_else(
        || {
            if matches!(cli.command, Command::Serve(_) | Command::Worker(_)) {
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
