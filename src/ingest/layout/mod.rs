//! Where each agent keeps its histories, and which files make a session. Reads directories and
//! file heads (a chat history is parsed to list its chats); parses nothing else.
//!
//! | agent | default location | a session is |
//! |---|---|---|
//! | Claude Code ([`claude`]) | `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects` | `<session>.jsonl` and its sub-agents |
//! | Codex CLI ([`codex`]) | `$CODEX_HOME/sessions`, else `~/.codex/sessions` | one `rollout-*.jsonl` |
//! | Gemini CLI ([`gemini`]) | `$GEMINI_CLI_HOME/.gemini/tmp`, else `~/.gemini/tmp` | the chat files of one `sessionId`, or its prompts in `logs.json` |
//! | Aider ([`aider`]) | `.aider.chat.history.md` in a project's directory | one chat of the file |
//!
//! A project is its working directory, whichever agent wrote the session: Claude Code and Codex
//! record it, Aider's history sits in it, and Gemini names its folder by the directory's SHA-256,
//! which is matched against the directories the other agents (and earlier runs) know.

pub mod aider;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod walk;

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
pub use claude::{encode_project_dir, project_path};

/// The agent that wrote a history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize)]
pub enum Agent {
    /// Anthropic Claude Code.
    #[default]
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
    /// Google Gemini CLI.
    Gemini,
    /// Aider.
    Aider,
}

impl Agent {
    /// Every agent.
    pub const ALL: [Agent; 4] = [Agent::ClaudeCode, Agent::Codex, Agent::Gemini, Agent::Aider];

    /// `claude-code`, `codex`, `gemini`, `aider`: the name in `source:<name>` tags and in
    /// `--agent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Aider => "aider",
        }
    }
}

impl std::str::FromStr for Agent {
    type Err = Error;
    fn from_str(s: &str) -> Result<Agent> {
        let s = s.trim().to_lowercase();
        Agent::ALL.into_iter().find(|a| a.as_str() == s || (s == "claude" && *a == Agent::ClaudeCode)).ok_or_else(
            || Error::InvalidArgument(format!("unknown agent `{s}`; use claude-code, codex, gemini or aider")),
        )
    }
}

impl std::fmt::Display for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A sub-agent transcript with its agent type, when known.
pub type Subagent = (PathBuf, Option<String>);

/// A file looked at and left out, with why.
pub type LeftOut = (PathBuf, String);

/// One session's files.
#[derive(Debug, Clone, Default)]
pub struct SessionFiles {
    /// Session id.
    pub id: String,
    /// The agent that wrote it.
    pub agent: Agent,
    /// The main transcript, when it still exists.
    pub main: Option<PathBuf>,
    /// More files of the main conversation (a Gemini session spanning several chat files).
    pub parts: Vec<PathBuf>,
    /// Sub-agent transcripts with their agent type when known (Claude Code).
    pub subagents: Vec<Subagent>,
}

impl SessionFiles {
    /// An empty session of `agent`.
    pub fn new(agent: Agent) -> SessionFiles {
        SessionFiles { agent, ..SessionFiles::default() }
    }

    /// Every file of the session, with the sub-agent type of sub-agent files.
    pub fn files(&self) -> Vec<(&Path, Option<&str>)> {
        self.main
            .iter()
            .chain(&self.parts)
            .map(|p| (p.as_path(), None))
            .chain(self.subagents.iter().map(|(p, t)| (p.as_path(), Some(t.as_deref().unwrap_or("subagent")))))
            .collect()
    }
}

/// A project folder (or, for agents that do not keep one, the sessions of one working
/// directory) and its sessions.
#[derive(Debug, Clone, Default)]
pub struct ProjectFolder {
    /// The folder the sessions were found in.
    pub dir: PathBuf,
    /// The project's path (its working directory), when known.
    pub project: Option<String>,
    /// The agent that wrote the sessions.
    pub agent: Agent,
    /// Its sessions.
    pub sessions: Vec<SessionFiles>,
    /// Files in the folder that look like transcripts and belong to no session here, with why
    /// (Claude Code's internal agents, a copy of a session found in another folder): every file
    /// an indexing run sees is accounted for.
    pub left_out: Vec<LeftOut>,
}

/// The default Claude Code history: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.
pub fn default_history() -> PathBuf {
    match std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d).join("projects"),
        None => dirs::home_dir().unwrap_or_default().join(".claude").join("projects"),
    }
}

fn env_dir(var: &str) -> Option<PathBuf> {
    std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The default history of every agent that keeps one in a known place (Aider keeps its history
/// in each project), whether or not it exists.
pub fn default_sources() -> Vec<(Agent, PathBuf)> {
    let home = dirs::home_dir().unwrap_or_default();
    vec![
        (Agent::ClaudeCode, default_history()),
        (Agent::Codex, env_dir("CODEX_HOME").unwrap_or_else(|| home.join(".codex")).join("sessions")),
        (Agent::Gemini, env_dir("GEMINI_CLI_HOME").unwrap_or(home).join(".gemini").join("tmp")),
    ]
}

/// What [`discover`] found under a path.
#[derive(Debug, Default)]
pub struct Discovered {
    /// The project folders with at least one session.
    pub folders: Vec<ProjectFolder>,
    /// Histories found below the path that could not be read, with why (the others are kept).
    pub unreadable: Vec<(PathBuf, Error)>,
}

/// Finds the sessions under `path`, whichever agent wrote them: one file, a history root or
/// project folder of one agent, or a folder holding several (a home directory or a backup of
/// one, a folder of backups), looked into down to [`walk::MAX_DEPTH`] levels. `known` are
/// project paths already known (to name Gemini's hashed folders); Gemini's folders are read
/// last, knowing the paths the other histories found here record.
pub fn discover(path: &Path, known: &[String]) -> Result<Discovered> {
    if path.is_file() {
        let folders = discover_as(detect(path).unwrap_or_default(), path, known)?;
        return Ok(Discovered { folders, unreadable: Vec::new() });
    }
    if !path.is_dir() {
        return Err(Error::NotFound(format!(
            "transcript path {} (give a folder of project folders such as ~/.claude/projects, one project folder, or a .jsonl file; `convdex index` alone reads every agent's default place)",
            path.display()
        )));
    }
    let mut roots = walk::roots(path)?;
    roots.sort_by_key(|(_, agent)| *agent == Agent::Gemini);
    let mut known = known.to_vec();
    let mut out = Discovered::default();
    let single = roots.len() == 1 && roots[0].0 == path;
    for (dir, agent) in roots {
        match discover_as(agent, &dir, &known) {
            Ok(found) => {
                known.extend(found.iter().filter_map(|f| f.project.clone()));
                out.folders.extend(found.into_iter().filter(|f| !f.sessions.is_empty()));
            }
            // The path given is that one history: its error is the answer.
            Err(e) if single => return Err(e),
            Err(e) => out.unreadable.push((dir, e)),
        }
    }
    Ok(out)
}

/// The sessions of one history of `agent` at `path` (a file, a root or a project folder).
fn discover_as(agent: Agent, path: &Path, known: &[String]) -> Result<Vec<ProjectFolder>> {
    match agent {
        Agent::Codex => codex::discover(path),
        Agent::Gemini => gemini::discover(path, known),
        Agent::Aider => aider::discover(path),
        Agent::ClaudeCode => claude::discover(path),
    }
}

/// Which agent wrote what is at `path`, from names and the first record.
pub fn detect(path: &Path) -> Option<Agent> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    if path.is_file() {
        return Some(if name == aider::HISTORY {
            Agent::Aider
        } else if name.ends_with(".json") {
            Agent::Gemini
        } else if peek_field(path, "type").as_deref() == Some("session_meta")
            || (name.starts_with("rollout-") && name.ends_with(".jsonl"))
        {
            Agent::Codex
        } else {
            Agent::ClaudeCode
        });
    }
    if path.join(aider::HISTORY).is_file() {
        return Some(Agent::Aider);
    }
    if gemini::is_root(path) {
        return Some(Agent::Gemini);
    }
    if codex::is_root(path) {
        return Some(Agent::Codex);
    }
    None
}

/// The first string value of `field` in the first JSON lines of a file (its first 64 KiB).
pub(crate) fn peek_field(path: &Path, field: &str) -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 * 1024];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut buf)).ok()?;
    for line in buf.get(..n)?.split(|b| *b == b'\n') {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line)
            && let Some(s) = v.get(field).and_then(|s| s.as_str())
        {
            return Some(s.to_string());
        }
    }
    None
}

/// Files under `dir` (recursively) whose name satisfies `keep`, sorted; a folder reached twice
/// (a symbolic link back up the tree) is read once.
pub(crate) fn files_under(dir: &Path, keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if !seen.insert(d.canonicalize().unwrap_or_else(|_| d.clone())) {
            continue;
        }
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if keep(&e.file_name().to_string_lossy()) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
