//! What happens after indexing: sessions linked in time order, decisions superseded by later
//! decisions on the same subject, and the handoff brief for the latest session. Pure: documents
//! in, documents (or markdown) out; [`crate::Collection::handoff`] and indexing apply them.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use crate::text::pattern::Pattern;
use uuid::Uuid;

use crate::doc::{DecisionStatus, DocBody, Document, FileAction};

const STOP: &[&str] = &[
    "the", "a", "an", "for", "of", "to", "in", "on", "and", "or", "we", "it", "is", "use", "using", "with", "instead",
    "rather", "than", "over", "from", "our", "this", "that", "be", "keep", "go", "let's", "lets", "will", "all",
];

fn words(s: &str) -> BTreeSet<String> {
    let lower = s.to_lowercase();
    let mut out: BTreeSet<String> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '_' || c == '.'))
        .map(|w| w.trim_matches('.').to_string())
        .filter(|w| w.len() > 2 && !STOP.contains(&w.as_str()) && !w.chars().any(crate::lexical::tokenize::is_cjk))
        .collect();
    // Chinese, Japanese and Korean run without spaces: their characters two by two.
    let cjk: Vec<char> = lower.chars().collect();
    for w in cjk.windows(2) {
        if w.iter().all(|c| crate::lexical::tokenize::is_cjk(*c)) {
            out.insert(w.iter().collect());
        }
    }
    out
}

/// The question a decision answered, for a pick among the assistant's options
/// (`answer (question?)`, as [`crate::extract::decide`] names them).
fn answered_question(summary: &str) -> Option<&str> {
    let inner = summary.strip_suffix(')')?;
    let start = inner.rfind(" (")?;
    let q = inner.get(start + 2..)?;
    (q.ends_with('?') || q.ends_with('？')).then_some(q)
}

/// The option a decision chose: the word after its choice verb ("Use **chromem** instead of
/// Qdrant", "switching … to **Vitest**").
pub fn chosen(summary: &str) -> Option<String> {
    static NEG: OnceLock<Pattern> = OnceLock::new();
    let neg = NEG.get_or_init(|| Pattern::new(r"(?i)\b(?:not|n't|never|avoid)\b").expect("valid"));
    // "We should not use X" rules X out; it chooses nothing.
    if neg.is_match(summary) {
        return None;
    }
    static R: OnceLock<Pattern> = OnceLock::new();
    let re = R.get_or_init(|| {
        Pattern::new(r"(?i)\b(?:use|go with|switch(?:ing|ed)? (?:back )?to|migrat(?:e|ing) to|adopt|stick with|chose|picked|opted for|settled on|went with|back to|to)\s+([A-Za-z0-9_.+#-]+)")
            .expect("valid")
    });
    re.captures(summary).map(|c| c[1].trim_end_matches('.').to_lowercase())
}

/// Are two decisions about the same subject? Yes when one chose what the other set aside (a
/// reversal or a switch), when both chose between the same options, or when they change the
/// same file and share most of their words.
fn same_subject(earlier: &Document, later: &Document) -> bool {
    let (DocBody::Decision(e), DocBody::Decision(l)) = (&earlier.body, &later.body) else { return false };
    let lower = |v: &[String]| v.iter().map(|a| a.to_lowercase()).collect::<BTreeSet<_>>();
    let (ea, la) = (lower(&e.alternatives), lower(&l.alternatives));
    let (ec, lc) = (chosen(&e.summary), chosen(&l.summary));
    if let (Some(ec), Some(lc)) = (&ec, &lc) {
        if la.contains(ec) || ea.contains(lc) || (ec == lc && !ea.is_disjoint(&la)) {
            return true;
        }
        if ec == lc {
            return false;
        }
    }
    let files = |d: &Document| -> BTreeSet<String> {
        d.files_discussed.iter().filter(|f| f.action != FileAction::Read).map(|f| f.path.clone()).collect()
    };
    // Two answers to the same question of the assistant's.
    if let (Some(qe), Some(ql)) = (answered_question(&e.summary), answered_question(&l.summary)) {
        return qe == ql;
    }
    let (we, wl) = (words(&e.summary), words(&l.summary));
    let shared = we.intersection(&wl).count();
    let overlap = shared as f32 / we.union(&wl).count().max(1) as f32;
    let (fe, fl) = (files(earlier), files(later));
    if fe.is_empty() && fl.is_empty() {
        // Nothing changed on disk names the subject: most of the words must be the same.
        return overlap >= 0.5 && shared >= 3;
    }
    !fe.is_disjoint(&fl) && overlap >= 0.3
}

/// Links each session's summary to the previous and next session (by start time) and marks
/// decisions superseded by later decisions on the same subject, linking both ways. Returns the
/// documents whose fields changed (to be written again: their text, hence their vectors, is
/// unchanged).
pub fn relink(mut summaries: Vec<Document>, mut decisions: Vec<Document>) -> Vec<Document> {
    let mut changed: Vec<Document> = Vec::new();
    summaries.sort_by_key(|d| match &d.body {
        DocBody::Summary(s) => (s.started_at_ms, d.session_id.clone()),
        _ => (0, String::new()),
    });
    let ids: Vec<String> = summaries.iter().map(|d| d.session_id.clone()).collect();
    for (i, d) in summaries.iter().enumerate() {
        let mut d = d.clone();
        if let DocBody::Summary(s) = &mut d.body {
            let prev = i.checked_sub(1).map(|j| ids[j].clone());
            let next = ids.get(i + 1).cloned();
            if s.previous_session != prev || s.next_session != next {
                s.previous_session = prev;
                s.next_session = next;
                changed.push(d);
            }
        }
    }
    decisions.sort_by_key(|d| (d.timestamp, d.id));
    let original = decisions.clone();
    // Reset links, then replay in time order: the latest word on a subject is the active one.
    for d in &mut decisions {
        if let DocBody::Decision(f) = &mut d.body {
            if f.status == DecisionStatus::Superseded {
                f.status = DecisionStatus::Active;
            }
            f.superseded_by = None;
            f.supersedes.clear();
        }
    }
    for i in 0..decisions.len() {
        for j in 0..i {
            let live = matches!(&decisions[j].body, DocBody::Decision(f) if f.superseded_by.is_none());
            if live && same_subject(&decisions[j], &decisions[i]) {
                let (later_id, earlier_id): (Uuid, Uuid) = (decisions[i].id, decisions[j].id);
                if let DocBody::Decision(f) = &mut decisions[j].body {
                    f.superseded_by = Some(later_id);
                    if f.status == DecisionStatus::Active {
                        f.status = DecisionStatus::Superseded;
                    }
                }
                if let DocBody::Decision(f) = &mut decisions[i].body {
                    f.supersedes.push(earlier_id);
                }
            }
        }
    }
    for (d, o) in decisions.into_iter().zip(original) {
        if d.body != o.body {
            changed.push(d);
        }
    }
    changed
}

/// Whether a decision may be stated as in force (the session-start brief, the prompt hook):
/// remembered on purpose, or extracted with a confidence at which extracted decisions were
/// right at least 90 % of the time on the development parts
/// ([`crate::extract::TRUSTED_CONFIDENCE`]). The others are candidates.
pub fn trusted(d: &Document) -> bool {
    match &d.body {
        DocBody::Decision(f) => {
            d.extraction_method == crate::doc::ExtractionMethod::Manual
                || f.confidence >= crate::derive::extract::TRUSTED_CONFIDENCE
        }
        _ => false,
    }
}

/// `decisions` as they stood at `at`: those made by then, each active unless it was rejected or
/// superseded by one of them made by then (a decision superseded only later was in force).
pub fn as_of(decisions: &[Document], at: chrono::DateTime<chrono::Utc>) -> Vec<Document> {
    let made: std::collections::HashMap<Uuid, chrono::DateTime<chrono::Utc>> =
        decisions.iter().map(|d| (d.id, d.timestamp)).collect();
    let by_then = |id: &Uuid| made.get(id).is_some_and(|t| *t <= at);
    decisions
        .iter()
        .filter(|d| d.timestamp <= at)
        .map(|d| {
            let mut d = d.clone();
            if let DocBody::Decision(f) = &mut d.body {
                if f.superseded_by.as_ref().is_some_and(|s| !by_then(s)) {
                    f.superseded_by = None;
                    if f.status == DecisionStatus::Superseded {
                        f.status = DecisionStatus::Active;
                    }
                }
                f.supersedes.retain(by_then);
            }
            d
        })
        .collect()
}

/// The latest session's summary among `summaries`.
pub fn latest(summaries: &[Document]) -> Option<&Document> {
    summaries.iter().max_by_key(|d| (d.timestamp, d.session_id.clone()))
}

/// A compact markdown brief of a session from its summary and its decisions: what was being
/// done, what was decided, open tasks, files in play, unresolved errors. `None` when `latest`
/// is not a summary.
pub fn handoff(latest: &Document, decisions: &[Document]) -> Option<String> {
    let DocBody::Summary(s) = &latest.body else { return None };
    let mut md = format!("# Handoff: session {}\n\n", latest.session_id);
    md.push_str(&format!("**Was doing:** {}\n\n", s.goal));
    if !s.outcome.is_empty() {
        md.push_str(&format!("**Where it stopped:** {}\n\n", s.outcome));
    }
    if !decisions.is_empty() {
        md.push_str("## Decided\n");
        for d in decisions {
            if let DocBody::Decision(f) = &d.body {
                let why = f.reasoning.as_deref().map(|r| format!(" — {r}")).unwrap_or_default();
                let status = if f.status == DecisionStatus::Active {
                    String::new()
                } else {
                    format!(" ({:?})", f.status).to_lowercase()
                };
                md.push_str(&format!("- {}{why}{status}\n", f.summary));
            }
        }
        md.push('\n');
    }
    if !s.tasks_remaining.is_empty() {
        md.push_str("## Open tasks\n");
        for t in &s.tasks_remaining {
            md.push_str(&format!("- [ ] {t}\n"));
        }
        md.push('\n');
    }
    let files: Vec<String> = latest
        .files_discussed
        .iter()
        .filter(|f| f.action != FileAction::Read)
        .take(15)
        .map(|f| format!("- `{}` ({})", f.path, f.action.as_str()))
        .collect();
    if !files.is_empty() {
        md.push_str("## Files in play\n");
        md.push_str(&files.join("\n"));
        md.push_str("\n\n");
    }
    let unresolved: Vec<&(String, bool)> = s.errors.iter().filter(|e| !e.1).collect();
    if !unresolved.is_empty() {
        md.push_str("## Unresolved errors\n");
        for (e, _) in unresolved.iter().take(10) {
            md.push_str(&format!("- {e}\n"));
        }
        md.push('\n');
    }
    if !latest.commits_made.is_empty() {
        md.push_str("## Commits\n");
        for c in &latest.commits_made {
            md.push_str(&format!("- {} {}\n", c.sha, c.message));
        }
    }
    Some(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chosen_option() {
        assert_eq!(chosen("Use chromem instead of Qdrant").as_deref(), Some("chromem"));
        assert_eq!(chosen("Switching from Jest to Vitest").as_deref(), Some("vitest"));
        assert_eq!(chosen("Switch back to Qdrant, chromem cannot shard").as_deref(), Some("qdrant"));
        assert_eq!(chosen("We should not use PayPal anywhere"), None);
    }
}
