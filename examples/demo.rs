//! The main job: index Claude Code history and search it.
//!
//! Indexes `~/.claude/projects` (or `$CLAUDE_CONFIG_DIR/projects`) when it exists, into the
//! data directory (`$CONVDEX_DATA_DIR`, else the platform data dir); otherwise indexes the
//! sample transcript shipped in `examples/sample/` into a temporary directory. Then runs a few
//! searches with filters. Run: `make demo` (provisions the model first).

use std::path::PathBuf;

use convdex::{DocKind, Index, IndexOptions, Options};

fn main() -> anyhow::Result<()> {
    let history = match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("projects"),
        None => dirs::home_dir().unwrap_or_default().join(".claude").join("projects"),
    };
    let tmp = tempfile::tempdir()?;
    let mut index;
    let mut report;
    if history.is_dir() {
        let data = std::env::var_os("CONVDEX_DATA_DIR")
            .map(PathBuf::from)
            .or_else(|| dirs::data_dir().map(|d| d.join("convdex")))
            .unwrap_or_else(|| tmp.path().to_path_buf());
        println!("indexing {} into {}", history.display(), data.display());
        index = Index::open(&data, Options::default())?;
        report = convdex::index_paths(&index, std::slice::from_ref(&history), &IndexOptions::default())?;
    } else {
        index = Index::open(tmp.path(), Options::default())?;
        report = convdex::IndexReport::default();
    }
    let sessions = report.sessions_new + report.sessions_appended + report.sessions_reindexed + report.sessions_skipped;
    if sessions == 0 {
        let sample = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/sample/projects");
        println!(
            "no Claude Code sessions under {}; indexing the shipped sample {}",
            history.display(),
            sample.display()
        );
        index = Index::open(tmp.path().join("sample"), Options::default())?;
        report = convdex::index_paths(&index, &[sample], &IndexOptions::default())?;
    }
    println!("{report}");
    let searches: [(&str, &str, Option<&str>); 3] = [
        ("why did the login endpoint fail with expired tokens?", "no filter", None),
        ("where do we keep user sessions and why?", "type message, tag redis", Some("redis")),
        ("what changed in the auth code?", "file src/auth.rs", None),
    ];
    for info in index.collections()? {
        let coll = index.collection(&info.tenant, &info.project)?;
        for (query, label, tag) in searches {
            let mut s = coll.search(query).limit(3);
            if let Some(t) = tag {
                s = s.kind(DocKind::Message).tags_any([t]);
            }
            if label.starts_with("file") {
                s = s.file("src/auth.rs");
            }
            let hits = s.run()?;
            println!("\n[{}] {query}  ({label}; {:?}; relevance 0-100)", info.project, hits.plan.path);
            for h in hits.iter() {
                let text: String = h.doc.content.split_whitespace().collect::<Vec<_>>().join(" ");
                let text: String = text.chars().take(110).collect();
                println!("  {:>3}  {}  {}", h.relevance, h.doc.timestamp.format("%Y-%m-%d %H:%M"), text);
            }
        }
    }
    Ok(())
}
