//! Decision extraction measured on labelled real messages, development and test apart.
//!
//! `tests/data/decision_labels.json` names messages of `../shared/data/transcripts/` (Claude Code)
//! and `../shared/data/agents/` (Codex, Gemini, Aider) by file and uuid (the text is never copied
//! here) with whether they hold a decision and, when they do, keyword groups: a prediction
//! matches when its summary contains every keyword of one group (the chosen thing).
//!
//! Each label carries its `split`, fixed by session before any rule was changed: `dev` is every
//! session the rules were written against (the first labelled set, 2026-11-22, and the rest of
//! those sessions); `test` is every other session, including all agent histories. On 2026-11-25
//! half of the test sessions became a second development part, `dev2` (chosen by the sha256 of
//! the session path, balancing decisions, before any rule was written from them): the first
//! development part holds few Chinese, Korean or Japanese messages, the test part many. Rules
//! are written against `dev` and `dev2` only; `test` is scored to report, and only its
//! aggregates are printed. `family` is the phrasing family of a
//! decision (reference, rejection, approval, pin, policy, labelled, first_person, plain; `legacy`
//! for the first set), or `look-alike` for a negative that carries decision vocabulary.
//!
//! Scored per message: a labelled decision message is a true positive when one of its extracted
//! decisions matches; any decision extracted from a message labelled without one is a false
//! positive, and so is a decision extracted from a decision message whose summary names the
//! wrong thing. Messages judged ambiguous when labelling were left out.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use convdex::extract::{Extracted, Turn, extract_all};

#[derive(serde::Deserialize)]
struct Label {
    file: String,
    uuid: String,
    split: String,
    decision: bool,
    family: String,
    keywords: Vec<Vec<String>>,
    /// Options stated or implied as not taken.
    #[serde(default)]
    alternatives: Vec<String>,
}

/// One labelled message after extraction.
struct Outcome<'a> {
    label: &'a Label,
    language: &'static str,
    /// Highest confidence among the decisions extracted from the message.
    confidence: Option<f32>,
    /// A prediction matched the expected keywords.
    matched: bool,
    /// Stated alternatives found in the extracted ones.
    alternatives_found: usize,
    summaries: Vec<String>,
}

/// The script a message is written in, for per-language scores.
fn language(text: &str) -> &'static str {
    let has = |lo: u32, hi: u32| text.chars().any(|c| (lo..=hi).contains(&(c as u32)));
    if has(0xAC00, 0xD7AF) {
        "ko"
    } else if has(0x3040, 0x30FF) {
        "ja"
    } else if has(0x4E00, 0x9FFF) {
        "zh"
    } else if text.chars().any(|c| "ăâđêôơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ".contains(c))
    {
        "vi"
    } else if has(0x0400, 0x04FF) {
        "ru"
    } else {
        "en"
    }
}

/// The sessions of one labelled file, parsed the way the indexer parses them.
fn sessions(root: &Path, file: &str) -> Vec<Vec<(String, convdex::Role, String)>> {
    let path = if file.starts_with("agents/") { root.join(file) } else { root.join("transcripts").join(file) };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let parsed = if file.starts_with("agents/codex/") {
        vec![convdex::ingest::codex::parse(&bytes)]
    } else if file.starts_with("agents/gemini/") {
        vec![convdex::ingest::gemini::parse_chat(&bytes)]
    } else if file.starts_with("agents/aider/") {
        convdex::ingest::aider::parse(&bytes).into_iter().map(|(_, p)| p).collect()
    } else {
        vec![convdex::ingest::claude::parse(&bytes)]
    };
    parsed
        .iter()
        .map(|p| {
            p.messages
                .iter()
                .filter(|m| !m.text.trim().is_empty())
                .map(|m| (m.uuid.clone(), m.role, convdex::scrub::scrub(&m.text).0))
                .collect()
        })
        .collect()
}

fn run<'a>(labels: &'a [Label], root: &Path) -> Vec<Outcome<'a>> {
    let mut by_file: BTreeMap<&str, Vec<&Label>> = BTreeMap::new();
    for l in labels {
        by_file.entry(&l.file).or_default().push(l);
    }
    let mut out = Vec::new();
    for (file, labels) in by_file {
        let mut found: HashMap<String, (String, Vec<Extracted>)> = HashMap::new();
        for messages in sessions(root, file) {
            let turns = messages.iter().map(|(_, role, text)| Turn { role: *role, text });
            let mut per: HashMap<usize, Vec<Extracted>> = HashMap::new();
            for (i, d) in extract_all(turns) {
                per.entry(i).or_default().push(d);
            }
            for (i, (uuid, _, text)) in messages.iter().enumerate() {
                found.insert(uuid.clone(), (text.clone(), per.remove(&i).unwrap_or_default()));
            }
        }
        for l in labels {
            let (text, ds) = found.remove(&l.uuid).unwrap_or_else(|| panic!("{file}: no message {}", l.uuid));
            let matched = ds.iter().any(|d| {
                let s = d.summary.to_lowercase();
                l.keywords.iter().any(|g| g.iter().all(|k| s.contains(&k.to_lowercase())))
            });
            let alternatives_found = l
                .alternatives
                .iter()
                .filter(|a| {
                    ds.iter().flat_map(|d| &d.alternatives).any(|x| x.to_lowercase().contains(&a.to_lowercase()))
                })
                .count();
            out.push(Outcome {
                label: l,
                language: language(&text),
                confidence: ds.iter().map(|d| d.confidence).reduce(f32::max),
                matched,
                alternatives_found,
                summaries: ds.iter().map(|d| d.summary.clone()).collect(),
            });
        }
    }
    out
}

#[derive(Debug, Clone, Copy)]
struct Scores {
    precision: f64,
    recall: f64,
    f1: f64,
    positives: usize,
    predicted: usize,
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 { f64::NAN } else { a as f64 / b as f64 }
}

fn scores<'a>(outcomes: impl IntoIterator<Item = &'a Outcome<'a>>) -> Scores {
    let (mut tp, mut predicted, mut positives) = (0, 0, 0);
    for o in outcomes {
        tp += usize::from(o.label.decision && o.matched);
        predicted += usize::from(o.confidence.is_some());
        positives += usize::from(o.label.decision);
    }
    let (precision, recall) = (ratio(tp, predicted), ratio(tp, positives));
    let f1 = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
    Scores { precision, recall, f1, positives, predicted }
}

/// The buckets of confidence precision is reported by.
const BUCKETS: [(f32, f32); 3] = [(0.0, 0.6), (0.6, 0.75), (0.75, 1.01)];

/// How many messages had a decision predicted with a (highest) confidence in `[lo, hi)`, and
/// the precision of those predictions (NaN when there are none).
fn bucket(outcomes: &[&Outcome<'_>], (lo, hi): (f32, f32)) -> (usize, f64) {
    let bucket: Vec<_> = outcomes.iter().filter(|o| o.confidence.is_some_and(|c| c >= lo && c < hi)).collect();
    let tp = bucket.iter().filter(|o| o.label.decision && o.matched).count();
    (bucket.len(), ratio(tp, bucket.len()))
}

/// Prints one split's scores, per family, per language and per confidence bucket, and (when
/// `misses`) every miss and false positive: the held-out split shows aggregates only, so
/// nothing is written from its messages.
fn report(split: &str, outcomes: &[&Outcome<'_>], misses: bool) -> Scores {
    let s = scores(outcomes.iter().copied());
    let negatives = outcomes.len() - s.positives;
    let look_alikes = outcomes.iter().filter(|o| o.label.family == "look-alike").count();
    println!(
        "{split}: {} messages ({} decisions, {negatives} without, {look_alikes} of them look-alikes): precision {:.3} recall {:.3} F1 {:.3} ({} predicted)",
        outcomes.len(),
        s.positives,
        s.precision,
        s.recall,
        s.f1,
        s.predicted
    );
    let mut families: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for o in outcomes.iter().filter(|o| o.label.decision) {
        let f = families.entry(&o.label.family).or_default();
        f.0 += 1;
        f.1 += usize::from(o.matched);
    }
    for (family, (n, found)) in families {
        println!("  family {family:12} recall {found:3}/{n:3} = {:.2}", ratio(found, n));
    }
    let mut languages: BTreeMap<&str, Vec<&Outcome<'_>>> = BTreeMap::new();
    for o in outcomes {
        languages.entry(o.language).or_default().push(o);
    }
    for (lang, os) in languages {
        let l = scores(os.iter().copied());
        println!(
            "  language {lang}: {:4} messages, {:3} decisions: precision {:.2} recall {:.2}",
            os.len(),
            l.positives,
            l.precision,
            l.recall
        );
    }
    for (lo, hi) in BUCKETS {
        let (n, precision) = bucket(outcomes, (lo, hi));
        println!("  confidence [{lo:.2}, {:.2}): {n:3} predicted, precision {precision:.3}", hi.min(1.0));
    }
    let stated: usize = outcomes.iter().map(|o| o.label.alternatives.len()).sum();
    let found: usize = outcomes.iter().map(|o| o.alternatives_found).sum();
    let detected = outcomes.iter().filter(|o| o.label.decision && o.confidence.is_some()).count();
    let named = outcomes.iter().filter(|o| o.label.decision && o.matched).count();
    println!(
        "  fields: summary names the chosen thing in {named}/{detected} detected decisions; alternatives found {found}/{stated} stated"
    );
    for o in outcomes.iter().filter(|_| misses) {
        if (o.label.decision && !o.matched) || (!o.label.decision && o.confidence.is_some()) {
            let kind = if o.label.decision { "missed" } else { "false positive" };
            println!(
                "  {kind} ({}, {}): {} {} {:?}",
                o.label.family, o.language, o.label.file, o.label.uuid, o.summaries
            );
        }
    }
    s
}

#[test]
fn decision_extraction_on_development_and_held_out_messages() {
    let labels: Vec<Label> = serde_json::from_str(include_str!("../data/decision_labels.json")).expect("labels parse");
    let count =
        |split: &str, decision: bool| labels.iter().filter(|l| l.split == split && l.decision == decision).count();
    let decisions = count("test", true) + count("dev", true) + count("dev2", true);
    assert!(count("test", true) >= 30 && decisions >= 150, "too few labelled decisions");
    assert!(labels.len() - decisions >= 1200, "too few labelled negatives");
    // One session's messages are all on one side.
    let mut side: HashMap<String, &str> = HashMap::new();
    for l in &labels {
        let session = l.file.split("/subagents/").next().unwrap_or(&l.file).trim_end_matches(".jsonl").to_string();
        let before = *side.entry(session.clone()).or_insert(&l.split);
        assert_eq!(before, l.split, "{session} is on both sides");
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let outcomes = run(&labels, &root);
    let split = |s: &str| -> Vec<&Outcome<'_>> { outcomes.iter().filter(|o| o.label.split == s).collect() };
    let (first, moved, test) = (split("dev"), split("dev2"), split("test"));
    let dev: Vec<&Outcome<'_>> = first.iter().chain(&moved).copied().collect();
    let legacy: Vec<&Outcome<'_>> = outcomes.iter().filter(|o| o.label.family.starts_with("legacy")).collect();
    report("development, first part (rules written against it since 2026-11-22)", &first, true);
    report("development, second part (held out until 2026-11-25, then moved)", &moved, true);
    let d = scores(dev.iter().copied());
    println!("development, both parts: precision {:.3} recall {:.3} F1 {:.3}", d.precision, d.recall, d.f1);
    let t = report("test (held out, reported only)", &test, false);
    let l = scores(legacy.iter().copied());
    println!("first labelled set (part of development): precision {:.3} recall {:.3}", l.precision, l.recall);
    println!("issue floors on test: precision >= 0.90 (now {:.3}), recall >= 0.80 (now {:.3})", t.precision, t.recall);
    // The first set's floors, unchanged since it was labelled.
    assert!(l.precision >= 0.85 && l.recall >= 0.60, "first set: precision {:.3} recall {:.3}", l.precision, l.recall);
    // Development is what the rules answer to. On it, precision rises with confidence: the top
    // bucket at least as precise as the lowest (on test it does not: the README gives the buckets).
    if let ((1.., low), (1.., high)) = (bucket(&dev, BUCKETS[0]), bucket(&dev, BUCKETS[2])) {
        assert!(high >= low, "development: precision falls with confidence: {low:.3} (low) vs {high:.3} (high)");
    }
    // First part 0.926 / 0.721 (2026-11-24, unchanged since); second part 0.450 / 0.290 when it
    // was moved, 0.733 / 0.355 after the rules written from it (2026-11-25); both 0.896 / 0.637.
    let f = scores(first.iter().copied());
    assert!(f.precision >= 0.90 && f.recall >= 0.70, "development, first part: {:.3} / {:.3}", f.precision, f.recall);
    assert!(
        d.precision >= 0.85 && d.recall >= 0.60,
        "development: precision {:.3} recall {:.3}",
        d.precision,
        d.recall
    );
    // Held out: no worse than the rules measured on it before they were changed for the second
    // development part (precision 0.281, recall 0.281 on this half, 2026-11-25). The floors
    // (0.90 / 0.80) are not met: the line above prints the gap.
    assert!(t.precision >= 0.28 && t.recall >= 0.28, "test: precision {:.3} recall {:.3}", t.precision, t.recall);
}
