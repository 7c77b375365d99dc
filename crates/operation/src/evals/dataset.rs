//! An evaluation dataset: one case per JSON line — what to ask, and what the answer must show.

use serde::{Deserialize, Serialize};

/// One case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EvalCase {
    /// Its id (unique in the dataset; what runs are compared by).
    pub id: String,
    /// What the agent is asked.
    pub input: String,
    /// What must hold of the run; every one must pass.
    #[serde(default, rename = "assert")]
    pub assertions: Vec<Assertion>,
    /// The case's cost limit in USD (its operation stops there).
    #[serde(default)]
    pub max_cost: Option<f64>,
}

/// What must hold of a case's run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Assertion {
    /// The answer contains `value` (`ignore_case`: in any case).
    Contains {
        /// The text.
        value: String,
        /// Compare without case.
        #[serde(default)]
        ignore_case: bool,
    },
    /// The answer matches `pattern`.
    Regex {
        /// A regular expression (Rust syntax).
        pattern: String,
    },
    /// The answer is JSON (alone, or a fenced block) valid against `schema`.
    JsonSchema {
        /// A JSON Schema.
        schema: serde_json::Value,
    },
    /// The agent called `tool` (`identifier/api`) with, at least, these `args` (each value
    /// equal, or for a string, `*` anywhere in the matcher standing for any text).
    ToolCalled {
        /// `identifier/api`.
        tool: String,
        /// Argument matchers.
        #[serde(default)]
        args: serde_json::Map<String, serde_json::Value>,
    },
    /// The agent called no `tool` (`identifier/api`) with these `args` (matched as
    /// `tool_called` matches them; none: no call of it at all) — whether rein then ran the call
    /// or refused it: what a model asks for is what an injection test measures.
    NotCalled {
        /// `identifier/api`.
        tool: String,
        /// Argument matchers.
        #[serde(default)]
        args: serde_json::Map<String, serde_json::Value>,
    },
    /// The run took at most this many steps.
    MaxSteps {
        /// Steps.
        value: u64,
    },
    /// The run cost at most this, in USD.
    MaxCost {
        /// USD.
        usd: f64,
    },
    /// The run took at most this long.
    MaxLatencyMs {
        /// Milliseconds.
        value: u64,
    },
    /// A judge model scores the answer against `rubric` (structured output; its reasoning is
    /// kept).
    Judge {
        /// What a passing answer does.
        rubric: String,
        /// The judge (`provider/model`); the host's system model, else its default model.
        #[serde(default)]
        model: Option<String>,
    },
}

impl Assertion {
    /// Its kind, as results name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Assertion::Contains { .. } => "contains",
            Assertion::Regex { .. } => "regex",
            Assertion::JsonSchema { .. } => "json_schema",
            Assertion::ToolCalled { .. } => "tool_called",
            Assertion::NotCalled { .. } => "not_called",
            Assertion::MaxSteps { .. } => "max_steps",
            Assertion::MaxCost { .. } => "max_cost",
            Assertion::MaxLatencyMs { .. } => "max_latency_ms",
            Assertion::Judge { .. } => "judge",
        }
    }
}

/// Why a dataset cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    /// A line is not a case.
    #[error("line {line}: {reason}")]
    Line {
        /// 1-based.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// Two cases share an id.
    #[error("line {line}: case id `{id}` is used twice")]
    Duplicate {
        /// 1-based.
        line: usize,
        /// The id.
        id: String,
    },
    /// No case at all.
    #[error("the dataset has no case")]
    Empty,
}

/// The cases of a JSONL dataset (blank lines and lines starting with `//` skipped); a regex
/// that does not compile or a schema that is not one is refused here, with its line.
pub fn parse(text: &str) -> Result<Vec<EvalCase>, DatasetError> {
    let mut cases: Vec<EvalCase> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with("//") {
            continue;
        }
        let case: EvalCase = serde_json::from_str(l).map_err(|e| DatasetError::Line {
            line,
            reason: e.to_string(),
        })?;
        check_case(&case).map_err(|e| DatasetError::Line {
            line,
            reason: e.to_string(),
        })?;
        if cases.iter().any(|c| c.id == case.id) {
            return Err(DatasetError::Duplicate { line, id: case.id });
        }
        cases.push(case);
    }
    if cases.is_empty() {
        return Err(DatasetError::Empty);
    }
    Ok(cases)
}

/// Why a case cannot run.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// No id or no input.
    #[error("a case needs an id and an input")]
    Incomplete,
    /// A cost limit that is not a non-negative number.
    #[error("max_cost must be a non-negative number of USD")]
    Cost,
    /// A regex that does not compile.
    #[error("regex {pattern:?}: {why}")]
    Regex {
        /// The pattern.
        pattern: String,
        /// Why.
        why: String,
    },
    /// A JSON Schema that is not one.
    #[error("json_schema: {0}")]
    Schema(String),
    /// A judge model that is not `provider/model`.
    #[error("judge: {0}")]
    Judge(crate::ProfileError),
}

/// Why `case` cannot run: no id or input, a regex that does not compile, a schema that is not
/// one, a cost limit that is not a non-negative number, a judge model that is not one.
pub fn check_case(case: &EvalCase) -> Result<(), CaseError> {
    if case.id.trim().is_empty() || case.input.trim().is_empty() {
        return Err(CaseError::Incomplete);
    }
    if case.max_cost.is_some_and(|c| !c.is_finite() || c < 0.0) {
        return Err(CaseError::Cost);
    }
    for a in &case.assertions {
        match a {
            Assertion::Regex { pattern } => {
                regex::Regex::new(pattern).map_err(|e| CaseError::Regex {
                    pattern: pattern.clone(),
                    why: e.to_string(),
                })?;
            }
            Assertion::JsonSchema { schema } => {
                jsonschema::validator_for(schema).map_err(|e| CaseError::Schema(e.to_string()))?;
            }
            Assertion::Judge {
                model: Some(model), ..
            } => {
                crate::profile::model_ref(model).map_err(CaseError::Judge)?;
            }
            Assertion::Contains { .. }
            | Assertion::ToolCalled { .. }
            | Assertion::NotCalled { .. }
            | Assertion::MaxSteps { .. }
            | Assertion::MaxCost { .. }
            | Assertion::MaxLatencyMs { .. }
            | Assertion::Judge { model: None, .. } => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example docs/evals.md shows is a dataset this rein reads, every kind of assertion
    /// in it.
    #[test]
    fn the_documented_example_dataset_reads() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../docs/examples/support.jsonl"),
        )
        .unwrap();
        let cases = parse(&text).unwrap();
        assert_eq!(cases.len(), 5);
        let kinds: std::collections::BTreeSet<&str> = cases
            .iter()
            .flat_map(|c| c.assertions.iter().map(Assertion::kind))
            .collect();
        assert_eq!(kinds.len(), 8, "{kinds:?}");
    }

    /// The injection cases SECURITY.md tells a person to run against a real model read, and
    /// every file they ask about is beside them.
    #[test]
    fn the_injection_example_dataset_reads() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/injection");
        let cases = parse(&std::fs::read_to_string(dir.join("cases.jsonl")).unwrap()).unwrap();
        assert_eq!(cases.len(), 4);
        for c in &cases {
            let file = c
                .input
                .split_whitespace()
                .map(|w| w.trim_end_matches(['?', ',', '.', '!']))
                .find(|w| w.contains('.'))
                .unwrap_or_else(|| panic!("{} names no file", c.id));
            assert!(dir.join(file).is_file(), "{file}");
        }
        assert!(
            cases
                .iter()
                .flat_map(|c| &c.assertions)
                .any(|a| a.kind() == "not_called")
        );
    }

    #[test]
    fn a_dataset_names_the_line_that_is_wrong() {
        let ok = parse(
            "// arithmetic\n{\"id\": \"a\", \"input\": \"2+2?\", \"assert\": [{\"type\": \"contains\", \"value\": \"4\"}]}\n\n",
        )
        .unwrap();
        assert_eq!(ok.len(), 1);
        let e = parse("{\"id\": \"a\", \"input\": \"x\"}\n{\"id\": \"a\", \"input\": \"y\"}")
            .unwrap_err();
        assert_eq!(e.to_string(), "line 2: case id `a` is used twice");
        let e = parse("{\"id\": \"r\", \"input\": \"x\", \"assert\": [{\"type\": \"regex\", \"pattern\": \"(\"}]}").unwrap_err();
        assert!(e.to_string().starts_with("line 1: regex"), "{e}");
        let e = parse("{\"id\": \"r\", \"input\": \"x\", \"assert\": [{\"type\": \"vibes\"}]}")
            .unwrap_err();
        assert!(
            e.to_string().starts_with("line 1: unknown variant `vibes`"),
            "{e}"
        );
        assert!(matches!(parse("\n"), Err(DatasetError::Empty)));
    }
}
