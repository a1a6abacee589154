//! Persisting the graph: [`Ann::dump`] writes it into a fresh directory with a manifest (format
//! version, store generation, file sizes and xxh3 checksums) and swaps it in place of the old
//! one; [`Ann::load`] verifies the manifest before hnsw_rs, whose loader asserts (panics) on
//! malformed input, reads anything, and loads the links on a background thread.

use std::path::Path;

use hnsw_rs::prelude::{AnnT, HnswIo};
use serde::{Deserialize, Serialize};

use super::{Ann, Graph, HnswParams, UnitCosine};
use crate::error::{Error, Result};
use crate::ids::LoadFailure;

const DUMP_FORMAT: u32 = 3;
const BASENAME: &str = "graph";

#[derive(Debug, Serialize, Deserialize)]
struct DumpManifest {
    format: u32,
    generation: u64,
    dim: usize,
    points: usize,
    files: Vec<(String, u64, u64)>, // name, length, xxh3
    /// Deleted documents whose vectors are still in the graph.
    tombstones: Vec<u64>,
    /// Id of the model whose vectors these are (empty in dumps written before models could
    /// change).
    #[serde(default)]
    model: String,
}

impl Ann {
    /// Writes the graph to `dir` atomically (a fresh directory swapped into place). The caller
    /// first finishes a background load (`poll(true)`).
    pub(crate) fn dump(&self, dir: &Path, generation: u64, model: &str) -> Result<()> {
        let Some(graph) = self.graph.as_ref() else {
            return Err(Error::InvalidArgument("graph still loading; poll(true) before dump".into()));
        };
        let parent = dir.parent().unwrap_or(Path::new("."));
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("vectors");
        let tmp = parent.join(format!("{name}.tmp"));
        let old = parent.join(format!("{name}.old"));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        if self.rows.is_empty() {
            // hnsw_rs cannot dump an empty graph; an empty manifest stands for it.
        } else {
            graph.file_dump(&tmp, BASENAME).map_err(|e| Error::io(&tmp, std::io::Error::other(e.to_string())))?;
        }
        write_synced(&tmp.join(VECTORS_FILE), &self.vectors_bytes())?;
        let mut files = Vec::new();
        for suffix in ["hnsw.graph", "hnsw.data", "vectors"] {
            let f = tmp.join(format!("{BASENAME}.{suffix}"));
            if f.exists() && !self.rows.is_empty() {
                let bytes = std::fs::read(&f).map_err(|e| Error::io(&f, e))?;
                files.push((format!("{BASENAME}.{suffix}"), bytes.len() as u64, xxhash_rust::xxh3::xxh3_64(&bytes)));
            }
        }
        let mut tombstones: Vec<u64> = self.tombstones.iter().copied().collect();
        tombstones.sort_unstable();
        let manifest = DumpManifest {
            format: DUMP_FORMAT,
            generation,
            dim: self.dim,
            points: self.rows.len(),
            files,
            tombstones,
            model: model.to_string(),
        };
        let mpath = tmp.join("manifest.json");
        let text = serde_json::to_vec(&manifest).map_err(|e| Error::io(&mpath, std::io::Error::other(e)))?;
        write_synced(&mpath, &text)?;
        for (f, _, _) in &manifest.files {
            let p = tmp.join(f);
            std::fs::File::open(&p).and_then(|f| f.sync_all()).map_err(|e| Error::io(&p, e))?;
        }
        let _ = std::fs::remove_dir_all(&old);
        if dir.exists() {
            std::fs::rename(dir, &old).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::rename(&tmp, dir).map_err(|e| Error::io(dir, e))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    }

    /// Loads a graph written by [`Ann::dump`] from the vectors of model `model`; returns it
    /// with the generation it reflects. A dump of another model's vectors is refused
    /// ([`LoadFailure::Corrupt`]); `unnamed_is` is the model a dump that names none holds.
    pub(crate) fn load(
        dir: &Path,
        dim: usize,
        params: HnswParams,
        model: &str,
        unnamed_is: &str,
    ) -> std::result::Result<(Ann, u64), LoadFailure> {
        let mpath = dir.join("manifest.json");
        let bytes = match std::fs::read(&mpath) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadFailure::Missing),
            Err(e) => return Err(LoadFailure::Corrupt(format!("manifest unreadable: {e}"))),
        };
        let m: DumpManifest =
            serde_json::from_slice(&bytes).map_err(|e| LoadFailure::Corrupt(format!("manifest: {e}")))?;
        if m.format != DUMP_FORMAT {
            return Err(LoadFailure::Corrupt(format!("dump format {} (expected {DUMP_FORMAT})", m.format)));
        }
        if m.dim != dim {
            return Err(LoadFailure::Corrupt(format!("dump has {} dims, collection {dim}", m.dim)));
        }
        let dumped = if m.model.is_empty() { unnamed_is } else { m.model.as_str() };
        if dumped != model {
            return Err(LoadFailure::Corrupt(format!("dump holds vectors of model {dumped}, the store of {model}")));
        }
        if m.points == 0 {
            return Ok((Ann::new(dim, params, 0), m.generation));
        }
        if m.files.len() != 3 {
            return Err(LoadFailure::Corrupt("graph files missing from manifest".into()));
        }
        let mut vectors = Vec::new();
        for (name, len, hash) in &m.files {
            let p = dir.join(name);
            let data = match std::fs::read(&p) {
                Ok(d) => d,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadFailure::Missing),
                Err(e) => return Err(LoadFailure::Corrupt(format!("{name}: {e}"))),
            };
            if data.len() as u64 != *len || xxhash_rust::xxh3::xxh3_64(&data) != *hash {
                return Err(LoadFailure::Corrupt(format!("{name}: size or checksum differs from manifest")));
            }
            if name == VECTORS_FILE {
                vectors = data;
            }
        }
        let mut ann = Ann::new(dim, params, 0);
        ann.graph = None;
        ann.read_vectors(&vectors, m.points).map_err(LoadFailure::Corrupt)?;
        // hnsw_rs's loader builds millions of small allocations (seconds at 100k vectors), so
        // it runs in the background, and only once a search wants to walk the graph (see
        // `Ann::poll`); until the links are in, the exact scan answers.
        ann.deferred = Some(dir.to_path_buf());
        ann.tombstones = m.tombstones.into_iter().collect();
        Ok((ann, m.generation))
    }
}

/// Reads a dump's graph links on a new thread; the receiver gets the graph or why not.
/// hnsw_rs ties the graph's lifetime to its loader, which is a few hundred bytes and leaked
/// once per load so the graph can be 'static.
pub(super) fn read_links(dir: std::path::PathBuf) -> std::sync::mpsc::Receiver<std::result::Result<Graph, String>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let io: &'static HnswIo = Box::leak(Box::new(HnswIo::new(&dir, BASENAME)));
        let loaded = std::panic::catch_unwind(|| io.load_hnsw_with_dist::<f32, UnitCosine>(UnitCosine));
        let _ = tx.send(match loaded {
            Ok(Ok(g)) => Ok(g),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("hnsw_rs rejected the files".to_string()),
        });
    });
    rx
}

const VECTORS_FILE: &str = "graph.vectors";
const VECTORS_MAGIC: &[u8; 8] = b"CVXVEC01";

impl Ann {
    /// `graph.vectors`: magic, dim (u32 LE), count (u64 LE), ids (u64 LE each), then the
    /// vectors (f32 LE), in arena order. Read back in one pass on open.
    fn vectors_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(20 + self.row_ids.len() * (8 + 4 * self.dim));
        out.extend_from_slice(VECTORS_MAGIC);
        out.extend_from_slice(&(self.dim as u32).to_le_bytes());
        out.extend_from_slice(&(self.row_ids.len() as u64).to_le_bytes());
        for id in &self.row_ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        for x in &self.arena {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    fn read_vectors(&mut self, b: &[u8], points: usize) -> std::result::Result<(), String> {
        let header = 8 + 4 + 8;
        if b.len() < header || &b[..8] != VECTORS_MAGIC {
            return Err("vectors file: bad header".into());
        }
        let dim = u32::from_le_bytes(b[8..12].try_into().expect("4 bytes")) as usize;
        let n = u64::from_le_bytes(b[12..20].try_into().expect("8 bytes")) as usize;
        if dim != self.dim || n != points || b.len() != header + n * 8 + n * dim * 4 {
            return Err("vectors file: size differs from manifest".into());
        }
        let (ids, data) = b[header..].split_at(n * 8);
        self.row_ids = ids.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
        self.arena = data.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect();
        self.rows = self.row_ids.iter().enumerate().map(|(r, id)| (*id, r as u32)).collect();
        Ok(())
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| Error::io(path, e))
}
