//! What an English, Chinese, Japanese or Korean question asks with: the languages a
//! collection is written in (sampled from its messages, cached by message count), the
//! languages a question is glossed into here, and the query vectors built from both.

use crate::sync::Locked;
use redb::ReadableDatabase;

use super::Collection;
use crate::doc::DocKind;
use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::lexical::{Glossary, Languages};

/// The vectors semantic search asks with; a document scores the better of its cosines with them,
/// each read against its own background (`best_cosines`).
/// A query written partly in Chinese, Japanese or Korean script asks with one: its own vector
/// plus `gloss` times the mean of its glosses' ([`crate::Ranking::gloss`]; the query rewritten
/// through `glossary` in every other language it has words for), normalised. Any other query
/// asks with its own vector, and, over a collection written partly in Chinese, Japanese or
/// Korean (`held`, [`Collection::languages`]), with a second one glossed the same way into
/// those languages only: its English answers keep the cosine of the question's own vector,
/// while answers in those scripts can rise towards the glossed one.
/// `own`: the question's own embedding when it was already made (by this `embedder`), so only
/// its glosses are embedded.
pub(crate) fn query_vectors(
    embedder: &dyn Embedder,
    text: &str,
    gloss: f32,
    glossary: &Glossary,
    held: &Languages,
    own: Option<&[f32]>,
) -> Result<Vec<Vec<f32>>> {
    let cjk = text.chars().any(crate::lexical::tokenize::is_cjk);
    let into = if cjk { [true; 4] } else { *held };
    let glosses = if gloss > 0.0 && into.iter().any(|l| *l) { glossary.glosses_in(text, &into) } else { Vec::new() };
    if glosses.is_empty() {
        return Ok(vec![match own {
            Some(v) => v.to_vec(),
            None => embedder.embed_query(text)?,
        }]);
    }
    // The question (unless known) and its glosses in one call (one batch for a model that runs
    // batches).
    let ask = own.is_none().then_some(text);
    let texts: Vec<&str> = ask.into_iter().chain(glosses.iter().map(String::as_str)).collect();
    let mut vectors = embedder.embed_queries(&texts)?.into_iter();
    let own = match own {
        Some(v) => v.to_vec(),
        None => vectors.next().unwrap_or_default(),
    };
    let mut v = own.clone();
    let w = gloss / glosses.len() as f32;
    for g in vectors {
        for (x, y) in v.iter_mut().zip(g) {
            *x += w * y;
        }
    }
    crate::embed::normalize(&mut v);
    Ok(if cjk { vec![v] } else { vec![own, v] })
}

/// Messages read to tell which languages a collection is written in: at most this many,
/// spread evenly over its messages.
pub(crate) const LANGUAGE_SAMPLE: u64 = 2_000;

/// Share of the sampled messages that must be written in a language for the collection to
/// count as written in it: 0.2, chosen on the development sets over 0.05 (docs/ranking.md, «An
/// English question's second vector, adopted»).
pub(crate) const LANGUAGE_SHARE: f64 = 0.2;

impl Collection {
    /// The languages an English question `text` is glossed into here ([`query_vectors`]'s
    /// `held`): the collection's [`Collection::languages`]; none for a question in Chinese,
    /// Japanese or Korean script (glossed into every language whatever the collection) or when
    /// `gloss` is 0, without reading the collection.
    pub(crate) fn gloss_languages(&self, text: &str, gloss: f32) -> Languages {
        let english = gloss > 0.0 && !text.chars().any(crate::lexical::tokenize::is_cjk);
        if english { self.languages() } else { [false; 4] }
    }

    /// The Chinese, Japanese and Korean this collection's messages are written in (a language
    /// counts when at least [`LANGUAGE_SHARE`] of up to [`LANGUAGE_SAMPLE`] messages, spread evenly
    /// over them all, carry its script), read again whenever the number of messages changed.
    /// A store that cannot be read counts as English only.
    pub(crate) fn languages(&self) -> Languages {
        let mut cached = self.languages.locked();
        // The message count and, when it changed, the sample: one read transaction.
        let read = |cached: Option<(u64, Languages)>| -> Result<(u64, Languages)> {
            let tx = self.db.begin_read()?;
            let total = tx.open_multimap_table(crate::store::tables::IDX_KIND)?.get(DocKind::Message.code())?.len();
            if let Some((n, held)) = cached
                && n == total
            {
                return Ok((n, held));
            }
            // Recorded by the indexer for this many messages: a new process need not sample.
            let meta = tx.open_table(crate::store::tables::META)?;
            if let Some((n, held)) = crate::store::meta::read_languages(&meta)?
                && n == total
            {
                return Ok((n, held));
            }
            sample_languages(&tx)
        };
        match read(*cached) {
            Ok(r) => {
                *cached = Some(r);
                r.1
            }
            Err(_) => [false; 4],
        }
    }

    /// Reads the collection's languages from a fresh sample of its messages and records them in
    /// the store with the number of messages, when that is not what it holds already (the
    /// indexer, after a project's sessions; durable with the next flush). A later process
    /// answers from the record while the number of messages is the same.
    pub(crate) fn record_languages(&self) -> Result<()> {
        let _w = self.write_lock.locked();
        let (found, recorded) = {
            let tx = self.db.begin_read()?;
            let meta = tx.open_table(crate::store::tables::META)?;
            (sample_languages(&tx)?, crate::store::meta::read_languages(&meta)?)
        };
        *self.languages.locked() = Some(found);
        if recorded == Some(found) {
            return Ok(());
        }
        let mut tx = self.db.begin_write()?;
        tx.set_durability(redb::Durability::None).map_err(|e| Error::Storage(e.into()))?;
        crate::store::meta::write_languages(&tx, found.0, found.1)?;
        tx.commit()?;
        self.store_unsynced.store(true, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}

/// The number of messages in the store read by `tx`, and the languages of up to
/// [`LANGUAGE_SAMPLE`] of them spread evenly over them all.
fn sample_languages(tx: &redb::ReadTransaction) -> Result<(u64, Languages)> {
    let idx = tx.open_multimap_table(crate::store::tables::IDX_KIND)?;
    let ids = idx.get(DocKind::Message.code())?;
    let total = ids.len();
    let docs = tx.open_table(crate::store::tables::DOCS)?;
    let mut held = [false; 4];
    let step = total.div_ceil(LANGUAGE_SAMPLE).max(1);
    let (mut read, mut counts) = (0_u64, [0_u64; 4]);
    for id in ids.step_by(step as usize) {
        let Some(doc) = crate::store::get_doc(&docs, id?.value())? else { continue };
        read += 1;
        for (c, l) in counts.iter_mut().zip(crate::lexical::cjk_languages(&doc.content)) {
            *c += u64::from(l);
        }
    }
    for (h, c) in held.iter_mut().zip(counts) {
        *h = read > 0 && c as f64 >= LANGUAGE_SHARE * read as f64;
    }
    Ok((total, held))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::doc::{Document, Role};
    use crate::index::{Index, Options};
    use crate::search::SearchMode;

    /// An index over the test embedder in `dir`.
    fn index(dir: &std::path::Path) -> Index {
        Index::open(dir, Options::default().embedder(Arc::new(crate::embed::HashEmbedder::new(64)))).unwrap()
    }

    /// The `i`th message of session `s`.
    fn message(i: u64, text: &str) -> Document {
        Document::message("s", &format!("m{i}"), i, Role::User, text)
    }

    /// A collection written partly in Chinese, holding `数据库迁移到新的分支` and an English
    /// message of the same meaning among unrelated ones in both languages.
    fn mixed(index: &Index, project: &str) -> Arc<Collection> {
        let coll = index.collection("local", project).unwrap();
        let filler = [
            "天气不错，我们下午去公园散步",
            "把图片压缩以后再上传",
            "会议改到明天上午十点",
            "这个按钮的颜色太浅了",
            "打印机又卡纸了",
            "周末一起去爬山吧",
            "the weather is nice today",
            "resize the images before the upload",
            "the meeting moved to ten tomorrow",
            "this button colour is too light",
        ];
        let mut docs: Vec<Document> = filler.iter().enumerate().map(|(i, t)| message(i as u64, t)).collect();
        docs.push(message(10, "数据库迁移到新的分支"));
        docs.push(message(11, "migrate the database to the new branch tonight"));
        coll.add(&docs).unwrap();
        coll
    }

    #[test]
    fn the_query_vectors_add_the_glosses_at_their_weight() {
        use crate::vector::dot;
        let e = crate::embed::HashEmbedder::new(64);
        let g = crate::lexical::Glossary::builtin();
        let none = [false; 4];
        let q = "数据库迁移到新的分支";
        let own = e.embed_query(q).unwrap();
        assert_eq!(
            query_vectors(&e, q, 0.0, &g, &none, None).unwrap(),
            vec![own.clone()],
            "weight 0: the query's own vector"
        );
        let unknown = "hello there";
        assert_eq!(query_vectors(&e, unknown, 1.0, &g, &none, None).unwrap(), vec![e.embed_query(unknown).unwrap()]);
        // A query in CJK script asks with one vector, its own moved towards its glosses.
        let glossed = query_vectors(&e, q, 0.5, &g, &none, None).unwrap();
        assert_eq!(glossed.len(), 1);
        let glossed = &glossed[0];
        let norm: f32 = glossed.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "normalised: {norm}");
        let english = e.embed_query(&g.glosses(q)[0]).unwrap();
        assert!(dot(glossed, &english) > dot(&own, &english), "moved towards the gloss");
        assert!(dot(glossed, &own) > dot(glossed, &english), "the query's own vector still leads");
        // An English query over an English collection asks with its own vector alone.
        let english_q = "migrate the database to the new branch";
        assert!(!g.glosses(english_q).is_empty(), "the glossary knows its words");
        let own_en = e.embed_query(english_q).unwrap();
        assert_eq!(query_vectors(&e, english_q, 1.0, &g, &none, None).unwrap(), vec![own_en.clone()], "English");
        // Over a collection written in Chinese: its own vector first, unchanged, then one
        // glossed into Chinese (only).
        let chinese = g.glosses_in(english_q, &[false, true, false, false]);
        assert_eq!(chinese.len(), 1);
        let both = query_vectors(&e, english_q, 1.0, &g, &[false, true, false, false], None).unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0], own_en, "the question's own vector scores English answers as before");
        let gloss_zh = e.embed_query(&chinese[0]).unwrap();
        assert!(dot(&both[1], &gloss_zh) > dot(&own_en, &gloss_zh), "the second leans towards Chinese");
        // The question's own embedding, when known, is used as given and not embedded again.
        let known = query_vectors(&e, english_q, 1.0, &g, &[false, true, false, false], Some(&own_en)).unwrap();
        assert_eq!(known, both, "the same vectors from the known embedding");
        let stand_in = e.embed_query("something else entirely").unwrap();
        let from = query_vectors(&e, english_q, 1.0, &g, &[false, true, false, false], Some(&stand_in)).unwrap();
        assert_eq!(from[0], stand_in, "the given embedding is the first vector");
        assert_ne!(from[1], both[1], "and the glossed one is built from it");
        assert_eq!(query_vectors(&e, q, 0.5, &g, &none, Some(&own)).unwrap(), vec![glossed.clone()], "CJK too");
    }

    #[test]
    fn a_collection_knows_the_languages_its_messages_are_written_in() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let english = index.collection("local", "english").unwrap();
        assert_eq!(english.languages(), [false; 4], "empty");
        let docs: Vec<Document> = (0..40).map(|i| message(i, "set the environment variable on this branch")).collect();
        english.add(&docs).unwrap();
        assert_eq!(english.languages(), [false; 4]);
        // One Chinese message in forty-one is under the share; ten more are over it, and
        // the collection is read again once its messages changed.
        english.add(&[message(40, "在这个分支上设置环境变量")]).unwrap();
        assert_eq!(english.languages(), [false; 4]);
        english.add(&(41..51).map(|i| message(i, "数据库迁移到新的分支")).collect::<Vec<_>>()).unwrap();
        assert_eq!(english.languages(), [false, true, false, false]);
        let mixed = index.collection("local", "日本語と한국어").unwrap();
        mixed.add(&[message(0, "データベースを移行する"), message(1, "데이터베이스 이전")]).unwrap();
        assert_eq!(mixed.languages(), [false, false, true, true]);
    }

    /// The indexer records a collection's languages with its number of messages; a new open
    /// (another process) answers from the record while that number holds (a record planted
    /// here, which no sample would give, tells the two apart), and samples again once it changed.
    #[test]
    fn a_recorded_reading_of_the_languages_serves_a_new_open_until_the_messages_change() {
        use crate::store::meta::{read_languages, write_languages};
        use crate::store::tables::META;
        let recorded = |coll: &Collection| {
            let tx = coll.db.begin_read().unwrap();
            read_languages(&tx.open_table(META).unwrap()).unwrap()
        };
        let (zh, ko) = ([false, true, false, false], [false, false, false, true]);
        let dir = tempfile::tempdir().unwrap();
        {
            let index = index(dir.path());
            let coll = index.collection("local", "zh").unwrap();
            coll.add(&(0..5).map(|i| message(i, "数据库迁移到新的分支")).collect::<Vec<_>>()).unwrap();
            assert_eq!(recorded(&coll), None, "nothing recorded before the indexer records it");
            coll.record_languages().unwrap();
            assert_eq!(recorded(&coll), Some((5, zh)));
            let tx = coll.db.begin_write().unwrap();
            write_languages(&tx, 5, ko).unwrap();
            tx.commit().unwrap();
        }
        let index = index(dir.path());
        let coll = index.collection("local", "zh").unwrap();
        assert_eq!(coll.languages(), ko, "read from the record, not sampled");
        coll.add(&[message(5, "数据库迁移到新的分支")]).unwrap();
        assert_eq!(coll.languages(), zh, "sampled again once the messages changed");
        coll.record_languages().unwrap();
        assert_eq!(recorded(&coll), Some((6, zh)));
    }

    /// Over a collection written partly in Chinese, an English question's glossed vector can
    /// only raise a document's cosine: every document scores the better of the question's own
    /// cosine and the glossed one, so English answers lose nothing and the Chinese one rises.
    #[test]
    fn an_english_question_over_chinese_messages_keeps_its_own_cosines() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let coll = mixed(&index, "mixed");
        assert_eq!(coll.languages(), [false, true, false, false]);
        let q = "migrate the database to the new branch";
        let cosines = |gloss: f32| -> std::collections::HashMap<String, f32> {
            let hits = coll.search(q).mode(SearchMode::Semantic).gloss(gloss).limit(20).run().unwrap().hits;
            hits.into_iter().map(|h| (h.doc.content.clone(), h.signals.semantic.unwrap())).collect()
        };
        let (own, glossed) = (cosines(0.0), cosines(1.0));
        assert_eq!(own.len(), glossed.len());
        for (text, c) in &own {
            assert!(glossed[text] >= c - 1e-6, "{text}: {c} -> {}", glossed[text]);
        }
        let (en, zh) = ("migrate the database to the new branch tonight", "数据库迁移到新的分支");
        assert_eq!(glossed[en], own[en], "the English answer keeps its own cosine");
        assert!(glossed[zh] > own[zh], "the Chinese answer rises: {} -> {}", own[zh], glossed[zh]);
    }

    /// The search across collections asks each collection with the vectors its own search
    /// would: an English question over an English and a partly Chinese collection (its own
    /// embedding made once, glossed for the second) scores every document as each
    /// collection's search does, and a Chinese question likewise.
    #[test]
    fn the_search_across_collections_asks_each_with_its_own_vectors() {
        let dir = tempfile::tempdir().unwrap();
        let index = index(dir.path());
        let zh = mixed(&index, "混合");
        let en = index.collection("local", "english").unwrap();
        let english: Vec<Document> =
            ["migrate the database to the new branch", "the printer jammed again", "nice weather"]
                .iter()
                .enumerate()
                .map(|(i, t)| message(i as u64, t))
                .collect();
        en.add(&english).unwrap();
        assert_eq!((zh.languages(), en.languages()), ([false, true, false, false], [false; 4]));
        for q in ["migrate the database to the new branch", "数据库迁移"] {
            let query =
                crate::search::Query { mode: Some(SearchMode::Semantic), limit: 30, ..crate::search::Query::new(q) };
            let across = index.search(None, &query).unwrap();
            assert!(across.skipped.is_empty());
            let mut seen = 0;
            for (project, coll) in [("混合", &zh), ("english", &en)] {
                let own = coll.search(q).mode(SearchMode::Semantic).limit(30).run().unwrap().hits;
                for h in &own {
                    let a = across.found.iter().find(|p| p.project == project && p.hit.doc.id == h.doc.id).unwrap();
                    let (x, y) = (a.hit.signals.semantic.unwrap(), h.signals.semantic.unwrap());
                    assert!((x - y).abs() < 1e-6, "{q} / {}: across {x}, alone {y}", h.doc.content);
                    seen += 1;
                }
            }
            assert_eq!(seen, 15, "{q}: every document of both collections compared");
        }
    }
}
