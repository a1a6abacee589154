//! Embedding throughput: texts/s and tokens/s by text length and batch size, length-sorted vs
//! unsorted batching, and convdex's `FastEmbedder` against calling fastembed directly.
//!
//! Run: `cargo bench --bench embed` (prints a markdown table). Seeded synthetic texts.

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

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let mut rng = Lcg(SEED);
    let model = FastEmbedder::new().expect("run `make models` first");
    println!("| texts | tokens/text | batch | texts/s | tokens/s |");
    println!("|---|---:|---:|---:|---:|");
    for (label, words, n) in [("short", 8usize, 256usize), ("medium", 50, 128), ("long", 200, 48)] {
        let t = texts(n, words, &mut rng);
        let refs: Vec<&str> = t.iter().map(String::as_str).collect();
        let tokens: usize = refs.iter().map(|s| model.token_offsets(s).len().min(256) + 2).sum();
        for batch in [1usize, 16, 64] {
            let e = FastEmbedder::with_options(EmbedOptions::default().batch_size(batch)).unwrap();
            let d = time(|| {
                e.embed(&refs).unwrap();
            });
            let s = d.as_secs_f64();
            println!("| {label} | {} | {batch} | {:.0} | {:.0} |", tokens / n, n as f64 / s, tokens as f64 / s);
        }
    }

    // Mixed lengths: sorted vs unsorted, batch 32, measured back to back.
    let mut mixed = Vec::new();
    for i in 0..192 {
        let w = [4usize, 30, 120, 220][i % 4];
        mixed.extend(texts(1, w, &mut rng));
    }
    let refs: Vec<&str> = mixed.iter().map(String::as_str).collect();
    let sorted = FastEmbedder::new().unwrap();
    let unsorted = FastEmbedder::with_options(EmbedOptions::default().sort_by_length(false)).unwrap();
    let ds = time(|| {
        sorted.embed(&refs).unwrap();
    });
    let du = time(|| {
        unsorted.embed(&refs).unwrap();
    });
    println!();
    println!("| mixed batch (192 texts, bs 32) | texts/s |");
    println!("|---|---:|");
    println!("| length-sorted | {:.0} |", 192.0 / ds.as_secs_f64());
    println!("| unsorted | {:.0} |", 192.0 / du.as_secs_f64());
    println!("| ratio sorted/unsorted | {:.2}x |", du.as_secs_f64() / ds.as_secs_f64());

    // Overhead of the wrapper: same texts, same batch size, fastembed called directly.
    let files = sorted.files().clone();
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
        InitOptionsUserDefined::new().with_max_length(256).with_intra_threads(threads),
    )
    .unwrap();
    let med = texts(128, 50, &mut rng);
    let refs: Vec<&str> = med.iter().map(String::as_str).collect();
    let dd = time(|| {
        direct.embed(&refs, Some(32)).unwrap();
    });
    let dc = time(|| {
        unsorted.embed(&refs).unwrap();
    });
    println!();
    println!("| medium texts, bs 32, unsorted | texts/s |");
    println!("|---|---:|");
    println!("| fastembed direct | {:.0} |", 128.0 / dd.as_secs_f64());
    println!("| convdex FastEmbedder | {:.0} |", 128.0 / dc.as_secs_f64());
    println!("| overhead ratio (convdex/direct time) | {:.2} |", dc.as_secs_f64() / dd.as_secs_f64());
}
