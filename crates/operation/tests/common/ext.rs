//! An MCP-like tool for tests and benches: one API with a realistic schema (what an issue
//! tracker's search takes) and instructions of its own; `Ext(n)` is `extNN`.

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use rein_operation::{Tool, ToolContext};

/// An MCP-like tool: one API with a realistic schema and instructions of its own.
pub struct Ext(pub usize);

impl Tool for Ext {
    fn manifest(&self) -> ToolManifest {
        ToolManifest {
            identifier: format!("ext{:02}", self.0),
            kind: ToolKind::Mcp,
            title: format!("External {}", self.0),
            description: format!("External service number {} (issues, builds, deploys).", self.0),
            system_role: Some(format!("Use ext{:02} only for project {}.", self.0, self.0)),
            apis: vec![ToolApi {
                name: "run".into(),
                description: "Query the external service: filter by state, label and assignee, sort and page through results.".into(),
                parameters: serde_json::json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Free-text search over titles and bodies"},
                        "state": {"type": "string", "enum": ["open", "closed", "all"], "description": "Which items"},
                        "labels": {"type": "array", "items": {"type": "string"}, "description": "Only items with all of these labels"},
                        "assignee": {"type": "string", "description": "Login of the assignee"},
                        "page": {"type": "integer", "minimum": 1, "description": "Page number, 1-based"}
                    },
                    "required": ["query"]
                }),
                intervention: None,
                cost: None,
            }],
            intervention: None,
        }
    }
    fn effect(&self, _: &str) -> Effect {
        Effect::Pure
    }
    fn call<'a>(
        &'a self,
        _: &'a ToolContext,
        _: &'a str,
        _: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move { Ok(ToolOutput::ok("no results")) }.boxed()
    }
}
