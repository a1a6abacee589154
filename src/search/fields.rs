//! What the ranking reads of a document (pure): [`RankFields`], a fixed-size record the store
//! keeps beside each document so that a search reads and decodes the full documents of the
//! hits it shows only, not of every candidate of every pool.

use crate::doc::{DecisionStatus, DocBody, Document};

/// What [`super::fuse::rank`] needs of a candidate: its external id (ties), which session it
/// is in and where (context lift), when it was written and, for a decision, whether it is in
/// force (recency), and a hash of its content as folding compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RankFields {
    /// The document's external id ([`Document::id`]).
    pub(crate) uuid: u128,
    /// XXH3 of the session id. Two sessions of one pool sharing it (about one chance in 2^64
    /// per pair) would lift each other's hits as one session.
    pub(crate) session: u64,
    /// XXH3-128 of the content with whitespace runs collapsed, seeded with [`Self::session`]:
    /// equal for identical content of one session (see [`fold_hash`]).
    pub(crate) fold: u128,
    /// A message's position in its session; `None` for decisions and summaries.
    pub(crate) position: Option<u64>,
    /// Milliseconds since the epoch.
    pub(crate) timestamp_ms: i64,
    /// A decision's status; `None` for other kinds.
    pub(crate) status: Option<DecisionStatus>,
    /// A message that ends by asking ([`asks`]): it restates a question more often than it
    /// answers one ([`crate::Ranking::question`]).
    pub(crate) asks: bool,
    /// A message that closes a turn ([`Document::closes_turn`],
    /// [`crate::Ranking::closing`]).
    pub(crate) closes: bool,
    /// A message a decision was extracted from ([`Document::decides`],
    /// [`crate::Ranking::decision_lift`]).
    pub(crate) decides: bool,
}

/// Version byte of the encoding, then the fields little-endian. Version 1 had no `asks`,
/// version 2 no `closes`, version 3 rows are laid out alike but were written before the
/// person's settling messages took the mark ([`crate::derive::session::settle`]), version 4
/// had no `decides`: their rows are rewritten, and their marks settled, when a collection opens
/// ([`crate::store`]'s backfill).
pub(crate) const VERSION: u8 = 5;
/// Encoded length in bytes.
pub(crate) const ENCODED_LEN: usize = 1 + 16 + 8 + 16 + 8 + 8 + 1 + 1 + 1 + 1;
/// `position` when there is none.
const NO_POSITION: u64 = u64::MAX;

impl RankFields {
    /// The fields of a document.
    pub(crate) fn of(doc: &Document) -> RankFields {
        let session = xxhash_rust::xxh3::xxh3_64(doc.session_id.as_bytes());
        let (position, status) = match &doc.body {
            DocBody::Message(m) => (Some(m.message_index), None),
            DocBody::Decision(d) => (None, Some(d.status)),
            DocBody::Summary(_) => (None, None),
        };
        RankFields {
            uuid: doc.id.as_u128(),
            session,
            fold: fold_hash(session, &doc.content),
            position: position.filter(|&p| p != NO_POSITION),
            timestamp_ms: doc.timestamp.timestamp_millis(),
            status,
            asks: position.is_some() && asks(&doc.content),
            closes: position.is_some() && doc.closes_turn,
            decides: position.is_some() && doc.decides,
        }
    }

    /// The stored form ([`ENCODED_LEN`] bytes).
    pub(crate) fn encode(&self) -> [u8; ENCODED_LEN] {
        let mut out = [0u8; ENCODED_LEN];
        out[0] = VERSION;
        out[1..17].copy_from_slice(&self.uuid.to_le_bytes());
        out[17..25].copy_from_slice(&self.session.to_le_bytes());
        out[25..41].copy_from_slice(&self.fold.to_le_bytes());
        out[41..49].copy_from_slice(&self.position.unwrap_or(NO_POSITION).to_le_bytes());
        out[49..57].copy_from_slice(&self.timestamp_ms.to_le_bytes());
        out[57] = match self.status {
            None => 0,
            Some(DecisionStatus::Active) => 1,
            Some(DecisionStatus::Superseded) => 2,
            Some(DecisionStatus::Rejected) => 3,
        };
        out[58] = u8::from(self.asks);
        out[59] = u8::from(self.closes);
        out[60] = u8::from(self.decides);
        out
    }

    /// Reads [`Self::encode`]'s form; `None` for anything else (another version, a damaged
    /// row), and the caller derives the fields from the document instead.
    pub(crate) fn decode(bytes: &[u8]) -> Option<RankFields> {
        let b: &[u8; ENCODED_LEN] = bytes.try_into().ok()?;
        if b[0] != VERSION {
            return None;
        }
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let u128_at = |at: usize| u128::from_le_bytes(b[at..at + 16].try_into().expect("16 bytes"));
        let status = match b[57] {
            0 => None,
            1 => Some(DecisionStatus::Active),
            2 => Some(DecisionStatus::Superseded),
            3 => Some(DecisionStatus::Rejected),
            _ => return None,
        };
        let position = u64_at(41);
        Some(RankFields {
            uuid: u128_at(1),
            session: u64_at(17),
            fold: u128_at(25),
            position: (position != NO_POSITION).then_some(position),
            timestamp_ms: u64_at(49) as i64,
            status,
            asks: flag(b[58])?,
            closes: flag(b[59])?,
            decides: flag(b[60])?,
        })
    }
}

/// A stored flag: 0 or 1, anything else a damaged row.
fn flag(byte: u8) -> Option<bool> {
    match byte {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// Whether a message ends by asking: its last character, closing quotes and brackets aside,
/// is a question mark (`?`, or the full-width `？` of Chinese and Japanese).
pub(crate) fn asks(content: &str) -> bool {
    content.trim_end().trim_end_matches(['"', '\'', '”', '’', ')', '）', '」', '*', '`']).ends_with(['?', '？'])
}

/// A hash of content as compared for folding (whitespace runs collapsed, case kept), seeded
/// with the session's hash. Content already in that form (most is) is hashed as it is, the
/// rest is collapsed first. 128 bits: two different contents of one session folding into one
/// hit would take a collision no search will meet.
pub(crate) fn fold_hash(session: u64, content: &str) -> u128 {
    let collapsed = !content.starts_with(char::is_whitespace)
        && !content.ends_with(char::is_whitespace)
        && !content.contains(|c: char| c.is_whitespace() && c != ' ')
        && !content.contains("  ");
    if collapsed {
        return xxhash_rust::xxh3::xxh3_128_with_seed(content.as_bytes(), session);
    }
    let folded = content.split_whitespace().collect::<Vec<_>>().join(" ");
    xxhash_rust::xxh3::xxh3_128_with_seed(folded.as_bytes(), session)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{DecisionFields, Role};

    #[test]
    fn fields_survive_their_encoding() {
        let mut msg = Document::message("会话-s", "u-1", 7, Role::User, "数据 库\tchoice");
        msg.timestamp = chrono::DateTime::from_timestamp_millis(-5).unwrap();
        let mut closing = Document::message("会话-s", "u-3", 9, Role::Assistant, "修正しました。");
        closing.closes_turn = true;
        closing.decides = true;
        let mut dec = Document::message("s", "u-2", 0, Role::Assistant, "x");
        dec.body = DocBody::Decision(DecisionFields {
            summary: "x".into(),
            alternatives: vec![],
            reasoning: None,
            confidence: 0.9,
            source_message_uuid: "u-2".into(),
            status: DecisionStatus::Rejected,
            superseded_by: None,
            supersedes: vec![],
        });
        assert!(RankFields::of(&closing).closes && !RankFields::of(&msg).closes);
        assert!(RankFields::of(&closing).decides && !RankFields::of(&msg).decides);
        for doc in [msg, dec, closing] {
            let f = RankFields::of(&doc);
            assert_eq!(RankFields::decode(&f.encode()), Some(f));
        }
        let f = RankFields::of(&Document::message("s", "u", 3, Role::User, "a"));
        assert_eq!(f.position, Some(3));
        assert_eq!(f.status, None);
        let mut bad = f.encode();
        bad[0] = 9;
        assert_eq!(RankFields::decode(&bad), None, "another version");
        bad = f.encode();
        bad[57] = 7;
        assert_eq!(RankFields::decode(&bad), None, "an unknown status");
        bad = f.encode();
        bad[59] = 2;
        assert_eq!(RankFields::decode(&bad), None, "a flag neither 0 nor 1");
        bad = f.encode();
        bad[60] = 3;
        assert_eq!(RankFields::decode(&bad), None, "a flag neither 0 nor 1");
        assert_eq!(RankFields::decode(&f.encode()[1..]), None, "a short row");
    }

    #[test]
    fn a_message_that_ends_by_asking_is_marked() {
        for text in ["Should we move them to Redis?", "为什么选这个？", "これでいい？」", "왜 실패했나요? ", "(why?)"]
        {
            assert!(RankFields::of(&Document::message("s", "u", 0, Role::User, text)).asks, "{text}");
        }
        for text in ["Why? Because the TTL expires.", "use Redis", "", "?!"] {
            assert!(!RankFields::of(&Document::message("s", "u", 0, Role::User, text)).asks, "{text}");
        }
    }

    #[test]
    fn folding_hashes_collapse_whitespace_only() {
        let h = |session: &str, content: &str| fold_hash(xxhash_rust::xxh3::xxh3_64(session.as_bytes()), content);
        let plain = h("s", "a b 数据 c");
        for same in ["a b 数据 c", " a b 数据 c", "a  b 数据 c ", "a\tb\n\n数据\u{3000}c"] {
            assert_eq!(h("s", same), plain, "{same:?}");
        }
        assert_ne!(h("s", "A b 数据 c"), plain, "case is kept");
        assert_ne!(h("t", "a b 数据 c"), plain, "sessions are apart");
        assert_ne!(h("s", "ab 数据 c"), plain);
        assert_eq!(h("s", ""), h("s", " \n\t"));
    }
}
