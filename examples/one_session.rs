//! The demo's situation on real coding-agent sessions: each question of
//! `tests/data/fresh_session_questions.json` asked of the one Claude Code session that holds its
//! answer (that transcript alone, indexed into a data directory of its own), with the default
//! hybrid search: how often the first hit is an answer, and how often one is in the first five,
//! per split (fixed by owner; fresh-dev to tune on, fresh-test to report once).
//!
//! `cargo run --release --example one_session -- [--data DIR] [--split fresh-dev|fresh-test]
//! [--closing W]` (`--closing`: that [`convdex::Ranking::closing`] instead of the default;
//! `ONE_SESSION_SHOW=1` lists each question's first twenty hits and their signals,
//! `ONE_SESSION_DUMP=FILE` appends its first fifty as JSON lines)
//! (`--data` keeps the indexes for the next run; default: a temporary directory). Needs
//! `../shared/data` beside the checkout and the default model (`make models`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use convdex::{DocBody, Index, IndexOptions, Options, Query, SearchMode};
use serde_json::Value;

#[path = "support/labels.rs"]
mod labels;
use labels::same_message;

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
    // A diagnostic: each question's first twenty hits and their signals.
    let show = std::env::var_os("ONE_SESSION_SHOW").is_some();
    // `--closing W`: that weight of the turn's closing message instead of the default.
    let closing: Option<f32> = value("--closing").and_then(|w| w.parse().ok());
    // (split) → (questions, first hit an answer, an answer in the first five)
    let mut tally: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    let mut by_kind: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
    // (split, k) → (questions, sum of the chance shown that an answer is among the first k
    // hits, questions with one there)
    let mut among: BTreeMap<(String, usize), (usize, f64, usize)> = BTreeMap::new();
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
        let labelled: Vec<&str> = q["uuids"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let uuids = same_message(&transcript, &labelled)?;
        let mut query = Query::new(field("query"));
        query.mode = Some(SearchMode::Hybrid);
        query.ranking = index.default_ranking();
        if let Some(w) = closing {
            query.ranking.closing = w;
        }
        query.limit = if show { 50 } else { 5 };
        let mut hits = index.search(None, &query)?.found;
        if show {
            eprintln!("\n{} [{}] {}", field("kind"), session, field("query"));
            if let Some(path) = std::env::var_os("ONE_SESSION_DUMP") {
                use std::io::Write;
                let rows: Vec<Value> = hits
                    .iter()
                    .map(|h| {
                        let (role, at, uuid) = match &h.hit.doc.body {
                            DocBody::Message(m) => {
                                (format!("{:?}", m.role), m.message_index as i64, m.message_uuid.clone())
                            }
                            _ => ("doc".into(), -1, String::new()),
                        };
                        serde_json::json!({"role": role, "at": at, "uuid": uuid, "score": h.hit.score,
                            "signals": h.hit.signals, "len": h.hit.doc.content.chars().count(),
                            "answer": uuids.contains(&uuid)})
                    })
                    .collect();
                let line = serde_json::json!({"session": session, "split": split, "transcript": field("transcript"), "kind": field("kind"), "hits": rows});
                let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
                writeln!(f, "{line}")?;
            }
            for (rank, h) in hits.iter().enumerate().take(20) {
                let s = &h.hit.signals;
                let (role, at) = match &h.hit.doc.body {
                    DocBody::Message(m) => (format!("{:?}", m.role), m.message_index as i64),
                    _ => ("doc".into(), -1),
                };
                let answer = matches!(&h.hit.doc.body, DocBody::Message(m) if uuids.contains(&m.message_uuid));
                let text: String = h.hit.doc.content.chars().take(60).collect::<String>().replace('\n', " ");
                eprintln!(
                    "  {}{rank:>2} {role:9} #{at:<4} {:6.2} z {:5.2} w {:4.2} c {:4.2} q {:4.1} a {:4.2} len {:5} {text}",
                    if answer { "*" } else { " " },
                    h.hit.score,
                    s.semantic_z.unwrap_or(0.0),
                    s.lexical_share.unwrap_or(0.0),
                    s.context,
                    s.asked,
                    s.answers,
                    h.hit.doc.content.chars().count(),
                );
            }
            hits.truncate(5);
        }
        let answers: Vec<bool> = hits
            .iter()
            .map(|h| matches!(&h.hit.doc.body, DocBody::Message(m) if uuids.contains(&m.message_uuid)))
            .collect();
        let (first, five) = (answers.first() == Some(&true), answers.contains(&true));
        for k in [3, 5] {
            let k_hits = k.min(hits.len());
            let chance = convdex::answer_among(hits[..k_hits].iter().map(|h| h.hit.relevance));
            let a = among.entry((split.clone(), k)).or_default();
            *a = (a.0 + 1, a.1 + f64::from(chance), a.2 + usize::from(answers[..k_hits].contains(&true)));
        }
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
    println!(
        "\n| split | first hits | questions | mean chance shown of an answer among them | with an answer |\n|---|---:|---:|---:|---:|"
    );
    for ((split, k), (n, shown, yes)) in &among {
        println!("| {split} | {k} | {n} | {:.0} % | {:.0} % |", shown / *n as f64, 100.0 * *yes as f64 / *n as f64);
    }
    println!("\n| split | kind | questions | first hit an answer |\n|---|---|---:|---:|");
    for ((split, kind), (n, first)) in &by_kind {
        println!("| {split} | {kind} | {n} | {first} |");
    }
    Ok(())
}
