//! Every redb table of a collection, in one place. Key encodings are documented in
//! `docs/design.md`.

use redb::{MultimapTableDefinition, TableDefinition};

/// Collection metadata: format version, model id and dimension, generation, counters, and
/// the encoded [`crate::CollectionMeta`].
pub(crate) const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");
/// Documents by internal id (codec-encoded [`crate::Document`]).
pub(crate) const DOCS: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("docs");
/// What the ranking reads of each document, by internal id: the fixed-size encoding of
/// [`crate::search::fields::RankFields`], written and removed with the document.
pub(crate) const RANKING: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("ranking");
/// External UUID → internal id.
pub(crate) const UUIDS: TableDefinition<'_, u128, u64> = TableDefinition::new("uuid_to_id");
/// Vectors by data id (`doc << 8 | chunk`), raw little-endian f32.
pub(crate) const VECTORS: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("vectors");
/// Secondary index: document kind code → ids.
pub(crate) const IDX_KIND: MultimapTableDefinition<'_, u8, u64> = MultimapTableDefinition::new("idx_kind");
/// Secondary index: tag → ids.
pub(crate) const IDX_TAG: MultimapTableDefinition<'_, &str, u64> = MultimapTableDefinition::new("idx_tag");
/// Secondary index: domain → ids.
pub(crate) const IDX_DOMAIN: MultimapTableDefinition<'_, &str, u64> = MultimapTableDefinition::new("idx_domain");
/// Secondary index: session id → ids.
pub(crate) const IDX_SESSION: MultimapTableDefinition<'_, &str, u64> = MultimapTableDefinition::new("idx_session");
/// Secondary index: file path → ids (ordered, so a prefix is a range).
pub(crate) const IDX_FILE: MultimapTableDefinition<'_, &str, u64> = MultimapTableDefinition::new("idx_file");
/// Secondary index: timestamp (ms since epoch) → ids (ordered).
pub(crate) const IDX_TIME: MultimapTableDefinition<'_, i64, u64> = MultimapTableDefinition::new("idx_time");
/// Embedding cache: 128-bit hash of (model id, text) → raw little-endian f32.
pub(crate) const EMBED_CACHE: TableDefinition<'_, u128, &[u8]> = TableDefinition::new("embed_cache");
/// A migration to another model ([`crate::Collection::migrate`]): the new model's vectors,
/// keyed like [`VECTORS`], until the last batch swaps them in.
pub(crate) const MIGRATION_VECTORS: TableDefinition<'_, u64, &[u8]> = TableDefinition::new("migration_vectors");
/// A migration's embedding-cache rows for the new model, keyed like [`EMBED_CACHE`].
pub(crate) const MIGRATION_CACHE: TableDefinition<'_, u128, &[u8]> = TableDefinition::new("migration_cache");
/// Documents stored without their vectors yet (indexing stores words first and embeds after):
/// internal id → 0. [`crate::Collection::embed_pending`] empties it.
pub(crate) const PENDING: TableDefinition<'_, u64, u8> = TableDefinition::new("pending_vectors");
/// Per-session ingest state (fingerprints), codec-encoded.
pub(crate) const SESSIONS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("sessions");
/// Forgotten sessions (`convdex forget`): session id → when it was forgotten (ms since epoch).
/// Indexing skips them unless forced.
pub(crate) const FORGOTTEN: TableDefinition<'_, &str, i64> = TableDefinition::new("forgotten");
