//! The session-start brief: what the last sessions of a project were doing, the decisions in
//! force (with why; remembered ones, and extracted ones only at a confidence measured right 90 %
//! of the time, [`crate::derive::life::trusted`]), open tasks, unresolved errors, approaches tried and rejected, files in play
//! and the sessions before, fitted into a token budget. Pure: documents in, markdown out; the
//! caller gives the token counter ([`crate::Index::session_brief`] uses `cl100k_base`).
//!
//! When the budget is short, lines are kept in priority order (the last session's goal, then
//! decisions, open tasks, errors, what not to repeat, files, earlier sessions) and each section
//! is rendered in a fixed order, so the brief reads the same whatever was dropped.

use crate::doc::{DecisionStatus, DocBody, Document, ExtractionMethod, FileAction};
use crate::text::{one_line, prefix_chars};

/// The default token budget of a brief (`cl100k_base` tokens).
pub const DEFAULT_BRIEF_TOKENS: usize = 600;

/// What a brief is made from: one project's documents.
#[derive(Debug, Clone, Default)]
pub struct BriefInput<'a> {
    /// The project's name.
    pub project: &'a str,
    /// Session summaries, any order; the newest by end time is "the last session".
    pub summaries: &'a [Document],
    /// Decision documents, any order (every status).
    pub decisions: &'a [Document],
    /// A session to leave out (the one that is starting, when it is already indexed).
    pub exclude_session: Option<&'a str>,
}

/// The sections of a brief, in the order they are rendered.
const SECTIONS: [&str; 7] = [
    "",
    "Decisions in force",
    "Open tasks",
    "Unresolved errors",
    "Tried and rejected (do not repeat)",
    "Files in play",
    "Earlier sessions",
];

/// One candidate line: its section (index into [`SECTIONS`]) and its text.
type Line = (usize, String);

/// The brief of `input` within `budget` tokens as counted by `count`; `None` when there is
/// nothing worth saying (no session summary and no decision) or the budget cannot hold even the
/// header and the last session's goal.
pub fn compose(input: &BriefInput<'_>, budget: usize, count: &dyn Fn(&str) -> usize) -> Option<String> {
    let lines = candidates(input);
    if lines.is_empty() {
        return None;
    }
    let header = format!("# convdex: where work on {} stands\n", input.project);
    let mut used = count(&header);
    let mut kept: Vec<Line> = Vec::new();
    let mut opened = [false; SECTIONS.len()];
    for (i, (section, text)) in lines.iter().enumerate() {
        let heading = if opened[*section] || SECTIONS[*section].is_empty() {
            0
        } else {
            count(&format!("\n## {}\n", SECTIONS[*section]))
        };
        let cost = heading + count(text) + 1;
        if used + cost > budget {
            // The first line (the last session's goal) is the brief's reason to exist.
            if i == 0 {
                return None;
            }
            continue;
        }
        used += cost;
        opened[*section] = true;
        kept.push((*section, text.clone()));
    }
    let mut out = render(&header, &kept);
    // Counting lines apart can differ from counting the whole by a token here and there: drop
    // the last kept lines until the whole fits.
    while count(&out) > budget && kept.len() > 1 {
        kept.pop();
        out = render(&header, &kept);
    }
    Some(out)
}

fn render(header: &str, kept: &[Line]) -> String {
    let mut out = header.to_string();
    for (s, title) in SECTIONS.iter().enumerate() {
        let lines: Vec<&String> = kept.iter().filter(|(k, _)| *k == s).map(|(_, t)| t).collect();
        if lines.is_empty() {
            continue;
        }
        if !title.is_empty() {
            out.push_str(&format!("\n## {title}\n"));
        }
        for l in lines {
            out.push_str(l);
            out.push('\n');
        }
    }
    out
}

/// Every line a brief could hold, most important first.
fn candidates(input: &BriefInput<'_>) -> Vec<Line> {
    let mut summaries: Vec<&Document> = input
        .summaries
        .iter()
        .filter(|d| matches!(d.body, DocBody::Summary(_)))
        .filter(|d| input.exclude_session != Some(d.session_id.as_str()))
        .collect();
    summaries.sort_by_key(|d| std::cmp::Reverse((ended(d), d.session_id.clone())));
    // Only what may be stated as in force: a candidate that is wrong more often than one time
    // in ten would mislead every session that starts from the brief.
    let mut decisions: Vec<&Document> = input.decisions.iter().filter(|d| crate::derive::life::trusted(d)).collect();
    // Remembered on purpose first, then the newest.
    decisions.sort_by_key(|d| (d.extraction_method != ExtractionMethod::Manual, std::cmp::Reverse(d.timestamp)));
    let mut first: Vec<Line> = Vec::new();
    let mut rest: Vec<Vec<Line>> = vec![Vec::new(); SECTIONS.len()];
    if let Some(last) = summaries.first()
        && let DocBody::Summary(s) = &last.body
    {
        let when = last.timestamp.format("%Y-%m-%d");
        first.push((0, format!("Last session ({}, {when}): {}", short(&last.session_id), one_line(&s.goal, 300))));
        if !s.outcome.is_empty() {
            first.push((0, format!("Where it stopped: {}", one_line(&s.outcome, 300))));
        }
        rest[2].extend(s.tasks_remaining.iter().take(8).map(|t| (2, format!("- [ ] {}", one_line(t, 200)))));
        rest[3].extend(s.errors.iter().filter(|e| !e.1).take(5).map(|(e, _)| (3, format!("- {}", one_line(e, 200)))));
        rest[5].extend(
            last.files_discussed
                .iter()
                .filter(|f| f.action != FileAction::Read)
                .take(10)
                .map(|f| (5, format!("- `{}` ({})", f.path, f.action.as_str()))),
        );
    }
    for d in &decisions {
        let DocBody::Decision(f) = &d.body else { continue };
        let why = f.reasoning.as_deref().map(|r| format!(" (why: {})", one_line(r, 160))).unwrap_or_default();
        let when = d.timestamp.format("%Y-%m-%d");
        match f.status {
            DecisionStatus::Active if rest[1].len() < 10 => {
                rest[1].push((1, format!("- {}{why} [{when}]", one_line(&f.summary, 200))));
            }
            DecisionStatus::Rejected if rest[4].len() < 5 => {
                rest[4].push((4, format!("- {}{why} [{when}]", one_line(&f.summary, 200))));
            }
            _ => {}
        }
    }
    for d in summaries.iter().skip(1).take(3) {
        if let DocBody::Summary(s) = &d.body {
            let when = d.timestamp.format("%Y-%m-%d");
            rest[6].push((6, format!("- {} ({when}): {}", short(&d.session_id), one_line(&s.goal, 160))));
        }
    }
    if first.is_empty() && rest[1].is_empty() && rest[4].is_empty() {
        return Vec::new();
    }
    if first.is_empty() {
        first.push((0, "No session summary yet; decisions remembered for this project:".to_string()));
    }
    // Interleave by priority: the first lines of each section before the later ones, so a short
    // budget keeps a little of everything rather than all of one section.
    let mut out = first;
    let depth = rest.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..depth {
        for section in &rest {
            let take = if round < 3 { section.get(round) } else { None };
            out.extend(take.cloned());
        }
    }
    for round in 3..depth {
        for section in &rest {
            out.extend(section.get(round).cloned());
        }
    }
    out
}

fn ended(d: &Document) -> i64 {
    match &d.body {
        DocBody::Summary(s) if s.ended_at_ms > 0 => s.ended_at_ms,
        _ => d.timestamp.timestamp_millis(),
    }
}

fn short(session: &str) -> &str {
    prefix_chars(session, 8)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{DecisionFields, DocKind, FileRef, SummaryFields};
    use chrono::{DateTime, Utc};

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    fn summary(session: &str, ms: i64, goal: &str, tasks: &[&str]) -> Document {
        let mut d = Document::message(session, "s", 0, crate::doc::Role::Assistant, goal);
        d.id = Document::stable_id(session, DocKind::Summary, "");
        d.timestamp = at(ms);
        d.files_discussed =
            vec![FileRef { path: "src/lib.rs".into(), line_ranges: vec![], action: FileAction::Edited }];
        d.body = DocBody::Summary(SummaryFields {
            goal: goal.into(),
            outcome: String::new(),
            key_topics: vec![],
            decisions: vec![],
            errors: vec![("cargo test failed: 2 tests".into(), false), ("fixed one".into(), true)],
            tasks_completed: vec![],
            tasks_remaining: tasks.iter().map(|t| t.to_string()).collect(),
            previous_session: None,
            next_session: None,
            started_at_ms: ms - 1000,
            ended_at_ms: ms,
        });
        d
    }

    fn decision(session: &str, ms: i64, text: &str, status: DecisionStatus, method: ExtractionMethod) -> Document {
        let mut d = Document::message(session, text, 0, crate::doc::Role::Assistant, text);
        d.timestamp = at(ms);
        d.extraction_method = method;
        d.body = DocBody::Decision(DecisionFields {
            summary: text.into(),
            alternatives: vec![],
            reasoning: Some("it is embedded".into()),
            confidence: crate::derive::extract::TRUSTED_CONFIDENCE,
            source_message_uuid: String::new(),
            status,
            superseded_by: None,
            supersedes: vec![],
        });
        d
    }

    /// A crude counter for tests: one token per whitespace-separated word.
    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    #[test]
    fn nothing_to_say_is_none() {
        let input = BriefInput { project: "p", ..Default::default() };
        assert_eq!(compose(&input, 600, &words), None);
        // Only superseded decisions: nothing in force, nothing rejected.
        let d = [decision("s", 1, "use x", DecisionStatus::Superseded, ExtractionMethod::Heuristic)];
        let input = BriefInput { project: "p", decisions: &d, ..Default::default() };
        assert_eq!(compose(&input, 600, &words), None);
    }

    #[test]
    fn the_newest_session_leads_and_the_current_one_is_left_out() {
        let s = [
            summary("old-session", 1_000_000, "set up the parser", &[]),
            summary("new-session", 2_000_000, "wire the 检索 hook", &["write the README"]),
            summary("current", 3_000_000, "what is happening now", &[]),
        ];
        let d = [
            decision(
                "old-session",
                1_000_000,
                "Use redb for storage",
                DecisionStatus::Active,
                ExtractionMethod::Heuristic,
            ),
            decision("x", 500, "Use sled", DecisionStatus::Rejected, ExtractionMethod::Heuristic),
            decision("m", 10, "Always run clippy", DecisionStatus::Active, ExtractionMethod::Manual),
        ];
        let input = BriefInput { project: "项目", summaries: &s, decisions: &d, exclude_session: Some("current") };
        let b = compose(&input, 600, &words).unwrap();
        assert!(b.starts_with("# convdex: where work on 项目 stands\n"), "{b}");
        assert!(b.contains("Last session (new-sess"), "{b}");
        assert!(!b.contains("happening now"), "{b}");
        assert!(b.contains("- [ ] write the README"), "{b}");
        assert!(b.contains("cargo test failed") && !b.contains("fixed one"), "{b}");
        assert!(b.contains("## Tried and rejected (do not repeat)\n- Use sled"), "{b}");
        assert!(b.contains("- `src/lib.rs` (edited)"), "{b}");
        assert!(b.contains("## Earlier sessions\n- old-sess"), "{b}");
        // The remembered decision comes before the newer heuristic one.
        let manual = b.find("Always run clippy").unwrap();
        assert!(manual < b.find("Use redb").unwrap(), "{b}");
        assert!(b.contains("(why: it is embedded)"), "{b}");
    }

    #[test]
    fn the_budget_is_kept_and_drops_later_lines_first() {
        let tasks: Vec<String> = (0..8).map(|i| format!("task number {i} with several words in it")).collect();
        let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
        let s = [summary("a", 2_000, "the goal of the last session", &tasks)];
        let d: Vec<Document> = (0..10)
            .map(|i| {
                let text = format!("Decision {i} about the storage layer");
                decision("a", i, &text, DecisionStatus::Active, ExtractionMethod::Heuristic)
            })
            .collect();
        let input = BriefInput { project: "p", summaries: &s, decisions: &d, exclude_session: None };
        let full = compose(&input, 10_000, &words).unwrap();
        for budget in [20, 40, 60, 90, 140, 400] {
            let b = compose(&input, budget, &words).unwrap();
            assert!(words(&b) <= budget, "budget {budget}: {} words\n{b}", words(&b));
            assert!(b.contains("the goal of the last session"), "{b}");
            // Whatever is kept is what the full brief says, in the same order.
            let mut at = 0;
            for line in b.lines() {
                let found = full.get(at..).and_then(|rest| rest.find(line)).map(|p| p + at);
                assert!(found.is_some(), "budget {budget}: `{line}` not in order in the full brief");
                at = found.unwrap();
            }
        }
        // With room for a few lines, the first decision and the first task both come before
        // the tenth decision.
        let b = compose(&input, 60, &words).unwrap();
        assert!(b.contains("Decision 9 ") && b.contains("task number 0"), "{b}");
        assert!(!b.contains("Decision 0 "), "{b}");
        // A budget too small for the goal gives nothing rather than a headless brief.
        assert_eq!(compose(&input, 5, &words), None);
    }

    /// A decision extracted below the confidence measured right 90 % of the time is a candidate:
    /// never stated as in force; one remembered on purpose always is.
    #[test]
    fn only_trusted_decisions_are_stated_as_in_force() {
        let mut candidate =
            decision("s", 10, "Use sqlite for the cache", DecisionStatus::Active, ExtractionMethod::Heuristic);
        if let DocBody::Decision(f) = &mut candidate.body {
            f.confidence = 0.8;
        }
        let remembered = decision("s", 20, "Always run clippy", DecisionStatus::Active, ExtractionMethod::Manual);
        let decisions = [candidate, remembered];
        let input = BriefInput { project: "p", summaries: &[], decisions: &decisions, exclude_session: None };
        let brief = compose(&input, 600, &words).unwrap();
        assert!(brief.contains("Always run clippy"), "{brief}");
        assert!(!brief.contains("sqlite"), "{brief}");
    }
}
