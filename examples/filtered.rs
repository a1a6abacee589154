//! Questions asked with a filter, over the real sessions of `../shared/data/fresh` indexed into
//! one data directory (all projects, as `convdex search` asks them): the file-filtered
//! questions of `tests/data/fresh_filtered_questions.json` (`--file`, the demo's third
//! question) and the one-session questions of `tests/data/fresh_session_questions.json` asked
//! with their session as the filter (`--session`). Per split (fixed by owner; fresh-dev to tune
//! on, fresh-test to report once): how often the first hit is an answer, how often one is in the
//! first five, and how the relevance shown reads (hits shown in a band of relevance, and the
//! share of them that answered).
//!
//! `cargo run --release --example filtered -- [--data DIR] [--split fresh-dev|fresh-test]
//! [--dump FILE]` (`--data` keeps the index for the next run; default: a temporary directory;
//! `--dump` writes each hit's signals, the vectors of the searched collections and of the
//! documents the filter let through, and whether it answered, one JSON line per question).
//! Needs `../shared/data` beside the checkout and the default model (`make models`).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use convdex::{DocBody, DocKind, Filter, Index, IndexOptions, Options, ProjectHit, Query, SearchMode};
use serde_json::{Value, json};

#[path = "support/labels.rs"]
mod labels;
use labels::same_message;

/// The hits of each question whose relevance is read (as `examples/ranking.rs` reads them).
const SHOWN: usize = 10;

/// One labelled question with its filter.
struct Question {
    set: &'static str,
    split: String,
    query: String,
    filter: Filter,
    session: String,
    answers: Vec<String>,
    summary: bool,
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/data");
    let temp = tempfile::tempdir()?;
    let data = value("--data").map_or_else(|| temp.path().to_path_buf(), PathBuf::from);
    let only = value("--split");
    let index = Index::open(&data, Options::default())?;
    if index.collections()?.is_empty() {
        eprintln!("indexing {} into {}", shared.join("fresh").display(), data.display());
        convdex::index_paths(&index, &[shared.join("fresh")], &IndexOptions::default())?;
    }
    let questions = load(&root, &shared)?;
    // Each collection's vectors, for the size of what a search chose from.
    let vectors: HashMap<(String, String), usize> = index
        .each(None, |info, c| Ok(((info.tenant.clone(), info.project.clone()), c.stats()?.chunks)))?
        .found
        .into_iter()
        .collect();
    let mut dump = value("--dump").map(std::fs::File::create).transpose()?;
    // (set, split) → (questions, first hit an answer, an answer in the first five)
    let mut tally: BTreeMap<(&str, String), (usize, usize, usize)> = BTreeMap::new();
    // (set, split) → (relevance shown, answered) of every hit read
    let mut points: BTreeMap<(&str, String), Vec<(u8, bool)>> = BTreeMap::new();
    // (set, split) → (chance shown that an answer is among the first k, one was) of each
    // question and each k of AMONG_FIRST
    let mut among: BTreeMap<(&str, String), Vec<(u8, bool)>> = BTreeMap::new();
    for q in questions.iter().filter(|q| only.as_ref().is_none_or(|s| *s == q.split)) {
        let mut query = Query::new(q.query.clone());
        query.mode = Some(SearchMode::Hybrid);
        query.ranking = index.default_ranking();
        query.filter = q.filter.clone();
        query.limit = SHOWN;
        let hits = index.search(None, &query)?.found;
        let answered: Vec<bool> = hits.iter().map(|h| answers(q, h)).collect();
        let t = tally.entry((q.set, q.split.clone())).or_default();
        *t = (
            t.0 + 1,
            t.1 + usize::from(answered.first() == Some(&true)),
            t.2 + usize::from(answered.iter().take(5).any(|a| *a)),
        );
        let pts = points.entry((q.set, q.split.clone())).or_default();
        pts.extend(hits.iter().zip(&answered).map(|(h, a)| (h.hit.relevance, *a)));
        if !hits.is_empty() {
            let asked = among.entry((q.set, q.split.clone())).or_default();
            for k in AMONG_FIRST {
                let k = k.min(hits.len());
                let chance = convdex::answer_among(hits[..k].iter().map(|h| h.hit.relevance));
                asked.push((chance, answered[..k].iter().any(|a| *a)));
            }
        }
        if let Some(f) = dump.as_mut() {
            // What the filter let through in each collection (by words alone: no model): its
            // vectors, its documents and those the filter admits (a collection it admits none
            // of counts for nothing in the relevance; the filters here are all locating ones).
            let collections: Vec<Value> = index
                .each(None, |info, c| {
                    let search = c.search(&q.query).filter(q.filter.clone()).mode(SearchMode::Lexical).limit(1);
                    let plan = search.run()?.plan;
                    let vectors = vectors.get(&(info.tenant.clone(), info.project.clone())).copied().unwrap_or(0);
                    Ok(json!({"vectors": vectors, "documents": plan.total, "admitted": plan.candidates}))
                })?
                .found;
            let rows: Vec<Value> = hits
                .iter()
                .zip(&answered)
                .map(|(h, a)| json!({"relevance": h.hit.relevance, "signals": h.hit.signals, "answer": a}))
                .collect();
            let line = json!({"set": q.set, "split": q.split, "collections": collections, "hits": rows});
            writeln!(f, "{line}")?;
        }
    }
    println!("\n| filter | split | questions | first hit an answer | an answer in the first five |");
    println!("|---|---|---:|---:|---:|");
    for ((set, split), (n, first, five)) in &tally {
        let share = |k: usize| k as f64 / (*n).max(1) as f64;
        println!("| {set} | {split} | {n} | {first} ({:.2}) | {five} ({:.2}) |", share(*first), share(*five));
    }
    println!("\nRelevance shown against answers, the first {SHOWN} hits of each question:\n");
    bands(&points, "hits", "answers");
    println!(
        "\nThe chance shown that an answer is among the first {AMONG_FIRST:?} hits, against questions with one:\n"
    );
    bands(&among, "questions × k", "with an answer");
    Ok(())
}

/// How many of a question's first hits the chance of an answer among them is read for
/// ([`convdex::answer_among`]; as `examples/ranking.rs --among` reads it).
const AMONG_FIRST: [usize; 3] = [3, 5, 10];

/// A reliability table: per (set, split), the points (value shown, true or not) in bands of the
/// value shown, with the share that were true.
fn bands(points: &BTreeMap<(&str, String), Vec<(u8, bool)>>, what: &str, yes_label: &str) {
    println!("| filter | split | band | {what} | mean shown | {yes_label} |");
    println!("|---|---|---|---:|---:|---:|");
    for ((set, split), pts) in points {
        for (lo, hi) in [(0u8, 10u8), (10, 30), (30, 50), (50, 70), (70, 90), (90, 101)] {
            let inside: Vec<&(u8, bool)> = pts.iter().filter(|p| (lo..hi).contains(&p.0)).collect();
            if inside.is_empty() {
                continue;
            }
            let n = inside.len() as f64;
            let mean = inside.iter().map(|p| f64::from(p.0)).sum::<f64>() / n;
            let yes = inside.iter().filter(|p| p.1).count() as f64 / n;
            println!(
                "| {set} | {split} | {lo}–{} | {} | {mean:.0} | {:.0} % |",
                hi.min(100),
                inside.len(),
                100.0 * yes
            );
        }
    }
}

/// Whether a hit answers: one of the labelled messages (any line of the same model message),
/// or the session's summary where it is labelled as answering.
fn answers(q: &Question, h: &ProjectHit) -> bool {
    match &h.hit.doc.body {
        DocBody::Message(m) => q.answers.contains(&m.message_uuid),
        _ => q.summary && h.hit.doc.kind() == DocKind::Summary && h.hit.doc.session_id == q.session,
    }
}

/// Both sets' questions, each with its filter and the uuids that answer it.
fn load(root: &Path, shared: &Path) -> anyhow::Result<Vec<Question>> {
    let read = |name: &str| -> anyhow::Result<Value> {
        Ok(serde_json::from_str(&std::fs::read_to_string(root.join("tests/data").join(name))?)?)
    };
    let mut out = Vec::new();
    let sets = [("file", read("fresh_filtered_questions.json")?), ("session", read("fresh_session_questions.json")?)];
    for (set, v) in sets {
        for q in v["queries"].as_array().into_iter().flatten() {
            let field = |k: &str| q[k].as_str().unwrap_or_default().to_string();
            let transcript = shared.join(field("transcript"));
            let labelled: Vec<&str> = q["uuids"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let mut filter = Filter::default();
            match set {
                "file" => filter.files.push(field("file")),
                _ => filter.sessions.push(field("session")),
            }
            out.push(Question {
                set,
                split: field("split"),
                query: field("query"),
                filter,
                session: field("session"),
                answers: same_message(&transcript, &labelled)?,
                summary: q["summary"].as_bool().unwrap_or(false),
            });
        }
    }
    Ok(out)
}
