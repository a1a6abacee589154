//! Prints the messages of transcript files as indexing makes them (scrubbed; a message that only
//! made tool calls reads as what it did), one line of metadata and the text for each: what a
//! person labelling decisions reads (see `tests/data/decision_labelling.md`). The text goes to
//! standard output only; labels name messages by file and uuid.
//!
//! Run: `cargo run --release --example messages -- [--cut N] [--json] FILE...` (paths are
//! printed as given; `--cut` shortens assistant messages to N characters; `--json` prints one
//! JSON object per message: file, uuid, role, text).

use std::path::Path;

use convdex::derive::session::{SessionFile, documents};
use convdex::{Agent, DocBody};

fn parse(path: &Path, bytes: &[u8]) -> Vec<convdex::ingest::claude::ParsedFile> {
    let p = path.to_string_lossy();
    if p.contains("/aider/") {
        convdex::ingest::aider::parse(bytes).into_iter().map(|(_, f)| f).collect()
    } else if p.contains("/codex/") {
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
    let json = args.iter().any(|a| a == "--json");
    args.retain(|a| a != "--json");
    if let Some(i) = args.iter().position(|a| a == "--cut") {
        cut = args.get(i + 1).and_then(|n| n.parse().ok()).unwrap_or(1500);
        args.drain(i..=(i + 1).min(args.len() - 1));
    }
    for file in &args {
        let bytes = std::fs::read(file)?;
        if !json {
            println!("=== FILE {file}");
        }
        for pf in parse(Path::new(file), &bytes) {
            let f = SessionFile { parsed: &pf, agent: None };
            let (docs, _) = documents("label", "", Agent::default(), &[f]);
            let turns: Vec<convdex::extract::Turn<'_>> = docs
                .iter()
                .map(|d| {
                    let role = match &d.body {
                        DocBody::Message(m) => m.role,
                        _ => convdex::Role::Assistant,
                    };
                    convdex::extract::Turn { role, text: &d.content }
                })
                .collect();
            let decided = convdex::extract::extract_all(turns.iter().copied());
            for (i, d) in docs.iter().enumerate() {
                let DocBody::Message(m) = &d.body else { continue };
                let mine: Vec<serde_json::Value> = decided
                    .iter()
                    .filter(|(j, _)| *j == i)
                    .map(|(_, x)| serde_json::json!({"summary": x.summary, "confidence": x.confidence, "rule": x.rule}))
                    .collect();
                let role = format!("{:?}", m.role).to_lowercase();
                if json {
                    // What the sentence rules and scorer make of the message (for work on the
                    // message-level model).
                    let previous = i.checked_sub(1).map(|j| turns[j]);
                    let scorer = convdex::extract::Scorer::default();
                    let cands = convdex::extract::candidates(turns[i], previous);
                    let rule = cands.iter().map(|c| c.decision.confidence).fold(0.0_f32, f32::max);
                    let scored = cands.iter().map(|c| scorer.probability(&c.features)).fold(0.0_f32, f32::max);
                    let none =
                        convdex::extract::Scorer { weights: [0.0; convdex::extract::FEATURES.len()], threshold: 2.0 };
                    let reply = !convdex::extract::extract_with(&none, turns[i], previous).is_empty();
                    let kept = convdex::extract::extract_with(&scorer, turns[i], previous);
                    let v = serde_json::json!({"file": file, "uuid": m.message_uuid, "role": role, "text": d.content, "index": i,
                        "rule": rule, "scored": scored, "reply": reply, "kept": kept.len(),
                        "summaries": kept.iter().map(|k| k.summary.clone()).collect::<Vec<_>>(), "decisions": mine});
                    println!("{v}");
                    continue;
                }
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
