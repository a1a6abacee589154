//! The web app (`convdex ui`) on the whole shared corpus: time to the first result and per page
//! (p50, p95), the first request after start (cold) and the rest (warm), and the bytes each page
//! loads (HTML, and the script and stylesheet it links). Beside it, the CLI's own cold search
//! of the same questions. Prints a Markdown table with the date and the machine.
//!
//! `cargo bench --bench ui`; `CONVDEX_BENCH_UI_ROUNDS` (default 20) requests per page.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// GET `path` with the app's cookie: (status, body, wall time).
fn get(port: u16, path: &str, cookie: &str) -> (u16, String, Duration) {
    let t = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let wall = t.elapsed();
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, body.to_string(), wall)
}

fn enc(s: &str) -> String {
    s.bytes().map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

const QUESTIONS: [&str; 5] = [
    "which vector store did we choose and why",
    "error when running the tests",
    "数据库 迁移",
    "設定ファイル",
    "authentication token refresh",
];

fn main() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts");
    let roots = common::corpus_roots(&base);
    let rounds: usize = std::env::var("CONVDEX_BENCH_UI_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut args: Vec<&str> = vec!["index"];
    args.extend(roots.iter().map(|r| r.to_str().unwrap()));
    let indexed = common::convdex(&data, &args);
    assert!(indexed.indexed(), "index failed: {:?}", indexed.status);

    // The CLI beside it: a new process per question.
    let mut cli = Vec::new();
    for q in QUESTIONS.iter().cycle().take(rounds) {
        cli.push(common::convdex(&data, &["search", q]).wall);
    }

    let mut ui = Command::new(env!("CARGO_BIN_EXE_convdex"))
        .env("CONVDEX_WARM", "off")
        .arg("--data-dir")
        .arg(&data)
        .arg("ui")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut line = String::new();
    BufReader::new(ui.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line.split(':').nth(2).and_then(|p| p.split('/').next()).and_then(|p| p.parse().ok()).unwrap();
    let token = line.trim().split("t=").nth(1).unwrap().to_string();
    let cookie = format!("convdex_ui_{port}={token}");
    // Time to the first result: from starting `convdex ui` to the first search answered.
    let (status, _, _) = get(port, &format!("/search?q={}", enc(QUESTIONS[0])), &cookie);
    assert_eq!(status, 200);
    let first = started.elapsed();

    // A session, a project and a file to open: the first hit's.
    let after = |body: &str, prefix: &str| -> String {
        body.split(prefix).nth(1).and_then(|r| r.split('"').next()).unwrap_or("").to_string()
    };
    let session =
        after(&get(port, &format!("/search?q={}&group=sessions", enc(QUESTIONS[0])), &cookie).1, "href=\"/session/");
    let project = after(&get(port, &format!("/session/{session}"), &cookie).1, "href=\"/project/");
    let pages: Vec<(&str, Vec<String>)> = vec![
        (
            "search (as you type, fragment)",
            QUESTIONS.iter().map(|q| format!("/search?q={}&fragment=1", enc(q))).collect(),
        ),
        ("search (whole page)", QUESTIONS.iter().map(|q| format!("/search?q={}", enc(q))).collect()),
        ("session", vec![format!("/session/{session}")]),
        ("decisions", vec!["/decisions".into()]),
        ("project", vec![format!("/project/{project}")]),
        ("file", vec!["/file?path=README.md".into()]),
        ("health", vec!["/health".into()]),
    ];
    let assets = get(port, "/static/app.js", &cookie).1.len() + get(port, "/static/style.css", &cookie).1.len();
    let mut rows = Vec::new();
    for (name, paths) in &pages {
        let (status, _, cold) = get(port, &paths[0], &cookie);
        assert_eq!(status, 200, "{name}");
        let mut warm = Vec::new();
        let mut bytes = 0;
        for p in paths.iter().cycle().take(rounds) {
            let (status, body, wall) = get(port, p, &cookie);
            assert_eq!(status, 200, "{name}");
            warm.push(wall);
            bytes = bytes.max(body.len());
        }
        rows.push((name.to_string(), cold, common::pct_ms(warm.clone(), 0.5), common::pct_ms(warm, 0.95), bytes));
    }
    let _ = ui.kill();
    let _ = ui.wait();

    let date = Command::new("date")
        .arg("-u")
        .arg("+%Y-%m-%d")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    println!(
        "\n## The web app on the shared corpus ({date}, {cpu}, {} cores)\n",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "Time to the first result (start `convdex ui`, first search answered): {:.0} ms",
        first.as_secs_f64() * 1e3
    );
    println!("Script and stylesheet, loaded once per page: {assets} bytes\n");
    println!("| page | first request (ms) | p50 (ms) | p95 (ms) | HTML bytes (largest) |");
    println!("|---|---:|---:|---:|---:|");
    for (name, cold, p50, p95, bytes) in &rows {
        println!("| {name} | {:.1} | {p50:.1} | {p95:.1} | {bytes} |", cold.as_secs_f64() * 1e3);
    }
    let (cli_p50, cli_p95) = (common::pct_ms(cli.clone(), 0.5), common::pct_ms(cli, 0.95));
    println!("| CLI `convdex search`, a new process each | | {cli_p50:.1} | {cli_p95:.1} | |");
    println!(
        "\nIn one run: a search as you type in the app answers in 1/{:.0} of the CLI's cold search (p50).",
        cli_p50 / rows[0].2.max(1e-9)
    );
}
