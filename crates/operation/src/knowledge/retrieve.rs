//! Hybrid retrieval over knowledge bases: each base is searched by full text and, when it has an
//! embedding model, by the query's vector; the two rankings are fused by reciprocal rank
//! (`Σ 1 / (60 + rank)`), which needs no calibration between BM25 scores and cosine
//! similarities and makes the fused scores of different bases comparable. A base without an
//! embedding model, or whose model cannot embed the query right now, is searched by full text
//! only, and the answer says so ([`Retrieved::full_text_only`]).

use crate::embedder::ProviderEmbedder;
use crate::models::ModelSource;
use rein_store::{ChunkHit, Store, StoreError};
use rein_tools::documents::Embedder;
use std::collections::HashMap;
use std::sync::Arc;

/// The constant of reciprocal rank fusion (the value of the original paper, which ranks well
/// without tuning).
const RRF_K: f64 = 60.0;

/// How many candidates each ranking contributes to the fusion, at least.
const MIN_DEPTH: u32 = 20;

/// What a search found.
#[derive(Debug, Default)]
pub struct Retrieved {
    /// Chunks best first, each with its base's name; `score` is the fused score.
    pub hits: Vec<(String, ChunkHit)>,
    /// Bases searched by full text only, with why.
    pub full_text_only: Vec<(String, String)>,
}

/// The most characters a search query may have.
pub const MAX_QUERY_CHARS: usize = 2_000;

/// Why a query a person typed is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueryError {
    /// Nothing but blanks.
    #[error("the query is empty: give the words to look for")]
    Empty,
    /// Longer than [`MAX_QUERY_CHARS`].
    #[error("the query has {0} characters; at most {MAX_QUERY_CHARS}")]
    TooLong(usize),
}

/// `query` if a search may be asked for it: not only blanks, at most [`MAX_QUERY_CHARS`].
pub fn checked_query(query: &str) -> Result<&str, QueryError> {
    let chars = query.chars().count();
    if query.trim().is_empty() {
        Err(QueryError::Empty)
    } else if chars > MAX_QUERY_CHARS {
        Err(QueryError::TooLong(chars))
    } else {
        Ok(query)
    }
}

/// Why no embedder could be made for a knowledge base's embedding model.
#[derive(Debug, thiserror::Error)]
pub enum EmbedderUnavailable {
    /// The name is not `provider/model`.
    #[error(transparent)]
    Name(#[from] crate::profile::ProfileError),
    /// No configured provider serves it.
    #[error(transparent)]
    Provider(#[from] crate::models::ModelUnavailable),
}

/// The embedder for an embedding model named `provider/model`, from `models`.
pub fn embedder_for(
    models: &dyn ModelSource,
    model: &str,
) -> Result<Arc<dyn Embedder>, EmbedderUnavailable> {
    let model_ref = crate::profile::model_ref(model)?;
    let provider = models.provider(&model_ref)?;
    Ok(Arc::new(ProviderEmbedder::new(provider, model_ref)))
}

/// Fuse rankings by reciprocal rank: each chunk's score is the sum over the rankings it is in
/// of `1 / (RRF_K + rank)` (rank from 1); best first, ties in file order.
pub fn fuse(rankings: &[Vec<ChunkHit>]) -> Vec<ChunkHit> {
    let mut fused: HashMap<(String, u64), ChunkHit> = HashMap::new();
    for ranking in rankings {
        for (rank, hit) in ranking.iter().enumerate() {
            let add = 1.0 / (RRF_K + rank as f64 + 1.0);
            fused
                .entry((hit.path.clone(), hit.ordinal))
                .and_modify(|h| h.score += add)
                .or_insert_with(|| ChunkHit {
                    score: add,
                    ..hit.clone()
                });
        }
    }
    let mut out: Vec<ChunkHit> = fused.into_values().collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.path.cmp(&b.path))
            .then(a.ordinal.cmp(&b.ordinal))
    });
    out
}

/// The best chunks of the bases `names` of `owner` for `query`, best first, at most `limit`
/// (a base that does not exist is passed over). `models` embeds the query for bases with an
/// embedding model; without it every base is searched by full text.
pub async fn search(
    store: &dyn Store,
    models: Option<&dyn ModelSource>,
    owner: Option<&str>,
    names: &[String],
    query: &str,
    limit: u32,
) -> Result<Retrieved, StoreError> {
    let depth = limit.saturating_mul(4).max(MIN_DEPTH);
    let mut out = Retrieved::default();
    // Nothing to look for (a tool call's or a message's blank text): no embedding call.
    if query.trim().is_empty() {
        return Ok(out);
    }
    // One embedding of the query per model, whatever number of bases share it.
    let mut vectors: HashMap<String, Result<Vec<f32>, String>> = HashMap::new();
    for name in names {
        let Some(kb) = store.knowledge_base(owner, name).await? else {
            continue;
        };
        let Some(model) = kb.embed_model.as_deref() else {
            let full_text = store.search_knowledge(&kb.id, query, depth).await?;
            out.full_text_only
                .push((name.clone(), "it has no embedding model".into()));
            out.hits
                .extend(fuse(&[full_text]).into_iter().map(|h| (name.clone(), h)));
            continue;
        };
        if !vectors.contains_key(model) {
            let v = match models {
                Some(models) => embed_query(models, model, query).await,
                None => Err("no models to embed the query with".into()),
            };
            vectors.insert(model.to_owned(), v);
        }
        // Both rankings at once: the full-text one runs on the database's side while the
        // vector index scores on this one.
        let by_meaning = async {
            match &vectors[model] {
                Ok(v) => store
                    .search_knowledge_vectors(&kb.id, model, v, depth)
                    .await
                    .map(Some),
                Err(_) => Ok(None),
            }
        };
        let (full_text, by_meaning) =
            futures::future::join(store.search_knowledge(&kb.id, query, depth), by_meaning).await;
        let (full_text, by_meaning) = (full_text?, by_meaning?);
        let by_meaning = match (by_meaning, &vectors[model]) {
            (Some(hits), _) => hits,
            (None, Err(why)) => {
                out.full_text_only.push((
                    name.clone(),
                    format!("the query could not be embedded: {why}"),
                ));
                Vec::new()
            }
            (None, Ok(_)) => Vec::new(),
        };
        out.hits.extend(
            fuse(&[full_text, by_meaning])
                .into_iter()
                .map(|h| (name.clone(), h)),
        );
    }
    out.hits.sort_by(|a, b| {
        b.1.score
            .total_cmp(&a.1.score)
            .then_with(|| a.0.cmp(&b.0))
            .then_with(|| a.1.path.cmp(&b.1.path))
            .then(a.1.ordinal.cmp(&b.1.ordinal))
    });
    out.hits.truncate(limit as usize);
    Ok(out)
}

async fn embed_query(
    models: &dyn ModelSource,
    model: &str,
    query: &str,
) -> Result<Vec<f32>, String> {
    let embedder = embedder_for(models, model).map_err(|e| e.to_string())?;
    let mut v = embedder
        .embed(&[query.to_owned()])
        .await
        .map_err(|e| e.to_string())?;
    if v.len() != 1 {
        return Err(format!("{} vectors for one text", v.len()));
    }
    Ok(v.swap_remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(path: &str, ordinal: u64) -> ChunkHit {
        ChunkHit {
            path: path.into(),
            ordinal,
            headings: Vec::new(),
            line_start: 1,
            line_end: 1,
            text: String::new(),
            score: 0.0,
        }
    }

    #[test]
    fn a_query_is_words_within_its_bound() {
        assert_eq!(checked_query("install it"), Ok("install it"));
        assert_eq!(checked_query(" \t "), Err(QueryError::Empty));
        let long = "é".repeat(MAX_QUERY_CHARS + 1);
        assert_eq!(checked_query(&long), Err(QueryError::TooLong(2_001)));
        assert!(checked_query(&"é".repeat(MAX_QUERY_CHARS)).is_ok());
    }

    #[test]
    fn a_chunk_both_rankings_found_comes_first() {
        let words = vec![hit("a", 0), hit("b", 0), hit("c", 0)];
        let meaning = vec![hit("d", 0), hit("c", 0)];
        let fused: Vec<String> = fuse(&[words, meaning])
            .iter()
            .map(|h| h.path.clone())
            .collect();
        // c: 1/63 + 1/62 beats a: 1/61; a and d tie at 1/61 (path order), then b.
        assert_eq!(fused, ["c", "a", "d", "b"]);
    }
}
