//! Gemini CLI histories: `tmp/<sha256 of the project path>/chats/session-*.json` and
//! `tmp/<hash>/logs.json`. A session is the chat files of one `sessionId`; a session with no chat
//! file left is read from the prompts `logs.json` kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{Agent, ProjectFolder, SessionFiles};
use crate::error::{Error, Result};
use crate::ingest::gemini::{parse_chat, parse_logs, project_hash};

fn is_hash(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_project_dir(p: &Path) -> bool {
    p.file_name().is_some_and(|n| is_hash(&n.to_string_lossy()))
        && (p.join("chats").is_dir() || p.join("logs.json").is_file())
}

/// True for `~/.gemini`, its `tmp`, or one project's hashed folder.
pub(crate) fn is_root(path: &Path) -> bool {
    is_project_dir(path) || !project_dirs(path).is_empty()
}

fn project_dirs(path: &Path) -> Vec<PathBuf> {
    if is_project_dir(path) {
        return vec![path.to_path_buf()];
    }
    let base = if path.join("tmp").is_dir() { path.join("tmp") } else { path.to_path_buf() };
    let mut out: Vec<PathBuf> = std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_project_dir(p))
        .collect();
    out.sort();
    out
}

/// The project a hashed folder stands for: the known path whose SHA-256 is its name.
fn resolve(hash: &str, known: &[String]) -> Option<String> {
    known
        .iter()
        .find(|k| {
            let trimmed = k.trim_end_matches(['/', '\\']);
            project_hash(k) == hash || project_hash(trimmed) == hash
        })
        .cloned()
}

/// The sessions under `path`, one folder per project; `known` project paths name the folders.
pub(crate) fn discover(path: &Path, known: &[String]) -> Result<Vec<ProjectFolder>> {
    if path.is_file() {
        // One chat file: its project folder is two levels up.
        let dir = path.parent().and_then(Path::parent).unwrap_or(path);
        let mut f = folder(dir, known);
        let id = parse_chat(&std::fs::read(path).map_err(|e| Error::io(path, e))?).session_id.unwrap_or_default();
        f.sessions = vec![SessionFiles { id, main: Some(path.to_path_buf()), ..SessionFiles::new(Agent::Gemini) }];
        return Ok(vec![f]);
    }
    let mut out = Vec::new();
    for dir in project_dirs(path) {
        let mut f = folder(&dir, known);
        let mut sessions: BTreeMap<String, SessionFiles> = BTreeMap::new();
        let mut chats: Vec<PathBuf> = std::fs::read_dir(dir.join("chats"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        chats.sort();
        for c in chats {
            let Some(id) = std::fs::read(&c).ok().and_then(|b| parse_chat(&b).session_id) else { continue };
            let s =
                sessions.entry(id.clone()).or_insert_with(|| SessionFiles { id, ..SessionFiles::new(Agent::Gemini) });
            if s.main.is_none() { s.main = Some(c) } else { s.parts.push(c) }
        }
        let logs = dir.join("logs.json");
        if let Ok(bytes) = std::fs::read(&logs) {
            for (id, _) in parse_logs(&bytes) {
                sessions.entry(id.clone()).or_insert_with(|| SessionFiles {
                    id,
                    main: Some(logs.clone()),
                    ..SessionFiles::new(Agent::Gemini)
                });
            }
        }
        f.sessions = sessions.into_values().collect();
        if !f.sessions.is_empty() {
            out.push(f);
        }
    }
    Ok(out)
}

fn folder(dir: &Path, known: &[String]) -> ProjectFolder {
    let hash = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    ProjectFolder { dir: dir.to_path_buf(), project: resolve(&hash, known), agent: Agent::Gemini, sessions: Vec::new() }
}
