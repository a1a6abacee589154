//! Model-based test: random sequences of add batch / delete session / search / reopen against
//! a simple in-memory model; exact search must give the same answers as brute force over the
//! model.

use std::collections::BTreeMap;

use convdex::{CollectionOptions, Embedder, HashEmbedder};
use proptest::prelude::*;

use crate::common::{doc, hash_index};

const WORDS: &[&str] = &["redb", "graph", "auth", "token", "cache", "docker", "deploy", "parser", "query", "merge"];

#[derive(Debug, Clone)]
enum Op {
    Add { session: u8, items: Vec<(u8, Vec<u8>)> },
    DeleteSession(u8),
    Search { words: Vec<u8>, session: Option<u8>, limit: usize },
    Reopen,
}

fn text(words: &[u8]) -> String {
    words.iter().map(|w| WORDS[*w as usize % WORDS.len()]).collect::<Vec<_>>().join(" ")
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..4, prop::collection::vec((0u8..6, prop::collection::vec(0u8..10, 1..6)), 1..5))
            .prop_map(|(session, items)| Op::Add { session, items }),
        1 => (0u8..4).prop_map(Op::DeleteSession),
        3 => (prop::collection::vec(0u8..10, 1..4), prop::option::of(0u8..4), 1usize..8)
            .prop_map(|(words, session, limit)| Op::Search { words, session, limit }),
        1 => Just(Op::Reopen),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn engine_matches_model(ops in prop::collection::vec(op(), 1..25)) {
        let dir = tempfile::tempdir().unwrap();
        let emb = HashEmbedder::default();
        // uuid -> (session, content)
        let mut model: BTreeMap<uuid::Uuid, (String, String)> = BTreeMap::new();
        let mut index = Some(hash_index(dir.path(), CollectionOptions::default()));
        let mut coll = Some(index.as_ref().unwrap().collection("t", "m").unwrap());
        for op in ops {
            let c = coll.as_ref().unwrap();
            match op {
                Op::Add { session, items } => {
                    let s = format!("s{session}");
                    let docs: Vec<_> = items.iter().map(|(i, w)| doc(&s, u64::from(*i), &text(w), &[], 0)).collect();
                    c.add(&docs).unwrap();
                    for d in docs {
                        model.insert(d.id, (s.clone(), d.content.clone()));
                    }
                }
                Op::DeleteSession(session) => {
                    let s = format!("s{session}");
                    let expected = model.values().filter(|(ms, _)| *ms == s).count();
                    prop_assert_eq!(c.delete_session(&s).unwrap(), expected);
                    model.retain(|_, (ms, _)| *ms != s);
                }
                Op::Search { words, session, limit } => {
                    let q = text(&words);
                    let mut b = c.search(&q).mode(convdex::SearchMode::Semantic).limit(limit).exact(true);
                    if let Some(s) = session {
                        b = b.session(&format!("s{s}"));
                    }
                    let hits = b.run().unwrap();
                    let qv = emb.embed_one(&q).unwrap();
                    // Identical content of one session folds into one hit.
                    let distinct: std::collections::BTreeSet<&(String, String)> = model
                        .values()
                        .filter(|(s, _)| session.is_none_or(|x| *s == format!("s{x}")))
                        .collect();
                    let mut expected: Vec<f32> = distinct
                        .into_iter()
                        .map(|(_, content)| convdex::embed::dot(&qv, &emb.embed_one(content).unwrap()))
                        .collect();
                    expected.sort_by(|a, b| b.total_cmp(a));
                    expected.truncate(limit);
                    prop_assert_eq!(hits.len(), expected.len());
                    for (h, e) in hits.iter().zip(&expected) {
                        let cosine = h.signals.semantic.unwrap_or(f32::NAN);
                        prop_assert!((cosine - e).abs() < 1e-4, "cosine {} vs model {}", cosine, e);
                        let (s, content) = &model[&h.doc.id];
                        prop_assert_eq!(&h.doc.session_id, s);
                        prop_assert_eq!(&h.doc.content, content);
                    }
                    // The graph path returns only live, matching documents.
                    let mut g = c.search(&q).mode(convdex::SearchMode::Semantic).limit(limit).exact(false);
                    if let Some(s) = session {
                        g = g.session(&format!("s{s}"));
                    }
                    for h in g.run().unwrap().iter() {
                        prop_assert!(model.contains_key(&h.doc.id));
                    }
                    // The lexical index follows adds, replacements, deletes and reopens: it finds
                    // exactly the live documents sharing a word with the query, identical ones of
                    // a session folded into one hit that counts the others.
                    let mut l = c.search(&q).mode(convdex::SearchMode::Lexical).limit(1000);
                    if let Some(s) = session {
                        l = l.session(&format!("s{s}"));
                    }
                    let hits = l.run().unwrap();
                    let mut found = std::collections::BTreeSet::new();
                    for h in hits.iter() {
                        let (s, content) = &model[&h.doc.id];
                        let copies = model.values().filter(|(ms, mc)| ms == s && mc == content).count();
                        prop_assert_eq!(h.folded + 1, copies, "{} folded", content);
                        found.extend(model.iter().filter(|(_, v)| v.0 == *s && v.1 == *content).map(|(id, _)| *id));
                    }
                    let qwords: Vec<&str> = q.split_whitespace().collect();
                    let expected: std::collections::BTreeSet<_> = model
                        .iter()
                        .filter(|(_, (s, content))| {
                            session.is_none_or(|x| *s == format!("s{x}"))
                                && content.split_whitespace().any(|w| qwords.contains(&w))
                        })
                        .map(|(id, _)| *id)
                        .collect();
                    prop_assert_eq!(found, expected);
                }
                Op::Reopen => {
                    // Close (dropping flushes the graph), then open again from disk.
                    drop(coll.take());
                    drop(index.take());
                    index = Some(hash_index(dir.path(), CollectionOptions::default()));
                    coll = Some(index.as_ref().unwrap().collection("t", "m").unwrap());
                }
            }
            prop_assert_eq!(coll.as_ref().unwrap().len().unwrap(), model.len());
        }
        // Closed, nothing writes in the data dir any more: it can be removed at once (the
        // lexical index's background merges once outlived the close and made this fail).
        drop(coll);
        drop(index);
        let path = dir.path().to_path_buf();
        prop_assert!(dir.close().is_ok(), "the data dir could not be removed right after the close");
        prop_assert!(!path.exists());
    }
}
