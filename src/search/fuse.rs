//! Fusing rankings (pure): the semantic list (cosine), the lexical list (BM25) and, in hybrid
//! mode, their blend or reciprocal-rank fusion, then the conversation context lift. Table-tested
//! below; the planner that produces the lists is [`super::plan`].

use std::collections::HashMap;

use crate::doc::Document;
use crate::search::query::SearchMode;

/// How hybrid search merges the semantic and the lexical ranking.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    /// Reciprocal rank fusion: each list adds `1 / (k + rank)`.
    Rrf {
        /// The rank offset (60 in the original paper).
        k: f32,
    },
    /// Normalised score blend: `w · z(cos) + (1 − w) · z(bm25)`, z-scores over the union of
    /// both candidate lists. Lexical candidates the semantic list missed get their exact
    /// cosine, and semantic candidates the lexical index did not match have BM25 0, so every
    /// candidate is scored on both signals.
    Blend {
        /// Weight of the semantic score, 0–1.
        semantic_weight: f32,
    },
}

impl Default for Fusion {
    /// The blend chosen on LoCoMo (see README).
    fn default() -> Self {
        Fusion::Blend { semantic_weight: 0.5 }
    }
}

/// How hybrid search lets a hit's conversation lift it: a message whose session holds the
/// strongest candidates, or whose neighbouring messages match too, is more likely what was asked
/// for than an equally scored message alone (answers span turns; a topic lives in a session).
/// Both weights multiply a fused score's distance above the weakest of the top candidates
/// (`max(limit, 50)` of them), so they are independent of the fusion's scale, and a ranking
/// does not depend on `limit` beyond that pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Context {
    /// Weight of the best fused score in the hit's session (the hit itself included).
    pub session: f32,
    /// Weight of the better fused score of the two adjacent messages (by message index).
    pub neighbours: f32,
}

impl Context {
    /// No context: the fused ranking as it is.
    pub const NONE: Context = Context { session: 0.0, neighbours: 0.0 };
}

impl Default for Context {
    /// Chosen on LoCoMo, checked on the Claude Code corpus cases (see README).
    fn default() -> Self {
        Context { session: 0.3, neighbours: 0.2 }
    }
}

/// Which signals matched a hit, and how.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Signals {
    /// Cosine similarity of the best chunk, when semantic search ran.
    pub semantic: Option<f32>,
    /// 1-based rank in the semantic list, when the document was in it.
    pub semantic_rank: Option<usize>,
    /// BM25 score, when the lexical index matched the document.
    pub lexical: Option<f32>,
    /// 1-based rank in the lexical list.
    pub lexical_rank: Option<usize>,
}

/// One ranked document before it is loaded: internal id, score, best chunk, signals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Ranked {
    pub(crate) doc: u64,
    pub(crate) score: f32,
    pub(crate) chunk: u32,
    pub(crate) signals: Signals,
}

/// Documents of the lexical list that the semantic list lacks: blend fusion scores them by their
/// exact cosine, which the caller computes.
pub(crate) fn lexical_only(semantic: &[(u64, f32, u32)], lexical: &[(u64, f32)]) -> Vec<u64> {
    let sem: std::collections::HashSet<u64> = semantic.iter().map(|x| x.0).collect();
    lexical.iter().map(|x| x.0).filter(|d| !sem.contains(d)).collect()
}

/// The ranking of one mode from its lists: `semantic` is `(doc, cosine, chunk)` best first,
/// `lexical` `(doc, BM25)` best first, `cosines` the exact cosine `(score, chunk)` of the
/// documents only the lexical list found (blend only).
pub(crate) fn rank(
    mode: SearchMode,
    fusion: Fusion,
    semantic: &[(u64, f32, u32)],
    lexical: &[(u64, f32)],
    cosines: &HashMap<u64, (f32, u32)>,
) -> Vec<Ranked> {
    let sem_rank: HashMap<u64, (usize, f32, u32)> =
        semantic.iter().enumerate().map(|(r, &(d, s, c))| (d, (r + 1, s, c))).collect();
    let lex_rank: HashMap<u64, (usize, f32)> = lexical.iter().enumerate().map(|(r, &(d, s))| (d, (r + 1, s))).collect();
    let signals = |d: u64, cos: Option<f32>| Signals {
        semantic: cos.or(sem_rank.get(&d).map(|x| x.1)),
        semantic_rank: sem_rank.get(&d).map(|x| x.0),
        lexical: lex_rank.get(&d).map(|x| x.1),
        lexical_rank: lex_rank.get(&d).map(|x| x.0),
    };
    let ranked = |doc, score, chunk, signals| Ranked { doc, score, chunk, signals };
    let mut out: Vec<Ranked> = Vec::new();
    match mode {
        SearchMode::Semantic => {
            out.extend(semantic.iter().map(|&(d, s, c)| ranked(d, s, c, signals(d, None))));
        }
        SearchMode::Lexical => {
            out.extend(lexical.iter().map(|&(d, s)| ranked(d, s, 0, signals(d, None))));
        }
        SearchMode::Hybrid => {
            let mut union: Vec<u64> = semantic.iter().map(|x| x.0).collect();
            union.extend(lexical.iter().map(|x| x.0).filter(|d| !sem_rank.contains_key(d)));
            match fusion {
                Fusion::Rrf { k } => {
                    for &d in &union {
                        let score = sem_rank.get(&d).map_or(0.0, |x| 1.0 / (k + x.0 as f32))
                            + lex_rank.get(&d).map_or(0.0, |x| 1.0 / (k + x.0 as f32));
                        let chunk = sem_rank.get(&d).map_or(0, |x| x.2);
                        out.push(ranked(d, score, chunk, signals(d, None)));
                    }
                }
                Fusion::Blend { semantic_weight: w } => {
                    let cos = |d: u64| -> Option<(f32, u32)> {
                        sem_rank.get(&d).map(|x| (x.1, x.2)).or_else(|| cosines.get(&d).copied())
                    };
                    // z-scores over the candidates; a document the lexical index did not match
                    // has BM25 0.
                    let z = |v: &[f32]| {
                        let n = v.len().max(1) as f32;
                        let mean = v.iter().sum::<f32>() / n;
                        let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / n).sqrt();
                        (mean, sd.max(1e-6))
                    };
                    let cos_all: Vec<f32> = union.iter().filter_map(|&d| cos(d).map(|c| c.0)).collect();
                    let bm25_all: Vec<f32> = union.iter().map(|d| lex_rank.get(d).map_or(0.0, |x| x.1)).collect();
                    let ((cm, cs), (lm, ls)) = (z(&cos_all), z(&bm25_all));
                    for (&d, &bm25) in union.iter().zip(&bm25_all) {
                        let c = cos(d);
                        let cz = c.map_or(0.0, |x| (x.0 - cm) / cs);
                        let lz = (bm25 - lm) / ls;
                        out.push(ranked(d, w * cz + (1.0 - w) * lz, c.map_or(0, |x| x.1), signals(d, c.map(|x| x.0))));
                    }
                }
            }
            out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        }
    }
    out
}

/// Adds the [`Context`] terms to fused scores and re-sorts (stable for equal scores).
pub(crate) fn with_context(pool: &mut [(Document, f32, u32, Signals)], context: Context) {
    use std::collections::HashMap;
    let Some(floor) = pool.iter().map(|x| x.1).reduce(f32::min) else { return };
    let position = |d: &Document| match &d.body {
        crate::doc::DocBody::Message(m) => Some(m.message_index),
        _ => None,
    };
    let mut best: HashMap<&str, f32> = HashMap::new();
    let mut at: HashMap<(&str, u64), f32> = HashMap::new();
    for (d, s, ..) in pool.iter() {
        let b = best.entry(d.session_id.as_str()).or_insert(floor);
        *b = b.max(*s);
        if let Some(i) = position(d) {
            at.insert((d.session_id.as_str(), i), *s);
        }
    }
    let boosts: Vec<f32> = pool
        .iter()
        .map(|(d, ..)| {
            let session = best[d.session_id.as_str()] - floor;
            let neighbour = position(d).map_or(0.0, |i| {
                let around = [i.checked_sub(1), i.checked_add(1)];
                around
                    .into_iter()
                    .flatten()
                    .filter_map(|j| at.get(&(d.session_id.as_str(), j)))
                    .fold(floor, |a, &b| a.max(b))
                    - floor
            });
            context.session * session + context.neighbours * neighbour
        })
        .collect();
    for (x, b) in pool.iter_mut().zip(boosts) {
        x.1 += b;
    }
    pool.sort_by(|a, b| b.1.total_cmp(&a.1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::Role;

    fn pool(rows: &[(&str, u64, f32)]) -> Vec<(Document, f32, u32, Signals)> {
        rows.iter()
            .map(|&(s, i, score)| {
                (Document::message(s, &format!("{s}-{i}"), i, Role::User, "x"), score, 0, Signals::default())
            })
            .collect()
    }

    fn order(p: &[(Document, f32, u32, Signals)]) -> Vec<(String, u64)> {
        p.iter()
            .map(|(d, ..)| match &d.body {
                crate::doc::DocBody::Message(m) => (d.session_id.clone(), m.message_index),
                _ => unreachable!(),
            })
            .collect()
    }

    #[test]
    fn each_mode_ranks_by_its_signal_and_hybrid_fuses_both() {
        let semantic = [(1, 0.9, 2), (2, 0.5, 0), (3, 0.4, 0)];
        let lexical = [(3, 12.0), (4, 8.0)];
        let cos: HashMap<u64, (f32, u32)> = [(4, (0.45, 1))].into_iter().collect();
        let order = |r: &[Ranked]| r.iter().map(|x| x.doc).collect::<Vec<_>>();
        let s = rank(SearchMode::Semantic, Fusion::default(), &semantic, &lexical, &cos);
        assert_eq!(order(&s), [1, 2, 3]);
        assert_eq!((s[0].chunk, s[0].signals.semantic_rank, s[2].signals.lexical_rank), (2, Some(1), Some(1)));
        let l = rank(SearchMode::Lexical, Fusion::default(), &semantic, &lexical, &cos);
        assert_eq!(order(&l), [3, 4]);
        assert_eq!(lexical_only(&semantic, &lexical), [4]);
        let h = rank(SearchMode::Hybrid, Fusion::default(), &semantic, &lexical, &cos);
        assert_eq!(h.len(), 4, "the union of both lists");
        // Doc 1 has the best cosine by far; doc 3, matched by both sides, comes next; doc 2, a
        // weaker cosine with no word match, comes last.
        assert_eq!(order(&h), [1, 3, 4, 2], "{h:?}");
        let d4 = h.iter().find(|x| x.doc == 4).unwrap();
        assert_eq!((d4.chunk, d4.signals.semantic), (1, Some(0.45)), "lexical-only hits get their exact cosine");
        let r = rank(SearchMode::Hybrid, Fusion::Rrf { k: 60.0 }, &semantic, &lexical, &cos);
        assert_eq!(r[0].doc, 3, "first in lexical, third in semantic: {r:?}");
        assert!((r[0].score - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-6);
    }

    #[test]
    fn context_lifts_hits_whose_session_and_neighbours_match() {
        // b:7 scores a little above a:3, but a:3 sits next to a:4 in the session that holds the
        // best candidate.
        let rows = [("a", 10, 2.0), ("b", 7, 1.05), ("a", 3, 1.0), ("a", 4, 0.9), ("c", 1, 0.0)];
        let mut p = pool(&rows);
        with_context(&mut p, Context::NONE);
        assert_eq!(order(&p)[1], ("b".into(), 7), "no context: the fused order stands");
        let mut p = pool(&rows);
        with_context(&mut p, Context::default());
        let o = order(&p);
        assert_eq!(o[0], ("a".into(), 10));
        assert_eq!(o[1], ("a".into(), 3), "{o:?}");
        assert_eq!(o.last().unwrap(), &("c".into(), 1), "the floor gets no lift");
        // Neighbours only: a:3 and a:4 lift each other; a lone strong hit keeps its place.
        let mut p = pool(&rows);
        with_context(&mut p, Context { session: 0.0, neighbours: 0.2 });
        let o = order(&p);
        assert_eq!(o[0], ("a".into(), 10));
        assert_eq!(o[1], ("a".into(), 3), "{o:?}");
        // Empty pools are fine.
        with_context(&mut [], Context::default());
    }
}
