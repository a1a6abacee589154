//! Run records of the sub-agent runs in transcripts on disk (the adapter around the pure
//! [`crate::derive::runs`]).

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::ingest::layout::discover;

/// The sub-agent runs of one session (see [`crate::derive::runs`]).
#[derive(Debug, Clone, Serialize)]
pub struct SessionRuns {
    /// The project's path (from the recorded `cwd`), else its folder name.
    pub project: String,
    /// Session id.
    pub session_id: String,
    /// One record per run, in start order.
    pub runs: Vec<crate::derive::runs::RunRecord>,
}

/// Compact run records for every session under `path` (a projects root, one project folder,
/// or one session file) that has sub-agent runs. Unreadable files are skipped.
pub fn runs_in(path: &Path) -> Result<Vec<SessionRuns>> {
    let mut out = Vec::new();
    for folder in discover(path, &[])?.folders {
        let project = folder
            .project
            .clone()
            .unwrap_or_else(|| folder.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        for s in &folder.sessions {
            if s.subagents.is_empty() && s.main.is_none() {
                continue;
            }
            let main = s.main.as_deref().and_then(|p| std::fs::read(p).ok());
            let sides: Vec<(String, Vec<u8>, Option<String>)> = s
                .subagents
                .iter()
                .filter_map(|(p, t)| {
                    let stem = p.file_stem()?.to_str()?;
                    Some((stem.strip_prefix("agent-").unwrap_or(stem).to_string(), std::fs::read(p).ok()?, t.clone()))
                })
                .collect();
            let sidechains: Vec<crate::derive::runs::Sidechain<'_>> = sides
                .iter()
                .map(|(id, b, t)| crate::derive::runs::Sidechain { agent_id: id, bytes: b, agent_type: t.as_deref() })
                .collect();
            let runs = crate::derive::runs::session_runs(main.as_deref(), &sidechains, Some(&project));
            if !runs.is_empty() {
                out.push(SessionRuns { project: project.clone(), session_id: s.id.clone(), runs });
            }
        }
    }
    Ok(out)
}
