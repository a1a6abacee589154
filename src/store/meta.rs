//! Collection metadata in the `meta` table: layout version, model id and dimension, the store
//! generation (bumped by every committed write), the next internal document id, and the
//! [`CollectionMeta`] record.

use redb::{Database, ReadableDatabase, ReadableTable, WriteTransaction};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::codec;
use crate::store::tables::META;

/// Version of the collection layout (tables, key encodings). Stored in `meta`.
pub const SCHEMA_VERSION: u32 = 1;

/// Collection metadata (seed `ConversationIndexMetadata`), kept true by the writers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CollectionMeta {
    /// Tenant name.
    pub tenant: String,
    /// Project name.
    pub project: String,
    /// Project path on disk, when known.
    pub project_path: Option<String>,
    /// Last successful indexing run (ms since epoch).
    pub last_indexed_at_ms: Option<i64>,
}

pub(crate) const META_SCHEMA: &str = "schema_version";
pub(crate) const META_MODEL: &str = "model_id";
pub(crate) const META_DIM: &str = "dimension";
pub(crate) const META_GENERATION: &str = "generation";
pub(crate) const META_NEXT_ID: &str = "next_doc_id";
pub(crate) const META_COLLECTION: &str = "collection";
/// The store's own id (16 random bytes), also kept beside it in [`STORE_ID_FILE`]: a store that
/// is not the collection's own (another collection's file copied over it) is damage.
pub(crate) const META_STORE_ID: &str = "store_id";
/// The file beside a collection's store that says the store exists and which one it is: with
/// it, a missing, empty or foreign `data.redb` is damage, never a fresh empty collection.
pub const STORE_ID_FILE: &str = "store.id";
/// Present once every imported conversation was found, or made, to carry the turn each turn
/// answers (`indexer::import::refresh_answering`); older versions ignore it.
const META_IMPORTS_ANSWERING: &str = "imports_answering";

/// The Chinese, Japanese and Korean a collection's messages were last found written in, with
/// the number of messages then: the count (u64 LE), then a byte (0 or 1) per language, English
/// first. Kept by the indexer so that a new process does not sample the messages again; older
/// versions ignore it.
const META_LANGUAGES: &str = "languages";

/// What [`write_languages`] recorded: the message count then, and the languages.
pub(crate) fn read_languages(t: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Option<(u64, [bool; 4])>> {
    let Some(v) = t.get(META_LANGUAGES)? else { return Ok(None) };
    let v = v.value();
    let (Some(count), Some(flags)) = (v.get(..8), v.get(8..12)) else { return Ok(None) };
    let count = u64::from_le_bytes(count.try_into().expect("8 bytes"));
    Ok(Some((count, [flags[0] == 1, flags[1] == 1, flags[2] == 1, flags[3] == 1])))
}

/// Records, in `tx`, the languages of a collection of `count` messages.
pub(crate) fn write_languages(tx: &WriteTransaction, count: u64, held: [bool; 4]) -> Result<()> {
    let mut v = count.to_le_bytes().to_vec();
    v.extend(held.map(u8::from));
    tx.open_table(META)?.insert(META_LANGUAGES, v.as_slice())?;
    Ok(())
}

/// The collection metadata stored in `db`.
pub(crate) fn read_meta(db: &impl ReadableDatabase) -> Result<CollectionMeta> {
    let tx = db.begin_read()?;
    let t = tx.open_table(META)?;
    match t.get(META_COLLECTION)? {
        Some(v) => codec::decode("collection metadata", v.value()),
        None => Ok(CollectionMeta::default()),
    }
}

pub(crate) fn get_u64(t: &impl ReadableTable<&'static str, &'static [u8]>, key: &str) -> Result<Option<u64>> {
    Ok(t.get(key)?.and_then(|v| v.value().try_into().ok().map(u64::from_le_bytes)))
}

/// Whether [`mark_imports_answering`] was committed in this store.
pub(crate) fn imports_answering(db: &impl ReadableDatabase) -> Result<bool> {
    let tx = db.begin_read()?;
    Ok(tx.open_table(META)?.get(META_IMPORTS_ANSWERING)?.is_some())
}

/// Records, in `tx`, that every imported conversation carries the turn each turn answers.
pub(crate) fn mark_imports_answering(tx: &WriteTransaction) -> Result<()> {
    tx.open_table(META)?.insert(META_IMPORTS_ANSWERING, [1u8].as_slice())?;
    Ok(())
}

pub(crate) fn read_generation(db: &impl ReadableDatabase) -> Result<u64> {
    let tx = db.begin_read()?;
    Ok(get_u64(&tx.open_table(META)?, META_GENERATION)?.unwrap_or(0))
}

/// The model id and dimension a store's metadata records, after checking its layout version;
/// `None` when the metadata is not initialised yet.
fn recorded(t: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Option<(String, usize)>> {
    let Some(bytes) = t.get(META_SCHEMA)?.map(|v| v.value().to_vec()) else { return Ok(None) };
    let found = bytes.as_slice().try_into().map(u32::from_le_bytes).unwrap_or(u32::MAX);
    if found != SCHEMA_VERSION {
        return Err(Error::FormatVersion { what: "collection", found, supported: SCHEMA_VERSION });
    }
    let stored = t.get(META_MODEL)?.map(|v| String::from_utf8_lossy(v.value()).into_owned()).unwrap_or_default();
    Ok(Some((stored, get_u64(t, META_DIM)?.unwrap_or(0) as usize)))
}

/// Initialises a new store's metadata (recording `model_id` and `dim`), or checks an existing
/// one's layout version. Returns the model id and dimension the store records. An initialised
/// store is only read (no write transaction: a read-only session leaves the file unchanged).
pub(crate) fn check_or_init_meta(
    db: &Database,
    model_id: &str,
    dim: usize,
    meta: &CollectionMeta,
) -> Result<(String, usize)> {
    if let Some(found) = recorded(&db.begin_read()?.open_table(META)?)? {
        return Ok(found);
    }
    let tx = db.begin_write()?;
    let stored = {
        let mut t = tx.open_table(META)?;
        match recorded(&t)? {
            Some(found) => found,
            None => {
                t.insert(META_SCHEMA, SCHEMA_VERSION.to_le_bytes().as_slice())?;
                t.insert(META_MODEL, model_id.as_bytes())?;
                t.insert(META_DIM, (dim as u64).to_le_bytes().as_slice())?;
                t.insert(META_GENERATION, 0u64.to_le_bytes().as_slice())?;
                t.insert(META_NEXT_ID, 1u64.to_le_bytes().as_slice())?;
                t.insert(META_COLLECTION, codec::encode(meta).as_slice())?;
                (model_id.to_string(), dim)
            }
        }
    };
    tx.commit()?;
    Ok(stored)
}

/// A collection's move to another model, kept in `meta` while it lasts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MigrationState {
    /// The model being moved to.
    pub(crate) to_model: String,
    /// Its dimension.
    pub(crate) to_dim: u64,
    /// Documents with a smaller internal id have their new vectors in `migration_vectors`.
    pub(crate) next_doc: u64,
}

pub(crate) const META_MIGRATION: &str = "migration";

/// The migration in progress, if any.
pub(crate) fn migration(db: &impl ReadableDatabase) -> Result<Option<MigrationState>> {
    let tx = db.begin_read()?;
    let t = tx.open_table(META)?;
    match t.get(META_MIGRATION)? {
        Some(v) => Ok(Some(codec::decode("migration state", v.value())?)),
        None => Ok(None),
    }
}

/// The migration in progress, read in a write transaction.
pub(crate) fn migration_in(tx: &WriteTransaction) -> Result<Option<MigrationState>> {
    let t = tx.open_table(META)?;
    match t.get(META_MIGRATION)? {
        Some(v) => Ok(Some(codec::decode("migration state", v.value())?)),
        None => Ok(None),
    }
}

/// Records (or, with `None`, ends) the migration in `tx`.
pub(crate) fn set_migration(tx: &WriteTransaction, state: Option<&MigrationState>) -> Result<()> {
    let mut t = tx.open_table(META)?;
    match state {
        Some(s) => t.insert(META_MIGRATION, codec::encode(s).as_slice())?,
        None => t.remove(META_MIGRATION)?,
    };
    Ok(())
}

/// Records the model whose vectors the store holds, in `tx`.
pub(crate) fn set_model(tx: &WriteTransaction, model_id: &str, dim: usize) -> Result<()> {
    let mut t = tx.open_table(META)?;
    t.insert(META_MODEL, model_id.as_bytes())?;
    t.insert(META_DIM, (dim as u64).to_le_bytes().as_slice())?;
    Ok(())
}

/// Writes the metadata record in `tx`.
pub(crate) fn update_meta_in(tx: &WriteTransaction, f: impl FnOnce(&mut CollectionMeta)) -> Result<()> {
    let mut t = tx.open_table(META)?;
    let mut meta: CollectionMeta = match t.get(META_COLLECTION)? {
        Some(v) => codec::decode("collection metadata", v.value())?,
        None => CollectionMeta::default(),
    };
    f(&mut meta);
    t.insert(META_COLLECTION, codec::encode(&meta).as_slice())?;
    Ok(())
}

/// Increments the store generation in `tx` and returns the new one.
pub(crate) fn bump_generation(tx: &WriteTransaction) -> Result<u64> {
    let mut t = tx.open_table(META)?;
    let generation = get_u64(&t, META_GENERATION)?.unwrap_or(0) + 1;
    t.insert(META_GENERATION, generation.to_le_bytes().as_slice())?;
    Ok(generation)
}

/// Hands out `n` fresh internal document ids in `tx` (never reused); returns the first.
pub(crate) fn take_ids(tx: &WriteTransaction, n: u64) -> Result<u64> {
    let mut t = tx.open_table(META)?;
    let first = get_u64(&t, META_NEXT_ID)?.unwrap_or(1);
    t.insert(META_NEXT_ID, (first + n).to_le_bytes().as_slice())?;
    Ok(first)
}

/// The model id recorded in the collection.
pub(crate) fn model_id(db: &impl ReadableDatabase) -> Result<String> {
    let tx = db.begin_read()?;
    let t = tx.open_table(META)?;
    Ok(t.get(META_MODEL)?.map(|v| String::from_utf8_lossy(v.value()).into_owned()).unwrap_or_default())
}

/// The id of the store in `db`, giving it one (in its own transaction) when it has none yet
/// (created by an earlier version).
pub(crate) fn store_id(db: &Database) -> Result<String> {
    {
        let tx = db.begin_read()?;
        if let Some(v) = tx.open_table(META)?.get(META_STORE_ID)? {
            return Ok(String::from_utf8_lossy(v.value()).into_owned());
        }
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let tx = db.begin_write()?;
    tx.open_table(META)?.insert(META_STORE_ID, id.as_bytes())?;
    tx.commit()?;
    Ok(id)
}
