//! The web app (`convdex ui`) in a real browser: Debian's `chromium`, driven through
//! `chromium-driver` (WebDriver) from here, over real sessions of `../shared/data/fresh/` and
//! one written to attack the page (`<script>`, an `<img onerror>`, terminal colours). Search →
//! open a session → its decision → copy the resume command; filters change results; the attack
//! renders as text and runs nothing; a request without the token, from another host, or a form
//! without its CSRF token is refused; forget asks before it deletes. Screenshots of every view
//! go to the test's temporary directory (`CONVDEX_UI_SCREENSHOTS=DIR` keeps them in `DIR`).
//! `.ci/run` installs `chromium` and `chromium-driver`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::copy_dir;

/// One HTTP/1.1 exchange (`Connection: close`): status, headers, body.
fn http(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(40))).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).unwrap();
    // Read the head, then exactly the body it announces (a server may keep the connection open).
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let mut wanted: Option<usize> = None;
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length =
                head.lines().find_map(|l| l.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok());
            let chunked = head.contains("transfer-encoding: chunked");
            wanted = length.map(|n: usize| end + 4 + n);
            if wanted.is_some_and(|w| raw.len() >= w) || (chunked && raw.ends_with(b"0\r\n\r\n")) {
                break;
            }
        }
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    if let Some(w) = wanted {
        raw.truncate(w);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { unchunk(body) } else { body.to_string() };
    (status, head.to_string(), body)
}

fn unchunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(after.get(..n).unwrap_or(after));
        rest = after.get(n + 2..).unwrap_or("");
    }
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A WebDriver session in headless Chromium.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Browser {
    fn start(profile: &Path, log: &Path) -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .arg(format!("--log-path={}", log.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver: install Debian's chromium and chromium-driver (.ci/run does)");
        let t = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t.elapsed() < Duration::from_secs(30), "chromedriver did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "pageLoadStrategy": "eager",
            "timeouts": {"pageLoad": 30_000, "script": 10_000}, "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                     "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--window-size=1280,1000", format!("--user-data-dir={}", profile.display())]}}}});
        let mut b = Browser { driver, port, session: String::new() };
        let v = b.call("POST", "/session", caps);
        b.session = v["sessionId"].as_str().expect("a WebDriver session").to_string();
        b
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let path = if path.starts_with("/session/") || path == "/session" {
            path.to_string()
        } else {
            format!("/session/{}{path}", self.session)
        };
        let body = if method == "GET" || method == "DELETE" { String::new() } else { body.to_string() };
        let (_, _, out) = http(self.port, method, &path, &[("Content-Type", "application/json")], &body);
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.call("POST", "/url", json!({"url": url}));
    }

    fn js(&self, script: &str) -> Value {
        self.call("POST", "/execute/sync", json!({"script": script, "args": []}))
    }

    fn find(&self, css: &str) -> Option<String> {
        let v = self.call("POST", "/element", json!({"using": "css selector", "value": css}));
        v.as_object().and_then(|o| o.values().next()).and_then(Value::as_str).map(str::to_string)
    }

    /// Waits (up to 20 s) for an element.
    fn wait(&self, css: &str) -> String {
        let t = Instant::now();
        loop {
            if let Some(e) = self.find(css) {
                return e;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "no `{css}` on {}", self.js("return location.href"));
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits (up to 20 s) until a script returns `true`.
    fn until(&self, script: &str) {
        let t = Instant::now();
        while self.js(script) != json!(true) {
            assert!(t.elapsed() < Duration::from_secs(20), "never true: {script}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn click(&self, element: &str) {
        self.call("POST", &format!("/element/{element}/click"), json!({}));
    }

    fn text(&self, element: &str) -> String {
        self.call("GET", &format!("/element/{element}/text"), json!({})).as_str().unwrap_or("").to_string()
    }

    fn screenshot(&self, to: &Path) {
        let v = self.call("GET", "/screenshot", json!({}));
        std::fs::write(to, base64(v.as_str().unwrap_or(""))).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = http(self.port, "DELETE", &format!("/session/{}", self.session), &[], "");
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn base64(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let digits: Vec<u8> = s.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let n = chunk.iter().enumerate().fold(0u32, |acc, (i, d)| acc | (u32::from(*d) << (18 - 6 * i)));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

/// A session written to attack the page, beside a decision that can be extracted.
fn hostile_session(projects: &Path) -> String {
    let id = "0e8d5a1c-9f0b-4c1e-8d7a-5b6c7d8e9f01";
    let dir = projects.join("-home-dev-shop");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |kind: &str, uuid: &str, at: &str, text: &str| {
        json!({"type": kind, "uuid": uuid, "sessionId": id, "cwd": "/home/dev/shop", "timestamp": at,
               "message": {"role": kind, "content": [{"type": "text", "text": text}]}})
        .to_string()
    };
    let lines = [
        line(
            "user",
            "u1",
            "2026-05-02T10:00:00Z",
            "The login form shows <script>window.__xss=1</script> and <img src=x onerror=\"window.__xss=2\"> \u{1b}[31mred\u{1b}[0m: which password hashing should we use?",
        ),
        line("assistant", "a1", "2026-05-02T10:00:05Z", "bcrypt works, argon2id resists GPU cracking better."),
        line(
            "user",
            "u2",
            "2026-05-02T10:01:00Z",
            "Let's use argon2id instead of bcrypt for password hashing, since it resists GPU cracking.",
        ),
        line("assistant", "a2", "2026-05-02T10:01:30Z", "Switched the hashing to argon2id."),
    ];
    std::fs::write(dir.join(format!("{id}.jsonl")), lines.join("\n") + "\n").unwrap();
    id.to_string()
}

#[test]
fn the_web_app_in_a_real_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let projects = tmp.path().join("home/.claude/projects");
    let fresh = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/fresh/transcripts");
    copy_dir(
        &fresh.join("umaionigiri+claudefiles/projects/-Users-so-MyWorkSpace-scibit-petabit-bpaas"),
        &projects.join("-Users-so-MyWorkSpace-scibit-petabit-bpaas"),
    );
    let hostile = hostile_session(&projects);
    let data = tmp.path().join("data");
    let bin = env!("CARGO_BIN_EXE_convdex");
    let out = Command::new(bin)
        .env("CONVDEX_WARM", "off")
        .args(["--data-dir", data.to_str().unwrap(), "index", projects.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut ui = Command::new(bin)
        .env("CONVDEX_WARM", "off")
        .args(["--data-dir", data.to_str().unwrap(), "ui"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = ui.stdout.take().unwrap();
    let mut byte = [0u8];
    while stdout.read(&mut byte).unwrap_or(0) == 1 && byte[0] != b'\n' {
        first.push(byte[0] as char);
    }
    let address = first.trim().to_string();
    let port: u16 = address.split(':').nth(2).and_then(|p| p.split('/').next()).and_then(|p| p.parse().ok()).unwrap();
    let token = address.split("t=").nth(1).unwrap().to_string();
    let base = format!("http://127.0.0.1:{port}");
    let shots: PathBuf =
        std::env::var_os("CONVDEX_UI_SCREENSHOTS").map_or(tmp.path().join("screenshots"), PathBuf::from);
    std::fs::create_dir_all(&shots).unwrap();

    // Refused: no token; another Host (DNS rebinding); a form without its CSRF token.
    assert_eq!(http(port, "GET", "/search?q=hash", &[], "").0, 403, "a request without the token");
    let evil = [("Host", "attacker.example:80")];
    assert_eq!(http(port, "GET", &format!("/search?t={token}"), &evil, "").0, 403, "another host");
    let cookie = format!("convdex_ui_{port}={token}");
    let form = [("Cookie", cookie.as_str()), ("Content-Type", "application/x-www-form-urlencoded")];
    let (status, _, _) = http(port, "POST", "/act/forget", &form, &format!("session={hostile}"));
    assert_eq!(status, 403, "a form without the CSRF token");
    let (status, head, _) = http(port, "GET", &format!("/search?t={token}"), &[], "");
    assert_eq!(status, 200);
    assert!(head.contains("Content-Security-Policy: default-src 'none'; script-src 'self'"), "{head}");

    let browser = Browser::start(&tmp.path().join("profile"), &shots.join("chromedriver.log"));
    browser.go(&address);
    let q = browser.wait("#q");
    // Results arrive as one types (the page asks for them without a reload: a mark set on this
    // page survives).
    browser.js("window.__same_page = 1; return null");
    browser.call("POST", &format!("/element/{q}/value"), json!({"text": "password hashing"}));
    browser.until(
        "return location.search.includes('q=password') && document.querySelectorAll('#results .hit').length > 0 \
         && window.__same_page === 1",
    );
    browser.screenshot(&shots.join("search.png"));
    // Filters change results: only the other project's sessions.
    browser.go(&format!("{base}/search?q=%E8%A6%8B%E7%A9%8D&project=petabit-bpaas&group=messages"));
    browser.wait("#results .hit");
    let metas =
        browser.js("return Array.from(document.querySelectorAll('#results .hit .meta')).map(e => e.textContent)");
    let metas: Vec<String> = metas.as_array().unwrap().iter().map(|m| m.as_str().unwrap_or("").to_string()).collect();
    assert!(!metas.is_empty() && metas.iter().all(|m| m.starts_with("petabit-bpaas")), "{metas:?}");
    // Search → the session → its decision → copy the resume command.
    browser.go(&format!("{base}/search?q=argon2id"));
    browser.wait("#results .session h3 a");
    let href = browser.js("return document.querySelector('#results .session h3 a').href");
    browser.go(href.as_str().expect("a link to the session"));
    let resume = browser.text(&browser.wait("#resume"));
    assert_eq!(resume, format!("cd /home/dev/shop && claude --resume {hostile}"));
    let decision = browser.wait("article .decision, article .decision.candidate");
    assert!(browser.text(&decision).to_lowercase().contains("argon2id"));
    let copy = browser.wait("button[data-copy]");
    browser.click(&copy);
    let t = Instant::now();
    while browser.js("return document.querySelector('button[data-copy]').getAttribute('data-copied')").is_null() {
        assert!(t.elapsed() < Duration::from_secs(5), "the copy button did nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    browser.screenshot(&shots.join("session.png"));
    // The attack is text: nothing ran, and the words are on the page as written.
    assert!(browser.js("return window.__xss === undefined").as_bool().unwrap(), "a script in a transcript ran");
    let shown = browser.js("return document.body.innerText");
    assert!(
        shown.as_str().unwrap().contains("<script>window.__xss=1</script>"),
        "the transcript's text is shown as text"
    );
    assert_eq!(browser.js("return document.querySelectorAll('main script, main img').length"), json!(0));
    // The other views, each with a screenshot.
    // The other views, each with a screenshot and what it must show.
    for (name, path, shows) in [
        // The ledger links the decision to the message it was made in.
        (
            "decisions",
            "/decisions",
            "return Array.from(document.querySelectorAll('main a')).some(a => \
             a.textContent.includes('argon2id') && a.getAttribute('href').startsWith('/session/'))",
        ),
        // A file's history names the sessions that changed it.
        (
            "file",
            "/file?path=outputs%2Festimate-ec-bpaas.md",
            "return document.querySelectorAll('main a[href^=\"/session/\"]').length > 0",
        ),
        // The activity chart has bars.
        (
            "project",
            "/project/petabit-bpaas",
            "return Array.from(document.querySelectorAll('svg.chart rect')).some(r => r.getAttribute('height') > 0)",
        ),
        // Every collection is named with its state.
        ("health", "/health", "return document.body.innerText.includes('local_shop_conversations')"),
    ] {
        browser.go(&format!("{base}{path}"));
        browser.wait("main h1");
        browser.until(shows);
        browser.screenshot(&shots.join(format!("{name}.png")));
    }
    assert!(std::fs::read(shots.join("session.png")).unwrap().starts_with(b"\x89PNG"), "screenshots are PNG");
    // Forget asks before it deletes.
    browser.go(&format!("{base}/session/{hostile}/forget"));
    let button = browser.wait("#forget");
    assert_eq!(http(port, "GET", &format!("/session/{hostile}"), &[("Cookie", cookie.as_str())], "").0, 200);
    browser.click(&button);
    // The click submits the form: wait for the page it leads to (the confirmation page's own
    // heading is there until it arrives).
    browser.until("const h = document.querySelector('main h1'); return h !== null && h.textContent === 'Forgotten'");
    assert_eq!(http(port, "GET", &format!("/session/{hostile}"), &[("Cookie", cookie.as_str())], "").0, 404);
    drop(browser);
    let _ = ui.kill();
    let _ = ui.wait();
    println!("screenshots in {}", shots.display());
}
