//! Indexing the shared Claude Code corpus with the real model: sessions/s, messages/s, MB/s,
//! the share of wall time spent embedding vs everything else, and the no-change re-run time
//! as a ratio of the first run.
//!
//! Run: `cargo bench --bench ingest` (needs `../shared/data/transcripts`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use convdex::{Embedder, FastEmbedder, Index, IndexOptions, Options};

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

fn corpus_roots(base: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(base).expect("../shared/data/transcripts").flatten() {
        let p = e.path();
        if p.is_dir() {
            let projects = [p.join("projects"), p.join(".claude/projects")].into_iter().find(|x| x.is_dir());
            v.push(projects.unwrap_or(p));
        }
    }
    v.sort();
    v
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

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let roots = corpus_roots(&base);
    let mb = bytes(&roots) as f64 / 1e6;
    let timed = Arc::new(Timed { inner: FastEmbedder::new().expect("run `make models`"), nanos: AtomicU64::new(0) });
    let dir = tempfile::tempdir().unwrap();
    let index = Index::open(dir.path(), Options::default().embedder(timed.clone())).unwrap();
    let opts = IndexOptions { tenant: Some("bench".into()), ..Default::default() };
    let t = Instant::now();
    let first = convdex::index_paths(&index, &roots, &opts).unwrap();
    let wall = t.elapsed().as_secs_f64();
    let embed = timed.nanos.load(Ordering::Relaxed) as f64 / 1e9;
    let t = Instant::now();
    let second = convdex::index_paths(&index, &roots, &opts).unwrap();
    let rerun = t.elapsed().as_secs_f64();
    assert_eq!(second.messages, 0);
    println!("| corpus | sessions | messages | chunks | MB | first run s | sessions/s | messages/s | MB/s |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| shared transcripts | {} | {} | {} | {:.1} | {:.1} | {:.2} | {:.1} | {:.2} |",
        first.sessions_new,
        first.messages,
        first.chunks,
        mb,
        wall,
        first.sessions_new as f64 / wall,
        first.messages as f64 / wall,
        mb / wall
    );
    println!();
    println!("| same run | value |");
    println!("|---|---:|");
    println!("| time embedding | {:.1} s ({:.1} %) |", embed, 100.0 * embed / wall);
    println!(
        "| everything else (parse, scrub, redb, graph) | {:.1} s ({:.1} %) |",
        wall - embed,
        100.0 * (wall - embed) / wall
    );
    println!("| no-change re-run | {:.3} s ({:.0}× faster) |", rerun, wall / rerun);
}
