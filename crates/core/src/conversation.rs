//! A topic's messages as a tree. Every message hangs from its parent; editing a user message or
//! regenerating an answer adds a sibling under the same parent, so nothing is overwritten and
//! each sibling starts a branch. One branch is *active*: the topic remembers a message on it
//! (the one its last turn started from, or the one a person switched to), and the active path
//! runs from the root to the newest message under that one.
//!
//! What is not a branch: a tool result hangs from the assistant message that called it, side by
//! side with the other results of the same batch (they are one turn); a compression summary
//! hangs beside the messages it replaced; system messages are each operation's own instructions,
//! so a message whose parent is one counts as a root.

use crate::ids::MessageId;
use crate::message::{Message, MessageKind, Role, model_view};
use std::collections::{HashMap, HashSet};

/// A topic's messages (not its sub-agents' threads), indexed as a tree.
#[derive(Clone, Debug, Default)]
pub struct Conversation {
    /// Oldest first (by creation time, then id).
    messages: Vec<Message>,
    by_id: HashMap<MessageId, usize>,
    /// Positions of each message's children, oldest first; `None` holds the roots.
    children: HashMap<Option<MessageId>, Vec<usize>>,
}

/// A message on the active path that has alternatives: which one of them is shown.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
pub struct Branch {
    /// The message shown on the active path.
    pub message: MessageId,
    /// Its place among its alternatives, from 1 (oldest).
    pub index: usize,
    /// The alternatives, itself included, oldest first: switch to one to show its branch.
    pub alternatives: Vec<MessageId>,
}

impl Conversation {
    /// Index `messages` (any order).
    pub fn new(mut messages: Vec<Message>) -> Self {
        messages.sort_by_key(|m| (m.created_at, m.id));
        let by_id: HashMap<MessageId, usize> = messages
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id, i))
            .collect();
        let mut out = Self {
            messages,
            by_id,
            children: HashMap::new(),
        };
        for i in 0..out.messages.len() {
            let parent = out.parent(&out.messages[i]);
            out.children.entry(parent).or_default().push(i);
        }
        out
    }

    /// Every message, oldest first.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The messages, oldest first, without the index.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages
    }

    /// The message with `id`.
    pub fn get(&self, id: MessageId) -> Option<&Message> {
        self.by_id.get(&id).map(|&i| &self.messages[i])
    }

    /// Where `m` hangs in the tree: its parent, unless that is unknown (deleted) or a system
    /// message, in which case it is a root.
    pub fn parent(&self, m: &Message) -> Option<MessageId> {
        let p = m.parent_id?;
        let &i = self.by_id.get(&p)?;
        (self.messages[i].role != Role::System).then_some(p)
    }

    /// The newest message under `active` (itself included), where the active path ends; the
    /// newest of the whole conversation when `active` is `None` or not in it. System messages
    /// and compression summaries never end a path.
    pub fn leaf(&self, active: Option<MessageId>) -> Option<MessageId> {
        let ends = |m: &Message| m.role != Role::System && m.kind == MessageKind::Normal;
        let Some(&start) = active.and_then(|a| self.by_id.get(&a)) else {
            return self.messages.iter().rev().find(|m| ends(m)).map(|m| m.id);
        };
        let mut newest = ends(&self.messages[start]).then_some(start);
        let mut stack = vec![start];
        let mut seen = HashSet::from([start]);
        while let Some(i) = stack.pop() {
            for &c in self
                .children
                .get(&Some(self.messages[i].id))
                .into_iter()
                .flatten()
            {
                if !seen.insert(c) {
                    continue;
                }
                if ends(&self.messages[c]) && newest.is_none_or(|n| c > n) {
                    newest = Some(c);
                }
                stack.push(c);
            }
        }
        newest.map(|i| self.messages[i].id)
    }

    /// The path from the root to `leaf`, each assistant message followed by all the tool
    /// results of its batch (in the order it called them), without system messages.
    pub fn path(&self, leaf: MessageId) -> Vec<&Message> {
        let mut chain = Vec::new();
        let mut seen = HashSet::new();
        let mut at = self.by_id.get(&leaf).copied();
        while let Some(i) = at {
            if !seen.insert(i) {
                break; // a stored cycle: stop rather than loop
            }
            let m = &self.messages[i];
            if m.role != Role::System {
                chain.push(i);
            }
            at = self.parent(m).and_then(|p| self.by_id.get(&p).copied());
        }
        chain.reverse();
        let mut out: Vec<&Message> = Vec::with_capacity(chain.len());
        let mut placed = HashSet::new();
        for i in chain {
            if !placed.insert(i) {
                continue;
            }
            let m = &self.messages[i];
            out.push(m);
            if m.role == Role::Assistant && !m.tool_calls.is_empty() {
                for r in self.tool_results(m) {
                    if placed.insert(r) {
                        out.push(&self.messages[r]);
                    }
                }
            }
        }
        out
    }

    /// The tool results hanging from `assistant`, in the order it called them (results of
    /// calls it does not list last, oldest first).
    fn tool_results(&self, assistant: &Message) -> Vec<usize> {
        let mut results: Vec<usize> = self
            .children
            .get(&Some(assistant.id))
            .into_iter()
            .flatten()
            .copied()
            .filter(|&c| self.messages[c].role == Role::Tool)
            .collect();
        let order = |i: &usize| {
            let call = self.messages[*i].tool_call_id.as_deref();
            assistant
                .tool_calls
                .iter()
                .position(|c| Some(&*c.id) == call)
                .unwrap_or(usize::MAX)
        };
        results.sort_by_key(|i| (order(i), *i));
        results
    }

    /// The active path: root to [`Conversation::leaf`] of `active`.
    pub fn active_path(&self, active: Option<MessageId>) -> Vec<&Message> {
        self.leaf(active)
            .map(|leaf| self.path(leaf))
            .unwrap_or_default()
    }

    /// The messages `id` is an alternative to (itself included, oldest first): the turns that
    /// share its parent. Tool results, summaries and system messages have none.
    pub fn alternatives(&self, id: MessageId) -> Vec<MessageId> {
        let Some(m) = self.get(id) else {
            return Vec::new();
        };
        if !is_turn(m) {
            return Vec::new();
        }
        self.children
            .get(&self.parent(m))
            .into_iter()
            .flatten()
            .map(|&i| &self.messages[i])
            .filter(|s| is_turn(s))
            .map(|s| s.id)
            .collect()
    }

    /// The messages of `path` that have alternatives, in path order.
    pub fn branches(&self, path: &[&Message]) -> Vec<Branch> {
        path.iter()
            .filter_map(|m| {
                let alternatives = self.alternatives(m.id);
                let index = alternatives.iter().position(|a| *a == m.id)? + 1;
                (alternatives.len() > 1).then_some(Branch {
                    message: m.id,
                    index,
                    alternatives,
                })
            })
            .collect()
    }

    /// What a new turn continuing `path` gives the model: the path with the compression
    /// summaries that replace part of it standing in for what they replaced.
    pub fn history(&self, path: &[&Message]) -> Vec<Message> {
        let on_path: HashSet<MessageId> = path.iter().map(|m| m.id).collect();
        let mut out: Vec<Message> = path.iter().map(|m| (*m).clone()).collect();
        out.extend(
            self.messages
                .iter()
                .filter(|m| {
                    m.kind == MessageKind::CompressionSummary
                        && !on_path.contains(&m.id)
                        && m.summarizes.iter().any(|s| on_path.contains(s))
                })
                .cloned(),
        );
        model_view(out)
    }

    /// The path up to and including `id` on the branch `id` is on: what an edit or a
    /// regeneration starts from.
    pub fn path_to(&self, id: MessageId) -> Vec<&Message> {
        self.path(id)
            .into_iter()
            .take_while(|m| m.id != id)
            .chain(self.get(id))
            .collect()
    }
}

/// The longest title [`title_from`] makes, in characters.
pub const TITLE_CHARS: usize = 60;

/// A topic's title made from `text` (its first message, or what a model proposed): the first
/// line that says something, whitespace collapsed, cut at a word boundary near
/// [`TITLE_CHARS`] with an ellipsis; `None` when there is nothing to show.
pub fn title_from(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let full = words.join(" ");
    if full.chars().count() <= TITLE_CHARS {
        return Some(full);
    }
    let mut out = String::new();
    for w in &words {
        let len = out.chars().count() + usize::from(!out.is_empty()) + w.chars().count();
        if len > TITLE_CHARS - 1 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    if out.is_empty() {
        // One long word: cut it.
        out = full.chars().take(TITLE_CHARS - 1).collect();
    }
    out.push('…');
    Some(out)
}

/// Whether `m` is a turn someone wrote (a user message or an answer), which can have
/// alternatives.
fn is_turn(m: &Message) -> bool {
    matches!(m.role, Role::User | Role::Assistant) && m.kind == MessageKind::Normal
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use chrono::{Duration, TimeZone, Utc};

    /// Messages get increasing creation times in the order the test makes them.
    struct Builder {
        n: i64,
    }

    impl Builder {
        fn at(&mut self, mut m: Message, parent: Option<&Message>) -> Message {
            self.n += 1;
            m.created_at = Utc.timestamp_opt(1_700_000_000, 0).unwrap() + Duration::seconds(self.n);
            m.parent_id = parent.map(|p| p.id);
            m
        }
    }

    fn ids(path: &[&Message]) -> Vec<MessageId> {
        path.iter().map(|m| m.id).collect()
    }

    #[test]
    fn a_linear_conversation_is_one_path_without_branches() {
        let mut b = Builder { n: 0 };
        let s = b.at(Message::system("be brief"), None);
        let u1 = b.at(Message::user("hi"), Some(&s));
        let a1 = b.at(Message::assistant("hello"), Some(&u1));
        let u2 = b.at(Message::user("how are you"), Some(&a1));
        let a2 = b.at(Message::assistant("fine"), Some(&u2));
        let c = Conversation::new(vec![a2.clone(), u1.clone(), s, a1.clone(), u2.clone()]);
        assert_eq!(c.leaf(None), Some(a2.id));
        let path = c.active_path(None);
        assert_eq!(ids(&path), vec![u1.id, a1.id, u2.id, a2.id]);
        assert!(c.branches(&path).is_empty());
    }

    #[test]
    fn an_edit_and_a_regeneration_are_siblings_and_the_active_message_picks_the_branch() {
        let mut b = Builder { n: 0 };
        let u1 = b.at(Message::user("first"), None);
        let a1 = b.at(Message::assistant("one"), Some(&u1));
        let u2 = b.at(Message::user("second"), Some(&a1));
        let a2 = b.at(Message::assistant("two"), Some(&u2));
        // Regenerate a2: a sibling under u2.
        let a2b = b.at(Message::assistant("two, again"), Some(&u2));
        // Edit u2: a sibling under a1, answered.
        let u2b = b.at(Message::user("second, edited"), Some(&a1));
        let a3 = b.at(Message::assistant("three"), Some(&u2b));
        let c = Conversation::new(vec![
            u1.clone(),
            a1.clone(),
            u2.clone(),
            a2.clone(),
            a2b.clone(),
            u2b.clone(),
            a3.clone(),
        ]);
        // The newest turn shows by default.
        assert_eq!(ids(&c.active_path(None)), vec![u1.id, a1.id, u2b.id, a3.id]);
        assert_eq!(c.alternatives(u2.id), vec![u2.id, u2b.id]);
        assert_eq!(c.alternatives(a2.id), vec![a2.id, a2b.id]);
        // Switching to the first edit shows its newest answer, the regeneration.
        let path = c.active_path(Some(u2.id));
        assert_eq!(ids(&path), vec![u1.id, a1.id, u2.id, a2b.id]);
        assert_eq!(
            c.branches(&path),
            vec![
                Branch {
                    message: u2.id,
                    index: 1,
                    alternatives: vec![u2.id, u2b.id]
                },
                Branch {
                    message: a2b.id,
                    index: 2,
                    alternatives: vec![a2.id, a2b.id]
                }
            ]
        );
        assert_eq!(
            ids(&c.active_path(Some(a2.id))),
            vec![u1.id, a1.id, u2.id, a2.id]
        );
        assert_eq!(ids(&c.path_to(u2.id)), vec![u1.id, a1.id, u2.id]);
    }

    #[test]
    fn a_batch_of_tool_results_is_one_turn_in_call_order() {
        let mut b = Builder { n: 0 };
        let u = b.at(Message::user("do two things"), None);
        let mut a = Message::assistant("");
        a.tool_calls = vec![
            ToolCall::unresolved("c1", "x", "{}"),
            ToolCall::unresolved("c2", "y", "{}"),
        ];
        let a = b.at(a, Some(&u));
        let mut r2 = Message::assistant("second");
        r2.role = Role::Tool;
        r2.tool_call_id = Some("c2".into());
        let r2 = b.at(r2, Some(&a));
        let mut r1 = Message::assistant("first");
        r1.role = Role::Tool;
        r1.tool_call_id = Some("c1".into());
        let r1 = b.at(r1, Some(&a));
        // The next answer hangs from whichever result was pushed last.
        let done = b.at(Message::assistant("both done"), Some(&r1));
        let c = Conversation::new(vec![
            u.clone(),
            a.clone(),
            r2.clone(),
            r1.clone(),
            done.clone(),
        ]);
        let path = c.active_path(None);
        assert_eq!(ids(&path), vec![u.id, a.id, r1.id, r2.id, done.id]);
        assert!(
            c.branches(&path).is_empty(),
            "parallel results are not branches"
        );
        assert!(c.alternatives(r1.id).is_empty());
    }

    #[test]
    fn history_puts_a_summary_in_place_of_what_it_replaced() {
        let mut b = Builder { n: 0 };
        let u1 = b.at(Message::user("long ago"), None);
        let a1 = b.at(Message::assistant("indeed"), Some(&u1));
        let u2 = b.at(Message::user("recent"), Some(&a1));
        let mut s = Message::user("summary of the start");
        s.kind = MessageKind::CompressionSummary;
        s.summarizes = vec![u1.id, a1.id];
        let s = b.at(s, None);
        let a2 = b.at(Message::assistant("answer"), Some(&u2));
        let c = Conversation::new(vec![
            u1.clone(),
            a1.clone(),
            u2.clone(),
            s.clone(),
            a2.clone(),
        ]);
        assert_eq!(c.leaf(None), Some(a2.id), "a summary never ends a path");
        let path = c.active_path(None);
        assert_eq!(
            ids(&path),
            vec![u1.id, a1.id, u2.id, a2.id],
            "people see it all"
        );
        let history: Vec<MessageId> = c.history(&path).iter().map(|m| m.id).collect();
        assert_eq!(
            history,
            vec![s.id, u2.id, a2.id],
            "the model sees the summary"
        );
    }

    #[test]
    fn edits_of_a_first_message_are_alternatives_even_under_different_system_messages() {
        let mut b = Builder { n: 0 };
        let s1 = b.at(Message::system("v1"), None);
        let u1 = b.at(Message::user("a"), Some(&s1));
        let s2 = b.at(Message::system("v2"), None);
        let u1b = b.at(Message::user("b"), Some(&s2));
        let c = Conversation::new(vec![s1, u1.clone(), s2, u1b.clone()]);
        assert_eq!(c.alternatives(u1b.id), vec![u1.id, u1b.id]);
        assert_eq!(ids(&c.active_path(Some(u1.id))), vec![u1.id]);
    }

    #[test]
    fn titles_are_one_short_line() {
        assert_eq!(
            title_from("\n  Plan the   trip\nto Rome").as_deref(),
            Some("Plan the trip")
        );
        assert_eq!(title_from(" \n\t"), None);
        let long = "word ".repeat(40);
        let t = title_from(&long).unwrap();
        assert!(
            t.chars().count() <= TITLE_CHARS && t.ends_with("word…"),
            "{t}"
        );
        let one = "x".repeat(200);
        assert_eq!(title_from(&one).unwrap().chars().count(), TITLE_CHARS);
    }

    #[test]
    fn a_stored_cycle_or_an_unknown_active_message_does_not_hang() {
        let mut b = Builder { n: 0 };
        let mut x = b.at(Message::user("x"), None);
        let mut y = b.at(Message::assistant("y"), Some(&x));
        x.parent_id = Some(y.id);
        y.parent_id = Some(x.id);
        let c = Conversation::new(vec![x.clone(), y.clone()]);
        assert_eq!(c.path(y.id).len(), 2);
        assert_eq!(c.leaf(Some(MessageId::new())), Some(y.id));
    }
}
