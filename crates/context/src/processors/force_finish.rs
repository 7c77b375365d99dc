//! `force_finish`: past the step limit the model may call no tool and gets a closing
//! instruction, so the operation ends with an answer instead of another tool round. The tools
//! stay defined with a tool choice of none (`tools_enabled: false`), as providers require of a
//! request whose history holds tool calls and results.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::Message;
use std::sync::Arc;

/// The system instruction added when the step limit forces a final answer.
pub const FORCE_FINISH_PROMPT: &str = "You have reached the maximum step limit. Please summarize your progress and provide a final response. Do not attempt to use any tools.";

/// Withdraws the tools and asks for the final answer (see the module docs).
pub struct ForceFinish;

impl Processor for ForceFinish {
    fn name(&self) -> &'static str {
        "force_finish"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        if !input.step.force_finish {
            return;
        }
        draft.tools_enabled = false;
        draft
            .messages
            .push(Arc::new(Message::system(FORCE_FINISH_PROMPT)));
    }
}
