//! The `convdex` binary's commands: `--json` shapes, exit codes (0 ok, 1 error, 2 usage, 3 done
//! with problems),
//! completions, a collection held by another process (a clear error after waiting), and
//! `forget` / `compact` end to end (tombstone, `index --force` brings the session back).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

struct Cli {
    data: tempfile::TempDir,
}

impl Cli {
    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_convdex"))
            .env("CONVDEX_WARM", "off")
            .args(["--data-dir", self.data.path().to_str().unwrap()])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .env("CONVDEX_CONFIG", "/nonexistent/convdex-config.json")
            .output()
            .unwrap()
    }

    fn json(&self, args: &[&str]) -> Value {
        self.json_exit(args, 0)
    }

    /// JSON output of a command that exits with `code` (3: done with problems).
    fn json_exit(&self, args: &[&str], code: i32) -> Value {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

const SESSION: &str = "7f3c1a2e-5b4d-4c6e-9a8b-1d2e3f4a5b6c";

#[test]
fn commands_json_exit_codes_and_forget() {
    let cli = Cli { data: tempfile::tempdir().unwrap() };
    let sample = "examples/sample/projects";
    let out = cli.run(&["search", "anything"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing is indexed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = cli.json(&["index", sample, "--json"]);
    assert_eq!(report["sessions_new"], 1);

    // Read commands with --json.
    let stats = cli.json(&["stats", "--json"]);
    assert_eq!(stats.as_array().unwrap().len(), 1);
    let s = &stats[0]["stats"];
    assert_eq!(stats[0]["project"], "acme-api");
    assert!(s["messages"].as_u64().unwrap() > 5 && s["sessions"] == 1);
    assert!(s["model"].as_str().is_some_and(|m| m.contains("multilingual-e5-small")), "{s}");
    assert!(s["last_indexed"].as_str().is_some(), "{s}");
    let handoff = cli.json(&["handoff", "--json"]);
    assert_eq!(handoff["project"], "acme-api");
    assert!(handoff["brief"].as_str().is_some_and(|b| b.starts_with('#')));
    assert!(cli.json(&["decisions", "--json", "--all"]).is_array());
    let blame = cli.json(&["blame", "src/auth.rs", "--json"]);
    assert_eq!(blame[0]["session"], SESSION);
    // A session named by the prefix search prints; a tag in any case, as search reads tags.
    let own = cli.json(&["search", "expired tokens", "--session", &SESSION[..8], "--json"]);
    assert!(
        !own.as_array().unwrap().is_empty() && own.as_array().unwrap().iter().all(|h| h["session"] == SESSION),
        "{own}"
    );
    // The text output says first how likely an answer is among the hits it lists (the
    // calibrated chance of `answer_among` over their relevances); a search by words alone,
    // which it was not fitted on, does not.
    let listed = cli.json(&["search", "expired tokens", "--limit", "3", "--json"]);
    let relevances: Vec<u8> =
        listed.as_array().unwrap().iter().map(|h| h["relevance"].as_u64().unwrap() as u8).collect();
    assert_eq!(relevances.len(), 3, "{listed}");
    let text = String::from_utf8(cli.run(&["search", "expired tokens", "--limit", "3"]).stdout).unwrap();
    let first = text.lines().next().unwrap_or_default();
    let expected = format!("chance one of these 3 hits is an answer: {} %", convdex::answer_among(relevances));
    assert_eq!(first, expected, "{text}");
    let words = String::from_utf8(cli.run(&["search", "expired tokens", "--mode", "lexical"]).stdout).unwrap();
    assert!(words.starts_with("relevance (% chance it answers)"), "{words}");
    // Nor one hit alone (read alone, its chance differs from the relevance beside it).
    let one = String::from_utf8(cli.run(&["search", "expired tokens", "--limit", "1"]).stdout).unwrap();
    assert!(one.starts_with("relevance (% chance it answers)"), "{one}");
    let out = cli.run(&["search", "expired tokens", "--session", "ffff0000"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ffff0000"), "{}", String::from_utf8_lossy(&out.stderr));
    let upper = cli.json(&["decisions", "--json", "--all", "--tag", "REDIS"]);
    assert_eq!(upper, cli.json(&["decisions", "--json", "--all", "--tag", "redis"]));
    assert!(!upper.as_array().unwrap().is_empty(), "{upper}");
    // Output into a reader that stops early (`| head`): the command stops quietly, exit 0.
    for args in [&["search", "expired tokens"][..], &["decisions", "--all"], &["completions", "bash"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_convdex"))
            .env("CONVDEX_WARM", "off")
            .args(["--data-dir", cli.data.path().to_str().unwrap()])
            .args(args)
            .env("CONVDEX_CONFIG", "/nonexistent/convdex-config.json")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !err.contains("panicked"), "{args:?}: {:?} {err}", out.status);
    }
    let models = cli.json(&["models", "check", "--json"]);
    let default = models.as_array().unwrap().iter().find(|m| m["default"] == true).unwrap();
    assert_eq!((default["model"].as_str(), default["state"].as_str()), (Some("multilingual-e5-small"), Some("ok")));
    assert!(default["model_dir"].is_string() && default["runtime"].is_string(), "{models}");
    assert!(cli.json(&["runs", sample, "--json"]).is_array());

    // Import: good documents land in their project, bad ones are reported and skipped (exit 3:
    // done with problems).
    let file = cli.data.path().join("standup.json");
    let good = serde_json::json!({"id": "standup-1", "conversation": {"source": "slack", "people": ["ana", "bo"], "user": "ana",
        "conversation": [
            {"speaker": "ana", "content": "Shall we move the nightly backup job to the new storage bucket?", "time": "2026-10-20T09:00:00Z"},
            {"speaker": "bo", "content": "Yes, the old bucket fills up every Friday.", "time": "2026-10-20T09:01:00Z"}]}});
    let bad = serde_json::json!({"id": "standup-2", "conversation": {"source": "slack", "people": ["ana"], "user": "ana", "conversation": []}});
    std::fs::write(&file, format!("{good}\n{bad}\n")).unwrap();
    let imported = cli.json_exit(&["import", file.to_str().unwrap(), "--project", "team", "--json"], 3);
    assert_eq!(imported["conversations"], 1);
    assert_eq!(imported["invalid"].as_array().unwrap().len(), 1);
    let hits = cli.json(&["search", "backup storage", "--project", "team", "--json", "--limit", "2"]);
    assert!(hits.as_array().unwrap().iter().all(|h| h["project"] == "team" && h["session"] == "standup-1"), "{hits}");
    // Sessions instead of messages, across both projects: each once, its hits its own.
    let sessions = cli.json(&["search", "backup storage bucket", "--sessions", "--json", "--limit", "2"]);
    let sessions = sessions.as_array().unwrap();
    assert!(!sessions.is_empty() && sessions.len() <= 2, "{sessions:?}");
    assert_eq!((sessions[0]["project"].as_str(), sessions[0]["session"].as_str()), (Some("team"), Some("standup-1")));
    for s in sessions {
        let hits = s["hits"].as_array().unwrap();
        assert!(!hits.is_empty() && s["matched"].as_u64().unwrap() >= hits.len() as u64, "{s}");
        assert!(hits.iter().all(|h| h["session"] == s["session"] && h["project"] == s["project"]), "{s}");
    }
    assert_ne!(sessions.first().map(|s| &s["session"]), sessions.get(1).map(|s| &s["session"]));
    // Words in Chinese find the English conversation through the glossary, unless told not to.
    let words = ["search", "备份存储", "--mode", "lexical", "--project", "team", "--json"];
    let hits = cli.json(&words);
    assert_eq!(hits.as_array().and_then(|h| h.first()).map(|h| &h["session"]), Some(&Value::from("standup-1")));
    assert_eq!(hits[0]["signals"]["translated"], true, "{hits}");
    let own = cli.json(&[&words[..], &["--no-translate"]].concat());
    assert_eq!(own.as_array().map(Vec::len), Some(0), "{own}");
    // A glossary of one's own in the data directory adds its concepts; a bad line is left out
    // and named by doctor.
    let nightly = ["search", "夜间任务", "--mode", "lexical", "--project", "team", "--json"];
    assert_eq!(cli.json(&nightly).as_array().map(Vec::len), Some(0), "not in the built-in glossary");
    std::fs::write(cli.data.path().join("glossary.tsv"), "nightly job\t夜间任务\nno tabs here\n").unwrap();
    let hits = cli.json(&nightly);
    assert_eq!(hits.as_array().and_then(|h| h.first()).map(|h| &h["session"]), Some(&Value::from("standup-1")));
    let doctor = cli.json_exit(&["doctor", "--json", "--history", "/nonexistent"], 3);
    let g = &doctor["glossary"];
    assert_eq!((g["state"].as_str(), g["skipped"][0]["line"].as_u64()), (Some("skipped"), Some(2)), "{g}");
    assert_eq!(g["concepts"].as_u64(), g["builtin"].as_u64().map(|b| b + 1), "{g}");
    std::fs::remove_file(cli.data.path().join("glossary.tsv")).unwrap();

    // Completions; usage errors exit 2, other errors 1 with one `error:` line and a hint.
    let out = cli.run(&["completions", "bash"]);
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("_convdex"));
    assert_eq!(cli.run(&["completions", "tcsh-ish"]).status.code(), Some(2));
    assert_eq!(cli.run(&["forget"]).status.code(), Some(2), "forget needs a selector");
    assert_eq!(cli.run(&["forget", "--session", "7f", "--before", "2026-01-01"]).status.code(), Some(2));
    let out = cli.run(&["search", "x", "--sessions", "--team", "postgres://nowhere"]);
    assert_eq!(out.status.code(), Some(2), "a team search lists hits, not sessions: said, not ignored");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--sessions"));
    // A value the command refuses is a usage error too, with one line saying what to give.
    let out = cli.run(&["search", "x", "--since", "yesterday"]);
    assert_eq!(out.status.code(), Some(2));
    for bad in [
        &["search", "x", "--limit", "0"][..],
        &["search", "x", "--sessions", "--limit", "0"],
        &["search", ""],
        &["search", "x", "--half-life", "0", "--recent"],
    ] {
        let out = cli.run(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("error: ") && err.contains("YYYY-MM-DD") && err.lines().count() == 1, "{err}");

    // Another process holds a collection: the command waits, then says so clearly; the other
    // project still answers (exit 3: done with problems); asked for that project alone, it fails.
    let coll_dir = cli.data.path().join(stats[0]["collection"].as_str().unwrap());
    let lock = std::fs::OpenOptions::new().read(true).write(true).open(coll_dir.join("LOCK")).unwrap();
    lock.try_lock().unwrap();
    let out = cli.run(&["search", "backup", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("in use by another process") && err.contains("retry"), "{err}");
    let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(hits.as_array().unwrap().iter().any(|h| h["project"] == "team"), "{hits}");
    let out = cli.run(&["search", "token", "--project", "acme-api"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("in use by another process"));
    drop(lock);

    // Forget: a dry run changes nothing; the real one deletes, compacts and leaves a tombstone.
    let dry = cli.json(&["forget", "--session", "7f3c", "--dry-run", "--json"]);
    assert_eq!(dry["sessions"][0]["session"], SESSION);
    assert!(dry["compacted"].as_array().unwrap().is_empty());
    assert!(cli.run(&["session", "7f3c"]).status.success());
    let gone = cli.json(&["forget", "--session", "7f3c", "--json"]);
    assert!(gone["sessions"][0]["documents"].as_u64().unwrap() > 5);
    assert_eq!(gone["compacted"][0]["collection"], stats[0]["collection"]);
    assert_eq!(cli.run(&["session", "7f3c"]).status.code(), Some(1));
    assert!(
        cli.json(&["search", "expired session token", "--project", "acme-api", "--json"])
            .as_array()
            .unwrap()
            .is_empty()
    );
    let again = cli.json(&["index", sample, "--json"]);
    assert_eq!(again["sessions_forgotten"], 1);
    let acme = |v: &Value| v.as_array().unwrap().iter().find(|c| c["project"] == "acme-api").cloned().unwrap();
    assert_eq!(acme(&cli.json(&["stats", "--json"]))["stats"]["forgotten_sessions"], 1);
    assert!(
        cli.json(&["search", "expired session token", "--project", "acme-api", "--json"])
            .as_array()
            .unwrap()
            .is_empty()
    );
    let forced = cli.json(&["index", sample, "--force", "--json"]);
    assert_eq!(forced["sessions_new"], 1);
    let hits = cli.json(&["search", "expired session token", "--project", "acme-api", "--json"]);
    assert_eq!(hits[0]["session"], SESSION);
    // `forget --before` selects by the session's last message; `compact` alone works too.
    let none = cli.json(&["forget", "--before", "2000-01-01", "--json"]);
    assert!(none["sessions"].as_array().unwrap().is_empty());
    let compacted = cli.json(&["compact", "--json"]);
    assert_eq!(compacted.as_array().unwrap().len(), 2, "both collections");
    assert_eq!(cli.run(&["compact", "--project", "nope"]).status.code(), Some(1));
    assert!(Path::new(&coll_dir).join("data.redb").exists());
}
