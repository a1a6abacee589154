//! Compact run records: round trips (property test) and the shared corpus, where every run's
//! tool counts must match the tool calls of its sidechain transcript.

use std::collections::HashMap;
use std::path::Path;

use convdex::runs::{Format, ModelCode, RunRecord, TOOLS, detect, tool_letter};
use proptest::prelude::*;

fn record() -> impl Strategy<Value = RunRecord> {
    let tools = proptest::sample::subsequence(TOOLS.iter().map(|t| t.0).collect::<Vec<_>>(), 0..5)
        .prop_flat_map(|letters| {
            let n = letters.len();
            (Just(letters), proptest::collection::vec(1u32..500, n))
        })
        .prop_map(|(l, c)| l.into_iter().zip(c).collect::<Vec<_>>());
    (
        "[A-Za-z0-9_-]{1,20}",
        "[a-z][a-z0-9-]{0,15}",
        1u32..9,
        prop_oneof![Just(ModelCode::Sonnet), Just(ModelCode::Opus), Just(ModelCode::Haiku), Just(ModelCode::Unknown)],
        tools,
        proptest::collection::vec("[a-zA-Z0-9_./,|% -]{1,30}", 0..4),
        any::<bool>(),
        0u64..10_000_000,
        proptest::option::of("[a-z_|,]{1,12}"),
        "[a-zA-Z0-9_.,|%-]{0,40}",
    )
        .prop_map(|(task_id, department, attempt, model, tools, files, success, duration_ms, error, summary)| {
            RunRecord {
                task_id,
                department,
                attempt,
                model,
                tools,
                // A file list is written ", "-separated in the readable form: names are trimmed.
                files: files.into_iter().map(|f| f.trim().to_string()).filter(|f| !f.is_empty()).collect(),
                success,
                duration_ms,
                error,
                summary,
            }
        })
}

proptest! {
    #[test]
    fn encode_decode_encode_is_identity(r in record()) {
        let compact = r.compact();
        prop_assert_eq!(detect(&compact), Some(Format::Compact));
        let back = RunRecord::parse(&compact).unwrap();
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(back.compact(), compact.clone());
        let readable = r.readable();
        prop_assert_eq!(detect(&readable), Some(Format::Readable));
        let from_readable = RunRecord::parse(&readable).unwrap();
        prop_assert_eq!(from_readable.compact(), compact);
    }
}

/// Tool calls of a sidechain file counted independently of the library: every distinct
/// `tool_use` block id in assistant records, by tool name.
fn tool_calls(path: &Path) -> HashMap<String, u32> {
    let mut seen = std::collections::HashSet::new();
    let mut out = HashMap::new();
    for line in std::fs::read_to_string(path).unwrap().lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let Some(blocks) = v.pointer("/message/content").and_then(|c| c.as_array()) else { continue };
        for b in blocks {
            if b["type"] == "tool_use" && seen.insert(b["id"].as_str().unwrap_or_default().to_string()) {
                *out.entry(b["name"].as_str().unwrap_or_default().to_string()).or_default() += 1;
            }
        }
    }
    out
}

#[test]
fn corpus_runs_match_their_sidechains_and_compact_halves_the_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    // Project folders: where session files (or session dirs holding `subagents/`) sit.
    let mut folders = std::collections::BTreeSet::new();
    for f in walk(&root) {
        let parent = f.parent().unwrap();
        if parent.file_name().is_some_and(|n| n == "subagents") {
            folders.insert(parent.parent().unwrap().parent().unwrap().to_path_buf());
        } else if !f.file_name().unwrap().to_string_lossy().starts_with("agent-") {
            folders.insert(parent.to_path_buf());
        }
    }
    let sessions: Vec<convdex::SessionRuns> = folders.iter().flat_map(|d| convdex::runs_in(d).unwrap()).collect();
    let runs: usize = sessions.iter().map(|s| s.runs.len()).sum();
    assert!(runs >= 20, "only {runs} runs found in the corpus");
    // Index every sidechain file by agent id.
    let mut files: HashMap<String, std::path::PathBuf> = HashMap::new();
    for e in walk(&root) {
        let name = e.file_stem().unwrap().to_string_lossy().into_owned();
        if let Some(id) = name.strip_prefix("agent-") {
            files.insert(id.to_string(), e.clone());
        }
    }
    let (mut checked, mut compact, mut readable) = (0, 0usize, 0usize);
    for s in &sessions {
        for r in &s.runs {
            compact += r.compact().len();
            readable += r.readable().len();
            assert_eq!(RunRecord::parse(&r.compact()).unwrap(), *r);
            let Some(path) = files.get(&r.task_id) else { continue };
            let calls = tool_calls(path);
            let mut expected: HashMap<char, u32> = HashMap::new();
            for (name, n) in &calls {
                *expected.entry(tool_letter(name)).or_default() += n;
            }
            let got: HashMap<char, u32> = r.tools.iter().copied().collect();
            assert_eq!(got, expected, "{} {}: {:?}", s.session_id, r.task_id, calls);
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} runs had a sidechain file");
    let ratio = compact as f64 / readable as f64;
    println!(
        "run records: {} sessions, {runs} runs ({checked} checked against their sidechain); compact {compact} bytes, readable {readable} bytes, ratio {ratio:.3}",
        sessions.len()
    );
    assert!(ratio <= 0.5, "compact form is {ratio:.3} of the readable form");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}
