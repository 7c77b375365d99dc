//! `brief.create`: the agent raises a brief for the person it works for: a decision only they
//! can make, an insight worth knowing, or a result; with a priority and the actions they can
//! answer with. Briefs are kept by the store through a [`BriefSink`] (the operation layer's),
//! which names the owner, links the operation and the task whose run this is, and sends urgent
//! briefs to the owner's hook. An unresolved urgent decision holds that task's next runs.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::brief::{BriefKind, BriefPriority};
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};

/// The tool's identifier.
pub const IDENTIFIER: &str = "brief";

/// What the agent reports: the kinds of [`BriefKind`] an agent may raise (a failed run's
/// `error` brief is the host's to raise).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DraftKind {
    /// Something only the person can decide
    Decision,
    /// Something worth knowing
    Insight,
    /// What was produced
    Result,
}

impl From<DraftKind> for BriefKind {
    fn from(kind: DraftKind) -> Self {
        match kind {
            DraftKind::Decision => BriefKind::Decision,
            DraftKind::Insight => BriefKind::Insight,
            DraftKind::Result => BriefKind::Result,
        }
    }
}

/// How much it asks for attention: [`BriefPriority`] in the words the model reads (the tool's
/// schema describes each value for it, and recorded exchanges hold that schema).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DraftPriority {
    /// Now (sent to the person's hook; an urgent decision holds the task's next runs)
    Urgent,
    /// Soon
    Normal,
    /// For the record
    Info,
}

impl From<DraftPriority> for BriefPriority {
    fn from(priority: DraftPriority) -> Self {
        match priority {
            DraftPriority::Urgent => BriefPriority::Urgent,
            DraftPriority::Normal => BriefPriority::Normal,
            DraftPriority::Info => BriefPriority::Info,
        }
    }
}

/// An action the person can answer with.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftAction {
    /// What the answer names (`approve`, `use-plan-b`)
    #[schemars(length(min = 1, max = 64))]
    pub key: String,
    /// What the person reads
    #[schemars(length(min = 1, max = 200))]
    pub label: String,
}

/// A brief the agent raises.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BriefDraft {
    /// decision, insight or result
    pub kind: DraftKind,
    /// urgent, normal or info
    pub priority: DraftPriority,
    /// One line
    #[schemars(length(min = 1, max = 200))]
    pub title: String,
    /// A few sentences: what happened and what you need
    #[schemars(length(min = 1, max = 4000))]
    pub summary: String,
    /// How the person can answer besides acknowledging it (a decision's choices)
    #[serde(default)]
    #[schemars(length(max = 6))]
    pub actions: Vec<DraftAction>,
}

/// Why a brief was not raised (the model reads it in the tool's result).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BriefRefused {
    /// The operation raising it is not in the store.
    #[error("the operation is not in the store")]
    UnknownOperation,
    /// The run has no owner to brief.
    #[error("nobody to brief: this run has no owner")]
    NoOwner,
    /// The store failed, as it said.
    #[error("{0}")]
    Store(String),
}

/// Where raised briefs go.
pub trait BriefSink: Send + Sync {
    /// Keep `draft` for the person this operation works for; its id, or why not.
    fn raise<'a>(
        &'a self,
        cx: &'a ToolContext,
        draft: BriefDraft,
    ) -> BoxFuture<'a, Result<String, BriefRefused>>;
}

/// The brief tool.
pub struct BriefTool {
    sink: std::sync::Arc<dyn BriefSink>,
}

impl BriefTool {
    /// Raising briefs into `sink`.
    pub fn new(sink: std::sync::Arc<dyn BriefSink>) -> Self {
        Self { sink }
    }
}

impl Tool for BriefTool {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Briefs".into(),
            description: "Report to the person you work for, in their inbox.".into(),
            system_role: None,
            apis: vec![ToolApi {
                name: "create".into(),
                description: "Raise a brief in the person's inbox when they should know or decide something but need not answer now (for an answer you wait for, ask the user instead). An urgent decision holds the task's next runs until they resolve it.".into(),
                parameters: crate::parameters_of::<BriefDraft>(),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::AtMostOnce
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let draft = tool_args!("brief/create", args, BriefDraft);
            Ok(match self.sink.raise(cx, draft).await {
                Ok(id) => ToolOutput::ok(format!(
                    "Brief {id} is in the person's inbox; they resolve it when they can."
                )),
                Err(e) => ToolOutput::failed(format!("The brief was not raised: {e}")),
            })
        }
        .boxed()
    }
}
