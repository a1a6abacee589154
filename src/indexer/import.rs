//! Structured conversations (Slack, Discord, WhatsApp, LoCoMo…) into a collection: one message
//! document per turn, the conversation as the session, its header (source, people, user, tags,
//! metadata) kept under `import:<id>` in the `sessions` table.

use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};

use crate::collection::{Collection, SessionWrite};
use crate::doc::{DocBody, DocKind, Document, ExtractionMethod, MessageFields, Quote, Role, now_millis};
use crate::error::Result;
use crate::index::{Index, across::Across};
use crate::text::scrub::scrub;

/// Result of importing structured conversations.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ImportReport {
    /// Conversations imported.
    pub conversations: usize,
    /// Message documents written.
    pub messages: usize,
    /// Documents rejected, with the reason.
    pub invalid: Vec<crate::ingest::structured::Invalid>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct ImportHeader {
    source: String,
    people: Vec<String>,
    user: String,
    tags: Vec<String>,
    metadata: Vec<(String, String)>,
}

pub(crate) fn import_key(id: &str) -> String {
    format!("import:{id}")
}

/// Imports validated structured conversations into a collection: one message document per
/// turn (speaker kept; `role` user for the primary user, other for everyone else; tagged with
/// the conversation's tags and `source:<source>`), the conversation as the session. Importing
/// the same conversation again replaces it; importing a forgotten one
/// ([`Collection::forget_session`]) is an explicit request and brings it back.
pub fn import_conversations(
    coll: &Collection,
    conversations: &[crate::ingest::structured::Conversation],
) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    for c in conversations {
        let mut tags: Vec<String> = c.tags.iter().map(|t| t.to_lowercase()).collect();
        tags.push(format!("source:{}", c.source.to_lowercase()));
        tags.sort();
        tags.dedup();
        let texts: Vec<String> = c.turns.iter().map(|t| scrub(&t.content).0).collect();
        let docs: Vec<Document> = c
            .turns
            .iter()
            .zip(&texts)
            .enumerate()
            .map(|(i, (t, text))| Document {
                id: Document::stable_id(&c.id, DocKind::Message, &i.to_string()),
                session_id: c.id.clone(),
                timestamp: t.time,
                content: text.clone(),
                tags: tags.clone(),
                domain: None,
                files_discussed: Vec::new(),
                commits_made: Vec::new(),
                indexed_at: now_millis(),
                extraction_method: ExtractionMethod::Import,
                body: DocBody::Message(MessageFields {
                    role: if t.speaker == c.user { Role::User } else { Role::Other },
                    message_uuid: format!("{}:{i}", c.id),
                    message_index: i as u64,
                    speaker: Some(t.speaker.clone()),
                    agent: None,
                }),
                // The previous turn, scrubbed like its own document.
                answering: i.checked_sub(1).map(|p| Quote::new(&c.turns[p].speaker, &texts[p])),
                closes_turn: false,
                decides: false,
            })
            .collect();
        let header = ImportHeader {
            source: c.source.clone(),
            people: c.people.clone(),
            user: c.user.clone(),
            tags: c.tags.clone(),
            metadata: c.metadata.clone(),
        };
        // The conversation replaces any earlier import of it, with its header, in one transaction.
        coll.write_session(SessionWrite {
            session_id: &c.id,
            replace: true,
            docs: &docs,
            state: Some((import_key(&c.id), crate::store::codec::encode(&header))),
            unforget: true,
            defer_vectors: false,
        })?;
        report.conversations += 1;
        report.messages += docs.len();
    }
    Ok(report)
}

/// Imported conversations of `coll` stored before each turn kept the turn it answers
/// ([`Document::answering`], since 2026-11-26): a turn after the first answers nothing, so its
/// vector and its words lack the turn before it. [`refresh_answering`] imports them again.
/// Once it has, the collection records so, and this answers from that record without reading
/// a document.
pub fn conversations_without_answering(coll: &Collection) -> Result<Vec<String>> {
    if coll.imports_answering()? {
        return Ok(Vec::new());
    }
    scan_without_answering(coll)
}

/// [`conversations_without_answering`] read from the documents, whatever the collection records.
fn scan_without_answering(coll: &Collection) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let prefix = import_key("");
    for key in coll.session_keys(&prefix)? {
        let Some(id) = key.strip_prefix(&prefix) else { continue };
        let stale = coll
            .session_documents(id)?
            .iter()
            .any(|d| matches!(&d.body, DocBody::Message(m) if m.message_index > 0) && d.answering.is_none());
        if stale {
            out.push(id.to_string());
        }
    }
    Ok(out)
}

/// Imports every conversation of [`conversations_without_answering`] again from its stored
/// texts ([`read_conversation`]; the transcripts are not needed), so that each turn is embedded
/// and indexed with the turn it answers. Same documents, same ids; each conversation is
/// replaced in one transaction, so an interruption leaves it old or new, and running this again
/// goes on with the rest. When every conversation carries it, the collection records so
/// (later calls read that record only; conversations imported from then on carry it anyway).
/// Returns what was imported again.
pub fn refresh_answering(coll: &Collection) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    if coll.imports_answering()? {
        return Ok(report);
    }
    for id in scan_without_answering(coll)? {
        if let Some(c) = read_conversation(coll, &id)? {
            let r = import_conversations(coll, std::slice::from_ref(&c))?;
            report.conversations += r.conversations;
            report.messages += r.messages;
        }
    }
    coll.mark_imports_answering()?;
    Ok(report)
}

/// [`refresh_answering`] for every collection of `project` (all when `None`): the collections
/// that had such conversations, with what was imported again. A collection that cannot be
/// opened or read is skipped and listed, the others go on.
pub fn refresh_answering_all(index: &Index, project: Option<&str>) -> Result<Across<Vec<(String, ImportReport)>>> {
    let mut found = Vec::new();
    let skipped = index.each_collection(project, |c| {
        let r = refresh_answering(c)?;
        if r.conversations > 0 {
            found.push((c.name().to_string(), r));
        }
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(Across { found, skipped })
}

/// Reads an imported conversation back (scrubbed text, as stored).
pub fn read_conversation(coll: &Collection, id: &str) -> Result<Option<crate::ingest::structured::Conversation>> {
    let Some(bytes) = coll.get_session_bytes(&import_key(id))? else { return Ok(None) };
    let h: ImportHeader = crate::store::codec::decode("import header", &bytes)?;
    let turns = coll
        .session_documents(id)?
        .into_iter()
        .filter_map(|d| match d.body {
            DocBody::Message(m) => Some(crate::ingest::structured::Turn {
                speaker: m.speaker.unwrap_or_default(),
                content: d.content,
                time: d.timestamp,
            }),
            _ => None,
        })
        .collect();
    Ok(Some(crate::ingest::structured::Conversation {
        id: id.to_string(),
        source: h.source,
        people: h.people,
        user: h.user,
        turns,
        tags: h.tags,
        metadata: h.metadata,
    }))
}
