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

/// A document's embedding, with the model that made it: vectors of different models (or
/// dimensions) are never compared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Embedding {
    /// `provider/model` that produced the vector.
    pub model: String,
    /// The vector.
    pub vector: Vec<f32>,
}

impl Embedding {
    /// Cosine similarity in `[-1, 1]`; `None` when the two are not comparable (other model,
    /// other dimension, or a zero vector).
    pub fn cosine(&self, other: &Embedding) -> Option<f32> {
        if self.model != other.model || self.vector.len() != other.vector.len() {
            return None;
        }
        let (mut dot, mut a, mut b) = (0f64, 0f64, 0f64);
        for (x, y) in self.vector.iter().zip(&other.vector) {
            let (x, y) = (f64::from(*x), f64::from(*y));
            dot += x * y;
            a += x * x;
            b += y * y;
        }
        let norm = (a * b).sqrt();
        // Narrowing back to f32 is the precision the vectors had.
        (norm > 0.0).then(|| (dot / norm) as f32)
    }
}

/// One stored document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
    /// The body's embedding, when an embedding model was configured as it was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Embedding>,
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
    let order = keyword_order(&docs, query);
    take_in_order(docs, &order, limit)
}

/// Indices of the documents sharing a query word, best first (see [`rank_by_keywords`]).
fn keyword_order(docs: &[Document], query: &str) -> Vec<usize> {
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .collect();
    let mut scored: Vec<(usize, usize)> = docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let hay = format!("{} {}", d.title, d.body).to_lowercase();
            (i, words.iter().filter(|w| hay.contains(w.as_str())).count())
        })
        .filter(|(_, score)| words.is_empty() || *score > 0)
        .collect();
    scored.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then(docs[b.0].updated_at.cmp(&docs[a.0].updated_at))
    });
    scored.into_iter().map(|(i, _)| i).collect()
}

/// The documents at `order`'s indices, in that order, at most `limit`.
fn take_in_order(docs: Vec<Document>, order: &[usize], limit: usize) -> Vec<Document> {
    let mut slots: Vec<Option<Document>> = docs.into_iter().map(Some).collect();
    order
        .iter()
        .take(limit)
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
        .collect()
}

/// Cosine similarity below which a document is not considered related to a query.
pub const MIN_SIMILARITY: f32 = 0.3;
/// Reciprocal-rank-fusion constant: how much the first places of each ranking dominate.
const RRF_K: f64 = 60.0;

/// Hybrid search: documents ranked by keywords ([`rank_by_keywords`]) and, when `query` has an
/// embedding, by cosine similarity to it (only documents embedded by the same model, at least
/// [`MIN_SIMILARITY`]); the two rankings are fused by reciprocal rank, ties newest first. A
/// memory that shares no word with the query is still found when it means the same thing;
/// documents stored before embeddings were configured are still found by their words.
pub fn rank_hybrid(
    docs: Vec<Document>,
    query: &str,
    query_embedding: Option<&Embedding>,
    limit: usize,
) -> Vec<Document> {
    let Some(q) = query_embedding else {
        return rank_by_keywords(docs, query, limit);
    };
    let mut score = vec![0f64; docs.len()];
    let rrf = |rank: usize| 1.0 / (RRF_K + rank as f64 + 1.0);
    for (rank, i) in keyword_order(&docs, query).into_iter().enumerate() {
        score[i] += rrf(rank);
    }
    let mut by_meaning: Vec<(usize, f32)> = docs
        .iter()
        .enumerate()
        .filter_map(|(i, d)| {
            let sim = d.embedding.as_ref()?.cosine(q)?;
            (sim >= MIN_SIMILARITY).then_some((i, sim))
        })
        .collect();
    by_meaning.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (rank, (i, _)) in by_meaning.into_iter().enumerate() {
        score[i] += rrf(rank);
    }
    let mut order: Vec<usize> = (0..docs.len()).filter(|&i| score[i] > 0.0).collect();
    order.sort_by(|&a, &b| {
        score[b]
            .total_cmp(&score[a])
            .then(docs[b].updated_at.cmp(&docs[a].updated_at))
    });
    take_in_order(docs, &order, limit)
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
            embedding: None,
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

    fn embedded(id: &str, body: &str, minute: u32, vector: &[f32]) -> Document {
        Document {
            embedding: Some(Embedding {
                model: "m".into(),
                vector: vector.to_vec(),
            }),
            ..doc(id, body, minute)
        }
    }

    #[test]
    fn cosine_compares_only_vectors_of_one_model_and_size() {
        let e = |m: &str, v: &[f32]| Embedding {
            model: m.into(),
            vector: v.to_vec(),
        };
        let sim = e("m", &[1.0, 0.0]).cosine(&e("m", &[1.0, 1.0])).unwrap();
        assert!(
            (sim - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6,
            "{sim}"
        );
        assert!(e("m", &[1.0]).cosine(&e("other", &[1.0])).is_none());
        assert!(e("m", &[1.0]).cosine(&e("m", &[1.0, 0.0])).is_none());
        assert!(e("m", &[0.0, 0.0]).cosine(&e("m", &[1.0, 0.0])).is_none());
    }

    #[test]
    fn hybrid_finds_by_meaning_and_by_words_and_fuses_both() {
        let docs = vec![
            // Related by meaning only: no word in common with the query.
            embedded("rail", "Likes travelling by TGV", 1, &[0.9, 0.1, 0.0]),
            // Unrelated by meaning, shares a word.
            embedded(
                "units",
                "Prefers metric units for trains",
                2,
                &[0.0, 0.0, 1.0],
            ),
            // Stored before embeddings were configured: words only.
            doc("old", "Hates night trains", 3),
            embedded("food", "Allergic to peanuts", 4, &[0.0, 1.0, 0.0]),
        ];
        let q = Embedding {
            model: "m".into(),
            vector: vec![1.0, 0.0, 0.1],
        };
        let ids = |v: Vec<Document>| v.into_iter().map(|d| d.id).collect::<Vec<_>>();
        let found = ids(rank_hybrid(docs.clone(), "trains", Some(&q), 10));
        assert!(found.contains(&"rail".to_owned()), "{found:?}");
        assert!(found.contains(&"old".to_owned()), "{found:?}");
        assert!(!found.contains(&"food".to_owned()), "{found:?}");
        // Without an embedding it is the keyword ranking exactly.
        assert_eq!(
            ids(rank_hybrid(docs.clone(), "trains", None, 10)),
            ids(rank_by_keywords(docs.clone(), "trains", 10))
        );
        // A document both rankings place first wins.
        let both = embedded("both", "Takes trains to Lyon", 0, &[1.0, 0.0, 0.0]);
        let mut with_both = docs;
        with_both.push(both);
        assert_eq!(ids(rank_hybrid(with_both, "trains", Some(&q), 1)), ["both"]);
    }
}
