//! One copy of each file and each session, whatever paths were given and however a backup
//! duplicated them.

use std::path::{Path, PathBuf};

use super::{FileOutcome, FileReport, IndexReport};
use crate::ingest::layout::{Agent, ProjectFolder, Subagent};

/// Keeps one copy of each file and each session: a file found under two paths given (a home
/// directory and a history inside it) is read once, and a session found in two project
/// folders of one agent (a backup that kept it under two names) is indexed once, in the folder
/// that holds its main transcript (the longest, main transcript and parts, when several do: a
/// copy that stopped earlier holds less of the session; else the first), with the sub-agents
/// of every copy; the other copy's files are reported as left out. A shorter copy that later
/// grows past the other is then indexed in its own folder's project too (the session is stored
/// in both; nothing is lost).
pub(super) fn one_copy_each(folders: &mut [ProjectFolder], report: &mut IndexReport) {
    use std::collections::{HashMap, HashSet};
    let canonical = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let mut seen_files: HashSet<PathBuf> = HashSet::new();
    // (agent, session id) -> (folder, session) of the copy kept.
    let mut kept: HashMap<(Agent, String), (usize, usize)> = HashMap::new();
    // Sessions holding a main transcript first, the longest first, so the copy kept is the one
    // with the most of it.
    let mut order: Vec<(usize, usize)> =
        folders.iter().enumerate().flat_map(|(f, folder)| (0..folder.sessions.len()).map(move |s| (f, s))).collect();
    let length = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    order.sort_by_cached_key(|&(f, s)| {
        let session = &folders[f].sessions[s];
        let held: u64 = session.main.iter().chain(&session.parts).map(|p| length(p)).sum();
        (session.main.is_none(), std::cmp::Reverse(held), f, s)
    });
    let mut moved: Vec<((usize, usize), Vec<Subagent>)> = Vec::new();
    let mut emptied: Vec<(usize, usize)> = Vec::new();
    for (f, s) in order {
        let session = &mut folders[f].sessions[s];
        // Files already seen under another path given.
        let mut dropped = Vec::new();
        if let Some(m) = &session.main
            && !seen_files.insert(canonical(m))
        {
            dropped.push(session.main.take().unwrap_or_default());
        }
        session.parts.retain(|p| {
            seen_files.insert(canonical(p)) || {
                dropped.push(p.clone());
                false
            }
        });
        session.subagents.retain(|(p, _)| {
            seen_files.insert(canonical(p)) || {
                dropped.push(p.clone());
                false
            }
        });
        let id = (session.agent, session.id.clone());
        let copy_of = kept.get(&id).copied();
        let mut duplicate_subagents = Vec::new();
        if let Some(k) = copy_of {
            // A second copy: its sub-agents join the copy kept (unless a file of the same name
            // is already there), everything else is reported.
            let names: HashSet<std::ffi::OsString> = {
                let (kf, ks) = k;
                let kept_session = &folders[kf].sessions[ks];
                kept_session.subagents.iter().filter_map(|(p, _)| p.file_name().map(|n| n.to_os_string())).collect()
            };
            let session = &mut folders[f].sessions[s];
            let (join, dup): (Vec<_>, Vec<_>) = std::mem::take(&mut session.subagents)
                .into_iter()
                .partition(|(p, _)| p.file_name().is_some_and(|n| !names.contains(n)));
            duplicate_subagents = dup.into_iter().map(|(p, _)| p).collect();
            moved.push((k, join));
            let session = &mut folders[f].sessions[s];
            dropped.extend(session.main.take());
            dropped.append(&mut session.parts);
            emptied.push((f, s));
        } else if session.main.is_some() || !session.parts.is_empty() || !session.subagents.is_empty() {
            kept.insert(id.clone(), (f, s));
        } else {
            emptied.push((f, s));
        }
        let where_kept = copy_of.map(|(kf, _)| folders[kf].dir.display().to_string());
        for p in dropped.into_iter().chain(duplicate_subagents) {
            let reason = match &where_kept {
                Some(dir) => format!("a second copy of session {} (indexed from {dir})", id.1),
                None => "found twice under the paths given (indexed once)".to_string(),
            };
            report.files.push(FileReport {
                path: p,
                session: Some(id.1.clone()),
                agent: id.0,
                outcome: FileOutcome::LeftOut,
                messages: 0,
                reason: Some(reason),
            });
        }
    }
    for ((f, s), subs) in moved {
        folders[f].sessions[s].subagents.extend(subs);
    }
    emptied.sort();
    for (f, s) in emptied.into_iter().rev() {
        folders[f].sessions.remove(s);
    }
}
