//! What an operation knows from its knowledge bases (`spec.knowledge`): the `knowledge` tool
//! (`knowledge.search`: the chunks that match a query best, each with the file and lines to
//! cite) and the retrieval that puts the best chunks for the user's message into each model
//! call (the context pipeline's knowledge processor; token-budgeted). Both search the
//! operation's owner's bases by full text and meaning ([`retrieve`]); [`ingest`] fills them.

pub mod ingest;
pub mod retrieve;

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{ToolApi, ToolKind, ToolManifest};
use rein_store::{ChunkHit, Store};
use rein_tools::{Tool, ToolContext};
use schemars::JsonSchema;
use serde::Deserialize;
use std::sync::Arc;

/// The tool's identifier.
pub const IDENTIFIER: &str = "knowledge";

/// `knowledge.search` arguments.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    /// What to look for (words of the question).
    query: String,
    /// One of the attached knowledge bases by name (all of them when left out).
    #[serde(default)]
    knowledge_base: Option<String>,
    /// How many chunks (1 to 20, default 5).
    #[serde(default)]
    #[schemars(range(min = 1, max = 20))]
    top_k: Option<u32>,
}

/// `knowledge`: search the operation's knowledge bases.
pub struct KnowledgeTool {
    /// Where the bases are.
    pub store: Arc<dyn Store>,
    /// Embeds queries for bases with an embedding model (none: full text only).
    pub models: Option<Arc<dyn crate::models::ModelSource>>,
}

/// Where a chunk is, as the model cites it: `path:start-end`.
pub fn citation(hit: &ChunkHit) -> String {
    if hit.line_start == hit.line_end {
        format!("{}:{}", hit.path, hit.line_start)
    } else {
        format!("{}:{}-{}", hit.path, hit.line_start, hit.line_end)
    }
}

impl Tool for KnowledgeTool {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Knowledge".into(),
            description: "Search the documents attached to this agent.".into(),
            system_role: Some(
                "When you use what `knowledge.search` returned, cite it as [path:lines] exactly as given.".into(),
            ),
            apis: vec![ToolApi {
                name: "search".into(),
                description: "Find the passages of the attached documents that match a query, each with its file and lines.".into(),
                parameters: rein_tools::parameters_of::<SearchArgs>(),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn effect(&self, _: &str) -> rein_core::tool::Effect {
        rein_core::tool::Effect::Pure
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let args: SearchArgs = match serde_json::from_value(args) {
                Ok(a) => a,
                Err(e) => return Ok(ToolOutput::failed(format!("Invalid arguments: {e}"))),
            };
            if cx.knowledge.is_empty() {
                return Ok(ToolOutput::failed(
                    "No knowledge base is attached to this agent.",
                ));
            }
            let names: Vec<String> = match &args.knowledge_base {
                Some(n) if cx.knowledge.contains(n) => vec![n.clone()],
                Some(n) => {
                    return Ok(ToolOutput::failed(format!(
                        "`{n}` is not attached; use one of: {}",
                        cx.knowledge.join(", ")
                    )));
                }
                None => cx.knowledge.clone(),
            };
            let k = args.top_k.unwrap_or(5).clamp(1, 20);
            let found = retrieve::search(
                &*self.store,
                self.models.as_deref(),
                cx.owner.as_deref(),
                &names,
                &args.query,
                k,
            )
            .await
            .map_err(|e| PortError::new(rein_core::failure::Fault::Store, e.to_string()))?;
            if found.hits.is_empty() {
                return Ok(ToolOutput::ok(format!(
                    "Nothing in {} matches `{}`.",
                    names.join(", "),
                    args.query
                )));
            }
            let mut out = String::new();
            for (base, hit) in &found.hits {
                let under = if hit.headings.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", hit.headings.join(" › "))
                };
                out.push_str(&format!(
                    "[{}]{under} from {base}\n{}\n\n",
                    citation(hit),
                    hit.text.trim()
                ));
            }
            Ok(ToolOutput::ok(out.trim_end().to_owned()))
        }
        .boxed()
    }
}
