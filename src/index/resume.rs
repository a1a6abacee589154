//! How to reopen a past session in its own agent and directory: `convdex resume ID`, and the
//! web app's Resume button.

use serde::Serialize;

use super::Index;
use super::across::Across;
use crate::error::Result;
use crate::ingest::layout::Agent;

/// The command that reopens a session ([`Index::resume`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resume {
    /// The collection's project name.
    pub project: String,
    /// The full session id.
    pub session: String,
    /// The agent that wrote it.
    pub agent: Agent,
    /// The project's directory, when known.
    pub directory: Option<String>,
    /// The shell command: change to the directory, then the agent's own resume.
    pub command: String,
}

/// A string as one POSIX shell word (single quotes, a quote inside written `'\''`).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=,".contains(c)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The command that reopens `session` of `agent` in `directory` (pure): Claude Code's
/// `claude --resume ID`, Codex's `codex resume ID`, Gemini CLI's `gemini --resume ID`, and for
/// Aider, which keeps one history per directory, `aider --restore-chat-history`.
pub fn resume_command(agent: Agent, directory: Option<&str>, session: &str) -> String {
    let id = shell_quote(session);
    let own = match agent {
        Agent::ClaudeCode => format!("claude --resume {id}"),
        Agent::Codex => format!("codex resume {id}"),
        Agent::Gemini => format!("gemini --resume {id}"),
        Agent::Aider => "aider --restore-chat-history".to_string(),
    };
    match directory {
        Some(d) if !d.is_empty() => format!("cd {} && {own}", shell_quote(d)),
        _ => own,
    }
}

impl Index {
    /// The command that reopens the session `prefix` names (a unique prefix of its id) in its
    /// own agent and directory.
    pub fn resume(&self, prefix: &str, project: Option<&str>) -> Result<Across<Resume>> {
        let Across { found, skipped } = self.find_session(prefix, project)?;
        let docs = found.collection.session_documents(&found.session)?;
        let agent = docs.iter().find_map(|d| d.agent()).and_then(|a| a.parse::<Agent>().ok()).unwrap_or_default();
        let directory = found.collection.meta()?.project_path;
        let command = resume_command(agent, directory.as_deref(), &found.session);
        Ok(Across {
            found: Resume { project: found.info.project, session: found.session, agent, directory, command },
            skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agent_resumes_in_its_own_way_in_its_directory() {
        assert_eq!(
            resume_command(Agent::ClaudeCode, Some("/home/u/my app"), "7f3c1a2e"),
            "cd '/home/u/my app' && claude --resume 7f3c1a2e"
        );
        assert_eq!(
            resume_command(Agent::Codex, Some("C:\\Users\\王\\项目"), "019a"),
            "cd 'C:\\Users\\王\\项目' && codex resume 019a"
        );
        assert_eq!(resume_command(Agent::Gemini, None, "g1"), "gemini --resume g1");
        assert_eq!(resume_command(Agent::Aider, Some("/w/x"), "a"), "cd /w/x && aider --restore-chat-history");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
