//! Reading back what a damaged store still holds, one row at a time: every read runs under
//! `catch_unwind` (redb panics on some damaged pages), documents are read by internal id so one
//! bad page costs only its rows, and a store whose saved allocator state is damaged is read from
//! a copy that redb is told to recover.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use redb::{ReadableDatabase, ReadableMultimapTable, ReadableTable};

use crate::doc::Document;
use crate::store::codec;
use crate::store::meta::CollectionMeta;
use crate::store::tables::*;

/// Rows read back from a damaged store.
#[derive(Default)]
pub(crate) struct Salvage {
    pub(crate) meta: Option<CollectionMeta>,
    pub(crate) docs: Vec<Document>,
    pub(crate) imports: Vec<(String, Vec<u8>)>,
    pub(crate) tombstones: Vec<(String, i64)>,
    pub(crate) cache: Vec<(u128, Vec<u8>)>,
    pub(crate) sessions_listed: BTreeSet<String>,
    pub(crate) unreadable: BTreeMap<String, usize>,
    /// The highest record version found that is newer than this build reads, if any: such a
    /// record is not damage, and rebuilding without it would lose it.
    pub(crate) newer: Option<u32>,
}

/// Runs one read, turning a panic of the storage engine into `None`.
fn guarded<T>(f: impl FnOnce() -> Option<T>) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok().flatten()
}

/// Offset of redb's "god byte" (after the 9-byte magic number) and its recovery-required flag:
/// set, the next open rebuilds the allocator state by walking every table instead of trusting
/// the saved one (which is what a damaged header page usually breaks).
const GOD_BYTE: u64 = 9;
const RECOVERY_REQUIRED: u8 = 2;

/// redb's magic number, the first bytes of every store.
const MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];
/// Offset of the page size in redb's header, and the page size convdex's stores use.
const PAGE_SIZE_AT: u64 = 12;
const PAGE_SIZE: u32 = 4096;
/// The god byte's bit that says which of the two commit slots is the latest.
const PRIMARY_BIT: u8 = 1;

/// Everything still readable in the store at `path`: read as it is when it opens; otherwise
/// from copies mended in the ways a damaged header allows (the magic number and page size
/// restored, the allocator state rebuilt, and the previous commit's slot tried when the latest
/// one is damaged), keeping whichever reads back the most documents.
pub(crate) fn salvage(path: &Path) -> Salvage {
    if let Some(db) = guarded(|| redb::ReadOnlyDatabase::open(path).ok()) {
        return read_rows(&db);
    }
    let copy = path.with_extension("redb.salvage");
    let mut best: Option<Salvage> = None;
    for previous_commit in [false, true] {
        let mended = std::fs::copy(path, &copy).is_ok() && mend_header(&copy, previous_commit).is_ok();
        let db = mended.then(|| guarded(|| redb::Database::create(&copy).ok())).flatten();
        if let Some(db) = db {
            let s = read_rows(&db);
            if best.as_ref().is_none_or(|b| s.docs.len() > b.docs.len()) {
                best = Some(s);
            }
        }
    }
    let _ = std::fs::remove_file(&copy);
    best.unwrap_or_else(|| Salvage { unreadable: [("whole file".to_string(), 1)].into(), ..Default::default() })
}

/// Mends the header of a copy: the magic number and page size convdex's stores always have,
/// the recovery flag set (the next open rebuilds the allocator state by walking every table),
/// and, with `previous_commit`, the other commit slot made the latest.
fn mend_header(path: &Path, previous_commit: bool) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    f.seek(SeekFrom::Start(0))?;
    f.write_all(&MAGIC)?;
    let mut b = [0u8];
    f.read_exact(&mut b)?;
    let mut god = b[0] | RECOVERY_REQUIRED;
    if previous_commit {
        god ^= PRIMARY_BIT;
    }
    f.seek(SeekFrom::Start(GOD_BYTE))?;
    f.write_all(&[god])?;
    f.seek(SeekFrom::Start(PAGE_SIZE_AT))?;
    f.write_all(&PAGE_SIZE.to_le_bytes())?;
    // The region layout of a store that has one region (under 4 GiB, every convdex store
    // seen): no region header pages, redb's largest region, no full region, and the pages
    // after the header page as the trailing region.
    let len = f.metadata()?.len();
    if len < REGION_PAGES * u64::from(PAGE_SIZE) {
        let trailing = u32::try_from((len / u64::from(PAGE_SIZE)).saturating_sub(1)).unwrap_or(u32::MAX);
        let layout = [0u32, REGION_PAGES as u32, 0, trailing];
        let bytes: Vec<u8> = layout.iter().flat_map(|v| v.to_le_bytes()).collect();
        f.write_all(&bytes)?;
    }
    f.sync_all()
}

/// Pages in one of redb's regions.
const REGION_PAGES: u64 = 1 << 20;

fn read_rows(db: &impl ReadableDatabase) -> Salvage {
    let mut s = Salvage::default();
    let miss = |s: &mut Salvage, table: &str| *s.unreadable.entry(table.to_string()).or_default() += 1;
    s.meta = guarded(|| crate::store::meta::read_meta(db).ok());
    if s.meta.is_none() {
        miss(&mut s, "meta");
    }
    // Documents one by one, by internal id, so that one bad page costs only its rows.
    let next_id = guarded(|| {
        let tx = db.begin_read().ok()?;
        let t = tx.open_table(META).ok()?;
        let v = t.get("next_doc_id").ok()??;
        v.value().try_into().ok().map(u64::from_le_bytes)
    })
    .or_else(|| guarded(|| db.begin_read().ok()?.open_table(DOCS).ok()?.last().ok()?.map(|(k, _)| k.value() + 1)))
    .unwrap_or(0);
    for id in 1..next_id {
        let got = guarded(|| {
            let tx = db.begin_read().ok()?;
            let t = tx.open_table(DOCS).ok()?;
            let v = t.get(id).ok()?;
            Some(v.map(|v| v.value().to_vec()))
        });
        match got {
            Some(Some(bytes)) => match codec::decode_document(&bytes) {
                Ok(d) => s.docs.push(d),
                Err(crate::error::Error::FormatVersion { found, supported, .. }) if found > supported => {
                    s.newer = s.newer.max(Some(found));
                }
                Err(_) => miss(&mut s, "docs"),
            },
            Some(None) => {}
            None => miss(&mut s, "docs"),
        }
    }
    // Small tables: whole, or as far as they read.
    let rows = |table: redb::TableDefinition<'static, &'static str, &'static [u8]>| {
        let mut out = Vec::new();
        let complete = guarded(|| {
            let tx = db.begin_read().ok()?;
            let t = tx.open_table(table).ok()?;
            for r in t.iter().ok()? {
                let (k, v) = r.ok()?;
                out.push((k.value().to_string(), v.value().to_vec()));
            }
            Some(())
        })
        .is_some();
        (out, complete)
    };
    let (sessions, complete) = rows(SESSIONS);
    if !complete {
        miss(&mut s, "sessions");
    }
    s.imports = sessions.into_iter().filter(|(k, _)| k.starts_with("import:")).collect();
    let mut tombstones = Vec::new();
    let complete = guarded(|| {
        let tx = db.begin_read().ok()?;
        for r in tx.open_table(FORGOTTEN).ok()?.iter().ok()? {
            let (k, v) = r.ok()?;
            tombstones.push((k.value().to_string(), v.value()));
        }
        Some(())
    })
    .is_some();
    s.tombstones = tombstones;
    if !complete {
        miss(&mut s, "forgotten");
    }
    let mut cache = Vec::new();
    let complete = guarded(|| {
        let tx = db.begin_read().ok()?;
        for r in tx.open_table(EMBED_CACHE).ok()?.iter().ok()? {
            let (k, v) = r.ok()?;
            cache.push((k.value(), v.value().to_vec()));
        }
        Some(())
    })
    .is_some();
    s.cache = cache;
    if !complete {
        miss(&mut s, "embed_cache");
    }
    let mut listed = BTreeSet::new();
    let complete = guarded(|| {
        let tx = db.begin_read().ok()?;
        for r in tx.open_multimap_table(IDX_SESSION).ok()?.iter().ok()? {
            listed.insert(r.ok()?.0.value().to_string());
        }
        Some(())
    })
    .is_some();
    s.sessions_listed = listed;
    if !complete {
        miss(&mut s, "idx_session");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Quote, Role};

    #[test]
    fn documents_of_every_record_version_are_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.redb");
        let mut new = Document::message("会话", "u1", 1, Role::Other, "Lisboa");
        new.answering = Some(Quote::new("Ana", "¿Dónde?"));
        new.closes_turn = true;
        new.decides = true;
        let old = Document::message("会话", "u0", 0, Role::User, "¿Dónde?");
        let mut two = Document::message("会话", "u2", 2, Role::Assistant, "Lisboa, 2023.");
        two.answering = Some(Quote::new("Bó", "¿Cuándo?"));
        {
            let db = redb::Database::create(&path).unwrap();
            let tx = db.begin_write().unwrap();
            crate::store::put_document(&tx, 1, &new).unwrap();
            // As version 1 wrote it: the same bytes without the trailing `answering`,
            // `closes_turn` and `decides`.
            let mut v1 = codec::encode_document(&old);
            v1.truncate(v1.len() - 3);
            v1[0] = 1;
            tx.open_table(DOCS).unwrap().insert(2, v1.as_slice()).unwrap();
            // As version 2 wrote it: without the trailing `closes_turn` and `decides`.
            let mut v2 = codec::encode_document(&two);
            v2.truncate(v2.len() - 2);
            v2[0] = 2;
            tx.open_table(DOCS).unwrap().insert(3, v2.as_slice()).unwrap();
            tx.commit().unwrap();
        }
        let s = salvage(&path);
        assert_eq!(s.docs, [new, old, two]);
        assert!(!s.unreadable.contains_key("docs"), "{:?}", s.unreadable);
        assert_eq!(s.newer, None);
    }

    #[test]
    fn a_record_of_a_newer_version_is_not_counted_as_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.redb");
        let doc = Document::message("s", "u0", 0, Role::User, "text");
        {
            let db = redb::Database::create(&path).unwrap();
            let tx = db.begin_write().unwrap();
            crate::store::put_document(&tx, 1, &doc).unwrap();
            let mut future = codec::encode_document(&doc);
            future[0] = codec::DOCUMENT_VERSION + 1;
            tx.open_table(DOCS).unwrap().insert(2, future.as_slice()).unwrap();
            tx.open_table(DOCS).unwrap().insert(3, [codec::DOCUMENT_VERSION, 0xFF].as_slice()).unwrap();
            tx.commit().unwrap();
        }
        let s = salvage(&path);
        assert_eq!(s.docs, [doc]);
        assert_eq!(s.newer, Some(u32::from(codec::DOCUMENT_VERSION) + 1));
        assert_eq!(s.unreadable.get("docs"), Some(&1), "only the broken record is damage: {:?}", s.unreadable);
    }
}
