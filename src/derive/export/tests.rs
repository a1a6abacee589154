use super::*;

fn sample() -> V1 {
    let mut files = BTreeMap::new();
    files.insert(
        "src/db.rs".to_string(),
        FileInfo { action: Action::Created, role: "backend".into(), deps: vec![], status: FileStatus::Complete },
    );
    let session = |id: &str, start: &str| Session {
        id: id.into(),
        start: Some(start.into()),
        end: None,
        goal: "Add a storage layer".into(),
        state: State::Completed,
        decisions: vec![Decision {
            id: "d1".into(),
            what: "Use redb".into(),
            why: "pure Rust".into(),
            alt: vec!["sqlite".into()],
            impact: vec!["src/db.rs".into()],
        }],
        files: files.clone(),
        patterns: [("rust".to_string(), "key topic".to_string())].into(),
        blockers: vec![Blocker { id: "e1".into(), desc: "cargo test failed".into(), status: BlockerStatus::Open }],
        next: vec!["benchmarks".into()],
        kv: BTreeMap::new(),
    };
    V1 {
        v: "1.0".into(),
        project: "acme".into(),
        created: Some("2025-01-15T16:30:00Z".into()),
        updated: None,
        sessions: vec![session("s1", "2025-01-15T16:30:00Z"), session("s2", "2025-01-16T09:00:00Z")],
    }
}

#[test]
fn layered_form_shares_identical_rows_and_round_trips() {
    let v1 = sample();
    let v2 = encode(&v1).unwrap();
    assert_eq!(v2["meta"]["c"], 1736958600);
    assert_eq!(v2["decisions"].as_array().unwrap().len(), 1, "identical decision stored once");
    assert_eq!(v2["sessions"][0][4], 1);
    assert_eq!(v2["files"][0][1], 0);
    assert_eq!(decode(&v2).unwrap(), v1);
}

#[test]
fn trailing_empty_fields_are_left_out_and_read_back_as_empty() {
    let mut v1 = sample();
    let s = &mut v1.sessions[0];
    s.decisions[0] =
        Decision { id: "d2".into(), what: "Keep it".into(), why: String::new(), alt: vec![], impact: vec![] };
    s.patterns = [("rust".to_string(), String::new())].into();
    s.blockers.clear();
    s.next.clear();
    let v2 = encode(&v1).unwrap();
    let d = v2["sessions"][0][5][0].as_u64().unwrap() as usize;
    assert_eq!(v2["decisions"][d].as_array().unwrap().len(), 2, "{}", v2["decisions"]);
    assert_eq!(v2["sessions"][0].as_array().unwrap().len(), 8, "{}", v2["sessions"][0]);
    assert_eq!(v2["patterns"][0].as_array().unwrap().len(), 1);
    assert_eq!(decode(&v2).unwrap(), v1);
}

#[test]
fn bad_input_is_a_typed_error() {
    let mut v1 = sample();
    v1.created = Some("2025-01-15T16:30:00.5Z".into());
    assert!(encode(&v1).unwrap_err().to_string().contains("whole-second"));
    let mut v2 = encode(&sample()).unwrap();
    v2["sessions"][0][5] = json!([7]);
    assert!(decode(&v2).unwrap_err().to_string().contains("row 7"));
    assert!(decode(&json!({"v": "1.0"})).is_err());
    let mut v2 = encode(&sample()).unwrap();
    v2["sessions"][0][4] = json!(9);
    assert!(decode(&v2).unwrap_err().to_string().contains("unknown code"));
}

#[test]
fn sizes_count_tokens() {
    let s = sizes(&sample()).unwrap();
    assert!(s.v2.bytes < s.v1_min.bytes && s.v1_min.bytes < s.v1_pretty.bytes, "{s:?}");
    assert!(s.v2.tokens > 0 && s.v2.tokens < s.v1_pretty.tokens);
}
