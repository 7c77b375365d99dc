//! `rein op list|show|events|resume|cancel|replay|fork|export|import`: inspect, compare, steer
//! and carry operations.

use super::Backend;
use super::decide::finish;
use super::operation_id as parse_id;
use crate::named::named;
use crate::{exit, output};
use rein_core::intervention::ApprovalMode;
use rein_core::state::Status;

/// `rein op …`.
#[derive(clap::Subcommand)]
pub enum OpCommand {
    /// List operations.
    List {
        /// Only operations in this status.
        #[arg(long, value_parser = named::<Status>())]
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
    /// Write an operation as a portable file (JSON, to stdout): its conversation and
    /// everything it recorded (docs/formats/operation.schema.json).
    Export {
        /// The operation.
        id: String,
    },
    /// Load an exported operation as yours, under new ids, where it shows, replays and forks
    /// as where it ran; refused, naming it, when this machine lacks its model's provider or
    /// its tools.
    Import {
        /// The file (`-`: stdin).
        file: std::path::PathBuf,
    },
    /// Send one step's model call again, rebuilt from the state before it, to the models you
    /// name (its own model gets the request it sent), all at once, and compare: answer, tool
    /// calls, tokens, cost, latency, why each stopped, whether it asked for the original's
    /// tools. With `--chain --model M`, M replays every model call of the operation, each from
    /// the original's state, until it asks for other tools. Nothing of the operation changes
    /// and no tool runs; what the calls spend counts in `rein usage` (as `(replay)`).
    Replay {
        /// The operation.
        id: String,
        /// The step whose model call is sent again (`rein op show ID` lists them).
        #[arg(
            long,
            value_name = "STEP",
            required_unless_present = "chain",
            conflicts_with = "chain"
        )]
        step: Option<u64>,
        /// Models to ask, comma-separated (`provider/model`).
        #[arg(
            long,
            value_delimiter = ',',
            required_unless_present = "chain",
            conflicts_with = "chain"
        )]
        models: Vec<String>,
        /// Runs per model.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=5))]
        runs: u32,
        /// Replay the whole trajectory with `--model`.
        #[arg(long, requires = "model")]
        chain: bool,
        /// The model that replays the trajectory (with `--chain`).
        #[arg(long, requires = "chain")]
        model: Option<String>,
    },
    /// Start a new operation from the state an operation had right after one of its
    /// committed steps (`rein op show ID` lists them), with another model, instructions,
    /// narrower tools or approval mode, in a conversation of its own; the original is
    /// untouched. The fork runs here like `rein op resume`.
    Fork {
        /// The operation to fork.
        id: String,
        /// The committed step whose state the fork starts from (0: the state it started
        /// with, before its first step).
        #[arg(long, value_name = "STEP")]
        at: u64,
        /// Another model (`provider/model`).
        #[arg(long)]
        model: Option<String>,
        /// Other instructions: they replace the conversation's system message.
        #[arg(long, value_name = "TEXT")]
        system: Option<String>,
        /// Tools it may call, comma-separated (`identifier` or `identifier/api`), among those
        /// the original could.
        #[arg(long, value_delimiter = ',')]
        tools: Option<Vec<String>>,
        /// Another approval mode.
        #[arg(long, value_parser = named::<ApprovalMode>())]
        approval: Option<ApprovalMode>,
    },
}

/// Run an `op` command; the exit code.
pub async fn run(on: &impl Backend, command: OpCommand, json: bool) -> anyhow::Result<u8> {
    match command {
        OpCommand::List { status } => {
            let records = on.operations(status).await?;
            if json {
                for r in &records {
                    println!("{}", serde_json::to_string(r)?);
                }
            } else {
                output::op_list(&records);
            }
        }
        OpCommand::Show {
            id,
            context: Some(step),
            ..
        } => {
            let calls = on.call_contexts(parse_id(&id)?, step).await?;
            output::call_contexts(&calls, step, json)?;
        }
        OpCommand::Show { id, tree, .. } => {
            let d = on.operation(parse_id(&id)?).await?;
            if json {
                // The server's shape, here and there.
                println!("{}", serde_json::to_string(&d)?);
            } else {
                output::show(&d.operation, &d.spec, &d.steps, &d.pending, &d.cache);
                if tree {
                    output::tree(&d.operation, &d.sub_agents);
                }
            }
        }
        OpCommand::Events { id, after, follow } => {
            on.events(parse_id(&id)?, after, follow, &mut |e| {
                println!("{}", serde_json::to_string(e)?);
                Ok(())
            })
            .await?;
        }
        OpCommand::Resume { id } => {
            let id = parse_id(&id)?;
            let end = on.resume(id).await?;
            let end = crate::prompt::ask(on, id, end).await?;
            return finish(on, id, &end).await;
        }
        OpCommand::Export { id } => {
            let archive = on.export_operation(parse_id(&id)?).await?;
            println!("{}", serde_json::to_string(&archive)?);
        }
        OpCommand::Import { file } => {
            let text = if file.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())?
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?
            };
            let archive: rein_store::OperationArchive = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{} is not an operation file: {e}", file.display()))?;
            let (id, topic) = on.import_operation(&archive).await?;
            if json {
                println!(
                    "{}",
                    serde_json::json!({"operation_id": id, "topic_id": topic})
                );
            } else {
                println!("imported as operation {id} (conversation {topic})");
            }
        }
        OpCommand::Replay {
            id,
            step,
            models,
            runs,
            chain,
            model,
        } => {
            let id = parse_id(&id)?;
            match (chain, model, step) {
                (true, Some(model), _) => {
                    let request = rein_server::routes::replay::ReplayChain { model };
                    let replayed = on.replay_chain(id, &request).await?;
                    if json {
                        println!("{}", serde_json::to_string(&replayed)?);
                    } else {
                        crate::replay_table::chain(&replayed);
                    }
                }
                (_, _, Some(step)) => {
                    let request = rein_server::routes::replay::ReplayStep {
                        step,
                        models,
                        runs: Some(runs),
                    };
                    let replayed = on.replay(id, &request).await?;
                    if json {
                        println!("{}", serde_json::to_string(&replayed)?);
                    } else {
                        crate::replay_table::step(&replayed);
                    }
                }
                // clap requires a step without --chain, and a model with it.
                (_, _, None) => anyhow::bail!("name --step STEP, or --chain --model MODEL"),
            }
        }
        OpCommand::Fork {
            id,
            at,
            model,
            system,
            tools,
            approval,
        } => {
            let request = rein_server::routes::fork::ForkOperation {
                step: at,
                model,
                system_role: system,
                tools,
                approval,
            };
            let (fork, end) = on.fork(parse_id(&id)?, &request).await?;
            let end = crate::prompt::ask(on, fork, end).await?;
            return finish(on, fork, &end).await;
        }
        OpCommand::Cancel { id } => {
            let id = parse_id(&id)?;
            let end = on.cancel(id).await?;
            return finish(on, id, &end).await;
        }
    }
    Ok(exit::DONE)
}
