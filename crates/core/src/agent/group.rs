//! GroupSupervisor: the brain of a group conversation. Each round it hands the turn to one
//! member as a sub-agent (`exec_sub_agents` with one task, the group's transcript inherited);
//! the member's answer joins the transcript as a message authored by it, so every later speaker
//! reads it labelled with its author. It stops when the round limit is reached, when the
//! supervisor's model ends the conversation (model policy: the host's executor asks it and
//! records its word in the state), or visibly when a speaker did not finish.

use super::{Agent, AgentError};
use crate::instruction::{ExecSubAgentsPayload, Instruction, SubAgentTask};
use crate::message::Role;
use crate::phase::Phase;
use crate::phase::RuntimeContext;
use crate::spec::{GroupSpec, SpeakerPolicy};
use crate::state::{AgentState, FinishReason, Status};

/// Where the host records that the supervisor's model ended the conversation (and why), in
/// the state's metadata.
pub const GROUP_DONE: &str = "group_done";

/// The supervisor of a group conversation.
pub struct GroupSupervisor {
    group: GroupSpec,
}

impl GroupSupervisor {
    /// A supervisor of `group`.
    pub fn new(group: GroupSpec) -> Self {
        Self { group }
    }

    /// Turns taken since the last message of the human.
    pub fn rounds_done(state: &AgentState) -> usize {
        state
            .messages
            .iter()
            .rev()
            .take_while(|m| !(m.role == Role::User && m.author.is_none()))
            .filter(|m| m.role == Role::Assistant && m.author.is_some())
            .count()
    }

    /// The member the last message names (`@name`, or the name as a word), other than its
    /// own author.
    fn mentioned(&self, state: &AgentState) -> Option<String> {
        let last = state
            .messages
            .iter()
            .rev()
            .find(|m| matches!(m.role, Role::User | Role::Assistant))?;
        let text = last.text_content().to_lowercase();
        let words: Vec<&str> = text
            .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '@'))
            .filter(|w| !w.is_empty())
            .collect();
        self.group
            .members
            .iter()
            .filter(|m| last.author.as_deref() != Some(m.as_str()))
            .find(|m| {
                let m = m.to_lowercase();
                words
                    .iter()
                    .any(|w| *w == m || w.strip_prefix('@') == Some(m.as_str()))
            })
            .cloned()
    }

    fn next_speaker(&self, state: &AgentState, rounds: usize) -> Option<String> {
        let n = self.group.members.len().max(1);
        let in_turn = self.group.members.get(rounds % n).cloned();
        match self.group.policy {
            // The host's executor asks the supervisor's model.
            SpeakerPolicy::Model => None,
            SpeakerPolicy::RoundRobin => in_turn,
            SpeakerPolicy::MentionedFirst => self.mentioned(state).or(in_turn),
        }
    }
}

impl Agent for GroupSupervisor {
    fn runner(
        &self,
        ctx: &RuntimeContext,
        state: &AgentState,
    ) -> Result<Vec<Instruction>, AgentError> {
        if state.status == Status::Interrupted {
            let i = state.interruption.as_ref();
            return Ok(vec![Instruction::finish(
                i.and_then(|i| i.finish_reason)
                    .unwrap_or(FinishReason::UserRequested),
                i.map_or_else(
                    || "Operation cancelled by user".to_owned(),
                    |i| i.reason.clone(),
                ),
            )]);
        }
        match &ctx.phase {
            Phase::Error(p) => {
                return Ok(vec![Instruction::finish(
                    FinishReason::ErrorRecovery,
                    p.message.clone(),
                )]);
            }
            Phase::SubAgentsBatchResult(p) | Phase::SubAgentResult(p) => {
                if let Some(failed) = p.results.iter().find(|r| !r.success) {
                    return Ok(vec![Instruction::finish(
                        FinishReason::ErrorRecovery,
                        format!(
                            "a speaker did not finish its turn: {}",
                            failed.error.as_deref().unwrap_or("no answer")
                        ),
                    )]);
                }
            }
            _ => {}
        }
        if let Some(why) = state.metadata.extra.get(GROUP_DONE) {
            return Ok(vec![Instruction::finish(
                FinishReason::Completed,
                format!(
                    "The supervisor ended the conversation: {}",
                    why.as_str().unwrap_or_default()
                ),
            )]);
        }
        let rounds = Self::rounds_done(state);
        if rounds >= self.group.max_rounds as usize {
            return Ok(vec![Instruction::finish(
                FinishReason::Completed,
                format!("{rounds} rounds, the group's limit"),
            )]);
        }
        let round = rounds + 1;
        Ok(vec![Instruction::ExecSubAgents {
            payload: ExecSubAgentsPayload {
                parent_message_id: state.messages.last().map(|m| m.id),
                tasks: vec![SubAgentTask {
                    description: format!("Round {round}"),
                    instruction: String::new(),
                    inherit_messages: true,
                    timeout_ms: None,
                    target_agent_id: self.next_speaker(state, rounds),
                    // The round names the turn: a step re-run after a crash finds the same
                    // sub-agent.
                    tool_call_id: Some(format!("round-{round}")),
                    system_role: None,
                    tools: None,
                }],
            },
        }])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn group(policy: SpeakerPolicy) -> GroupSupervisor {
        GroupSupervisor::new(GroupSpec {
            name: "g".into(),
            members: vec!["ann".into(), "bob".into(), "cy".into()],
            policy,
            max_rounds: 4,
        })
    }

    fn said(state: &mut AgentState, who: &str, text: &str) {
        let mut m = Message::assistant(text);
        m.author = Some(who.into());
        state.push_message(m);
    }

    fn speaker(ins: &[Instruction]) -> Option<String> {
        match &ins[0] {
            Instruction::ExecSubAgents { payload } => payload.tasks[0].target_agent_id.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn round_robin_takes_turns_and_stops_at_the_limit() {
        let g = group(SpeakerPolicy::RoundRobin);
        let mut s = AgentState::new(crate::OperationId::new()).with_message(Message::user("go"));
        let ctx = RuntimeContext::new(Phase::Init);
        let mut order = Vec::new();
        for _ in 0..4 {
            let ins = g.runner(&ctx, &s).unwrap_or_default();
            let who = speaker(&ins).unwrap_or_default();
            said(&mut s, &who, "ok");
            order.push(who);
        }
        assert_eq!(order, ["ann", "bob", "cy", "ann"]);
        let ins = g.runner(&ctx, &s).unwrap_or_default();
        assert!(matches!(
            ins[0],
            Instruction::Finish {
                reason: FinishReason::Completed,
                ..
            }
        ));
        // A new human message starts new rounds.
        s.push_message(Message::user("again"));
        assert_eq!(GroupSupervisor::rounds_done(&s), 0);
    }

    #[test]
    fn mentioned_first_follows_a_mention_and_never_hands_the_turn_back_to_its_author() {
        let g = group(SpeakerPolicy::MentionedFirst);
        let ctx = RuntimeContext::new(Phase::Init);
        let mut s = AgentState::new(crate::OperationId::new())
            .with_message(Message::user("@cy, start please"));
        assert_eq!(
            speaker(&g.runner(&ctx, &s).unwrap_or_default()).as_deref(),
            Some("cy")
        );
        said(&mut s, "cy", "I think Bob knows; cy signing off");
        assert_eq!(
            speaker(&g.runner(&ctx, &s).unwrap_or_default()).as_deref(),
            Some("bob")
        );
        said(&mut s, "bob", "no names here");
        // In turn: two rounds done, so the third member.
        assert_eq!(
            speaker(&g.runner(&ctx, &s).unwrap_or_default()).as_deref(),
            Some("cy")
        );
    }

    #[test]
    fn the_model_policy_leaves_the_choice_to_the_host_and_honours_its_stop() {
        let g = group(SpeakerPolicy::Model);
        let ctx = RuntimeContext::new(Phase::Init);
        let mut s = AgentState::new(crate::OperationId::new()).with_message(Message::user("go"));
        assert_eq!(speaker(&g.runner(&ctx, &s).unwrap_or_default()), None);
        s.metadata
            .extra
            .insert(GROUP_DONE.into(), serde_json::json!("the plan is agreed"));
        let ins = g.runner(&ctx, &s).unwrap_or_default();
        assert!(
            matches!(&ins[0], Instruction::Finish { reason_detail: Some(d), .. } if d.contains("agreed"))
        );
    }
}
