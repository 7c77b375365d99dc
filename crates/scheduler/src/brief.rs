//! A run's brief: what a task run produced, short enough for a list of runs (its answer when
//! short, else its opening sentences, marked as cut). The full answer stays in the run's topic.

/// Briefs longer than this are cut (the full answer stays in the run's topic).
pub const BRIEF_CHARS: usize = 280;

/// A run's brief: its answer when short; otherwise its opening sentences up to
/// [`BRIEF_CHARS`], cut at a sentence (or word) boundary and marked as cut.
pub fn brief_of(answer: &str) -> String {
    let text = answer.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= BRIEF_CHARS {
        return text;
    }
    let head: String = text.chars().take(BRIEF_CHARS).collect();
    let cut = head
        .rfind(['.', '!', '?'])
        .map(|i| i + 1)
        .filter(|i| *i >= BRIEF_CHARS / 3)
        .or_else(|| head.rfind(' '))
        .unwrap_or(head.len());
    format!("{} …", head[..cut].trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn briefs_keep_short_answers_and_cut_long_ones_at_a_sentence() {
        assert_eq!(
            brief_of("All quiet.\n\nNothing new."),
            "All quiet. Nothing new."
        );
        let long = format!(
            "First finding is here. {}",
            "More detail follows in this sentence. ".repeat(20)
        );
        let b = brief_of(&long);
        assert!(b.chars().count() <= BRIEF_CHARS + 2, "{b}");
        assert!(b.ends_with(". …"), "{b}");
        let words = "word ".repeat(100);
        assert!(brief_of(&words).ends_with("word …"));
    }
}
