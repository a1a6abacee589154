//! The team store (PostgreSQL 16.2 with pgvector 0.6.2, PyPI's `pgserver`) beside the embedded
//! store on the same documents: 10k and 100k documents in one project, or a million in ten
//! projects of 100k (384 dims, seeded clustered vectors and Zipf-distributed words as
//! `benches/search.rs`; the hash embedder, whose query embedding costs microseconds, so the
//! times are the stores'), pushed with `TeamStore::push` (documents, words and vectors; a first
//! push of a project loads its rows, then builds its HNSW index), then the same text questions
//! asked of both stores, across every project, by meaning, by words and both: push throughput,
//! bytes per document in each store, search p50 and p95 and their ratio, the team store's both
//! with its projects asked at once (the default, [`TeamStore::with_readers`]) and in turn.
//!
//! Run: `cargo bench --bench team` (prints a markdown table). `CONVDEX_BENCH_SIZES=10000`
//! picks the sizes (`1000000`: about half an hour on 2 cores); `CONVDEX_BENCH_PER_PROJECT`
//! the documents per project (default 100,000); `CONVDEX_TEAM_URL` asks a running server instead of starting one (its
//! `cdx_bench` schema is dropped before and after).

mod common;
// Its `as_user` is the tests'.
#[allow(dead_code)]
#[path = "../tests/support/pgserver.rs"]
mod pgserver;

use std::sync::Arc;
use std::time::Instant;

use convdex::team::{TeamQuery, TeamStore};
use convdex::testutil::clustered_vectors;
use convdex::{Document, Embedder, HashEmbedder, Index, Options, Query, Role, SearchMode};
use pgserver::Postgres;

const SEED: u64 = 0x7EA3_2026;
const DIM: usize = 384;
const QUERIES: usize = 50;
/// Documents per project: a larger size is split into projects of this many
/// (`CONVDEX_BENCH_PER_PROJECT`).
const PER_PROJECT: usize = 100_000;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let sizes = common::sizes();
    let per_project: usize =
        std::env::var("CONVDEX_BENCH_PER_PROJECT").ok().and_then(|v| v.parse().ok()).unwrap_or(PER_PROJECT).max(1);
    let tmp = tempfile::tempdir().unwrap();
    // A server of our own unless one is given.
    let (url, _server) = match std::env::var("CONVDEX_TEAM_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let server = Postgres::start(tmp.path());
            (server.url.clone(), Some(server))
        }
    };
    let store = TeamStore::connect(&url).unwrap();
    store.init().unwrap();
    let in_turn = TeamStore::connect(&url).unwrap().with_readers(1);
    let drop_bench = || sql(&url, "DROP SCHEMA IF EXISTS cdx_bench CASCADE");
    drop_bench();
    let version =
        query_one(&url, "SELECT version() || ', pgvector ' || extversion FROM pg_extension WHERE extname = 'vector'");
    println!("seed {SEED:#x}, dim {DIM}, {QUERIES} questions per mode, 3 rounds; {version}");
    println!();
    println!(
        "| documents | push s | pushed docs/s | team bytes/doc | embedded bytes/doc | mode | team p50 ms | team p95 ms | in turn p50 ms | in turn p95 ms | embedded p50 ms | embedded p95 ms | team / embedded p50 | in turn / at once p50 |"
    );
    println!("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let embedder = Arc::new(HashEmbedder::new(DIM));
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let idx = Index::open(dir.path(), Options::default().embedder(embedder.clone())).unwrap();
        let projects = n.div_ceil(per_project);
        let mut embedded_bytes = 0.0;
        for p in 0..projects {
            let (from, to) = (p * per_project, ((p + 1) * per_project).min(n));
            let coll = idx.collection("bench", &format!("p{n}-{p}")).unwrap();
            let vectors = clustered_vectors(to - from, DIM, ((to - from) / 100).max(10), SEED + p as u64);
            let docs: Vec<Document> = (from..to)
                .map(|i| {
                    let text = common::words(i as u64, 30);
                    Document::message(&format!("s{}", i % 500), &format!("m{i}"), i as u64, Role::User, &text)
                })
                .collect();
            for (d, v) in docs.chunks(10_000).zip(vectors.chunks(10_000)) {
                coll.add_embedded(d, v).unwrap();
            }
            coll.flush().unwrap();
            embedded_bytes += coll.stats().unwrap().bytes_on_disk as f64 / n as f64;
        }
        let t = Instant::now();
        let report = store.push(&idx, None).unwrap();
        let push = t.elapsed().as_secs_f64();
        assert_eq!((report.sent, report.collections), (n, projects), "every document pushed");
        let team_bytes: f64 = query_one(
            &url,
            &format!(
                "SELECT (sum(pg_total_relation_size(c.oid)) / {n})::text FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
                 WHERE s.nspname = 'cdx_bench' AND c.relkind = 'r'"
            ),
        )
        .parse()
        .unwrap();
        let glossary = idx.options().collection.glossary.clone();
        for mode in [SearchMode::Semantic, SearchMode::Lexical, SearchMode::Hybrid] {
            let (mut team, mut turn, mut embedded) = (Vec::new(), Vec::new(), Vec::new());
            for round in 0..3 {
                for i in 0..QUERIES {
                    let mut q = Query::new(common::words(1_000_000 + i as u64, 4));
                    q.mode = Some(mode);
                    let t = Instant::now();
                    let local = idx.search(None, &q).unwrap();
                    let e = t.elapsed();
                    let tq = TeamQuery { tenant: Some("bench".into()), ..TeamQuery::of(&q) };
                    let t = Instant::now();
                    let hits = store.search(&tq, Some(embedder.as_ref() as &dyn Embedder), &glossary).unwrap();
                    let tt = t.elapsed();
                    let t = Instant::now();
                    let one_by_one = in_turn.search(&tq, Some(embedder.as_ref() as &dyn Embedder), &glossary).unwrap();
                    let ti = t.elapsed();
                    assert!(!hits.is_empty() && !local.found.is_empty(), "{mode:?}: both stores answer");
                    let ids = |h: &[convdex::team::TeamHit]| h.iter().map(|x| x.doc.id).collect::<Vec<_>>();
                    assert_eq!(ids(&hits), ids(&one_by_one), "{mode:?}: asked at once or in turn, the same hits");
                    // The first round warms both (the graph's links, the server's buffers).
                    if round > 0 {
                        embedded.push(e);
                        team.push(tt);
                        turn.push(ti);
                    }
                }
            }
            let (tp50, tp95) = (common::pct_ms(team.clone(), 0.5), common::pct_ms(team, 0.95));
            let (ep50, ep95) = (common::pct_ms(embedded.clone(), 0.5), common::pct_ms(embedded, 0.95));
            let (ip50, ip95) = (common::pct_ms(turn.clone(), 0.5), common::pct_ms(turn, 0.95));
            println!(
                "| {n} ({projects} project{}) | {push:.1} | {:.0} | {team_bytes:.0} | {embedded_bytes:.0} | {mode:?} | {tp50:.1} | {tp95:.1} | {ip50:.1} | {ip95:.1} | {ep50:.1} | {ep95:.1} | {:.1}× | {:.2}× |",
                if projects == 1 { "" } else { "s" },
                n as f64 / push,
                tp50 / ep50,
                ip50 / tp50
            );
        }
        drop_bench();
    }
}

fn sql(url: &str, statements: &str) {
    postgres::Client::connect(url, postgres::NoTls).unwrap().batch_execute(statements).unwrap();
}

fn query_one(url: &str, q: &str) -> String {
    postgres::Client::connect(url, postgres::NoTls).unwrap().query_one(q, &[]).unwrap().get(0)
}
