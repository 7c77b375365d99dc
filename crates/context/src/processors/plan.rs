//! `plan`: the agent's plan (written with the `todo` tool) appended as the last message, where
//! the model attends to it at every step. It is a user-role note marked as coming from the
//! runtime, not a system message: providers hoist system text to the top of the request, and a
//! plan that changes every step there would invalidate the provider's prompt cache for
//! everything after it. At the end, the cached prefix stays intact.

use crate::pipeline::{ContextInput, Draft, Processor};
use rein_core::message::Message;
use rein_core::state::render_plan;
use std::sync::Arc;

/// Shows the plan (see the module docs).
pub struct Plan;

impl Processor for Plan {
    fn name(&self) -> &'static str {
        "plan"
    }

    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft) {
        if input.step.todos.is_empty() {
            return;
        }
        let mut text = String::from(
            "[Runtime note, not from the user] Your plan (update it with todo.write as you go):\n",
        );
        text.push_str(&render_plan(&input.step.todos));
        draft.messages.push(Arc::new(Message::user(text)));
    }
}
