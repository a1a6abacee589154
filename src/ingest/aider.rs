//! Aider chat histories (`.aider.chat.history.md` in the project's directory), into the same
//! [`ParsedFile`] the Claude Code parser gives, one per chat.
//!
//! Observed in Aider 0.86 (see `docs/formats.md`): markdown appended as the chat goes on. Each
//! chat starts with `# aider chat started at YYYY-MM-DD HH:MM:SS` (local time, no zone: read as
//! UTC); the user's prompt is written as `#### ` lines; Aider's own output as `> ` lines (a file
//! name followed by `> Add file to the chat?` is a file read into the chat, `> Applied edit to P`
//! an edit, `> Commit <sha> <subject>` a commit); everything else is the model's answer, with
//! `<thinking-content-…>` blocks left out. Messages carry only the chat's start time (in order,
//! a millisecond apart). A chat's id is `aider-<start time>`.

use chrono::{DateTime, NaiveDateTime, Utc};

use crate::doc::{CommitRef, FileAction, FileRef, Role};
use crate::ingest::claude::{ParsedFile, ParsedMessage, SkippedLine, add_file, clean_text};

const START: &str = "# aider chat started at ";

/// The chats of a history file: `(chat id, parsed)`, in file order.
pub fn parse(bytes: &[u8]) -> Vec<(String, ParsedFile)> {
    let text = String::from_utf8_lossy(bytes);
    let mut chats: Vec<(String, ParsedFile)> = Vec::new();
    let mut state = Chat::default();
    let mut consumed = 0usize;
    for (n, raw) in text.split_inclusive('\n').enumerate() {
        let complete = raw.ends_with('\n');
        if complete {
            consumed += raw.len();
        }
        let line = raw.trim_end_matches(['\n', '\r']);
        if let Some(when) = line.strip_prefix(START) {
            state.finish(&mut chats);
            let start = NaiveDateTime::parse_from_str(when.trim(), "%Y-%m-%d %H:%M:%S").map(|t| t.and_utc());
            state = Chat { start: start.ok(), ..Chat::default() };
            let id = format!("aider-{}", when.trim().replace([' ', ':'], "").replace('-', ""));
            if start.is_err() {
                state
                    .skipped
                    .push(SkippedLine { line: n + 1, reason: format!("chat start time `{when}` not understood") });
            }
            state.id = Some(id);
            continue;
        }
        if state.id.is_none() {
            continue; // before the first chat
        }
        state.line(n + 1, line);
    }
    state.finish(&mut chats);
    for (_, pf) in &mut chats {
        pf.consumed = consumed;
    }
    chats
}

#[derive(Default)]
struct Chat {
    id: Option<String>,
    start: Option<DateTime<Utc>>,
    out: ParsedFile,
    prompt: Vec<String>,
    answer: Vec<String>,
    in_thinking: bool,
    first_line: usize,
    pending_file: Option<String>,
    skipped: Vec<SkippedLine>,
}

impl Chat {
    fn line(&mut self, n: usize, line: &str) {
        self.out.records += 1;
        if let Some(p) = line.strip_prefix("####") {
            if !self.answer.is_empty() {
                self.flush_answer();
            }
            if self.prompt.is_empty() {
                self.first_line = n;
            }
            self.prompt.push(p.trim().to_string());
            return;
        }
        if !self.prompt.is_empty() {
            self.flush_prompt();
        }
        if let Some(o) = line.strip_prefix('>') {
            self.output(o.trim());
            return;
        }
        if line.trim_start().starts_with("<thinking-content-") {
            self.in_thinking = !line.contains("</thinking-content-");
            return;
        }
        if self.in_thinking {
            if line.contains("</thinking-content-") {
                self.in_thinking = false;
            }
            return;
        }
        if self.answer.is_empty() && line.trim().is_empty() {
            return;
        }
        if self.answer.is_empty() {
            self.first_line = n;
        }
        self.answer.push(line.to_string());
    }

    /// A `> ` line of Aider's own output.
    fn output(&mut self, o: &str) {
        let file =
            |path: &str, action| FileRef { path: crate::text::paths::normalize(path), line_ranges: vec![], action };
        if o.starts_with("Add file to the chat?") || o.starts_with("Add ") && o.contains("to the chat?") {
            if let Some(p) = self.pending_file.take() {
                self.attach(file(&p, FileAction::Read), None);
            }
            return;
        }
        if let Some(p) = o.strip_prefix("Applied edit to ") {
            self.attach(file(p.trim(), FileAction::Edited), None);
        } else if let Some(rest) = o.strip_prefix("Commit ") {
            let mut it = rest.splitn(2, ' ');
            let (sha, subject) = (it.next().unwrap_or_default(), it.next().unwrap_or_default());
            if sha.len() >= 7 && sha.chars().all(|c| c.is_ascii_hexdigit()) {
                self.attach(
                    file("", FileAction::Read),
                    Some(CommitRef { sha: sha.into(), message: subject.trim().into() }),
                );
            }
        }
        // A bare path line comes just before Aider asks to add it to the chat.
        self.pending_file =
            (!o.is_empty() && !o.contains(' ') && (o.contains('.') || o.contains('/'))).then(|| o.to_string());
    }

    /// Files and commits belong to the latest answer (or a new empty one).
    fn attach(&mut self, f: FileRef, commit: Option<CommitRef>) {
        self.flush_answer();
        let needs_new = self.out.messages.last().is_none_or(|m| m.role != Role::Assistant);
        if needs_new {
            let at = self.first_line;
            self.push(Role::Assistant, String::new(), at);
        }
        let m = self.out.messages.last_mut().expect("an answer");
        if !f.path.is_empty() {
            add_file(&mut m.files, f);
        }
        if let Some(c) = commit {
            m.commits.push(c);
        }
    }

    fn push(&mut self, role: Role, text: String, line: usize) {
        let i = self.out.messages.len() as i64;
        let timestamp = self.start.unwrap_or_default() + chrono::Duration::milliseconds(i);
        self.out.messages.push(ParsedMessage {
            uuid: format!("L{line}"),
            role,
            text: clean_text(&text),
            timestamp,
            files: Vec::new(),
            commits: Vec::new(),
            cwd: None,
        });
    }

    fn flush_prompt(&mut self) {
        let text = std::mem::take(&mut self.prompt).join("\n");
        if !text.trim().is_empty() {
            let at = self.first_line;
            self.push(Role::User, text, at);
        }
    }

    fn flush_answer(&mut self) {
        let text = std::mem::take(&mut self.answer).join("\n");
        if !text.trim().is_empty() {
            let at = self.first_line;
            self.push(Role::Assistant, text, at);
        }
    }

    fn finish(&mut self, chats: &mut Vec<(String, ParsedFile)>) {
        self.flush_prompt();
        self.flush_answer();
        if let Some(id) = self.id.take() {
            let mut out = std::mem::take(&mut self.out);
            out.session_id = Some(id.clone());
            out.skipped = std::mem::take(&mut self.skipped);
            chats.push((id, out));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chats_prompts_answers_files_and_commits() {
        let h = "\n# aider chat started at 2026-04-22 22:40:12\n\n> Aider v0.86.2\n\n#### why does the hotkey\n#### paste the same text?\n\n<thinking-content-7b>\nhmm\n</thinking-content-7b>\n\nThe buffer is never cleared.\n\n> Tokens: 1k sent\n> frontend/electron/preload.ts\n> Add file to the chat? (Y)es/(N)o [Yes]: y\n> Applied edit to frontend/src/a.ts\n> Commit 1a2b3c4 fix: clear the buffer\n\n# aider chat started at 2026-04-23 09:00:00\n\n#### thanks\n";
        let chats = parse(h.as_bytes());
        assert_eq!(
            chats.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
            ["aider-20260422224012", "aider-20260423090000"]
        );
        let p = &chats[0].1;
        assert_eq!(p.messages.len(), 2);
        assert_eq!(
            (p.messages[0].role, p.messages[0].text.as_str()),
            (Role::User, "why does the hotkey\npaste the same text?")
        );
        let a = &p.messages[1];
        assert_eq!(a.text, "The buffer is never cleared.", "thinking left out");
        let files: Vec<(&str, FileAction)> = a.files.iter().map(|f| (f.path.as_str(), f.action)).collect();
        assert_eq!(
            files,
            [("frontend/electron/preload.ts", FileAction::Read), ("frontend/src/a.ts", FileAction::Edited)]
        );
        assert_eq!(a.commits, [CommitRef { sha: "1a2b3c4".into(), message: "fix: clear the buffer".into() }]);
        assert!(p.messages[0].timestamp < a.timestamp);
        assert_eq!(chats[1].1.messages[0].text, "thanks");
        assert!(parse(b"no chat here\n").is_empty());
    }
}
