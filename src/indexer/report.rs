//! What an indexing run reports: sessions by outcome, and every transcript file it saw with
//! what became of it ([`FileOutcome`]), so that nothing is skipped in silence.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::ingest::claude::{ParsedFile, SkippedLine};
use crate::ingest::layout::{Agent, SessionFiles};
use crate::text::scrub::RedactionCounts;

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
    /// Sessions found per agent (`claude-code`, `codex`, `gemini`, `aider`), indexed or not.
    pub agents: std::collections::BTreeMap<String, usize>,
    /// Sessions, project folders and paths that could not be indexed, and why. The run went on
    /// without them; the next run tries them again.
    pub failures: Vec<Failure>,
    /// Paths given in which no session was found (a folder that holds no history, or none
    /// within [`crate::ingest::layout::walk::MAX_DEPTH`] levels).
    pub empty_paths: Vec<PathBuf>,
    /// A dry run ([`crate::IndexOptions::dry_run`]): the first file of every session it would index.
    pub would_index: Vec<PathBuf>,
    /// Every transcript file the run saw and what became of it: indexed, unchanged, skipped
    /// with the reason, or a warning ([`FileOutcome::Empty`]: it looks like a session and
    /// yielded nothing). Nothing the run found is left unsaid.
    pub files: Vec<FileReport>,
    /// Wall time.
    #[serde(skip)]
    pub elapsed: Duration,
    /// Seconds from the start until every document and word was stored (searchable by words,
    /// filters, decisions), when the vectors were computed after ([`crate::IndexOptions::defer_vectors`]
    /// and [`crate::Index::embed_pending`]). `None` when they were computed inline.
    pub words_seconds: Option<f64>,
    /// Wall time in seconds (as [`IndexReport::elapsed`]).
    pub seconds: f64,
}

impl std::fmt::Display for IndexReport {
    /// One line: sessions by outcome, documents, chunks, skipped lines, redactions, time.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "sessions: {} new, {} appended, {} re-indexed, {} unchanged, {} forgotten; {} messages, {} decisions, {} chunks \
             ({} embedded); {} lines skipped; {} failed; files: {}; redactions: {:?}; {:.1} s; agents: {}",
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
            {
                let counts = self.file_counts();
                if counts.is_empty() {
                    "none".to_string()
                } else {
                    counts.iter().map(|(o, n)| format!("{n} {}", o.as_str())).collect::<Vec<_>>().join(", ")
                }
            },
            self.redactions,
            self.elapsed.as_secs_f64(),
            if self.agents.is_empty() {
                "none found".to_string()
            } else {
                self.agents.iter().map(|(a, n)| format!("{a} {n}")).collect::<Vec<_>>().join(", ")
            }
        )
    }
}

/// What an indexing run did with one transcript file ([`IndexReport::files`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileOutcome {
    /// Read, and its messages stored (new, grown or re-indexed).
    Indexed,
    /// Unchanged since it was indexed: not read again.
    Unchanged,
    /// Its session was forgotten (`convdex forget`): not indexed unless forced.
    Forgotten,
    /// Left out by an exclusion rule (`--exclude`, the config file, another memory tool's
    /// automated sessions).
    Excluded,
    /// Not indexed because it is no conversation of its own (an internal agent, a second copy
    /// of a session): the reason says which.
    LeftOut,
    /// Read, and nothing came of it: no message in it (a warning: the format may not be one
    /// convdex knows).
    Empty,
    /// It could not be read or written: the reason says why; the next run tries again.
    Failed,
    /// A dry run would index it.
    WouldIndex,
}

impl FileOutcome {
    /// `indexed`, `unchanged`, `forgotten`, `excluded`, `left out`, `empty`, `failed`,
    /// `would index`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileOutcome::Indexed => "indexed",
            FileOutcome::Unchanged => "unchanged",
            FileOutcome::Forgotten => "forgotten",
            FileOutcome::Excluded => "excluded",
            FileOutcome::LeftOut => "left out",
            FileOutcome::Empty => "empty",
            FileOutcome::Failed => "failed",
            FileOutcome::WouldIndex => "would index",
        }
    }

    /// Whether the outcome asks for the user's attention (an empty file, a failure).
    pub fn is_warning(self) -> bool {
        matches!(self, FileOutcome::Empty | FileOutcome::Failed)
    }
}

/// One transcript file of an indexing run ([`IndexReport::files`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// The session it belongs to, when it belongs to one.
    pub session: Option<String>,
    /// The agent that wrote it.
    pub agent: Agent,
    /// What became of it.
    pub outcome: FileOutcome,
    /// Messages read from it (for an indexed file).
    pub messages: usize,
    /// Why, for every outcome but indexed and unchanged.
    pub reason: Option<String>,
}

impl IndexReport {
    /// How many files ended with each outcome.
    pub fn file_counts(&self) -> std::collections::BTreeMap<FileOutcome, usize> {
        let mut out = std::collections::BTreeMap::new();
        for f in &self.files {
            *out.entry(f.outcome).or_default() += 1;
        }
        out
    }

    pub(super) fn file(&mut self, path: &Path, s: Option<&SessionFiles>, outcome: FileOutcome, reason: Option<String>) {
        self.files.push(FileReport {
            path: path.to_path_buf(),
            session: s.map(|s| s.id.clone()),
            agent: s.map(|s| s.agent).unwrap_or_default(),
            outcome,
            messages: 0,
            reason,
        });
    }

    pub(super) fn session_files(&mut self, s: &SessionFiles, outcome: FileOutcome, reason: Option<&str>) {
        for (p, _) in s.files() {
            self.file(p, Some(s), outcome, reason.map(str::to_string));
        }
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

/// What became of a session file that was read: indexed when it gave a message; left out when
/// it holds records but no turn of a conversation (the summaries and file snapshots Claude Code
/// keeps beside a session, a Codex rollout that ended before its first prompt); otherwise empty,
/// with why (a warning: it looked like a session and nothing came of it).
pub(super) fn file_outcome(agent: Agent, pf: &ParsedFile) -> (FileOutcome, Option<String>) {
    if !pf.messages.is_empty() {
        return (FileOutcome::Indexed, None);
    }
    let empty = |why: String| (FileOutcome::Empty, Some(why));
    match (pf.records, pf.skipped.len(), pf.turns) {
        (0, 0, _) => empty("no record in it (an empty file)".to_string()),
        (0, n, _) => empty(format!("none of its lines could be read ({n} skipped)")),
        (r, _, 0) if agent != Agent::Gemini && agent != Agent::Aider => (
            FileOutcome::LeftOut,
            Some(format!("{r} records and no turn of a conversation (summaries, snapshots or metadata only)")),
        ),
        (r, _, t) => empty(format!(
            "{r} records, {t} of them turns, none giving a message convdex reads as {agent} (only tool results, interruptions or warm-ups, or a format it does not know)"
        )),
    }
}
