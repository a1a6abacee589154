//! Whether a collection's files are exactly as convdex last closed them.
//!
//! redb verifies its pages only in `check_integrity`, which reads the whole file (about 0.7 ms
//! per MB here), and panics on some damaged pages it meets in normal reads. Checking on every
//! open would make a cold search of a large collection slow, so a collection closed cleanly
//! leaves a seal: the size and modification time of `data.redb` and of every file of the
//! lexical index. An open whose files still match the seal skips the checks; any other open (a
//! crash, a kill, a file changed from outside) runs them. A collection found damaged while open
//! is never sealed.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

const FILE: &str = "SEAL";

/// Written when a collection closes cleanly; see the module documentation.
#[derive(Debug)]
pub(crate) struct Seal {
    dir: PathBuf,
    enabled: bool,
    poisoned: AtomicBool,
}

impl Seal {
    /// A seal for the collection in `dir`; `enabled` is false for custom storage backends,
    /// whose bytes are not in `data.redb`.
    pub(crate) fn new(dir: &Path, enabled: bool) -> Seal {
        Seal { dir: dir.to_path_buf(), enabled, poisoned: AtomicBool::new(false) }
    }

    /// True when the files match the seal the last clean close wrote.
    pub(crate) fn intact(&self) -> bool {
        self.enabled
            && std::fs::read_to_string(self.dir.join(FILE)).is_ok_and(|s| !s.is_empty() && s == fingerprint(&self.dir))
    }

    /// The collection was found damaged: it will not be sealed, and the old seal goes now.
    pub(crate) fn poison(&self) {
        self.poisoned.store(true, Ordering::SeqCst);
        let _ = std::fs::remove_file(self.dir.join(FILE));
    }
}

impl Drop for Seal {
    /// Runs after the store and the lexical index have closed (the seal is declared after them
    /// in [`crate::Collection`]), before the lock is released.
    fn drop(&mut self) {
        if !self.enabled {
            return;
        }
        let path = self.dir.join(FILE);
        if self.poisoned.load(Ordering::SeqCst) {
            let _ = std::fs::remove_file(&path);
            return;
        }
        let now = fingerprint(&self.dir);
        // Nothing changed since the seal was written (a read-only session): keep it.
        if std::fs::read_to_string(&path).is_ok_and(|s| s == now) {
            return;
        }
        let tmp = self.dir.join(format!("{FILE}.tmp"));
        if std::fs::write(&tmp, now).is_ok() {
            let _ = std::fs::rename(&tmp, &path);
        }
    }
}

/// `name size mtime-ns` of `data.redb` and of every file under `lexical/`, sorted.
fn fingerprint(dir: &Path) -> String {
    let mut rows = Vec::new();
    let mut add = |p: &Path, name: String| {
        if let Ok(m) = std::fs::metadata(p) {
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            rows.push(format!("{name} {} {mtime}", m.len()));
        }
    };
    add(&dir.join("data.redb"), "data.redb".into());
    if let Ok(rd) = std::fs::read_dir(dir.join("lexical")) {
        for e in rd.flatten() {
            add(&e.path(), format!("lexical/{}", e.file_name().to_string_lossy()));
        }
    }
    rows.sort();
    rows.join("\n")
}

/// The message of a caught panic.
pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    panic_text(p).unwrap_or_else(|| "the storage engine failed on damaged data".into())
}

/// A panic's message, when it carries text.
pub(crate) fn panic_text(p: &(dyn std::any::Any + Send)) -> Option<String> {
    p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seal_matches_until_a_file_changes_and_poison_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("data.redb"), b"abc").unwrap();
        assert!(!Seal::new(dir.path(), true).intact(), "no seal yet");
        drop(Seal::new(dir.path(), true));
        assert!(Seal::new(dir.path(), true).intact());
        assert!(!Seal::new(dir.path(), false).intact(), "disabled seals are never intact");
        std::fs::write(dir.path().join("data.redb"), b"abcd").unwrap();
        assert!(!Seal::new(dir.path(), true).intact());
        drop(Seal::new(dir.path(), true));
        let s = Seal::new(dir.path(), true);
        s.poison();
        assert!(!dir.path().join(FILE).exists());
        drop(s);
        assert!(!Seal::new(dir.path(), true).intact());
    }
}
