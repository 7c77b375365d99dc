//! `skills.activate`: the model admits a listed skill; its instructions come back as the
//! call's result and stay part of every later call of the operation (the engine records the
//! activation in the state, so the context pipeline restores them at the head of a request
//! whose history lost that result).

use super::SkillCatalog;
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolEffect, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use std::sync::Arc;

/// The tool's identifier.
pub const IDENTIFIER: &str = rein_core::tool::ACTIVATE_SKILLS;
/// Its one API.
pub const API: &str = "activate";

/// Activates skills from a catalog.
pub struct ActivateSkill {
    catalog: Arc<SkillCatalog>,
}

impl ActivateSkill {
    /// The tool over `catalog`.
    pub fn new(catalog: Arc<SkillCatalog>) -> Self {
        Self { catalog }
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ActivateArgs {
    /// The skill's name, as listed
    #[schemars(length(min = 1))]
    name: String,
}

/// The tool's manifest (the same in every process, whatever skills it has, so an operation's
/// recorded tools compare equal wherever it continues).
pub fn manifest() -> ToolManifest {
    ToolManifest {
        identifier: IDENTIFIER.into(),
        kind: ToolKind::Builtin,
        title: "Skills".into(),
        description: "Load a listed skill's instructions into this conversation.".into(),
        system_role: None,
        apis: vec![ToolApi {
            name: API.into(),
            description:
                "Activate a listed skill by name; its instructions apply from your next step on."
                    .into(),
            parameters: crate::parameters_of::<ActivateArgs>(),
            intervention: None,
            cost: None,
        }],
        intervention: None,
    }
}

impl Tool for ActivateSkill {
    fn manifest(&self) -> ToolManifest {
        manifest()
    }

    fn effect(&self, _api: &str) -> Effect {
        Effect::Pure
    }

    fn call<'a>(
        &'a self,
        _cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let args = tool_args!("skills/activate", args, ActivateArgs);
            let Some(skill) = self.catalog.get(args.name.trim()) else {
                let known: Vec<&str> = self
                    .catalog
                    .skills()
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect();
                return Ok(ToolOutput::failed(format!(
                    "No skill named `{}`. Available: {}.",
                    args.name,
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            // The instructions come with the result: they take their place in the history
            // here, so the requests before and after this call share their prefix (a block
            // added at the head would make every later call a prompt-cache miss).
            let mut text = format!(
                "Skill `{}` is active: follow its instructions from now on.",
                skill.name
            );
            if !skill.resources.is_empty() {
                let paths: Vec<String> = skill
                    .resources
                    .iter()
                    .map(|r| format!("skill://{}/{r}", skill.name))
                    .collect();
                text.push_str(&format!(
                    " Its files, read-only through files.read, files.list and files.grep: {}.",
                    paths.join(", ")
                ));
            }
            text.push_str("\n\n");
            text.push_str(&rein_core::tool::skill_block(&skill.name, &skill.body));
            // The step is set by the engine when it records the activation.
            Ok(ToolOutput::ok(text)
                .with_effect(ToolEffect::ActivateSkill(skill.activated(0, "model"))))
        }
        .boxed()
    }
}
