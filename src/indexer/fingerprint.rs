//! Session fingerprints: per file of a session its path, size, mtime, the bytes consumed (up to
//! the last complete line) and the xxh3 of that prefix. Same size and mtime for every file: the
//! session is unchanged and costs a `stat`. Every old prefix unchanged: it grew (an append).
//! Anything else: it was rewritten.

use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct FileState {
    pub(crate) path: String,
    pub(crate) size: u64,
    pub(crate) mtime_ms: i64,
    pub(crate) consumed: u64,
    pub(crate) prefix_hash: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionState {
    pub(crate) files: Vec<FileState>,
    pub(crate) messages: usize,
}

pub(crate) fn file_state(path: &Path) -> Option<(u64, i64)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    Some((m.len(), mtime))
}

impl SessionState {
    /// True when every file of the session has the size and mtime recorded last time.
    pub(crate) fn unchanged(&self, files: &[(&Path, Option<(u64, i64)>)]) -> bool {
        self.files.len() == files.len()
            && files.iter().all(|(p, st)| {
                self.files.iter().any(|f| f.path == p.to_string_lossy() && Some((f.size, f.mtime_ms)) == *st)
            })
    }

    /// True when the file at `path`, now holding `bytes`, still starts with what was consumed
    /// last time (or is new to the session).
    pub(crate) fn kept_prefix(&self, path: &str, bytes: &[u8]) -> bool {
        self.files.iter().find(|f| f.path == path).is_none_or(|old| {
            bytes.get(..old.consumed as usize).is_some_and(|head| xxhash_rust::xxh3::xxh3_64(head) == old.prefix_hash)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unchanged_and_grown_sessions_are_told_apart() {
        let bytes = b"line one\nline two\n";
        let st = SessionState {
            files: vec![FileState {
                path: "/p/s.jsonl".into(),
                size: 9,
                mtime_ms: 5,
                consumed: 9,
                prefix_hash: xxhash_rust::xxh3::xxh3_64(&bytes[..9]),
            }],
            messages: 1,
        };
        let p = Path::new("/p/s.jsonl");
        assert!(st.unchanged(&[(p, Some((9, 5)))]));
        assert!(!st.unchanged(&[(p, Some((18, 6)))]));
        assert!(!st.unchanged(&[(p, Some((9, 5))), (Path::new("/p/a.jsonl"), Some((1, 1)))]));
        assert!(st.kept_prefix("/p/s.jsonl", bytes), "grown by one line");
        assert!(!st.kept_prefix("/p/s.jsonl", b"line ONE\nline two\n"), "rewritten");
        assert!(!st.kept_prefix("/p/s.jsonl", b"line"), "shorter than before");
        assert!(st.kept_prefix("/p/new.jsonl", b"x"), "a file new to the session");
    }
}
