use super::*;
use crate::doc::{DocBody, Document, Role};
use std::collections::BTreeMap;

thread_local! {
    /// The label ("session:index") of each test candidate, by external id.
    static LABELS: std::cell::RefCell<HashMap<u128, String>> = Default::default();
}

fn cand(session: &str, index: u64, cos: Option<f32>, bm25: Option<f32>) -> Candidate {
    cand_of(
        Document::message(
            session,
            &format!("{session}-{index}"),
            index,
            Role::User,
            &format!("{session} message {index}"),
        ),
        cos,
        bm25,
    )
}

fn cand_of(doc: Document, cos: Option<f32>, bm25: Option<f32>) -> Candidate {
    let fields = RankFields::of(&doc);
    let label = match &doc.body {
        DocBody::Message(m) => format!("{}:{}", doc.session_id, m.message_index),
        _ => format!("{}:{}", doc.session_id, doc.content),
    };
    LABELS.with(|l| l.borrow_mut().insert(fields.uuid, label));
    Candidate { id: 0, fields, chunk: 0, signals: Signals { semantic: cos, lexical: bm25, ..Default::default() } }
}

fn label(r: &Ranked) -> String {
    LABELS.with(|l| l.borrow()[&r.candidate.fields.uuid].clone())
}

fn session_of(r: &Ranked) -> String {
    label(r).split(':').next().unwrap().to_string()
}

/// A background of mean 0.1 and spread 0.1 standing for 1000 vectors.
fn background() -> Background {
    let mut b = Background::default();
    for c in [0.0, 0.2] {
        b.add(c);
    }
    b.represents(1000);
    b
}

fn pool(candidates: Vec<Candidate>) -> Pool {
    Pool {
        candidates,
        model: "m".into(),
        background: background(),
        lexical: LexicalScale { reference: 10.0, required: 0.0 },
        admitted: None,
    }
}

fn order(r: &[Ranked]) -> Vec<String> {
    r.iter().map(label).collect()
}

const NO_CONTEXT: Ranking = Ranking {
    decision_lift: 0.0,
    fusion: Fusion::Calibrated { lexical_weight: 16.0 },
    context: Context::NONE,
    recent: None,
    translation: 0.0,
    gloss: 0.0,
    leaders: false,
    background_prior: 0.0,
    question: 0.0,
    answer: 0.0,
    closing: 0.0,
};

#[test]
fn each_mode_ranks_by_its_calibrated_signal() {
    let p = || {
        pool(vec![
            cand("a", 1, Some(0.6), None),
            cand("a", 2, Some(0.3), Some(9.0)),
            cand("b", 1, Some(0.1), Some(4.0)),
        ])
    };
    let s = rank(vec![p()], SearchMode::Semantic, &NO_CONTEXT, false);
    assert_eq!(order(&s), ["a:1", "a:2", "b:1"]);
    assert!((s[0].score - 5.0).abs() < 1e-4, "z = (0.6 − 0.1) / 0.1: {}", s[0].score);
    assert_eq!(s[0].candidate.signals.semantic_z, Some(s[0].score));
    let l = rank(vec![p()], SearchMode::Lexical, &NO_CONTEXT, false);
    assert_eq!(order(&l)[..2], ["a:2", "b:1"]);
    assert!((l[0].score - 0.9).abs() < 1e-6, "share = 9 / 10");
    let h = rank(vec![p()], SearchMode::Hybrid, &NO_CONTEXT, false);
    // a:2: z 2 + 16 · 0.9 = 16.4, b:1: z 0 + 16 · 0.4 = 6.4, a:1: z 5 with no word matched.
    assert_eq!(order(&h), ["a:2", "b:1", "a:1"]);
    assert!((h[0].score - 16.4).abs() < 1e-4, "{}", h[0].score);
}

#[test]
fn the_best_hit_of_each_signal_is_kept_among_the_first_three() {
    // Five documents matching moderately both ways (z 4 + 16 · 0.6 = 13.6) above the best
    // match by meaning (z 8, no word: 8) and the best by words (16 · 0.95 − 2 = 13.2).
    let mut c: Vec<Candidate> = (0..5).map(|i| cand("mid", i, Some(0.5), Some(6.0))).collect();
    c.push(cand("sem", 1, Some(0.9), None));
    c.push(cand("lex", 1, Some(-0.1), Some(9.5)));
    let fused = order(&rank(vec![pool(c.clone())], SearchMode::Hybrid, &NO_CONTEXT, false));
    assert_eq!(fused[5..], ["lex:1", "sem:1"], "buried by the fusion");
    let lead = Ranking { leaders: true, ..NO_CONTEXT };
    let kept = order(&rank(vec![pool(c.clone())], SearchMode::Hybrid, &lead, false));
    assert_eq!(kept[..3], [fused[0].as_str(), "lex:1", "sem:1"], "the fusion's first, then each signal's best");
    assert_eq!(kept[3..], fused[1..5], "the others keep their order");
    // Other modes, and leaders already among the first three, are left as they are.
    let sem = |r: &Ranking| order(&rank(vec![pool(c.clone())], SearchMode::Semantic, r, false));
    assert_eq!(sem(&lead), sem(&NO_CONTEXT));
    let top =
        vec![cand("lex", 1, Some(0.1), Some(9.5)), cand("sem", 1, Some(0.9), Some(1.0)), cand("x", 1, None, Some(0.5))];
    let r = |r: &Ranking| order(&rank(vec![pool(top.clone())], SearchMode::Hybrid, r, false));
    assert_eq!(r(&lead), r(&NO_CONTEXT));
}

#[test]
fn a_flat_lexical_list_does_not_bury_a_confident_cosine() {
    // One strong semantic match that no word matches, and forty documents near the
    // background whose words match a twentieth to a seventh of the query (shared common
    // words, unrelated bigrams).
    let mut c = vec![cand("answer", 1, Some(0.75), None)];
    c.extend((0..40).map(|i| cand("noise", i, Some(0.05 + i as f32 * 0.008), Some(0.5 + i as f32 * 0.025))));
    let h = rank(vec![pool(c.clone())], SearchMode::Hybrid, &NO_CONTEXT, false);
    assert_eq!(order(&h)[0], "answer:1");
    // The pool-relative blend buries it: the absent BM25 is far below the pool's mean.
    let blend = Ranking { fusion: Fusion::Blend { semantic_weight: 0.5 }, ..NO_CONTEXT };
    let b = rank(vec![pool(c)], SearchMode::Hybrid, &blend, false);
    assert_ne!(order(&b)[0], "answer:1", "the failure the calibrated fusion removes");
}

#[test]
fn scores_do_not_depend_on_the_other_candidates() {
    let alone = rank(vec![pool(vec![cand("a", 1, Some(0.5), Some(1.0))])], SearchMode::Hybrid, &NO_CONTEXT, false);
    let a1 = |r: &[Ranked]| r.iter().find(|r| r.pool == 0 && label(r) == "a:1").unwrap().score;
    let crowd = rank(
        vec![pool(vec![cand("a", 1, Some(0.5), Some(1.0)), cand("a", 7, Some(0.2), Some(20.0))])],
        SearchMode::Hybrid,
        &NO_CONTEXT,
        false,
    );
    assert_eq!(alone[0].score, a1(&crowd), "exactly");
    // Another collection with the same background: the same calibration, one order.
    let two = rank(
        vec![pool(vec![cand("a", 1, Some(0.5), Some(1.0))]), pool(vec![cand("z", 1, Some(0.9), None)])],
        SearchMode::Hybrid,
        &NO_CONTEXT,
        false,
    );
    assert!((alone[0].score - a1(&two)).abs() < 1e-4);
    assert_eq!((order(&two)[0].as_str(), two[0].pool), ("z:1", 1), "one order across pools");
    // Backgrounds are mixed into one for the whole search: a collection whose documents
    // are all closer to the query raises the background for every collection alike, so
    // within one search the semantic order is the cosine order.
    let mut near = Background::default();
    for c in [0.5, 0.7] {
        near.add(c);
    }
    near.represents(1000);
    // "a" in a pool of model "m" with the usual background, "n" in a pool of `model` whose
    // documents are all closer to the query.
    let beside_near = |model: &str| {
        let near_pool = Pool {
            candidates: vec![cand("n", 1, Some(0.6), None)],
            model: model.into(),
            background: near,
            lexical: LexicalScale { reference: 1.0, required: 0.0 },
            admitted: None,
        };
        rank(vec![pool(vec![cand("a", 1, Some(0.5), None)]), near_pool], SearchMode::Semantic, &NO_CONTEXT, false)
    };
    let shifted = beside_near("m");
    assert_eq!(order(&shifted), ["n:1", "a:1"], "one background for all: cosine order within a search");
    // A collection of another model (one not yet migrated) is calibrated against its own
    // background: its cosines are not comparable with the others'.
    let other = beside_near("old");
    assert_eq!(order(&other), ["a:1", "n:1"], "z 4 in its own model against z 0 in the other");
    assert!((other[0].score - 4.0).abs() < 1e-4 && other[1].score.abs() < 1e-4);
}

#[test]
fn a_required_match_keeps_its_share_in_a_long_document() {
    // An identifier query: the parts carry 6 of the reference's 10. A long message that
    // contains it scores a low BM25; it still matched what was required.
    let scale = LexicalScale { reference: 10.0, required: 6.0 };
    let long = cand("a", 1, Some(0.1), Some(1.5));
    let short = cand("a", 2, Some(0.1), Some(9.0));
    let r = rank(
        vec![Pool {
            candidates: vec![long, short],
            model: "m".into(),
            background: background(),
            lexical: scale,
            admitted: None,
        }],
        SearchMode::Lexical,
        &NO_CONTEXT,
        false,
    );
    assert_eq!(r.iter().map(|r| r.candidate.signals.lexical_share).collect::<Vec<_>>(), [Some(0.9), Some(0.6)]);
    // Without required clauses, the share is the BM25's.
    let free = rank(vec![pool(vec![cand("a", 1, Some(0.1), Some(1.5))])], SearchMode::Lexical, &NO_CONTEXT, false);
    assert_eq!(free[0].candidate.signals.lexical_share, Some(0.15));
}

#[test]
fn context_lifts_hits_whose_session_and_neighbours_match() {
    // b:7 scores a little above a:3, but a:3 sits next to a:4 in the session that holds
    // the best candidate.
    let p = || {
        pool(vec![
            cand("a", 10, Some(0.9), None),
            cand("b", 7, Some(0.405), None),
            cand("a", 3, Some(0.4), None),
            cand("a", 4, Some(0.35), None),
            cand("c", 1, Some(0.05), None),
        ])
    };
    let none = rank(vec![p()], SearchMode::Hybrid, &NO_CONTEXT, false);
    assert_eq!(order(&none)[1], "b:7", "no context: the fused order stands");
    let with = rank(vec![p()], SearchMode::Hybrid, &Ranking::default(), false);
    assert_eq!(order(&with)[..2], ["a:10", "a:3"]);
    let c1 = with.iter().find(|r| session_of(r) == "c").unwrap();
    assert_eq!(c1.candidate.signals.context, 0.0, "below the background: no lift");
    // Sessions are told apart by collection: the same session id in another pool does not lift.
    let other = pool(vec![cand("b", 8, Some(0.9), None)]);
    let two = rank(vec![p(), other], SearchMode::Hybrid, &Ranking::default(), false);
    let b7 = two.iter().find(|r| r.pool == 0 && session_of(r) == "b").unwrap();
    assert_eq!(b7.score, with.iter().find(|r| session_of(r) == "b").unwrap().score);
    assert!(rank(vec![], SearchMode::Hybrid, &Ranking::default(), false).is_empty());
}

#[test]
fn the_reply_to_a_message_that_asked_gains_the_answer_weight() {
    let asked = |session: &str, index: u64, text: &str, cos: f32| {
        cand_of(Document::message(session, &format!("{session}-{index}"), index, Role::User, text), Some(cos), None)
    };
    // a:2 asks and matches best; a:3 replies to it; b:5 follows a statement; c:1 follows an
    // asker that is not among the candidates.
    let p = || {
        pool(vec![
            asked("a", 2, "which store do we keep sessions in?", 0.6),
            cand("a", 3, Some(0.5), None),
            asked("b", 4, "we keep them in redb.", 0.45),
            cand("b", 5, Some(0.52), None),
            cand("c", 1, Some(0.55), None),
        ])
    };
    let off = Ranking { answer: 0.0, ..NO_CONTEXT };
    let on = Ranking { answer: 2.0, ..NO_CONTEXT };
    let before = rank(vec![p()], SearchMode::Hybrid, &off, false);
    let after = rank(vec![p()], SearchMode::Hybrid, &on, false);
    let get = |r: &[Ranked], l: &str| r.iter().find(|x| label(x) == l).unwrap().clone();
    assert_eq!(get(&after, "a:3").candidate.signals.answers, 2.0);
    assert!((get(&after, "a:3").score - get(&before, "a:3").score - 2.0).abs() < 1e-5);
    for other in ["a:2", "b:4", "b:5", "c:1"] {
        assert_eq!(get(&after, other).score, get(&before, other).score, "{other}");
        assert_eq!(get(&after, other).candidate.signals.answers, 0.0, "{other}");
    }
    assert_eq!(order(&after)[0], "a:3", "the reply now leads");
    // Only hybrid search reads it.
    let semantic = rank(vec![p()], SearchMode::Semantic, &on, false);
    assert!(semantic.iter().all(|r| r.candidate.signals.answers == 0.0));
}

#[test]
fn the_agents_message_closing_its_turn_leads_its_session_in_the_places_it_held() {
    let closing = |session: &str, index: u64, cos: f32| {
        let mut d =
            Document::message(session, &format!("{session}-{index}"), index, Role::Assistant, &format!("修正 {index}"));
        d.closes_turn = true;
        cand_of(d, Some(cos), Some(5.0))
    };
    // Words match every hit alike (scores where the relevance curve is not flat). a:1 is the
    // person's request, a:2 the agent on its way, a:3 and a:4 its last words of two turns; b:1
    // closes a turn of another session.
    let p = || {
        pool(vec![
            cand("a", 1, Some(0.3), Some(5.0)),
            cand("a", 2, Some(0.27), Some(5.0)),
            closing("a", 3, 0.25),
            closing("a", 4, 0.24),
            closing("b", 1, 0.28),
            // a:1 said again later: folded into a:1, wherever a:1 goes.
            cand_of(Document::message("a", "a-9", 9, Role::User, "a message 1"), Some(0.2), Some(5.0)),
        ])
    };
    let on_ranking = Ranking { closing: 1.5, ..NO_CONTEXT };
    let off = rank(vec![p()], SearchMode::Hybrid, &NO_CONTEXT, false);
    let on = rank(vec![p()], SearchMode::Hybrid, &on_ranking, false);
    assert_eq!(order(&off), ["a:1", "b:1", "a:2", "a:3", "a:4"]);
    // Session a's closing messages take its first places, a:3 first (it matched better); b
    // keeps its place; every place keeps its score and relevance.
    assert_eq!(order(&on), ["a:3", "b:1", "a:4", "a:1", "a:2"]);
    let scores = |r: &[Ranked]| r.iter().map(|x| (x.score, x.relevance)).collect::<Vec<_>>();
    assert_eq!(scores(&on), scores(&off));
    assert!(off[0].relevance > off[4].relevance, "the places' relevance differs: {:?}", scores(&off));
    let get = |r: &[Ranked], l: &str| r.iter().find(|x| label(x) == l).unwrap().clone();
    for (l, was) in [("a:3", "a:1"), ("a:4", "a:2"), ("a:1", "a:3"), ("a:2", "a:4")] {
        let moved = get(&on, l);
        assert!((moved.candidate.signals.closes - (get(&off, was).score - get(&off, l).score)).abs() < 1e-5, "{l}");
    }
    assert!(get(&on, "a:3").candidate.signals.closes > 0.0 && get(&on, "a:1").candidate.signals.closes < 0.0);
    assert_eq!(get(&on, "b:1").candidate.signals.closes, 0.0, "alone in its session");
    assert_eq!((get(&off, "a:1").folded, get(&on, "a:1").folded), (1, 1), "the repeat folds into a:1 either way");
    // Only hybrid search reads it.
    let semantic = rank(vec![p()], SearchMode::Semantic, &on_ranking, false);
    assert!(semantic.iter().all(|r| r.candidate.signals.closes == 0.0));
}

#[test]
fn identical_content_of_one_session_is_folded() {
    let twice = cand_of(Document::message("a", "a-2", 2, Role::User, "a message   1"), Some(0.5), None);
    let other_session = cand_of(Document::message("b", "b-1", 1, Role::User, "a message 1"), Some(0.5), None);
    let r = rank(
        vec![pool(vec![cand("a", 1, Some(0.5), None), twice, other_session])],
        SearchMode::Semantic,
        &NO_CONTEXT,
        false,
    );
    assert_eq!(r.len(), 2, "{:?}", order(&r));
    assert_eq!(r[0].folded, 1);
    assert_eq!(session_of(&r[1]), "b", "another session's copy stays");
}

#[test]
fn recency_prefers_new_sessions_but_not_over_active_decisions() {
    let now = chrono::Utc::now();
    let at = |session: &str, t: chrono::DateTime<chrono::Utc>, cos| {
        let mut d = Document::message(session, &format!("{session}-1"), 1, Role::User, "m");
        d.timestamp = t;
        cand_of(d, Some(cos), None)
    };
    let old = at("old", now - chrono::Duration::days(365), 0.5);
    let new = at("new", now, 0.48);
    let recent =
        Ranking { recent: Some(Recency { now_ms: now.timestamp_millis(), ..Recency::default() }), ..NO_CONTEXT };
    let plain = rank(vec![pool(vec![old.clone(), new.clone()])], SearchMode::Semantic, &NO_CONTEXT, false);
    assert_eq!(order(&plain)[0], "old:1");
    let r = rank(vec![pool(vec![old.clone(), new.clone()])], SearchMode::Semantic, &recent, false);
    assert_eq!(order(&r)[0], "new:1");
    assert!(r[0].candidate.signals.recency > 0.0);
    // An old active decision keeps its place; a superseded one sinks.
    let decision = |status| {
        let mut d = Document::message("old", "d", 0, Role::Assistant, "use redb");
        d.timestamp = now - chrono::Duration::days(365);
        d.body = DocBody::Decision(crate::doc::DecisionFields {
            summary: "use redb".into(),
            alternatives: vec![],
            reasoning: None,
            confidence: 0.9,
            source_message_uuid: "d".into(),
            status,
            superseded_by: None,
            supersedes: vec![],
        });
        cand_of(d, Some(0.5), None)
    };
    let r = rank(vec![pool(vec![decision(DecisionStatus::Active), new.clone()])], SearchMode::Semantic, &recent, false);
    assert_eq!(r[0].candidate.fields.status, Some(DecisionStatus::Active));
    let r = rank(vec![pool(vec![decision(DecisionStatus::Superseded), new])], SearchMode::Semantic, &recent, false);
    assert_eq!(r[1].candidate.fields.status, Some(DecisionStatus::Superseded));
}

#[test]
fn relevance_reads_the_signals_with_the_pools_model() {
    let docs =
        || vec![cand("a", 1, Some(0.9), Some(8.0)), cand("a", 5, Some(0.5), None), cand("b", 2, None, Some(4.0))];
    let by_label = |r: Vec<Ranked>| -> BTreeMap<String, u8> { r.iter().map(|h| (label(h), h.relevance)).collect() };
    let ranked = |model: &str, ranking: Ranking| {
        by_label(rank(vec![Pool { model: model.into(), ..pool(docs()) }], SearchMode::Hybrid, &ranking, false))
    };
    for model in ["multilingual-e5-small", "all-MiniLM-L6-v2-onnx-int8", "potion-base-8M"] {
        let own = Ranking { context: Context::NONE, ..Ranking::for_model(model) };
        // Blend and RRF scores are relative to their pool, and another lexical weight
        // orders differently: the relevance reads the same signals through the curve.
        for fusion in [
            Fusion::Blend { semantic_weight: 0.5 },
            Fusion::Rrf { k: 60.0 },
            Fusion::Calibrated { lexical_weight: 1.0 },
        ] {
            assert_eq!(ranked(model, Ranking { fusion, ..own }), ranked(model, own), "{model} {fusion:?}");
        }
        // Recency reorders without changing what a hit is worth.
        let recent = Ranking { recent: Some(Recency { half_life_days: 1.0, weight: 5.0, now_ms: 0 }), ..own };
        assert_eq!(ranked(model, recent), ranked(model, own), "{model}");
    }
    // Each model reads with its own curves: MiniLM's hits with these signals answered less
    // often than e5's.
    let strong = Signals { semantic_z: Some(9.0), lexical_share: Some(1.0), ..Default::default() };
    let e5 = relevance(SearchMode::Hybrid, &Curves::for_model("multilingual-e5-small"), &strong, Chosen::all(1000.0));
    let mini = relevance(SearchMode::Hybrid, &Curves::for_model("all-minilm-l6-v2"), &strong, Chosen::all(1000.0));
    assert!(mini < e5, "MiniLM {mini}, e5 {e5}");
    // Two pools of two models in one search (a collection mid-migration): each hit reads
    // with its own pool's model (the test's backgrounds are not a real model's: no prior).
    let pools = vec![
        Pool { model: "multilingual-e5-small".into(), ..pool(vec![cand("a", 1, Some(0.9), None)]) },
        Pool { model: "all-minilm-l6-v2".into(), ..pool(vec![cand("b", 1, Some(0.9), None)]) },
    ];
    let r =
        by_label(rank(pools, SearchMode::Semantic, &Ranking { background_prior: 0.0, ..Ranking::default() }, false));
    assert!(r["b:1"] < r["a:1"], "{r:?}");
    // An unknown model reads as e5.
    assert_eq!(Curves::for_model("hash-384"), Curves::for_model("multilingual-e5-small-q4"));
}

#[test]
fn a_small_history_is_not_its_own_yardstick() {
    // One session of 16 vectors, every one close to the question (mean 0.84): alone, its best
    // cosine 0.89 stands barely above them. With e5's typical background beside it (mean
    // 0.778, spread 0.0205, weighing 256 vectors), the same hit stands out as it would in a
    // large history, and its relevance reads higher.
    let model = "multilingual-e5-small-q4";
    let mut own = Background::default();
    for c in [0.80, 0.82, 0.84, 0.86, 0.88] {
        own.add(c);
    }
    own.represents(16);
    let search = |prior: f32| {
        let p = Pool {
            candidates: vec![cand("s", 1, Some(0.89), None), cand("s", 2, Some(0.83), None)],
            model: model.into(),
            background: own,
            lexical: LexicalScale { reference: 1.0, required: 0.0 },
            admitted: None,
        };
        rank(vec![p], SearchMode::Semantic, &Ranking { background_prior: prior, ..NO_CONTEXT }, false)
    };
    let (alone, typical) = (search(0.0), search(256.0));
    assert_eq!(order(&alone), order(&typical), "one model's hits keep their order");
    let z = |r: &[Ranked]| r[0].candidate.signals.semantic_z.unwrap();
    assert!(z(&alone) < 2.0 && z(&typical) > 4.0, "z {} alone, {} with the prior", z(&alone), z(&typical));
    assert!(typical[0].relevance > alone[0].relevance);
    // A model with no measured background ignores the prior.
    let other = |prior: f32| {
        let p = Pool {
            candidates: vec![cand("s", 1, Some(0.89), None)],
            model: "hash-384".into(),
            background: own,
            ..pool(vec![])
        };
        rank(vec![p], SearchMode::Semantic, &Ranking { background_prior: prior, ..NO_CONTEXT }, false)[0].score
    };
    assert_eq!(other(0.0), other(256.0));
}

#[test]
fn the_same_score_reads_higher_among_fewer_vectors() {
    let curves = Curves::for_model("multilingual-e5-small");
    let s = Signals { semantic_z: Some(8.0), lexical_share: Some(0.5), ..Default::default() };
    for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
        let read = |n: f64| relevance(mode, &curves, &s, Chosen::all(n));
        assert!(read(20.0) > read(1_000.0) && read(1_000.0) > read(100_000.0), "{mode:?}");
    }
    // Lexical relevance does not depend on the size (the prompt hook's bar reads it).
    let read = |n: f64| relevance(SearchMode::Lexical, &curves, &s, Chosen::all(n));
    assert_eq!(read(20.0), read(100_000.0));
}

#[test]
fn a_filter_that_narrows_the_candidates_reads_its_hits_higher() {
    // The same candidates in a collection of 1,000 vectors, searched whole and with a filter
    // that let a twentieth of its documents through (a file, a session): the order is the
    // same, the relevance of the filtered search reads higher (e5's hybrid curve), and a pool
    // that let everything through reads as one with no filter.
    let model = "multilingual-e5-small";
    let search = |admitted: Option<f64>, mode: SearchMode| {
        let p = Pool {
            model: model.into(),
            admitted,
            ..pool(vec![cand("s", 1, Some(0.62), Some(6.0)), cand("s", 2, Some(0.55), None)])
        };
        rank(vec![p], mode, &Ranking { background_prior: 0.0, ..NO_CONTEXT }, false)
    };
    let read = |r: &[Ranked]| r.iter().map(|h| h.relevance).collect::<Vec<_>>();
    let (whole, narrowed) = (search(None, SearchMode::Hybrid), search(Some(0.05), SearchMode::Hybrid));
    assert_eq!(order(&whole), order(&narrowed));
    assert!(read(&whole).iter().zip(read(&narrowed)).all(|(w, n)| n > *w), "{:?} {:?}", read(&whole), read(&narrowed));
    assert_eq!(read(&search(Some(1.0), SearchMode::Hybrid)), read(&whole));
    // Fitted for hybrid search only: semantic and lexical readings do not move.
    for mode in [SearchMode::Semantic, SearchMode::Lexical] {
        assert_eq!(read(&search(Some(0.05), mode)), read(&search(None, mode)), "{mode:?}");
    }
    // A model whose lift was not fitted reads a filtered search as a whole one.
    let curves = Curves::for_model("all-minilm-l6-v2");
    let s = Signals { semantic_z: Some(8.0), lexical_share: Some(0.5), ..Default::default() };
    let narrowed = Chosen { vectors: 1000.0, admitted: 50.0 };
    assert_eq!(
        relevance(SearchMode::Hybrid, &curves, &s, narrowed),
        relevance(SearchMode::Hybrid, &curves, &s, Chosen::all(1000.0))
    );
}

#[test]
fn what_a_filter_narrowed_is_summed_over_collections_as_vectors() {
    // Two collections of one model: one of 1,000 vectors whose filter let a twentieth of its
    // documents through, one of 3,000 that it let through whole (a session filter matching
    // every document of a one-session project): the hits were chosen from 4,000 vectors, of
    // which 3,050 passed. A collection the filter left nothing of sent no sample and counts
    // for neither.
    let model = "multilingual-e5-small";
    let mut big = background();
    big.represents(3000);
    let pools = vec![
        Pool { model: model.into(), admitted: Some(0.05), ..pool(vec![cand("a", 1, Some(0.62), Some(6.0))]) },
        Pool { model: model.into(), admitted: Some(1.0), background: big, ..pool(vec![cand("b", 1, Some(0.5), None)]) },
        Pool { model: model.into(), admitted: Some(0.0), background: Background::default(), ..pool(vec![]) },
    ];
    let ranked = rank(pools, SearchMode::Hybrid, &Ranking { background_prior: 0.0, ..NO_CONTEXT }, false);
    let curves = Curves::for_model(model);
    for r in &ranked {
        let want =
            relevance(SearchMode::Hybrid, &curves, &r.candidate.signals, Chosen { vectors: 4000.0, admitted: 3050.0 });
        assert_eq!(r.relevance, want, "{}", label(r));
    }
    // However far a filter narrows, the reading stops where the fitted questions stopped.
    let s = Signals { semantic_z: Some(2.0), ..Default::default() };
    let read = |admitted: f64| relevance(SearchMode::Hybrid, &curves, &s, Chosen { vectors: 100_000.0, admitted });
    assert!(read(1_000.0) > read(100_000.0));
    assert_eq!(read(1.0), read(100_000.0 / 5.7f64.exp()));
}

#[test]
fn a_question_about_a_decision_lifts_the_message_it_was_made_in() {
    // a:1 asked ("Redis or Postgres?") and matches best; a:2 is the person's decision, the
    // message a decision was extracted from; a:3 the agent's reply.
    let deciding = {
        let mut d = Document::message("a", "a-2", 2, Role::User, "Redisにする、TTLが要るから。");
        d.decides = true;
        cand_of(d, Some(0.3), Some(5.0))
    };
    let p = || pool(vec![cand("a", 1, Some(0.34), Some(5.0)), deciding.clone(), cand("a", 3, Some(0.31), Some(5.0))]);
    let lift = Ranking { decision_lift: 1.0, ..NO_CONTEXT };
    let other = rank(vec![p()], SearchMode::Hybrid, &lift, false);
    assert_eq!(order(&other), ["a:1", "a:3", "a:2"], "another question is not changed by it");
    assert!(other.iter().all(|r| r.candidate.signals.decision == 0.0));
    let about = rank(vec![p()], SearchMode::Hybrid, &lift, true);
    assert_eq!(order(&about)[0], "a:2", "the message where it was decided leads");
    let get = |r: &[Ranked], l: &str| r.iter().find(|x| label(x) == l).unwrap().clone();
    assert_eq!(get(&about, "a:2").candidate.signals.decision, 1.0);
    assert!((get(&about, "a:2").score - get(&other, "a:2").score - 1.0).abs() < 1e-5);
    for l in ["a:1", "a:3"] {
        assert_eq!(get(&about, l).score, get(&other, l).score, "{l}");
    }
    // Semantic search alone reads no lift.
    let semantic = rank(vec![p()], SearchMode::Semantic, &lift, true);
    assert!(semantic.iter().all(|r| r.candidate.signals.decision == 0.0));
}
