//! OpenAI Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`, or under
//! `$CODEX_HOME`), into the same [`ParsedFile`] the Claude Code parser gives.
//!
//! Observed in Codex CLI 0.53–0.64 (see `docs/formats.md` for the evidence): one JSON record per
//! line, `{timestamp, type, payload}`. `session_meta` carries the session id and working directory;
//! `turn_context` the working directory and model of each turn; `event_msg` / `user_message` the
//! prompts the user typed (the `response_item` user messages also hold the environment context and
//! the project's instructions, which are not prompts); `response_item` / `message` with role
//! `assistant` the answers (`output_text` blocks); `function_call` (`shell`, `shell_command`,
//! `update_plan`) and `custom_tool_call` (`apply_patch`) the tool calls, with their
//! `…_output` records (an exit code in the output's metadata). Reasoning is encrypted and left
//! out. Same tolerance as every parser: a bad line is skipped and reported with its number.
//!
//! Rollouts written until September 2025 have no envelope: the first line is the session's
//! header `{id, timestamp, instructions, git}`, `{"record_type": "state"}` lines mark saved
//! state, and the records are bare (`{"type": "message", "role": "user", …}`, `function_call`,
//! `function_call_output`, `reasoning`) with no time of their own. They read as the same
//! records: a bare record is a `response_item`, its time the header's; the prompts are the user
//! messages (there is no `event_msg` then), less the environment context and instructions the
//! CLI sends first, and the working directory is the `<cwd>` of that environment context.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::doc::{CommitRef, FileAction, FileRef, Role};
use crate::ingest::claude::{ParsedFile, ParsedMessage, ToolError};

fn timestamp(v: &Value) -> DateTime<Utc> {
    v.get("timestamp")
        .and_then(Value::as_str)
        .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
        .map(|d| d.to_utc())
        .unwrap_or_default()
}

/// A call waiting for its output: the message it belongs to and what it was.
struct Call {
    message: usize,
    command: String,
}

/// Parses one rollout.
pub fn parse(bytes: &[u8]) -> ParsedFile {
    let mut out = ParsedFile::default();
    let records = super::json_lines(bytes, &mut out);
    let mut current: Option<usize> = None;
    let mut calls: HashMap<String, Call> = HashMap::new();
    // The legacy header's time, for the bare records that have none.
    let mut started = DateTime::<Utc>::default();
    // Legacy rollouts hold no `event_msg` prompts: their user messages are the prompts.
    let legacy = records.first().is_some_and(|(_, v)| is_legacy_header(v));
    for (line, v) in records {
        if v.get("record_type").is_some() {
            continue; // legacy saved-state marker
        }
        if is_legacy_header(&v) {
            started = timestamp(&v);
            if out.session_id.is_none() {
                out.session_id = v.get("id").and_then(Value::as_str).map(str::to_string);
            }
            continue;
        }
        let bare = v.get("payload").is_none() && v.get("type").and_then(Value::as_str).is_some_and(is_item);
        let ts = if bare && v.get("timestamp").is_none() { started } else { timestamp(&v) };
        let (kind, payload) = if bare {
            ("response_item", v.clone())
        } else {
            (
                v.get("type").and_then(Value::as_str).unwrap_or_default(),
                v.get("payload").cloned().unwrap_or(Value::Null),
            )
        };
        let ptype = payload.get("type").and_then(Value::as_str).unwrap_or_default();
        if matches!((kind, ptype), ("response_item", "message") | ("event_msg", "user_message")) {
            out.turns += 1;
        }
        match (kind, ptype) {
            ("response_item", "message") if legacy && payload.get("role").and_then(Value::as_str) == Some("user") => {
                let text = input_text(&payload);
                if let Some(cwd) = environment_cwd(&text) {
                    *out.cwds.entry(cwd).or_default() += 1;
                } else if !is_cli_context(&text) {
                    out.messages.push(message(line, Role::User, &text, ts));
                    current = None;
                }
            }
            ("session_meta", _) => {
                if out.session_id.is_none() {
                    out.session_id = payload.get("id").and_then(Value::as_str).map(str::to_string);
                }
                if let Some(c) = payload.get("cwd").and_then(Value::as_str) {
                    *out.cwds.entry(c.to_string()).or_default() += 1;
                }
            }
            ("turn_context", _) => {
                if let Some(c) = payload.get("cwd").and_then(Value::as_str) {
                    *out.cwds.entry(c.to_string()).or_default() += 1;
                }
            }
            ("event_msg", "user_message") => {
                let text = payload.get("message").and_then(Value::as_str).unwrap_or_default().trim();
                if !text.is_empty() {
                    out.messages.push(message(line, Role::User, text, ts));
                    current = None;
                }
            }
            ("response_item", "message") if payload.get("role").and_then(Value::as_str) == Some("assistant") => {
                let text: Vec<&str> = payload
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("output_text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
                let text = text.join("\n").trim().to_string();
                if !text.is_empty() {
                    out.messages.push(message(line, Role::Assistant, &text, ts));
                    current = Some(out.messages.len() - 1);
                }
            }
            ("response_item", "function_call" | "custom_tool_call") => {
                let idx = *current.get_or_insert_with(|| {
                    // Tool calls before any answer in this turn: an answer of their own.
                    out.messages.push(message(line, Role::Assistant, "", ts));
                    out.messages.len() - 1
                });
                let name = payload.get("name").and_then(Value::as_str).unwrap_or_default();
                let id = payload.get("call_id").and_then(Value::as_str).unwrap_or_default().to_string();
                let command = tool_call(name, &payload, idx, &mut out);
                calls.insert(id, Call { message: idx, command });
            }
            ("response_item", "function_call_output" | "custom_tool_call_output") => {
                let id = payload.get("call_id").and_then(Value::as_str).unwrap_or_default();
                if let Some(call) = calls.get(id) {
                    tool_output(call, &payload, ts, &mut out);
                }
            }
            _ => {}
        }
    }
    out
}

/// The first line of a rollout written before September 2025: `{id, timestamp, instructions}`
/// with no `type`.
pub(crate) fn is_legacy_header(v: &Value) -> bool {
    v.get("type").is_none() && v.get("payload").is_none() && v.get("id").is_some() && v.get("timestamp").is_some()
}

/// Record types a legacy rollout writes bare (without the `response_item` envelope).
fn is_item(t: &str) -> bool {
    matches!(
        t,
        "message"
            | "function_call"
            | "function_call_output"
            | "custom_tool_call"
            | "custom_tool_call_output"
            | "reasoning"
            | "local_shell_call"
    )
}

/// The text of a message's `input_text` blocks.
fn input_text(payload: &Value) -> String {
    let parts: Vec<&str> = payload
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("input_text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    parts.join("\n").trim().to_string()
}

/// The working directory of an `<environment_context>` the CLI sends before the first prompt.
pub(crate) fn environment_cwd(text: &str) -> Option<String> {
    let t = text.trim_start();
    if !t.starts_with("<environment_context>") {
        return None;
    }
    let start = t.find("<cwd>")? + "<cwd>".len();
    let len = t.get(start..)?.find("</cwd>")?;
    let cwd = t.get(start..start + len)?.trim();
    (!cwd.is_empty()).then(|| cwd.to_string())
}

/// Text the CLI sends as a user message that nobody typed: the environment context and the
/// project's instructions.
fn is_cli_context(text: &str) -> bool {
    let t = text.trim_start();
    t.is_empty() || t.starts_with("<environment_context>") || t.starts_with("<user_instructions>")
}

fn message(line: usize, role: Role, text: &str, ts: DateTime<Utc>) -> ParsedMessage {
    ParsedMessage {
        // Rollouts give messages no id; the line number is stable as the file grows.
        uuid: format!("L{line}"),
        role,
        text: super::claude::clean_text(text),
        timestamp: ts,
        files: Vec::new(),
        commits: Vec::new(),
        cwd: None,
    }
}

/// Files and tasks named by a call; returns its command line (for its output).
fn tool_call(name: &str, payload: &Value, idx: usize, out: &mut ParsedFile) -> String {
    let args: Value = match payload.get("arguments") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    match name {
        "apply_patch" => {
            let patch = payload.get("input").and_then(Value::as_str).unwrap_or_default();
            for f in patch_files(patch) {
                super::claude::add_file(&mut out.messages[idx].files, f);
            }
            String::new()
        }
        "update_plan" => {
            if let Some(Value::Array(plan)) = args.get("plan") {
                out.tasks = plan
                    .iter()
                    .filter_map(|s| {
                        let step = s.get("step").and_then(Value::as_str)?;
                        Some((step.to_string(), s.get("status").and_then(Value::as_str) == Some("completed")))
                    })
                    .collect();
            }
            String::new()
        }
        _ => {
            // `shell`: {"command": ["pwsh.exe", "-Command", "…"]}; `shell_command`: {"command": "…"}.
            let command = match args.get("command") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                _ => String::new(),
            };
            for f in super::claude::deleted_paths(&command) {
                super::claude::add_file(&mut out.messages[idx].files, f);
            }
            command
        }
    }
}

/// The files an `apply_patch` call names: `*** Update File: p` (edited), `*** Add File: p`
/// (created), `*** Delete File: p` (deleted), `*** Move to: p` (created).
fn patch_files(patch: &str) -> Vec<FileRef> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let l = line.trim();
        let found = [
            ("*** Update File:", FileAction::Edited),
            ("*** Add File:", FileAction::Created),
            ("*** Delete File:", FileAction::Deleted),
            ("*** Move to:", FileAction::Created),
        ]
        .into_iter()
        .find_map(|(marker, action)| l.strip_prefix(marker).map(|p| (p.trim(), action)));
        if let Some((p, action)) = found
            && !p.is_empty()
        {
            out.push(FileRef { path: crate::text::paths::normalize(p), line_ranges: vec![], action });
        }
    }
    out
}

/// An output: a failed command is a tool error; a `git commit` prints its commit.
fn tool_output(call: &Call, payload: &Value, ts: DateTime<Utc>, out: &mut ParsedFile) {
    let raw = payload.get("output").and_then(Value::as_str).unwrap_or_default();
    // Outputs come as JSON `{"output": "…", "metadata": {"exit_code": N}}` (0.53–0.55), as text
    // `Exit code: N\nWall time: …\nOutput:\n…` (0.63+), or as a plain message.
    let (text, exit) = match serde_json::from_str::<Value>(raw) {
        Ok(v) if v.is_object() => (
            v.get("output").and_then(Value::as_str).unwrap_or_default().to_string(),
            v.get("metadata").and_then(|m| m.get("exit_code")).and_then(Value::as_i64),
        ),
        _ => match raw.strip_prefix("Exit code: ") {
            Some(rest) => {
                let code = rest.lines().next().and_then(|c| c.trim().parse().ok());
                let body = rest.split_once("Output:\n").map_or("", |x| x.1);
                (body.to_string(), code)
            }
            None => (raw.to_string(), None),
        },
    };
    if text.starts_with("exec command rejected by user") {
        return; // the user declined the call: a choice, not an error
    }
    let failed = exit.is_some_and(|c| c != 0) || text.starts_with("apply_patch verification failed");
    let tool = if call.command.is_empty() { "apply_patch" } else { "shell" };
    if failed {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        out.errors.push(ToolError {
            tool: tool.into(),
            text: crate::text::prefix_chars(first, 200).to_string(),
            timestamp: ts,
        });
        return;
    }
    out.successes.push((tool.into(), ts));
    if call.command.contains("git") && call.command.contains("commit") {
        let msg = &mut out.messages[call.message];
        for c in super::claude::commits_in(&text) {
            if !msg.commits.iter().any(|x: &CommitRef| x.sha == c.sha) {
                msg.commits.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(v: Value) -> String {
        format!("{v}\n")
    }

    #[test]
    fn prompts_answers_patches_commands_and_plans() {
        let mut s = String::new();
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:10Z","type":"session_meta","payload":{"id":"019a","cwd":"C:\\Users\\a\\proj","cli_version":"0.53.0"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:11Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>…</environment_context>"}]}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:11Z","type":"event_msg","payload":{"type":"user_message","message":"デプロイはサーバー1つで","images":[]}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:12Z","type":"turn_context","payload":{"cwd":"C:\\Users\\a\\proj","model":"gpt-5"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:13Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"We'll use one server."}]}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:14Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1","input":"*** Begin Patch\n*** Update File: src/a.ts\n@@\n-x\n+y\n*** Add File: docs/new.md\n+hi\n*** End Patch"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:15Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"c1","output":"{\"output\":\"Success\",\"metadata\":{\"exit_code\":0}}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:16Z","type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c2","arguments":"{\"command\":[\"bash\",\"-lc\",\"git commit -am 'one server'\"]}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:17Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":"{\"output\":\"[main 1a2b3c4] one server\\n\",\"metadata\":{\"exit_code\":0}}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:18Z","type":"response_item","payload":{"type":"function_call","name":"shell_command","call_id":"c3","arguments":"{\"command\":\"npm test\"}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:19Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c3","output":"{\"output\":\"1 failing\",\"metadata\":{\"exit_code\":1}}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:19Z","type":"response_item","payload":{"type":"function_call","name":"shell_command","call_id":"c5","arguments":"{\"command\":\"cargo build\"}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:19Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c5","output":"Exit code: 101\nWall time: 2 seconds\nOutput:\nerror[E0425]: not found\n"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:19Z","type":"response_item","payload":{"type":"function_call","name":"shell","call_id":"c6","arguments":"{\"command\":[\"ls\"]}"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:19Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c6","output":"exec command rejected by user"}}),
        );
        s += &line(
            serde_json::json!({"timestamp":"2025-11-04T07:21:20Z","type":"response_item","payload":{"type":"function_call","name":"update_plan","call_id":"c4","arguments":"{\"plan\":[{\"step\":\"fix tests\",\"status\":\"in_progress\"},{\"step\":\"deploy\",\"status\":\"completed\"}]}"}}),
        );
        s += "{\"type\":\"event_msg\",\"payl";
        let p = parse(s.as_bytes());
        assert_eq!(p.session_id.as_deref(), Some("019a"));
        assert_eq!(p.cwds.keys().collect::<Vec<_>>(), ["C:\\Users\\a\\proj"]);
        assert_eq!(p.messages.len(), 2, "the environment context is not a prompt");
        assert_eq!((p.messages[0].role, p.messages[0].text.as_str()), (Role::User, "デプロイはサーバー1つで"));
        let a = &p.messages[1];
        assert_eq!(a.text, "We'll use one server.");
        let files: Vec<(&str, FileAction)> = a.files.iter().map(|f| (f.path.as_str(), f.action)).collect();
        assert_eq!(files, [("src/a.ts", FileAction::Edited), ("docs/new.md", FileAction::Created)]);
        assert_eq!(a.commits, [CommitRef { sha: "1a2b3c4".into(), message: "one server".into() }]);
        let errors: Vec<&str> = p.errors.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(errors, ["1 failing", "error[E0425]: not found"], "a declined call is not an error");
        assert_eq!(p.tasks, [("fix tests".to_string(), false), ("deploy".to_string(), true)]);
        assert_eq!(p.skipped.len(), 1, "the torn last line");
        assert!(p.consumed < s.len());
    }

    #[test]
    fn a_rollout_written_before_session_meta_reads_the_same() {
        let mut s = String::new();
        s += &line(
            serde_json::json!({"id":"0b1c","timestamp":"2025-08-18T01:16:13.522Z","instructions":null,"git":{"branch":"main"}}),
        );
        s += &line(serde_json::json!({"record_type":"state"}));
        s += &line(
            serde_json::json!({"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"<user_instructions>\nbe brief\n</user_instructions>"}]}),
        );
        s += &line(
            serde_json::json!({"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"<environment_context>\n  <cwd>C:\\프로젝트\\웹 앱</cwd>\n  <approval_policy>on-request</approval_policy>\n</environment_context>"}]}),
        );
        s += &line(
            serde_json::json!({"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"로그인은 세션 쿠키로 하자"}]}),
        );
        s += &line(serde_json::json!({"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}));
        s += &line(
            serde_json::json!({"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"세션 쿠키로 바꿉니다."}]}),
        );
        s += &line(
            serde_json::json!({"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"cargo test\"]}","call_id":"call_1"}),
        );
        s += &line(
            serde_json::json!({"type":"function_call_output","call_id":"call_1","output":"{\"output\":\"error: 2 failed\",\"metadata\":{\"exit_code\":101}}"}),
        );
        s += &line(serde_json::json!({"record_type":"state"}));
        let p = parse(s.as_bytes());
        assert_eq!(p.session_id.as_deref(), Some("0b1c"));
        assert_eq!(p.cwds.keys().collect::<Vec<_>>(), ["C:\\프로젝트\\웹 앱"]);
        let texts: Vec<(Role, &str)> = p.messages.iter().map(|m| (m.role, m.text.as_str())).collect();
        assert_eq!(texts, [(Role::User, "로그인은 세션 쿠키로 하자"), (Role::Assistant, "세션 쿠키로 바꿉니다.")]);
        assert!(p.messages.iter().all(|m| m.timestamp.to_rfc3339().starts_with("2025-08-18T01:16:13")));
        let errors: Vec<&str> = p.errors.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(errors, ["error: 2 failed"], "a bare call's output is read as a wrapped one's");
        assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    }
}
