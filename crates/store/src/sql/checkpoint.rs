//! The read side of [`crate::checkpoint`]: the latest state, the undo records of the steps
//! after the one asked for, and the bodies of the messages those steps moved out of the list.

use super::*;
use crate::checkpoint::{StepUndo, StoredCheckpoint, ids_to_fetch, undo_steps};
use crate::{Rewound, StepCheckpoint};
use rein_core::{Message, MessageId};
use sqlx::Row;
use std::collections::HashMap;
use std::sync::Arc;

/// Message ids per query when fetching bodies.
const IDS_PER_QUERY: usize = 500;

pub(super) async fn state_at(
    store: &SqlStore,
    id: OperationId,
    step_index: u64,
) -> Result<Rewound, StoreError> {
    let Some(latest) = super::load::load_operation(store, id).await? else {
        return Ok(Rewound::NoOperation);
    };
    let rows = sqlx::query(
        "SELECT step_index, checkpoint FROM operation_steps WHERE operation_id = $1 AND step_index >= $2 \
         ORDER BY step_index DESC",
    )
    .bind(id.to_string())
    .bind(i64_of(step_index))
    .fetch_all(&store.pool)
    .await?;
    // Step 0 is the state before the first step, kept with the operation's setup.
    let first: Option<String> = if step_index == 0 {
        sqlx::query_scalar("SELECT first_checkpoint FROM operation_setup WHERE operation_id = $1")
            .bind(id.to_string())
            .fetch_optional(&store.pool)
            .await?
            .flatten()
    } else {
        None
    };
    if step_index == 0 && first.is_none() {
        return Ok(Rewound::NotKept);
    }
    if step_index > 0
        && rows
            .last()
            .map(|r| r.try_get::<i64, _>("step_index"))
            .transpose()?
            != Some(i64_of(step_index))
    {
        let last: Option<i64> = sqlx::query_scalar(
            "SELECT MAX(step_index) FROM operation_steps WHERE operation_id = $1",
        )
        .bind(id.to_string())
        .fetch_one(&store.pool)
        .await?;
        return Ok(Rewound::NoStep {
            last: last.map(u64_of),
        });
    }
    // Newest first; the last is the step asked for.
    let mut checkpoints = Vec::with_capacity(rows.len());
    for r in &rows {
        let Some(text) = r.try_get::<Option<String>, _>("checkpoint")? else {
            return Ok(Rewound::NotKept);
        };
        checkpoints.push(from_json::<StoredCheckpoint>(&text, "step checkpoint")?);
    }
    let target = match first {
        Some(text) => from_json::<StoredCheckpoint>(&text, "first checkpoint")?,
        None => match checkpoints.pop() {
            Some(c) => c,
            None => return Ok(Rewound::NoStep { last: None }),
        },
    };
    let later: Vec<&StepUndo> = checkpoints.iter().map(|c| &c.undo).collect();
    let mut bodies: HashMap<MessageId, Arc<Message>> = latest
        .state
        .messages
        .iter()
        .map(|m| (m.id, Arc::clone(m)))
        .collect();
    for chunk in ids_to_fetch(&bodies, later.iter().copied()).chunks(IDS_PER_QUERY) {
        let marks: Vec<String> = (1..=chunk.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "SELECT body FROM messages WHERE id IN ({})",
            marks.join(", ")
        );
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        for id in chunk {
            q = q.bind(id.to_string());
        }
        for r in q.fetch_all(&store.pool).await? {
            let m: Message = from_json(&r.try_get::<String, _>("body")?, "message")?;
            bodies.insert(m.id, Arc::new(m));
        }
    }
    let (order, manifests) = undo_steps(
        latest.state.messages.iter().map(|m| m.id).collect(),
        Arc::clone(&latest.state.tool_manifests),
        &mut bodies,
        later,
    );
    let mut state = target.state;
    let mut missing_messages = latest.missing_messages;
    state.messages = Vec::with_capacity(order.len());
    for id in order {
        match bodies.get(&id) {
            Some(m) => state.messages.push(Arc::clone(m)),
            None => missing_messages.push(id.to_string()),
        }
    }
    state.tool_manifests = manifests;
    missing_messages.sort();
    missing_messages.dedup();
    Ok(Rewound::Found(Box::new(StepCheckpoint {
        step_index,
        state,
        next_context: target.next_context,
        spec: latest.spec,
        topic_id: latest.record.topic_id,
        missing_messages,
    })))
}
