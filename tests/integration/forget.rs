//! Forgetting for good, on a real transcript folder with the real model: after
//! `forget_session` and `Index::compact`, no byte of the forgotten messages' text remains in
//! any file of the collection (redb, graph, lexical index), the other sessions' text does, and
//! indexing again skips the forgotten session unless forced.

use std::path::{Path, PathBuf};

use convdex::{DocKind, Index, IndexOptions, Options};

fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/transcripts/KaceyBui+Claude-global-test/projects/-Users-akatsukijin-Desktop-gitlearn")
}

/// Every file under `dir`, concatenated.
fn all_bytes(dir: &Path) -> Vec<u8> {
    crate::common::files_under(dir).iter().flat_map(|p| std::fs::read(p).unwrap()).collect()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Distinctive pieces of a session's stored text: 32 bytes from the middle of each long message.
fn needles(docs: &[convdex::Document]) -> Vec<String> {
    docs.iter()
        .filter(|d| d.kind() == DocKind::Message && d.content.len() >= 120)
        .filter_map(|d| {
            let mut a = d.content.len() / 2;
            while !d.content.is_char_boundary(a) {
                a += 1;
            }
            let mut b = (a + 32).min(d.content.len());
            while !d.content.is_char_boundary(b) {
                b += 1;
            }
            let s = &d.content[a..b];
            (s.trim().len() >= 24).then(|| s.to_string())
        })
        .collect()
}

#[test]
fn forgotten_sessions_leave_no_bytes_and_stay_forgotten() {
    let src = project_dir();
    let data = tempfile::tempdir().unwrap();
    let index = Index::open(data.path(), Options::default()).unwrap();
    let options = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let first = convdex::index_paths(&index, std::slice::from_ref(&src), &options).unwrap();
    assert!(first.sessions_new >= 3, "{first}");

    let info = index.collections().unwrap().remove(0);
    let coll = index.collection(&info.tenant, &info.project).unwrap();
    // Forget the session with the most long messages; the others are the control.
    let mut sessions: Vec<(String, Vec<convdex::Document>)> =
        coll.sessions().unwrap().into_iter().map(|s| (s.clone(), coll.session_documents(&s).unwrap())).collect();
    sessions.sort_by_key(|(_, d)| std::cmp::Reverse(needles(d).len()));
    let (gone, gone_docs) = sessions.remove(0);
    // Only text that no kept document also holds (tool output and boilerplate repeat).
    let gone_needles: Vec<String> = needles(&gone_docs)
        .into_iter()
        .filter(|n| !sessions.iter().flat_map(|(_, d)| d).any(|d| d.content.contains(n.as_str())))
        .collect();
    let kept_needles: Vec<String> = sessions.iter().flat_map(|(_, d)| needles(d)).collect();
    assert!(gone_needles.len() >= 3 && !kept_needles.is_empty());
    let before = coll.stats().unwrap();

    let report = coll.forget_session(&gone).unwrap();
    assert_eq!(report.documents, gone_docs.len());
    assert!(report.cache_rows > 0);
    assert!(coll.session_documents(&gone).unwrap().is_empty());
    assert!(coll.is_forgotten(&gone).unwrap());
    let hits = coll.search(&gone_docs.iter().find(|d| d.content.len() > 80).unwrap().content).limit(20).run().unwrap();
    assert!(hits.iter().all(|h| h.doc.session_id != gone), "forgotten documents are not searchable");
    assert_eq!(coll.stats().unwrap().forgotten_sessions, 1);
    assert_eq!(
        coll.stats().unwrap().messages + gone_docs.iter().filter(|d| d.kind() == DocKind::Message).count(),
        before.messages
    );

    // Compaction needs the collection closed in this process.
    assert!(matches!(index.compact(&info.tenant, &info.project), Err(convdex::Error::InUse { .. })));
    drop(coll);
    let compacted = index.compact(&info.tenant, &info.project).unwrap();
    assert!(compacted.bytes_after > 0);
    let bytes = all_bytes(&info.dir);
    for n in &gone_needles {
        assert!(!contains(&bytes, n), "forgotten text survived compaction: {n:?}");
    }
    // The control: kept sessions' text is still there, so the scan can see text at all.
    assert!(kept_needles.iter().all(|n| contains(&bytes, n)));

    // The compacted collection works: every kept session is searchable, lexically and by meaning.
    let coll = index.collection(&info.tenant, &info.project).unwrap();
    assert_eq!(coll.sessions().unwrap().len(), sessions.len());
    let probe = &sessions[0].1.iter().find(|d| d.kind() == DocKind::Message && d.content.len() > 80).unwrap().content;
    for mode in [convdex::SearchMode::Semantic, convdex::SearchMode::Lexical, convdex::SearchMode::Hybrid] {
        let hits = coll.search(probe).mode(mode).limit(5).run().unwrap();
        assert!(hits.iter().any(|h| h.doc.session_id == sessions[0].0), "{mode:?}");
    }
    drop(coll);

    // Indexing again skips the forgotten session; `force` brings it back.
    let again = convdex::index_paths(&index, std::slice::from_ref(&src), &options).unwrap();
    assert_eq!(again.sessions_forgotten, 1, "{again}");
    let coll = index.collection(&info.tenant, &info.project).unwrap();
    assert!(coll.session_documents(&gone).unwrap().is_empty());
    drop(coll);
    let forced =
        convdex::index_paths(&index, std::slice::from_ref(&src), &IndexOptions { force: true, ..options }).unwrap();
    assert_eq!(forced.sessions_forgotten, 0);
    let coll = index.collection(&info.tenant, &info.project).unwrap();
    assert!(!coll.is_forgotten(&gone).unwrap());
    assert_eq!(coll.session_documents(&gone).unwrap().len(), gone_docs.len());
}
