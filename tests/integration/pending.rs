//! Words first, vectors after: an indexing pass that defers vectors leaves every session
//! searchable by words (and filters) at once, with its documents pending; `embed_pending` gives
//! them vectors in committed batches, resumable after a stop, and deletes or migrations in
//! between never leave a pending row behind. Real transcripts (a Windows history in Chinese),
//! a real redb file, the hash embedder (the real model's part is `crash.rs`).

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use convdex::{DocKind, HashEmbedder, Index, IndexOptions, Options, SearchMode};

fn history() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/transcripts/13562964800+claude-skills/projects/C--Users-Administrator");
    let h = tempfile::tempdir().unwrap();
    let dst = h.path().join("projects").join("C--Users-Administrator");
    std::fs::create_dir_all(&dst).unwrap();
    for s in [
        "737cdee4-7c23-4c05-adf7-6e7417388b68",
        "b244d562-da4e-4f3c-bb42-87ce2ac1d512",
        "9bca3372-c42b-43b5-8b96-50ecd5975c47",
    ] {
        std::fs::copy(src.join(format!("{s}.jsonl")), dst.join(format!("{s}.jsonl"))).unwrap();
    }
    h
}

fn open(dir: &Path) -> Index {
    Index::open(dir, Options::default().embedder(Arc::new(HashEmbedder::default()))).unwrap()
}

fn deferred() -> IndexOptions {
    IndexOptions { tenant: Some("t".into()), defer_vectors: true, ..Default::default() }
}

#[test]
fn words_first_then_vectors_resumably() {
    let h = history();
    let projects = h.path().join("projects");
    let data = tempfile::tempdir().unwrap();
    // The same history embedded at once, for reference.
    let reference = tempfile::tempdir().unwrap();
    let want = {
        let index = open(reference.path());
        convdex::index_paths(&index, std::slice::from_ref(&projects), &deferred_not()).unwrap();
        let c = index.collection("t", "administrator").unwrap();
        assert_eq!(c.pending_vectors().unwrap(), 0, "embedded at once by default");
        c.stats().unwrap()
    };
    {
        let index = open(data.path());
        let report = convdex::index_paths(&index, std::slice::from_ref(&projects), &deferred()).unwrap();
        assert_eq!(report.chunks, 0, "no vector written by the words-first pass");
        let c = index.collection("t", "administrator").unwrap();
        let pending = c.pending_vectors().unwrap();
        let stats = c.stats().unwrap();
        assert_eq!((stats.messages, stats.decisions, stats.summaries), (want.messages, want.decisions, want.summaries));
        assert!(pending > 64, "more than a batch waits: {pending}");
        // Searchable by words and filters now; meaning sees nothing yet and says so.
        let words = c.search("APK").mode(SearchMode::Lexical).limit(5).run().unwrap();
        assert!(!words.is_empty());
        assert_eq!(words.plan.unembedded, pending);
        assert!(!c.search("APK").kind(DocKind::Summary).mode(SearchMode::Lexical).run().unwrap().is_empty());
        let meaning = c.search("APK 安装").mode(SearchMode::Semantic).limit(5).run().unwrap();
        assert!(
            meaning.is_empty() && meaning.plan.unembedded == pending,
            "{:?} {:?}",
            meaning.plan,
            meaning.iter().map(|h| (h.doc.kind(), h.doc.content.len(), h.signals)).collect::<Vec<_>>()
        );
        // Stopped after one batch, as a kill or Ctrl-C would.
        let r = c.embed_pending(&mut |_| ControlFlow::Break(())).unwrap();
        assert_eq!((r.documents, r.left), (64, pending - 64), "{r:?}");
        // A pending document deleted meanwhile leaves no pending row.
        let session = c.sessions().unwrap().into_iter().next().unwrap();
        c.forget_session(&session).unwrap();
        assert!(c.pending_vectors().unwrap() < pending - 64);
    }
    // Another process finishes the work; the result is the immediate pass's, less the session
    // forgotten above.
    let index = open(data.path());
    let mut seen = Vec::new();
    let reports = index
        .embed_pending(None, &mut |p| {
            seen.push(p.done);
            ControlFlow::Continue(())
        })
        .unwrap()
        .found;
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].left, 0);
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(index.pending_vectors(None).unwrap().found, 0);
    let c = index.collection("t", "administrator").unwrap();
    let got = c.search("APK 安装").mode(SearchMode::Semantic).limit(5).run().unwrap();
    assert!(!got.is_empty() && got.plan.unembedded == 0);
    assert_eq!(c.stats().unwrap().graph_points, c.stats().unwrap().chunks, "every vector is in the graph");
    assert!(index.embed_pending(None, &mut |_| ControlFlow::Continue(())).unwrap().found.is_empty(), "nothing left");
    drop(c);
    drop(index);
    // Indexing again writes no session (a relinked summary waits for its vector like any
    // write), and the next embedding pass leaves nothing pending.
    let index = open(data.path());
    let again = convdex::index_paths(&index, std::slice::from_ref(&projects), &deferred()).unwrap();
    assert_eq!((again.sessions_new, again.messages), (0, 0));
    index.embed_pending(None, &mut |_| ControlFlow::Continue(())).unwrap();
    assert_eq!(index.pending_vectors(None).unwrap().found, 0);
}

fn deferred_not() -> IndexOptions {
    IndexOptions { tenant: Some("t".into()), ..Default::default() }
}

/// A heavy pass embeds the newest documents first across every project, then one project at a
/// time (so one collection's graph and pages are in memory, not every project's): over the
/// shared corpus's projects, words first, the first `NEWEST_ACROSS` documents come newest
/// first from whichever project holds the next newest, and after them each project is
/// embedded in one run of batches, never returned to; every document ends with its vector.
#[test]
fn a_heavy_pass_embeds_the_newest_across_projects_then_a_project_at_a_time() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let data = tempfile::tempdir().unwrap();
    let index = open(data.path());
    convdex::index_paths(&index, &[corpus], &deferred()).unwrap();
    let pending = index.pending_vectors(None).unwrap().found;
    assert!(pending > convdex::NEWEST_ACROSS + 500, "more than the newest-first part waits: {pending}");
    let mut batches: Vec<(String, usize)> = Vec::new();
    let reports = index
        .embed_pending(None, &mut |p| {
            batches.push((p.collection.clone(), p.pass_done));
            ControlFlow::Continue(())
        })
        .unwrap();
    assert!(reports.skipped.is_empty());
    assert!(reports.found.iter().all(|r| r.left == 0));
    assert_eq!(index.pending_vectors(None).unwrap().found, 0);
    // Where the newest-first part ended: the first batch that reached NEWEST_ACROSS.
    let first = batches.iter().position(|(_, done)| *done >= convdex::NEWEST_ACROSS).unwrap() + 1;
    let across: std::collections::HashSet<&String> = batches[..first].iter().map(|(c, _)| c).collect();
    assert!(across.len() > 3, "the newest documents came from several projects: {across:?}");
    let mut runs: Vec<&String> = Vec::new();
    for (c, _) in &batches[first..] {
        if runs.last() != Some(&c) {
            assert!(!runs.contains(&c), "{c} returned to after another project: {runs:?}");
            runs.push(c);
        }
    }
    assert!(runs.len() > 3, "the rest came a project at a time: {runs:?}");
}
