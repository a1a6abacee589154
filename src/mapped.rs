//! Files read where they lie: a read-only memory map on Unix, the file read into memory
//! elsewhere (or where a map fails).
//!
//! A search in a new process reads two large files before it answers: the optimised model
//! (about 74 MB) and, at scale, the vector files of every project (250 MB at 30 times the
//! shared corpus). Copied into fresh memory, most of their time went to the copy and to the
//! page faults of the new memory; mapped, the operating system hands over the page cache's
//! pages, and processes that map the same file (the CLI, the MCP server, the hooks) share them.
//! Each file is still checked (a checksum over its bytes) before it is used.
//!
//! Why only on Unix: Windows cannot delete or replace a file while a process maps it, and
//! convdex swaps new files in place of old ones (a new dump, a new derived model) while other
//! processes may hold the old. On Unix the old file lives on, unlinked, while it is mapped.
//! convdex never writes these files in place; a tool that did while a process maps one would
//! change what that process reads (as with any memory-mapped index, tantivy's included).

use std::ops::Deref;
use std::path::Path;

/// A file's bytes, mapped or read.
pub(crate) enum FileBytes {
    /// Mapped read-only (Unix).
    #[cfg(unix)]
    Mapped(memmap2::Mmap),
    /// Read into memory.
    Read(Vec<u8>),
}

impl Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            #[cfg(unix)]
            FileBytes::Mapped(m) => m,
            FileBytes::Read(v) => v,
        }
    }
}

/// The bytes of the file at `path`: mapped where the platform allows, else read.
pub(crate) fn read(path: &Path) -> std::io::Result<FileBytes> {
    #[cfg(unix)]
    {
        let file = std::fs::File::open(path)?;
        let len = file.metadata()?.len();
        if let Some(map) = map(&file, len) {
            return Ok(FileBytes::Mapped(map));
        }
    }
    std::fs::read(path).map(FileBytes::Read)
}

/// Maps `file` read-only, its pages read ahead; `None` when the map fails or its length is
/// not `len` (the file changed since it was measured). An empty file is never mapped.
#[cfg(unix)]
#[allow(unsafe_code)]
pub(crate) fn map(file: &std::fs::File, len: u64) -> Option<memmap2::Mmap> {
    if len == 0 {
        return None;
    }
    // The one `unsafe` of the crate, allowed here alone: mapping a file is unsafe in Rust
    // because another process could change the file under the map.
    // SAFETY: the map is read-only and private to this process, and the files convdex maps are
    // never written in place (see the module documentation): they are written whole under a
    // temporary name and renamed, so their bytes do not change while mapped. Every caller
    // checks the bytes (a checksum) before using them.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(file) }.ok()?;
    (map.len() as u64 == len).then_some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reads_the_same_mapped_and_outlives_its_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("모델 model.bin");
        let first: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &first).unwrap();
        let held = read(&path).unwrap();
        #[cfg(unix)]
        assert!(matches!(held, FileBytes::Mapped(_)), "mapped on Unix");
        assert_eq!(&held[..], &first[..]);
        // Replaced as convdex replaces files (a new file renamed over it), then removed: the
        // holder still reads the first bytes.
        let tmp = dir.path().join("next.tmp");
        std::fs::write(&tmp, b"another file").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_eq!(&read(&path).unwrap()[..], b"another file");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(&held[..], &first[..]);
        // An empty file is read, not mapped; a missing one is an error.
        std::fs::write(&path, b"").unwrap();
        assert!(matches!(read(&path).unwrap(), FileBytes::Read(v) if v.is_empty()));
        assert!(read(&dir.path().join("missing")).is_err());
    }
}
