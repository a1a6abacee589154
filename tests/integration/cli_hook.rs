//! The `convdex` binary: `index --hook` (Claude Code's `SessionEnd` payload on stdin indexes
//! that session; a bad payload never fails the user's session: exit 0, a message on stderr),
//! then `session`, `export` and `search` on the result: JSON shapes, `NO_COLOR`, exit codes.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn hook(data: &Path, payload: &str) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_convdex"))
        .env("CONVDEX_WARM", "off")
        .args(["--data-dir", data.to_str().unwrap(), "index", "--hook"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn session_end_payload_indexes_the_session_and_bad_payloads_exit_zero() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (_history, transcript) = crate::common::sample_history();
    let data = tempfile::tempdir().unwrap();
    // The payload Claude Code sends to a SessionEnd hook.
    let payload = serde_json::json!({
        "session_id": transcript.file_stem().unwrap().to_string_lossy(),
        "transcript_path": transcript,
        "cwd": "/home/dev/acme-api",
        "hook_event_name": "SessionEnd",
        "reason": "exit",
    });
    let out = hook(data.path(), &payload.to_string());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "the hook is quiet: {}", String::from_utf8_lossy(&out.stdout));
    // Its run is recorded for `convdex doctor`.
    let last = || -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(data.path().join("hooks/session-end.json")).unwrap()).unwrap()
    };
    assert_eq!((last()["ok"].as_bool(), last()["error"].is_null()), (Some(true), true), "{}", last());
    // The session is searchable afterwards.
    let search = Command::new(env!("CARGO_BIN_EXE_convdex"))
        .env("CONVDEX_WARM", "off")
        .args(["--data-dir", data.path().to_str().unwrap(), "search", "redis sessions", "--json", "--limit", "3"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(search.status.success(), "{}", String::from_utf8_lossy(&search.stderr));
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&search.stdout).unwrap();
    assert!(!hits.is_empty());
    assert!(hits.iter().all(|h| h["session"] == payload["session_id"]));
    // Other read commands on the same data: shapes and exit codes (0 ok, 1 error, 2 usage).
    let cli = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_convdex"))
            .env("CONVDEX_WARM", "off")
            .args(["--data-dir", data.path().to_str().unwrap()])
            .args(args)
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let sid = payload["session_id"].as_str().unwrap();
    let out = cli(&["session", &sid[..8], "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["session"], sid);
    assert!(v["summary"].as_str().is_some_and(|s| s.contains("Goal:")));
    assert!(v["messages"].as_array().is_some_and(|m| m.len() > 5));
    let out = cli(&["export", "--format", "v2"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v2: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(convdex::export::decode(&v2).unwrap().sessions.len(), 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("tokens"));
    let out = cli(&["search", "\"expired\"", "--mode", "lexical"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("[expired]") && !text.contains('\x1b'), "{text}");
    let out = cli(&["session", "zzz"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: no session starts with"));
    let out = cli(&["search", "x", "--mode", "fuzzy"]);
    assert_eq!(out.status.code(), Some(2), "usage errors exit 2");
    // Bad payloads: exit 0, a message on stderr.
    for bad in ["not json", "{}", r#"{"transcript_path": "/nonexistent/x.jsonl"}"#] {
        let out = hook(data.path(), bad);
        assert!(out.status.success(), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("convdex hook: "), "{bad}: {err}");
        assert_eq!(last()["ok"], false, "{bad}: the failed run is recorded");
        assert!(last()["error"].as_str().is_some_and(|e| err.contains(e)), "{bad}: {}", last());
    }
}
