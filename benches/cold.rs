//! Cold-process CLI searches, the way a user or a hook runs them: a new `convdex search`
//! process each time, over a synthetic data dir of 20 projects and 100,000 documents (5,000 a
//! project: synthetic Zipf-like words, seeded clustered vectors stored as the default model's,
//! so the real model embeds the query). p50 / p95 wall time, process start included, and peak
//! RSS per mode; the first run of each mode is not counted (it warms the OS page cache).
//!
//! Then the hooks on an index of the whole shared corpus (`../shared/data/transcripts`,
//! default model): `convdex hook prompt` with 50 real user prompts taken from the transcripts
//! at run time (spread over the corpus in time order) and `convdex hook session-start` in 20 of
//! its project directories: p50 / p95 wall time, peak RSS, and how many printed a block.
//!
//! Then the peer users pick for speed, sessionwiki (Rust, SQLite FTS5), on the same input: the
//! shared corpus laid out as one `~/.claude/projects` in a scratch home. Its full sync against
//! convdex's time until searchable by words (and full run), and cold searches of 10 one- and
//! two-word queries, with ratios. The bench installs it into `target/peer` with
//! `cargo install sessionwiki --version 0.34.21 --locked` when it is not there (never a dependency).
//!
//! The search part ends in process on one project: open, add one session, search, rebuild its graph.
//!
//! Last, the prompt hook's recall replayed in time order (`recall`: see [`recall`]).
//!
//! Run: `cargo bench --bench cold` (needs `make models`). `CONVDEX_BENCH_PARTS=search,hooks,peer,recall`
//! picks parts; `CONVDEX_BENCH_COLD=20,100000` sets projects and documents;
//! `CONVDEX_BENCH_RUNS=20` the runs per mode; `CONVDEX_BENCH_AGAINST=path/to/convdex[,…]` times
//! the cold searches of other builds (baselines) and this one in turns, a table per baseline;
//! `CONVDEX_BENCH_KEEP=1` keeps the search part's data dir (to profile against) and prints where.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use convdex::testutil::clustered_vectors;
use convdex::{Document, Embedder, HashEmbedder, Index, Options, Role};

const SEED: u64 = 0xC01D_2026;

/// Stores seeded vectors under the default model's name, so the CLI opens the collections
/// with the real model.
struct AsDefault {
    id: String,
    inner: HashEmbedder,
}

impl Embedder for AsDefault {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> convdex::Result<Vec<Vec<f32>>> {
        self.inner.embed(texts)
    }
}

fn build(dir: &std::path::Path, projects: usize, docs: usize) -> Duration {
    let spec = convdex::models::Manifest::builtin().default_spec();
    let embedder = Arc::new(AsDefault { id: spec.id.clone(), inner: HashEmbedder::new(spec.dimension) });
    let index = Index::open(dir, Options::default().embedder(embedder)).unwrap();
    let per = docs / projects;
    let t = Instant::now();
    for p in 0..projects {
        let coll = index.collection("bench", &format!("project{p:02}")).unwrap();
        let vectors = clustered_vectors(per, spec.dimension, (per / 100).max(10), SEED + p as u64);
        let all: Vec<Document> = (0..per)
            .map(|i| {
                let n = (p * per + i) as u64;
                Document::message(&format!("s{p}-{}", i % 100), &format!("m{n}"), n, Role::User, &common::words(n, 30))
            })
            .collect();
        for (d, v) in all.chunks(5_000).zip(vectors.chunks(5_000)) {
            coll.add_embedded(d, v).unwrap();
        }
        coll.flush().unwrap();
    }
    t.elapsed()
}

/// A real user prompt of the corpus.
#[derive(Clone)]
struct Prompt {
    at: String,
    cwd: String,
    session: String,
    text: String,
    file: std::path::PathBuf,
    uuid: String,
}

/// Real user prompts of the corpus (typed text, not tool results or command output), in time
/// order.
fn prompts(roots: &[std::path::PathBuf]) -> Vec<Prompt> {
    fn files(p: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        if p.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                files(&e.path(), out);
            }
        } else if p.extension().is_some_and(|e| e == "jsonl") && !p.to_string_lossy().contains("subagents") {
            out.push(p.to_path_buf());
        }
    }
    let mut all = Vec::new();
    for r in roots {
        files(r, &mut all);
    }
    let mut found = Vec::new();
    for f in all {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        for line in text.lines() {
            let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
            let (Some("user"), Some(prompt), Some(cwd), Some(at), Some(session)) = (
                v["type"].as_str(),
                v["message"]["content"].as_str(),
                v["cwd"].as_str(),
                v["timestamp"].as_str(),
                v["sessionId"].as_str(),
            ) else {
                continue;
            };
            let p = prompt.trim();
            if v["isSidechain"] == true || p.starts_with('<') || p.len() < 12 || p.len() > 2000 {
                continue;
            }
            found.push(Prompt {
                at: at.to_string(),
                cwd: cwd.to_string(),
                session: session.to_string(),
                text: p.to_string(),
                file: f.clone(),
                uuid: v["uuid"].as_str().unwrap_or_default().to_string(),
            });
        }
    }
    found.sort_by(|a, b| (&a.at, &a.uuid).cmp(&(&b.at, &b.uuid)));
    found
}

/// `n` prompts spread evenly over `all` (in time order).
fn spread(all: &[Prompt], n: usize) -> Vec<&Prompt> {
    let n = n.min(all.len());
    (0..n).map(|i| &all[i * all.len() / n]).collect()
}

fn hooks(runs: usize) {
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let roots = common::corpus_roots(&base);
    let data = tempfile::tempdir().unwrap();
    let mut args = vec!["index", "--json"];
    args.extend(roots.iter().map(|r| r.to_str().expect("UTF-8 corpus path")));
    let indexed = common::convdex(data.path(), &args);
    assert!(indexed.indexed(), "convdex index failed");
    let all = prompts(&roots);
    let picked = spread(&all, 50);
    let mut dirs: Vec<&str> = all.iter().map(|p| p.cwd.as_str()).collect();
    dirs.sort();
    dirs.dedup();
    let dirs: Vec<&str> = (0..20.min(dirs.len())).map(|i| dirs[i * dirs.len() / 20.min(dirs.len())]).collect();
    println!();
    println!(
        "whole shared corpus indexed in {:.1} s; {} real prompts found, {} used; {} project directories",
        indexed.wall.as_secs_f64(),
        all.len(),
        picked.len(),
        dirs.len()
    );
    println!();
    println!("| hook | runs | p50 ms | p95 ms | peak RSS MB | printed a block |");
    println!("|---|---:|---:|---:|---:|---:|");
    let payloads: Vec<(&str, String)> = picked
        .iter()
        // The prompt's own session is excluded, as Claude Code's payload names it; sessions
        // after it are in the index (the block rate is an upper bound).
        .map(|p| ("prompt", serde_json::json!({"session_id": p.session, "cwd": p.cwd, "prompt": p.text}).to_string()))
        .chain(dirs.iter().map(|cwd| {
            ("session-start", serde_json::json!({"session_id": "bench", "cwd": cwd, "source": "startup"}).to_string())
        }))
        .collect();
    for hook in ["prompt", "session-start"] {
        let (mut wall, mut peak, mut blocks, mut n) = (Vec::new(), 0f64, 0, 0);
        for (_, payload) in payloads.iter().filter(|(h, _)| *h == hook) {
            // The first run of each payload warms the page cache; the next `runs` are timed.
            for r in 0..=runs.min(3) {
                let run = common::convdex_with_input(data.path(), &["hook", hook], Some(payload));
                assert!(run.status.success(), "hooks never fail");
                if r == 0 {
                    n += 1;
                    blocks += usize::from(!run.stdout.trim().is_empty());
                } else {
                    wall.push(run.wall);
                    peak = peak.max(run.peak_mb);
                }
            }
        }
        println!(
            "| `convdex hook {hook}` | {} | {:.0} | {:.0} | {peak:.0} | {blocks} of {n} |",
            wall.len(),
            common::pct_ms(wall.clone(), 0.5),
            common::pct_ms(wall, 0.95)
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let parts = std::env::var("CONVDEX_BENCH_PARTS").unwrap_or_else(|_| "search,hooks,peer,recall".into());
    let runs: usize = std::env::var("CONVDEX_BENCH_RUNS").ok().and_then(|r| r.parse().ok()).unwrap_or(20);
    if parts.contains("search") {
        search(runs);
    }
    if parts.contains("hooks") {
        hooks(runs);
    }
    if parts.contains("peer") {
        peer();
    }
    if parts.contains("recall") {
        recall();
    }
}

/// The prompt hook's recall replayed as history happened, for every real prompt of the corpus
/// in three sets (the first 50 spread over it in time order, 150 more spread the same way, and
/// the rest, held out until 2026-11-25 night), each with several recall settings: only
/// documents up to the prompt's time, its own session excluded; each hit compared with the
/// judgement set `tests/data/prompt_judgements.json` (transcript path + prompt uuid + recalled
/// document id → relevant or not; never text). `CONVDEX_BENCH_SHOW=1` prints prompts and hits
/// to stderr, to judge new ones; `CONVDEX_BENCH_DEVELOPMENT_ONLY=1` leaves the third set out.
fn recall() {
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data");
    let roots = common::corpus_roots(&base.join("transcripts"));
    let data = tempfile::tempdir().unwrap();
    let index = Index::open(data.path(), Options::default()).unwrap();
    // Words only: the recall is lexical, so no vector is computed.
    let opts = convdex::IndexOptions { defer_vectors: true, ..Default::default() };
    convdex::index_paths(&index, &roots, &opts).unwrap();
    let judged: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prompt_judgements.json"),
        )
        .unwrap_or_else(|_| "{}".into()),
    )
    .unwrap_or_default();
    let verdict = |file: &str, uuid: &str, doc: &str| -> Option<bool> {
        judged["prompts"].as_array()?.iter().find(|p| p["file"] == file && p["uuid"] == uuid)?["hits"]
            .as_array()?
            .iter()
            .find(|h| h["doc"] == doc)?["relevant"]
            .as_bool()
    };
    let show = std::env::var("CONVDEX_BENCH_SHOW").is_ok();
    let all = prompts(&roots);
    // The 50 prompts the first replay used (and judged), and 150 more never looked at before
    // the defaults below were chosen: the recall's held-out set.
    let first = spread(&all, 50);
    let fresh: Vec<&Prompt> =
        spread(&all, 200).into_iter().filter(|p| !first.iter().any(|f| f.uuid == p.uuid)).take(150).collect();
    // Every other prompt: never looked at before the shared-terms rule (2026-11-25 night) was
    // chosen on the two sets above. `CONVDEX_BENCH_DEVELOPMENT_ONLY=1` leaves it out.
    let rest: Vec<&Prompt> = all.iter().filter(|p| !first.iter().chain(&fresh).any(|f| f.uuid == p.uuid)).collect();
    let before = convdex::RecallOptions {
        other_projects: false,
        skip_repeats: false,
        min_shared_terms: 1,
        ..Default::default()
    };
    let one_term = convdex::RecallOptions { min_shared_terms: 1, other_projects: true, ..Default::default() };
    let two_terms = convdex::RecallOptions { other_projects: true, ..Default::default() };
    println!();
    println!(
        "| prompt recall replayed in time order | prompts | got a block | hits judged relevant | blocks with a relevant hit |"
    );
    println!("|---|---:|---:|---:|---:|");
    let mut sets = vec![("first 50 (seen)", &first), ("150 fresh (seen since 2026-11-24)", &fresh)];
    if std::env::var_os("CONVDEX_BENCH_DEVELOPMENT_ONLY").is_none() {
        sets.push(("the rest (held out)", &rest));
    }
    for (set, picked) in sets {
        let variants = [
            ("this project only, repeats kept, one shared term (2026-11-24 morning)", &before),
            ("other projects' decisions, one shared term (2026-11-24 defaults)", &one_term),
            ("other projects' decisions, two shared terms", &two_terms),
            ("defaults: this project only, two shared terms", &Default::default()),
        ];
        for (name, defaults) in variants {
            let mut tally = Tally::default();
            if show {
                eprintln!("\n##### {set}: {name}");
            }
            for p in picked.iter() {
                replay_one(&index, &base, p, defaults, &verdict, show, &mut tally);
            }
            println!(
                "| {set}: {name} | {} | {} | {} of {} judged ({} not judged) | {} of {} |",
                picked.len(),
                tally.blocks,
                tally.relevant,
                tally.hits - tally.unjudged,
                tally.unjudged,
                tally.useful,
                tally.blocks
            );
        }
    }
}

#[derive(Default)]
struct Tally {
    blocks: usize,
    hits: usize,
    relevant: usize,
    unjudged: usize,
    useful: usize,
}

/// One prompt's recall, as history happened: documents up to its time, its session excluded.
fn replay_one(
    index: &Index,
    base: &std::path::Path,
    p: &Prompt,
    defaults: &convdex::RecallOptions,
    verdict: &dyn Fn(&str, &str, &str) -> Option<bool>,
    show: bool,
    tally: &mut Tally,
) {
    let file = p.file.strip_prefix(base).unwrap_or(&p.file).to_string_lossy().replace('\\', "/");
    let until = chrono::DateTime::parse_from_rfc3339(&p.at).ok().map(|t| t.with_timezone(&chrono::Utc));
    let options = convdex::RecallOptions { exclude_session: Some(p.session.clone()), until, ..defaults.clone() };
    let found = match index.project_at(&p.cwd).unwrap() {
        Some(info) => index.recall(&info, &p.text, &options).unwrap(),
        None => Vec::new(),
    };
    if show {
        eprintln!("\n=== {file} {} ({} hits)\n{}", p.uuid, found.len(), convdex::text::prefix_chars(&p.text, 400));
    }
    if found.is_empty() {
        return;
    }
    tally.blocks += 1;
    let mut any = false;
    for h in &found {
        let doc = h.hit.doc.id.to_string();
        tally.hits += 1;
        match verdict(&file, &p.uuid, &doc) {
            Some(true) => {
                tally.relevant += 1;
                any = true;
            }
            Some(false) => {}
            None => tally.unjudged += 1,
        }
        if show {
            eprintln!(
                "  -> {doc} [{}] relevance {}: {}",
                h.project,
                h.hit.relevance,
                convdex::text::prefix_chars(&h.hit.doc.content.replace('\n', " "), 300)
            );
        }
    }
    tally.useful += usize::from(any);
}

/// sessionwiki, installed into `target/peer` on first use.
fn sessionwiki() -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/peer");
    let bin = root.join("bin/sessionwiki");
    if !bin.exists() {
        let ok = std::process::Command::new("cargo")
            .args(["install", "sessionwiki", "--version", "0.34.21", "--locked", "--root"])
            .arg(&root)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("sessionwiki could not be installed; the peer part is skipped");
            return None;
        }
    }
    Some(bin)
}

/// Copies every project folder of the corpus into `home/.claude/projects` (a root that is one
/// project folder goes in under its source's name).
fn scratch_home(roots: &[std::path::PathBuf], home: &std::path::Path) -> std::path::PathBuf {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                copy(&p, &to.join(e.file_name()));
            } else {
                std::fs::copy(&p, to.join(e.file_name())).unwrap();
            }
        }
    }
    let projects = home.join(".claude/projects");
    for r in roots {
        if r.file_name().is_some_and(|n| n == "projects") {
            copy(r, &projects);
        } else {
            let source = r.file_name().unwrap().to_string_lossy().replace('+', "-");
            copy(r, &projects.join(format!("-home-dev-{source}")));
        }
    }
    projects
}

fn peer() {
    let Some(sw) = sessionwiki() else { return };
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let home = tempfile::tempdir().unwrap();
    let projects = scratch_home(&common::corpus_roots(&base), home.path());
    let timed = |args: &[&str]| -> (Duration, f64, String) {
        let gnu_time = std::path::Path::new("/usr/bin/time");
        let report = tempfile::NamedTempFile::new().unwrap();
        let mut cmd = std::process::Command::new(gnu_time);
        cmd.args(["-f", "%M", "-o"]).arg(report.path()).arg(&sw).args(args).env("HOME", home.path());
        let t = Instant::now();
        let out = cmd.output().expect("/usr/bin/time and sessionwiki");
        let wall = t.elapsed();
        let kb: f64 = std::fs::read_to_string(report.path()).unwrap_or_default().trim().parse().unwrap_or(f64::NAN);
        (wall, kb / 1024.0, String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let (sync, sync_mb, said) = timed(&["sync", "--tool", "claude-code"]);
    let data = tempfile::tempdir().unwrap();
    let ours = common::convdex(data.path(), &["index", "--json", projects.to_str().unwrap()]);
    assert!(ours.indexed(), "convdex index failed");
    let v: serde_json::Value = serde_json::from_str(&ours.stdout).unwrap();
    let words = v["words_seconds"].as_f64().unwrap_or(f64::NAN);
    println!();
    println!("peer on the same input: sessionwiki {}", said.lines().last().unwrap_or_default().trim());
    println!();
    println!("| same run | sessionwiki 0.34.21 | convdex | ratio |");
    println!("|---|---:|---:|---:|");
    println!(
        "| index: sessionwiki sync vs convdex searchable by words | {:.2} s | {words:.2} s | {:.2}× |",
        sync.as_secs_f64(),
        words / sync.as_secs_f64()
    );
    println!(
        "| index: full run (convdex with every vector, {}) | {:.2} s | {:.1} s | {:.0}× |",
        v["messages"],
        sync.as_secs_f64(),
        ours.wall.as_secs_f64(),
        ours.wall.as_secs_f64() / sync.as_secs_f64()
    );
    println!("| index: peak RSS | {sync_mb:.0} MB | {:.0} MB | {:.1}× |", ours.peak_mb, ours.peak_mb / sync_mb);
    let queries = [
        "docker",
        "redis cache",
        "tokenizer",
        "migration",
        "error handling",
        "test",
        "config file",
        "database",
        "install",
        "hook",
    ];
    let (mut theirs, mut mine, mut their_mb, mut my_mb) = (Vec::new(), Vec::new(), 0f64, 0f64);
    for round in 0..3 {
        for q in queries {
            let (t, mb, _) = timed(&["search", "--no-sync", q]);
            let r = common::convdex(data.path(), &["search", q, "--mode", "lexical"]);
            assert!(r.status.success());
            if round > 0 {
                theirs.push(t);
                mine.push(r.wall);
                their_mb = their_mb.max(mb);
                my_mb = my_mb.max(r.peak_mb);
            }
        }
    }
    for (label, p) in [("p50", 0.5), ("p95", 0.95)] {
        let (a, b) = (common::pct_ms(theirs.clone(), p), common::pct_ms(mine.clone(), p));
        println!(
            "| cold search {label} (`search --no-sync` vs `search --mode lexical`) | {a:.0} ms | {b:.0} ms | {:.2}× |",
            b / a
        );
    }
    println!("| cold search peak RSS | {their_mb:.0} MB | {my_mb:.0} MB | {:.1}× |", my_mb / their_mb);
}

fn search(runs: usize) {
    let sizes: Vec<usize> = std::env::var("CONVDEX_BENCH_COLD")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_default();
    let (projects, docs) = match sizes[..] {
        [p, d] => (p, d),
        _ => (20, 100_000),
    };
    let mut dir = tempfile::tempdir().unwrap();
    let built = build(dir.path(), projects, docs);
    println!("{projects} projects, {docs} documents, built in {:.1} s; {runs} runs per mode", built.as_secs_f64());
    if std::env::var_os("CONVDEX_BENCH_KEEP").is_some() {
        dir.disable_cleanup(true);
        println!("data dir kept (CONVDEX_BENCH_KEEP): {}", dir.path().display());
    }
    println!();
    println!("| `convdex search … --limit 10` | p50 ms | p95 ms | peak RSS MB |");
    println!("|---|---:|---:|---:|");
    let one = format!("project{:02}", 7 % projects);
    let one_label = format!("`--mode lexical --project {one}`");
    let one_args = ["--mode", "lexical", "--project", one.as_str()];
    let modes: [(&str, &[&str]); 4] = [
        ("`--mode lexical`", &["--mode", "lexical"]),
        (one_label.as_str(), &one_args),
        ("`--mode semantic`", &["--mode", "semantic"]),
        ("hybrid (default)", &[]),
    ];
    for (label, extra) in modes {
        let (mut wall, mut peak) = (Vec::new(), 0f64);
        for r in 0..=runs {
            let query = common::words(SEED + r as u64, 3);
            let mut args = vec!["search", query.as_str(), "--limit", "10"];
            args.extend_from_slice(extra);
            let run = common::convdex(dir.path(), &args);
            assert!(run.status.success(), "convdex search failed");
            assert!(run.stdout.lines().nth(1).is_some(), "no hits: {}", run.stdout);
            if r > 0 {
                wall.push(run.wall);
                peak = peak.max(run.peak_mb);
            }
        }
        println!(
            "| {label} | {:.0} | {:.0} | {peak:.0} |",
            common::pct_ms(wall.clone(), 0.5),
            common::pct_ms(wall, 0.95)
        );
    }
    for other in std::env::var("CONVDEX_BENCH_AGAINST").unwrap_or_default().split(',').filter(|p| !p.is_empty()) {
        against(std::path::Path::new(other), dir.path(), runs, &modes);
    }
    warm(dir.path(), runs, &modes);
    one_project(dir.path(), projects, docs / projects);
}

/// The cold searches again, this build and another `convdex` binary taking turns on the same
/// data dir (`CONVDEX_BENCH_AGAINST=path`), so that a change is measured against its
/// baseline in one run.
fn against(other: &std::path::Path, dir: &std::path::Path, runs: usize, modes: &[(&str, &[&str])]) {
    println!();
    println!("baseline: {}", other.display());
    println!(
        "| `convdex search … --limit 10`, cold, taking turns | baseline p50 / p95 ms, RSS MB | this build | p50 ratio |"
    );
    println!("|---|---:|---:|---:|");
    for (label, extra) in modes {
        let (mut walls, mut peaks) = ([Vec::new(), Vec::new()], [0f64, 0f64]);
        for r in 0..=runs {
            let query = common::words(SEED + 500 + r as u64, 3);
            let mut args = vec!["search", query.as_str(), "--limit", "10"];
            args.extend_from_slice(extra);
            for (side, run) in
                [common::convdex_bin(other, dir, &args), common::convdex(dir, &args)].into_iter().enumerate()
            {
                assert!(run.status.success(), "convdex search failed");
                if r > 0 {
                    walls[side].push(run.wall);
                    peaks[side] = peaks[side].max(run.peak_mb);
                }
            }
        }
        let [a, b] = walls;
        let (a50, b50) = (common::pct_ms(a.clone(), 0.5), common::pct_ms(b.clone(), 0.5));
        println!(
            "| {label} | {a50:.0} / {:.0}, {:.0} | {b50:.0} / {:.0}, {:.0} | {:.2}× |",
            common::pct_ms(a, 0.95),
            peaks[0],
            common::pct_ms(b, 0.95),
            peaks[1],
            b50 / a50
        );
    }
}

/// In process, on one project of the data dir: open its collection, add one session (20
/// messages with their vectors) and flush, search once after, then rebuild its graph.
fn one_project(dir: &std::path::Path, projects: usize, per: usize) {
    let spec = convdex::models::Manifest::builtin().default_spec();
    let embedder = Arc::new(AsDefault { id: spec.id.clone(), inner: HashEmbedder::new(spec.dimension) });
    let index = Index::open(dir, Options::default().embedder(embedder)).unwrap();
    let name = format!("project{:02}", 7 % projects);
    let t = Instant::now();
    let coll = index.collection("bench", &name).unwrap();
    let open = t.elapsed();
    let vectors = clustered_vectors(20, spec.dimension, 2, SEED ^ 0xADD);
    let session: Vec<Document> = (0..20u64)
        .map(|i| Document::message("added", &format!("added{i}"), i, Role::User, &common::words(i ^ 0xADD, 30)))
        .collect();
    let t = Instant::now();
    coll.add_embedded(&session, &vectors).unwrap();
    coll.flush().unwrap();
    let add = t.elapsed();
    let t = Instant::now();
    let hits = coll.search_vector(vectors[0].clone()).limit(10).run().unwrap();
    let first = t.elapsed();
    assert_eq!(hits.iter().next().map(|h| h.doc.id), Some(session[0].id), "the added session is not found");
    let t = Instant::now();
    coll.wait_for_vector_index();
    let linked = t.elapsed();
    let first_path = hits.plan.path;
    let hits = coll.search_vector(vectors[1].clone()).limit(10).run().unwrap();
    assert_eq!(hits.iter().next().map(|h| h.doc.id), Some(session[1].id), "the graph misses the added session");
    let t = Instant::now();
    coll.rebuild_vector_index().unwrap();
    println!();
    println!(
        "one project ({name}, {per} documents), in process: open {:.0} ms; add one session (20 messages) and flush {:.0} ms; first vector search after it {:.0} ms ({:?}); links read and the session linked {:.0} ms later ({:?}); graph rebuild and dump {:.1} s",
        open.as_secs_f64() * 1e3,
        add.as_secs_f64() * 1e3,
        first.as_secs_f64() * 1e3,
        first_path,
        linked.as_secs_f64() * 1e3,
        hits.plan.path,
        t.elapsed().as_secs_f64()
    );
}

/// The same searches answered by a warm helper (`convdex warm`), process start included, and
/// the helper's own peak RSS.
fn warm(dir: &std::path::Path, runs: usize, modes: &[(&str, &[&str])]) {
    let mut helper = std::process::Command::new(env!("CARGO_BIN_EXE_convdex"))
        .arg("--data-dir")
        .arg(dir)
        .args(["warm", "--idle", "600"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("convdex warm");
    let t = Instant::now();
    while !common::convdex_warm(dir, &["warm", "--status"]).status.success() {
        assert!(t.elapsed() < Duration::from_secs(600), "the warm helper did not answer");
        std::thread::sleep(Duration::from_millis(100));
    }
    println!();
    println!(
        "warm helper ready {:.1} s after it started (model loaded, every collection open)",
        t.elapsed().as_secs_f64()
    );
    println!();
    println!("| `convdex search … --limit 10`, warm helper | p50 ms | p95 ms | CLI peak RSS MB |");
    println!("|---|---:|---:|---:|");
    for (label, extra) in modes {
        let (mut wall, mut peak) = (Vec::new(), 0f64);
        for r in 0..=runs {
            let query = common::words(SEED + 1000 + r as u64, 3);
            let mut args = vec!["search", query.as_str(), "--limit", "10"];
            args.extend_from_slice(extra);
            let run = common::convdex_warm(dir, &args);
            assert!(run.status.success(), "convdex search failed");
            assert!(run.stdout.lines().nth(1).is_some(), "no hits: {}", run.stdout);
            if r > 0 {
                wall.push(run.wall);
                peak = peak.max(run.peak_mb);
            }
        }
        println!(
            "| {label} | {:.1} | {:.1} | {peak:.0} |",
            common::pct_ms(wall.clone(), 0.5),
            common::pct_ms(wall, 0.95)
        );
    }
    let hwm = std::fs::read_to_string(format!("/proc/{}/status", helper.id())).ok().and_then(|s| {
        s.lines().find_map(|l| l.strip_prefix("VmHWM:")?.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
    });
    println!();
    println!("warm helper peak RSS: {:.0} MB", hwm.unwrap_or(f64::NAN) / 1024.0);
    assert!(common::convdex_warm(dir, &["warm", "--stop"]).status.success());
    let _ = helper.wait();
}
