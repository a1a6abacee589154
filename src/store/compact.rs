//! Rewriting a store from its live rows: deleting in redb frees pages but does not overwrite
//! them, so compaction copies every live row into a fresh file that replaces the old one.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableMultimapTable, ReadableTable, ReadableTableMetadata};

use crate::durable::{sync_dir, write_synced};
use crate::error::{Error, Result};
use crate::store::tables::*;

/// Copies every row of the listed tables from `src` to `dst` (same definitions on both sides).
macro_rules! copy_tables {
    ($src:expr, $dst:expr; tables: $($t:expr),*; multimaps: $($m:expr),*) => {{
        $(
            let from = $src.open_table($t)?;
            let mut to = $dst.open_table($t)?;
            for row in from.iter()? {
                let (k, v) = row?;
                to.insert(k.value(), v.value())?;
            }
        )*
        $(
            let from = $src.open_multimap_table($m)?;
            let mut to = $dst.open_multimap_table($m)?;
            for row in from.iter()? {
                let (k, values) = row?;
                for v in values {
                    to.insert(k.value(), v?.value())?;
                }
            }
        )*
    }};
}

/// Rewrites `data.redb` into a fresh file holding only live rows.
/// Rewrites `data.redb` into a fresh file holding only live rows.
pub(crate) fn rewrite_store(dir: &Path) -> Result<()> {
    let path = dir.join("data.redb");
    let fresh = dir.join("data.redb.compact");
    let _ = std::fs::remove_file(&fresh);
    {
        let src = match Database::open(&path) {
            Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                return Err(Error::InUse { path: dir.to_path_buf(), holder: std::process::id().to_string() });
            }
            other => other?,
        };
        let dst = Database::builder().create(&fresh)?;
        crate::store::create_tables(&src)?;
        let r = src.begin_read()?;
        let w = dst.begin_write()?;
        {
            copy_tables!(r, w;
                tables: META, DOCS, RANKING, UUIDS, VECTORS, EMBED_CACHE, MIGRATION_VECTORS, MIGRATION_CACHE, PENDING, SESSIONS,
                    FORGOTTEN;
                multimaps: IDX_KIND, IDX_TAG, IDX_DOMAIN, IDX_SESSION, IDX_FILE, IDX_TIME);
            debug_assert_eq!(r.open_table(DOCS)?.len()?, w.open_table(DOCS)?.len()?);
        }
        w.commit()?;
    }
    std::fs::rename(&fresh, &path).map_err(|e| Error::io(&path, e))?;
    sync_dir(dir);
    Ok(())
}

/// The mark of a collection whose deleted documents still wait for compaction.
pub(crate) const COMPACT_PENDING: &str = "COMPACT_PENDING";

pub(crate) fn mark_compaction_pending(dir: &Path) -> Result<()> {
    write_synced(&dir.join(COMPACT_PENDING), &[])?;
    sync_dir(dir);
    Ok(())
}

/// True when a `forget` deleted documents and the compaction that scrubs them has not
/// finished.
pub(crate) fn compaction_pending(dir: &Path) -> bool {
    dir.join(COMPACT_PENDING).exists()
}
