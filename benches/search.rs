//! Core engine at 10k and 100k documents (384 dims, seeded clustered vectors, no embedding):
//! bulk insert (with and without the lexical index), search latency by selectivity with the
//! plan that ran and recall@10 against the exact scan, semantic / lexical / hybrid latency for
//! text queries (synthetic Zipf-distributed words; the hash embedder's query embedding costs
//! microseconds), cold open, rebuild, bytes on disk per document.
//!
//! Run: `cargo bench --bench search` (prints markdown tables). `CONVDEX_BENCH_SIZES=10000`
//! limits the sizes. `CONVDEX_BENCH_PARTS=rebuild` runs only the graph-rebuild sweep: the same
//! stored vectors rebuilt with several HNSW parameter sets, each timed (read + insert + dump)
//! and scored by recall@10 against the exact scan, with both searches' p50 (the walk forced,
//! the scan forced); `CONVDEX_BENCH_HNSW=16:100,16:64` picks the sets (M:ef_construction).
//! `CONVDEX_BENCH_PARTS=translation` times lexical search over the shared transcripts with the
//! query's translation off and on (see [`translation`]); `CONVDEX_BENCH_PARTS=gloss` times
//! search by meaning with the real default model and the query's glosses off and on (see
//! [`gloss`]).

mod common;

use std::sync::Arc;
use std::time::Instant;

use convdex::testutil::clustered_vectors;
use convdex::{CollectionOptions, Document, HashEmbedder, Index, Options, Role, SearchMode};

const SEED: u64 = 0xBE7C_2026;
const DIM: usize = 384;
const QUERIES: usize = 200;
const K: usize = 10;

fn index(dir: &std::path::Path) -> Index {
    index_with(dir, true)
}

fn index_with(dir: &std::path::Path, lexical: bool) -> Index {
    index_hnsw(dir, lexical, convdex::HnswParams::default())
}

fn index_hnsw(dir: &std::path::Path, lexical: bool, hnsw: convdex::HnswParams) -> Index {
    let options = CollectionOptions { lexical_index: lexical, hnsw, ..CollectionOptions::default() };
    let opts = Options::default().embedder(Arc::new(HashEmbedder::new(DIM))).collection(options);
    Index::open(dir, opts).unwrap()
}

/// Share of the exact scan's hits that a search found too (recall@k of one query).
fn overlap(hits: &convdex::Hits, exact: &convdex::Hits) -> f64 {
    let e: Vec<_> = exact.iter().map(|h| h.doc.id).collect();
    hits.iter().filter(|h| e.contains(&h.doc.id)).count() as f64 / e.len().max(1) as f64
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes = common::sizes();
    println!("seed {SEED:#x}, dim {DIM}, {QUERIES} queries, k {K}");
    let parts = std::env::var("CONVDEX_BENCH_PARTS").unwrap_or_else(|_| "engine".into());
    if parts.contains("translation") {
        translation();
    }
    if parts.contains("gloss") {
        gloss();
    }
    for n in sizes {
        if parts.contains("engine") {
            run(n);
        }
        if parts.contains("rebuild") {
            rebuild_sweep(n);
        }
    }
}

/// What translating the query costs a search by words: the shared transcripts (37 projects,
/// English, Chinese, Japanese, Korean; indexed with the hash embedder, since lexical search needs
/// no model), every question of `tests/data/multilingual.tsv` and `search_queries.json` asked
/// across all projects in lexical mode, with translation off and at the default, 5 rounds.
fn translation() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let idx = index(dir.path());
    let roots = common::corpus_roots(&root.join("../shared/data/transcripts"));
    let t = Instant::now();
    let report = convdex::index_paths(&idx, &roots, &convdex::IndexOptions::default()).unwrap();
    let indexed = t.elapsed().as_secs_f64();
    let mut queries = questions(&root.join("tests/data/multilingual.tsv"));
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("tests/data/search_queries.json")).unwrap()).unwrap();
    let found = |v: &serde_json::Value| v.get("query").and_then(|q| q.as_str()).map(str::to_string);
    queries.extend(cases.get("queries").and_then(|q| q.as_array()).into_iter().flatten().filter_map(found));
    println!();
    println!(
        "## translation: {} questions across {} projects ({} sessions, indexed in {indexed:.0} s), lexical search, 5 rounds",
        queries.len(),
        idx.collections().unwrap().len(),
        report.sessions_new
    );
    println!();
    latency_rows(&idx, &queries, 5, SearchMode::Lexical, "translation", [0.0, convdex::DEFAULT_TRANSLATION], |q, w| {
        q.ranking.translation = w;
    });
}

/// What glossing the query costs a search by meaning ([`convdex::Ranking::gloss`]: one more
/// query embedding per gloss): two small projects of the shared transcripts indexed with the
/// real default model, every question of the multilingual sets of `tests/data/` asked
/// across them in semantic mode with glosses off and on, 3 rounds. The cost does not depend on
/// the size of the index: it is the model's.
fn gloss() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let idx = Index::open(dir.path(), Options::default()).unwrap();
    let roots: Vec<_> = common::corpus_roots(&root.join("../shared/data/transcripts"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("tyzerrr") || p.to_string_lossy().contains("Eiji1202"))
        .collect();
    convdex::index_paths(&idx, &roots, &convdex::IndexOptions::default()).unwrap();
    let mut sets: Vec<_> = std::fs::read_dir(root.join("tests/data"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("multilingual")))
        .collect();
    sets.sort();
    let queries: Vec<String> = sets.iter().flat_map(|set| questions(set)).collect();
    let glossary = convdex::Glossary::builtin();
    // A question holding Chinese, Japanese or Korean script (kana, Han, Hangul syllables) is
    // glossed into the other languages; an English one asks with a second vector, glossed into
    // the scripts a project holds, over a project written partly in them (as `query_vectors`
    // decides).
    let cjk = |q: &String| {
        q.chars().any(|c| matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0xAC00..=0xD7AF))
    };
    let (in_cjk, english): (Vec<String>, Vec<String>) = queries.into_iter().partition(|q| cjk(q));
    let on = match convdex::Ranking::default().gloss {
        w if w > 0.0 => w,
        _ => 1.0,
    };
    let model = idx.embedder().unwrap().model_id().to_string();
    let glosses: usize = in_cjk.iter().map(|q| glossary.glosses(q).len()).sum();
    let known = english.iter().filter(|q| !glossary.glosses(q).is_empty()).count();
    let projects: Vec<String> = idx.collections().unwrap().into_iter().map(|c| c.project).collect();
    println!();
    println!(
        "## gloss: {} questions in Chinese, Japanese or Korean script ({glosses} glosses in all), semantic search, {model}, 3 rounds",
        in_cjk.len()
    );
    println!();
    latency_rows(&idx, &in_cjk, 3, SearchMode::Semantic, "gloss", [0.0, on], |q, w| q.ranking.gloss = w);
    println!();
    println!(
        "## gloss: {} English questions ({known} with a word the glossary writes in other languages), projects {projects:?}, semantic search, {model}, 3 rounds",
        english.len()
    );
    println!();
    latency_rows(&idx, &english, 3, SearchMode::Semantic, "gloss", [0.0, on], |q, w| q.ranking.gloss = w);
}

/// The questions (column 7) of a multilingual set in `tests/data/`.
fn questions(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split('\t').nth(6).map(str::to_string))
        .collect()
}

/// One table of search latency: every question asked `rounds` times in `mode` at each weight
/// (`set` puts the weight into the query), p50, p95 and the ratio to the first weight's p50.
fn latency_rows(
    idx: &Index,
    queries: &[String],
    rounds: usize,
    mode: SearchMode,
    name: &str,
    weights: [f32; 2],
    set: impl Fn(&mut convdex::Query, f32),
) {
    println!("| {name} | p50 ms | p95 ms | vs off (p50) |");
    println!("|---:|---:|---:|---:|");
    let mut base = None;
    for w in weights {
        let mut times = Vec::new();
        for _ in 0..rounds {
            for q in queries {
                let mut query = convdex::Query::new(q.clone());
                query.mode = Some(mode);
                set(&mut query, w);
                let t = Instant::now();
                idx.search(None, &query).unwrap();
                times.push(t.elapsed());
            }
        }
        let (p50, p95) = (common::pct_ms(times.clone(), 0.5), common::pct_ms(times, 0.95));
        let base = *base.get_or_insert(p50);
        println!("| {w} | {p50:.2} | {p95:.2} | {:.2}× |", p50 / base);
    }
}

/// The graph rebuilt from the same stored vectors with several parameter sets (M,
/// ef_construction), in one run: time to rebuild and dump, and recall@10 of unfiltered searches
/// against the exact scan.
fn rebuild_sweep(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let vectors = clustered_vectors(n + QUERIES, DIM, (n / 100).max(10), SEED);
    let (dv, queries) = vectors.split_at(n);
    let docs: Vec<Document> = (0..n)
        .map(|i| Document::message(&format!("s{}", i % 500), &format!("m{i}"), i as u64, Role::User, "x"))
        .collect();
    {
        // The graph built while inserting is thrown away by the first rebuild (which reads the
        // stored vectors only), so it is built cheaply: at a million documents the default
        // parameters would make the insert take longer than the rebuild it prepares.
        let cheap = convdex::HnswParams { max_connections: 4, ef_construction: 8, ..Default::default() };
        let idx = index_hnsw(dir.path(), false, cheap);
        let coll = idx.collection("bench", "search").unwrap();
        for (d, v) in docs.chunks(10_000).zip(dv.chunks(10_000)) {
            coll.add_embedded(d, v).unwrap();
        }
        coll.flush().unwrap();
    }
    println!();
    println!("## graph rebuild, {n} documents (stored vectors read from redb, inserted, dumped)");
    println!();
    println!("| M | ef_construction | rebuild + dump s | vs first | recall@10 | walk p50 ms | exact scan p50 ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut base = None;
    let sets: Vec<(usize, usize)> = std::env::var("CONVDEX_BENCH_HNSW")
        .ok()
        .map(|v| {
            v.split(',')
                .filter_map(|p| p.split_once(':'))
                .filter_map(|(m, e)| Some((m.trim().parse().ok()?, e.trim().parse().ok()?)))
                .collect()
        })
        .unwrap_or_else(|| vec![(16, 100), (16, 64), (16, 40), (12, 64), (8, 40)]);
    for (m, efc) in sets {
        let hnsw = convdex::HnswParams { max_connections: m, ef_construction: efc, ..Default::default() };
        let idx = index_hnsw(dir.path(), false, hnsw);
        let coll = idx.collection("bench", "search").unwrap();
        coll.wait_for_vector_index();
        let t = Instant::now();
        coll.rebuild_vector_index().unwrap();
        let secs = t.elapsed().as_secs_f64();
        let base = *base.get_or_insert(secs);
        let mut recall = 0.0;
        let (mut walk, mut scan) = (Vec::new(), Vec::new());
        for q in queries {
            let t = Instant::now();
            let hits = coll.search_vector(q.clone()).limit(K).exact(false).run().unwrap();
            walk.push(t.elapsed());
            let t = Instant::now();
            let exact = coll.search_vector(q.clone()).limit(K).exact(true).run().unwrap();
            scan.push(t.elapsed());
            recall += overlap(&hits, &exact);
        }
        println!(
            "| {m} | {efc} | {secs:.1} | {:.2}× | {:.3} | {:.2} | {:.2} |",
            secs / base,
            recall / QUERIES as f64,
            common::pct_ms(walk, 0.5),
            common::pct_ms(scan, 0.5)
        );
    }
}

fn run(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    let vectors = clustered_vectors(n + QUERIES, DIM, (n / 100).max(10), SEED);
    let (dv, queries) = vectors.split_at(n);
    let docs: Vec<Document> = (0..n)
        .map(|i| {
            let text = common::words(i as u64, 30);
            let mut d = Document::message(&format!("s{}", i % 500), &format!("m{i}"), i as u64, Role::User, &text);
            d.tags.push("p100".into());
            for (m, t) in [(2, "p50"), (10, "p10"), (100, "p1"), (1000, "p01")] {
                if i % m == 0 {
                    d.tags.push(t.into());
                }
            }
            d
        })
        .collect();
    let idx = index(dir.path());
    let coll = idx.collection("bench", "search").unwrap();
    let t = Instant::now();
    for (d, v) in docs.chunks(10_000).zip(dv.chunks(10_000)) {
        coll.add_embedded(d, v).unwrap();
    }
    let insert = t.elapsed();
    coll.flush().unwrap();
    let stats = coll.stats().unwrap();
    // The same insert without the lexical index, in the same run.
    let vdir = tempfile::tempdir().unwrap();
    let (vector_only, vector_bytes) = {
        let vidx = index_with(vdir.path(), false);
        let vcoll = vidx.collection("bench", "search").unwrap();
        let t = Instant::now();
        for (d, v) in docs.chunks(10_000).zip(dv.chunks(10_000)) {
            vcoll.add_embedded(d, v).unwrap();
        }
        let e = t.elapsed();
        vcoll.flush().unwrap();
        (e, vcoll.stats().unwrap().bytes_on_disk)
    };
    println!();
    println!("## {n} documents");
    println!();
    println!(
        "bulk insert (redb + graph + lexical, no embedding): {:.1} s = {:.0} docs/s; bytes on disk per document: {:.0}",
        insert.as_secs_f64(),
        n as f64 / insert.as_secs_f64(),
        stats.bytes_on_disk as f64 / n as f64
    );
    println!(
        "without the lexical index: {:.1} s = {:.0} docs/s, {:.0} bytes per document; with it: {:.2}× the time, {:.2}× the bytes",
        vector_only.as_secs_f64(),
        n as f64 / vector_only.as_secs_f64(),
        vector_bytes as f64 / n as f64,
        insert.as_secs_f64() / vector_only.as_secs_f64(),
        stats.bytes_on_disk as f64 / vector_bytes as f64
    );
    println!();
    println!("| filter | candidates | plan | p50 ms | p99 ms | exact p50 ms | recall@10 |");
    println!("|---|---:|---|---:|---:|---:|---:|");
    for tag in ["none", "p50", "p10", "p1", "p01"] {
        let (mut lat, mut elat) = (Vec::new(), Vec::new());
        let mut recall = 0.0;
        let mut plan = None;
        for q in queries {
            let build = || {
                let b = coll.search_vector(q.clone()).limit(K);
                if tag == "none" { b } else { b.tags_any([tag]) }
            };
            let t = Instant::now();
            let hits = build().run().unwrap();
            lat.push(t.elapsed());
            let t = Instant::now();
            let exact = build().exact(true).run().unwrap();
            elat.push(t.elapsed());
            recall += overlap(&hits, &exact);
            plan = Some(hits.plan);
        }
        let plan = plan.unwrap();
        println!(
            "| {tag} | {} | {:?} | {:.2} | {:.2} | {:.2} | {:.3} |",
            plan.candidates,
            plan.path,
            common::pct_ms(lat.clone(), 0.5),
            common::pct_ms(lat, 0.99),
            common::pct_ms(elat, 0.5),
            recall / QUERIES as f64
        );
    }
    println!();
    println!("| text query (3 words) | filter | p50 ms | p99 ms |");
    println!("|---|---|---:|---:|");
    for mode in [SearchMode::Semantic, SearchMode::Lexical, SearchMode::Hybrid] {
        for tag in ["none", "p10"] {
            let mut lat = Vec::new();
            for q in 0..QUERIES {
                let text = common::words(1_000_000 + q as u64, 3);
                let b = coll.search(&text).mode(mode).limit(K);
                let b = if tag == "none" { b } else { b.tags_any([tag]) };
                let t = Instant::now();
                let _ = b.run().unwrap();
                lat.push(t.elapsed());
            }
            println!(
                "| {mode:?} | {tag} | {:.2} | {:.2} |",
                common::pct_ms(lat.clone(), 0.5),
                common::pct_ms(lat, 0.99)
            );
        }
    }
    drop(coll);
    drop(idx);
    let t = Instant::now();
    let idx = index(dir.path());
    let coll = idx.collection("bench", "search").unwrap();
    let open = t.elapsed();
    coll.wait_for_vector_index();
    let ready = t.elapsed();
    println!();
    println!(
        "cold open (vectors {:?}, lexical {:?}): {:.0} ms; HNSW links ready after {:.0} ms (exact scan answers until then)",
        coll.vector_index_state().unwrap(),
        coll.lexical_index_state(),
        open.as_secs_f64() * 1e3,
        ready.as_secs_f64() * 1e3
    );
    let t = Instant::now();
    coll.rebuild_vector_index().unwrap();
    println!("rebuild from stored vectors (and dump): {:.1} s", t.elapsed().as_secs_f64());
}
