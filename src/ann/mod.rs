//! The approximate-nearest-neighbour index: an hnsw_rs graph plus the vectors, row after row,
//! for exact scans ([`arena`]: a persisted file's rows where they lie, then the rows added).
//!
//! Ids: a vector's id is a [`VectorId`] (document and chunk in one `u64`, hnsw_rs's `DataId`), so
//! a filter on documents needs no lookup table. hnsw_rs cannot delete: deleted documents
//! become tombstones, filtered out during graph traversal, until the graph is rebuilt.
//!
//! Persistence (dump and load, verified by checksums) is [`persist`].

use crate::sync::Locked;
use std::collections::{BTreeMap, BinaryHeap, HashSet};

use hnsw_rs::prelude::{Distance, FilterT, Hnsw};

use crate::ids::{DocSet, VectorId};
use crate::vector::dot;

mod arena;
mod persist;

/// Cosine distance on unit vectors, `1 - a·b` clamped at 0. (hnsw_rs's `DistDot` asserts a
/// non-negative result, which rounding can violate for near-identical vectors.)
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct UnitCosine;

impl Distance<f32> for UnitCosine {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).max(0.0)
    }
}

/// HNSW construction and search parameters. Every field documents its default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HnswParams {
    /// Neighbours per node per layer (M). Default: 16.
    pub max_connections: usize,
    /// Candidate list size while building. Default: 100.
    pub ef_construction: usize,
    /// Candidate list size for an unfiltered search. Default: 64; filtered searches raise it as
    /// selectivity drops.
    pub ef_search: usize,
}

impl Default for HnswParams {
    fn default() -> Self {
        HnswParams { max_connections: 16, ef_construction: 100, ef_search: 64 }
    }
}

type Graph = Hnsw<'static, f32, UnitCosine>;

/// Vectors a dump may hold apart from the graph (`graph.added`, not linked yet), whatever the
/// graph's size (see [`Ann::dumps_without_links`]).
const UNLINKED_MAX: usize = 4096;

pub(crate) struct Ann {
    /// `None` until a persisted graph's links are read (in the background, once a search
    /// wants to walk them, or a dump has too many vectors waiting to be linked).
    graph: Option<Graph>,
    /// A persisted graph whose links nothing has asked for yet: an exact scan needs only the
    /// vectors, so a search of a small collection never reads them.
    deferred: Option<persist::Links>,
    /// The background load, when one is under way.
    loading: Option<std::sync::Mutex<std::sync::mpsc::Receiver<std::result::Result<Graph, String>>>>,
    /// Set when links that could not be read were rebuilt from the vectors: the next flush
    /// persists the rebuilt graph (see [`Ann::take_relinked`]).
    relinked: bool,
    /// Vectors not in the graph yet (added while its links were not read, or read from the
    /// dump's `graph.added`), inserted once it arrives.
    pending: Vec<u64>,
    params: HnswParams,
    dim: usize,
    arena: arena::Arena,
    rows: BTreeMap<u64, u32>,
    /// `row_ids[row]` is the data id stored in arena row `row`.
    row_ids: Vec<u64>,
    tombstones: HashSet<u64>,
    /// No graph is built while the index holds at most this many vectors (0: always built):
    /// a collection that small is scanned exactly by every search (its exact threshold), so
    /// linking each vector into a graph as it arrives is work and disk for nothing (about a
    /// tenth of an embedding pass at 30 times the shared corpus). The insert that passes it
    /// builds the graph from every vector at once.
    link_from: usize,
}

impl Ann {
    pub(crate) fn new(dim: usize, params: HnswParams, capacity: usize) -> Ann {
        Ann {
            graph: Some(new_graph(params, capacity)),
            deferred: None,
            loading: None,
            relinked: false,
            pending: Vec::new(),
            params,
            dim,
            arena: arena::Arena::default(),
            rows: BTreeMap::new(),
            row_ids: Vec::new(),
            tombstones: HashSet::new(),
            link_from: 0,
        }
    }

    /// An index that builds no graph until it holds more than `link_from` vectors.
    pub(crate) fn unlinked(dim: usize, params: HnswParams, link_from: usize) -> Ann {
        let mut ann = Ann::new(dim, params, 0);
        ann.graph = None;
        ann.link_from = link_from;
        ann
    }

    /// Sets how many vectors the index holds before it builds a graph (see [`Ann::unlinked`]).
    pub(crate) fn set_link_from(&mut self, link_from: usize) {
        self.link_from = link_from;
    }

    /// True when the index keeps no graph: none built (too few vectors), none persisted to
    /// read, none being read.
    pub(crate) fn unbuilt(&self) -> bool {
        self.graph.is_none() && self.deferred.is_none() && self.loading.is_none()
    }

    /// Lets go of persisted links that were never read when the index is too small to need
    /// them (at most `link_from` vectors): the next dump writes the vectors alone, and never
    /// reads the links to carry them on.
    pub(crate) fn shed_links(&mut self) {
        if self.graph.is_none() && self.loading.is_none() && self.rows.len() <= self.link_from {
            self.deferred = None;
            self.pending.clear();
        }
    }

    /// True when the graph can be searched (false while it is still loading).
    pub(crate) fn graph_ready(&self) -> bool {
        self.graph.is_some()
    }

    /// True while the persisted graph's links are not in: not asked for yet, or being read.
    pub(crate) fn loading(&self) -> bool {
        self.deferred.is_some() || self.loading.is_some()
    }

    /// True when [`Ann::dump`] can write now without reading the graph's links: the graph
    /// is in, or its links were never asked for and the vectors waiting to be linked are
    /// still few (at most [`UNLINKED_MAX`] or an eighth of the graph). Adding a session to a
    /// large collection then costs its own vectors, not a read of every link; whoever reads
    /// the links next inserts the waiting vectors.
    pub(crate) fn dumps_without_links(&self) -> bool {
        match (&self.graph, &self.deferred) {
            (Some(_), _) => true,
            (None, Some(_)) => self.pending.len() <= UNLINKED_MAX.max(self.rows.len() / 8),
            (None, None) => self.loading.is_none(),
        }
    }

    /// Why the persisted links, not read yet, fail their checksums (`None` when they pass or
    /// are already read).
    pub(crate) fn verify_links(&self) -> Option<String> {
        self.deferred.as_ref().and_then(persist::verify_links)
    }

    /// True once after the persisted links turned out unreadable (damaged since the dump was
    /// written) and the graph was rebuilt from the vectors instead: it should be dumped.
    pub(crate) fn take_relinked(&mut self) -> bool {
        std::mem::take(&mut self.relinked)
    }

    /// Starts reading deferred links in the background, then takes the graph if it has
    /// arrived (`wait`: block until it does). A failed load falls back to building the graph
    /// from the vectors.
    pub(crate) fn poll(&mut self, wait: bool) {
        if let Some(links) = self.deferred.take() {
            self.loading = Some(std::sync::Mutex::new(persist::read_links(links)));
        }
        let Some(rx) = &self.loading else { return };
        let rx = rx.locked();
        let got = if wait {
            rx.recv().map_err(|_| "loader thread ended".to_string())
        } else {
            match rx.try_recv() {
                Ok(g) => Ok(g),
                Err(std::sync::mpsc::TryRecvError::Empty) => return,
                Err(std::sync::mpsc::TryRecvError::Disconnected) => Err("loader thread ended".to_string()),
            }
        };
        drop(rx);
        self.loading = None;
        let graph = match got {
            Ok(Ok(g)) => g,
            Ok(Err(_)) | Err(_) => {
                let g = new_graph(self.params, self.row_ids.len());
                self.pending = self.row_ids.clone();
                self.relinked = true;
                g
            }
        };
        self.graph = Some(graph);
        self.link_pending();
    }

    /// Builds the graph now if the index keeps none (see [`Ann::unlinked`]): a walk was asked
    /// for explicitly.
    pub(crate) fn build_now(&mut self) {
        if self.unbuilt() && !self.rows.is_empty() {
            self.build_graph();
        }
    }

    /// Builds the graph from every vector (see [`Ann::unlinked`]).
    fn build_graph(&mut self) {
        self.graph = Some(new_graph(self.params, self.row_ids.len()));
        self.pending = self.row_ids.clone();
        self.link_pending();
    }

    /// Inserts the vectors waiting for the graph, from where they lie (no copy of them).
    fn link_pending(&mut self) {
        let ids = std::mem::take(&mut self.pending);
        let Some(graph) = &self.graph else {
            self.pending = ids;
            return;
        };
        let items: Vec<(&[f32], usize)> =
            ids.iter().filter_map(|id| self.rows.get(id).map(|&r| (self.vector(r), *id as usize))).collect();
        if items.len() >= 256 {
            graph.parallel_insert_slice(&items);
        } else {
            for item in items {
                graph.insert_slice(item);
            }
        }
    }

    fn insert_into_graph(&mut self, items: &[(VectorId, &[f32])]) {
        let Some(graph) = &self.graph else {
            self.pending.extend(items.iter().map(|(id, _)| id.raw()));
            return;
        };
        if items.len() >= 256 {
            let batch: Vec<(&[f32], usize)> = items.iter().map(|(id, v)| (*v, id.raw() as usize)).collect();
            graph.parallel_insert_slice(&batch);
        } else {
            for (id, v) in items {
                graph.insert_slice((v, id.raw() as usize));
            }
        }
    }

    /// Vectors in the graph, tombstoned ones included.
    pub(crate) fn points(&self) -> usize {
        self.rows.len()
    }

    /// Documents deleted but still in the graph.
    pub(crate) fn tombstoned_points(&self) -> usize {
        if self.tombstones.is_empty() {
            return 0;
        }
        self.rows.keys().filter(|id| self.tombstones.contains(&VectorId::from_raw(**id).doc())).count()
    }

    /// Ids of every vector in the graph.
    pub(crate) fn vector_ids(&self) -> impl Iterator<Item = VectorId> + '_ {
        self.rows.keys().map(|r| VectorId::from_raw(*r))
    }

    /// Adds vectors; uses parallel insertion for large batches.
    pub(crate) fn insert(&mut self, items: &[(VectorId, &[f32])]) {
        let items: Vec<(VectorId, &[f32])> =
            items.iter().filter(|(id, v)| v.len() == self.dim && !self.rows.contains_key(&id.raw())).copied().collect();
        for (id, v) in &items {
            let row = (self.arena.len() / self.dim) as u32;
            self.arena.push(v);
            self.rows.insert(id.raw(), row);
            self.row_ids.push(id.raw());
            self.tombstones.remove(&id.doc());
        }
        if self.unbuilt() {
            if self.rows.len() > self.link_from {
                self.build_graph();
            }
            return;
        }
        self.insert_into_graph(&items);
    }

    /// Marks a document's vectors as deleted.
    pub(crate) fn tombstone(&mut self, doc: u64) {
        if self.rows.range(VectorId::range_of(doc)).next().is_some() {
            self.tombstones.insert(doc);
        }
    }

    fn vector(&self, row: u32) -> &[f32] {
        self.arena.row(row as usize, self.dim)
    }

    /// The query's cosine against an even sample of at most `n` live vectors (the same sample
    /// for every query of this index state): how similar "anything" is to this query.
    pub(crate) fn background(&self, query: &[f32], n: usize) -> crate::search::Background {
        let rows = self.row_ids.len();
        let step = (rows / n.max(1)).max(1);
        let mut b = crate::search::Background::default();
        for row in (0..rows).step_by(step) {
            let doc = VectorId::from_raw(self.row_ids[row]).doc();
            if self.tombstones.contains(&doc) {
                continue;
            }
            b.add(dot(query, self.vector(row as u32)));
        }
        // Weighted by the vectors it stands for (forgotten ones are few between compactions).
        b.represents(rows);
        b
    }

    /// Graph search. `keep` filters documents (tombstones are always filtered).
    /// Returns `(vector, cosine)` best first.
    pub(crate) fn search_graph(
        &self,
        query: &[f32],
        knbn: usize,
        ef: usize,
        keep: Option<&(dyn Fn(u64) -> bool + Sync)>,
    ) -> Vec<(VectorId, f32)> {
        let ef = ef.max(knbn);
        let Some(graph) = &self.graph else {
            // Still loading: the exact scan answers (callers check `graph_ready` first).
            return self.search_exact(query, None, 0, knbn);
        };
        let neighbours = match (keep, self.tombstones.is_empty()) {
            (None, true) => graph.search(query, knbn, ef),
            (keep, _) => {
                let filter = DocFilter { keep, tombstones: &self.tombstones };
                graph.search_filter(query, knbn, ef, Some(&filter))
            }
        };
        neighbours.into_iter().map(|n| (VectorId::from_raw(n.get_origin_id() as u64), 1.0 - n.get_distance())).collect()
    }

    /// Exact scan. `candidates` restricts it to those documents (all live documents when
    /// `None`); `n_candidates` is their count. Returns the best chunk per document,
    /// `(vector, cosine)`, best first, at most `k`.
    pub(crate) fn search_exact(
        &self,
        query: &[f32],
        candidates: Option<&DocSet>,
        n_candidates: usize,
        k: usize,
    ) -> Vec<(VectorId, f32)> {
        let mut top = TopK::new(k);
        match candidates {
            // Few candidates: visit exactly their vectors.
            Some(set) if n_candidates.saturating_mul(16) < self.row_ids.len() => {
                for doc in set.to_vec() {
                    if self.tombstones.contains(&doc) {
                        continue;
                    }
                    let best = self
                        .rows
                        .range(VectorId::range_of(doc))
                        .map(|(&id, &row)| (id, dot(query, self.vector(row))))
                        .max_by(|a, b| a.1.total_cmp(&b.1));
                    if let Some((id, score)) = best {
                        top.push(id, score);
                    }
                }
            }
            // Many: one pass over the arena, in parallel blocks.
            keep => {
                use rayon::prelude::*;
                const BLOCK: usize = 4096;
                let blocks = self.row_ids.len().div_ceil(BLOCK);
                let partial: Vec<TopK> = (0..blocks)
                    .into_par_iter()
                    .map(|b| {
                        let mut local = TopK::new(k);
                        // (Checked per row only when there are any: hashing every row's id
                        // was a few percent of a warm search.)
                        let dead = !self.tombstones.is_empty();
                        let end = ((b + 1) * BLOCK).min(self.row_ids.len());
                        for row in b * BLOCK..end {
                            let id = self.row_ids[row];
                            let doc = VectorId::from_raw(id).doc();
                            if keep.is_some_and(|s| !s.contains(doc)) || (dead && self.tombstones.contains(&doc)) {
                                continue;
                            }
                            local.push(id, dot(query, self.vector(row as u32)));
                        }
                        local
                    })
                    .collect();
                for p in partial {
                    for (id, s) in p.into_sorted() {
                        top.push(id.raw(), s);
                    }
                }
            }
        }
        top.into_sorted()
    }
}

fn new_graph(params: HnswParams, capacity: usize) -> Graph {
    Hnsw::new(params.max_connections, capacity.max(1024), 16, params.ef_construction, UnitCosine)
}

struct DocFilter<'a> {
    keep: Option<&'a (dyn Fn(u64) -> bool + Sync)>,
    tombstones: &'a HashSet<u64>,
}

impl FilterT for DocFilter<'_> {
    fn hnsw_filter(&self, id: &usize) -> bool {
        let doc = VectorId::from_raw(*id as u64).doc();
        !self.tombstones.contains(&doc) && self.keep.is_none_or(|k| k(doc))
    }
}

/// The k best documents seen so far; a document's chunks compete for one place.
struct TopK {
    k: usize,
    heap: BinaryHeap<std::cmp::Reverse<Scored>>,
    best: std::collections::HashMap<u64, f32>,
}

impl TopK {
    fn new(k: usize) -> Self {
        // `k` comes from callers' limits: allocate for what is likely, grow if needed.
        TopK { k, heap: BinaryHeap::with_capacity(k.min(4096) + 1), best: std::collections::HashMap::new() }
    }

    fn push(&mut self, id: u64, score: f32) {
        let doc = VectorId::from_raw(id).doc();
        if self.heap.len() == self.k && self.heap.peek().is_some_and(|r| r.0.0 >= score) {
            return;
        }
        match self.best.get(&doc) {
            Some(&b) if b >= score => return,
            Some(_) => self.heap.retain(|r| VectorId::from_raw(r.0.1).doc() != doc),
            None => {}
        }
        self.best.insert(doc, score);
        self.heap.push(std::cmp::Reverse(Scored(score, id)));
        if self.heap.len() > self.k
            && let Some(std::cmp::Reverse(Scored(_, gone))) = self.heap.pop()
        {
            self.best.remove(&VectorId::from_raw(gone).doc());
        }
    }

    fn into_sorted(self) -> Vec<(VectorId, f32)> {
        let mut out: Vec<(VectorId, f32)> =
            self.heap.into_iter().map(|std::cmp::Reverse(Scored(s, id))| (VectorId::from_raw(id), s)).collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Scored(f32, u64);
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::LoadFailure;
    use crate::vector::normalize;

    fn vecs(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..dim)
                    .map(|_| {
                        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
                    })
                    .collect();
                normalize(&mut v);
                v
            })
            .collect()
    }

    /// Vectors `r` of `v`, with the ids the tests give them (the row number plus one).
    fn items(v: &[Vec<f32>], r: std::ops::Range<usize>) -> Vec<(VectorId, &[f32])> {
        r.map(|i| (VectorId::new(i as u64 + 1, 0), &v[i][..])).collect()
    }

    #[test]
    fn exact_and_graph_agree_and_tombstones_hide() {
        let v = vecs(500, 32, 1);
        let mut ann = Ann::new(32, HnswParams::default(), 500);
        ann.insert(&items(&v, 0..v.len()));
        let q = &v[10];
        let exact = ann.search_exact(q, None, 0, 5);
        assert_eq!(exact[0].0, VectorId::new(11, 0));
        let graph = ann.search_graph(q, 5, 64, None);
        assert_eq!(graph[0].0, VectorId::new(11, 0));
        ann.tombstone(11);
        assert_ne!(ann.search_exact(q, None, 0, 5)[0].0, VectorId::new(11, 0));
        assert!(ann.search_graph(q, 5, 64, None).iter().all(|h| h.0 != VectorId::new(11, 0)));
        assert_eq!(ann.tombstoned_points(), 1);
    }

    #[test]
    fn dump_load_roundtrip_and_corruption_detected() {
        let dir = tempfile::tempdir().unwrap();
        let gdir = dir.path().join("vectors");
        let v = vecs(300, 16, 2);
        let mut ann = Ann::new(16, HnswParams::default(), 300);
        ann.insert(&items(&v, 0..v.len()));
        ann.dump(&gdir, 7, "m1").unwrap();
        let other = Ann::load(&gdir, 16, HnswParams::default(), "m2", "m0");
        assert!(matches!(other, Err(LoadFailure::Corrupt(why)) if why.contains("model")), "another model's vectors");
        let (mut loaded, generation) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert_eq!(generation, 7);
        assert_eq!(loaded.verify_links(), None);
        assert_eq!(loaded.points(), 300);
        assert_eq!(loaded.search_exact(&v[3], None, 0, 3), ann.search_exact(&v[3], None, 0, 3));
        // The exact scan answered from the vectors alone: nothing has started reading the links.
        assert!(loaded.deferred.is_some() && loaded.loading.is_none() && !loaded.graph_ready());
        // Asked for, the links arrive from the background loader. (Wait before touching the files: hnsw_rs
        // ends the process if a file it is reading shrinks under it.)
        loaded.poll(true);
        assert!(loaded.graph_ready());
        assert_eq!(loaded.search_graph(&v[3], 3, 64, None)[0].0, VectorId::new(4, 0));
        // Flip a byte of the links, same length: the load still answers from the vectors; reading
        // the links finds the checksum wrong before hnsw_rs sees the file, and the graph is
        // rebuilt from the vectors instead.
        let links = gdir.join("graph.hnsw.graph");
        let mut bytes = std::fs::read(&links).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x55;
        std::fs::write(&links, &bytes).unwrap();
        assert_eq!(loaded.verify_links(), None, "links already read");
        let (mut flipped, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert!(flipped.verify_links().is_some_and(|why| why.contains("graph.hnsw.graph")));
        assert_eq!(flipped.search_exact(&v[3], None, 0, 3), ann.search_exact(&v[3], None, 0, 3));
        flipped.poll(true);
        assert!(flipped.graph_ready() && flipped.pending.is_empty());
        assert!(flipped.take_relinked() && !flipped.take_relinked(), "the rebuilt graph asks to be dumped once");
        assert_eq!(flipped.search_graph(&v[3], 3, 64, None)[0].0, VectorId::new(4, 0));
        bytes[mid] ^= 0x55;
        std::fs::write(&links, &bytes).unwrap();
        // Truncate the data file: detected before hnsw_rs sees it.
        let data = gdir.join("graph.hnsw.data");
        let bytes = std::fs::read(&data).unwrap();
        std::fs::write(&data, &bytes[..bytes.len() / 3]).unwrap();
        assert!(matches!(Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0"), Err(LoadFailure::Corrupt(_))));
        std::fs::remove_dir_all(&gdir).unwrap();
        assert!(matches!(Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0"), Err(LoadFailure::Missing)));
    }

    #[test]
    fn a_graph_never_read_is_dumped_without_its_links_and_links_the_rest_later() {
        let dir = tempfile::tempdir().unwrap();
        let gdir = dir.path().join("向量 vectors");
        let v = vecs(400, 16, 3);
        let mut ann = Ann::new(16, HnswParams::default(), 300);
        ann.insert(&items(&v, 0..300));
        ann.dump(&gdir, 1, "m1").unwrap();
        let graph_bytes = std::fs::read(gdir.join("graph.hnsw.graph")).unwrap();

        // Two rounds of writes, each dumped while the links are still unread.
        let (mut a, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        a.insert(&items(&v, 300..350));
        a.tombstone(5);
        assert!(a.dumps_without_links());
        a.dump(&gdir, 2, "m1").unwrap();
        assert!(!a.graph_ready() && a.loading.is_none(), "the dump read the links");
        let (mut b, generation) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert_eq!((generation, b.points(), b.pending.len()), (2, 350, 50));
        b.insert(&items(&v, 350..400));
        b.dump(&gdir, 3, "m1").unwrap();
        assert_eq!(std::fs::read(gdir.join("graph.hnsw.graph")).unwrap(), graph_bytes, "graph files carried over");
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(gdir.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["format"], 4);
        // The added file holds the 100 added vectors, not the 300 already in the graph.
        let added = std::fs::metadata(gdir.join("graph.added")).unwrap().len();
        assert_eq!(added, 20 + 100 * (8 + 16 * 4));

        // Read at last: the waiting vectors are linked, the tombstone holds, and a full dump
        // goes back to format 3.
        let (mut c, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert_eq!(c.points(), 400);
        c.poll(true);
        assert!(c.graph_ready() && c.pending.is_empty());
        for i in [2usize, 320, 399] {
            assert_eq!(c.search_graph(&v[i], 3, 64, None)[0].0, VectorId::new(i as u64 + 1, 0), "vector {i}");
        }
        assert!(c.search_graph(&v[4], 3, 64, None).iter().all(|h| h.0 != VectorId::new(5, 0)));
        c.dump(&gdir, 4, "m1").unwrap();
        let manifest: serde_json::Value =
            serde_json::from_slice(&std::fs::read(gdir.join("manifest.json")).unwrap()).unwrap();
        assert_eq!(manifest["format"].as_u64(), Some(3));
        assert!(!gdir.join("graph.added").exists());
        let (d, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert!(d.pending.is_empty() && d.points() == 400);
    }

    #[test]
    fn a_loaded_dump_is_scanned_where_it_lies_outlives_a_newer_dump_and_refuses_a_flipped_byte() {
        let dir = tempfile::tempdir().unwrap();
        let gdir = dir.path().join("벡터 vectors");
        let v = vecs(400, 16, 4);
        let mut all = Ann::new(16, HnswParams::default(), 400);
        all.insert(&items(&v, 0..400));
        let mut first = Ann::new(16, HnswParams::default(), 300);
        first.insert(&items(&v, 0..300));
        first.dump(&gdir, 1, "m1").unwrap();

        // A reader loads the dump and adds rows of its own after the file's.
        let (mut reader, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        #[cfg(all(unix, target_endian = "little"))]
        assert_eq!(reader.arena.rows_from(0, 16)[0].len(), 300 * 16, "the file's rows are mapped, not copied");
        reader.insert(&items(&v, 300..400));
        // Another writer swaps a newer dump in place of the one the reader holds.
        let (mut writer, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        writer.tombstone(4);
        // A directory an earlier dump had to set aside (on NFS a mapped file keeps it) goes now.
        let aside = dir.path().join("벡터 vectors.aside.1-2");
        std::fs::create_dir(&aside).unwrap();
        std::fs::write(aside.join(".nfs0001"), b"still mapped elsewhere").unwrap();
        writer.dump(&gdir, 2, "m1").unwrap();
        assert!(!dir.path().join("벡터 vectors.old").exists(), "the old dump is gone from disk");
        assert!(!aside.exists(), "what was set aside is removed by a later dump");
        // The reader answers as an index built in memory does, from both kinds of rows.
        for i in [3usize, 150, 299, 300, 399] {
            assert_eq!(reader.search_exact(&v[i], None, 0, 5), all.search_exact(&v[i], None, 0, 5), "vector {i}");
            assert_eq!(reader.vector(i as u32), &v[i][..]);
        }
        // Dumped whole (its links read), the rows of both pieces are written in order.
        reader.poll(true);
        reader.dump(&gdir, 3, "m1").unwrap();
        let (again, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert_eq!(again.points(), 400);
        for i in [0usize, 299, 300, 399] {
            assert_eq!(again.vector(again.rows[&VectorId::new(i as u64 + 1, 0).raw()]), &v[i][..]);
        }
        drop(again);
        // One flipped bit of a vector: the checksum refuses the dump, mapped or read.
        let path = gdir.join("graph.vectors");
        let mut bytes = std::fs::read(&path).unwrap();
        let at = bytes.len() - 7;
        bytes[at] ^= 0x10;
        std::fs::write(&path, &bytes).unwrap();
        let refused = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0");
        assert!(matches!(refused, Err(LoadFailure::Corrupt(why)) if why.contains("checksum")));
    }

    #[test]
    fn a_small_index_keeps_no_graph_until_it_passes_link_from() {
        let dir = tempfile::tempdir().unwrap();
        let gdir = dir.path().join("작은 vectors");
        let v = vecs(300, 16, 5);
        let format = || -> u64 {
            let m: serde_json::Value =
                serde_json::from_slice(&std::fs::read(gdir.join("manifest.json")).unwrap()).unwrap();
            m["format"].as_u64().unwrap()
        };
        let mut ann = Ann::unlinked(16, HnswParams::default(), 200);
        ann.insert(&items(&v, 0..150));
        assert!(ann.unbuilt() && !ann.graph_ready() && ann.dumps_without_links());
        assert_eq!(ann.search_exact(&v[7], None, 0, 1)[0].0, VectorId::new(8, 0));
        ann.dump(&gdir, 1, "m1").unwrap();
        assert_eq!(format(), 5);
        assert!(!gdir.join("graph.hnsw.graph").exists() && !gdir.join("graph.hnsw.data").exists(), "vectors alone");

        let (mut b, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        b.set_link_from(200);
        assert!(b.unbuilt() && b.points() == 150 && !b.loading());
        assert_eq!(b.search_exact(&v[7], None, 0, 3), ann.search_exact(&v[7], None, 0, 3));
        // Past 200 vectors the graph is built from every vector, the earlier ones included.
        b.insert(&items(&v, 150..300));
        assert!(b.graph_ready() && b.pending.is_empty());
        for i in [3usize, 149, 250] {
            assert_eq!(b.search_graph(&v[i], 3, 64, None)[0].0, VectorId::new(i as u64 + 1, 0), "vector {i}");
        }
        b.dump(&gdir, 2, "m1").unwrap();
        assert_eq!(format(), 3);

        // Loaded by a process for which the index is small, links never read are let go of:
        // the next dump writes the vectors alone, without reading them.
        let (mut c, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        c.set_link_from(1000);
        assert!(c.loading() && !c.unbuilt());
        c.shed_links();
        assert!(c.unbuilt() && c.dumps_without_links());
        c.dump(&gdir, 3, "m1").unwrap();
        assert!(c.loading.is_none(), "the links were not read");
        assert_eq!(format(), 5);
        let (d, _) = Ann::load(&gdir, 16, HnswParams::default(), "m1", "m0").unwrap();
        assert_eq!(d.points(), 300);
        assert_eq!(d.search_exact(&v[299], None, 0, 3), b.search_exact(&v[299], None, 0, 3));
    }

    #[test]
    fn too_many_unlinked_vectors_make_the_dump_read_the_links() {
        let mut ann = Ann::new(4, HnswParams::default(), 0);
        ann.graph = None;
        ann.deferred = Some(persist::Links::for_test());
        ann.pending = (0..UNLINKED_MAX as u64).collect();
        assert!(ann.dumps_without_links());
        ann.pending.push(u64::MAX);
        assert!(!ann.dumps_without_links());
        ann.deferred = None;
        ann.pending.clear();
        assert!(ann.dumps_without_links() && ann.unbuilt(), "no graph to carry: the vectors alone");
        let (_tx, rx) = std::sync::mpsc::channel();
        ann.loading = Some(std::sync::Mutex::new(rx));
        assert!(!ann.dumps_without_links(), "a graph being read must arrive first");
    }
}
