//! The warm helper's wire (an adapter): a Unix socket in the data directory, one request and
//! one answer per connection, each a length-prefixed bincode record.
//! [`crate::Index::serve_warm`] answers, [`crate::Index::search_warm`] asks, and a process that
//! finds a collection held by the helper asks it to let go ([`ask_release`]) instead of waiting.
//! Without Unix sockets (Windows) nothing here connects: every search runs in its own process.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::search::{Hit, Query};

/// The socket's file name in the data directory.
pub(crate) const SOCKET: &str = "warm.sock";
/// The file whose lock the serving helper holds: one helper per data directory.
pub(crate) const CLAIM: &str = "warm.lock";
/// Changes whenever a request or an answer changes shape.
pub(crate) const PROTOCOL: u32 = 3;
/// The socket of a process that answers searches while it writes ([`crate::Index::while_serving`]).
pub(crate) const WRITER_SOCKET: &str = "writer.sock";
/// The file whose lock that process holds, holding [`WRITER_MARK`] and its pid while it serves.
pub(crate) const WRITER_CLAIM: &str = "writer.lock";
/// What a writer serving reads writes into [`WRITER_CLAIM`] (emptied when it stops).
pub(crate) const WRITER_MARK: &str = "writer";
/// The largest record either side reads.
const MAX_RECORD: usize = 256 << 20;
/// What the helper appends to its process id in a collection's lock file.
const HOLDER_MARK: &str = " (convdex warm)";
/// What a process answering searches while it writes appends (it lets go of the collections
/// it holds only to read when asked).
const WRITER_HOLDER_MARK: &str = " (convdex writer)";

/// Set by the serving helper: its collection locks say so ([`holder_label`]).
static SERVING: AtomicBool = AtomicBool::new(false);
/// Set while this process answers searches as it writes: it never asks itself.
static WRITING: AtomicBool = AtomicBool::new(false);

/// A request to the helper.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Request {
    /// Search as [`crate::Index::search`] would.
    Search {
        /// [`PROTOCOL`] of the asker.
        protocol: u32,
        /// The asker's crate version.
        version: String,
        /// The model id the asker would embed the query with.
        model: String,
        /// Which collections.
        scope: Scope,
        /// The query.
        query: Box<Query>,
    },
    /// Close every collection now (another process needs one).
    Release,
    /// What the helper holds.
    Status,
    /// Close everything and exit.
    Stop,
}

/// The collections a search asks ([`Request::Search`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Scope {
    /// Every project's, or one project's ([`crate::Index::search`]).
    Projects(Option<String>),
    /// Every project's but this one's ([`crate::Index::search_except`]).
    Except(String),
    /// One collection, by tenant and project.
    Collection(String, String),
}

/// A collection a serving writer could not read for a search: its name, tenant, project and why.
pub(crate) type SkippedRemote = (String, String, String, String);

/// The helper's answer.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) enum Answer {
    /// The hits, with their projects.
    Hits(Vec<(String, Hit)>),
    /// A writer's answer: the hits of every collection it could read, and the ones it could
    /// not, with why.
    Partial(Vec<(String, Hit)>, Vec<SkippedRemote>),
    /// Not answered here (another model or version, a collection skipped): search in process.
    Declined(String),
    /// Every collection is closed.
    Released,
    /// What the helper holds.
    Status(WarmStatus),
    /// Closing and exiting.
    Stopping,
}

/// What a running warm helper holds ([`crate::Index::warm_status`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmStatus {
    /// Its process id.
    pub pid: u32,
    /// The model it embeds queries with.
    pub model: String,
    /// Its crate version.
    pub version: String,
    /// Collections it keeps open.
    pub collections: usize,
    /// Searches it has answered.
    pub searches: u64,
    /// Seconds since its last request.
    pub idle_seconds: u64,
}

/// The socket of the helper serving `root`.
pub(crate) fn socket_path(root: &Path) -> PathBuf {
    root.join(SOCKET)
}

/// Marks this process as the serving helper.
pub(crate) fn mark_serving() {
    SERVING.store(true, Ordering::SeqCst);
}

/// Marks this process as answering searches while it writes (`true`), or no longer (`false`).
pub(crate) fn mark_writing(on: bool) {
    WRITING.store(on, Ordering::SeqCst);
}

/// Whether another process answers the searches of `root` while it writes (its mark is in
/// [`WRITER_CLAIM`]): a reader then asks it rather than wait for the collections it writes.
/// Reads one small file.
pub(crate) fn writer_serves(root: &Path) -> bool {
    !WRITING.load(Ordering::SeqCst)
        && std::fs::read_to_string(root.join(WRITER_CLAIM)).is_ok_and(|t| t.trim_start().starts_with(WRITER_MARK))
        && root.join(WRITER_SOCKET).exists()
}

/// What this process writes into a collection's lock file: its id, marked when it is the helper.
pub(crate) fn holder_label() -> String {
    let pid = std::process::id();
    if SERVING.load(Ordering::SeqCst) {
        format!("{pid}{HOLDER_MARK}")
    } else if WRITING.load(Ordering::SeqCst) {
        format!("{pid}{WRITER_HOLDER_MARK}")
    } else {
        pid.to_string()
    }
}

/// Whether a lock file's holder is a warm helper, or a writer serving searches, other than
/// this process: it may let go of a collection it holds only to read.
pub(crate) fn held_by_helper(holder: &str) -> bool {
    (holder.ends_with(HOLDER_MARK) && !SERVING.load(Ordering::SeqCst))
        || (holder.ends_with(WRITER_HOLDER_MARK) && !WRITING.load(Ordering::SeqCst))
}

/// Writes one record: its length (u32, little-endian), then its bincode body.
pub(crate) fn write_record(w: &mut impl std::io::Write, value: &impl Serialize) -> std::io::Result<()> {
    let body = bincode::serde::encode_to_vec(value, bincode::config::standard()).map_err(std::io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(&body)?;
    w.flush()
}

/// Reads one record written by [`write_record`].
pub(crate) fn read_record<T: serde::de::DeserializeOwned>(r: &mut impl std::io::Read) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > MAX_RECORD {
        return Err(std::io::Error::other(format!("a record of {len} bytes is over the {MAX_RECORD} limit")));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    let (value, _) =
        bincode::serde::decode_from_slice(&body, bincode::config::standard()).map_err(std::io::Error::other)?;
    Ok(value)
}

/// Sends `request` to the helper serving `root` and reads its answer, waiting at most
/// `timeout` for it. `None` when no helper answers (none running, a stale socket, a timeout,
/// no Unix sockets on this platform).
pub(crate) fn call(root: &Path, request: &Request, timeout: Duration) -> Option<Answer> {
    call_at(&socket_path(root), request, timeout)
}

/// [`call`] on the socket at `socket`.
pub(crate) fn call_at(socket: &Path, request: &Request, timeout: Duration) -> Option<Answer> {
    #[cfg(unix)]
    {
        let mut stream = std::os::unix::net::UnixStream::connect(socket).ok()?;
        stream.set_read_timeout(Some(timeout)).ok()?;
        stream.set_write_timeout(Some(timeout)).ok()?;
        write_record(&mut stream, request).ok()?;
        read_record(&mut stream).ok()
    }
    #[cfg(not(unix))]
    {
        let _ = (socket, request, timeout);
        None
    }
}

/// Asks the helper serving `root`, and a writer serving its searches, to close the collections
/// they hold to read; true once one has.
pub(crate) fn ask_release(root: &Path) -> bool {
    let released =
        |socket: &Path| matches!(call_at(socket, &Request::Release, Duration::from_secs(3)), Some(Answer::Released));
    let helper = released(&socket_path(root));
    released(&root.join(WRITER_SOCKET)) || helper
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_oversized_lengths_are_refused() {
        let mut buf = Vec::new();
        let q = Query::new("索引 パス C:\\Users\\张伟\\src");
        write_record(
            &mut buf,
            &Request::Search {
                protocol: PROTOCOL,
                version: "x".into(),
                model: "m".into(),
                scope: Scope::Projects(Some("项目".into())),
                query: Box::new(q.clone()),
            },
        )
        .unwrap();
        match read_record::<Request>(&mut buf.as_slice()).unwrap() {
            Request::Search { query, scope, .. } => {
                assert_eq!(*query, q);
                assert_eq!(scope, Scope::Projects(Some("项目".into())));
            }
            other => panic!("read back {other:?}"),
        }
        let huge = (MAX_RECORD as u32 + 1).to_le_bytes();
        assert!(read_record::<Request>(&mut huge.as_slice()).is_err());
        // A record cut short is an error, not a panic.
        assert!(read_record::<Request>(&mut buf.get(..buf.len() - 1).unwrap()).is_err());
        assert!(
            read_record::<Request>(&mut [7u8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff].as_slice()).is_err()
        );
    }

    #[test]
    fn only_another_process_marked_as_helper_is_asked_to_let_go() {
        assert!(!held_by_helper("1234"));
        assert!(held_by_helper(&format!("1234{HOLDER_MARK}")));
        assert_eq!(holder_label(), std::process::id().to_string());
    }

    #[test]
    fn no_helper_means_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        assert!(call(dir.path(), &Request::Status, Duration::from_millis(100)).is_none());
        assert!(!ask_release(dir.path()));
    }
}
