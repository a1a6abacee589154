//! Reading runs from transcripts: the main transcript's Task / Agent calls (description,
//! agent type, model, and from the result the agent id, duration and status) joined with each
//! sidechain's tool calls (deduplicated by block id), written files and model.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{ModelCode, RunRecord, TOOLS, compact_summary, tool_letter, valid_department};

/// A sidechain transcript of one session: its agent id (from `agent-<id>.jsonl`), its bytes,
/// and the agent type from `agent-<id>.meta.json` when there is one.
pub struct Sidechain<'a> {
    /// Agent id.
    pub agent_id: &'a str,
    /// File contents.
    pub bytes: &'a [u8],
    /// Agent type from the companion `.meta.json`.
    pub agent_type: Option<&'a str>,
}

/// What one sidechain did.
#[derive(Default)]
struct SideStats {
    tools: Vec<(char, u32)>,
    files: Vec<String>,
    model: Option<String>,
    first: Option<DateTime<Utc>>,
    last: Option<DateTime<Utc>>,
    first_prompt: Option<String>,
}

fn lines(bytes: &[u8]) -> impl Iterator<Item = Value> + '_ {
    bytes.split(|b| *b == b'\n').filter_map(|l| serde_json::from_slice::<Value>(l).ok())
}

fn timestamp(r: &Value) -> Option<DateTime<Utc>> {
    r.get("timestamp")?.as_str()?.parse().ok()
}

fn content_blocks(r: &Value) -> &[Value] {
    r.pointer("/message/content").and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn side_stats(bytes: &[u8]) -> SideStats {
    let mut s = SideStats::default();
    let mut seen_ids = std::collections::HashSet::new();
    for r in lines(bytes) {
        if let Some(t) = timestamp(&r) {
            s.first = Some(s.first.map_or(t, |f| f.min(t)));
            s.last = Some(s.last.map_or(t, |l| l.max(t)));
        }
        if r.get("type").and_then(Value::as_str) == Some("user") && s.first_prompt.is_none() {
            s.first_prompt = r.pointer("/message/content").and_then(Value::as_str).map(str::to_string);
        }
        if r.get("type").and_then(Value::as_str) != Some("assistant") {
            continue;
        }
        if s.model.is_none()
            && let Some(m) = r.pointer("/message/model").and_then(Value::as_str)
            && m != "<synthetic>"
        {
            s.model = Some(m.to_string());
        }
        for b in content_blocks(&r) {
            if b.get("type").and_then(Value::as_str) != Some("tool_use") {
                continue;
            }
            // Streaming writes one record per content block; a block is counted once.
            if let Some(id) = b.get("id").and_then(Value::as_str)
                && !seen_ids.insert(id.to_string())
            {
                continue;
            }
            let name = b.get("name").and_then(Value::as_str).unwrap_or("");
            let letter = tool_letter(name);
            match s.tools.iter_mut().find(|(l, _)| *l == letter) {
                Some((_, n)) => *n += 1,
                None => s.tools.push((letter, 1)),
            }
            if matches!(name, "Edit" | "Write" | "MultiEdit" | "NotebookEdit")
                && let Some(p) = b.pointer("/input/file_path").or_else(|| b.pointer("/input/notebook_path"))
                && let Some(p) = p.as_str()
                && !s.files.iter().any(|f| f == p)
            {
                s.files.push(p.to_string());
            }
        }
    }
    // Canonical order: the letters' order in [`TOOLS`].
    s.tools.sort_by_key(|(l, _)| TOOLS.iter().position(|t| t.0 == *l));
    s
}

/// A Task / Agent call seen in the main transcript.
struct Call {
    id: String,
    description: String,
    agent_type: String,
    model: Option<String>,
    at: Option<DateTime<Utc>>,
    agent_id: Option<String>,
    duration_ms: Option<u64>,
    status: Option<String>,
    is_error: bool,
    interrupted: bool,
}

/// Run records of one session: every Task / Agent call of the main transcript joined with its
/// sidechain (by the agent id its result names), then sidechains no call points to (orphans:
/// the main file is missing or cut). Internal agents (compaction, prompt suggestions, aside
/// questions) are not runs. Paths under `root` are written relative to it.
pub fn session_runs(main: Option<&[u8]>, sidechains: &[Sidechain<'_>], root: Option<&str>) -> Vec<RunRecord> {
    let mut calls: Vec<Call> = Vec::new();
    let mut by_tool_id: HashMap<String, usize> = HashMap::new();
    for r in main.map(lines).into_iter().flatten() {
        for b in content_blocks(&r) {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") if matches!(b.get("name").and_then(Value::as_str), Some("Task" | "Agent")) => {
                    let id = b.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                    if by_tool_id.contains_key(&id) {
                        continue;
                    }
                    let input = |k: &str| b.pointer(&format!("/input/{k}")).and_then(Value::as_str).map(str::to_string);
                    by_tool_id.insert(id.clone(), calls.len());
                    calls.push(Call {
                        id,
                        description: input("description").unwrap_or_default(),
                        agent_type: input("subagent_type").unwrap_or_else(|| "general-purpose".into()),
                        model: input("model")
                            .or_else(|| r.pointer("/message/model").and_then(Value::as_str).map(str::to_string)),
                        at: timestamp(&r),
                        agent_id: None,
                        duration_ms: None,
                        status: None,
                        is_error: false,
                        interrupted: false,
                    });
                }
                Some("tool_result") => {
                    let Some(&i) = b.get("tool_use_id").and_then(Value::as_str).and_then(|id| by_tool_id.get(id))
                    else {
                        continue;
                    };
                    let c = &mut calls[i];
                    c.is_error |= b.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                    let text = b.get("content").map(|v| v.to_string()).unwrap_or_default();
                    c.interrupted |= text.contains("[Request interrupted");
                    if let Some(tur) = r.get("toolUseResult").filter(|v| v.is_object()) {
                        c.agent_id =
                            tur.get("agentId").and_then(Value::as_str).map(str::to_string).or(c.agent_id.take());
                        c.duration_ms = tur.get("totalDurationMs").and_then(Value::as_u64).or(c.duration_ms);
                        c.status = tur.get("status").and_then(Value::as_str).map(str::to_string).or(c.status.take());
                    }
                }
                _ => {}
            }
        }
    }
    let internal = |id: &str| ["acompact", "aprompt_suggestion", "aside_question"].iter().any(|p| id.starts_with(p));
    let sides: HashMap<&str, &Sidechain<'_>> =
        sidechains.iter().filter(|s| !internal(s.agent_id)).map(|s| (s.agent_id, s)).collect();
    let relative = |p: &str| -> String {
        match root {
            Some(r) if !r.is_empty() => p.strip_prefix(r).map_or(p, |x| x.trim_start_matches(['/', '\\'])).to_string(),
            _ => p.to_string(),
        }
    };
    let mut attempts: HashMap<(String, String), u32> = HashMap::new();
    let mut out = Vec::new();
    let mut used = std::collections::HashSet::new();
    let mut record = |task_id: String,
                      agent_type: &str,
                      description: &str,
                      model: Option<&str>,
                      stats: Option<SideStats>,
                      duration: Option<u64>,
                      failure: Option<String>| {
        let department = crate::text::normalize_name(agent_type);
        let department = if valid_department(&department) { department } else { "subagent".to_string() };
        let attempt = attempts.entry((department.clone(), description.to_string())).or_insert(0);
        *attempt += 1;
        let stats = stats.unwrap_or_default();
        let span = match (stats.first, stats.last) {
            (Some(a), Some(b)) => u64::try_from((b - a).num_milliseconds()).ok(),
            _ => None,
        };
        RunRecord {
            task_id,
            department,
            attempt: *attempt,
            model: ModelCode::of_model(stats.model.as_deref().or(model).unwrap_or("")),
            tools: stats.tools,
            files: stats.files.iter().map(|f| relative(f)).collect(),
            success: failure.is_none(),
            duration_ms: duration.or(span).unwrap_or(0),
            error: failure,
            summary: compact_summary(
                &crate::text::scrub::scrub(if description.is_empty() {
                    stats.first_prompt.as_deref().unwrap_or("")
                } else {
                    description
                })
                .0,
            ),
        }
    };
    let mut timed: Vec<(Option<DateTime<Utc>>, RunRecord)> = Vec::new();
    for c in &calls {
        let side = c.agent_id.as_deref().and_then(|id| sides.get(id));
        if let Some(id) = &c.agent_id {
            used.insert(id.clone());
        }
        let failure = if c.interrupted {
            Some("interrupted".to_string())
        } else if c.is_error {
            Some("tool_error".to_string())
        } else {
            c.status
                .as_deref()
                .filter(|s| matches!(*s, "failed" | "error" | "killed" | "cancelled"))
                .map(str::to_string)
        };
        let task_id = c.agent_id.clone().unwrap_or_else(|| c.id.clone());
        let rec = record(
            task_id,
            &c.agent_type,
            &c.description,
            c.model.as_deref(),
            side.map(|s| side_stats(s.bytes)),
            c.duration_ms,
            failure,
        );
        timed.push((c.at, rec));
    }
    for s in sidechains.iter().filter(|s| !internal(s.agent_id) && !used.contains(s.agent_id)) {
        let stats = side_stats(s.bytes);
        let at = stats.first;
        let rec = record(s.agent_id.to_string(), s.agent_type.unwrap_or("subagent"), "", None, Some(stats), None, None);
        timed.push((at, rec));
    }
    timed.sort_by_key(|(at, _)| *at);
    out.extend(timed.into_iter().map(|(_, r)| r));
    out
}
