//! `ask_user.ask`: ask the person a question (free text, or one of a few options, with an
//! optional default and expiry). The brain parks such a call until a person answers
//! ([`rein_core::question`]), so this tool runs only where nobody can answer (a headless run):
//! it says so, with the default when the question has one.

use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::question::{ASK_API, ASK_USER, Question};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};

/// The question tool.
pub struct AskUser;

/// The question tool's manifest.
pub fn manifest() -> ToolManifest {
    ToolManifest {
        identifier: ASK_USER.into(),
        kind: ToolKind::Builtin,
        title: "Ask the user".into(),
        description: "Ask the person you work for a question and wait for the answer.".into(),
        system_role: None,
        apis: vec![ToolApi {
            name: ASK_API.into(),
            description: "Ask the user a question when you cannot proceed well without their decision or information (not for things you can find out yourself). Give `options` when the answer is one of a few choices, a `default` to take if nobody answers, and `expires_in_secs` when the question should not wait indefinitely. The answer comes back as this call's result.".into(),
            parameters: crate::parameters_of::<Question>(),
            intervention: None,
            cost: None,
        }],
        intervention: None,
    }
}

impl Tool for AskUser {
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
            let question = tool_args!("ask_user/ask", args, Question);
            Ok(ToolOutput::ok(
                question.unanswered("no person is available in this run"),
            ))
        }
        .boxed()
    }
}
