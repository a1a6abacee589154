//! Layered context export (seed "Session Context V2"). Pure: documents in, V1 out; V1 ⇄ V2.
//!
//! **V1** is readable JSON: a project's sessions, each with its goal, state, decisions (what,
//! why, alternatives, files it touches), files changed (action, role, deps, status), patterns
//! (the session's key topics), blockers (tool errors, open or resolved), next steps (open
//! tasks) and key-value extras (commits made). Timestamps are whole-second UTC
//! (`2025-01-15T16:30:00Z`).
//!
//! **V2** is the same data for a model's context window: one string table, positional arrays
//! instead of objects, epoch seconds, numeric enums exactly as the seed lists them (state
//! `0=in_progress 1=completed 2=blocked 3=cancelled`; file action `0=created 1=modified
//! 2=deleted 3=renamed`; file status `0=complete 1=partial 2=blocked 3=pending`; blocker
//! `0=open 1=resolved 2=wontfix`), minified:
//!
//! ```text
//! {"v":"2.0","meta":{"p":project,"c":created,"u":updated},"strings":[…],
//!  "sessions":[[id,start,end,goal,state,[decisions],[files],[patterns],[blockers],[next],{kv}?]],
//!  "decisions":[[id,what,why,[alt],[impact]]],"files":[[path,action,role,[deps],status]],
//!  "patterns":[[name,desc]],"blockers":[[id,desc,status]]}
//! ```
//!
//! A row's trailing empty fields (an empty list, the empty string) are left out: a decision
//! with no reason, alternatives or files is `[id,what]`, a session with no patterns, blockers or
//! next steps ends at its files. Readers take a missing field as empty.
//!
//! Rows are shared between sessions only when they are identical, so V2 → V1 gives back
//! exactly the V1 that was encoded ([`decode`] ∘ [`encode`] is the identity).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::doc::{DocBody, Document, FileAction};
use crate::error::{Error, Result};

/// Session state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// 0
    InProgress,
    /// 1
    Completed,
    /// 2
    Blocked,
    /// 3
    Cancelled,
}

/// What happened to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// 0
    Created,
    /// 1
    Modified,
    /// 2
    Deleted,
    /// 3
    Renamed,
}

/// Where a file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// 0
    Complete,
    /// 1
    Partial,
    /// 2
    Blocked,
    /// 3
    Pending,
}

/// Where a blocker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockerStatus {
    /// 0
    Open,
    /// 1
    Resolved,
    /// 2
    Wontfix,
}

macro_rules! codes {
    ($t:ty, $($v:ident = $n:literal),+) => {
        impl $t {
            /// The seed's numeric code.
            pub fn code(self) -> u64 {
                match self { $(Self::$v => $n),+ }
            }
            fn from_code(c: u64) -> Option<Self> {
                match c { $($n => Some(Self::$v),)+ _ => None }
            }
        }
    };
}
codes!(State, InProgress = 0, Completed = 1, Blocked = 2, Cancelled = 3);
codes!(Action, Created = 0, Modified = 1, Deleted = 2, Renamed = 3);
codes!(FileStatus, Complete = 0, Partial = 1, Blocked = 2, Pending = 3);
codes!(BlockerStatus, Open = 0, Resolved = 1, Wontfix = 2);

/// A decision in V1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Short id (`d` + 8 hex of the decision document's id).
    pub id: String,
    /// The decision's summary.
    pub what: String,
    /// Its reasoning, or empty.
    pub why: String,
    /// Alternatives set aside.
    pub alt: Vec<String>,
    /// Files it touches.
    pub impact: Vec<String>,
}

/// A file changed in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileInfo {
    /// Created, modified, deleted or renamed.
    pub action: Action,
    /// What the file is for (the session's domain when known), or empty.
    pub role: String,
    /// Files it depends on (not inferred: empty unless given).
    pub deps: Vec<String>,
    /// Where it stands.
    pub status: FileStatus,
}

/// A blocker (a tool error met in the session).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    /// `e1`, `e2`, … within the session.
    pub id: String,
    /// The error, shortened.
    pub desc: String,
    /// Open, or resolved when the same tool later succeeded.
    pub status: BlockerStatus,
}

/// One session in V1.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Session id.
    pub id: String,
    /// First record, whole-second UTC.
    pub start: Option<String>,
    /// Last record, whole-second UTC.
    pub end: Option<String>,
    /// The first real request.
    pub goal: String,
    /// Completed, in progress (open tasks), blocked (unresolved errors).
    pub state: State,
    /// Decisions made.
    pub decisions: Vec<Decision>,
    /// Files changed, by path.
    pub files: BTreeMap<String, FileInfo>,
    /// Key topics (name → description).
    pub patterns: BTreeMap<String, String>,
    /// Errors met.
    pub blockers: Vec<Blocker>,
    /// Open tasks.
    pub next: Vec<String>,
    /// Extras: the commits made (space-separated SHAs). (The previous and next session are the neighbours in
    /// [`V1::sessions`], which is in time order.)
    pub kv: BTreeMap<String, String>,
}

/// The readable export of one project.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct V1 {
    /// Format version, `"1.0"`.
    pub v: String,
    /// Project name.
    pub project: String,
    /// Earliest session start.
    pub created: Option<String>,
    /// Latest session end.
    pub updated: Option<String>,
    /// Sessions, oldest first.
    pub sessions: Vec<Session>,
}

/// Whole-second UTC in V1's form.
pub fn iso(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn epoch(ts: &Option<String>) -> Result<Value> {
    match ts {
        None => Ok(Value::Null),
        Some(s) => {
            let t: DateTime<Utc> = s.parse().map_err(|_| bad(format!("timestamp `{s}` is not RFC 3339")))?;
            if iso(t) != *s {
                return Err(bad(format!("timestamp `{s}` must be whole-second UTC like 2025-01-15T16:30:00Z")));
            }
            Ok(json!(t.timestamp()))
        }
    }
}

fn bad(msg: String) -> Error {
    Error::InvalidArgument(msg)
}

fn short(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max { one } else { format!("{}…", one.chars().take(max - 1).collect::<String>()) }
}

/// V1 from a collection's documents (its summaries and decisions; messages are ignored).
pub fn v1_from_documents(project: &str, docs: &[Document]) -> V1 {
    let mut sessions: Vec<(i64, Session)> = Vec::new();
    for d in docs {
        let DocBody::Summary(s) = &d.body else { continue };
        let decisions = docs
            .iter()
            .filter(|x| x.session_id == d.session_id)
            .filter_map(|x| match &x.body {
                DocBody::Decision(f) => Some((x, f)),
                _ => None,
            })
            .map(|(x, f)| Decision {
                id: format!("d{}", crate::text::prefix_chars(&x.id.simple().to_string(), 8)),
                what: f.summary.clone(),
                why: f.reasoning.clone().unwrap_or_default(),
                alt: f.alternatives.clone(),
                impact: x.files_discussed.iter().map(|r| r.path.clone()).collect(),
            })
            .collect();
        let files = d
            .files_discussed
            .iter()
            .filter_map(|f| {
                let action = match f.action {
                    FileAction::Read => return None,
                    FileAction::Edited => Action::Modified,
                    FileAction::Created => Action::Created,
                    FileAction::Deleted => Action::Deleted,
                };
                let status = if s.tasks_remaining.is_empty() { FileStatus::Complete } else { FileStatus::Partial };
                Some((
                    f.path.clone(),
                    FileInfo { action, role: d.domain.clone().unwrap_or_default(), deps: Vec::new(), status },
                ))
            })
            .collect();
        let blockers: Vec<Blocker> = s
            .errors
            .iter()
            .enumerate()
            .map(|(i, (text, resolved))| Blocker {
                id: format!("e{}", i + 1),
                // The first line says what failed; stack traces stay in the messages.
                desc: short(text.lines().find(|l| !l.trim().is_empty()).unwrap_or(""), 100),
                status: if *resolved { BlockerStatus::Resolved } else { BlockerStatus::Open },
            })
            .collect();
        let state = if blockers.iter().any(|b| b.status == BlockerStatus::Open) {
            State::Blocked
        } else if !s.tasks_remaining.is_empty() {
            State::InProgress
        } else {
            State::Completed
        };
        let mut kv = BTreeMap::new();
        if !d.commits_made.is_empty() {
            kv.insert(
                "commits".to_string(),
                d.commits_made.iter().map(|c| c.sha.as_str()).collect::<Vec<_>>().join(" "),
            );
        }
        let time = |ms: i64| DateTime::<Utc>::from_timestamp_millis(ms).map(iso);
        sessions.push((
            s.started_at_ms,
            Session {
                id: d.session_id.clone(),
                start: time(s.started_at_ms),
                end: time(s.ended_at_ms),
                goal: short(&s.goal, 200),
                state,
                decisions,
                files,
                patterns: s.key_topics.iter().map(|t| (t.clone(), "key topic".to_string())).collect(),
                blockers,
                next: s.tasks_remaining.clone(),
                kv,
            },
        ));
    }
    sessions.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.id.cmp(&b.1.id)));
    let created = sessions.iter().filter_map(|(_, s)| s.start.clone()).min();
    let updated = sessions.iter().filter_map(|(_, s)| s.end.clone()).max();
    V1 {
        v: "1.0".into(),
        project: project.to_string(),
        created,
        updated,
        sessions: sessions.into_iter().map(|(_, s)| s).collect(),
    }
}

/// Interns strings and rows.
#[derive(Default)]
struct Table {
    strings: Vec<String>,
    index: HashMap<String, usize>,
}

impl Table {
    fn s(&mut self, s: &str) -> usize {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        self.strings.push(s.to_string());
        self.index.insert(s.to_string(), self.strings.len() - 1);
        self.strings.len() - 1
    }

    fn list(&mut self, v: &[String]) -> Value {
        json!(v.iter().map(|s| self.s(s)).collect::<Vec<_>>())
    }
}

/// Rows of one layer, shared only when identical.
#[derive(Default)]
struct Rows {
    rows: Vec<Value>,
    index: HashMap<String, usize>,
}

impl Rows {
    fn add(&mut self, row: Value) -> usize {
        let key = row.to_string();
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        self.rows.push(row);
        self.index.insert(key, self.rows.len() - 1);
        self.rows.len() - 1
    }
}

/// V1 → V2. Fails only on timestamps that are not whole-second UTC.
pub fn encode(v1: &V1) -> Result<Value> {
    let mut t = Table::default();
    let (mut decisions, mut files, mut patterns, mut blockers) =
        (Rows::default(), Rows::default(), Rows::default(), Rows::default());
    let mut sessions = Vec::new();
    for s in &v1.sessions {
        let d: Vec<usize> = s
            .decisions
            .iter()
            .map(|d| {
                let row =
                    vec![json!(t.s(&d.id)), json!(t.s(&d.what)), json!(t.s(&d.why)), t.list(&d.alt), t.list(&d.impact)];
                decisions.add(trim(row, 2, &t))
            })
            .collect();
        let f: Vec<usize> = s
            .files
            .iter()
            .map(|(p, i)| {
                let row = json!([t.s(p), i.action.code(), t.s(&i.role), t.list(&i.deps), i.status.code()]);
                files.add(row)
            })
            .collect();
        let p: Vec<usize> =
            s.patterns.iter().map(|(n, d)| patterns.add(trim(vec![json!(t.s(n)), json!(t.s(d))], 1, &t))).collect();
        let b: Vec<usize> =
            s.blockers.iter().map(|b| blockers.add(json!([t.s(&b.id), t.s(&b.desc), b.status.code()]))).collect();
        let mut row = vec![
            json!(t.s(&s.id)),
            epoch(&s.start)?,
            epoch(&s.end)?,
            json!(t.s(&s.goal)),
            json!(s.state.code()),
            json!(d),
            json!(f),
            json!(p),
            json!(b),
            t.list(&s.next),
        ];
        if s.kv.is_empty() {
            sessions.push(trim(row, 5, &t));
        } else {
            row.push(json!(s.kv));
            sessions.push(Value::Array(row));
        }
    }
    Ok(json!({
        "v": "2.0",
        "meta": {"p": v1.project, "c": epoch(&v1.created)?, "u": epoch(&v1.updated)?},
        "strings": t.strings,
        "sessions": sessions,
        "decisions": decisions.rows,
        "files": files.rows,
        "patterns": patterns.rows,
        "blockers": blockers.rows,
    }))
}

/// A row without its trailing empty fields (an empty list, the empty string) from position
/// `from` on: what a reader takes as empty need not be written.
fn trim(mut row: Vec<Value>, from: usize, t: &Table) -> Value {
    let empty_string = t.index.get("").map(|&i| json!(i));
    while row.len() > from
        && row.last().is_some_and(|v| v.as_array().is_some_and(Vec::is_empty) || Some(v) == empty_string.as_ref())
    {
        row.pop();
    }
    Value::Array(row)
}

/// Reads V2 positionally; every error names what is wrong.
struct Reader<'a> {
    strings: Vec<&'a str>,
}

impl<'a> Reader<'a> {
    fn s(&self, v: &Value, what: &str) -> Result<String> {
        let i = v.as_u64().ok_or_else(|| bad(format!("{what}: expected a string index, got {v}")))?;
        self.strings
            .get(i as usize)
            .map(|s| s.to_string())
            .ok_or_else(|| bad(format!("{what}: string index {i} is past the table ({} strings)", self.strings.len())))
    }

    fn list(&self, v: &Value, what: &str) -> Result<Vec<String>> {
        arr(v, what)?.iter().map(|x| self.s(x, what)).collect()
    }

    /// A string field a row may leave out (a trailing empty string).
    fn s_or_empty(&self, v: Option<&Value>, what: &str) -> Result<String> {
        v.map_or_else(|| Ok(String::new()), |v| self.s(v, what))
    }
}

fn arr<'v>(v: &'v Value, what: &str) -> Result<&'v Vec<Value>> {
    v.as_array().ok_or_else(|| bad(format!("{what}: expected an array")))
}

fn at<'v>(row: &'v [Value], i: usize, what: &str) -> Result<&'v Value> {
    row.get(i).ok_or_else(|| bad(format!("{what}: position {i} missing")))
}

/// A list field a row may leave out (a trailing empty list).
fn or_empty(row: &[Value], i: usize) -> &Value {
    static EMPTY: Value = Value::Array(Vec::new());
    row.get(i).unwrap_or(&EMPTY)
}

fn code<T>(v: &Value, from: fn(u64) -> Option<T>, what: &str) -> Result<T> {
    v.as_u64().and_then(from).ok_or_else(|| bad(format!("{what}: unknown code {v}")))
}

fn time(v: &Value, what: &str) -> Result<Option<String>> {
    match v {
        Value::Null => Ok(None),
        v => {
            let e = v.as_i64().ok_or_else(|| bad(format!("{what}: expected epoch seconds")))?;
            DateTime::<Utc>::from_timestamp(e, 0)
                .map(|t| Some(iso(t)))
                .ok_or_else(|| bad(format!("{what}: epoch {e} out of range")))
        }
    }
}

fn row_at<'v>(table: &'v [Value], i: &Value, what: &str) -> Result<&'v Vec<Value>> {
    let i = i.as_u64().ok_or_else(|| bad(format!("{what}: expected a row index")))? as usize;
    arr(table.get(i).ok_or_else(|| bad(format!("{what}: row {i} does not exist")))?, what)
}

/// V2 → V1.
pub fn decode(v2: &Value) -> Result<V1> {
    if v2.get("v").and_then(Value::as_str) != Some("2.0") {
        return Err(bad("not a V2 export: `v` must be \"2.0\"".into()));
    }
    let strings = arr(&v2["strings"], "strings")?
        .iter()
        .map(|s| s.as_str().ok_or_else(|| bad("strings: every entry must be a string".into())))
        .collect::<Result<Vec<_>>>()?;
    let r = Reader { strings };
    let layer = |k: &str| -> Result<&Vec<Value>> { arr(&v2[k], k) };
    let (decisions, files, patterns, blockers) =
        (layer("decisions")?, layer("files")?, layer("patterns")?, layer("blockers")?);
    let mut sessions = Vec::new();
    for s in layer("sessions")? {
        let s = arr(s, "session")?;
        let mut session = Session {
            id: r.s(at(s, 0, "session id")?, "session id")?,
            start: time(at(s, 1, "session start")?, "session start")?,
            end: time(at(s, 2, "session end")?, "session end")?,
            goal: r.s(at(s, 3, "session goal")?, "session goal")?,
            state: code(at(s, 4, "session state")?, State::from_code, "session state")?,
            decisions: Vec::new(),
            files: BTreeMap::new(),
            patterns: BTreeMap::new(),
            blockers: Vec::new(),
            next: r.list(or_empty(s, 9), "next steps")?,
            kv: match s.get(10) {
                None => BTreeMap::new(),
                Some(kv) => serde_json::from_value(kv.clone()).map_err(|e| bad(format!("session kv: {e}")))?,
            },
        };
        for i in arr(or_empty(s, 5), "decisions")? {
            let d = row_at(decisions, i, "decision")?;
            session.decisions.push(Decision {
                id: r.s(at(d, 0, "decision")?, "decision id")?,
                what: r.s(at(d, 1, "decision")?, "decision what")?,
                why: r.s_or_empty(d.get(2), "decision why")?,
                alt: r.list(or_empty(d, 3), "decision alt")?,
                impact: r.list(or_empty(d, 4), "decision impact")?,
            });
        }
        for i in arr(or_empty(s, 6), "files")? {
            let f = row_at(files, i, "file")?;
            session.files.insert(
                r.s(at(f, 0, "file")?, "file path")?,
                FileInfo {
                    action: code(at(f, 1, "file")?, Action::from_code, "file action")?,
                    role: r.s(at(f, 2, "file")?, "file role")?,
                    deps: r.list(at(f, 3, "file")?, "file deps")?,
                    status: code(at(f, 4, "file")?, FileStatus::from_code, "file status")?,
                },
            );
        }
        for i in arr(or_empty(s, 7), "patterns")? {
            let p = row_at(patterns, i, "pattern")?;
            session.patterns.insert(r.s(at(p, 0, "pattern")?, "pattern name")?, r.s_or_empty(p.get(1), "pattern")?);
        }
        for i in arr(or_empty(s, 8), "blockers")? {
            let b = row_at(blockers, i, "blocker")?;
            session.blockers.push(Blocker {
                id: r.s(at(b, 0, "blocker")?, "blocker id")?,
                desc: r.s(at(b, 1, "blocker")?, "blocker desc")?,
                status: code(at(b, 2, "blocker")?, BlockerStatus::from_code, "blocker status")?,
            });
        }
        sessions.push(session);
    }
    let meta = &v2["meta"];
    Ok(V1 {
        v: "1.0".into(),
        project: meta.get("p").and_then(Value::as_str).unwrap_or_default().to_string(),
        created: time(meta.get("c").unwrap_or(&Value::Null), "meta.c")?,
        updated: time(meta.get("u").unwrap_or(&Value::Null), "meta.u")?,
        sessions,
    })
}

/// Bytes and cl100k_base tokens of a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Size {
    /// UTF-8 bytes.
    pub bytes: usize,
    /// Tokens (OpenAI `cl100k_base` BPE, offline).
    pub tokens: usize,
}

/// Measures a text.
pub fn size(text: &str) -> Size {
    Size { bytes: text.len(), tokens: tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len() }
}

/// Sizes of the three renderings of one export: pretty V1, minified V1 and V2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sizes {
    /// `serde_json::to_string_pretty` of V1.
    pub v1_pretty: Size,
    /// Minified V1.
    pub v1_min: Size,
    /// Minified V2.
    pub v2: Size,
}

/// Measures pretty V1, minified V1 and V2 of `v1`.
pub fn sizes(v1: &V1) -> Result<Sizes> {
    let pretty = serde_json::to_string_pretty(v1).map_err(|e| bad(e.to_string()))?;
    let min = serde_json::to_string(v1).map_err(|e| bad(e.to_string()))?;
    let v2 = encode(v1)?.to_string();
    Ok(Sizes { v1_pretty: size(&pretty), v1_min: size(&min), v2: size(&v2) })
}

#[cfg(test)]
mod tests;
