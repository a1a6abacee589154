//! # convdex
//!
//! An embedded semantic index of conversations — first of all the Claude Code transcripts under
//! `~/.claude/projects/` — that runs in-process, on the user's machine, with no server and no
//! network.
//!
//! ## Overview of types
//!
//! - [`Index`]: a data directory; [`Index::collection`] opens one
//!   `<tenant>_<project>_conversations` [`Collection`] (a redb file, an HNSW graph, a lexical
//!   index). Questions over every project at once ([`Index::search`], [`Index::decisions`],
//!   [`Index::blame`], …) answer from the readable collections and list the skipped ones
//!   ([`Across`]).
//! - [`Document`] with [`DocBody`] `Message` / `Decision` / `Summary`: the data model.
//! - [`Collection::add`] writes a batch in one transaction; [`Collection::search`] returns a
//!   [`SearchBuilder`] whose `run()` gives [`Hits`] with the [`Plan`] used; front ends fill a
//!   [`Query`] (text, [`Filter`], mode, limit).
//! - [`Collection::forget_session`] deletes a session for good (documents, vectors, lexical
//!   entries, cache rows) and leaves a tombstone indexing respects; [`Index::compact`] rewrites
//!   a collection's files so no deleted byte survives; [`Index::repair`] rebuilds a damaged one.
//! - [`index_paths`]: index Claude Code histories (parse, scrub, enrich, extract decisions and
//!   summaries, incremental, one transaction per session); [`import_conversations`]: structured
//!   chats.
//! - [`embed::Embedder`]: text → unit vectors. [`FastEmbedder`] runs multilingual-e5-small
//!   (4-bit weights converted to ONNX, 384 dims; or all-MiniLM-L6-v2 by name) offline;
//!   [`HashEmbedder`] is a deterministic stand-in for unit tests. A collection built with
//!   another model answers with it until [`Index::migrate`] re-embeds it.
//! - Pure modules: [`text`] (paths, [`scrub`] secrets, [`enrich`] tags and domain), [`ingest`]
//!   (parsers), [`derive`](mod@derive) ([`extract`] decisions, [`life`] over time, [`runs`], [`export`]),
//!   [`lexical::tokenize`].
//! - [`models`]: where the model files live, how they are verified and provisioned.
//! - [`Error`] and [`Result`]: the one error type; messages say how to fix things.
//!
//! ## Example
//!
//! ```no_run
//! use convdex::{Embedder, FastEmbedder};
//!
//! let model = FastEmbedder::new()?; // finds and verifies the provisioned default model
//! let stored = model.embed(&["we went with chromem", "我们决定用 chromem"])?;
//! let query = model.embed_query("which vector store did we choose?")?;
//! assert_eq!(query.len(), 384);
//! println!("cosines = {:.3} {:.3}", convdex::embed::dot(&query, &stored[0]), convdex::embed::dot(&query, &stored[1]));
//! # Ok::<(), convdex::Error>(())
//! ```
//!
//! ## Durability
//!
//! After [`Collection::add`] (or a delete) returns, the batch survives a crash; if it fails, none
//! of it exists; indexing writes each session with its ingest state in one transaction. The HNSW
//! graph and the lexical index are derived data: persisted on [`Collection::flush`] and on drop,
//! reconciled with redb on open, rebuilt when missing or damaged. A store changed since
//! convdex last closed it is verified page by page on open; damage is [`Error::Damaged`], never
//! a panic.
//!
//! ## Quirks
//!
//! - A collection holds one model's vectors. Opened with another model configured, it keeps
//!   answering with its own (the query is embedded by that model) until [`Collection::migrate`]
//!   has re-embedded it; a model this build does not know is [`Error::ModelMismatch`].
//! - ONNX Runtime is loaded once per process, from the first path used.
//! - One process per collection (a lock file); a second waits, then gets [`Error::InUse`]. A
//!   warm helper ([`Index::serve_warm`]) holding it is asked to let go instead.
//! - hnsw_rs cannot delete: deleted documents are tombstones until the graph is rebuilt (past
//!   25 % tombstones, automatically).
//! - A collection of up to [`CollectionOptions::exact_threshold`] documents (131,072) is scanned
//!   exactly, and keeps no graph until it holds more than [`CollectionOptions::graph_from`]
//!   vectors (131,072). A larger one reads its graph's links in the background (a few seconds)
//!   when a search first wants to walk them; searches meanwhile use the exact scan.
#![deny(missing_docs)]
#![doc(test(attr(deny(warnings))))]

mod ann;
mod collection;
pub mod derive;
mod doc;
mod durable;
pub mod embed;
mod error;
mod ids;
mod index;
mod indexer;
pub mod ingest;
pub mod lexical;
mod mapped;
pub mod models;
mod search;
pub mod setup;
mod store;
mod sync;
pub mod team;
#[cfg(any(test, feature = "testing"))]
pub mod testutil;
pub mod text;
mod vector;
mod warm;

// Shorter paths to the most used pure modules.
pub use derive::{export, extract, life, runs};
pub use text::{enrich, scrub};

pub use ann::HnswParams;
pub use collection::forget::ForgetReport;
pub use collection::{
    AddReport, Collection, CollectionMeta, CollectionOptions, CollectionStats, EmbedProgress, EmbedReport,
    LexicalIndexState, MigrationProgress, MigrationReport, RebuildReason, SCHEMA_VERSION, SearchBuilder,
    VectorIndexState,
};
pub use doc::{
    CommitRef, DecisionFields, DecisionStatus, DocBody, DocKind, Document, ExtractionMethod, FileAction, FileRef,
    MessageFields, Quote, Role, SummaryFields, now_millis,
};
pub use embed::{EmbedOptions, Embedder, FastEmbedder, HashEmbedder, LazyEmbedder, StaticEmbedder};
pub use error::{Error, Result};
pub use ids::LoadFailure;
pub use index::across::{Across, BlameSession, DecisionFilter, FoundSession, OpenCollection, ProjectHit, SessionAt};
pub use index::compact::CompactReport;
pub use index::ledger::{FollowUp, LedgerEntry, Replacement};
pub use index::migrate::NEWEST_ACROSS;
pub use index::recall::{DEFAULT_RECALL_RELEVANCE, RecallOptions, count_tokens};
pub use index::repair::{RepairReport, SET_ASIDE, SetAside};
pub use index::resume::{Resume, resume_command, shell_quote};
pub use index::sessions::{SESSION_HITS, SESSION_POOL, SessionFound, group_sessions, pool_query};
pub use index::warm::{Answered, WARM_ANSWER_WAIT, WarmExit, WarmOptions};
pub use index::{CollectionInfo, GLOSSARY_FILE, Index, Opened, Options, Skipped, collection_name, validate_name};
pub use indexer::import::{
    ImportReport, conversations_without_answering, import_conversations, read_conversation, refresh_answering,
    refresh_answering_all,
};
pub use indexer::remember::{MANUAL_SESSION, MAX_REMEMBER_BYTES, Remember, RememberIn, Remembered, remember};
pub use indexer::runs::{SessionRuns, runs_in};
pub use indexer::{
    Config, Failure, FileOutcome, FileReport, IndexOptions, IndexReport, Progress, default_paths, default_tenant,
    index_paths, index_paths_with_progress,
};
pub use ingest::layout::{Agent, default_history, default_sources, encode_project_dir};
pub use lexical::{Glossary, GlossarySkip};
pub use search::{
    Context, DEFAULT_ANSWER, DEFAULT_BACKGROUND_PRIOR, DEFAULT_CLOSING, DEFAULT_DECISION_LIFT, DEFAULT_GLOSS,
    DEFAULT_LEADERS, DEFAULT_QUESTION, DEFAULT_TRANSLATION, Filter, Fusion, Hit, Hits, MAX_LIMIT, MAX_QUERY_BYTES,
    POOL_DEPTH, Plan, PlanPath, Query, Ranking, Recency, SearchMode, Signals, answer_among, asks_about_a_decision,
};
pub use text::normalize_name;
pub use warm::WarmStatus;

/// The README's code blocks, compiled as doctests so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
