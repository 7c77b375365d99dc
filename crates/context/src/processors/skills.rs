//! `skills`: what the agent knows how to do beyond its tools. Skills it has not activated are
//! listed by name and description only (within a character budget, so a large catalog cannot
//! crowd the call); each active skill's instructions follow as their own system message.

use super::leading_system;
use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::Message;
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
        let mut at = leading_system(&draft.messages);
        if !input.step.available_skills.is_empty() && !input.step.force_finish {
            let mut text = String::from(
                "Skills you can load (call `skills__activate` with a name; its instructions \
                 apply from your next step on):\n",
            );
            let budget = text.len() + LISTING_BUDGET_CHARS;
            let mut unlisted = Vec::new();
            for s in &input.step.available_skills {
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
        for s in &input.agent.active_skills {
            let text = format!("<skill name=\"{}\">\n{}\n</skill>", s.name, s.body.trim());
            draft.messages.insert(at, Arc::new(Message::system(text)));
            at += 1;
        }
    }
}
