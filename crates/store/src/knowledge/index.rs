//! The in-process vector index of knowledge bases (both backends): a base's vectors for its
//! embedding model, loaded once from `knowledge_vectors` into one contiguous array of unit
//! f32s and searched exactly (dot product = cosine similarity) with a bounded heap. A query
//! reads the base's generation (one indexed row) and reloads only when a write anywhere, in
//! this process or another, bumped it. Memory is `chunks × dimensions × 4` bytes per base in
//! use (100k chunks of 256 dimensions: 100 MiB), and a query touches each vector once, in
//! order, which the compiler vectorizes: at 100k chunks that is milliseconds, not a row scan.
//! PostgreSQL's pgvector would do this inside the database; Debian bookworm's archive (what
//! the machines rein is built and tested on can install from) does not ship it, so PostgreSQL
//! uses this index too.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};

/// A chunk's place: file and ordinal.
pub(crate) type Key = (String, u64);

/// One base's vectors for one model, as of one generation.
pub(crate) struct FlatIndex {
    pub generation: i64,
    pub model: String,
    dims: usize,
    keys: Vec<Key>,
    /// `keys.len() × dims` unit-length components, row after row.
    data: Vec<f32>,
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
            data: Vec::new(),
        };
        for (key, bytes) in rows {
            let v = decode(&bytes);
            if index.keys.is_empty() {
                index.dims = v.len();
            }
            if v.len() != index.dims || v.is_empty() {
                continue;
            }
            index.keys.push(key);
            index.data.extend_from_slice(&v);
        }
        index
    }

    /// The `limit` keys closest to `query` (any length; compared as a unit vector), best
    /// first, with their cosine similarity.
    pub fn search(&self, query: &[f32], limit: usize) -> Vec<(Key, f32)> {
        if query.len() != self.dims || limit == 0 || self.dims == 0 {
            return Vec::new();
        }
        let q = unit(query.to_vec());
        // A min-heap of the best so far: the worst of them is on top, to be replaced.
        let mut best: BinaryHeap<Scored> = BinaryHeap::with_capacity(limit + 1);
        for (i, row) in self.data.chunks_exact(self.dims).enumerate() {
            let score = dot(row, &q);
            if best.len() < limit {
                best.push(Scored(score, i));
            } else if best.peek().is_some_and(|w| score > w.0) {
                best.pop();
                best.push(Scored(score, i));
            }
        }
        let mut out: Vec<Scored> = best.into_vec();
        out.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out.into_iter()
            .map(|Scored(s, i)| (self.keys[i].clone(), s))
            .collect()
    }

    /// How many vectors it holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.keys.len()
    }
}

/// `a · b`, in eight independent lanes: a single running sum is a chain the compiler may not
/// reorder (float addition is not associative), eight are what it turns into SIMD.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (xs, x_tail) = a.as_chunks::<8>();
    let (ys, y_tail) = b.as_chunks::<8>();
    for (x, y) in xs.iter().zip(ys) {
        for ((lane, x), y) in lanes.iter_mut().zip(x).zip(y) {
            *lane += x * y;
        }
    }
    let tail: f32 = x_tail.iter().zip(y_tail).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
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
            let q = unit(query.clone());
            let mut all: Vec<(f32, usize)> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| (dot(&unit(v.clone()), &q), i))
                .collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let want: Vec<Key> = all.into_iter().take(limit).map(|(_, i)| key(i)).collect();
            prop_assert_eq!(got, want);
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
