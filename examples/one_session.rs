//! The demo's situation on real coding-agent sessions: each question of
//! `tests/data/fresh_session_questions.json` asked of the one Claude Code session that holds its
//! answer (that transcript alone, indexed into a data directory of its own), with the default
//! hybrid search: how often the first hit is an answer, and how often one is in the first five,
//! per split (fixed by owner; fresh-dev to tune on, fresh-test to report once).
//!
//! `cargo run --release --example one_session -- [--data DIR] [--split fresh-dev|fresh-test]`
//! (`--data` keeps the indexes for the next run; default: a temporary directory). Needs
//! `../shared/data` beside the checkout and the default model (`make models`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use convdex::{DocBody, Index, IndexOptions, Options, Query, SearchMode};
use serde_json::Value;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).cloned();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/data");
    let set: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/data/fresh_session_questions.json"))?)?;
    let temp = tempfile::tempdir()?;
    let data = value("--data").map_or_else(|| temp.path().to_path_buf(), PathBuf::from);
    let only = value("--split");
    // (split) → (questions, first hit an answer, an answer in the first five)
    let mut tally: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut by_kind: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    for q in set["queries"].as_array().into_iter().flatten() {
        let field = |k: &str| q[k].as_str().unwrap_or_default().to_string();
        let split = field("split");
        if only.as_ref().is_some_and(|s| *s != split) {
            continue;
        }
        let transcript = shared.join(field("transcript"));
        let session = field("session");
        let dir = data.join(&session);
        let index = Index::open(&dir, Options::default())?;
        if index.collections()?.is_empty() {
            convdex::index_paths(&index, std::slice::from_ref(&transcript), &IndexOptions::default())?;
        }
        let uuids = same_message(&transcript, q["uuids"].as_array().into_iter().flatten().filter_map(Value::as_str))?;
        let mut query = Query::new(field("query"));
        query.mode = Some(SearchMode::Hybrid);
        query.ranking = index.default_ranking();
        query.limit = 5;
        let hits = index.search(None, &query)?.found;
        let answers: Vec<bool> = hits
            .iter()
            .map(|h| matches!(&h.hit.doc.body, DocBody::Message(m) if uuids.contains(&m.message_uuid)))
            .collect();
        let (first, five) = (answers.first() == Some(&true), answers.contains(&true));
        let t = tally.entry(split.clone()).or_default();
        *t = (t.0 + 1, t.1 + usize::from(first), t.2 + usize::from(five));
        let k = by_kind.entry((split, field("kind"))).or_default();
        *k = (k.0 + 1, k.1 + usize::from(first));
        let first_kind = hits.first().map(|h| match &h.hit.doc.body {
            DocBody::Message(m) => format!("{:?} message", m.role),
            other => format!("{:?}", std::mem::discriminant(other)),
        });
        eprintln!(
            "{} {session:.8}: first hit {}, in the first five {}; first: {}",
            field("kind"),
            if first { "answers" } else { "does not" },
            if five { "yes" } else { "no" },
            first_kind.unwrap_or_else(|| "none".into())
        );
    }
    println!("\n| split | questions | first hit an answer | an answer in the first five |\n|---|---:|---:|---:|");
    for (split, (n, first, five)) in &tally {
        println!(
            "| {split} | {n} | {first} ({:.2}) | {five} ({:.2}) |",
            *first as f64 / *n as f64,
            *five as f64 / *n as f64
        );
    }
    println!("\n| split | kind | questions | first hit an answer |\n|---|---|---:|---:|");
    for ((split, kind), (n, first)) in &by_kind {
        println!("| {split} | {kind} | {n} | {first} |");
    }
    Ok(())
}

/// The labelled uuids and every other line's of the same model message: Claude Code writes one
/// reply in several lines (its thinking, its text, each tool call), and convdex keeps them as one
/// message under the first line's uuid.
fn same_message<'a>(
    transcript: &std::path::Path,
    labelled: impl Iterator<Item = &'a str>,
) -> anyhow::Result<Vec<String>> {
    let labelled: Vec<&str> = labelled.collect();
    let lines: Vec<Value> =
        std::fs::read_to_string(transcript)?.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let id_of = |v: &Value| v["message"]["id"].as_str().map(str::to_string);
    let ids: Vec<String> =
        lines.iter().filter(|v| labelled.contains(&v["uuid"].as_str().unwrap_or_default())).filter_map(id_of).collect();
    let mut out: Vec<String> = labelled.iter().map(|u| u.to_string()).collect();
    for v in &lines {
        if id_of(v).is_some_and(|id| ids.contains(&id)) {
            out.extend(v["uuid"].as_str().map(str::to_string));
        }
    }
    Ok(out)
}
