//! Indexing the shared Claude Code corpus.
//!
//! 1. In process, default model: time until searchable by words (documents, words, decisions
//!    stored, vectors pending), then the vectors; the model's own embedding time for the same
//!    texts; the no-change re-run.
//! 2. `convdex index` as a child process: wall time and peak RSS (the kernel's `ru_maxrss`) at
//!    1×, 4× and 8× the corpus (copies with new session ids, in the same projects), per model.
//!
//! 3. `scale`: a heavy history, 1×, 10× and 30× the corpus, the copies made by
//!    [`copy_with_new_ids`] (new session and message ids) with their times moved back by
//!    `k × 365 / N` days (copy `k` of `N`), so the history spreads over a year and the original
//!    is the newest: time until searchable by words, until the most recent 1,000 documents are
//!    embedded (the pass embeds newest first), until every vector is in (measured, or, when the
//!    run is stopped after `CONVDEX_BENCH_SCALE_MINUTES` of embedding, extrapolated from the rate
//!    of its last half and marked so), the run against the model's own time for the same
//!    texts, peak RSS, disk per message, and cold CLI searches (p50) at the end; then the same
//!    history indexed by `convdex index` as a child process (the command a user runs: its wall
//!    time and its own peak RSS, which the bench process's, holding its own state, is not).
//!    `CONVDEX_BENCH_SCALE_CLI=off` skips the child run. `CONVDEX_BENCH_SCALE_KEEP=DIR` keeps each
//!    size's data dir as `DIR/<n>x` (for timing searches on it afterwards, e.g. two builds in turns).
//!
//! Run: `cargo bench --bench ingest` (needs `../shared/data/transcripts` and `make models`).
//! `CONVDEX_BENCH_PARTS=phases,memory,scale` picks parts; `CONVDEX_BENCH_MEMORY=potion-base-8m:1,4,8;multilingual-e5-small:1`
//! picks the memory runs (model: copies); `CONVDEX_BENCH_SCALES=1,10,30` the scale runs.
mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use convdex::{EmbedOptions, Embedder, FastEmbedder, Index, IndexOptions, Options};

/// Wraps an embedder and adds up the time spent inside it.
struct Timed {
    inner: FastEmbedder,
    nanos: AtomicU64,
}

impl Embedder for Timed {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> convdex::Result<Vec<Vec<f32>>> {
        let t = Instant::now();
        let r = self.inner.embed(texts);
        self.nanos.fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
    fn embed_query(&self, text: &str) -> convdex::Result<Vec<f32>> {
        self.inner.embed_query(text)
    }
    fn max_tokens(&self) -> usize {
        self.inner.max_tokens()
    }
    fn overhead_tokens(&self) -> usize {
        self.inner.overhead_tokens()
    }
    fn token_offsets(&self, text: &str) -> Vec<(usize, usize)> {
        self.inner.token_offsets(text)
    }
}

fn bytes(paths: &[PathBuf]) -> u64 {
    fn walk(p: &Path) -> u64 {
        if p.is_dir() {
            std::fs::read_dir(p).map(|rd| rd.flatten().map(|e| walk(&e.path())).sum()).unwrap_or(0)
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
        } else {
            0
        }
    }
    paths.iter().map(|p| walk(p)).sum()
}

/// Copies every file under `root` into `dest`, giving each session (a `.jsonl` file named by
/// its id, and a folder of the same name) a new id derived from `copy`, in paths and contents.
fn copy_with_new_ids(root: &Path, dest: &Path, copy: u32) {
    fn files(p: &Path, out: &mut Vec<PathBuf>) {
        if p.is_dir() {
            for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
                files(&e.path(), out);
            }
        } else {
            out.push(p.to_path_buf());
        }
    }
    let mut all = Vec::new();
    files(root, &mut all);
    let ids: std::collections::BTreeSet<String> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .filter_map(|p| p.file_stem()?.to_str().map(str::to_string))
        .filter(|s| uuid::Uuid::parse_str(s).is_ok())
        .collect();
    let fresh =
        |id: &str| uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, format!("{copy}/{id}").as_bytes()).to_string();
    for f in all {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().to_string();
        let mine: Vec<&String> = ids.iter().filter(|id| rel.contains(id.as_str())).collect();
        let mut rel = rel;
        let mut bytes = std::fs::read(&f).unwrap();
        for id in mine {
            rel = rel.replace(id.as_str(), &fresh(id));
            if let Ok(text) = String::from_utf8(bytes.clone()) {
                bytes = text.replace(id.as_str(), &fresh(id)).into_bytes();
            }
        }
        let out = dest.join(rel);
        std::fs::create_dir_all(out.parent().unwrap()).unwrap();
        std::fs::write(out, bytes).unwrap();
    }
}

/// Moves every `"timestamp": "<RFC 3339>"` of the files under `dir` back by `days`.
fn shift_times(dir: &Path, days: i64) {
    let re = regex::Regex::new(r#""timestamp"\s*:\s*"([0-9]{4}-[0-9]{2}-[0-9]{2}T[^"]+)""#).unwrap();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else { continue };
            let moved =
                re.replace_all(&text, |c: &regex::Captures<'_>| match chrono::DateTime::parse_from_rfc3339(&c[1]) {
                    Ok(t) => format!(
                        "\"timestamp\":\"{}\"",
                        (t - chrono::Duration::days(days))
                            .to_utc()
                            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                    ),
                    Err(_) => c[0].to_string(),
                });
            std::fs::write(&p, moved.as_bytes()).unwrap();
        }
    }
}

/// Peak resident memory of this process so far, in MB (`VmHWM`).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<f64>().ok()))
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Size of everything under `dir`, in bytes.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() { dir_bytes(&p) } else { std::fs::metadata(&p).map(|m| m.len()).unwrap_or(0) }
        })
        .sum()
}

/// One scale run (see the module documentation): 1× is the corpus itself.
fn scale(base: &Path, roots: &[PathBuf]) {
    let sizes: Vec<u32> = std::env::var("CONVDEX_BENCH_SCALES")
        .unwrap_or_else(|_| "1,10,30".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let minutes: f64 = std::env::var("CONVDEX_BENCH_SCALE_MINUTES").ok().and_then(|m| m.parse().ok()).unwrap_or(20.0);
    println!(
        "| corpus | sessions | messages | searchable by words | newest 1,000 by meaning | every vector | run / model alone | bench process peak RSS MB | disk KB/message | cold search p50 lexical / hybrid | `convdex index` (child): wall s, peak RSS MB |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let cli = std::env::var("CONVDEX_BENCH_SCALE_CLI").map_or(true, |v| v != "off");
    for n in sizes {
        let copies = tempfile::tempdir().unwrap();
        let mut all = roots.to_vec();
        for k in 1..n {
            for r in roots {
                let dest = copies.path().join(k.to_string()).join(r.strip_prefix(base).unwrap());
                copy_with_new_ids(r, &dest, k);
                shift_times(&dest, i64::from(k) * 365 / i64::from(n));
                all.push(dest);
            }
        }
        let inner = FastEmbedder::new().expect("run `make models`");
        let timed = Arc::new(Timed { inner, nanos: AtomicU64::new(0) });
        let data = tempfile::tempdir().unwrap();
        let index = Index::open(data.path(), Options::default().embedder(timed.clone())).unwrap();
        let opts = IndexOptions { tenant: Some("bench".into()), defer_vectors: true, ..Default::default() };
        let t = Instant::now();
        let report = convdex::index_paths(&index, &all, &opts).unwrap();
        let words = t.elapsed().as_secs_f64();
        let total = index.pending_vectors(None).unwrap().found;
        let (mut newest, mut last) = (None, (0.0_f64, 0_usize));
        let mut samples: Vec<(f64, usize)> = Vec::new();
        let embedding = Instant::now();
        index
            .embed_pending(None, &mut |p| {
                let at = t.elapsed().as_secs_f64();
                if newest.is_none() && p.pass_done >= 1000.min(total) {
                    newest = Some(at);
                }
                last = (at, p.pass_done);
                samples.push((at, p.pass_done));
                if embedding.elapsed().as_secs_f64() > minutes * 60.0 {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            })
            .unwrap();
        let left = index.pending_vectors(None).unwrap().found;
        let every = if left == 0 {
            format!("{:.0} s", t.elapsed().as_secs_f64())
        } else {
            // The rate of the last half of what was embedded, carried to the end.
            let half = samples.get(samples.len() / 2).copied().unwrap_or((words, 0));
            let rate = (last.1 - half.1) as f64 / (last.0 - half.0).max(1e-9);
            format!(
                "~{:.0} s (extrapolated: {left} of {total} documents left after {minutes:.0} min)",
                last.0 + left as f64 / rate
            )
        };
        let model = timed.nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let run = t.elapsed().as_secs_f64() - words;
        let rss = peak_rss_mb();
        drop(index);
        let disk = dir_bytes(data.path()) as f64 / 1024.0 / report.messages.max(1) as f64;
        let mut lex = Vec::new();
        let mut hyb = Vec::new();
        for _ in 0..7 {
            let r =
                common::convdex(data.path(), &["search", "--mode", "lexical", "--json", "database migration error"]);
            lex.push(r.wall);
            let r = common::convdex(data.path(), &["search", "--json", "which database did we choose and why"]);
            hyb.push(r.wall);
        }
        if let Ok(keep) = std::env::var("CONVDEX_BENCH_SCALE_KEEP") {
            let to = Path::new(&keep).join(format!("{n}x"));
            let _ = std::fs::remove_dir_all(&to);
            std::fs::create_dir_all(&keep).unwrap();
            std::fs::rename(data.keep(), &to).unwrap();
            eprintln!("kept the {n}x data dir as {}", to.display());
        } else {
            drop(data);
        }
        let child = if cli {
            let (wall, _, peak, _) = run_cli("multilingual-e5-small", &all);
            format!("{wall:.0} s, {peak:.0} MB")
        } else {
            "—".into()
        };
        println!(
            "| {n}× | {} | {} | {words:.1} s | {} | {every} | {:.3}× (embedding {run:.0} s, model {model:.0} s) | {rss:.0} | {disk:.1} | {:.0} / {:.0} ms | {child} |",
            report.sessions_new,
            report.messages,
            newest.map_or("—".into(), |s| format!("{s:.0} s")),
            run / model.max(1e-9),
            common::pct_ms(lex, 0.5),
            common::pct_ms(hyb, 0.5)
        );
    }
}

/// Runs `convdex index --json` over `roots` into a fresh data dir with `model`: wall seconds,
/// seconds until searchable by words, peak RSS in MB, messages.
fn run_cli(model: &str, roots: &[PathBuf]) -> (f64, f64, f64, u64) {
    let data = tempfile::tempdir().unwrap();
    let mut args = vec!["--model", model, "index", "--json"];
    args.extend(roots.iter().map(|r| r.to_str().expect("UTF-8 corpus path")));
    let run = common::convdex(data.path(), &args);
    // 3: finished, with warnings (the corpus holds files that look like sessions and yield
    // nothing; each is reported).
    assert!(run.indexed(), "convdex index failed: {}", run.stdout);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("index --json");
    let words = v["words_seconds"].as_f64().unwrap_or(f64::NAN);
    let messages = v["messages"].as_u64().unwrap_or(0);
    (run.wall.as_secs_f64(), words, run.peak_mb, messages)
}

fn memory(base: &Path, roots: &[PathBuf]) {
    let spec = std::env::var("CONVDEX_BENCH_MEMORY")
        .unwrap_or_else(|_| "potion-base-8m:1,4,8;all-minilm-l6-v2:1;multilingual-e5-small:1".into());
    let copies_dir = tempfile::tempdir().unwrap();
    let mut made = 1;
    let mut roots_at = |n: u32| -> Vec<PathBuf> {
        while made < n {
            for r in roots {
                let rel = r.strip_prefix(base).unwrap();
                copy_with_new_ids(r, &copies_dir.path().join(made.to_string()).join(rel), made);
            }
            made += 1;
        }
        let mut v = roots.to_vec();
        for k in 1..n {
            v.extend(roots.iter().map(|r| copies_dir.path().join(k.to_string()).join(r.strip_prefix(base).unwrap())));
        }
        v
    };
    println!("| model | corpus | messages | wall s | searchable by words s (share) | peak RSS MB | RSS vs 1× |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for part in spec.split(';').filter(|p| !p.is_empty()) {
        let (model, sizes) = part.split_once(':').unwrap_or((part, "1"));
        let mut first = None;
        for n in sizes.split(',').filter_map(|s| s.trim().parse::<u32>().ok()) {
            let (wall, words, rss, messages) = run_cli(model, &roots_at(n));
            let base_rss = *first.get_or_insert(rss);
            println!(
                "| {model} | {n}× | {messages} | {wall:.1} | {words:.1} ({:.1} %) | {rss:.0} | {:.2}× |",
                100.0 * words / wall,
                rss / base_rss
            );
        }
    }
}

fn phases(roots: &[PathBuf], mb: f64) {
    println!(
        "| model, model calls | sessions | messages | chunks | MB | searchable by words | all vectors | messages/s | embedding (model alone) | full run / embedding | no-change re-run |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    // Today's defaults, then the defaults before model calls had a token budget (16 texts a
    // call whatever their length, ONNX Runtime's arena on), on the same texts in one run.
    let configs = [
        ("≤ 512 tokens a call, no arena", EmbedOptions::default()),
        ("16 texts a call, arena", EmbedOptions::default().batch_tokens(usize::MAX).memory_arena(true)),
    ];
    for (label, options) in configs {
        let inner = FastEmbedder::with_options(options).expect("run `make models`");
        let timed = Arc::new(Timed { inner, nanos: AtomicU64::new(0) });
        let dir = tempfile::tempdir().unwrap();
        let index = Index::open(dir.path(), Options::default().embedder(timed.clone())).unwrap();
        let opts = IndexOptions { tenant: Some("bench".into()), defer_vectors: true, ..Default::default() };
        let t = Instant::now();
        let first = convdex::index_paths(&index, roots, &opts).unwrap();
        let words = t.elapsed().as_secs_f64();
        let embedded = index.embed_pending(None, &mut |_| std::ops::ControlFlow::Continue(())).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let chunks: usize = embedded.found.iter().map(|r| r.chunks).sum();
        let embed = timed.nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let t = Instant::now();
        let second = convdex::index_paths(&index, roots, &opts).unwrap();
        let rerun = t.elapsed().as_secs_f64();
        assert_eq!(second.messages, 0);
        assert_eq!(index.pending_vectors(None).unwrap().found, 0);
        println!(
            "| {}, {label} | {} | {} | {} | {:.1} | {:.1} s ({:.1} %) | {:.1} s | {:.1} | {:.1} s | {:.3}× | {:.2} s |",
            timed.model_id(),
            first.sessions_new,
            first.messages,
            chunks,
            mb,
            words,
            100.0 * words / wall,
            wall,
            first.messages as f64 / wall,
            embed,
            wall / embed,
            rerun
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let roots = common::corpus_roots(&base);
    let mb = bytes(&roots) as f64 / 1e6;
    let parts = std::env::var("CONVDEX_BENCH_PARTS").unwrap_or_else(|_| "phases,memory".into());
    println!("shared corpus: {} roots, {mb:.1} MB of transcripts", roots.len());
    if parts.contains("phases") {
        phases(&roots, mb);
        println!();
    }
    if parts.contains("memory") {
        memory(&base, &roots);
        println!();
    }
    if parts.contains("scale") {
        scale(&base, &roots);
    }
}
