//! Moving every collection of a data directory to the configured model
//! ([`crate::Collection::migrate`] does one).

use std::ops::ControlFlow;

use super::across::Across;
use super::{Index, Skipped};
use crate::collection::{MigrationProgress, MigrationReport};
use crate::error::Result;

impl Index {
    /// The collections of `project` (all when `None`) that still hold another model's vectors
    /// than the configured one, with how far their migration got.
    pub fn migrations(&self, project: Option<&str>) -> Result<Across<Vec<MigrationProgress>>> {
        let opened = self.open_collections(project)?;
        let mut found = Vec::new();
        let mut skipped = opened.skipped;
        for (info, c) in opened.collections {
            match c.guarded(|c| c.migration_progress()) {
                Ok(Some(p)) => found.push(p),
                Ok(None) => {}
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info, error }),
                Err(e) => return Err(e),
            }
        }
        Ok(Across { found, skipped })
    }

    /// Migrates every collection of `project` (all when `None`) that holds another model's
    /// vectors to the configured model: re-embedded from the stored texts, resumable, the old
    /// vectors answering searches until each collection's last batch (see
    /// [`crate::Collection::migrate`]). `progress` is called after every batch; returning
    /// [`ControlFlow::Break`] stops (every migration stays resumable). Returns a report per
    /// collection migrated; a collection that cannot be opened or read is skipped and listed,
    /// the others go on.
    pub fn migrate(
        &self,
        project: Option<&str>,
        progress: &mut dyn FnMut(&MigrationProgress) -> ControlFlow<()>,
    ) -> Result<Across<Vec<MigrationReport>>> {
        let opened = self.open_collections(project)?;
        let mut found = Vec::new();
        let mut skipped = opened.skipped;
        for (info, c) in opened.collections {
            if c.migration_target().is_none() {
                continue;
            }
            match c.guarded(|c| c.migrate(progress)) {
                Ok(r) => {
                    let stopped = !r.finished;
                    found.push(r);
                    if stopped {
                        break;
                    }
                }
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info, error }),
                Err(e) => return Err(e),
            }
        }
        Ok(Across { found, skipped })
    }
}
