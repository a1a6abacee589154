//! The model as ONNX Runtime optimised it, saved in ONNX Runtime's own format beside the model
//! files the first time it is loaded (`model.optimized.ort`), so that later processes start
//! their session from it: ONNX Runtime reads that format's weights in place instead of parsing
//! and copying a protobuf graph, then optimising it.
//!
//! The file is derived, and checked before each use: a header names the model (its sha256 in
//! the manifest), the runtime and the CPU it was optimised for, and the 128-bit XXH3 hash of
//! what follows. A file whose header does not match, or whose bytes do not hash to it (a disk
//! error, a truncated copy), is removed and the session starts from the model again (and saves
//! a new file). The hash finds damage, not tampering: whoever can write the model directory can
//! write a matching hash (so no checksum of a file in that directory could tell), while the
//! model itself is checked against the sha256 compiled into convdex before it is optimised.
//!
//! Writes go to a temporary file in the same directory and are renamed into place, so a process
//! killed while writing, or two processes writing at once, leave either no file or a whole one.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The file's name, in the model's directory.
pub(crate) const FILE: &str = "model.optimized.ort";

/// The first bytes of the file.
const MAGIC: &[u8; 12] = b"convdex-ort\n";

/// What the saved graph was derived from; a file for another key is not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Key {
    /// sha256 of the model file it was optimised from.
    pub source_sha256: String,
    /// The runtime that optimised it (its sha256, or its path, size and time when it was
    /// given by `ORT_DYLIB_PATH`).
    pub runtime: String,
    /// The CPU family and vector extensions it was optimised for.
    pub target: String,
}

impl Key {
    /// The key of a model (`source_sha256`) optimised by `runtime` on this CPU.
    pub(crate) fn new(source_sha256: &str, runtime: String) -> Key {
        Key { source_sha256: source_sha256.to_owned(), runtime, target: target() }
    }
}

/// The header written before the saved graph.
#[derive(Serialize, Deserialize)]
struct Header {
    key: Key,
    /// XXH3-128 of the bytes after the header, in hex.
    xxh3: String,
    /// Their length.
    len: u64,
}

/// This CPU's family and the vector extensions that change how ONNX Runtime lays out a graph.
fn target() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        let mut t = String::from("x86_64");
        for (name, on) in [
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx512vnni", std::arch::is_x86_feature_detected!("avx512vnni")),
        ] {
            if on {
                t.push(' ');
                t.push_str(name);
            }
        }
        t
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH.to_owned()
    }
}

fn hash(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// The saved graph of `key` in `dir`, as the file's bytes and where the graph starts in them;
/// `None` when there is none, or it is for another key or damaged (it is then removed).
pub(crate) fn read(dir: &Path, key: &Key) -> Option<(Vec<u8>, usize)> {
    let path = dir.join(FILE);
    let bytes = std::fs::read(&path).ok()?;
    let found = parse(&bytes).filter(|(header, start)| {
        header.key == *key
            && bytes.len().checked_sub(*start) == usize::try_from(header.len).ok()
            && bytes.get(*start..).is_some_and(|graph| hash(graph) == header.xxh3)
    });
    match found {
        Some((_, start)) => Some((bytes, start)),
        None => {
            remove(dir);
            None
        }
    }
}

/// The header and where the graph starts.
fn parse(bytes: &[u8]) -> Option<(Header, usize)> {
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    let header = serde_json::from_slice(rest.get(4..4 + len)?).ok()?;
    Some((header, MAGIC.len() + 4 + len))
}

/// Removes the saved graph of `dir` (nothing when there is none or it cannot be removed).
pub(crate) fn remove(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(FILE));
}

/// A fresh temporary path in `dir` for ONNX Runtime to save a graph to; `None` when `dir`
/// cannot be written. The file is removed when the returned value is dropped.
pub(crate) fn scratch(dir: &Path) -> Option<tempfile::TempPath> {
    tempfile::Builder::new()
        .prefix(".model.optimized.")
        .suffix(".tmp")
        .tempfile_in(dir)
        .ok()
        .map(|f| f.into_temp_path())
}

/// Saves the graph ONNX Runtime wrote to `saved` as the file of `key` in `dir`, in one rename,
/// readable by whoever can read `like` (the model file: a temporary file is private).
pub(crate) fn store(dir: &Path, key: &Key, saved: &Path, like: &Path) -> Result<PathBuf, String> {
    let graph = std::fs::read(saved).map_err(|e| format!("{}: {e}", saved.display()))?;
    if graph.is_empty() {
        return Err(format!("{} is empty: ONNX Runtime saved no graph", saved.display()));
    }
    let header = Header { key: key.clone(), xxh3: hash(&graph), len: graph.len() as u64 };
    let header = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
    let head_len = u32::try_from(header.len()).map_err(|_| "a header over 4 GiB".to_owned())?;
    let io = |e: std::io::Error| format!("{}: {e}", dir.display());
    let mut out = tempfile::Builder::new().prefix(".model.optimized.").suffix(".tmp").tempfile_in(dir).map_err(io)?;
    out.write_all(MAGIC).map_err(io)?;
    out.write_all(&head_len.to_le_bytes()).map_err(io)?;
    out.write_all(&header).map_err(io)?;
    out.write_all(&graph).map_err(io)?;
    if let Ok(meta) = std::fs::metadata(like) {
        let _ = std::fs::set_permissions(out.path(), meta.permissions());
    }
    out.as_file().sync_all().map_err(io)?;
    let path = dir.join(FILE);
    out.persist(&path).map_err(|e| io(e.error))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::new("ab12", "runtime sha".into())
    }

    #[test]
    fn a_stored_graph_reads_back_only_for_its_key_and_while_whole() {
        let dir = tempfile::Builder::new().prefix("模型-").tempdir().unwrap();
        let saved = dir.path().join("saved by the runtime");
        let graph: Vec<u8> = (0..5_000u32).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(&saved, &graph).unwrap();
        let path = store(dir.path(), &key(), &saved, &saved).unwrap();
        let (bytes, start) = read(dir.path(), &key()).unwrap();
        assert_eq!(&bytes[start..], &graph[..]);
        // Another model, another runtime: not used, and removed.
        assert!(read(dir.path(), &Key::new("cd34", "runtime sha".into())).is_none());
        assert!(!path.exists());
        // A byte flipped in the graph, or the file cut short: removed, never used.
        for damage in [|b: &mut Vec<u8>| *b.last_mut().unwrap() ^= 1, |b: &mut Vec<u8>| b.truncate(b.len() - 10)] {
            store(dir.path(), &key(), &saved, &saved).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            damage(&mut bytes);
            std::fs::write(&path, &bytes).unwrap();
            assert!(read(dir.path(), &key()).is_none());
            assert!(!path.exists());
        }
        // Not a saved graph at all.
        std::fs::write(&path, b"convdex-ort\n\xff\xff\xff\xff").unwrap();
        assert!(read(dir.path(), &key()).is_none());
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("saved by the runtime")]);
        assert!(store(dir.path(), &key(), &dir.path().join("nothing"), &saved).is_err());
        std::fs::write(&saved, b"").unwrap();
        assert!(store(dir.path(), &key(), &saved, &saved).is_err());
    }
}
