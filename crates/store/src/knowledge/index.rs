//! The in-process vector index of knowledge bases (both backends): a base's vectors for its
//! embedding model, loaded once from `knowledge_vectors` into one contiguous array and scored
//! all (no approximate neighbour graph: nothing is missed for being far in a graph) with a
//! bounded heap for the top k. Each unit vector is kept as signed bytes with one scale
//! (`v ≈ scale × code`), and the query is quantized the same way, so a score is an integer dot
//! product the compiler vectorizes, times two scales: within about 1% of the exact cosine, a
//! quarter of the memory of f32s (`chunks × (dimensions + 4)` bytes: 100k chunks of 1,536
//! dimensions take 147 MiB) and a quarter of the bytes each query streams. A query reads the
//! base's generation (one indexed row) and reloads only when a write anywhere, in this process
//! or another, bumped it. It is the default on PostgreSQL too: pgvector's HNSW index (see
//! [`super::pgvector`], opt-in) is approximate, and on the retrieval bench it was both less
//! complete and slower at 100k chunks.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

/// From how many vectors a search is split across the machine's cores (below it, starting
/// threads costs more than it saves).
const PARALLEL_FROM: usize = 20_000;

/// A chunk's place: file and ordinal.
pub(crate) type Key = (String, u64);

/// One base's vectors for one model, as of one generation.
pub(crate) struct FlatIndex {
    pub generation: i64,
    pub model: String,
    dims: usize,
    keys: Vec<Key>,
    /// `keys.len() × dims` quantized components of the unit vectors, row after row.
    codes: Vec<i8>,
    /// Each row's scale: its component `j` is about `scales[i] × codes[i × dims + j]`.
    scales: Vec<f32>,
}

/// `v` as signed bytes and the scale that maps them back (`v ≈ scale × code`).
fn quantize(v: &[f32]) -> (Vec<i8>, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        return (vec![0; v.len()], 0.0);
    }
    let scale = max / 127.0;
    // In range by construction: |x| / scale ≤ 127.
    #[allow(clippy::cast_possible_truncation)]
    let codes = v.iter().map(|x| (x / scale).round() as i8).collect();
    (codes, scale)
}

impl FlatIndex {
    /// An index of `rows` (`key`, little-endian f32 bytes); rows of another dimension than the
    /// first are left out (a model answers with one dimension).
    pub fn build(
        generation: i64,
        model: String,
        rows: impl IntoIterator<Item = (Key, Vec<u8>)>,
    ) -> Self {
        let mut index = Self {
            generation,
            model,
            dims: 0,
            keys: Vec::new(),
            codes: Vec::new(),
            scales: Vec::new(),
        };
        for (key, bytes) in rows {
            let v = decode(&bytes);
            if index.keys.is_empty() {
                index.dims = v.len();
            }
            if v.len() != index.dims || v.is_empty() {
                continue;
            }
            let (codes, scale) = quantize(&unit(v));
            index.keys.push(key);
            index.codes.extend_from_slice(&codes);
            index.scales.push(scale);
        }
        index
    }

    /// The `limit` keys closest to `query` (any length; compared as a unit vector), best
    /// first, with their cosine similarity.
    pub fn search(&self, query: &[f32], limit: usize) -> Vec<(Key, f32)> {
        if query.len() != self.dims || limit == 0 || self.dims == 0 {
            return Vec::new();
        }
        let (q, q_scale) = quantize(&unit(query.to_vec()));
        let rows = self.keys.len();
        // Large indexes are scored on every core, each part keeping its own best; the parts'
        // bests together hold the overall best.
        let parts = if rows >= PARALLEL_FROM {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
        } else {
            1
        };
        let per = rows.div_ceil(parts).max(1);
        let mut best: Vec<Scored> = if parts > 1 {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..rows)
                    .step_by(per)
                    .map(|from| {
                        let q = &q;
                        scope.spawn(move || {
                            self.best_of(from..(from + per).min(rows), q, q_scale, limit)
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        } else {
            self.best_of(0..rows, &q, q_scale, limit)
        };
        best.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        best.truncate(limit);
        best.into_iter()
            .map(|Scored(s, i)| (self.keys[i].clone(), s))
            .collect()
    }

    /// The `limit` best rows of `range` for the quantized query, scanned with the widest SIMD
    /// the CPU has (found at run time: the binary itself targets baseline x86-64, where the
    /// same loop is about three times slower).
    fn best_of(
        &self,
        range: std::ops::Range<usize>,
        q: &[i8],
        q_scale: f32,
        limit: usize,
    ) -> Vec<Scored> {
        pulp::Arch::new().dispatch(Scan {
            index: self,
            range,
            q,
            q_scale,
            limit,
        })
    }

    /// How many vectors it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// One part of a search: compiled once per instruction set, so that the loop and the inlined
/// [`dot`] are vectorized for the one `pulp` picks.
struct Scan<'a> {
    index: &'a FlatIndex,
    range: std::ops::Range<usize>,
    q: &'a [i8],
    q_scale: f32,
    limit: usize,
}

impl pulp::WithSimd for Scan<'_> {
    type Output = Vec<Scored>;

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) -> Vec<Scored> {
        let Self {
            index,
            range,
            q,
            q_scale,
            limit,
        } = self;
        // A min-heap of the best so far: the worst of them is on top, to be replaced.
        let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(limit + 1);
        let codes = &index.codes[range.start * index.dims..range.end * index.dims];
        for (row, i) in codes.chunks_exact(index.dims).zip(range) {
            // Exact in i32: at most 16,384 dimensions of products ≤ 127².
            #[allow(clippy::cast_precision_loss)]
            let score = dot(row, q) as f32 * index.scales[i] * q_scale;
            if best.len() < limit {
                best.push(Scored(score, i));
            } else if best.peek().is_some_and(|w| score > w.0) {
                best.pop();
                best.push(Scored(score, i));
            }
        }
        best.into_vec()
    }
}

/// `a · b` of quantized vectors, in sixteen independent lanes (what the compiler turns into
/// SIMD multiply-adds).
#[inline(always)]
pub(crate) fn dot(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; 16];
    let (xs, x_tail) = a.as_chunks::<16>();
    let (ys, y_tail) = b.as_chunks::<16>();
    for (x, y) in xs.iter().zip(ys) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += i32::from(*x) * i32::from(*y);
        }
    }
    let tail: i32 = x_tail
        .iter()
        .zip(y_tail)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    lanes.iter().sum::<i32>() + tail
}

/// Ordered so that the heap's top is the lowest score (the first to drop).
struct Scored(f32, usize);

impl PartialEq for Scored {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(self.1.cmp(&other.1))
    }
}

/// `v` scaled to unit length (a zero vector stays zero).
pub(crate) fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

/// Little-endian f32 bytes.
pub(crate) fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The f32s of [`encode`]'s bytes (a trailing partial value is dropped).
pub(crate) fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The indexes this process has loaded, by base.
#[derive(Default)]
pub(crate) struct Indexes(Mutex<HashMap<String, Arc<FlatIndex>>>);

impl Indexes {
    /// The loaded index of `kb` if it is of `generation` and `model`.
    pub fn current(&self, kb: &str, generation: i64, model: &str) -> Option<Arc<FlatIndex>> {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.get(kb)
            .filter(|i| i.generation == generation && i.model == model)
            .cloned()
    }

    /// Keep `index` for `kb` (replacing an older one).
    pub fn keep(&self, kb: &str, index: Arc<FlatIndex>) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map
            .get(kb)
            .is_none_or(|old| old.generation <= index.generation)
        {
            map.insert(kb.to_owned(), index);
        }
    }

    /// Forget `kb`'s index (the base was deleted).
    pub fn forget(&self, kb: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(kb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(i: usize) -> Key {
        (format!("f{i}"), i as u64)
    }

    proptest! {
        // A fixed seed: the same cases on every run, so CI never meets a case by chance.
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x1dec_0001),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        /// The heap's answer is exactly the brute-force ranking's top `limit`.
        #[test]
        fn search_is_the_exact_top_k(
            vectors in proptest::collection::vec(proptest::collection::vec(-1.0f32..1.0, 4), 1..60),
            query in proptest::collection::vec(-1.0f32..1.0, 4),
            limit in 1usize..10,
        ) {
            let index = FlatIndex::build(
                1,
                "m".into(),
                vectors.iter().enumerate().map(|(i, v)| (key(i), encode(&unit(v.clone())))),
            );
            prop_assert_eq!(index.len(), vectors.len());
            let got: Vec<Key> = index.search(&query, limit).into_iter().map(|(k, _)| k).collect();
            let (q, qs) = quantize(&unit(query.clone()));
            let mut all: Vec<(f32, usize)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let (c, s) = quantize(&unit(v.clone()));
                    (dot(&c, &q) as f32 * s * qs, i)
                })
                .collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let want: Vec<Key> = all.into_iter().take(limit).map(|(_, i)| key(i)).collect();
            prop_assert_eq!(got, want);
        }
    }

    proptest! {
        // A fixed seed: the same cases on every run, so CI never meets a case by chance.
        #![proptest_config(proptest::test_runner::Config {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x1dec_0002),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        /// A quantized score is within 2% of the exact cosine of the two vectors.
        #[test]
        fn quantized_scores_stay_near_the_cosine(
            a in proptest::collection::vec(-1.0f32..1.0, 64),
            b in proptest::collection::vec(-1.0f32..1.0, 64),
        ) {
            let (ua, ub) = (unit(a), unit(b));
            let exact: f32 = ua.iter().zip(&ub).map(|(x, y)| x * y).sum();
            let ((ca, sa), (cb, sb)) = (quantize(&ua), quantize(&ub));
            let approx = dot(&ca, &cb) as f32 * sa * sb;
            prop_assert!((approx - exact).abs() < 0.02, "{approx} vs {exact}");
        }
    }

    #[test]
    fn other_dimensions_and_stale_generations_are_left_out() {
        let index = FlatIndex::build(
            3,
            "m".into(),
            [
                (key(0), encode(&[1.0, 0.0])),
                (key(1), encode(&[1.0, 0.0, 0.0])),
                (key(2), encode(&[0.0, 1.0])),
            ],
        );
        assert_eq!(index.len(), 2);
        assert_eq!(index.search(&[0.0, 2.0], 1)[0].0, key(2));
        assert!(index.search(&[1.0, 0.0, 0.0], 1).is_empty());
        let indexes = Indexes::default();
        indexes.keep("kb", Arc::new(index));
        assert!(indexes.current("kb", 3, "m").is_some());
        assert!(indexes.current("kb", 4, "m").is_none());
        assert!(indexes.current("kb", 3, "other").is_none());
        assert_eq!(decode(&encode(&[0.5, -2.0])), [0.5, -2.0]);
    }
}
