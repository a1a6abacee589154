//! Questions asked of every project at once (or of one): search, decisions, blame, a session by
//! id prefix, the latest handoff, the sessions a `forget` selects. What the CLI and the MCP
//! server answer from; each returns what it found with the collections it had to skip
//! ([`Across::skipped`]: busy in another process, damaged), so one bad collection never hides
//! the others.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::collection::{Collection, query_vectors};
use crate::doc::{DecisionStatus, DocBody, DocKind, Document};
use crate::error::{Error, Result};
use crate::index::{CollectionInfo, Index, Skipped};
use crate::lexical::QueryWords;
use crate::search::{Hit, Plan, Query, SearchMode};
use crate::warm::Scope;

/// What a question over several collections found, and the collections it skipped.
#[derive(Debug)]
pub struct Across<T> {
    /// The answer from the collections that could be read.
    pub found: T,
    /// Collections that could not be opened or read, with why.
    pub skipped: Vec<Skipped>,
}

/// A hit with the project it came from.
#[derive(Debug, Clone)]
pub struct ProjectHit {
    /// The collection's project name.
    pub project: String,
    /// The hit.
    pub hit: Hit,
}

/// Which decisions [`Index::decisions`] lists. Default: active decisions of every project.
#[derive(Debug, Clone, Default)]
pub struct DecisionFilter {
    /// Only decisions about this file (in whatever form it is typed).
    pub file: Option<String>,
    /// Only decisions at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only decisions with this tag (case aside, as search's tag filters).
    pub tag: Option<String>,
    /// Superseded and rejected decisions too.
    pub all: bool,
    /// What was believed at this time: only decisions made by then, each with the status it had
    /// then (one superseded later was still active). Default: now.
    pub as_of: Option<DateTime<Utc>>,
}

/// A session that discussed or changed a file ([`Index::blame`]).
#[derive(Debug, Clone, Serialize)]
pub struct BlameSession {
    /// The collection's project name.
    pub project: String,
    /// The session.
    pub session: String,
    /// Its last document about the file.
    pub last: DateTime<Utc>,
    /// What its messages did to the file (`read`, `edited`, `created`, `deleted`).
    pub actions: Vec<String>,
    /// The session's documents about the file: messages, decisions, summary.
    pub documents: Vec<Document>,
    /// Commits made in those documents, `sha subject`.
    pub commits: Vec<String>,
}

/// A collection that opened, with its identity.
pub type OpenCollection = (CollectionInfo, Arc<Collection>);

/// A session with its collection, its last document's time and its document count
/// ([`Index::sessions_with_times`]).
#[derive(Debug, Clone)]
pub struct SessionAt {
    /// Its collection's identity.
    pub info: CollectionInfo,
    /// Its collection.
    pub collection: Arc<Collection>,
    /// The session id.
    pub session: String,
    /// Its last document's time.
    pub last: DateTime<Utc>,
    /// How many documents it has.
    pub documents: usize,
}

/// A session chosen by [`Index::find_session`].
#[derive(Debug, Clone)]
pub struct FoundSession {
    /// Its collection's identity.
    pub info: CollectionInfo,
    /// Its collection.
    pub collection: Arc<Collection>,
    /// The full session id.
    pub session: String,
}

/// The threads the collections of a search answer on (one per core), apart from rayon's
/// global pool, which the graph's inserts use.
/// `None` when no thread could be started: the collections then answer one after another.
fn search_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().thread_name(|i| format!("convdex-search-{i}")).build().ok())
        .as_ref()
}

/// What a query's vectors depend on in one collection: its model, and for an English query the
/// Chinese, Japanese and Korean it is written in.
type VectorKey = (String, crate::lexical::Languages);

impl Index {
    /// The collections of `project` (its name, or its name with the `-` suffix that indexing
    /// adds to tell apart projects of the same name), or all, opened. An error when nothing can
    /// be read: nothing indexed, no such project, or every collection skipped.
    pub fn readable(&self, project: Option<&str>) -> Result<Across<Vec<OpenCollection>>> {
        let opened = self.open_collections(project)?;
        if opened.collections.is_empty() {
            return Err(match (project, opened.skipped.is_empty()) {
                (_, false) => Error::NoneReadable {
                    reasons: opened.skipped.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
                },
                (Some(p), true) => Error::NoSuchProject { project: crate::text::normalize_name(p) },
                (None, true) => Error::NothingIndexed { root: self.root().to_path_buf() },
            });
        }
        Ok(Across { found: opened.collections, skipped: opened.skipped })
    }

    /// Runs `f` on each readable collection; a collection whose files fail while reading is
    /// skipped (and listed), any other error is returned at once.
    pub fn each<T>(
        &self,
        project: Option<&str>,
        f: impl FnMut(&CollectionInfo, &Collection) -> Result<T>,
    ) -> Result<Across<Vec<T>>> {
        self.each_of(self.readable(project)?, f)
    }

    /// [`Index::each`] over collections already opened.
    fn each_of<T>(
        &self,
        readable: Across<Vec<OpenCollection>>,
        mut f: impl FnMut(&CollectionInfo, &Collection) -> Result<T>,
    ) -> Result<Across<Vec<T>>> {
        let Across { found, mut skipped } = readable;
        let mut out = Vec::with_capacity(found.len());
        for (info, c) in &found {
            match c.guarded(|c| f(info, c)) {
                Ok(v) => out.push(v),
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info: info.clone(), error }),
                Err(e) => return Err(e),
            }
        }
        Ok(Across { found: out, skipped })
    }

    /// [`Index::each_of`] with the collections answering in parallel (each on its own, so no
    /// two tasks take one collection's locks), each given its input (`inputs`, one per
    /// collection, in order); answers in the collections' order.
    fn each_of_parallel<I: Send, T: Send>(
        &self,
        readable: Across<Vec<OpenCollection>>,
        inputs: Vec<I>,
        f: impl Fn(I, &CollectionInfo, &Collection) -> Result<T> + Sync,
    ) -> Result<Across<Vec<T>>> {
        use rayon::prelude::*;
        let Across { found, mut skipped } = readable;
        // On a pool of their own: a collection's task may wait for its graph's lock while a
        // write in this process holds it and inserts on rayon's global pool (hnsw_rs); were the
        // searches on that pool too, both would wait for ever.
        let answer = |((info, c), input): (&OpenCollection, I)| c.guarded(|c| f(input, info, c));
        let answers: Vec<Result<T>> = match search_pool() {
            Some(pool) => pool.install(|| found.par_iter().zip(inputs.into_par_iter()).map(answer).collect()),
            None => found.iter().zip(inputs).map(answer).collect(),
        };
        let mut out = Vec::with_capacity(found.len());
        for ((info, _), answer) in found.iter().zip(answers) {
            match answer {
                Ok(v) => out.push(v),
                Err(error) if error.is_collection_fault() => skipped.push(Skipped { info: info.clone(), error }),
                Err(e) => return Err(e),
            }
        }
        Ok(Across { found: out, skipped })
    }

    /// Searches every readable collection of `project` (all when `None`) as one: each
    /// collection contributes its candidates ([`crate::POOL_DEPTH`] per signal), and one
    /// calibration ranks their union ([`crate::Ranking`]), so a score means the same in every
    /// project and the first hits do not depend on `query.limit`. The query is embedded once
    /// per model.
    ///
    /// While another process writes to this data directory (an indexing run), that process
    /// answers: the search does not wait for the collections it holds ([`Index::while_serving`]).
    pub fn search(&self, project: Option<&str>, query: &Query) -> Result<Across<Vec<ProjectHit>>> {
        query.validate()?;
        if let Some(found) = self.ask_writer(Scope::Projects(project.map(str::to_string)), query) {
            return Ok(found);
        }
        self.search_here(project, query)
    }

    /// [`Index::search`] in this process.
    pub(crate) fn search_here(&self, project: Option<&str>, query: &Query) -> Result<Across<Vec<ProjectHit>>> {
        query.validate()?;
        self.search_among(|| self.readable(project), query)
    }

    /// Searches like [`Index::search`] every readable collection but `project`'s (exactly that
    /// project: not another whose name adds a `-` suffix), ranked as one list among
    /// themselves. An empty answer when no other project exists.
    pub fn search_except(&self, project: &str, query: &Query) -> Result<Across<Vec<ProjectHit>>> {
        query.validate()?;
        if let Some(found) = self.ask_writer(Scope::Except(project.to_string()), query) {
            return Ok(found);
        }
        self.search_except_here(project, query)
    }

    /// [`Index::search_except`] in this process.
    pub(crate) fn search_except_here(&self, project: &str, query: &Query) -> Result<Across<Vec<ProjectHit>>> {
        query.validate()?;
        let mine = crate::text::normalize_name(project);
        let others: Vec<CollectionInfo> = self.collections()?.into_iter().filter(|i| i.project != mine).collect();
        if others.is_empty() {
            return Ok(Across { found: Vec::new(), skipped: Vec::new() });
        }
        self.search_among(
            || {
                let mut out = Across { found: Vec::new(), skipped: Vec::new() };
                for info in others {
                    match self.collection(&info.tenant, &info.project) {
                        Ok(c) => out.found.push((info, c)),
                        Err(error) => out.skipped.push(Skipped { info, error }),
                    }
                }
                Ok(out)
            },
            query,
        )
    }

    /// Embeds the query while the collections open (`open`), then ranks their pools as one.
    fn search_among(
        &self,
        open: impl FnOnce() -> Result<Across<Vec<OpenCollection>>> + Send,
        query: &Query,
    ) -> Result<Across<Vec<ProjectHit>>> {
        let mut vectors: std::collections::HashMap<VectorKey, Vec<Vec<f32>>> = std::collections::HashMap::new();
        let glossary = &self.options().collection.glossary;
        let opened = if query.mode == Some(SearchMode::Lexical) {
            open()?
        } else {
            // Loading the model and reading the collections' vectors do not wait on each
            // other: the collections open, and read their vectors, on a second thread while
            // this one loads the model and embeds the query. (Vectors only: the graph's links
            // are read later, and only by a search that walks them.)
            std::thread::scope(|s| {
                let reader = s.spawn(|| {
                    let opened = open()?;
                    for (_, c) in &opened.found {
                        let _ = c.guarded(|c| c.graph().map(|_| ()));
                    }
                    Ok::<_, Error>(opened)
                });
                // A model that cannot load is reported when the first collection asks for
                // the vector.
                if let Ok(e) = self.embedder()
                    && let Ok(v) =
                        query_vectors(e.as_ref(), &query.text, query.ranking.gloss, glossary, &[false; 4], None)
                {
                    vectors.insert((e.model_id().to_string(), [false; 4]), v);
                }
                reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p))
            })?
        };
        // Each collection's mode, and the query's vector for each model they need (embedded
        // once per model, in order); then the collections answer in parallel.
        let mut modes: Vec<Result<(SearchMode, Option<VectorKey>)>> = Vec::with_capacity(opened.found.len());
        for (_, c) in &opened.found {
            modes.push(c.guarded(|c| {
                let mode = c.mode_for(query, false);
                if mode == SearchMode::Lexical {
                    return Ok((mode, None));
                }
                // An English question's vectors depend on the languages the collection is
                // written in (its glosses); a Chinese, Japanese or Korean one's do not.
                let held = c.gloss_languages(&query.text, query.ranking.gloss);
                let model = c.embedder().model_id().to_string();
                let key = (model.clone(), held);
                if !vectors.contains_key(&key) {
                    // Only an English question is glossed into a collection's languages (a
                    // question in CJK script asks every collection alike), so the vectors made
                    // up front without languages are its own embedding, which its glossed pair
                    // starts from.
                    let own = vectors.get(&(model, [false; 4])).and_then(|v| v.first()).cloned();
                    let (text, gloss) = (&query.text, query.ranking.gloss);
                    let v = query_vectors(c.embedder().as_ref(), text, gloss, glossary, &held, own.as_deref())?;
                    vectors.insert(key.clone(), v);
                }
                Ok((mode, Some(key)))
            }));
        }
        // The hits' documents are read after the ranking, from each pool's snapshot: the
        // collections stay open until then (a snapshot of a closed store reads nothing).
        let _open: Vec<Arc<Collection>> = opened.found.iter().map(|(_, c)| Arc::clone(c)).collect();
        // The query's words and their translations, made once for every collection (they share
        // this index's glossary) and for the snippets.
        let words = QueryWords::new(&query.text, query.ranking.translation, glossary);
        let Across { found, mut skipped } = self.each_of_parallel(opened, modes, |mode, info, c| {
            let (mode, model) = mode?;
            let vector = model.and_then(|m| vectors.get(&m)).map_or(&[][..], Vec::as_slice);
            let (pool, plan, snapshot) = c.pool(query, &words, mode, vector, Default::default())?;
            Ok((info.project.clone(), mode, pool, plan, snapshot, (info.clone(), c.dir().join("data.redb"))))
        })?;
        // Collections without a lexical index answer semantically; the union is ranked in the
        // mode most of them ran.
        let mode = query.mode.unwrap_or_else(|| {
            if found.iter().all(|f| f.1 == SearchMode::Semantic) { SearchMode::Semantic } else { SearchMode::Hybrid }
        });
        let (names, plans): (Vec<String>, Vec<Plan>) = found.iter().map(|f| (f.0.clone(), f.3)).unzip();
        let stores: Vec<(CollectionInfo, std::path::PathBuf)> = found.iter().map(|f| f.5.clone()).collect();
        let (pools, snapshots): (Vec<_>, Vec<_>) = found.into_iter().map(|f| (f.2, f.4)).unzip();
        let terms = words.highlight();
        let asks = crate::search::asks_about_a_decision(&query.text);
        let ranked = crate::search::fuse::rank(pools, mode, &query.ranking, asks);
        let (shown, damaged) = crate::collection::shown(ranked, query.limit, &snapshots)?;
        // A collection whose documents could not be read is named, never silently replaced by
        // the others' hits.
        for (pool, reason) in damaged {
            let (info, path) = stores[pool].clone();
            skipped.push(Skipped { info, error: Error::Damaged { path, reason } });
        }
        let hits = shown
            .into_iter()
            .map(|(r, doc)| {
                let (project, plan) = (names[r.pool].clone(), plans[r.pool]);
                ProjectHit { project, hit: crate::collection::hit(r, doc, &terms, plan) }
            })
            .collect();
        Ok(Across { found: hits, skipped })
    }

    /// Decisions matching `filter`, newest first, with their project.
    pub fn decisions(&self, project: Option<&str>, filter: &DecisionFilter) -> Result<Across<Vec<(String, Document)>>> {
        let Across { found, skipped } = self.each(project, |info, c| {
            let forms = match &filter.file {
                Some(p) => c.file_forms(p)?,
                None => Vec::new(),
            };
            let mut rows = Vec::new();
            // Case aside, as search's tag filters read them.
            let tag = filter.tag.as_deref().map(str::to_lowercase);
            let all = c.documents_of_kind(DocKind::Decision)?;
            let all = match filter.as_of {
                Some(at) => crate::derive::life::as_of(&all, at),
                None => all,
            };
            for d in all {
                let DocBody::Decision(fields) = &d.body else { continue };
                let keep = (filter.all || fields.status == DecisionStatus::Active)
                    && (forms.is_empty() || d.files_discussed.iter().any(|x| forms.contains(&x.path)))
                    && filter.since.is_none_or(|s| d.timestamp >= s)
                    && tag.as_deref().is_none_or(|t| d.tags.iter().any(|x| x.to_lowercase() == t));
                if keep {
                    rows.push((info.project.clone(), d));
                }
            }
            Ok(rows)
        })?;
        let mut rows: Vec<(String, Document)> = found.into_iter().flatten().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.1.timestamp));
        Ok(Across { found: rows, skipped })
    }

    /// The sessions that discussed or changed `path` (in whatever form it is typed), newest
    /// first, with what they did to it, their decisions and commits.
    pub fn blame(&self, project: Option<&str>, path: &str) -> Result<Across<Vec<BlameSession>>> {
        let Across { found, skipped } = self.each(project, |info, c| {
            let forms = c.file_forms(path)?;
            let mut by_session: BTreeMap<String, Vec<Document>> = BTreeMap::new();
            for d in c.documents_for_file(path)? {
                by_session.entry(d.session_id.clone()).or_default().push(d);
            }
            let mut out = Vec::new();
            for (session, documents) in by_session {
                let mut actions: Vec<String> = documents
                    .iter()
                    .filter(|d| d.kind() == DocKind::Message)
                    .flat_map(|d| d.files_discussed.iter().filter(|f| forms.contains(&f.path)))
                    .map(|f| f.action.as_str().to_string())
                    .collect();
                actions.sort();
                actions.dedup();
                let mut commits: Vec<String> = documents
                    .iter()
                    .flat_map(|d| d.commits_made.iter().map(|c| format!("{} {}", c.sha, c.message)))
                    .collect();
                commits.sort();
                commits.dedup();
                let last = documents.iter().map(|d| d.timestamp).max().unwrap_or_default();
                out.push(BlameSession { project: info.project.clone(), session, last, actions, documents, commits });
            }
            Ok(out)
        })?;
        let mut sessions: Vec<BlameSession> = found.into_iter().flatten().collect();
        sessions.sort_by_key(|s| std::cmp::Reverse(s.last));
        Ok(Across { found: sessions, skipped })
    }

    /// The one session whose id starts with `prefix`.
    pub fn find_session(&self, prefix: &str, project: Option<&str>) -> Result<Across<FoundSession>> {
        if prefix.trim().is_empty() {
            return Err(Error::InvalidArgument(
                "the session id is empty; give a session id or a unique prefix of one".into(),
            ));
        }
        let readable = self.readable(project)?;
        let Across { found, skipped } = self.each(project, |info, c| {
            let sessions: Vec<String> = c.sessions()?.into_iter().filter(|s| s.starts_with(prefix)).collect();
            Ok((info.clone(), sessions))
        })?;
        let mut matches: Vec<FoundSession> = Vec::new();
        for (info, sessions) in found {
            let Some((_, c)) = readable.found.iter().find(|x| x.0 == info) else { continue };
            for session in sessions {
                matches.push(FoundSession { info: info.clone(), collection: c.clone(), session });
            }
        }
        match matches.len() {
            // Not found where it could look: where it could not is the answer, not "no session"
            // (a privacy command must never say there is nothing to delete when it could not see).
            0 if !skipped.is_empty() => Err(Error::SessionNotSearched {
                prefix: prefix.to_string(),
                reasons: skipped.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "),
            }),
            0 => Err(Error::NoSuchSession { prefix: prefix.to_string() }),
            1 => Ok(Across { found: matches.remove(0), skipped }),
            n => Err(Error::InvalidArgument(format!(
                "`{prefix}` matches {n} sessions ({}); give more of the id",
                matches.iter().map(|m| m.session.as_str()).take(5).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// The handoff brief of the most recently active session: `(project, brief)`; `None` when
    /// no collection has a session summary.
    pub fn latest_handoff(&self, project: Option<&str>) -> Result<Across<Option<(String, String)>>> {
        let Across { found, skipped } = self.each(project, |info, c| {
            let latest =
                c.documents_of_kind(DocKind::Summary)?.into_iter().map(|d| d.timestamp.timestamp_millis()).max();
            Ok((latest, info.project.clone(), c.handoff()?))
        })?;
        let best = found
            .into_iter()
            .filter_map(|(t, p, b)| Some((t?, p, b?)))
            .max_by_key(|(t, _, _)| *t)
            .map(|(_, p, b)| (p, b));
        Ok(Across { found: best, skipped })
    }

    /// Every session of the collections of `project` (all when `None`; an exact project name)
    /// with its collection and its last document's time: what `forget --project` and
    /// `forget --before` choose from.
    pub fn sessions_with_times(&self, project: Option<&str>) -> Result<Across<Vec<SessionAt>>> {
        let want = project.map(crate::text::normalize_name);
        let readable = self.readable(project)?;
        let Across { found, skipped } = self.each(project, |info, c| {
            if want.as_deref().is_some_and(|p| info.project != p) {
                return Ok(Vec::new());
            }
            let mut out = Vec::new();
            for s in c.sessions()? {
                let docs = c.session_documents(&s)?;
                let last = docs.iter().map(|d| d.timestamp).max().unwrap_or_default();
                out.push((info.clone(), s, last, docs.len()));
            }
            Ok(out)
        })?;
        let mut rows = Vec::new();
        for (info, session, last, documents) in found.into_iter().flatten() {
            if let Some((_, c)) = readable.found.iter().find(|x| x.0 == info) {
                rows.push(SessionAt { info, collection: c.clone(), session, last, documents });
            }
        }
        if rows.is_empty()
            && let Some(p) = want
            && !readable.found.iter().any(|(i, _)| i.project == p)
        {
            return Err(Error::NoSuchProject { project: p });
        }
        Ok(Across { found: rows, skipped })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::doc::{Document, Role};
    use crate::embed::HashEmbedder;
    use crate::index::{Index, Options};
    use crate::search::Query;

    #[test]
    fn search_except_ranks_every_other_project_and_only_them() {
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), Options::default().embedder(Arc::new(HashEmbedder::new(64)))).unwrap();
        for (project, n) in [("项目", 30), ("项目-ab12cd", 2), ("other", 2)] {
            let c = index.collection("local", project).unwrap();
            let docs: Vec<Document> = (0..n)
                .map(|i| {
                    Document::message("s", &format!("m{i}"), i, Role::User, &format!("redis cache eviction policy {i}"))
                })
                .collect();
            c.add(&docs).unwrap();
        }
        let q = Query { limit: 10, ..Query::new("redis cache eviction") };
        assert!(index.search(None, &q).unwrap().found.iter().any(|h| h.project == "项目"));
        // All but it: the other two, the suffixed sibling included.
        let rest = index.search_except("项目", &q).unwrap().found;
        let mut projects: Vec<&str> = rest.iter().map(|h| h.project.as_str()).collect();
        projects.sort();
        projects.dedup();
        assert_eq!(projects, ["other", "项目-ab12cd"]);
        let only = Index::open(dir.path().join("none"), Options::default().embedder(Arc::new(HashEmbedder::new(64))));
        let only = only.unwrap();
        only.collection("local", "solo").unwrap().add(&[Document::message("s", "m", 0, Role::User, "redis")]).unwrap();
        assert!(only.search_except("solo", &q).unwrap().found.is_empty());
    }
}
