//! The lexical index: BM25 over a tantivy index in `<collection>/lexical/`, derived from the
//! redb store like the vector index (rebuildable; each commit records the store generation it
//! reflects; deletes remove the document's terms). The tokenizer and the query parser are the
//! pure [`tokenize`] module.

mod glossary;
pub mod tokenize;

use crate::sync::Locked;
use std::path::Path;
use std::sync::Arc;

use tantivy::collector::{FilterCollector, TopDocs};
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{FAST, Field, INDEXED, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::error::{Error, Result};
use crate::ids::DocSet;
pub use glossary::{Glossary, GlossarySkip};
pub(crate) use glossary::{HAN, HANGUL, KANA, Languages, cjk_languages};
pub(crate) use tokenize::LexicalScale;
pub use tokenize::{LexicalQuery, MAX_CLAUSES, analyze, snippet, tokens};
use tokenize::{TOKENIZER, analyzer};

/// A query's words as the lexical index asks them, made once per search and shared by every
/// collection it asks and by the snippets: the query parsed, its translations when translation
/// is on ([`crate::Ranking::translation`]), and their weight.
pub(crate) struct QueryWords {
    pub(crate) query: LexicalQuery,
    pub(crate) translations: Vec<LexicalQuery>,
    pub(crate) weight: f32,
}

impl QueryWords {
    pub(crate) fn new(text: &str, weight: f32, glossary: &Glossary) -> QueryWords {
        let translations = if weight > 0.0 { glossary.translations(text) } else { Vec::new() };
        QueryWords { query: LexicalQuery::parse(text), translations, weight }
    }

    /// The terms a hit's snippet marks: the query's own and its translations'.
    pub(crate) fn highlight(&self) -> Vec<String> {
        let mut terms = self.query.terms();
        for t in &self.translations {
            terms.extend(t.terms());
        }
        terms.sort_unstable();
        terms.dedup();
        terms
    }
}

/// A document a lexical search found: its id, its BM25 (for a match through a translation,
/// what that share of the query's own words would score) and whether it matched through a
/// translation.
pub(crate) type LexicalHit = (u64, f32, bool);

/// Bumped when the schema or the tokenizer changes: an index of another version is rebuilt.
const FORMAT: &str = "lexical-1";

/// The lexical index of one collection.
pub struct Lexical {
    dir: std::path::PathBuf,
    /// Created on the first write: a search never needs one (a writer holds tantivy's
    /// directory lock, a thread and a memory budget).
    writer: std::sync::Mutex<Option<IndexWriter>>,
    index: Index,
    reader: IndexReader,
    doc: Field,
    text: Field,
}

/// Why the lexical index was rebuilt on open.
pub(crate) enum Opened {
    /// Its last commit reflects this store generation.
    At(u64),
    /// Missing, unreadable, damaged, or of another format: a fresh one was created, to be
    /// filled from the store.
    Fresh(crate::ids::LoadFailure),
}

fn schema() -> (Schema, Field, Field) {
    let mut b = Schema::builder();
    let doc = b.add_u64_field("doc", INDEXED | FAST | STORED);
    let opts = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let text = b.add_text_field("text", opts);
    (b.build(), doc, text)
}

fn tantivy_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Lexical { path: path.to_path_buf(), reason: e.to_string() }
}

impl Lexical {
    /// Opens (or creates) the index in `dir`. The returned state says which generation it
    /// reflects; a fresh index is empty.
    /// Opens (creating if needed) the index in `dir`. `verify`: check every file's checksum
    /// first (after a crash or an outside change); a damaged or unreadable index is replaced by
    /// an empty one ([`Opened::Fresh`]) for the caller to fill from the store.
    pub(crate) fn open(dir: &Path, verify: bool) -> Result<(Lexical, Opened)> {
        use crate::ids::LoadFailure;
        let existing = dir.join("meta.json").exists();
        let attempt = || -> std::result::Result<(Index, Option<String>), String> {
            std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
            let index = if existing {
                Index::open_in_dir(dir).map_err(|e| e.to_string())?
            } else {
                Index::create_in_dir(dir, schema().0).map_err(|e| e.to_string())?
            };
            if existing && verify {
                let damaged = index.validate_checksum().map_err(|e| e.to_string())?;
                if !damaged.is_empty() {
                    let mut names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
                    names.sort();
                    return Err(format!("damaged files: {}", names.join(", ")));
                }
            }
            let payload = index.load_metas().map_err(|e| e.to_string())?.payload;
            Ok((index, payload))
        };
        let (index, opened) = match attempt() {
            Ok((index, payload)) if existing => {
                let at = payload
                    .as_deref()
                    .and_then(|p| p.strip_prefix(FORMAT))
                    .and_then(|p| p.strip_prefix(':'))
                    .and_then(|g| g.parse().ok());
                match at {
                    Some(g) if index.schema() == schema().0 => (index, Opened::At(g)),
                    _ => {
                        drop(index);
                        (Self::recreate_index(dir)?, Opened::Fresh(LoadFailure::Corrupt("another format".into())))
                    }
                }
            }
            Ok((index, _)) => (index, Opened::Fresh(LoadFailure::Missing)),
            Err(why) => (Self::recreate_index(dir)?, Opened::Fresh(LoadFailure::Corrupt(why))),
        };
        match Self::from_index(dir, index) {
            Ok(l) => Ok((l, opened)),
            // Opened, but a segment is unreadable (a truncated file): start afresh.
            Err(Error::Lexical { reason, .. }) => {
                Ok((Self::recreate(dir)?, Opened::Fresh(LoadFailure::Corrupt(reason))))
            }
            Err(e) => Err(e),
        }
    }

    fn from_index(dir: &Path, index: Index) -> Result<Lexical> {
        index.tokenizers().register(TOKENIZER, analyzer());
        let (_, doc, text) = schema();
        let reader =
            index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(|e| tantivy_err(dir, e))?;
        Ok(Lexical { dir: dir.to_path_buf(), writer: std::sync::Mutex::new(None), index, reader, doc, text })
    }

    /// Runs `f` with the writer, created on first use.
    fn with_writer<T>(&self, f: impl FnOnce(&mut IndexWriter) -> Result<T>) -> Result<T> {
        let mut guard = self.writer.locked();
        let w = match guard.as_mut() {
            Some(w) => w,
            None => {
                guard.insert(self.index.writer_with_num_threads(1, 32_000_000).map_err(|e| tantivy_err(self.dir(), e))?)
            }
        };
        f(w)
    }

    /// Lets the writer's background merges finish, so that nothing writes in the index's
    /// directory once it is closed (tantivy's writer, dropped, leaves merges running: a
    /// directory removed or reopened right after a close met files appearing in it).
    fn close(&mut self) {
        let writer = self.writer.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(w) = writer {
            // A merge that fails leaves the committed segments as they were.
            let _ = w.wait_merging_threads();
        }
    }

    /// Deletes whatever is in `dir` and opens an empty index there.
    pub(crate) fn recreate(dir: &Path) -> Result<Lexical> {
        let index = Self::recreate_index(dir)?;
        Self::from_index(dir, index)
    }

    fn recreate_index(dir: &Path) -> Result<Index> {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        Index::create_in_dir(dir, schema().0).map_err(|e| tantivy_err(dir, e))
    }

    fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes documents and adds new ones (by internal id), then commits with the store
    /// generation. Added ids are never in the index already: the store never reuses an id, and
    /// reconciling adds only ids the index lacks.
    pub(crate) fn apply(&self, remove: &[u64], add: &[(u64, String)], generation: u64) -> Result<()> {
        self.stage(remove, add)?;
        self.commit(generation)
    }

    /// Removes and adds like [`Lexical::apply`] without committing: searches see the change
    /// after the next [`Lexical::commit`] (a crash before it loses only what the store's
    /// generation makes the next open catch up).
    pub(crate) fn stage(&self, remove: &[u64], add: &[(u64, String)]) -> Result<()> {
        self.with_writer(|w| {
            for id in remove {
                w.delete_term(Term::from_field_u64(self.doc, *id));
            }
            for (id, text) in add {
                let mut d = TantivyDocument::default();
                d.add_u64(self.doc, *id);
                d.add_text(self.text, text);
                w.add_document(d).map_err(|e| tantivy_err(self.dir(), e))?;
            }
            Ok(())
        })
    }

    /// Commits what was staged, recording the store generation it reflects, and reloads the
    /// reader.
    pub(crate) fn commit(&self, generation: u64) -> Result<()> {
        self.with_writer(|w| {
            let mut commit = w.prepare_commit().map_err(|e| tantivy_err(self.dir(), e))?;
            commit.set_payload(&format!("{FORMAT}:{generation}"));
            commit.commit().map_err(|e| tantivy_err(self.dir(), e))?;
            Ok(())
        })?;
        self.reader.reload().map_err(|e| tantivy_err(self.dir(), e))
    }

    /// Removes everything (before a rebuild).
    pub(crate) fn clear(&self) -> Result<()> {
        self.with_writer(|w| {
            w.delete_all_documents().map_err(|e| tantivy_err(self.dir(), e))?;
            w.commit().map_err(|e| tantivy_err(self.dir(), e))?;
            Ok(())
        })?;
        self.reader.reload().map_err(|e| tantivy_err(self.dir(), e))
    }

    /// Documents the committed index holds (deleted ones not counted).
    pub(crate) fn num_docs(&self) -> usize {
        self.reader.searcher().num_docs() as usize
    }

    /// Internal ids of every indexed document.
    pub(crate) fn ids(&self) -> Result<Vec<u64>> {
        let searcher = self.reader.searcher();
        let mut out = Vec::new();
        for seg in searcher.segment_readers() {
            let col = seg.fast_fields().u64("doc").map_err(|e| tantivy_err(self.dir(), e))?;
            for d in seg.doc_ids_alive() {
                if let Some(v) = col.first(d) {
                    out.push(v);
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// The best `limit` documents for `words` among `allowed` (all when `None`) as
    /// [`LexicalHit`]s, and the query's [`LexicalScale`]. Each of its translations (the query in
    /// other languages, see [`Glossary`]) is scored apart: a document it matches counts the
    /// words' weight times its share of the translation, written as the BM25 that share of the
    /// query would score; a document keeps its best. The first hits do not depend on `limit` (a document in the top `limit` of the
    /// merged list is in the top `limit` of the list that gave it its score).
    pub(crate) fn search(
        &self,
        words: &QueryWords,
        allowed: Option<Arc<DocSet>>,
        limit: usize,
    ) -> Result<(Vec<LexicalHit>, LexicalScale)> {
        let QueryWords { query: q, translations, weight } = words;
        let weight = *weight;
        if q.is_empty() || limit == 0 {
            return Ok((Vec::new(), LexicalScale::default()));
        }
        let searcher = self.reader.searcher();
        let scale = self.scale(&searcher, q)?;
        let mut out: Vec<LexicalHit> =
            self.run(&searcher, q, allowed.clone(), limit)?.into_iter().map(|(d, s)| (d, s, false)).collect();
        if weight > 0.0 && scale.reference > 0.0 && !translations.is_empty() {
            let mut best: std::collections::HashMap<u64, (f32, bool)> =
                out.iter().map(|&(d, s, t)| (d, (s, t))).collect();
            for t in translations.iter().filter(|t| !t.is_empty()) {
                // A translation none of whose words this index holds (Korean words in an
                // English collection) finds nothing new: skipped without a search.
                if !self.holds_any(&searcher, t.groups.iter().flatten().flatten())? {
                    continue;
                }
                let ts = self.scale(&searcher, t)?;
                if ts.reference <= 0.0 {
                    continue;
                }
                for (id, bm25) in self.run(&searcher, t, allowed.clone(), limit)? {
                    let as_query = weight * bm25.max(ts.required) / ts.reference * scale.reference;
                    let slot = best.entry(id).or_insert((as_query, true));
                    if as_query > slot.0 {
                        *slot = (as_query, true);
                    }
                }
            }
            out = best.into_iter().map(|(d, (s, t))| (d, s, t)).collect();
            out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            out.truncate(limit);
        }
        Ok((out, scale))
    }

    /// Whether any of `terms` occurs in the index.
    fn holds_any<'a>(&self, searcher: &tantivy::Searcher, terms: impl Iterator<Item = &'a String>) -> Result<bool> {
        for t in terms {
            let df = searcher.doc_freq(&Term::from_field_text(self.text, t)).map_err(|e| tantivy_err(self.dir(), e))?;
            if df > 0 {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The best `limit` documents for one query: `(id, BM25)`.
    fn run(
        &self,
        searcher: &tantivy::Searcher,
        q: &LexicalQuery,
        allowed: Option<Arc<DocSet>>,
        limit: usize,
    ) -> Result<Vec<(u64, f32)>> {
        let term = |t: &str| Term::from_field_text(self.text, t);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for p in &q.phrases {
            let base = p.first().map_or(0, |x| x.0);
            let terms: Vec<(usize, Term)> = p.iter().map(|(pos, t)| (pos - base, term(t))).collect();
            clauses.push((Occur::Must, Box::new(PhraseQuery::new_with_offset(terms))));
        }
        for (whole, parts) in &q.identifiers {
            let base = parts.first().map_or(0, |x| x.0);
            let terms: Vec<(usize, Term)> = parts.iter().map(|(pos, t)| (pos - base, term(t))).collect();
            clauses.push((Occur::Must, Box::new(PhraseQuery::new_with_offset(terms))));
            clauses.push((Occur::Should, Box::new(TermQuery::new(term(whole), IndexRecordOption::WithFreqs))));
        }
        for t in &q.required {
            clauses.push((Occur::Must, Box::new(TermQuery::new(term(t), IndexRecordOption::WithFreqs))));
        }
        let grouped = q.groups.iter().flatten().flatten();
        for t in q.optional.iter().chain(grouped) {
            clauses.push((Occur::Should, Box::new(TermQuery::new(term(t), IndexRecordOption::WithFreqs))));
        }
        let query = BooleanQuery::new(clauses);
        // tantivy allocates for `limit` hits up front: never more than there are documents.
        let limit = limit.min(searcher.num_docs().max(1) as usize);
        let top = TopDocs::with_limit(limit).order_by_score();
        let hits = match allowed {
            Some(set) => {
                let filter = FilterCollector::new("doc".to_string(), move |id: u64| set.contains(id), top);
                searcher.search(&query, &filter)
            }
            None => searcher.search(&query, &top),
        }
        .map_err(|e| tantivy_err(self.dir(), e))?;
        let mut out = Vec::with_capacity(hits.len());
        // Each segment's document-id column, opened once for all of its hits.
        let mut columns: Vec<Option<tantivy::columnar::Column<u64>>> = vec![None; searcher.segment_readers().len()];
        for (score, addr) in hits {
            let slot = columns.get_mut(addr.segment_ord as usize).ok_or_else(|| {
                tantivy_err(self.dir(), tantivy::TantivyError::InternalError("a hit outside every segment".into()))
            })?;
            if slot.is_none() {
                let col = searcher
                    .segment_reader(addr.segment_ord)
                    .fast_fields()
                    .u64("doc")
                    .map_err(|e| tantivy_err(self.dir(), e))?;
                *slot = Some(col);
            }
            if let Some(id) = slot.as_ref().and_then(|col| col.first(addr.doc_id)) {
                out.push((id, score));
            }
        }
        Ok(out)
    }

    /// The query's [`LexicalScale`]: IDF (BM25's, `ln(1 + (N − n + 0.5) / (n + 0.5))`) summed over its
    /// terms, each clause counted once (an identifier as its parts and as the whole word), and
    /// over the terms of the clauses every hit must match.
    fn scale(&self, searcher: &tantivy::Searcher, q: &LexicalQuery) -> Result<LexicalScale> {
        let n = searcher.num_docs() as f32;
        let idf = |t: &str| -> Result<f32> {
            let df = searcher.doc_freq(&Term::from_field_text(self.text, t)).map_err(|e| tantivy_err(self.dir(), e))?;
            let df = df as f32;
            Ok((1.0 + (n - df + 0.5) / (df + 0.5)).ln())
        };
        let mut scale = LexicalScale::default();
        for p in &q.phrases {
            for (_, t) in p {
                scale.required += idf(t)?;
            }
        }
        for (whole, parts) in &q.identifiers {
            scale.reference += idf(whole)?;
            for (_, t) in parts {
                scale.required += idf(t)?;
            }
        }
        for t in &q.required {
            scale.required += idf(t)?;
        }
        for t in &q.optional {
            scale.reference += idf(t)?;
        }
        // A translated concept counts once: the mean over its forms of what a form scores.
        for group in q.groups.iter().filter(|g| !g.is_empty()) {
            let mut sum = 0.0;
            for form in group {
                for t in form {
                    sum += idf(t)?;
                }
            }
            scale.reference += sum / group.len() as f32;
        }
        scale.reference += scale.required;
        Ok(scale)
    }
}

impl Drop for Lexical {
    fn drop(&mut self) {
        self.close();
    }
}
