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

/// The user's answers to the assistant's multiple-choice questions are the user's turn: read
/// from the record's `toolUseResult` (options not taken after them), else from the result's
/// text (older versions); an unanswered (failed) question and any other tool's result are not.
#[test]
fn answers_to_the_assistants_questions_are_user_messages() {
    let mut s = String::new();
    s += &line(
        serde_json::json!({"type":"assistant","uuid":"a1","sessionId":"S","timestamp":"2025-01-01T00:00:01Z","message":{"id":"m1","model":"m","content":[
            {"type":"tool_use","id":"q1","name":"AskUserQuestion","input":{"questions":[{"question":"保存先は？","header":"DB","options":[{"label":"PostgreSQL"},{"label":"SQLite"}],"multiSelect":false}]}}]}}),
    );
    s += &line(
        serde_json::json!({"type":"user","uuid":"u1","sessionId":"S","timestamp":"2025-01-01T00:00:02Z","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"q1","content":"User has answered your questions: \"保存先は？\"=\"SQLite\". You can now continue with the user's answers in mind."}]},
            "toolUseResult":{"questions":[{"question":"保存先は？","options":[{"label":"PostgreSQL"},{"label":"SQLite"}]}],"answers":{"保存先は？":"SQLite"}}}),
    );
    // An older version: the answers only in the result's text.
    s += &line(
        serde_json::json!({"type":"user","uuid":"u2","sessionId":"S","timestamp":"2025-01-01T00:00:03Z","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"q2","content":"User has answered your questions: \"Which \\\"cache\\\"?\"=\"Redis\", \"Scope?\"=\"only the API\". You can now continue."}]}}),
    );
    // A question that failed, and another tool's result: no message.
    s += &line(
        serde_json::json!({"type":"user","uuid":"u3","sessionId":"S","timestamp":"2025-01-01T00:00:04Z","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"q3","is_error":true,"content":"<tool_use_error>InputValidationError</tool_use_error>"}]}}),
    );
    s += &line(
        serde_json::json!({"type":"user","uuid":"u4","sessionId":"S","timestamp":"2025-01-01T00:00:05Z","message":{"role":"user","content":[
            {"type":"tool_result","tool_use_id":"t9","content":"file written"}]},"toolUseResult":{"type":"create"}}),
    );
    let p = parse(s.as_bytes());
    let users: Vec<(&str, &str)> =
        p.messages.iter().filter(|m| m.role == Role::User).map(|m| (m.uuid.as_str(), m.text.as_str())).collect();
    assert_eq!(
        users,
        [
            ("u1", "保存先は？ → SQLite (not: PostgreSQL)"),
            ("u2", "Which \\\"cache\\\"? → Redis\nScope? → only the API")
        ]
    );
}

#[test]
fn a_line_with_bytes_that_are_not_utf8_keeps_its_message() {
    let good = line(
        serde_json::json!({"type":"user","uuid":"u1","sessionId":"S","cwd":"/p","timestamp":"2025-01-01T00:00:00.000Z","message":{"role":"user","content":"把会话存到 Redis"}}),
    );
    // Three bytes of no character cut into the request, as a damaged copy holds them.
    let at = good.find("Redis").unwrap();
    let mut bytes = good.as_bytes()[..at].to_vec();
    bytes.extend([0xff, 0xfe, 0xc3]);
    bytes.extend(&good.as_bytes()[at..]);
    // A line that is not JSON, whatever its bytes, is still skipped and reported.
    bytes.extend(b"{\"type\":\"user\",\xff\n");
    let p = parse(&bytes);
    assert_eq!(p.messages.len(), 1, "{:?}", p.skipped);
    assert_eq!(p.messages[0].text, "把会话存到 \u{fffd}\u{fffd}\u{fffd}Redis");
    assert_eq!(p.skipped.len(), 1);
    assert_eq!(p.skipped[0].line, 2);
    assert!(p.skipped[0].reason.starts_with("malformed JSON"), "{:?}", p.skipped);
}
