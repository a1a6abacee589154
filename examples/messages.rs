//! Prints the messages of transcript files as indexing makes them (scrubbed; a message that only
//! made tool calls reads as what it did), one line of metadata and the text for each: what a
//! person labelling decisions reads (see `tests/data/decision_labelling.md`). The text goes to
//! standard output only; labels name messages by file and uuid.
//!
//! Run: `cargo run --release --example messages -- [--cut N] FILE...` (paths relative to
//! `../shared/data` are printed as given; `--cut` shortens assistant messages to N characters).

use std::path::Path;

use convdex::derive::session::{SessionFile, documents};
use convdex::{Agent, DocBody};

fn parse(path: &Path, bytes: &[u8]) -> Vec<convdex::ingest::claude::ParsedFile> {
    let p = path.to_string_lossy();
    if p.contains("/codex/") {
        vec![convdex::ingest::codex::parse(bytes)]
    } else if p.contains("/gemini/") {
        vec![convdex::ingest::gemini::parse_chat(bytes)]
    } else {
        vec![convdex::ingest::claude::parse(bytes)]
    }
}

fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut cut = usize::MAX;
    if let Some(i) = args.iter().position(|a| a == "--cut") {
        cut = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(1500);
        args.drain(i..=(i + 1).min(args.len() - 1));
    }
    for file in &args {
        let bytes = std::fs::read(file)?;
        println!("=== FILE {file}");
        for pf in parse(Path::new(file), &bytes) {
            let f = SessionFile { parsed: &pf, agent: None };
            let (docs, _) = documents("label", "", Agent::default(), &[f]);
            for (i, d) in docs.iter().enumerate() {
                let DocBody::Message(m) = &d.body else { continue };
                let role = format!("{:?}", m.role).to_lowercase();
                let n = d.content.chars().count();
                let text: String = if role == "assistant" && n > cut {
                    format!("{} …[{} more characters]", d.content.chars().take(cut).collect::<String>(), n - cut)
                } else {
                    d.content.clone()
                };
                println!("--- [{i}] uuid={} role={role} time={}", m.message_uuid, d.timestamp.format("%Y-%m-%d %H:%M"));
                println!("{text}");
            }
        }
    }
    Ok(())
}
