//! What a team search reads from the database: a project's background, its candidates'
//! cosines, the statistics that calibrate its BM25, the languages it is written in, and
//! documents; each on a reading connection of its own ([`TeamStore::read`]), so the projects of
//! one search are asked at once.

use crate::sync::Locked;
use std::collections::HashMap;

use postgres::types::ToSql;
use postgres::{Client, NoTls};
use uuid::Uuid;

use super::words::{Corpus, quoted};
use super::{TeamStore, db_error, docs_table};
use crate::collection::{LANGUAGE_SAMPLE, LANGUAGE_SHARE};
use crate::doc::Document;
use crate::error::{Error, Result};
use crate::lexical::{HAN, HANGUL, KANA, Languages};
use crate::search::fuse::{self, Background};

/// Rows of the sample a larger project's mean length and common terms are read from.
const SAMPLE_ROWS: f64 = 5_000.0;
/// A sample of fewer rows (the planner's statistics overstate the project: much of it was
/// deleted since they were made) is not read: the project is counted exactly.
const MIN_SAMPLE: f32 = 500.0;
/// In a larger project, a term in more than this share of its documents (and at least
/// [`COMMON_FLOOR`] of them) is common: its frequency is estimated, and it chooses no candidates
/// while the question has a rarer word (it still counts in every candidate's BM25).
const COMMON_SHARE: f32 = 0.02;
const COMMON_FLOOR: f32 = 2_000.0;

/// How many rows the planner's statistics (refreshed by a push) say `table` holds; -1 when it
/// has none yet.
pub(super) fn planned_rows(c: &mut postgres::Client, table: &str) -> std::result::Result<f64, postgres::Error> {
    let sql = "SELECT coalesce((SELECT reltuples::float8 FROM pg_class WHERE oid = to_regclass($1)), -1)";
    Ok(c.query_one(sql, &[&table])?.get(0))
}

/// The question's cosine with each of its `n` vectors (parameters `$1`..`$n`, vector literals),
/// as SQL columns over a vectors table's `embedding`; `max` takes each one's best over a group.
fn cosine_columns(n: usize, max: bool) -> String {
    (1..=n)
        .map(|i| {
            let c = format!("1 - (embedding <=> ${i}::text::vector)");
            if max { format!("max({c})::real") } else { format!("({c})::real") }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The `application_name` of a search's reading connections.
pub const READER_NAME: &str = "convdex reader";

/// A background's mean and spread (`None`: no sample).
type Moments = Option<(f32, f32)>;

impl TeamStore {
    /// Runs `f` on a reading connection: a spare one, or a new one while fewer than
    /// [`TeamStore::with_readers`] are open, else the store's own connection (also for a
    /// minute after the server refused one, e.g. at its `max_connections`). A search's
    /// statements are read-only and hold nothing between two of them, so any connection
    /// serves; a spare one that died meanwhile (a restarted server, an idle timeout) is
    /// dropped and `f` runs once more on a new one.
    pub(super) fn read<T>(&self, f: impl Fn(&mut Client) -> std::result::Result<T, postgres::Error>) -> Result<T> {
        use std::sync::atomic::Ordering::SeqCst;
        if self.readers <= 1 {
            return self.with(f);
        }
        let mut fresh = false;
        loop {
            // Once a kept connection failed, the statement is asked again on a new one (the other
            // kept ones may have died with it).
            let spare = if fresh { None } else { self.spare.locked().pop() };
            let from_spare = spare.is_some();
            let mut c = match spare {
                Some(c) => c,
                None => {
                    let refused = self.refused.locked();
                    let resting = refused.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(60));
                    drop(refused);
                    // A slot among `readers`, or the store's own connection.
                    let slot = !resting
                        && self.opened.fetch_update(SeqCst, SeqCst, |n| (n < self.readers).then_some(n + 1)).is_ok();
                    if !slot {
                        return self.with(f);
                    }
                    // Named, so a server's administrator sees what they are.
                    let connect = || -> std::result::Result<Client, postgres::Error> {
                        let mut config: postgres::Config = self.url.parse()?;
                        config.application_name(READER_NAME);
                        config.connect(NoTls)
                    };
                    match connect() {
                        Ok(c) => c,
                        Err(_) => {
                            self.opened.fetch_sub(1, SeqCst);
                            *self.refused.locked() = Some(std::time::Instant::now());
                            return self.with(f);
                        }
                    }
                }
            };
            let out = f(&mut c);
            // A connection that failed other than by the server's answer to a statement (it
            // was closed, the socket broke, the server ended the session) is not kept.
            let broken = c.is_closed()
                || out.as_ref().err().is_some_and(|e| match e.as_db_error() {
                    None => true,
                    Some(db) => db.code().code().starts_with("08") || db.code().code().starts_with("57P"),
                });
            if broken {
                drop(c);
                self.opened.fetch_sub(1, SeqCst);
                if !fresh && from_spare {
                    fresh = true;
                    continue;
                }
            } else {
                self.spare.locked().push(c);
            }
            return out.map_err(|e| db_error(&self.shown, e));
        }
    }

    /// `f` of each item, in the items' order, on up to [`TeamStore::with_readers`] threads (each
    /// reading on a connection of its own); the first error, if any.
    pub(super) fn each<I: Sync, T: Send>(&self, items: &[I], f: impl Fn(&I) -> Result<T> + Sync) -> Result<Vec<T>> {
        let threads = self.readers.clamp(1, items.len().max(1));
        if threads == 1 {
            return items.iter().map(&f).collect();
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done: std::sync::Mutex<Vec<Option<Result<T>>>> =
            std::sync::Mutex::new(items.iter().map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let r = f(item);
                        let failed = r.is_err();
                        done.locked()[i] = Some(r);
                        if failed {
                            // The others stop at their next item.
                            next.store(items.len(), std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        // An item left unasked follows an error (the others stopped): that error is the answer.
        let mut out = Vec::with_capacity(items.len());
        let mut unasked = false;
        for r in done.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
            match r {
                Some(Ok(v)) => out.push(v),
                Some(Err(e)) => return Err(e),
                None => unasked = true,
            }
        }
        if unasked {
            return Err(Error::Team {
                store: self.shown.clone(),
                reason: "a project of the search was not asked".into(),
                fix: "search again; if it recurs, report it as a bug".into(),
            });
        }
        Ok(out)
    }

    /// The question's backgrounds in a project: the first vector's, standing for every vector
    /// of the project (it calibrates the pool), and each vector's moments (a second vector's
    /// cosines are read on the first one's scale, as locally).
    pub(super) fn backgrounds(&self, vt: &str, literals: &[String]) -> Result<(Background, Vec<Moments>)> {
        let params: Vec<&(dyn ToSql + Sync)> = literals.iter().map(|l| l as &(dyn ToSql + Sync)).collect();
        let (rows, count) = self.read(|c| {
            let rows = c.query(
                &format!(
                    "SELECT {} FROM {vt} ORDER BY id, chunk LIMIT {}",
                    cosine_columns(literals.len(), false),
                    fuse::BACKGROUND_SAMPLE
                ),
                &params,
            )?;
            // The planner's count for a large table (a push refreshes it), an exact one else.
            let planned = planned_rows(c, vt)?;
            let count: i64 = if planned >= self.exact_up_to {
                planned as i64
            } else {
                c.query_one(&format!("SELECT count(*) FROM {vt}"), &[])?.get(0)
            };
            Ok((rows, count))
        })?;
        let mut each = vec![Background::default(); literals.len()];
        for r in rows {
            for (i, b) in each.iter_mut().enumerate() {
                b.add(r.get(i));
            }
        }
        each[0].represents(count.max(0) as usize);
        Ok((each[0], each.iter().map(Background::moments).collect()))
    }

    /// The exact cosine of each document's best chunk with the best of the question's vectors,
    /// a second vector's read against its own background and written on the first one's scale
    /// (`best_cosines` of the collection module).
    pub(super) fn cosines(
        &self,
        vt: &str,
        literals: &[String],
        scales: &[Moments],
        ids: &[Uuid],
    ) -> Result<HashMap<Uuid, f32>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let ids = ids.to_vec();
        let mut params: Vec<&(dyn ToSql + Sync)> = literals.iter().map(|l| l as &(dyn ToSql + Sync)).collect();
        params.push(&ids);
        let rows = self.read(|c| {
            c.query(
                &format!(
                    "SELECT id, {} FROM {vt} WHERE id = ANY(${}) GROUP BY id",
                    cosine_columns(literals.len(), true),
                    literals.len() + 1
                ),
                &params,
            )
        })?;
        let rescale = |i: usize, c: f32| match (scales.first().copied().flatten(), scales.get(i).copied().flatten()) {
            (Some((m0, s0)), Some((mi, si))) if i > 0 => m0 + s0 * (c - mi) / si,
            _ => c,
        };
        Ok(rows
            .iter()
            .map(|r| {
                let best = (0..literals.len()).map(|i| rescale(i, r.get(i + 1))).fold(f32::MIN, f32::max);
                (r.get(0), best)
            })
            .collect())
    }

    /// What calibrates a project's BM25 for `terms`: its documents, their mean length and each
    /// term's document frequency. Counted exactly in a project of fewer than
    /// [`TeamStore::with_exact_up_to`] documents (as the planner's statistics know it); in a larger one, the number of documents
    /// is the planner's, the mean length is read from a sample of about 5,000 rows, and a term
    /// is counted exactly up to [`Corpus::common`] documents, a more common one estimated from
    /// the sample: a search reads a bounded number of rows whatever the project's size.
    pub(super) fn corpus(&self, d: &str, terms: &[String]) -> Result<Corpus> {
        let each: Vec<String> = terms.iter().map(|t| quoted(t)).collect();
        self.read(|c| {
            let planned = planned_rows(c, d)?;
            // Counted exactly: a small project, or one the statistics overstate (its sample
            // would be too small to read).
            let exact = |c: &mut postgres::Client| -> std::result::Result<Corpus, postgres::Error> {
                let row =
                    c.query_one(&format!("SELECT count(*), coalesce(avg(length(words)), 0)::real FROM {d}"), &[])?;
                let df: Vec<f32> = c
                    .query(
                        &format!(
                            "SELECT (SELECT count(*) FROM {d} WHERE words @@ x::tsquery)::real
                             FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i"
                        ),
                        &[&each],
                    )?
                    .iter()
                    .map(|r| r.get(0))
                    .collect();
                Ok(Corpus {
                    docs: row.get::<_, i64>(0) as f32,
                    mean_len: row.get(1),
                    df: terms.iter().cloned().zip(df).collect(),
                    common: None,
                })
            };
            if planned < self.exact_up_to {
                return exact(c);
            }
            let docs = planned as f32;
            let common = (COMMON_SHARE * docs).max(COMMON_FLOOR);
            let percent = (100.0 * SAMPLE_ROWS / planned).clamp(0.01, 100.0);
            // One sample (the same pages while the table is unchanged): its size, mean length,
            // and each term's count in it; then each term's count, exact up to `common`.
            let rows = c.query(
                &format!(
                    "WITH s AS MATERIALIZED (SELECT words FROM {d} TABLESAMPLE SYSTEM ({percent}) REPEATABLE (7))
                     SELECT (SELECT count(*) FROM s)::real, (SELECT coalesce(avg(length(words)), 0) FROM s)::real,
                            (SELECT count(*) FROM s WHERE words @@ x::tsquery)::real,
                            (SELECT count(*) FROM (SELECT 1 FROM {d} WHERE words @@ x::tsquery LIMIT {limit}) m)::real
                     FROM unnest($1::text[]) WITH ORDINALITY AS u(x, i) ORDER BY i",
                    limit = common as i64 + 1
                ),
                &[&each],
            )?;
            let sampled: f32 = rows.first().map_or(0.0, |r| r.get(0));
            if sampled < MIN_SAMPLE {
                return exact(c);
            }
            let mean_len: f32 = rows.first().map_or(0.0, |r| r.get(1));
            let df = terms
                .iter()
                .cloned()
                .zip(rows.iter().map(|r| {
                    let (in_sample, counted): (f32, f32) = (r.get(2), r.get(3));
                    if counted <= common { counted } else { (in_sample / sampled * docs).max(counted) }
                }))
                .collect();
            Ok(Corpus { docs, mean_len, df, common: Some(common) })
        })
    }

    /// The Chinese, Japanese and Korean a project's messages are written in, read as a local
    /// collection reads them (the collection module's languages: a language counts when at
    /// least a fifth of up to 2,000 sampled messages carry its script), over the first messages
    /// by id (ids are hashes: a sample spread over the project).
    pub(super) fn languages(&self, tenant: &str, project: &str) -> Result<Languages> {
        let class = |ranges: &[(char, char)]| {
            format!("[{}]", ranges.iter().map(|(a, b)| format!("{a}-{b}")).collect::<String>())
        };
        let (han, kana, hangul) = (class(&HAN), class(&KANA), class(&HANGUL));
        let d = docs_table(tenant, project);
        let counts: Vec<i64> = self.read(|c| {
            let r = c.query_one(
                &format!(
                    "SELECT count(*), count(*) FILTER (WHERE content ~ $1 AND content !~ $2),
                            count(*) FILTER (WHERE content ~ $2), count(*) FILTER (WHERE content ~ $3)
                     FROM (SELECT content FROM {d} WHERE kind = 'message' ORDER BY id LIMIT {LANGUAGE_SAMPLE}) s"
                ),
                &[&han, &kana, &hangul],
            )?;
            Ok((0..4).map(|i| r.get(i)).collect())
        })?;
        let read = counts[0] as f64;
        Ok([0_usize, 1, 2, 3].map(|i| i > 0 && read > 0.0 && counts[i] as f64 >= LANGUAGE_SHARE * read))
    }

    /// Runs `sql`, which selects a document's JSON from `whose` documents (`tenant/project`, for
    /// messages), after `setting` in one transaction: the documents, in the query's order.
    pub(super) fn rows(
        &self,
        whose: &str,
        setting: &str,
        sql: &str,
        params: &[Box<dyn ToSql + Sync>],
    ) -> Result<Vec<Document>> {
        let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref()).collect();
        let rows = self.read(|c| {
            let mut tx = c.transaction()?;
            tx.batch_execute(setting)?;
            let rows = tx.query(sql, &refs)?;
            tx.commit()?;
            Ok(rows)
        })?;
        rows.iter().map(|r| self.decode(r.get(0), whose)).collect()
    }
}
