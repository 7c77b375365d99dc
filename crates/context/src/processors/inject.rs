//! `memory_injection` and `knowledge_injection`: retrieved memories and knowledge become system
//! messages right after the head system block, each item labeled, so the model can tell what it
//! remembers from what it was given to read (with `spotlight`, each knowledge source is a data
//! block). Retrieval is the caller's job (the memory tool,
//! a knowledge base); a custom retrieval step can be inserted before these processors.

use super::leading_system;
use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::Message;
use std::fmt::Write;
use std::sync::Arc;

/// Injects the agent's memories about the user.
pub struct MemoryInjection;

impl Processor for MemoryInjection {
    fn name(&self) -> &'static str {
        "memory_injection"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        if input.agent.memories.is_empty() {
            return;
        }
        let mut text = String::from("What you remember about the user:\n");
        for m in &input.agent.memories {
            let _ = writeln!(text, "- {}", m.trim());
        }
        let at = leading_system(&draft.messages);
        draft
            .messages
            .insert(at, Arc::new(Message::system(text.trim_end())));
    }
}

/// Injects retrieved knowledge with its sources.
pub struct KnowledgeInjection;

impl Processor for KnowledgeInjection {
    fn name(&self) -> &'static str {
        "knowledge_injection"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        if input.agent.knowledge.is_empty() {
            return;
        }
        let mut text = String::from("Reference material (cite the source when you use it):\n");
        for k in &input.agent.knowledge {
            if input.agent.spotlight {
                let block =
                    super::spotlight::wrap(&format!("knowledge {}", k.source), k.text.trim());
                let _ = write!(text, "\n{block}\n");
            } else {
                let _ = write!(
                    text,
                    "\n<source name=\"{}\">\n{}\n</source>\n",
                    k.source,
                    k.text.trim()
                );
            }
        }
        let at = leading_system(&draft.messages);
        draft
            .messages
            .insert(at, Arc::new(Message::system(text.trim_end())));
    }
}
