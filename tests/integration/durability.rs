//! Crash consistency, redb's own technique: a storage backend that fails after N writes, for
//! many N. After reopening, each batch is either fully there or absent, and the graph agrees
//! with the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use convdex::{CollectionMeta, CollectionOptions, HashEmbedder};
use redb::StorageBackend;
use redb::backends::FileBackend;

use crate::common::{doc, hash_index};

#[derive(Debug)]
struct FailAfter {
    inner: FileBackend,
    writes_left: Arc<AtomicUsize>,
}

impl FailAfter {
    fn check(&self) -> std::io::Result<()> {
        let left = self.writes_left.load(Ordering::SeqCst);
        if left == 0 {
            return Err(std::io::Error::other("injected failure"));
        }
        self.writes_left.store(left - 1, Ordering::SeqCst);
        Ok(())
    }
}

impl StorageBackend for FailAfter {
    fn len(&self) -> std::io::Result<u64> {
        self.inner.len()
    }
    fn read(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.inner.read(offset, out)
    }
    fn set_len(&self, len: u64) -> std::io::Result<()> {
        self.check()?;
        self.inner.set_len(len)
    }
    fn sync_data(&self) -> std::io::Result<()> {
        self.check()?;
        self.inner.sync_data()
    }
    fn write(&self, offset: u64, data: &[u8]) -> std::io::Result<()> {
        self.check()?;
        self.inner.write(offset, data)
    }
}

const BATCHES: u64 = 6;
const PER_BATCH: u64 = 15;

fn batch(b: u64) -> Vec<convdex::Document> {
    (0..PER_BATCH)
        .map(|i| doc(&format!("batch{b}"), i, &format!("batch {b} message {i} about retries"), &[], 0))
        .collect()
}

#[test]
fn every_batch_is_all_or_nothing_after_a_failure() {
    let mut failures_seen = 0;
    let mut n = 1usize;
    loop {
        let dir = tempfile::tempdir().unwrap();
        let cdir = dir.path().join("t_p_conversations");
        // Create the collection normally (creation is atomic by itself), then inject faults.
        drop(hash_index(dir.path(), CollectionOptions::default()).collection("t", "p").unwrap());
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(cdir.join("data.redb"))
            .unwrap();
        let budget = Arc::new(AtomicUsize::new(n));
        let backend = FailAfter { inner: FileBackend::new(file).unwrap(), writes_left: budget.clone() };
        let meta = CollectionMeta { tenant: "t".into(), project: "p".into(), ..Default::default() };
        let mut committed = 0;
        let mut failed = false;
        match convdex::Collection::open_with_backend(
            &cdir,
            meta,
            Arc::new(HashEmbedder::default()),
            CollectionOptions::default(),
            backend,
        ) {
            Err(_) => failed = true,
            Ok(coll) => {
                for b in 0..BATCHES {
                    match coll.add(&batch(b)) {
                        Ok(_) => committed += 1,
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
                // Dropping flushes the graph best-effort; a failing store must not panic.
                drop(coll);
            }
        }
        if failed {
            failures_seen += 1;
        }
        // Reopen on the ordinary file backend.
        let index = hash_index(dir.path(), CollectionOptions::default());
        let coll = index.collection("t", "p").unwrap();
        let mut present = 0;
        for b in 0..BATCHES {
            let docs = coll.session_documents(&format!("batch{b}")).unwrap();
            assert!(docs.is_empty() || docs.len() == PER_BATCH as usize, "n={n}: batch {b} has {} docs", docs.len());
            if !docs.is_empty() {
                present += 1;
                // The graph agrees: a filtered graph search finds the whole batch.
                let hits = coll.search("retries").session(&format!("batch{b}")).limit(50).exact(false).run().unwrap();
                assert_eq!(hits.len(), PER_BATCH as usize, "n={n}: graph disagrees for batch {b}");
            }
        }
        assert!(present >= committed, "n={n}: a committed batch was lost ({present} < {committed})");
        let stats = coll.stats().unwrap();
        assert_eq!(stats.messages as u64, present * PER_BATCH, "n={n}");
        assert_eq!(stats.chunks, stats.messages, "n={n}: vectors match documents");
        if !failed {
            assert_eq!(present, BATCHES, "no failure, everything present");
            break;
        }
        n = if n < 40 { n + 1 } else { n * 3 / 2 };
    }
    println!("failure points exercised: {failures_seen}, last N = {n}");
    assert!(failures_seen >= 30);
}

/// A store holding a document record of a newer version (written by a newer convdex) is not
/// damaged: `repair` refuses with a typed error that says to upgrade, and leaves the
/// collection exactly where and as it was (rebuilding would have dropped that record).
#[test]
fn repair_refuses_a_store_with_records_of_a_newer_version() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "新しい").unwrap();
    coll.add(&[doc("s1", 0, "one", &[], 1_700_000_000_000), doc("s1", 1, "two", &[], 1_700_000_001_000)]).unwrap();
    let info = index.collections().unwrap().into_iter().next().unwrap();
    let path = dir.path().join(&info.name).join("data.redb");
    drop(coll);
    drop(index);
    {
        let db = redb::Database::open(&path).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut docs = tx.open_table(redb::TableDefinition::<u64, &[u8]>::new("docs")).unwrap();
            // The first document as a newer convdex would have rewritten it.
            let (k, v) = redb::ReadableTable::first(&docs).unwrap().unwrap();
            let (id, mut future) = (k.value(), v.value().to_vec());
            future[0] = 9;
            drop((k, v));
            docs.insert(id, future.as_slice()).unwrap();
        }
        tx.commit().unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let err = index.repair(&info).unwrap_err();
    assert!(matches!(err, convdex::Error::FormatVersion { found: 9, .. }), "{err}");
    assert!(err.to_string().contains("upgrade convdex"), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the store is untouched, in place");
    let aside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".damaged-"))
        .collect();
    assert!(aside.is_empty(), "nothing left aside");
    assert_eq!(index.collection("t", "新しい").unwrap().len().unwrap(), 2, "still opens, every record kept");
}
