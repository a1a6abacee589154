//! One project folder's sessions, written in order. What a session needs before it is written
//! (its files read and parsed, its messages scrubbed, its decisions and summary derived) is
//! pure and takes most of the time, so it runs on a second thread a session or two ahead while
//! this one writes: each session is still one transaction, in the same order as before.
//! Which sessions are written is decided first, from their fingerprints (a `stat` each), so an
//! unchanged session is never read.

use std::path::Path;

use super::fingerprint::{FileState, SessionState, file_state};
use super::report::{self, FileReport};
use super::{Failure, FileOutcome, IndexOptions, IndexReport};
use crate::collection::{Collection, SessionWrite};
use crate::derive::session::{self, SessionFile};
use crate::doc::{DocKind, Document};
use crate::error::{Error, Result};
use crate::ingest::claude::{self, ParsedFile};
use crate::ingest::layout::{Agent, SessionFiles};
use crate::store::seal::panic_message;

/// Sessions prepared ahead of the one being written (their documents held in memory).
const AHEAD: usize = 2;

/// A session to write, as its fingerprint check found it.
struct Checked<'a> {
    s: &'a SessionFiles,
    forgotten: bool,
    previous: Option<SessionState>,
    stats: Vec<(&'a Path, Option<(u64, i64)>)>,
}

/// A session read, parsed and derived, ready to write.
struct Prepared {
    parsed: Vec<ParsedFile>,
    states: Vec<FileState>,
    /// Every file seen last time still starts with the bytes consumed then.
    appended: bool,
    docs: Vec<Document>,
    redactions: crate::text::scrub::RedactionCounts,
}

/// Writes `sessions` (newest first) into `coll`; a session that cannot be read or written is
/// reported and skipped (its fingerprint is not stored, so the next run tries it again). After a
/// damaged or busy collection the rest are reported as not tried, and it returns false.
pub(super) fn index_sessions(
    coll: &Collection,
    root: &str,
    sessions: &[&SessionFiles],
    options: &IndexOptions,
    report: &mut IndexReport,
    tick: &mut dyn FnMut(&str),
) -> Result<bool> {
    // Stops at a damaged or busy collection: the sessions after `s` are not tried.
    let failed = |s: &SessionFiles, e: Error, report: &mut IndexReport| -> bool {
        let path = s.files().first().map(|(p, _)| p.to_path_buf()).unwrap_or_default();
        let fatal = matches!(e, Error::Damaged { .. } | Error::InUse { .. });
        report.session_files(s, FileOutcome::Failed, Some(&e.chain()));
        report.failures.push(Failure { path, session: Some(s.id.clone()), reason: e.chain() });
        if fatal {
            let why = format!("not tried: {}", e.chain());
            for r in sessions.iter().skip_while(|x| x.id != s.id).skip(1) {
                report.session_files(r, FileOutcome::Failed, Some(&why));
            }
        }
        fatal
    };
    let mut todo: Vec<Checked<'_>> = Vec::new();
    for &s in sessions {
        match coll.guarded(|c| check(c, s, options, report)) {
            Ok(Some(checked)) => todo.push(checked),
            Ok(None) => tick(&s.id),
            Err(e) => {
                if failed(s, e, report) {
                    return Ok(false);
                }
            }
        }
    }
    let force = options.force;
    let finished = std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Prepared>>(AHEAD);
        let todo = &todo;
        scope.spawn(move || {
            for c in todo {
                // A panic while preparing one session is that session's failure, not the run's.
                let prepared = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepare(c, root, force)))
                    .unwrap_or_else(|p| {
                        let path = c.s.files().first().map(|(p, _)| p.to_path_buf()).unwrap_or_default();
                        let why = format!("reading it panicked: {}", panic_message(p.as_ref()));
                        Err(Error::io(&path, std::io::Error::other(why)))
                    });
                // The writer stopped (a damaged collection): nothing more is wanted.
                if tx.send(prepared).is_err() {
                    break;
                }
            }
        });
        for c in todo {
            // The reader sends one result per session; it stops early only when this loop did.
            let prepared = rx.recv().unwrap_or_else(|_| {
                let path = c.s.files().first().map(|(p, _)| p.to_path_buf()).unwrap_or_default();
                Err(Error::io(&path, std::io::Error::other("the session reader stopped")))
            });
            let written = prepared.and_then(|p| coll.guarded(|coll| write(coll, c, p, options, report)));
            if let Err(e) = written {
                if failed(c.s, e, report) {
                    return false;
                }
                continue;
            }
            tick(&c.s.id);
        }
        true
    });
    Ok(finished)
}

/// Whether `s` is to be written: `None` when it is forgotten, unchanged since it was indexed,
/// or only counted (a dry run), each reported.
fn check<'a>(
    coll: &Collection,
    s: &'a SessionFiles,
    options: &IndexOptions,
    report: &mut IndexReport,
) -> Result<Option<Checked<'a>>> {
    let forgotten = coll.is_forgotten(&s.id)?;
    if forgotten && !options.force {
        report.sessions_forgotten += 1;
        report.session_files(
            s,
            FileOutcome::Forgotten,
            Some("forgotten with `convdex forget`; `index --force` indexes it again"),
        );
        return Ok(None);
    }
    let previous: Option<SessionState> = coll.session_state(&s.id)?;
    let stats: Vec<(&Path, Option<(u64, i64)>)> = s.files().iter().map(|(p, _)| (*p, file_state(p))).collect();
    if !options.force && previous.as_ref().is_some_and(|prev| prev.unchanged(&stats)) {
        report.sessions_skipped += 1;
        report.session_files(s, FileOutcome::Unchanged, None);
        return Ok(None);
    }
    if options.dry_run {
        match previous {
            Some(_) => report.sessions_appended += 1,
            None => report.sessions_new += 1,
        }
        report.would_index.extend(s.files().first().map(|(p, _)| p.to_path_buf()));
        report.session_files(s, FileOutcome::WouldIndex, None);
        return Ok(None);
    }
    Ok(Some(Checked { s, forgotten, previous, stats }))
}

/// Reads and parses every file of the session and derives its documents. Pure but for the
/// reads.
fn prepare(c: &Checked<'_>, root: &str, force: bool) -> Result<Prepared> {
    let files = c.s.files();
    let mut parsed = Vec::with_capacity(files.len());
    let mut states = Vec::with_capacity(files.len());
    let mut appended = !force && c.previous.is_some();
    for (p, st) in &c.stats {
        let bytes = std::fs::read(p).map_err(|e| Error::io(p, e))?;
        let pf = parse_file(c.s, p, &bytes);
        let (size, mtime_ms) = st.unwrap_or((bytes.len() as u64, 0));
        let path = p.to_string_lossy().into_owned();
        if let Some(prev) = &c.previous {
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
    if let Some(prev) = &c.previous {
        appended &= prev.files.iter().all(|old| states.iter().any(|st| st.path == old.path));
    }
    let inputs: Vec<SessionFile<'_>> =
        parsed.iter().zip(&files).map(|(pf, (_, agent))| SessionFile { parsed: pf, agent: *agent }).collect();
    let (mut docs, redactions) = session::documents(&c.s.id, root, c.s.agent, &inputs);
    let decisions = session::decision_documents(&docs);
    docs.extend(decisions);
    if let Some(summary) = session::summary_document(&c.s.id, &inputs, &docs) {
        docs.push(summary);
    }
    Ok(Prepared { parsed, states, appended, docs, redactions })
}

/// Writes a prepared session in one transaction: a re-indexed session's old documents go, its
/// new documents and its fingerprint come, and its tombstone (when forced) goes, or none of it
/// happens. On append, only messages not stored yet (or changed) are written.
fn write(
    coll: &Collection,
    c: &Checked<'_>,
    p: Prepared,
    options: &IndexOptions,
    report: &mut IndexReport,
) -> Result<()> {
    let Prepared { parsed, states, appended, docs, redactions } = p;
    let s = c.s;
    for ((p, _), pf) in s.files().iter().zip(&parsed) {
        for sk in &pf.skipped {
            report.skipped_lines.push((p.to_path_buf(), sk.clone()));
        }
    }
    for (k, n) in redactions {
        *report.redactions.entry(k).or_default() += n;
    }
    let mut fresh = Vec::with_capacity(docs.len());
    for d in docs {
        if appended
            && coll.get(d.id)?.is_some_and(|old| old.content == d.content && old.files_discussed == d.files_discussed)
        {
            continue;
        }
        fresh.push(d);
    }
    let state = SessionState { files: states, messages: parsed.iter().map(|pf| pf.messages.len()).sum() };
    let r = coll.write_session(SessionWrite {
        session_id: &s.id,
        replace: !appended,
        docs: &fresh,
        state: Some((s.id.clone(), crate::store::codec::encode(&state))),
        unforget: c.forgotten,
        defer_vectors: options.defer_vectors,
    })?;
    for ((p, _), pf) in s.files().iter().zip(&parsed) {
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
    match (&c.previous, appended) {
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
