//! Search quality on real transcripts with the real model, in every mode, with and without a
//! matching filter: paraphrased questions written for this test (`tests/data/search_queries.json`)
//! are found semantically and by hybrid search; identifiers, file paths, error strings and
//! quoted phrases (`tests/data/lexical_queries.json`) are found lexically and by hybrid search,
//! each kind with a case semantic search misses. Both files name messages by transcript and
//! uuid. To rank candidate cases, set `LEXICAL_CANDIDATES=<file in the same format>`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use convdex::{DocBody, DocKind, Index, IndexOptions, Options, SearchMode};

use crate::common::model;

#[derive(serde::Deserialize)]
struct Case {
    transcript: String,
    uuids: Vec<String>,
    query: String,
    #[serde(default)]
    known_miss: Option<String>,
}

#[derive(serde::Deserialize)]
struct Cases {
    queries: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct LexicalCase {
    kind: String,
    transcript: String,
    uuids: Vec<String>,
    query: String,
}

#[derive(serde::Deserialize)]
struct LexicalCases {
    queries: Vec<LexicalCase>,
}

/// The project folder and session id of a transcript path (main file or sub-agent file).
fn folder_and_session(transcripts: &Path, transcript: &str) -> (PathBuf, String) {
    let p = transcripts.join(transcript);
    if p.parent().unwrap().file_name().is_some_and(|n| n == "subagents") {
        let session_dir = p.parent().unwrap().parent().unwrap();
        (session_dir.parent().unwrap().to_path_buf(), session_dir.file_name().unwrap().to_string_lossy().into_owned())
    } else {
        (p.parent().unwrap().to_path_buf(), p.file_stem().unwrap().to_string_lossy().into_owned())
    }
}

/// Rank (1-based) of the first hit that is one of `uuids`, in the top 5.
fn rank(hits: &convdex::Hits, uuids: &[String]) -> Option<usize> {
    hits.iter()
        .position(|h| match &h.doc.body {
            DocBody::Message(m) => uuids.contains(&m.message_uuid),
            _ => false,
        })
        .map(|r| r + 1)
}

#[test]
fn paraphrases_identifiers_paths_errors_and_phrases_in_every_mode() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cases: Cases =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/data/search_queries.json")).unwrap()).unwrap();
    let lexical: LexicalCases =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/data/lexical_queries.json")).unwrap()).unwrap();
    let asserted = cases.queries.iter().filter(|c| c.known_miss.is_none()).count();
    assert!(asserted >= 15, "at least 15 asserted queries");
    let transcripts = root.join("../shared/data/transcripts");
    let folders: BTreeSet<PathBuf> = cases
        .queries
        .iter()
        .map(|c| c.transcript.as_str())
        .chain(lexical.queries.iter().map(|c| c.transcript.as_str()))
        .map(|t| folder_and_session(&transcripts, t).0)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let embedder: Arc<dyn convdex::Embedder> = Arc::new(
        convdex::FastEmbedder::with_options(convdex::EmbedOptions::default().model_dir(&model().files().dir)).unwrap(),
    );
    let index = Index::open(dir.path(), Options::default().embedder(embedder)).unwrap();
    let folders: Vec<PathBuf> = folders.into_iter().collect();
    let report =
        convdex::index_paths(&index, &folders, &IndexOptions { tenant: Some("t".into()), ..Default::default() })
            .unwrap();
    println!("indexed {} sessions, {} messages, {} chunks", report.sessions_new, report.messages, report.chunks);
    let collections: Vec<Arc<convdex::Collection>> =
        index.collections().unwrap().iter().map(|c| index.collection(&c.tenant, &c.project).unwrap()).collect();
    let coll_of = |session: &str| {
        collections
            .iter()
            .find(|c| c.sessions().unwrap().iter().any(|s| s == session))
            .unwrap_or_else(|| panic!("session {session} not indexed"))
            .clone()
    };
    // Every case in every mode, without a filter, with its session and with its type.
    let ranks = |coll: &convdex::Collection, query: &str, session: &str, uuids: &[String], mode: SearchMode| {
        let run = |b: convdex::SearchBuilder<'_>| rank(&b.mode(mode).limit(5).run().unwrap(), uuids);
        [
            run(coll.search(query)),
            run(coll.search(query).session(session)),
            run(coll.search(query).kind(DocKind::Message)),
        ]
    };
    let mut misses = Vec::new();
    let mut semantic_only = 0;
    let (mut found_semantic, mut found_hybrid) = (0, 0);
    for case in &cases.queries {
        let (_, session) = folder_and_session(&transcripts, &case.transcript);
        let coll = coll_of(&session);
        let [sem, lex, hyb] = [SearchMode::Semantic, SearchMode::Lexical, SearchMode::Hybrid]
            .map(|m| ranks(&coll, &case.query, &session, &case.uuids, m));
        println!("semantic {sem:?} lexical {lex:?} hybrid {hyb:?}: {}", case.query);
        if sem[0].is_some() && lex[0].is_none() {
            semantic_only += 1;
        }
        found_semantic += sem.iter().filter(|r| r.is_some()).count();
        found_hybrid += hyb.iter().filter(|r| r.is_some()).count();
        if case.known_miss.is_none() && sem.iter().any(Option::is_none) {
            misses.push(format!("semantic: {} {sem:?}", case.query));
        }
    }
    let mut semantic_missed = BTreeSet::new();
    if let Ok(path) = std::env::var("LEXICAL_CANDIDATES") {
        let cands: LexicalCases = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        for case in &cands.queries {
            let (_, session) = folder_and_session(&transcripts, &case.transcript);
            let coll = coll_of(&session);
            let [sem, lex] = [SearchMode::Semantic, SearchMode::Lexical]
                .map(|m| ranks(&coll, &case.query, &session, &case.uuids, m));
            println!("CAND\t{}\t{:?}\t{:?}\t{}", case.kind, sem[0], lex[0], case.query);
        }
        return;
    }
    for case in &lexical.queries {
        let (_, session) = folder_and_session(&transcripts, &case.transcript);
        let coll = coll_of(&session);
        let [sem, lex, hyb] = [SearchMode::Semantic, SearchMode::Lexical, SearchMode::Hybrid]
            .map(|m| ranks(&coll, &case.query, &session, &case.uuids, m));
        println!("{}: semantic {sem:?} lexical {lex:?} hybrid {hyb:?}: {}", case.kind, case.query);
        for (mode, r) in [("lexical", lex), ("hybrid", hyb)] {
            if r.iter().any(Option::is_none) {
                misses.push(format!("{mode} ({}): {} {r:?}", case.kind, case.query));
            }
        }
        if sem[0].is_none() {
            semantic_missed.insert(case.kind.clone());
        }
        // The snippet shows the match.
        let hits = coll.search(&case.query).mode(SearchMode::Lexical).limit(5).run().unwrap();
        let top = hits
            .iter()
            .find(|h| rank(&convdex::Hits { hits: vec![(*h).clone()], plan: hits.plan }, &case.uuids).is_some());
        if let Some(h) = top {
            let snip = h.snippet.as_deref().unwrap_or_default();
            assert!(snip.contains('['), "no highlighted snippet for `{}`: {snip:?}", case.query);
            assert!(h.signals.lexical.is_some() && h.signals.lexical_rank.is_some());
        }
    }
    for c in cases.queries.iter().filter(|c| c.known_miss.is_some()) {
        println!("known miss (reported, not asserted): {}", c.query);
    }
    println!("paraphrases in the top 5 (3 searches each): semantic {found_semantic}, hybrid {found_hybrid}");
    assert!(semantic_only >= 1, "no paraphrase was found semantically but missed lexically");
    assert!(found_hybrid >= found_semantic, "hybrid finds fewer paraphrases than semantic search");
    // With all-MiniLM-L6-v2 every kind had a case semantic search missed; multilingual-e5-small
    // finds the identifier, error and phrase cases by meaning too (2026-11-24) and still misses
    // a file path: words stay necessary.
    println!("kinds with a case semantic search misses: {semantic_missed:?}");
    assert!(!semantic_missed.is_empty(), "no lexical case is missed by semantic search");
    assert!(misses.is_empty(), "not in the top 5: {misses:#?}");
}

/// Across languages, with the default model, on real transcripts: an English question finds a
/// Chinese session (a Windows history: a release APK that never finishes installing on a
/// Huawei phone) and a Chinese question finds an English one (pushing the `.claude` directory
/// to a GitHub repository), by meaning alone and in the default hybrid search. Both questions
/// come from `tests/data/multilingual.tsv` (ids 10 and 47). English-only MiniLM's ranks are
/// printed for comparison. With e5, the Chinese question's glosses bring it closer to the
/// English session.
#[test]
fn a_chinese_question_finds_an_english_session_and_the_reverse() {
    let transcripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let h = tempfile::tempdir().unwrap();
    let files = [
        ("13562964800+claude-skills/projects/C--Users-Administrator", "737cdee4-7c23-4c05-adf7-6e7417388b68"),
        ("13562964800+claude-skills/projects/C--Users-Administrator", "b244d562-da4e-4f3c-bb42-87ce2ac1d512"),
        ("13562964800+claude-skills/projects/C--Users-Administrator", "9bca3372-c42b-43b5-8b96-50ecd5975c47"),
        ("CaptainRandom00+Claude-Code/projects/-Users-cedricmukolonga--claude", "db754e41-47a2-4161-95da-658664903487"),
    ];
    for (folder, session) in files {
        let dst = h.path().join(Path::new(folder).file_name().unwrap());
        std::fs::create_dir_all(&dst).unwrap();
        std::fs::copy(transcripts.join(folder).join(format!("{session}.jsonl")), dst.join(format!("{session}.jsonl")))
            .unwrap();
    }
    let folders: Vec<PathBuf> = std::fs::read_dir(h.path()).unwrap().flatten().map(|e| e.path()).collect();
    let cases = [
        ("release APK starts installing on a Huawei phone but never says it finished", "b244d562"),
        ("把我的 .claude 目录推送到 GitHub 仓库保存", "db754e41"),
    ];
    let mut ranks = Vec::new();
    for model_name in ["multilingual-e5-small", "all-minilm-l6-v2"] {
        let dir = tempfile::tempdir().unwrap();
        let mut options = Options::default();
        options.embed = options.embed.model(model_name);
        let index = Index::open(dir.path(), options).unwrap();
        convdex::index_paths(&index, &folders, &IndexOptions { tenant: Some("t".into()), ..Default::default() })
            .unwrap();
        for (query, session) in cases {
            for mode in [SearchMode::Semantic, SearchMode::Hybrid] {
                let mut q = convdex::Query::new(query);
                q.mode = Some(mode);
                q.limit = 5;
                let hits = index.search(None, &q).unwrap().found;
                let rank = hits.iter().position(|h| h.hit.doc.session_id.starts_with(session)).map(|r| r + 1);
                println!("{model_name} {mode:?} {rank:?}: {query}");
                ranks.push((model_name, mode, query, rank));
            }
        }
        if model_name == "multilingual-e5-small" {
            // The Chinese question's glosses (its glossary words in English, Japanese and
            // Korean, `Ranking::gloss`) bring its vector closer to the English session's.
            let (query, session) = cases[1];
            let closest = |gloss: f32| {
                let mut q = convdex::Query::new(query);
                q.mode = Some(SearchMode::Semantic);
                q.limit = 50;
                q.ranking.gloss = gloss;
                let found = index.search(None, &q).unwrap().found;
                let own = found.iter().filter(|h| h.hit.doc.session_id.starts_with(session));
                own.filter_map(|h| h.hit.signals.semantic).fold(f32::MIN, f32::max)
            };
            let (plain, glossed) = (closest(0.0), closest(1.0));
            println!("{model_name}: best cosine of the English session, plain {plain:.3}, with glosses {glossed:.3}");
            assert!(plain > f32::MIN && glossed > plain, "plain {plain}, with glosses {glossed}");
        }
    }
    for (model_name, mode, query, rank) in &ranks {
        if *model_name == "multilingual-e5-small" {
            assert!(rank.is_some(), "{mode:?}: not in the top 5: {query}");
        }
    }
}
