//! `tool_call_pairing`: providers reject a transcript in which a tool call has no result, a
//! result has no call, or a result does not directly follow its call. After this processor every
//! assistant tool call is followed, in call order, by exactly one result: the last recorded
//! one, or a synthesized "interrupted" result when none was recorded. Results whose call is not
//! in the kept messages are dropped. Messages that arrived between a call and its results (a
//! user message queued while tools ran) move after the results.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::{Message, Role, ToolStatus};
use std::collections::HashMap;
use std::sync::Arc;

/// What a synthesized result says.
pub const INTERRUPTED: &str = "This tool call was interrupted and has no result.";

/// Pairs every call with one result (see the module docs).
pub struct ToolCallPairing;

impl Processor for ToolCallPairing {
    fn name(&self) -> &'static str {
        "tool_call_pairing"
    }

    fn process(&self, _input: &ContextInput<'_>, draft: &mut Draft) {
        if already_paired(&draft.messages) {
            return;
        }
        draft.messages = pair(&draft.messages);
    }
}

/// The common case, checked in one sequential pass without hashing: each assistant's calls are
/// answered right after it, in order, and no tool message stands anywhere else.
fn already_paired(messages: &[Arc<Message>]) -> bool {
    let mut i = 0;
    while let Some(m) = messages.get(i) {
        match m.role {
            Role::Tool => return false,
            Role::Assistant => {
                for (k, call) in m.tool_calls.iter().enumerate() {
                    let answered = messages.get(i + 1 + k).is_some_and(|r| {
                        r.role == Role::Tool && r.tool_call_id.as_deref() == Some(&*call.id)
                    });
                    if !answered {
                        return false;
                    }
                }
                i += 1 + m.tool_calls.len();
            }
            _ => i += 1,
        }
    }
    true
}

/// A result answers the nearest preceding call with its id (providers that synthesize ids, such
/// as Gemini's, reuse them across turns); a later result for the same call replaces an earlier
/// one (a retry).
fn pair(messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
    // Slots for every call, flattened in transcript order.
    let calls: usize = messages.iter().map(|m| m.tool_calls.len()).sum();
    let mut slots: Vec<Option<&Arc<Message>>> = vec![None; calls];
    let mut open: HashMap<&str, usize> = HashMap::with_capacity(calls);
    let mut next = 0;
    for m in messages {
        match m.role {
            Role::Assistant => {
                for call in &m.tool_calls {
                    open.insert(&call.id, next);
                    next += 1;
                }
            }
            Role::Tool => {
                if let Some(&slot) = m.tool_call_id.as_deref().and_then(|id| open.get(id)) {
                    slots[slot] = Some(m);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(messages.len() + calls);
    let mut slot = 0;
    for m in messages {
        match m.role {
            Role::Tool => {}
            Role::Assistant => {
                out.push(Arc::clone(m));
                for call in &m.tool_calls {
                    out.push(match slots[slot] {
                        Some(r) => Arc::clone(r),
                        None => Arc::new(Message::tool_result(
                            call,
                            Some(m.id),
                            ToolStatus::Aborted,
                            INTERRUPTED,
                        )),
                    });
                    slot += 1;
                }
            }
            _ => out.push(Arc::clone(m)),
        }
    }
    out
}
