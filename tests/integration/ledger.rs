//! The decision ledger on real transcripts of the development part of `../shared/data/fresh/`
//! (messages named by file and uuid): an approving reply and a pick among the assistant's
//! options become decisions naming what was approved or picked, the assistant's restatement
//! right after adds none, and `as_of` answers what was believed before and after a decision was
//! replaced.

use std::path::{Path, PathBuf};

use convdex::{DecisionFilter, DocBody, DocKind, IndexOptions};

use crate::common::hash_index;

fn fresh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/fresh/transcripts")
}

const VIBELIFE: &str = "aistrad+work/.claude/projects/-home-aiscend-work-vibelife";

/// The decisions indexing stores for one session file, with the uuid of the message each came
/// from.
fn decisions_of(file: &Path) -> Vec<(String, String)> {
    let parsed = convdex::ingest::claude::parse(&std::fs::read(file).unwrap());
    let f = convdex::derive::session::SessionFile { parsed: &parsed, agent: None };
    let (docs, _) = convdex::derive::session::documents("s", "", convdex::Agent::default(), &[f]);
    convdex::derive::session::decision_documents(&docs)
        .into_iter()
        .filter_map(|d| match d.body {
            DocBody::Decision(f) => Some((f.source_message_uuid, f.summary)),
            _ => None,
        })
        .collect()
}

#[test]
fn an_approval_names_the_proposal_and_a_restatement_adds_nothing() {
    // A two-character approval of the assistant's proposal (labelled `approval` in
    // decision_labels_fresh.json): its decision is the proposal, not the reply.
    let approving = fresh().join(VIBELIFE).join("72b23e39-3db3-4236-87f0-7243e270d5a1.jsonl");
    let found = decisions_of(&approving);
    let reply: Vec<&String> =
        found.iter().filter(|(m, _)| m == "799dae15-0cfe-4e07-95af-3371cc90a2d8").map(|(_, s)| s).collect();
    assert_eq!(reply.len(), 1, "{found:?}");
    assert!(reply[0].chars().count() > 10, "the summary names the proposal, not the reply: {}", reply[0]);
    // Answers to the assistant's questions (labelled `pick`), each followed by an assistant
    // message that restates them (labelled not a decision): the picks are decisions, the
    // restatements none.
    let asking = fresh().join(VIBELIFE).join("1f7a848c-1db2-42b6-97d4-32f124a656cc.jsonl");
    let found = decisions_of(&asking);
    for (pick, restatement) in [
        ("e7d70f77-f27d-434c-b2e0-65c4ef53eb32", "93f46788-891e-46a4-8d84-11c942b13761"),
        ("a6968ee7-a2a1-4b16-bea6-16855a592fed", "4240b441-6c45-4858-b520-da6fd171fc7e"),
    ] {
        assert!(found.iter().any(|(m, _)| m == pick), "the pick {pick} is a decision: {found:?}");
        assert!(!found.iter().any(|(m, _)| m == restatement), "the restatement {restatement} adds a decision");
    }
}

#[test]
fn as_of_a_date_answers_what_was_believed_then() {
    let tmp = tempfile::tempdir().unwrap();
    let index = hash_index(tmp.path(), Default::default());
    let options = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    // Every development owner's history: a decision replaced by a later one on the same
    // subject is among them.
    let owners = ["aistrad+work", "umaionigiri+claudefiles", "JiangBeta+hyprland-elite-desktop", "bradymholt+dotfiles"];
    let paths: Vec<PathBuf> = owners.iter().map(|o| fresh().join(o)).collect();
    let report = convdex::index_paths(&index, &paths, &options).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let all = DecisionFilter { all: true, ..Default::default() };
    let ledger = index.ledger(None, &all).unwrap().found;
    assert!(!ledger.is_empty());
    let replaced: Vec<_> = ledger.iter().filter(|e| e.replaced_by.is_some()).collect();
    assert!(!replaced.is_empty(), "no decision of the development histories was replaced");
    println!("{} decisions, {} replaced by a later one", ledger.len(), replaced.len());
    let e = replaced[0];
    let by = e.replaced_by.as_ref().unwrap();
    let DocBody::Decision(f) = &e.decision.body else { panic!("not a decision") };
    assert_eq!(f.status, convdex::DecisionStatus::Superseded);
    // Before the replacement was made, the decision was in force and its replacement unknown.
    let before =
        DecisionFilter { all: true, as_of: Some(by.time - chrono::Duration::seconds(1)), ..Default::default() };
    let then = index.ledger(Some(&e.project), &before).unwrap().found;
    let it = then.iter().find(|x| x.decision.id == e.decision.id).expect("made before its replacement");
    assert!(it.replaced_by.is_none());
    assert!(matches!(&it.decision.body, DocBody::Decision(f) if f.status == convdex::DecisionStatus::Active));
    assert!(!then.iter().any(|x| x.decision.id == by.id), "the replacement did not exist yet");
    assert!(then.iter().all(|x| x.decision.timestamp <= by.time - chrono::Duration::seconds(1)));
    // From the replacement on, it is superseded, and the replacement names what it replaced.
    let after = DecisionFilter { all: true, as_of: Some(by.time), ..Default::default() };
    let now = index.ledger(Some(&e.project), &after).unwrap().found;
    let it = now.iter().find(|x| x.decision.id == e.decision.id).unwrap();
    assert_eq!(it.replaced_by.as_ref().map(|r| r.id), Some(by.id));
    let replacement = now.iter().find(|x| x.decision.id == by.id).unwrap();
    assert!(replacement.replaces.iter().any(|r| r.id == e.decision.id));
    // Only decisions active then, without `all`.
    let active = DecisionFilter { as_of: Some(by.time - chrono::Duration::seconds(1)), ..Default::default() };
    let active = index.ledger(Some(&e.project), &active).unwrap().found;
    assert!(active.iter().any(|x| x.decision.id == e.decision.id));
    assert!(active.iter().all(|x| x.decision.kind() == DocKind::Decision));
}

/// "Which … did we settle on, and why?" is answered by the decision, not by the message that
/// asked the same thing back then (real model; the decision lift only applies to questions
/// about a past decision).
#[test]
fn a_question_about_a_past_decision_gets_the_decision_first() {
    use convdex::{DecisionFields, DecisionStatus, Document, ExtractionMethod, Query, Role};
    let tmp = tempfile::tempdir().unwrap();
    let real: std::sync::Arc<dyn convdex::Embedder> =
        std::sync::Arc::new(convdex::FastEmbedder::new().expect("model provisioned: run `make models`"));
    let index = convdex::Index::open(tmp.path(), convdex::Options::default().embedder(real)).unwrap();
    let coll = index.collection("t", "auth").unwrap();
    let asked = Document::message(
        "s1",
        "m1",
        0,
        Role::User,
        "Which password hashing should we use for the login service, bcrypt or argon2?",
    );
    let answer = Document::message(
        "s1",
        "m2",
        1,
        Role::Assistant,
        "argon2id resists GPU cracking better than bcrypt and has no 72-byte input limit.",
    );
    let mut decision =
        Document::message("s1", "m3", 2, Role::User, "Use argon2id for password hashing in the login service");
    decision.id = Document::stable_id("s1", convdex::DocKind::Decision, "m3#0");
    decision.body = convdex::DocBody::Decision(DecisionFields {
        summary: "Use argon2id for password hashing in the login service".into(),
        alternatives: vec!["bcrypt".into()],
        reasoning: Some("resists GPU cracking better".into()),
        confidence: 0.6,
        source_message_uuid: "m3".into(),
        status: DecisionStatus::Active,
        superseded_by: None,
        supersedes: Vec::new(),
    });
    decision.extraction_method = ExtractionMethod::Heuristic;
    coll.add(&[asked, answer, decision.clone()]).unwrap();
    let question = "which password hashing did we settle on, and why?";
    assert!(convdex::asks_about_a_decision(question));
    assert!(!convdex::asks_about_a_decision("how do I hash a password with argon2 in rust"));
    let hits = coll.query(&Query::new(question)).unwrap().hits;
    assert_eq!(hits[0].doc.id, decision.id, "{:?}", hits.iter().map(|h| &h.doc.content).collect::<Vec<_>>());
    assert_eq!(hits[0].signals.decision, convdex::DEFAULT_DECISION_LIFT);
    // Without the lift, its score is the lift lower.
    let mut plain = Query::new(question);
    plain.ranking.decision_lift = 0.0;
    let without = coll.query(&plain).unwrap().hits;
    let score = without.iter().find(|h| h.doc.id == decision.id).unwrap().score;
    assert!((hits[0].score - score - convdex::DEFAULT_DECISION_LIFT).abs() < 1e-4);
}
