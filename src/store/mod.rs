//! redb adapter: table definitions, the record codec, and index maintenance for one document.

pub(crate) mod cache;
pub(crate) mod codec;
pub(crate) mod compact;
pub(crate) mod filter;
pub(crate) mod meta;
pub(crate) mod salvage;
pub(crate) mod seal;
pub(crate) mod tables;

use redb::{ReadableDatabase, ReadableMultimapTable, ReadableTable, WriteTransaction};

use std::collections::HashMap;

use crate::doc::{DocBody, Document};
use crate::error::Result;
use crate::search::fields::RankFields;
use tables::*;

/// Writes a document and all its secondary-index entries under internal id `id`.
pub(crate) fn put_document(tx: &WriteTransaction, id: u64, doc: &Document) -> Result<()> {
    tx.open_table(DOCS)?.insert(id, codec::encode_document(doc).as_slice())?;
    tx.open_table(RANKING)?.insert(id, RankFields::of(doc).encode().as_slice())?;
    tx.open_table(UUIDS)?.insert(doc.id.as_u128(), id)?;
    tx.open_multimap_table(IDX_KIND)?.insert(doc.kind().code(), id)?;
    tx.open_multimap_table(IDX_SESSION)?.insert(doc.session_id.as_str(), id)?;
    tx.open_multimap_table(IDX_TIME)?.insert(doc.timestamp.timestamp_millis(), id)?;
    let mut tags = tx.open_multimap_table(IDX_TAG)?;
    for t in &doc.tags {
        tags.insert(t.as_str(), id)?;
    }
    if let Some(d) = &doc.domain {
        tx.open_multimap_table(IDX_DOMAIN)?.insert(d.as_str(), id)?;
    }
    let mut files = tx.open_multimap_table(IDX_FILE)?;
    for f in &doc.files_discussed {
        files.insert(f.path.as_str(), id)?;
    }
    Ok(())
}

/// Removes a document, its index entries and its vectors. Returns the removed document.
pub(crate) fn remove_document(tx: &WriteTransaction, id: u64) -> Result<Option<Document>> {
    let Some(bytes) = tx.open_table(DOCS)?.remove(id)?.map(|v| v.value().to_vec()) else {
        return Ok(None);
    };
    let doc: Document = codec::decode_document(&bytes)?;
    tx.open_table(RANKING)?.remove(id)?;
    tx.open_table(UUIDS)?.remove(doc.id.as_u128())?;
    tx.open_multimap_table(IDX_KIND)?.remove(doc.kind().code(), id)?;
    tx.open_multimap_table(IDX_SESSION)?.remove(doc.session_id.as_str(), id)?;
    tx.open_multimap_table(IDX_TIME)?.remove(doc.timestamp.timestamp_millis(), id)?;
    let mut tags = tx.open_multimap_table(IDX_TAG)?;
    for t in &doc.tags {
        tags.remove(t.as_str(), id)?;
    }
    if let Some(d) = &doc.domain {
        tx.open_multimap_table(IDX_DOMAIN)?.remove(d.as_str(), id)?;
    }
    let mut files = tx.open_multimap_table(IDX_FILE)?;
    for f in &doc.files_discussed {
        files.remove(f.path.as_str(), id)?;
    }
    let mut vectors = tx.open_table(VECTORS)?;
    let keys: Vec<u64> = vectors
        .range(crate::ids::VectorId::range_of(id))?
        .map(|r| r.map(|(k, _)| k.value()))
        .collect::<std::result::Result<_, _>>()?;
    for k in keys {
        vectors.remove(k)?;
    }
    tx.open_table(PENDING)?.remove(id)?;
    // A migration's vectors of the document go with it.
    let mut next = tx.open_table(MIGRATION_VECTORS)?;
    let keys: Vec<u64> = next
        .range(crate::ids::VectorId::range_of(id))?
        .map(|r| r.map(|(k, _)| k.value()))
        .collect::<std::result::Result<_, _>>()?;
    for k in keys {
        next.remove(k)?;
    }
    Ok(Some(doc))
}

/// Creates every table so that read transactions never meet a missing one.
pub(crate) fn create_tables(db: &redb::Database) -> Result<()> {
    // Every table there already (any open after the first): no write transaction, so a
    // read-only session leaves the file as it found it (and its seal valid).
    if all_tables_exist(db)? && ranking_current(&db.begin_read()?.open_table(RANKING)?)? {
        return Ok(());
    }
    let tx = db.begin_write()?;
    tx.open_table(META)?;
    tx.open_table(DOCS)?;
    backfill_ranking(&tx)?;
    tx.open_table(UUIDS)?;
    tx.open_table(VECTORS)?;
    tx.open_table(EMBED_CACHE)?;
    tx.open_table(MIGRATION_VECTORS)?;
    tx.open_table(MIGRATION_CACHE)?;
    tx.open_table(PENDING)?;
    tx.open_table(SESSIONS)?;
    tx.open_table(FORGOTTEN)?;
    for t in [IDX_TAG, IDX_DOMAIN, IDX_SESSION, IDX_FILE] {
        tx.open_multimap_table(t)?;
    }
    tx.open_multimap_table(IDX_KIND)?;
    tx.open_multimap_table(IDX_TIME)?;
    tx.commit()?;
    let _ = db.begin_read()?;
    Ok(())
}

fn all_tables_exist(db: &redb::Database) -> Result<bool> {
    use redb::{MultimapTableHandle, TableHandle};
    let tx = db.begin_read()?;
    let tables: Vec<String> = tx.list_tables()?.map(|t| t.name().to_string()).collect();
    let multimaps: Vec<String> = tx.list_multimap_tables()?.map(|t| t.name().to_string()).collect();
    let plain = [
        META.name(),
        DOCS.name(),
        RANKING.name(),
        UUIDS.name(),
        VECTORS.name(),
        EMBED_CACHE.name(),
        MIGRATION_VECTORS.name(),
        MIGRATION_CACHE.name(),
        PENDING.name(),
        SESSIONS.name(),
        FORGOTTEN.name(),
    ];
    let multi =
        [IDX_TAG.name(), IDX_DOMAIN.name(), IDX_SESSION.name(), IDX_FILE.name(), IDX_KIND.name(), IDX_TIME.name()];
    Ok(plain.iter().all(|t| tables.iter().any(|n| n == t)) && multi.iter().all(|t| multimaps.iter().any(|n| n == t)))
}

/// Whether the ranking rows are of the current encoding ([`crate::search::fields::VERSION`]);
/// an empty table is.
fn ranking_current(t: &impl ReadableTable<u64, &'static [u8]>) -> Result<bool> {
    Ok(t.first()?.is_none_or(|(_, v)| row_current(v.value())))
}

/// Whether a ranking row is of the current encoding or a newer one: a newer build's rows are
/// not this build's to rewrite (a search derives what it cannot read from the document).
fn row_current(row: &[u8]) -> bool {
    row.first().is_some_and(|&b| b >= crate::search::fields::VERSION)
}

/// A collection written before the ranking table existed gets it, filled from its documents
/// (once: the open that creates the table); one whose rows are of an earlier encoding
/// ([`crate::search::fields::VERSION`]) gets them rewritten, after its messages get the marks
/// indexing gives them now ([`mark_messages`]: the messages that close a turn, those a decision
/// was extracted from). A
/// document that cannot be decoded gets no row; a search derives what it needs from the
/// document then, as for any missing row.
fn backfill_ranking(tx: &WriteTransaction) -> Result<()> {
    use redb::TableHandle;
    if tx.list_tables()?.any(|t| t.name() == RANKING.name()) && ranking_current(&tx.open_table(RANKING)?)? {
        return Ok(());
    }
    mark_messages(tx)?;
    let docs = tx.open_table(DOCS)?;
    let mut ranking = tx.open_table(RANKING)?;
    for row in docs.iter()? {
        let (id, bytes) = row?;
        if let Ok(doc) = codec::decode_document(bytes.value()) {
            ranking.insert(id.value(), RankFields::of(&doc).encode().as_slice())?;
        }
    }
    // What is left of an earlier encoding (a row whose document cannot be read, or is gone)
    // goes: the next open would otherwise take the collection for one to upgrade again.
    let stale: Vec<u64> = ranking
        .iter()?
        .filter_map(|row| row.ok())
        .filter(|(_, v)| !row_current(v.value()))
        .map(|(id, _)| id.value())
        .collect();
    for id in stale {
        ranking.remove(id)?;
    }
    Ok(())
}

/// What [`mark_messages`] reads of a stored message.
struct Stored {
    /// Its index in the session.
    index: u64,
    /// Its internal id.
    id: u64,
    /// Who wrote it.
    role: crate::doc::Role,
    /// Whether it has words of its own.
    words: bool,
    /// Its sub-agent type; `None` in the main transcript.
    agent: Option<String>,
    /// Whether it is marked as closing a turn.
    marked: bool,
    /// Whether it is marked as one a decision was extracted from.
    decides: bool,
    /// Its message uuid.
    uuid: String,
}

/// Marks the messages that close a turn ([`Document::closes_turn`]) as indexing marks them:
/// in every session none of whose messages is marked (written before 2026-11-29), the
/// agent's closing messages from the stored messages in order
/// ([`crate::derive::session::closing_turns`]), with one difference: the stored messages do
/// not say which file they came from, so a sub-agent's messages are told apart by their agent
/// type (two runs of one type, each starting with its prompt, are told apart by it); then, in
/// every session, the turns the person's next message settled
/// ([`crate::derive::session::settle`]; ranking rows before version 4), from the stored decisions'
/// source messages, and the messages the stored decisions came from ([`Document::decides`];
/// before version 5). Rewrites the records of the documents whose marks change only: their
/// vectors and words are unchanged.
fn mark_messages(tx: &WriteTransaction) -> Result<()> {
    use crate::derive::session::{TurnEnd, closing_turns, overrules, settle};
    let mut sessions: HashMap<String, Vec<Stored>> = HashMap::new();
    // session → message uuid → the options the decisions extracted from it turned down (none
    // for a decision that names no alternative).
    let mut turned_down: HashMap<String, HashMap<String, Vec<String>>> = HashMap::new();
    {
        let docs = tx.open_table(DOCS)?;
        for row in docs.iter()? {
            let (id, bytes) = row?;
            let Ok(doc) = codec::decode_document(bytes.value()) else { continue };
            match &doc.body {
                DocBody::Message(m) => sessions.entry(doc.session_id.clone()).or_default().push(Stored {
                    index: m.message_index,
                    id: id.value(),
                    role: m.role,
                    words: crate::derive::session::has_own_words(&doc),
                    agent: m.agent.clone(),
                    marked: doc.closes_turn,
                    decides: doc.decides,
                    uuid: m.message_uuid.clone(),
                }),
                DocBody::Decision(f) => turned_down
                    .entry(doc.session_id.clone())
                    .or_default()
                    .entry(f.source_message_uuid.clone())
                    .or_default()
                    .extend(f.alternatives.iter().cloned()),
                _ => {}
            }
        }
    }
    let mut docs = tx.open_table(DOCS)?;
    for (session, mut messages) in sessions {
        // Each transcript's messages in order: the main one's, then each sub-agent type's (a
        // sub-agent's run starts with the prompt it was given, which closes the run before it).
        messages.sort_by(|a, b| a.agent.cmp(&b.agent).then(a.index.cmp(&b.index)));
        let closes: Vec<bool> = if messages.iter().any(|m| m.marked) {
            messages.iter().map(|m| m.marked).collect()
        } else {
            closing_turns(&messages.iter().map(|m| (m.role, m.words, m.agent.clone())).collect::<Vec<_>>())
        };
        let ends: Vec<TurnEnd> = messages
            .iter()
            .zip(&closes)
            .map(|(m, &closes)| TurnEnd { role: m.role, words: m.words, main: m.agent.is_none(), closes })
            .collect();
        // The two messages are read only for a person's message that turned something down; a
        // document that cannot be decoded overrules nothing, a failing read stops the upgrade.
        let mut failed = None;
        let turned_down = turned_down.remove(&session).unwrap_or_default();
        let marks = settle(&ends, |person, agent| {
            let Some(alts) = turned_down.get(&messages[person].uuid).filter(|a| !a.is_empty()) else { return false };
            let mut content = |id: u64| match docs.get(id) {
                Ok(b) => b.and_then(|b| codec::decode_document(b.value()).ok()).map(|d| d.content),
                Err(e) => {
                    failed = Some(e);
                    None
                }
            };
            let (Some(p), Some(a)) = (content(messages[person].id), content(messages[agent].id)) else { return false };
            overrules(&alts.iter().map(String::as_str).collect::<Vec<_>>(), &p, &a)
        });
        if let Some(e) = failed {
            return Err(e.into());
        }
        for (m, closes) in messages.iter().zip(marks) {
            let decides = turned_down.contains_key(&m.uuid);
            if closes == m.marked && decides == m.decides {
                continue;
            }
            let doc = docs.get(m.id)?.map(|b| codec::decode_document(b.value()));
            if let Some(Ok(mut doc)) = doc {
                doc.closes_turn = closes;
                doc.decides = decides;
                docs.insert(m.id, codec::encode_document(&doc).as_slice())?;
            }
        }
    }
    Ok(())
}

/// What the ranking reads of document `id`: its row in [`RANKING`], or, where the row is
/// missing or unreadable, the same fields derived from the document. `None` when the
/// document is not there.
pub(crate) fn rank_fields(
    ranking: &impl ReadableTable<u64, &'static [u8]>,
    docs: &impl ReadableTable<u64, &'static [u8]>,
    id: u64,
) -> Result<Option<RankFields>> {
    if let Some(f) = ranking.get(id)?.and_then(|v| RankFields::decode(v.value())) {
        return Ok(Some(f));
    }
    Ok(get_doc(docs, id)?.map(|d| RankFields::of(&d)))
}

/// Internal ids of a session's documents.
pub(crate) fn session_ids(tx: &WriteTransaction, session_id: &str) -> Result<Vec<u64>> {
    let idx = tx.open_multimap_table(IDX_SESSION)?;
    Ok(idx.get(session_id)?.map(|v| v.map(|v| v.value())).collect::<std::result::Result<_, _>>()?)
}

/// One document by internal id.
pub(crate) fn get_doc(docs: &impl ReadableTable<u64, &'static [u8]>, id: u64) -> Result<Option<Document>> {
    match docs.get(id)? {
        Some(v) => Ok(Some(codec::decode_document(v.value())?)),
        None => Ok(None),
    }
}

/// Internal ids of the stored documents with these external ids.
pub(crate) fn ids_of(tx: &WriteTransaction, uuids: impl IntoIterator<Item = uuid::Uuid>) -> Result<Vec<u64>> {
    let t = tx.open_table(UUIDS)?;
    let mut out = Vec::new();
    for u in uuids {
        if let Some(id) = t.get(u.as_u128())? {
            out.push(id.value());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{FileAction, FileRef, Role};

    fn message(session: &str, i: u64, role: Role, text: &str) -> Document {
        Document::message(session, &format!("{session}-{i}"), i, role, text)
    }

    /// A collection written before closing messages were marked (document records and ranking
    /// rows of version 2) gets them marked on its next open, as indexing would have (a
    /// sub-agent's run apart), and its rows rewritten; a session already marked is left as it
    /// is; a row whose document cannot be read goes, so the next open has nothing to upgrade.
    #[test]
    fn an_older_collection_gets_its_closing_messages_marked_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.redb");
        let mut edit = message("会话", 3, Role::Assistant, "edited src/認証.rs");
        edit.files_discussed =
            vec![FileRef { path: "src/認証.rs".into(), line_ranges: vec![], action: FileAction::Edited }];
        let sub = |i: u64, role: Role, text: &str| {
            let mut d = message("会话", i, role, text);
            if let DocBody::Message(m) = &mut d.body {
                m.agent = Some("explore".into());
            }
            d
        };
        let old = [
            message("会话", 0, Role::User, "為什麼登入會失敗？"),
            message("会话", 1, Role::Assistant, "Let me look."),
            message("会话", 2, Role::Assistant, "Found it: the expiry check unwraps."),
            edit,
            message("会话", 4, Role::User, "고쳐 주세요"),
            // A sub-agent's run, numbered before the main transcript grew.
            sub(5, Role::User, "Find where tokens are checked."),
            sub(6, Role::Assistant, "Reading src/auth.rs."),
            sub(7, Role::Assistant, "One place: verify_token."),
            message("会话", 8, Role::Assistant, "修正しました。"),
        ];
        let mut marked = vec![message("s2", 0, Role::User, "go on"), message("s2", 1, Role::Assistant, "done")];
        marked[1].closes_turn = true;
        marked.push(message("s2", 2, Role::Assistant, "left as it is"));
        let n = (old.len() + marked.len()) as u64;
        {
            let db = redb::Database::create(&path).unwrap();
            create_tables(&db).unwrap();
            let tx = db.begin_write().unwrap();
            for (id, d) in old.iter().chain(&marked).enumerate() {
                put_document(&tx, id as u64, d).unwrap();
            }
            // Rows as version 2 wrote them, the first session's records too (the second one's
            // are current: it is marked), and a document that cannot be read.
            let (mut docs, mut rows) = (tx.open_table(DOCS).unwrap(), tx.open_table(RANKING).unwrap());
            for id in 0..n {
                if id < old.len() as u64 {
                    let mut record = docs.get(id).unwrap().unwrap().value().to_vec();
                    record.truncate(record.len() - 2);
                    record[0] = 2;
                    docs.insert(id, record.as_slice()).unwrap();
                }
                let mut row = rows.get(id).unwrap().unwrap().value().to_vec();
                row.truncate(59);
                row[0] = 2;
                rows.insert(id, row.as_slice()).unwrap();
            }
            docs.insert(n, [2u8, 0xFF].as_slice()).unwrap();
            rows.insert(n, [2u8; 59].as_slice()).unwrap();
            drop((docs, rows));
            tx.commit().unwrap();
        }
        let db = redb::Database::create(&path).unwrap();
        create_tables(&db).unwrap();
        let tx = db.begin_read().unwrap();
        let (docs, rows) = (tx.open_table(DOCS).unwrap(), tx.open_table(RANKING).unwrap());
        let closes: Vec<bool> = (0..n).map(|id| get_doc(&docs, id).unwrap().unwrap().closes_turn).collect();
        assert_eq!(closes, [false, false, true, false, false, false, false, true, true, false, true, false]);
        for id in 0..n {
            let row = RankFields::decode(rows.get(id).unwrap().unwrap().value()).expect("a current row");
            assert_eq!(row.closes, closes[id as usize], "row {id}");
        }
        assert!(rows.get(n).unwrap().is_none(), "the unreadable document's old row is gone");
        assert!(ranking_current(&rows).unwrap() && all_tables_exist(&db).unwrap(), "nothing left to upgrade");
    }

    /// A collection written before the person's decisions settled turns (ranking rows of
    /// version 3, the agent's closing messages marked) or before the deciding messages were
    /// marked (version 4) gets both on its next open: the person's message a decision came from
    /// takes the mark of the agent's message it overruled, and every message a stored decision
    /// came from is marked as deciding.
    #[test]
    fn an_older_collection_gets_its_settled_turns_and_deciding_messages_on_open() {
        for version in [3, 4] {
            older_collection_upgraded(version);
        }
    }

    /// Ranking rows of `version` (3: before the settled turns; 4: before the deciding
    /// messages) upgraded on open.
    fn older_collection_upgraded(version: u8) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.redb");
        let mut docs = vec![
            message("세션", 0, Role::User, "Postgres か Redis か？"),
            message("세션", 1, Role::Assistant, "I'd keep Postgres."),
            message("세션", 2, Role::User, "Let's use Redis instead of Postgres, because of TTLs."),
            message("세션", 3, Role::Assistant, "Agreed."),
        ];
        docs[1].closes_turn = true;
        docs[3].closes_turn = true;
        let decision = |session: &str, source: &str| {
            let mut d = message(session, 99, Role::User, "Redis over Postgres");
            d.id = Document::stable_id(session, crate::doc::DocKind::Decision, &format!("{source}#0"));
            d.body = DocBody::Decision(crate::doc::DecisionFields {
                summary: "Redis over Postgres".into(),
                alternatives: vec!["Postgres".into()],
                reasoning: Some("TTLs".into()),
                confidence: 0.9,
                source_message_uuid: source.into(),
                status: crate::doc::DecisionStatus::Active,
                superseded_by: None,
                supersedes: vec![],
            });
            d
        };
        docs.push(decision("세션", "세션-2"));
        // A person who agrees with the agent's recommendation ("Redis over Postgres": the
        // decision's turned-down option comes from the agent's words) overrules nothing.
        docs.push(message("会话", 0, Role::Assistant, "I'd use Redis over Postgres here."));
        docs[5].closes_turn = true;
        docs.push(message("会话", 1, Role::User, "好的，就这么办。"));
        docs.push(decision("会话", "会话-1"));
        {
            let db = redb::Database::create(&path).unwrap();
            create_tables(&db).unwrap();
            let tx = db.begin_write().unwrap();
            for (id, d) in docs.iter().enumerate() {
                put_document(&tx, id as u64, d).unwrap();
            }
            let mut rows = tx.open_table(RANKING).unwrap();
            for id in 0..docs.len() as u64 {
                let mut row = rows.get(id).unwrap().unwrap().value().to_vec();
                row[0] = version;
                rows.insert(id, row.as_slice()).unwrap();
            }
            drop(rows);
            tx.commit().unwrap();
        }
        let db = redb::Database::create(&path).unwrap();
        create_tables(&db).unwrap();
        let tx = db.begin_read().unwrap();
        let (stored, rows) = (tx.open_table(DOCS).unwrap(), tx.open_table(RANKING).unwrap());
        let closes: Vec<bool> = (0..8).map(|id| get_doc(&stored, id).unwrap().unwrap().closes_turn).collect();
        assert_eq!(closes, [false, false, true, true, false, true, false, false]);
        // The messages the two decisions came from (the Korean session's third, the Chinese
        // session's reply) decide; nothing else does.
        let decides: Vec<bool> = (0..8).map(|id| get_doc(&stored, id).unwrap().unwrap().decides).collect();
        assert_eq!(decides, [false, false, true, false, false, false, true, false]);
        for id in 0..8u64 {
            let row = RankFields::decode(rows.get(id).unwrap().unwrap().value()).expect("a current row");
            assert_eq!((row.closes, row.decides), (closes[id as usize], decides[id as usize]), "row {id}");
        }
        assert!(ranking_current(&rows).unwrap(), "nothing left to upgrade");
    }
}
