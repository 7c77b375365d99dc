//! `rein op list|show|events|resume|cancel`: inspect and steer operations.

use super::Backend;
use super::decide::finish;
use crate::{OpCommand, exit, output, parse_id};

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
                output::show(&d.operation, &d.spec, &d.steps, &d.pending);
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
        OpCommand::Cancel { id } => {
            let id = parse_id(&id)?;
            let end = on.cancel(id).await?;
            return finish(on, id, &end).await;
        }
    }
    Ok(exit::DONE)
}
