//! What was measured for each embedding model: the ranking chosen for it
//! ([`Ranking::for_model`]) and the curves its scores read as relevance by ([`Curves`],
//! [`relevance`]). Both were chosen on the development halves of the evaluation sets
//! (`examples/ranking.rs`; docs/ranking.md, «How results are ranked»); a model this build does
//! not know is read as e5, the default. Adding a model means measuring both here.

use crate::search::mode::SearchMode;
use crate::search::ranking::{Context, Fusion, Ranking, Signals};

impl Ranking {
    /// The ranking chosen for the model whose vectors are searched (its manifest name or its
    /// model id, as [`crate::Embedder::model_id`] gives it): the lexical weight and context
    /// were chosen for each model on the development halves of the three sets (docs/ranking.md,
    /// «How results are ranked»). `multilingual-e5-small` and any model this build does not know
    /// get [`Ranking::default`]; `all-minilm-l6-v2` weighs words by 8 (its meaning signal is
    /// weaker than e5's), `potion-base-8m` by 8 with the lighter context 0.3 / 0.2, and neither
    /// glosses the query (`gloss` 0; e5 glosses at [`crate::DEFAULT_GLOSS`]). Recency and
    /// translation are the defaults for every model.
    pub fn for_model(model: &str) -> Ranking {
        let (lexical_weight, context) = match Tuned::of(model) {
            Tuned::MiniLm => (8.0, Context { session: 0.7, neighbours: 0.4 }),
            Tuned::Potion => (8.0, Context { session: 0.3, neighbours: 0.2 }),
            Tuned::E5 => return Ranking::default(),
        };
        Ranking { fusion: Fusion::Calibrated { lexical_weight }, context, gloss: 0.0, ..Ranking::default() }
    }
}

/// The models whose ranking and relevance curves were measured, by manifest name or model id;
/// any other model is read as e5 (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tuned {
    E5,
    MiniLm,
    Potion,
}

impl Tuned {
    fn of(model: &str) -> Tuned {
        match model {
            "all-minilm-l6-v2" | "all-MiniLM-L6-v2-onnx-int8" => Tuned::MiniLm,
            "potion-base-8m" | "potion-base-8M" => Tuned::Potion,
            _ => Tuned::E5,
        }
    }
}

/// How a model's scores read as relevance (see [`relevance`]): a logistic `(a, b, c)` for each
/// of the two modes whose scores depend on the model (`c` weighs how many vectors the hit was
/// chosen from), the lexical weight the hybrid curve was fitted at, and how much a filter that
/// narrowed the candidates lifts the hybrid reading (`narrowed`, per unit of
/// `ln(vectors / admitted)`; 0 where it was not fitted).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Curves {
    semantic: (f32, f32, f32),
    hybrid: (f32, f32, f32),
    lexical_weight: f32,
    narrowed: f32,
}

/// How many vectors a hit was chosen from ([`relevance`]): those of the searched collections
/// that hold any candidate, and, of them, as many as the documents the filter's locating part
/// let through stand for (each collection's share of documents times its vectors; the same
/// when nothing was filtered).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Chosen {
    pub(crate) vectors: f64,
    pub(crate) admitted: f64,
}

impl Chosen {
    /// Chosen from `vectors`, none filtered out.
    pub(crate) fn all(vectors: f64) -> Chosen {
        Chosen { vectors, admitted: vectors }
    }
}

impl Curves {
    /// The curves fitted for `model` (manifest name or model id); e5's for a model this build
    /// does not know.
    pub(crate) fn for_model(model: &str) -> Curves {
        // Fitted by `cargo run --release --example ranking -- [--model M] --fit` on the pooled
        // hits of the development halves, each with the model's own ranking (docs/ranking.md,
        // «How results are ranked»); refit when a model, its ranking or what is embedded changes.
        match Tuned::of(model) {
            // 2026-11-28, multilingual-e5-small q4, λ 3, context 0.7 / 0.4, background prior
            // 256, question 1: the large histories and single sessions of the development
            // halves pooled.
            // `narrowed`: 2026-12-01, the same curves' file- and session-filtered questions of
            // fresh-dev pooled (`examples/filtered.rs`; docs/ranking.md, «Relevance under a
            // filter»).
            Tuned::E5 => Curves {
                semantic: (1.163, -6.182, -0.245),
                hybrid: (0.301, -5.181, -0.113),
                lexical_weight: 3.0,
                narrowed: NARROWED_E5,
            },
            // 2026-11-26 (afternoon), λ 8 with each model's context; not refitted with the
            // size of the history (c = 0: read as on the large histories they were fitted on).
            Tuned::MiniLm => Curves {
                semantic: (0.807, -6.036, 0.0),
                hybrid: (0.104, -3.958, 0.0),
                lexical_weight: 8.0,
                narrowed: 0.0,
            },
            Tuned::Potion => Curves {
                semantic: (0.773, -5.886, 0.0),
                hybrid: (0.155, -4.112, 0.0),
                lexical_weight: 8.0,
                narrowed: 0.0,
            },
        }
    }
}

/// The model's typical background: the mean and standard deviation of a question's cosine to
/// the messages of a large history of software work, averaged over the questions of the
/// development halves (`examples/ranking.rs`, printed with each run); `None` for a model
/// not measured. Weighed beside a collection's own sample ([`Ranking::background_prior`]).
pub(crate) fn typical_background(model: &str) -> Option<(f32, f32)> {
    match model {
        // 2026-11-28, 859 development questions (LoCoMo and Claude Code cases).
        "multilingual-e5-small" | "multilingual-e5-small-q4" => Some((0.778, 0.0205)),
        _ => None,
    }
}

/// e5's hybrid lift per unit of `ln(vectors / admitted)` when a filter narrowed the candidates
/// ([`Curves`]): a person who filters by a file or a session says the answer is among the
/// documents let through, so each of them is likelier the answer than a document of the whole
/// history with the same score.
const NARROWED_E5: f32 = 0.649;

/// The most narrowing [`relevance`] reads, `ln(n / m)`: the most the filtered questions it was
/// fitted on saw (5.72, a file filter of fresh-dev). A filter that narrows further reads as if
/// it narrowed this much: beyond it the lift would be a guess.
const NARROWED_MAX: f64 = 5.7;

// Lexical scores do not depend on the model (fitted 2026-11-23 and kept: the prompt hook's
// threshold reads it).
// No size term (c = 0).
const RELEVANCE_LEXICAL: (f32, f32, f32) = (1.575, -1.978, 0.0);

/// The readable relevance of a hit, 0–100: `100 / (1 + e^−(a·s + b + c·ln(n / 1000) + f·ln(n /
/// m)))`, with `a`, `b` and `c` fitted per model and mode on the development halves of the
/// evaluation sets (large histories and single sessions pooled), `n` the vectors the hit was
/// chosen from (the searched collections of its model that hold a candidate: a hit that stands
/// out among twenty messages is more likely the answer than one with the same score among ten
/// thousand), and `f` (hybrid only, [`Curves`]) fitted on filtered questions, `m` as many
/// vectors as the documents the filter's files, directory and sessions let through stand for
/// (`m = n` without such a filter, so the term is 0; `ln(n / m)` read up to `NARROWED_MAX`), so
/// that among hits shown with relevance around `r`, roughly `r`% were an answer to the question
/// on the held-out halves (docs/ranking.md, «How results are ranked» and «Relevance under a
/// filter»). `s` is what the curve was fitted on: the semantic z or the lexical share, and for
/// hybrid search `z + λ · share + context` (less what asking lost, [`Signals::asked`]) with the
/// λ of the model's curve, whatever fusion ordered the hits (blend and RRF scores are relative
/// to their pool; another lexical weight would read differently). Recency reorders hits without
/// changing their relevance.
pub(crate) fn relevance(mode: SearchMode, curves: &Curves, signals: &Signals, chosen: Chosen) -> u8 {
    let z = signals.semantic_z.unwrap_or(0.0);
    let share = signals.lexical_share.unwrap_or(0.0);
    let ((a, b, c), s, f) = match mode {
        SearchMode::Semantic => (curves.semantic, z, 0.0),
        SearchMode::Lexical => (RELEVANCE_LEXICAL, share, 0.0),
        SearchMode::Hybrid => (
            curves.hybrid,
            z + curves.lexical_weight * share + signals.context + signals.asked + signals.answers,
            curves.narrowed,
        ),
    };
    let vectors = chosen.vectors.max(1.0);
    let size = (vectors / 1000.0).ln() as f32;
    let narrowed = (vectors / chosen.admitted.clamp(1.0, vectors)).ln().min(NARROWED_MAX) as f32;
    let p = 1.0 / (1.0 + (-(a * s + b + c * size + f * narrowed)).exp());
    (100.0 * p).round().clamp(0.0, 100.0) as u8
}

/// The curve [`answer_among`] reads a question's hits by: `(α, β, γ)` of `σ(α · logit(q) + β +
/// γ · ln k)`, `q` the chance an answer is among the `k` hits were they independent chances.
/// Fitted 2026-12-02 by `cargo run --release --example ranking -- --small --among` on the
/// development halves (LoCoMo and the Claude Code cases, large histories and single sessions
/// pooled, 7,656 points: each question's first 1, 3, 5 and 10 hits of the default search).
const AMONG: (f64, f64, f64) = (0.537, 0.865, 0.641);

/// The most hits [`AMONG`] was fitted on: more are read as this many (beyond it the curve would
/// be a guess).
const AMONG_MAX_HITS: usize = 10;

/// The chance, 0–100, that an answer to the question is among the hits whose relevances are
/// given (in any order; the first hits a hybrid search returned, say): `q = 1 − Π(1 − rᵢ /
/// 100)` read by a curve fitted per question on the development halves of the evaluation sets,
/// so that of the questions shown a chance around `c`, roughly `c`% had an answer among those
/// hits on the held-out halves (docs/ranking.md, «An answer among the hits»). The hits of one
/// question are not independent chances (several can be answers, or none): the curve reads
/// `q` as the evaluation sets found it, with the number of hits (read up to 10). Fitted on
/// hybrid search with multilingual-e5-small; 0 for no hits.
///
/// A hit's relevance reads every hit shown alike; this reads the first hits of a question,
/// which are answers more often than the relevance of hits at any place says.
///
/// ```
/// let three = convdex::answer_among([19, 19, 17]);
/// assert!(three >= convdex::answer_among([19]));
/// assert_eq!(convdex::answer_among([]), 0);
/// ```
pub fn answer_among(relevances: impl IntoIterator<Item = u8>) -> u8 {
    let mut none = 1.0f64;
    let mut hits = 0usize;
    for r in relevances {
        hits += 1;
        none *= 1.0 - (f64::from(r) / 100.0).clamp(0.005, 0.995);
    }
    if hits == 0 {
        return 0;
    }
    let q = (1.0 - none).clamp(1e-4, 1.0 - 1e-4);
    let (a, b, c) = AMONG;
    let k = (hits.min(AMONG_MAX_HITS) as f64).ln();
    let p = 1.0 / (1.0 + (-(a * (q / (1.0 - q)).ln() + b + c * k)).exp());
    (100.0 * p).round().clamp(0.0, 100.0) as u8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::ranking::DEFAULT_TRANSLATION;

    #[test]
    fn relevance_is_monotone_and_bounded() {
        for model in ["multilingual-e5-small", "all-minilm-l6-v2", "potion-base-8m"] {
            let curves = Curves::for_model(model);
            for mode in [SearchMode::Semantic, SearchMode::Lexical, SearchMode::Hybrid] {
                let values: Vec<u8> = [-50.0f32, -5.0, 0.0, 3.0, 6.0, 9.0, 20.0, 200.0]
                    .iter()
                    .map(|&x| {
                        let s = match mode {
                            SearchMode::Lexical => Signals { lexical_share: Some(x), ..Default::default() },
                            _ => Signals { semantic_z: Some(x), ..Default::default() },
                        };
                        relevance(mode, &curves, &s, Chosen::all(1000.0))
                    })
                    .collect();
                assert!(values.windows(2).all(|w| w[0] <= w[1]), "{model} {mode:?}: {values:?}");
                assert!(values[0] < 5 && values[7] > 95, "{model} {mode:?}: {values:?}");
            }
        }
    }

    #[test]
    fn an_answer_among_more_hits_is_no_less_likely() {
        assert_eq!(answer_among([]), 0);
        for first in [0u8, 2, 15, 19, 50, 90, 100] {
            let mut shown = vec![first];
            let mut before = answer_among(shown.iter().copied());
            for next in [17u8, 11, 0, 60, 100] {
                shown.push(next);
                let now = answer_among(shown.iter().copied());
                assert!(now >= before && now <= 100, "{shown:?}: {before} -> {now}");
                before = now;
            }
        }
        // The order the hits are given in does not matter; a higher relevance never lowers it.
        assert_eq!(answer_among([19, 15, 11]), answer_among([11, 19, 15]));
        assert!(answer_among([40, 15]) >= answer_among([20, 15]));
    }

    #[test]
    fn each_model_has_its_ranking_and_curves() {
        // e5 (by name or id) and any model this build does not know: the default.
        for m in ["multilingual-e5-small", "multilingual-e5-small-q4", "hash-384", ""] {
            assert_eq!(Ranking::for_model(m), Ranking::default(), "{m}");
        }
        for (name, id, session) in
            [("all-minilm-l6-v2", "all-MiniLM-L6-v2-onnx-int8", 0.7), ("potion-base-8m", "potion-base-8M", 0.3)]
        {
            let r = Ranking::for_model(name);
            assert_eq!(r, Ranking::for_model(id), "{name}");
            assert_eq!(r.fusion, Fusion::Calibrated { lexical_weight: 8.0 }, "{name}");
            assert_eq!(r.context.session, session, "{name}");
            // Fusion, context and gloss depend on the model; recency and translation do not.
            assert_eq!((r.recent, r.translation), (None, DEFAULT_TRANSLATION), "{name}");
            assert_eq!(r.gloss, 0.0, "{name}");
        }
        // Every model of the manifest is known by name and by id alike, and its hybrid curve
        // was fitted at its ranking's lexical weight (change one, refit the other).
        for spec in &crate::models::Manifest::builtin().models {
            assert_eq!(Ranking::for_model(&spec.name), Ranking::for_model(&spec.id), "{}", spec.name);
            assert_eq!(Curves::for_model(&spec.name), Curves::for_model(&spec.id), "{}", spec.name);
            let lexical_weight = Curves::for_model(&spec.name).lexical_weight;
            assert_eq!(Ranking::for_model(&spec.name).fusion, Fusion::Calibrated { lexical_weight }, "{}", spec.name);
        }
    }
}
