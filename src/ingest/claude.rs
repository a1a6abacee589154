//! Claude Code JSONL transcripts (`~/.claude/projects/<encoded-cwd>/<session>.jsonl`).
//!
//! Tolerant, line by line: a malformed, torn or concatenated line is skipped and reported with
//! its line number, never aborting the file; unknown record types and fields are ignored.
//! Streaming records of one API message (same `message.id`) are merged into one message. User
//! prompts and assistant text become messages; thinking, tool results, meta / command /
//! compaction records and images are not message text, but tool calls and their results give
//! the files and commits attached to the message that made the call.
//! See `../shared/docs/claude-code-jsonl-format.md` for the evidence behind each rule.

mod answers;
use std::collections::HashMap;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use regex::Regex;
use serde_json::Value;

use crate::doc::{CommitRef, FileAction, FileRef, Role};

/// Message text longer than this (in bytes) is cut, with a marker saying how much was left
/// out: a pasted 2 MB log is not a message anyone searches for as a whole.
pub const MAX_MESSAGE_BYTES: usize = 24_000;
/// A line longer than this is skipped (and reported) without being parsed. The longest line
/// in the shared corpus is 2.1 MB (a pasted tool result).
pub const MAX_LINE_BYTES: usize = 64 << 20;
/// Files attached per Glob / Grep call at most.
const MAX_LISTED_FILES: usize = 25;

/// A line that was not used, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub reason: String,
}

/// One message of a session.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMessage {
    /// uuid of the first record of the message.
    pub uuid: String,
    /// User or assistant.
    pub role: Role,
    /// Text (system reminders stripped, cut at [`MAX_MESSAGE_BYTES`]).
    pub text: String,
    /// Time of the first record.
    pub timestamp: DateTime<Utc>,
    /// Files its tool calls touched.
    pub files: Vec<FileRef>,
    /// Commits its tool calls made.
    pub commits: Vec<CommitRef>,
    /// Working directory at the time.
    pub cwd: Option<String>,
}

/// A tool call that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    /// Tool name.
    pub tool: String,
    /// First line of the error output.
    pub text: String,
    /// When.
    pub timestamp: DateTime<Utc>,
}

/// A parsed transcript file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedFile {
    /// `sessionId` of the records (the first seen).
    pub session_id: Option<String>,
    /// Messages in file order.
    pub messages: Vec<ParsedMessage>,
    /// Lines that were skipped.
    pub skipped: Vec<SkippedLine>,
    /// Records parsed (all types).
    pub records: usize,
    /// Bytes up to and including the last complete line (a torn last line waits).
    pub consumed: usize,
    /// Every `cwd` seen, with counts.
    pub cwds: HashMap<String, usize>,
    /// Session title, when the file carries one.
    pub title: Option<String>,
    /// Failed tool calls.
    pub errors: Vec<ToolError>,
    /// Successful tool results: (tool, time), to tell whether an error was resolved later.
    pub successes: Vec<(String, DateTime<Utc>)>,
    /// The task list at the end of the file: (task, completed), from the last `TodoWrite`
    /// call and from `TaskCreate` / `TaskUpdate` calls.
    pub tasks: Vec<(String, bool)>,
    /// True when records are sidechain (sub-agent) records.
    pub sidechain: bool,
    /// Records of a conversation's turns (a user's or an assistant's), whether or not they
    /// gave a message: a file with records and none of these holds only what the agent keeps
    /// beside a conversation (summaries, file snapshots).
    pub turns: usize,
}

struct ToolUse {
    name: String,
    input: Value,
    message: usize,
}

fn ansi_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"\x1b\[[0-9;]*[A-Za-z]").expect("valid"))
}

fn commit_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"\[([^\]\s]+)( \(root-commit\))? ([0-9a-f]{7,40})\] ([^\n]*)").expect("valid"))
}

fn reminder_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"(?s)<system-reminder>.*?</system-reminder>").expect("valid"))
}

fn timestamp(v: &Value) -> Option<DateTime<Utc>> {
    v.get("timestamp").and_then(Value::as_str).and_then(|s| DateTime::parse_from_rfc3339(s).ok()).map(|d| d.to_utc())
}

/// Text of a content value that is a string or an array of blocks (text blocks only).
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Text with system reminders stripped, trimmed, cut at [`MAX_MESSAGE_BYTES`].
pub(crate) fn clean_text(text: &str) -> String {
    let t = reminder_re().replace_all(text, "");
    let t = t.trim();
    if t.len() > MAX_MESSAGE_BYTES {
        let head = crate::text::prefix_bytes(t, MAX_MESSAGE_BYTES);
        format!("{head}\n[… {} more bytes not indexed]", t.len() - head.len())
    } else {
        t.to_string()
    }
}

/// Is this user text something a human typed (not a command wrapper or an interruption)?
fn human_text(text: &str) -> bool {
    let t = text.trim_start();
    !(t.is_empty()
        || t.starts_with("<command-")
        || t.starts_with("<local-command-")
        || t.starts_with("[Request interrupted")
        || t.starts_with("<bash-input>")
        || t.starts_with("<bash-stdout>")
        || t.starts_with("<bash-stderr>")
        || t.starts_with("Caveat: The messages below were generated")
        || t == "Warmup")
}

/// A path in its stored form (see [`crate::text::paths`]).
fn slashes(p: &str) -> String {
    crate::text::paths::normalize(p)
}

/// Parses one transcript file.
pub fn parse(bytes: &[u8]) -> ParsedFile {
    let mut out = ParsedFile::default();
    let mut by_api_id: HashMap<String, usize> = HashMap::new();
    let mut tools: HashMap<String, ToolUse> = HashMap::new();
    // Tool results seen before their tool_use (file order is not causal): id -> (result, record).
    let mut results: Vec<(String, Value, Value, DateTime<Utc>)> = Vec::new();
    let mut start = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let (end, complete) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(i) => (start + i, true),
            None => (bytes.len(), false),
        };
        let line = &bytes[start..end];
        start = end + 1;
        if complete {
            out.consumed = start;
        }
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        if trimmed.len() > MAX_LINE_BYTES {
            let reason = format!("line of {} bytes is over the {MAX_LINE_BYTES}-byte limit", trimmed.len());
            out.skipped.push(SkippedLine { line: line_no, reason });
            continue;
        }
        let value: Value = match super::parse_line(trimmed) {
            Ok(v) => v,
            Err(e) => {
                let reason = if complete { format!("malformed JSON: {e}") } else { "torn last line".into() };
                out.skipped.push(SkippedLine { line: line_no, reason });
                continue;
            }
        };
        let Some(kind) = value.get("type").and_then(Value::as_str) else {
            out.skipped.push(SkippedLine { line: line_no, reason: "not a record (no `type`)".into() });
            continue;
        };
        out.records += 1;
        if out.session_id.is_none()
            && let Some(s) = value.get("sessionId").and_then(Value::as_str)
        {
            out.session_id = Some(s.to_string());
        }
        if let Some(c) = value.get("cwd").and_then(Value::as_str) {
            *out.cwds.entry(c.to_string()).or_default() += 1;
        }
        if value.get("isSidechain").and_then(Value::as_bool) == Some(true) {
            out.sidechain = true;
        }
        match kind {
            "summary" if out.title.is_none() => {
                out.title = value.get("summary").and_then(Value::as_str).map(str::to_string);
            }
            "custom-title" | "ai-title" => {
                let key = if kind == "ai-title" { "aiTitle" } else { "customTitle" };
                if let Some(t) = value.get(key).and_then(Value::as_str) {
                    out.title = Some(t.to_string());
                }
            }
            "assistant" => {
                out.turns += 1;
                assistant(&value, &mut out, &mut by_api_id, &mut tools)
            }
            "user" => {
                out.turns += 1;
                user(&value, &mut out, &mut results)
            }
            _ => {}
        }
    }
    for (id, block, record, ts) in results {
        if let Some(tool) = tools.get(&id) {
            apply_result(tool, &block, &record, ts, &mut out);
        }
    }
    out
}

fn assistant(
    v: &Value,
    out: &mut ParsedFile,
    by_api_id: &mut HashMap<String, usize>,
    tools: &mut HashMap<String, ToolUse>,
) {
    if v.get("isApiErrorMessage").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let Some(msg) = v.get("message") else { return };
    if msg.get("model").and_then(Value::as_str) == Some("<synthetic>") {
        return;
    }
    let uuid = v.get("uuid").and_then(Value::as_str).unwrap_or_default().to_string();
    let api_id = msg.get("id").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| uuid.clone());
    let ts = timestamp(v).unwrap_or_default();
    let cwd = v.get("cwd").and_then(Value::as_str).map(str::to_string);
    let blocks: Vec<&Value> = match msg.get("content") {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(s @ Value::String(_)) => vec![s],
        _ => return,
    };
    let idx = *by_api_id.entry(api_id).or_insert_with(|| {
        out.messages.push(ParsedMessage {
            uuid: uuid.clone(),
            role: Role::Assistant,
            text: String::new(),
            timestamp: ts,
            files: Vec::new(),
            commits: Vec::new(),
            cwd: cwd.clone(),
        });
        out.messages.len() - 1
    });
    for b in blocks {
        let text = match b {
            Value::String(s) => Some(s.as_str()),
            _ if b.get("type").and_then(Value::as_str) == Some("text") => b.get("text").and_then(Value::as_str),
            _ => None,
        };
        if let Some(t) = text {
            let m = &mut out.messages[idx];
            if !m.text.is_empty() {
                m.text.push_str("\n\n");
            }
            m.text.push_str(t);
            continue;
        }
        if b.get("type").and_then(Value::as_str) == Some("tool_use") {
            let id = b.get("id").and_then(Value::as_str).unwrap_or_default().to_string();
            let name = b.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let input = b.get("input").cloned().unwrap_or(Value::Null);
            record_tasks(&name, &input, &mut out.tasks);
            let tool = ToolUse { name, input, message: idx };
            // Files named by the call itself; results may refine the action later.
            for f in call_files(&tool) {
                add_file(&mut out.messages[idx].files, f);
            }
            tools.insert(id, tool);
        }
    }
}

/// Task lists: `TodoWrite` replaces the whole list; `TaskCreate` adds one, `TaskUpdate` sets the
/// status of the task with that id (1-based order of creation).
fn record_tasks(name: &str, input: &Value, tasks: &mut Vec<(String, bool)>) {
    let done = |status: Option<&str>| status == Some("completed");
    match base_tool(name) {
        "TodoWrite" => {
            if let Some(Value::Array(todos)) = input.get("todos") {
                *tasks = todos
                    .iter()
                    .filter_map(|t| {
                        let content = t.get("content").and_then(Value::as_str)?;
                        Some((content.to_string(), done(t.get("status").and_then(Value::as_str))))
                    })
                    .collect();
            }
        }
        "TaskCreate" => {
            let subject = input.get("subject").or_else(|| input.get("description")).and_then(Value::as_str);
            if let Some(s) = subject {
                tasks.push((s.to_string(), false));
            }
        }
        "TaskUpdate" => {
            let id = input
                .get("taskId")
                .and_then(|v| v.as_str().map(str::to_string).or_else(|| v.as_u64().map(|n| n.to_string())));
            if let Some(i) = id.and_then(|s| s.parse::<usize>().ok()).filter(|i| *i >= 1 && *i <= tasks.len()) {
                tasks[i - 1].1 = done(input.get("status").and_then(Value::as_str));
            }
        }
        _ => {}
    }
}

fn user(v: &Value, out: &mut ParsedFile, results: &mut Vec<(String, Value, Value, DateTime<Utc>)>) {
    if v.get("isMeta").and_then(Value::as_bool) == Some(true)
        || v.get("isCompactSummary").and_then(Value::as_bool) == Some(true)
        || v.get("isVisibleInTranscriptOnly").and_then(Value::as_bool) == Some(true)
    {
        return;
    }
    let Some(content) = v.get("message").and_then(|m| m.get("content")) else { return };
    let ts = timestamp(v).unwrap_or_default();
    let mut has_result = false;
    if let Value::Array(blocks) = content {
        for b in blocks {
            if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                has_result = true;
                let id = b.get("tool_use_id").and_then(Value::as_str).unwrap_or_default().to_string();
                let record = v.get("toolUseResult").cloned().unwrap_or(Value::Null);
                results.push((id, b.clone(), record, ts));
            }
        }
    }
    if has_result {
        // The user's answers to the assistant's questions (`AskUserQuestion`): what they picked
        // is the user's turn, though it arrives as a tool's result.
        if let Some(text) = answers::answered_questions(v, content) {
            out.messages.push(ParsedMessage {
                uuid: v.get("uuid").and_then(Value::as_str).unwrap_or_default().to_string(),
                role: Role::User,
                text: clean_text(&text),
                timestamp: ts,
                files: Vec::new(),
                commits: Vec::new(),
                cwd: v.get("cwd").and_then(Value::as_str).map(str::to_string),
            });
        }
        return;
    }
    let text = content_text(content);
    if !human_text(&text) {
        return;
    }
    let text = clean_text(&text);
    if text.is_empty() {
        return;
    }
    out.messages.push(ParsedMessage {
        uuid: v.get("uuid").and_then(Value::as_str).unwrap_or_default().to_string(),
        role: Role::User,
        text,
        timestamp: ts,
        files: Vec::new(),
        commits: Vec::new(),
        cwd: v.get("cwd").and_then(Value::as_str).map(str::to_string),
    });
}

/// Adds a file to a message's files, keeping the strongest action per path.
pub(crate) fn add_file(files: &mut Vec<FileRef>, f: FileRef) {
    // Keep the strongest action per path: deleted > created > edited > read.
    match files.iter_mut().find(|x| x.path == f.path) {
        Some(x) => {
            if f.action > x.action {
                x.action = f.action;
            }
            for r in f.line_ranges {
                if !x.line_ranges.contains(&r) {
                    x.line_ranges.push(r);
                }
            }
        }
        None => files.push(f),
    }
}

/// Lines `start ..= start + len - 1` as `u32`, saturating (a transcript can hold any number).
fn line_range(start: u64, len: u64) -> (u32, u32) {
    let clamp = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
    (clamp(start), clamp(start.saturating_add(len).saturating_sub(1)))
}

/// Tool name without an MCP server prefix (`mcp__acp__Read` → `Read`).
fn base_tool(name: &str) -> &str {
    name.rsplit("__").next().unwrap_or(name)
}

fn call_files(tool: &ToolUse) -> Vec<FileRef> {
    let input = &tool.input;
    let s = |k: &str| input.get(k).and_then(Value::as_str).map(slashes);
    let n = |k: &str| input.get(k).and_then(Value::as_u64);
    let file = |path: String, action, line_ranges| FileRef { path, line_ranges, action };
    match base_tool(&tool.name) {
        "Read" => s("file_path")
            .map(|p| {
                let ranges = match (n("offset"), n("limit")) {
                    (Some(o), Some(l)) if l > 0 => vec![line_range(o.max(1), l)],
                    (None, Some(l)) if l > 0 => vec![line_range(1, l)],
                    _ => vec![],
                };
                vec![file(p, FileAction::Read, ranges)]
            })
            .unwrap_or_default(),
        "Edit" | "MultiEdit" => s("file_path").map(|p| vec![file(p, FileAction::Edited, vec![])]).unwrap_or_default(),
        "Write" => s("file_path").map(|p| vec![file(p, FileAction::Created, vec![])]).unwrap_or_default(),
        "NotebookEdit" => s("notebook_path").map(|p| vec![file(p, FileAction::Edited, vec![])]).unwrap_or_default(),
        "Bash" | "PowerShell" => s("command").map(|c| deleted_paths(&c)).unwrap_or_default(),
        _ => vec![],
    }
}

/// Paths removed by a plain `rm` / `git rm` command (words split the way a shell splits them).
pub(crate) fn deleted_paths(command: &str) -> Vec<FileRef> {
    let mut out = Vec::new();
    for part in crate::text::paths::simple_commands(command) {
        let words = crate::text::paths::shell_words(part);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let (["rm", args @ ..] | ["git", "rm", args @ ..]) = words.as_slice() else { continue };
        for a in args {
            if !a.is_empty() && !a.starts_with('-') && !a.contains('*') && !a.contains('$') {
                out.push(FileRef { path: slashes(a), line_ranges: vec![], action: FileAction::Deleted });
            }
        }
    }
    out
}

fn result_text(block: &Value, record: &Value) -> String {
    let mut t = content_text(block.get("content").unwrap_or(&Value::Null));
    if let Some(stdout) = record.get("stdout").and_then(Value::as_str) {
        t.push('\n');
        t.push_str(stdout);
    }
    t
}

fn apply_result(tool: &ToolUse, block: &Value, record: &Value, ts: DateTime<Utc>, out: &mut ParsedFile) {
    let is_error = block.get("is_error").and_then(Value::as_bool) == Some(true);
    let name = base_tool(&tool.name);
    if is_error {
        let text = content_text(block.get("content").unwrap_or(&Value::Null));
        let first = ansi_re().replace_all(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""), "");
        let first: String = first.chars().take(200).collect();
        // The user declining a tool call (or interrupting it) is a choice, not an error to fix.
        let declined = ["The user doesn't want to proceed", "[Request interrupted by user"]
            .iter()
            .any(|p| first.trim_start().starts_with(p));
        if !declined {
            out.errors.push(ToolError { tool: name.to_string(), text: first, timestamp: ts });
        }
        return;
    }
    out.successes.push((name.to_string(), ts));
    let msg = &mut out.messages[tool.message];
    match name {
        "Write" => {
            if record.get("type").and_then(Value::as_str) == Some("update")
                && let Some(p) = tool.input.get("file_path").and_then(Value::as_str)
            {
                let p = slashes(p);
                if let Some(f) = msg.files.iter_mut().find(|f| f.path == p) {
                    f.action = FileAction::Edited;
                }
            }
        }
        "Edit" | "MultiEdit" => {
            if let (Some(p), Some(Value::Array(hunks))) =
                (tool.input.get("file_path").and_then(Value::as_str), record.get("structuredPatch"))
            {
                let ranges: Vec<(u32, u32)> = hunks
                    .iter()
                    .filter_map(|h| {
                        let s = h.get("newStart")?.as_u64()?;
                        let l = h.get("newLines")?.as_u64()?;
                        Some(line_range(s.max(1), l.max(1)))
                    })
                    .collect();
                add_file(&mut msg.files, FileRef { path: slashes(p), line_ranges: ranges, action: FileAction::Edited });
            }
        }
        "Glob" | "Grep" => {
            if let Some(Value::Array(names)) = record.get("filenames") {
                for n in names.iter().filter_map(Value::as_str).take(MAX_LISTED_FILES) {
                    add_file(
                        &mut msg.files,
                        FileRef { path: slashes(n), line_ranges: vec![], action: FileAction::Read },
                    );
                }
            }
        }
        "Bash" | "PowerShell" => {
            let cmd = tool.input.get("command").and_then(Value::as_str).unwrap_or_default();
            if cmd.contains("git") && cmd.contains("commit") {
                for c in commits_in(&result_text(block, record)) {
                    if !msg.commits.iter().any(|x: &CommitRef| x.sha == c.sha) {
                        msg.commits.push(c);
                    }
                }
            }
        }
        _ => {}
    }
}

/// The commits a `git commit` printed (`[branch sha] subject`), colours stripped.
pub(crate) fn commits_in(output: &str) -> Vec<CommitRef> {
    let text = ansi_re().replace_all(output, "").into_owned();
    commit_re()
        .captures_iter(&text)
        .map(|c| CommitRef { sha: c[3].to_string(), message: c[4].trim().to_string() })
        .collect()
}

/// `path` relative to `root` when it lies inside it (see [`crate::text::paths::relative_to`]).
pub fn relative_to(path: &str, root: &str) -> String {
    crate::text::paths::relative_to(path, root)
}

#[cfg(test)]
mod tests;
