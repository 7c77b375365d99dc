//! The pipeline: input facts, the draft processors rewrite, and the ordered list of processors.

use crate::processors;
use chrono::{DateTime, Utc};
use rein_core::message::Message;
use std::path::PathBuf;
use std::sync::Arc;

/// What the agent brings to every call.
#[derive(Clone, Debug, Default)]
pub struct AgentFacts {
    /// The agent's name; messages authored by other agents are relabeled against it.
    pub name: Option<String>,
    /// The agent's system role (instructions).
    pub system_role: Option<String>,
    /// Memories about the user relevant to this request (already retrieved).
    pub memories: Vec<String>,
    /// Knowledge snippets relevant to this request (already retrieved).
    pub knowledge: Vec<KnowledgeChunk>,
    /// Keep at most this many conversation messages (system messages and compression
    /// summaries are always kept); `None` keeps everything.
    pub history_limit: Option<usize>,
    /// Tool results longer than this many characters keep their head and tail only.
    pub max_tool_result_chars: Option<usize>,
    /// Attached text files are inlined up to this many characters each; `None` inlines whole.
    pub max_file_chars: Option<usize>,
    /// Instructions of the tools whose schemas this call offers (manifest system roles), by
    /// tool identifier.
    pub tool_roles: Vec<(String, String)>,
    /// Skills admitted into the operation: their instructions go into every call (at the
    /// head, unless the result of the call that activated it still carries them).
    pub active_skills: Vec<SkillText>,
    /// Mark what came from outside (tool results, files, knowledge) as data the model must not
    /// take instructions from (the `spotlight` processor).
    pub spotlight: bool,
    /// The call defines tools, so tool results can come into it: with `spotlight`, the head
    /// says what data blocks are from the first call on.
    pub offers_tools: bool,
}

/// An active skill's instructions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillText {
    /// Its name.
    pub name: String,
    /// Its `SKILL.md` body.
    pub body: String,
    /// Activated by a `skills__activate` call, whose result carries its block: while that
    /// result is in the history the block stays there, not at the head.
    pub from_call: bool,
}

/// A skill the model could activate: listed by name and description, body not sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkillBrief {
    /// The name to pass to `skills.activate`.
    pub name: String,
    /// When to use it.
    pub description: String,
}

/// One retrieved piece of knowledge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnowledgeChunk {
    /// Where it came from (file name, URL).
    pub source: String,
    /// The text.
    pub text: String,
}

/// What the model being called can take.
#[derive(Clone, Debug)]
pub struct ModelFacts {
    /// `provider/model`.
    pub id: String,
    /// Accepts image input.
    pub vision: bool,
    /// Rejects two consecutive messages of the same role (adjacent user messages are merged).
    pub alternating_roles: bool,
}

impl Default for ModelFacts {
    fn default() -> Self {
        Self {
            id: String::new(),
            vision: true,
            alternating_roles: false,
        }
    }
}

/// A tool the agent could activate: listed by name, schema not sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolBrief {
    /// The name to pass to `activate_tools`.
    pub name: String,
    /// One line.
    pub description: String,
}

/// Facts about this step.
#[derive(Clone, Debug, Default)]
pub struct StepFacts {
    /// Today, when the model should be told (injected, so output is reproducible; `None`
    /// leaves the date out, for recorded cassettes that must replay on any day).
    pub now: Option<DateTime<Utc>>,
    /// The operation's working directory.
    pub working_directory: Option<PathBuf>,
    /// The operating system the tools run on.
    pub os: Option<String>,
    /// The step limit was crossed: ask for a final answer, offer no tools.
    pub force_finish: bool,
    /// Tools available but not active (progressive disclosure).
    pub inactive_tools: Vec<ToolBrief>,
    /// Skills available but not active.
    pub available_skills: Vec<SkillBrief>,
    /// The agent's plan (`todo` tool).
    pub todos: Vec<rein_core::state::TodoItem>,
}

/// Everything the pipeline reads. Processors never change it.
#[derive(Clone, Copy, Debug)]
pub struct ContextInput<'a> {
    /// The operation's transcript.
    pub messages: &'a [Arc<Message>],
    /// Agent facts.
    pub agent: &'a AgentFacts,
    /// Model facts.
    pub model: &'a ModelFacts,
    /// Step facts.
    pub step: &'a StepFacts,
}

/// What processors rewrite. Messages are shared: a processor that changes one message clones
/// only that one (`Arc::make_mut`), so a pass over a long history costs pointer copies.
#[derive(Clone, Debug)]
pub struct Draft {
    /// The messages the model will see.
    pub messages: Vec<Arc<Message>>,
    /// Whether the model may call tools (when not, they stay defined with a tool choice of
    /// none).
    pub tools_enabled: bool,
}

/// One processor's effect, for debugging what the model saw and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceEntry {
    /// The processor.
    pub processor: &'static str,
    /// Messages after it ran.
    pub messages: usize,
}

/// The pipeline's result.
#[derive(Clone, Debug)]
pub struct ContextOutput {
    /// The messages to send.
    pub messages: Vec<Arc<Message>>,
    /// Whether the model may call tools (when not, they stay defined with a tool choice of
    /// none).
    pub tools_enabled: bool,
    /// Message counts after each processor, in order.
    pub trace: Vec<TraceEntry>,
}

/// One named step of the pipeline.
pub trait Processor: Send + Sync {
    /// Stable name (used for ordering, insertion and traces).
    fn name(&self) -> &'static str;
    /// Rewrite the draft.
    fn process(&self, input: &ContextInput<'_>, draft: &mut Draft);
}

/// Named processors run in order.
pub struct Pipeline {
    processors: Vec<Box<dyn Processor>>,
}

impl Default for Pipeline {
    fn default() -> Self {
        Self::standard()
    }
}

impl Pipeline {
    /// A pipeline of exactly these processors.
    pub fn new(processors: Vec<Box<dyn Processor>>) -> Self {
        Self { processors }
    }

    /// rein's order: truncation first (later processors see only kept messages), then
    /// placeholder filter, system role, memory, knowledge, skills, group relabeling,
    /// attachments, tool result limits, spotlighting, tool-call pairing, summary placement, tool disclosure,
    /// the plan, force-finish, and cleanup last.
    pub fn standard() -> Self {
        use processors::*;
        Self::new(vec![
            Box::new(truncate::HistoryTruncate),
            Box::new(placeholder::PlaceholderFilter),
            Box::new(system_role::SystemRole),
            Box::new(inject::MemoryInjection),
            Box::new(inject::KnowledgeInjection),
            Box::new(skills::Skills),
            Box::new(group::GroupRelabel),
            Box::new(attachments::Attachments),
            Box::new(tool_results::ToolResultLimit),
            Box::new(spotlight::Spotlight),
            Box::new(pairing::ToolCallPairing),
            Box::new(summary::SummaryPlacement),
            Box::new(disclosure::ToolDisclosure),
            Box::new(plan::Plan),
            Box::new(force_finish::ForceFinish),
            Box::new(cleanup::Cleanup),
        ])
    }

    /// Processor names in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.processors.iter().map(|p| p.name()).collect()
    }

    /// Insert `processor` before the one named `before` (at the end when there is none).
    pub fn insert_before(&mut self, before: &str, processor: Box<dyn Processor>) {
        let at = self
            .processors
            .iter()
            .position(|p| p.name() == before)
            .unwrap_or(self.processors.len());
        self.processors.insert(at, processor);
    }

    /// Remove the processor named `name`; whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        let before = self.processors.len();
        self.processors.retain(|p| p.name() != name);
        self.processors.len() != before
    }

    /// Run every processor over `input`.
    pub fn run(&self, input: &ContextInput<'_>) -> ContextOutput {
        self.run_observed(input, |_, _| {})
    }

    /// Run every processor over `input`, showing `observe` each one's name and the draft it
    /// left (see [`crate::report`]).
    pub fn run_observed(
        &self,
        input: &ContextInput<'_>,
        mut observe: impl FnMut(&'static str, &Draft),
    ) -> ContextOutput {
        let mut draft = Draft {
            messages: input.messages.to_vec(),
            tools_enabled: true,
        };
        let mut trace = Vec::with_capacity(self.processors.len());
        for p in &self.processors {
            p.process(input, &mut draft);
            observe(p.name(), &draft);
            trace.push(TraceEntry {
                processor: p.name(),
                messages: draft.messages.len(),
            });
        }
        ContextOutput {
            messages: draft.messages,
            tools_enabled: draft.tools_enabled,
            trace,
        }
    }
}
