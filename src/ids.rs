//! Internal ids and the small types every layer shares: a document's internal id (a `u64` the
//! store hands out and never reuses), the id of one vector ([`VectorId`]: document and chunk), an
//! embedding-cache key ([`CacheKey`]), a set of documents ([`DocSet`], a bitmap cheap to build from
//! secondary indexes, to intersect and to test inside the graph search), and the contract of the
//! two derived indexes with the store ([`LoadFailure`], [`diff`]).

/// The id of one vector: chunk `chunk` (at most [`VectorId::MAX_CHUNKS`] per document) of the
/// document with internal id `doc`, packed as `doc << 8 | chunk` so that a filter on documents
/// is a shift, and a document's vectors are one key range of the `vectors` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct VectorId(u64);

impl VectorId {
    /// Chunks per document addressable in a vector id.
    pub(crate) const MAX_CHUNKS: u64 = 256;

    pub(crate) fn new(doc: u64, chunk: u64) -> VectorId {
        debug_assert!(chunk < Self::MAX_CHUNKS);
        VectorId((doc << 8) | (chunk & 0xff))
    }
    pub(crate) fn from_raw(raw: u64) -> VectorId {
        VectorId(raw)
    }
    pub(crate) fn raw(self) -> u64 {
        self.0
    }
    pub(crate) fn doc(self) -> u64 {
        self.0 >> 8
    }
    pub(crate) fn chunk(self) -> u32 {
        (self.0 & 0xff) as u32
    }
    /// The raw ids of every vector of document `doc`.
    pub(crate) fn range_of(doc: u64) -> std::ops::Range<u64> {
        VectorId::new(doc, 0).raw()..VectorId::new(doc + 1, 0).raw()
    }
}

/// An embedding-cache key: xxh3-128 of the model id, a NUL, and the embedded text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey(pub(crate) u128);

impl CacheKey {
    pub(crate) fn of(model: &str, text: &str) -> CacheKey {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(model.as_bytes());
        h.update(&[0]);
        h.update(text.as_bytes());
        CacheKey(h.digest128())
    }
}

/// Why a persisted derived index (the graph, the lexical index) could not be used as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadFailure {
    /// No files.
    Missing,
    /// Files present but unreadable, damaged, or of another format.
    Corrupt(String),
}

/// The reconciliation both derived indexes share: given the ids the store holds and the ids
/// the index holds (both sorted), the ones the index is missing and the ones it has extra.
pub(crate) fn diff(stored: &[u64], indexed: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let missing = stored.iter().copied().filter(|id| indexed.binary_search(id).is_err()).collect();
    let extra = indexed.iter().copied().filter(|id| stored.binary_search(id).is_err()).collect();
    (missing, extra)
}

/// Bitmap over internal document ids.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct DocSet {
    words: Vec<u64>,
}

impl DocSet {
    pub(crate) fn new() -> Self {
        DocSet::default()
    }

    pub(crate) fn insert(&mut self, id: u64) {
        let w = (id / 64) as usize;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (id % 64);
    }

    pub(crate) fn contains(&self, id: u64) -> bool {
        self.words.get((id / 64) as usize).is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    pub(crate) fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub(crate) fn intersect(&mut self, other: &DocSet) {
        self.words.truncate(other.words.len());
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= *b;
        }
    }

    pub(crate) fn to_vec(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len());
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros() as u64;
                out.push(i as u64 * 64 + b);
                w &= w - 1;
            }
        }
        out
    }
}

impl FromIterator<u64> for DocSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let mut s = DocSet::new();
        for id in iter {
            s.insert(id);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_ids_pack_document_and_chunk() {
        let v = VectorId::new(5, 3);
        assert_eq!((v.doc(), v.chunk(), v.raw()), (5, 3, 5 * 256 + 3));
        assert_eq!(VectorId::from_raw(v.raw()), v);
        assert!(VectorId::range_of(5).contains(&v.raw()) && !VectorId::range_of(6).contains(&v.raw()));
        assert_ne!(CacheKey::of("m", "ab"), CacheKey::of("ma", "b"));
        assert_eq!(diff(&[1, 2, 3], &[2, 3, 4]), (vec![1], vec![4]));
    }

    #[test]
    fn set_ops() {
        let mut a: DocSet = [1, 5, 64, 200].into_iter().collect();
        let b: DocSet = [5, 200, 300].into_iter().collect();
        a.intersect(&b);
        assert_eq!(a.to_vec(), vec![5, 200]);
        assert_eq!(a.len(), 2);
        assert!(a.contains(200) && !a.contains(64) && !a.contains(10_000));
    }
}
