//! Where Claude Code keeps its transcripts, and which files make a session: the main
//! `<session>.jsonl`, sub-agents in `<session>/subagents/` (agent type from the `.meta.json`
//! beside each; the newest versions nest workflow runs in `subagents/workflows/wf_*/`) and the
//! older `agent-*.jsonl` beside the sessions, or gathered by a backup in one flat `subagents/`
//! folder of the project (both attached by their `sessionId`); Claude Code's own internal
//! agents are left out, and said to be. A project is named by the working directory its
//! sessions record.
//!
//! Reads directories and the first 64 KiB of session files; parses nothing else.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use super::{Agent, LeftOut, ProjectFolder, SessionFiles, Subagent, peek_field};
use crate::error::{Error, Result};

/// Sub-agents that are Claude Code's own machinery, not user-visible work.
fn internal_agent(name: &str) -> bool {
    ["acompact", "aprompt_suggestion", "aside_question"].iter().any(|k| name.contains(k))
}

fn jsonl(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "jsonl"))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The agent type recorded in a sub-agent's `.meta.json`.
pub(crate) fn agent_type(path: &Path) -> Option<String> {
    let meta = path.with_extension("meta.json");
    let text = std::fs::read_to_string(meta).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("agentType").and_then(|t| t.as_str()).map(str::to_string)
}

/// First `sessionId` in the first 64 KiB of a file.
fn peek_session_id(path: &Path) -> Option<String> {
    peek_field(path, "sessionId")
}

/// Claude Code's session files in `path`: one project folder, or one file.
pub(crate) fn discover(path: &Path) -> Result<Vec<ProjectFolder>> {
    if path.is_file() {
        if path.extension().is_none_or(|e| e != "jsonl") {
            return Err(Error::InvalidArgument(format!(
                "{} is not a Claude Code transcript (a `.jsonl` session file); give a projects root \
                 (~/.claude/projects), one project folder, or one session file",
                path.display()
            )));
        }
        let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
        let id = path.file_stem().and_then(|s| s.to_str()).unwrap_or("session").to_string();
        let mut s =
            SessionFiles { id: id.clone(), main: Some(path.to_path_buf()), ..SessionFiles::new(Agent::ClaudeCode) };
        let (subagents, left_out) = subagents_of(&dir, &id);
        s.subagents = subagents;
        let mut folder = ProjectFolder { dir, project: None, agent: Agent::ClaudeCode, sessions: vec![s], left_out };
        folder.project = project_path(&folder);
        return Ok(vec![folder]);
    }
    // Config directories, projects roots and folders holding them are walked into by
    // `walk.rs`, which calls this for each project folder it finds (`layout::discover` has
    // checked that the path exists).
    Ok(vec![project_folder(path)])
}

fn subagents_of(dir: &Path, session: &str) -> (Vec<Subagent>, Vec<LeftOut>) {
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for p in super::files_under(&dir.join(session).join("subagents"), &|n| n.ends_with(".jsonl")) {
        if internal_agent(&p.to_string_lossy()) {
            left_out.push((p, INTERNAL.to_string()));
        } else {
            let t = agent_type(&p);
            kept.push((p, t));
        }
    }
    (kept, left_out)
}

/// Why an internal agent's transcript is not indexed.
const INTERNAL: &str = "Claude Code's own machinery (compaction, prompt suggestions), not a conversation";

/// A session's folder (`<uuid>/`, holding `subagents/` or `tool-results/`), as opposed to any
/// other folder a backup may keep beside the sessions.
pub(crate) fn is_session_dir(name: &str) -> bool {
    uuid::Uuid::parse_str(name).is_ok()
}

fn project_folder(dir: &Path) -> ProjectFolder {
    let mut sessions: BTreeMap<String, SessionFiles> = BTreeMap::new();
    let mut left_out = Vec::new();
    // Sub-agents kept apart from their session's folder: the older `agent-*.jsonl` beside the
    // sessions, and a flat `subagents/` folder a backup made of the project.
    let mut loose: Vec<PathBuf> = Vec::new();
    for f in jsonl(dir) {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if name.starts_with("agent-") {
            loose.push(f);
            continue;
        }
        entry(&mut sessions, &name).main = Some(f);
    }
    loose.extend(super::files_under(&dir.join("subagents"), &|n| n.ends_with(".jsonl")));
    for f in loose {
        if internal_agent(&f.file_name().unwrap_or_default().to_string_lossy()) {
            left_out.push((f, INTERNAL.to_string()));
            continue;
        }
        // Attached by the session it records; one that records none is a session of its own
        // (indexed, never dropped).
        let id = peek_session_id(&f)
            .unwrap_or_else(|| f.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
        let t = agent_type(&f);
        entry(&mut sessions, &id).subagents.push((f, t));
    }
    // Session folders with sub-agents (also orphans whose main file is gone).
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut dirs: Vec<_> = rd.flatten().filter(|e| e.path().is_dir()).collect();
        dirs.sort_by_key(|e| e.file_name());
        for e in dirs {
            let id = e.file_name().to_string_lossy().into_owned();
            if !is_session_dir(&id) && !sessions.contains_key(&id) {
                continue;
            }
            let (subs, out) = subagents_of(dir, &id);
            left_out.extend(out);
            if !subs.is_empty() {
                entry(&mut sessions, &id).subagents.extend(subs);
            }
        }
    }
    let mut folder = ProjectFolder {
        dir: dir.to_path_buf(),
        project: None,
        agent: Agent::ClaudeCode,
        sessions: sessions.into_values().collect(),
        left_out,
    };
    folder.project = project_path(&folder);
    folder
}

fn entry<'a>(sessions: &'a mut BTreeMap<String, SessionFiles>, id: &str) -> &'a mut SessionFiles {
    sessions
        .entry(id.to_string())
        .or_insert_with(|| SessionFiles { id: id.to_string(), ..SessionFiles::new(Agent::ClaudeCode) })
}

/// Claude Code's folder encoding of a path: every character outside `[A-Za-z0-9]` becomes `-`.
pub fn encode_project_dir(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The project's path: a recorded `cwd` whose encoding is the folder's name, else the most
/// frequent `cwd`, else `None`.
pub fn project_path(folder: &ProjectFolder) -> Option<String> {
    let name = folder.dir.file_name()?.to_string_lossy().into_owned();
    let mut counts: HashMap<String, usize> = HashMap::new();
    for s in &folder.sessions {
        if let Some(cwd) = s.main.as_deref().and_then(|p| peek_field(p, "cwd")) {
            *counts.entry(cwd).or_default() += 1;
        }
    }
    // Deterministic: several paths can encode to the folder's name (`/a/b-c`, `/a/b/c`); the most
    // frequent wins, then the smallest. (A different pick between runs would open another
    // collection for the same project.)
    let best = |it: &mut dyn Iterator<Item = (&String, &usize)>| {
        it.max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(c, _)| c.clone())
    };
    best(&mut counts.iter().filter(|(c, _)| encode_project_dir(c).eq_ignore_ascii_case(&name)))
        .or_else(|| best(&mut counts.iter()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_config_directory_a_projects_root_a_project_folder_and_a_home_find_the_same_session() {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("claude-backup");
        let project = config.join("projects").join("-home-dev-acme");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(config.join("todos")).unwrap();
        std::fs::write(project.join("s1.jsonl"), "{}\n").unwrap();
        // A home directory (or a backup of one) holding the config directory as `.claude/`.
        let home = tmp.path().join("家-backup");
        let hidden = home.join(".claude").join("projects").join("-home-dev-acme");
        std::fs::create_dir_all(&hidden).unwrap();
        std::fs::write(hidden.join("s1.jsonl"), "{}\n").unwrap();
        // A history that also keeps the prompts' history beside `projects/`.
        std::fs::write(config.join("history.jsonl"), "{\"display\":\"x\"}\n").unwrap();
        let discover = |p: &Path| crate::ingest::layout::discover(p, &[]).unwrap().folders;
        let found = discover(&home);
        assert_eq!((found.len(), found[0].sessions.len(), &found[0].dir), (1, 1, &hidden));
        for path in [config.clone(), config.join("projects"), project.clone()] {
            let found = discover(&path);
            assert_eq!(found.len(), 1, "{}", path.display());
            assert_eq!(found[0].sessions.len(), 1, "{}", path.display());
            assert_eq!(found[0].dir, project);
        }
    }
}
