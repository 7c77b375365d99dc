//! `skills`: what the agent knows how to do beyond its tools. Skills are listed by name and
//! description only (within a character budget, so a large catalog cannot crowd the call);
//! an active skill's instructions are where the call that activated it left them, its result
//! in the history, so activating one leaves the head (and the providers' prompt caches) as it
//! was. A skill the spec named, or whose activating result the history no longer holds
//! (truncated, compressed, or cut by the result limit), has its instructions at the head as
//! their own system message and is no longer listed.

use super::leading_system;
use crate::pipeline::{ContextInput, Draft, Processor, SkillBrief};
use rein_core::message::{ContentPart, Message, Role};
use rein_core::tool::skill_block;
use std::fmt::Write;
use std::sync::Arc;

/// Characters the listing of inactive skills may take (about 1,000 tokens); past it the rest
/// are named without descriptions, and past twice it only counted.
pub const LISTING_BUDGET_CHARS: usize = 4_000;

/// Lists available skills and admits active ones (see the module docs).
pub struct Skills;

impl Processor for Skills {
    fn name(&self) -> &'static str {
        "skills"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        let limit = input.agent.max_tool_result_chars;
        let head: Vec<(&str, String)> = input
            .agent
            .active_skills
            .iter()
            .map(|s| (s.name.as_str(), s.from_call, skill_block(&s.name, &s.body)))
            .filter(|(_, from_call, block)| !(*from_call && carried(&draft.messages, block, limit)))
            .map(|(name, _, block)| (name, block))
            .collect();
        let listed: Vec<&SkillBrief> = input
            .step
            .available_skills
            .iter()
            .filter(|s| !head.iter().any(|(name, _)| *name == s.name))
            .collect();
        let mut at = leading_system(&draft.messages);
        if !listed.is_empty() && !input.step.force_finish {
            let mut text = String::from(
                "Skills you can load (call `skills__activate` with a name; its result gives \
                 you its instructions):\n",
            );
            let budget = text.len() + LISTING_BUDGET_CHARS;
            let mut unlisted = Vec::new();
            for s in listed {
                let line = format!(
                    "- {}: {}\n",
                    s.name,
                    s.description.lines().next().unwrap_or("").trim()
                );
                if unlisted.is_empty() && text.len() + line.len() <= budget {
                    text.push_str(&line);
                } else {
                    unlisted.push(s.name.as_str());
                }
            }
            if !unlisted.is_empty() {
                let mut named = 0;
                let mut names = String::new();
                for n in &unlisted {
                    if text.len() + names.len() + n.len() + 2 > budget + LISTING_BUDGET_CHARS {
                        break;
                    }
                    if named > 0 {
                        names.push_str(", ");
                    }
                    names.push_str(n);
                    named += 1;
                }
                if named > 0 {
                    let _ = writeln!(text, "Also: {names}.");
                }
                if named < unlisted.len() {
                    let _ = writeln!(text, "And {} more not listed.", unlisted.len() - named);
                }
            }
            draft
                .messages
                .insert(at, Arc::new(Message::system(text.trim_end())));
            at += 1;
        }
        for (_, block) in head {
            draft.messages.insert(at, Arc::new(Message::system(block)));
            at += 1;
        }
    }
}

/// Whether a tool result in `messages` carries `block` whole, in a text the result limit
/// leaves uncut.
fn carried(messages: &[Arc<Message>], block: &str, limit: Option<usize>) -> bool {
    messages.iter().filter(|m| m.role == Role::Tool).any(|m| {
        m.content.iter().any(|p| match p {
            ContentPart::Text { text } => {
                limit.is_none_or(|l| text.len() <= l) && text.contains(block)
            }
            ContentPart::Image { .. } | ContentPart::File { .. } => false,
        })
    })
}
