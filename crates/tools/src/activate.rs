//! `activate_tools`: the meta-tool of progressive disclosure. The context lists inactive tools
//! by name and one line; the model activates what it needs here, and their full schemas are
//! offered from the next step on (the engine records each activation in the state).

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolEffect, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};

/// The meta-tool's identifier.
pub const IDENTIFIER: &str = rein_core::tool::ACTIVATE_TOOLS;
/// Its one API.
pub const API: &str = "activate_tools";

/// Activates tools by identifier.
pub struct ActivateTools;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ActivateArgs {
    /// Names of the tools to activate, as listed
    #[schemars(length(min = 1))]
    tools: Vec<String>,
}

impl Tool for ActivateTools {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: IDENTIFIER.into(),
            kind: ToolKind::Builtin,
            title: "Tool activation".into(),
            description: "Load more tools into this conversation.".into(),
            system_role: None,
            apis: vec![ToolApi {
                name: API.into(),
                description: "Activate listed tools by name; their functions can be called from your next step on.".into(),
                parameters: crate::parameters_of::<ActivateArgs>(),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::Pure
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let args = tool_args!("tools/activate_tools", args, ActivateArgs);
            let requested: Vec<&str> = args.tools.iter().map(String::as_str).collect();
            let (known, unknown): (Vec<&str>, Vec<&str>) = requested
                .into_iter()
                .partition(|name| cx.available_tools.iter().any(|t| t == name));
            if known.is_empty() {
                return Ok(ToolOutput::failed(format!(
                    "No such tools: {}. Available: {}.",
                    unknown.join(", "),
                    cx.available_tools.join(", ")
                )));
            }
            let mut text = format!(
                "Activated: {}. Their functions can be called from your next step on.",
                known.join(", ")
            );
            if !unknown.is_empty() {
                text.push_str(&format!(" Not found: {}.", unknown.join(", ")));
            }
            Ok(ToolOutput::ok(text).with_effect(ToolEffect::ActivateTools(
                known.into_iter().map(str::to_owned).collect(),
            )))
        }
        .boxed()
    }
}
