//! Reads never wait on a writer. A collection is one redb file that one process opens at a
//! time, so while an indexing run, a migration or a hook writes, another process could not read
//! what it holds. Instead the writing process answers the data directory's searches itself
//! while it writes ([`Index::while_serving`]): it listens on `writer.sock` in the data
//! directory, marks `writer.lock` with its pid, and answers each search on a thread of its own
//! from the collections it can open, with what is committed so far (redb's snapshots; the graph
//! behind a lock held for one batch; the model's session taken one batch at a time, so a query
//! waits for one batch at most). A reader that finds the mark ([`crate::warm::writer_serves`])
//! asks over that socket instead of opening collections: [`Index::search`],
//! [`Index::search_except`], [`Index::search_sessions`], [`Index::search_warm`] (and so the
//! warm helper) and the prompt hook's recall. The writer answers from every collection it can
//! read and names the others, so nothing is skipped in silence. A warm helper keeps running: it
//! lets go of the collections the writer opens, as it always did. Two writers still wait for
//! each other: the second one writes without serving.

use crate::sync::Locked;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::collection::Collection;
use crate::error::{Error, Result};
use crate::index::across::{Across, ProjectHit};
use crate::index::warm::WARM_ANSWER_WAIT;
use crate::index::{CollectionInfo, Index, Skipped};
use crate::search::Query;
use crate::warm::{self, Answer, PROTOCOL, Request, Scope, WarmStatus};

impl Index {
    /// Runs `work` while this process answers the searches other processes make in this data
    /// directory (see the module documentation), and returns what `work` returns. When it
    /// cannot serve (another writer serves, no Unix sockets) `work` simply runs.
    pub fn while_serving<R>(&self, work: impl FnOnce() -> R) -> R {
        self.serving_holding(HOLD_IDLE, work)
    }

    /// [`Index::while_serving`], letting go of the collections searches opened after `hold`
    /// without a search.
    fn serving_holding<R>(&self, hold: Duration, work: impl FnOnce() -> R) -> R {
        let Some(mut server) = Server::claim(self) else { return work() };
        server.hold = hold;
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| server.run(self, &stop));
            // Set even when `work` panics, so the serving thread ends and the scope can join it.
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
            let _stop = Stop(&stop);
            work()
        })
    }

    /// Asks the writer serving this data directory, if one does, to run a search: `None` when
    /// none serves (or it cannot answer), and the caller searches itself.
    pub(crate) fn ask_writer(&self, scope: Scope, query: &Query) -> Option<Across<Vec<ProjectHit>>> {
        if !warm::writer_serves(self.root()) {
            return None;
        }
        let request = Request::Search {
            protocol: PROTOCOL,
            version: env!("CARGO_PKG_VERSION").into(),
            model: self.shared_model()?,
            scope,
            query: Box::new(query.clone()),
        };
        match warm::call_at(&self.root().join(warm::WRITER_SOCKET), &request, WARM_ANSWER_WAIT)? {
            Answer::Hits(hits) => Some(remote(self.root(), hits, Vec::new())),
            Answer::Partial(hits, skipped) => Some(remote(self.root(), hits, skipped)),
            _ => None,
        }
    }

    /// A search over `scope` in this process.
    pub(crate) fn search_scope(&self, scope: &Scope, query: &Query) -> Result<Across<Vec<ProjectHit>>> {
        match scope {
            Scope::Projects(p) => self.search_here(p.as_deref(), query),
            Scope::Except(p) => self.search_except_here(p, query),
            Scope::Collection(tenant, project) => {
                let c = self.collection(tenant, project)?;
                let hits = c.guarded(|c| c.query(query))?.hits;
                Ok(Across {
                    found: hits.into_iter().map(|hit| ProjectHit { project: project.clone(), hit }).collect(),
                    skipped: Vec::new(),
                })
            }
        }
    }
}

/// The hits a writer sent, with the collections it could not read as [`Skipped`].
pub(crate) fn remote(
    root: &Path,
    hits: Vec<(String, crate::search::Hit)>,
    skipped: Vec<warm::SkippedRemote>,
) -> Across<Vec<ProjectHit>> {
    Across {
        found: hits.into_iter().map(|(project, hit)| ProjectHit { project, hit }).collect(),
        skipped: skipped
            .into_iter()
            .map(|(name, tenant, project, reason)| Skipped {
                info: CollectionInfo { tenant, project, dir: root.join(&name), name, project_path: None },
                error: Error::Remote { reason },
            })
            .collect(),
    }
}

/// The serving side: the claim on the data directory and its socket.
struct Server {
    claim: std::fs::File,
    #[cfg(unix)]
    listener: std::os::unix::net::UnixListener,
    /// Collections kept open between searches (those the writer is not writing close with it),
    /// until no search came for `hold`.
    held: Mutex<Vec<Arc<Collection>>>,
    hold: Duration,
    searches: AtomicU64,
    /// When the last search came, in milliseconds after `started`.
    last_search_ms: AtomicU64,
    started: Instant,
}

/// How long a writer keeps the collections a search opened when no other search comes: a burst
/// of searches (an agent's, a user's) opens them once, and an indexing run that nobody searches
/// holds only the collection it writes (its memory stays bounded by one project).
pub(crate) const HOLD_IDLE: Duration = Duration::from_secs(10);

impl Server {
    #[cfg(not(unix))]
    fn claim(_index: &Index) -> Option<Server> {
        None
    }

    /// Takes the writer's claim and socket of the data directory; `None` when another writer
    /// holds them.
    #[cfg(unix)]
    fn claim(index: &Index) -> Option<Server> {
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        let root = index.root();
        let path = root.join(warm::WRITER_CLAIM);
        let mut claim =
            std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).ok()?;
        claim.try_lock().ok()?;
        claim.set_len(0).ok()?;
        write!(claim, "{} {}", warm::WRITER_MARK, std::process::id()).ok()?;
        let socket = root.join(warm::WRITER_SOCKET);
        // Left by a writer that was killed: this process holds the claim, so none uses it.
        let _ = std::fs::remove_file(&socket);
        let listener = std::os::unix::net::UnixListener::bind(&socket).ok()?;
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).ok()?;
        listener.set_nonblocking(true).ok()?;
        warm::mark_writing(true);
        Some(Server {
            claim,
            listener,
            held: Mutex::new(Vec::new()),
            hold: HOLD_IDLE,
            searches: AtomicU64::new(0),
            last_search_ms: AtomicU64::new(0),
            started: Instant::now(),
        })
    }

    /// Answers until `stop`, each request on a thread of its own; then gives the socket and the
    /// claim back.
    #[cfg(unix)]
    fn run(&self, index: &Index, stop: &AtomicBool) {
        std::thread::scope(|s| {
            while !stop.load(Ordering::SeqCst) {
                match self.listener.accept() {
                    Ok((stream, _)) => {
                        s.spawn(move || self.answer(index, stream));
                    }
                    // Nothing to accept (or a connection that failed): look again shortly.
                    Err(_) => {
                        let gone = self.let_go_when_idle();
                        if !gone.is_empty() {
                            // Closed (flushed) on a thread of their own: the loop keeps accepting.
                            s.spawn(move || drop(gone));
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                }
            }
        });
        self.held.locked().clear();
        let _ = std::fs::remove_file(index.root().join(warm::WRITER_SOCKET));
        let _ = self.claim.set_len(0);
        let _ = self.claim.unlock();
        warm::mark_writing(false);
    }

    #[cfg(not(unix))]
    fn run(&self, _index: &Index, _stop: &AtomicBool) {}

    #[cfg(unix)]
    fn answer(&self, index: &Index, mut stream: std::os::unix::net::UnixStream) {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
        let Ok(request) = warm::read_record::<Request>(&mut stream) else { return };
        let answer = match request {
            Request::Search { protocol, version, model, scope, query } => {
                let mine = index.shared_model().unwrap_or_default();
                if protocol != PROTOCOL || version != env!("CARGO_PKG_VERSION") {
                    Answer::Declined(format!("the indexing process runs convdex {}", env!("CARGO_PKG_VERSION")))
                } else if model != mine {
                    Answer::Declined(format!("the indexing process embeds with {mine}, not {model}"))
                } else {
                    self.searches.fetch_add(1, Ordering::Relaxed);
                    self.searched();
                    self.keep_open(index);
                    let found = index.search_scope(&scope, &query);
                    self.searched();
                    match found {
                        Ok(found) => Answer::Partial(
                            found.found.into_iter().map(|h| (h.project, h.hit)).collect(),
                            found
                                .skipped
                                .into_iter()
                                .map(|s| (s.info.name, s.info.tenant, s.info.project, s.error.chain()))
                                .collect(),
                        ),
                        Err(e) => Answer::Declined(e.chain()),
                    }
                }
            }
            Request::Release => {
                self.held.locked().clear();
                Answer::Released
            }
            Request::Status => Answer::Status(WarmStatus {
                pid: std::process::id(),
                model: index.shared_model().unwrap_or_default(),
                version: env!("CARGO_PKG_VERSION").into(),
                collections: self.held.locked().len(),
                searches: self.searches.load(Ordering::Relaxed),
                idle_seconds: self.idle().as_secs(),
            }),
            Request::Stop => Answer::Declined(
                "an indexing run (or another write) serves this data directory's searches; it stops when the write ends"
                    .into(),
            ),
        };
        let _ = warm::write_record(&mut stream, &answer);
    }

    /// Takes the collections searches opened once no search came for `hold` (a search counts
    /// from its start to its answer), for the caller to close outside the lock, so searches
    /// that come meanwhile do not wait for their flushes.
    fn let_go_when_idle(&self) -> Vec<Arc<Collection>> {
        if self.idle() < self.hold {
            return Vec::new();
        }
        match self.held.try_lock() {
            Ok(mut held) => std::mem::take(&mut *held),
            Err(std::sync::TryLockError::Poisoned(p)) => std::mem::take(&mut *p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => Vec::new(),
        }
    }

    /// Time since the last search started or was answered (since the start, before any).
    fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.last_search_ms.load(Ordering::SeqCst));
        self.started.elapsed().saturating_sub(last)
    }

    /// Marks a search as under way or just answered.
    fn searched(&self) {
        self.last_search_ms.store(self.started.elapsed().as_millis() as u64, Ordering::SeqCst);
    }

    /// Opens, once, every collection another process does not hold, and keeps them open
    /// between searches.
    fn keep_open(&self, index: &Index) {
        let mut held = self.held.locked();
        if held.is_empty()
            && let Ok(opened) = index.open_collections(None)
        {
            *held = opened.collections.into_iter().map(|(_, c)| c).collect();
        }
    }
}

impl Index {
    /// The process writing to this data directory and answering its searches meanwhile (an
    /// indexing run), if one is.
    pub fn writer_pid(&self) -> Option<u32> {
        if !warm::writer_serves(self.root()) {
            return None;
        }
        let text = std::fs::read_to_string(self.root().join(warm::WRITER_CLAIM)).ok()?;
        text.split_whitespace().nth(1)?.parse().ok()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::doc::{Document, Role};
    use crate::embed::HashEmbedder;
    use crate::index::{Index, Options};
    use crate::search::Query;
    use crate::warm::{self, Answer, PROTOCOL, Request, Scope};

    /// A writer answers a search from every project, keeps them open for the next search, and
    /// lets go of them once no search came for its hold time, while it still writes.
    #[test]
    fn a_writer_lets_go_of_what_searches_opened_once_they_stop() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), Options::default().embedder(Arc::new(HashEmbedder::new(32)))).unwrap();
        for project in ["项目", "other", "third"] {
            let docs = [Document::message("s", "m", 0, Role::User, "redis cache eviction")];
            index.collection("local", project).unwrap().add(&docs).unwrap();
        }
        let socket = dir.path().join(warm::WRITER_SOCKET);
        let held = || match warm::call_at(&socket, &Request::Status, Duration::from_secs(5)) {
            Some(Answer::Status(s)) => s.collections,
            other => panic!("no status: {other:?}"),
        };
        index.serving_holding(Duration::from_secs(2), || {
            assert_eq!(held(), 0, "nothing is held before a search");
            let search = Request::Search {
                protocol: PROTOCOL,
                version: env!("CARGO_PKG_VERSION").into(),
                model: String::new(),
                scope: Scope::Projects(None),
                query: Box::new(Query::new("redis cache")),
            };
            let Some(Answer::Partial(hits, skipped)) = warm::call_at(&socket, &search, Duration::from_secs(5)) else {
                panic!("the writer did not answer")
            };
            assert_eq!((hits.len(), skipped.len()), (3, 0), "every project answers");
            assert_eq!(held(), 3, "kept open for the next search");
            std::thread::sleep(Duration::from_secs(5));
            assert_eq!(held(), 0, "let go once searches stopped");
        });
    }
}
