//! The real embedder: shape, determinism, batching, ranking, golden values, failure modes.

use convdex::embed::dot;
use convdex::{EmbedOptions, Embedder, Error, FastEmbedder};

use crate::common::model;

#[test]
fn vectors_are_384_dims_and_unit_length() {
    let v = model().embed(&["hello world", "", "a much longer sentence about vector stores"]).unwrap();
    assert_eq!(v.len(), 3);
    for x in &v {
        assert_eq!(x.len(), 384);
        let n = dot(x, x).sqrt();
        assert!((n - 1.0).abs() < 1e-4, "norm {n}");
    }
    assert_eq!(model().dim(), 384);
    assert_eq!(model().model_id(), "all-MiniLM-L6-v2-onnx-int8");
}

#[test]
fn same_text_same_vector() {
    let a = model().embed_one("let's use redb for storage").unwrap();
    let b = model().embed_one("let's use redb for storage").unwrap();
    assert_eq!(a, b);
}

#[test]
fn batch_equals_one_by_one_and_keeps_input_order() {
    let texts = [
        "a long sentence that will certainly be sorted after the short ones in the batch because of its length",
        "short",
        "medium length sentence here",
        "x",
    ];
    let batch = model().embed(&texts).unwrap();
    for (t, b) in texts.iter().zip(&batch) {
        let one = model().embed_one(t).unwrap();
        let max = one.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0f32, f32::max);
        assert!(max < 1e-5, "{t}: max diff {max}");
    }
}

/// Ten query / passage pairs written for this test: each query's own passage must rank first.
#[test]
fn each_query_ranks_its_own_passage_first() {
    let pairs = [
        ("which database did we pick for storage?", "We chose redb as the embedded key-value store for documents."),
        (
            "how do I fix the failing CI build?",
            "The pipeline broke because the lint step found warnings; run clippy locally.",
        ),
        ("what is the weather like tomorrow", "Forecast: sunny skies with a light breeze on Saturday."),
        (
            "where are the authentication tokens validated",
            "src/auth.rs checks the bearer token signature before each request.",
        ),
        ("recipe for chocolate cake", "Mix flour, cocoa, sugar and eggs, then bake for forty minutes."),
        (
            "why is the docker image so large",
            "The container bundles the whole toolchain; a multi-stage build would shrink it.",
        ),
        (
            "how fast is the vector search",
            "Nearest-neighbour queries take about two milliseconds at one hundred thousand documents.",
        ),
        ("who won the football match", "The home team scored twice in the second half and won the game."),
        ("how to rename a git branch", "Use git branch -m old-name new-name, then push the new branch."),
        (
            "kubernetes pod keeps restarting",
            "The deployment's container crashes on start, so the pod is stuck in CrashLoopBackOff.",
        ),
        ("translate hello into French", "Bonjour is the French greeting for hello."),
    ];
    let passages: Vec<&str> = pairs.iter().map(|p| p.1).collect();
    let pv = model().embed(&passages).unwrap();
    for (i, (q, _)) in pairs.iter().enumerate() {
        let qv = model().embed_one(q).unwrap();
        let scores: Vec<f32> = pv.iter().map(|p| dot(&qv, p)).collect();
        let best = scores.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0;
        assert_eq!(best, i, "query {q:?} ranked passage {best} first: {scores:?}");
    }
}

/// Golden values: the sentence-transformers quickstart triple, within 0.01 of the published
/// fp32 all-MiniLM-L6-v2 cosines (0.6660 / 0.1046 / 0.1411).
#[test]
fn golden_quickstart_cosines() {
    let v =
        model().embed(&["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]).unwrap();
    let got = [dot(&v[0], &v[1]), dot(&v[0], &v[2]), dot(&v[1], &v[2])];
    let want = [0.6660, 0.1046, 0.1411];
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 0.01, "got {got:?}, want {want:?}");
    }
}

#[test]
fn unsorted_batching_gives_the_same_vectors() {
    let texts = ["tiny", "a somewhat longer text about embeddings and batches", "mid size text"];
    let sorted = model().embed(&texts).unwrap();
    let plain = FastEmbedder::with_options(EmbedOptions::default().sort_by_length(false)).unwrap();
    let unsorted = plain.embed(&texts).unwrap();
    for (a, b) in sorted.iter().zip(&unsorted) {
        assert!(a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-5));
    }
}

#[test]
fn long_text_is_truncated_not_rejected() {
    let long = "word ".repeat(2000);
    let v = model().embed_one(&long).unwrap();
    assert_eq!(v.len(), 384);
    assert!(model().token_offsets(&long).len() >= 2000, "offsets are not truncated");
}

fn copy_model_to(dir: &std::path::Path) {
    let files = model().files();
    for p in [
        &files.runtime,
        &files.model,
        &files.tokenizer,
        &files.config,
        &files.special_tokens_map,
        &files.tokenizer_config,
    ] {
        std::fs::copy(p, dir.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn missing_model_gives_the_documented_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = FastEmbedder::with_options(EmbedOptions::default().model_dir(dir.path())).unwrap_err();
    assert!(matches!(err, Error::ModelMissing { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("make models") && msg.contains("convdex models fetch"), "{msg}");

    // Everything but the tokenizer: the message names the missing file.
    copy_model_to(dir.path());
    std::fs::remove_file(dir.path().join("tokenizer.json")).unwrap();
    let err = FastEmbedder::with_options(EmbedOptions::default().model_dir(dir.path())).unwrap_err();
    assert!(err.to_string().contains("tokenizer.json"), "{err}");
}

#[test]
fn corrupt_model_gives_the_documented_error() {
    let dir = tempfile::tempdir().unwrap();
    copy_model_to(dir.path());
    let model_path = dir.path().join("model.onnx");
    let bytes = std::fs::read(&model_path).unwrap();
    std::fs::write(&model_path, &bytes[..bytes.len() / 2]).unwrap();
    let err = FastEmbedder::with_options(EmbedOptions::default().model_dir(dir.path())).unwrap_err();
    match &err {
        Error::ModelCorrupt { path, .. } => assert_eq!(path, &model_path),
        other => panic!("expected ModelCorrupt, got {other:?}"),
    }
    assert!(err.to_string().contains("make models"), "{err}");
}

#[test]
fn the_lazy_model_loads_on_first_embedding_and_words_need_no_model() {
    // Index with the real model, then reopen with a lazy embedder whose model directory is
    // empty: lexical search answers, semantic search reports the missing model, nothing panics.
    let data = tempfile::tempdir().unwrap();
    let real = std::sync::Arc::new(
        FastEmbedder::with_options(EmbedOptions::default().model_dir(&model().files().dir)).unwrap(),
    );
    {
        let index = convdex::Index::open(data.path(), convdex::Options::default().embedder(real.clone())).unwrap();
        let coll = index.collection("t", "項目").unwrap();
        let docs = [
            convdex::Document::message(
                "s",
                "a",
                0,
                convdex::Role::User,
                "the parser rejects frame headers over 64 KiB",
            ),
            convdex::Document::message(
                "s",
                "b",
                1,
                convdex::Role::Assistant,
                "we pinned redb to 2.x for the file format",
            ),
        ];
        coll.add(&docs).unwrap();
    }
    let empty = tempfile::tempdir().unwrap();
    let lazy = std::sync::Arc::new(convdex::LazyEmbedder::new(EmbedOptions::default().model_dir(empty.path())));
    assert_eq!((lazy.model_id(), lazy.dim()), (real.model_id(), real.dim()), "known without loading");
    let index = convdex::Index::open(data.path(), convdex::Options::default().embedder(lazy.clone())).unwrap();
    let mut q = convdex::Query::new("redb");
    q.mode = Some(convdex::SearchMode::Lexical);
    let found = index.search(None, &q).unwrap();
    assert_eq!(found.found.len(), 1, "{:?}", found.skipped);
    assert!(!lazy.is_loaded());
    q.mode = Some(convdex::SearchMode::Semantic);
    let err = index.search(None, &q).unwrap_err();
    assert!(matches!(err, Error::ModelMissing { .. }) && err.to_string().contains("make models"), "{err}");
    // With the model present, the lazy embedder gives the model's own vectors.
    let loaded = convdex::LazyEmbedder::new(EmbedOptions::default().model_dir(&model().files().dir));
    assert!(!loaded.is_loaded());
    assert_eq!(loaded.embed_one("pinned redb").unwrap(), real.embed_one("pinned redb").unwrap());
    assert!(loaded.is_loaded());
    assert_eq!(loaded.token_offsets("pinned redb"), real.token_offsets("pinned redb"));
}
