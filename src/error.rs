//! The crate's one error type.
//!
//! Every variant says what happened and, where the caller can do something about it, how to
//! fix it. `Display` never repeats the source error: the CLI prints the whole chain once.

use std::path::PathBuf;

/// Everything that can go wrong in convdex.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A model or runtime file is not in any of the searched directories.
    #[error(
        "embedding model file `{file}` not found (searched: {searched}); run `make models` in a \
         convdex checkout or `convdex models fetch`, or set CONVDEX_MODEL_DIR to a directory \
         that holds the files listed in models/manifest.json"
    )]
    ModelMissing {
        /// File name that was looked for.
        file: String,
        /// Directories searched, in order.
        searched: String,
    },
    /// A model file exists but its checksum differs from the manifest.
    #[error(
        "model file {path} is corrupt or of another version (sha256 {actual}, manifest expects \
         {expected}); delete it and run `make models` or `convdex models fetch` again"
    )]
    ModelCorrupt {
        /// The offending file.
        path: PathBuf,
        /// Checksum from the manifest.
        expected: String,
        /// Checksum of the file on disk.
        actual: String,
    },
    /// ONNX Runtime could not be loaded or could not build a session.
    #[error(
        "could not start the embedding runtime from {path}: {reason}; check that the file is the \
         ONNX Runtime 1.24 shared library (run `make models` to re-provision it) or point \
         ORT_DYLIB_PATH at a working libonnxruntime.so"
    )]
    Runtime {
        /// Runtime library path.
        path: PathBuf,
        /// What ONNX Runtime said.
        reason: String,
    },
    /// The embedding model failed on some input.
    #[error("embedding failed: {reason}")]
    Embed {
        /// What the model runtime said.
        reason: String,
    },
    /// A tenant or project name is not a valid collection name part.
    #[error(
        "invalid {what} name `{name}`: {reason}; use letters, digits, `_` and `-`, starting with a \
         letter or digit, at most 64 bytes"
    )]
    InvalidName {
        /// `tenant` or `project`.
        what: &'static str,
        /// The rejected name.
        name: String,
        /// Why it was rejected.
        reason: &'static str,
    },
    /// The collection was built with an embedding model this build cannot load (collections of
    /// a model it knows open with that model and migrate, see [`crate::Collection::migrate`]).
    #[error(
        "collection was built with model `{stored}` ({stored_dim} dims), which this build cannot \
         load, and `{configured}` ({configured_dim} dims) is configured; open it with the embedder \
         it was built with (`Options::embedder`), or rebuild it (`convdex index --force`, or \
         delete the collection directory and index again)"
    )]
    ModelMismatch {
        /// Model id recorded in the collection.
        stored: String,
        /// Dimension recorded in the collection.
        stored_dim: usize,
        /// Model id of the embedder in use.
        configured: String,
        /// Dimension of the embedder in use.
        configured_dim: usize,
    },
    /// A vector has the wrong number of dimensions.
    #[error("vector has {got} dimensions, the collection's model produces {expected}")]
    DimensionMismatch {
        /// Dimension of the collection.
        expected: usize,
        /// Dimension of the vector given.
        got: usize,
    },
    /// The on-disk format is newer (or older) than this build understands.
    #[error(
        "{what} has format version {found}, this build of convdex reads version {supported}; \
         upgrade convdex, or rebuild the collection from its transcripts"
    )]
    FormatVersion {
        /// Which file or record.
        what: &'static str,
        /// Version found on disk.
        found: u32,
        /// Version this build writes and reads.
        supported: u32,
    },
    /// A stored record could not be decoded.
    #[error("stored {what} could not be decoded ({reason}); the collection may be damaged, rebuild it")]
    Codec {
        /// Which record type.
        what: &'static str,
        /// Decoder message.
        reason: String,
    },
    /// Another process holds the collection open for writing.
    #[error(
        "collection {path} is in use by another process (pid {holder}); wait for it to finish \
         (an MCP server or an indexing run) or stop it, then retry"
    )]
    InUse {
        /// Collection directory.
        path: PathBuf,
        /// Pid recorded in the lock file, or `unknown`.
        holder: String,
    },
    /// The query text is empty.
    #[error("the search query is empty; give some words to search for")]
    EmptyQuery,
    /// `limit(0)` was asked for.
    #[error("the search limit is 0; ask for at least one hit (e.g. `.limit(10)`, `--limit 10`)")]
    ZeroLimit,
    /// More hits were asked for than a search returns.
    #[error(
        "the search limit {limit} is over the maximum of {max}; ask for fewer hits (e.g. `.limit(100)`, \
         `--limit 100`) and narrow the search with filters"
    )]
    LimitTooLarge {
        /// The limit asked for.
        limit: usize,
        /// The largest limit accepted.
        max: usize,
    },
    /// The query text is longer than a search reads.
    #[error(
        "the search query is {bytes} bytes, over the maximum of {max}; search for the distinctive part \
         (an error's first line, an identifier, a phrase in quotes)"
    )]
    QueryTooLong {
        /// Length of the query given, in bytes.
        bytes: usize,
        /// The longest query accepted, in bytes.
        max: usize,
    },
    /// The query has more words and identifiers than one lexical search takes.
    #[error(
        "the search query has {terms} distinct words and identifiers, over the {max} one search takes; \
         search for the distinctive part (an error's first lines, an identifier, a phrase in quotes), \
         or search by meaning alone (`--mode semantic`)"
    )]
    TooManyTerms {
        /// Clauses in the query.
        terms: usize,
        /// The most a query may have.
        max: usize,
    },
    /// `since` is after `until`.
    #[error("the time range is inverted: since {since} is after until {until}; swap them")]
    InvertedTimeRange {
        /// Lower bound given (RFC 3339).
        since: String,
        /// Upper bound given (RFC 3339).
        until: String,
    },
    /// A collection's store is damaged (a file changed outside convdex, a disk error) and redb
    /// could not repair it.
    #[error(
        "collection file {path} is damaged ({reason}); the other collections still work. Run \
         `convdex doctor --repair` to rebuild it: documents are salvaged where readable, sessions \
         whose transcripts still exist are indexed again, and what could not be recovered is listed"
    )]
    Damaged {
        /// The damaged file.
        path: PathBuf,
        /// What was found.
        reason: String,
    },
    /// A collection the process answering a search for this one (an indexing run serving
    /// reads) could not read.
    #[error(
        "{reason} (reported by the convdex process that is writing to this data directory and answered the search)"
    )]
    Remote {
        /// What that process found, with its fix.
        reason: String,
    },
    /// The team store (PostgreSQL with pgvector) refused or failed.
    #[error("team store {store}: {reason}; {fix}")]
    Team {
        /// The store's URL, without its password.
        store: String,
        /// What the database said.
        reason: String,
        /// How to fix it.
        fix: String,
    },
    /// Nothing has been indexed in this data directory yet.
    #[error(
        "nothing is indexed in {root} yet; run `convdex index` (or the MCP `index` tool) first, or pass \
         --data-dir naming the directory you indexed into"
    )]
    NothingIndexed {
        /// The data directory.
        root: PathBuf,
    },
    /// No collection of that project.
    #[error("no collection for project `{project}`; `convdex stats` lists the projects")]
    NoSuchProject {
        /// The project asked for (normalised).
        project: String,
    },
    /// No session id starts with the prefix given.
    #[error("no session starts with `{prefix}`; `convdex search` shows session ids")]
    NoSuchSession {
        /// The prefix asked for.
        prefix: String,
    },
    /// Something other than a file stands where a collection keeps its lock file.
    #[error(
        "{path} is not a file (convdex keeps the collection's lock file there); remove it (`rm -r \"{path}\"`) \
         and retry: convdex makes the file again. `doctor --repair` cannot fix this"
    )]
    LockNotAFile {
        /// The lock file's path.
        path: PathBuf,
    },
    /// No readable collection holds the session, and some could not be searched.
    #[error(
        "no readable collection holds a session starting with `{prefix}`, but some could not be searched ({reasons}); \
         retry once they are free (an indexing run or another convdex process holds them) or repaired (`convdex doctor --repair`)"
    )]
    SessionNotSearched {
        /// The prefix asked for.
        prefix: String,
        /// The collections that could not be searched, with why.
        reasons: String,
    },
    /// Every collection asked for was skipped.
    #[error("no collection could be read: {reasons}")]
    NoneReadable {
        /// Why each was skipped.
        reasons: String,
    },
    /// The lexical (full-text) index failed.
    #[error(
        "lexical index error in {path}: {reason}; the index is derived from the store: delete the \
         `lexical` directory and reopen the collection to rebuild it"
    )]
    Lexical {
        /// The index directory.
        path: std::path::PathBuf,
        /// What tantivy reported.
        reason: String,
    },
    /// Some argument is not acceptable; the message says which and why.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Something asked for does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// The storage engine failed.
    #[error("storage error")]
    Storage(#[source] redb::Error),
    /// A file-system operation failed.
    #[error("I/O error on {path}")]
    Io {
        /// The file or directory involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// True when a collection's files, not the request, are at fault (damaged, unreadable,
    /// busy in another process): front ends that read several collections skip that one,
    /// report it, and answer from the others.
    pub fn is_collection_fault(&self) -> bool {
        matches!(
            self,
            Error::Damaged { .. }
                | Error::Storage(_)
                | Error::Lexical { .. }
                | Error::Io { .. }
                | Error::InUse { .. }
                | Error::Codec { .. }
                | Error::FormatVersion { .. }
                | Error::ModelMismatch { .. }
                | Error::Remote { .. }
                | Error::LockNotAFile { .. }
        )
    }

    /// The message with every underlying cause, `: `-separated (what the CLI prints).
    pub fn chain(&self) -> String {
        let mut out = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(s) = source {
            out.push_str(": ");
            out.push_str(&s.to_string());
            source = s.source();
        }
        out
    }

    /// Wraps an I/O error with the path it happened on.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::Storage(e.into())
            }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);
