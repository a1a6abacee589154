//! The embedding cache: a vector per (model, embedded text), so re-indexing, repairing and
//! replacing documents never pays the model twice for the same text.

use std::collections::HashMap;

use redb::{ReadableDatabase, WriteTransaction};

use crate::error::Result;
use crate::ids::CacheKey;
use crate::store::codec;
use crate::store::tables::EMBED_CACHE;

/// The cached vectors of `keys` that have dimension `dim`.
pub(crate) fn lookup<'a>(
    db: &impl ReadableDatabase,
    keys: impl IntoIterator<Item = &'a CacheKey>,
    dim: usize,
) -> Result<HashMap<CacheKey, Vec<f32>>> {
    let tx = db.begin_read()?;
    let cache = tx.open_table(EMBED_CACHE)?;
    let mut found = HashMap::new();
    for key in keys {
        if found.contains_key(key) {
            continue;
        }
        if let Some(v) = cache.get(key.0)? {
            let v = codec::vector_from_bytes(v.value())?;
            // A row damaged on disk is a miss: the text is embedded again and the row replaced.
            if v.len() == dim && crate::vector::is_sound(&v) {
                found.insert(*key, v);
            }
        }
    }
    Ok(found)
}

/// Stores a vector (raw little-endian bytes) under `key` in `tx`.
pub(crate) fn put(tx: &WriteTransaction, key: CacheKey, bytes: &[u8]) -> Result<()> {
    tx.open_table(EMBED_CACHE)?.insert(key.0, bytes)?;
    Ok(())
}

/// Removes `key` in `tx`; true when it was there.
pub(crate) fn remove(tx: &WriteTransaction, key: CacheKey) -> Result<bool> {
    Ok(tx.open_table(EMBED_CACHE)?.remove(key.0)?.is_some())
}
