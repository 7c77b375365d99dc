//! Forking: a new operation that starts from the state another one had right after one of its
//! committed steps ([`rein_store::Store::state_at`]), with some of its spec changed, in a
//! conversation of its own. The original is only read. The fork's messages are copies under
//! new ids (a step of the fork that changes one must not change the original's), and every
//! mention of the old ids in its state and next context names the copies.

use super::Driver;
use crate::error::DriverError;
use rein_core::intervention::{ApprovalMode, key_listed};
use rein_core::spec::{ForkedFrom, OperationSpec, Surface};
use rein_core::state::{ModelRef, Status};
use rein_core::{Message, MessageId, OperationId, Role};
use rein_store::{Admission, Created, NewOperation, Rewound, Trigger};
use std::collections::HashMap;
use std::sync::Arc;

/// What a fork changes of the spec it inherits; everything else stays the original's.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ForkChanges {
    /// Another model.
    pub model: Option<ModelRef>,
    /// Other instructions: the system message of the inherited conversation is replaced.
    pub system_role: Option<String>,
    /// A narrower allow-list (`identifier` or `identifier/api`): never wider than the
    /// original's.
    pub tools: Option<Vec<String>>,
    /// Another approval mode.
    pub approval: Option<ApprovalMode>,
}

/// A fork to make.
#[derive(Clone, Debug)]
pub struct ForkOptions {
    /// The operation to fork.
    pub from: OperationId,
    /// The committed step whose state the fork starts from (0: the state the operation
    /// started with).
    pub at: u64,
    /// What it changes.
    pub changes: ForkChanges,
    /// What starts it.
    pub trigger: Trigger,
    /// Claim a running slot and the lease as it is created (a server); `None` leaves it
    /// unclaimed (the CLI runs it itself).
    pub admission: Option<Admission>,
    /// Its cost limit at most this (what a server's spending caps leave its owner).
    pub max_cost: Option<rein_core::Usd>,
    /// Its token limit at most this.
    pub max_tokens: Option<u64>,
}

/// A fork made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fork {
    /// The new operation.
    pub id: OperationId,
    /// Its conversation (new).
    pub topic_id: String,
}

/// Why a fork is refused; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The step does not exist.
    #[error("operation {operation} has no step {step}{}", match last {
        Some(l) => format!(": its steps are 1 to {l} (0 is where it started)"),
        None => ": it has committed none (0 is where it started)".to_owned(),
    })]
    NoStep {
        /// The operation.
        operation: OperationId,
        /// The step asked for.
        step: u64,
        /// Its last committed step.
        last: Option<u64>,
    },
    /// The step was committed by a rein that did not keep what rebuilding needs.
    #[error(
        "operation {operation} was recorded before rein kept the state of every step: step {step} cannot be rebuilt"
    )]
    NotKept {
        /// The operation.
        operation: OperationId,
        /// The step asked for.
        step: u64,
    },
    /// After that step the operation waited or had ended: there is no next step to run.
    #[error(
        "after step {step} operation {operation} was {status}: fork at a step after which it ran on"
    )]
    NotRunning {
        /// The operation.
        operation: OperationId,
        /// The step asked for.
        step: u64,
        /// Its status right after that step.
        status: Status,
    },
    /// A sub-agent or an external agent: its steps are not a whole conversation of its own.
    #[error("operation {operation} is {what}: fork {hint}")]
    NotForkable {
        /// The operation.
        operation: OperationId,
        /// What it is.
        what: &'static str,
        /// What to fork instead.
        hint: &'static str,
    },
    /// Tools the original could not use.
    #[error(
        "a fork may use only the tools operation {operation} could: {} {} not among them",
        tools.join(", "),
        if tools.len() == 1 { "is" } else { "are" }
    )]
    WiderTools {
        /// The operation.
        operation: OperationId,
        /// The keys asked for that it could not use.
        tools: Vec<String>,
    },
}

impl Driver {
    /// Create the fork `opts` asks for and return its id; it runs like any operation
    /// ([`Driver::run`]).
    pub async fn fork(&self, opts: &ForkOptions) -> Result<Fork, DriverError> {
        let from = opts.from;
        let step = opts.at;
        let checkpoint = match self.store.state_at(from, step).await? {
            Rewound::Found(c) => c,
            Rewound::NoOperation => return Err(DriverError::NotFound(from)),
            Rewound::NoStep { last } => {
                return Err(ForkError::NoStep {
                    operation: from,
                    step,
                    last,
                }
                .into());
            }
            Rewound::NotKept => {
                return Err(ForkError::NotKept {
                    operation: from,
                    step,
                }
                .into());
            }
        };
        let status = checkpoint.state.status;
        if !matches!(status, Status::Running | Status::Idle) {
            return Err(ForkError::NotRunning {
                operation: from,
                step,
                status,
            }
            .into());
        }
        let mut spec = forked_spec(from, step, &checkpoint.spec, &opts.changes)?;
        spec.budget.max_cost = lower(spec.budget.max_cost, opts.max_cost);
        spec.budget.max_tokens = lower(spec.budget.max_tokens, opts.max_tokens);
        let id = OperationId::new();
        self.preflight(id, &spec).await?;
        if let Some(unpriced) = crate::pricing::unpriced(&spec, &self.catalog) {
            return Err(unpriced.into());
        }
        let topic_id = format!("topic_{id}");
        let (mut state, next_context) = renamed(
            &checkpoint.state,
            checkpoint.next_context.as_ref(),
            &checkpoint.topic_id,
            id,
            &topic_id,
        )?;
        apply(&mut state, &spec, &opts.changes);
        let prompt = state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(|m| rein_store::prompt_start(&m.text_content()));
        let op = NewOperation {
            state,
            topic_id: topic_id.clone(),
            agent: spec.agent.as_ref().map(|a| a.name.clone()),
            trigger: opts.trigger,
            parent_operation: None,
            next_context,
            owner: spec.owner.clone(),
            gate: Some(rein_store::TopicGate {
                when_busy: spec.when_busy,
                // Its conversation is new: it never waits for a turn, so nothing is deferred.
                deferred: serde_json::Value::Null,
            }),
            prompt,
            spec,
            admission: opts.admission.clone(),
            thread: None,
            response: None,
        };
        match self.store.create_operation(&op).await? {
            Created::Ready => Ok(Fork { id, topic_id }),
            // A fresh conversation has nobody in the way; a store that says otherwise is
            // answered as one that failed.
            Created::Queued { behind, .. } => Err(rein_store::StoreError::corrupt(
                "fork",
                format!("the new conversation of fork {id} was held by {behind}"),
            )
            .into()),
        }
    }
}

/// The fork's spec: the original's with `changes`, checked not to widen its tools, and the
/// lineage.
fn forked_spec(
    from: OperationId,
    step: u64,
    original: &OperationSpec,
    changes: &ForkChanges,
) -> Result<OperationSpec, ForkError> {
    if original.delegation.is_some() {
        return Err(ForkError::NotForkable {
            operation: from,
            what: "a sub-agent",
            hint: "the operation it belongs to",
        });
    }
    match &original.surface {
        Surface::Local | Surface::Server | Surface::Device(_) => {}
        Surface::External(_) | Surface::ExternalOnDevice { .. } | Surface::A2a(_) => {
            return Err(ForkError::NotForkable {
                operation: from,
                what: "run by an external agent, whose steps rein does not hold",
                hint: "an operation of rein's own agent",
            });
        }
    }
    let mut spec = original.clone();
    if let Some(tools) = &changes.tools {
        let wider: Vec<String> = tools
            .iter()
            .filter(|key| !within(original.allowed_tools.as_deref(), key))
            .cloned()
            .collect();
        if !wider.is_empty() {
            return Err(ForkError::WiderTools {
                operation: from,
                tools: wider,
            });
        }
        spec.allowed_tools = Some(tools.clone());
    }
    if let Some(model) = &changes.model {
        spec.model = Some(model.clone());
    }
    if let Some(role) = &changes.system_role {
        spec.system_role = Some(role.clone());
    }
    if let Some(mode) = changes.approval {
        spec.approval = mode;
    }
    spec.forked_from = Some(ForkedFrom {
        operation: from,
        step,
    });
    Ok(spec)
}

/// The lower of two optional limits (`None`: no limit).
fn lower<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// Whether allow-list key `key` names only what `list` allows (`None`: everything).
fn within(list: Option<&[String]>, key: &str) -> bool {
    let Some(list) = list else { return true };
    match key.split_once('/') {
        Some((identifier, api)) => key_listed(list, identifier, api),
        None => list.iter().any(|entry| entry == key),
    }
}

/// The state and next context with new ids: the operation's, the conversation's, and a fresh
/// one for every message (each mention of an old id, wherever in the state or the context,
/// becomes the new one). The event log starts again at 0: it is the fork's own.
fn renamed(
    state: &rein_core::AgentState,
    next: Option<&rein_core::RuntimeContext>,
    old_topic: &str,
    id: OperationId,
    topic_id: &str,
) -> Result<(rein_core::AgentState, Option<rein_core::RuntimeContext>), DriverError> {
    let mut names: HashMap<String, String> = state
        .messages
        .iter()
        .map(|m| (m.id.to_string(), MessageId::new().to_string()))
        .collect();
    names.insert(state.operation_id.to_string(), id.to_string());
    names.insert(old_topic.to_owned(), topic_id.to_owned());
    let unreadable = |e: serde_json::Error| {
        DriverError::Store(rein_store::StoreError::corrupt("forked state", e))
    };
    let mut value = serde_json::to_value(state).map_err(unreadable)?;
    rename(&mut value, &names);
    let mut state: rein_core::AgentState = serde_json::from_value(value).map_err(unreadable)?;
    state.next_event_seq = 0;
    // What the original spent is the original's: the fork's record, its limits and every
    // sum of usage count only the calls the fork makes.
    state.usage = Default::default();
    state.cost = Default::default();
    state.budget_warnings.clear();
    for m in &mut state.messages {
        if m.usage.is_some() {
            Arc::make_mut(m).usage = None;
        }
    }
    state.metadata.topic_id = Some(topic_id.to_owned());
    let next = match next {
        Some(n) => {
            let mut value = serde_json::to_value(n).map_err(unreadable)?;
            rename(&mut value, &names);
            Some(serde_json::from_value(value).map_err(unreadable)?)
        }
        None => None,
    };
    Ok((state, next))
}

/// Replace every string in `value` that `names` maps.
fn rename(value: &mut serde_json::Value, names: &HashMap<String, String>) {
    match value {
        serde_json::Value::String(s) => {
            if let Some(new) = names.get(s.as_str()) {
                s.clone_from(new);
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| rename(v, names)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| rename(v, names)),
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
    }
}

/// Carry the changes into the state, where the model and approval mode are read each step and
/// the system message is part of the conversation.
fn apply(state: &mut rein_core::AgentState, spec: &OperationSpec, changes: &ForkChanges) {
    if changes.model.is_some() {
        state.model = spec.model.clone();
    }
    if changes.approval.is_some() {
        state.intervention.approval_mode = spec.approval;
    }
    state.budget = spec.budget.clone();
    if let Some(role) = &changes.system_role {
        match state.messages.iter().position(|m| m.role == Role::System) {
            Some(i) => {
                let mut system = Message::system(role);
                system.id = state.messages[i].id;
                system.created_at = state.messages[i].created_at;
                state.messages[i] = Arc::new(system);
            }
            None => state.messages.insert(0, Arc::new(Message::system(role))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_may_narrow_the_tools_but_not_widen_them() {
        let list = vec!["calculator".to_owned(), "shell/run".to_owned()];
        assert!(within(None, "anything"));
        assert!(within(Some(&list), "calculator"));
        assert!(within(Some(&list), "calculator/add"));
        assert!(within(Some(&list), "shell/run"));
        assert!(
            !within(Some(&list), "shell"),
            "the whole tool is wider than one api"
        );
        assert!(!within(Some(&list), "shell/write"));
        assert!(!within(Some(&[]), "calculator"));
    }

    #[test]
    fn renaming_gives_every_message_a_new_id_everywhere_it_is_named() {
        let mut state = rein_core::AgentState::new(OperationId::new());
        let user = Message::user("hi");
        let mut answer = Message::assistant("hello");
        answer.parent_id = Some(user.id);
        state.push_message(user);
        state.push_message(answer);
        let old: Vec<MessageId> = state.messages.iter().map(|m| m.id).collect();
        state.pending_assistant_message_id = Some(old[1]);
        state.next_event_seq = 7;
        let id = OperationId::new();
        let (forked, _) = renamed(&state, None, "topic_a", id, "topic_b").unwrap();
        assert_eq!(forked.operation_id, id);
        assert_eq!(forked.next_event_seq, 0);
        assert_eq!(forked.messages.len(), 2);
        for (m, o) in forked.messages.iter().zip(&old) {
            assert_ne!(m.id, *o);
        }
        assert_eq!(forked.messages[1].parent_id, Some(forked.messages[0].id));
        assert_eq!(
            forked.pending_assistant_message_id,
            Some(forked.messages[1].id)
        );
        assert_eq!(forked.metadata.topic_id.as_deref(), Some("topic_b"));
        assert_eq!(forked.messages[1].text_content(), "hello");
    }
}
