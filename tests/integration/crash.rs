//! Crash consistency, process level: the real binary is killed (`SIGKILL`) at seeded random
//! moments during `index` (first runs and `--force`), `forget`, `migrate`, `doctor --repair`
//! and the upgrade of an older collection on open, then run normally; the result must equal
//! an uninterrupted run (same sessions, messages, decisions and summaries per collection, no
//! duplicates, no extra collection) and no byte of a forgotten session may stay on disk.
//!
//! `CONVDEX_CRASH_SEED` and `CONVDEX_CRASH_KILLS` (default 10 kills per test) choose the run;
//! docs/robustness.md («What a crash, a damaged file or bad input can do») records a longer one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use convdex::testutil::Rng;
use serde_json::Value;

use super::common::copy_dir;

fn shared() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/transcripts")
}

/// Two real project folders: a Windows one in Chinese and a macOS one in English.
fn history() -> tempfile::TempDir {
    history_of(&[
        "13562964800+claude-skills/projects/D--llapk-app",
        "KaceyBui+Claude-global-test/projects/-Users-akatsukijin-Desktop-gitlearn",
    ])
}

/// These project folders of `../shared/data/transcripts`, under `projects/` of a new folder.
fn history_of(folders: &[&str]) -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    for src in folders {
        let name = Path::new(src).file_name().unwrap();
        copy_dir(&shared().join(src), &h.path().join("projects").join(name));
    }
    h
}

fn command(data: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_convdex"));
    c.env("CONVDEX_WARM", "off")
        .args(["--data-dir", data.to_str().unwrap()])
        .args(args)
        .env("CONVDEX_CONFIG", "/nonexistent/convdex-config.json")
        .env("NO_COLOR", "1");
    c
}

fn run(data: &Path, args: &[&str]) -> Output {
    let out = command(data, args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Per collection: sessions, messages, decisions, summaries, documents waiting for vectors.
fn counts(data: &Path) -> BTreeMap<String, [u64; 6]> {
    let v: Value = serde_json::from_slice(&run(data, &["stats", "--json"]).stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = &c["stats"];
            let n = |k: &str| s[k].as_u64().unwrap();
            (
                c["collection"].as_str().unwrap().to_string(),
                [
                    n("sessions"),
                    n("messages"),
                    n("decisions"),
                    n("summaries"),
                    c["pending_vectors"].as_u64().unwrap(),
                    // Every document findable by its words: no word lost to a kill.
                    n("lexical_documents"),
                ],
            )
        })
        .collect()
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Starts `args`, kills it after `delay` (if it is still running); returns whether it finished.
fn kill_after(data: &Path, args: &[&str], delay: Duration) -> bool {
    let mut child =
        command(data, args).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null()).spawn().unwrap();
    let start = Instant::now();
    while start.elapsed() < delay {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let finished = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    let _ = child.wait();
    finished
}

/// `args` run to the end on a copy of `base`: the copy, as the run left it, and how long it took.
fn timed_on_copy(base: &Path, args: &[&str]) -> (tempfile::TempDir, Duration) {
    let data = tempfile::tempdir().unwrap();
    copy_dir(base, data.path());
    let t = Instant::now();
    run(data.path(), args);
    (data, t.elapsed())
}

/// `args` started on `kills` fresh copies of `base`, each killed at a random moment (seeded)
/// of `full`; `check(copy, at)` then looks at the copy, `at` naming the seed, the kill and its
/// moment. Returns how many kills came before the command finished.
fn kill_copies(
    base: &Path,
    args: &[&str],
    full: Duration,
    seed: u64,
    kills: u64,
    mut check: impl FnMut(&Path, &str),
) -> usize {
    let mut rng = Rng(seed);
    let mut killed = 0;
    for i in 0..kills {
        let data = tempfile::tempdir().unwrap();
        copy_dir(base, data.path());
        let delay = full.mul_f32(rng.uniform());
        killed += usize::from(!kill_after(data.path(), args, delay));
        check(data.path(), &format!("seed {seed:#x} kill {i} at {delay:?} of {full:?}"));
    }
    killed
}

#[test]
fn index_force_killed_anywhere_is_repaired_by_the_next_run() {
    let h = history();
    let projects = h.path().join("projects");
    let p = projects.to_str().unwrap();
    let reference = tempfile::tempdir().unwrap();
    run(reference.path(), &["index", p]);
    let expected = counts(reference.path());
    assert_eq!(expected.len(), 2, "{expected:?}");
    let data = tempfile::tempdir().unwrap();
    run(data.path(), &["index", p]);
    let t = Instant::now();
    run(data.path(), &["index", p, "--force"]);
    let full = t.elapsed();
    let seed = env_or("CONVDEX_CRASH_SEED", 0x5eed);
    let kills = env_or("CONVDEX_CRASH_KILLS", 10);
    let mut rng = Rng(seed);
    let mut killed = 0;
    for i in 0..kills {
        let delay = full.mul_f32(rng.uniform());
        let finished = kill_after(data.path(), &["index", p, "--force"], delay);
        killed += usize::from(!finished);
        run(data.path(), &["index", p]);
        let got = counts(data.path());
        assert_eq!(got, expected, "seed {seed:#x} kill {i} at {delay:?} (of {full:?}): a normal run after the kill");
    }
    println!("index --force: {kills} kills (seed {seed:#x}), {killed} before it finished, full run {full:?}");
    assert!(killed * 2 >= kills as usize, "most kills must land inside the run");
}

/// Distinctive 32-byte pieces of a session's messages (no quote, backslash or newline, so they
/// are found verbatim in any file that still holds them).
fn needles(data: &Path, session: &str) -> Vec<String> {
    let v: Value = serde_json::from_slice(&run(data, &["session", session, "--json"]).stdout).unwrap();
    v["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.len() >= 120)
        .flat_map(|c| {
            [4, 2].into_iter().filter_map(move |div| {
                let mut a = c.len() / div;
                while !c.is_char_boundary(a) {
                    a += 1;
                }
                let piece = convdex::text::prefix_bytes(c.get(a..)?, 32);
                (piece.len() >= 24 && !piece.contains(['"', '\\', '\n'])).then(|| piece.to_string())
            })
        })
        .collect()
}

fn files_contain(dir: &Path, needle: &str) -> Option<PathBuf> {
    super::common::files_under(dir)
        .into_iter()
        .find(|p| std::fs::read(p).unwrap().windows(needle.len()).any(|w| w == needle.as_bytes()))
}

#[test]
fn forget_killed_anywhere_leaves_no_forgotten_text() {
    let h = history();
    let projects = h.path().join("projects");
    let base = tempfile::tempdir().unwrap();
    run(base.path(), &["index", projects.to_str().unwrap()]);
    // The longest session of the English project.
    let folder = projects.join("-Users-akatsukijin-Desktop-gitlearn");
    let session = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let others: Vec<u8> = std::fs::read_dir(&folder)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with(&session))
        .filter_map(|e| std::fs::read(e.path()).ok())
        .flatten()
        .collect();
    let needles: Vec<String> = needles(base.path(), &session)
        .into_iter()
        .filter(|n| !others.windows(n.len()).any(|w| w == n.as_bytes()))
        .collect();
    assert!(needles.len() >= 3, "{needles:?}");
    assert!(files_contain(base.path(), &needles[0]).is_some(), "the needles are on disk before forgetting");
    let forget = ["forget", "--session", &session];
    let (_, full) = timed_on_copy(base.path(), &forget);
    let seed = env_or("CONVDEX_CRASH_SEED", 0x5eed) ^ 0xf0f0;
    let kills = env_or("CONVDEX_CRASH_KILLS", 10);
    let killed = kill_copies(base.path(), &forget, full, seed, kills, |data, at| {
        // Any next command finishes an interrupted forget; if the kill came before the delete
        // committed, the session is still there and forgetting it again must work.
        let out = command(data, &["session", &session, "--json"]).output().unwrap();
        if out.status.success() {
            run(data, &forget);
        } else {
            run(data, &["stats"]);
        }
        for n in &needles {
            assert_eq!(files_contain(data, n), None, "{at}: {n:?} survived");
        }
        let again: Value =
            serde_json::from_slice(&run(data, &["index", projects.to_str().unwrap(), "--json"]).stdout).unwrap();
        assert_eq!(again["sessions_forgotten"], 1, "{at}: the tombstone holds");
    });
    println!("forget: {kills} kills (seed {seed:#x}), {killed} before it finished, full run {full:?}");
}

/// Per collection: the model its vectors come from and whether a migration is pending.
fn models(data: &Path) -> BTreeMap<String, (String, bool)> {
    let v: Value = serde_json::from_slice(&run(data, &["stats", "--json"]).stdout).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let model = c["stats"]["model"].as_str().unwrap().to_string();
            (c["collection"].as_str().unwrap().to_string(), (model, !c["migration"].is_null()))
        })
        .collect()
}

#[test]
fn migrate_killed_anywhere_is_finished_by_the_next_run() {
    let h = history();
    let projects = h.path().join("projects");
    let p = projects.to_str().unwrap();
    // Two collections built with all-MiniLM-L6-v2, as by an earlier version.
    let base = tempfile::tempdir().unwrap();
    run(base.path(), &["--model", "all-minilm-l6-v2", "index", p]);
    let expected = counts(base.path());
    assert!(
        models(base.path()).values().all(|(m, pending)| m.contains("MiniLM") && *pending),
        "{:?}",
        models(base.path())
    );
    let (_, full) = timed_on_copy(base.path(), &["migrate"]);
    let seed = env_or("CONVDEX_CRASH_SEED", 0x5eed) ^ 0x0e5;
    let kills = env_or("CONVDEX_CRASH_KILLS", 10).div_ceil(2);
    let killed = kill_copies(base.path(), &["migrate"], full, seed, kills, |data, at| {
        // Whatever the kill left, the collections still answer and count the same.
        assert_eq!(counts(data), expected, "{at}: after the kill");
        // `index` migrates first: everything ends on the default model, nothing lost.
        run(data, &["index", p]);
        assert_eq!(counts(data), expected, "{at}: after the next run");
        let m = models(data);
        assert!(m.values().all(|(m, pending)| m.contains("multilingual-e5-small") && !pending), "{at}: {m:?}");
    });
    println!("migrate: {kills} kills (seed {seed:#x}), {killed} before it finished, full run {full:?}");
}

/// `index` stores words first and embeds after: killed at any moment of a first run (most kills
/// land while the model embeds), the next run ends with the counts of an uninterrupted run,
/// nothing left waiting for vectors and no duplicate.
#[test]
fn index_killed_in_either_phase_is_finished_by_the_next_run() {
    let h = history();
    let projects = h.path().join("projects");
    let p = projects.to_str().unwrap();
    let reference = tempfile::tempdir().unwrap();
    let t = Instant::now();
    run(reference.path(), &["index", p]);
    let full = t.elapsed();
    let expected = counts(reference.path());
    assert!(expected.values().all(|c| c[4] == 0), "an uninterrupted run leaves nothing pending: {expected:?}");
    assert!(expected.values().all(|c| c[5] == c[1] + c[2] + c[3]), "every document has its words: {expected:?}");
    let seed = env_or("CONVDEX_CRASH_SEED", 0x5eed) ^ 0xe3b;
    let kills = env_or("CONVDEX_CRASH_KILLS", 10).div_ceil(2);
    let mut rng = Rng(seed);
    let (mut killed, mut pending_seen) = (0, 0);
    for i in 0..kills {
        let data = tempfile::tempdir().unwrap();
        // Every other kill lands early, where the words are written (staged in the lexical
        // index, the store's commits not yet synced); the others while embedding.
        let delay =
            if i % 2 == 0 { full.mul_f32(0.12 * rng.uniform()) } else { full.mul_f32(0.2 + 0.8 * rng.uniform()) };
        killed += usize::from(!kill_after(data.path(), &["index", p], delay));
        if data.path().read_dir().unwrap().next().is_some() {
            let left = command(data.path(), &["stats", "--json"]).output().unwrap();
            if let Ok(v) = serde_json::from_slice::<Value>(&left.stdout) {
                pending_seen += v.as_array().into_iter().flatten().filter(|c| c["pending_vectors"] != 0).count();
            }
        }
        run(data.path(), &["index", p]);
        assert_eq!(counts(data.path()), expected, "seed {seed:#x} kill {i} at {delay:?} (of {full:?})");
    }
    println!(
        "index (words first): {kills} kills (seed {seed:#x}), {killed} before it finished, {pending_seen} collections \
         left with pending vectors, full run {full:?}"
    );
}

/// Per collection as `doctor --json` finds it: its state (`ok`, `damaged`, …) and, when it
/// opens, its messages.
fn states(data: &Path) -> BTreeMap<String, (String, Option<u64>)> {
    let out = command(data, &["doctor", "--json", "--history", "/nonexistent"]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = command(data, &["stats", "--json"]).output().unwrap();
    let stats: Value = serde_json::from_slice(&listed.stdout).unwrap_or(Value::Null);
    let messages = |name: &str| {
        stats.as_array()?.iter().find(|c| c["collection"] == name).and_then(|c| c["stats"]["messages"].as_u64())
    };
    v["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let name = c["collection"].as_str().unwrap().to_string();
            let m = messages(&name);
            (name, (c["state"].as_str().unwrap().to_string(), m))
        })
        .collect()
}

/// `doctor --repair` killed at any moment: until a repair finishes, the damaged collection is
/// listed and either skipped as damaged or whole (as salvaged, or salvaged and indexed again),
/// never half rebuilt and never missing; the next `doctor --repair` and `index` (what the
/// repair says to run) end with the counts of an uninterrupted repair, one copy of the damaged
/// files, no repair left under way.
#[test]
fn repair_killed_anywhere_is_finished_by_the_next_repair() {
    let h = history();
    let projects = h.path().join("projects");
    let p = projects.to_str().unwrap();
    let base = tempfile::tempdir().unwrap();
    run(base.path(), &["index", p]);
    // The larger collection damaged where redb cannot repair it, the other intact.
    let victim = std::fs::read_dir(base.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|d| d.join("data.redb").exists())
        .max_by_key(|d| std::fs::metadata(d.join("data.redb")).unwrap().len())
        .unwrap();
    let name = victim.file_name().unwrap().to_string_lossy().into_owned();
    let redb = victim.join("data.redb");
    let pristine = std::fs::read(&redb).unwrap();
    let repair = ["doctor", "--repair", "--history", p];
    // The first flip `doctor` finds and salvage reads around (some rows recovered), so a half
    // rebuilt collection would show; else one at 4096, which it finds and nothing reads around.
    // `salvaged`: the victim's messages after a repair that reads no transcript.
    let damage = |at: usize| {
        let mut bytes = pristine.clone();
        bytes[at] ^= 0xff;
        std::fs::write(&redb, &bytes).unwrap();
        let probe = tempfile::tempdir().unwrap();
        copy_dir(base.path(), probe.path());
        let found = command(probe.path(), &["doctor"]).output().unwrap().status.code() == Some(3);
        run(probe.path(), &["doctor", "--repair", "--history", "/nonexistent"]);
        (found, counts(probe.path())[&name][1])
    };
    let len = pristine.len();
    let salvaged = [len / 2, len / 4, 3 * len / 4, 65536.min(len - 1)]
        .into_iter()
        .map(damage)
        .find(|&(found, salvaged)| found && salvaged > 0)
        .map_or_else(|| damage(4096).1, |(_, salvaged)| salvaged);
    let (reference, full) = timed_on_copy(base.path(), &repair);
    let expected = counts(reference.path());
    assert_eq!(expected.len(), 2, "{expected:?}");
    let seed = env_or("CONVDEX_CRASH_SEED", 0x5eed) ^ 0x4e9;
    let kills = env_or("CONVDEX_CRASH_KILLS", 10);
    let killed = kill_copies(base.path(), &repair, full, seed, kills, |data, at| {
        let found = states(data);
        assert_eq!(found.len(), 2, "{at}: both collections listed after the kill: {found:?}");
        let (state, messages) = &found[&name];
        let whole = messages.is_some_and(|m| [salvaged, expected[&name][1]].contains(&m));
        assert!(state == "damaged" || (state == "ok" && whole), "{at}: {salvaged} salvaged: {found:?}");
        // (Exit 3 when the kill came after the repair, while the transcripts were read again:
        // nothing to repair, sessions not indexed, which `index` then reads.)
        let again = command(data, &repair).output().unwrap();
        assert!(matches!(again.status.code(), Some(0 | 3)), "{at}: {}", String::from_utf8_lossy(&again.stderr));
        run(data, &["index", p]);
        assert_eq!(counts(data), expected, "{at}: after the next repair");
        let names: Vec<String> =
            std::fs::read_dir(data).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into()).collect();
        assert_eq!(names.iter().filter(|n| n.contains(".damaged-")).count(), 1, "{at}: {names:?}");
        assert!(!names.iter().any(|n| n.ends_with(".repairing")), "{at}: {names:?}");
    });
    println!(
        "doctor --repair: {kills} kills (seed {seed:#x}), {killed} before it finished, full run {full:?}, \
         {salvaged} of {} messages salvaged",
        expected[&name][1]
    );
}

/// Every store file (`data.redb`) under `data`, by its path relative to `data`.
fn stores(data: &Path) -> Vec<PathBuf> {
    super::common::files_under(data)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "data.redb"))
        .map(|p| p.strip_prefix(data).unwrap().to_path_buf())
        .collect()
}

const DOCS: redb::TableDefinition<'_, u64, &[u8]> = redb::TableDefinition::new("docs");
const RANKING: redb::TableDefinition<'_, u64, &[u8]> = redb::TableDefinition::new("ranking");

/// Per store file: its documents' records and its ranking rows, as stored.
type Tables = BTreeMap<PathBuf, [Vec<(u64, Vec<u8>)>; 2]>;

fn tables(data: &Path) -> Tables {
    use redb::ReadableDatabase;
    stores(data)
        .into_iter()
        .map(|rel| {
            let db = redb::Database::open(data.join(&rel)).unwrap();
            let tx = db.begin_read().unwrap();
            (rel, [rows(&tx.open_table(DOCS).unwrap()), rows(&tx.open_table(RANKING).unwrap())])
        })
        .collect()
}

/// Every row of a table of documents' records or ranking rows, in id order.
fn rows(table: &impl redb::ReadableTable<u64, &'static [u8]>) -> Vec<(u64, Vec<u8>)> {
    table.iter().unwrap().map(|r| r.unwrap()).map(|(k, v)| (k.value(), v.value().to_vec())).collect()
}

/// Makes the collections under `data` look written by the build before the deciding messages
/// were marked: document records of version 3 (without the last byte, `decides`) and ranking
/// rows of version 4 (60 bytes). Returns how many messages were marked as deciding.
fn make_older(data: &Path) -> usize {
    let mut deciding = 0;
    for rel in stores(data) {
        let db = redb::Database::open(data.join(rel)).unwrap();
        let tx = db.begin_write().unwrap();
        {
            let mut docs = tx.open_table(DOCS).unwrap();
            for (id, mut record) in rows(&docs) {
                assert_eq!(record[0], 4, "a current record");
                deciding += usize::from(record.pop() == Some(1));
                record[0] = 3;
                docs.insert(id, record.as_slice()).unwrap();
            }
            let mut ranking = tx.open_table(RANKING).unwrap();
            for (id, mut row) in rows(&ranking) {
                row.truncate(60);
                row[0] = 4;
                ranking.insert(id, row.as_slice()).unwrap();
            }
        }
        tx.commit().unwrap();
    }
    deciding
}

/// A collection of an earlier version is upgraded when it opens (its deciding messages marked
/// from its stored decisions, its ranking rows rewritten), in one transaction: killed at any
/// moment of that open, the next open leaves the records and rows of an uninterrupted upgrade,
/// byte for byte, and no further open changes them.
#[test]
fn an_upgrade_killed_anywhere_is_finished_by_the_next_open() {
    // Two real project folders (Windows and macOS) whose sessions hold decisions.
    let h = history_of(&[
        "Eduardodmb+ClaudeHome/projects/X--01-Edmb-Clockhelp",
        "KaceyBui+Claude-global-test/projects/-Users-akatsukijin-Desktop-Meup-claude",
    ]);
    let projects = h.path().join("projects");
    let p = projects.to_str().unwrap();
    let base = tempfile::tempdir().unwrap();
    run(base.path(), &["index", p]);
    let current = tables(base.path());
    let deciding = make_older(base.path());
    assert!(deciding > 0, "the sessions hold messages decisions were extracted from");
    let older = tables(base.path());
    let (reference, full) = timed_on_copy(base.path(), &["stats", "--json"]);
    let expected = tables(reference.path());
    // The upgrade restores what indexing wrote: the same marks, and rows of the current
    // version (the records left unmarked stay of version 3: they are read as they are).
    for (rel, [docs, rows]) in &expected {
        assert_eq!(rows, &current[rel][1], "{rel:?}: the rows of a fresh index");
        let marked = |t: &[(u64, Vec<u8>)]| t.iter().filter(|(_, r)| r[0] == 4 && r.last() == Some(&1)).count();
        assert_eq!(marked(docs), marked(&current[rel][0]), "{rel:?}: the deciding messages of a fresh index");
    }
    let seed = env_or("CONVDEX_CRASH_SEED", 0x5eed) ^ 0x0b5;
    let kills = env_or("CONVDEX_CRASH_KILLS", 10);
    let mut left_older = 0;
    let killed = kill_copies(base.path(), &["stats", "--json"], full, seed, kills, |data, at| {
        // The kill left the collections as they were, or upgraded, never half of it.
        for (rel, both) in tables(data) {
            let (was, done) = (&older[&rel], &expected[&rel]);
            assert!(&both == was || &both == done, "{at}: {rel:?} half upgraded");
            left_older += usize::from(&both == was && was != done);
        }
        run(data, &["stats", "--json"]);
        assert_eq!(tables(data), expected, "{at}: after the next open");
        run(data, &["stats", "--json"]);
        assert_eq!(tables(data), expected, "{at}: an open after it changes nothing");
    });
    println!(
        "upgrade on open: {kills} kills (seed {seed:#x}), {killed} before it finished, {left_older} collections left \
         as they were, {deciding} deciding messages, full run {full:?}"
    );
}
