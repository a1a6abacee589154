//! A seeded mutation fuzzer over the real transcripts in `../shared/data`, on stable Rust: every
//! parser and every text-slicing function gets damaged real input and must not panic.
//!
//! The corpus is every Claude Code transcript and every Codex, Gemini and Aider history of the
//! shared data, and every parser reads every mutated input. Mutations, one to four per case: truncation at any byte (inside a character, a line, a
//! string), byte flips, lines swapped or repeated, JSON values swapped for another type, strings
//! replaced with random Unicode (CJK, Hangul, emoji, combining marks, RTL marks, `K`, `İ`, NUL,
//! lone-surrogate escapes), paths replaced with Windows / CJK / UNC paths, huge and negative
//! numbers, fields removed. Each case runs the Claude Code parser, then on every message:
//! scrubbing, tags and domain, decision extraction (with the previous message), the lexical
//! tokenizer, query parser and snippets, path normalisation against random roots, shell-word
//! splitting, run records and their parser, structured import and the V2 export decoder. Every
//! 25th case also indexes the mutated file into a real collection (hash embedder).
//!
//! `CONVDEX_FUZZ_CASES` (default 3,000: about 20 s here) and `CONVDEX_FUZZ_SEED` choose the
//! run; a failure prints the seed and case, and writes the input to the temp dir it names.

use std::path::{Path, PathBuf};

use convdex::testutil::Rng;
use serde_json::{Value, json};

fn corpus() -> Vec<PathBuf> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "jsonl" || x == "json" || x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    walk(&base.join("transcripts"), &mut out);
    walk(&base.join("fixtures-edge-cases"), &mut out);
    walk(&base.join("agents"), &mut out);
    out.sort();
    out
}

const NASTY: &[&str] = &[
    "會話記錄",
    "对话一二三",
    "한국어 세션",
    "スキーマを確認",
    "🦀🔥",
    "e\u{301}\u{301}",
    "\u{202e}evil",
    "\u{212a}\u{212a}",
    "İstanbul",
    "\u{0}",
    "\\ud800",
    "a\u{200d}b",
    "ﬁ",
    "ß",
    "\u{feff}",
];

const PATHS: &[&str] = &[
    "D:\\項目\\文件.md",
    "d:/AI/src/主程序.rs",
    "文档/说明书.md",
    "\\\\server\\share\\a b.txt",
    "C:\\Users\\王\\项目甲\\",
    "./src//auth.rs/",
    "/",
    "",
    "..\\..\\x",
    "/home/u/proj/src/a.rs",
];

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[(rng.next_u64() % xs.len() as u64) as usize]
}

fn random_string(rng: &mut Rng) -> String {
    let n = 1 + rng.next_u64() % 4;
    (0..n).map(|_| pick(rng, NASTY)).collect::<Vec<_>>().join(if rng.uniform() < 0.5 { " " } else { "" })
}

fn mutate_value(v: &mut Value, rng: &mut Rng, depth: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            let keys: Vec<String> = m.keys().cloned().collect();
            let k = &keys[(rng.next_u64() % keys.len() as u64) as usize];
            let r = rng.uniform();
            if r < 0.15 {
                m.remove(k);
            } else if r < 0.55 && depth < 6 {
                mutate_value(m.get_mut(k).expect("key"), rng, depth + 1);
            } else {
                let path_like = k.contains("path") || k == "cwd" || k == "command";
                m[k] = random_value(rng, path_like);
            }
        }
        Value::Array(a) if !a.is_empty() => {
            let i = (rng.next_u64() % a.len() as u64) as usize;
            if rng.uniform() < 0.2 {
                let x = a[i].clone();
                a.push(x);
            } else {
                mutate_value(&mut a[i], rng, depth + 1);
            }
        }
        other => *other = random_value(rng, false),
    }
}

fn random_value(rng: &mut Rng, path_like: bool) -> Value {
    match rng.next_u64() % 9 {
        0 => Value::Null,
        1 => json!(rng.uniform() < 0.5),
        2 => json!(u64::MAX),
        3 => json!(-1e308),
        4 => json!([random_string(rng), 1, null]),
        5 => json!({"type": random_string(rng), "text": random_string(rng)}),
        6 if path_like => json!(format!("git rm '{}' && rm {}", pick(rng, PATHS), pick(rng, PATHS))),
        _ if path_like => json!(pick(rng, PATHS)),
        _ => json!(random_string(rng)),
    }
}

fn mutate(bytes: &[u8], rng: &mut Rng) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
    // A window of the file keeps every case fast.
    if lines.len() > 120 {
        let start = (rng.next_u64() % (lines.len() as u64 - 120)) as usize;
        lines = lines[start..start + 120].to_vec();
    }
    for _ in 0..1 + rng.next_u64() % 4 {
        if lines.is_empty() {
            break;
        }
        let i = (rng.next_u64() % lines.len() as u64) as usize;
        match rng.next_u64() % 6 {
            0 => {
                let at = (rng.next_u64() % (lines[i].len() as u64 + 1)) as usize;
                lines[i].truncate(at);
            }
            1 if !lines[i].is_empty() => {
                let at = (rng.next_u64() % lines[i].len() as u64) as usize;
                lines[i][at] ^= 1 << (rng.next_u64() % 8);
            }
            2 => {
                let j = (rng.next_u64() % lines.len() as u64) as usize;
                lines.swap(i, j);
            }
            3 => {
                let x = lines[i].clone();
                lines.insert(i, x);
            }
            _ => {
                if let Ok(mut v) = serde_json::from_slice::<Value>(&lines[i]) {
                    mutate_value(&mut v, rng, 0);
                    lines[i] = v.to_string().into_bytes();
                }
            }
        }
    }
    let mut out = lines.join(&b'\n');
    // Sometimes the file ends inside its last line (a write in progress).
    if rng.uniform() < 0.3 && !out.is_empty() {
        let cut = out.len() - (rng.next_u64() % (out.len() as u64).min(64)) as usize;
        out.truncate(cut);
    }
    out
}

/// Everything pure that reads transcript text.
fn exercise(bytes: &[u8], rng: &mut Rng) {
    // Every format's parser reads every input: a Claude Code line in a Codex parser must not panic.
    let _ = convdex::ingest::codex::parse(bytes);
    let _ = convdex::ingest::gemini::parse_chat(bytes);
    let _ = convdex::ingest::gemini::parse_logs(bytes);
    let _ = convdex::ingest::aider::parse(bytes);
    let parsed = convdex::ingest::claude::parse(bytes);
    let mut prev: Option<(convdex::Role, String)> = None;
    for m in &parsed.messages {
        let (clean, _) = convdex::scrub::scrub(&m.text);
        let _ = convdex::enrich::tags(&clean, &m.files);
        let _ = convdex::enrich::domain(&clean, &m.files);
        let turn = convdex::extract::Turn { role: m.role, text: &clean };
        let previous = prev.as_ref().map(|(r, t)| convdex::extract::Turn { role: *r, text: t });
        let _ = convdex::extract::extract(turn, previous);
        let q = convdex::lexical::LexicalQuery::parse(&clean);
        let _ = convdex::lexical::snippet(&clean, &q.terms(), 1 + (rng.next_u64() % 200) as usize);
        let _ = convdex::lexical::tokens(&clean);
        let _ = convdex::text::prefix_bytes(&clean, (rng.next_u64() % 64) as usize);
        let _ = convdex::text::one_line(&clean, (rng.next_u64() % 64) as usize);
        for f in &m.files {
            let root = pick(rng, PATHS);
            let _ = convdex::text::paths::relative_to(&f.path, root);
            let _ = convdex::text::paths::lookup_forms(&f.path, Some(root));
        }
        let _ = convdex::text::paths::shell_words(&clean);
        let _ = convdex::text::paths::simple_commands(&clean);
        let _ = convdex::runs::RunRecord::parse(&clean);
        let _ = convdex::runs::detect(&clean);
        prev = Some((m.role, clean));
    }
    let side = convdex::runs::Sidechain { agent_id: "a1b2", bytes, agent_type: Some("Explore") };
    let _ = convdex::runs::session_runs(Some(bytes), &[side], Some(pick(rng, PATHS)));
    let _ = convdex::ingest::structured::parse(bytes);
    for line in bytes.split(|b| *b == b'\n').take(3) {
        if let Ok(v) = serde_json::from_slice::<Value>(line) {
            let _ = convdex::export::decode(&v);
        }
    }
}

/// The V2 decoder and the structured importer get mutated versions of their own valid input.
fn exercise_formats(rng: &mut Rng) {
    let conv = json!({"id": random_string(rng), "conversation": {"source": "slack", "people": ["a", "b"], "user": "a",
        "conversation": [{"speaker": "a", "content": random_string(rng), "time": "2026-10-20T09:00:00Z"}]}});
    let mut c = conv.clone();
    mutate_value(&mut c, rng, 0);
    let _ = convdex::ingest::structured::parse(c.to_string().as_bytes());
    let v1 = convdex::export::v1_from_documents(&random_string(rng), &[]);
    if let Ok(mut v2) = convdex::export::encode(&v1) {
        mutate_value(&mut v2, rng, 0);
        let _ = convdex::export::decode(&v2);
    }
}

/// Cases the long runs found, replayed exactly: (file under `../shared/data`, seed, case).
const REGRESSIONS: &[(&str, u64, u64)] = &[
    // Line numbers near u64::MAX in a Read / Edit result overflowed (`ingest::claude`).
    (
        "transcripts/ryudae33+claude-settings/projects/C--Users-Administrator/0eb850b9-213f-477d-ab67-088dc48849af.jsonl",
        20261123,
        46122,
    ),
];

fn case_rng(seed: u64, case: u64) -> Rng {
    Rng(seed ^ case.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
}

#[test]
fn fuzz_regressions_stay_fixed() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    for &(file, seed, case) in REGRESSIONS {
        let mut rng = case_rng(seed, case);
        let _ = rng.next_u64(); // the file pick of the original run
        let input = mutate(&std::fs::read(base.join(file)).unwrap(), &mut rng);
        exercise(&input, &mut rng);
    }
}

#[test]
fn mutated_real_transcripts_never_panic() {
    let files = corpus();
    assert!(files.len() > 100, "{}", files.len());
    let cases = std::env::var("CONVDEX_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(3000u64);
    let seed = std::env::var("CONVDEX_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0xf00d_u64);
    let out = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let index = crate::common::hash_index(data.path(), convdex::CollectionOptions::default());
    let started = std::time::Instant::now();
    let mut indexed = 0;
    for case in 0..cases {
        let mut rng = case_rng(seed, case);
        let file = &files[(rng.next_u64() % files.len() as u64) as usize];
        let input = mutate(&std::fs::read(file).unwrap(), &mut rng);
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            exercise(&input, &mut rng);
            exercise_formats(&mut rng);
        }));
        // Every 25th case goes through the whole indexing pipeline into a real collection.
        let run = run.and_then(|()| {
            if case % 25 != 0 {
                return Ok(());
            }
            indexed += 1;
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let dir = out.path().join(format!("projects/D--{case}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(format!("會話-{case}.jsonl")), &input).unwrap();
                let opts = convdex::IndexOptions { tenant: Some("fuzz".into()), ..Default::default() };
                let report = convdex::index_paths(&index, std::slice::from_ref(&dir), &opts).unwrap();
                assert!(report.failures.is_empty(), "{:?}", report.failures);
            }))
        });
        if run.is_err() {
            let keep = out.path().join(format!("case-{case}.jsonl"));
            std::fs::write(&keep, &input).unwrap();
            let kept = out.keep();
            panic!(
                "panic on case {case} (CONVDEX_FUZZ_SEED={seed}, from {}); input kept in {}",
                file.display(),
                kept.join(keep.file_name().unwrap()).display()
            );
        }
    }
    println!(
        "{cases} mutated cases ({indexed} indexed) from {} files, seed {seed}, in {:?}",
        files.len(),
        started.elapsed()
    );
}
