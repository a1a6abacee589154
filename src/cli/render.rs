//! Rendering shared by the CLI and the MCP server: roles, snippets, hits and decisions as text
//! and as JSON, and times as users type them.

use anyhow::Context;
use chrono::{DateTime, Utc};
use convdex::{DecisionStatus, DocBody, Document, Hit};
use serde_json::{Value, json};

/// RFC 3339, or `YYYY-MM-DD` (start of the day, or its end when `end_of_day`).
pub fn parse_time(s: &str, end_of_day: bool) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.to_utc());
    }
    let d = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .map_err(|_| super::Usage(format!("`{s}` is not a date; use YYYY-MM-DD or RFC 3339")))?;
    let t = if end_of_day { d.and_hms_milli_opt(23, 59, 59, 999) } else { d.and_hms_opt(0, 0, 0) };
    Ok(t.context("valid time")?.and_utc())
}

/// Whitespace collapsed, cut at `max` characters with an ellipsis.
pub fn snippet(text: &str, max: usize) -> String {
    convdex::text::one_line(text, max)
}

/// The first 8 characters of an id.
pub fn short(id: &str) -> &str {
    convdex::text::prefix_chars(id, 8)
}

/// `user` / `assistant` for messages, the document type otherwise.
pub fn role(d: &Document) -> &str {
    match &d.body {
        DocBody::Message(m) => m.role.as_str(),
        _ => d.kind().as_str(),
    }
}

/// One hit as JSON (the CLI's `--json` shape).
pub fn hit_json(project: &str, h: &Hit) -> Value {
    let mut v = json!({
        "project": project, "relevance": h.relevance, "score": h.score, "folded": h.folded,
        "session": h.doc.session_id, "id": h.doc.id,
        "type": h.doc.kind().as_str(), "time": h.doc.timestamp.to_rfc3339(),
        "files": h.doc.files_discussed.iter().map(|f| &f.path).collect::<Vec<_>>(),
        "signals": {
            "semantic": h.signals.semantic, "semantic_rank": h.signals.semantic_rank,
            "lexical": h.signals.lexical, "lexical_rank": h.signals.lexical_rank, "translated": h.signals.translated,
            "semantic_z": h.signals.semantic_z, "lexical_share": h.signals.lexical_share,
            "context": h.signals.context, "recency": h.signals.recency, "asked": h.signals.asked,
            "answers": h.signals.answers, "closes": h.signals.closes, "decision": h.signals.decision,
        },
        "snippet": h.snippet,
        "content": h.doc.content,
    });
    if let (Value::Object(out), Value::Object(fields)) = (&mut v, document_fields(&h.doc)) {
        out.extend(fields);
    }
    v
}

/// Which signals found a hit, in words, and how many identical messages were folded into it.
pub fn matched(h: &Hit) -> String {
    let how = match (h.signals.semantic_rank.is_some(), h.signals.lexical.is_some(), h.signals.translated) {
        (true, true, false) => "meaning+words",
        (true, true, true) => "meaning+words (translated)",
        (false, true, false) => "words",
        (false, true, true) => "words (translated)",
        _ => "meaning",
    };
    match h.folded {
        0 => how.to_string(),
        n => format!("{how}; {n} identical folded"),
    }
}

/// One decision as JSON: every field of the seed's decision document, so that anyone can
/// check a decision against the message it came from.
pub fn decision_json(project: &str, d: &Document) -> Value {
    let mut v = json!({"project": project, "id": d.id, "session": d.session_id, "time": d.timestamp.to_rfc3339()});
    if let (Value::Object(out), Value::Object(fields)) = (&mut v, document_fields(d)) {
        out.extend(fields);
    }
    v
}

/// The fields of a document every JSON output carries beside its own: its kind, tags, domain
/// and files; a message's uuid and role; a decision's summary, source message, extraction
/// method, alternatives, reasoning, confidence, status and links.
pub fn document_fields(d: &Document) -> Value {
    let mut v = json!({
        "type": d.kind().as_str(),
        "tags": d.tags,
        "domain": d.domain,
        "files": d.files_discussed.iter().map(|x| &x.path).collect::<Vec<_>>(),
        "extraction_method": format!("{:?}", d.extraction_method).to_lowercase(),
    });
    let extra = match &d.body {
        DocBody::Message(m) => json!({"message_uuid": m.message_uuid, "role": role(d)}),
        DocBody::Decision(f) => json!({
            "summary": f.summary, "source_message_uuid": f.source_message_uuid,
            "alternatives": f.alternatives, "reasoning": f.reasoning, "confidence": f.confidence,
            "trusted": convdex::life::trusted(d),
            "status": format!("{:?}", f.status).to_lowercase(),
            "superseded_by": f.superseded_by, "supersedes": f.supersedes,
        }),
        DocBody::Summary(_) => json!({}),
    };
    if let (Value::Object(out), Value::Object(more)) = (&mut v, extra) {
        out.extend(more);
    }
    v
}

/// One entry of the decision ledger as JSON: the decision's fields, what replaced it, what it
/// replaced, and the commits and files that followed it.
pub fn ledger_json(e: &convdex::LedgerEntry) -> Value {
    let mut v = decision_json(&e.project, &e.decision);
    if let Value::Object(out) = &mut v {
        out.insert("replaced_by".into(), json!(e.replaced_by));
        out.insert("replaces".into(), json!(e.replaces));
        out.insert("followed_by".into(), json!(e.followed_by));
    }
    v
}

/// ` [superseded]` / ` [rejected]` for inactive decisions.
pub fn status_mark(d: &Document) -> &'static str {
    match &d.body {
        DocBody::Decision(f) => match f.status {
            DecisionStatus::Active => "",
            DecisionStatus::Superseded => " [superseded]",
            DecisionStatus::Rejected => " [rejected]",
        },
        _ => "",
    }
}

/// Lexical matches, marked `[…]` in a snippet: bold on a colour terminal, brackets otherwise.
pub fn highlight(s: &str, color: bool) -> String {
    if color { s.replace('[', "\x1b[1;33m").replace(']', "\x1b[0m") } else { s.to_string() }
}

/// True when stdout is a terminal and `NO_COLOR` is not set.
pub fn color() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A note when hits come from collections whose documents are not all embedded yet (indexing
/// stores words first): semantic matches among those may be missing.
pub fn unembedded_note(hits: &[convdex::ProjectHit]) -> Option<String> {
    let mut per: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for h in hits.iter().filter(|h| h.hit.plan.mode != convdex::SearchMode::Lexical) {
        per.insert(h.project.as_str(), h.hit.plan.unembedded);
    }
    let waiting: usize = per.values().sum();
    (waiting > 0).then(|| {
        format!(
            "{waiting} documents are indexed by their words but not embedded yet; matches by meaning among them \
             are missing until `convdex index` finishes"
        )
    })
}

/// The note for a path given to `index` in which no session was found.
pub fn no_session_note(path: &std::path::Path) -> String {
    format!(
        "note: no session found under {}: give a Claude Code, Codex, Gemini or Aider history, or a folder holding \
         them (looked {} levels down)",
        path.display(),
        convdex::ingest::layout::walk::MAX_DEPTH
    )
}

/// The line a hybrid search prints above its hits: the calibrated chance that an answer is among
/// them ([`convdex::answer_among`]). None for other modes and models (it was fitted on hybrid
/// search with e5: `ranking` is the index's [`convdex::Index::default_ranking`], e5's being the
/// default, as for a model this build does not know, whose relevance reads as e5's) and for a
/// single hit, whose chance read alone differs from the relevance printed beside it
/// (docs/ranking.md, «An answer among the hits»).
pub fn among_line(
    mode: convdex::SearchMode,
    ranking: convdex::Ranking,
    relevances: impl IntoIterator<Item = u8>,
) -> Option<String> {
    let shown: Vec<u8> = relevances.into_iter().collect();
    if mode != convdex::SearchMode::Hybrid || ranking != convdex::Ranking::default() || shown.len() < 2 {
        return None;
    }
    Some(format!("chance one of these {} hits is an answer: {} %", shown.len(), convdex::answer_among(shown)))
}
