//! Gemini CLI histories (`~/.gemini/tmp/<project hash>/`, or under `$GEMINI_CLI_HOME/.gemini`),
//! into the same [`ParsedFile`] the Claude Code parser gives.
//!
//! Observed (see `docs/formats.md`): `chats/session-<time>-<id8>.json` is one JSON document,
//! `{sessionId, projectHash, startTime, lastUpdated, messages: [{id, timestamp, type: "user" |
//! "gemini", content, thoughts, tokens, model}]}`, rewritten whole as the session goes on; one
//! session can span several chat files (the same `sessionId`, different messages). `logs.json`
//! is an array of the prompts typed, `{sessionId, messageId, type: "user", message, timestamp}`,
//! covering sessions that have no chat file. The project hash is the SHA-256 of the project's
//! path ([`project_hash`]); the observed files carry no tool calls, so Gemini sessions give no
//! files or commits.

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::doc::Role;
use crate::ingest::claude::{ParsedFile, ParsedMessage, SkippedLine};

fn time(v: Option<&Value>) -> DateTime<Utc> {
    v.and_then(Value::as_str).and_then(|s| DateTime::parse_from_rfc3339(s).ok()).map(|d| d.to_utc()).unwrap_or_default()
}

/// The hash Gemini CLI names a project's folder with: SHA-256 of its path, lower-case hex.
pub fn project_hash(path: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(path.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

fn unreadable(reason: String) -> ParsedFile {
    ParsedFile { skipped: vec![SkippedLine { line: 1, reason }], ..Default::default() }
}

/// Parses a chat file. A file that is not one JSON document is reported as one skipped line.
pub fn parse_chat(bytes: &[u8]) -> ParsedFile {
    let v: Value = match serde_json::from_slice(bytes) {
        Ok(v) => v,
        // Rewritten whole: a torn file is one being written; the next run reads it again.
        Err(e) => return unreadable(format!("not a Gemini chat file: {e}")),
    };
    let mut out = ParsedFile { consumed: bytes.len(), ..Default::default() };
    out.session_id = v.get("sessionId").and_then(Value::as_str).map(str::to_string);
    let Some(messages) = v.get("messages").and_then(Value::as_array) else {
        out.skipped.push(SkippedLine { line: 1, reason: "no `messages` array".into() });
        return out;
    };
    for (i, m) in messages.iter().enumerate() {
        out.records += 1;
        let role = match m.get("type").and_then(Value::as_str) {
            Some("user") => Role::User,
            Some("gemini") => Role::Assistant,
            _ => continue,
        };
        let text = m.get("content").and_then(Value::as_str).unwrap_or_default();
        if text.trim().is_empty() {
            continue;
        }
        let uuid = m.get("id").and_then(Value::as_str).map_or_else(|| format!("M{i}"), str::to_string);
        out.messages.push(message(uuid, role, text, time(m.get("timestamp"))));
    }
    out
}

/// The sessions of a `logs.json` (prompts only), by session id, in file order.
pub fn parse_logs(bytes: &[u8]) -> Vec<(String, ParsedFile)> {
    let Ok(Value::Array(rows)) = serde_json::from_slice::<Value>(bytes) else { return Vec::new() };
    let mut out: Vec<(String, ParsedFile)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        let Some(session) = r.get("sessionId").and_then(Value::as_str) else { continue };
        let pos = match out.iter().position(|(s, _)| s == session) {
            Some(p) => p,
            None => {
                let pf =
                    ParsedFile { session_id: Some(session.to_string()), consumed: bytes.len(), ..Default::default() };
                out.push((session.to_string(), pf));
                out.len() - 1
            }
        };
        let pf = &mut out[pos].1;
        pf.records += 1;
        let text = r.get("message").and_then(Value::as_str).unwrap_or_default();
        if r.get("type").and_then(Value::as_str) != Some("user") || text.trim().is_empty() {
            continue;
        }
        let id = r.get("messageId").map_or_else(|| i.to_string(), |m| m.to_string());
        pf.messages.push(message(format!("log:{id}"), Role::User, text, time(r.get("timestamp"))));
    }
    out
}

fn message(uuid: String, role: Role, text: &str, timestamp: DateTime<Utc>) -> ParsedMessage {
    ParsedMessage {
        uuid,
        role,
        text: crate::ingest::claude::clean_text(text),
        timestamp,
        files: Vec::new(),
        commits: Vec::new(),
        cwd: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_logs_and_the_project_hash() {
        let chat = serde_json::json!({"sessionId": "s-1", "projectHash": "ab", "startTime": "2025-09-30T23:51:24Z",
            "messages": [
                {"id": "m1", "timestamp": "2025-09-30T23:51:24Z", "type": "user", "content": "move the dropdown right"},
                {"id": "m2", "timestamp": "2025-09-30T23:51:30Z", "type": "gemini", "content": "Okay.", "thoughts": []},
                {"id": "m3", "timestamp": "2025-09-30T23:51:31Z", "type": "info", "content": "x"},
                {"id": "m4", "timestamp": "2025-09-30T23:51:32Z", "type": "gemini", "content": "  "}]});
        let p = parse_chat(chat.to_string().as_bytes());
        assert_eq!(p.session_id.as_deref(), Some("s-1"));
        let got: Vec<(&str, Role)> = p.messages.iter().map(|m| (m.uuid.as_str(), m.role)).collect();
        assert_eq!(got, [("m1", Role::User), ("m2", Role::Assistant)]);
        assert_eq!(parse_chat(b"{\"sessionId\": \"s").skipped.len(), 1);
        let logs = serde_json::json!([
            {"sessionId": "a", "messageId": 0, "type": "user", "message": "first", "timestamp": "2025-09-12T02:27:00Z"},
            {"sessionId": "b", "messageId": 0, "type": "user", "message": "other", "timestamp": "2025-09-12T02:28:00Z"},
            {"sessionId": "a", "messageId": 1, "type": "user", "message": "second", "timestamp": "2025-09-12T02:29:00Z"}]);
        let l = parse_logs(logs.to_string().as_bytes());
        assert_eq!(l.iter().map(|(s, p)| (s.as_str(), p.messages.len())).collect::<Vec<_>>(), [("a", 2), ("b", 1)]);
        assert!(parse_logs(b"not json").is_empty());
        assert_eq!(project_hash("/home/u/p").len(), 64);
    }
}
