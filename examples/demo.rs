//! The main job: index Claude Code history and search it.
//!
//! Indexes `~/.claude/projects` (or `$CLAUDE_CONFIG_DIR/projects`) when it exists, into the
//! data directory (`$CONVDEX_DATA_DIR`, else the platform data dir); otherwise indexes the
//! sample transcript shipped in `examples/sample/` into a temporary directory. Then runs a few
//! searches with filters. Run: `make demo` (provisions the model first).

use std::path::PathBuf;

use convdex::{Index, IndexOptions, Options};

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
    // The questions, their filters and (for the tests) their answers: examples/sample/questions.json.
    let questions: serde_json::Value = serde_json::from_str(include_str!("sample/questions.json"))?;
    let questions = questions["questions"].as_array().cloned().unwrap_or_default();
    for info in index.collections()? {
        let coll = index.collection(&info.tenant, &info.project)?;
        for q in &questions {
            let (query, label) = (q["query"].as_str().unwrap_or_default(), q["label"].as_str().unwrap_or_default());
            let mut s = coll.search(query).limit(3);
            if let Some(kind) = q["type"].as_str() {
                s = s.kind(kind.parse()?);
            }
            if let Some(tag) = q["tag"].as_str() {
                s = s.tags_any([tag]);
            }
            if let Some(file) = q["file"].as_str() {
                s = s.file(file);
            }
            let hits = s.run()?;
            println!("\n[{}] {query}  ({label})", info.project);
            if hits.len() >= 2 {
                let among = convdex::answer_among(hits.iter().map(|h| h.relevance));
                println!("  chance one of these {} hits is an answer: {among} %; each hit's own chance:", hits.len());
            } else {
                println!("  each hit's chance of being the answer:");
            }
            for h in hits.iter() {
                let text: String = h.doc.content.split_whitespace().collect::<Vec<_>>().join(" ");
                let text: String = text.chars().take(110).collect();
                println!("  {:>3} %  {}  {}", h.relevance, h.doc.timestamp.format("%Y-%m-%d %H:%M"), text);
            }
        }
    }
    Ok(())
}
