//! Helpers shared by the bench binaries that time `convdex` as a child process.

// Each bench binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What one run of the `convdex` binary took.
pub struct Run {
    /// Exit status.
    pub status: ExitStatus,
    /// Wall time, process start included.
    pub wall: Duration,
    /// Peak resident set in MB: GNU time's `%M` when `/usr/bin/time` exists (its own small
    /// process forks the child, so the kernel's figure is the child's alone), else the child's
    /// `VmHWM` read every 5 ms while it runs (a process shorter than that reads 0). The kernel's
    /// `ru_maxrss` of a child spawned from here would also count this process's resident set.
    pub peak_mb: f64,
    /// Standard output.
    pub stdout: String,
}

impl Run {
    /// Whether an index run finished: exit code 0, or 3 ("finished, with warnings", which the
    /// shared corpus's empty session files rightly give).
    pub fn indexed(&self) -> bool {
        matches!(self.status.code(), Some(0 | 3))
    }
}

/// Runs `convdex` with `data_dir` and `args`.
pub fn convdex(data_dir: &Path, args: &[&str]) -> Run {
    convdex_with_input(data_dir, args, None)
}

/// Runs `convdex` with `data_dir` and `args`, `input` on its standard input, without the warm
/// helper (`CONVDEX_WARM=off`: every run is a cold process and starts no helper).
pub fn convdex_with_input(data_dir: &Path, args: &[&str], input: Option<&str>) -> Run {
    run(data_dir, args, input, false)
}

/// Runs `convdex` with `data_dir` and `args`, asking the warm helper when one runs (and letting
/// a search start one).
pub fn convdex_warm(data_dir: &Path, args: &[&str]) -> Run {
    run(data_dir, args, None, true)
}

/// Runs another `convdex` binary `bin` like [`convdex`] (to compare two builds in one run).
pub fn convdex_bin(bin: &Path, data_dir: &Path, args: &[&str]) -> Run {
    run_bin(bin, data_dir, args, None, false)
}

fn run(data_dir: &Path, args: &[&str], input: Option<&str>, warm: bool) -> Run {
    run_bin(Path::new(env!("CARGO_BIN_EXE_convdex")), data_dir, args, input, warm)
}

fn run_bin(bin: &Path, data_dir: &Path, args: &[&str], input: Option<&str>, warm: bool) -> Run {
    let gnu_time = Path::new("/usr/bin/time");
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let mut cmd = if gnu_time.exists() {
        let mut c = Command::new(gnu_time);
        c.args(["-f", "%M", "-o"]).arg(report.path()).arg(bin);
        c
    } else {
        Command::new(bin)
    };
    let t = Instant::now();
    let mut child = cmd
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .env("CONVDEX_WARM", if warm { "on" } else { "off" })
        .stdin(if input.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("convdex binary");
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        let _ = std::io::Write::write_all(&mut stdin, text.as_bytes());
    }
    let status_file = format!("/proc/{}/status", child.id());
    let mut out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let mut peak_kb = 0u64;
    // With GNU time the peak comes from its report: wait without polling, so the wall time is
    // not rounded up to the polling step.
    let status = if gnu_time.exists() { Some(child.wait().expect("wait")) } else { None };
    let status = status.unwrap_or_else(|| {
        loop {
            let hwm = std::fs::read_to_string(&status_file).ok().and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmHWM:")?.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            });
            peak_kb = peak_kb.max(hwm.unwrap_or(0));
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let wall = t.elapsed();
    if gnu_time.exists() {
        let text = std::fs::read_to_string(report.path()).unwrap_or_default();
        peak_kb = text.lines().filter_map(|l| l.trim().parse::<u64>().ok()).next_back().unwrap_or(0);
    }
    Run { status, wall, peak_mb: peak_kb as f64 / 1024.0, stdout: reader.join().unwrap_or_default() }
}

/// The sizes a bench runs at: `CONVDEX_BENCH_SIZES` (comma-separated document counts), else
/// 10,000 and 100,000.
pub fn sizes() -> Vec<usize> {
    std::env::var("CONVDEX_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

/// The `p` quantile (0..=1) of `v`, in milliseconds.
pub fn pct_ms(mut v: Vec<Duration>, p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

/// The shared corpus: each source's Claude Code projects root (`projects` or
/// `.claude/projects`), sorted.
pub fn corpus_roots(base: &Path) -> Vec<PathBuf> {
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

/// Deterministic synthetic text: `n` words from a Zipf-like 5,000-word vocabulary.
pub fn words(seed: u64, n: usize) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Zipf-like: small ranks are far more frequent.
            let u = (x % 1_000_000) as f64 / 1_000_000.0;
            let rank = (5000f64.powf(u) as usize).min(4999);
            format!("w{rank}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}
