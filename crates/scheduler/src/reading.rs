//! A run read by the system model when it ends: its handoff (title, summary, key findings,
//! next action) and whether its output needs a person (the judge the brief rules leave to a
//! model), in one call with a JSON schema. Without a system model, or when it fails or answers
//! something that does not fit, the handoff is extracted from the answer and the brief follows
//! the rules ([`crate::briefing`]); a reading never blocks a run's end.

use crate::dispatcher::Launcher;
use crate::task::Task;
use rein_store::{BriefKind, BriefPriority, Handoff};
use serde_json::{Value, json};

/// What the system model is told.
pub const READ_INSTRUCTIONS: &str = "You read the final answer of one run of a recurring task and write two things as JSON. `handoff`: what the next run of the task needs to build on this one: a one-line `title`, a `summary` of what was done and found (two to four sentences), up to five `key_findings` (short, concrete: numbers, names, decisions), and the `next_action` the next run should take first (null if none). `attention`: whether a person needs to read this run's output: `needed` false when it is routine or says nothing new; otherwise the `kind` (`result`: an outcome to look at; `insight`: something worth knowing; `decision`: something only a person can decide), the `priority` (`urgent` only when it cannot wait; `normal`; `info`), a short `title` and a `summary` a person can act on. Use only what the answer says.";

/// Findings a handoff keeps.
const FINDINGS: usize = 5;
/// The longest title kept.
const TITLE_CHARS: usize = 120;
/// How much of a run's answer the system model reads.
const ANSWER_CHARS: usize = 24_000;

/// What the system model read from a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReading {
    /// The handoff it wrote (`written_by: "model"`).
    pub handoff: Handoff,
    /// Whether a person needs to read the run's output, and how: `None` when not.
    pub attention: Option<Attention>,
}

/// A brief the system model asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attention {
    /// Result, insight or decision (never error: failed runs follow the rules).
    pub kind: BriefKind,
    /// How much it asks for attention.
    pub priority: BriefPriority,
    /// One line.
    pub title: String,
    /// What a person needs to know to act.
    pub summary: String,
}

/// The JSON schema of the answer (strict: every field required, nothing else).
pub fn schema() -> Value {
    let text = json!({"type": "string"});
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["handoff", "attention"],
        "properties": {
            "handoff": {
                "type": "object",
                "additionalProperties": false,
                "required": ["title", "summary", "key_findings", "next_action"],
                "properties": {
                    "title": text,
                    "summary": text,
                    "key_findings": {"type": "array", "items": text},
                    "next_action": {"type": ["string", "null"]}
                }
            },
            "attention": {
                "type": "object",
                "additionalProperties": false,
                "required": ["needed", "kind", "priority", "title", "summary"],
                "properties": {
                    "needed": {"type": "boolean"},
                    "kind": {"type": "string", "enum": ["result", "insight", "decision"]},
                    "priority": {"type": "string", "enum": ["urgent", "normal", "info"]},
                    "title": text,
                    "summary": text
                }
            }
        }
    })
}

/// What the system model reads: the task, how the run ended, its answer.
pub fn input(task: &Task, outcome: &str, answer: &str) -> String {
    let answer: String = answer.chars().take(ANSWER_CHARS).collect();
    format!(
        "Task: {}\nInstruction: {}\nThe run ended: {outcome}\n\n<answer>\n{answer}\n</answer>",
        task.title, task.instruction
    )
}

/// What in the system model's reading does not fit its schema, naming the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadingError {
    /// A required text is absent or only blanks.
    #[error("`{0}` is missing or blank")]
    Blank(&'static str),
    /// `handoff.key_findings` is not an array.
    #[error("`handoff.key_findings` is not a list")]
    FindingsNotAList,
    /// `attention.needed` is not a boolean.
    #[error("`attention.needed` is not true or false")]
    NeededNotABoolean,
    /// `attention.kind` is not one of the brief kinds.
    #[error("`attention.kind` {0:?} is not result, insight or decision")]
    Kind(Option<String>),
    /// `attention.priority` is not one of the priorities.
    #[error("`attention.priority` {0:?} is not urgent, normal or info")]
    Priority(Option<String>),
}

fn line(v: &Value, what: &'static str) -> Result<String, ReadingError> {
    let s = v
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or(ReadingError::Blank(what))?;
    Ok(s.chars().take(TITLE_CHARS).collect())
}

fn text(v: &Value, what: &'static str) -> Result<String, ReadingError> {
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .ok_or(ReadingError::Blank(what))
}

/// The reading of run `run` in the model's answer `v`; what does not fit the schema is an
/// error naming the field.
pub fn parse(run: &str, v: &Value) -> Result<RunReading, ReadingError> {
    let h = &v["handoff"];
    let handoff = Handoff {
        run: run.to_owned(),
        title: line(&h["title"], "handoff.title")?,
        summary: text(&h["summary"], "handoff.summary")?,
        findings: h["key_findings"]
            .as_array()
            .ok_or(ReadingError::FindingsNotAList)?
            .iter()
            .filter_map(|f| f.as_str().map(str::trim).filter(|f| !f.is_empty()))
            .take(FINDINGS)
            .map(str::to_owned)
            .collect(),
        next_action: h["next_action"]
            .as_str()
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned),
        written_by: "model".into(),
    };
    let a = &v["attention"];
    let attention = match a["needed"].as_bool() {
        None => return Err(ReadingError::NeededNotABoolean),
        Some(false) => None,
        Some(true) => Some(Attention {
            kind: match a["kind"].as_str() {
                Some("result") => BriefKind::Result,
                Some("insight") => BriefKind::Insight,
                Some("decision") => BriefKind::Decision,
                other => return Err(ReadingError::Kind(other.map(str::to_owned))),
            },
            priority: match a["priority"].as_str() {
                Some("urgent") => BriefPriority::Urgent,
                Some("normal") => BriefPriority::Normal,
                Some("info") => BriefPriority::Info,
                other => return Err(ReadingError::Priority(other.map(str::to_owned))),
            },
            title: line(&a["title"], "attention.title")?,
            summary: text(&a["summary"], "attention.summary")?,
        }),
    };
    Ok(RunReading { handoff, attention })
}

/// Read run `run` of `task`, which ended with `outcome` and answered `answer`, with the
/// launcher's system model; `None` without one, or when it fails or does not fit (logged).
pub async fn read(
    launcher: &dyn Launcher,
    task: &Task,
    run: &str,
    outcome: &str,
    answer: &str,
) -> Option<RunReading> {
    let asked = launcher
        .read_run(READ_INSTRUCTIONS, input(task, outcome, answer), schema())
        .await;
    match asked {
        Ok(None) => None,
        Ok(Some(v)) => match parse(run, &v) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(run, error = %e, "the system model's reading does not fit; rules and an extracted handoff instead");
                None
            }
        },
        Err(e) => {
            tracing::warn!(run, error = %e, "the system model could not read the run; rules and an extracted handoff instead");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_that_fits_is_taken_and_one_that_does_not_names_the_field() {
        let good = json!({
            "handoff": {"title": " Queue checked ", "summary": "Two jobs stuck.", "key_findings": ["job 7 stuck", "", "job 9 stuck"], "next_action": "Restart job 7"},
            "attention": {"needed": true, "kind": "decision", "priority": "urgent", "title": "Restart job 7?", "summary": "It has been stuck for an hour."}
        });
        let r = parse("op1", &good).unwrap();
        assert_eq!(r.handoff.title, "Queue checked");
        assert_eq!(r.handoff.findings, ["job 7 stuck", "job 9 stuck"]);
        assert_eq!(r.handoff.next_action.as_deref(), Some("Restart job 7"));
        assert_eq!(r.handoff.written_by, "model");
        let a = r.attention.unwrap();
        assert_eq!(
            (a.kind, a.priority),
            (BriefKind::Decision, BriefPriority::Urgent)
        );

        let mut quiet = good.clone();
        quiet["attention"]["needed"] = json!(false);
        assert_eq!(parse("op1", &quiet).unwrap().attention, None);
        let mut bad = good.clone();
        bad["attention"]["kind"] = json!("error");
        assert_eq!(
            parse("op1", &bad).unwrap_err(),
            ReadingError::Kind(Some("error".into()))
        );
        assert!(
            parse("op1", &bad)
                .unwrap_err()
                .to_string()
                .contains("attention.kind")
        );
        let mut blank = good;
        blank["handoff"]["summary"] = json!("  ");
        assert_eq!(
            parse("op1", &blank).unwrap_err(),
            ReadingError::Blank("handoff.summary")
        );
        assert!(parse("op1", &json!({})).is_err());
    }
}
