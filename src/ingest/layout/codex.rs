//! Codex CLI rollouts: `sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, one session each, its
//! working directory in the first record (`session_meta`).

use std::collections::BTreeMap;
use std::path::Path;

use super::{Agent, ProjectFolder, SessionFiles, files_under};
use crate::error::{Error, Result};

fn is_rollout(name: &str) -> bool {
    name.starts_with("rollout-") && name.ends_with(".jsonl")
}

/// True when `path` holds rollouts where Codex keeps them: a `~/.codex` (its `sessions`
/// folder), `sessions` itself, a year's, month's or day's folder under it, or any folder with
/// rollouts directly in it. (A folder that only holds one of these further down is not.)
pub(crate) fn is_root(path: &Path) -> bool {
    if !path.is_dir() {
        return false;
    }
    let direct = std::fs::read_dir(path)
        .map(|rd| rd.flatten().any(|e| is_rollout(&e.file_name().to_string_lossy()) && e.path().is_file()))
        .unwrap_or(false);
    if direct {
        return true;
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let dated = name == "sessions" || (!name.is_empty() && name.bytes().all(|b| b.is_ascii_digit()));
    let below = if dated { path.to_path_buf() } else { path.join("sessions") };
    below.is_dir() && !files_under(&below, &is_rollout).is_empty()
}

/// Session id and working directory from a rollout's first record (`session_meta`), or, for a
/// rollout written before it existed, from its header line and the `<cwd>` of the environment
/// context among its first records (the first 1 MiB is read at most).
fn meta(path: &Path) -> (Option<String>, Option<String>) {
    use std::io::{BufRead, BufReader, Read};
    let Ok(f) = std::fs::File::open(path) else { return (None, None) };
    let mut lines = BufReader::new(f.take(1 << 20)).lines().map_while(std::result::Result::ok);
    let first: Option<serde_json::Value> = lines.next().and_then(|l| serde_json::from_str(&l).ok());
    let Some(first) = first else { return (None, None) };
    if crate::ingest::codex::is_legacy_header(&first) {
        let id = first.get("id").and_then(|x| x.as_str()).map(str::to_string);
        let cwd = lines.take(64).find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(&l).ok()?;
            let blocks = v.get("content")?.as_array()?;
            blocks.iter().filter_map(|b| b.get("text")?.as_str()).find_map(crate::ingest::codex::environment_cwd)
        });
        return (id, cwd);
    }
    let payload = first.get("payload");
    let field = |k: &str| payload.and_then(|p| p.get(k)).and_then(|x| x.as_str()).map(str::to_string);
    (field("id"), field("cwd"))
}

/// The rollouts under `path` (or the one file), grouped by working directory.
pub(crate) fn discover(path: &Path) -> Result<Vec<ProjectFolder>> {
    let files = if path.is_file() {
        vec![path.to_path_buf()]
    } else if path.is_dir() {
        files_under(path, &is_rollout)
    } else {
        return Err(Error::NotFound(format!("Codex history {}", path.display())));
    };
    let mut by_cwd: BTreeMap<Option<String>, ProjectFolder> = BTreeMap::new();
    for f in files {
        let (id, cwd) = meta(&f);
        let id = id.unwrap_or_else(|| f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
        let folder = by_cwd.entry(cwd.clone()).or_insert_with(|| ProjectFolder {
            dir: f.parent().unwrap_or(path).to_path_buf(),
            project: cwd.clone(),
            agent: Agent::Codex,
            sessions: Vec::new(),
            left_out: Vec::new(),
        });
        folder.sessions.push(SessionFiles { id, main: Some(f), ..SessionFiles::new(Agent::Codex) });
    }
    Ok(by_cwd.into_values().collect())
}
