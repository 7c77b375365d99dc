//! `todo.write`: the agent's plan. The model writes the whole list each time (items with a
//! status); the engine keeps it in the operation's state and the context shows it at every
//! step, so a long task does not lose its thread after compression.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolEffect, ToolOutput};
use rein_core::state::{TodoItem, TodoStatus, render_plan};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};

/// The plan tool.
pub struct Todo;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    /// The whole plan, in order
    #[schemars(length(max = 50))]
    items: Vec<PlanItem>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct PlanItem {
    /// What to do
    #[schemars(length(min = 1, max = 500))]
    text: String,
    /// Where it stands
    status: PlanStatus,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum PlanStatus {
    Pending,
    InProgress,
    Done,
}

impl Tool for Todo {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: "todo".into(),
            kind: ToolKind::Builtin,
            title: "Plan".into(),
            description: "Keep a plan of the task as a checklist.".into(),
            system_role: None,
            apis: vec![ToolApi {
                name: "write".into(),
                description: "Replace your plan with these items (all of them, in order), each pending, in_progress or done. Use it for tasks of several steps; keep one item in_progress.".into(),
                parameters: crate::parameters_of::<WriteArgs>(),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }

    fn effect(&self, _api: &str) -> Effect {
        // Writing the same plan twice leaves the same plan.
        Effect::Pure
    }

    fn call<'a>(
        &'a self,
        _cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let args = tool_args!("todo/write", args, WriteArgs);
            let items: Vec<TodoItem> = args
                .items
                .into_iter()
                .map(|i| TodoItem {
                    text: i.text,
                    status: match i.status {
                        PlanStatus::Pending => TodoStatus::Pending,
                        PlanStatus::InProgress => TodoStatus::InProgress,
                        PlanStatus::Done => TodoStatus::Done,
                    },
                })
                .collect();
            let text = if items.is_empty() {
                "Plan cleared.".to_owned()
            } else {
                format!("Plan saved:\n{}", render_plan(&items))
            };
            Ok(ToolOutput::ok(text).with_effect(ToolEffect::ReplacePlan(items)))
        }
        .boxed()
    }
}
