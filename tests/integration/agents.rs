//! Codex CLI, Gemini CLI and Aider histories beside Claude Code's: every real file of
//! `../shared/data/agents` parses (counts printed per agent), and one working directory written
//! by all four agents is one collection, where search, decisions and blame see every agent.

use std::path::{Path, PathBuf};

use convdex::{Agent, CollectionOptions, DocKind, Filter, IndexOptions, Query};
use serde_json::json;

use crate::common::hash_index;

fn agents_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/agents")
}

fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, keep, out);
        } else if keep(&p) {
            out.push(p);
        }
    }
}

#[test]
fn every_agent_history_parses_with_counts() {
    let base = agents_data();
    let mut totals = Vec::new();
    for agent in ["codex", "gemini", "aider"] {
        let mut found = Vec::new();
        files(
            &base.join(agent),
            &|p| p.extension().is_some_and(|x| x == "jsonl" || x == "json" || x == "md"),
            &mut found,
        );
        let (mut sessions, mut messages, mut refs, mut commits, mut skipped) = (0, 0, 0, 0, 0);
        for f in &found {
            let bytes = std::fs::read(f).unwrap();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let parsed: Vec<convdex::ingest::claude::ParsedFile> = match agent {
                "codex" => vec![convdex::ingest::codex::parse(&bytes)],
                "gemini" if name == "logs.json" => {
                    convdex::ingest::gemini::parse_logs(&bytes).into_iter().map(|x| x.1).collect()
                }
                "gemini" => vec![convdex::ingest::gemini::parse_chat(&bytes)],
                _ => convdex::ingest::aider::parse(&bytes).into_iter().map(|x| x.1).collect(),
            };
            for p in parsed {
                sessions += 1;
                messages += p.messages.len();
                refs += p.messages.iter().map(|m| m.files.len()).sum::<usize>();
                commits += p.messages.iter().map(|m| m.commits.len()).sum::<usize>();
                skipped += p.skipped.len();
            }
        }
        println!(
            "{agent}: {} files, {sessions} sessions, {messages} messages, {refs} file refs, {commits} commits, {skipped} skipped lines",
            found.len()
        );
        totals.push((agent, messages, refs));
    }
    let get = |a: &str| totals.iter().find(|t| t.0 == a).unwrap();
    assert!(get("codex").1 > 100 && get("codex").2 > 10, "{totals:?}");
    assert!(get("gemini").1 > 100, "{totals:?}");
    assert!(get("aider").1 > 30 && get("aider").2 > 5, "{totals:?}");
}

/// The shared histories of every agent index into collections, with each document tagged with
/// its agent.
#[test]
fn the_shared_agent_histories_index() {
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), CollectionOptions::default());
    let base = agents_data();
    let roots = vec![
        base.join("codex/akinori-seri-sdcj+health_report_ocr/.codex"),
        base.join("gemini/hoon9732+devenv_vault/.gemini"),
        base.join("aider/AlexShchuka+mozgoslav"),
    ];
    let report =
        convdex::index_paths(&index, &roots, &IndexOptions { tenant: Some("t".into()), ..Default::default() }).unwrap();
    println!("{report}");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    for a in ["codex", "gemini", "aider"] {
        assert!(report.agents.get(a).copied().unwrap_or(0) > 0, "{a}: {:?}", report.agents);
    }
    let mut by_agent = std::collections::BTreeMap::new();
    for c in index.collections().unwrap() {
        let coll = index.collection(&c.tenant, &c.project).unwrap();
        for d in coll.documents_of_kind(DocKind::Message).unwrap() {
            *by_agent.entry(d.agent().unwrap_or("none").to_string()).or_insert(0) += 1;
        }
    }
    println!("messages by agent: {by_agent:?}");
    assert_eq!(by_agent.keys().map(String::as_str).collect::<Vec<_>>(), ["aider", "codex", "gemini"]);
    // No other history names the Gemini projects' directories: each is found in what its own
    // sessions write, the one path whose SHA-256 is its folder's name.
    let folders: Vec<String> = std::fs::read_dir(base.join("gemini/hoon9732+devenv_vault/.gemini/tmp"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("chats").is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let named: Vec<(String, String)> = index
        .collections()
        .unwrap()
        .into_iter()
        .filter_map(|c| Some((c.project.clone(), c.project_path.clone()?)))
        .filter(|(_, p)| folders.contains(&convdex::ingest::gemini::project_hash(p)))
        .collect();
    println!("Gemini projects: {named:?}");
    assert_eq!(named.len(), folders.len(), "every Gemini folder with chats named by its path: {named:?}");
    assert!(named.iter().all(|(name, _)| !name.starts_with("gemini-")), "{named:?}");
    let second =
        convdex::index_paths(&index, &roots, &IndexOptions { tenant: Some("t".into()), ..Default::default() }).unwrap();
    assert_eq!(second.messages, 0, "a second run writes nothing: {second}");
}

/// The folder that holds the three histories, given as one path, finds what the three roots
/// given one by one find: the walk below a folder that is no history itself.
#[test]
fn a_folder_holding_every_agent_history_indexes_like_its_roots_one_by_one() {
    let base = agents_data();
    let roots = vec![
        base.join("codex/akinori-seri-sdcj+health_report_ocr/.codex"),
        base.join("gemini/hoon9732+devenv_vault/.gemini"),
        base.join("aider/AlexShchuka+mozgoslav"),
    ];
    let options = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let one_by_one = tempfile::tempdir().unwrap();
    let expected = convdex::index_paths(&hash_index(one_by_one.path(), CollectionOptions::default()), &roots, &options);
    let folder = tempfile::tempdir().unwrap();
    let index = hash_index(folder.path(), CollectionOptions::default());
    let found = convdex::index_paths(&index, std::slice::from_ref(&base), &options).unwrap();
    let expected = expected.unwrap();
    println!("one by one: {expected}\nthe folder: {found}");
    assert!(found.failures.is_empty() && found.empty_paths.is_empty(), "{found:?}");
    assert_eq!(found.agents, expected.agents);
    assert_eq!((found.sessions_new, found.messages), (expected.sessions_new, expected.messages));
    let mut names: Vec<String> = index.collections().unwrap().into_iter().map(|c| c.project).collect();
    names.sort();
    assert_eq!(names.len(), expected.collections.len(), "{names:?}");
}

fn line(v: serde_json::Value) -> String {
    format!("{v}\n")
}

/// One working directory, four agents: Claude Code and Codex record it, Gemini names its folder
/// by its hash, Aider's history sits in it.
fn four_agents(root: &Path, project: &Path) -> Vec<PathBuf> {
    let cwd = project.to_string_lossy().into_owned();
    // Claude Code: a decision and an edit of src/queue.rs.
    let claude = root.join("claude/projects").join(convdex::encode_project_dir(&cwd));
    std::fs::create_dir_all(&claude).unwrap();
    let sid = "c1c1c1c1-0000-4000-8000-000000000001";
    let mut s = String::new();
    s += &line(json!({"type":"user","uuid":"u1","sessionId":sid,"cwd":cwd,"timestamp":"2026-10-01T08:00:00Z",
        "message":{"role":"user","content":"Let's use a bounded channel instead of the unbounded queue because memory grew without limit."}}));
    s += &line(json!({"type":"assistant","uuid":"a1","sessionId":sid,"cwd":cwd,"timestamp":"2026-10-01T08:00:05Z",
        "message":{"id":"m1","model":"m","role":"assistant","content":[{"type":"text","text":"Switching the worker queue to a bounded channel."},
        {"type":"tool_use","id":"t1","name":"Edit","input":{"file_path":format!("{cwd}/src/queue.rs"),"old_string":"a","new_string":"b"}}]}}));
    std::fs::write(claude.join(format!("{sid}.jsonl")), s).unwrap();
    // Codex: a later decision and another edit of src/queue.rs.
    let codex = root.join("codex/sessions/2026/10/02");
    std::fs::create_dir_all(&codex).unwrap();
    let mut s = String::new();
    s += &line(
        json!({"timestamp":"2026-10-02T09:00:00Z","type":"session_meta","payload":{"id":"019b-codex","cwd":cwd,"cli_version":"0.64.0"}}),
    );
    s += &line(
        json!({"timestamp":"2026-10-02T09:00:01Z","type":"event_msg","payload":{"type":"user_message","message":"We decided to keep the retry budget at three attempts for the queue worker."}}),
    );
    s += &line(
        json!({"timestamp":"2026-10-02T09:00:02Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Keeping three retries in the queue worker."}]}}),
    );
    s += &line(
        json!({"timestamp":"2026-10-02T09:00:03Z","type":"response_item","payload":{"type":"custom_tool_call","name":"apply_patch","call_id":"c1","input":"*** Begin Patch\n*** Update File: src/queue.rs\n@@\n-x\n+y\n*** End Patch"}}),
    );
    std::fs::write(codex.join("rollout-2026-10-02T09-00-00-019b-codex.jsonl"), s).unwrap();
    // Gemini: the folder is the SHA-256 of the project's path.
    let gemini = root.join("gemini/.gemini/tmp").join(convdex::ingest::gemini::project_hash(&cwd)).join("chats");
    std::fs::create_dir_all(&gemini).unwrap();
    let chat = json!({"sessionId": "g-1", "projectHash": "x", "startTime": "2026-10-03T10:00:00Z", "messages": [
        {"id": "g1", "timestamp": "2026-10-03T10:00:00Z", "type": "user", "content": "how does the queue worker back off?"},
        {"id": "g2", "timestamp": "2026-10-03T10:00:05Z", "type": "gemini", "content": "It waits twice as long after each failed retry."}]});
    std::fs::write(gemini.join("session-2026-10-03T10-00-g1.json"), chat.to_string()).unwrap();
    // Aider: its history in the project's directory.
    std::fs::create_dir_all(project).unwrap();
    std::fs::write(
        project.join(".aider.chat.history.md"),
        "\n# aider chat started at 2026-10-04 11:00:00\n\n#### add a metric for the queue depth\n\nAdded a gauge for the queue depth.\n\n> Applied edit to src/queue.rs\n> Commit 1a2b3c4 feat: queue depth gauge\n",
    )
    .unwrap();
    vec![root.join("claude/projects"), root.join("codex/sessions"), root.join("gemini/.gemini")]
}

/// A Gemini folder indexed before its own paths were read (its collection named by its hash)
/// keeps that collection: a later run that could name the project does not copy its sessions
/// into a second one.
#[test]
fn a_gemini_project_indexed_by_its_hash_keeps_its_collection() {
    let root = tempfile::tempdir().unwrap();
    let cwd = r"D:\项目\队列 服务";
    let dir = root.path().join(".gemini/tmp").join(convdex::ingest::gemini::project_hash(cwd));
    std::fs::create_dir_all(dir.join("chats")).unwrap();
    let chat = json!({"sessionId": "g-1", "messages": [
        {"id": "g1", "timestamp": "2026-10-03T10:00:00Z", "type": "user", "content": format!("why does {cwd}\\src\\queue.rs: fail to build?")},
        {"id": "g2", "timestamp": "2026-10-03T10:00:05Z", "type": "gemini", "content": "A missing import."}]});
    std::fs::write(dir.join("chats/session-2026-10-03T10-00-g1.json"), chat.to_string()).unwrap();
    let options = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    // A fresh index names the project by the path the session wrote.
    let fresh = tempfile::tempdir().unwrap();
    let index = hash_index(fresh.path(), CollectionOptions::default());
    convdex::index_paths(&index, &[root.path().join(".gemini")], &options).unwrap();
    let c = index.collections().unwrap();
    assert_eq!(c.len(), 1);
    assert_eq!((c[0].project.as_str(), c[0].project_path.as_deref()), ("队列-服务", Some(cwd)), "{c:?}");
    // An index where the folder already has its collection as earlier versions named it: after
    // the hash, keyed by the folder itself.
    let old = tempfile::tempdir().unwrap();
    let index = hash_index(old.path(), CollectionOptions::default());
    let name = format!("gemini-{}", &convdex::ingest::gemini::project_hash(cwd)[..8]);
    index.collection_with("t", &name, Some(&dir.to_string_lossy())).unwrap();
    let report = convdex::index_paths(&index, &[root.path().join(".gemini")], &options).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let c = index.collections().unwrap();
    assert_eq!(c.iter().map(|c| c.project.as_str()).collect::<Vec<_>>(), [name.as_str()], "{c:?}");
    let coll = index.collection("t", &name).unwrap();
    assert_eq!(coll.documents_of_kind(DocKind::Message).unwrap().len(), 2);
}

#[test]
fn one_working_directory_written_by_four_agents_is_one_project() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("work/queue-service");
    let paths = four_agents(root.path(), &project);
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), CollectionOptions::default());
    let report =
        convdex::index_paths(&index, &paths, &IndexOptions { tenant: Some("t".into()), ..Default::default() }).unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let expected: Vec<(String, usize)> = [("aider", 1), ("claude-code", 1), ("codex", 1), ("gemini", 1)]
        .into_iter()
        .map(|(a, n)| (a.to_string(), n))
        .collect();
    assert_eq!(report.agents.into_iter().collect::<Vec<_>>(), expected);
    let collections = index.collections().unwrap();
    assert_eq!(collections.len(), 1, "{collections:?}");
    assert_eq!(collections[0].project, "queue-service");
    // Search sees every agent, and the agent filter picks one.
    let q = Query { limit: 20, ..Query::new("queue worker") };
    let hits = index.search(None, &q).unwrap().found;
    let mut agents: Vec<&str> = hits.iter().filter_map(|h| h.hit.doc.agent()).collect();
    agents.sort();
    agents.dedup();
    assert_eq!(agents, ["aider", "claude-code", "codex", "gemini"]);
    let only = Query { filter: Filter { agents: vec![Agent::Codex], ..Default::default() }, ..q };
    let hits = index.search(None, &only).unwrap().found;
    assert!(!hits.is_empty() && hits.iter().all(|h| h.hit.doc.agent() == Some("codex")));
    // Decisions from two agents; blame of a file three agents touched.
    let decisions = index.decisions(None, &convdex::DecisionFilter { all: true, ..Default::default() }).unwrap().found;
    let mut from: Vec<&str> = decisions.iter().filter_map(|(_, d)| d.agent()).collect();
    from.sort();
    from.dedup();
    assert_eq!(from, ["claude-code", "codex"], "{decisions:#?}");
    let blame = index.blame(None, "src/queue.rs").unwrap().found;
    let mut by: Vec<&str> = blame.iter().filter_map(|s| s.documents.first().and_then(|d| d.agent())).collect();
    by.sort();
    assert_eq!(by, ["aider", "claude-code", "codex"]);
    assert!(blame.iter().any(|s| s.commits.iter().any(|c| c.starts_with("1a2b3c4"))));
}
