use super::*;

fn line(v: serde_json::Value) -> String {
    format!("{v}\n")
}

#[test]
fn merges_streaming_chunks_and_pairs_results_out_of_order() {
    let mut s = String::new();
    s += &line(
        serde_json::json!({"type":"user","uuid":"u1","sessionId":"S","cwd":"/p","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"fix the parser"}}),
    );
    // A tool result written before the tool_use that caused it.
    s += &line(
        serde_json::json!({"type":"user","uuid":"u2","sessionId":"S","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"[main 1a2b3c4] fix: parser handles torn lines"}]},"toolUseResult":{"stdout":"[main 1a2b3c4] fix: parser handles torn lines"}}),
    );
    s += &line(
        serde_json::json!({"type":"assistant","uuid":"a1","sessionId":"S","cwd":"/p","timestamp":"2025-01-01T00:00:01.000Z","message":{"id":"msg1","model":"m","content":[{"type":"thinking","thinking":"hmm"}]}}),
    );
    s += &line(
        serde_json::json!({"type":"assistant","uuid":"a2","sessionId":"S","cwd":"/p","timestamp":"2025-01-01T00:00:01.500Z","message":{"id":"msg1","model":"m","content":[{"type":"text","text":"Editing now."}]}}),
    );
    s += &line(
        serde_json::json!({"type":"assistant","uuid":"a3","sessionId":"S","cwd":"/p","timestamp":"2025-01-01T00:00:02.000Z","message":{"id":"msg1","model":"m","content":[{"type":"tool_use","id":"t0","name":"Edit","input":{"file_path":"/p/src/parse.rs","old_string":"a","new_string":"b"}}]}}),
    );
    s += &line(
        serde_json::json!({"type":"assistant","uuid":"a4","sessionId":"S","cwd":"/p","timestamp":"2025-01-01T00:00:02.500Z","message":{"id":"msg1","model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"git commit -am 'fix'"}}]}}),
    );
    s += "{\"type\":\"user\",\"broken\n";
    s += "{\"torn";
    let p = parse(s.as_bytes());
    assert_eq!(p.session_id.as_deref(), Some("S"));
    assert_eq!(p.messages.len(), 2);
    assert_eq!(p.messages[1].uuid, "a1");
    assert_eq!(p.messages[1].text, "Editing now.");
    assert_eq!(p.messages[1].files[0].path, "/p/src/parse.rs");
    assert_eq!(p.messages[1].files[0].action, FileAction::Edited);
    assert_eq!(
        p.messages[1].commits,
        vec![CommitRef { sha: "1a2b3c4".into(), message: "fix: parser handles torn lines".into() }]
    );
    assert_eq!(p.skipped.iter().map(|s| s.line).collect::<Vec<_>>(), vec![7, 8]);
    assert!(p.skipped[1].reason.contains("torn"));
    assert_eq!(p.consumed, s.len() - "{\"torn".len());
}

#[test]
fn noise_is_not_a_message() {
    let mut s = String::new();
    for (extra, content) in [
        (serde_json::json!({"isMeta": true}), serde_json::json!("<command-name>/x</command-name>")),
        (serde_json::json!({}), serde_json::json!("<command-name>/clear</command-name>")),
        (serde_json::json!({}), serde_json::json!("[Request interrupted by user]")),
        (serde_json::json!({"isCompactSummary": true}), serde_json::json!("This session is being continued")),
        (serde_json::json!({}), serde_json::json!([{"type":"image","source":{"type":"base64","data":"AAAA"}}])),
    ] {
        let mut v =
            serde_json::json!({"type":"user","uuid":"u","sessionId":"S","message":{"role":"user","content":content}});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        s += &line(v);
    }
    s += &line(
        serde_json::json!({"type":"user","uuid":"ok","sessionId":"S","message":{"role":"user","content":[{"type":"text","text":"real <system-reminder>noise</system-reminder>question"}]}}),
    );
    s += &line(serde_json::json!({"type":"brand-new-type","x":1}));
    s += &line(serde_json::json!([1, 2]));
    let p = parse(s.as_bytes());
    assert_eq!(p.messages.len(), 1);
    assert_eq!(p.messages[0].text, "real question");
    assert_eq!(p.skipped.len(), 1);
}

/// Found by the fuzzer (seed 20261123, case 46122): line numbers near `u64::MAX` overflowed.
#[test]
fn huge_line_numbers_saturate() {
    let mut s = String::new();
    s += &line(
        serde_json::json!({"type":"assistant","uuid":"a1","sessionId":"S","timestamp":"2025-01-01T00:00:01Z","message":{"id":"m","model":"m","content":[
                {"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/a.rs","offset":u64::MAX,"limit":u64::MAX}},
                {"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"/p/b.rs","old_string":"a","new_string":"b"}}]}}),
    );
    s += &line(
        serde_json::json!({"type":"user","uuid":"r1","sessionId":"S","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"ok"}]},
                "toolUseResult":{"structuredPatch":[{"newStart":u64::MAX,"newLines":u64::MAX}]}}),
    );
    let p = parse(s.as_bytes());
    let files = &p.messages[0].files;
    assert_eq!(files[0].line_ranges, vec![(u32::MAX, u32::MAX)]);
    assert_eq!(files[1].line_ranges, vec![(u32::MAX, u32::MAX)]);
}

#[test]
fn paths_relative_to_root() {
    assert_eq!(relative_to("/home/u/proj/src/a.rs", "/home/u/proj"), "src/a.rs");
    assert_eq!(relative_to("/home/u/project2/a.rs", "/home/u/proj"), "/home/u/project2/a.rs");
    assert_eq!(relative_to("d:\\Work\\App\\src\\x.cs", "D:\\Work\\App"), "src/x.cs");
}
