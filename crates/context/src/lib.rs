//! rein-context: what each model call sees.
//!
//! The raw transcript is never forwarded. A [`Pipeline`] of named, ordered [`Processor`]s turns
//! an immutable [`ContextInput`] (messages, agent facts, model facts, step facts) into the
//! provider-neutral message list and the decision whether tools are offered. History
//! truncation runs first, so every later processor sees only the kept messages; cleanup runs
//! last. [`TiktokenEstimator`] counts tokens for the compression threshold, and [`report`]
//! accounts for what a call admitted (per item and per processor).
#![warn(missing_docs)]

mod estimate;
mod pipeline;
pub mod processors;
pub mod report;

pub use estimate::{Encoding, TiktokenEstimator};
pub use pipeline::{
    AgentFacts, ContextInput, ContextOutput, Draft, KnowledgeChunk, ModelFacts, Pipeline,
    Processor, SkillBrief, SkillText, StepFacts, ToolBrief, TraceEntry,
};
pub use processors::force_finish::FORCE_FINISH_PROMPT;
