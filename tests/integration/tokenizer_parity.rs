//! The compact Unigram vocabulary (`convdex::embed::CompactUnigram`, multilingual-e5-small's
//! 250,000 pieces held as one string and a table of hashes) gives the same ids and offsets as the `tokenizers`
//! crate's own Unigram model on every kind of text the shared data holds: every string of
//! every JSON line of the transcripts, agent histories and edge-case fixtures (Chinese,
//! Japanese, Korean, Windows paths, code, tool output), plus texts at the edges (unknown
//! characters, special-token look-alikes, long runs without a space); and so does the same
//! tokenizer saved as later processes read it (`tokenizer.compact`) and read back. A mismatch
//! is reported by file and position, never by its text.

use std::path::{Path, PathBuf};

use convdex::embed::{ModelTokenizer, TokenizerConfig, read_tokenizer};
use convdex::models::{Manifest, locate_model};

/// At most this many bytes of text from one file, and this many from one string.
const PER_FILE: usize = 24_000;
const PER_STRING: usize = 3_000;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "jsonl" || e == "json") {
            out.push(p);
        }
    }
}

fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if !s.is_empty() => {
            let mut end = s.len().min(PER_STRING);
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            out.push(s[..end].to_string());
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// `(file, index within the file, text)` for the corpus's strings, bounded per file.
pub(crate) fn corpus_texts() -> Vec<(PathBuf, usize, String)> {
    let mut paths = Vec::new();
    for root in ["transcripts", "agents", "fixtures-edge-cases"] {
        files(&shared().join(root), &mut paths);
    }
    let mut out = Vec::new();
    for path in paths {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        let mut found = Vec::new();
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                strings(&v, &mut found);
            }
        }
        if found.is_empty()
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        {
            strings(&v, &mut found);
        }
        let mut budget = PER_FILE;
        for (i, s) in found.into_iter().enumerate() {
            if s.len() > budget {
                break;
            }
            budget -= s.len();
            out.push((path.clone(), i, s));
        }
    }
    out
}

fn edge_texts() -> Vec<String> {
    let mut t: Vec<String> = [
        "",
        " ",
        "   leading and trailing   ",
        "<s> </s> <unk> <pad> <mask> literal special tokens",
        "<s><s></s>",
        "C:\\Users\\张伟\\项目\\src\\auth.rs",
        "\u{1F600}\u{1F680}\u{1F9EA} emoji, 🇯🇵 flags, e\u{301} combining",
        "\u{0}\u{1}\u{7f} control\tchars\r\nand a form feed \u{c}",
        "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and ﬁ ligatures",
        "한국어 텍스트와 日本語のテキストと中文文本 mixed with English identifiers like fooBar_baz",
        "\u{E000}\u{F8FF} private use, \u{FFFD} replacement, \u{200B} zero width",
        "ᚠᛇᚻ runes ꦲꦏ javanese ߊ nko 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    t.push("a".repeat(5_000));
    t.push("数据库".repeat(1_500));
    t.push("0123456789abcdef".repeat(300));
    t
}

#[test]
fn the_compact_vocabulary_tokenizes_the_whole_shared_corpus_exactly_as_tokenizers_does() {
    let spec = Manifest::builtin().model("multilingual-e5-small").unwrap();
    let files = locate_model(None, spec).unwrap();
    let mut ours = read_tokenizer(&files, 256).unwrap();
    assert!(matches!(ours, ModelTokenizer::Compact(_)), "e5's Unigram vocabulary is held compactly");
    let tok = std::fs::read(&files.tokenizer).unwrap();
    // The same tokenizer saved as later processes read it (`tokenizer.compact`) and read back.
    let small: Vec<Vec<u8>> =
        [&files.config, &files.special_tokens_map, &files.tokenizer_config].map(|p| std::fs::read(p).unwrap()).into();
    let config = TokenizerConfig { config: &small[0], special_tokens_map: &small[1], tokenizer_config: &small[2] };
    let mut saved = ModelTokenizer::load_saved(&ours.to_saved(&tok).unwrap(), &config, 256).unwrap();
    let mut theirs = tokenizers::Tokenizer::from_bytes(&tok).unwrap();
    theirs.with_padding(None);
    theirs.with_truncation(None).unwrap();

    let corpus = corpus_texts();
    let cjk = corpus
        .iter()
        .filter(|(_, _, s)| {
            s.chars().any(|c| ('\u{3040}'..='\u{9FFF}').contains(&c) || ('\u{AC00}'..='\u{D7AF}').contains(&c))
        })
        .count();
    let edges = edge_texts();
    let all: Vec<(String, &str)> = corpus
        .iter()
        .map(|(p, i, s)| (format!("{} string {i}", p.strip_prefix(shared()).unwrap_or(p).display()), s.as_str()))
        .chain(edges.iter().enumerate().map(|(i, s)| (format!("edge case {i}"), s.as_str())))
        .collect();
    let (mut tokens, mut mismatched) = (0usize, Vec::new());
    for (where_, text) in &all {
        let b = theirs.encode(*text, false).unwrap();
        tokens += b.len();
        for (which, t) in [("", &mut ours), (" (saved and read back)", &mut saved)] {
            let a = t.encode_whole(text).unwrap();
            if a.get_ids() != b.get_ids() || a.get_offsets() != b.get_offsets() {
                mismatched.push(format!("{where_}{which}"));
            }
        }
    }
    // The call that feeds the model: special tokens and truncation at 256, as fastembed set them.
    theirs.with_truncation(Some(tokenizers::TruncationParams { max_length: 256, ..Default::default() })).unwrap();
    for (where_, text) in all.iter().step_by(7) {
        let b = theirs.encode(*text, true).unwrap();
        for (which, t) in [("", &ours), (", saved and read back", &saved)] {
            let a = t.encode_batch(&[text.to_string()]).unwrap();
            if a[0].get_ids() != b.get_ids() || a[0].get_attention_mask() != b.get_attention_mask() {
                mismatched.push(format!("{where_} (with special tokens, truncated{which})"));
            }
        }
    }
    println!(
        "tokenizer parity: {} texts ({cjk} with CJK), {tokens} tokens, {} mismatched",
        all.len(),
        mismatched.len()
    );
    assert!(
        mismatched.is_empty(),
        "{} texts tokenized differently, first: {:?}",
        mismatched.len(),
        &mismatched[..mismatched.len().min(5)]
    );
    assert!(corpus.len() >= 5_000, "the shared corpus yielded only {} texts", corpus.len());
    assert!(cjk >= 200, "only {cjk} texts with Chinese, Japanese or Korean characters");
}
