//! The one place that turns stored structs into bytes and back: a format-version byte, then
//! bincode 2 (serde mode, standard config). Vectors are raw little-endian f32.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::doc::Document;
use crate::error::{Error, Result};

/// Version of the record encoding. Bump on any incompatible change of a stored struct.
pub(crate) const FORMAT_VERSION: u8 = 1;

/// Encodes a record with the format-version prefix.
pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    let mut out = vec![FORMAT_VERSION];
    // Encoding plain data structs into a Vec cannot fail.
    let body = bincode::serde::encode_to_vec(value, bincode::config::standard()).expect("encodable record");
    out.extend_from_slice(&body);
    out
}

/// Decodes a record written by [`encode`].
pub(crate) fn decode<T: DeserializeOwned>(what: &'static str, bytes: &[u8]) -> Result<T> {
    let (&version, body) = bytes.split_first().ok_or_else(|| Error::Codec { what, reason: "empty record".into() })?;
    if version != FORMAT_VERSION {
        return Err(Error::FormatVersion { what, found: version.into(), supported: FORMAT_VERSION.into() });
    }
    decode_body(what, body)
}

/// Decodes a record's bincode body (after its version byte); every byte must be used.
fn decode_body<T: DeserializeOwned>(what: &'static str, body: &[u8]) -> Result<T> {
    let (value, used) = bincode::serde::decode_from_slice(body, bincode::config::standard())
        .map_err(|e| Error::Codec { what, reason: e.to_string() })?;
    if used != body.len() {
        return Err(Error::Codec { what, reason: format!("{} trailing bytes", body.len() - used) });
    }
    Ok(value)
}

/// Version of the document record. 2 added [`Document::answering`], 3
/// [`Document::closes_turn`], 4 [`Document::decides`], each encoded last: a record of an
/// earlier version is the same bytes without them.
pub(crate) const DOCUMENT_VERSION: u8 = 4;

/// Encodes a document (version [`DOCUMENT_VERSION`]).
pub(crate) fn encode_document(doc: &Document) -> Vec<u8> {
    let mut out = encode(doc);
    out[0] = DOCUMENT_VERSION;
    out
}

/// Decodes a document of version 4, or of an earlier one: version 3 lacks the last field
/// ([`Document::decides`], a `false` is one zero byte in this encoding), version 2 the last two
/// ([`Document::closes_turn`] too), version 1 the last three (an absent
/// [`Document::answering`] is one zero byte too), so an old record is read with those bytes
/// appended (a copy, for old records only; a current one is read in place).
pub(crate) fn decode_document(bytes: &[u8]) -> Result<Document> {
    let what = "document";
    let (&version, body) = bytes.split_first().ok_or_else(|| Error::Codec { what, reason: "empty record".into() })?;
    match version {
        DOCUMENT_VERSION => decode_body(what, body),
        3 => decode_body(what, &[body, &[0]].concat()),
        2 => decode_body(what, &[body, &[0, 0]].concat()),
        1 => decode_body(what, &[body, &[0, 0, 0]].concat()),
        v => Err(Error::FormatVersion { what, found: v.into(), supported: DOCUMENT_VERSION.into() }),
    }
}

/// Raw little-endian f32 bytes of a vector.
pub(crate) fn vector_bytes(v: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len() * 4);
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out
}

/// Parses raw little-endian f32 bytes.
pub(crate) fn vector_from_bytes(b: &[u8]) -> Result<Vec<f32>> {
    if !b.len().is_multiple_of(4) {
        return Err(Error::Codec { what: "vector", reason: format!("{} bytes is not a whole number of f32", b.len()) });
    }
    Ok(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::{Quote, Role};

    #[test]
    fn document_roundtrip_and_version_check() {
        let mut d = Document::message("s1", "u1", 3, Role::User, "hello");
        d.tags = vec!["rust".into()];
        let bytes = encode_document(&d);
        assert_eq!(bytes[0], DOCUMENT_VERSION);
        assert_eq!(decode_document(&bytes).unwrap(), d);
        d.answering = Some(Quote::new("Mélanie", "说了什么？"));
        assert_eq!(decode_document(&encode_document(&d)).unwrap(), d);
        d.closes_turn = true;
        assert_eq!(decode_document(&encode_document(&d)).unwrap(), d);
        d.decides = true;
        assert_eq!(decode_document(&encode_document(&d)).unwrap(), d);
        let mut bad = bytes.clone();
        bad[0] = 99;
        assert!(matches!(decode_document(&bad), Err(Error::FormatVersion { found: 99, supported: 4, .. })));
        assert!(matches!(decode_document(&bytes[..bytes.len() - 2]), Err(Error::Codec { .. })));
        assert!(matches!(decode_document(&[]), Err(Error::Codec { .. })));
    }

    /// The record layout of version 1, as it was written before `answering` existed.
    #[derive(Serialize)]
    struct DocumentV1<'a> {
        id: uuid::Uuid,
        session_id: &'a str,
        #[serde(with = "chrono::serde::ts_milliseconds")]
        timestamp: chrono::DateTime<chrono::Utc>,
        content: &'a str,
        tags: &'a [String],
        domain: &'a Option<String>,
        files_discussed: &'a [crate::doc::FileRef],
        commits_made: &'a [crate::doc::CommitRef],
        #[serde(with = "chrono::serde::ts_milliseconds")]
        indexed_at: chrono::DateTime<chrono::Utc>,
        extraction_method: &'a crate::doc::ExtractionMethod,
        body: &'a crate::doc::DocBody,
    }

    #[test]
    fn a_version_2_document_reads_as_closing_no_turn() {
        let mut d = Document::message("세션", "u1", 3, Role::Assistant, "修正しました。");
        d.answering = Some(Quote::new("Ana", "¿y ahora?"));
        let current = encode_document(&d);
        // Version 2: the same bytes without the last two (`closes_turn`, `decides`).
        let mut v2 = current[..current.len() - 2].to_vec();
        v2[0] = 2;
        assert_eq!(decode_document(&v2).unwrap(), d);
        d.closes_turn = true;
        let closing = encode_document(&d);
        assert_eq!(closing[closing.len() - 2], 1, "the flag is the record's last byte but one");
    }

    #[test]
    fn a_version_3_document_reads_as_deciding_nothing() {
        let mut d = Document::message("會話", "u2", 4, Role::User, "Redisにしよう、TTLが要るから。");
        d.closes_turn = true;
        let current = encode_document(&d);
        // Version 3: the same bytes without the last one (`decides`).
        let mut v3 = current[..current.len() - 1].to_vec();
        v3[0] = 3;
        assert_eq!(decode_document(&v3).unwrap(), d);
        d.decides = true;
        assert_eq!(*encode_document(&d).last().unwrap(), 1, "the flag is the record's last byte");
    }

    #[test]
    fn a_version_1_document_reads_as_answering_nothing() {
        let mut message = Document::message("会话", "u1", 3, Role::User, "hello");
        message.domain = Some("backend".into());
        let mut decision = Document::message("s", "u2", 0, Role::Assistant, "we use redb");
        decision.body = crate::doc::DocBody::Decision(crate::doc::DecisionFields {
            summary: "use redb".into(),
            alternatives: vec!["sled".into()],
            reasoning: None,
            confidence: 0.9,
            source_message_uuid: "u2".into(),
            status: crate::doc::DecisionStatus::Active,
            superseded_by: None,
            supersedes: vec![],
        });
        for d in [message, decision] {
            let v1 = encode(&DocumentV1 {
                id: d.id,
                session_id: &d.session_id,
                timestamp: d.timestamp,
                content: &d.content,
                tags: &d.tags,
                domain: &d.domain,
                files_discussed: &d.files_discussed,
                commits_made: &d.commits_made,
                indexed_at: d.indexed_at,
                extraction_method: &d.extraction_method,
                body: &d.body,
            });
            assert_eq!(v1[0], 1);
            assert_eq!(decode_document(&v1).unwrap(), d);
            // And it is the current record without its last three bytes.
            let current = encode_document(&d);
            assert_eq!(&v1[1..], &current[1..current.len() - 3]);
        }
    }

    #[test]
    fn vector_roundtrip() {
        let v = vec![0.5f32, -1.25, 3.0];
        assert_eq!(vector_from_bytes(&vector_bytes(&v)).unwrap(), v);
        assert!(vector_from_bytes(&[1, 2, 3]).is_err());
    }
}
