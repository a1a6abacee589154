//! Shared fixtures.

use std::sync::OnceLock;

use convdex::FastEmbedder;

/// The real default model (multilingual-e5-small), loaded once per test process.
pub fn model() -> &'static FastEmbedder {
    static M: OnceLock<FastEmbedder> = OnceLock::new();
    M.get_or_init(|| FastEmbedder::new().expect("model provisioned: run `make models`"))
}

/// The real all-MiniLM-L6-v2 (the default of earlier versions), loaded once per test process.
pub fn minilm() -> &'static FastEmbedder {
    static M: OnceLock<FastEmbedder> = OnceLock::new();
    M.get_or_init(|| {
        FastEmbedder::with_options(convdex::EmbedOptions::default().model("all-minilm-l6-v2"))
            .expect("model provisioned: run `make models`")
    })
}

pub use convdex::testutil::clustered_vectors;

/// A message document with tags and a timestamp, for engine tests.
pub fn doc(session: &str, i: u64, content: &str, tags: &[&str], ts_ms: i64) -> convdex::Document {
    let mut d = convdex::Document::message(session, &format!("{session}-m{i}"), i, convdex::Role::User, content);
    d.tags = tags.iter().map(|t| t.to_string()).collect();
    d.timestamp = chrono::DateTime::from_timestamp_millis(ts_ms).unwrap();
    d
}

/// An index in a temp dir using the hash embedder (fast, deterministic).
pub fn hash_index(dir: &std::path::Path, options: convdex::CollectionOptions) -> convdex::Index {
    let opts =
        convdex::Options::default().embedder(std::sync::Arc::new(convdex::HashEmbedder::default())).collection(options);
    convdex::Index::open(dir, opts).unwrap()
}

/// A copy of the sample project shipped in `examples/sample/` (a temporary history root) and
/// the path of its transcript.
pub fn sample_history() -> (tempfile::TempDir, std::path::PathBuf) {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample/projects/-home-dev-acme-api");
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("projects/-home-dev-acme-api");
    std::fs::create_dir_all(&proj).unwrap();
    let mut transcript = None;
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        std::fs::copy(e.path(), proj.join(e.file_name())).unwrap();
        if e.path().extension().is_some_and(|x| x == "jsonl") {
            transcript = Some(proj.join(e.file_name()));
        }
    }
    (tmp, transcript.expect("the sample has a transcript"))
}

/// Copies the folder `from` into `to`, subfolders included (created as needed).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// Every file under `dir`, subfolders included, in path order.
pub fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
