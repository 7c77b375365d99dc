//! The state after any committed step, rebuilt from what step rows keep: each row holds the
//! small state after its step and the next context (both small), and an undo record of the
//! bulky parts it changed — the message ids it moved or dropped, the committed versions of the
//! messages it changed in place, the tool manifests it replaced. Starting from the latest
//! state and undoing the later steps newest first gives the message list, message bodies and
//! manifests after the step asked for, without a per-step copy of the whole conversation (a
//! step that appends, the common case, keeps only its position).

use rein_core::phase::RuntimeContext;
use rein_core::spec::OperationSpec;
use rein_core::tool::ToolManifestMap;
use rein_core::{AgentState, Message, MessageId};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// The state an operation had right after one of its committed steps.
#[derive(Clone, Debug)]
pub struct StepCheckpoint {
    /// The step.
    pub step_index: u64,
    /// The whole state after it: messages (with their bodies as they were then), tool
    /// manifests, plan, activated tools and skills, counters.
    pub state: AgentState,
    /// What the next step would have started from.
    pub next_context: Option<RuntimeContext>,
    /// The operation's spec (it never changes).
    pub spec: OperationSpec,
    /// The operation's conversation.
    pub topic_id: String,
    /// Message ids the rebuilt list refers to that were deleted from the conversation since
    /// (left out of `state`).
    pub missing_messages: Vec<String>,
}

/// The answer to "the state after step N of operation X".
#[derive(Clone, Debug)]
pub enum Rewound {
    /// Rebuilt.
    Found(Box<StepCheckpoint>),
    /// There is no such operation.
    NoOperation,
    /// The operation has no committed step with that index.
    NoStep {
        /// Its last committed step (`None` before its first).
        last: Option<u64>,
    },
    /// That step, or one after it, was committed before step rows kept what rebuilding needs
    /// (an operation recorded by an older rein).
    NotKept,
}

/// What a step row keeps to undo the step (see the module's documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct StepUndo {
    /// Leading positions of the list the step left holding the same ids.
    pub(crate) kept: usize,
    /// The ids the list held from `kept` on before the step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) removed: Vec<MessageId>,
    /// The messages the step changed in place, as they were before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) replaced: Vec<Arc<Message>>,
    /// The tool manifests before the step, when it changed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) manifests_before: Option<Arc<ToolManifestMap>>,
}

/// What a step row's `checkpoint` column holds.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct StoredCheckpoint {
    /// The state after the step without its messages and manifests.
    pub(crate) state: AgentState,
    /// The next step's context.
    #[serde(default)]
    pub(crate) next_context: Option<RuntimeContext>,
    /// How to undo the step.
    #[serde(default)]
    pub(crate) undo: StepUndo,
}

/// The message list (as ids) and manifests after the step before `later`'s first, given those
/// after the last step: `later` newest first. Bodies a step replaced overwrite `bodies`, so
/// each id's body is the one it had then.
pub(crate) fn undo_steps<'a>(
    mut order: Vec<MessageId>,
    mut manifests: Arc<ToolManifestMap>,
    bodies: &mut HashMap<MessageId, Arc<Message>>,
    later: impl IntoIterator<Item = &'a StepUndo>,
) -> (Vec<MessageId>, Arc<ToolManifestMap>) {
    for undo in later {
        order.truncate(undo.kept);
        order.extend(undo.removed.iter().copied());
        for m in &undo.replaced {
            bodies.insert(m.id, Arc::clone(m));
        }
        if let Some(before) = &undo.manifests_before {
            manifests = Arc::clone(before);
        }
    }
    (order, manifests)
}

/// The ids an undo brings back that `known` lacks a body for (they were moved out of the list
/// by a later step, so the latest state does not hold them).
pub(crate) fn ids_to_fetch<'a>(
    known: &HashMap<MessageId, Arc<Message>>,
    later: impl IntoIterator<Item = &'a StepUndo>,
) -> Vec<MessageId> {
    let mut out: Vec<MessageId> = later
        .into_iter()
        .flat_map(|u| u.removed.iter().copied())
        .filter(|id| !known.contains_key(id))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StateChanges;

    /// Steps that append, change a message in place, compress (drop and replace the head)
    /// and change manifests, undone from the last state back to each earlier one.
    #[test]
    fn undoing_later_steps_gives_each_earlier_list_bodies_and_manifests() {
        let mut states = Vec::new();
        let mut s = AgentState::new(rein_core::OperationId::new());
        s.messages.push(Arc::new(Message::user("hello")));
        states.push(s.clone());
        // 1: append an answer.
        s.messages.push(Arc::new(Message::assistant("first")));
        states.push(s.clone());
        // 2: change the answer in place.
        let mut changed = Message::assistant("second");
        changed.id = s.messages[1].id;
        s.messages[1] = Arc::new(changed);
        states.push(s.clone());
        // 3: compress: a summary replaces both.
        s.messages = vec![Arc::new(Message::user("summary"))];
        states.push(s.clone());
        // 4: new tool manifests and an append.
        let manifest: rein_core::tool::ToolManifest =
            serde_json::from_value(serde_json::json!({"identifier": "calc", "api": []})).unwrap();
        Arc::make_mut(&mut s.tool_manifests).insert("calc".into(), Arc::new(manifest));
        s.messages.push(Arc::new(Message::assistant("after")));
        states.push(s.clone());

        let undos: Vec<StepUndo> = states
            .windows(2)
            .map(|w| {
                let c = StateChanges::between(&w[0], &w[1]);
                StepUndo {
                    kept: c.kept,
                    removed: c.removed,
                    replaced: c.replaced,
                    manifests_before: c.manifests_before,
                }
            })
            .collect();
        assert_eq!(
            undos[1].replaced.len(),
            1,
            "step 2 changed one message in place"
        );
        assert!(undos[3].manifests_before.is_some());
        let last = states.last().unwrap();
        for target in 0..states.len() {
            let mut bodies: HashMap<MessageId, Arc<Message>> = last
                .messages
                .iter()
                .map(|m| (m.id, Arc::clone(m)))
                .collect();
            let later: Vec<&StepUndo> = undos[target..].iter().rev().collect();
            for id in ids_to_fetch(&bodies, later.iter().copied()) {
                // What the store reads from the conversation: each id's newest body.
                let newest = states
                    .iter()
                    .rev()
                    .flat_map(|s| s.messages.iter())
                    .find(|m| m.id == id)
                    .unwrap();
                bodies.insert(id, Arc::clone(newest));
            }
            let (order, manifests) = undo_steps(
                last.messages.iter().map(|m| m.id).collect(),
                Arc::clone(&last.tool_manifests),
                &mut bodies,
                later.iter().copied(),
            );
            let got: Vec<String> = order.iter().map(|id| bodies[id].text_content()).collect();
            let want: Vec<String> = states[target]
                .messages
                .iter()
                .map(|m| m.text_content())
                .collect();
            assert_eq!(got, want, "the list after step {target}");
            assert_eq!(
                manifests, states[target].tool_manifests,
                "manifests after step {target}"
            );
        }
    }
}
