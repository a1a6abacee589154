//! Embedding throughput of every model convdex knows, in one run: texts/s and tokens/s by text
//! length and batch size with the time per text as a ratio to all-MiniLM-L6-v2; for the
//! default model, 256- vs 512-token windows, one vs two threads, length-sorted vs unsorted
//! batching, and convdex's `FastEmbedder` against calling fastembed directly.
//!
//! Run: `cargo bench --bench embed` (prints a markdown table). Seeded synthetic texts.
//! `CONVDEX_BENCH_PARTS=memory` runs the tokenizer and memory tables instead, and
//! `CONVDEX_BENCH_PARTS=load` the time a fresh process takes to load the default model, from
//! `model.onnx` and from the saved optimised graph and compact tokenizer, and
//! `CONVDEX_BENCH_PARTS=spin` bulk and query embedding with idle threads spinning or sleeping.

use std::time::{Duration, Instant};

use convdex::{EmbedOptions, Embedder, FastEmbedder};
use fastembed::{InitOptionsUserDefined, Pooling, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};

const SEED: u64 = 42;
const WORDS: &[&str] = &[
    "index",
    "vector",
    "session",
    "decision",
    "redb",
    "search",
    "query",
    "embedding",
    "transcript",
    "file",
    "commit",
    "branch",
    "test",
    "error",
    "fix",
    "build",
    "server",
    "client",
    "token",
    "model",
    "cache",
    "graph",
    "filter",
    "store",
    "we",
    "should",
    "use",
    "because",
    "the",
    "a",
    "of",
    "to",
    "and",
    "is",
    "parser",
    "config",
    "deploy",
    "docker",
    "postgres",
    "rust",
    "function",
    "struct",
    "return",
    "value",
];

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn texts(n: usize, words: usize, rng: &mut Lcg) -> Vec<String> {
    (0..n).map(|_| (0..words).map(|_| WORDS[rng.next() as usize % WORDS.len()]).collect::<Vec<_>>().join(" ")).collect()
}

fn time<F: FnMut()>(mut f: F) -> Duration {
    f(); // warm-up
    let start = Instant::now();
    f();
    start.elapsed()
}

fn rate(e: &dyn Embedder, refs: &[&str]) -> f64 {
    let d = time(|| {
        e.embed(refs).unwrap();
    });
    refs.len() as f64 / d.as_secs_f64()
}

fn embedder(model: &str, options: EmbedOptions) -> std::sync::Arc<dyn Embedder> {
    convdex::embed::load(options.model(model)).expect("run `make models` first")
}

/// A line of `/proc/self/status` in MB (`VmHWM:` the peak resident set, `VmRSS:` the current).
fn status_mb(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok());
    kb.map_or(f64::NAN, |k| k / 1024.0)
}

fn peak_mb() -> f64 {
    status_mb("VmHWM:")
}

/// A child of the memory grid: loads `model` with a token budget and arena setting, embeds
/// mixed-length texts (a fifth of them at the 256-token limit), prints texts/s and the peak RSS
/// after loading and after embedding.
fn memory_child(spec: &str) {
    if let Some(kind) = spec.strip_prefix("tokenizer:") {
        return tokenizer_child(kind);
    }
    let mut parts = spec.split(':');
    let model = parts.next().unwrap();
    let budget: usize = parts.next().unwrap().parse().unwrap();
    let arena = parts.next() == Some("arena");
    let e = embedder(model, EmbedOptions::default().batch_tokens(budget).memory_arena(arena));
    e.embed(&["warm up"]).unwrap();
    let loaded = peak_mb();
    if std::env::var("CONVDEX_BENCH_VERBOSE").is_ok() {
        eprintln!("after load: peak {loaded:.0} MB, resident {:.0} MB", status_mb("VmRSS:"));
    }
    let mut rng = Lcg(SEED);
    let mut all = Vec::new();
    for (words, n) in [(8usize, 96usize), (50, 64), (120, 32), (400, 48)] {
        all.extend(texts(n, words, &mut rng));
    }
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let start = Instant::now();
    e.embed(&refs).unwrap();
    let secs = start.elapsed().as_secs_f64();
    println!("{} {loaded:.0} {:.0}", refs.len() as f64 / secs, peak_mb());
}

/// A child that loads only the default model's tokenizer, the `tokenizers` crate's own way
/// (`hf`, its Unigram byte trie) or convdex's (`compact`), tokenizes the seeded texts, and prints
/// load ms, texts/s, and the peak RSS.
fn tokenizer_child(kind: &str) {
    let spec = convdex::models::Manifest::builtin().default_spec();
    let files = convdex::models::locate_model(None, spec).expect("run `make models` first");
    let mut rng = Lcg(SEED);
    let all: Vec<String> = [(8usize, 96usize), (50, 64), (120, 32), (400, 48)]
        .iter()
        .flat_map(|&(words, n)| texts(n, words, &mut rng))
        .collect();
    let start = Instant::now();
    let (load, secs) = if kind == "hf" {
        let t = tokenizers::Tokenizer::from_file(&files.tokenizer).unwrap();
        let load = start.elapsed();
        let start = Instant::now();
        all.iter().for_each(|s| drop(t.encode(s.as_str(), true).unwrap()));
        (load, start.elapsed())
    } else {
        let mut t = convdex::embed::read_tokenizer(&files, usize::MAX).unwrap();
        let load = start.elapsed();
        let start = Instant::now();
        all.iter().for_each(|s| drop(t.encode_whole(s).unwrap()));
        (load, start.elapsed())
    };
    println!("{:.0} {:.0} {:.0}", load.as_secs_f64() * 1e3, all.len() as f64 / secs.as_secs_f64(), peak_mb());
}

/// The tokenizer table: the default model's tokenizer loaded alone, both ways, one child each.
fn tokenizer_grid() {
    println!();
    println!("| {} tokenizer | load ms | texts/s | peak RSS MB |", convdex::models::Manifest::builtin().default_model);
    println!("|---|---:|---:|---:|");
    for (kind, label) in [("hf", "`tokenizers` Unigram (byte trie)"), ("compact", "convdex `CompactUnigram`")] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .env("CONVDEX_BENCH_EMBED_CHILD", format!("tokenizer:{kind}"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let v: Vec<&str> = text.split_whitespace().collect();
        if v.len() == 3 {
            println!("| {label} | {} | {} | {} |", v[0], v[1], v[2]);
        }
    }
}

/// Runs the memory grid, one child process per setting (peak RSS is per process).
fn memory_grid() {
    tokenizer_grid();
    let default = convdex::models::Manifest::builtin().default_model.clone();
    println!();
    println!(
        "| model | tokens per call (texts ≤ 16) | ONNX Runtime arena | texts/s | peak RSS after load MB | peak RSS embedding MB |"
    );
    println!("|---|---:|---|---:|---:|---:|");
    for model in [default.as_str(), "all-minilm-l6-v2"] {
        for (budget, arena) in [(4096usize, true), (4096, false), (2048, false), (1024, false), (512, false)] {
            let spec = format!("{model}:{budget}:{}", if arena { "arena" } else { "none" });
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env("CONVDEX_BENCH_EMBED_CHILD", &spec)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<&str> = text.split_whitespace().collect();
            if v.len() == 3 {
                let rate: f64 = v[0].parse().unwrap_or(f64::NAN);
                println!(
                    "| {model} | {budget} | {} | {rate:.1} | {} | {} |",
                    if arena { "on" } else { "off" },
                    v[1],
                    v[2]
                );
            }
        }
    }
}

/// A child of the load table: loads the default model from `dir` (with the saved graph and
/// tokenizer on or off), embeds one query, prints load ms, first-query ms and peak RSS.
fn load_child(spec: &str) {
    let (cache, dir) = spec.split_once(':').unwrap();
    let start = Instant::now();
    let e = FastEmbedder::with_options(EmbedOptions::default().model_dir(dir).optimized_cache(cache == "on")).unwrap();
    let load = start.elapsed();
    let start = Instant::now();
    e.embed_query("why did we pick redb over sqlite").unwrap();
    println!("{:.1} {:.1} {:.0}", load.as_secs_f64() * 1e3, start.elapsed().as_secs_f64() * 1e3, peak_mb());
}

/// A child of the spin table: the default model with idle threads spinning or not embeds 192
/// mixed texts in bulk, then 30 queries one at a time; prints texts/s and query ms.
fn spin_child(on: bool) {
    let e = FastEmbedder::with_options(EmbedOptions::default().spin_wait(on)).unwrap();
    let mut rng = Lcg(SEED);
    let mixed: Vec<String> = (0..192).flat_map(|i| texts(1, [4usize, 30, 120, 220][i % 4], &mut rng)).collect();
    let refs: Vec<&str> = mixed.iter().map(String::as_str).collect();
    e.embed(&refs[..8]).unwrap();
    let bulk = time(|| {
        e.embed(&refs).unwrap();
    });
    let queries = time(|| {
        for q in refs.iter().step_by(6).take(30) {
            e.embed_query(q).unwrap();
        }
    });
    println!("{:.2} {:.2}", refs.len() as f64 / bulk.as_secs_f64(), queries.as_secs_f64() * 1e3 / 30.0);
}

/// The spin table: idle intra-op threads spinning (ONNX Runtime's default) or sleeping
/// (convdex's), a fresh process each, in turns, `CONVDEX_BENCH_RUNS` rounds (default 5).
fn spin_grid() {
    let runs: usize = std::env::var("CONVDEX_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let mut got: [Vec<[f64; 2]>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..runs {
        for (k, on) in ["on", "off"].iter().enumerate() {
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env("CONVDEX_BENCH_EMBED_CHILD", format!("spin:{on}"))
                .output()
                .unwrap();
            let v: Vec<f64> =
                String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if let [a, b] = v[..] {
                got[k].push([a, b]);
            }
        }
    }
    let median = |rows: &[[f64; 2]], i: usize| {
        let mut v: Vec<f64> = rows.iter().map(|r| r[i]).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!();
    println!(
        "| default model, idle intra-op threads ({runs} rounds in turns) | bulk texts/s (192 mixed) | query ms | vs spinning |"
    );
    println!("|---|---:|---:|---:|");
    let base = median(&got[0], 0);
    for (k, label) in ["spinning (`spin_wait(true)`, ONNX Runtime's default)", "sleeping (default)"].iter().enumerate()
    {
        let (rate, query) = (median(&got[k], 0), median(&got[k], 1));
        println!("| {label} | {rate:.1} | {query:.1} | {:.2}× |", rate / base);
    }
}

/// The load table: a fresh process loads the default model, `CONVDEX_BENCH_RUNS` times (default
/// 7) per row, from a copy of its files (hard links where possible).
fn load_grid() {
    let spec = convdex::models::Manifest::builtin().default_spec();
    let files = convdex::models::locate_model(None, spec).expect("run `make models` first");
    let dir = tempfile::tempdir().unwrap();
    for p in files.paths() {
        let to = dir.path().join(p.file_name().unwrap());
        std::fs::hard_link(p, &to).or_else(|_| std::fs::copy(p, &to).map(drop)).unwrap();
    }
    let runs: usize = std::env::var("CONVDEX_BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
    let saved = ["model.optimized.ort", "tokenizer.compact"].map(|f| dir.path().join(f));
    println!();
    println!(
        "| {} loaded by a fresh process ({runs} runs) | load p50 / p95 ms | first query p50 ms | peak RSS MB |",
        spec.name
    );
    println!("|---|---:|---:|---:|");
    let mut base = None;
    for (label, cache, fresh) in [
        ("from `model.onnx` (`optimized_cache(false)`)", "off", true),
        ("from `model.onnx`, saving the optimised graph and compact tokenizer (first load)", "on", true),
        ("from the saved graph and tokenizer (default, later loads)", "on", false),
    ] {
        let mut rows: Vec<[f64; 3]> = Vec::new();
        for _ in 0..runs {
            if fresh {
                saved.iter().for_each(|p| drop(std::fs::remove_file(p)));
            }
            let out = std::process::Command::new(std::env::current_exe().unwrap())
                .env("CONVDEX_BENCH_EMBED_CHILD", format!("load:{cache}:{}", dir.path().display()))
                .output()
                .unwrap();
            let v: Vec<f64> =
                String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|x| x.parse().ok()).collect();
            if let [a, b, c] = v[..] {
                rows.push([a, b, c]);
            }
        }
        let col = |k: usize| {
            let mut v: Vec<f64> = rows.iter().map(|r| r[k]).collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let pct = |v: &[f64], q: f64| v.get(((v.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(f64::NAN);
        let (load, query, rss) = (col(0), col(1), col(2));
        let p50 = pct(&load, 0.5);
        let ratio = base.map_or(String::new(), |b: f64| format!(" ({:.2}×)", p50 / b));
        base.get_or_insert(p50);
        println!(
            "| {label} | {p50:.0} / {:.0}{ratio} | {:.1} | {:.0} |",
            pct(&load, 0.95),
            pct(&query, 0.5),
            pct(&rss, 0.5)
        );
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    if let Ok(spec) = std::env::var("CONVDEX_BENCH_EMBED_CHILD") {
        if let Some(on) = spec.strip_prefix("spin:") {
            return spin_child(on == "on");
        }
        return match spec.strip_prefix("load:") {
            Some(spec) => load_child(spec),
            None => memory_child(&spec),
        };
    }
    if std::env::var("CONVDEX_BENCH_PARTS").is_ok_and(|p| p == "load") {
        return load_grid();
    }
    if std::env::var("CONVDEX_BENCH_PARTS").is_ok_and(|p| p == "memory") {
        return memory_grid();
    }
    if std::env::var("CONVDEX_BENCH_PARTS").is_ok_and(|p| p == "spin") {
        return spin_grid();
    }
    let mut rng = Lcg(SEED);
    let models: Vec<String> = convdex::models::Manifest::builtin().models.iter().map(|m| m.name.clone()).collect();
    let base = "all-minilm-l6-v2";
    println!("| model | texts | tokens/text | batch | texts/s | tokens/s | time per text vs MiniLM |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (label, words, n) in [("short", 8usize, 256usize), ("medium", 50, 128), ("long", 200, 48)] {
        let t = texts(n, words, &mut rng);
        let refs: Vec<&str> = t.iter().map(String::as_str).collect();
        for batch in [1usize, 16, 64] {
            let mut base_rate = None;
            let mut rows = Vec::new();
            // MiniLM first: the ratio's reference, measured in the same run.
            for model in std::iter::once(base).chain(models.iter().map(String::as_str).filter(|m| *m != base)) {
                // Texts per call exactly `batch` (no token budget), as the column says.
                let e = embedder(model, EmbedOptions::default().batch_size(batch).batch_tokens(usize::MAX));
                let tokens: usize = refs
                    .iter()
                    .map(|s| e.token_offsets(s).len().min(256 - e.overhead_tokens()) + e.overhead_tokens())
                    .sum();
                let r = rate(e.as_ref(), &refs);
                let reference = *base_rate.get_or_insert(r);
                rows.push(format!(
                    "| {model} | {label} | {} | {batch} | {r:.0} | {:.0} | {:.2}× |",
                    tokens / n,
                    r * tokens as f64 / n as f64,
                    reference / r
                ));
            }
            rows.iter().for_each(|r| println!("{r}"));
        }
    }

    // The default model's chunk length: the same long texts read as 256-token or 512-token
    // windows (a 500-token text is two 256 windows or one 512 window).
    let default = &convdex::models::Manifest::builtin().default_model;
    let long = texts(32, 400, &mut rng);
    let refs: Vec<&str> = long.iter().map(String::as_str).collect();
    println!();
    println!("| {default}, 32 texts of ~500 tokens | windows | tokens/s | time per text vs 256 |");
    println!("|---|---:|---:|---:|");
    let short_windows = embedder(default, EmbedOptions::default());
    let tokens: usize = refs.iter().map(|s| short_windows.token_offsets(s).len()).sum();
    let mut halves: Vec<String> = Vec::new();
    for s in &refs {
        let offs = short_windows.token_offsets(s);
        let cut = offs.get(offs.len() / 2).map_or(s.len(), |o| o.0);
        halves.push(s.get(..cut).unwrap_or(s).to_string());
        halves.push(s.get(cut..).unwrap_or("").to_string());
    }
    let half_refs: Vec<&str> = halves.iter().map(String::as_str).collect();
    let d256 = time(|| {
        short_windows.embed(&half_refs).unwrap();
    });
    let wide = embedder(default, EmbedOptions::default().max_tokens(512));
    let d512 = time(|| {
        wide.embed(&refs).unwrap();
    });
    for (label, d) in [("2 × 256", d256), ("1 × 512", d512)] {
        println!(
            "| {label} | | {:.0} | {:.2}× |",
            tokens as f64 / d.as_secs_f64(),
            d.as_secs_f64() / d256.as_secs_f64()
        );
    }

    // Threads on 2 cores: medium texts, batch 16.
    let med = texts(96, 50, &mut rng);
    let refs: Vec<&str> = med.iter().map(String::as_str).collect();
    println!();
    println!("| {default}, medium texts, batch 16 | texts/s |");
    println!("|---|---:|");
    for threads in [1usize, 2] {
        let e = embedder(default, EmbedOptions::default().threads(threads));
        println!("| {threads} intra-op thread(s) | {:.0} |", rate(e.as_ref(), &refs));
    }

    // Mixed lengths: sorted vs unsorted, batch 32, measured back to back.
    let mut mixed = Vec::new();
    for i in 0..192 {
        let w = [4usize, 30, 120, 220][i % 4];
        mixed.extend(texts(1, w, &mut rng));
    }
    let refs: Vec<&str> = mixed.iter().map(String::as_str).collect();
    let batch32 = || EmbedOptions::default().batch_size(32).batch_tokens(usize::MAX);
    let sorted = FastEmbedder::with_options(batch32()).unwrap();
    let unsorted = FastEmbedder::with_options(batch32().sort_by_length(false)).unwrap();
    let ds = time(|| {
        sorted.embed(&refs).unwrap();
    });
    let du = time(|| {
        unsorted.embed(&refs).unwrap();
    });
    println!();
    println!("| {default}, mixed batch (192 texts, bs 32) | texts/s |");
    println!("|---|---:|");
    println!("| length-sorted | {:.0} |", 192.0 / ds.as_secs_f64());
    println!("| unsorted | {:.0} |", 192.0 / du.as_secs_f64());
    println!("| ratio sorted/unsorted | {:.2}x |", du.as_secs_f64() / ds.as_secs_f64());

    // Overhead of the wrapper: same texts (with the model's passage prefix), same batch size,
    // fastembed called directly.
    let files = sorted.files().clone();
    let prefix = sorted.spec().passage_prefix.clone();
    let read = |p: &std::path::Path| std::fs::read(p).unwrap();
    let tf = TokenizerFiles {
        tokenizer_file: read(&files.tokenizer),
        config_file: read(&files.config),
        special_tokens_map_file: read(&files.special_tokens_map),
        tokenizer_config_file: read(&files.tokenizer_config),
    };
    let udm = UserDefinedEmbeddingModel::new(read(&files.model), tf).with_pooling(Pooling::Mean);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut direct = TextEmbedding::try_new_from_user_defined(
        udm,
        InitOptionsUserDefined::new()
            .with_max_length(256)
            .with_intra_threads(threads)
            .with_environment(convdex::testutil::onnx_environment(&files.runtime).unwrap()),
    )
    .unwrap();
    let med = texts(128, 50, &mut rng);
    let prefixed: Vec<String> = med.iter().map(|t| format!("{prefix}{t}")).collect();
    let refs: Vec<&str> = med.iter().map(String::as_str).collect();
    let dd = time(|| {
        direct.embed(&prefixed, Some(32)).unwrap();
    });
    let dc = time(|| {
        unsorted.embed(&refs).unwrap();
    });
    println!();
    println!("| {default}, medium texts, bs 32, unsorted | texts/s |");
    println!("|---|---:|");
    println!("| fastembed direct | {:.0} |", 128.0 / dd.as_secs_f64());
    println!("| convdex FastEmbedder | {:.0} |", 128.0 / dc.as_secs_f64());
    println!("| ratio (time) | {:.2} |", dc.as_secs_f64() / dd.as_secs_f64());
}
