//! The one place that turns stored structs into bytes and back: a format-version byte, then
//! bincode 2 (serde mode, standard config). Vectors are raw little-endian f32.

use serde::Serialize;
use serde::de::DeserializeOwned;

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
    let (value, used) = bincode::serde::decode_from_slice(body, bincode::config::standard())
        .map_err(|e| Error::Codec { what, reason: e.to_string() })?;
    if used != body.len() {
        return Err(Error::Codec { what, reason: format!("{} trailing bytes", body.len() - used) });
    }
    Ok(value)
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
    use crate::doc::{Document, Role};

    #[test]
    fn document_roundtrip_and_version_check() {
        let mut d = Document::message("s1", "u1", 3, Role::User, "hello");
        d.tags = vec!["rust".into()];
        let bytes = encode(&d);
        let back: Document = decode("document", &bytes).unwrap();
        assert_eq!(back, d);
        let mut bad = bytes.clone();
        bad[0] = 99;
        assert!(matches!(decode::<Document>("document", &bad), Err(Error::FormatVersion { found: 99, .. })));
        assert!(matches!(decode::<Document>("document", &bytes[..bytes.len() - 2]), Err(Error::Codec { .. })));
    }

    #[test]
    fn vector_roundtrip() {
        let v = vec![0.5f32, -1.25, 3.0];
        assert_eq!(vector_from_bytes(&vector_bytes(&v)).unwrap(), v);
        assert!(vector_from_bytes(&[1, 2, 3]).is_err());
    }
}
