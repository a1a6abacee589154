//! Decisions have a life: a later decision on the same subject supersedes the earlier one,
//! linked both ways; re-indexing with `force` yields the same decisions (no duplicates).

use std::path::Path;

use convdex::{DecisionStatus, DocBody, DocKind, IndexOptions};

use crate::common::hash_index;

fn write_session(dir: &Path, id: &str, day: u32, text: &str) {
    let rec = serde_json::json!({"type":"user","uuid":format!("{id}-u"),"sessionId":id,"cwd":"/home/dev/jobs",
        "timestamp":format!("2026-03-{day:02}T10:00:00.000Z"),"message":{"role":"user","content":text}});
    let reply = serde_json::json!({"type":"assistant","uuid":format!("{id}-a"),"sessionId":id,"cwd":"/home/dev/jobs",
        "timestamp":format!("2026-03-{day:02}T10:00:09.000Z"),"message":{"id":format!("{id}-m"),"model":"m","role":"assistant","content":[{"type":"text","text":"Done, the queue adapter is updated."}]}});
    std::fs::write(dir.join(format!("{id}.jsonl")), format!("{rec}\n{reply}\n")).unwrap();
}

#[test]
fn reversal_supersedes_and_reaffirmation_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("projects/-home-dev-jobs");
    std::fs::create_dir_all(&proj).unwrap();
    write_session(&proj, "s1", 1, "Let's use Postgres for the job queue.");
    write_session(
        &proj,
        "s2",
        8,
        "Let's switch the job queue to Redis instead of Postgres because the polling load is too high.",
    );
    write_session(&proj, "s3", 15, "Switching back to Postgres from Redis because we need transactional enqueue.");
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), convdex::CollectionOptions::default());
    let opts = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let report = convdex::index_paths(&index, &[tmp.path().join("projects")], &opts).unwrap();
    assert_eq!(report.decisions, 3);
    let coll = index.collection("t", "jobs").unwrap();
    let state = |coll: &convdex::Collection| {
        let mut v: Vec<(String, DecisionStatus, usize, bool)> = coll
            .documents_of_kind(DocKind::Decision)
            .unwrap()
            .into_iter()
            .map(|d| match d.body {
                DocBody::Decision(f) => (d.session_id, f.status, f.supersedes.len(), f.superseded_by.is_some()),
                _ => unreachable!(),
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    let expected = vec![
        ("s1".to_string(), DecisionStatus::Superseded, 0, true),
        ("s2".to_string(), DecisionStatus::Superseded, 1, true),
        ("s3".to_string(), DecisionStatus::Active, 1, false),
    ];
    assert_eq!(state(&coll), expected);
    // Links point both ways.
    let all = coll.documents_of_kind(DocKind::Decision).unwrap();
    for d in &all {
        if let DocBody::Decision(f) = &d.body
            && let Some(by) = f.superseded_by
        {
            let later = coll.get(by).unwrap().unwrap();
            let DocBody::Decision(lf) = later.body else { panic!() };
            assert!(lf.supersedes.contains(&d.id));
        }
    }
    // Sessions are linked in time order.
    let s2 = coll.session_documents("s2").unwrap().into_iter().find(|d| d.kind() == DocKind::Summary).unwrap();
    let DocBody::Summary(sf) = s2.body else { panic!() };
    assert_eq!((sf.previous_session.as_deref(), sf.next_session.as_deref()), (Some("s1"), Some("s3")));
    // Force re-index: same decisions, same states, no duplicates.
    let forced =
        convdex::index_paths(&index, &[tmp.path().join("projects")], &IndexOptions { force: true, ..opts }).unwrap();
    assert_eq!(forced.sessions_reindexed, 3);
    assert_eq!(state(&coll), expected);
    assert_eq!(coll.stats().unwrap().decisions, 3);
    assert_eq!(coll.stats().unwrap().summaries, 3);
    // The handoff brief describes the latest session.
    let brief = coll.handoff().unwrap().unwrap();
    assert!(brief.contains("session s3") && brief.contains("Switching back to Postgres"), "{brief}");
}
