//! Memory that comes to the agent, through the real binary with Claude Code's hook payloads:
//! `hook session-start` (a brief within budget, nothing for a project without history),
//! `remember` then `hook prompt` (an earlier decision recalled, an unrelated prompt gets
//! nothing), broken input never exits non-zero (and `doctor` reports it), and `install` /
//! `uninstall` on a settings file with unrelated content.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn convdex(data: &Path, args: &[&str], stdin: &str, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_convdex"));
    cmd.env("CONVDEX_WARM", "off").args(["--data-dir", data.to_str().unwrap()]).args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn context(out: &Output) -> Option<String> {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("hook output is JSON");
    Some(v["hookSpecificOutput"]["additionalContext"].as_str().expect("additionalContext").to_string())
}

#[test]
fn hooks_bring_memory_to_the_agent() {
    let (_history, transcript) = crate::common::sample_history();
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    let end = json!({"session_id": "s", "transcript_path": transcript, "cwd": "/home/dev/acme-api",
        "hook_event_name": "SessionEnd", "reason": "exit"});
    assert!(convdex(d, &["index", "--hook"], &end.to_string(), &[]).status.success());

    // A new session in the project (from a sub-directory, Windows-style separators too) gets a
    // brief within its budget; a directory no project holds gets nothing.
    for cwd in ["/home/dev/acme-api", "/home/dev/acme-api/src/db"] {
        let start = json!({"session_id": "new", "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"});
        let brief = context(&convdex(d, &["hook", "session-start"], &start.to_string(), &[])).expect("a brief");
        assert!(brief.starts_with("# convdex: where work on acme-api stands"), "{brief}");
        assert!(brief.contains("Last session"), "{brief}");
        assert!(convdex::count_tokens(&brief) <= 600, "{brief}");
    }
    let small = json!({"session_id": "new", "cwd": "/home/dev/acme-api", "source": "startup"});
    let brief = context(&convdex(d, &["hook", "session-start", "--budget", "40"], &small.to_string(), &[]));
    assert!(brief.as_deref().is_none_or(|b| convdex::count_tokens(b) <= 40), "{brief:?}");
    let elsewhere = json!({"session_id": "new", "cwd": "/home/dev/其他项目", "source": "startup"});
    assert_eq!(context(&convdex(d, &["hook", "session-start"], &elsewhere.to_string(), &[])), None);

    // Remembered on purpose: stored once, shown first in the brief, recalled by a prompt about it.
    let note = "Keep the 連線池 pool size at 40 for the staging database";
    let r = convdex(
        d,
        &["remember", note, "--why", "load tests saturate at 48", "--project", "acme-api", "--json"],
        "",
        &[],
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let r: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(r["new"], true);
    let again = convdex(
        d,
        &["remember", note, "--why", "load tests saturate at 48", "--project", "acme-api", "--json"],
        "",
        &[],
    );
    assert_eq!(serde_json::from_slice::<Value>(&again.stdout).unwrap()["new"], false);
    let start = json!({"session_id": "new", "cwd": "/home/dev/acme-api", "source": "startup"});
    let brief = context(&convdex(d, &["hook", "session-start"], &start.to_string(), &[])).unwrap();
    assert!(brief.contains("## Decisions in force\n- Keep the 連線池 pool size at 40"), "{brief}");
    let ask = json!({"session_id": "new", "cwd": "/home/dev/acme-api", "hook_event_name": "UserPromptSubmit",
        "prompt": "what pool size did we settle on for the staging database?"});
    let block = context(&convdex(d, &["hook", "prompt"], &ask.to_string(), &[])).expect("recalled");
    assert!(block.contains("decision: Keep the 連線池 pool size at 40"), "{block}");
    let unrelated = json!({"session_id": "new", "cwd": "/home/dev/acme-api",
        "prompt": "please translate this poem about autumn leaves into French"});
    assert_eq!(context(&convdex(d, &["hook", "prompt"], &unrelated.to_string(), &[])), None);
    // With `--other-projects`: this project first, then what another project decided, said
    // where it was decided.
    let other = tempfile::tempdir().unwrap();
    let dir = other.path().join("projects/-home-dev-billing-svc");
    std::fs::create_dir_all(&dir).unwrap();
    let line = |t: &str, uuid: &str, text: &str| {
        json!({"type": t, "uuid": uuid, "sessionId": "b1", "cwd": "/home/dev/billing-svc",
            "timestamp": "2026-11-01T10:00:00Z", "message": {"role": t, "content": text}})
        .to_string()
    };
    let lines = [line("user", "u1", "set up the invoice service"), line("assistant", "a1", "Done.")];
    std::fs::write(dir.join("b1.jsonl"), lines.join("\n") + "\n").unwrap();
    let indexed = convdex(d, &["index", other.path().join("projects").to_str().unwrap()], "", &[]);
    assert!(indexed.status.success(), "{}", String::from_utf8_lossy(&indexed.stderr));
    let elsewhere = "Retry failed Stripe invoice webhooks with idempotency keys";
    let r = convdex(d, &["remember", elsewhere, "--project", "billing-svc"], "", &[]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let ask = json!({"session_id": "new", "cwd": "/home/dev/acme-api",
        "prompt": "do failed stripe invoice webhooks need idempotency keys when we retry?"});
    // Other projects are asked only on request (`--other-projects`).
    assert_eq!(context(&convdex(d, &["hook", "prompt"], &ask.to_string(), &[])), None);
    let block = context(&convdex(d, &["hook", "prompt", "--other-projects"], &ask.to_string(), &[]))
        .expect("recalled elsewhere");
    assert!(block.contains("project billing-svc") && block.contains("idempotency keys"), "{block}");
    // The same words asked again recall nothing new: the prompt itself is not shown back.
    let repeat = json!({"session_id": "new", "cwd": "/home/dev/acme-api", "prompt": elsewhere});
    let block = context(&convdex(d, &["hook", "prompt", "--other-projects"], &repeat.to_string(), &[]));
    assert!(block.as_deref().is_none_or(|b| !b.contains("idempotency keys")), "{block:?}");

    // Broken input: exit 0, nothing printed, the error recorded for `doctor`.
    for bad in ["", "not json", "[1,2]", "{\"prompt\": 7}"] {
        let out = convdex(d, &["hook", "prompt"], bad, &[]);
        assert!(out.status.success() && out.stdout.is_empty(), "{bad:?}");
    }
    let out = convdex(d, &["hook", "session-start"], "{{{", &[]);
    assert!(out.status.success() && out.stdout.is_empty());
    let cfg = tempfile::tempdir().unwrap();
    let doctor = convdex(d, &["doctor", "--json"], "", &[("CLAUDE_CONFIG_DIR", cfg.path())]);
    let doctor: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let start_hook = &doctor["hooks"][0];
    assert_eq!(start_hook["event"], "SessionStart");
    assert_eq!(start_hook["state"], "missing");
    assert_eq!(start_hook["last_run"]["ok"], false, "{doctor:#}");
}

#[test]
fn install_keeps_unrelated_settings_and_uninstall_restores_them() {
    let cfg = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let settings_path = cfg.path().join("settings.json");
    let original = "{\n    \"model\": \"opus\",\n    \"zeta\": [1, 2],\n    \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint.sh\"}]}]},\n    \"alpha\": {\"b\": 1, \"a\": 2}\n}\n";
    std::fs::write(&settings_path, original).unwrap();
    let env = [("CLAUDE_CONFIG_DIR", cfg.path())];
    let dry = convdex(data.path(), &["install", "--dry-run"], "", &env);
    assert!(dry.status.success());
    assert_eq!(std::fs::read_to_string(&settings_path).unwrap(), original, "--dry-run writes nothing");
    assert!(String::from_utf8_lossy(&dry.stdout).contains("hook session-start"));
    assert!(convdex(data.path(), &["install"], "", &env).status.success());
    let once = std::fs::read_to_string(&settings_path).unwrap();
    let v: Value = serde_json::from_str(&once).unwrap();
    // Unrelated content kept, keys in their order.
    assert_eq!(v["model"], "opus");
    assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint.sh");
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["model", "zeta", "hooks", "alpha"]);
    assert_eq!(convdex::setup::installed_hooks(&v).len(), 3);
    let registry: Value =
        serde_json::from_str(&std::fs::read_to_string(cfg.path().join(".claude.json")).unwrap()).unwrap();
    assert_eq!(registry["mcpServers"]["convdex"]["args"].as_array().unwrap().last().unwrap(), "mcp");
    // A second run changes nothing.
    let second = convdex(data.path(), &["install"], "", &env);
    assert!(String::from_utf8_lossy(&second.stdout).matches("unchanged").count() == 2);
    assert_eq!(std::fs::read_to_string(&settings_path).unwrap(), once);
    assert!(convdex(data.path(), &["uninstall"], "", &env).status.success());
    assert_eq!(std::fs::read_to_string(&settings_path).unwrap(), original, "uninstall restores the file");
}

/// `doctor` compares the history on disk with the index, writing nothing: a new session and a
/// new project's session are reported with the command that fixes it; after `index`, none.
#[test]
fn doctor_reports_sessions_on_disk_that_are_not_indexed() {
    let (history, transcript) = crate::common::sample_history();
    let projects = history.path().join("projects");
    let data = tempfile::tempdir().unwrap();
    let d = data.path();
    let cfg = tempfile::tempdir().unwrap();
    let env = [("CLAUDE_CONFIG_DIR", cfg.path())];
    let root = projects.to_str().unwrap();
    assert!(convdex(d, &["index", root], "", &env).status.success());
    // Exit 3 (done with problems) when something needs fixing, with a `warning:` line.
    let doctor = |d: &Path| -> Value {
        let out = convdex(d, &["doctor", "--json", "--history", root], "", &env);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let behind = v["history"]["state"] == "behind";
        assert_eq!(out.status.code(), Some(if behind { 3 } else { 0 }), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stderr).contains("run `convdex index`"), behind);
        v
    };
    let v = doctor(d);
    assert_eq!(v["history"]["state"], "ok", "{v:#}");
    assert!(v["data_dir"]["bytes"].as_u64().unwrap() > 0);

    // A second session in the project, and a session of a project never indexed (in Chinese).
    let text = std::fs::read_to_string(&transcript).unwrap();
    let old = transcript.file_stem().unwrap().to_str().unwrap();
    let new_id = "0b5e2c1d-9a8f-4e7d-8c6b-5a4f3e2d1c0b";
    let second = transcript.with_file_name(format!("{new_id}.jsonl"));
    std::fs::write(&second, text.replace(old, new_id)).unwrap();
    let other = projects.join("-home-dev-数据-管道");
    std::fs::create_dir_all(&other).unwrap();
    let third_id = "1c6f3d2e-0b9a-4f8e-9d7c-6b5a4f3e2d1c";
    std::fs::write(
        other.join(format!("{third_id}.jsonl")),
        text.replace(old, third_id).replace("acme-api", "数据-管道"),
    )
    .unwrap();
    let before = std::fs::read_dir(d).unwrap().count();
    let v = doctor(d);
    assert_eq!(v["history"]["state"], "behind", "{v:#}");
    let listed: Vec<&str> = v["history"]["sessions"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert!(listed.iter().any(|p| p.ends_with(&format!("{new_id}.jsonl"))), "{listed:?}");
    assert!(listed.iter().any(|p| p.ends_with(&format!("{third_id}.jsonl"))), "{listed:?}");
    assert!(v["history"]["detail"].as_str().unwrap().contains("convdex index"));
    assert_eq!(std::fs::read_dir(d).unwrap().count(), before, "a dry run creates no collection");

    assert!(convdex(d, &["index", root], "", &env).status.success());
    assert_eq!(doctor(d)["history"]["state"], "ok");
}
