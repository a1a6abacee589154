//! Indexes a handful of messages into a collection on disk with the real model, then searches
//! them by meaning, with and without filters.
//!
//! Run: `make demo` (provisions the model first), or `cargo run --release --example quickstart
//! -- "your question"`.

use convdex::{Document, FileAction, FileRef, Index, Options, Role};

fn main() -> convdex::Result<()> {
    let dir = tempfile::tempdir().map_err(|e| convdex::Error::InvalidArgument(e.to_string()))?;
    let index = Index::open(dir.path(), Options::default())?;
    let coll = index.collection("demo", "webapp")?;
    let messages = [
        (
            "s1",
            "Let's use redb instead of SQLite: it is pure Rust and needs no C toolchain.",
            "backend",
            "src/store.rs",
        ),
        ("s1", "The auth middleware in src/auth.rs now rejects expired bearer tokens.", "backend", "src/auth.rs"),
        ("s2", "The CI pipeline fails because clippy reports a needless borrow.", "infrastructure", ".ci/run"),
        (
            "s2",
            "Decided to embed locally with all-MiniLM-L6-v2 so nothing leaves the machine.",
            "backend",
            "src/embed.rs",
        ),
        ("s3", "The navbar collapses into a hamburger menu on small screens.", "frontend", "web/Navbar.tsx"),
    ];
    let docs: Vec<Document> = messages
        .iter()
        .enumerate()
        .map(|(i, (session, text, domain, file))| {
            let mut d = Document::message(session, &format!("m{i}"), i as u64, Role::User, text);
            d.domain = Some(domain.to_string());
            d.files_discussed =
                vec![FileRef { path: file.to_string(), line_ranges: vec![], action: FileAction::Edited }];
            d
        })
        .collect();
    let report = coll.add(&docs)?;
    println!("indexed {} messages ({} embedded) into {}", report.documents, report.embedded, coll.name());

    let query = std::env::args().nth(1).unwrap_or_else(|| "which database did we choose and why?".into());
    for (label, search) in [
        ("all", coll.search(&query)),
        ("domain = backend", coll.search(&query).domain("backend")),
        ("file = src/auth.rs", coll.search(&query).file("src/auth.rs")),
    ] {
        let hits = search.limit(3).run()?;
        println!("\nquery: {query}  [{label}; plan {:?}, {} candidates]", hits.plan.path, hits.plan.candidates);
        for h in hits.iter() {
            println!("  {:.3}  {}  {}", h.score, h.doc.session_id, h.doc.content);
        }
    }
    Ok(())
}
