//! The warm helper: one process per data directory that keeps the model and the collections
//! loaded between searches ([`Index::serve_warm`]), so that a search from a new process (the
//! CLI, a hook) costs a socket round trip instead of loading a model and every project's
//! vectors ([`Index::search_warm`]). It lets go of its collections whenever another process
//! needs one (the lock asks it, see [`crate::warm`]), answers only questions it would answer
//! exactly as the asking process would (same model, same version, no collection skipped),
//! and exits when idle, when stopped, when its data directory or its socket disappears, or
//! when its executable is replaced.

use crate::sync::Locked;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::collection::Collection;
use crate::error::{Error, Result};
use crate::index::Index;
use crate::index::across::{Across, ProjectHit};
use crate::search::Query;
use crate::warm::{self, Answer, PROTOCOL, Request, Scope, WarmStatus};

/// How long [`Index::search_warm`] waits for the helper's answer before searching in process.
/// Default: 5 s (a helper that has just started may still be loading the model).
pub const WARM_ANSWER_WAIT: Duration = Duration::from_secs(5);

/// Options of the warm helper ([`Index::serve_warm`]).
#[derive(Debug, Clone)]
pub struct WarmOptions {
    /// Exit after this long without a request, counted from the end of the preload (a slow
    /// model load does not use it up). Default: 10 minutes.
    pub idle: Duration,
    /// Load the model and open every collection before the first request. Default: true.
    pub preload: bool,
}

impl Default for WarmOptions {
    fn default() -> Self {
        WarmOptions { idle: Duration::from_secs(600), preload: true }
    }
}

/// Who answered [`Index::search_warm`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answered {
    /// The warm helper.
    Warm,
    /// This process: no helper runs (or this platform has no Unix sockets), or it declined
    /// (the reason).
    InProcess(Option<String>),
    /// The process writing to this data directory (an indexing run), which serves its
    /// searches meanwhile ([`Index::while_serving`]); collections it could not read are in
    /// [`Across::skipped`].
    Writer,
}

/// Why [`Index::serve_warm`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarmExit {
    /// Another helper already serves this data directory.
    AlreadyServed,
    /// No request for [`WarmOptions::idle`].
    Idle,
    /// Asked to stop ([`Index::stop_warm`]).
    Stopped,
    /// The data directory or the socket was removed, or the executable was replaced.
    Gone,
}

/// The state the serving loop and its watchdog share.
struct Shared {
    /// Collections kept open between requests.
    held: Mutex<Vec<Arc<Collection>>>,
    /// The last request's end (or the end of the preload, when it finished later).
    last: Mutex<Instant>,
    /// Set once the preload is done: the idle clock does not run while the model loads.
    ready: AtomicBool,
    searches: AtomicU64,
    exit: Mutex<Option<WarmExit>>,
    stopping: AtomicBool,
}

impl Index {
    /// The model id this index would embed a query with, when it uses a model of the manifest
    /// (`None` with a custom [`crate::Options::embedder`], which a helper cannot share).
    pub(crate) fn shared_model(&self) -> Option<String> {
        if self.options().embedder.is_some() {
            return None;
        }
        self.options().embed.spec().ok().map(|s| s.id.clone())
    }

    /// Searches like [`Index::search`], asking the warm helper of this data directory first.
    /// Without one (or when it declines) the search runs in this process. The helper answers
    /// only when it embeds with the same model and runs the same version, and only when it
    /// could read every collection: otherwise this process searches, and reports what it
    /// skipped itself.
    pub fn search_warm(&self, project: Option<&str>, query: &Query) -> Result<(Across<Vec<ProjectHit>>, Answered)> {
        query.validate()?;
        // While another process writes, it answers (the helper would ask it too).
        if let Some(found) = self.ask_writer(Scope::Projects(project.map(str::to_string)), query) {
            return Ok((found, Answered::Writer));
        }
        let mut declined = None;
        if let Some(model) = self.shared_model() {
            let request = Request::Search {
                protocol: PROTOCOL,
                version: env!("CARGO_PKG_VERSION").into(),
                model,
                scope: Scope::Projects(project.map(str::to_string)),
                query: Box::new(query.clone()),
            };
            match warm::call(self.root(), &request, WARM_ANSWER_WAIT) {
                Some(Answer::Hits(hits)) => {
                    let found = hits.into_iter().map(|(project, hit)| ProjectHit { project, hit }).collect();
                    return Ok((Across { found, skipped: Vec::new() }, Answered::Warm));
                }
                Some(Answer::Declined(why)) => declined = Some(why),
                _ => {}
            }
        }
        Ok((self.search(project, query)?, Answered::InProcess(declined)))
    }

    /// What the warm helper of this data directory holds; `None` when none answers.
    pub fn warm_status(&self) -> Option<WarmStatus> {
        match warm::call(self.root(), &Request::Status, Duration::from_secs(3)) {
            Some(Answer::Status(s)) => Some(s),
            _ => None,
        }
    }

    /// Asks the warm helper of this data directory to close everything and exit; true when one
    /// was running. Returns once it has let go of its claim on the directory (up to 30 s: a
    /// helper holding gigabytes takes a moment to free them), so that a helper started right
    /// after is not turned away as a second one.
    pub fn stop_warm(&self) -> bool {
        if !matches!(warm::call(self.root(), &Request::Stop, Duration::from_secs(10)), Some(Answer::Stopping)) {
            return false;
        }
        let claim = std::fs::OpenOptions::new().write(true).open(self.root().join(warm::CLAIM));
        if let Ok(claim) = claim {
            let t = std::time::Instant::now();
            while matches!(claim.try_lock(), Err(std::fs::TryLockError::WouldBlock))
                && t.elapsed() < Duration::from_secs(30)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        true
    }

    /// Serves searches of this data directory to other processes over a Unix socket
    /// (`warm.sock` in the data directory, readable by its owner only) until idle
    /// ([`WarmOptions::idle`]), stopped, or its directory, socket or executable goes away.
    /// Returns at once with [`WarmExit::AlreadyServed`] when another helper serves it. Open
    /// this index with a short [`crate::CollectionOptions::lock_wait`]: a collection another
    /// process holds makes the helper decline the search rather than wait.
    ///
    /// When the socket file was removed the accepting thread cannot be woken: it is left
    /// blocked, holding no collection, until the process exits (`convdex warm` exits right
    /// after).
    pub fn serve_warm(self, options: &WarmOptions) -> Result<WarmExit> {
        serve(self, options)
    }
}

#[cfg(not(unix))]
fn serve(_index: Index, _options: &WarmOptions) -> Result<WarmExit> {
    Err(Error::InvalidArgument(
        "the warm helper needs Unix sockets, which this platform lacks; searches run in their own process".into(),
    ))
}

#[cfg(unix)]
fn serve(index: Index, options: &WarmOptions) -> Result<WarmExit> {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixListener;

    let root = index.root().to_path_buf();
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    let claim_path = root.join(warm::CLAIM);
    let claim = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&claim_path)
        .map_err(|e| Error::io(&claim_path, e))?;
    match claim.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(WarmExit::AlreadyServed),
        Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&claim_path, e)),
    }
    warm::mark_serving();
    let socket = warm::socket_path(&root);
    // Left by a helper that was killed: this process holds the claim, so no helper uses it.
    let _ = std::fs::remove_file(&socket);
    let listener = UnixListener::bind(&socket).map_err(|e| Error::io(&socket, e))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).map_err(|e| Error::io(&socket, e))?;
    let shared = Arc::new(Shared {
        held: Mutex::new(Vec::new()),
        last: Mutex::new(Instant::now()),
        ready: AtomicBool::new(false),
        searches: AtomicU64::new(0),
        exit: Mutex::new(None),
        stopping: AtomicBool::new(false),
    });
    let accept = {
        let (shared, options) = (shared.clone(), options.clone());
        std::thread::spawn(move || accept_loop(&index, &listener, &shared, &options))
    };
    let exit = watchdog(&root, &socket, &shared, options);
    // Wake the accepting thread (its next connection sees `stopping`) and wait for it; when
    // the socket is gone it cannot be woken and is left blocked.
    if !accept.is_finished() && std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        let _ = accept.join();
    }
    let _ = std::fs::remove_file(&socket);
    drop(claim);
    Ok(exit)
}

/// Decides when to stop; once it has, closes the collections under the `held` lock (so no
/// request is halfway) and returns.
#[cfg(unix)]
fn watchdog(root: &Path, socket: &Path, shared: &Shared, options: &WarmOptions) -> WarmExit {
    use std::os::unix::fs::MetadataExt;
    let inode = |p: &Path| std::fs::metadata(p).map(|m| m.ino()).ok();
    let socket_inode = inode(socket);
    let exe = std::env::current_exe().ok();
    let modified = |p: &Option<PathBuf>| p.as_ref().and_then(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok());
    let exe_modified: Option<SystemTime> = modified(&exe);
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let asked = *shared.exit.locked();
        let gone = !root.is_dir() || inode(socket) != socket_inode || modified(&exe) != exe_modified;
        let idle = shared.ready.load(Ordering::SeqCst) && shared.last.locked().elapsed() >= options.idle;
        let exit = asked.or(gone.then_some(WarmExit::Gone)).or(idle.then_some(WarmExit::Idle));
        if let Some(exit) = exit {
            let mut held = shared.held.locked();
            shared.stopping.store(true, Ordering::SeqCst);
            held.clear();
            return exit;
        }
    }
}

/// Accepts connections one at a time; each request runs under the `held` lock.
#[cfg(unix)]
fn accept_loop(index: &Index, listener: &std::os::unix::net::UnixListener, shared: &Shared, options: &WarmOptions) {
    if options.preload {
        let mut held = shared.held.locked();
        if let Ok(embedder) = index.embedder() {
            let _ = embedder.embed_query("warm");
        }
        refill(index, &mut held);
    }
    *shared.last.locked() = Instant::now();
    shared.ready.store(true, Ordering::SeqCst);
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let mut held = shared.held.locked();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
        let Ok(request) = warm::read_record::<Request>(&mut stream) else { continue };
        let (answer, after) = answer(index, request, shared, &mut held);
        let _ = warm::write_record(&mut stream, &answer);
        drop(stream);
        *shared.last.locked() = Instant::now();
        match after {
            After::Refill => refill(index, &mut held),
            After::Nothing => {}
            After::Stop => {
                held.clear();
                *shared.exit.locked() = Some(WarmExit::Stopped);
                // New callers find no helper at once instead of waiting for an answer.
                let _ = std::fs::remove_file(warm::socket_path(index.root()));
                return;
            }
        }
    }
}

/// What the helper does once it has answered.
enum After {
    /// Keeps every collection open for the next search.
    Refill,
    Nothing,
    Stop,
}

fn answer(index: &Index, request: Request, shared: &Shared, held: &mut Vec<Arc<Collection>>) -> (Answer, After) {
    match request {
        Request::Search { protocol, version, model, scope, query } => {
            let mine = index.shared_model().unwrap_or_default();
            if protocol != PROTOCOL || version != env!("CARGO_PKG_VERSION") {
                return (
                    Answer::Declined(format!("the warm helper runs convdex {}", env!("CARGO_PKG_VERSION"))),
                    After::Stop,
                );
            }
            if model != mine {
                return (Answer::Declined(format!("the warm helper embeds with {mine}, not {model}")), After::Nothing);
            }
            shared.searches.fetch_add(1, Ordering::Relaxed);
            match index.search_scope(&scope, &query) {
                Ok(found) if found.skipped.is_empty() => {
                    (Answer::Hits(found.found.into_iter().map(|h| (h.project, h.hit)).collect()), After::Refill)
                }
                Ok(found) => {
                    let why = found.skipped.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ");
                    (Answer::Declined(why), After::Nothing)
                }
                Err(e) => (Answer::Declined(e.chain()), After::Refill),
            }
        }
        Request::Release => {
            held.clear();
            (Answer::Released, After::Nothing)
        }
        Request::Status => {
            let status = WarmStatus {
                pid: std::process::id(),
                model: index.shared_model().unwrap_or_default(),
                version: env!("CARGO_PKG_VERSION").into(),
                collections: held.len(),
                searches: shared.searches.load(Ordering::Relaxed),
                idle_seconds: shared.last.locked().elapsed().as_secs(),
            };
            (Answer::Status(status), After::Nothing)
        }
        Request::Stop => (Answer::Stopping, After::Stop),
    }
}

/// Opens every collection it can and reads their vectors (and the graph links of those a
/// search walks), so the next search finds them ready; a collection another process holds is
/// left to it.
fn refill(index: &Index, held: &mut Vec<Arc<Collection>>) {
    let Ok(opened) = index.open_collections(None) else { return };
    *held = opened.collections.into_iter().map(|(_, c)| c).collect();
    for c in held.iter() {
        c.ready_vectors();
    }
}
