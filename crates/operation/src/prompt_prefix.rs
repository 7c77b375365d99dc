//! How much of a model request repeats the previous one: the prefix a provider's prompt cache
//! can serve. A request is read as items in the order providers cache them (the tool schemas,
//! then each message), each with a hash of what goes on the wire and its estimated tokens;
//! the stable prefix is the leading items equal to the previous request's.

use rein_context::TiktokenEstimator;
use rein_core::Message;
use rein_model::ToolSpec;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// One item of a request: a hash of its wire content and its estimated tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    hash: u64,
    tokens: u64,
}

/// The items of a request of `tools` and `messages` ([`Previous::next`] reads them so).
#[cfg(test)]
pub fn items(
    tools: &[ToolSpec],
    messages: &[Arc<Message>],
    estimator: &TiktokenEstimator,
) -> Vec<Item> {
    with_tools(tools_item(tools, estimator), messages, estimator)
}

/// The tool schemas as one item.
fn tools_item(tools: &[ToolSpec], estimator: &TiktokenEstimator) -> Item {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let mut tokens = 0;
    for t in tools {
        t.name.hash(&mut h);
        t.description.hash(&mut h);
        // The same schemas call after call: remembered, not encoded again each time.
        let parameters = t.parameters.to_string();
        parameters.hash(&mut h);
        tokens += estimator.remembered_text_tokens(&t.name)
            + estimator.remembered_text_tokens(&t.description)
            + estimator.remembered_text_tokens(&parameters);
    }
    Item {
        hash: h.finish(),
        tokens,
    }
}

/// `tools` (already an item) followed by each message's item.
fn with_tools(tools: Item, messages: &[Arc<Message>], estimator: &TiktokenEstimator) -> Vec<Item> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    out.push(tools);
    for m in messages {
        out.push(Item {
            hash: wire_hash(m),
            tokens: estimator.message_tokens(m),
        });
    }
    out
}

/// A run's previous request, to compare the next one with: its items, and the tools its first
/// item was read from. A run offers the same tools call after call, so comparing them (no
/// allocation) spares serializing and hashing every schema again.
#[derive(Debug, Default)]
pub struct Previous {
    items: Vec<Item>,
    tools: Vec<ToolSpec>,
}

impl Previous {
    /// Read the request of `tools` and `messages`, keep it as the previous one, and return the
    /// tokens of its leading items equal to the request before ([`shared_tokens`]).
    pub fn next(
        &mut self,
        tools: &[ToolSpec],
        messages: &[Arc<Message>],
        estimator: &TiktokenEstimator,
    ) -> u64 {
        let tools_item = match self.items.first() {
            Some(item) if self.tools == tools => *item,
            _ => {
                self.tools = tools.to_vec();
                tools_item(tools, estimator)
            }
        };
        let items = with_tools(tools_item, messages, estimator);
        let same = shared_tokens(&self.items, &items);
        self.items = items;
        same
    }
}

/// A hash of what a message puts on the wire (not its id, parent or time, which providers
/// never see).
fn wire_hash(m: &Message) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    m.role.hash(&mut h);
    serde_json::to_string(&m.content)
        .unwrap_or_default()
        .hash(&mut h);
    for c in &m.tool_calls {
        c.id.hash(&mut h);
        c.key().hash(&mut h);
        c.arguments.hash(&mut h);
    }
    m.tool_call_id.hash(&mut h);
    if let Some(r) = &m.reasoning {
        r.text.hash(&mut h);
    }
    h.finish()
}

/// The tokens of the leading items `now` shares with `before`.
pub fn shared_tokens(before: &[Item], now: &[Item]) -> u64 {
    before
        .iter()
        .zip(now)
        .take_while(|(a, b)| a.hash == b.hash)
        .map(|(_, b)| b.tokens)
        .sum()
}

/// How many leading messages of `sent` the next request sends again: up to the last one that
/// is part of the operation's conversation (`history`); the messages after it are this step's
/// own notes (the plan, a force-finish note).
pub fn stable_messages(history: &[Arc<Message>], sent: &[Arc<Message>]) -> usize {
    let ids: std::collections::HashSet<_> = history.iter().map(|m| m.id).collect();
    sent.iter()
        .rposition(|m| ids.contains(&m.id))
        .map_or(0, |i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_context::Encoding;
    use rein_model::ToolSpec;

    #[test]
    fn the_shared_prefix_ends_at_the_first_item_that_changed() {
        let est = TiktokenEstimator::new(Encoding::O200k, 1.0);
        let sys = Arc::new(Message::system("You are careful."));
        let ask = Arc::new(Message::user("Add two and two."));
        let note = Arc::new(Message::user("[Runtime note] plan: add"));
        let first = items(&[], &[sys.clone(), ask.clone(), note], &est);
        // The same wire content under a new id (a note rebuilt next step) hashes the same.
        let again = Arc::new(Message::user("[Runtime note] plan: add"));
        let second = items(&[], &[sys.clone(), ask.clone(), again], &est);
        assert_eq!(
            shared_tokens(&first, &second),
            second.iter().map(|i| i.tokens).sum::<u64>()
        );
        let changed = Arc::new(Message::user("[Runtime note] plan: done"));
        let third = items(&[], &[sys, ask, changed], &est);
        let stable: u64 = third[..3].iter().map(|i| i.tokens).sum();
        assert_eq!(shared_tokens(&second, &third), stable);
        assert_eq!(shared_tokens(&[], &third), 0);
    }

    #[test]
    fn the_previous_request_reuses_its_tools_only_while_they_are_the_same() {
        let est = TiktokenEstimator::new(Encoding::O200k, 1.0);
        let tool = |description: &str| ToolSpec {
            name: "calculator__calculate".into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object", "properties": {"e": {"type": "string"}}}),
        };
        let ask = Arc::new(Message::user("Add two and two."));
        let answer = Arc::new(Message::assistant("4"));
        let mut previous = Previous::default();
        let tools = vec![tool("Evaluate an expression.")];
        assert_eq!(
            previous.next(&tools, std::slice::from_ref(&ask), &est),
            0,
            "the first request"
        );
        let twice = previous.next(&tools, &[ask.clone(), answer.clone()], &est);
        assert_eq!(
            twice,
            items(&tools, std::slice::from_ref(&ask), &est)
                .iter()
                .map(|i| i.tokens)
                .sum::<u64>()
        );
        // A changed description (an MCP server's, say) is a new first item: nothing is shared.
        let changed = vec![tool("Evaluate an arithmetic expression.")];
        assert_eq!(
            previous.next(&changed, &[ask.clone(), answer.clone()], &est),
            0
        );
        assert_eq!(
            previous.items,
            items(&changed, &[ask, answer], &est),
            "the same items as read afresh"
        );
    }

    #[test]
    fn the_stable_messages_end_with_the_last_one_of_the_conversation() {
        let ask = Arc::new(Message::user("Add."));
        let answer = Arc::new(Message::assistant("4"));
        let history = vec![ask.clone(), answer.clone()];
        let head = Arc::new(Message::system("role"));
        let note = Arc::new(Message::user("plan"));
        assert_eq!(
            stable_messages(&history, &[head.clone(), ask.clone(), answer.clone(), note]),
            3
        );
        assert_eq!(stable_messages(&history, &[head, ask, answer]), 3);
        assert_eq!(stable_messages(&history, &[]), 0);
    }
}
