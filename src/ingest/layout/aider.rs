//! Aider keeps `.aider.chat.history.md` in the project's directory: the project is that
//! directory; each chat of the file is a session.

use std::path::Path;

use super::{Agent, ProjectFolder, SessionFiles};
use crate::error::{Error, Result};

/// The history file's name.
pub const HISTORY: &str = ".aider.chat.history.md";

/// The chats of the history at `path` (the file, or the directory holding it).
pub(crate) fn discover(path: &Path) -> Result<Vec<ProjectFolder>> {
    let file = if path.is_dir() { path.join(HISTORY) } else { path.to_path_buf() };
    let bytes = std::fs::read(&file).map_err(|e| Error::io(&file, e))?;
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let dir = std::path::absolute(&dir).unwrap_or(dir);
    let sessions = crate::ingest::aider::parse(&bytes)
        .into_iter()
        .map(|(id, _)| SessionFiles { id, main: Some(file.clone()), ..SessionFiles::new(Agent::Aider) })
        .collect();
    let project = Some(dir.to_string_lossy().into_owned());
    Ok(vec![ProjectFolder { dir, project, agent: Agent::Aider, sessions, left_out: Vec::new() }])
}
