//! `agents.delegate` and `agents.delegate_many`: hand tasks to sub-agents. The tool itself only
//! reads the tasks and asks for them as a follow-up; the operation layer runs each as a child
//! operation (scope, budget and approvals derived from the caller's) and answers the call with
//! their answers once they have ended. Its manifest is made per operation ([`manifest`]), listing
//! the agents that operation may delegate to; operations that may not delegate are not offered it.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::instruction::SubAgentTask;
use rein_core::phase::ToolFollowUp;
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};

/// The tool's identifier.
pub const IDENTIFIER: &str = "agents";
/// Tasks one `delegate_many` call may hand out.
pub const MAX_TASKS: usize = 8;

/// The delegation tool.
pub struct Agents;

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    /// Short title of the task (names the sub-agent's thread)
    #[schemars(length(min = 1, max = 200))]
    title: String,
    /// Self-contained instruction: everything the sub-agent needs, since it does not see this
    /// conversation
    #[schemars(length(min = 1, max = 20000))]
    task: String,
    /// Which agent does it; an ad-hoc sub-agent (with `role`) when omitted
    #[serde(default)]
    agent: Option<String>,
    /// System role of an ad-hoc sub-agent
    #[serde(default)]
    #[schemars(length(max = 8000))]
    role: Option<String>,
    /// Tools the sub-agent may use (`identifier` or `identifier/api`); it never gets more
    /// than you have
    #[serde(default)]
    tools: Option<Vec<String>>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ManyArgs {
    /// The tasks, run in parallel; their answers come back in this order
    #[schemars(length(min = 1, max = 8))]
    tasks: Vec<TaskArgs>,
}

impl TaskArgs {
    fn into_task(self) -> SubAgentTask {
        SubAgentTask {
            description: self.title,
            instruction: self.task,
            inherit_messages: false,
            timeout_ms: None,
            target_agent_id: self.agent,
            tool_call_id: None,
            system_role: self.role,
            tools: self.tools,
        }
    }
}

/// An agent an operation may delegate to, as the model is told about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delegate {
    /// Its name.
    pub name: String,
    /// What it is for.
    pub description: String,
}

/// The manifest offered to an operation that may delegate to `agents` (and to ad-hoc
/// sub-agents): the `agent` parameter lists their names.
pub fn manifest(agents: &[Delegate]) -> ToolManifest {
    let mut task = crate::parameters_of::<TaskArgs>();
    let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
    if let Some(agent) = task.pointer_mut("/properties/agent") {
        *agent = if names.is_empty() {
            serde_json::json!({
                "type": "string",
                "description": "Which agent does it; an ad-hoc sub-agent (with `role`) when omitted",
            })
        } else {
            serde_json::json!({
                "type": "string",
                "enum": names,
                "description": "Which agent does it; an ad-hoc sub-agent (with `role`) when omitted",
            })
        };
    }
    let mut many = crate::parameters_of::<ManyArgs>();
    if let Some(items) = many.pointer_mut("/properties/tasks/items") {
        *items = task.clone();
    }
    let listed = if agents.is_empty() {
        "No named agents are available; describe an ad-hoc sub-agent with `role`.".to_owned()
    } else {
        let lines: Vec<String> = agents
            .iter()
            .map(|a| format!("- {}: {}", a.name, a.description))
            .collect();
        format!("Agents:\n{}", lines.join("\n"))
    };
    ToolManifest {
        identifier: IDENTIFIER.into(),
        kind: ToolKind::Builtin,
        title: "Sub-agents".into(),
        description: "Delegate tasks to sub-agents that work on their own and report back.".into(),
        system_role: None,
        apis: vec![
            ToolApi {
                name: "delegate".into(),
                description: format!(
                    "Hand one self-contained task to a sub-agent and get its final answer as the result. {listed}"
                ),
                parameters: task,
                intervention: None,
                cost: None,
            },
            ToolApi {
                name: "delegate_many".into(),
                description: format!(
                    "Hand several independent tasks to sub-agents that work in parallel; the result lists their answers in order. {listed}"
                ),
                parameters: many,
                intervention: None,
                cost: None,
            },
        ],
        intervention: None,
    }
}

impl Tool for Agents {
    /// The shape calls are checked against: any agent name (the operation layer checks the
    /// name against what the operation may use, and says so when it may not).
    fn manifest(&self) -> ToolManifest {
        manifest(&[])
    }

    fn effect(&self, _api: &str) -> Effect {
        // Reading the tasks has no effect; starting them is committed with the step.
        Effect::Pure
    }

    fn call<'a>(
        &'a self,
        _cx: &'a ToolContext,
        api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let tasks = match api {
                "delegate" => vec![tool_args!("agents/delegate", args, TaskArgs).into_task()],
                "delegate_many" => tool_args!("agents/delegate_many", args, ManyArgs)
                    .tasks
                    .into_iter()
                    .map(TaskArgs::into_task)
                    .collect(),
                other => return Ok(ToolOutput::failed(format!("unknown api `{other}`"))),
            };
            let n = tasks.len();
            Ok(ToolOutput {
                follow_up: Some(ToolFollowUp::SubAgents { tasks }),
                ..ToolOutput::ok(format!(
                    "Delegated {n} task(s); waiting for the sub-agents' answers."
                ))
            })
        }
        .boxed()
    }
}
