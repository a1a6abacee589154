//! Writes that survive a crash: a file's bytes synced to disk, and a directory synced so that a
//! file created, renamed or removed in it stays so.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Creates (or truncates) `path` with `bytes` and syncs it.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| Error::io(path, e))
}

/// Syncs directory `dir` (best effort: some platforms cannot open a directory).
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}
