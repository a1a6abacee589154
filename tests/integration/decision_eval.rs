//! Decision extraction measured on a labelled set of real messages.
//!
//! `tests/data/decision_labels.json` names messages of `../shared/data/transcripts/` by file and
//! uuid (the text is never copied here) with whether they contain a decision and, when they do,
//! keyword groups: a prediction matches when its summary contains every keyword of one group.
//! Scored per message: a labelled decision message is a true positive when one of its extracted
//! decisions matches; any decision extracted from a message labelled without one is a false
//! positive. Labels were made by reading the messages; messages judged ambiguous were left out
//! (to rebuild or extend the set, list candidate messages with the parser and label by hand).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use convdex::extract::{Turn, extract_all};
use convdex::ingest::claude::parse;

#[derive(serde::Deserialize)]
struct Label {
    file: String,
    uuid: String,
    decision: bool,
    keywords: Vec<Vec<String>>,
    note: String,
}

/// One labelled message after extraction.
struct Outcome<'a> {
    label: &'a Label,
    /// Highest confidence among the decisions extracted from the message.
    confidence: Option<f32>,
    /// A prediction matched the expected keywords.
    matched: bool,
    summaries: Vec<String>,
}

fn run<'a>(labels: &'a [Label], root: &Path) -> Vec<Outcome<'a>> {
    let mut by_file: BTreeMap<&str, Vec<&Label>> = BTreeMap::new();
    for l in labels {
        by_file.entry(&l.file).or_default().push(l);
    }
    let mut out = Vec::new();
    for (file, labels) in by_file {
        let bytes = std::fs::read(root.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let parsed = parse(&bytes);
        let messages: Vec<_> = parsed.messages.iter().filter(|m| !m.text.trim().is_empty()).collect();
        let texts: Vec<String> = messages.iter().map(|m| convdex::scrub::scrub(&m.text).0).collect();
        let turns = messages.iter().zip(&texts).map(|(m, t)| Turn { role: m.role, text: t });
        let mut found: HashMap<&str, Vec<convdex::extract::Extracted>> = HashMap::new();
        for (i, d) in extract_all(turns) {
            found.entry(messages[i].uuid.as_str()).or_default().push(d);
        }
        for l in labels {
            assert!(messages.iter().any(|m| m.uuid == l.uuid), "{file}: no message {}", l.uuid);
            let ds = found.remove(l.uuid.as_str()).unwrap_or_default();
            let matched = ds.iter().any(|d| {
                let s = d.summary.to_lowercase();
                l.keywords.iter().any(|g| g.iter().all(|k| s.contains(&k.to_lowercase())))
            });
            out.push(Outcome {
                label: l,
                confidence: ds.iter().map(|d| d.confidence).reduce(f32::max),
                matched,
                summaries: ds.iter().map(|d| d.summary.clone()).collect(),
            });
        }
    }
    out
}

struct Scores {
    precision: f64,
    recall: f64,
    f1: f64,
}

fn scores(outcomes: &[Outcome<'_>]) -> Scores {
    let tp = outcomes.iter().filter(|o| o.label.decision && o.matched).count() as f64;
    let predicted = outcomes.iter().filter(|o| o.confidence.is_some()).count() as f64;
    let positives = outcomes.iter().filter(|o| o.label.decision).count() as f64;
    let precision = if predicted == 0.0 { 0.0 } else { tp / predicted };
    let recall = tp / positives;
    let f1 = if precision + recall == 0.0 { 0.0 } else { 2.0 * precision * recall / (precision + recall) };
    Scores { precision, recall, f1 }
}

#[test]
fn decision_extraction_meets_floors_on_labelled_real_messages() {
    let labels: Vec<Label> = serde_json::from_str(include_str!("../data/decision_labels.json")).expect("labels parse");
    let positives = labels.iter().filter(|l| l.decision).count();
    assert!(labels.len() >= 200 && positives >= 60, "{} labels, {positives} decisions", labels.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let outcomes = run(&labels, &root);
    let s = scores(&outcomes);
    println!(
        "decision extraction: {} messages ({positives} with a decision): precision {:.3} recall {:.3} F1 {:.3}",
        outcomes.len(),
        s.precision,
        s.recall,
        s.f1
    );
    // Precision per confidence bucket (by the message's highest confidence).
    let mut buckets: Vec<(f32, f32, usize, usize)> = vec![(0.0, 0.6, 0, 0), (0.6, 0.75, 0, 0), (0.75, 1.01, 0, 0)];
    for o in &outcomes {
        let Some(c) = o.confidence else { continue };
        let b = buckets.iter_mut().find(|b| c >= b.0 && c < b.1).expect("bucket");
        b.2 += 1;
        b.3 += usize::from(o.label.decision && o.matched);
    }
    for (lo, hi, n, tp) in &buckets {
        let p = if *n == 0 { f64::NAN } else { *tp as f64 / *n as f64 };
        println!("  confidence [{lo:.2}, {:.2}): {n:3} predicted, precision {p:.3}", hi.min(1.0));
    }
    for o in &outcomes {
        let wrong = (o.label.decision && !o.matched) || (!o.label.decision && o.confidence.is_some());
        if wrong {
            let kind = if o.label.decision { "missed" } else { "false positive" };
            println!("  {kind} ({}): {} {} {:?}", o.label.note, o.label.file, o.label.uuid, o.summaries);
        }
    }
    assert!(s.precision >= 0.85, "precision {:.3} < 0.85", s.precision);
    assert!(s.recall >= 0.60, "recall {:.3} < 0.60", s.recall);
    // Precision rises with confidence: the top bucket is at least as precise as the lowest one.
    let precision = |b: &(f32, f32, usize, usize)| if b.2 == 0 { None } else { Some(b.3 as f64 / b.2 as f64) };
    if let (Some(low), Some(high)) = (precision(&buckets[0]), precision(&buckets[2])) {
        assert!(high >= low, "precision does not rise with confidence: {low:.3} (low) vs {high:.3} (high)");
    }
}
