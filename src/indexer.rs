//! Indexing Claude Code histories: discover session files, parse, scrub, enrich, write, and
//! remember per-session fingerprints so unchanged sessions cost a `stat`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::collection::{Collection, SessionWrite};
use crate::doc::{
    DecisionFields, DocBody, DocKind, Document, ExtractionMethod, FileAction, FileRef, MessageFields, Role,
    SummaryFields, now_millis,
};
use crate::error::{Error, Result};
use crate::index::Index;
use crate::ingest::claude::{self, ParsedFile, SkippedLine};
use crate::scrub::{RedactionCounts, scrub};

/// Options of an indexing run. Every field documents its default.
#[derive(Debug, Clone, Default)]
pub struct IndexOptions {
    /// Delete each session's documents and index it again. Default: false.
    pub force: bool,
    /// Tenant of the collections written. Default: the OS user (`$USER`), else `local`.
    pub tenant: Option<String>,
    /// Skip session files whose path contains any of these strings. Default: none.
    pub exclude: Vec<String>,
    /// Skip projects whose folder name or recorded path contains any of these strings.
    /// Default: none.
    pub exclude_projects: Vec<String>,
}

/// Settings read from a config file (`~/.config/convdex/config.json` by default):
/// `{"exclude_projects": ["scratch"], "exclude_paths": ["/tmp/"]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Added to [`IndexOptions::exclude_projects`].
    pub exclude_projects: Vec<String>,
    /// Added to [`IndexOptions::exclude`].
    pub exclude_paths: Vec<String>,
}

impl Config {
    /// Reads a config file; a missing file is the default config.
    pub fn load(path: &Path) -> Result<Config> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                Error::InvalidArgument(format!(
                    "config file {}: {e}; expected {{\"exclude_projects\": [..], \"exclude_paths\": [..]}}",
                    path.display()
                ))
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Applies the config to indexing options.
    pub fn apply(&self, options: &mut IndexOptions) {
        options.exclude_projects.extend(self.exclude_projects.iter().cloned());
        options.exclude.extend(self.exclude_paths.iter().cloned());
    }
}

/// Folders written by other memory tools' automated sessions (claude-mem observers): they would
/// flood search with machine-written prompts, so they are never indexed.
const AUTOMATED_PROJECT_MARKERS: &[&str] = &["claude-mem-observer", "observer-sessions"];

/// What an indexing run did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IndexReport {
    /// Sessions indexed for the first time.
    pub sessions_new: usize,
    /// Sessions that grew since the last run.
    pub sessions_appended: usize,
    /// Sessions rewritten or forced (re-indexed from scratch).
    pub sessions_reindexed: usize,
    /// Sessions unchanged since the last run.
    pub sessions_skipped: usize,
    /// Sessions skipped because they were forgotten (`convdex forget`); `force` indexes them again.
    pub sessions_forgotten: usize,
    /// Message documents written.
    pub messages: usize,
    /// Vectors written.
    pub chunks: usize,
    /// Decisions extracted (in sessions indexed by this run).
    pub decisions: usize,
    /// Chunks the model embedded (the rest came from the cache).
    pub embedded: usize,
    /// Lines skipped, with their file.
    pub skipped_lines: Vec<(PathBuf, SkippedLine)>,
    /// Secrets redacted, per kind.
    pub redactions: RedactionCounts,
    /// Collections written to.
    pub collections: Vec<String>,
    /// Project folders skipped by exclusion rules.
    pub projects_excluded: usize,
    /// Sessions, project folders and paths that could not be indexed, and why. The run went on
    /// without them; the next run tries them again.
    pub failures: Vec<Failure>,
    /// Wall time.
    #[serde(skip)]
    pub elapsed: Duration,
}

impl std::fmt::Display for IndexReport {
    /// One line: sessions by outcome, documents, chunks, skipped lines, redactions, time.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sessions: {} new, {} appended, {} re-indexed, {} unchanged, {} forgotten; {} messages, {} decisions, {} chunks \
             ({} embedded); {} lines skipped; {} failed; redactions: {:?}; {:.1} s",
            self.sessions_new,
            self.sessions_appended,
            self.sessions_reindexed,
            self.sessions_skipped,
            self.sessions_forgotten,
            self.messages,
            self.decisions,
            self.chunks,
            self.embedded,
            self.skipped_lines.len(),
            self.failures.len(),
            self.redactions,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Something an indexing run could not do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The file or folder.
    pub path: PathBuf,
    /// The session, when one session failed.
    pub session: Option<String>,
    /// What went wrong and, where there is one, the fix.
    pub reason: String,
}

impl std::fmt::Display for Failure {
    /// `<path> (session <id>): <reason>`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(s) = &self.session {
            write!(f, " (session {s})")?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// One session's files.
#[derive(Debug, Clone, Default)]
pub(crate) struct SessionFiles {
    pub(crate) id: String,
    pub(crate) main: Option<PathBuf>,
    pub(crate) subagents: Vec<(PathBuf, Option<String>)>,
}

/// A project folder and its sessions.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProjectFolder {
    pub(crate) dir: PathBuf,
    pub(crate) sessions: Vec<SessionFiles>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct FileState {
    path: String,
    size: u64,
    mtime_ms: i64,
    consumed: u64,
    prefix_hash: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct SessionState {
    files: Vec<FileState>,
    messages: usize,
}

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

fn agent_type(path: &Path) -> Option<String> {
    let meta = path.with_extension("meta.json");
    let text = std::fs::read_to_string(meta).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("agentType").and_then(|t| t.as_str()).map(str::to_string)
}

/// First `sessionId` in the first 64 KiB of a file.
fn peek_session_id(path: &Path) -> Option<String> {
    peek_field(path, "sessionId")
}

fn peek_field(path: &Path, field: &str) -> Option<String> {
    use std::io::Read;
    let mut buf = vec![0u8; 64 * 1024];
    let n = std::fs::File::open(path).and_then(|mut f| f.read(&mut buf)).ok()?;
    for line in buf[..n].split(|b| *b == b'\n') {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line)
            && let Some(s) = v.get(field).and_then(|s| s.as_str())
        {
            return Some(s.to_string());
        }
    }
    None
}

/// Finds the session files under `path`: a projects root, one project folder, or one file.
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
        let mut s = SessionFiles { id: id.clone(), main: Some(path.to_path_buf()), subagents: vec![] };
        s.subagents = subagents_of(&dir, &id);
        return Ok(vec![ProjectFolder { dir, sessions: vec![s] }]);
    }
    if !path.is_dir() {
        return Err(Error::NotFound(format!("transcript path {}", path.display())));
    }
    let direct = jsonl(path);
    let has_session_dirs =
        std::fs::read_dir(path).map(|rd| rd.flatten().any(|e| e.path().join("subagents").is_dir())).unwrap_or(false);
    if !direct.is_empty() || has_session_dirs {
        return Ok(vec![project_folder(path)]);
    }
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::io(path, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        let p = project_folder(&d);
        if !p.sessions.is_empty() {
            out.push(p);
        }
    }
    Ok(out)
}

fn subagents_of(dir: &Path, session: &str) -> Vec<(PathBuf, Option<String>)> {
    jsonl(&dir.join(session).join("subagents"))
        .into_iter()
        .filter(|p| !internal_agent(&p.to_string_lossy()))
        .map(|p| {
            let t = agent_type(&p);
            (p, t)
        })
        .collect()
}

fn project_folder(dir: &Path) -> ProjectFolder {
    let mut sessions: BTreeMap<String, SessionFiles> = BTreeMap::new();
    for f in jsonl(dir) {
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        if name.starts_with("agent-") {
            // Older layout: sub-agents beside the sessions, attached by their sessionId.
            if internal_agent(&name) {
                continue;
            }
            if let Some(id) = peek_session_id(&f) {
                sessions
                    .entry(id.clone())
                    .or_insert_with(|| SessionFiles { id, ..Default::default() })
                    .subagents
                    .push((f, None));
            }
            continue;
        }
        sessions.entry(name.clone()).or_insert_with(|| SessionFiles { id: name.clone(), ..Default::default() }).main =
            Some(f);
    }
    // Session directories with sub-agents (also orphans whose main file is gone).
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.join("subagents").is_dir() {
                let id = e.file_name().to_string_lossy().into_owned();
                let subs = subagents_of(dir, &id);
                if !subs.is_empty() {
                    sessions
                        .entry(id.clone())
                        .or_insert_with(|| SessionFiles { id, ..Default::default() })
                        .subagents
                        .extend(subs);
                }
            }
        }
    }
    ProjectFolder { dir: dir.to_path_buf(), sessions: sessions.into_values().collect() }
}

/// The sub-agent runs of one session (see [`crate::runs`]).
#[derive(Debug, Clone, Serialize)]
pub struct SessionRuns {
    /// The project's path (from the recorded `cwd`), else its folder name.
    pub project: String,
    /// Session id.
    pub session_id: String,
    /// One record per run, in start order.
    pub runs: Vec<crate::runs::RunRecord>,
}

/// Compact run records for every session under `path` (a projects root, one project folder,
/// or one session file) that has sub-agent runs. Unreadable files are skipped.
pub fn runs_in(path: &Path) -> Result<Vec<SessionRuns>> {
    let mut out = Vec::new();
    for folder in discover(path)? {
        let project = project_path(&folder)
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
            let sidechains: Vec<crate::runs::Sidechain<'_>> = sides
                .iter()
                .map(|(id, b, t)| crate::runs::Sidechain { agent_id: id, bytes: b, agent_type: t.as_deref() })
                .collect();
            let runs = crate::runs::session_runs(main.as_deref(), &sidechains, Some(&project));
            if !runs.is_empty() {
                out.push(SessionRuns { project: project.clone(), session_id: s.id.clone(), runs });
            }
        }
    }
    Ok(out)
}

/// Claude Code's folder encoding of a path: every character outside `[A-Za-z0-9]` becomes `-`.
pub fn encode_project_dir(path: &str) -> String {
    path.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect()
}

/// The project's path: a recorded `cwd` whose encoding is the folder's name, else the most
/// frequent `cwd`, else `None`.
fn project_path(folder: &ProjectFolder) -> Option<String> {
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

/// A valid collection name part from free text: lower-cased letters and digits of any script
/// kept (`AI科普画册` → `ai科普画册`), other characters → `-`, at most 48 bytes.
pub fn normalize_name(raw: &str) -> String {
    let s: String = raw.to_lowercase().chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '-' }).collect();
    let s = s.trim_matches(|c| c == '-' || c == '_');
    let mut out = String::new();
    for c in s.chars() {
        if out.len() + c.len_utf8() > 48 {
            break;
        }
        out.push(c);
    }
    let out = out.trim_end_matches(['-', '_']).to_string();
    if out.is_empty() { "project".into() } else { out }
}

/// The default tenant: the OS user (`$USER`, `$USERNAME`), normalised, else `local`.
pub fn default_tenant() -> String {
    let user = std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_default();
    let n = normalize_name(&user);
    if user.is_empty() { "local".into() } else { n }
}

fn file_state(path: &Path) -> Option<(u64, i64)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis() as i64;
    Some((m.len(), mtime))
}

/// Progress of an indexing run, reported once per session.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// Sessions handled so far (this one included).
    pub done: usize,
    /// Sessions found.
    pub total: usize,
    /// The session's id.
    pub session: &'a str,
}

/// Indexes every session under `paths` into one collection per project.
pub fn index_paths(index: &Index, paths: &[PathBuf], options: &IndexOptions) -> Result<IndexReport> {
    index_paths_with_progress(index, paths, options, &mut |_| {})
}

/// [`index_paths`] with a callback after each session (for progress bars).
pub fn index_paths_with_progress(
    index: &Index,
    paths: &[PathBuf],
    options: &IndexOptions,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Result<IndexReport> {
    let start = Instant::now();
    let mut report = IndexReport::default();
    let tenant = options.tenant.clone().unwrap_or_else(default_tenant);
    let mut folders = Vec::new();
    let mut first_error = None;
    for path in paths {
        let found = match discover(path) {
            Ok(f) => f,
            Err(e) => {
                report.failures.push(Failure { path: path.clone(), session: None, reason: e.chain() });
                first_error.get_or_insert(e);
                continue;
            }
        };
        for folder in found {
            let name = folder.dir.to_string_lossy().to_lowercase();
            let path = project_path(&folder).unwrap_or_default().to_lowercase();
            let excluded = AUTOMATED_PROJECT_MARKERS.iter().any(|m| name.contains(m) || path.contains(m))
                || options.exclude_projects.iter().any(|x| {
                    let x = x.to_lowercase();
                    name.contains(&x) || path.contains(&x)
                });
            if excluded {
                report.projects_excluded += 1;
            } else {
                folders.push(folder);
            }
        }
    }
    // Nothing to index because every path given is wrong: that is an error, not a report.
    if let Some(e) = first_error
        && report.failures.len() == paths.len()
    {
        return Err(e);
    }
    let total = folders.iter().map(|f| f.sessions.len()).sum();
    let mut done = 0;
    for folder in &folders {
        // One project that cannot be written (busy, damaged, unreadable) does not stop the others.
        let r = index_folder(index, &tenant, folder, options, &mut report, &mut |session| {
            done += 1;
            progress(Progress { done, total, session });
        });
        if let Err(e) = r {
            report.failures.push(Failure { path: folder.dir.clone(), session: None, reason: e.chain() });
        }
    }
    report.collections.sort();
    report.collections.dedup();
    report.elapsed = start.elapsed();
    Ok(report)
}

fn open_project(index: &Index, tenant: &str, folder: &ProjectFolder) -> Result<std::sync::Arc<Collection>> {
    let path = project_path(folder);
    let base = match &path {
        Some(p) => normalize_name(p.replace('\\', "/").trim_end_matches('/').rsplit('/').next().unwrap_or(p)),
        None => normalize_name(&folder.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()),
    };
    let key = path.clone().unwrap_or_else(|| folder.dir.to_string_lossy().into_owned());
    let coll = index.collection_with(tenant, &base, Some(&key))?;
    match coll.meta()?.project_path {
        Some(p) if p != key => {
            // Another project with the same last path component owns the plain name.
            let h = xxhash_rust::xxh3::xxh3_64(key.as_bytes());
            index.collection_with(tenant, &format!("{base}-{:06x}", h & 0xff_ffff), Some(&key))
        }
        Some(_) => Ok(coll),
        None => {
            coll.update_meta(|m| m.project_path = Some(key.clone()))?;
            Ok(coll)
        }
    }
}

fn index_folder(
    index: &Index,
    tenant: &str,
    folder: &ProjectFolder,
    options: &IndexOptions,
    report: &mut IndexReport,
    tick: &mut dyn FnMut(&str),
) -> Result<()> {
    let sessions: Vec<&SessionFiles> = folder
        .sessions
        .iter()
        .filter(|s| {
            let all = s.main.iter().chain(s.subagents.iter().map(|(p, _)| p));
            !all.into_iter().any(|p| options.exclude.iter().any(|x| p.to_string_lossy().contains(x.as_str())))
        })
        .collect();
    if sessions.is_empty() {
        return Ok(());
    }
    let coll = open_project(index, tenant, folder)?;
    let root = coll.meta()?.project_path.unwrap_or_default();
    report.collections.push(coll.name().to_string());
    for s in sessions {
        // A session that cannot be read or written is reported and skipped; its fingerprint is
        // not stored, so the next run tries it again.
        if let Err(e) = coll.guarded(|c| index_session(c, &root, s, options, report)) {
            let path = s.main.clone().or_else(|| s.subagents.first().map(|x| x.0.clone())).unwrap_or_default();
            let fatal = matches!(e, Error::Damaged { .. } | Error::InUse { .. });
            report.failures.push(Failure { path, session: Some(s.id.clone()), reason: e.chain() });
            if fatal {
                return Ok(());
            }
        }
        tick(&s.id);
    }
    crate::life::relink(&coll)?;
    coll.touch_indexed_at(chrono::Utc::now())?;
    coll.flush()?;
    Ok(())
}

fn index_session(
    coll: &Collection,
    root: &str,
    s: &SessionFiles,
    options: &IndexOptions,
    report: &mut IndexReport,
) -> Result<()> {
    let files: Vec<(&PathBuf, Option<&str>)> = s
        .main
        .iter()
        .map(|p| (p, None))
        .chain(s.subagents.iter().map(|(p, t)| (p, Some(t.as_deref().unwrap_or("subagent")))))
        .collect();
    let forgotten = coll.is_forgotten(&s.id)?;
    if forgotten && !options.force {
        report.sessions_forgotten += 1;
        return Ok(());
    }
    let previous: Option<SessionState> = coll.session_state(&s.id)?;
    let stats: Vec<Option<(u64, i64)>> = files.iter().map(|(p, _)| file_state(p)).collect();
    if !options.force
        && let Some(prev) = &previous
        && prev.files.len() == files.len()
        && files.iter().zip(&stats).all(|((p, _), st)| {
            prev.files.iter().any(|f| f.path == p.to_string_lossy() && Some((f.size, f.mtime_ms)) == *st)
        })
    {
        report.sessions_skipped += 1;
        return Ok(());
    }
    // Read and parse every file of the session.
    let mut parsed: Vec<(ParsedFile, Option<&str>, FileState)> = Vec::new();
    // Appended: every file seen last time still starts with the bytes consumed then.
    let mut appended = !options.force && previous.is_some();
    for ((p, agent), st) in files.iter().zip(&stats) {
        let bytes = std::fs::read(p).map_err(|e| Error::io(p.as_path(), e))?;
        let pf = claude::parse(&bytes);
        for sk in &pf.skipped {
            report.skipped_lines.push(((*p).clone(), sk.clone()));
        }
        let (size, mtime_ms) = st.unwrap_or((bytes.len() as u64, 0));
        let path = p.to_string_lossy().into_owned();
        if let Some(prev) = &previous {
            let kept = prev.files.iter().find(|f| f.path == path).is_none_or(|old| {
                old.consumed as usize <= bytes.len()
                    && xxhash_rust::xxh3::xxh3_64(&bytes[..old.consumed as usize]) == old.prefix_hash
            });
            appended &= kept;
        }
        let state = FileState {
            path,
            size,
            mtime_ms,
            consumed: pf.consumed as u64,
            prefix_hash: xxhash_rust::xxh3::xxh3_64(&bytes[..pf.consumed]),
        };
        parsed.push((pf, *agent, state));
    }
    // A file that disappeared since last time is a rewrite, not an append.
    if let Some(prev) = &previous {
        appended &= prev.files.iter().all(|old| parsed.iter().any(|(_, _, st)| st.path == old.path));
    }
    let mut docs = documents(&s.id, root, &parsed, report);
    let decisions = decision_documents(&docs);
    docs.extend(decisions);
    if let Some(summary) = summary_document(&s.id, &parsed, &docs) {
        docs.push(summary);
    }
    // On append, only messages not stored yet (or changed) are written.
    let mut fresh = Vec::with_capacity(docs.len());
    for d in docs {
        if appended
            && coll.get(d.id)?.is_some_and(|old| old.content == d.content && old.files_discussed == d.files_discussed)
        {
            continue;
        }
        fresh.push(d);
    }
    let state = SessionState {
        files: parsed.iter().map(|(_, _, st)| st.clone()).collect(),
        messages: parsed.iter().map(|(pf, _, _)| pf.messages.len()).sum(),
    };
    // One transaction: a re-indexed session's old documents go, its new documents and its
    // fingerprint come, and its tombstone (when forced) goes, or none of it happens.
    let r = coll.write_session(SessionWrite {
        session_id: &s.id,
        replace: !appended,
        docs: &fresh,
        state: Some((s.id.clone(), crate::store::codec::encode(&state))),
        unforget: forgotten,
    })?;
    report.chunks += r.chunks;
    report.embedded += r.embedded;
    report.messages += fresh.iter().filter(|d| d.kind() == DocKind::Message).count();
    report.decisions += fresh.iter().filter(|d| d.kind() == DocKind::Decision).count();
    match (&previous, appended) {
        (None, _) => report.sessions_new += 1,
        (Some(_), true) => report.sessions_appended += 1,
        (Some(_), false) => report.sessions_reindexed += 1,
    }
    Ok(())
}

/// Text for a message that only made tool calls: what it did to which files.
fn activity(files: &[FileRef], commits: &[crate::doc::CommitRef]) -> String {
    let mut parts: Vec<String> = files
        .iter()
        .filter(|f| f.action != FileAction::Read)
        .map(|f| format!("{} {}", f.action.as_str(), f.path))
        .collect();
    for c in commits {
        parts.push(format!("committed {} {}", c.sha, c.message));
    }
    parts.join("; ")
}

fn documents(
    session: &str,
    root: &str,
    parsed: &[(ParsedFile, Option<&str>, FileState)],
    report: &mut IndexReport,
) -> Vec<Document> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut index = 0u64;
    for (pf, agent, _) in parsed {
        for m in &pf.messages {
            if m.uuid.is_empty() || !seen.insert(m.uuid.clone()) {
                continue;
            }
            let files: Vec<FileRef> =
                m.files.iter().map(|f| FileRef { path: claude::relative_to(&f.path, root), ..f.clone() }).collect();
            let raw = if m.text.trim().is_empty() { activity(&files, &m.commits) } else { m.text.clone() };
            if raw.trim().is_empty() {
                continue;
            }
            let (content, counts) = scrub(&raw);
            for (k, n) in counts {
                *report.redactions.entry(k).or_default() += n;
            }
            let commits = m
                .commits
                .iter()
                .map(|c| crate::doc::CommitRef { sha: c.sha.clone(), message: scrub(&c.message).0 })
                .collect();
            let mut tags = crate::enrich::tags(&content, &files);
            if let Some(a) = agent {
                tags.push(format!("agent:{}", normalize_name(a)));
            }
            let domain = crate::enrich::domain(&content, &files);
            out.push(Document {
                id: Document::stable_id(session, DocKind::Message, &m.uuid),
                session_id: session.to_string(),
                timestamp: m.timestamp,
                content,
                tags,
                domain,
                files_discussed: files,
                commits_made: commits,
                indexed_at: now_millis(),
                extraction_method: ExtractionMethod::Heuristic,
                body: crate::doc::DocBody::Message(MessageFields {
                    role: m.role,
                    message_uuid: m.uuid.clone(),
                    message_index: index,
                    speaker: None,
                    agent: agent.map(str::to_string),
                }),
            });
            index += 1;
        }
    }
    out
}

/// Decision documents for the messages of one session (heuristic extraction, see
/// [`crate::extract`]). Ids are derived from the source message and the decision's ordinal.
fn decision_documents(messages: &[Document]) -> Vec<Document> {
    let messages: Vec<(&Document, &MessageFields)> = messages
        .iter()
        .filter_map(|m| match &m.body {
            DocBody::Message(mf) => Some((m, mf)),
            _ => None,
        })
        .collect();
    let turns = messages.iter().map(|(m, mf)| crate::extract::Turn { role: mf.role, text: &m.content });
    let mut out: Vec<Document> = Vec::new();
    let mut ordinal = 0;
    let mut last = usize::MAX;
    for (i, d) in crate::extract::extract_all(turns) {
        let (m, mf) = messages[i];
        ordinal = if i == last { ordinal + 1 } else { 0 };
        last = i;
        let k = ordinal;
        out.push(Document {
            id: Document::stable_id(&m.session_id, DocKind::Decision, &format!("{}#{k}", mf.message_uuid)),
            session_id: m.session_id.clone(),
            timestamp: m.timestamp,
            content: d.content,
            tags: m.tags.clone(),
            domain: m.domain.clone(),
            files_discussed: m.files_discussed.clone(),
            commits_made: m.commits_made.clone(),
            indexed_at: now_millis(),
            extraction_method: ExtractionMethod::Heuristic,
            body: DocBody::Decision(DecisionFields {
                summary: d.summary,
                alternatives: d.alternatives,
                reasoning: d.reasoning,
                confidence: d.confidence,
                source_message_uuid: mf.message_uuid.clone(),
                status: d.status,
                superseded_by: None,
                supersedes: Vec::new(),
            }),
        });
    }
    out
}

fn first_sentence(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = one.find(". ").and_then(|i| one.get(..=i)).unwrap_or(&one);
    if cut.chars().count() > max {
        format!("{}…", cut.chars().take(max - 1).collect::<String>())
    } else {
        cut.to_string()
    }
}

/// The session's `summary` document: goal, outcome, topics, files, decisions, commits, errors
/// (resolved when the same tool later succeeded), duration; `content` is a readable paragraph.
fn summary_document(
    session: &str,
    parsed: &[(ParsedFile, Option<&str>, FileState)],
    docs: &[Document],
) -> Option<Document> {
    let messages: Vec<&Document> = docs.iter().filter(|d| d.kind() == DocKind::Message).collect();
    let first_user = messages
        .iter()
        .find(|d| matches!(&d.body, DocBody::Message(m) if m.role == Role::User && m.agent.is_none()))?;
    let last_assistant = messages
        .iter()
        .rev()
        .find(|d| matches!(&d.body, DocBody::Message(m) if m.role == Role::Assistant && m.agent.is_none()));
    let start = messages.iter().map(|d| d.timestamp).min()?;
    let end = messages.iter().map(|d| d.timestamp).max()?;
    let goal = first_sentence(&first_user.content, 200);
    let outcome = last_assistant.map(|d| first_sentence(&d.content, 200)).unwrap_or_default();
    let mut files: Vec<FileRef> = Vec::new();
    let mut commits = Vec::new();
    let mut tag_counts: BTreeMap<&str, usize> = BTreeMap::new();
    for d in &messages {
        for f in &d.files_discussed {
            match files.iter_mut().find(|x| x.path == f.path) {
                Some(x) => x.action = x.action.max(f.action),
                None => files.push(FileRef { path: f.path.clone(), line_ranges: vec![], action: f.action }),
            }
        }
        for c in &d.commits_made {
            if !commits.contains(c) {
                commits.push(c.clone());
            }
        }
        for t in &d.tags {
            if !t.starts_with("agent:") {
                *tag_counts.entry(t.as_str()).or_default() += 1;
            }
        }
    }
    let mut topics: Vec<(&str, usize)> = tag_counts.into_iter().collect();
    topics.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let key_topics: Vec<String> = topics.into_iter().take(6).map(|(t, _)| t.to_string()).collect();
    let decisions: Vec<&Document> = docs.iter().filter(|d| d.kind() == DocKind::Decision).collect();
    let mut errors = Vec::new();
    for (pf, _, _) in parsed {
        for e in &pf.errors {
            let resolved = pf.successes.iter().any(|(tool, t)| *tool == e.tool && *t > e.timestamp);
            let (text, _) = scrub(&format!("{}: {}", e.tool, e.text));
            errors.push((text, resolved));
        }
    }
    let tasks: Vec<(String, bool)> = parsed.first().map(|(pf, _, _)| pf.tasks.clone()).unwrap_or_default();
    let tasks_completed: Vec<String> = tasks.iter().filter(|t| t.1).map(|t| scrub(&t.0).0).collect();
    let tasks_remaining: Vec<String> = tasks.iter().filter(|t| !t.1).map(|t| scrub(&t.0).0).collect();
    let edited: Vec<&str> =
        files.iter().filter(|f| f.action != FileAction::Read).map(|f| f.path.as_str()).take(8).collect();
    let mut content = format!("Goal: {goal}");
    if !outcome.is_empty() {
        content.push_str(&format!(" Outcome: {outcome}"));
    }
    if !key_topics.is_empty() {
        content.push_str(&format!(" Topics: {}.", key_topics.join(", ")));
    }
    if !edited.is_empty() {
        content.push_str(&format!(" Files changed: {}.", edited.join(", ")));
    }
    for d in decisions.iter().take(5) {
        if let DocBody::Decision(f) = &d.body {
            content.push_str(&format!(" Decided: {}.", f.summary));
        }
    }
    for c in commits.iter().take(5) {
        content.push_str(&format!(" Commit {} {}.", c.sha, c.message));
    }
    if !tasks.is_empty() {
        content.push_str(&format!(" Tasks: {} done, {} open", tasks_completed.len(), tasks_remaining.len()));
        if let Some(t) = tasks_remaining.first() {
            content.push_str(&format!(" (next: {t})"));
        }
        content.push('.');
    }
    let unresolved = errors.iter().filter(|e| !e.1).count();
    if !errors.is_empty() {
        content.push_str(&format!(" {} tool errors, {unresolved} unresolved.", errors.len()));
    }
    let minutes = (end - start).num_minutes();
    content.push_str(&format!(" {} messages over {minutes} min.", messages.len()));
    Some(Document {
        id: Document::stable_id(session, DocKind::Summary, ""),
        session_id: session.to_string(),
        timestamp: end,
        content,
        tags: key_topics.clone(),
        domain: first_user.domain.clone(),
        files_discussed: files,
        commits_made: commits,
        indexed_at: now_millis(),
        extraction_method: ExtractionMethod::Heuristic,
        body: DocBody::Summary(SummaryFields {
            goal,
            outcome,
            key_topics,
            decisions: decisions.iter().map(|d| d.id).collect(),
            errors,
            tasks_completed,
            tasks_remaining,
            previous_session: None,
            next_session: None,
            started_at_ms: start.timestamp_millis(),
            ended_at_ms: end.timestamp_millis(),
        }),
    })
}

impl Collection {
    fn session_state(&self, id: &str) -> Result<Option<SessionState>> {
        self.get_session_bytes(id)?.map(|b| crate::store::codec::decode("session state", &b)).transpose()
    }
}

/// Result of importing structured conversations.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Conversations imported.
    pub conversations: usize,
    /// Message documents written.
    pub messages: usize,
    /// Documents rejected, with the reason.
    pub invalid: Vec<crate::ingest::structured::Invalid>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ImportHeader {
    source: String,
    people: Vec<String>,
    user: String,
    tags: Vec<String>,
    metadata: Vec<(String, String)>,
}

fn import_key(id: &str) -> String {
    format!("import:{id}")
}

/// Imports validated structured conversations into a collection: one message document per
/// turn (speaker kept; `role` user for the primary user, other for everyone else; tagged with
/// the conversation's tags and `source:<source>`), the conversation as the session. Importing
/// the same conversation again replaces it; importing a forgotten one
/// ([`Collection::forget_session`]) is an explicit request and brings it back.
pub fn import_conversations(
    coll: &Collection,
    conversations: &[crate::ingest::structured::Conversation],
) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    for c in conversations {
        let mut tags: Vec<String> = c.tags.iter().map(|t| t.to_lowercase()).collect();
        tags.push(format!("source:{}", c.source.to_lowercase()));
        tags.sort();
        tags.dedup();
        let docs: Vec<Document> = c
            .turns
            .iter()
            .enumerate()
            .map(|(i, t)| Document {
                id: Document::stable_id(&c.id, DocKind::Message, &i.to_string()),
                session_id: c.id.clone(),
                timestamp: t.time,
                content: scrub(&t.content).0,
                tags: tags.clone(),
                domain: None,
                files_discussed: Vec::new(),
                commits_made: Vec::new(),
                indexed_at: now_millis(),
                extraction_method: ExtractionMethod::Import,
                body: DocBody::Message(MessageFields {
                    role: if t.speaker == c.user { Role::User } else { Role::Other },
                    message_uuid: format!("{}:{i}", c.id),
                    message_index: i as u64,
                    speaker: Some(t.speaker.clone()),
                    agent: None,
                }),
            })
            .collect();
        let header = ImportHeader {
            source: c.source.clone(),
            people: c.people.clone(),
            user: c.user.clone(),
            tags: c.tags.clone(),
            metadata: c.metadata.clone(),
        };
        // The conversation replaces any earlier import of it, with its header, in one transaction.
        coll.write_session(SessionWrite {
            session_id: &c.id,
            replace: true,
            docs: &docs,
            state: Some((import_key(&c.id), crate::store::codec::encode(&header))),
            unforget: true,
        })?;
        report.conversations += 1;
        report.messages += docs.len();
    }
    Ok(report)
}

/// Reads an imported conversation back (scrubbed text, as stored).
pub fn read_conversation(coll: &Collection, id: &str) -> Result<Option<crate::ingest::structured::Conversation>> {
    let Some(bytes) = coll.get_session_bytes(&import_key(id))? else { return Ok(None) };
    let h: ImportHeader = crate::store::codec::decode("import header", &bytes)?;
    let turns = coll
        .session_documents(id)?
        .into_iter()
        .filter_map(|d| match d.body {
            DocBody::Message(m) => Some(crate::ingest::structured::Turn {
                speaker: m.speaker.unwrap_or_default(),
                content: d.content,
                time: d.timestamp,
            }),
            _ => None,
        })
        .collect();
    Ok(Some(crate::ingest::structured::Conversation {
        id: id.to_string(),
        source: h.source,
        people: h.people,
        user: h.user,
        turns,
        tags: h.tags,
        metadata: h.metadata,
    }))
}
