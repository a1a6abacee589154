//! The data model: the three document types of a collection and their fields
//! (DESIGN §2, seed schema "Conversation Indexing Schema").

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The three document types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DocKind {
    /// One user or assistant message (or one turn of an imported conversation).
    Message,
    /// A decision extracted from a message.
    Decision,
    /// One per session: what happened, what was decided, what is left.
    Summary,
}

impl DocKind {
    /// All kinds, in index order.
    pub const ALL: [DocKind; 3] = [DocKind::Message, DocKind::Decision, DocKind::Summary];

    /// Stable one-byte code used in secondary indexes.
    pub(crate) fn code(self) -> u8 {
        match self {
            DocKind::Message => 0,
            DocKind::Decision => 1,
            DocKind::Summary => 2,
        }
    }

    /// The lower-case name (`message`, `decision`, `summary`).
    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Message => "message",
            DocKind::Decision => "decision",
            DocKind::Summary => "summary",
        }
    }
}

impl std::fmt::Display for DocKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DocKind {
    type Err = crate::error::Error;
    fn from_str(s: &str) -> crate::error::Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "message" | "messages" => Ok(DocKind::Message),
            "decision" | "decisions" => Ok(DocKind::Decision),
            "summary" | "summaries" => Ok(DocKind::Summary),
            _ => Err(crate::error::Error::InvalidArgument(format!(
                "unknown document type `{s}`; use message, decision or summary"
            ))),
        }
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    /// The human (or, in imported chats, the primary user).
    User,
    /// The coding agent.
    Assistant,
    /// Another participant of an imported conversation.
    Other,
}

impl Role {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Other => "other",
        }
    }
}

/// What a message did to a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FileAction {
    /// Read, listed or searched.
    Read,
    /// Modified in place.
    Edited,
    /// Written anew.
    Created,
    /// Removed.
    Deleted,
}

impl FileAction {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            FileAction::Read => "read",
            FileAction::Edited => "edited",
            FileAction::Created => "created",
            FileAction::Deleted => "deleted",
        }
    }
}

/// A file a document discusses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileRef {
    /// Path, relative to the project root when inside it, `/`-separated.
    pub path: String,
    /// Inclusive 1-based line ranges, when the tool call gave them.
    pub line_ranges: Vec<(u32, u32)>,
    /// What was done to it.
    pub action: FileAction,
}

/// A commit made during the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CommitRef {
    /// Abbreviated or full SHA, as printed by git.
    pub sha: String,
    /// Subject line.
    pub message: String,
}

/// How a document was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ExtractionMethod {
    /// Rules in this crate.
    Heuristic,
    /// A language model.
    Llm,
    /// Imported from a structured file.
    Import,
    /// Stated on purpose by a person or an agent (`convdex remember`, the MCP tool `remember`).
    Manual,
}

/// Life of a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DecisionStatus {
    /// In force.
    Active,
    /// Replaced by a later decision.
    Superseded,
    /// Tried and abandoned.
    Rejected,
}

/// Fields of a `message` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageFields {
    /// Author.
    pub role: Role,
    /// The transcript record's uuid (or the imported message's id).
    pub message_uuid: String,
    /// Position in the session (0-based).
    pub message_index: u64,
    /// Speaker name, for imported multi-party conversations.
    pub speaker: Option<String>,
    /// Sub-agent type when the message comes from a sub-agent transcript.
    pub agent: Option<String>,
}

/// Fields of a `decision` document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecisionFields {
    /// One line, readable on its own.
    pub summary: String,
    /// Options considered and not taken.
    pub alternatives: Vec<String>,
    /// The because / since / so that clause, when present.
    pub reasoning: Option<String>,
    /// 0–1.
    pub confidence: f32,
    /// The message it came from.
    pub source_message_uuid: String,
    /// Active, superseded or rejected.
    pub status: DecisionStatus,
    /// The decision that replaced this one.
    pub superseded_by: Option<Uuid>,
    /// Decisions this one replaced.
    pub supersedes: Vec<Uuid>,
}

/// Fields of a `summary` document; the readable paragraph is the document's `content`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SummaryFields {
    /// The first real user request.
    pub goal: String,
    /// How the session ended.
    pub outcome: String,
    /// Main topics.
    pub key_topics: Vec<String>,
    /// Decision ids made in the session.
    pub decisions: Vec<Uuid>,
    /// Errors met: (text, resolved later in the session).
    pub errors: Vec<(String, bool)>,
    /// Tasks marked done.
    pub tasks_completed: Vec<String>,
    /// Tasks still open at the end.
    pub tasks_remaining: Vec<String>,
    /// Previous session of the same project.
    pub previous_session: Option<String>,
    /// Next session of the same project.
    pub next_session: Option<String>,
    /// First record's time (ms since epoch).
    pub started_at_ms: i64,
    /// Last record's time (ms since epoch).
    pub ended_at_ms: i64,
}

/// Type-specific fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum DocBody {
    /// A message.
    Message(MessageFields),
    /// A decision.
    Decision(DecisionFields),
    /// A session summary.
    Summary(SummaryFields),
}

/// The turn a message answers, kept with the message: who said it and the start of what they
/// said (at most [`Quote::MAX_CHARS`] characters).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quote {
    /// Who said it.
    pub speaker: String,
    /// The start of what they said.
    pub text: String,
}

impl Quote {
    /// The most of the answered turn's text a quote keeps.
    pub const MAX_CHARS: usize = 300;

    /// A quote of `text` by `speaker`, cut to [`Quote::MAX_CHARS`] characters.
    pub fn new(speaker: &str, text: &str) -> Quote {
        Quote { speaker: speaker.to_string(), text: text.chars().take(Quote::MAX_CHARS).collect() }
    }
}

/// One document of a collection.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    /// Stable id; re-adding a document with the same id replaces it.
    pub id: Uuid,
    /// Session it belongs to.
    pub session_id: String,
    /// When it was said (or, for summaries, when the session ended).
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub timestamp: DateTime<Utc>,
    /// Scrubbed text; this is what is embedded.
    pub content: String,
    /// Free tags (languages, technologies, sources …), lower-case.
    pub tags: Vec<String>,
    /// Domain (backend, frontend, infrastructure …).
    pub domain: Option<String>,
    /// Files discussed.
    pub files_discussed: Vec<FileRef>,
    /// Commits made.
    pub commits_made: Vec<CommitRef>,
    /// When convdex stored it.
    #[serde(with = "chrono::serde::ts_milliseconds")]
    pub indexed_at: DateTime<Utc>,
    /// How it was produced.
    pub extraction_method: ExtractionMethod,
    /// Type-specific fields.
    pub body: DocBody,
    /// The turn this message answers (imported conversations: the previous turn). It is
    /// embedded and indexed by words in front of the message (see [`Document::embed_header`]):
    /// "yes, last week!" means little alone. `None` for Claude Code messages, decisions and
    /// summaries. Stored last (the store's record layout depends on it; see `store::codec`).
    #[serde(default)]
    pub answering: Option<Quote>,
    /// The message that closes a turn: the agent's last message with words of its own (not
    /// only tool calls) before the person speaks again or its transcript ends, where a coding
    /// agent reports what it found or did, or, where the person's next message overrules it (a
    /// decision extracted from it turned down an option both messages name), that message
    /// instead ([`crate::derive::session::settle`], [`crate::Ranking::closing`]). Set when a
    /// session is indexed (a collection written before gets its sessions marked on its next
    /// open); false for imported conversations, decisions and summaries. Stored
    /// after `answering` (see `store::codec`).
    #[serde(default)]
    pub closes_turn: bool,
    /// A message a decision was extracted from ([`crate::derive::session::decision_documents`]):
    /// a question about a past decision lifts it as it lifts the decision
    /// ([`crate::Ranking::decision_lift`]), so a search restricted to messages finds the message
    /// where it was decided before the one that asked. Set when a session is indexed (a
    /// collection written before gets it from its stored decisions on its next open); false for
    /// imported conversations, decisions and summaries. Stored after `closes_turn` (see
    /// `store::codec`).
    #[serde(default)]
    pub decides: bool,
}

impl Document {
    /// The document's type.
    pub fn kind(&self) -> DocKind {
        match self.body {
            DocBody::Message(_) => DocKind::Message,
            DocBody::Decision(_) => DocKind::Decision,
            DocBody::Summary(_) => DocKind::Summary,
        }
    }

    /// A message document with empty metadata; fill the public fields as needed.
    pub fn message(session_id: &str, message_uuid: &str, index: u64, role: Role, content: &str) -> Document {
        Document {
            id: Document::stable_id(session_id, DocKind::Message, message_uuid),
            session_id: session_id.to_string(),
            timestamp: DateTime::<Utc>::UNIX_EPOCH,
            content: content.to_string(),
            tags: Vec::new(),
            domain: None,
            files_discussed: Vec::new(),
            commits_made: Vec::new(),
            indexed_at: now_millis(),
            extraction_method: ExtractionMethod::Heuristic,
            body: DocBody::Message(MessageFields {
                role,
                message_uuid: message_uuid.to_string(),
                message_index: index,
                speaker: None,
                agent: None,
            }),
            answering: None,
            closes_turn: false,
            decides: false,
        }
    }

    /// The deterministic id of a document: UUID v5 of session, kind and a per-kind key (the
    /// message uuid, the decision's source and ordinal, or nothing for the summary). Indexing the
    /// same input twice therefore writes the same ids, which makes re-indexing idempotent.
    pub fn stable_id(session_id: &str, kind: DocKind, key: &str) -> Uuid {
        let name = format!("{session_id}\u{1f}{}\u{1f}{key}", kind.as_str());
        Uuid::new_v5(&Uuid::NAMESPACE_OID, name.as_bytes())
    }

    /// Sort key for "session order": messages by index, then decisions, then the summary.
    /// The agent that wrote the document's session, from its `source:` tag (documents indexed
    /// before agents were recorded have none; imported conversations carry their source).
    pub fn agent(&self) -> Option<&str> {
        self.tags.iter().find_map(|t| t.strip_prefix("source:"))
    }

    /// What is embedded (and indexed by words) in front of a message's text when it names its
    /// speaker or the turn it answers (imported multi-party conversations):
    /// `(8 May 2023) Caroline said, `, or with the answered turn
    /// `(8 May 2023) Caroline, answering Melanie's "…", said, `. Measured on LoCoMo, where
    /// questions name people and dates and answers lean on the question they answer (see
    /// docs/ranking.md, «LoCoMo»). Claude Code messages are embedded as they are.
    pub fn embed_header(&self) -> Option<String> {
        let DocBody::Message(m) = &self.body else { return None };
        let date = self.timestamp.format("%-d %B %Y");
        match (&m.speaker, &self.answering) {
            (Some(s), Some(q)) => Some(format!("({date}) {s}, answering {}'s \"{}\", said, ", q.speaker, q.text)),
            (Some(s), None) => Some(format!("({date}) {s} said, ")),
            (None, Some(q)) => Some(format!("({date}) answering {}'s \"{}\": ", q.speaker, q.text)),
            (None, None) => None,
        }
    }

    /// The text the lexical index holds for the document: its header and its content.
    pub(crate) fn lexical_text(&self) -> String {
        match self.embed_header() {
            Some(h) => format!("{h}{}", self.content),
            None => self.content.clone(),
        }
    }

    pub(crate) fn order_key(&self) -> (u8, u64, i64) {
        match &self.body {
            DocBody::Message(m) => (0, m.message_index, self.timestamp.timestamp_millis()),
            DocBody::Decision(_) => (1, 0, self.timestamp.timestamp_millis()),
            DocBody::Summary(_) => (2, 0, self.timestamp.timestamp_millis()),
        }
    }
}

/// The current time at millisecond precision (what the store keeps), so documents compare equal
/// after a round trip.
pub fn now_millis() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(Utc::now().timestamp_millis()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_names_the_date_the_speaker_and_the_turn_answered() {
        let mut d = Document::message("s", "u", 1, Role::Other, "Lisboa!");
        d.timestamp = DateTime::from_timestamp(1_683_540_000, 0).unwrap();
        assert_eq!(d.embed_header(), None, "a Claude Code message is embedded as it is");
        d.answering = Some(Quote::new("Ana", "¿Dónde pasaste las vacaciones?"));
        assert_eq!(d.embed_header().unwrap(), "(8 May 2023) answering Ana's \"¿Dónde pasaste las vacaciones?\": ");
        if let DocBody::Message(m) = &mut d.body {
            m.speaker = Some("Bó".into());
        }
        assert_eq!(
            d.lexical_text(),
            "(8 May 2023) Bó, answering Ana's \"¿Dónde pasaste las vacaciones?\", said, Lisboa!"
        );
        d.answering = None;
        assert_eq!(d.embed_header().unwrap(), "(8 May 2023) Bó said, ");
        assert_eq!(Quote::new("x", &"长".repeat(400)).text.chars().count(), Quote::MAX_CHARS);
    }
}
