//! The vector work a data directory owes: moving every collection to the configured model
//! ([`crate::Collection::migrate`] does one) and embedding the documents indexed by words first
//! ([`crate::Collection::embed_pending`]).

use std::ops::ControlFlow;

use super::across::Across;
use super::{Index, Skipped};
use crate::collection::{Collection, EmbedProgress, EmbedReport, MigrationProgress, MigrationReport};
use crate::error::Result;

impl Index {
    /// Runs `f` on every collection of `project` (all when `None`), each guarded: a collection
    /// that cannot be opened or read is skipped and listed, the others go on; `f` returning
    /// [`ControlFlow::Break`] stops. Returns the collections skipped.
    pub(crate) fn each_collection(
        &self,
        project: Option<&str>,
        mut f: impl FnMut(&Collection) -> Result<ControlFlow<()>>,
    ) -> Result<Vec<Skipped>> {
        let opened = self.open_collections(project)?;
        let mut skipped = opened.skipped;
        for (info, c) in opened.collections {
            match c.guarded(&mut f) {
                Ok(ControlFlow::Continue(())) => {}
                Ok(ControlFlow::Break(())) => break,
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info, error }),
                Err(e) => return Err(e),
            }
        }
        Ok(skipped)
    }

    /// The collections of `project` (all when `None`) that still hold another model's vectors
    /// than the configured one, with how far their migration got.
    pub fn migrations(&self, project: Option<&str>) -> Result<Across<Vec<MigrationProgress>>> {
        let mut found = Vec::new();
        let skipped = self.each_collection(project, |c| {
            found.extend(c.migration_progress()?);
            Ok(ControlFlow::Continue(()))
        })?;
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
        let mut found = Vec::new();
        let skipped = self.each_collection(project, |c| {
            if c.migration_target().is_none() {
                return Ok(ControlFlow::Continue(()));
            }
            let r = c.migrate(progress)?;
            let stopped = !r.finished;
            found.push(r);
            Ok(if stopped { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
        })?;
        Ok(Across { found, skipped })
    }

    /// Documents of `project` (all when `None`) waiting for their vectors, in all.
    pub fn pending_vectors(&self, project: Option<&str>) -> Result<Across<usize>> {
        let mut found = 0;
        let skipped = self.each_collection(project, |c| {
            found += c.pending_vectors()?;
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(Across { found, skipped })
    }

    /// Embeds the documents of `project` (all when `None`) that wait for their vectors (see
    /// [`crate::Collection::embed_pending`]), the most recent first across collections: each
    /// batch comes from the collection whose next waiting document is the newest (indexing
    /// stores each project's sessions newest first), so the last weeks of every project are
    /// searchable by meaning before older history. `progress` is called after every batch with
    /// that collection's progress; returning [`ControlFlow::Break`] stops (what is left stays
    /// pending). A collection that cannot be opened or read is skipped and listed.
    pub fn embed_pending(
        &self,
        project: Option<&str>,
        progress: &mut dyn FnMut(&EmbedProgress) -> ControlFlow<()>,
    ) -> Result<Across<Vec<EmbedReport>>> {
        struct Waiting {
            info: super::CollectionInfo,
            c: std::sync::Arc<Collection>,
            report: EmbedReport,
            total: usize,
            next: Option<i64>,
            failed: bool,
        }
        let opened = self.open_collections(project)?;
        let mut skipped = opened.skipped;
        let mut waiting: Vec<Waiting> = Vec::new();
        for (info, c) in opened.collections {
            let state = c.guarded(|c| Ok((c.pending_vectors()?, c.next_pending_time()?)));
            match state {
                Ok((0, _)) => {}
                Ok((total, next)) => {
                    waiting.push(Waiting { info, c, report: EmbedReport::default(), total, next, failed: false })
                }
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info, error }),
                Err(e) => return Err(e),
            }
        }
        let pass_total: usize = waiting.iter().map(|w| w.total).sum();
        let started = std::time::Instant::now();
        let mut pass_done = 0;
        while let Some(w) = waiting.iter_mut().filter(|w| w.next.is_some()).max_by_key(|w| w.next) {
            let before = w.report.documents;
            let step = w.c.guarded(|c| {
                let more = c.embed_pending_batch(&mut w.report)?;
                Ok((more, if more { c.next_pending_time()? } else { None }))
            });
            match step {
                Ok((more, next)) => {
                    w.next = next;
                    if !more {
                        continue;
                    }
                }
                Err(error) if error.is_collection_fault() => {
                    w.next = None;
                    w.failed = true;
                    let info = w.info.clone();
                    skipped.push(Skipped { info, error });
                    continue;
                }
                Err(e) => return Err(e),
            }
            pass_done += w.report.documents - before;
            let flow = progress(&EmbedProgress {
                collection: w.c.name().to_string(),
                done: w.report.documents,
                total: w.total,
                embedded: w.report.embedded,
                seconds: started.elapsed().as_secs_f64(),
                pass_done,
                pass_total,
            });
            if flow.is_break() {
                break;
            }
        }
        let mut found = Vec::new();
        for mut w in waiting.into_iter().filter(|w| !w.failed) {
            let left = w.c.guarded(|c| {
                c.flush()?;
                c.pending_vectors()
            });
            match left {
                Ok(n) => {
                    w.report.left = n;
                    found.push(w.report);
                }
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info: w.info, error }),
                Err(e) => return Err(e),
            }
        }
        Ok(Across { found, skipped })
    }
}
