//! Search on a real redb file with the real embedding model: paraphrased questions find the
//! message that answers them, with and without filters.

use std::sync::Arc;

use convdex::{CollectionOptions, FileAction, FileRef, Index, Options};

use crate::common::{doc, model};

#[test]
fn paraphrases_find_their_messages_with_filters() {
    let dir = tempfile::tempdir().unwrap();
    let embedder: Arc<dyn convdex::Embedder> = Arc::new(
        convdex::FastEmbedder::with_options(convdex::EmbedOptions {
            model_dir: Some(model().files().dir.clone()),
            ..Default::default()
        })
        .unwrap(),
    );
    let index = Index::open(dir.path(), Options::default().embedder(embedder).collection(CollectionOptions::default()))
        .unwrap();
    let coll = index.collection("me", "webapp").unwrap();
    let corpus = [
        (
            "s1",
            "Let's use chromem instead of Qdrant for the embedded vector store; no external service to deploy.",
            "backend",
            "internal/vectorstore/chromem.go",
        ),
        ("s1", "The login handler now rejects expired JWTs and returns 401.", "backend", "src/auth.rs"),
        (
            "s1",
            "Bumped the Postgres connection pool to 20 because requests were timing out.",
            "backend",
            "config/db.yaml",
        ),
        ("s2", "The navbar collapses into a hamburger menu on small screens.", "frontend", "web/src/Navbar.tsx"),
        (
            "s2",
            "Switched the charts from D3 to Recharts, it is much simpler for our dashboards.",
            "frontend",
            "web/src/Charts.tsx",
        ),
        ("s2", "Dark mode colours are defined as CSS variables in the theme file.", "frontend", "web/src/theme.css"),
        (
            "s3",
            "The Docker image shrank from 1.2 GB to 180 MB with a multi-stage build.",
            "infrastructure",
            "Dockerfile",
        ),
        (
            "s3",
            "CI now caches the cargo registry, builds take four minutes instead of twelve.",
            "infrastructure",
            ".github/workflows/ci.yml",
        ),
        (
            "s3",
            "Kubernetes pods were crash looping because the readiness probe hit the wrong port.",
            "infrastructure",
            "deploy/k8s/app.yaml",
        ),
    ];
    let docs: Vec<_> = corpus
        .iter()
        .enumerate()
        .map(|(i, (s, text, domain, file))| {
            let mut d = doc(s, i as u64, text, &[], 1_700_000_000_000 + 3_600_000 * i as i64);
            d.domain = Some(domain.to_string());
            d.files_discussed =
                vec![FileRef { path: file.to_string(), line_ranges: vec![], action: FileAction::Edited }];
            d
        })
        .collect();
    coll.add(&docs).unwrap();
    let cases = [
        ("which vector database did we pick?", 0, "backend", "s1"),
        ("how are stale auth tokens handled", 1, "backend", "s1"),
        ("why were database queries timing out", 2, "backend", "s1"),
        ("mobile menu layout", 3, "frontend", "s2"),
        ("what charting library do we use now", 4, "frontend", "s2"),
        ("where are the theme colours for night mode", 5, "frontend", "s2"),
        ("how did we make the container smaller", 6, "infrastructure", "s3"),
        ("speed up the continuous integration pipeline", 7, "infrastructure", "s3"),
        ("why did the k8s deployment keep restarting", 8, "infrastructure", "s3"),
    ];
    for (q, want, domain, session) in cases {
        let top = |b: convdex::SearchBuilder<'_>| b.limit(3).run().unwrap()[0].doc.id;
        assert_eq!(top(coll.search(q)), docs[want].id, "{q}");
        assert_eq!(top(coll.search(q).domain(domain)), docs[want].id, "{q} (domain)");
        assert_eq!(top(coll.search(q).session(session)), docs[want].id, "{q} (session)");
        let file = &docs[want].files_discussed[0].path;
        assert_eq!(top(coll.search(q).file(file)), docs[want].id, "{q} (file)");
    }
    // Filters exclude: the answer is not returned when its domain is filtered out.
    let other = coll.search("which vector database did we pick?").domain("frontend").run().unwrap();
    assert!(other.iter().all(|h| h.doc.domain.as_deref() == Some("frontend")));
}
