//! Finding histories under a folder that is none itself: a home directory or a backup of one
//! (`.claude/`, `.codex/`, `.gemini/` and Aider's files side by side), or a folder holding
//! several such backups. Each folder is asked which agent's history it is; one that is none is
//! looked into, down to [`MAX_DEPTH`] levels, never twice (a symbolic link back up the tree is
//! followed once) and never into [`SKIPPED`] folders.
//!
//! Reads directories and the first 64 KiB of `.jsonl` files; parses nothing.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{Agent, aider, codex, gemini, peek_field};
use crate::error::{Error, Result};

/// How many levels below the path given the walk looks for histories.
pub const MAX_DEPTH: usize = 6;

/// Folders the walk never looks into: version control, dependencies, build outputs and caches,
/// which hold no agent history and can be large.
pub const SKIPPED: [&str; 8] = [".git", "node_modules", "target", ".cache", "__pycache__", ".venv", ".npm", ".cargo"];

/// Every history root under `path` (a directory), in the order found (sorted by name at each
/// level), with the agent that wrote it. A folder that cannot be read is an error at the top and
/// skipped below it.
pub(crate) fn roots(path: &Path) -> Result<Vec<(PathBuf, Agent)>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    walk(path, 0, &mut seen, &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, depth: usize, seen: &mut HashSet<PathBuf>, out: &mut Vec<(PathBuf, Agent)>) -> Result<()> {
    if !seen.insert(dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())) {
        return Ok(());
    }
    // An Aider history sits in a project's directory, which may hold other histories: there a
    // `.jsonl` file needs the evidence asked below the path given.
    let aider = dir.join(aider::HISTORY).is_file();
    if aider {
        out.push((dir.to_path_buf(), Agent::Aider));
    }
    if let Some(agent) = root_agent(dir, if aider { depth + 1 } else { depth }) {
        out.push((dir.to_path_buf(), agent));
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        return Ok(());
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if depth == 0 => return Err(Error::io(dir, e)),
        Err(_) => return Ok(()),
    };
    let mut subs: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| !SKIPPED.iter().any(|s| e.file_name() == *s))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    subs.sort();
    for sub in subs {
        walk(&sub, depth + 1, seen, out)?;
    }
    Ok(())
}

/// The agent whose history root (or project folder) `dir` is, if any.
fn root_agent(dir: &Path, depth: usize) -> Option<Agent> {
    if gemini::is_root(dir) {
        return Some(Agent::Gemini);
    }
    if codex::is_root(dir) {
        return Some(Agent::Codex);
    }
    claude_folder(dir, depth).then_some(Agent::ClaudeCode)
}

/// A Claude Code project folder: session transcripts (`.jsonl`) directly in it, or session
/// folders (named by a UUID) with sub-agents. Below the path given, a `.jsonl` file counts when it is named like
/// a session (a UUID, or `agent-…`), sits in a `projects` folder, or records a `sessionId`
/// in its first 64 KiB, so a project's data files are not read as transcripts.
fn claude_folder(dir: &Path, depth: usize) -> bool {
    // A config directory (`~/.claude`) keeps its sessions under `projects/`, and may keep other
    // `.jsonl` files (the prompts' history) beside it.
    if dir.join("projects").is_dir() {
        return false;
    }
    let Ok(rd) = std::fs::read_dir(dir) else { return false };
    let in_projects = dir.parent().and_then(Path::file_name).is_some_and(|n| n == "projects");
    let mut session_dirs = false;
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            // A session's folder is named by its UUID: a project folder holding a flat
            // `subagents/` (a backup's) is no session, nor does it make its parent a project.
            session_dirs |=
                super::claude::is_session_dir(&e.file_name().to_string_lossy()) && p.join("subagents").is_dir();
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".jsonl") else { continue };
        if depth == 0 || in_projects || is_session_name(stem) || peek_field(&p, "sessionId").is_some() {
            return true;
        }
    }
    session_dirs
}

/// A UUID (Claude Code's session file names) or a sub-agent's `agent-…`.
fn is_session_name(stem: &str) -> bool {
    stem.starts_with("agent-") || uuid::Uuid::parse_str(stem).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::layout::discover;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const SESSION: &str = "7c5f0e52-4d1a-4c36-9a51-2a8f0c1b9e10";

    /// A home directory's backup holding all four agents' histories, and a project with a data
    /// file that is no transcript.
    fn home(root: &Path) {
        let line = |cwd: &str| format!("{{\"type\":\"user\",\"sessionId\":\"{SESSION}\",\"cwd\":\"{cwd}\"}}\n");
        write(&root.join(".claude/projects/-w-app").join(format!("{SESSION}.jsonl")), &line("/w/app"));
        write(
            &root.join(".codex/sessions/2026/01/02/rollout-2026-01-02T10-00-00-x.jsonl"),
            "{\"type\":\"session_meta\",\"payload\":{\"id\":\"x\",\"cwd\":\"/w/app\"}}\n",
        );
        let hash = crate::ingest::gemini::project_hash("/w/app");
        write(
            &root.join(".gemini/tmp").join(hash).join("chats/session-1.json"),
            "{\"sessionId\":\"g1\",\"messages\":[{\"type\":\"user\",\"content\":\"hi\"}]}",
        );
        write(
            &root.join("代码/app").join(aider::HISTORY),
            "\n# aider chat started at 2026-01-02 10:00:00\n\n#### hi\n",
        );
        write(&root.join("代码/app/data/rows.jsonl"), "{\"id\":1}\n");
        write(&root.join("代码/app/node_modules/x").join(format!("{SESSION}.jsonl")), &line("/w/x"));
    }

    #[test]
    fn a_home_backup_finds_every_agent_and_no_data_file() {
        let tmp = tempfile::tempdir().unwrap();
        home(tmp.path());
        let found = discover(tmp.path(), &[]).unwrap();
        assert!(found.unreadable.is_empty(), "{:?}", found.unreadable);
        let mut agents: Vec<Agent> = found.folders.iter().map(|f| f.agent).collect();
        agents.sort();
        assert_eq!(agents, Agent::ALL, "{:?}", found.folders);
        // Gemini's folder is named by the path the Claude Code session records, found first.
        let gemini = found.folders.iter().find(|f| f.agent == Agent::Gemini).unwrap();
        assert_eq!(gemini.project.as_deref(), Some("/w/app"));
        let files: Vec<_> = found.folders.iter().flat_map(|f| &f.sessions).flat_map(|s| s.main.clone()).collect();
        assert!(!files.iter().any(|f| f.ends_with("rows.jsonl") || f.to_string_lossy().contains("node_modules")));
    }

    #[test]
    fn a_history_is_found_down_to_the_depth_limit_and_not_below() {
        let mut found = Vec::new();
        for depth in [MAX_DEPTH, MAX_DEPTH + 1] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = (1..=depth).fold(tmp.path().to_path_buf(), |d, level| d.join(format!("层{level}")));
            write(&dir.join(format!("{SESSION}.jsonl")), "{}\n");
            found.push(discover(tmp.path(), &[]).unwrap().folders.len());
        }
        assert_eq!(found, [1, 0]);
    }

    #[test]
    fn a_folder_with_no_history_is_found_empty_and_a_missing_one_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        write(&tmp.path().join("notes/a.txt"), "x");
        assert!(discover(tmp.path(), &[]).unwrap().folders.is_empty());
        assert!(matches!(discover(&tmp.path().join("gone"), &[]), Err(Error::NotFound(_))));
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_back_up_the_tree_are_followed_once() {
        let tmp = tempfile::tempdir().unwrap();
        home(tmp.path());
        // Two links to the root in every folder on the way make 2^depth paths to the same
        // folders: the walk (and Codex's listing of its rollouts) reads each folder once.
        for dir in [tmp.path().to_path_buf(), tmp.path().join(".codex/sessions/2026")] {
            std::os::unix::fs::symlink(tmp.path(), dir.join("up1")).unwrap();
            std::os::unix::fs::symlink(tmp.path(), dir.join("up2")).unwrap();
        }
        let found = discover(tmp.path(), &[]).unwrap();
        let sessions: usize = found.folders.iter().map(|f| f.sessions.len()).sum();
        assert_eq!((found.folders.len(), sessions), (4, 4), "{:?}", found.folders);
    }
}
