//! Compact run records for sub-agent runs (seed "Conversation Schema"). Pure: transcript bytes
//! in, records out; text in, records out.
//!
//! One record per sub-agent run (a `Task` / `Agent` tool call and its sidechain transcript):
//!
//! ```text
//! task_id|department|attempt|model|tools|files|outcome|duration|error|summary
//! a7c91f4|explore|1|S|R3.G2.P1|src/auth.rs,src/lib.rs|S|45000||map_the_auth_module
//! ```
//!
//! * `task_id`: the agent id (names the sidechain file `agent-<id>.jsonl`), or the tool call id.
//! * `department`: the agent type (`subagent_type`), lower-case.
//! * `attempt`: 1 for the first run of a task in the session, 2 for the next run with the same
//!   agent type and description, ….
//! * `model`: `S` Sonnet, `O` Opus (the seed's letters), `H` Haiku, `U` unknown (added).
//! * `tools`: counts of the sidechain's tool calls, `R3.E2.B1`. The seed's letters: `R` Read,
//!   `E` Edit, `W` Write, `B` Bash, `G` Glob, `P` Grep, `T` Task/Agent, `F` WebFetch. Added:
//!   `M` MultiEdit, `N` NotebookEdit, `S` WebSearch, `D` TodoWrite / TaskCreate / TaskUpdate,
//!   `K` Skill, `X` any other tool (MCP tools and future ones), so the counts always add up to
//!   the number of tool calls.
//! * `files`: files the run wrote (Edit / Write / MultiEdit / NotebookEdit), comma-separated.
//! * `outcome`: `S` success, `F` failure. `duration`: milliseconds. `error`: an error type when
//!   the run failed (`interrupted`, `tool_error`, or the status Claude Code reported).
//! * `summary`: the task's description, ≤ 40 characters, spaces written as `_`.
//!
//! Inside fields, `%`, `|` and `,` are percent-encoded (`%25`, `%7C`, `%2C`), so every field
//! round-trips. [`RunRecord::readable`] gives the seed's readable block and
//! [`RunRecord::parse`] reads either form back; [`detect`] tells them apart from the text alone.
//!
//! The records of a session come from its transcripts: [`session_runs`].

mod read;

use std::collections::HashMap;
use std::fmt;

pub use read::{Sidechain, session_runs};

/// Model family of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ModelCode {
    /// `S`: Claude Sonnet.
    Sonnet,
    /// `O`: Claude Opus.
    Opus,
    /// `H`: Claude Haiku (added to the seed's letters).
    Haiku,
    /// `U`: unknown or another model (added).
    Unknown,
}

impl ModelCode {
    /// The one-letter code.
    pub fn letter(self) -> char {
        match self {
            ModelCode::Sonnet => 'S',
            ModelCode::Opus => 'O',
            ModelCode::Haiku => 'H',
            ModelCode::Unknown => 'U',
        }
    }

    /// The readable name.
    pub fn name(self) -> &'static str {
        match self {
            ModelCode::Sonnet => "Sonnet",
            ModelCode::Opus => "Opus",
            ModelCode::Haiku => "Haiku",
            ModelCode::Unknown => "Unknown",
        }
    }

    fn from_letter(s: &str) -> Option<ModelCode> {
        [ModelCode::Sonnet, ModelCode::Opus, ModelCode::Haiku, ModelCode::Unknown]
            .into_iter()
            .find(|m| s.len() == 1 && s.starts_with(m.letter()))
    }

    fn from_name(s: &str) -> Option<ModelCode> {
        [ModelCode::Sonnet, ModelCode::Opus, ModelCode::Haiku, ModelCode::Unknown].into_iter().find(|m| m.name() == s)
    }

    /// The family of a model id such as `claude-sonnet-4-5-20250929` or an alias (`opus`).
    pub fn of_model(id: &str) -> ModelCode {
        let id = id.to_ascii_lowercase();
        if id.contains("sonnet") {
            ModelCode::Sonnet
        } else if id.contains("opus") {
            ModelCode::Opus
        } else if id.contains("haiku") {
            ModelCode::Haiku
        } else {
            ModelCode::Unknown
        }
    }
}

/// Tool letters: `(letter, readable name, Claude Code tool names)`. The first eight are the
/// seed's; `M N S D K X` are added (`X` catches every other tool).
pub const TOOLS: &[(char, &str, &[&str])] = &[
    ('R', "Read", &["Read"]),
    ('E', "Edit", &["Edit"]),
    ('W', "Write", &["Write"]),
    ('B', "Bash", &["Bash", "BashOutput", "KillShell", "KillBash"]),
    ('G', "Glob", &["Glob", "LS"]),
    ('P', "Grep", &["Grep"]),
    ('T', "Task", &["Task", "Agent"]),
    ('F', "WebFetch", &["WebFetch"]),
    ('M', "MultiEdit", &["MultiEdit"]),
    ('N', "NotebookEdit", &["NotebookEdit"]),
    ('S', "WebSearch", &["WebSearch"]),
    ('D', "Todo", &["TodoWrite", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet"]),
    ('K', "Skill", &["Skill"]),
    ('X', "Other", &[]),
];

/// The letter of a Claude Code tool name.
pub fn tool_letter(name: &str) -> char {
    TOOLS.iter().find(|(_, _, names)| names.contains(&name)).map_or('X', |t| t.0)
}

/// One sub-agent run.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunRecord {
    /// Agent id or tool call id.
    pub task_id: String,
    /// Agent type, lower-case.
    pub department: String,
    /// 1 for the first run of this task in the session.
    pub attempt: u32,
    /// Model family.
    pub model: ModelCode,
    /// `(letter, count)` in the order written.
    pub tools: Vec<(char, u32)>,
    /// Files written.
    pub files: Vec<String>,
    /// Succeeded.
    pub success: bool,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// Error type when it failed.
    pub error: Option<String>,
    /// ≤ 40 characters, no spaces (`_`).
    pub summary: String,
}

/// The two textual forms of a run record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `task_id|department|…|summary` on one line.
    Compact,
    /// The seed's readable block (`Task: …`, `Department: … (Attempt n)`, …).
    Readable,
}

/// Why a text is not a run record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a run record: {0}")]
pub struct ParseError(pub String);

fn esc(s: &str) -> String {
    s.replace('%', "%25").replace('|', "%7C").replace(',', "%2C")
}

/// What the readable form writes for an empty list.
const NONE: &str = "(none)";

/// A file name in the readable form: also escapes a file literally named `(none)`.
fn esc_file(s: &str) -> String {
    if s == NONE { "%28none)".to_string() } else { esc(s) }
}

fn unesc(s: &str) -> String {
    if s == "%28none)" {
        return NONE.to_string();
    }
    s.replace("%7C", "|").replace("%2C", ",").replace("%25", "%")
}

/// A summary as the format carries it: whitespace → `_`, at most 40 characters.
pub fn compact_summary(text: &str) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join("_");
    let one: String = one.chars().filter(|c| *c != '|').collect();
    let mut out: String = one.chars().take(40).collect();
    while out.ends_with('_') {
        out.pop();
    }
    out
}

fn valid_department(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | ':' | '.'))
}

/// Which form a text is in, from the text alone: ten `|`-separated fields with a model code in
/// position 3, a department in position 1, a number in position 2, `S`/`F` in position 6 and
/// digits in position 7 is the compact form; `Task:` and `Department:` lines are the readable
/// form. `None` for anything else.
pub fn detect(text: &str) -> Option<Format> {
    let t = text.trim();
    let fields: Vec<&str> = t.split('|').collect();
    if !t.contains('\n')
        && fields.len() == 10
        && valid_department(fields[1])
        && fields[2].parse::<u32>().is_ok()
        && ModelCode::from_letter(fields[3]).is_some()
        && matches!(fields[6], "S" | "F")
        && fields[7].parse::<u64>().is_ok()
    {
        return Some(Format::Compact);
    }
    let mut lines = t.lines();
    if lines.next().is_some_and(|l| l.starts_with("Task: "))
        && lines.next().is_some_and(|l| l.starts_with("Department: "))
    {
        return Some(Format::Readable);
    }
    None
}

fn format_seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) { format!("{}s", ms / 1000) } else { format!("{}.{:03}s", ms / 1000, ms % 1000) }
}

fn parse_seconds(s: &str) -> Option<u64> {
    let s = s.strip_suffix('s')?;
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 3 || !frac.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac_ms: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<3}").parse().ok()? };
    whole.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac_ms)
}

impl RunRecord {
    /// The compact one-line form.
    pub fn compact(&self) -> String {
        let tools: Vec<String> = self.tools.iter().map(|(l, n)| format!("{l}{n}")).collect();
        let files: Vec<String> = self.files.iter().map(|f| esc(f)).collect();
        format!(
            "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
            esc(&self.task_id),
            self.department,
            self.attempt,
            self.model.letter(),
            tools.join("."),
            files.join(","),
            if self.success { 'S' } else { 'F' },
            self.duration_ms,
            esc(self.error.as_deref().unwrap_or("")),
            esc(&self.summary),
        )
    }

    /// The seed's readable block. Empty tool and file lists read `(none)`; the `Error:` line
    /// is there only when the run failed with an error type.
    pub fn readable(&self) -> String {
        let mut out = format!(
            "Task: {}\nDepartment: {} (Attempt {})\nModel: {}\n",
            esc(&self.task_id),
            self.department,
            self.attempt,
            self.model.name()
        );
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|(l, n)| format!("{}({n})", TOOLS.iter().find(|t| t.0 == *l).map_or("Other", |t| t.1)))
            .collect();
        let files: Vec<String> = self.files.iter().map(|f| esc_file(f)).collect();
        let list = |v: &[String]| if v.is_empty() { NONE.to_string() } else { v.join(", ") };
        out += &format!("Tools: {}\nFiles: {}\n", list(&tools), list(&files));
        out += &format!(
            "Outcome: {}\nDuration: {}\n",
            if self.success { "SUCCESS" } else { "FAILED" },
            format_seconds(self.duration_ms)
        );
        if let Some(e) = &self.error {
            out += &format!("Error: {}\n", esc(e));
        }
        out += &format!("Summary: {}", esc(&self.summary).replace('_', " "));
        out
    }

    /// Reads a record in either form (see [`detect`]).
    pub fn parse(text: &str) -> Result<RunRecord, ParseError> {
        match detect(text) {
            Some(Format::Compact) => Self::parse_compact(text.trim()),
            Some(Format::Readable) => Self::parse_readable(text.trim_start().trim_end_matches(['\n', '\r'])),
            None => Err(ParseError("expected 10 `|`-separated fields or a `Task:` block".into())),
        }
    }

    fn parse_tools(s: &str, readable: bool) -> Result<Vec<(char, u32)>, ParseError> {
        let bad = || ParseError(format!("bad tools field `{s}`"));
        if s.is_empty() {
            return Ok(Vec::new());
        }
        let parts: Vec<&str> = if readable { s.split(", ").collect() } else { s.split('.').collect() };
        parts
            .into_iter()
            .map(|p| {
                if readable {
                    let (name, n) = p.strip_suffix(')').and_then(|p| p.split_once('(')).ok_or_else(bad)?;
                    let letter = TOOLS.iter().find(|t| t.1 == name).ok_or_else(bad)?.0;
                    Ok((letter, n.parse().map_err(|_| bad())?))
                } else {
                    let mut c = p.chars();
                    let letter = c.next().filter(|l| TOOLS.iter().any(|t| t.0 == *l)).ok_or_else(bad)?;
                    Ok((letter, c.as_str().parse().map_err(|_| bad())?))
                }
            })
            .collect()
    }

    fn parse_compact(t: &str) -> Result<RunRecord, ParseError> {
        let f: Vec<&str> = t.split('|').collect();
        let files = if f[5].is_empty() { Vec::new() } else { f[5].split(',').map(unesc).collect() };
        Ok(RunRecord {
            task_id: unesc(f[0]),
            department: f[1].to_string(),
            attempt: f[2].parse().map_err(|_| ParseError(format!("bad attempt `{}`", f[2])))?,
            model: ModelCode::from_letter(f[3]).ok_or_else(|| ParseError(format!("bad model `{}`", f[3])))?,
            tools: Self::parse_tools(f[4], false)?,
            files,
            success: f[6] == "S",
            duration_ms: f[7].parse().map_err(|_| ParseError(format!("bad duration `{}`", f[7])))?,
            error: (!f[8].is_empty()).then(|| unesc(f[8])),
            summary: unesc(f[9]),
        })
    }

    fn parse_readable(t: &str) -> Result<RunRecord, ParseError> {
        let mut fields: HashMap<&str, &str> = HashMap::new();
        for line in t.lines() {
            let (k, v) = line.split_once(':').ok_or_else(|| ParseError(format!("bad line `{line}`")))?;
            fields.insert(k, v.strip_prefix(' ').unwrap_or(v));
        }
        let get = |k: &str| fields.get(k).copied().ok_or_else(|| ParseError(format!("missing `{k}:` line")));
        let dept = get("Department")?;
        let (department, attempt) = dept
            .strip_suffix(')')
            .and_then(|d| d.split_once(" (Attempt "))
            .ok_or_else(|| ParseError(format!("bad department line `{dept}`")))?;
        let files = match fields.get("Files") {
            None => Vec::new(),
            Some(&f) if f == NONE => Vec::new(),
            Some(f) => f.split(", ").map(unesc).collect(),
        };
        Ok(RunRecord {
            task_id: unesc(get("Task")?),
            department: department.to_string(),
            attempt: attempt.parse().map_err(|_| ParseError(format!("bad attempt `{attempt}`")))?,
            model: ModelCode::from_name(get("Model")?).ok_or_else(|| ParseError("bad model name".into()))?,
            tools: Self::parse_tools(fields.get("Tools").copied().filter(|t| *t != NONE).unwrap_or(""), true)?,
            files,
            success: match get("Outcome")? {
                "SUCCESS" => true,
                "FAILED" => false,
                o => return Err(ParseError(format!("bad outcome `{o}`"))),
            },
            duration_ms: parse_seconds(get("Duration")?).ok_or_else(|| ParseError("bad duration".into()))?,
            error: fields.get("Error").map(|e| unesc(e)),
            summary: unesc(&get("Summary")?.replace(' ', "_")),
        })
    }
}

impl fmt::Display for RunRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.compact())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunRecord {
        RunRecord {
            task_id: "TSK001".into(),
            department: "engineer".into(),
            attempt: 2,
            model: ModelCode::Sonnet,
            tools: vec![('R', 3), ('E', 2), ('B', 1)],
            files: vec!["src/auth.ts".into(), "src/middleware.ts".into()],
            success: true,
            duration_ms: 45000,
            error: None,
            summary: "refactored_auth_logic".into(),
        }
    }

    #[test]
    fn seed_example_round_trips() {
        let r = sample();
        let line = "TSK001|engineer|2|S|R3.E2.B1|src/auth.ts,src/middleware.ts|S|45000||refactored_auth_logic";
        assert_eq!(r.compact(), line);
        assert_eq!(
            r.readable(),
            "Task: TSK001\nDepartment: engineer (Attempt 2)\nModel: Sonnet\nTools: Read(3), Edit(2), Bash(1)\nFiles: src/auth.ts, src/middleware.ts\nOutcome: SUCCESS\nDuration: 45s\nSummary: refactored auth logic"
        );
        let mut empty = r.clone();
        empty.tools.clear();
        empty.files = vec!["(none)".into()];
        assert!(empty.readable().contains("Tools: (none)\nFiles: %28none)\n"), "{}", empty.readable());
        assert_eq!(RunRecord::parse(&empty.readable()).unwrap(), empty);
        assert_eq!(detect(line), Some(Format::Compact));
        assert_eq!(detect(&r.readable()), Some(Format::Readable));
        assert_eq!(RunRecord::parse(line).unwrap(), r);
        assert_eq!(RunRecord::parse(&r.readable()).unwrap(), r);
    }

    #[test]
    fn detection_rejects_other_text() {
        assert_eq!(detect("a|b|c"), None);
        assert_eq!(detect("x|Engineer|2|S|R1||S|10||s"), None, "department must be lower-case");
        assert_eq!(detect("x|engineer|2|Q|R1||S|10||s"), None, "unknown model code");
        assert_eq!(detect("x|engineer|two|S|R1||S|10||s"), None);
        assert_eq!(detect("Task: x"), None);
        assert!(RunRecord::parse("hello").is_err());
        assert!(RunRecord::parse("x|engineer|2|S|Z9||S|10||s").is_err(), "unknown tool letter");
    }

    #[test]
    fn separators_inside_fields_are_escaped() {
        let mut r = sample();
        r.files = vec!["a,b|c%d.rs".into()];
        r.error = Some("exit|1".into());
        r.duration_ms = 1234;
        let line = r.compact();
        assert_eq!(line.split('|').count(), 10);
        assert_eq!(RunRecord::parse(&line).unwrap(), r);
        assert_eq!(RunRecord::parse(&r.readable()).unwrap(), r);
    }

    #[test]
    fn summaries_are_compacted() {
        assert_eq!(compact_summary("  Explore the   transcript renderer  "), "Explore_the_transcript_renderer");
        assert_eq!(compact_summary(&"word ".repeat(20)).chars().count(), 39);
        assert_eq!(compact_summary("探索 训练数据流"), "探索_训练数据流");
    }

    #[test]
    fn letters_are_unique_and_cover_unknown_tools() {
        let mut letters: Vec<char> = TOOLS.iter().map(|t| t.0).collect();
        letters.sort();
        letters.dedup();
        assert_eq!(letters.len(), TOOLS.len());
        assert_eq!(tool_letter("mcp__github__create_issue"), 'X');
        assert_eq!(tool_letter("Agent"), 'T');
    }
}
