//! A session's documents from its parsed transcript files, with no storage and no model:
//! message documents (scrubbed, relative paths, tags and domain), decision documents (ids from
//! the source message and the decision's ordinal) and one summary document.

use std::collections::{BTreeMap, HashSet};

use crate::doc::{
    CommitRef, DecisionFields, DocBody, DocKind, Document, ExtractionMethod, FileAction, FileRef, MessageFields, Role,
    SummaryFields, now_millis,
};
use crate::ingest::claude::{self, ParsedFile};
use crate::ingest::layout::Agent;
use crate::text::scrub::{RedactionCounts, scrub};

/// One transcript file of a session, parsed, with the sub-agent type for sub-agent files.
#[derive(Debug, Clone, Copy)]
pub struct SessionFile<'a> {
    /// The parsed file.
    pub parsed: &'a ParsedFile,
    /// `None` for the main transcript.
    pub agent: Option<&'a str>,
}

/// Text for a message that only made tool calls: what it did to which files.
fn activity(files: &[FileRef], commits: &[CommitRef]) -> String {
    let mut parts: Vec<String> = files
        .iter()
        .filter(|f| f.action != FileAction::Read)
        .map(|f| format!("{} {}", f.action.as_str(), f.path))
        .collect();
    for c in commits {
        parts.push(format!("committed {} {}", c.sha, c.message));
    }
    parts.join("; ")
}

/// Message documents of a session's files in order (a message seen in two files once), and the
/// secrets redacted from them, per kind.
pub fn documents(
    session: &str,
    root: &str,
    source: Agent,
    files: &[SessionFile<'_>],
) -> (Vec<Document>, RedactionCounts) {
    let mut redactions = RedactionCounts::new();
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut index = 0u64;
    // Per document: its role, whether it has words of its own, and its file (for
    // [`closing_turns`]).
    let mut turns: Vec<(Role, bool, usize)> = Vec::new();
    for (file, f) in files.iter().enumerate() {
        let (pf, agent) = (f.parsed, f.agent);
        for m in &pf.messages {
            if m.uuid.is_empty() || !seen.insert(m.uuid.clone()) {
                continue;
            }
            let files: Vec<FileRef> =
                m.files.iter().map(|f| FileRef { path: claude::relative_to(&f.path, root), ..f.clone() }).collect();
            let raw = if m.text.trim().is_empty() { activity(&files, &m.commits) } else { m.text.clone() };
            if raw.trim().is_empty() {
                continue;
            }
            let (content, counts) = scrub(&raw);
            for (k, n) in counts {
                *redactions.entry(k).or_default() += n;
            }
            let commits =
                m.commits.iter().map(|c| CommitRef { sha: c.sha.clone(), message: scrub(&c.message).0 }).collect();
            let mut tags = crate::text::enrich::tags(&content, &files);
            if let Some(a) = agent {
                tags.push(format!("agent:{}", crate::text::normalize_name(a)));
            }
            tags.push(format!("source:{source}"));
            let domain = crate::text::enrich::domain(&content, &files);
            out.push(Document {
                id: Document::stable_id(session, DocKind::Message, &m.uuid),
                session_id: session.to_string(),
                timestamp: m.timestamp,
                content,
                tags,
                domain,
                files_discussed: files,
                commits_made: commits,
                indexed_at: now_millis(),
                extraction_method: ExtractionMethod::Heuristic,
                body: DocBody::Message(MessageFields {
                    role: m.role,
                    message_uuid: m.uuid.clone(),
                    message_index: index,
                    speaker: None,
                    agent: agent.map(str::to_string),
                }),
                answering: None,
                closes_turn: false,
                decides: false,
            });
            turns.push((m.role, !m.text.trim().is_empty(), file));
            index += 1;
        }
    }
    for (d, closes) in out.iter_mut().zip(closing_turns(&turns)) {
        d.closes_turn = closes;
    }
    (out, redactions)
}

/// Which of a session's messages close the agent's turn ([`Document::closes_turn`]), from each
/// message's role, whether it has words of its own (not only tool calls), and the transcript
/// it comes from, in order: the agent's last message with words before the person speaks
/// again, or before its transcript ends (a sub-agent's transcript is a conversation of its
/// own).
pub fn closing_turns<K: PartialEq>(messages: &[(Role, bool, K)]) -> Vec<bool> {
    let mut out = vec![false; messages.len()];
    let mut last_words: Option<usize> = None;
    for (i, (role, words, file)) in messages.iter().enumerate() {
        let new_file = i > 0 && messages[i - 1].2 != *file;
        if (new_file || (*role == Role::User && *words))
            && let Some(j) = last_words.take()
        {
            out[j] = true;
        }
        if *role == Role::Assistant && *words {
            last_words = Some(i);
        }
    }
    if let Some(j) = last_words {
        out[j] = true;
    }
    out
}

/// Whether a stored message has words of its own: its content is not the line that stands for
/// a message that only made tool calls (what it did to which files).
pub fn has_own_words(doc: &Document) -> bool {
    doc.content != activity(&doc.files_discussed, &doc.commits_made)
}

/// What [`settle`] reads of a message of a session.
#[derive(Debug, Clone, Copy)]
pub struct TurnEnd {
    /// Who wrote it.
    pub role: Role,
    /// It has words of its own ([`has_own_words`]), not only tool calls.
    pub words: bool,
    /// It is in the main transcript, not a sub-agent's.
    pub main: bool,
    /// It closes a turn as [`closing_turns`] marks them.
    pub closes: bool,
}

/// The messages that close a turn once the person has had a say: where the person's next
/// message in the main transcript overrules the agent's closing message before it (as
/// `overrules(person, agent)` tells for the two messages' indexes, by [`overrules`] on their
/// texts), the person's message closes the turn instead, since what was decided is the person's word and
/// the agent's last word was what they turned down. A sub-agent's prompt is the agent's word,
/// not the person's: sub-agents' messages keep their marks. `messages` in session order; the
/// same marks again for marks already settled.
pub fn settle(messages: &[TurnEnd], mut overrules: impl FnMut(usize, usize) -> bool) -> Vec<bool> {
    let mut out: Vec<bool> = messages.iter().map(|m| m.closes).collect();
    let mut closing: Option<usize> = None;
    for (i, m) in messages.iter().enumerate().filter(|(_, m)| m.main) {
        match m.role {
            Role::Assistant if m.closes => closing = Some(i),
            Role::User if m.words => {
                if let Some(j) = closing.take().filter(|&j| overrules(i, j)) {
                    out[j] = false;
                    out[i] = true;
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether the person's message overrules the agent's message before it: a decision extracted
/// from the person's message turned down an option (its alternatives: "let's use Redis
/// instead of Postgres") that both messages name, each as a word of its own (case aside). An
/// option the person does not name is one the agent offered and the person let go ("yes, do
/// it" to "Redis over Postgres"): that reply agrees, it does not overrule. Options that name
/// nothing ("it", "this", "that", …) or are shorter than three characters are not read.
pub fn overrules(turned_down: &[&str], person: &str, agent: &str) -> bool {
    const VAGUE: [&str; 12] =
        ["the", "this", "that", "these", "those", "them", "one", "ones", "there", "here", "what", "which"];
    let (person, agent) = (person.to_lowercase(), agent.to_lowercase());
    turned_down
        .iter()
        .map(|a| a.trim().to_lowercase())
        .any(|a| a.chars().count() >= 3 && !VAGUE.contains(&a.as_str()) && names(&person, &a) && names(&agent, &a))
}

/// Whether `text` holds `word` as a word of its own: not inside a longer ASCII word ("go" is
/// not in "good"); next to CJK text it counts ("redisにしよう" names "redis").
fn names(text: &str, word: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.match_indices(word).any(|(at, _)| {
        let before = text.get(..at).and_then(|t| t.chars().next_back());
        let after = text.get(at + word.len()..).and_then(|t| t.chars().next());
        let joined = |edge: Option<char>, next: Option<char>| alnum(edge) && alnum(next);
        !joined(word.chars().next(), before) && !joined(word.chars().next_back(), after)
    })
}

/// [`settle`] on a session's message documents (in order, as [`documents`] gives them),
/// with its decision documents ([`decision_documents`]); marks the messages the decisions were
/// extracted from ([`Document::decides`]) on the way.
pub fn settle_turns(messages: &mut [Document], decisions: &[Document]) {
    let mut turned_down: std::collections::HashMap<&str, Vec<&str>> = std::collections::HashMap::new();
    for d in decisions {
        if let DocBody::Decision(f) = &d.body {
            turned_down
                .entry(f.source_message_uuid.as_str())
                .or_default()
                .extend(f.alternatives.iter().map(String::as_str));
        }
    }
    let ends: Vec<TurnEnd> = messages
        .iter()
        .map(|d| match &d.body {
            DocBody::Message(m) => {
                TurnEnd { role: m.role, words: has_own_words(d), main: m.agent.is_none(), closes: d.closes_turn }
            }
            _ => TurnEnd { role: Role::Other, words: false, main: false, closes: d.closes_turn },
        })
        .collect();
    fn uuid(d: &Document) -> &str {
        match &d.body {
            DocBody::Message(m) => m.message_uuid.as_str(),
            _ => "",
        }
    }
    let marks = settle(&ends, |person, agent| {
        turned_down
            .get(uuid(&messages[person]))
            .is_some_and(|alts| overrules(alts, &messages[person].content, &messages[agent].content))
    });
    for (d, closes) in messages.iter_mut().zip(marks) {
        d.closes_turn = closes;
        d.decides = turned_down.contains_key(uuid(d));
    }
}

/// Decision documents for the messages of one session (heuristic extraction, see
/// [`crate::derive::extract`]). Ids are derived from the source message and the decision's ordinal.
pub fn decision_documents(messages: &[Document]) -> Vec<Document> {
    let messages: Vec<(&Document, &MessageFields)> = messages
        .iter()
        .filter_map(|m| match &m.body {
            DocBody::Message(mf) => Some((m, mf)),
            _ => None,
        })
        .collect();
    let turns = messages.iter().map(|(m, mf)| crate::derive::extract::Turn { role: mf.role, text: &m.content });
    let mut out: Vec<Document> = Vec::new();
    let mut ordinal = 0;
    let mut last = usize::MAX;
    for (i, d) in crate::derive::extract::extract_all(turns) {
        let (m, mf) = messages[i];
        ordinal = if i == last { ordinal + 1 } else { 0 };
        last = i;
        let k = ordinal;
        out.push(Document {
            id: Document::stable_id(&m.session_id, DocKind::Decision, &format!("{}#{k}", mf.message_uuid)),
            session_id: m.session_id.clone(),
            timestamp: m.timestamp,
            content: d.content,
            tags: m.tags.clone(),
            domain: m.domain.clone(),
            files_discussed: m.files_discussed.clone(),
            commits_made: m.commits_made.clone(),
            indexed_at: now_millis(),
            extraction_method: ExtractionMethod::Heuristic,
            body: DocBody::Decision(DecisionFields {
                summary: d.summary,
                alternatives: d.alternatives,
                reasoning: d.reasoning,
                confidence: d.confidence,
                source_message_uuid: mf.message_uuid.clone(),
                status: d.status,
                superseded_by: None,
                supersedes: Vec::new(),
            }),
            answering: None,
            closes_turn: false,
            decides: false,
        });
    }
    out
}

fn first_sentence(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let cut = one.find(". ").and_then(|i| one.get(..=i)).unwrap_or(&one);
    if cut.chars().count() > max {
        format!("{}…", cut.chars().take(max - 1).collect::<String>())
    } else {
        cut.to_string()
    }
}

/// The session's `summary` document: goal, outcome, topics, files, decisions, commits, errors
/// (resolved when the same tool later succeeded), duration; `content` is a readable paragraph.
pub fn summary_document(session: &str, inputs: &[SessionFile<'_>], docs: &[Document]) -> Option<Document> {
    let messages: Vec<&Document> = docs.iter().filter(|d| d.kind() == DocKind::Message).collect();
    let first_user = messages
        .iter()
        .find(|d| matches!(&d.body, DocBody::Message(m) if m.role == Role::User && m.agent.is_none()))?;
    let last_assistant = messages
        .iter()
        .rev()
        .find(|d| matches!(&d.body, DocBody::Message(m) if m.role == Role::Assistant && m.agent.is_none()));
    let start = messages.iter().map(|d| d.timestamp).min()?;
    let end = messages.iter().map(|d| d.timestamp).max()?;
    let goal = first_sentence(&first_user.content, 200);
    let outcome = last_assistant.map(|d| first_sentence(&d.content, 200)).unwrap_or_default();
    let mut files: Vec<FileRef> = Vec::new();
    let mut commits = Vec::new();
    let mut tag_counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut sources: Vec<String> = Vec::new();
    for d in &messages {
        for f in &d.files_discussed {
            match files.iter_mut().find(|x| x.path == f.path) {
                Some(x) => x.action = x.action.max(f.action),
                None => files.push(FileRef { path: f.path.clone(), line_ranges: vec![], action: f.action }),
            }
        }
        for c in &d.commits_made {
            if !commits.contains(c) {
                commits.push(c.clone());
            }
        }
        for t in &d.tags {
            if t.starts_with("source:") {
                if !sources.contains(t) {
                    sources.push(t.clone());
                }
            } else if !t.starts_with("agent:") {
                *tag_counts.entry(t.as_str()).or_default() += 1;
            }
        }
    }
    let mut topics: Vec<(&str, usize)> = tag_counts.into_iter().collect();
    topics.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let key_topics: Vec<String> = topics.into_iter().take(6).map(|(t, _)| t.to_string()).collect();
    let decisions: Vec<&Document> = docs.iter().filter(|d| d.kind() == DocKind::Decision).collect();
    let mut errors = Vec::new();
    for f in inputs {
        let pf = f.parsed;
        for e in &pf.errors {
            let resolved = pf.successes.iter().any(|(tool, t)| *tool == e.tool && *t > e.timestamp);
            let (text, _) = scrub(&format!("{}: {}", e.tool, e.text));
            errors.push((text, resolved));
        }
    }
    let tasks: Vec<(String, bool)> = inputs.first().map(|f| f.parsed.tasks.clone()).unwrap_or_default();
    let tasks_completed: Vec<String> = tasks.iter().filter(|t| t.1).map(|t| scrub(&t.0).0).collect();
    let tasks_remaining: Vec<String> = tasks.iter().filter(|t| !t.1).map(|t| scrub(&t.0).0).collect();
    let edited: Vec<&str> =
        files.iter().filter(|f| f.action != FileAction::Read).map(|f| f.path.as_str()).take(8).collect();
    let mut content = format!("Goal: {goal}");
    if !outcome.is_empty() {
        content.push_str(&format!(" Outcome: {outcome}"));
    }
    if !key_topics.is_empty() {
        content.push_str(&format!(" Topics: {}.", key_topics.join(", ")));
    }
    if !edited.is_empty() {
        content.push_str(&format!(" Files changed: {}.", edited.join(", ")));
    }
    for d in decisions.iter().take(5) {
        if let DocBody::Decision(f) = &d.body {
            content.push_str(&format!(" Decided: {}.", f.summary));
        }
    }
    for c in commits.iter().take(5) {
        content.push_str(&format!(" Commit {} {}.", c.sha, c.message));
    }
    if !tasks.is_empty() {
        content.push_str(&format!(" Tasks: {} done, {} open", tasks_completed.len(), tasks_remaining.len()));
        if let Some(t) = tasks_remaining.first() {
            content.push_str(&format!(" (next: {t})"));
        }
        content.push('.');
    }
    let unresolved = errors.iter().filter(|e| !e.1).count();
    if !errors.is_empty() {
        content.push_str(&format!(" {} tool errors, {unresolved} unresolved.", errors.len()));
    }
    let minutes = (end - start).num_minutes();
    content.push_str(&format!(" {} messages over {minutes} min.", messages.len()));
    Some(Document {
        id: Document::stable_id(session, DocKind::Summary, ""),
        session_id: session.to_string(),
        timestamp: end,
        content,
        // Topics, then the agents that wrote the session (so an agent filter finds its
        // summaries); the source tags are not topics.
        tags: key_topics.iter().cloned().chain(sources).collect(),
        domain: first_user.domain.clone(),
        files_discussed: files,
        commits_made: commits,
        indexed_at: now_millis(),
        extraction_method: ExtractionMethod::Heuristic,
        body: DocBody::Summary(SummaryFields {
            goal,
            outcome,
            key_topics,
            decisions: decisions.iter().map(|d| d.id).collect(),
            errors,
            tasks_completed,
            tasks_remaining,
            previous_session: None,
            next_session: None,
            started_at_ms: start.timestamp_millis(),
            ended_at_ms: end.timestamp_millis(),
        }),
        answering: None,
        closes_turn: false,
        decides: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::claude::{ParsedMessage, ToolError};
    use chrono::{DateTime, Utc};

    fn at(s: u32) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + i64::from(s), 0).unwrap()
    }

    fn msg(uuid: &str, role: Role, text: &str, s: u32) -> ParsedMessage {
        ParsedMessage {
            uuid: uuid.into(),
            role,
            text: text.into(),
            timestamp: at(s),
            files: vec![],
            commits: vec![],
            cwd: Some("D:\\App".into()),
        }
    }

    fn main_file() -> ParsedFile {
        let mut edit = msg("a2", Role::Assistant, "", 20);
        edit.files = vec![
            FileRef { path: "D:/App/src/auth.rs".into(), line_ranges: vec![(3, 9)], action: FileAction::Edited },
            FileRef { path: "D:/App/README.md".into(), line_ranges: vec![], action: FileAction::Read },
        ];
        edit.commits = vec![CommitRef {
            sha: "1a2b3c4".into(),
            message: "fix expiry token=ghp_Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6".into(),
        }];
        ParsedFile {
            messages: vec![
                msg("u1", Role::User, "The login returns 500 when the token expired. Fix it please.", 0),
                msg(
                    "a1",
                    Role::Assistant,
                    "Let's use refresh tokens instead of long sessions because they expire safely.",
                    10,
                ),
                edit,
                msg("u1", Role::User, "duplicate of the first message, written twice by streaming", 30),
                msg("", Role::User, "a message without a uuid is not stored", 31),
            ],
            errors: vec![
                ToolError { tool: "Bash".into(), text: "cargo test failed".into(), timestamp: at(15) },
                ToolError { tool: "Read".into(), text: "no such file".into(), timestamp: at(16) },
            ],
            successes: vec![("Bash".into(), at(25))],
            tasks: vec![("write the migration".into(), true), ("update the docs".into(), false)],
            ..Default::default()
        }
    }

    /// The message documents of a session of a main transcript and one sub-agent's.
    fn two_transcripts(
        session: &str,
        main: Vec<ParsedMessage>,
        agent: &str,
        side: Vec<ParsedMessage>,
    ) -> Vec<Document> {
        let (main, side) =
            (ParsedFile { messages: main, ..Default::default() }, ParsedFile { messages: side, ..Default::default() });
        let files = [SessionFile { parsed: &main, agent: None }, SessionFile { parsed: &side, agent: Some(agent) }];
        documents(session, "D:\\App", Agent::ClaudeCode, &files).0
    }

    /// The uuids of the messages marked as closing a turn, in order.
    fn marked(docs: &[Document]) -> Vec<&str> {
        docs.iter()
            .filter(|d| d.closes_turn)
            .map(|d| match &d.body {
                DocBody::Message(m) => m.message_uuid.as_str(),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn messages_become_scrubbed_documents_with_relative_paths_and_tags() {
        let main = main_file();
        let side = ParsedFile {
            messages: vec![msg("s1", Role::Assistant, "Explored the auth module.", 12)],
            ..Default::default()
        };
        let files = [SessionFile { parsed: &main, agent: None }, SessionFile { parsed: &side, agent: Some("Explore") }];
        let (docs, redactions) = documents("S", "D:\\App", Agent::ClaudeCode, &files);
        assert_eq!(docs.len(), 4, "the duplicate and the uuid-less message are left out");
        let index: Vec<u64> = docs
            .iter()
            .map(|d| match &d.body {
                DocBody::Message(m) => m.message_index,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(index, [0, 1, 2, 3], "indexes follow file order, main file first");
        let edit = &docs[2];
        assert_eq!(edit.content, "edited src/auth.rs; committed 1a2b3c4 fix expiry token=[REDACTED:github]");
        assert_eq!(edit.files_discussed[0].path, "src/auth.rs", "paths inside the project become relative");
        assert_eq!(edit.files_discussed[0].line_ranges, [(3, 9)]);
        assert!(!edit.commits_made[0].message.contains("ghp_"), "commit messages are scrubbed too");
        assert!(edit.tags.contains(&"rust".to_string()), "{:?}", edit.tags);
        assert!(docs[3].tags.contains(&"agent:explore".to_string()));
        assert!(
            docs.iter().all(|d| d.tags.contains(&"source:claude-code".to_string())),
            "every document names its agent"
        );
        assert_eq!(redactions.values().sum::<usize>(), 1, "{redactions:?}");
        assert_eq!(docs[0].id, Document::stable_id("S", DocKind::Message, "u1"), "ids are deterministic");
    }

    #[test]
    fn decisions_and_the_summary_come_from_the_messages() {
        let main = main_file();
        let files = [SessionFile { parsed: &main, agent: None }];
        let (mut docs, _) = documents("S", "D:\\App", Agent::ClaudeCode, &files);
        let decisions = decision_documents(&docs);
        assert_eq!(decisions.len(), 1, "{decisions:?}");
        let DocBody::Decision(d) = &decisions[0].body else { panic!() };
        assert_eq!(d.source_message_uuid, "a1");
        assert!(d.summary.to_lowercase().contains("refresh tokens"), "{}", d.summary);
        assert_eq!(decisions[0].id, Document::stable_id("S", DocKind::Decision, "a1#0"));
        docs.extend(decisions);
        let summary = summary_document("S", &files, &docs).unwrap();
        let DocBody::Summary(s) = &summary.body else { panic!() };
        assert_eq!(s.goal, "The login returns 500 when the token expired.");
        assert_eq!((s.started_at_ms, s.ended_at_ms), (at(0).timestamp_millis(), at(20).timestamp_millis()));
        assert_eq!(
            s.errors,
            [("Bash: cargo test failed".to_string(), true), ("Read: no such file".to_string(), false)]
        );
        assert_eq!(
            (s.tasks_completed.len(), s.tasks_remaining.as_slice()),
            (1, ["update the docs".to_string()].as_slice())
        );
        assert_eq!(s.decisions.len(), 1);
        assert!(summary.content.contains("Files changed: src/auth.rs."), "{}", summary.content);
        assert!(summary.content.contains("2 tool errors, 1 unresolved."), "{}", summary.content);
        assert_eq!(
            summary.files_discussed.iter().find(|f| f.path == "src/auth.rs").unwrap().action,
            FileAction::Edited
        );
        assert!(!s.key_topics.iter().any(|t| t.starts_with("source:")), "the agent is not a topic: {:?}", s.key_topics);
        assert!(summary.tags.contains(&"source:claude-code".to_string()), "an agent filter finds the summary");
        assert!(summary_document("S", &files, &[]).is_none(), "no message, no summary");
    }

    #[test]
    fn the_agents_last_words_before_the_person_speaks_again_close_its_turn() {
        let mut edit = msg("a2", Role::Assistant, "", 3);
        edit.files = vec![FileRef { path: "D:/App/src/db.rs".into(), line_ranges: vec![], action: FileAction::Edited }];
        let main = vec![
            msg("u1", Role::User, "為什麼登入會失敗？", 0),
            msg("a0", Role::Assistant, "Let me look at the middleware.", 1),
            msg("a1", Role::Assistant, "Found it: the expiry check unwraps.", 2),
            edit,
            msg("u2", Role::User, "고쳐 주세요", 4),
            msg("a3", Role::Assistant, "Fixing it now.", 5),
            msg("a4", Role::Assistant, "修正しました。テストも通ります。", 6),
        ];
        let side = vec![
            msg("s1", Role::Assistant, "Reading src/auth.rs.", 7),
            msg("s2", Role::Assistant, "The token is checked in one place.", 8),
        ];
        let docs = two_transcripts("S", main, "Explore", side);
        // a1, not the edit after it (no words of its own); a4 at the end of the main file; s2
        // at the end of the sub-agent's transcript. The person's messages never close a turn.
        assert_eq!(marked(&docs), ["a1", "a4", "s2"]);
        // What a stored collection reads back to mark them (the edit stands for tool calls only).
        let own: Vec<bool> = docs.iter().map(has_own_words).collect();
        assert_eq!(own, [true, true, true, false, true, true, true, true, true]);
        let stored: Vec<(Role, bool, Option<String>)> = docs
            .iter()
            .map(|d| match &d.body {
                DocBody::Message(m) => (m.role, has_own_words(d), m.agent.clone()),
                _ => unreachable!(),
            })
            .collect();
        let again: Vec<bool> = closing_turns(&stored);
        assert_eq!(again, docs.iter().map(|d| d.closes_turn).collect::<Vec<_>>(), "the same from the stored documents");
        assert!(closing_turns::<u8>(&[]).is_empty());
        assert_eq!(closing_turns(&[(Role::Assistant, true, 0), (Role::Assistant, true, 1)]), [true, true]);
    }

    #[test]
    fn the_persons_decision_settles_the_turn_it_answers() {
        let main = vec![
            msg("u1", Role::User, "セッションは Postgres のままにする？それとも Redis？", 0),
            msg("a1", Role::Assistant, "I'd keep Postgres for now and add an index on expires_at.", 1),
            msg("u2", Role::User, "Let's use Redis instead of Postgres for sessions, because we need TTLs.", 2),
            msg("a2", Role::Assistant, "Agreed, wiring a RedisSessionStore now.", 3),
            msg("u3", Role::User, "Let's use docker-compose instead of a shell script, since it is simpler.", 4),
            msg("a3", Role::Assistant, "Done: the compose file no longer starts Postgres.", 5),
        ];
        let side = vec![
            msg("s1", Role::User, "Let's use the session table instead of the cache, because it is simpler.", 6),
            msg("s2", Role::Assistant, "Checked the table.", 7),
        ];
        let mut docs = two_transcripts("세션", main, "Plan", side);
        let decisions = decision_documents(&docs);
        let sources: Vec<&str> = decisions
            .iter()
            .map(|d| match &d.body {
                DocBody::Decision(f) => f.source_message_uuid.as_str(),
                _ => unreachable!(),
            })
            .collect();
        assert!(["u2", "u3", "s1"].iter().all(|u| sources.contains(u)), "{sources:?}");
        assert_eq!(marked(&docs), ["a1", "a2", "a3", "s2"], "before: the agent's last words");
        settle_turns(&mut docs, &decisions);
        // u2 turned down what a1 named (Postgres) and takes its mark; u3 decides too, but
        // turns down nothing a2 named, so a2 keeps its; the sub-agent's prompt (s1) is the
        // agent's word and settles nothing.
        assert_eq!(marked(&docs), ["u2", "a2", "a3", "s2"]);
        // The messages the decisions came from, and only they, are marked as deciding.
        for d in &docs {
            let DocBody::Message(m) = &d.body else { continue };
            assert_eq!(d.decides, sources.contains(&m.message_uuid.as_str()), "{}", m.message_uuid);
        }
        let again = docs.clone();
        settle_turns(&mut docs, &decisions);
        assert_eq!(marked(&docs), marked(&again), "settling settled marks changes nothing");
        assert!(settle(&[], |_, _| true).is_empty());
        // A decision with no turn before it to settle (the session's first words) is not marked.
        let first = TurnEnd { role: Role::User, words: true, main: true, closes: false };
        assert_eq!(settle(&[first], |_, _| true), [false]);
        let agent = "I'd keep Postgres; Go would be good too.";
        assert!(overrules(&["postgres"], "Redis instead of Postgres.", agent));
        assert!(!overrules(&["Postgres"], "yes, do it", agent), "agreeing does not overrule");
        assert!(!overrules(&["MySQL", " ", "this", "go"], "not this, MySQL or go", agent));
        assert!(!overrules(&["gres"], "gres", agent), "a word of its own, not a part of one");
        assert!(overrules(&["redis"], "やっぱりRedisにしよう", "Redisが良いと思います"), "next to CJK text");
    }

    #[test]
    fn first_sentences_are_cut_on_characters() {
        assert_eq!(first_sentence("One.  Two.", 50), "One.");
        assert_eq!(first_sentence("說明書很長很長", 4), "說明書…");
    }
}
