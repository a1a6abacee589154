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
//! The decision scorer (`src/derive/scorer.rs`, a logistic regression over hand-made features of
//! each candidate sentence) is fitted here, on both development parts, by Newton's method;
//! its threshold is the one with the highest F1 over five folds by session (each fold scored
//! by weights fitted on the others). One test refits and checks that the shipped weights are
//! that fit; the other scores development (fitted on, and out of fold), the rules alone, and the
//! held-out part. `CONVDEX_EVAL_DEVELOPMENT_ONLY=1` leaves the held-out part out (for work on
//! rules or features), `CONVDEX_EVAL_MISSES=1` lists the out-of-fold misses too.
//!
//! Each split's report carries a 95 % interval of its precision and recall over resamples of its
//! sessions (`interval`): how far the figures could move on other sessions like its own.
//!
//! Each labelled message is read among its session's messages as indexing makes them
//! (`derive::session::documents`), so the message before it is the one indexing would pass.
//!
//! Scored per message: a labelled decision message is a true positive when one of its extracted
//! decisions matches; any decision extracted from a message labelled without one is a false
//! positive, and so is a decision extracted from a decision message whose summary names the
//! wrong thing. Messages judged ambiguous when labelling were left out.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use convdex::extract::{
    CALIBRATION_FEATURES, Candidate, Extracted, FEATURES, MESSAGE_FEATURE_COUNT, MessageFeatures, MessageScorer,
    Reading, Scorer, TRUSTED_CONFIDENCE, Turn, calibration_features, decide, message_feature_names, message_features,
    settle,
};

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
    /// Left out when labelling (unsure): not scored.
    #[serde(default)]
    skip: bool,
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
    /// The rule behind each decision extracted.
    rules: Vec<&'static str>,
    /// The message model's probability, when it said the message decides something.
    probability: Option<f32>,
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
    let fresh = file.starts_with("fresh/");
    let path = if file.starts_with("agents/") || fresh { root.join(file) } else { root.join("transcripts").join(file) };
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let agent = |name: &str| {
        file.starts_with(&format!("agents/{name}/")) || (fresh && file.starts_with(&format!("fresh/agents/{name}/")))
    };
    let parsed = if agent("codex") {
        vec![convdex::ingest::codex::parse(&bytes)]
    } else if agent("gemini") {
        vec![convdex::ingest::gemini::parse_chat(&bytes)]
    } else if agent("aider") {
        convdex::ingest::aider::parse(&bytes).into_iter().map(|(_, p)| p).collect()
    } else {
        vec![convdex::ingest::claude::parse(&bytes)]
    };
    // The messages as indexing makes them (scrubbed; a message that only made tool calls reads
    // as what it did to which files), so that each message is read with the same neighbours.
    parsed
        .iter()
        .map(|p| {
            let file = convdex::derive::session::SessionFile { parsed: p, agent: None };
            let (docs, _) = convdex::derive::session::documents("eval", "", convdex::Agent::default(), &[file]);
            docs.into_iter()
                .filter_map(|d| match d.body {
                    convdex::DocBody::Message(mf) => Some((mf.message_uuid, mf.role, d.content)),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// One labelled message, read once: its candidate sentences, the decision a reply rule makes of
/// it, its message-level features (with the shipped sentence scorer), and the texts
/// [`convdex::extract::decide`] names a decision from.
struct Read<'a> {
    label: &'a Label,
    language: &'static str,
    candidates: Vec<Candidate>,
    reply: Option<Extracted>,
    reading: Reading,
    features: MessageFeatures,
    role: convdex::Role,
    text: String,
    previous: Option<(convdex::Role, String)>,
}

fn turn(m: &(String, convdex::Role, String)) -> Turn<'_> {
    Turn { role: m.1, text: &m.2 }
}

fn split<'a, 'b>(outcomes: &'a [Outcome<'b>], s: &str) -> Vec<&'a Outcome<'b>> {
    outcomes.iter().filter(|o| o.label.split == s).collect()
}

fn read<'a>(labels: &'a [Label], root: &Path) -> Vec<Read<'a>> {
    let mut by_file: BTreeMap<&str, Vec<&Label>> = BTreeMap::new();
    for l in labels {
        by_file.entry(&l.file).or_default().push(l);
    }
    let sentence = Scorer::default();
    let mut out = Vec::new();
    for (file, labels) in by_file {
        let mut found = HashMap::new();
        for messages in sessions(root, file) {
            for (i, m) in messages.iter().enumerate() {
                let previous = i.checked_sub(1).map(|j| turn(&messages[j]));
                let next = messages.get(i + 1).map(turn);
                let reading = Reading::of(turn(m), previous);
                let features = message_features(&reading.in_context(turn(m), previous, next, i, &sentence));
                let prev = previous.map(|p| (p.role, p.text.to_string()));
                found.insert(m.0.clone(), (language(&m.2), reading, features, m.1, m.2.clone(), prev));
            }
        }
        for l in labels {
            let (language, reading, features, role, text, previous) =
                found.remove(&l.uuid).unwrap_or_else(|| panic!("{file}: no message {}", l.uuid));
            out.push(Read {
                label: l,
                language,
                candidates: reading.candidates.clone(),
                reply: reading.reply.clone(),
                reading,
                features,
                role,
                text,
                previous,
            });
        }
    }
    out
}

/// A decision names the chosen thing: its summary holds every keyword of one group.
fn names(label: &Label, d: &Extracted) -> bool {
    let s = d.summary.to_lowercase();
    label.keywords.iter().any(|g| g.iter().all(|k| s.contains(&k.to_lowercase())))
}

/// The outcome of a message under a decider: the decisions it keeps (each with its confidence),
/// or, when none of them was matched by a rule, the reply rules' decision if there is one.
fn outcome<'a>(r: &Read<'a>, keep: impl Fn(&Candidate) -> Option<f32>) -> Outcome<'a> {
    let kept: Vec<Extracted> = r
        .candidates
        .iter()
        .filter_map(|c| keep(c).map(|confidence| Extracted { confidence, ..c.decision.clone() }))
        .collect();
    outcome_of(r, settle(kept, || r.reply.clone()))
}

/// The outcome of a message given the decisions extracted from it.
fn outcome_of<'a>(r: &Read<'a>, ds: Vec<Extracted>) -> Outcome<'a> {
    let l = r.label;
    let alternatives_found = l
        .alternatives
        .iter()
        .filter(|a| ds.iter().flat_map(|d| &d.alternatives).any(|x| x.to_lowercase().contains(&a.to_lowercase())))
        .count();
    Outcome {
        label: l,
        language: r.language,
        confidence: ds.iter().map(|d| d.confidence).reduce(f32::max),
        matched: ds.iter().any(|d| names(l, d)),
        alternatives_found,
        summaries: ds.iter().map(|d| d.summary.clone()).collect(),
        rules: ds.iter().map(|d| d.rule).collect(),
        probability: None,
    }
}

/// The rules alone (before the scorer): every sentence a rule matched.
fn rules_only(c: &Candidate) -> Option<f32> {
    (c.decision.confidence > 0.0).then_some(c.decision.confidence)
}

fn scored(scorer: &Scorer) -> impl Fn(&Candidate) -> Option<f32> + '_ {
    move |c| Some(scorer.probability(&c.features)).filter(|p| *p >= scorer.threshold)
}

/// The outcome of a message under the message model: when it says the message decides
/// something, what [`decide`] names.
fn by_message<'a>(r: &Read<'a>, model: &MessageScorer, sentence: &Scorer) -> Outcome<'a> {
    let p = model.probability(&r.features);
    let ds = if p >= model.threshold {
        let previous = r.previous.as_ref().map(|(role, text)| Turn { role: *role, text });
        decide(Turn { role: r.role, text: &r.text }, previous, &r.reading, sentence, p)
    } else {
        Vec::new()
    };
    let predicted = !ds.is_empty();
    Outcome { probability: predicted.then_some(p), ..outcome_of(r, ds) }
}

/// The confidence calibration fitted on out-of-fold outcomes: each message a decision was
/// extracted from is a sample (its probability and how its first decision was named), right
/// when it is a labelled decision whose summary names it.
fn fit_calibration(oof: &[Outcome<'_>]) -> [f32; CALIBRATION_FEATURES] {
    let samples: Vec<([f64; CALIBRATION_FEATURES], f64)> = oof
        .iter()
        .filter_map(|o| {
            let p = o.probability?;
            let x = calibration_features(p, o.rules.first().copied().unwrap_or("message")).map(f64::from);
            Some((x, f64::from(u8::from(o.label.decision && o.matched))))
        })
        .collect();
    newton(&samples, MESSAGE_RIDGE).map(|x| x as f32)
}

/// The lowest confidence (a step of 0.01 from 0.5) at or above which at least 10 out-of-fold
/// decisions were right at least 90 % of the time under `calibration`; 1.0 when none.
fn trusted_confidence(oof: &[Outcome<'_>], calibration: &[f32; CALIBRATION_FEATURES]) -> f32 {
    let confidences: Vec<(f32, bool)> = oof
        .iter()
        .filter_map(|o| {
            let x = calibration_features(o.probability?, o.rules.first().copied().unwrap_or("message"));
            let z: f32 = calibration.iter().zip(x).map(|(w, v)| w * v).sum();
            Some((1.0 / (1.0 + (-z).exp()), o.label.decision && o.matched))
        })
        .collect();
    (50..100)
        .map(|k| k as f32 / 100.0)
        .find(|t| {
            let above: Vec<bool> = confidences.iter().filter(|(c, _)| c >= t).map(|(_, ok)| *ok).collect();
            above.len() >= 10 && above.iter().filter(|ok| **ok).count() as f64 >= 0.9 * above.len() as f64
        })
        .unwrap_or(1.0)
}

/// The group a label's cross-validation fold is drawn by: the owner for the fresh set (so a
/// fold holds out whole people, as the held-out part does), else the session.
fn group_of(label: &Label) -> String {
    if label.split.starts_with("fresh") { owner_of(&label.file) } else { session_of(&label.file) }
}

/// Fold of a group (FNV-1a of its name).
fn group_fold(label: &Label, folds: u64) -> u64 {
    group_of(label).bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        % folds
}

/// L2 strength of the message model's fit.
const MESSAGE_RIDGE: f64 = 1.0;

/// The message model fitted on `reads`: labelled decision messages are positives.
fn fit_message(reads: &[&Read<'_>]) -> MessageFeatures {
    let samples: Vec<([f64; MESSAGE_FEATURE_COUNT], f64)> =
        reads.iter().map(|r| (r.features.map(f64::from), f64::from(u8::from(r.label.decision)))).collect();
    newton(&samples, MESSAGE_RIDGE).map(|x| x as f32)
}

/// The message model the development parts give: weights fitted on all of them, the threshold
/// with the highest out-of-fold F1 (folds by group; ties: the higher threshold), and the fold
/// fits.
fn message_model_on_development(dev: &[&Read<'_>], sentence: &Scorer) -> (MessageScorer, Vec<MessageFeatures>) {
    let folds: Vec<MessageFeatures> = (0..FOLDS)
        .map(|k| fit_message(&dev.iter().filter(|r| group_fold(r.label, FOLDS) != k).copied().collect::<Vec<_>>()))
        .collect();
    let mut best = (f64::MIN, 0.5_f32);
    for step in 2..38 {
        let t = step as f32 * 0.025;
        let f1 = scores(&message_out_of_fold(dev, &folds, t, sentence)).f1;
        if f1 >= best.0 {
            best = (f1, t);
        }
    }
    (MessageScorer { weights: fit_message(dev), threshold: best.1 }, folds)
}

/// Out-of-fold outcomes of the development parts under the message model at `threshold`.
fn message_out_of_fold<'a>(
    dev: &[&Read<'a>],
    folds: &[MessageFeatures],
    threshold: f32,
    sentence: &Scorer,
) -> Vec<Outcome<'a>> {
    dev.iter()
        .map(|r| {
            let model = MessageScorer { weights: folds[group_fold(r.label, FOLDS) as usize], threshold };
            by_message(r, &model, sentence)
        })
        .collect()
}

/// The session a labelled file belongs to (sub-agent runs with their parent).
fn session_of(file: &str) -> String {
    file.split("/subagents/").next().unwrap_or(file).trim_end_matches(".jsonl").to_string()
}

/// Fold of a session for cross-validation (FNV-1a of its path).
fn fold(file: &str, folds: u64) -> u64 {
    session_of(file).bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        % folds
}

/// L2 strength of the fit (the constant term is not penalised).
const RIDGE: f64 = 0.1;

/// Logistic regression by Newton's method: candidate sentences of decision messages whose
/// decision names the chosen thing are positives, every other candidate a negative.
fn fit(reads: &[&Read<'_>]) -> [f32; FEATURES.len()] {
    const N: usize = FEATURES.len();
    let samples: Vec<([f64; N], f64)> = reads
        .iter()
        .flat_map(|r| {
            r.candidates.iter().map(|c| {
                let y = f64::from(u8::from(r.label.decision && names(r.label, &c.decision)));
                (c.features.map(f64::from), y)
            })
        })
        .collect();
    newton(&samples, RIDGE).map(|x| x as f32)
}

/// L2-penalised logistic regression by Newton's method (the constant term, the first feature,
/// is not penalised). Deterministic: the same samples give the same weights.
fn newton<const N: usize>(samples: &[([f64; N], f64)], ridge: f64) -> [f64; N] {
    // The features that are not zero, per sample: most features are flags, and most are off.
    let sparse: Vec<Vec<(usize, f64)>> = samples
        .iter()
        .map(|(x, _)| x.iter().enumerate().filter(|(_, v)| **v != 0.0).map(|(i, v)| (i, *v)).collect())
        .collect();
    let mut w = [0.0_f64; N];
    for _ in 0..50 {
        let mut grad = [0.0_f64; N];
        let mut hess = Box::new([[0.0_f64; N]; N]);
        for (nz, (_, y)) in sparse.iter().zip(samples) {
            let z: f64 = nz.iter().map(|(i, v)| w[*i] * v).sum();
            let p = 1.0 / (1.0 + (-z).exp());
            for &(i, vi) in nz {
                grad[i] += (p - y) * vi;
                for &(j, vj) in nz {
                    hess[i][j] += p * (1.0 - p) * vi * vj;
                }
            }
        }
        for i in 1..N {
            grad[i] += ridge * w[i];
            hess[i][i] += ridge;
        }
        for (i, row) in hess.iter_mut().enumerate() {
            row[i] += 1e-6;
        }
        let step = solve(*hess, grad);
        let size: f64 = step.iter().map(|s| s.abs()).fold(0.0, f64::max);
        for i in 0..N {
            w[i] -= step[i];
        }
        if size < 1e-9 {
            break;
        }
    }
    w
}

/// Solves `a x = b` (Gaussian elimination with partial pivoting; `a` is positive definite).
fn solve<const N: usize>(mut a: [[f64; N]; N], mut b: [f64; N]) -> [f64; N] {
    for col in 0..N {
        let pivot = (col..N).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs())).unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        let top = a[col];
        for row in col + 1..N {
            let f = a[row][col] / top[col];
            for (k, v) in a[row].iter_mut().enumerate().skip(col) {
                *v -= f * top[k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; N];
    for row in (0..N).rev() {
        let s: f64 = (row + 1..N).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - s) / a[row][row];
    }
    x
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

fn scores<'a, 'b: 'a>(outcomes: impl IntoIterator<Item = &'a Outcome<'b>>) -> Scores {
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

/// How far a split's precision and recall could move on other sessions like its own: the
/// 2.5th and 97.5th percentiles of each over 2,000 resamples of its sessions with replacement
/// (a session's messages stay together, as they do in the split), from a fixed seed.
fn interval(outcomes: &[&Outcome<'_>]) -> ((f64, f64), (f64, f64)) {
    let mut by_session: BTreeMap<String, Vec<&Outcome<'_>>> = BTreeMap::new();
    for o in outcomes {
        by_session.entry(session_of(&o.label.file)).or_default().push(o);
    }
    let sessions: Vec<Vec<&Outcome<'_>>> = by_session.into_values().collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        // SplitMix64: the same resamples on every run.
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (mut precision, mut recall) = (Vec::new(), Vec::new());
    for _ in 0..2000 {
        let sample =
            (0..sessions.len()).flat_map(|_| sessions[(next() % sessions.len() as u64) as usize].iter().copied());
        let s = scores(sample);
        if !s.precision.is_nan() {
            precision.push(s.precision);
        }
        if !s.recall.is_nan() {
            recall.push(s.recall);
        }
    }
    let range = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
        (at(0.025), at(0.975))
    };
    (range(precision), range(recall))
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
    let ((p_lo, p_hi), (r_lo, r_hi)) = interval(outcomes);
    println!(
        "  95% interval over its sessions (resampled): precision {p_lo:.2}–{p_hi:.2}, recall {r_lo:.2}–{r_hi:.2} ({} sessions)",
        outcomes.iter().map(|o| session_of(&o.label.file)).collect::<std::collections::HashSet<_>>().len()
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

/// Every label: the first set (`decision_labels.json`: `dev`, `dev2`, `test`) and the set
/// labelled on `../shared/data/fresh/` (`decision_labels_fresh.json`: `fresh-dev`,
/// `fresh-test`, split by owner before any rule changed; see `decision_labelling.md`). Labels
/// left out when labelling (`skip`) are not scored.
fn labels() -> Vec<Label> {
    let mut all: Vec<Label> = serde_json::from_str(include_str!("../data/decision_labels.json")).expect("labels parse");
    let fresh: Vec<Label> =
        serde_json::from_str(include_str!("../data/decision_labels_fresh.json")).expect("fresh labels parse");
    all.extend(fresh);
    all.retain(|l| !l.skip);
    all
}

/// Held out: never read while rules, features or weights change.
fn held_out(split: &str) -> bool {
    split == "test" || split == "fresh-test"
}

fn root() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
}

/// Folds of the development part's cross-validation (by session).
const FOLDS: u64 = 5;

/// Out-of-fold outcomes of the development part at `threshold`: each message scored by weights
/// fitted on the other folds' sessions.
fn out_of_fold<'a>(dev: &[&Read<'a>], fitted: &[[f32; FEATURES.len()]], threshold: f32) -> Vec<Outcome<'a>> {
    dev.iter()
        .map(|r| {
            let scorer = Scorer { weights: fitted[fold(&r.label.file, FOLDS) as usize], threshold };
            outcome(r, scored(&scorer))
        })
        .collect()
}

/// The scorer the development part gives: weights fitted on all of it, the threshold with the
/// highest out-of-fold F1 (ties: the higher threshold). Also returns the fold fits.
fn fitted_on_development(dev: &[&Read<'_>]) -> (Scorer, Vec<[f32; FEATURES.len()]>) {
    let folds: Vec<_> = (0..FOLDS)
        .map(|k| fit(&dev.iter().filter(|r| fold(&r.label.file, FOLDS) != k).copied().collect::<Vec<_>>()))
        .collect();
    let mut best = (f64::MIN, 0.5_f32);
    for step in 1..40 {
        let t = step as f32 * 0.025;
        let f1 = scores(&out_of_fold(dev, &folds, t)).f1;
        if f1 >= best.0 {
            best = (f1, t);
        }
    }
    (Scorer { weights: fit(dev), threshold: best.1 }, folds)
}

#[test]
fn the_scorer_is_fitted_on_development_only() {
    let labels = labels();
    let reads = read(&labels, &root());
    let dev: Vec<&Read<'_>> = reads.iter().filter(|r| !held_out(&r.label.split)).collect();
    let (refit, _) = fitted_on_development(&dev);
    println!("const WEIGHTS: Features = [");
    for (name, w) in FEATURES.iter().zip(refit.weights) {
        println!("    {w:.4}, // {name}");
    }
    println!("];\nconst THRESHOLD: f32 = {:.3};", refit.threshold);
    let shipped = Scorer::default();
    let drift = shipped.weights.iter().zip(refit.weights).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(
        drift < 1e-3,
        "the shipped weights are not the development fit (largest difference {drift}): paste the table above into src/derive/scorer.rs"
    );
    assert!(
        (shipped.threshold - refit.threshold).abs() < 1e-6,
        "threshold {} vs {}",
        shipped.threshold,
        refit.threshold
    );
}

#[test]
fn the_message_model_is_fitted_on_development_only() {
    let labels = labels();
    let reads = read(&labels, &root());
    let dev: Vec<&Read<'_>> = reads.iter().filter(|r| !held_out(&r.label.split)).collect();
    let (refit, _) = message_model_on_development(&dev, &Scorer::default());
    println!("pub const WEIGHTS: MessageFeatures = [");
    for (name, w) in message_feature_names().iter().zip(refit.weights) {
        println!("    {w:.4}, // {name}");
    }
    println!("];\npub const THRESHOLD: f32 = {:.3};", refit.threshold);
    let (_, folds) = message_model_on_development(&dev, &Scorer::default());
    let oof = message_out_of_fold(&dev, &folds, refit.threshold, &Scorer::default());
    let calibration = fit_calibration(&oof);
    let trusted = trusted_confidence(&oof, &calibration);
    println!(
        "pub const CALIBRATION: [f32; CALIBRATION_FEATURES] = [{}];\npub const TRUSTED_CONFIDENCE: f32 = {trusted:.2};",
        calibration.iter().map(|w| format!("{w:.4}")).collect::<Vec<_>>().join(", ")
    );
    let drift = convdex::extract::CALIBRATION.iter().zip(calibration).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(drift < 1e-3, "the shipped calibration is not the development fit: paste it into src/derive/message.rs");
    assert!((TRUSTED_CONFIDENCE - trusted).abs() < 1e-6, "trusted confidence {TRUSTED_CONFIDENCE} vs {trusted}");
    let shipped = MessageScorer::default();
    let drift = shipped.weights.iter().zip(refit.weights).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(
        drift < 1e-3,
        "the shipped message weights are not the development fit (largest difference {drift}): paste the table above into src/derive/message.rs"
    );
    assert!(
        (shipped.threshold - refit.threshold).abs() < 1e-6,
        "threshold {} vs {}",
        shipped.threshold,
        refit.threshold
    );
}

#[test]
fn decision_extraction_on_development_and_held_out_messages() {
    let labels = labels();
    let count =
        |split: &str, decision: bool| labels.iter().filter(|l| l.split == split && l.decision == decision).count();
    let decisions = count("test", true) + count("dev", true) + count("dev2", true);
    assert!(count("test", true) >= 30 && decisions >= 150, "too few labelled decisions");
    assert!(count("fresh-dev", true) >= 150 && count("fresh-test", true) >= 150, "too few fresh decisions");
    assert!(labels.len() - decisions >= 1200, "too few labelled negatives");
    // One session's messages are all on one side, and one owner's sessions of the fresh set.
    let mut side: HashMap<String, &str> = HashMap::new();
    for l in &labels {
        let key = if l.split.starts_with("fresh") { owner_of(&l.file) } else { session_of(&l.file) };
        let before = *side.entry(key.clone()).or_insert(&l.split);
        assert_eq!(before, l.split, "{key} is on both sides");
    }
    let reads = read(&labels, &root());
    let scorer = Scorer::default();
    let model = MessageScorer::default();
    // What is reported: the message model, naming each decision with `decide` (what indexing
    // stores). Beside it, for comparison, the sentence scorer alone (before 2026-11-27) and
    // the rules alone.
    let outcomes: Vec<Outcome<'_>> = reads.iter().map(|r| by_message(r, &model, &scorer)).collect();
    let sentences: Vec<Outcome<'_>> = reads.iter().map(|r| outcome(r, scored(&scorer))).collect();
    let rules: Vec<Outcome<'_>> = reads.iter().map(|r| outcome(r, rules_only)).collect();
    let part = |s: &str| split(&outcomes, s);
    let (first, moved, fresh_dev) = (part("dev"), part("dev2"), part("fresh-dev"));
    let dev: Vec<&Outcome<'_>> = first.iter().chain(&moved).chain(&fresh_dev).copied().collect();
    let legacy: Vec<&Outcome<'_>> = outcomes.iter().filter(|o| o.label.family.starts_with("legacy")).collect();
    let dev_reads: Vec<&Read<'_>> = reads.iter().filter(|r| !held_out(&r.label.split)).collect();
    let (_, folds) = message_model_on_development(&dev_reads, &scorer);
    let oof = message_out_of_fold(&dev_reads, &folds, model.threshold, &scorer);
    let misses = std::env::var_os("CONVDEX_EVAL_MISSES").is_some();
    report(
        "old development, first part (rules written against it since 2026-11-22; scorer fitted on it)",
        &first,
        misses,
    );
    report("old development, second part (held out until 2026-11-25; scorer fitted on it)", &moved, misses);
    report("new development (fresh/, four owners; labelled 2026-11-27; scorer fitted on it)", &fresh_dev, misses);
    let d = scores(dev.iter().copied());
    println!("development, all parts: precision {:.3} recall {:.3} F1 {:.3}", d.precision, d.recall, d.f1);
    let oof_outcomes: Vec<&Outcome<'_>> = oof.iter().collect();
    let o = report("development, all parts, out of fold", &oof_outcomes, false);
    let mut by_rule: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for o in oof_outcomes.iter().filter(|o| o.confidence.is_some()) {
        let e = by_rule.entry(o.rules.first().copied().unwrap_or("?")).or_default();
        e.0 += 1;
        e.1 += usize::from(o.label.decision && o.matched);
    }
    for (rule, (n, tp)) in &by_rule {
        println!("  out of fold, named by {rule}: {n} predicted, precision {:.3}", ratio(*tp, *n));
    }
    for t in [0.5_f32, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95] {
        let (n, p) = bucket(&oof_outcomes, (t, 1.01));
        println!("  out of fold, confidence >= {t:.2}: {n} predicted, precision {p:.3}");
    }
    // `CONVDEX_EVAL_DEVELOPMENT_ONLY=1` prints development alone: for work on the rules or
    // features, so that neither held-out part is read while they change.
    let development_only = std::env::var_os("CONVDEX_EVAL_DEVELOPMENT_ONLY").is_some();
    for name in ["dev", "dev2", "fresh-dev", "test", "fresh-test"] {
        if development_only && held_out(name) {
            continue;
        }
        let r = scores(split(&rules, name));
        let s = scores(split(&sentences, name));
        println!(
            "{name}: rules alone precision {:.3} recall {:.3}; sentence scorer alone {:.3} / {:.3}",
            r.precision, r.recall, s.precision, s.recall
        );
    }
    // Development, out of fold (folds by owner for the fresh set, 2026-11-27): precision 0.525,
    // recall 0.541, F1 0.533; calibrated: precision rises with confidence (0.38, 0.70, 0.80
    // in the three buckets).
    assert!(o.f1 >= 0.50, "development, out of fold: F1 {:.3}", o.f1);
    if let ((1.., low), (1.., high)) = (bucket(&oof_outcomes, BUCKETS[0]), bucket(&oof_outcomes, BUCKETS[2])) {
        assert!(high >= low, "out of fold: precision falls with confidence: {low:.3} (low) vs {high:.3} (high)");
    }
    if development_only {
        return;
    }
    let t = report("old held-out (test; reported only)", &part("test"), false);
    let n = report("new held-out (fresh-test, four other owners; reported only)", &part("fresh-test"), false);
    let l = scores(legacy.iter().copied());
    println!("first labelled set (part of development): precision {:.3} recall {:.3}", l.precision, l.recall);
    println!(
        "issue floors on the new held-out part: precision >= 0.85 (now {:.3}), recall >= 0.60 (now {:.3})",
        n.precision, n.recall
    );
    // The first set (development): 0.90 / 0.69 under the sentence scorer, 0.769 / 0.833 under
    // the message model (2026-11-27), which trades its precision for recall on every part.
    assert!(l.precision >= 0.75 && l.recall >= 0.80, "first set: precision {:.3} recall {:.3}", l.precision, l.recall);
    let _ = d;
    // Held out, scored once after the change was final (2026-11-27 18:06 UTC): the new part
    // 0.247 / 0.202 (F1 0.222), the old part 0.300 / 0.469 (F1 0.366); the extractor that had
    // landed before scored 0.163 / 0.081 and 0.360 / 0.281 on them. The floors (0.85 /
    // 0.60) are not met; these guard against a regression.
    assert!(n.precision >= 0.24 && n.recall >= 0.20, "new held-out: {:.3} / {:.3}", n.precision, n.recall);
    assert!(t.precision >= 0.29 && t.recall >= 0.46, "old held-out: {:.3} / {:.3}", t.precision, t.recall);
}

/// The owner of a file of the fresh set (`fresh/transcripts/<owner>/…`, `fresh/agents/<agent>/<owner>/…`).
fn owner_of(file: &str) -> String {
    let parts: Vec<&str> = file.split('/').collect();
    match parts.get(1) {
        Some(&"agents") => parts.get(3),
        _ => parts.get(2),
    }
    .map_or_else(String::new, |s| s.to_string())
}
