//! The warm helper (`convdex warm`, [`convdex::Index::serve_warm`]) driven through the real
//! binary with the real model, in a data directory whose path is not ASCII: a search answered
//! by the helper prints exactly what the same search prints in its own process; an index run
//! while the helper holds every collection neither waits nor fails, and the next search sees
//! what it wrote; a helper killed with SIGKILL leaves a socket that searches step over (and
//! the next one starts a new helper); a helper exits when idle and when its directory goes.
//! Every other test that runs the binary sets `CONVDEX_WARM=off`, so no helper outlives it.
#![cfg(unix)]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn convdex(data: &Path, warm: bool, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_convdex"));
    cmd.arg("--data-dir").arg(data).args(args).env("NO_COLOR", "1");
    cmd.env("CONVDEX_CONFIG", "/nonexistent/convdex-config.json");
    cmd.env("CONVDEX_WARM", if warm { "on" } else { "off" });
    cmd.stdin(Stdio::null()).output().unwrap()
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn status(data: &Path) -> Option<serde_json::Value> {
    let out = convdex(data, true, &["warm", "--status", "--json"]);
    out.status.success().then(|| serde_json::from_slice(&out.stdout).unwrap())
}

/// Waits for the helper of `data` to answer (it loads the model and opens every collection).
fn wait_for_helper(data: &Path) -> serde_json::Value {
    let start = Instant::now();
    loop {
        if let Some(s) = status(data) {
            return s;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "no warm helper answered");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

fn helper(data: &Path, idle_secs: u64) -> Child {
    Command::new(env!("CARGO_BIN_EXE_convdex"))
        .arg("--data-dir")
        .arg(data)
        .args(["warm", "--idle", &idle_secs.to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

const QUERIES: [&[&str]; 4] = [
    &["search", "expired session token", "--limit", "5"],
    &["search", "会话令牌过期", "--limit", "5", "--json"],
    &["search", "token", "--mode", "lexical", "--project", "acme-api", "--json"],
    &["search", "redis", "--mode", "semantic", "--type", "decision", "--json"],
];

#[test]
fn a_warm_helper_answers_as_the_process_would_and_lets_go_of_what_others_need() {
    let (history, transcript) = crate::common::sample_history();
    let base = tempfile::tempdir().unwrap();
    let data = base.path().join("数据 目录 (données)");
    ok(convdex(&data, false, &["index", history.path().join("projects").to_str().unwrap()]));
    let cold: Vec<String> = QUERIES.iter().map(|q| ok(convdex(&data, false, q))).collect();
    assert!(cold[0].lines().count() > 2, "the sample answers: {}", cold[0]);

    // Answered by the helper: the same bytes.
    let mut child = helper(&data, 60);
    let s = wait_for_helper(&data);
    assert_eq!(s["pid"], child.id());
    assert_eq!(s["collections"], 1);
    for (q, want) in QUERIES.iter().zip(&cold) {
        assert_eq!(&ok(convdex(&data, true, q)), want, "{q:?}");
    }
    assert_eq!(status(&data).unwrap()["searches"], QUERIES.len() as u64);
    // A second helper for the same directory leaves at once.
    let mut second = helper(&data, 60);
    assert!(wait_exit(&mut second, Duration::from_secs(30)), "a second helper kept running");
    let said = second.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&said.stderr).contains("already serves"));

    // An index run while the helper holds the collection: it asks the helper to let go
    // instead of waiting, and the next search sees the new session.
    let copy = transcript.with_file_name("0b6f3c9a-1d2e-4f5a-8b7c-6d5e4f3a2b1c.jsonl");
    let text = std::fs::read_to_string(&transcript).unwrap();
    std::fs::write(&copy, text.replace("7f3c1a2e-5b4d-4c6e-9a8b-1d2e3f4a5b6c", "0b6f3c9a-1d2e-4f5a-8b7c-6d5e4f3a2b1c"))
        .unwrap();
    let t = Instant::now();
    let indexed = ok(convdex(&data, false, &["index", history.path().join("projects").to_str().unwrap(), "--json"]));
    let indexed: serde_json::Value = serde_json::from_str(&indexed).unwrap();
    assert_eq!(indexed["sessions_new"], 1, "{indexed}");
    assert!(t.elapsed() < Duration::from_secs(60));
    let new_session: &[&str] =
        &["search", "expired session token", "--session", "0b6f3c9a-1d2e-4f5a-8b7c-6d5e4f3a2b1c", "--json"];
    let after_cold = ok(convdex(&data, false, new_session));
    let after_warm = ok(convdex(&data, true, new_session));
    assert_eq!(after_warm, after_cold);
    assert!(after_warm.contains("0b6f3c9a-1d2e-4f5a-8b7c-6d5e4f3a2b1c"), "{after_warm}");
    assert_eq!(status(&data).unwrap()["collections"], 1, "the helper holds the collection again");
    // The doctor reports the helper, and checks every collection (the helper lets go of them).
    let projects = history.path().join("projects");
    let doctor_args: &[&str] = &["doctor", "--json", "--history", projects.to_str().unwrap()];
    let doctor =
        |warm: bool| -> serde_json::Value { serde_json::from_str(&ok(convdex(&data, warm, doctor_args))).unwrap() };
    let report = doctor(true);
    assert_eq!(report["warm"]["state"], "running", "{report}");
    assert_eq!(report["warm"]["status"]["pid"], child.id());
    assert!(report["collections"].as_array().unwrap().iter().all(|c| c["state"] == "ok"), "{report}");

    // Killed: the socket stays behind; a search steps over it, answers, and starts a helper.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(data.join("warm.sock").exists());
    assert_eq!(ok(convdex(&data, true, new_session)), after_cold);
    let restarted = wait_for_helper(&data);
    assert_ne!(restarted["pid"], s["pid"]);
    assert_eq!(ok(convdex(&data, true, new_session)), after_cold);
    assert_eq!(ok(convdex(&data, true, &["warm", "--stop"])).trim(), "stopped the warm helper");
    // `--stop` returns once the helper has let go: its socket is gone, and a helper started
    // at once serves instead of leaving as a second one.
    assert!(!data.join("warm.sock").exists(), "the socket outlived --stop");
    let mut again = helper(&data, 60);
    assert_eq!(wait_for_helper(&data)["pid"], again.id());
    assert_eq!(ok(convdex(&data, true, &["warm", "--stop"])).trim(), "stopped the warm helper");
    assert!(wait_exit(&mut again, Duration::from_secs(10)), "the helper did not stop");
    assert!(status(&data).is_none() && !data.join("warm.sock").exists());
    // No helper: `--status` says so with exit 3; a lexical search does not start one.
    assert_eq!(convdex(&data, true, &["warm", "--status"]).status.code(), Some(3));
    assert_eq!(doctor(true)["warm"]["state"], "none");
    assert_eq!(doctor(false)["warm"]["state"], "off");
    ok(convdex(&data, true, QUERIES[2]));
    std::thread::sleep(Duration::from_millis(500));
    assert!(status(&data).is_none(), "a lexical search started a helper");
}

#[test]
fn a_helper_exits_when_idle_and_when_its_directory_goes() {
    let (history, _) = crate::common::sample_history();
    let base = tempfile::tempdir().unwrap();
    let data = base.path().join("한국어 경로");
    ok(convdex(&data, false, &["index", history.path().join("projects").to_str().unwrap()]));
    let mut idle = helper(&data, 1);
    wait_for_helper(&data);
    assert!(wait_exit(&mut idle, Duration::from_secs(30)), "an idle helper kept running");
    assert!(idle.wait().unwrap().success());
    assert!(!data.join("warm.sock").exists(), "an idle helper left its socket");
    // The collection was closed cleanly: the next open needs no repair and finds everything.
    let stats = ok(convdex(&data, false, &["stats", "--json"]));
    assert!(stats.contains("acme-api"), "{stats}");

    let mut orphan = helper(&data, 600);
    wait_for_helper(&data);
    std::fs::remove_dir_all(&data).unwrap();
    assert!(wait_exit(&mut orphan, Duration::from_secs(30)), "a helper outlived its data directory");
}
