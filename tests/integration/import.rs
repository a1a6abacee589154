//! Structured conversation import: one case per validation rule with its exact text; a bad
//! document in a batch is skipped and the good ones imported; every valid generated document
//! imports and reads back identical.

use convdex::ingest::structured::{parse, validate};
use convdex::{CollectionOptions, DocBody, Quote, Role, SearchMode};
use proptest::prelude::*;
use serde_json::json;

use crate::common::hash_index;

fn base() -> serde_json::Value {
    json!({"id": "c1", "conversation": {"source": "slack", "people": ["ana", "bo"], "user": "ana",
        "conversation": [{"speaker": "ana", "content": "hi", "time": "2024-05-01T10:00:00Z"},
                         {"speaker": "bo", "content": "hello", "time": "2024-05-01T10:01:00+02:00"}]},
        "tags": ["team"], "metadata": {"channel": "general"}})
}

/// A named change to the base document and the error it must produce.
type Case = (&'static str, Box<dyn Fn(&mut serde_json::Value)>, &'static str);

#[test]
fn one_case_per_rule_with_the_exact_text() {
    let cases: Vec<Case> = vec![
        (
            "id missing",
            Box::new(|v| v.as_object_mut().unwrap().remove("id").map(|_| ()).unwrap()),
            "document ID is required",
        ),
        ("id empty", Box::new(|v| v["id"] = json!("")), "document ID is required"),
        ("source", Box::new(|v| v["conversation"]["source"] = json!("")), "conversation source is required"),
        (
            "people",
            Box::new(|v| v["conversation"]["people"] = json!([])),
            "at least one person must be specified in the conversation",
        ),
        (
            "user",
            Box::new(|v| v["conversation"]["user"] = json!("")),
            "user field is required to identify the primary user",
        ),
        (
            "user not in people",
            Box::new(|v| v["conversation"]["user"] = json!("cy")),
            "user 'cy' must be included in the people list",
        ),
        (
            "no messages",
            Box::new(|v| v["conversation"]["conversation"] = json!([])),
            "conversation must contain at least one message",
        ),
        (
            "speaker missing",
            Box::new(|v| v["conversation"]["conversation"][1]["speaker"] = json!("")),
            "message 1: speaker is required",
        ),
        (
            "speaker not in people",
            Box::new(|v| v["conversation"]["conversation"][1]["speaker"] = json!("zed")),
            "message 1: speaker 'zed' must be included in the people list",
        ),
        (
            "empty content",
            Box::new(|v| v["conversation"]["conversation"][0]["content"] = json!("  ")),
            "message 0: content must not be empty",
        ),
        (
            "time missing",
            Box::new(|v| {
                v["conversation"]["conversation"][0].as_object_mut().unwrap().remove("time").map(|_| ()).unwrap()
            }),
            "message 0: time is required",
        ),
        (
            "bad time",
            Box::new(|v| v["conversation"]["conversation"][1]["time"] = json!("yesterday")),
            "message 1: time 'yesterday' is not a valid RFC 3339 timestamp",
        ),
    ];
    assert!(validate(&base()).is_ok());
    for (name, mutate, expected) in cases {
        let mut v = base();
        mutate(&mut v);
        assert_eq!(validate(&v).unwrap_err(), expected, "{name}");
    }
}

#[test]
fn bad_documents_are_skipped_good_ones_imported_in_every_layout() {
    let mut bad = base();
    bad["conversation"]["user"] = json!("cy");
    let mut good2 = base();
    good2["id"] = json!("c2");
    let array = serde_json::to_vec(&json!([base(), bad, good2])).unwrap();
    let lines = format!("{}\n{}\nnot json\n{}\n", base(), bad, good2);
    for bytes in [array, lines.into_bytes()] {
        let (ok, invalid) = parse(&bytes);
        assert_eq!(ok.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["c1", "c2"]);
        assert!(invalid.iter().any(|i| i.index == 1 && i.message == "user 'cy' must be included in the people list"));
    }
    let (ok, invalid) = parse(serde_json::to_vec(&base()).unwrap().as_slice());
    assert_eq!((ok.len(), invalid.len()), (1, 0));

    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "chats").unwrap();
    let (ok, _) = parse(&serde_json::to_vec(&json!([base(), good2])).unwrap());
    let report = convdex::import_conversations(&coll, &ok).unwrap();
    assert_eq!((report.conversations, report.messages), (2, 4));
    let docs = coll.session_documents("c1").unwrap();
    let roles: Vec<(Role, Option<String>)> = docs
        .iter()
        .map(|d| match &d.body {
            DocBody::Message(m) => (m.role, m.speaker.clone()),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(roles, [(Role::User, Some("ana".into())), (Role::Other, Some("bo".into()))]);
    // Source and tags are filterable; re-importing replaces instead of duplicating.
    assert_eq!(coll.search("hello").tags_any(["source:slack"]).limit(10).run().unwrap().len(), 4);
    assert_eq!(coll.search("hello").tags_all(["team"]).session("c2").run().unwrap().len(), 2);
    convdex::import_conversations(&coll, &ok).unwrap();
    assert_eq!(coll.len().unwrap(), 4);
}

#[test]
fn a_reply_carries_the_turn_it_answers_scrubbed_cut_and_found_by_its_words() {
    let long = format!("Lisboa, foi ótimo. {}", "很好的旅行 ".repeat(200));
    let doc = json!({"id": "会话-1", "conversation": {"source": "whatsapp", "people": ["Ana", "Bó"], "user": "Ana",
        "conversation": [
            {"speaker": "Ana", "content": "Where did you spend the holiday? token ghp_Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
             "time": "2024-05-01T10:00:00Z"},
            {"speaker": "Bó", "content": long, "time": "2024-05-01T10:01:00Z"},
            {"speaker": "Ana", "content": "nice", "time": "2024-05-01T10:02:00Z"}]}});
    let parsed = validate(&doc).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "旅行").unwrap();
    convdex::import_conversations(&coll, std::slice::from_ref(&parsed)).unwrap();
    let docs = coll.session_documents("会话-1").unwrap();
    assert_eq!(docs[0].answering, None, "the first turn answers nothing");
    // The quote is the previous turn as stored: scrubbed like it.
    let quote = docs[1].answering.as_ref().expect("the reply quotes the question");
    assert_eq!(quote.speaker, "Ana");
    assert_eq!(quote.text, docs[0].content);
    assert!(quote.text.contains("holiday") && !quote.text.contains("ghp_Ab3dE6"), "{quote:?}");
    // A long turn is quoted by its start only.
    assert_eq!(docs[2].answering, Some(Quote::new("Bó", &docs[1].content)));
    assert_eq!(docs[2].answering.as_ref().unwrap().text.chars().count(), Quote::MAX_CHARS);
    // The reply shares no word with the question, yet the question's words find it.
    let hits = coll.search("holiday").mode(SearchMode::Lexical).limit(10).run().unwrap();
    let found: Vec<u64> = hits
        .iter()
        .filter_map(|h| match &h.doc.body {
            DocBody::Message(m) => Some(m.message_index),
            _ => None,
        })
        .collect();
    assert!(found.contains(&0) && found.contains(&1), "{found:?}");
    assert!(!found.contains(&2), "the turn after the reply does not quote the question: {found:?}");
}

fn word() -> impl Strategy<Value = String> {
    "[a-z]{1,8}"
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn every_valid_document_reads_back_identical(
        id in "[a-z0-9]{1,12}",
        people in prop::collection::btree_set(word(), 1..5),
        turns in prop::collection::vec((0usize..5, prop::collection::vec(word(), 1..12), 0i64..2_000_000_000), 1..12),
        tags in prop::collection::vec(word(), 0..3),
        meta in prop::collection::vec((word(), word()), 0..3),
    ) {
        let people: Vec<String> = people.into_iter().collect();
        let user = people[0].clone();
        let conversation: Vec<serde_json::Value> = turns.iter().map(|(s, words, t)| json!({
            "speaker": people[s % people.len()],
            "content": words.join(" "),
            "time": chrono::DateTime::from_timestamp(*t, 0).unwrap().to_rfc3339(),
        })).collect();
        let mut metadata = serde_json::Map::new();
        for (k, v) in &meta {
            metadata.insert(k.clone(), json!(v));
        }
        let doc = json!({"id": id, "conversation": {"source": "whatsapp", "people": people, "user": user,
            "conversation": conversation}, "tags": tags, "metadata": metadata});
        let parsed = validate(&doc).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let index = hash_index(dir.path(), CollectionOptions::default());
        let coll = index.collection("t", "p").unwrap();
        convdex::import_conversations(&coll, std::slice::from_ref(&parsed)).unwrap();
        let back = convdex::read_conversation(&coll, &parsed.id).unwrap().unwrap();
        prop_assert_eq!(back, parsed);
    }
}

#[test]
fn conversations_imported_before_the_answered_turn_are_imported_again_from_their_stored_texts() {
    let doc = json!({"id": "会话-2", "conversation": {"source": "whatsapp", "people": ["Ana", "Bó"], "user": "Ana",
        "conversation": [
            {"speaker": "Ana", "content": "Where did you spend the holiday? ghp_Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
             "time": "2024-05-01T10:00:00Z"},
            {"speaker": "Bó", "content": "Lisboa, foi ótimo.", "time": "2024-05-01T10:01:00Z"},
            {"speaker": "Ana", "content": "nice", "time": "2024-05-01T10:02:00Z"}]},
        "tags": ["Family"], "metadata": {"chat": "ana-bo"}});
    let parsed = validate(&doc).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "旅行").unwrap();
    let other = index.collection("t", "other").unwrap();
    convdex::import_conversations(&coll, std::slice::from_ref(&parsed)).unwrap();
    convdex::import_conversations(&other, &[validate(&base()).unwrap()]).unwrap();
    let imported = coll.session_documents("会话-2").unwrap();
    let conversation = convdex::read_conversation(&coll, "会话-2").unwrap().unwrap();
    // As an earlier version stored them: the same documents, answering nothing, embedded and
    // indexed by words without the turn before.
    let old: Vec<_> = imported.iter().cloned().map(|d| convdex::Document { answering: None, ..d }).collect();
    coll.add(&old).unwrap();
    let reply_found = |coll: &convdex::Collection| {
        let hits = coll.search("holiday").mode(SearchMode::Lexical).limit(10).run().unwrap();
        hits.iter().any(|h| matches!(&h.doc.body, DocBody::Message(m) if m.message_index == 1))
    };
    assert!(!reply_found(&coll), "stored as before, the reply is not found by the question's words");
    assert_eq!(convdex::conversations_without_answering(&coll).unwrap(), ["会话-2"]);
    assert!(convdex::conversations_without_answering(&other).unwrap().is_empty(), "imported by this version");

    let all = convdex::refresh_answering_all(&index, None).unwrap();
    assert!(all.skipped.is_empty());
    let names: Vec<&str> = all.found.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(names, [coll.name()], "only the collection that needed it");
    assert_eq!((all.found[0].1.conversations, all.found[0].1.messages), (1, 3));
    let now = coll.session_documents("会话-2").unwrap();
    assert_eq!(now.len(), imported.len());
    assert_eq!(coll.len().unwrap(), imported.len(), "nothing added, nothing lost");
    for (a, b) in now.iter().zip(&imported) {
        assert_eq!((a.id, &a.content, &a.tags, a.timestamp), (b.id, &b.content, &b.tags, b.timestamp));
        assert_eq!(a.answering, b.answering);
    }
    // Stored texts are scrubbed already; scrubbing them again changes nothing.
    assert!(!now[0].content.contains("ghp_") && now[0].content.contains("holiday"), "{}", now[0].content);
    assert_eq!(convdex::read_conversation(&coll, "会话-2").unwrap().unwrap(), conversation);
    assert!(reply_found(&coll), "the reply is found by the question's words again");
    assert!(convdex::conversations_without_answering(&coll).unwrap().is_empty());
    assert!(convdex::refresh_answering(&coll).unwrap().conversations == 0, "a second run has nothing to do");
    // Both collections now record that their imports carry it, and keep the record when
    // reopened; a conversation imported afterwards carries it as any import does.
    drop((coll, other));
    let index = hash_index(dir.path(), CollectionOptions::default());
    let coll = index.collection("t", "旅行").unwrap();
    convdex::import_conversations(&coll, &[validate(&base()).unwrap()]).unwrap();
    assert!(coll.session_documents("c1").unwrap()[1].answering.is_some());
    assert!(convdex::conversations_without_answering(&coll).unwrap().is_empty());
    assert!(convdex::refresh_answering_all(&index, None).unwrap().found.is_empty());
}
