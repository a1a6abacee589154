//! Splitting long texts into pieces the model reads whole. Pure.

/// Splits `text` into byte ranges of at most `max_tokens` model tokens, given the tokens' byte
/// offsets. Consecutive chunks overlap by `overlap` tokens so a sentence cut at a boundary is
/// whole in one of them. At most `max_chunks` chunks; the rest of a huge text is dropped
/// (it would add noise, not recall). Texts that fit give one chunk covering the whole text.
pub(crate) fn split(
    text: &str,
    offsets: &[(usize, usize)],
    max_tokens: usize,
    overlap: usize,
    max_chunks: usize,
) -> Vec<(usize, usize)> {
    if offsets.len() <= max_tokens || max_tokens == 0 {
        return vec![(0, text.len())];
    }
    let step = max_tokens.saturating_sub(overlap).max(1);
    let mut out = Vec::new();
    let mut start = 0;
    while start < offsets.len() && out.len() < max_chunks {
        let end = (start + max_tokens).min(offsets.len());
        let from = if start == 0 { 0 } else { offsets[start].0 };
        let to = if end == offsets.len() { text.len() } else { offsets[end - 1].1 };
        out.push((floor_char(text, from), ceil_char(text, to)));
        if end == offsets.len() {
            break;
        }
        start += step;
    }
    out
}

/// Whitespace word spans, the fallback tokenisation.
pub(crate) fn word_offsets(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

fn floor_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
#[allow(clippy::string_slice)] // test code: a bad offset fails the test
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_chunk() {
        let t = "a b c";
        assert_eq!(split(t, &word_offsets(t), 10, 2, 8), vec![(0, 5)]);
    }

    #[test]
    fn word_offsets_cover_words() {
        let t = "  hello  wide\tworld ";
        let w: Vec<&str> = word_offsets(t).iter().map(|&(s, e)| &t[s..e]).collect();
        assert_eq!(w, ["hello", "wide", "world"]);
    }

    #[test]
    fn long_text_is_covered_with_overlap_and_capped() {
        let t: String = (0..100).map(|i| format!("w{i} ")).collect();
        let offs = word_offsets(&t);
        let chunks = split(&t, &offs, 30, 5, 64);
        assert!(chunks.len() >= 4);
        assert_eq!(chunks[0].0, 0);
        assert_eq!(chunks.last().unwrap().1, t.len());
        for w in chunks.windows(2) {
            assert!(w[1].0 < w[0].1, "chunks overlap");
        }
        for (a, b) in &chunks {
            assert!(word_offsets(&t[*a..*b]).len() <= 30);
        }
        assert_eq!(split(&t, &offs, 30, 5, 2).len(), 2);
    }
}
