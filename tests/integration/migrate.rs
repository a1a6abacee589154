//! Moving a collection built with all-MiniLM-L6-v2 (the default of earlier versions) to the
//! default multilingual-e5-small: the real models, real transcripts (a Windows history in
//! Chinese), a real redb file on disk. The old collection opens and answers with its own model,
//! the migration is interrupted and resumed, and at the end every document is there, every
//! vector is the new model's and none of the old model's vectors is left in any table.

use std::ops::ControlFlow;
use std::path::Path;

use convdex::{Collection, Embedder, Index, IndexOptions, Options, SearchMode};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use crate::common::{minilm, model};

const SESSIONS: [&str; 3] = [
    "737cdee4-7c23-4c05-adf7-6e7417388b68.jsonl",
    "b244d562-da4e-4f3c-bb42-87ce2ac1d512.jsonl",
    "9bca3372-c42b-43b5-8b96-50ecd5975c47.jsonl",
];

fn history() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/transcripts/13562964800+claude-skills/projects/C--Users-Administrator");
    let h = tempfile::tempdir().unwrap();
    let dst = h.path().join("projects").join("C--Users-Administrator");
    std::fs::create_dir_all(&dst).unwrap();
    for s in SESSIONS {
        std::fs::copy(src.join(s), dst.join(s)).unwrap();
    }
    h
}

fn options(model_name: Option<&str>) -> Options {
    let mut o = Options::default();
    if let Some(m) = model_name {
        o.embed = o.embed.model(m);
    }
    o
}

fn only(index: &Index) -> std::sync::Arc<Collection> {
    let infos = index.collections().unwrap();
    assert_eq!(infos.len(), 1, "{infos:?}");
    index.collection(&infos[0].tenant, &infos[0].project).unwrap()
}

/// Every vector of a store, from every table that holds vectors.
fn stored_vectors(data: &Path) -> Vec<(&'static str, Vec<f32>)> {
    let dir = std::fs::read_dir(data).unwrap().flatten().find(|e| e.path().join("data.redb").exists()).unwrap();
    let db = redb::ReadOnlyDatabase::open(dir.path().join("data.redb")).unwrap();
    let tx = db.begin_read().unwrap();
    let mut out = Vec::new();
    for name in ["vectors", "migration_vectors"] {
        let t = tx.open_table(TableDefinition::<u64, &[u8]>::new(name)).unwrap();
        for row in t.iter().unwrap() {
            out.push((name, floats(row.unwrap().1.value())));
        }
    }
    for name in ["embed_cache", "migration_cache"] {
        let t = tx.open_table(TableDefinition::<u128, &[u8]>::new(name)).unwrap();
        for row in t.iter().unwrap() {
            out.push((name, floats(row.unwrap().1.value())));
        }
    }
    out
}

fn floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn semantic_ids(c: &Collection, q: &str) -> Vec<uuid::Uuid> {
    c.search(q).mode(SearchMode::Semantic).limit(10).run().unwrap().iter().map(|h| h.doc.id).collect()
}

const QUESTIONS: [&str; 3] = ["安装技能的时候出了什么错误？", "which files were edited?", "配置文件放在哪里"];

#[test]
fn a_minilm_collection_answers_migrates_resumably_and_keeps_everything() {
    let h = history();
    let data = tempfile::tempdir().unwrap();
    let projects = h.path().join("projects");
    let index_options = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    // 1. Built with MiniLM, as by an earlier version.
    let (before, old_answers) = {
        let index = Index::open(data.path(), options(Some("all-minilm-l6-v2"))).unwrap();
        convdex::index_paths(&index, std::slice::from_ref(&projects), &index_options).unwrap();
        let c = only(&index);
        assert_eq!(c.embedder().model_id(), minilm().model_id());
        let answers: Vec<Vec<uuid::Uuid>> = QUESTIONS.iter().map(|q| semantic_ids(&c, q)).collect();
        (c.stats().unwrap(), answers)
    };
    assert!(before.messages + before.decisions + before.summaries > 64, "more than one batch: {before:?}");
    let old_vectors = stored_vectors(data.path());
    assert!(old_vectors.iter().all(|(_, v)| v.len() == 384) && old_vectors.len() > before.chunks);

    // 2. Opened with the default model: it answers with its own model until migrated.
    {
        let index = Index::open(data.path(), options(None)).unwrap();
        let c = only(&index);
        assert_eq!(c.embedder().model_id(), minilm().model_id(), "still MiniLM's vectors");
        assert_eq!(c.migration_target().map(|t| t.model_id().to_string()), Some(model().model_id().to_string()));
        for (q, old) in QUESTIONS.iter().zip(&old_answers) {
            assert_eq!(&semantic_ids(&c, q), old, "answers from MiniLM's vectors: {q}");
        }
        // Interrupted after the first batch (as a kill or Ctrl-C would).
        let mut batches = 0;
        let report = c
            .migrate(&mut |_| {
                batches += 1;
                ControlFlow::Break(())
            })
            .unwrap();
        assert!(!report.finished && report.documents > 0, "{report:?}");
        let p = c.migration_progress().unwrap().unwrap();
        assert!(p.done > 0 && p.done < p.total, "{p:?}");
        // Mid-migration a search still answers from the old vectors, unchanged.
        for (q, old) in QUESTIONS.iter().zip(&old_answers) {
            assert_eq!(&semantic_ids(&c, q), old, "mid-migration answers: {q}");
        }
        // A document written meanwhile is embedded with the collection's own model.
        let mut d = convdex::Document::message("later", "later-1", 0, convdex::Role::User, "迁移期间写入的消息");
        d.tags = vec!["late".into()];
        c.add(&[d]).unwrap();
    }
    // 3. A later process resumes where the first stopped and finishes.
    let index = Index::open(data.path(), options(None)).unwrap();
    let progress = index.migrations(None).unwrap().found;
    assert_eq!(progress.len(), 1, "{progress:?}");
    let mut seen = Vec::new();
    let reports = index
        .migrate(None, &mut |p| {
            seen.push(p.done);
            ControlFlow::Continue(())
        })
        .unwrap()
        .found;
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert!(r.finished && r.resumed_at > 0 && r.documents > 0, "{r:?}");
    assert_eq!(r.resumed_at + r.documents, before.messages + before.decisions + before.summaries + 1, "{r:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "progress only grows: {seen:?}");
    let c = only(&index);
    assert_eq!(c.embedder().model_id(), model().model_id());
    assert!(c.migration_progress().unwrap().is_none());
    let after = c.stats().unwrap();
    assert_eq!(
        (after.sessions, after.messages, after.decisions, after.summaries),
        (before.sessions + 1, before.messages + 1, before.decisions, before.summaries),
        "every document is still there (and the one written mid-migration)"
    );
    assert_eq!(after.model, model().model_id());
    // Searches now embed the query with e5: a message's own words find it.
    let hits = c.search("迁移期间写入的消息").mode(SearchMode::Semantic).limit(3).run().unwrap();
    assert_eq!(hits.iter().next().map(|h| h.doc.session_id.as_str()), Some("later"));
    assert!(index.migrate(None, &mut |_| ControlFlow::Continue(())).unwrap().found.is_empty(), "nothing left to do");
    drop(c);
    drop(index);

    // 4. No MiniLM vector is left anywhere; every vector is a unit vector of the new model.
    let new_vectors = stored_vectors(data.path());
    assert!(new_vectors.iter().all(|(t, _)| *t == "vectors" || *t == "embed_cache"), "migration tables emptied");
    for (table, v) in &new_vectors {
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-3, "{table}: norm {norm}");
        for (_, old) in &old_vectors {
            let cos: f32 = v.iter().zip(old).map(|(a, b)| a * b).sum();
            assert!(cos < 0.999, "a MiniLM vector is left in {table}");
        }
    }
    // The graph was rebuilt from the new vectors and persisted with the new model's name.
    let index = Index::open(data.path(), options(None)).unwrap();
    let c = only(&index);
    assert_eq!(c.vector_index_state().unwrap(), &convdex::VectorIndexState::Loaded);
    assert_eq!(c.embedder().model_id(), model().model_id());
}

#[test]
fn an_unknown_model_is_refused_with_how_to_fix_it() {
    let data = tempfile::tempdir().unwrap();
    {
        let index = Index::open(
            data.path(),
            Options::default().embedder(std::sync::Arc::new(convdex::HashEmbedder::default())),
        )
        .unwrap();
        index.collection("t", "p").unwrap();
    }
    let index = Index::open(data.path(), options(None)).unwrap();
    let err = index.collection("t", "p").unwrap_err();
    assert!(matches!(err, convdex::Error::ModelMismatch { .. }), "{err}");
    assert!(err.to_string().contains("convdex index --force"), "{err}");
    let err = Index::open(data.path(), options(Some("bge-small"))).unwrap().collection("t", "p").unwrap_err();
    assert!(err.to_string().contains("multilingual-e5-small"), "names the models it knows: {err}");
}
