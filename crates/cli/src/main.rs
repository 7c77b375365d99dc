//! The `rein` command line.

mod agents;
mod briefs;
mod chat;
mod config;
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
mod remote;
mod serve;
mod skills;
mod tasks;
mod telemetry;
#[cfg(feature = "test-hooks")]
mod test_tools;
mod topics;

use anyhow::{Context, anyhow, bail};
use clap::{Parser, Subcommand};
use rein_core::OperationId;
use rein_core::state::Status;
use rein_operation::{Decision, Driver, RunEnd, SpecOrigin, StartOptions};
use rein_store::{SqlStore, Store, Synchronous};
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
    /// Talk to a `rein serve` at this URL instead of the local database (op, approve, reject,
    /// agent, models); the token is read from $REIN_TOKEN.
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
struct RunArgs {
    /// The prompt.
    prompt: String,
    /// Run as this agent (its model, system role, tools, approval mode and limits; flags win).
    #[arg(long, conflicts_with = "group")]
    agent: Option<String>,
    /// Run as this group: its members talk in rounds under its supervisor (one budget).
    #[arg(long)]
    group: Option<String>,
    #[command(flatten)]
    settings: agents::AgentFlags,
    /// Attach a file to the prompt (repeatable): images are shown to models that can see
    /// them, text files are inlined (long ones cut), other files are named only.
    #[arg(long, value_name = "PATH")]
    attach: Vec<std::path::PathBuf>,
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

pub(crate) fn data_dir() -> anyhow::Result<PathBuf> {
    let dir = match std::env::var_os(rein_operation::env::HOME) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(
            std::env::var_os("HOME").ok_or_else(|| anyhow!("neither REIN_HOME nor HOME is set"))?,
        )
        .join(".rein"),
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    Ok(dir)
}

/// The database: `--db`, else `$REIN_DATABASE_URL`, else `rein.db` in the data directory.
fn db_target(db: Option<&str>) -> anyhow::Result<String> {
    Ok(
        match db.map(str::to_owned).or_else(|| {
            std::env::var(rein_operation::env::DATABASE_URL)
                .ok()
                .filter(|v| !v.is_empty())
        }) {
            Some(t) => t,
            None => data_dir()?.join("rein.db").to_string_lossy().into_owned(),
        },
    )
}

pub(crate) fn parse_id(id: &str) -> anyhow::Result<OperationId> {
    id.parse()
        .map_err(|_| anyhow!("`{id}` is not an operation id"))
}

pub(crate) struct Context_ {
    /// The shell's sandbox of this process's operations.
    sandbox: rein_core::spec::Sandbox,
    cli_replay: Option<PathBuf>,
    cli_record: Option<PathBuf>,
    json: bool,
    mcp: Vec<String>,
    config: config::Config,
}

/// A driver for continuing existing operations: each runs as its stored spec says.
async fn op_driver(store: &Arc<SqlStore>, ctx: &Context_) -> anyhow::Result<Driver> {
    let host = host::host(Arc::clone(store), ctx, None).await?;
    Ok(host::printing_driver(&host, ctx.json))
}

pub(crate) async fn finish(store: &SqlStore, id: OperationId, end: &RunEnd) -> anyhow::Result<u8> {
    // A group's answer is its members' turns.
    if let Some(op) = store.load_operation(id).await?
        && op.spec.group.is_some()
    {
        output::turns(&op.state);
    }
    let record = store.operation(id).await?;
    let summary = record
        .as_ref()
        .map(|r| {
            format!(
                "{} · {} tokens · {} · op {id}",
                output::count(r.step_count, "step"),
                r.total_tokens,
                r.cost
            )
        })
        .unwrap_or_else(|| format!("op {id}"));
    Ok(match end {
        RunEnd::Queued => {
            eprintln!(
                "\nqueued behind another operation of its conversation · {summary}\nit starts when that one ends; drop it with: rein op cancel {id}"
            );
            exit::WAITING
        }
        RunEnd::Done { reason, detail } => {
            let d = detail
                .as_deref()
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            eprintln!(
                "\n{} ({}){d} · {summary}",
                if reason.is_success() {
                    "done"
                } else {
                    "stopped"
                },
                reason
            );
            if reason.is_success() {
                exit::DONE
            } else {
                exit::ERROR
            }
        }
        RunEnd::WaitingForHuman { pending } => {
            eprintln!("\nwaiting for a person · {summary}");
            let reasons = rein_operation::tree::pending_approvals(store, id)
                .await
                .unwrap_or_default();
            let mut questions = false;
            for c in pending {
                match rein_core::question::Question::of_call(c).and_then(Result::ok) {
                    Some(q) => {
                        questions = true;
                        let options: Vec<String> = q
                            .options
                            .iter()
                            .map(|o| format!("{} ({})", o.key, o.label))
                            .collect();
                        let options = if options.is_empty() {
                            String::new()
                        } else {
                            format!(" [{}]", options.join(", "))
                        };
                        eprintln!("  question {}: {}{options}", c.id, q.question);
                    }
                    None => {
                        eprintln!("  pending {} {}({})", c.id, c.key(), c.arguments);
                        if let Some(r) = reasons
                            .iter()
                            .find(|i| i.call.id == c.id)
                            .and_then(|i| i.reason.as_ref())
                        {
                            eprintln!("{}", output::why(r));
                        }
                    }
                }
            }
            if questions {
                eprintln!(
                    "answer with: rein answer {id} \"...\"   or: rein answer {id} --option KEY"
                );
            }
            if pending.iter().any(|c| !rein_core::engine::is_question(c)) {
                eprintln!(
                    "continue with: rein approve {id}   or: rein reject {id} --reason \"...\""
                );
            }
            exit::WAITING
        }
        RunEnd::WaitingForAsyncTool { calls } => {
            eprintln!(
                "\nwaiting for {} call(s) a device runs · {summary}",
                calls.len()
            );
            exit::WAITING
        }
        RunEnd::WaitingForSubAgents { children } => {
            eprintln!(
                "\nwaiting for {} sub-agent(s) another process runs · {summary}",
                children.len()
            );
            for c in children {
                eprintln!("  sub-agent {c}");
            }
            exit::WAITING
        }
        RunEnd::Released => {
            eprintln!(
                "\nstopped between two steps as this process stopped · {summary} (resume with: rein op resume {id})"
            );
            exit::INTERRUPTED
        }
        RunEnd::Interrupted { reason, can_resume } => {
            let hint = if *can_resume {
                format!(" (resume with: rein op resume {id})")
            } else {
                String::new()
            };
            eprintln!("\ninterrupted: {reason} · {summary}{hint}");
            exit::INTERRUPTED
        }
        RunEnd::Error { message } => {
            eprintln!("\nerror: {message} · {summary}");
            exit::ERROR
        }
    })
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    let config = config::load()?;
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
    if let Some(server) = &cli.server {
        if let Command::Connect(args) = cli.command {
            return connect::connect(server, args, &ctx).await;
        }
        return remote::dispatch(&remote::Remote::new(server)?, cli.command, cli.json).await;
    }
    if matches!(cli.command, Command::Connect(_) | Command::Device { .. }) {
        bail!("this command talks to a rein server: give --server URL (or REIN_SERVER)");
    }
    let target = db_target(cli.db.as_deref())?;
    if let Command::Config {
        command: ConfigCommand::Show { model },
    } = &cli.command
    {
        config::show(&ctx.config, &target, model.as_deref(), &cli.mcp, cli.json)?;
        return Ok(exit::DONE);
    }
    if let Command::Models { remote } = &cli.command {
        match remote {
            Some(provider) => agents::remote_models(&ctx.config, provider, cli.json).await?,
            None => agents::models(&ctx.config, cli.json)?,
        }
        return Ok(exit::DONE);
    }
    let mut store = SqlStore::open(&target, Synchronous::Normal).await?;
    if cli.vector_search == rein_store::VectorIndex::Pgvector {
        store.enable_pgvector().await?;
    }
    let store = Arc::new(store);
    match cli.command {
        Command::Config { .. }
        | Command::Models { .. }
        | Command::Connect(_)
        | Command::Device { .. } => Ok(exit::DONE),
        Command::Agent { command } => {
            agents::command(&store, command, cli.json).await?;
            Ok(exit::DONE)
        }
        Command::Group { command } => {
            groups::command(&store, command, cli.json).await?;
            Ok(exit::DONE)
        }
        Command::Brief { command } => briefs::command(store, command, &ctx).await,
        Command::Topic { command } => topics::command(store, command, &ctx).await,
        Command::Kb { command } => {
            let (models, _) = host::models(&ctx)?;
            knowledge::command(&store, &*models, command, cli.json).await?;
            Ok(exit::DONE)
        }
        Command::Memory { command } => {
            let host = host::host(Arc::clone(&store), &ctx, None).await?;
            memory::command(&store, &host, command, cli.json).await?;
            Ok(exit::DONE)
        }
        Command::Skill { command } => {
            skills::command(command, &ctx.config, cli.json)?;
            Ok(exit::DONE)
        }
        Command::Chat(a) => chat::chat(store, a, &ctx).await,
        Command::Task { command } => tasks::command(store, command, &ctx).await,
        Command::Worker(a) => {
            serve::worker(store, a, &ctx).await?;
            Ok(exit::DONE)
        }
        Command::Migrate => {
            let applied = store.migrations_applied().await?;
            let known = rein_store::Schema::current(store.is_postgres()).latest();
            let version = applied.last().map_or(0, |m| m.version);
            if cli.json {
                println!(
                    "{}",
                    serde_json::json!({"schema_version": version, "known": known, "migrations": applied})
                );
            } else {
                for m in &applied {
                    println!("{:>4}  {}  {}", m.version, m.applied_at, m.description);
                }
                println!("schema version {version}; this rein knows {known}");
            }
            Ok(exit::DONE)
        }
        Command::Serve(a) => {
            serve::serve(store, a, &ctx).await?;
            Ok(exit::DONE)
        }
        Command::Token { command } => {
            serve::token(&store, command, cli.json).await?;
            Ok(exit::DONE)
        }
        Command::Grant { command } => {
            let driver = op_driver(&store, &ctx).await?;
            grants::command(&store, &driver, command, cli.json).await?;
            Ok(exit::DONE)
        }
        Command::Run(a) => {
            let host = host::host(Arc::clone(&store), &ctx, None).await?;
            let origin = SpecOrigin {
                working_directory: std::env::current_dir()
                    .ok()
                    .map(|d| d.to_string_lossy().into_owned()),
                ..Default::default()
            };
            let over = a.settings.profile();
            let spec = agents::spec(
                &store,
                &ctx.config,
                &host,
                agents::RunAs::of(a.agent.as_deref(), a.group.as_deref()),
                &over,
                origin,
            )
            .await?;
            let attachments = a
                .attach
                .iter()
                .map(|p| rein_operation::attachment::from_path(p))
                .collect::<Result<Vec<_>, _>>()?;
            let opts = StartOptions {
                spec,
                attachments,
                ..Default::default()
            };
            let driver = host::printing_driver(&host, ctx.json);
            let id = driver.start(&a.prompt, &opts).await?;
            let cancel = driver.cancel_token();
            tokio::spawn(async move {
                if tokio::signal::ctrl_c().await.is_ok() {
                    cancel.cancel();
                }
            });
            let end = queue::run_in_turn(&driver, id).await?;
            let end = prompt::ask(&driver, id, end).await?;
            // Learning from the conversation comes after the answer is out; a failure is
            // retried by the next run, never the run's failure.
            if matches!(end, RunEnd::Done { .. })
                && let Err(e) = memory::extract(&host, false).await
            {
                tracing::warn!(error = %e, "memory extraction could not run");
            }
            finish(&store, id, &end).await
        }
        Command::Approve {
            id,
            calls,
            all,
            grant,
        } => {
            let id = parse_id(&id)?;
            let driver = op_driver(&store, &ctx).await?;
            let end = match (grant, calls.as_slice()) {
                (Some(scope), [call]) => {
                    let (end, g) = driver.approve_always(id, call, scope, Some("cli")).await?;
                    eprintln!("granted {} for {} ({})", g.tool, scope.phrase(), g.id);
                    end
                }
                (Some(_), _) => bail!("--grant goes with exactly one --call"),
                (None, _) => {
                    let calls = (!all && !calls.is_empty()).then_some(calls);
                    driver
                        .decide(id, calls.as_deref(), Decision::Approve, Some("cli"))
                        .await?
                }
            };
            let end = prompt::ask(&driver, id, end).await?;
            finish(&store, id, &end).await
        }
        Command::Answer {
            id,
            text,
            call,
            option,
        } => {
            let id = parse_id(&id)?;
            let driver = op_driver(&store, &ctx).await?;
            let answer = match (text, option) {
                (_, Some(key)) => rein_core::question::Answer::Option(key),
                (Some(text), None) => rein_core::question::Answer::Text(text),
                (None, None) => return Err(anyhow!("give the answer, or --option KEY")),
            };
            let calls = call.map(|c| vec![c]);
            let end = driver
                .decide(id, calls.as_deref(), Decision::Answer(answer), Some("cli"))
                .await?;
            let end = prompt::ask(&driver, id, end).await?;
            finish(&store, id, &end).await
        }
        Command::Reject {
            id,
            calls,
            reason,
            halt,
        } => {
            let id = parse_id(&id)?;
            let driver = op_driver(&store, &ctx).await?;
            let calls = (!calls.is_empty()).then_some(calls);
            let end = driver
                .decide(
                    id,
                    calls.as_deref(),
                    Decision::Reject { reason, halt },
                    Some("cli"),
                )
                .await?;
            finish(&store, id, &end).await
        }
        Command::Op { command } => match command {
            OpCommand::List { status } => {
                let records = store
                    .list_operations(&rein_store::OperationFilter {
                        status,
                        limit: 200,
                        ..Default::default()
                    })
                    .await?;
                if cli.json {
                    for r in &records {
                        println!("{}", serde_json::to_string(r)?);
                    }
                } else {
                    output::op_list(&records);
                }
                Ok(exit::DONE)
            }
            OpCommand::Show {
                id,
                context: Some(step),
                ..
            } => {
                let id = parse_id(&id)?;
                store
                    .operation(id)
                    .await?
                    .ok_or_else(|| anyhow!("no operation {id}"))?;
                let calls =
                    rein_operation::context_report::call_contexts(&*store, id, Some(step)).await?;
                output::call_contexts(&calls, step, cli.json)?;
                Ok(exit::DONE)
            }
            OpCommand::Show { id, tree, .. } => {
                let id = parse_id(&id)?;
                let op = store
                    .load_operation(id)
                    .await?
                    .ok_or_else(|| anyhow!("no operation {id}"))?;
                let steps = store.steps(id).await?;
                // Approvals anywhere in its tree are decided through it.
                let pending = rein_operation::tree::pending_approvals(&*store, id).await?;
                let sub_agents = if tree {
                    rein_operation::tree::descendants(&*store, id).await?
                } else {
                    Vec::new()
                };
                if cli.json {
                    println!(
                        "{}",
                        serde_json::json!({"operation": op.record, "spec": op.spec, "steps": steps, "pending": pending, "sub_agents": sub_agents})
                    );
                } else {
                    output::show(&op, &steps, &pending);
                    if tree {
                        output::tree(&op.record, &sub_agents);
                    }
                }
                Ok(exit::DONE)
            }
            OpCommand::Events { id, after, follow } => {
                let id = parse_id(&id)?;
                let mut cursor = after;
                loop {
                    let events = store.events(id, cursor).await?;
                    for e in &events {
                        println!("{}", serde_json::to_string(e)?);
                        cursor = Some(e.seq);
                    }
                    if !follow {
                        break;
                    }
                    let status = store
                        .operation_status(id)
                        .await?
                        .ok_or_else(|| anyhow!("no operation {id}"))?;
                    if status.is_terminal() && events.is_empty() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                }
                Ok(exit::DONE)
            }
            OpCommand::Resume { id } => {
                let id = parse_id(&id)?;
                let driver = op_driver(&store, &ctx).await?;
                let end = driver.resume(id).await?;
                let end = prompt::ask(&driver, id, end).await?;
                finish(&store, id, &end).await
            }
            OpCommand::Cancel { id } => {
                let id = parse_id(&id)?;
                let driver = op_driver(&store, &ctx).await?;
                let end = driver.cancel(id).await?;
                finish(&store, id, &end).await
            }
        },
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
