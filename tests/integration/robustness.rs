//! Nothing a transcript, a damaged file or a bad argument can do stops `convdex` or panics:
//! one test per defect of the robustness campaign, each driving the real binary (real model,
//! real redb files) the way a user would.
//!
//! Exit codes: 0 ok, 1 error, 2 usage, 3 done with problems. 101 (a Rust panic) must never
//! appear.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use super::common::copy_dir;

struct Cli {
    data: tempfile::TempDir,
}

impl Cli {
    fn new() -> Cli {
        Cli { data: tempfile::tempdir().unwrap() }
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = Command::new(env!("CARGO_BIN_EXE_convdex"))
            .env("CONVDEX_WARM", "off")
            .args(["--data-dir", self.data.path().to_str().unwrap()])
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("NO_COLOR", "1")
            .env("CONVDEX_CONFIG", "/nonexistent/convdex-config.json")
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(101), "{args:?} panicked: {}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.code().is_some(), "{args:?} was killed: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    fn collection_dir(&self, project: &str) -> PathBuf {
        std::fs::read_dir(self.data.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().unwrap().to_string_lossy().ends_with(&format!("_{project}_conversations")))
            .unwrap_or_else(|| panic!("no collection for {project}"))
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn line(v: Value) -> String {
    format!("{v}\n")
}

/// A Windows project (`D:\AI`) whose session file has a Chinese name, whose tool calls name a
/// relative path with Chinese characters, an absolute path with another drive-letter case, and
/// a quoted `git rm` of a file with a space; plus a project whose working directory is Chinese.
fn windows_cjk_history(root: &Path) -> PathBuf {
    let projects = root.join("projects");
    let a = projects.join("D--AI");
    std::fs::create_dir_all(&a).unwrap();
    let sid = "會話記錄";
    let mut s = String::new();
    s += &line(json!({"type":"user","uuid":"u1","sessionId":sid,"cwd":"D:\\AI","timestamp":"2026-11-01T08:00:00Z",
        "message":{"role":"user","content":"请检查说明书并修复主程序里的路径问题"}}));
    s += &line(
        json!({"type":"assistant","uuid":"a1","sessionId":sid,"cwd":"D:\\AI","timestamp":"2026-11-01T08:00:05Z",
        "message":{"id":"m1","model":"m","role":"assistant","content":[
            {"type":"text","text":"先读说明书，再改主程序。"},
            {"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"文档/说明书.md"}},
            {"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"d:\\AI\\src\\主程序.rs","old_string":"a","new_string":"b"}},
            {"type":"tool_use","id":"t3","name":"Bash","input":{"command":"git rm 'D:\\AI\\old notes.txt' && git status"}}]}}),
    );
    s += &line(json!({"type":"user","uuid":"r1","sessionId":sid,"timestamp":"2026-11-01T08:00:06Z",
        "message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t3","content":"rm 'old notes.txt'"}]}}));
    std::fs::write(a.join(format!("{sid}.jsonl")), s).unwrap();
    let b = projects.join("C--Users-wang");
    std::fs::create_dir_all(&b).unwrap();
    let sid = "0b5e8c1a-0000-4000-8000-000000000001";
    let mut s = String::new();
    s += &line(
        json!({"type":"user","uuid":"u1","sessionId":sid,"cwd":"C:\\Users\\wang\\项目甲","timestamp":"2026-11-02T08:00:00Z",
        "message":{"role":"user","content":"我们决定使用 SQLite 作为本地缓存"}}),
    );
    s += &line(
        json!({"type":"assistant","uuid":"a1","sessionId":sid,"cwd":"C:\\Users\\wang\\项目甲","timestamp":"2026-11-02T08:00:04Z",
        "message":{"id":"m1","model":"m","role":"assistant","content":[{"type":"text","text":"好的，用 SQLite 做本地缓存。"}]}}),
    );
    std::fs::write(b.join(format!("{sid}.jsonl")), s).unwrap();
    projects
}

/// Defects 1, 2 and 10: a Windows project with Chinese paths indexes (the run used to die in
/// `relative_to`), text-mode output with a multibyte session id prints (it used to panic in
/// `short`), a file filter matches whatever form is typed, a quoted `git rm` is one file, and a
/// Chinese working directory keeps its name.
#[test]
fn windows_cjk_history_indexes_searches_and_filters_by_any_path_form() {
    let cli = Cli::new();
    let history = tempfile::tempdir().unwrap();
    let projects = windows_cjk_history(history.path());
    let report: Value = serde_json::from_str(&cli.ok(&["index", projects.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(report["sessions_new"], 2, "{report}");
    assert!(report["failures"].as_array().unwrap().is_empty(), "{report}");
    let stats = cli.ok(&["stats"]);
    assert!(stats.contains("_项目甲_conversations"), "a Chinese working directory keeps its name: {stats}");
    let text = cli.ok(&["search", "说明书 主程序"]);
    assert!(text.contains("會話記錄"), "{text}");
    for form in ["D:\\AI\\src\\主程序.rs", "d:/AI/src/主程序.rs", "src/主程序.rs", "./src/主程序.rs", "src\\主程序.rs"]
    {
        let hits: Value =
            serde_json::from_str(&cli.ok(&["search", "主程序", "--file", form, "--json", "--type", "message"]))
                .unwrap();
        assert_eq!(hits.as_array().unwrap().len(), 1, "--file {form}: {hits}");
    }
    let blame: Value = serde_json::from_str(&cli.ok(&["blame", "D:\\AI\\old notes.txt", "--json"])).unwrap();
    assert_eq!(blame[0]["actions"], json!(["deleted"]), "one file, with its space: {blame}");
    let none: Value = serde_json::from_str(&cli.ok(&["blame", "old", "--json"])).unwrap();
    assert!(none.as_array().unwrap().is_empty(), "`old` and `notes.txt` are not files: {none}");
    let read: Value = serde_json::from_str(&cli.ok(&["blame", "文档\\说明书.md", "--json"])).unwrap();
    assert_eq!(read[0]["actions"], json!(["read"]), "{read}");
}

/// Defect 2: an imported conversation whose id has multibyte characters.
#[test]
fn multibyte_ids_print_in_every_output() {
    let cli = Cli::new();
    let file = cli.data.path().join("chat.json");
    let doc = json!({"id": "对话一二三", "conversation": {"source": "wechat", "people": ["李"], "user": "李",
        "conversation": [{"speaker": "李", "content": "周五之前把备份脚本迁到新的存储桶", "time": "2026-10-20T09:00:00Z"}]}});
    std::fs::write(&file, doc.to_string()).unwrap();
    cli.ok(&["import", file.to_str().unwrap(), "--project", "chat"]);
    let text = cli.ok(&["search", "备份脚本"]);
    assert!(text.contains("对话一二三"), "{text}");
    let s = cli.ok(&["session", "对话"]);
    assert!(s.contains("备份脚本"), "{s}");
}

/// Defects 3, 9 and 10: limits, a file given as the data directory, and inputs that are not
/// transcripts or conversations get an `error:` line that says what to do, and create nothing.
#[test]
fn bad_arguments_are_clear_errors_that_create_nothing() {
    let cli = Cli::new();
    cli.ok(&["index", "examples/sample/projects"]);
    for limit in ["18446744073709551615", "99999999999", "1001"] {
        let out = cli.run(&["search", "token", "--limit", limit]);
        assert_eq!(out.status.code(), Some(2), "--limit {limit}: a usage error");
        assert!(stderr(&out).contains("maximum of 1000"), "{}", stderr(&out));
    }
    let huge = "word ".repeat(20_000);
    let out = cli.run(&["search", &huge]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("bytes, over the maximum"), "{}", stderr(&out));
    let before = std::fs::read_dir(cli.data.path()).unwrap().count();
    let out = cli.run(&["import", "/etc/passwd"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("nothing to import"), "{}", stderr(&out));
    let out = cli.run(&["index", "/etc/passwd"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not a Claude Code transcript"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(cli.data.path()).unwrap().count(), before, "no collection created");
    let file = cli.data.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_convdex"))
        .env("CONVDEX_WARM", "off")
        .args(["--data-dir", file.to_str().unwrap(), "stats"])
        .env("CONVDEX_CONFIG", "/nonexistent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a file, not a directory"), "{}", stderr(&out));
}

fn two_projects(cli: &Cli) -> tempfile::TempDir {
    let history = tempfile::tempdir().unwrap();
    let projects = windows_cjk_history(history.path());
    copy_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample/projects").as_path(), &projects);
    cli.ok(&["index", projects.to_str().unwrap()]);
    history
}

/// Defects 4 and 7: one flipped byte (the offsets of the campaign) or a truncation of one
/// collection's `data.redb` never panics; every other project still answers, and the damaged
/// one is named with its file and the command that repairs it.
#[test]
fn a_damaged_store_is_reported_and_the_other_projects_answer() {
    let mut reported = Vec::new();
    for damage in ["flip:4096", "flip:8192", "flip:131072", "truncate:0.5", "truncate:0.01"] {
        let cli = Cli::new();
        let history = two_projects(&cli);
        let redb = cli.collection_dir("acme-api").join("data.redb");
        let mut bytes = std::fs::read(&redb).unwrap();
        let (kind, at) = damage.split_once(':').unwrap();
        if kind == "flip" {
            let i: usize = at.parse().unwrap();
            assert!(i < bytes.len(), "{} bytes", bytes.len());
            bytes[i] ^= 0xff;
        } else {
            bytes.truncate((bytes.len() as f64 * at.parse::<f64>().unwrap()) as usize);
        }
        std::fs::write(&redb, &bytes).unwrap();
        for args in [vec!["stats"], vec!["search", "SQLite 缓存"], vec!["decisions", "--all"]] {
            let out = cli.run(&args);
            let err = stderr(&out);
            match out.status.code() {
                // The flipped byte was in a free page: nothing to report.
                Some(0) => {}
                Some(3) => {
                    assert!(err.contains("data.redb") && err.contains("doctor --repair"), "{damage} {args:?}: {err}");
                    reported.push(damage);
                }
                other => panic!("{damage} {args:?}: exit {other:?}: {err}"),
            }
            let text = String::from_utf8_lossy(&out.stdout);
            if args[0] == "stats" {
                assert!(text.contains("项目甲"), "{damage}: the other projects answer: {text}");
            }
        }
        let projects = history.path().join("projects");
        let out = cli.run(&["index", projects.to_str().unwrap()]);
        assert!(matches!(out.status.code(), Some(0 | 3)), "{damage}: {}", stderr(&out));
    }
    println!("damage reported by stats/search/decisions: {reported:?}");
    for must in ["flip:4096", "truncate:0.5", "truncate:0.01"] {
        assert!(reported.contains(&must), "{must} was not detected: {reported:?}");
    }
}

/// Defect 7: derived data damaged (a truncated lexical segment, a garbage `collection.json`) is
/// rebuilt on the next open without the user doing anything.
#[test]
fn damaged_derived_files_are_rebuilt_automatically() {
    let cli = Cli::new();
    cli.ok(&["index", "examples/sample/projects"]);
    let dir = cli.collection_dir("acme-api");
    let biggest = std::fs::read_dir(dir.join("lexical"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.file_name().unwrap() != "meta.json")
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let bytes = std::fs::read(&biggest).unwrap();
    std::fs::write(&biggest, &bytes[..bytes.len() / 2]).unwrap();
    std::fs::write(dir.join("collection.json"), b"{ not json").unwrap();
    let hits: Value =
        serde_json::from_str(&cli.ok(&["search", "expired session token", "--mode", "lexical", "--json"])).unwrap();
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
    let info: Value = serde_json::from_slice(&std::fs::read(dir.join("collection.json")).unwrap()).unwrap();
    assert_eq!(info["project"], "acme-api");
}

/// Defect 8: a transcript that cannot be read is reported with its file; the run goes on and
/// exits 3 (done with problems).
#[cfg(target_os = "linux")]
#[test]
fn an_unreadable_transcript_does_not_stop_the_run() {
    let cli = Cli::new();
    let history = tempfile::tempdir().unwrap();
    let projects = windows_cjk_history(history.path());
    // Reading /proc/self/mem from offset 0 fails (EIO), even as root.
    let subagents = projects.join("D--AI/會話記錄/subagents");
    std::fs::create_dir_all(&subagents).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", subagents.join("agent-a1b2c3.jsonl")).unwrap();
    let out = cli.run(&["index", projects.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["sessions_new"].as_u64().unwrap() >= 1, "{report}");
    assert!(stderr(&out).contains("agent-a1b2c3.jsonl"), "{}", stderr(&out));
}

/// `convdex doctor` finds a damaged store; `doctor --repair` rebuilds it from what is readable
/// and the transcripts, keeps the damaged files aside, and a forgotten session stays forgotten
/// (its tombstone also lives beside the store).
#[test]
fn doctor_repairs_a_damaged_store_and_forgotten_sessions_stay_forgotten() {
    for damage in ["flip:4096", "truncate:0.5"] {
        let cli = Cli::new();
        cli.ok(&["index", "examples/sample/projects"]);
        let chat = cli.data.path().join("chat.json");
        let doc = json!({"id": "chat-1", "conversation": {"source": "slack", "people": ["ana"], "user": "ana",
            "conversation": [{"speaker": "ana", "content": "move the nightly backup to the new bucket", "time": "2026-10-20T09:00:00Z"}]}});
        std::fs::write(&chat, doc.to_string()).unwrap();
        cli.ok(&["import", chat.to_str().unwrap(), "--project", "acme-api"]);
        cli.ok(&["forget", "--session", "chat-1"]);
        let before: Value = serde_json::from_str(&cli.ok(&["stats", "--json"])).unwrap();
        let redb = cli.collection_dir("acme-api").join("data.redb");
        let mut bytes = std::fs::read(&redb).unwrap();
        match damage {
            "flip:4096" => bytes[4096] ^= 0xff,
            _ => bytes.truncate(bytes.len() / 2),
        }
        std::fs::write(&redb, &bytes).unwrap();
        let out = cli.run(&["doctor"]);
        assert_eq!(out.status.code(), Some(3), "{damage}: {}", stderr(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("damaged"), "{damage}");
        let out = cli.run(&["doctor", "--repair", "--history", "examples/sample/projects"]);
        assert_eq!(out.status.code(), Some(0), "{damage}: {}", stderr(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("repaired") && text.contains("damaged files kept in"), "{damage}: {text}");
        let after: Value = serde_json::from_str(&cli.ok(&["stats", "--json"])).unwrap();
        // The damaged files moved aside are kept, never listed as the collection a second time
        // (every hit and decision was shown twice after a repair).
        let names = |v: &Value| v.as_array().unwrap().iter().map(|c| c["collection"].clone()).collect::<Vec<_>>();
        assert_eq!(names(&after), names(&before), "{damage}");
        for k in ["sessions", "messages", "decisions", "summaries", "forgotten_sessions"] {
            assert_eq!(after[0]["stats"][k], before[0]["stats"][k], "{damage}: {k}");
        }
        let hits: Value = serde_json::from_str(&cli.ok(&["search", "nightly backup bucket", "--json"])).unwrap();
        assert!(hits.as_array().unwrap().iter().all(|h| h["session"] != "chat-1"), "{damage}: {hits}");
        let ids: Vec<_> = hits.as_array().unwrap().iter().map(|h| h["id"].clone()).collect();
        assert!(ids.iter().enumerate().all(|(i, id)| !ids[..i].contains(id)), "{damage}: a hit twice: {hits}");
        let doctor = cli.ok(&["doctor"]);
        assert!(doctor.lines().all(|l| !l.starts_with("damaged")), "{damage}");
        assert_eq!(doctor.lines().filter(|l| l.starts_with("ok") && l.contains("acme-api")).count(), 1, "{doctor}");
        assert!(doctor.lines().any(|l| l.starts_with("kept") && l.contains(".damaged-")), "{damage}: {doctor}");
    }
}

/// Graph links damaged in place (same length) pass an open, which verifies the vectors only:
/// `convdex doctor` verifies the links too and says they will be rebuilt, and a search still
/// answers. (A project as small as the sample keeps no graph by default
/// (`CollectionOptions::graph_from`): one is built for it through the library first.)
#[test]
fn doctor_finds_graph_links_damaged_in_place() {
    let cli = Cli::new();
    cli.ok(&["index", "examples/sample/projects"]);
    let vectors = cli.collection_dir("acme-api").join("vectors");
    assert!(!vectors.join("graph.hnsw.graph").exists(), "a small project keeps its vectors alone");
    {
        let mut options = convdex::Options::default();
        options.collection.graph_from = 0;
        let index = convdex::Index::open(cli.data.path(), options).unwrap();
        let (tenant, project) = index
            .collections()
            .unwrap()
            .into_iter()
            .find(|c| c.project == "acme-api")
            .map(|c| (c.tenant, c.project))
            .unwrap();
        let coll = index.collection(&tenant, &project).unwrap();
        coll.rebuild_vector_index().unwrap();
        coll.flush().unwrap();
    }
    assert!(!cli.ok(&["doctor"]).contains("graph links damaged"));
    let links = vectors.join("graph.hnsw.graph");
    let mut bytes = std::fs::read(&links).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&links, &bytes).unwrap();
    let text = cli.ok(&["doctor"]);
    assert!(text.contains("graph links damaged") && text.contains("graph.hnsw.graph"), "{text}");
    let hits: Value = serde_json::from_str(&cli.ok(&["search", "nightly backup", "--json"])).unwrap();
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
}

/// Defect 5 (second part): two recorded paths that encode to the same folder name used to be
/// picked in hash-map order, so a later run could open a second collection for the same
/// project. The pick is deterministic: runs in separate processes agree.
#[test]
fn a_project_folder_maps_to_one_collection_in_every_run() {
    let cli = Cli::new();
    let history = tempfile::tempdir().unwrap();
    let folder = history.path().join("projects/-a-b-c");
    std::fs::create_dir_all(&folder).unwrap();
    for (i, cwd) in ["/a/b-c", "/a/b/c"].iter().enumerate() {
        let sid = format!("00000000-0000-4000-8000-00000000000{i}");
        let rec = json!({"type":"user","uuid":"u1","sessionId":sid,"cwd":cwd,"timestamp":"2026-11-01T08:00:00Z",
            "message":{"role":"user","content":format!("session {i} about the retry queue")}});
        std::fs::write(folder.join(format!("{sid}.jsonl")), line(rec)).unwrap();
    }
    let projects = history.path().join("projects");
    for _ in 0..6 {
        cli.ok(&["index", projects.to_str().unwrap(), "--force"]);
    }
    let stats: Value = serde_json::from_str(&cli.ok(&["stats", "--json"])).unwrap();
    let names: Vec<&str> = stats.as_array().unwrap().iter().map(|c| c["project"].as_str().unwrap()).collect();
    assert_eq!(names, ["b-c"], "one collection, the same every run");
    assert_eq!(stats[0]["stats"]["sessions"], 2);
}
