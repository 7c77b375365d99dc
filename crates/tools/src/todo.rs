//! `todo.write`: the agent's plan. The model writes the whole list each time (items with a
//! status); the engine keeps it in the operation's state and the context shows it at every
//! step, so a long task does not lose its thread after compression.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::state::{TodoItem, TodoStatus};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use serde_json::json;

/// The plan tool.
pub struct Todo;

/// The plan as the model reads it: `[x]` done, `[>]` in progress, `[ ]` pending.
pub fn render(items: &[TodoItem]) -> String {
    items
        .iter()
        .map(|t| {
            let mark = match t.status {
                TodoStatus::Done => "[x]",
                TodoStatus::InProgress => "[>]",
                TodoStatus::Pending => "[ ]",
            };
            format!("{mark} {}", t.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
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
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "items": {
                            "type": "array",
                            "maxItems": 50,
                            "items": {
                                "type": "object",
                                "properties": {
                                    "text": {"type": "string", "minLength": 1, "maxLength": 500},
                                    "status": {"enum": ["pending", "in_progress", "done"]}
                                },
                                "required": ["text", "status"],
                                "additionalProperties": false
                            }
                        }
                    },
                    "required": ["items"],
                    "additionalProperties": false
                }),
                intervention: None,
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
            let items: Vec<TodoItem> = match serde_json::from_value(args["items"].clone()) {
                Ok(items) => items,
                Err(e) => return Ok(ToolOutput::failed(format!("Invalid plan: {e}"))),
            };
            let text = if items.is_empty() {
                "Plan cleared.".to_owned()
            } else {
                format!("Plan saved:\n{}", render(&items))
            };
            let mut out = ToolOutput::ok(text);
            out.todos = Some(items);
            Ok(out)
        }
        .boxed()
    }
}
