//! Questions an agent asks a person: the `ask_user` tool's arguments ([`Question`]), the
//! answers a person gives ([`Answer`]), and the text each becomes as the call's result.
//!
//! A question is a tool call, not a separate kind of request: in a run with a human it parks
//! like a call waiting for approval (whatever the approval mode, since nothing else can answer
//! it), so it shares the one decision path (single-use interventions, sub-agent trees, expiry,
//! the terminal prompt, the API, the web UI); answering writes the call's result and the
//! model continues. In a headless run the tool runs and says that no person is available.

use crate::message::ToolCall;
use serde::{Deserialize, Serialize};

/// The question tool's identifier.
pub const ASK_USER: &str = "ask_user";
/// Its one API.
pub const ASK_API: &str = "ask";

/// What the model asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question, as the person will read it
    #[cfg_attr(feature = "schemars", schemars(length(min = 1, max = 4000)))]
    pub question: String,
    /// Choices, when the answer must be one of them (otherwise the person answers in free text)
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "schemars", schemars(length(max = 20)))]
    pub options: Vec<QuestionOption>,
    /// The answer taken when nobody answers (a headless run, or the question expired): an
    /// option's key when there are options
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(length(max = 4000)))]
    pub default: Option<String>,
    /// How long the question stays open, in seconds
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schemars", schemars(range(min = 1, max = 2_592_000)))]
    pub expires_in_secs: Option<u64>,
}

/// One choice of a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// What the answer names (`yes`, `plan-b`)
    #[cfg_attr(feature = "schemars", schemars(length(min = 1, max = 100)))]
    pub key: String,
    /// What the person reads
    #[cfg_attr(feature = "schemars", schemars(length(min = 1, max = 500)))]
    pub label: String,
}

/// A person's answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Free text (also accepted for a question with options, when it names one of them).
    Text(String),
    /// The key of one of the question's options.
    Option(String),
}

/// Why an answer does not fit its question.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The key names none of the options.
    #[error("`{given}` is not one of the options: {}", keys.join(", "))]
    UnknownOption {
        /// What was given.
        given: String,
        /// The keys there are.
        keys: Vec<String>,
    },
    /// An option was chosen for a free-text question.
    #[error("the question has no options; answer it with text")]
    NoOptions,
    /// An empty answer.
    #[error("the answer is empty")]
    Empty,
}

impl Question {
    /// The question a call asks: `None` when the call is not `ask_user`, an error when its
    /// arguments do not fit.
    pub fn of_call(call: &ToolCall) -> Option<Result<Question, serde_json::Error>> {
        (&*call.identifier == ASK_USER).then(|| serde_json::from_str(&call.arguments))
    }

    /// The option an answer names, or the free text it is.
    fn resolve(&self, answer: &Answer) -> Result<Resolved<'_>, AnswerError> {
        let (text, must_be_option) = match answer {
            Answer::Text(t) => (t.trim(), false),
            Answer::Option(k) => (k.trim(), true),
        };
        if text.is_empty() {
            return Err(AnswerError::Empty);
        }
        if self.options.is_empty() {
            return if must_be_option {
                Err(AnswerError::NoOptions)
            } else {
                Ok(Resolved::Text(text.to_owned()))
            };
        }
        self.options
            .iter()
            .find(|o| o.key == text || (!must_be_option && o.label.eq_ignore_ascii_case(text)))
            .map(Resolved::Option)
            .ok_or_else(|| AnswerError::UnknownOption {
                given: text.to_owned(),
                keys: self.options.iter().map(|o| o.key.clone()).collect(),
            })
    }

    /// The call's result for `answer`, after checking it fits (an option's key, or free text).
    pub fn answered(&self, answer: &Answer) -> Result<String, AnswerError> {
        Ok(match self.resolve(answer)? {
            Resolved::Option(o) => format!("The user chose `{}` ({}).", o.key, o.label),
            Resolved::Text(t) => format!("The user answered: {t}"),
        })
    }

    /// The call's result when nobody answers (`why`: "no person is available in this run",
    /// "the question expired at …"): the default when there is one that fits.
    pub fn unanswered(&self, why: &str) -> String {
        let default = self
            .default
            .as_ref()
            .and_then(|d| self.resolve(&Answer::Text(d.clone())).ok());
        match default {
            Some(Resolved::Option(o)) => format!(
                "Nobody answered ({why}); the default `{}` ({}) applies.",
                o.key, o.label
            ),
            Some(Resolved::Text(t)) => format!("Nobody answered ({why}); the default applies: {t}"),
            None => format!(
                "Nobody answered ({why}). Continue with your best judgement and say which assumption you made."
            ),
        }
    }
}

enum Resolved<'a> {
    Option(&'a QuestionOption),
    Text(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice() -> Question {
        Question {
            question: "Deploy now?".into(),
            options: vec![
                QuestionOption {
                    key: "yes".into(),
                    label: "Deploy".into(),
                },
                QuestionOption {
                    key: "no".into(),
                    label: "Wait".into(),
                },
            ],
            default: Some("no".into()),
            expires_in_secs: None,
        }
    }

    #[test]
    fn an_answer_must_fit_its_question() {
        let q = choice();
        assert_eq!(
            q.answered(&Answer::Option("yes".into())).unwrap(),
            "The user chose `yes` (Deploy)."
        );
        // Text naming an option's key or label is that option.
        assert_eq!(
            q.answered(&Answer::Text("wait".into())).unwrap(),
            "The user chose `no` (Wait)."
        );
        assert_eq!(
            q.answered(&Answer::Option("maybe".into())),
            Err(AnswerError::UnknownOption {
                given: "maybe".into(),
                keys: vec!["yes".into(), "no".into()]
            })
        );
        // A label is not a key.
        assert!(q.answered(&Answer::Option("Deploy".into())).is_err());
        assert_eq!(
            q.answered(&Answer::Text("  ".into())),
            Err(AnswerError::Empty)
        );

        let free = Question {
            options: Vec::new(),
            default: None,
            ..choice()
        };
        assert_eq!(
            free.answered(&Answer::Text(" Friday ".into())).unwrap(),
            "The user answered: Friday"
        );
        assert_eq!(
            free.answered(&Answer::Option("yes".into())),
            Err(AnswerError::NoOptions)
        );
    }

    #[test]
    fn nobody_answering_takes_the_default_only_when_it_fits() {
        assert_eq!(
            choice().unanswered("no person is available in this run"),
            "Nobody answered (no person is available in this run); the default `no` (Wait) applies."
        );
        let bad_default = Question {
            default: Some("later".into()),
            ..choice()
        };
        assert!(bad_default.unanswered("x").contains("best judgement"));
        let free = Question {
            options: Vec::new(),
            default: Some("Friday".into()),
            ..choice()
        };
        assert_eq!(
            free.unanswered("the question expired"),
            "Nobody answered (the question expired); the default applies: Friday"
        );
    }

    #[test]
    fn only_ask_user_calls_are_questions() {
        let call =
            |identifier: &str, arguments: &str| ToolCall::new("c1", identifier, ASK_API, arguments);
        assert!(Question::of_call(&call("shell", "{}")).is_none());
        let q = Question::of_call(&call(ASK_USER, r#"{"question":"Which?"}"#))
            .unwrap()
            .unwrap();
        assert_eq!(q.question, "Which?");
        assert!(
            Question::of_call(&call(ASK_USER, r#"{"prompt":"x"}"#))
                .unwrap()
                .is_err()
        );
    }
}
