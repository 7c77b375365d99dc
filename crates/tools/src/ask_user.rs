//! `ask_user.ask`: ask the person a question (free text, or one of a few options, with an
//! optional default and expiry). The brain parks such a call until a person answers
//! ([`rein_core::question`]), so this tool runs only where nobody can answer (a headless run):
//! it says so, with the default when the question has one. In an unattended run whose spec
//! asks for it ([`ToolContext::question_briefs`]), it also raises the question as an urgent
//! decision brief for the person, its options as the brief's actions, so the answer reaches a
//! later run of the task.

use crate::brief::{BriefDraft, BriefSink, DraftAction, DraftKind, DraftPriority};
use crate::{Tool, ToolContext};
use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::engine::ports::{PortError, ToolOutput};
use rein_core::question::{ASK_API, ASK_USER, Question};
use rein_core::tool::{Effect, ToolApi, ToolKind, ToolManifest};
use std::sync::Arc;

/// The question tool.
#[derive(Default)]
pub struct AskUser {
    /// Where questions go as briefs (none: they are only declined).
    briefs: Option<Arc<dyn BriefSink>>,
}

impl AskUser {
    /// The tool, raising an unattended run's questions as briefs through `sink` when the
    /// run's spec asks for it.
    pub fn with_briefs(sink: Arc<dyn BriefSink>) -> Self {
        Self { briefs: Some(sink) }
    }
}

/// Characters of a brief's title.
const TITLE_CHARS: usize = 200;
/// Actions of a brief (the sink adds `acknowledge`).
const ACTIONS: usize = 5;

/// The decision brief that asks `q`.
fn draft(q: &Question) -> BriefDraft {
    let mut title: String = q.question.trim().chars().take(TITLE_CHARS).collect();
    if title.is_empty() {
        title = "A question from the agent".into();
    }
    let mut summary = q.question.trim().to_owned();
    if !q.options.is_empty() {
        summary.push_str("\n\nChoices: ");
        let listed: Vec<String> = q
            .options
            .iter()
            .map(|o| format!("{} ({})", o.label, o.key))
            .collect();
        summary.push_str(&listed.join(", "));
    }
    if let Some(d) = &q.default {
        summary.push_str(&format!("\nUntil you answer, the run assumes: {d}."));
    }
    let actions = if q.options.is_empty() {
        vec![DraftAction {
            key: "feedback".into(),
            label: "Answer (your comment goes to the next run)".into(),
        }]
    } else {
        q.options
            .iter()
            .take(ACTIONS)
            .map(|o| DraftAction {
                key: o.key.clone(),
                label: o.label.clone(),
            })
            .collect()
    };
    BriefDraft {
        kind: DraftKind::Decision,
        priority: DraftPriority::Urgent,
        title,
        summary,
        actions,
    }
}

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
        // Raising a brief is a side effect: a re-run step must not raise it twice.
        if self.briefs.is_some() {
            Effect::AtMostOnce
        } else {
            Effect::Pure
        }
    }

    fn call<'a>(
        &'a self,
        cx: &'a ToolContext,
        _api: &'a str,
        args: serde_json::Value,
    ) -> BoxFuture<'a, Result<ToolOutput, PortError>> {
        async move {
            let question = tool_args!("ask_user/ask", args, Question);
            let Some(sink) = self.briefs.as_ref().filter(|_| cx.question_briefs) else {
                return Ok(ToolOutput::ok(
                    question.unanswered("no person is available in this run"),
                ));
            };
            let text = match sink.raise(cx, draft(&question)).await {
                Ok(id) => format!(
                    "{} The question was sent to them as an urgent decision brief ({id}); their answer reaches a later run of this task. Say in your answer what waits on their decision.",
                    question.unanswered("no person is available in this run")
                ),
                Err(e) => question.unanswered(&format!(
                    "no person is available in this run, and the question could not be sent to them: {e}"
                )),
            };
            Ok(ToolOutput::ok(text))
        }
        .boxed()
    }
}
