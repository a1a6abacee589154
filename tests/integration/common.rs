//! Shared fixtures.

use std::sync::OnceLock;

use convdex::FastEmbedder;

/// The real model, loaded once per test process.
pub fn model() -> &'static FastEmbedder {
    static M: OnceLock<FastEmbedder> = OnceLock::new();
    M.get_or_init(|| FastEmbedder::new().expect("model provisioned: run `make models`"))
}
