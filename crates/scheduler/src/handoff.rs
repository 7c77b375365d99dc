//! Handoffs: what a task's run hands to the next run, so recurring work builds on itself. A
//! handoff is written when the run ends, from its answer (`extractive`: the summary is the
//! answer's opening, the findings its list items or else its first sentences, the next action
//! the sentence that says what comes next); it is kept on the run and on the task, whose next
//! run gets the last [`HANDOFFS_KEPT`] in its prompt.

use crate::brief::brief_of;
use crate::task::Task;
use rein_store::Handoff;

/// Handoffs a task keeps for its next runs' prompts.
pub const HANDOFFS_KEPT: usize = 3;
/// Findings a handoff keeps.
const FINDINGS: usize = 5;

/// A line's text when it is a list item (`-`, `*`, `•` or `1.`), without its marker.
fn item(line: &str) -> Option<&str> {
    let l = line.trim();
    let rest = l
        .strip_prefix("- ")
        .or_else(|| l.strip_prefix("* "))
        .or_else(|| l.strip_prefix("• "))
        .or_else(|| {
            let digits = l.find(|c: char| !c.is_ascii_digit())?;
            (digits > 0).then(|| l[digits..].strip_prefix(". "))?
        })?
        .trim();
    (!rest.is_empty()).then_some(rest)
}

/// The list items of `answer`, and its other lines (its prose) joined.
fn split(answer: &str) -> (Vec<String>, String) {
    let mut items = Vec::new();
    let mut prose = Vec::new();
    for line in answer.lines() {
        match item(line) {
            Some(i) => items.push(i.to_owned()),
            None => prose.push(line),
        }
    }
    (items, prose.join("\n"))
}

/// The sentences of `text` (split after `.`, `!` or `?` followed by a space or the end).
fn sentences(text: &str) -> Vec<String> {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = flat.as_bytes();
    for (i, c) in flat.char_indices() {
        if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_none_or(|b| *b == b' ') {
            let s = flat[start..=i].trim();
            if !s.is_empty() {
                out.push(s.to_owned());
            }
            start = i + 1;
        }
    }
    let rest = flat[start..].trim();
    if !rest.is_empty() {
        out.push(rest.to_owned());
    }
    out
}

/// The handoff of run `run` of `task` that answered `answer` (extractive).
pub fn extract(task: &Task, run: &str, answer: &str) -> Handoff {
    let (listed, prose) = split(answer);
    let said = sentences(&prose);
    let findings: Vec<String> = if listed.is_empty() {
        said.iter().take(3).cloned().collect()
    } else {
        listed.into_iter().take(FINDINGS).collect()
    };
    let next_action = said
        .iter()
        .find(|s| {
            let l = s.to_lowercase();
            l.starts_with("next")
                || l.contains("next run")
                || l.contains("next time")
                || l.contains("next step")
        })
        .cloned();
    Handoff {
        run: run.to_owned(),
        title: format!("{}: run {}", task.title, &run[..run.len().min(8)]),
        summary: brief_of(if prose.trim().is_empty() {
            answer
        } else {
            &prose
        }),
        findings,
        next_action,
        written_by: "extractive".into(),
    }
}

/// Keep `h` among the task's handoffs (once per run; the last [`HANDOFFS_KEPT`]).
pub fn keep(task: &mut Task, h: &Handoff) -> bool {
    if task.handoffs.iter().any(|k| k.run == h.run) {
        return false;
    }
    task.handoffs.push(h.clone());
    let extra = task.handoffs.len().saturating_sub(HANDOFFS_KEPT);
    task.handoffs.drain(..extra);
    true
}

/// The handoffs part of a run's prompt (empty without any).
pub fn prompt_part(handoffs: &[Handoff]) -> String {
    if handoffs.is_empty() {
        return String::new();
    }
    let mut p = String::from("\n\nHandoffs from the previous runs (oldest first; build on them):");
    for h in handoffs {
        p.push_str(&format!("\n- {}: {}", h.title, h.summary));
        for f in &h.findings {
            p.push_str(&format!("\n  - {f}"));
        }
        if let Some(n) = &h.next_action {
            p.push_str(&format!("\n  Next: {n}"));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task() -> Task {
        let mut t: Task = serde_json::from_value(
            serde_json::json!({"title": "Queue watch", "instruction": "Check the queue."}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        t.id = "t1".into();
        t
    }

    #[test]
    fn a_handoff_takes_list_items_or_sentences_and_the_next_step() {
        let answer = "Checked the queue.\n\n- 3 jobs stuck in `retry`\n- worker-2 is down\n1. disk at 91%\n\nNext run: check worker-2 first.";
        let h = extract(&task(), "0123456789abcdef", answer);
        assert_eq!(h.title, "Queue watch: run 01234567");
        assert_eq!(
            h.findings,
            ["3 jobs stuck in `retry`", "worker-2 is down", "disk at 91%"]
        );
        assert_eq!(
            h.next_action.as_deref(),
            Some("Next run: check worker-2 first.")
        );
        let prose = extract(
            &task(),
            "r2",
            "All quiet. Nothing new. Still nothing. Fourth.",
        );
        assert_eq!(
            prose.findings,
            ["All quiet.", "Nothing new.", "Still nothing."]
        );
        assert!(prose.next_action.is_none());
    }

    #[test]
    fn a_task_keeps_the_last_three_handoffs_once_each() {
        let mut t = task();
        for r in ["a", "b", "c", "d"] {
            assert!(keep(&mut t, &extract(&task(), r, "Done.")));
        }
        assert!(
            !keep(&mut t, &extract(&task(), "d", "Done.")),
            "once per run"
        );
        let runs: Vec<&str> = t.handoffs.iter().map(|h| h.run.as_str()).collect();
        assert_eq!(runs, ["b", "c", "d"]);
        let p = prompt_part(&t.handoffs);
        assert!(p.starts_with("\n\nHandoffs from the previous runs"), "{p}");
        assert_eq!(p.matches("\n- Queue watch: run ").count(), 3);
    }
}
