//! The standard processors, one module each, in pipeline order.

use rein_core::message::{Message, Role};
use std::sync::Arc;

pub mod attachments;
pub mod cleanup;
pub mod disclosure;
pub mod force_finish;
pub mod group;
pub mod inject;
pub mod pairing;
pub mod placeholder;
pub mod plan;
pub mod skills;
pub mod spotlight;
pub mod summary;
pub mod system_role;
pub mod tool_results;
pub mod truncate;

/// Number of system messages at the head of `messages`.
pub(crate) fn leading_system(messages: &[Arc<Message>]) -> usize {
    messages
        .iter()
        .take_while(|m| m.role == Role::System)
        .count()
}
