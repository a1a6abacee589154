//! Ranking (pure): one order over the candidates of one collection or of many, with a score
//! that means the same in every collection and does not depend on how many hits were asked
//! for. Table-tested below; the candidates come from [`crate::Collection`], the planner that
//! picks the vector side's route is [`super::plan`].
//!
//! Each collection contributes a [`Pool`]: its best [`POOL_DEPTH`] documents by cosine and by
//! BM25 (or `limit` of each when more are asked for), every one scored on both signals, with a
//! sample of how similar its documents are to the query at all ([`Background`]) and the BM25
//! a document matching every query term once would get (the lexical reference). Then:
//!
//! 1. **Calibrate.** The semantic signal is the cosine's distance above the background of all
//!    pools together, in standard deviations (`z`); the lexical signal is BM25 over its
//!    collection's reference (the share of the query matched; a hit matching the quoted
//!    phrases and identifiers the query requires has at least their share, however long it
//!    is). Both are absolute: a flat list
//!    of weak word matches stays weak, a confident cosine stays confident, whatever else is in
//!    the pool.
//! 2. **Fuse** ([`Fusion`]): by default `z + lexical_weight · share`.
//! 3. **Context** ([`Context`]): a hit is lifted by the best score in its session and the
//!    better of its two neighbouring messages, measured above the background.
//! 4. **Recency** (optional, [`Recency`]).
//! 5. **Fold** identical content of one session into its first hit.
//! 6. **Close turns** ([`Ranking::closing`]): within each session, the messages that close
//!    a turn (the agent's last words, or the person's where they overruled them) move up
//!    among its messages, in the places those held.
//!
//! Semantic and lexical modes rank by their own calibrated signal. The readable
//! [`Hit::relevance`](crate::Hit::relevance) is a logistic, fitted for each model, of the
//! signals before recency ([`relevance`], [`Curves`]).

use std::collections::HashMap;

use crate::doc::DecisionStatus;
use crate::lexical::tokenize::LexicalScale;
use crate::search::fields::RankFields;
use crate::search::mode::SearchMode;
use crate::search::ranking::{Context, Fusion, Ranking, Recency, Signals};
use crate::search::tuned::{Chosen, Curves, relevance, typical_background};

/// How many documents each side (semantic, lexical) of each collection contributes to the
/// pool, whatever the `limit` (unless `limit` is larger): the first `k` hits are the same for
/// every `limit` from `k` up to this.
pub const POOL_DEPTH: usize = 100;

/// How many vectors of each collection the background sample holds.
pub(crate) const BACKGROUND_SAMPLE: usize = 256;

/// How similar a collection's documents are to the query at all: moments of the query's
/// cosine over a fixed sample, and how many vectors the sample stands for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Background {
    n: f64,
    sum: f64,
    sum_sq: f64,
    weight: f64,
}

impl Background {
    pub(crate) fn add(&mut self, cosine: f32) {
        let c = f64::from(cosine);
        self.n += 1.0;
        self.sum += c;
        self.sum_sq += c * c;
    }

    /// A background known only by its mean and standard deviation, standing for `weight`
    /// vectors (a model's typical one, [`Ranking::background_prior`]).
    fn typical(mean: f32, sd: f32, weight: f32) -> Background {
        let (m, s) = (f64::from(mean), f64::from(sd));
        Background { n: 1.0, sum: m, sum_sq: s * s + m * m, weight: f64::from(weight) }
    }

    pub(crate) fn represents(&mut self, vectors: usize) {
        self.weight = vectors as f64;
    }

    /// Mean and standard deviation of this background alone; `None` without any sample.
    pub(crate) fn moments(&self) -> Option<(f32, f32)> {
        Self::mixture(std::slice::from_ref(self))
    }

    /// Mean and standard deviation of the mixture of several backgrounds, each weighted by the
    /// vectors it stands for; `None` without any sample.
    fn mixture(all: &[Background]) -> Option<(f32, f32)> {
        let total: f64 = all.iter().filter(|b| b.n > 0.0).map(|b| b.weight.max(1.0)).sum();
        if total == 0.0 {
            return None;
        }
        let (mut mean, mut second) = (0.0, 0.0);
        for b in all.iter().filter(|b| b.n > 0.0) {
            let w = b.weight.max(1.0) / total;
            mean += w * b.sum / b.n;
            second += w * b.sum_sq / b.n;
        }
        let sd = (second - mean * mean).max(0.0).sqrt();
        // A degenerate sample (one vector, identical vectors) must not divide by zero.
        Some((mean as f32, (sd as f32).max(0.02)))
    }
}

/// One candidate document of a pool, its signals filled by the collection (raw cosine for
/// every candidate when semantic search ran; BM25 where the lexical index matched). The
/// ranking reads its [`RankFields`]; the collection reads the full document of the hits
/// shown only.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// The document's internal id in its collection.
    pub(crate) id: u64,
    pub(crate) fields: RankFields,
    pub(crate) chunk: u32,
    pub(crate) signals: Signals,
}

/// One collection's candidates and what calibrates them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pool {
    pub(crate) candidates: Vec<Candidate>,
    /// The model whose cosines these are: pools of one model share a background, a pool of
    /// another (a collection not yet migrated) is calibrated against its own model's.
    pub(crate) model: String,
    pub(crate) background: Background,
    /// How the query's BM25 scores calibrate (zero when lexical search did not run).
    pub(crate) lexical: LexicalScale,
    /// The share of the collection's documents that the part of the filter locating the answer
    /// (its files, directory and sessions) let through; `None` when the filter has no such part
    /// (the relevance reads how much it narrowed what a hit was chosen from).
    pub(crate) admitted: Option<f64>,
}

/// A ranked candidate: which pool it came from, the candidate, its final score, its relevance
/// (read with its pool's model's curves), how many identical messages of its session were
/// folded into it.
#[derive(Debug, Clone)]
pub(crate) struct Ranked {
    pub(crate) pool: usize,
    pub(crate) candidate: Candidate,
    pub(crate) score: f32,
    pub(crate) relevance: u8,
    pub(crate) folded: usize,
}

/// Ranks the candidates of all pools as one list, best first, identical content of one
/// session folded (see the module documentation).
pub(crate) fn rank(pools: Vec<Pool>, mode: SearchMode, ranking: &Ranking, asks_decision: bool) -> Vec<Ranked> {
    let mut by_model: HashMap<&str, Vec<Background>> = HashMap::new();
    for p in &pools {
        by_model.entry(p.model.as_str()).or_default().push(p.background);
    }
    // Each model's typical background weighs beside its collections' samples
    // (`Ranking::background_prior`), when a pool sampled one at all.
    for (model, backgrounds) in by_model.iter_mut() {
        if let Some((mean, sd)) = typical_background(model)
            && ranking.background_prior > 0.0
            && backgrounds.iter().any(|b| b.n > 0.0)
        {
            backgrounds.push(Background::typical(mean, sd, ranking.background_prior));
        }
    }
    // How many vectors each pool's hits were chosen from: the sampled collections of its model,
    // and of them the share of documents the filter's locating part let through, as vectors
    // (each collection's share times its vectors; the relevance reads both; 1,000, where the
    // size term is 0, when nothing was sampled).
    let mut searched: HashMap<&str, Chosen> = HashMap::new();
    for p in pools.iter().filter(|p| p.background.n > 0.0) {
        let vectors = p.background.weight.max(1.0);
        let chosen = searched.entry(p.model.as_str()).or_insert(Chosen { vectors: 0.0, admitted: 0.0 });
        chosen.vectors += vectors;
        chosen.admitted += vectors * p.admitted.map_or(1.0, |share| share.clamp(0.0, 1.0));
    }
    let vectors: Vec<Chosen> =
        pools.iter().map(|p| searched.get(p.model.as_str()).copied().unwrap_or(Chosen::all(1000.0))).collect();
    let calibration: HashMap<String, (f32, f32)> =
        by_model.into_iter().map(|(m, b)| (m.to_string(), Background::mixture(&b).unwrap_or((0.0, 1.0)))).collect();
    let curves: Vec<Curves> = pools.iter().map(|p| Curves::for_model(&p.model)).collect();
    let mut all: Vec<(usize, Candidate)> = Vec::new();
    for (i, pool) in pools.into_iter().enumerate() {
        let (mean, sd) = calibration[&pool.model];
        let scale = pool.lexical;
        for mut c in pool.candidates {
            c.signals.semantic_z = c.signals.semantic.map(|cos| (cos - mean) / sd);
            // A hit matched every phrase and identifier the query requires: at least their
            // share, however long the document (BM25's length normalisation would otherwise
            // make an exact identifier in a long message look like a weak match).
            c.signals.lexical_share = match c.signals.lexical {
                Some(bm25) if scale.reference > 0.0 => Some(bm25.max(scale.required) / scale.reference),
                _ => None,
            };
            all.push((i, c));
        }
    }
    let z = |c: &Candidate| c.signals.semantic_z.unwrap_or(0.0);
    let share = |c: &Candidate| c.signals.lexical_share.unwrap_or(0.0);
    let (mut scores, floor): (Vec<f32>, f32) = match mode {
        SearchMode::Semantic => (all.iter().map(|(_, c)| z(c)).collect(), 0.0),
        SearchMode::Lexical => (all.iter().map(|(_, c)| share(c)).collect(), 0.0),
        SearchMode::Hybrid => match ranking.fusion {
            Fusion::Calibrated { lexical_weight } => {
                (all.iter().map(|(_, c)| z(c) + lexical_weight * share(c)).collect(), 0.0)
            }
            Fusion::Blend { semantic_weight } => {
                let cz = standardise(&all.iter().map(|(_, c)| z(c)).collect::<Vec<_>>());
                let lz = standardise(&all.iter().map(|(_, c)| share(c)).collect::<Vec<_>>());
                let s: Vec<f32> =
                    cz.iter().zip(&lz).map(|(c, l)| semantic_weight * c + (1.0 - semantic_weight) * l).collect();
                let floor = s.iter().copied().reduce(f32::min).unwrap_or(0.0);
                (s, floor)
            }
            Fusion::Rrf { k } => {
                let sem = ranks(&all, |c| c.signals.semantic_z);
                let lex = ranks(&all, |c| c.signals.lexical_share);
                let s: Vec<f32> = (0..all.len())
                    .map(|i| {
                        sem[i].map_or(0.0, |r| 1.0 / (k + r as f32)) + lex[i].map_or(0.0, |r| 1.0 / (k + r as f32))
                    })
                    .collect();
                let floor = s.iter().copied().reduce(f32::min).unwrap_or(0.0);
                (s, floor)
            }
        },
    };
    if mode == SearchMode::Hybrid && ranking.context != Context::NONE {
        let lifts = context_lifts(&all, &scores, floor, ranking.context);
        for ((s, lift), (_, c)) in scores.iter_mut().zip(lifts).zip(all.iter_mut()) {
            *s += lift;
            c.signals.context = lift;
        }
    }
    // A message that ends by asking restates the question more often than it answers it.
    if mode == SearchMode::Hybrid && ranking.question != 0.0 {
        for (s, (_, c)) in scores.iter_mut().zip(all.iter_mut()) {
            if c.fields.asks {
                *s -= ranking.question;
                c.signals.asked = -ranking.question;
            }
        }
    }
    // The reply to a message that asked (both candidates) is where its answer most often is.
    if mode == SearchMode::Hybrid && ranking.answer != 0.0 {
        let askers: std::collections::HashSet<(usize, u64, u64)> = all
            .iter()
            .filter(|(_, c)| c.fields.asks)
            .filter_map(|(pool, c)| c.fields.position.map(|i| (*pool, c.fields.session, i)))
            .collect();
        for (s, (pool, c)) in scores.iter_mut().zip(all.iter_mut()) {
            let replies = c.fields.position.and_then(|i| i.checked_sub(1));
            if replies.is_some_and(|j| askers.contains(&(*pool, c.fields.session, j))) {
                *s += ranking.answer;
                c.signals.answers = ranking.answer;
            }
        }
    }
    if let Some(r) = ranking.recent {
        for (s, (_, c)) in scores.iter_mut().zip(all.iter_mut()) {
            let gain = (*s - floor).abs() * r.weight * freshness(&c.fields, r);
            *s += gain;
            c.signals.recency = gain;
        }
    }
    // A question about a past decision: the decisions in force, and the messages decisions were
    // extracted from, are its answers.
    if mode != SearchMode::Semantic && asks_decision && ranking.decision_lift != 0.0 {
        for (s, (_, c)) in scores.iter_mut().zip(all.iter_mut()) {
            if c.fields.status == Some(crate::doc::DecisionStatus::Active) || c.fields.decides {
                *s += ranking.decision_lift;
                c.signals.decision = ranking.decision_lift;
            }
        }
    }
    // Ties broken by collection, then document id: the same order on every run and limit.
    fn before(scores: &[f32], all: &[(usize, Candidate)], a: usize, b: usize) -> std::cmp::Ordering {
        scores[b]
            .total_cmp(&scores[a])
            .then(all[a].0.cmp(&all[b].0))
            .then(all[a].1.fields.uuid.cmp(&all[b].1.fields.uuid))
    }
    // Identical content of one session folds into its first hit: (pool, session and folded
    // content) → that hit (the 128-bit hash of [`super::fields::fold_hash`] stands for the
    // content).
    let mut first_of: HashMap<(usize, u128), usize> = HashMap::new();
    for i in 0..all.len() {
        let at = first_of.entry((all[i].0, all[i].1.fields.fold)).or_insert(i);
        if before(&scores, &all, i, *at).is_lt() {
            *at = i;
        }
    }
    let mut folded = vec![0usize; all.len()];
    for (i, (pool, c)) in all.iter().enumerate() {
        let at = first_of[&(*pool, c.fields.fold)];
        if at != i {
            folded[at] += 1;
        }
    }
    let mut order: Vec<usize> = first_of.into_values().collect();
    // Each hit's relevance, read from its signals before the closing messages' reordering (a
    // moved hit takes its place's).
    let mut relevances = vec![0u8; all.len()];
    for &i in &order {
        let (pool, c) = &all[i];
        relevances[i] = relevance(mode, &curves[*pool], &c.signals, vectors[*pool]);
    }
    if mode == SearchMode::Hybrid && ranking.closing > 0.0 && matches!(ranking.fusion, Fusion::Calibrated { .. }) {
        close_turns(&order, &mut scores, &mut relevances, &mut all, ranking.closing);
    }
    order.sort_by(|&a, &b| before(&scores, &all, a, b));
    let mut slots: Vec<Option<(usize, Candidate)>> = all.into_iter().map(Some).collect();
    let mut out: Vec<Ranked> = order
        .into_iter()
        .filter_map(|i| {
            let (pool, candidate) = slots[i].take()?;
            Some(Ranked { pool, candidate, score: scores[i], relevance: relevances[i], folded: folded[i] })
        })
        .collect();
    if mode == SearchMode::Hybrid && ranking.leaders {
        keep_leaders(&mut out);
    }
    out
}

/// The last words of a turn are where the agent reports what it found or did, or where the
/// person overruled it ([`Ranking::closing`], [`crate::Document::closes_turn`]): the messages
/// of each session among `hits` (one per folded content) are put in the order of their scores
/// with `closing` added to its closing messages,
/// in the places its messages held, at those places' scores and relevance, so that a
/// session's own messages are reordered and no session gains or loses a place against
/// another (its decisions and summary keep theirs). What each message gained or lost is its
/// [`Signals::closes`].
fn close_turns(
    hits: &[usize],
    scores: &mut [f32],
    relevances: &mut [u8],
    all: &mut [(usize, Candidate)],
    closing: f32,
) {
    let mut sessions: HashMap<(usize, u64), Vec<usize>> = HashMap::new();
    for &i in hits.iter().filter(|&&i| all[i].1.fields.position.is_some()) {
        sessions.entry((all[i].0, all[i].1.fields.session)).or_default().push(i);
    }
    for messages in sessions.into_values().filter(|m| m.len() > 1) {
        let mut places: Vec<(f32, u8)> = messages.iter().map(|&i| (scores[i], relevances[i])).collect();
        places.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        let gained = |i: usize| scores[i] + if all[i].1.fields.closes { closing } else { 0.0 };
        let mut order = messages;
        // Of equal gained scores, the closing message first, then the one that matched better.
        order.sort_by(|&a, &b| {
            gained(b)
                .total_cmp(&gained(a))
                .then(all[b].1.fields.closes.cmp(&all[a].1.fields.closes))
                .then(scores[b].total_cmp(&scores[a]))
        });
        for (&i, (place, relevance)) in order.iter().zip(places) {
            all[i].1.signals.closes = place - scores[i];
            scores[i] = place;
            relevances[i] = relevance;
        }
    }
}

/// Moves the best hit by meaning, then the best by words, to second place when it stands
/// below it ([`Ranking::leaders`]): both end among the first three, after the fusion's first.
/// Ties go to the hit ranked higher; a signal no hit carries moves nothing.
fn keep_leaders(out: &mut Vec<Ranked>) {
    let signals: [fn(&Ranked) -> Option<f32>; 2] =
        [|r| r.candidate.signals.semantic_z, |r| r.candidate.signals.lexical_share];
    for signal in signals {
        let best = out
            .iter()
            .enumerate()
            .filter_map(|(i, r)| signal(r).map(|s| (i, s)))
            .reduce(|a, b| if b.1 > a.1 { b } else { a })
            .map(|(i, _)| i);
        if let Some(i) = best.filter(|&i| i >= 2) {
            let r = out.remove(i);
            out.insert(1, r);
        }
    }
}

/// `(x − mean) / sd` of each value.
fn standardise(v: &[f32]) -> Vec<f32> {
    let n = v.len().max(1) as f32;
    let mean = v.iter().sum::<f32>() / n;
    let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n).sqrt().max(1e-6);
    v.iter().map(|x| (x - mean) / sd).collect()
}

/// 1-based rank of each candidate by a signal (`None` where it is absent), best first.
fn ranks(all: &[(usize, Candidate)], signal: impl Fn(&Candidate) -> Option<f32>) -> Vec<Option<usize>> {
    let mut present: Vec<(usize, f32)> =
        all.iter().enumerate().filter_map(|(i, (_, c))| signal(c).map(|s| (i, s))).collect();
    present.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out = vec![None; all.len()];
    for (r, (i, _)) in present.into_iter().enumerate() {
        out[i] = Some(r + 1);
    }
    out
}

/// What each candidate's session and neighbours add (see [`Context`]).
fn context_lifts(all: &[(usize, Candidate)], scores: &[f32], floor: f32, context: Context) -> Vec<f32> {
    let mut best: HashMap<(usize, u64), f32> = HashMap::new();
    let mut at: HashMap<(usize, u64, u64), f32> = HashMap::new();
    for ((pool, c), &s) in all.iter().zip(scores) {
        let b = best.entry((*pool, c.fields.session)).or_insert(floor);
        *b = b.max(s);
        if let Some(i) = c.fields.position {
            at.insert((*pool, c.fields.session, i), s);
        }
    }
    all.iter()
        .map(|(pool, c)| {
            let session = c.fields.session;
            let in_session = (best[&(*pool, session)] - floor).max(0.0);
            let neighbour = c.fields.position.map_or(0.0, |i| {
                [i.checked_sub(1), i.checked_add(1)]
                    .into_iter()
                    .flatten()
                    .filter_map(|j| at.get(&(*pool, session, j)))
                    .fold(floor, |a, &b| a.max(b))
                    - floor
            });
            context.session * in_session + context.neighbours * neighbour.max(0.0)
        })
        .collect()
}

/// `2^(−age / half_life)`; 1 for an active decision, −0.5 for a superseded or rejected one.
fn freshness(fields: &RankFields, r: Recency) -> f32 {
    if let Some(status) = fields.status {
        return if status == DecisionStatus::Active { 1.0 } else { -0.5 };
    }
    let age_days = (r.now_ms - fields.timestamp_ms).max(0) as f32 / 86_400_000.0;
    0.5f32.powf(age_days / r.half_life_days.max(1e-3))
}

#[cfg(test)]
mod tests;
