//! Persisting the graph: [`Ann::dump`] writes it into a fresh directory with a manifest (format
//! version, store generation, file sizes and xxh3 checksums) and swaps it in place of the old
//! one; [`Ann::load`] reads and verifies the vectors, and leaves the links for later: they are
//! verified and read on a background thread (hnsw_rs's loader asserts, or ends the process, on
//! malformed input, so it never reads an unverified file) once a search wants to walk them.
//!
//! Files: `graph.hnsw.graph` and `graph.hnsw.data` (hnsw_rs's dump), `graph.vectors` (the
//! vectors the graph holds, in arena order) and, in format 4, `graph.added`: vectors added
//! since the graph files were written, same layout, not linked into the graph yet. A write to a
//! collection whose links were never read writes only `graph.added` and carries the other
//! three over (hard-linked, or copied), so adding a session costs its own vectors, not a read
//! and a rewrite of every link and vector. An index that keeps no graph ([`Ann::unlinked`])
//! writes `graph.vectors` alone (format 5).

use std::path::Path;

use hnsw_rs::prelude::{AnnT, HnswIo};
use serde::{Deserialize, Serialize};

use super::{Ann, Graph, HnswParams, UnitCosine};
use crate::durable::write_synced;
use crate::error::{Error, Result};
use crate::ids::LoadFailure;

/// The graph and every vector it holds.
const DUMP_FORMAT: u32 = 3;
/// Format 3 plus `graph.added`. A version that knows only format 3 rebuilds such a dump rather
/// than miss the added vectors.
const DUMP_FORMAT_ADDED: u32 = 4;
/// The vectors alone (`graph.vectors`), of an index too small to keep a graph
/// ([`Ann::unlinked`]). A version that knows only formats 3 and 4 rebuilds from the store.
const DUMP_FORMAT_VECTORS: u32 = 5;
const BASENAME: &str = "graph";
const GRAPH_FILES: [&str; 2] = ["graph.hnsw.graph", "graph.hnsw.data"];
const VECTORS_FILE: &str = "graph.vectors";
const ADDED_FILE: &str = "graph.added";
const VECTORS_MAGIC: &[u8; 8] = b"CVXVEC01";

/// A manifest entry: file name, length, xxh3.
type FileEntry = (String, u64, u64);

/// A persisted graph whose links are not read yet: its directory, the manifest entries of the
/// graph files and of `graph.vectors` (carried over unchanged by a dump written before the
/// links are read), and how many arena rows `graph.vectors` holds (the rows after them are the
/// added ones).
#[derive(Debug)]
pub(crate) struct Links {
    dir: std::path::PathBuf,
    files: Vec<FileEntry>,
    base_rows: usize,
}

#[cfg(test)]
impl Links {
    pub(crate) fn for_test() -> Links {
        Links { dir: std::path::PathBuf::new(), files: Vec::new(), base_rows: 0 }
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct DumpManifest {
    format: u32,
    generation: u64,
    dim: usize,
    points: usize,
    files: Vec<FileEntry>,
    /// Deleted documents whose vectors are still in the graph.
    tombstones: Vec<u64>,
    /// Id of the model whose vectors these are (empty in dumps written before models could
    /// change).
    #[serde(default)]
    model: String,
}

impl Ann {
    /// Writes the graph to `dir` atomically (a fresh directory swapped into place). A graph
    /// whose links were never read is written without reading them (format 4: the graph files
    /// and `graph.vectors` carried over, the vectors added since in `graph.added`). A graph
    /// being read in the background must arrive first (`poll(true)`).
    pub(crate) fn dump(&self, dir: &Path, generation: u64, model: &str) -> Result<()> {
        if self.loading.is_some() {
            return Err(Error::InvalidArgument("graph still loading; poll(true) before dump".into()));
        }
        let parent = dir.parent().unwrap_or(Path::new("."));
        let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("vectors");
        let tmp = parent.join(format!("{name}.tmp"));
        let old = parent.join(format!("{name}.old"));
        // A fresh directory, never a leftover one: a file left in it could be a hard link of a
        // live dump's file, and writing it would change that file in place.
        remove_set_aside(parent, name);
        clear(parent, name, &tmp)?;
        std::fs::create_dir(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let mut files = Vec::new();
        let mut format = DUMP_FORMAT;
        // hnsw_rs cannot dump an empty graph; an empty manifest stands for it.
        // Every row, as `graph.vectors`: beside a graph's files, or alone.
        let all_rows = || write_vectors(&tmp, VECTORS_FILE, self.dim, &self.row_ids, self.arena.rows_from(0, self.dim));
        if !self.rows.is_empty() {
            match (&self.graph, &self.deferred) {
                (Some(graph), _) => {
                    graph
                        .file_dump(&tmp, BASENAME)
                        .map_err(|e| Error::io(&tmp, std::io::Error::other(e.to_string())))?;
                    for f in GRAPH_FILES {
                        let path = tmp.join(f);
                        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                        files.push((f.to_string(), bytes.len() as u64, xxhash_rust::xxh3::xxh3_64(&bytes)));
                    }
                    files.push(all_rows()?);
                }
                (None, Some(links)) => {
                    for entry in &links.files {
                        link_or_copy(&links.dir.join(&entry.0), &tmp.join(&entry.0))?;
                        files.push(entry.clone());
                    }
                    let base = links.base_rows;
                    if base < self.row_ids.len() {
                        let rows = self.arena.rows_from(base, self.dim);
                        files.push(write_vectors(&tmp, ADDED_FILE, self.dim, &self.row_ids[base..], rows)?);
                        format = DUMP_FORMAT_ADDED;
                    }
                }
                (None, None) => {
                    files.push(all_rows()?);
                    format = DUMP_FORMAT_VECTORS;
                }
            }
        }
        let mut tombstones: Vec<u64> = self.tombstones.iter().copied().collect();
        tombstones.sort_unstable();
        let manifest = DumpManifest {
            format,
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
        clear(parent, name, &old)?;
        if dir.exists() {
            std::fs::rename(dir, &old).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::rename(&tmp, dir).map_err(|e| Error::io(dir, e))?;
        let _ = std::fs::remove_dir_all(&old);
        Ok(())
    }

    /// Loads a graph written by [`Ann::dump`] from the vectors of model `model`; returns it
    /// with the generation it reflects. Reads and verifies the vectors now; the graph files
    /// are only checked for presence and length (their checksums are verified when the links
    /// are read). A dump of another model's vectors is refused ([`LoadFailure::Corrupt`]);
    /// `unnamed_is` is the model a dump that names none holds.
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
        if ![DUMP_FORMAT, DUMP_FORMAT_ADDED, DUMP_FORMAT_VECTORS].contains(&m.format) {
            return Err(LoadFailure::Corrupt(format!(
                "dump format {} (expected {DUMP_FORMAT}, {DUMP_FORMAT_ADDED} or {DUMP_FORMAT_VECTORS})",
                m.format
            )));
        }
        if m.dim != dim {
            return Err(LoadFailure::Corrupt(format!("dump has {} dims, collection {dim}", m.dim)));
        }
        let dumped = if m.model.is_empty() { unnamed_is } else { m.model.as_str() };
        if dumped != model {
            return Err(LoadFailure::Corrupt(format!("dump holds vectors of model {dumped}, the store of {model}")));
        }
        if m.points == 0 {
            return Ok((Ann::unlinked(dim, params, 0), m.generation));
        }
        let names: Vec<&str> = m.files.iter().map(|f| f.0.as_str()).collect();
        let mut expected = vec![GRAPH_FILES[0], GRAPH_FILES[1], VECTORS_FILE];
        if m.format == DUMP_FORMAT_ADDED {
            expected.push(ADDED_FILE);
        }
        if m.format == DUMP_FORMAT_VECTORS {
            expected = vec![VECTORS_FILE];
        }
        if names != expected {
            return Err(LoadFailure::Corrupt(format!("manifest lists {names:?}, expected {expected:?}")));
        }
        let mut ann = Ann::new(dim, params, 0);
        ann.graph = None;
        let (mut graph_files, mut base_rows) = (Vec::new(), 0);
        for entry in &m.files {
            let (name, len, _) = entry;
            let path = dir.join(name);
            if GRAPH_FILES.contains(&name.as_str()) {
                // Present and whole; the checksum waits until the links are read.
                match std::fs::metadata(&path) {
                    Ok(meta) if meta.len() == *len => {}
                    Ok(_) => return Err(LoadFailure::Corrupt(format!("{name}: size differs from manifest"))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(LoadFailure::Missing),
                    Err(e) => return Err(LoadFailure::Corrupt(format!("{name}: {e}"))),
                }
                graph_files.push(entry.clone());
                continue;
            }
            ann.read_vectors(&path, entry).map_err(|why| match why {
                None => LoadFailure::Missing,
                Some(why) => LoadFailure::Corrupt(why),
            })?;
            if name == VECTORS_FILE {
                base_rows = ann.row_ids.len();
                graph_files.push(entry.clone());
            }
        }
        if ann.rows.len() != m.points {
            return Err(LoadFailure::Corrupt(format!("{} vectors, manifest says {}", ann.rows.len(), m.points)));
        }
        // The added vectors wait to be linked into the graph. hnsw_rs's loader builds
        // millions of small allocations (seconds at 100k vectors), so it runs in the
        // background, and only once a search wants to walk the graph (see `Ann::poll`); until
        // the links are in, the exact scan answers.
        if m.format != DUMP_FORMAT_VECTORS {
            ann.pending = ann.row_ids[base_rows..].to_vec();
            ann.deferred = Some(Links { dir: dir.to_path_buf(), files: graph_files, base_rows });
        }
        ann.tombstones = m.tombstones.into_iter().collect();
        Ok((ann, m.generation))
    }

    /// Appends the rows of a vectors file (magic, dim u32 LE, count u64 LE, the ids u64 LE,
    /// then the vectors f32 LE) to the arena, checking its length and xxh3 against its
    /// manifest entry. The first file is mapped where the platform allows ([`arena`]): its
    /// checksum is computed over the map, and its rows are scanned where they lie. Otherwise
    /// the file is read straight into the arena a megabyte at a time, each piece hashed while
    /// it is in cache: one copy of the vectors, no second buffer. `Err(None)` when the file is
    /// missing; on any other error the dump is refused as a whole.
    ///
    /// [`arena`]: super::arena
    fn read_vectors(&mut self, path: &Path, entry: &FileEntry) -> std::result::Result<(), Option<String>> {
        let (name, len, _) = entry;
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
            Err(e) => return Err(Some(format!("{name}: {e}"))),
        };
        let size = file.metadata().map_err(|e| Some(format!("{name}: {e}")))?.len();
        if size != *len {
            return Err(damaged(name));
        }
        #[cfg(all(unix, target_endian = "little"))]
        if let Some(map) = self.arena.map(&file, size) {
            return self.take_mapped(map, entry);
        }
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        let mut header = [0u8; HEADER];
        read_hashed(&mut file, &mut header, &mut hasher).map_err(|_| damaged(name))?;
        let n = self.check_header(name, &header, size)?;
        let mut ids = vec![0u64; n];
        read_hashed(&mut file, zerocopy::IntoBytes::as_mut_bytes(&mut ids[..]), &mut hasher)
            .map_err(|_| damaged(name))?;
        let rows = self.arena.grow(n * self.dim);
        read_hashed(&mut file, zerocopy::IntoBytes::as_mut_bytes(&mut rows[..]), &mut hasher)
            .map_err(|_| damaged(name))?;
        // The file is little-endian; on a little-endian machine this is a no-op.
        for x in rows.iter_mut() {
            *x = f32::from_bits(u32::from_le(x.to_bits()));
        }
        if hasher.digest() != entry.2 {
            return Err(damaged(name));
        }
        self.take_ids(name, ids.into_iter().map(u64::from_le))
    }

    /// [`Ann::read_vectors`] over a mapped file: verified whole, then its rows kept where they
    /// lie.
    #[cfg(all(unix, target_endian = "little"))]
    fn take_mapped(
        &mut self,
        map: memmap2::Mmap,
        (name, _, hash): &FileEntry,
    ) -> std::result::Result<(), Option<String>> {
        if xxhash_rust::xxh3::xxh3_64(&map) != *hash {
            return Err(damaged(name));
        }
        let header: [u8; HEADER] = map.get(..HEADER).and_then(|h| h.try_into().ok()).ok_or_else(|| damaged(name))?;
        let n = self.check_header(name, &header, map.len() as u64)?;
        let ids: Vec<u64> = map[HEADER..HEADER + n * 8]
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        if !self.arena.keep_mapped(map, HEADER + n * 8, n * self.dim) {
            return Err(Some(format!("{name}: its vectors cannot be read in place")));
        }
        self.take_ids(name, ids.into_iter())
    }

    /// Checks a vectors file's header against the index and the file's size; returns how many
    /// rows it holds.
    fn check_header(&self, name: &str, header: &[u8; HEADER], size: u64) -> std::result::Result<usize, Option<String>> {
        if &header[..8] != VECTORS_MAGIC {
            return Err(Some(format!("{name}: bad header")));
        }
        let dim = u32::from_le_bytes(header[8..12].try_into().expect("4 bytes")) as usize;
        let n = u64::from_le_bytes(header[12..20].try_into().expect("8 bytes")) as usize;
        let expected = n.checked_mul(8 + dim * 4).and_then(|x| x.checked_add(HEADER));
        if dim != self.dim || expected != usize::try_from(size).ok() {
            return Err(Some(format!("{name}: size differs from its header")));
        }
        Ok(n)
    }

    /// Records the ids of rows just appended to the arena, in order.
    fn take_ids(&mut self, name: &str, ids: impl Iterator<Item = u64>) -> std::result::Result<(), Option<String>> {
        for id in ids {
            if self.rows.insert(id, self.row_ids.len() as u32).is_some() {
                return Err(Some(format!("{name}: vector {id} appears twice")));
            }
            self.row_ids.push(id);
        }
        Ok(())
    }
}

/// A vectors file's header: magic (8 bytes), dim (u32), count (u64).
const HEADER: usize = 20;

/// Why a file whose bytes disagree with its manifest entry is refused.
fn damaged(name: &str) -> Option<String> {
    Some(format!("{name}: size or checksum differs from manifest"))
}

/// The prefix of the directories [`clear`] sets aside beside `name`.
fn aside_prefix(name: &str) -> String {
    format!("{name}.aside.")
}

/// Removes what earlier dumps set aside beside `parent/name` ([`clear`]), as far as it can
/// now be removed.
fn remove_set_aside(parent: &Path, name: &str) {
    let aside = aside_prefix(name);
    if let Ok(entries) = std::fs::read_dir(parent) {
        for e in entries.flatten() {
            if e.file_name().to_str().is_some_and(|n| n.starts_with(&aside)) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// Removes the directory `path` (a dump's `.tmp` or `.old` beside `parent/name`); where it
/// cannot be removed (an NFS mount keeps a file that a process still maps as `.nfs…` until it
/// is let go of), sets it aside under a name of its own, which a later dump removes
/// ([`remove_set_aside`]). Only an error to set it aside is an error.
fn clear(parent: &Path, name: &str, path: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(path);
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let to = parent.join(format!("{}{}-{nanos}", aside_prefix(name), std::process::id()));
    std::fs::rename(path, &to).map_err(|e| Error::io(path, e))
}

/// Fills `buf` from `file` a megabyte at a time, hashing each piece as it arrives.
fn read_hashed(file: &mut std::fs::File, buf: &mut [u8], hasher: &mut xxhash_rust::xxh3::Xxh3) -> std::io::Result<()> {
    use std::io::Read;
    for piece in buf.chunks_mut(1 << 20) {
        file.read_exact(piece)?;
        hasher.update(piece);
    }
    Ok(())
}

/// Verifies a dump's graph files, then reads its links, on a new thread; the receiver gets the
/// graph or why not. hnsw_rs ties the graph's lifetime to its loader, which is a few hundred
/// bytes and leaked once per load so the graph can be 'static.
pub(super) fn read_links(links: Links) -> std::sync::mpsc::Receiver<std::result::Result<Graph, String>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let Some(why) = verify_links(&links) {
            let _ = tx.send(Err(why));
            return;
        }
        let io: &'static HnswIo = Box::leak(Box::new(HnswIo::new(&links.dir, BASENAME)));
        let loaded = std::panic::catch_unwind(|| io.load_hnsw_with_dist::<f32, UnitCosine>(UnitCosine));
        let _ = tx.send(match loaded {
            Ok(Ok(g)) => Ok(g),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("hnsw_rs rejected the files".to_string()),
        });
    });
    rx
}

/// Why the graph files of `links` do not match their manifest entries, if they do not.
pub(super) fn verify_links(links: &Links) -> Option<String> {
    links.files.iter().filter(|f| GRAPH_FILES.contains(&f.0.as_str())).find_map(|entry| {
        read_verified(&links.dir.join(&entry.0), entry)
            .err()
            .map(|why| why.unwrap_or_else(|| format!("{} is missing", entry.0)))
    })
}

/// A file's bytes when its length and xxh3 match its manifest entry; `Err(None)` when it is
/// missing, `Err(Some(why))` otherwise.
fn read_verified(path: &Path, (name, len, hash): &FileEntry) -> std::result::Result<Vec<u8>, Option<String>> {
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(e) => return Err(Some(format!("{name}: {e}"))),
    };
    if data.len() as u64 != *len || xxhash_rust::xxh3::xxh3_64(&data) != *hash {
        return Err(Some(format!("{name}: size or checksum differs from manifest")));
    }
    Ok(data)
}

/// Writes `ids` and their rows (`rows`, in pieces) as a vectors file in `dir`; returns its
/// manifest entry.
fn write_vectors(dir: &Path, name: &str, dim: usize, ids: &[u64], rows: [&[f32]; 2]) -> Result<FileEntry> {
    let mut out = Vec::with_capacity(20 + ids.len() * (8 + 4 * dim));
    out.extend_from_slice(VECTORS_MAGIC);
    out.extend_from_slice(&(dim as u32).to_le_bytes());
    out.extend_from_slice(&(ids.len() as u64).to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    for x in rows.into_iter().flatten() {
        out.extend_from_slice(&x.to_le_bytes());
    }
    write_synced(&dir.join(name), &out)?;
    Ok((name.to_string(), out.len() as u64, xxhash_rust::xxh3::xxh3_64(&out)))
}

/// Hard-links `from` as `to` (same file system: no bytes copied), or copies it.
fn link_or_copy(from: &Path, to: &Path) -> Result<()> {
    if std::fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    std::fs::copy(from, to).map(|_| ()).map_err(|e| Error::io(from, e))
}
