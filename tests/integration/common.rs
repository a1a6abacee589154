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
