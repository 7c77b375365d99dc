//! How an external agent's facts group into steps: a step is one model turn (its reasoning,
//! text and tool calls) and the results of those calls. A step closes when the CLI starts a
//! new turn, reports the usage of the turn, or when output follows tool results; the run's
//! session, model, totals, final answer and failure are kept for its end.

use super::Observed;
use rein_core::Usd;
use rein_core::usage::TokenUsage;
use std::collections::HashSet;

/// One tool call an external agent made, with its outcome once reported.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedCall {
    /// Its id in the stream.
    pub id: String,
    /// The tool, as the agent names it.
    pub name: String,
    /// Its arguments.
    pub arguments: serde_json::Value,
    /// What it returned and whether it failed (`None`: no result was reported).
    pub outcome: Option<(String, bool)>,
}

/// One model turn and the calls it made.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObservedStep {
    /// Answer text.
    pub text: String,
    /// Reasoning text.
    pub reasoning: String,
    /// Tool calls, in order.
    pub calls: Vec<ObservedCall>,
    /// Tokens the turn used.
    pub tokens: TokenUsage,
    /// What it cost, when the CLI said.
    pub cost: Option<Usd>,
}

impl ObservedStep {
    fn is_empty(&self) -> bool {
        self.text.is_empty()
            && self.reasoning.is_empty()
            && self.calls.is_empty()
            && self.tokens == TokenUsage::default()
            && self.cost.is_none()
    }

    fn has_results(&self) -> bool {
        self.calls.iter().any(|c| c.outcome.is_some())
    }
}

/// The facts of one run so far.
#[derive(Debug, Default)]
pub struct Transcript {
    open: ObservedStep,
    calls: HashSet<String>,
    /// The session id, once reported.
    pub session: Option<String>,
    /// The model, once reported.
    pub model: Option<String>,
    /// The totals the CLI reported at its end.
    pub totals: (Option<TokenUsage>, Option<Usd>),
    /// The final answer it repeated at its end.
    pub result: Option<String>,
    /// What it said when it failed.
    pub failure: Option<String>,
    /// Whether any step had answer text.
    pub answered: bool,
}

impl Transcript {
    /// Take in one fact; a step it closes is returned (to be recorded).
    pub fn push(&mut self, o: Observed) -> Option<ObservedStep> {
        let mut closed = None;
        let output = matches!(
            o,
            Observed::Text(_) | Observed::Reasoning(_) | Observed::ToolCall { .. }
        );
        if matches!(o, Observed::Turn) || (output && self.open.has_results()) {
            closed = self.close();
        }
        match o {
            Observed::Session(id) if !id.is_empty() => self.session = Some(id),
            Observed::Model(m) if !m.is_empty() => self.model = Some(m),
            Observed::Text(t) if !t.is_empty() => {
                if !self.open.text.is_empty() {
                    self.open.text.push_str("\n\n");
                }
                self.open.text.push_str(&t);
                self.answered = true;
            }
            Observed::Reasoning(t) if !t.is_empty() => {
                if !self.open.reasoning.is_empty() {
                    self.open.reasoning.push('\n');
                }
                self.open.reasoning.push_str(&t);
            }
            Observed::ToolCall {
                id,
                name,
                arguments,
            } => {
                // A call announced twice (started, then completed) is one call.
                if self.calls.insert(id.clone()) {
                    self.open.calls.push(ObservedCall {
                        id,
                        name,
                        arguments,
                        outcome: None,
                    });
                }
            }
            Observed::ToolResult {
                id,
                content,
                is_error,
            } => {
                if let Some(call) = self.open.calls.iter_mut().find(|c| c.id == id) {
                    call.outcome = Some((content, is_error));
                }
            }
            Observed::Usage { tokens, cost } => {
                self.open.tokens.add(&tokens);
                if let Some(c) = cost {
                    self.open.cost = Some(self.open.cost.unwrap_or_default() + c);
                }
                // A turn's usage is reported as it ends.
                return closed.or_else(|| self.close());
            }
            Observed::Totals { tokens, cost } => self.totals = (tokens, cost),
            Observed::Result(t) => self.result = Some(t),
            Observed::Failed(m) => self.failure = Some(m),
            Observed::Session(_)
            | Observed::Model(_)
            | Observed::Text(_)
            | Observed::Reasoning(_) => {}
            Observed::Turn => {}
        }
        closed
    }

    /// Whether a step has begun and not closed.
    pub fn has_open(&self) -> bool {
        !self.open.is_empty()
    }

    /// The open step, closed (none when nothing was said since the last one).
    pub fn close(&mut self) -> Option<ObservedStep> {
        let step = std::mem::take(&mut self.open);
        (!step.is_empty()).then_some(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str) -> Observed {
        Observed::ToolCall {
            id: id.into(),
            name: "shell".into(),
            arguments: json!({}),
        }
    }

    fn result(id: &str) -> Observed {
        Observed::ToolResult {
            id: id.into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    #[test]
    fn output_after_results_starts_a_step_and_repeated_calls_count_once() {
        let mut t = Transcript::default();
        assert_eq!(t.push(Observed::Text("looking".into())), None);
        assert_eq!(t.push(call("a")), None);
        assert_eq!(t.push(call("a")), None);
        assert_eq!(t.push(result("a")), None);
        let first = t.push(Observed::Text("done".into())).unwrap_or_default();
        assert_eq!(first.text, "looking");
        assert_eq!(first.calls.len(), 1);
        assert_eq!(first.calls[0].outcome, Some(("ok".into(), false)));
        // An explicit turn closes a step without results too.
        let second = t.push(Observed::Turn).unwrap_or_default();
        assert_eq!(second.text, "done");
        assert!(t.push(Observed::Turn).is_none(), "an empty step is not one");
        assert!(t.close().is_none());
    }
}
