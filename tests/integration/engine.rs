//! The core engine: filtered-search recall against exact search, persistence, crash safety,
//! isolation, concurrency and input validation.

use std::sync::Arc;

use convdex::{CollectionOptions, DocKind, Error, PlanPath, RebuildReason, SearchMode, VectorIndexState};

use crate::common::{clustered_vectors, doc, hash_index};

use super::common::copy_dir;

fn recall(graph: &[uuid::Uuid], exact: &[uuid::Uuid]) -> f32 {
    if exact.is_empty() {
        return 1.0;
    }
    graph.iter().filter(|id| exact.contains(id)).count() as f32 / exact.len() as f32
}

/// ≥ 20,000 documents, filters of selectivity 0.1 %, 1 %, 10 %, 50 % and 100 %: recall@10 of
/// the planned search against `.exact(true)` is at least 0.95 at every selectivity, and the
/// plan is the one the threshold prescribes.
#[test]
fn filtered_recall_at_every_selectivity() {
    const N: usize = 20_000;
    const SEED: u64 = 0x5EED_2026;
    println!("seed = {SEED:#x}, n = {N}");
    let dir = tempfile::tempdir().unwrap();
    // The default threshold scans a collection this small exactly: a lower one exercises the
    // graph routes (unfiltered, post-filter) that larger collections take.
    let opts = CollectionOptions { exact_threshold: 2048, graph_from: 2048, ..Default::default() };
    let threshold = opts.exact_threshold;
    let fraction = opts.exact_fraction;
    let index = hash_index(dir.path(), opts);
    let coll = index.collection("t", "recall").unwrap();
    let vectors = clustered_vectors(N + 50, 384, 200, SEED);
    let (docs_v, queries) = vectors.split_at(N);
    let docs: Vec<_> = (0..N as u64)
        .map(|i| {
            let mut tags = vec!["p100"];
            for (m, t) in [(2, "p50"), (10, "p10"), (100, "p1"), (1000, "p01")] {
                if i % m == 0 {
                    tags.push(t);
                }
            }
            doc(&format!("s{}", i % 50), i, &format!("doc {i}"), &tags, 1_700_000_000_000 + i as i64)
        })
        .collect();
    for (d, v) in docs.chunks(5000).zip(docs_v.chunks(5000)) {
        coll.add_embedded(d, v).unwrap();
    }
    for (tag, expected) in [("p01", 20usize), ("p1", 200), ("p10", 2000), ("p50", 10_000), ("all", N)] {
        let mut total = 0.0;
        let mut forced = 0.0;
        let mut path = None;
        for q in queries {
            let build = |exact: Option<bool>| {
                let mut s = coll.search_vector(q.clone()).limit(10);
                if let Some(e) = exact {
                    s = s.exact(e);
                }
                if tag == "all" { s } else { s.tags_any([tag]) }
            };
            let planned = build(None).run().unwrap();
            let exact = build(Some(true)).run().unwrap();
            let graph = build(Some(false)).run().unwrap();
            assert_eq!(planned.plan.candidates, expected, "{tag}");
            assert_eq!(exact.plan.path, PlanPath::Exact);
            let ids = |h: &convdex::Hits| h.iter().map(|h| h.doc.id).collect::<Vec<_>>();
            total += recall(&ids(&planned), &ids(&exact));
            forced += recall(&ids(&graph), &ids(&exact));
            path = Some(planned.plan.path);
            if tag != "all" {
                assert!(planned.iter().all(|h| h.doc.tags.iter().any(|t| t == tag)), "filter leaked");
            }
        }
        let r = total / queries.len() as f32;
        let path = path.unwrap();
        let f = forced / queries.len() as f32;
        println!(
            "selectivity {tag:>4}: candidates {expected:>6}, plan {path:?}, recall@10 {r:.3} (graph forced: {f:.3})"
        );
        if expected <= threshold || (tag != "all" && (expected as f32 / N as f32) < fraction) {
            assert_eq!(path, PlanPath::Exact, "{tag}");
        } else {
            assert!(matches!(path, PlanPath::Graph { .. }), "{tag}: {path:?}");
        }
        assert!(r >= 0.95, "recall@10 {r} at {tag}");
    }
}

fn top_ids(coll: &convdex::Collection, queries: &[Vec<f32>]) -> Vec<Vec<uuid::Uuid>> {
    queries
        .iter()
        .map(|q| coll.search_vector(q.clone()).limit(10).ef(400).run().unwrap().iter().map(|h| h.doc.id).collect())
        .collect()
}

/// Reopen loads the graph (no rebuild) and answers identically; deleted or truncated graph
/// files trigger a rebuild, reported as such, with identical answers.
#[test]
fn persistence_reload_and_rebuild() {
    let dir = tempfile::tempdir().unwrap();
    let opts = CollectionOptions { exact_threshold: 0, graph_from: 0, ..Default::default() };
    let vectors = clustered_vectors(3030, 384, 60, 7);
    let (docs_v, queries) = vectors.split_at(3000);
    let docs: Vec<_> = (0..3000u64).map(|i| doc("s", i, &format!("d{i}"), &[], i as i64)).collect();
    let before = {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Rebuilt(RebuildReason::Missing));
        coll.add_embedded(&docs, docs_v).unwrap();
        top_ids(&coll, queries)
    };
    let cdir = dir.path().join("t_p_conversations");
    {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Loaded);
        // Answers are identical while the graph loads (exact scan) and once it is in.
        assert_eq!(top_ids(&coll, queries), before);
        coll.wait_for_vector_index();
        let hits = coll.search_vector(queries[0].clone()).ef(400).run().unwrap();
        assert!(matches!(hits.plan.path, PlanPath::Graph { .. }), "{:?}", hits.plan.path);
        assert_eq!(top_ids(&coll, queries), before);
    }
    std::fs::remove_dir_all(cdir.join("vectors")).unwrap();
    {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Rebuilt(RebuildReason::Missing));
        assert_eq!(top_ids(&coll, queries), before);
    }
    let graph = cdir.join("vectors").join("graph.hnsw.graph");
    let len = std::fs::metadata(&graph).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&graph).unwrap().set_len(len / 2).unwrap();
    {
        let index = hash_index(dir.path(), opts);
        let coll = index.collection("t", "p").unwrap();
        assert!(matches!(coll.vector_index_state().unwrap(), VectorIndexState::Rebuilt(RebuildReason::Corrupt(_))));
        assert_eq!(top_ids(&coll, queries), before);
    }
}

/// Adding to a collection whose graph links were never read does not read them: the dump
/// carries the graph files over and writes the new vectors apart (`graph.added`); they are
/// found at once by the exact scan, and by the graph once a reader links them. Losing the
/// added file means a rebuild, never a lost vector.
#[test]
fn writes_do_not_read_graph_links() {
    let dir = tempfile::tempdir().unwrap();
    let opts = CollectionOptions { exact_threshold: 0, graph_from: 0, ..Default::default() };
    let vectors = clustered_vectors(3020, 384, 60, 11);
    let (old_v, new_v) = vectors.split_at(3000);
    let old: Vec<_> = (0..3000u64).map(|i| doc("舊", i, &format!("d{i}"), &[], i as i64)).collect();
    let new: Vec<_> = (0..20u64).map(|i| doc("新しい", i, &format!("n{i}"), &[], 5000 + i as i64)).collect();
    let vdir = dir.path().join("t_p_conversations").join("vectors");
    {
        let index = hash_index(dir.path(), opts.clone());
        index.collection("t", "p").unwrap().add_embedded(&old, old_v).unwrap();
    }
    let links = std::fs::read(vdir.join("graph.hnsw.graph")).unwrap();
    let top = |coll: &convdex::Collection, i: usize| {
        let hits = coll.search_vector(new_v[i].clone()).limit(3).ef(400).run().unwrap();
        (hits.iter().next().map(|h| h.doc.id), hits.plan.path)
    };
    {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        coll.add_embedded(&new, new_v).unwrap();
        coll.flush().unwrap();
        assert_eq!(std::fs::read(vdir.join("graph.hnsw.graph")).unwrap(), links, "links rewritten");
        let added = std::fs::metadata(vdir.join("graph.added")).unwrap().len();
        assert_eq!(added, 20 + 20 * (8 + 384 * 4), "only the new vectors are written");
        assert_eq!(top(&coll, 3), (Some(new[3].id), PlanPath::Exact), "the exact scan answers while links load");
    }
    {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Loaded);
        coll.wait_for_vector_index();
        let (id, path) = top(&coll, 7);
        assert_eq!(id, Some(new[7].id));
        assert!(matches!(path, PlanPath::Graph { .. }), "{path:?}");
    }
    std::fs::remove_file(vdir.join("graph.added")).unwrap();
    let index = hash_index(dir.path(), opts);
    let coll = index.collection("t", "p").unwrap();
    assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Rebuilt(RebuildReason::Missing));
    assert_eq!(coll.len().unwrap(), 3020);
    assert_eq!(top(&coll, 11).0, Some(new[11].id));
}

/// Links damaged without changing length pass the open (it verifies the vectors only):
/// `verify_graph_links` finds them, the first walk rebuilds them from the vectors with the
/// same answers, and the rebuilt graph is persisted, so the next open finds them whole.
#[test]
fn damaged_links_are_found_rebuilt_and_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = CollectionOptions { exact_threshold: 0, graph_from: 0, ..Default::default() };
    let vectors = clustered_vectors(2010, 384, 40, 13);
    let (docs_v, queries) = vectors.split_at(2000);
    let docs: Vec<_> = (0..2000u64).map(|i| doc("損傷", i, &format!("d{i}"), &[], i as i64)).collect();
    let before = {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        coll.add_embedded(&docs, docs_v).unwrap();
        top_ids(&coll, queries)
    };
    let links = dir.path().join("t_p_conversations").join("vectors").join("graph.hnsw.graph");
    let mut bytes = std::fs::read(&links).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xA5;
    std::fs::write(&links, &bytes).unwrap();
    {
        let index = hash_index(dir.path(), opts.clone());
        let coll = index.collection("t", "p").unwrap();
        assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Loaded);
        let why = coll.verify_graph_links().unwrap();
        assert!(why.as_deref().is_some_and(|w| w.contains("graph.hnsw.graph")), "{why:?}");
        coll.wait_for_vector_index();
        assert_eq!(top_ids(&coll, queries), before);
        assert_eq!(coll.verify_graph_links().unwrap(), None, "read links are not re-verified");
    }
    let index = hash_index(dir.path(), opts);
    let coll = index.collection("t", "p").unwrap();
    assert_eq!(coll.verify_graph_links().unwrap(), None, "the rebuilt graph was not persisted");
    assert_eq!(top_ids(&coll, queries), before);
}

/// A graph older than the store (a crash between commit and dump) is caught up on open.
#[test]
fn stale_graph_is_caught_up() {
    let dir = tempfile::tempdir().unwrap();
    let cdir = dir.path().join("t_p_conversations");
    let saved = dir.path().join("saved-vectors");
    {
        let index = hash_index(dir.path(), CollectionOptions::default());
        let coll = index.collection("t", "p").unwrap();
        coll.add(&[doc("a", 0, "first batch alpha", &[], 0)]).unwrap();
        coll.flush().unwrap();
        copy_dir(&cdir.join("vectors"), &saved);
        coll.add(&[doc("b", 0, "second batch beta", &[], 1)]).unwrap();
        coll.delete_session("a").unwrap();
    }
    std::fs::remove_dir_all(cdir.join("vectors")).unwrap();
    copy_dir(&saved, &cdir.join("vectors"));
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "p").unwrap();
    match coll.vector_index_state().unwrap() {
        VectorIndexState::CaughtUp { added, removed, .. } => assert_eq!((*added, *removed), (1, 1)),
        other => panic!("expected CaughtUp, got {other:?}"),
    }
    let hits = coll.search("alpha beta").exact(false).run().unwrap();
    assert_eq!(hits.iter().map(|h| h.doc.session_id.as_str()).collect::<Vec<_>>(), ["b"]);
}

#[test]
fn collections_are_isolated_and_names_validated() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let a = index.collection("alice", "alpha").unwrap();
    let b = index.collection("alice", "beta").unwrap();
    a.add(&[doc("s1", 0, "postgres connection pool exhausted", &[], 0)]).unwrap();
    b.add(&[doc("s2", 0, "postgres connection pool exhausted again", &[], 0)]).unwrap();
    for (coll, session) in [(&a, "s1"), (&b, "s2")] {
        let hits = coll.search("postgres pool").exact(true).run().unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].doc.session_id, session);
    }
    let names: Vec<String> = index.collections().unwrap().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["alice_alpha_conversations", "alice_beta_conversations"]);
    for (t, p) in [("", "x"), ("..", "x"), ("a", "b/c"), ("a b", "x"), ("a", "../etc")] {
        assert!(matches!(index.collection(t, p), Err(Error::InvalidName { .. })), "{t:?} {p:?}");
    }
    // Upper case is folded, not rejected.
    assert_eq!(index.collection("Alice", "Alpha").unwrap().name(), "alice_alpha_conversations");
}

#[test]
fn invalid_queries_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let c = index.collection("t", "p").unwrap();
    assert!(matches!(c.search("   ").run(), Err(Error::EmptyQuery)));
    assert!(matches!(c.search("x").limit(0).run(), Err(Error::ZeroLimit)));
    let (a, b) = (chrono::Utc::now(), chrono::Utc::now() - chrono::Duration::days(1));
    let err = c.search("x").since(a).until(b).run().unwrap_err();
    assert!(matches!(err, Error::InvertedTimeRange { .. }));
    assert!(err.to_string().contains("swap"), "{err}");
    assert!(matches!(c.search_vector(vec![0.0; 3]).run(), Err(Error::DimensionMismatch { expected: 384, got: 3 })));
    assert!(matches!(c.search("x").file("").run(), Err(Error::InvalidArgument(_))));
}

#[test]
fn every_filter_applies_and_sessions_list_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let c = index.collection("t", "p").unwrap();
    let mut docs = Vec::new();
    for i in 0..40u64 {
        let mut d = doc(&format!("s{}", i % 4), i, &format!("auth token refresh number {i}"), &[], 1000 * i as i64);
        d.tags = vec![if i % 2 == 0 { "rust".into() } else { "go".into() }];
        if i % 3 == 0 {
            d.tags.push("docker".into());
        }
        d.domain = Some(if i < 20 { "backend".into() } else { "frontend".into() });
        d.files_discussed = vec![convdex::FileRef {
            path: format!("src/{}/mod{}.rs", if i % 5 == 0 { "auth" } else { "ui" }, i % 2),
            line_ranges: vec![],
            action: convdex::FileAction::Edited,
        }];
        docs.push(d);
    }
    // Out of order on purpose: listing sorts by message index.
    docs.reverse();
    c.add(&docs).unwrap();
    let all = |b: convdex::SearchBuilder<'_>| b.limit(100).run().unwrap();
    let hits = all(c.search("auth token").tags_any(["go"]));
    assert_eq!(hits.len(), 20);
    let hits = all(c.search("auth token").tags_all(["rust", "docker"]));
    assert!(hits.iter().all(|h| h.doc.tags.contains(&"rust".into()) && h.doc.tags.contains(&"docker".into())));
    assert_eq!(hits.len(), 7);
    assert_eq!(all(c.search("auth").domain("frontend")).len(), 20);
    assert_eq!(all(c.search("auth").session("s1")).len(), 10);
    assert_eq!(all(c.search("auth").file("src/auth/mod0.rs")).len(), 4);
    assert_eq!(all(c.search("auth").file_prefix("src/auth/")).len(), 8);
    let t = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap();
    assert_eq!(all(c.search("auth").since(t(10_000)).until(t(19_000))).len(), 10);
    assert_eq!(all(c.search("auth").kind(DocKind::Decision)).len(), 0);
    assert_eq!(all(c.search("auth").session("s1").domain("backend").tags_any(["go"])).len(), 5);
    let listed = c.session_documents("s2").unwrap();
    let idx: Vec<u64> = listed
        .iter()
        .map(|d| match &d.body {
            convdex::DocBody::Message(m) => m.message_index,
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(idx, (0..10).map(|k| 2 + 4 * k).collect::<Vec<u64>>());
    assert_eq!(c.sessions().unwrap(), ["s0", "s1", "s2", "s3"]);
    let stats = c.stats().unwrap();
    assert_eq!((stats.sessions, stats.messages, stats.decisions, stats.summaries), (4, 40, 0, 0));
}

#[test]
fn re_adding_replaces_and_delete_session_removes() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let c = index.collection("t", "p").unwrap();
    let docs: Vec<_> = (0..5u64).map(|i| doc("s", i, &format!("message {i}"), &[], 0)).collect();
    let first = c.add(&docs).unwrap();
    assert_eq!((first.documents, first.replaced, first.embedded), (5, 0, 5));
    let second = c.add(&docs).unwrap();
    assert_eq!((second.documents, second.replaced, second.embedded, second.cached), (5, 5, 0, 5));
    assert_eq!(c.len().unwrap(), 5);
    assert_eq!(c.search("message").limit(50).exact(false).run().unwrap().len(), 5);
    assert_eq!(c.delete_session("s").unwrap(), 5);
    assert!(c.is_empty().unwrap());
    assert!(c.search("message").run().unwrap().is_empty());
    assert!(c.get(docs[0].id).unwrap().is_none());
}

#[test]
fn searches_run_while_batches_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let c = index.collection("t", "p").unwrap();
    c.add(&[doc("seed", 0, "seed document about caching", &[], 0)]).unwrap();
    let writer = {
        let c = Arc::clone(&c);
        std::thread::spawn(move || {
            for b in 0..30u64 {
                let docs: Vec<_> = (0..20u64)
                    .map(|i| doc(&format!("w{b}"), i, &format!("batch {b} item {i} caching"), &[], 0))
                    .collect();
                c.add(&docs).unwrap();
            }
        })
    };
    let mut searches = 0;
    while !writer.is_finished() {
        let hits = c.search("caching").limit(5).run().unwrap();
        assert!(!hits.is_empty());
        // Every hit is a whole batch's member: never a half-written batch.
        for h in hits.iter() {
            let n = c.session_documents(&h.doc.session_id).unwrap().len();
            assert!(n == 1 || n == 20, "{} has {n}", h.doc.session_id);
        }
        searches += 1;
    }
    writer.join().unwrap();
    assert!(searches > 0);
    assert_eq!(c.len().unwrap(), 601);
}

#[test]
fn a_second_opener_gets_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let opts = CollectionOptions { lock_wait: std::time::Duration::from_millis(200), ..Default::default() };
    let first = hash_index(dir.path(), opts.clone());
    let _c = first.collection("t", "p").unwrap();
    let second = hash_index(dir.path(), opts);
    let start = std::time::Instant::now();
    let err = second.collection("t", "p").unwrap_err();
    assert!(start.elapsed() >= std::time::Duration::from_millis(150), "waited before giving up");
    match &err {
        Error::InUse { holder, .. } => assert_eq!(holder, &std::process::id().to_string()),
        other => panic!("expected InUse, got {other:?}"),
    }
    assert!(err.to_string().contains("in use by another process"));
}

/// Another process listing collections glances at a new collection's store, read-only, while
/// its writer has it closed for an instant: the writer's next open waits for the glance instead
/// of failing with an unknown holder (a run once left a project unindexed this way).
#[test]
fn a_glance_at_the_store_delays_an_open_and_never_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll_dir = {
        let c = index.collection("t", "p").unwrap();
        c.add(&[doc("a", 0, "first batch alpha", &[], 0)]).unwrap();
        index.collections().unwrap()[0].dir.clone()
    };
    let glance = redb::ReadOnlyDatabase::open(coll_dir.join("data.redb")).unwrap();
    let released = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        drop(glance);
    });
    let start = std::time::Instant::now();
    let c = index.collection("t", "p").unwrap();
    assert!(start.elapsed() >= std::time::Duration::from_millis(250), "opened while the store was held");
    assert_eq!(c.stats().unwrap().messages, 1);
    released.join().unwrap();
}

#[test]
fn opening_with_another_model_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = hash_index(dir.path(), CollectionOptions::default());
        index.collection("t", "p").unwrap();
    }
    let other = convdex::Options::default().embedder(Arc::new(convdex::HashEmbedder::new(64)));
    let index = convdex::Index::open(dir.path(), other).unwrap();
    let err = index.collection("t", "p").unwrap_err();
    assert!(matches!(err, Error::ModelMismatch { stored_dim: 384, configured_dim: 64, .. }), "{err:?}");
    assert!(err.to_string().contains("rebuild"), "{err}");
}

/// A search by words never reads the graph; the first write or vector search loads it, and a
/// write made while it was not loaded is in it exactly once.
#[test]
fn graph_is_loaded_only_when_vectors_are_needed() {
    let dir = tempfile::tempdir().unwrap();
    {
        let index = hash_index(dir.path(), CollectionOptions::default());
        let coll = index.collection("t", "p").unwrap();
        coll.add(&[doc("a", 0, "first batch alpha", &[], 0), doc("a", 1, "gamma words", &[], 1)]).unwrap();
    }
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "p").unwrap();
    assert!(!coll.vector_index_loaded(), "opening reads no graph");
    let hits = coll.search("alpha").mode(SearchMode::Lexical).run().unwrap();
    assert_eq!(hits.len(), 1);
    assert!(!coll.vector_index_loaded(), "a lexical search reads no graph");
    // A write while the graph is not loaded: it loads (the committed store, this write in it).
    coll.add(&[doc("b", 0, "second batch beta", &[], 2)]).unwrap();
    assert!(coll.vector_index_loaded());
    let stats = coll.stats().unwrap();
    assert_eq!(stats.graph_points, stats.chunks, "every vector once");
    let hits = coll.search("second batch beta").mode(SearchMode::Semantic).exact(false).run().unwrap();
    assert_eq!(hits.iter().next().map(|h| h.doc.session_id.as_str()), Some("b"));
    drop(coll);
    drop(index);
    // The next process: a semantic search loads the graph written back at drop.
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "p").unwrap();
    let hits = coll.search("gamma words").mode(SearchMode::Semantic).run().unwrap();
    assert!(coll.vector_index_loaded());
    assert_eq!(coll.vector_index_state().unwrap(), &VectorIndexState::Loaded);
    assert_eq!(hits.first().map(|h| h.doc.session_id.as_str()), Some("a"));
    // A collection this small is scanned exactly and keeps no graph (`graph_from`): a walk
    // asked for is answered exactly until one is built, in memory, for it.
    assert_eq!(hits.plan.path, PlanPath::Exact);
    let walk = || coll.search("gamma words").mode(SearchMode::Semantic).exact(false).run().unwrap();
    let first = walk();
    coll.wait_for_vector_index();
    let walked = walk();
    assert!(matches!(walked.plan.path, PlanPath::Graph { .. }), "{:?}", walked.plan.path);
    assert_eq!(walked.first().map(|h| h.doc.id), first.first().map(|h| h.doc.id));
}

/// Words in one language find a message in another through the glossary
/// ([`convdex::Ranking::translation`]), in lexical search (no meaning signal: the hash
/// embedder knows none) and both ways; with translation off they do not.
#[test]
fn words_find_a_message_written_in_another_language() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "p").unwrap();
    const EN: &str = "please push the config folder to my git repository tonight";
    const ZH: &str = "数据库迁移失败了，先回滚再看日志";
    coll.add(&[
        doc("en", 0, EN, &[], 0),
        doc("en", 1, "the weather was lovely", &[], 1),
        doc("zh", 0, ZH, &[], 2),
        doc("zh", 1, "今天天气不错", &[], 3),
    ])
    .unwrap();
    let top = |q: &str, w: f32, limit: usize| -> Vec<String> {
        let hits = coll.search(q).mode(SearchMode::Lexical).translation(w).limit(limit).run().unwrap();
        hits.iter().map(|h| h.doc.content.clone()).collect()
    };
    assert_eq!(top("把配置目录推送到仓库", convdex::DEFAULT_TRANSLATION, 10), [EN]);
    assert!(top("把配置目录推送到仓库", 0.0, 10).is_empty(), "no Chinese word in an English message");
    // The snippet marks the words that matched in the message's language.
    let hits = coll.search("把配置目录推送到仓库").mode(SearchMode::Lexical).run().unwrap();
    let snippet = hits.first().and_then(|h| h.snippet.clone()).unwrap_or_default();
    assert!(snippet.contains("[push]") && snippet.contains("[repository]"), "{snippet}");
    assert!(hits.first().is_some_and(|h| h.signals.translated), "the hit says it matched through a translation");
    let own = coll.search("push the folder").mode(SearchMode::Lexical).run().unwrap();
    assert!(own.first().is_some_and(|h| h.doc.content == EN && !h.signals.translated));
    assert_eq!(top("why did the database migration fail", convdex::DEFAULT_TRANSLATION, 10)[0], ZH);
    assert!(!top("why did the database migration fail", 0.0, 10).iter().any(|c| c == ZH));
    // Its own language's match is not diluted: a Chinese question still ranks the Chinese
    // message first, and the first hit does not depend on the limit.
    let own = top("数据库迁移 log", convdex::DEFAULT_TRANSLATION, 10);
    assert_eq!(own[0], ZH);
    assert_eq!(top("数据库迁移 log", convdex::DEFAULT_TRANSLATION, 1), own[..1]);
    let bad = coll.search("x").translation(-1.0).run();
    assert!(matches!(bad, Err(Error::InvalidArgument(m)) if m.contains("translation")));
}

/// A glossary file that is not text (or cannot be read) never stops the index from opening:
/// it is reported as line 0, and the built-in glossary still translates.
#[test]
fn an_unreadable_glossary_file_is_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(convdex::GLOSSARY_FILE), b"nightly\t\xff\xfe\x00").unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let skipped = index.glossary_skipped();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].line, 0);
    assert!(skipped[0].reason.contains(convdex::GLOSSARY_FILE), "{skipped:?}");
    assert_eq!(index.options().collection.glossary.len(), convdex::Glossary::builtin().len());
}
