//! Structured conversations (seed "Structured Conversation Format"): chats from Slack,
//! Discord, WhatsApp or anything else, as
//! `{id, conversation: {source, people, user, conversation: [{speaker, content, time}]}, tags, metadata}`.
//! A file holds one document, an array of them, or JSON Lines. Pure: bytes in, validated
//! documents (or per-document errors) out.
//!
//! Validation, in order, with these exact messages (message numbers are 0-based):
//! `document ID is required`; `conversation source is required`; `at least one person must be
//! specified in the conversation`; `user field is required to identify the primary user`;
//! `user 'X' must be included in the people list`; `conversation must contain at least one
//! message`; then per message `message N: speaker is required`, `message N: content must not
//! be empty`, `message N: time is required`, `message N: time 'X' is not a valid RFC 3339
//! timestamp`, `message N: speaker 'X' must be included in the people list`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a structured conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    /// Who said it (one of `people`).
    pub speaker: String,
    /// What was said.
    pub content: String,
    /// When.
    pub time: DateTime<Utc>,
}

/// A validated structured conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// Document id (becomes the session id).
    pub id: String,
    /// Where it comes from (`slack`, `discord`, …).
    pub source: String,
    /// Everyone who takes part.
    pub people: Vec<String>,
    /// The primary user (their messages get `role` user).
    pub user: String,
    /// The messages.
    pub turns: Vec<Turn>,
    /// Free tags.
    pub tags: Vec<String>,
    /// Free string metadata, key order kept.
    pub metadata: Vec<(String, String)>,
}

/// A document that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Invalid {
    /// Position of the document in the file (0-based).
    pub index: usize,
    /// Its id, when it has one.
    pub id: Option<String>,
    /// What is wrong.
    pub message: String,
}

fn s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str).filter(|x| !x.trim().is_empty())
}

/// Validates one JSON document.
pub fn validate(v: &Value) -> Result<Conversation, String> {
    let id = s(v, "id").ok_or("document ID is required")?;
    let conv = v.get("conversation").cloned().unwrap_or(Value::Null);
    let source = s(&conv, "source").ok_or("conversation source is required")?;
    let people: Vec<String> = conv
        .get("people")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    if people.is_empty() {
        return Err("at least one person must be specified in the conversation".into());
    }
    let user = s(&conv, "user").ok_or("user field is required to identify the primary user")?;
    if !people.iter().any(|p| p == user) {
        return Err(format!("user '{user}' must be included in the people list"));
    }
    let msgs = conv.get("conversation").and_then(Value::as_array).cloned().unwrap_or_default();
    if msgs.is_empty() {
        return Err("conversation must contain at least one message".into());
    }
    let mut turns = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        let speaker = s(m, "speaker").ok_or(format!("message {i}: speaker is required"))?;
        let content = m.get("content").and_then(Value::as_str).unwrap_or_default();
        if content.trim().is_empty() {
            return Err(format!("message {i}: content must not be empty"));
        }
        let raw = m.get("time").and_then(Value::as_str).ok_or(format!("message {i}: time is required"))?;
        let time = DateTime::parse_from_rfc3339(raw)
            .map_err(|_| format!("message {i}: time '{raw}' is not a valid RFC 3339 timestamp"))?
            .to_utc();
        if !people.iter().any(|p| p == speaker) {
            return Err(format!("message {i}: speaker '{speaker}' must be included in the people list"));
        }
        turns.push(Turn { speaker: speaker.to_string(), content: content.to_string(), time });
    }
    let tags = v
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let metadata = v
        .get("metadata")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Conversation {
        id: id.to_string(),
        source: source.to_string(),
        people,
        user: user.to_string(),
        turns,
        tags,
        metadata,
    })
}

/// Parses a file of one document, an array, or JSON Lines. Unparseable JSON is reported as an
/// invalid document (for JSON Lines, per line).
pub fn parse(bytes: &[u8]) -> (Vec<Conversation>, Vec<Invalid>) {
    let text = String::from_utf8_lossy(bytes);
    let trimmed = text.trim_start();
    let values: Vec<Result<Value, String>> = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Array(items)) => items.into_iter().map(Ok).collect(),
        Ok(v) => vec![Ok(v)],
        Err(_) => text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).map_err(|e| format!("not valid JSON: {e}")))
            .collect(),
    };
    let mut ok = Vec::new();
    let mut bad = Vec::new();
    for (index, v) in values.into_iter().enumerate() {
        match v {
            Err(message) => bad.push(Invalid { index, id: None, message }),
            Ok(v) => match validate(&v) {
                Ok(c) => ok.push(c),
                Err(message) => bad.push(Invalid { index, id: s(&v, "id").map(str::to_string), message }),
            },
        }
    }
    (ok, bad)
}
