//! Replaying model calls: the request a committed step sent, rebuilt from the state before it
//! ([`rein_store::Store::state_at`]) through the same brain and model port the operation
//! stepped with, sent again to the same model or others, concurrently; the operation is not
//! changed and no tool runs. A chain replays every model call of the trajectory in order,
//! each from the original's state (so from the original's tool results), until a model asks
//! for other tools than the original did. What the calls spend is kept ([`rein_store::ReplaySpend`]):
//! usage and spending caps count it.

use super::{Driver, derived_message_id};
use crate::error::DriverError;
use futures::future::join_all;
use rein_core::engine::ports::{LlmPort, LlmProgress, LlmRequest};
use rein_core::event::EventKind;
use rein_core::instruction::{Instruction, InstructionKind};
use rein_core::state::ModelRef;
use rein_core::{AgentState, MessageId, OperationId, Role, Usd};
use rein_store::{Rewound, StepRan};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Instant;

/// A tool call as compared across models: what it names and with what (ids differ per call).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CalledTool {
    /// `identifier/api`, or the name the model used when it names no installed tool.
    pub name: String,
    /// The arguments, as JSON when they parse, else as the text sent.
    pub arguments: serde_json::Value,
}

/// One model's answer to the replayed request (or the original's, as recorded).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplayAnswer {
    /// `provider/model`.
    pub model: String,
    /// Which run of this model (1-based; the original is run 0).
    pub run: u32,
    /// The answer's text.
    pub answer: String,
    /// The tools it asked for, in order.
    pub tool_calls: Vec<CalledTool>,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// What the call cost (zero for a model nothing prices).
    pub cost: Usd,
    /// Milliseconds to the first streamed piece (not recorded for the original).
    pub first_token_ms: Option<u64>,
    /// Milliseconds for the whole call.
    pub total_ms: Option<u64>,
    /// Why the model stopped, when the provider said.
    pub finish: Option<String>,
    /// Whether it asked for the same tools with the same arguments as the original (`None`
    /// for the original).
    pub same_tool_calls: Option<bool>,
    /// Why the call failed, when it did.
    pub error: Option<String>,
}

/// A replay of one step's model call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepReplay {
    /// The operation.
    pub operation: String,
    /// The step whose call was replayed.
    pub step: u64,
    /// What the step's call answered, as recorded.
    pub original: ReplayAnswer,
    /// Each model's answer, each run, in the order asked.
    pub answers: Vec<ReplayAnswer>,
}

/// A replay of a whole trajectory by one model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChainReplay {
    /// The operation.
    pub operation: String,
    /// The model replayed.
    pub model: String,
    /// Each model call replayed, in order, up to and including the first that diverged.
    pub steps: Vec<StepReplay>,
    /// The first step whose call asked for other tools than the original's (`None`: none did).
    pub diverged_at: Option<u64>,
}

/// Why a replay is refused; nothing was sent.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// No such step.
    #[error("operation {operation} has no step {step}")]
    NoStep {
        /// The operation.
        operation: OperationId,
        /// The step asked for.
        step: u64,
    },
    /// The step ran something else than one model call.
    #[error(
        "step {step} of operation {operation} ran {ran}, not a model call: replay a step that called the model"
    )]
    NotAModelCall {
        /// The operation.
        operation: OperationId,
        /// The step asked for.
        step: u64,
        /// What it ran.
        ran: String,
    },
    /// The states around the step cannot be rebuilt.
    #[error(
        "operation {operation} was recorded before rein kept the state of every step: step {step} cannot be replayed"
    )]
    NotKept {
        /// The operation.
        operation: OperationId,
        /// The step asked for.
        step: u64,
    },
    /// The operation has no model call at all (a chain).
    #[error("operation {0} made no model call to replay")]
    NoModelCall(OperationId),
    /// Nothing to ask.
    #[error("name at least one model to replay with")]
    NoModels,
    /// The brain cannot decide a next step from the state before it.
    #[error("the state before step {step} leads nowhere: {why}")]
    Undecided {
        /// The step.
        step: u64,
        /// What the brain said.
        why: String,
    },
    /// The brain asks something else than a model call of this state (it differs from the
    /// original's, e.g. a model with a smaller window compresses first).
    #[error("with {model}, the state before step {step} leads to {ran}, not a model call")]
    Diverted {
        /// The model.
        model: String,
        /// The step.
        step: u64,
        /// What it would run.
        ran: String,
    },
}

/// A replay to make.
#[derive(Clone, Debug)]
pub struct ReplayOptions {
    /// The operation.
    pub from: OperationId,
    /// The step whose model call is replayed.
    pub step: u64,
    /// The models to ask (the original's own reproduces its request).
    pub models: Vec<ModelRef>,
    /// Runs per model (at least 1).
    pub runs: u32,
}

impl Driver {
    /// Send the request step `opts.step` of `opts.from` sent to each of `opts.models`,
    /// `opts.runs` times each, all at once; what each answered beside the original's answer.
    pub async fn replay(&self, opts: &ReplayOptions) -> Result<StepReplay, DriverError> {
        if opts.models.is_empty() {
            return Err(ReplayError::NoModels.into());
        }
        let step = opts.step;
        let ran = self.ran_at(opts.from, step).await?;
        if ran != [StepRan::Instruction(InstructionKind::CallLlm)] {
            return Err(ReplayError::NotAModelCall {
                operation: opts.from,
                step,
                ran: ran
                    .iter()
                    .map(StepRan::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            }
            .into());
        }
        let before = self.rewound(opts.from, step - 1, step).await?;
        let after = self.rewound(opts.from, step, step).await?;
        let original = self
            .recorded_answer(opts.from, &before.state, &after.state)
            .await?;
        let asks = opts
            .models
            .iter()
            .flat_map(|m| (1..=opts.runs.max(1)).map(move |run| (m, run)));
        let answers = join_all(asks.map(|(model, run)| {
            self.ask_model(opts.from, step, &before, model, run, &original.tool_calls)
        }))
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
        // No operation holds these calls: their spending is kept on its own, where usage and
        // spending caps count it.
        let spent: Vec<rein_store::ReplaySpend> = answers
            .iter()
            .zip(opts.models.iter().flat_map(|m| {
                std::iter::repeat_n(m, usize::try_from(opts.runs.max(1)).unwrap_or(1))
            }))
            .filter(|(a, _)| a.input_tokens + a.output_tokens > 0 || a.cost > Usd::ZERO)
            .map(|(a, model)| rein_store::ReplaySpend {
                owner: before.spec.owner.clone(),
                operation_id: opts.from,
                step,
                model: model.clone(),
                input_tokens: a.input_tokens,
                output_tokens: a.output_tokens,
                cost: a.cost,
            })
            .collect();
        if !spent.is_empty() {
            self.store.record_replays(&spent).await?;
        }
        Ok(StepReplay {
            operation: opts.from.to_string(),
            step,
            original,
            answers,
        })
    }

    /// Replay every model call of `from` with `model`, in order, each from the original's
    /// state before it, until one asks for other tools than the original's.
    pub async fn replay_chain(
        &self,
        from: OperationId,
        model: &ModelRef,
    ) -> Result<ChainReplay, DriverError> {
        let calls: Vec<u64> = self
            .store
            .steps(from)
            .await?
            .into_iter()
            .filter(|s| s.instructions == [StepRan::Instruction(InstructionKind::CallLlm)])
            .map(|s| s.step_index)
            .collect();
        if calls.is_empty() {
            if self.store.operation(from).await?.is_none() {
                return Err(DriverError::NotFound(from));
            }
            return Err(ReplayError::NoModelCall(from).into());
        }
        let mut steps = Vec::new();
        let mut diverged_at = None;
        for step in calls {
            let replayed = self
                .replay(&ReplayOptions {
                    from,
                    step,
                    models: vec![model.clone()],
                    runs: 1,
                })
                .await?;
            let same = replayed
                .answers
                .iter()
                .all(|a| a.error.is_none() && a.same_tool_calls == Some(true));
            steps.push(replayed);
            if !same {
                diverged_at = Some(step);
                break;
            }
        }
        Ok(ChainReplay {
            operation: from.to_string(),
            model: model.key(),
            steps,
            diverged_at,
        })
    }

    /// What step `step` of `from` ran.
    async fn ran_at(&self, from: OperationId, step: u64) -> Result<Vec<StepRan>, DriverError> {
        let steps = self.store.steps(from).await?;
        if steps.is_empty() && self.store.operation(from).await?.is_none() {
            return Err(DriverError::NotFound(from));
        }
        steps
            .into_iter()
            .find(|s| s.step_index == step)
            .map(|s| s.instructions)
            .ok_or_else(|| {
                ReplayError::NoStep {
                    operation: from,
                    step,
                }
                .into()
            })
    }

    /// The state after step `at` (for a replay of step `step`).
    async fn rewound(
        &self,
        from: OperationId,
        at: u64,
        step: u64,
    ) -> Result<rein_store::StepCheckpoint, DriverError> {
        match self.store.state_at(from, at).await? {
            Rewound::Found(c) => Ok(*c),
            Rewound::NoOperation => Err(DriverError::NotFound(from)),
            Rewound::NoStep { .. } => Err(ReplayError::NoStep {
                operation: from,
                step,
            }
            .into()),
            Rewound::NotKept => Err(ReplayError::NotKept {
                operation: from,
                step,
            }
            .into()),
        }
    }

    /// The original's answer: the assistant message the step wrote, with what its call's
    /// event recorded (cost, why it stopped) and its time from the usage counters.
    async fn recorded_answer(
        &self,
        from: OperationId,
        before: &AgentState,
        after: &AgentState,
    ) -> Result<ReplayAnswer, DriverError> {
        let known: std::collections::HashSet<MessageId> =
            before.messages.iter().map(|m| m.id).collect();
        let message = after
            .messages
            .iter()
            .find(|m| m.role == Role::Assistant && !known.contains(&m.id));
        let (mut cost, mut finish) = (Usd::ZERO, None);
        if let Some(m) = message {
            for e in self.store.events(from, None).await? {
                if let EventKind::LlmResult {
                    assistant_message_id,
                    cost: c,
                    stop_reason,
                    ..
                } = e.kind
                    && assistant_message_id == m.id
                {
                    cost = c;
                    finish = stop_reason;
                }
            }
        }
        let usage = message.and_then(|m| m.usage).unwrap_or_default();
        Ok(ReplayAnswer {
            model: before.model.as_ref().map(ModelRef::key).unwrap_or_default(),
            run: 0,
            answer: message.map(|m| m.text_content()).unwrap_or_default(),
            tool_calls: message
                .map(|m| m.tool_calls.iter().map(called).collect())
                .unwrap_or_default(),
            input_tokens: usage.input,
            output_tokens: usage.output,
            cost,
            first_token_ms: None,
            total_ms: Some(
                after
                    .usage
                    .llm
                    .time_ms
                    .saturating_sub(before.usage.llm.time_ms),
            ),
            finish,
            same_tool_calls: None,
            error: None,
        })
    }

    /// Ask `model` what step `step` asked, from `before`.
    async fn ask_model(
        &self,
        from: OperationId,
        step: u64,
        before: &rein_store::StepCheckpoint,
        model: &ModelRef,
        run: u32,
        original: &[CalledTool],
    ) -> Result<ReplayAnswer, DriverError> {
        let mut spec = before.spec.clone();
        spec.model = Some(model.clone());
        let mut state = before.state.clone();
        state.model = Some(model.clone());
        // The message the step wrote had this id; a replayed call asks as it did.
        state.pending_assistant_message_id = Some(derived_message_id(from, step));
        let (brain, port) = self.caller(from, &spec, &state.tool_manifests).await?;
        let context = before
            .next_context
            .clone()
            .unwrap_or_else(|| rein_core::RuntimeContext::new(rein_core::phase::Phase::Init));
        let instructions = brain
            .runner(&context, &state)
            .map_err(|e| ReplayError::Undecided {
                step,
                why: e.to_string(),
            })?;
        let Some(Instruction::CallLlm { payload }) = instructions.first().cloned() else {
            return Err(ReplayError::Diverted {
                model: model.key(),
                step,
                ran: instructions
                    .iter()
                    .map(|i| i.kind().as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }
            .into());
        };
        let asked = payload.model.clone().or_else(|| state.model.clone());
        let request = LlmRequest {
            state: &state,
            payload: &payload,
            model: asked.as_ref(),
            assistant_message_id: state
                .pending_assistant_message_id
                .unwrap_or_else(|| derived_message_id(from, step)),
            force_finish: state.force_finish,
        };
        let started = Instant::now();
        let first: Mutex<Option<u64>> = Mutex::new(None);
        let on_progress = |p: LlmProgress| {
            if let LlmProgress::Chunk(_) = p {
                let mut f = first.lock().unwrap_or_else(|e| e.into_inner());
                f.get_or_insert_with(|| elapsed_ms(started));
            }
        };
        let out = port.call(request, &on_progress).await;
        let total_ms = Some(elapsed_ms(started));
        let first_token_ms = *first.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match out {
            Ok(out) => {
                let tool_calls: Vec<CalledTool> = out
                    .tool_calls
                    .iter()
                    .map(|raw| {
                        let name = rein_core::tool::resolve_name(&state.tool_manifests, &raw.name)
                            .map(|(i, a)| format!("{i}/{a}"))
                            .unwrap_or_else(|| raw.name.clone());
                        CalledTool {
                            name,
                            arguments: arguments(&raw.arguments),
                        }
                    })
                    .collect();
                ReplayAnswer {
                    model: model.key(),
                    run,
                    answer: out.content,
                    same_tool_calls: Some(tool_calls == original),
                    tool_calls,
                    input_tokens: out.usage.input,
                    output_tokens: out.usage.output,
                    cost: out.cost,
                    first_token_ms,
                    total_ms,
                    finish: out.stop_reason,
                    error: None,
                }
            }
            Err(e) => ReplayAnswer {
                model: model.key(),
                run,
                answer: String::new(),
                tool_calls: Vec::new(),
                input_tokens: 0,
                output_tokens: 0,
                cost: Usd::ZERO,
                first_token_ms,
                total_ms,
                finish: None,
                same_tool_calls: Some(false),
                error: Some(format!("{}: {}", e.code, e.message)),
            },
        })
    }
}

/// A recorded call as compared.
fn called(c: &rein_core::ToolCall) -> CalledTool {
    CalledTool {
        name: c.key(),
        arguments: arguments(&c.arguments),
    }
}

/// Arguments as JSON when they parse (so spacing does not make two calls differ).
fn arguments(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|_| serde_json::Value::String(text.to_owned()))
}

fn elapsed_ms(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}
