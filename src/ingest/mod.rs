//! Transcript formats → sessions. Pure: bytes in, parsed sessions out; never touches storage.
//! One module per source format, each giving the same [`claude::ParsedFile`]: [`claude`]
//! (Claude Code), [`codex`] (Codex CLI), [`gemini`] (Gemini CLI), [`aider`] (Aider), and
//! [`structured`] conversations; [`layout`] finds the files of each session on disk.

pub mod aider;
pub mod claude;
pub mod codex;
pub mod gemini;
pub mod layout;
pub mod structured;

use serde_json::Value;

use claude::{MAX_LINE_BYTES, ParsedFile, SkippedLine};

/// The JSON objects of a JSON Lines file with their 1-based line numbers. Fills `out.skipped`
/// (malformed, torn or oversized lines, with the reason), `out.records` and `out.consumed`
/// (bytes up to and including the last complete line: a torn last line waits for the next run).
pub(crate) fn json_lines(bytes: &[u8], out: &mut ParsedFile) -> Vec<(usize, Value)> {
    let mut records = Vec::new();
    let mut start = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let (end, complete) = match bytes.get(start..).and_then(|rest| rest.iter().position(|&b| b == b'\n')) {
            Some(i) => (start + i, true),
            None => (bytes.len(), false),
        };
        let line = bytes.get(start..end).unwrap_or_default().trim_ascii();
        start = end + 1;
        if complete {
            out.consumed = start;
        }
        if line.is_empty() {
            continue;
        }
        if line.len() > MAX_LINE_BYTES {
            let reason = format!("line of {} bytes is over the {MAX_LINE_BYTES}-byte limit", line.len());
            out.skipped.push(SkippedLine { line: line_no, reason });
            continue;
        }
        match parse_line(line) {
            Ok(v) if v.is_object() => {
                out.records += 1;
                records.push((line_no, v));
            }
            Ok(_) => out.skipped.push(SkippedLine { line: line_no, reason: "not a record (a JSON object)".into() }),
            Err(e) => {
                let reason = if complete { format!("malformed JSON: {e}") } else { "torn last line".into() };
                out.skipped.push(SkippedLine { line: line_no, reason });
            }
        }
    }
    records
}

/// One JSON line. A line that holds bytes that are not UTF-8 (a damaged file, a tool that cut a
/// character in two) is read with each such byte replaced by U+FFFD, so that the message it
/// holds is kept (and the damage shows where it is) rather than the whole line lost.
pub(crate) fn parse_line(line: &[u8]) -> serde_json::Result<Value> {
    match serde_json::from_slice::<Value>(line) {
        Err(e) if std::str::from_utf8(line).is_err() => {
            serde_json::from_str::<Value>(&String::from_utf8_lossy(line)).map_err(|_| e)
        }
        parsed => parsed,
    }
}
