//! # convdex
//!
//! An embedded semantic index of conversations — first of all the Claude Code transcripts under
//! `~/.claude/projects/` — that runs in-process, on the user's machine, with no server and no
//! network.
//!
//! ## Overview of types
//!
//! - [`embed::Embedder`]: text → unit vectors. [`FastEmbedder`] runs all-MiniLM-L6-v2 (int8
//!   ONNX, 384 dims) offline through fastembed; [`HashEmbedder`] is a deterministic stand-in for
//!   fast unit tests.
//! - [`models`]: where the model files live, how they are verified and provisioned.
//! - [`Error`] and [`Result`]: the one error type; messages say how to fix things.
//!
//! ## Example
//!
//! ```no_run
//! use convdex::{Embedder, FastEmbedder};
//!
//! let model = FastEmbedder::new()?; // finds and verifies the provisioned model
//! let v = model.embed(&["which vector store did we choose?", "we went with chromem"])?;
//! assert_eq!(v[0].len(), 384);
//! println!("cosine = {:.3}", convdex::embed::dot(&v[0], &v[1]));
//! # Ok::<(), convdex::Error>(())
//! ```
//!
//! ## Quirks
//!
//! - The model is fixed per collection: a collection built with one model refuses another.
//! - ONNX Runtime is loaded once per process, from the first path used.
#![deny(missing_docs)]
#![doc(test(attr(deny(warnings))))]

mod ann;
mod chunk;
mod collection;
mod doc;
mod docset;
pub mod embed;
pub mod enrich;
mod error;
pub mod extract;
mod index;
mod indexer;
pub mod ingest;
pub mod life;
pub mod models;
pub mod scrub;
mod search;
mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testutil;

pub use ann::{HnswParams, LoadFailure};
pub use collection::{
    AddReport, Collection, CollectionMeta, CollectionOptions, CollectionStats, RebuildReason, SCHEMA_VERSION,
    VectorIndexState,
};
pub use doc::{
    CommitRef, DecisionFields, DecisionStatus, DocBody, DocKind, Document, ExtractionMethod, FileAction, FileRef,
    MessageFields, Role, SummaryFields, now_millis,
};
pub use embed::{EmbedOptions, Embedder, FastEmbedder, HashEmbedder};
pub use error::{Error, Result};
pub use index::{CollectionInfo, Index, Options, collection_name, validate_name};
pub use indexer::{
    Config, ImportReport, IndexOptions, IndexReport, Progress, encode_project_dir, import_conversations, index_paths,
    index_paths_with_progress, normalize_name, read_conversation,
};
pub use search::{Hit, Hits, Plan, PlanPath, SearchBuilder};

/// The README's code blocks, compiled as doctests so the README stays true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
