//! `convdex mcp` driven by a real MCP client (rmcp's): initialize, list tools, call `search`
//! with filters on an indexed sample (again through a warm helper: the same text), read a session, call tools with bad arguments and get
//! tool errors (the server keeps serving), then shut down cleanly (exit 0 on end of input).

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use serde_json::{Value, json};

fn text(r: &CallToolResult) -> String {
    r.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("\n")
}

fn call(name: &'static str, args: Value) -> CallToolRequestParams {
    let Value::Object(map) = args else { panic!("arguments are an object") };
    CallToolRequestParams::new(name).with_arguments(map)
}

#[test]
fn mcp_server_answers_a_real_client() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_convdex");
    let out = std::process::Command::new(bin)
        .args(["--data-dir", data.path().to_str().unwrap(), "index", "examples/sample/projects"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let mut child = tokio::process::Command::new(bin)
            .args(["--data-dir", data.path().to_str().unwrap(), "mcp"])
            .current_dir(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let (stdout, stdin) = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
        let client = ().serve((stdout, stdin)).await.expect("initialize");
        let info = client.peer_info().expect("server info after initialize");
        assert!(info.capabilities.tools.is_some());

        let tools = client.list_all_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        names.sort();
        assert_eq!(names, ["decisions", "handoff", "index", "remember", "search", "session"]);
        let search = tools.iter().find(|t| t.name == "search").unwrap();
        let props = search.input_schema.get("properties").and_then(Value::as_object).unwrap();
        for p in ["query", "project", "type", "tags", "session", "file", "file_prefix", "since", "until", "mode", "limit", "sessions", "translate"] {
            assert!(props.contains_key(p), "search schema lacks {p}: {props:?}");
        }
        let required = search.input_schema.get("required").and_then(Value::as_array).unwrap();
        assert_eq!(required, &vec![json!("query")]);

        // Search with filters: project, type, file, time range, mode.
        let filtered = json!({"query": "why does login fail when the token expired", "project": "acme", "type": "message",
                       "file": "src/auth.rs", "since": "2026-10-01", "until": "2026-10-31", "mode": "hybrid", "limit": 3});
        let r = client.call_tool(call("search", filtered.clone())).await.unwrap();
        let t = text(&r);
        assert_ne!(r.is_error, Some(true), "{t}");
        assert!(t.contains("acme-api") && t.contains("session 7f3c1a2e") && t.contains("src/auth.rs"), "{t}");
        assert!(t.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).count() <= 3, "{t}");
        let listed = t.lines().filter(|l| l.split_once(". relevance ").is_some_and(|(n, _)| n.parse::<usize>().is_ok())).count();
        // With two hits or more, a line above them gives the chance that one is an answer (as the
        // CLI prints it).
        assert_eq!(t.contains(&format!("chance one of these {listed} hits is an answer: ")), listed >= 2, "{t}");
        // A warm helper of the data dir answers the same search with the same text.
        let helper_cmd = |args: &[&str]| {
            std::process::Command::new(bin).arg("--data-dir").arg(data.path()).args(args).output().unwrap()
        };
        let mut helper = std::process::Command::new(bin)
            .args(["--data-dir", data.path().to_str().unwrap(), "warm", "--idle", "120"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while !helper_cmd(&["warm", "--status"]).status.success() {
            assert!(start.elapsed() < std::time::Duration::from_secs(120), "no warm helper answered");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let again = client.call_tool(call("search", filtered.clone())).await.unwrap();
        assert_eq!(text(&again), t);
        let status: Value = serde_json::from_slice(&helper_cmd(&["warm", "--status", "--json"]).stdout).unwrap();
        assert_eq!(status["searches"], 1, "the helper was asked: {status}");
        assert_eq!(status["collections"], 1, "the helper could open the collection, so it answered: {status}");
        assert!(helper_cmd(&["warm", "--stop"]).status.success());
        helper.wait().unwrap();
        // A filter that excludes everything.
        let r = client.call_tool(call("search", json!({"query": "token", "since": "2099-01-01"}))).await.unwrap();
        assert_ne!(r.is_error, Some(true));
        assert!(text(&r).starts_with("no hits"), "{}", text(&r));
        // Words in Chinese find the English messages through the glossary, unless told not to.
        let chinese = json!({"query": "令牌", "mode": "lexical"});
        let r = client.call_tool(call("search", chinese.clone())).await.unwrap();
        assert!(text(&r).contains("session 7f3c1a2e") && text(&r).contains("words (translated)"), "{}", text(&r));
        let mut own = chinese;
        own["translate"] = json!(false);
        let r = client.call_tool(call("search", own)).await.unwrap();
        assert!(text(&r).starts_with("no hits"), "{}", text(&r));
        // Sessions instead of messages: the one session, once, with its hits under it.
        let r = client.call_tool(call("search", json!({"query": "token expired", "sessions": true, "limit": 3}))).await.unwrap();
        let t = text(&r);
        assert_ne!(r.is_error, Some(true), "{t}");
        assert!(t.starts_with("1 sessions for") && t.contains("acme-api · session 7f3c1a2e"), "{t}");
        assert!(t.lines().filter(|l| l.starts_with("   - ")).count() >= 1, "{t}");
        let r = client.call_tool(call("search", json!({"query": "token", "sessions": true, "since": "2099-01-01"}))).await.unwrap();
        assert!(text(&r).starts_with("no sessions"), "{}", text(&r));

        // One session, paged; decisions; handoff.
        let r = client.call_tool(call("session", json!({"id": "7f3c", "limit": 2}))).await.unwrap();
        let t = text(&r);
        assert_ne!(r.is_error, Some(true), "{t}");
        assert!(t.contains("7f3c1a2e-5b4d-4c6e-9a8b-1d2e3f4a5b6c") && t.contains("[0]") && t.contains("next page: offset 2"), "{t}");
        let r = client.call_tool(call("decisions", json!({"project": "acme-api"}))).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let r = client.call_tool(call("handoff", json!({}))).await.unwrap();
        assert!(text(&r).contains("acme") || text(&r).contains('#'), "{}", text(&r));

        // Remember a decision through the tool: stored once, found by search and by decisions.
        let note = json!({"text": "Rate limits stay in Redis, never in process memory", "why": "several API pods",
                          "project": "acme-api", "files": ["src/limits.rs"]});
        let r = client.call_tool(call("remember", note.clone())).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert!(text(&r).starts_with("remembered in acme-api"), "{}", text(&r));
        let r = client.call_tool(call("remember", note)).await.unwrap();
        assert!(text(&r).starts_with("already remembered"), "{}", text(&r));
        let r = client
            .call_tool(call("search", json!({"query": "where do rate limits live", "type": "decision", "mode": "lexical"})))
            .await
            .unwrap();
        assert!(text(&r).contains("Redis"), "{}", text(&r));
        let r = client.call_tool(call("decisions", json!({"project": "acme-api", "file": "src/limits.rs"}))).await.unwrap();
        assert!(text(&r).contains("Redis") && text(&r).contains("several API pods"), "{}", text(&r));

        // Bad arguments are tool errors with a message; the server keeps serving.
        for (name, args, says) in [
            ("search", json!({"limit": 3}), "query"),
            ("search", json!({"query": "x", "limit": "ten"}), "invalid type: string \"ten\""),
            ("search", json!({"query": "x", "mode": "fuzzy"}), "unknown search mode"),
            ("search", json!({"query": "x", "since": "last week"}), "YYYY-MM-DD"),
            ("search", json!({"query": "x", "colour": "red"}), "colour"),
            ("session", json!({"id": "zzzz"}), "no session starts with"),
            ("index", json!({"path": "/nonexistent/history"}), "does not exist"),
            ("remember", json!({"text": "  "}), "nothing to remember"),
            ("remember", json!({"text": "x", "project": "no-such-project"}), "no-such-project"),
        ] {
            let r = client.call_tool(call(name, args.clone())).await.unwrap();
            assert_eq!(r.is_error, Some(true), "{name} {args}: {}", text(&r));
            assert!(text(&r).contains(says), "{name} {args}: {}", text(&r));
        }
        let r = client.call_tool(call("search", json!({"query": "expired session token", "limit": 1}))).await.unwrap();
        assert_ne!(r.is_error, Some(true), "still serving after errors: {}", text(&r));
        // A folder that holds no history is indexed (nothing) with a note naming it.
        let empty = tempfile::tempdir().unwrap();
        let r = client.call_tool(call("index", json!({"path": empty.path()}))).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        assert!(text(&r).contains("no session found under"), "{}", text(&r));

        // Shut down: the client closes the connection; the server exits by itself, successfully.
        client.cancel().await.unwrap();
        let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait()).await.expect("server exits").unwrap();
        assert!(status.success(), "{status:?}");
    });
}

/// Raw lines a broken client might send get JSON-RPC errors, never silence: not JSON (parse
/// error, id null), a lone surrogate, `params` of the wrong type (the error carries the request
/// id), a line over the size limit; a 100k-word query is a quick tool error. The server keeps
/// serving after each, and exits 0 at the end of input.
#[test]
fn malformed_messages_get_json_rpc_errors() {
    use std::io::{BufRead, BufReader, Write};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let data = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_convdex");
    let out = std::process::Command::new(bin)
        .args(["--data-dir", data.path().to_str().unwrap(), "index", "examples/sample/projects"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut child = std::process::Command::new(bin)
        .args(["--data-dir", data.path().to_str().unwrap(), "mcp"])
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |line: &[u8]| -> Value {
        stdin.write_all(line).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        serde_json::from_str(&lines.next().expect("an answer").unwrap()).unwrap()
    };
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",
        "capabilities":{},"clientInfo":{"name":"raw","version":"0"}}});
    assert!(ask(init.to_string().as_bytes())["result"]["serverInfo"].is_object());
    let notified = json!({"jsonrpc":"2.0","method":"notifications/initialized"}).to_string();
    let r = ask(format!("{notified}\nthis is not json").as_bytes());
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (Value::Null, json!(-32700)), "{r}");
    let r = ask(
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search","arguments":{"query":"\ud800"}}}"#,
    );
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let r = ask(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"search"}"#);
    assert_eq!((r["id"].clone(), r["error"]["code"].clone()), (json!(4), json!(-32602)), "{r}");
    let r = ask(format!("\"{}\"", "x".repeat(5 << 20)).as_bytes());
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let long = "word ".repeat(100_000);
    let started = std::time::Instant::now();
    let r = ask(
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query": long}}})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("maximum"), "{r}");
    println!("100k-word query answered in {:?}", started.elapsed());
    let r = ask(json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search","arguments":{"query":"expired session token"}}})
        .to_string()
        .as_bytes());
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("acme-api"), "still serving: {r}");
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}
