//! Reading labelled answers: the examples that score labelled questions over real transcripts
//! share this.

use std::path::Path;

use serde_json::Value;

/// The labelled uuids and every other line's of the same model message: Claude Code writes one
/// reply in several lines (its thinking, its text, each tool call), and convdex keeps them as one
/// message under the first line's uuid.
pub fn same_message(transcript: &Path, labelled: &[&str]) -> anyhow::Result<Vec<String>> {
    let lines: Vec<Value> =
        std::fs::read_to_string(transcript)?.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let id_of = |v: &Value| v["message"]["id"].as_str().map(str::to_string);
    let ids: Vec<String> =
        lines.iter().filter(|v| labelled.contains(&v["uuid"].as_str().unwrap_or_default())).filter_map(id_of).collect();
    let mut out: Vec<String> = labelled.iter().map(|u| u.to_string()).collect();
    for v in &lines {
        if id_of(v).is_some_and(|id| ids.contains(&id)) {
            out.extend(v["uuid"].as_str().map(str::to_string));
        }
    }
    Ok(out)
}
