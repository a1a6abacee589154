//! Real Claude Code transcripts from `../shared/data` (other people's words: read there, never
//! copied here). Parsing and indexing never panic; files and commits are found where the
//! corpus has them; secrets never reach the collection's files; re-runs are incremental.

use std::path::{Path, PathBuf};

use convdex::{CollectionOptions, DocBody, IndexOptions};

use crate::common::hash_index;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data")
}

fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            jsonl_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// Every file parses; per corpus folder: records, messages, files, commits, skipped lines.
#[test]
fn every_corpus_file_parses_with_counts() {
    let mut total_commits = 0;
    let mut total_edits = 0;
    for root in ["transcripts", "fixtures-edge-cases"] {
        let base = shared().join(root);
        let mut folders: Vec<PathBuf> =
            std::fs::read_dir(&base).unwrap().flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
        folders.sort();
        for folder in folders {
            let mut files = Vec::new();
            jsonl_files(&folder, &mut files);
            let (mut records, mut messages, mut fcount, mut commits, mut skipped) = (0, 0, 0, 0, 0);
            for f in &files {
                let p = convdex::ingest::claude::parse(&std::fs::read(f).unwrap());
                records += p.records;
                messages += p.messages.len();
                fcount += p.messages.iter().map(|m| m.files.len()).sum::<usize>();
                commits += p.messages.iter().map(|m| m.commits.len()).sum::<usize>();
                total_edits += p
                    .messages
                    .iter()
                    .flat_map(|m| &m.files)
                    .filter(|f| f.action == convdex::FileAction::Edited)
                    .count();
                skipped += p.skipped.len();
            }
            total_commits += commits;
            println!(
                "{root}/{}: {} files, {records} records, {messages} messages, {fcount} file refs, {commits} commits, {skipped} skipped lines",
                folder.file_name().unwrap().to_string_lossy(),
                files.len()
            );
        }
    }
    assert!(total_commits > 0 && total_edits > 0);
}

/// Named sessions known (from the format notes) to contain a git commit and Edit calls.
#[test]
fn commits_and_edits_are_found_where_the_corpus_has_them() {
    let spotter = shared().join("transcripts/marot+spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl");
    let p = convdex::ingest::claude::parse(&std::fs::read(&spotter).unwrap());
    let shas: Vec<&str> = p.messages.iter().flat_map(|m| &m.commits).map(|c| c.sha.as_str()).collect();
    assert!(shas.contains(&"64f1b9a"), "{shas:?}");
    let obra = shared().join("transcripts/obra+episodic-memory/long-conversation.jsonl");
    let p = convdex::ingest::claude::parse(&std::fs::read(&obra).unwrap());
    assert!(p.messages.iter().flat_map(|m| &m.commits).any(|c| c.sha == "6f035fd"));
    let edited = p.messages.iter().flat_map(|m| &m.files).filter(|f| f.action != convdex::FileAction::Read).count();
    assert!(edited > 0);
}

#[test]
fn malformed_fixture_lines_are_reported_with_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let fixtures = shared().join("fixtures-edge-cases");
    let report = convdex::index_paths(
        &index,
        &[fixtures.join("pruett+fleet"), fixtures.join("daaain+claude-code-log")],
        &IndexOptions { tenant: Some("t".into()), ..Default::default() },
    )
    .unwrap();
    assert!(!report.skipped_lines.is_empty());
    for (file, s) in &report.skipped_lines {
        assert!(file.exists() && s.line > 0, "{file:?} {s:?}");
    }
    assert!(
        report.skipped_lines.iter().any(|(f, _)| f.ends_with("malformed-lines.jsonl")),
        "{:?}",
        report.skipped_lines
    );
}

/// The whole transcript corpus indexes; a second run embeds nothing and skips every session.
#[test]
fn corpus_indexes_then_reruns_skip_everything() {
    let dir = tempfile::tempdir().unwrap();
    let index = hash_index(dir.path(), CollectionOptions::default());
    let opts = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let roots: Vec<PathBuf> = {
        let base = shared().join("transcripts");
        let mut v = Vec::new();
        for e in std::fs::read_dir(&base).unwrap().flatten() {
            let p = e.path();
            if !p.is_dir() {
                continue;
            }
            // Folders hold either `projects/<encoded>/…` or session files directly.
            let projects = [p.join("projects"), p.join(".claude/projects")].into_iter().find(|x| x.is_dir());
            v.push(projects.unwrap_or(p));
        }
        v.sort();
        v
    };
    let first = convdex::index_paths(&index, &roots, &opts).unwrap();
    println!(
        "first run: {} sessions, {} messages, {} chunks, {} skipped lines, redactions {:?}, collections {:?}",
        first.sessions_new,
        first.messages,
        first.chunks,
        first.skipped_lines.len(),
        first.redactions,
        first.collections
    );
    assert!(first.sessions_new >= 40, "{}", first.sessions_new);
    assert!(first.messages > 1000);
    let (mut messages, mut decisions, mut summaries) = (0, 0, 0);
    for c in index.collections().unwrap() {
        let s = index.collection(&c.tenant, &c.project).unwrap().stats().unwrap();
        (messages, decisions, summaries) = (messages + s.messages, decisions + s.decisions, summaries + s.summaries);
    }
    assert_eq!(messages, first.messages, "no duplicates");
    assert_eq!(decisions, first.decisions);
    println!("decisions: {decisions}, summaries: {summaries}");
    assert!(summaries > 0 && summaries <= first.sessions_new);
    let second = convdex::index_paths(&index, &roots, &opts).unwrap();
    assert_eq!(second.sessions_new + second.sessions_appended + second.sessions_reindexed, 0);
    assert_eq!(second.sessions_skipped, first.sessions_new);
    assert_eq!((second.messages, second.embedded), (0, 0));
}

/// Append to a session: only the new messages are added; `force` gives the same count.
#[test]
fn appended_lines_add_only_new_messages_and_force_is_idempotent() {
    let src = shared().join("transcripts/obra+episodic-memory/medium-conversation.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("projects/-tmp-demo");
    std::fs::create_dir_all(&proj).unwrap();
    let file = proj.join("11111111-2222-3333-4444-555555555555.jsonl");
    std::fs::copy(&src, &file).unwrap();
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), CollectionOptions::default());
    let opts = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let first = convdex::index_paths(&index, &[tmp.path().join("projects")], &opts).unwrap();
    assert_eq!(first.sessions_new, 1);
    let appended = [
        serde_json::json!({"type":"user","uuid":"new-user-1","sessionId":"11111111-2222-3333-4444-555555555555","timestamp":"2030-01-01T00:00:00.000Z","message":{"role":"user","content":"one more question about the flaky retry test"}}),
        serde_json::json!({"type":"assistant","uuid":"new-asst-1","sessionId":"11111111-2222-3333-4444-555555555555","timestamp":"2030-01-01T00:00:05.000Z","message":{"id":"msg_new","model":"m","role":"assistant","content":[{"type":"text","text":"The retry test is flaky because of a timeout."}]}}),
    ];
    let mut text = std::fs::read_to_string(&file).unwrap();
    for a in &appended {
        text.push_str(&format!("{a}\n"));
    }
    text.push_str("{\"type\":\"user\",\"torn");
    std::fs::write(&file, text).unwrap();
    let second = convdex::index_paths(&index, &[tmp.path().join("projects")], &opts).unwrap();
    assert_eq!(second.sessions_appended, 1, "{second:?}");
    assert_eq!(second.messages, 2);
    let c = index.collections().unwrap().remove(0);
    let coll = index.collection(&c.tenant, &c.project).unwrap();
    let count = coll.len().unwrap();
    assert_eq!(coll.stats().unwrap().messages, first.messages + 2);
    assert_eq!(coll.stats().unwrap().summaries, 1, "the summary is re-made, not duplicated");
    let forced =
        convdex::index_paths(&index, &[tmp.path().join("projects")], &IndexOptions { force: true, ..opts }).unwrap();
    assert_eq!(forced.sessions_reindexed, 1);
    assert_eq!(coll.len().unwrap(), count, "force re-index gives the same document count");
}

/// ≥ 25 planted secrets of different kinds never reach any byte of the collection directory;
/// placeholders are kept.
#[test]
fn planted_secrets_never_reach_disk() {
    let secrets = [
        "AKIAZ7XQ3MPLWR5TN2VK",
        "ASIAQ4MPLWR5TN2VKZ7X",
        "Zk8rT2mW9qLx4VbN7cJp1YsD6hGf3EuA0oIiKe5R",
        "ghp_Ab3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hJ6",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "glpat-Xy9zA8bC7dE6fG5hI4jK",
        "xoxb-2048-1024-Zq8Wm3Lp7Rt2",
        "xoxp-1111-2222-Qw8Er7Ty6Ui5",
        "sk_live_9fK2mQ7xL4pR8tW1zB6n",
        "rk_live_7hJ2kL9mN4pQ8rS1tV6w",
        "AIzaSyD8kQ2mW7xL4pR9tZ1bN6vC3hJ5fG0eK2s",
        "sk-ant-api03-Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5h",
        "sk-proj-Qq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5hZZ",
        "sk-Aq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5hJJkk",
        "hf_Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5hI4jK",
        "npm_Zq8Wm3Lp7Rt2Xy9zA8bC7dE6fG5hI4jK2mN9",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "s3cr3tPw0rdDb",
        "Hunter2Hunter2",
        "Qm9iOnBhc3N3b3JkMTIz",
        "Zq8Wm3Lp7Rt2Xy9zA8bC7dE6",
        "MIIEpQIBAAKCAQEA7plantedkeymaterial",
        "tok3nV4lu3XyZ987",
        "cl13ntS3cr3tV4lu3",
        "apiK3yV4lu3Qw3rty",
        "myDbPassw0rd9",
    ];
    let lines = [
        format!("aws key {} and {} secret aws_secret_access_key = {}", secrets[0], secrets[1], secrets[2]),
        format!("tokens {} {} {} {} {}", secrets[3], secrets[4], secrets[5], secrets[6], secrets[7]),
        format!("stripe {} {} google {} anthropic {}", secrets[8], secrets[9], secrets[10], secrets[11]),
        format!("openai {} {} hf {} npm {}", secrets[12], secrets[13], secrets[14], secrets[15]),
        format!("jwt {} db postgres://app:{}@db:5432/app", secrets[16], secrets[17]),
        format!("password = \"{}\" and Authorization: Basic {}", secrets[18], secrets[19]),
        format!("curl -H 'Authorization: Bearer {}'", secrets[20]),
        format!("-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----", secrets[21]),
        format!(
            "TOKEN={} client_secret: {} API_KEY={} DB_PASSWORD={}",
            secrets[22], secrets[23], secrets[24], secrets[25]
        ),
        "placeholders stay: ANTHROPIC_API_KEY=your-key-here PASSWORD=your-app-password".to_string(),
    ];
    let src = shared().join("transcripts/obra+episodic-memory/tiny-conversation.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("-tmp-secrets");
    std::fs::create_dir_all(&proj).unwrap();
    let mut text = std::fs::read_to_string(&src).unwrap();
    for (i, l) in lines.iter().enumerate() {
        let rec = serde_json::json!({"type":"user","uuid":format!("planted-{i}"),"sessionId":"planted","timestamp":"2030-01-01T00:00:00.000Z","message":{"role":"user","content":l}});
        text.push_str(&format!("{rec}\n"));
    }
    std::fs::write(proj.join("planted.jsonl"), text).unwrap();
    let data = tempfile::tempdir().unwrap();
    let report = {
        let index = hash_index(data.path(), CollectionOptions::default());
        convdex::index_paths(
            &index,
            std::slice::from_ref(&proj),
            &IndexOptions { tenant: Some("t".into()), ..Default::default() },
        )
        .unwrap()
    };
    let redacted: usize = report.redactions.values().sum();
    assert!(redacted >= 25, "{:?}", report.redactions);
    let mut files = Vec::new();
    fn all_files(d: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.path().is_dir() { all_files(&e.path(), out) } else { out.push(e.path()) }
        }
    }
    all_files(data.path(), &mut files);
    assert!(files.iter().any(|f| f.ends_with("data.redb")));
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        for s in &secrets {
            assert!(!bytes.windows(s.len()).any(|w| w == s.as_bytes()), "{s} found in {}", f.display());
        }
    }
    let index = hash_index(data.path(), CollectionOptions::default());
    let c = index.collections().unwrap().remove(0);
    let coll = index.collection(&c.tenant, &c.project).unwrap();
    let docs = coll.session_documents("planted").unwrap();
    let placeholder = docs.iter().find(|d| d.content.starts_with("placeholders stay")).unwrap();
    assert!(placeholder.content.contains("your-key-here") && placeholder.content.contains("your-app-password"));
    // The session's summary and decisions are built from scrubbed text (the byte scan above
    // covers them too).
    assert_eq!(docs.iter().filter(|d| matches!(d.body, DocBody::Summary(_))).count(), 1);
}

/// Observer sessions of other memory tools are never indexed; a config file excludes projects.
#[test]
fn exclusion_rules_and_config_file() {
    let src = shared().join("transcripts/obra+episodic-memory/tiny-conversation.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    for folder in ["-home-u-app", "-home-u-scratch", "C--Users-a--claude-mem-observer-sessions"] {
        let d = tmp.path().join("projects").join(folder);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::copy(&src, d.join("aaaaaaaa-0000-0000-0000-000000000000.jsonl")).unwrap();
    }
    let cfg = tmp.path().join("config.json");
    std::fs::write(&cfg, r#"{"exclude_projects": ["scratch"]}"#).unwrap();
    let mut opts = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    convdex::Config::load(&cfg).unwrap().apply(&mut opts);
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), CollectionOptions::default());
    let report = convdex::index_paths(&index, &[tmp.path().join("projects")], &opts).unwrap();
    assert_eq!(report.projects_excluded, 2);
    assert_eq!(report.sessions_new, 1);
    // A malformed config is a typed error naming the file; a missing one is the default.
    std::fs::write(&cfg, r#"{"exclude": 3}"#).unwrap();
    let err = convdex::Config::load(&cfg).unwrap_err();
    assert!(err.to_string().contains("config.json"), "{err}");
    assert_eq!(convdex::Config::load(&tmp.path().join("none.json")).unwrap(), convdex::Config::default());
}

/// Claude Code deletes old transcripts: their documents stay, they are the only copy left.
#[test]
fn documents_outlive_their_deleted_transcript() {
    let src = shared().join("transcripts/obra+episodic-memory/tiny-conversation.jsonl");
    let tmp = tempfile::tempdir().unwrap();
    let proj = tmp.path().join("projects/-home-u-app");
    std::fs::create_dir_all(&proj).unwrap();
    let keep = proj.join("bbbbbbbb-0000-0000-0000-000000000000.jsonl");
    let gone = proj.join("cccccccc-0000-0000-0000-000000000000.jsonl");
    std::fs::copy(&src, &keep).unwrap();
    std::fs::copy(&src, &gone).unwrap();
    let data = tempfile::tempdir().unwrap();
    let index = hash_index(data.path(), CollectionOptions::default());
    let opts = IndexOptions { tenant: Some("t".into()), ..Default::default() };
    let first = convdex::index_paths(&index, &[tmp.path().join("projects")], &opts).unwrap();
    assert_eq!(first.sessions_new, 2);
    std::fs::remove_file(&gone).unwrap();
    let second = convdex::index_paths(&index, &[tmp.path().join("projects")], &opts).unwrap();
    assert_eq!(second.sessions_skipped, 1);
    let c = index.collections().unwrap().remove(0);
    let coll = index.collection(&c.tenant, &c.project).unwrap();
    assert_eq!(coll.stats().unwrap().messages, first.messages);
    assert!(!coll.session_documents("cccccccc-0000-0000-0000-000000000000").unwrap().is_empty());
}

/// The corpus's own placeholder strings (listed in its SOURCES.md) survive scrubbing, and its
/// two known literal credentials do not.
#[test]
fn corpus_placeholders_survive_and_literal_credentials_do_not() {
    let keep = [
        "your-app-password",
        "app_specific_password",
        "REPLACE_WITH_HASH",
        "your-firebase-api-key",
        "_broadcast_string_from_rank0",
    ];
    let gone = ["bytebridge123"];
    let mut files = Vec::new();
    jsonl_files(&shared().join("transcripts"), &mut files);
    let (mut kept, mut removed) = (0, 0);
    for f in files {
        for m in convdex::ingest::claude::parse(&std::fs::read(&f).unwrap()).messages {
            let (out, _) = convdex::scrub::scrub(&m.text);
            for k in keep {
                if m.text.contains(k) {
                    assert!(out.contains(k), "placeholder {k} was redacted in {}", f.display());
                    kept += 1;
                }
            }
            for g in gone {
                if m.text.contains(g) {
                    assert!(!out.contains(g), "credential {g} survived in {}", f.display());
                    removed += 1;
                }
            }
        }
    }
    println!("placeholders kept: {kept}, literal credentials removed: {removed}");
    assert!(kept > 0);
}

/// The multilingual retrieval sets (`tests/data/multilingual.tsv`, `_2.tsv` to `_11.tsv`)
/// stay usable as the corpus changes: seven columns, a fixed split and kind, and each question
/// names a transcript of the corpus with messages (parsed as indexing parses it): a Claude Code
/// transcript under `transcripts/` named after the session it names, or a sub-agent's transcript
/// of it (`<session>/subagents/agent-*.jsonl`), or a Codex rollout under `agents/codex/` whose
/// `session_meta` names it. Each set has 30 questions at least, a third of them cross-lingual,
/// and no question appears twice across the sets.
#[test]
fn multilingual_sets_name_real_sessions() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut seen = std::collections::HashSet::new();
    let sets =
        ["multilingual.tsv"].into_iter().map(String::from).chain((2..=11).map(|n| format!("multilingual_{n}.tsv")));
    for name in sets {
        let text = std::fs::read_to_string(data.join(&name)).unwrap();
        let rows: Vec<Vec<&str>> = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.split('\t').collect())
            .collect();
        assert!(rows.len() >= 30, "{name}: {} questions", rows.len());
        let cross = rows.iter().filter(|r| r.get(2) == Some(&"cross")).count();
        assert!(cross * 3 >= rows.len(), "{name}: {cross} cross-lingual of {}", rows.len());
        for r in &rows {
            assert_eq!(r.len(), 7, "{name}: {r:?}");
            let (split, kind, file, session, query) = (r[1], r[2], r[4], r[5], r[6]);
            assert!(["dev", "test"].contains(&split) && ["same", "cross", "mixed"].contains(&kind), "{name}: {r:?}");
            assert!(seen.insert(query.to_string()), "{name}: asked twice: {query}");
            if file.starts_with("agents/codex/") {
                // A Codex rollout names its session in its first record.
                let path = shared().join(file);
                let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {}: {e}", path.display()));
                let parsed = convdex::ingest::codex::parse(&bytes);
                assert_eq!(parsed.session_id.as_deref(), Some(session), "{name}: {r:?}");
                assert!(!parsed.messages.is_empty(), "{name}: {file} has no message");
                continue;
            }
            // convdex names a session by its transcript's file name; a sub-agent's transcript
            // belongs to the session of the folder above `subagents`.
            let path = shared().join("transcripts").join(file);
            let named = |p: Option<&Path>| p.and_then(|p| p.file_stem()).and_then(|s| s.to_str()) == Some(session);
            let sub = path.parent().filter(|d| d.ends_with("subagents")).and_then(Path::parent);
            assert!(named(Some(&path)) || (sub.is_some() && named(sub)), "{name}: {r:?}");
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {}: {e}", path.display()));
            let parsed = convdex::ingest::claude::parse(&bytes);
            assert!(!parsed.messages.is_empty(), "{name}: {file} has no message");
        }
    }
}
