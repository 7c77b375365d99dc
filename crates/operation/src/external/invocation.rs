//! What one run of an external agent is asked, read from the operation's state: the prompt
//! (its last user message), the session to resume, and what a new session must be told.

use super::{Invocation, framed_prompt};
use rein_core::AgentState;
use rein_core::message::Role;
use rein_core::spec::ExternalKind;

/// What this run asks the agent: the prompt (the last user message), the session to resume
/// (the one the answer it follows came from, unless the turn was edited or regenerated), and,
/// for a new session, the instructions and the conversation so far.
pub(crate) fn invocation(state: &AgentState, kind: ExternalKind) -> Invocation {
    let Some(at) = state.messages.iter().rposition(|m| m.role == Role::User) else {
        return Invocation::default();
    };
    let prompt_msg = &state.messages[at];
    let prompt = prompt_msg.text_content();
    let fresh = state
        .metadata
        .extra
        .get(FRESH_SESSION)
        .is_some_and(|v| v == true);
    let resume = (!fresh)
        .then(|| {
            let parent = prompt_msg.parent_id?;
            let answer = state.messages.iter().find(|m| m.id == parent)?;
            let s = answer.external_session.as_ref()?;
            (s.kind == kind.as_str()).then(|| s.id.clone())
        })
        .flatten();
    let system_role = state
        .messages
        .iter()
        .find(|m| m.role == Role::System)
        .map(|m| m.text_content());
    if resume.is_some() {
        return Invocation {
            prompt,
            resume,
            system_role: None,
        };
    }
    let earlier: Vec<(String, String)> = state.messages[..at]
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant))
        .map(|m| {
            (
                if m.role == Role::User {
                    "user"
                } else {
                    "assistant"
                }
                .to_owned(),
                m.text_content(),
            )
        })
        .filter(|(_, t)| !t.trim().is_empty())
        .collect();
    let prompt = if earlier.is_empty() {
        prompt
    } else {
        framed_prompt(None, &earlier, &prompt)
    };
    Invocation {
        prompt,
        resume: None,
        system_role,
    }
}

/// Set in a state's metadata when its prompt is an edit or a regeneration: the agent's session
/// went on past that point, so a new one is started with the branch's conversation.
pub(crate) const FRESH_SESSION: &str = "external_fresh_session";
