//! Documents an agent keeps across operations: memories about the user and notes (the agent's
//! notebook). Each belongs to a scope (a user and an agent), so agents do not read each other's.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What a document is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentKind {
    /// A fact about the user, injected into later conversations when relevant.
    Memory,
    /// A note in the agent's notebook.
    Note,
}

impl DocumentKind {
    /// Stable name (stored).
    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Memory => "memory",
            DocumentKind::Note => "note",
        }
    }
}

/// One stored document.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// Memory or note.
    pub kind: DocumentKind,
    /// Owner: `user:<id>/agent:<id>`.
    pub scope: String,
    /// Id within the scope.
    pub id: String,
    /// Title (notes; empty for memories).
    pub title: String,
    /// The text.
    pub body: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// Words too common to say what a query is about.
const STOPWORDS: &[&str] = &[
    "about", "all", "and", "any", "are", "but", "can", "could", "did", "does", "for", "from",
    "had", "has", "have", "how", "into", "its", "not", "our", "out", "please", "should", "that",
    "the", "their", "them", "then", "there", "these", "this", "was", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
];

/// Documents ranked by how many of the query's words (three letters or more, any case, common
/// words ignored) they contain, best first, then newest; documents sharing no word are left
/// out. A query without such words keeps every document, newest first.
pub fn rank_by_keywords(docs: Vec<Document>, query: &str, limit: usize) -> Vec<Document> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect();
    let mut scored: Vec<(usize, Document)> = docs
        .into_iter()
        .map(|d| {
            let hay = format!("{} {}", d.title, d.body).to_lowercase();
            (words.iter().filter(|w| hay.contains(w.as_str())).count(), d)
        })
        .filter(|(score, _)| words.is_empty() || *score > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.updated_at.cmp(&a.1.updated_at)));
    scored.into_iter().take(limit).map(|(_, d)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(id: &str, body: &str, minute: u32) -> Document {
        let t = DateTime::<Utc>::UNIX_EPOCH + chrono::Duration::minutes(i64::from(minute));
        Document {
            kind: DocumentKind::Memory,
            scope: "s".into(),
            id: id.into(),
            title: String::new(),
            body: body.into(),
            created_at: t,
            updated_at: t,
        }
    }

    #[test]
    fn ranks_by_shared_words_then_recency() {
        let docs = vec![
            doc("a", "Prefers metric units", 1),
            doc("b", "Lives in Lyon, prefers trains", 2),
            doc("c", "Allergic to peanuts", 3),
        ];
        let ids = |v: Vec<Document>| v.into_iter().map(|d| d.id).collect::<Vec<_>>();
        assert_eq!(
            ids(rank_by_keywords(docs.clone(), "Which TRAINS from Lyon?", 5)),
            ["b"]
        );
        assert_eq!(
            ids(rank_by_keywords(docs.clone(), "units and trains", 5)),
            ["b", "a"]
        );
        assert_eq!(ids(rank_by_keywords(docs.clone(), "", 2)), ["c", "b"]);
        assert!(rank_by_keywords(docs, "xyz", 5).is_empty());
    }
}
