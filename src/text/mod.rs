//! Pure text work that every other module may use: cutting text at character boundaries,
//! case-insensitive search that returns offsets valid in the original string, file paths as
//! users and agents write them ([`paths`]), secrets out ([`scrub`]), tags and domains
//! ([`enrich`]), and long texts into model-sized pieces (`chunk`).
//!
//! Nothing here slices a `str` at a byte offset it has not checked: a cut that would land
//! inside a character moves to the boundary before it.

pub(crate) mod chunk;
pub mod enrich;
pub mod paths;
pub(crate) mod pattern;
pub mod scrub;

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
pub fn prefix_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.get(..cut).unwrap_or_default()
}

/// The first `n` characters of `s` (all of it when shorter).
pub fn prefix_chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => s.get(..i).unwrap_or(s),
        None => s,
    }
}

/// Byte offset of the first ASCII-case-insensitive match of `needle` in `haystack`, valid in
/// `haystack` (unlike an offset found in `haystack.to_lowercase()`, which can differ in
/// length: `K` (Kelvin) lower-cases to one byte, `İ` to three). Non-ASCII characters of the
/// needle must match exactly.
pub fn find_ci(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.is_empty() {
        return Some(0);
    }
    if n.len() > h.len() {
        return None;
    }
    // An ASCII byte never occurs inside a multi-byte UTF-8 sequence, and the needle's first byte
    // starts a character, so a match found byte-wise starts on a character boundary.
    (0..=h.len() - n.len()).find(|&i| haystack.is_char_boundary(i) && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// Like [`find_ci`], the last match.
pub fn rfind_ci(haystack: &str, needle: &str) -> Option<usize> {
    let (h, n) = (haystack.as_bytes(), needle.as_bytes());
    if n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len()).rev().find(|&i| haystack.is_char_boundary(i) && h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// `s` without `prefix`, compared ASCII-case-insensitively.
pub fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.as_bytes().get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix.as_bytes()) { s.get(prefix.len()..) } else { None }
}

/// A valid collection name part from free text: lower-cased letters and digits of any script
/// kept (`AI科普画册` → `ai科普画册`), other characters → `-`, at most 48 bytes.
pub fn normalize_name(raw: &str) -> String {
    let s: String = raw.to_lowercase().chars().map(|c| if c.is_alphanumeric() || c == '_' { c } else { '-' }).collect();
    let s = s.trim_matches(|c| c == '-' || c == '_');
    let mut out = String::new();
    for c in s.chars() {
        if out.len() + c.len_utf8() > 48 {
            break;
        }
        out.push(c);
    }
    let out = out.trim_end_matches(['-', '_']).to_string();
    if out.is_empty() { "project".into() } else { out }
}

/// Whitespace collapsed to single spaces, cut at `max` characters with an ellipsis.
pub fn one_line(text: &str, max: usize) -> String {
    let one: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= max { one } else { format!("{}…", prefix_chars(&one, max)) }
}

#[cfg(test)]
#[allow(clippy::string_slice)] // test code: a bad offset fails the test
mod tests {
    use super::*;

    #[test]
    fn prefixes_never_split_a_character() {
        assert_eq!(prefix_bytes("對話一二三", 4), "對");
        assert_eq!(prefix_bytes("abc", 8), "abc");
        assert_eq!(prefix_bytes("é", 1), "");
        assert_eq!(prefix_chars("會話記錄.jsonl", 2), "會話");
        assert_eq!(prefix_chars("ab", 8), "ab");
        assert_eq!(one_line("a  b\n c", 2), "a …");
    }

    #[test]
    fn case_insensitive_offsets_are_valid_in_the_original() {
        // U+212A KELVIN SIGN lower-cases to a one-byte `k`: offsets from `to_lowercase()` drift.
        let s = "\u{212A}\u{212A} instead of Redis";
        let i = find_ci(s, "instead of ").unwrap();
        assert_eq!(&s[i..], "instead of Redis");
        assert_eq!(rfind_ci("a, b, c", ", "), Some(4));
        assert_eq!(strip_prefix_ci("OK, go", "ok, "), Some("go"));
        assert_eq!(strip_prefix_ci("\u{212A}, go", "k, "), None);
        assert_eq!(find_ci("對話", "x"), None);
        assert_eq!(find_ci("", ""), Some(0));
    }
}
