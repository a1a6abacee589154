//! The vector work a data directory owes: moving every collection to the configured model
//! ([`crate::Collection::migrate`] does one) and embedding the documents indexed by words first
//! ([`crate::Collection::embed_pending`]).

use std::ops::ControlFlow;

use super::across::Across;
use super::{Index, Skipped};
use crate::collection::{Collection, EmbedProgress, EmbedReport, MigrationProgress, MigrationReport};
use crate::error::Result;

/// Documents embedded newest first across every collection before the rest is embedded a
/// collection at a time ([`Index::embed_pending`]).
pub const NEWEST_ACROSS: usize = 2_000;

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
    /// [`crate::Collection::embed_pending`]), the most recent first: the first
    /// [`NEWEST_ACROSS`] across collections, each batch from the collection whose next waiting
    /// document is the newest (indexing stores each project's sessions newest first), so the
    /// last weeks of every project are searchable by meaning before older history; then the
    /// rest a collection at a time (the one whose next waiting document is the newest first),
    /// each closed when done, so memory holds one collection's graph and pages, not every
    /// project's. `progress` is called after every batch with
    /// that collection's progress; returning [`ControlFlow::Break`] stops (what is left stays
    /// pending). A collection that cannot be opened or read is skipped and listed.
    pub fn embed_pending(
        &self,
        project: Option<&str>,
        progress: &mut dyn FnMut(&EmbedProgress) -> ControlFlow<()>,
    ) -> Result<Across<Vec<EmbedReport>>> {
        struct Waiting {
            info: super::CollectionInfo,
            /// Open while it is being embedded (closed once done after the first documents, so
            /// a heavy history holds one collection's graph and pages at a time).
            c: Option<std::sync::Arc<Collection>>,
            report: EmbedReport,
            total: usize,
            next: Option<i64>,
            failed: bool,
        }
        impl Waiting {
            /// Its collection could not be read: listed once, never asked again.
            fn fail(&mut self, skipped: &mut Vec<Skipped>, error: crate::error::Error) {
                (self.next, self.failed) = (None, true);
                skipped.push(Skipped { info: self.info.clone(), error });
            }
        }
        /// The collection whose next waiting document is the newest.
        fn newest(waiting: &mut [Waiting]) -> Option<&mut Waiting> {
            waiting.iter_mut().filter(|w| w.next.is_some()).max_by_key(|w| w.next)
        }
        let opened = self.open_collections(project)?;
        let mut skipped = opened.skipped;
        let mut waiting: Vec<Waiting> = Vec::new();
        for (info, c) in opened.collections {
            let state = c.guarded(|c| Ok((c.pending_vectors()?, c.next_pending_time()?)));
            match state {
                Ok((0, _)) => {}
                Ok((total, next)) => waiting.push(Waiting {
                    info,
                    c: Some(c),
                    report: EmbedReport::default(),
                    total,
                    next,
                    failed: false,
                }),
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info, error }),
                Err(e) => return Err(e),
            }
        }
        let pass_total: usize = waiting.iter().map(|w| w.total).sum();
        let started = std::time::Instant::now();
        let mut pass_done = 0;
        // One batch of `w`'s collection (reopened if it was closed); false: nothing more to do
        // there, or it failed (listed), or `progress` asked to stop (`stop` set).
        let mut stop = false;
        let mut batch =
            |w: &mut Waiting, skipped: &mut Vec<Skipped>, pass_done: &mut usize, stop: &mut bool| -> Result<bool> {
                let c = match &w.c {
                    Some(c) => std::sync::Arc::clone(c),
                    None => match self.collection(&w.info.tenant, &w.info.project) {
                        Ok(c) => {
                            w.c = Some(std::sync::Arc::clone(&c));
                            c
                        }
                        Err(error) if error.is_collection_fault() => {
                            w.fail(skipped, error);
                            return Ok(false);
                        }
                        Err(e) => return Err(e),
                    },
                };
                let before = w.report.documents;
                let step = c.guarded(|c| {
                    let more = c.embed_pending_batch(&mut w.report)?;
                    Ok((more, if more { c.next_pending_time()? } else { None }))
                });
                match step {
                    Ok((more, next)) => {
                        w.next = next;
                        if !more {
                            return Ok(false);
                        }
                    }
                    Err(error) if error.is_collection_fault() => {
                        w.fail(skipped, error);
                        return Ok(false);
                    }
                    Err(e) => return Err(e),
                }
                *pass_done += w.report.documents - before;
                let flow = progress(&EmbedProgress {
                    collection: c.name().to_string(),
                    done: w.report.documents,
                    total: w.total,
                    embedded: w.report.embedded,
                    seconds: started.elapsed().as_secs_f64(),
                    pass_done: *pass_done,
                    pass_total,
                });
                *stop = flow.is_break();
                Ok(!*stop)
            };
        // The newest documents first across every collection, until NEWEST_ACROSS are in.
        while !stop && pass_done < NEWEST_ACROSS {
            let Some(w) = newest(&mut waiting) else { break };
            batch(w, &mut skipped, &mut pass_done, &mut stop)?;
        }
        // Flushes and closes `w`'s collection, counting what is left there (a flush that fails
        // is reported as its collection's fault, not lost in the collection's drop).
        let close = |w: &mut Waiting, skipped: &mut Vec<Skipped>| -> Result<()> {
            let Some(c) = w.c.take().filter(|_| !w.failed) else { return Ok(()) };
            match c.guarded(|c| {
                c.flush()?;
                c.pending_vectors()
            }) {
                Ok(n) => w.report.left = n,
                Err(error) if error.is_collection_fault() => w.fail(skipped, error),
                Err(e) => return Err(e),
            }
            Ok(())
        };
        // Then a collection at a time, the one whose next waiting document is the newest first,
        // each flushed and closed when done: one collection's graph and pages in memory at a
        // time, whatever the number of projects.
        for w in waiting.iter_mut() {
            close(w, &mut skipped)?;
        }
        while !stop {
            let Some(w) = newest(&mut waiting) else { break };
            while batch(w, &mut skipped, &mut pass_done, &mut stop)? {}
            close(w, &mut skipped)?;
        }
        let found = waiting.into_iter().filter(|w| !w.failed).map(|w| w.report).collect();
        Ok(Across { found, skipped })
    }
}
