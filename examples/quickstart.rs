//! Embeds a few sentences with the real model and ranks them for a query.
//!
//! Run: `make demo` (provisions the model first), or `cargo run --release --example quickstart`.

use convdex::embed::dot;
use convdex::{Embedder, FastEmbedder};

fn main() -> convdex::Result<()> {
    let model = FastEmbedder::new()?;
    let passages = [
        "Let's use redb instead of SQLite: it is pure Rust and needs no C toolchain.",
        "The CI pipeline fails because clippy reports a needless borrow in src/index.rs.",
        "I renamed the branch to feature/search-filters and pushed it.",
        "Decided to embed locally with all-MiniLM-L6-v2 so nothing leaves the machine.",
        "The auth middleware in src/auth.rs rejects expired bearer tokens.",
    ];
    let query = std::env::args().nth(1).unwrap_or_else(|| "which database did we choose and why?".into());
    let pv = model.embed(&passages)?;
    let qv = model.embed_one(&query)?;
    let mut ranked: Vec<(f32, &str)> = pv.iter().zip(passages).map(|(v, p)| (dot(&qv, v), p)).collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!("query: {query}");
    for (score, p) in ranked {
        println!("  {score:.3}  {p}");
    }
    Ok(())
}
