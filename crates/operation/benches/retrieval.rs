//! Knowledge retrieval figures (prints, not a timed test), one run per store:
//! - quality: recall@5 and MRR@10 of full-text only, vector only and hybrid (reciprocal rank
//!   fusion) retrieval, over queries whose relevant chunk is known;
//! - ingestion throughput (chunks/s) through the real job path: uploaded files recorded as a
//!   job, parsed, chunked, written, embedded in batches and their vectors stored;
//! - query latency p50/p99 of each mode, and the first query's load of the vector index.
//!
//! At 10k and 100k chunks, on SQLite and (with `REIN_BENCH_DATABASE_URL` or
//! `REIN_TEST_DATABASE_URL`) PostgreSQL; where PostgreSQL has pgvector, the base is ingested with
//! pgvector enabled (its HNSW index maintained) and its queries are measured twice: searched by
//! pgvector, then by the in-process index. `cargo bench -p rein-operation --bench retrieval`
//! (`-- 10000` for one size).
//!
//! The corpus is generated here, deterministically (no data set is downloaded): a lexicon of
//! made-up words where each *concept* has two surface forms, one used by the documents and one
//! only by paraphrased queries. Half the queries repeat a chunk's rarest words (what full-text
//! search is good at); half say the same concepts with the other forms (what only meaning
//! finds). The embedding is a deterministic stand-in used only by this bench: each concept has a
//! fixed random direction in 384 dimensions and a text is the rarity-weighted sum of its
//! concepts' directions (dense, like a real model's vectors), which knows both forms of a
//! concept the way a real model knows synonyms. Its figures show what fusion does with two rankings of
//! different strengths, not how good any real embedding model is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_core::state::ModelRef;
use rein_model::provider::EventStream;
use rein_model::{ChatRequest, ModelError, ModelProvider, ModelResponse};
use rein_operation::knowledge::{ingest, retrieve};
use rein_operation::{ModelSource, ModelUnavailable};
use rein_store::{Knowledge, KnowledgeJobs, NewJobFile, SqlStore, Synchronous};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

const SECTIONS_PER_FILE: usize = 10;
const WORDS_PER_SECTION: usize = 48;
const QUERIES: usize = 200;
const DIMS: usize = 384;
const MODEL: &str = "bench/concepts";

/// splitmix64: a small deterministic generator (the corpus is the same on every run).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The made-up words: concept `c` is written `form(c, 0)` in documents, `form(c, 1)` in
/// paraphrases.
struct Lexicon {
    concepts: usize,
    by_word: HashMap<String, usize>,
    /// Each concept's direction: `DIMS` components in [-1, 1), row after row.
    directions: Vec<f32>,
}

const SYLLABLES: [&str; 16] = [
    "ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "be", "du", "fa", "go", "hu", "ji", "pe", "so",
];

fn form(concept: usize, variant: usize) -> String {
    // Base-16 syllables of 2·concept + variant, at least three: every word is unique.
    let mut n = concept * 2 + variant;
    let mut w = String::new();
    for _ in 0..3 {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    while n > 0 {
        w.push_str(SYLLABLES[n % 16]);
        n /= 16;
    }
    w
}

impl Lexicon {
    fn new(concepts: usize) -> Self {
        let mut by_word = HashMap::new();
        for c in 0..concepts {
            by_word.insert(form(c, 0), c);
            by_word.insert(form(c, 1), c);
        }
        let mut rng = Rng(7);
        let directions = (0..concepts * DIMS)
            .map(|_| (rng.unit() * 2.0 - 1.0) as f32)
            .collect();
        Self {
            concepts,
            by_word,
            directions,
        }
    }

    /// A concept, common ones far more often (low ids are frequent).
    fn sample(&self, rng: &mut Rng) -> usize {
        ((self.concepts as f64) * rng.unit().powi(3)) as usize
    }

    /// The bench's embedding: the sum of its known words' concept directions, each weighted by
    /// the concept's rarity. Dense, as a real model's vectors are (an earlier sparse stand-in,
    /// one hashed position per concept, was not what a graph index such as pgvector's HNSW is
    /// built for: it found 0.69 of the answers at 100k chunks).
    fn embed(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0.0f32; DIMS];
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            if let Some(&c) = self.by_word.get(&word.to_lowercase()) {
                // Rare concepts (high ids) say the most, as inverse document frequency would.
                let weight = (c as f32 + 2.0).ln();
                let direction = &self.directions[c * DIMS..(c + 1) * DIMS];
                for (x, d) in v.iter_mut().zip(direction) {
                    *x += weight * d;
                }
            }
        }
        v
    }
}

/// The model runtime stand-in: embeds with the lexicon, nothing else.
struct BenchEmbedder(Arc<Lexicon>);

impl ModelProvider for BenchEmbedder {
    fn id(&self) -> &str {
        "bench"
    }
    fn chat(&self, _: ChatRequest) -> EventStream {
        futures::StreamExt::boxed(futures::stream::empty())
    }
    fn complete(&self, _: ChatRequest) -> BoxFuture<'static, ModelResponse> {
        async { ModelResponse::default() }.boxed()
    }
    fn generate_object(
        &self,
        _: ChatRequest,
        _: &str,
        _: Value,
    ) -> BoxFuture<'static, Result<Value, ModelError>> {
        async { Err(ModelError::new(rein_model::ErrorKind::Unsupported, "bench")) }.boxed()
    }
    fn embed(
        &self,
        _: &str,
        inputs: Vec<String>,
    ) -> BoxFuture<'static, Result<Vec<Vec<f32>>, ModelError>> {
        let lex = Arc::clone(&self.0);
        async move { Ok(inputs.iter().map(|t| lex.embed(t)).collect()) }.boxed()
    }
    fn list_models(&self) -> BoxFuture<'static, Result<Vec<String>, ModelError>> {
        async { Ok(vec!["concepts".into()]) }.boxed()
    }
}

struct Models(Arc<dyn ModelProvider>);

impl ModelSource for Models {
    fn provider(&self, _: &ModelRef) -> Result<Arc<dyn ModelProvider>, ModelUnavailable> {
        Ok(Arc::clone(&self.0))
    }
}

/// A query and where its answer is: file and section heading.
struct Query {
    text: String,
    path: String,
    section: String,
    paraphrase: bool,
}

/// `files` Markdown files of [`SECTIONS_PER_FILE`] sections, and [`QUERIES`] queries.
fn corpus(lex: &Lexicon, files: usize, rng: &mut Rng) -> (Vec<NewJobFile>, Vec<Query>) {
    let mut sections: Vec<(String, String, Vec<usize>)> = Vec::new();
    let mut out = Vec::with_capacity(files);
    for f in 0..files {
        let path = format!("docs/{:03}/file-{f:06}.md", f % 997);
        let mut md = String::new();
        for s in 0..SECTIONS_PER_FILE {
            let words: Vec<usize> = (0..WORDS_PER_SECTION).map(|_| lex.sample(rng)).collect();
            let text: Vec<String> = words.iter().map(|c| form(*c, 0)).collect();
            md.push_str(&format!("## Section {s}\n\n{}.\n\n", text.join(" ")));
            sections.push((path.clone(), format!("Section {s}"), words));
        }
        out.push(NewJobFile {
            path,
            source: None,
            content: Some(md.into_bytes()),
        });
    }
    let mut queries = Vec::with_capacity(QUERIES);
    for q in 0..QUERIES {
        let (path, section, words) = &sections[(rng.next() % sections.len() as u64) as usize];
        // The four rarest concepts of the section: what a person asking about it would name.
        let mut rare = words.clone();
        rare.sort_unstable_by(|a, b| b.cmp(a));
        rare.dedup();
        rare.truncate(4);
        let paraphrase = q % 2 == 1;
        let text: Vec<String> = rare
            .iter()
            .map(|c| form(*c, usize::from(paraphrase)))
            .collect();
        queries.push(Query {
            text: text.join(" "),
            path: path.clone(),
            section: section.clone(),
            paraphrase,
        });
    }
    (out, queries)
}

/// The 1-based rank of the query's chunk among `hits`, if there.
fn rank(q: &Query, hits: &[rein_store::ChunkHit]) -> Option<usize> {
    hits.iter()
        .position(|h| h.path == q.path && h.headings.last() == Some(&q.section))
        .map(|i| i + 1)
}

#[derive(Default)]
struct Mode {
    ranks: Vec<Option<usize>>,
    micros: Vec<u64>,
}

impl Mode {
    fn recall5(&self, which: impl Fn(usize) -> bool) -> f64 {
        let (n, hit) = self
            .ranks
            .iter()
            .enumerate()
            .filter(|(i, _)| which(*i))
            .fold((0, 0), |(n, h), (_, r)| {
                (n + 1, h + usize::from(r.is_some_and(|r| r <= 5)))
            });
        hit as f64 / n.max(1) as f64
    }
    fn mrr(&self) -> f64 {
        self.ranks
            .iter()
            .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
            .sum::<f64>()
            / self.ranks.len().max(1) as f64
    }
    fn percentile(&self, p: f64) -> f64 {
        let mut v = self.micros.clone();
        v.sort_unstable();
        v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1000.0
    }
}

/// Ingest `chunks` chunks into a new base of `store` and measure its queries; on PostgreSQL
/// with pgvector enabled, `pgvector_also_in_process` (its URL) measures the in-process index
/// too, on the same base.
async fn run(
    store: &SqlStore,
    backend: &str,
    chunks: usize,
    pgvector_also_in_process: Option<String>,
) {
    let lex = Arc::new(Lexicon::new(20_000));
    let models = Models(Arc::new(BenchEmbedder(Arc::clone(&lex))));
    let mut rng = Rng(42);
    let files = chunks / SECTIONS_PER_FILE;
    let (entries, queries) = corpus(&lex, files, &mut rng);
    let name = format!("bench-{chunks}-{}", rein_core::OperationId::new());
    let kb = store.create_knowledge_base(None, &name).await.unwrap();
    store.set_embed_model(&kb.id, Some(MODEL)).await.unwrap();

    let started = Instant::now();
    let job = store
        .create_ingest_job(&kb.id, 400, 40, &entries)
        .await
        .unwrap();
    let done = ingest::run(store, Some(&models), &job.id, &|_| {})
        .await
        .unwrap();
    let ingest_secs = started.elapsed().as_secs_f64();
    assert_eq!(
        done.state,
        rein_store::IngestState::Done,
        "{:?}",
        done.error
    );
    let (embedded, total) = store.embedding_counts(&kb.id, MODEL).await.unwrap();
    assert_eq!(embedded, total);

    println!(
        "{backend}, {total} chunks: ingestion {:.0} chunks/s ({ingest_secs:.1} s, {files} files)",
        total as f64 / ingest_secs
    );
    queries_on(store, &models, &lex, &kb.id, &name, &queries).await;
    if let Some(url) = &pgvector_also_in_process {
        // The same base, its vectors searched by this process's index instead of pgvector.
        let in_process = SqlStore::open(url, Synchronous::Normal).await.unwrap();
        queries_on(&in_process, &models, &lex, &kb.id, &name, &queries).await;
        in_process.close().await;
    }
    store.delete_knowledge_base(&kb.id).await.unwrap();
}

/// Every query in each mode against the base `kb` (named `name`) of `store`.
async fn queries_on(
    store: &SqlStore,
    models: &Models,
    lex: &Lexicon,
    kb: &str,
    name: &str,
    queries: &[Query],
) {
    let searched_by = match store.vector_search() {
        rein_store::VectorSearch::InProcess => "the in-process index".to_owned(),
        rein_store::VectorSearch::Pgvector(v) => format!("pgvector {v} (HNSW)"),
    };
    // The first vector search loads the in-process index.
    let t = Instant::now();
    store
        .search_knowledge_vectors(kb, MODEL, &lex.embed("warm"), 10)
        .await
        .unwrap();
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;
    println!("  vectors searched by {searched_by}; first vector search {load_ms:.0} ms");
    let (mut words, mut meaning, mut hybrid) = (Mode::default(), Mode::default(), Mode::default());
    let names = [name.to_owned()];
    for q in queries {
        let t = Instant::now();
        let hits = store.search_knowledge(kb, &q.text, 10).await.unwrap();
        words.micros.push(t.elapsed().as_micros() as u64);
        words.ranks.push(rank(q, &hits));

        let t = Instant::now();
        let v = lex.embed(&q.text);
        let hits = store
            .search_knowledge_vectors(kb, MODEL, &v, 10)
            .await
            .unwrap();
        meaning.micros.push(t.elapsed().as_micros() as u64);
        meaning.ranks.push(rank(q, &hits));

        let t = Instant::now();
        let found = retrieve::search(store, Some(models), None, &names, &q.text, 10)
            .await
            .unwrap();
        hybrid.micros.push(t.elapsed().as_micros() as u64);
        let hits: Vec<_> = found.hits.into_iter().map(|(_, h)| h).collect();
        hybrid.ranks.push(rank(q, &hits));
    }
    let lexical = |i: usize| !queries[i].paraphrase;
    let para = |i: usize| queries[i].paraphrase;
    for (label, m) in [
        ("full text", &words),
        ("vector", &meaning),
        ("hybrid", &hybrid),
    ] {
        println!(
            "  {label:<9} recall@5 {:.2} (same words {:.2}, paraphrased {:.2})  MRR@10 {:.3}  \
             p50 {:.2} ms  p99 {:.2} ms",
            m.recall5(|_| true),
            m.recall5(lexical),
            m.recall5(para),
            m.mrr(),
            m.percentile(0.5),
            m.percentile(0.99)
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sizes: Vec<usize> = match std::env::args().skip(1).find_map(|a| a.parse().ok()) {
        Some(n) => vec![n],
        None => vec![10_000, 100_000],
    };
    let dir = std::env::temp_dir().join(format!("rein-retrieval-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pg = std::env::var("REIN_BENCH_DATABASE_URL")
        .or_else(|_| std::env::var("REIN_TEST_DATABASE_URL"))
        .ok();
    for &n in &sizes {
        let path = dir.join(format!("kb-{n}.db"));
        let store = SqlStore::open(path.to_str().unwrap(), Synchronous::Normal)
            .await
            .unwrap();
        run(&store, "SQLite", n, None).await;
        store.close().await;
        if let Some(url) = &pg {
            // Ingested and searched with pgvector when the server has it, then searched by
            // the in-process index too.
            let mut store = SqlStore::open(url, Synchronous::Normal).await.unwrap();
            let also = match store.enable_pgvector().await {
                Ok(_) => Some(url.clone()),
                Err(e) => {
                    println!("({e}: PostgreSQL with the in-process index only)");
                    None
                }
            };
            run(&store, "PostgreSQL", n, also).await;
            store.close().await;
        } else {
            println!("(PostgreSQL: set REIN_BENCH_DATABASE_URL to measure it)");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
