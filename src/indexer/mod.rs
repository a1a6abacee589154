//! Indexing Claude Code histories: find the session files ([`crate::ingest::layout`]), parse
//! them, build their documents ([`crate::derive::session`]), and write each session with its
//! fingerprint ([`fingerprint`]) in one transaction, so unchanged sessions cost a `stat` and a
//! killed run leaves every session whole.

mod copies;
pub(crate) mod fingerprint;
pub(crate) mod import;
pub(crate) mod remember;
mod report;
pub(crate) mod runs;

pub use report::{Failure, FileOutcome, FileReport, IndexReport};

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::collection::{Collection, SessionWrite};
use crate::derive::session::{self, SessionFile};
use crate::doc::{DocBody, DocKind, Document};
use crate::error::{Error, Result};
use crate::index::Index;
use crate::ingest::claude::{self, ParsedFile};
use crate::ingest::layout::{self, Agent, ProjectFolder, SessionFiles};
use crate::text::normalize_name;
use fingerprint::{FileState, SessionState, file_state};

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
    /// Store every session's documents and words first and leave their vectors pending, so
    /// the whole history is searchable by words, filters, decisions, blame and handoff before
    /// the model has embedded anything; [`crate::Index::embed_pending`] then embeds them
    /// (resumable). `convdex index` does both. Default: false (each session is embedded as it
    /// is written).
    pub defer_vectors: bool,
    /// Only find what a run would index: sessions new or changed since they were indexed
    /// (listed in [`IndexReport::would_index`]), writing nothing and creating no collection (a
    /// project without one counts all its sessions as new). Default: false.
    pub dry_run: bool,
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

/// The default tenant: the OS user (`$USER`, `$USERNAME`), normalised, else `local`.
pub fn default_tenant() -> String {
    let user = std::env::var("USER").or_else(|_| std::env::var("USERNAME")).unwrap_or_default();
    let n = normalize_name(&user);
    if user.is_empty() { "local".into() } else { n }
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

/// The default histories that exist on this machine: Claude Code's, Codex's and Gemini's (see
/// [`crate::default_sources`]); Aider's are found in the projects the others name.
pub fn default_paths() -> Vec<PathBuf> {
    layout::default_sources().into_iter().map(|(_, p)| p).filter(|p| p.exists()).collect()
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
    let mut folders: Vec<ProjectFolder> = Vec::new();
    let mut first_error = None;
    // Gemini names a project's folder by the hash of its path: discover it last, knowing the
    // paths the other agents' sessions and the existing collections record.
    let mut ordered: Vec<&PathBuf> = paths.iter().collect();
    ordered.sort_by_key(|p| layout::detect(p) == Some(Agent::Gemini));
    let mut known: Vec<String> = index.collections()?.into_iter().filter_map(|c| c.project_path).collect();
    for path in ordered {
        let found = match layout::discover(path, &known) {
            Ok(f) => f,
            Err(e) => {
                report.failures.push(Failure { path: path.clone(), session: None, reason: e.chain() });
                first_error.get_or_insert(e);
                continue;
            }
        };
        for (dir, e) in found.unreadable {
            report.failures.push(Failure { path: dir, session: None, reason: e.chain() });
        }
        if found.folders.is_empty() {
            report.empty_paths.push(path.clone());
        }
        known.extend(found.folders.iter().filter_map(|f| f.project.clone()));
        for folder in found.folders {
            let name = folder.dir.to_string_lossy().to_lowercase();
            let path = folder.project.clone().unwrap_or_default().to_lowercase();
            let excluded = AUTOMATED_PROJECT_MARKERS.iter().any(|m| name.contains(m) || path.contains(m))
                || options.exclude_projects.iter().any(|x| {
                    let x = x.to_lowercase();
                    name.contains(&x) || path.contains(&x)
                });
            for (p, why) in &folder.left_out {
                report.file(p, None, FileOutcome::LeftOut, Some(why.clone()));
            }
            if excluded {
                report.projects_excluded += 1;
                for s in &folder.sessions {
                    report.session_files(
                        s,
                        FileOutcome::Excluded,
                        Some("its project is excluded (config or --exclude-projects)"),
                    );
                }
            } else {
                *report.agents.entry(folder.agent.as_str().to_string()).or_default() += folder.sessions.len();
                folders.push(folder);
            }
        }
    }
    // Aider keeps its history in the project: every project another agent names may have one.
    let mut aider_dirs: Vec<PathBuf> = folders
        .iter()
        .filter(|f| f.agent != Agent::Aider)
        .filter_map(|f| f.project.as_deref().map(PathBuf::from))
        .filter(|p| p.join(layout::aider::HISTORY).is_file())
        .filter(|p| !folders.iter().any(|f| f.agent == Agent::Aider && f.dir == *p))
        .collect();
    aider_dirs.sort();
    aider_dirs.dedup();
    for dir in aider_dirs {
        match layout::aider::discover(&dir) {
            Ok(found) => {
                for f in found {
                    *report.agents.entry(f.agent.as_str().to_string()).or_default() += f.sessions.len();
                    folders.push(f);
                }
            }
            Err(e) => report.failures.push(Failure { path: dir, session: None, reason: e.chain() }),
        }
    }
    copies::one_copy_each(&mut folders, &mut report);
    // Nothing to index because every path given is wrong: that is an error, not a report.
    if let Some(e) = first_error
        && report.failures.len() == paths.len()
    {
        return Err(e);
    }
    let total = folders.iter().map(|f| f.sessions.len()).sum();
    let mut done = 0;
    let mut closing: Option<Closing> = None;
    for folder in &folders {
        // One project that cannot be written (busy, damaged, unreadable) does not stop the others.
        let r = index_folder(index, &tenant, folder, options, &mut report, &mut |session| {
            done += 1;
            progress(Progress { done, total, session });
        });
        match r {
            Ok(Some(written)) => {
                // The project's commit runs while the next project is read: at most one at a time.
                if let Some(c) = closing.take() {
                    c.finish(&mut report);
                }
                closing = Some(Closing::start(written, folder.dir.clone()));
            }
            Ok(None) => {}
            Err(e) => report.failures.push(Failure { path: folder.dir.clone(), session: None, reason: e.chain() }),
        }
    }
    if let Some(c) = closing.take() {
        c.finish(&mut report);
    }
    report.collections.sort();
    report.collections.dedup();
    report.elapsed = start.elapsed();
    report.seconds = report.elapsed.as_secs_f64();
    Ok(report)
}

/// A written project's last commit (its words and derived documents made durable, its lexical
/// index committed), on a thread of its own while the next project is read. The collection
/// stays open here until [`Closing::finish`], and is closed there: a next folder of the same
/// project gets this same open collection instead of waiting for its lock.
struct Closing {
    dir: PathBuf,
    coll: std::sync::Arc<Collection>,
    thread: std::thread::JoinHandle<Result<()>>,
}

impl Closing {
    fn start(coll: std::sync::Arc<Collection>, dir: PathBuf) -> Self {
        let writing = coll.clone();
        let thread = std::thread::spawn(move || {
            writing.record_languages()?;
            writing.touch_indexed_at(chrono::Utc::now())?;
            writing.flush()
        });
        Self { dir, coll, thread }
    }

    /// Waits for it, then closes the collection; a failure is the project's, in the report.
    fn finish(self, report: &mut IndexReport) {
        let joined = self.thread.join();
        drop(self.coll);
        let reason = match joined {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.chain(),
            Err(p) => format!(
                "the project's last commit stopped unexpectedly ({}; a bug: please report it)",
                crate::store::seal::panic_text(p.as_ref()).unwrap_or_default()
            ),
        };
        report.failures.push(Failure { path: self.dir, session: None, reason });
    }
}

/// The existing collection of `folder`'s project (any tenant), without creating one.
fn find_project(index: &Index, folder: &ProjectFolder) -> Result<Option<std::sync::Arc<Collection>>> {
    let key = folder.project.clone().unwrap_or_else(|| folder.dir.to_string_lossy().into_owned());
    let found = index
        .collections()?
        .into_iter()
        .find(|c| c.project_path.as_deref().is_some_and(|p| crate::text::paths::same_dir(p, &key)));
    found.map(|c| index.collection(&c.tenant, &c.project)).transpose()
}

fn open_project(index: &Index, tenant: &str, folder: &ProjectFolder) -> Result<std::sync::Arc<Collection>> {
    let path = folder.project.clone();
    let dir_name = folder.dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let base = match (&path, folder.agent) {
        (Some(p), _) => normalize_name(p.replace('\\', "/").trim_end_matches('/').rsplit('/').next().unwrap_or(p)),
        // A Gemini folder whose project path no other history names: its hash is all there is.
        (None, Agent::Gemini) => format!("gemini-{}", crate::text::prefix_chars(&dir_name, 8)),
        (None, _) => normalize_name(&dir_name),
    };
    let key = path.clone().unwrap_or_else(|| folder.dir.to_string_lossy().into_owned());
    collection_for_path(index, tenant, &base, &key)
}

/// The collection of the project at `key` (a directory), named `base` unless another project
/// of the same name owns it, then `base-<hash of key>`; created when missing.
pub(crate) fn collection_for_path(
    index: &Index,
    tenant: &str,
    base: &str,
    key: &str,
) -> Result<std::sync::Arc<Collection>> {
    let coll = index.collection_with(tenant, base, Some(key))?;
    match coll.meta()?.project_path {
        // The same directory written by another agent or another OS spelling is the same project.
        Some(p) if !crate::text::paths::same_dir(&p, key) => {
            // Another project with the same last path component owns the plain name.
            let h = xxhash_rust::xxh3::xxh3_64(key.as_bytes());
            index.collection_with(tenant, &format!("{base}-{:06x}", h & 0xff_ffff), Some(key))
        }
        Some(_) => Ok(coll),
        None => {
            coll.update_meta(|m| m.project_path = Some(key.to_string()))?;
            index.record_project_path(&coll)?;
            Ok(coll)
        }
    }
}

/// Indexes one project folder's sessions; returns the project's collection, whose last commit
/// ([`Closing`]) is the caller's: none for a dry run, a folder with nothing to index, or after a
/// session failed so that the rest were not tried (the collection is then closed here).
fn index_folder(
    index: &Index,
    tenant: &str,
    folder: &ProjectFolder,
    options: &IndexOptions,
    report: &mut IndexReport,
    tick: &mut dyn FnMut(&str),
) -> Result<Option<std::sync::Arc<Collection>>> {
    let mut sessions: Vec<&SessionFiles> = Vec::new();
    for s in &folder.sessions {
        let excluded =
            s.files().iter().any(|(p, _)| options.exclude.iter().any(|x| p.to_string_lossy().contains(x.as_str())));
        if excluded {
            report.session_files(
                s,
                FileOutcome::Excluded,
                Some("a file of the session matches --exclude or exclude_paths"),
            );
        } else {
            sessions.push(s);
        }
    }
    if sessions.is_empty() {
        return Ok(None);
    }
    // Newest first: the vectors a words-first run leaves pending are embedded in the order the
    // documents were stored, so the last weeks become searchable by meaning first.
    let modified = |s: &SessionFiles| {
        s.files().iter().filter_map(|(p, _)| std::fs::metadata(p).and_then(|m| m.modified()).ok()).max()
    };
    let mut by_time: Vec<(Option<std::time::SystemTime>, &SessionFiles)> =
        sessions.iter().map(|s| (modified(s), *s)).collect();
    by_time.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let sessions: Vec<&SessionFiles> = by_time.into_iter().map(|(_, s)| s).collect();
    let coll = if options.dry_run {
        match find_project(index, folder)? {
            Some(c) => c,
            None => {
                report.sessions_new += sessions.len();
                report.would_index.extend(sessions.iter().filter_map(|s| Some(s.files().first()?.0.to_path_buf())));
                for s in sessions {
                    report.session_files(s, FileOutcome::WouldIndex, None);
                }
                return Ok(None);
            }
        }
    } else {
        match open_project(index, tenant, folder) {
            Ok(c) => c,
            Err(e) => {
                let why = e.chain();
                for s in &sessions {
                    report.session_files(s, FileOutcome::Failed, Some(&why));
                }
                return Err(e);
            }
        }
    };
    let root = coll.meta()?.project_path.unwrap_or_default();
    report.collections.push(coll.name().to_string());
    for &s in &sessions {
        // A session that cannot be read or written is reported and skipped; its fingerprint is
        // not stored, so the next run tries it again.
        if let Err(e) = coll.guarded(|c| index_session(c, &root, s, options, report)) {
            let path = s.files().first().map(|(p, _)| p.to_path_buf()).unwrap_or_default();
            let fatal = matches!(e, Error::Damaged { .. } | Error::InUse { .. });
            report.session_files(s, FileOutcome::Failed, Some(&e.chain()));
            report.failures.push(Failure { path, session: Some(s.id.clone()), reason: e.chain() });
            if fatal {
                // The sessions after it are not tried: each of their files says so.
                let why = format!("not tried: {}", e.chain());
                let rest: Vec<&SessionFiles> = sessions.iter().skip_while(|x| x.id != s.id).skip(1).copied().collect();
                for r in rest {
                    report.session_files(r, FileOutcome::Failed, Some(&why));
                }
                return Ok(None);
            }
        }
        tick(&s.id);
    }
    if options.dry_run {
        return Ok(None);
    }
    let changed = crate::derive::life::relink(
        coll.documents_of_kind(DocKind::Summary)?,
        coll.documents_of_kind(DocKind::Decision)?,
    );
    if !changed.is_empty() && options.defer_vectors {
        coll.add_deferred(&changed)?;
    } else if !changed.is_empty() {
        coll.add(&changed)?;
    }
    Ok(Some(coll))
}

fn index_session(
    coll: &Collection,
    root: &str,
    s: &SessionFiles,
    options: &IndexOptions,
    report: &mut IndexReport,
) -> Result<()> {
    let files = s.files();
    let forgotten = coll.is_forgotten(&s.id)?;
    if forgotten && !options.force {
        report.sessions_forgotten += 1;
        report.session_files(
            s,
            FileOutcome::Forgotten,
            Some("forgotten with `convdex forget`; `index --force` indexes it again"),
        );
        return Ok(());
    }
    let previous: Option<SessionState> = coll.session_state(&s.id)?;
    let stats: Vec<(&Path, Option<(u64, i64)>)> = files.iter().map(|(p, _)| (*p, file_state(p))).collect();
    if !options.force && previous.as_ref().is_some_and(|prev| prev.unchanged(&stats)) {
        report.sessions_skipped += 1;
        report.session_files(s, FileOutcome::Unchanged, None);
        return Ok(());
    }
    if options.dry_run {
        match previous {
            Some(_) => report.sessions_appended += 1,
            None => report.sessions_new += 1,
        }
        report.would_index.extend(files.first().map(|(p, _)| p.to_path_buf()));
        report.session_files(s, FileOutcome::WouldIndex, None);
        return Ok(());
    }
    // Read and parse every file of the session.
    let mut parsed = Vec::with_capacity(files.len());
    let mut states = Vec::with_capacity(files.len());
    // Appended: every file seen last time still starts with the bytes consumed then.
    let mut appended = !options.force && previous.is_some();
    for (p, st) in &stats {
        let bytes = std::fs::read(p).map_err(|e| Error::io(p, e))?;
        let pf = parse_file(s, p, &bytes);
        for sk in &pf.skipped {
            report.skipped_lines.push((p.to_path_buf(), sk.clone()));
        }
        let (size, mtime_ms) = st.unwrap_or((bytes.len() as u64, 0));
        let path = p.to_string_lossy().into_owned();
        if let Some(prev) = &previous {
            appended &= prev.kept_prefix(&path, &bytes);
        }
        let head = bytes.get(..pf.consumed).unwrap_or_default();
        states.push(FileState {
            path,
            size,
            mtime_ms,
            consumed: pf.consumed as u64,
            prefix_hash: xxhash_rust::xxh3::xxh3_64(head),
        });
        parsed.push(pf);
    }
    // A file that disappeared since last time is a rewrite, not an append.
    if let Some(prev) = &previous {
        appended &= prev.files.iter().all(|old| states.iter().any(|st| st.path == old.path));
    }
    let inputs: Vec<SessionFile<'_>> =
        parsed.iter().zip(&files).map(|(pf, (_, agent))| SessionFile { parsed: pf, agent: *agent }).collect();
    let (mut docs, redactions) = session::documents(&s.id, root, s.agent, &inputs);
    for (k, n) in redactions {
        *report.redactions.entry(k).or_default() += n;
    }
    let decisions = session::decision_documents(&docs);
    session::settle_turns(&mut docs, &decisions);
    docs.extend(decisions);
    if let Some(summary) = session::summary_document(&s.id, &inputs, &docs) {
        docs.push(summary);
    }
    // On append, only messages not stored yet (or changed) are written: the turn that closed
    // at the end of the file last time and goes on now loses its closing mark, a message a
    // reply turned into a decision gets its mark, and the sub-agents' messages, numbered after
    // the main transcript's, move as it grows.
    fn place(d: &Document) -> Option<u64> {
        match &d.body {
            DocBody::Message(m) => Some(m.message_index),
            _ => None,
        }
    }
    let mut fresh = Vec::with_capacity(docs.len());
    for d in docs {
        if appended
            && coll.get(d.id)?.is_some_and(|old| {
                old.content == d.content
                    && old.files_discussed == d.files_discussed
                    && old.closes_turn == d.closes_turn
                    && old.decides == d.decides
                    && place(&old) == place(&d)
            })
        {
            continue;
        }
        fresh.push(d);
    }
    let state = SessionState { files: states, messages: parsed.iter().map(|pf| pf.messages.len()).sum() };
    // One transaction: a re-indexed session's old documents go, its new documents and its
    // fingerprint come, and its tombstone (when forced) goes, or none of it happens.
    let r = coll.write_session(SessionWrite {
        session_id: &s.id,
        replace: !appended,
        docs: &fresh,
        state: Some((s.id.clone(), crate::store::codec::encode(&state))),
        unforget: forgotten,
        defer_vectors: options.defer_vectors,
    })?;
    for ((p, _), pf) in files.iter().zip(&parsed) {
        let (outcome, reason) = report::file_outcome(s.agent, pf);
        report.files.push(FileReport {
            path: p.to_path_buf(),
            session: Some(s.id.clone()),
            agent: s.agent,
            outcome,
            messages: pf.messages.len(),
            reason,
        });
    }
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

/// One file of a session, parsed in its agent's format (a file holding several sessions, an
/// Aider history or Gemini's `logs.json`, gives the session's part).
fn parse_file(s: &SessionFiles, path: &Path, bytes: &[u8]) -> ParsedFile {
    use crate::ingest::{aider, codex, gemini};
    let pick = |all: Vec<(String, ParsedFile)>| {
        all.into_iter().find(|(id, _)| *id == s.id).map(|(_, pf)| pf).unwrap_or_default()
    };
    match s.agent {
        Agent::ClaudeCode => claude::parse(bytes),
        Agent::Codex => codex::parse(bytes),
        Agent::Gemini if path.file_name().is_some_and(|n| n == "logs.json") => pick(gemini::parse_logs(bytes)),
        Agent::Gemini => gemini::parse_chat(bytes),
        Agent::Aider => pick(aider::parse(bytes)),
    }
}

impl Collection {
    fn session_state(&self, id: &str) -> Result<Option<SessionState>> {
        self.get_session_bytes(id)?.map(|b| crate::store::codec::decode("session state", &b)).transpose()
    }
}
