//! Every session indexed once, every file accounted for, in the odd layouts real backups have,
//! built from real files of `../shared/data/fresh/` (copied into a temporary home directory):
//! - a project folder that also holds a flat `subagents/` folder (a backup gathered the older
//!   `agent-*.jsonl` files there), beside ordinary project folders in `~/.claude/projects`: it
//!   used to make the whole `projects/` folder read as one project of one session;
//! - the same session under two project folders (a backup kept it under both names);
//! - a backup whose parent folders were renamed (`claude-2025/projects`, no dot);
//! - Claude Code 1.0.x sessions, 2.0.x flat sub-agents and 2.1.x `subagents/workflows/`;
//! - Codex rollouts in the format written until September 2025 (no `session_meta`), made from
//!   the real rollouts by the transformation documented in [`legacy_rollout`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use convdex::{FileOutcome, IndexOptions};
use serde_json::{Value, json};

use crate::common::hash_index;

use super::common::copy_dir;

fn fresh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/fresh")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// A real rollout written the way Codex wrote them until September 2025: the header line
/// `{id, timestamp, instructions}`, `{"record_type":"state"}` markers, the working directory in
/// an `<environment_context>` user message, prompts as bare user messages and every other
/// `response_item` payload bare, without its envelope or time.
fn legacy_rollout(modern: &str) -> (String, String) {
    let records: Vec<Value> = modern.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let meta = records.iter().find(|r| r["type"] == "session_meta").expect("a modern rollout")["payload"].clone();
    let mut out = vec![
        json!({"id": meta["id"], "timestamp": meta["timestamp"], "instructions": null}),
        json!({"record_type": "state"}),
        json!({"type": "message", "role": "user", "content": [{"type": "input_text",
            "text": format!("<environment_context>\n  <cwd>{}</cwd>\n</environment_context>", meta["cwd"].as_str().unwrap())}]}),
    ];
    for r in &records {
        let p = &r["payload"];
        match (r["type"].as_str(), p["type"].as_str()) {
            (Some("event_msg"), Some("user_message")) => out.push(
                json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": p["message"]}]}),
            ),
            (Some("response_item"), Some("message")) if p["role"] == "user" => {}
            (Some("response_item"), _) => out.push(p.clone()),
            _ => {}
        }
    }
    out.push(json!({"record_type": "state"}));
    let text = out.iter().map(|v| format!("{v}\n")).collect();
    (meta["id"].as_str().unwrap().to_string(), text)
}

/// The home directory: returns it and the sessions expected (agent, id) with the number of
/// files each should be read from.
fn home(root: &Path) -> BTreeMap<(String, String), usize> {
    let projects = root.join(".claude/projects");
    let t = fresh().join("transcripts");
    // Ordinary project folders, Claude Code 1.0.x and 2.0.x (with older flat sub-agents).
    for (owner, folder) in [
        ("JiangBeta+hyprland-elite-desktop/claude/projects", "-home-laofahai-dotfiles"),
        ("JiangBeta+hyprland-elite-desktop/claude/projects", "-home-laofahai-workspace-linch-kit"),
        ("bradymholt+dotfiles/.claude/projects", "-Users-bholt-dev-evergreen"),
        ("mlevison+dotfiles/claude/projects", "-Users-marklevison-Documents-Obsidian-MarkPKM"),
    ] {
        copy_dir(&t.join(owner).join(folder), &projects.join(folder));
    }
    // The odd folder: the older `agent-*.jsonl` gathered into a flat `subagents/`.
    let odd = projects.join("-home-ubuntu");
    copy_dir(&t.join("jo030304+JBNU-Litmus/.claude/projects/-home-ubuntu"), &odd);
    std::fs::create_dir_all(odd.join("subagents")).unwrap();
    for e in std::fs::read_dir(&odd).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("agent-") {
            std::fs::rename(e.path(), odd.join("subagents").join(e.file_name())).unwrap();
        }
    }
    // One session under two project folders (as the owner's repository holds it).
    for folder in ["-Users-allenbot", "-Users-allenbot-project-auto-trading"] {
        copy_dir(&t.join("earnabitmore365+merit-ledger/projects").join(folder), &projects.join(folder));
    }
    // A backup with renamed parent folders, beside the home's own history.
    copy_dir(
        &t.join("umaionigiri+claudefiles/projects/-Users-so-MyWorkSpace-scibit-petabit-bpaas"),
        &root.join("backups/claude-2025/projects/-Users-so-MyWorkSpace-scibit-petabit-bpaas"),
    );
    // Codex rollouts before `session_meta`.
    let codex = root.join(".codex/sessions/2025/08/18");
    std::fs::create_dir_all(&codex).unwrap();
    let mut rollouts = Vec::new();
    files_under(&fresh().join("agents/codex"), &mut rollouts);
    rollouts.sort();
    let mut expected = BTreeMap::new();
    for (i, r) in rollouts.iter().enumerate() {
        let (id, text) = legacy_rollout(&std::fs::read_to_string(r).unwrap());
        std::fs::write(codex.join(format!("rollout-2025-08-18T0{i}-00-00-{id}.jsonl")), text).unwrap();
        expected.insert(("codex".to_string(), id), 1);
    }
    // Claude Code sessions expected: every main transcript once, each with its sub-agent files
    // (internal agents apart), wherever they sit.
    let mut all = Vec::new();
    files_under(&root.join(".claude"), &mut all);
    files_under(&root.join("backups"), &mut all);
    for f in all {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains("acompact") || name.contains("aprompt_suggestion") {
            continue;
        }
        let session = if name.starts_with("agent-") {
            let head = std::fs::read_to_string(&f).unwrap();
            let id = head
                .lines()
                .find_map(|l| serde_json::from_str::<Value>(l).ok()?.get("sessionId")?.as_str().map(str::to_string));
            id.unwrap_or_else(|| name.trim_end_matches(".jsonl").to_string())
        } else if f.components().any(|c| c.as_os_str() == "subagents") {
            // `<session>/subagents/…`: the folder above `subagents` names the session.
            let mut p = f.as_path();
            while p.file_name().is_some_and(|n| n != "subagents") {
                p = p.parent().unwrap();
            }
            p.parent().unwrap().file_name().unwrap().to_string_lossy().into_owned()
        } else {
            name.trim_end_matches(".jsonl").to_string()
        };
        *expected.entry(("claude-code".to_string(), session)).or_default() += 1;
    }
    expected
}

#[test]
fn odd_layouts_index_every_session_once_and_account_for_every_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("家");
    let expected = home(&root);
    // The second copy of the session kept under two folders is one session: its sub-agent
    // files of the same name are read once.
    let mut on_disk = Vec::new();
    files_under(&root, &mut on_disk);
    let data = tmp.path().join("data");
    let index = hash_index(&data, Default::default());
    let options = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let report = convdex::index_paths(&index, std::slice::from_ref(&root), &options).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    // Every file on disk is in the report exactly once.
    let mut reported: HashMap<&Path, usize> = HashMap::new();
    for f in &report.files {
        *reported.entry(f.path.as_path()).or_default() += 1;
    }
    for f in &on_disk {
        assert_eq!(reported.get(f.as_path()), Some(&1), "{} is not accounted for once", f.display());
    }
    assert_eq!(report.files.len(), on_disk.len(), "files reported that are not on disk");
    // Every session is indexed, once: the sessions the report read files of are the sessions
    // expected, and every one of them gave messages.
    let left_out: Vec<_> = report.files.iter().filter(|f| f.outcome == FileOutcome::LeftOut).collect();
    let empty: Vec<_> = report.files.iter().filter(|f| f.outcome == FileOutcome::Empty).collect();
    let expected_sessions: BTreeSet<_> = expected.keys().cloned().collect();
    // A session is read when a file of it was read: indexed, empty (a warning), or holding no
    // turn of a conversation (a summary-only file, said so).
    let read: BTreeSet<_> = report
        .files
        .iter()
        .filter(|f| {
            matches!(f.outcome, FileOutcome::Indexed | FileOutcome::Empty)
                || (f.outcome == FileOutcome::LeftOut && f.reason.as_deref().is_some_and(|r| r.contains("no turn")))
        })
        .filter_map(|f| Some((f.agent.to_string(), f.session.clone()?)))
        .collect();
    assert_eq!(read, expected_sessions, "sessions read");
    assert_eq!(report.sessions_new, expected.len(), "each session once");
    // The copies left out are the second folder's sub-agents and the internal agents, each
    // with its reason.
    assert!(left_out.iter().all(|f| f.reason.as_deref().is_some_and(|r| !r.is_empty())));
    assert!(left_out.iter().any(|f| f.reason.as_deref().unwrap().contains("second copy")), "{left_out:?}");
    println!(
        "{} files: {} indexed, {} left out, {} empty; {} sessions ({} Codex before session_meta)",
        report.files.len(),
        report.files.iter().filter(|f| f.outcome == FileOutcome::Indexed).count(),
        left_out.len(),
        empty.len(),
        expected.len(),
        expected.keys().filter(|k| k.0 == "codex").count()
    );
    for f in &empty {
        println!("  empty: {} ({})", f.path.display(), f.reason.as_deref().unwrap_or(""));
    }
    // The legacy rollouts gave their prompts and answers, in the project their context names.
    let codex: Vec<_> = report.files.iter().filter(|f| f.agent == convdex::Agent::Codex).collect();
    assert!(!codex.is_empty() && codex.iter().all(|f| f.outcome == FileOutcome::Indexed && f.messages >= 1));
    assert!(codex.iter().map(|f| f.messages).sum::<usize>() >= 20, "{codex:?}");
    // The odd folder is its own project, not the `projects/` folder, and its flat sub-agents
    // are read with their sessions.
    let infos = index.collections().unwrap();
    assert!(infos.iter().any(|i| i.project == "ubuntu"), "{infos:?}");
    assert!(!infos.iter().any(|i| i.project == "projects"), "{infos:?}");
    let odd_subagents = report
        .files
        .iter()
        .filter(|f| f.path.to_string_lossy().contains("-home-ubuntu/subagents/"))
        .filter(|f| f.outcome == FileOutcome::Indexed)
        .count();
    assert!(odd_subagents > 0, "the flat sub-agents are read");
    // A second run reads nothing again and accounts for the same files.
    let again = convdex::index_paths(&index, std::slice::from_ref(&root), &options).unwrap();
    assert_eq!(again.files.len(), report.files.len());
    assert_eq!(again.sessions_skipped, expected.len());
    assert!(again.files.iter().all(|f| matches!(f.outcome, FileOutcome::Unchanged | FileOutcome::LeftOut)));
}

/// A session kept in two project folders, one copy cut short (a backup taken earlier, or a
/// live folder restored from one): the longer copy is the one indexed, whichever folder comes
/// first, and the shorter is reported as left out; nothing of the session is lost.
#[test]
fn of_two_copies_of_a_session_the_longer_is_indexed() {
    let (history, transcript) = crate::common::sample_history();
    let full = std::fs::read_to_string(&transcript).unwrap();
    let name = transcript.file_name().unwrap();
    let projects = tempfile::tempdir().unwrap();
    // The folder that sorts first holds the copy cut after eight lines.
    let short_dir = projects.path().join("-home-dev-acme-api");
    let long_dir = projects.path().join("-home-dev-acme-api-副本");
    for d in [&short_dir, &long_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(short_dir.join(name), full.lines().take(8).collect::<Vec<_>>().join("\n") + "\n").unwrap();
    std::fs::write(long_dir.join(name), &full).unwrap();
    let whole = tempfile::tempdir().unwrap();
    let alone = hash_index(whole.path(), Default::default());
    let reference = convdex::index_paths(&alone, &[history.path().join("projects")], &IndexOptions::default()).unwrap();
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), Default::default());
    let report = convdex::index_paths(&index, &[projects.path().to_path_buf()], &IndexOptions::default()).unwrap();
    assert_eq!(report.messages, reference.messages, "every message of the longer copy: {report:?}");
    assert_eq!(report.decisions, reference.decisions, "{report:?}");
    let left: Vec<&convdex::FileReport> = report.files.iter().filter(|f| f.outcome == FileOutcome::LeftOut).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].path, short_dir.join(name));
    assert!(left[0].reason.as_deref().is_some_and(|r| r.contains("second copy")), "{left:?}");
}
