//! The ranking's promises, over a multi-collection index with the real ranking code (the hash
//! embedder stands in for the model: the promises are about the ranking, not about meaning):
//! the first `k` hits at `limit = k` are the first `k` at `limit = 50`, with identical scores,
//! for random queries, filters, modes and rankings; identical messages of one session fold
//! into one hit; every hit carries a relevance from 0 to 100 that falls with the score; a
//! collection written before the ranking table existed, or whose rows are damaged, ranks the
//! same; sessions found (`search_sessions`) are ranked by their best hit, whatever the limit.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use convdex::{CollectionOptions, DocKind, Document, Index, Options, Query, Ranking, Recency, SearchMode};
use proptest::prelude::*;

const WORDS: [&str; 24] = [
    "redb",
    "tantivy",
    "parser",
    "token",
    "expiry",
    "login",
    "checkout",
    "cache",
    "索引",
    "数据库",
    "검색",
    "テスト",
    "hnsw",
    "vector",
    "commit",
    "branch",
    "deploy",
    "timeout",
    "retry",
    "schema",
    "migration",
    "panic",
    "offset",
    "path",
];

fn options() -> Options {
    let small = CollectionOptions { exact_threshold: 64, graph_from: 64, ..Default::default() };
    Options::default().embedder(Arc::new(convdex::HashEmbedder::default())).collection(small)
}

/// Four projects of three sessions, messages drawn from `WORDS`, every fifth message repeated in
/// its session. The exact threshold is low, so unfiltered searches walk the graph and filtered
/// ones scan.
fn index(dir: &std::path::Path) -> Index {
    let index = Index::open(dir, options()).unwrap();
    let mut seed = 7u64;
    let mut next = move || {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for project in ["alpha", "ベータ", "gamma-項目", "delta"] {
        let coll = index.collection("t", project).unwrap();
        let mut docs = Vec::new();
        for s in 0..3 {
            let session = format!("{project}-s{s}");
            for i in 0..40u64 {
                let text = if i % 5 == 4 {
                    docs.last().map(|d: &Document| d.content.clone()).unwrap()
                } else {
                    (0..6).map(|_| WORDS[next() % WORDS.len()]).collect::<Vec<_>>().join(" ")
                };
                let mut d = convdex::Document::message(&session, &format!("u{i}"), i, convdex::Role::User, &text);
                d.timestamp =
                    DateTime::<Utc>::from_timestamp_millis(1_700_000_000_000 + (s * 40 + i as i64) * 3_600_000)
                        .unwrap();
                d.tags = vec![WORDS[next() % 4].to_string()];
                docs.push(d);
            }
        }
        coll.add(&docs).unwrap();
    }
    index
}

fn shared() -> &'static (tempfile::TempDir, Index, Vec<Arc<convdex::Collection>>) {
    type Shared = (tempfile::TempDir, Index, Vec<Arc<convdex::Collection>>);
    static I: std::sync::OnceLock<Shared> = std::sync::OnceLock::new();
    I.get_or_init(|| {
        // A static is never dropped: under the target directory, not the system's temp dir.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let index = index(dir.path());
        let open = held_open(&index);
        (dir, index, open)
    })
}

/// Every collection of `index`, open with its graph read, for as long as the result lives. A
/// collection opened by each search reads its graph in the background and the exact scan
/// answers until it is in, so two searches could take different routes (both right, their
/// pools' tails differ); the promises compare searches on one route.
fn held_open(index: &Index) -> Vec<Arc<convdex::Collection>> {
    let open: Vec<_> =
        index.collections().unwrap().iter().map(|c| index.collection(&c.tenant, &c.project).unwrap()).collect();
    open.iter().for_each(|c| c.wait_for_vector_index());
    open
}

fn run(q: &Query, project: Option<&str>) -> Vec<(String, uuid::Uuid, f32, u8)> {
    shared()
        .1
        .search(project, q)
        .unwrap()
        .found
        .into_iter()
        .map(|h| (h.project, h.hit.doc.id, h.hit.score, h.hit.relevance))
        .collect()
}

fn arb_query() -> impl Strategy<Value = (Query, usize, Option<&'static str>)> {
    let words = proptest::collection::vec(0..WORDS.len(), 1..4);
    let mode = prop_oneof![Just(None), Just(Some(SearchMode::Semantic)), Just(Some(SearchMode::Lexical))];
    let filter = 0..5usize;
    let recent = any::<bool>();
    let project = prop_oneof![Just(None), Just(Some("ベータ")), Just(Some("delta"))];
    (words, mode, filter, recent, 1..=20usize, project).prop_map(|(w, mode, filter, recent, k, project)| {
        let mut q = Query::new(w.iter().map(|&i| WORDS[i]).collect::<Vec<_>>().join(" "));
        q.mode = mode;
        match filter {
            1 => q.filter.kinds = vec![DocKind::Message],
            2 => q.filter.tags_any = vec![WORDS[0].into(), WORDS[2].into()],
            3 => q.filter.sessions = vec!["alpha-s1".into(), "delta-s2".into()],
            4 => q.filter.since = DateTime::from_timestamp_millis(1_700_000_000_000 + 50 * 3_600_000),
            _ => {}
        }
        if recent {
            q.ranking = Ranking {
                recent: Some(Recency { now_ms: 1_700_000_000_000 + 200 * 3_600_000, ..Recency::default() }),
                ..Ranking::default()
            };
        }
        (q, k, project)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_first_k_hits_do_not_depend_on_the_limit((q, k, project) in arb_query(), leaders in any::<bool>()) {
        let mut small = q.clone();
        small.limit = k;
        small.ranking.leaders = leaders;
        let mut large = q;
        large.limit = 50;
        large.ranking.leaders = leaders;
        let a = run(&small, project);
        let b = run(&large, project);
        prop_assert!(a.len() <= k);
        prop_assert_eq!(&a[..], &b[..a.len()], "limit {} vs 50 for {:?}", k, small.text);
        // Scores fall; without recency, relevance never rises as the score falls. Each
        // signal's best hit, kept second and third (`Ranking::leaders`), keeps its own score
        // and relevance: the rest of the list is in order.
        let ordered: Vec<_> =
            b.iter().enumerate().filter(|(i, _)| !leaders || !(1..=2).contains(i)).map(|(_, h)| h.clone()).collect();
        prop_assert!(ordered.windows(2).all(|w| w[0].2 >= w[1].2), "{:?}", b);
        if large.ranking.recent.is_none() {
            prop_assert!(ordered.windows(2).all(|w| w[0].3 >= w[1].3), "{:?}", b);
        } else {
            // Recency reorders hits without changing their relevance.
            let mut plain = large.clone();
            plain.ranking.recent = None;
            let without: std::collections::HashMap<uuid::Uuid, u8> =
                run(&plain, project).into_iter().map(|h| (h.1, h.3)).collect();
            let both: Vec<_> = b.iter().filter_map(|h| without.get(&h.1).map(|r| (h.3, *r))).collect();
            prop_assert!(!both.is_empty() || b.is_empty());
            prop_assert!(both.iter().all(|(with, without)| with == without), "{:?}", both);
        }
    }

    #[test]
    fn sessions_rank_by_their_best_hit_and_do_not_depend_on_a_small_limit((q, k, project) in arb_query()) {
        let k = k.min(10);
        let sessions = |limit: usize| {
            let mut q = q.clone();
            q.limit = limit;
            shared().1.search_sessions(project, &q).unwrap().found
        };
        let (small, large) = (sessions(k), sessions(10));
        let key = |s: &convdex::SessionFound| (s.project.clone(), s.session_id.clone(), s.score, s.matched);
        prop_assert!(small.len() <= k);
        prop_assert_eq!(small.iter().map(key).collect::<Vec<_>>(), large[..small.len()].iter().map(key).collect::<Vec<_>>());
        // The pool of hits they come from: each session's best hit is its first, its score the
        // session's, no session twice, sessions in the order of their best hits.
        let mut pooled = q.clone();
        pooled.limit = convdex::SESSION_POOL;
        let hits = shared().1.search(project, &pooled).unwrap().found;
        let mut seen = std::collections::HashSet::new();
        let firsts: Vec<_> = hits
            .iter()
            .filter(|h| seen.insert((h.project.clone(), h.hit.doc.session_id.clone())))
            .take(10)
            .map(|h| (h.project.clone(), h.hit.doc.session_id.clone(), h.hit.score))
            .collect();
        prop_assert_eq!(large.iter().map(|s| (s.project.clone(), s.session_id.clone(), s.score)).collect::<Vec<_>>(), firsts);
        for s in &large {
            let mine: Vec<_> = hits.iter().filter(|h| h.project == s.project && h.hit.doc.session_id == s.session_id).collect();
            prop_assert_eq!(s.matched, mine.len());
            prop_assert_eq!(s.hits.iter().map(|h| h.doc.id).collect::<Vec<_>>(),
                mine.iter().take(convdex::SESSION_HITS).map(|h| h.hit.doc.id).collect::<Vec<_>>());
        }
    }
}

#[test]
fn identical_messages_of_a_session_fold_into_one_hit() {
    // Every fifth message repeats the one before it: a query matching that text finds one hit
    // for the pair, which says one was folded.
    let (_, index, _) = shared();
    let coll = index.collection("t", "alpha").unwrap();
    let repeated = coll
        .documents_of_kind(DocKind::Message)
        .unwrap()
        .into_iter()
        .find(|d| matches!(&d.body, convdex::DocBody::Message(m) if m.message_index == 4))
        .unwrap();
    let mut q = Query::new(repeated.content.clone());
    q.limit = 50;
    q.mode = Some(SearchMode::Lexical);
    let hits = index.search(Some("alpha"), &q).unwrap().found;
    let same: Vec<_> = hits
        .iter()
        .filter(|h| h.hit.doc.content == repeated.content && h.hit.doc.session_id == repeated.session_id)
        .collect();
    assert_eq!(same.len(), 1, "one hit for the repeated message");
    assert!(same[0].hit.folded >= 1, "and it says so");
    let mut seen = std::collections::HashSet::new();
    for h in &hits {
        assert!(seen.insert((h.project.clone(), h.hit.doc.session_id.clone(), h.hit.doc.content.clone())));
    }
    assert!(hits.iter().all(|h| h.hit.relevance <= 100));
}

/// Every hit of `q` over the index, as comparable values.
fn everything(index: &Index, q: &Query) -> Vec<(String, uuid::Uuid, u32, u8, usize)> {
    let found = index.search(None, q).unwrap().found;
    found.into_iter().map(|h| (h.project, h.hit.doc.id, h.hit.score.to_bits(), h.hit.relevance, h.hit.folded)).collect()
}

/// The ranking reads a small row per candidate (`ranking` table) instead of the whole document.
/// A collection written before that table existed gets it filled on its next open, and a row
/// that cannot be read is derived from its document: either way, the same hits, scores and
/// folds, bit for bit.
#[test]
fn collections_without_ranking_rows_rank_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let queries: Vec<Query> = (0..12)
        .map(|i| {
            let mut q = Query::new(format!("{} {}", WORDS[i % WORDS.len()], WORDS[(i * 7 + 3) % WORDS.len()]));
            q.limit = 30;
            q.mode = [None, Some(SearchMode::Semantic), Some(SearchMode::Lexical)][i % 3];
            if i % 4 == 1 {
                q.ranking.recent = Some(Recency { now_ms: 1_700_000_000_000 + 200 * 3_600_000, ..Recency::default() });
            }
            q
        })
        .collect();
    let before: Vec<_> = {
        let index = index(dir.path());
        let _open = held_open(&index);
        queries.iter().map(|q| everything(&index, q)).collect()
    };
    assert!(before.iter().any(|hits| hits.iter().any(|h| h.4 > 0)), "some hit folds a repeated message");
    let stores: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path().join("data.redb"))
        .filter(|p| p.exists())
        .collect();
    assert_eq!(stores.len(), 4);
    let ranking: redb::TableDefinition<'_, u64, &[u8]> = redb::TableDefinition::new("ranking");
    let docs: redb::TableDefinition<'_, u64, &[u8]> = redb::TableDefinition::new("docs");
    let rows = |path: &std::path::Path| {
        use redb::{ReadableDatabase, ReadableTableMetadata};
        let db = redb::Database::open(path).unwrap();
        let tx = db.begin_read().unwrap();
        (tx.open_table(ranking).unwrap().len().unwrap(), tx.open_table(docs).unwrap().len().unwrap())
    };
    // Two collections as an older version wrote them (no table), two with damaged rows.
    for (n, path) in stores.iter().enumerate() {
        let db = redb::Database::open(path).unwrap();
        let tx = db.begin_write().unwrap();
        if n % 2 == 0 {
            assert!(tx.delete_table(ranking).unwrap());
        } else {
            use redb::ReadableTable;
            let mut t = tx.open_table(ranking).unwrap();
            for id in 0..40u64 {
                if t.get(id).unwrap().is_some() {
                    t.insert(id, [0xFFu8; 7].as_slice()).unwrap();
                }
            }
        }
        tx.commit().unwrap();
    }
    let index = Index::open(dir.path(), options()).unwrap();
    let open = held_open(&index);
    let after: Vec<_> = queries.iter().map(|q| everything(&index, q)).collect();
    drop(open);
    assert_eq!(before, after);
    drop(index);
    for (n, path) in stores.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
        let (r, d) = rows(path);
        assert_eq!(r, d, "collection {n}: every document has its row again");
    }
}

/// Which messages close the agent's turn (`Document::closes_turn`, what `Ranking::closing`
/// reads), and which a decision was extracted from (`Document::decides`), is the same whether a
/// session was indexed whole or in runs cut in the middle of a turn: the message that closed
/// the turn at the cut loses the mark when the agent goes on, or when the person's next message
/// overrules it.
#[test]
fn closing_messages_are_marked_alike_when_a_session_grows_mid_turn() {
    let (history, transcript) = crate::common::sample_history();
    let full = std::fs::read_to_string(&transcript).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    let session = transcript.file_stem().unwrap().to_string_lossy().into_owned();
    let marks = |index: &Index| -> Vec<(String, bool)> {
        let info = &index.collections().unwrap()[0];
        let coll = index.collection(&info.tenant, &info.project).unwrap();
        let mut out: Vec<(u64, String, bool)> = lines
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["uuid"].as_str().map(str::to_string))
            .filter_map(|u| coll.get(Document::stable_id(&session, DocKind::Message, &u)).unwrap())
            .map(|d| match &d.body {
                convdex::DocBody::Message(m) => (m.message_index, m.message_uuid.clone(), d.closes_turn),
                _ => unreachable!(),
            })
            .collect();
        out.sort();
        out.into_iter().map(|(_, u, c)| (u, c)).collect()
    };
    // The messages marked as ones a decision was extracted from (`Document::decides`).
    let deciding = |index: &Index| -> Vec<String> {
        let info = &index.collections().unwrap()[0];
        let coll = index.collection(&info.tenant, &info.project).unwrap();
        let mut out: Vec<String> = lines
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["uuid"].as_str().map(str::to_string))
            .filter(|u| {
                coll.get(Document::stable_id(&session, DocKind::Message, u)).unwrap().is_some_and(|d| d.decides)
            })
            .collect();
        out.sort();
        out
    };
    let whole_dir = tempfile::tempdir().unwrap();
    let whole = crate::common::hash_index(whole_dir.path(), CollectionOptions::default());
    convdex::index_paths(&whole, &[history.path().join("projects")], &convdex::IndexOptions::default()).unwrap();
    let expected = marks(&whole);
    assert!(deciding(&whole).contains(&"s-u4".to_string()), "{:?}", deciding(&whole));
    let closing: Vec<&str> = expected.iter().filter(|(_, c)| *c).map(|(u, _)| u.as_str()).collect();
    // The agent's last words of each turn, but for its recommendation of Postgres (s-a7-0),
    // which the person's decision for Redis next (s-u4) overruled and settled.
    assert_eq!(closing, ["s-a2-0", "s-a6-0", "s-u4", "s-a8-0"]);
    // The same session indexed after its first two lines (the agent's first words then close
    // the transcript), then again after the rest was appended.
    let grown_dir = tempfile::tempdir().unwrap();
    let grown = crate::common::hash_index(grown_dir.path(), CollectionOptions::default());
    std::fs::write(&transcript, format!("{}\n{}\n", lines[0], lines[1])).unwrap();
    convdex::index_paths(&grown, &[history.path().join("projects")], &convdex::IndexOptions::default()).unwrap();
    assert_eq!(marks(&grown), [("s-u1".to_string(), false), ("s-a1-0".to_string(), true)]);
    // Then up to the agent's recommendation: it closes the transcript.
    let cut = lines.iter().position(|l| l.contains("\"s-a7-0\"")).unwrap() + 1;
    std::fs::write(&transcript, lines[..cut].join("\n") + "\n").unwrap();
    convdex::index_paths(&grown, &[history.path().join("projects")], &convdex::IndexOptions::default()).unwrap();
    assert!(marks(&grown).contains(&("s-a7-0".to_string(), true)));
    std::fs::write(&transcript, &full).unwrap();
    let report =
        convdex::index_paths(&grown, &[history.path().join("projects")], &convdex::IndexOptions::default()).unwrap();
    assert_eq!(report.sessions_appended, 1, "{report:?}");
    assert_eq!(marks(&grown), expected, "the person's decision took the recommendation's mark");
    assert_eq!(deciding(&grown), deciding(&whole), "the same messages decide");
}

/// Where each message stands in its session (`message_index`: the context lift and the reply
/// signal read it; the session view orders by it) is the same whether a real session with
/// sub-agents was indexed whole or grew between two runs: the sub-agents' messages are numbered
/// after the main transcript's, so they move when it grows, and an append rewrites them.
#[test]
fn sub_agent_messages_move_with_the_main_transcript_as_it_grows() {
    let project = "-Users-allenbot-project-auto-trading";
    let session = "86342176-f37c-46b8-9737-e26abfc2129b";
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/fresh/transcripts/earnabitmore365+merit-ledger/projects")
        .join(project);
    let home = tempfile::tempdir().unwrap();
    let dst = home.path().join("projects").join(project);
    crate::common::copy_dir(&src.join(session), &dst.join(session));
    let main = dst.join(format!("{session}.jsonl"));
    let full = std::fs::read_to_string(src.join(format!("{session}.jsonl"))).unwrap();
    let places = |index: &Index| -> Vec<(String, u64)> {
        let info = &index.collections().unwrap()[0];
        let coll = index.collection(&info.tenant, &info.project).unwrap();
        let mut out: Vec<(String, u64)> = coll
            .session_documents(session)
            .unwrap()
            .into_iter()
            .filter_map(|d| match d.body {
                convdex::DocBody::Message(m) => Some((m.message_uuid, m.message_index)),
                _ => None,
            })
            .collect();
        out.sort();
        out
    };
    let agents = |index: &Index| -> usize {
        let info = &index.collections().unwrap()[0];
        let coll = index.collection(&info.tenant, &info.project).unwrap();
        let docs = coll.session_documents(session).unwrap();
        docs.iter().filter(|d| matches!(&d.body, convdex::DocBody::Message(m) if m.agent.is_some())).count()
    };
    let projects = [home.path().join("projects")];
    std::fs::write(&main, &full).unwrap();
    let whole_dir = tempfile::tempdir().unwrap();
    let whole = crate::common::hash_index(whole_dir.path(), CollectionOptions::default());
    convdex::index_paths(&whole, &projects, &convdex::IndexOptions::default()).unwrap();
    let expected = places(&whole);
    assert!(agents(&whole) > 0, "the session's sub-agents are indexed with it");
    let mut seen = std::collections::HashSet::new();
    assert!(expected.iter().all(|(_, i)| seen.insert(*i)), "every message has a place of its own");
    // The main transcript cut in half, its sub-agents whole; then the rest appended.
    let lines: Vec<&str> = full.lines().collect();
    std::fs::write(&main, lines[..lines.len() / 2].join("\n") + "\n").unwrap();
    let grown_dir = tempfile::tempdir().unwrap();
    let grown = crate::common::hash_index(grown_dir.path(), CollectionOptions::default());
    convdex::index_paths(&grown, &projects, &convdex::IndexOptions::default()).unwrap();
    assert_ne!(places(&grown), expected, "the cut session numbers its sub-agents' messages earlier");
    std::fs::write(&main, &full).unwrap();
    let report = convdex::index_paths(&grown, &projects, &convdex::IndexOptions::default()).unwrap();
    assert_eq!(report.sessions_appended, 1, "{report:?}");
    assert_eq!(places(&grown), expected, "every message where a whole index puts it");
}
