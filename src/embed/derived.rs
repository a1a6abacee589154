//! Files derived from a model's files and saved beside them the first time the model is loaded,
//! so that later processes start faster:
//! - [`OPTIMIZED`], `model.optimized.ort`: the model as ONNX Runtime optimised it, in ONNX
//!   Runtime's own format; ONNX Runtime reads its weights in place instead of parsing and
//!   copying a protobuf graph, then optimising it.
//! - [`TOKENIZER`], `tokenizer.compact`: the tokenizer as convdex holds it
//!   ([`super::ModelTokenizer::to_saved`]); read back without parsing the 17 MB
//!   `tokenizer.json` or hashing its 250,000 pieces into a table again.
//!
//! Each is checked before each use: a header names what it was derived from (the source file's
//! sha256 in the manifest, and for the graph the runtime and the CPU it was optimised for) and
//! the 128-bit XXH3 hash of what follows. A file whose header does not match, or whose bytes do
//! not hash to it (a disk error, a truncated copy), is removed and the model files are read
//! again (and a new file saved). The hash finds damage, not tampering: whoever can write the
//! model directory can write a matching hash (so no checksum of a file in that directory could
//! tell), while the source files are checked against the sha256 compiled into convdex before
//! anything is derived from them.
//!
//! Writes go to a temporary file in the same directory and are renamed into place, so a process
//! killed while writing, or two processes writing at once, leave either no file or a whole one.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::mapped::FileBytes;

/// A kind of derived file: its name in the model's directory and its first bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Derived {
    name: &'static str,
    magic: &'static [u8],
}

/// The model as ONNX Runtime optimised it.
pub(crate) const OPTIMIZED: Derived = Derived { name: "model.optimized.ort", magic: b"convdex-ort\n" };

/// The tokenizer as convdex holds it.
pub(crate) const TOKENIZER: Derived = Derived { name: "tokenizer.compact", magic: b"convdex-tok\n" };

/// What a derived file was derived from; a file for another key is not used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Key {
    /// sha256 of the source file (the model, or `tokenizer.json`).
    pub source_sha256: String,
    /// For the graph, the runtime that optimised it (its sha256, or its path, size and time
    /// when it was given by `ORT_DYLIB_PATH`); for the tokenizer, the name of its layout.
    pub runtime: String,
    /// The CPU family and vector extensions the graph was optimised for (empty for the
    /// tokenizer).
    pub target: String,
}

impl Key {
    /// The key of a model (`source_sha256`) optimised by `runtime` on this CPU.
    pub(crate) fn graph(source_sha256: &str, runtime: String) -> Key {
        Key { source_sha256: source_sha256.to_owned(), runtime, target: target() }
    }

    /// The key of a tokenizer (`source_sha256`: its `tokenizer.json`) saved in the layout named
    /// by `layout` (the saved bytes' first bytes).
    pub(crate) fn tokenizer(source_sha256: &str, layout: &[u8]) -> Key {
        Key {
            source_sha256: source_sha256.to_owned(),
            runtime: String::from_utf8_lossy(layout).into_owned(),
            target: String::new(),
        }
    }
}

/// The header written before the derived bytes.
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

impl Derived {
    /// The file of this kind in `dir`.
    pub(crate) fn path(self, dir: &Path) -> PathBuf {
        dir.join(self.name)
    }

    /// The derived file of `key` in `dir`, as the file's bytes (mapped where the platform
    /// allows: [`crate::mapped`]) and where the derived bytes start in them; `None` when there
    /// is none, or it is for another key or damaged (it is then removed).
    pub(crate) fn read(self, dir: &Path, key: &Key) -> Option<(FileBytes, usize)> {
        let bytes = crate::mapped::read(&self.path(dir)).ok()?;
        let found = self.parse(&bytes).filter(|(header, start)| {
            header.key == *key
                && bytes.len().checked_sub(*start) == usize::try_from(header.len).ok()
                && bytes.get(*start..).is_some_and(|derived| hash(derived) == header.xxh3)
        });
        match found {
            Some((_, start)) => Some((bytes, start)),
            None => {
                self.remove(dir);
                None
            }
        }
    }

    /// The header and where the derived bytes start.
    fn parse(self, bytes: &[u8]) -> Option<(Header, usize)> {
        let rest = bytes.strip_prefix(self.magic)?;
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let header = serde_json::from_slice(rest.get(4..4 + len)?).ok()?;
        Some((header, self.magic.len() + 4 + len))
    }

    /// Removes the file of this kind in `dir` (nothing when there is none or it cannot be
    /// removed).
    pub(crate) fn remove(self, dir: &Path) {
        let _ = std::fs::remove_file(self.path(dir));
    }

    /// A fresh temporary path in `dir` (for ONNX Runtime to save a graph to); `None` when
    /// `dir` cannot be written. The file is removed when the returned value is dropped.
    pub(crate) fn scratch(self, dir: &Path) -> Option<tempfile::TempPath> {
        self.temporary(dir).ok().map(|f| f.into_temp_path())
    }

    fn temporary(self, dir: &Path) -> std::io::Result<tempfile::NamedTempFile> {
        tempfile::Builder::new().prefix(&format!(".{}.", self.name)).suffix(".tmp").tempfile_in(dir)
    }

    /// Saves `derived` as the file of `key` in `dir`, in one rename, readable by whoever can
    /// read `like` (its source file: a temporary file is private).
    pub(crate) fn store(self, dir: &Path, key: &Key, derived: &[u8], like: &Path) -> Result<PathBuf, String> {
        if derived.is_empty() {
            return Err(format!("nothing to save as {}", self.name));
        }
        let header = Header { key: key.clone(), xxh3: hash(derived), len: derived.len() as u64 };
        let header = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
        let head_len = u32::try_from(header.len()).map_err(|_| "a header over 4 GiB".to_owned())?;
        let io = |e: std::io::Error| format!("{}: {e}", dir.display());
        let mut out = self.temporary(dir).map_err(io)?;
        out.write_all(self.magic).map_err(io)?;
        out.write_all(&head_len.to_le_bytes()).map_err(io)?;
        out.write_all(&header).map_err(io)?;
        out.write_all(derived).map_err(io)?;
        if let Ok(meta) = std::fs::metadata(like) {
            let _ = std::fs::set_permissions(out.path(), meta.permissions());
        }
        out.as_file().sync_all().map_err(io)?;
        let path = self.path(dir);
        out.persist(&path).map_err(|e| io(e.error))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Key {
        Key::graph("ab12", "runtime sha".into())
    }

    #[test]
    fn a_stored_file_reads_back_only_for_its_key_and_while_whole() {
        let dir = tempfile::Builder::new().prefix("模型-").tempdir().unwrap();
        let source = dir.path().join("model source");
        std::fs::write(&source, b"source").unwrap();
        let graph: Vec<u8> = (0..5_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let path = OPTIMIZED.store(dir.path(), &key(), &graph, &source).unwrap();
        let (bytes, start) = OPTIMIZED.read(dir.path(), &key()).unwrap();
        assert_eq!(&bytes[start..], &graph[..]);
        // Another model, another runtime: not used, and removed.
        assert!(OPTIMIZED.read(dir.path(), &Key::graph("cd34", "runtime sha".into())).is_none());
        assert!(!path.exists());
        // A byte flipped, or the file cut short: removed, never used.
        for damage in [|b: &mut Vec<u8>| *b.last_mut().unwrap() ^= 1, |b: &mut Vec<u8>| b.truncate(b.len() - 10)] {
            OPTIMIZED.store(dir.path(), &key(), &graph, &source).unwrap();
            let mut bytes = std::fs::read(&path).unwrap();
            damage(&mut bytes);
            std::fs::write(&path, &bytes).unwrap();
            assert!(OPTIMIZED.read(dir.path(), &key()).is_none());
            assert!(!path.exists());
        }
        // Not a derived file at all.
        std::fs::write(&path, b"convdex-ort\n\xff\xff\xff\xff").unwrap();
        assert!(OPTIMIZED.read(dir.path(), &key()).is_none());
        // The tokenizer's file is another file, read only for its own layout's version.
        let tokens = TOKENIZER.store(dir.path(), &Key::tokenizer("ef56", b"layout 1"), b"vocabulary", &source).unwrap();
        assert_ne!(tokens, path);
        assert!(OPTIMIZED.read(dir.path(), &key()).is_none());
        assert_eq!(
            TOKENIZER.read(dir.path(), &Key::tokenizer("ef56", b"layout 1")).map(|(b, s)| b[s..].to_vec()).unwrap(),
            b"vocabulary"
        );
        assert!(TOKENIZER.read(dir.path(), &Key::tokenizer("ef56", b"layout 2")).is_none());
        assert!(!tokens.exists());
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, vec![std::ffi::OsString::from("model source")]);
        assert!(OPTIMIZED.store(dir.path(), &key(), b"", &source).is_err());
        assert!(OPTIMIZED.store(&dir.path().join("no such dir"), &key(), &graph, &source).is_err());
    }
}
