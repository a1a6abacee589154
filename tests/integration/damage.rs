//! Damage is never silent, and what was forgotten stays forgotten: a real project's collection
//! (two sessions of `../shared/data/fresh/`, the real model, one session forgotten) is damaged
//! in each way a disk or a person damages files (the store truncated, deleted, replaced by
//! another collection's; a byte flipped in the header, in each commit slot, in a page, in a
//! document, four in a stored vector; size and modification time restored), and for each the
//! binary's commands are asked: a search reports the collection (named, with the fix) and exits
//! 3 (or 1 when nothing else is left to answer from), never 0 with changed results; `doctor`
//! finds it; `doctor --repair` rebuilds it; `index` then has every message of the reference
//! back, and the forgotten session never returns. A table of what each case did is printed
//! (docs/robustness.md, «The damage test»).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::common::copy_dir;

fn fresh(project: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/fresh/transcripts").join(project)
}

const PROJECT: &str = "umaionigiri+claudefiles/projects/-Users-so-MyWorkSpace-scibit-petabit-bpaas";
const OTHER: &str = "JiangBeta+hyprland-elite-desktop/claude/projects/-home-laofahai-workspace-linch-kit";
const FORGOTTEN: &str = "81ce7288-7563-4e08-a86b-ef78fcec7aa3";

fn convdex(data: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_convdex"))
        .env("CONVDEX_WARM", "off")
        .env("CONVDEX_CONFIG", "/nonexistent/convdex-config.json")
        .args(["--data-dir", data.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn stats(data: &Path) -> Vec<Value> {
    let (_, out, _) = convdex(data, &["stats", "--json"]);
    serde_json::from_str::<Vec<Value>>(&out).unwrap_or_default()
}

fn messages_of(data: &Path, project: &str) -> Option<u64> {
    stats(data).iter().find(|c| c["project"] == project).and_then(|c| c["stats"]["messages"].as_u64())
}

/// Offsets of 384 little-endian floats of unit length in `bytes` (stored vectors), every 4th
/// byte tried.
fn vectors_in(bytes: &[u8]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 1536 <= bytes.len() {
        let norm: f64 = bytes[at..at + 1536]
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .map(|x| if x.is_finite() { x * x } else { 9.0 })
            .sum();
        if (norm - 1.0).abs() < 1e-4 {
            out.push(at);
            at += 1536;
        } else {
            at += 4;
        }
    }
    out
}

/// How one case damages the store at `path` (the collection directory is `path`'s parent).
fn damage(case: &str, path: &Path, foreign: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    match case {
        "truncated to 0 bytes" => bytes.clear(),
        "deleted" => {
            std::fs::remove_file(path).unwrap();
            return;
        }
        "replaced by another collection's" => bytes = std::fs::read(foreign).unwrap(),
        "byte 0 (magic number)" => bytes[0] ^= 0xff,
        "byte 1 (magic number)" => bytes[1] ^= 0xff,
        "byte 16 (region layout)" => bytes[16] ^= 0xff,
        "byte 72 (commit slot 0)" => bytes[72] ^= 0xff,
        "byte 200 (commit slot 1)" => bytes[200] ^= 0xff,
        "byte 8192 (a page)" => bytes[8192] ^= 0xff,
        "byte 16384 (a page)" => bytes[16384] ^= 0xff,
        "a document's text" => {
            // The text of the kept session's first prompt, where the store keeps it.
            let transcript = fresh(PROJECT).join("8644509b-d0c8-4483-a40f-55adc11ec0c4.jsonl");
            let parsed = convdex::ingest::claude::parse(&std::fs::read(transcript).unwrap());
            let prompt = parsed.messages.iter().find(|m| m.text.len() > 60).expect("a prompt").text.clone();
            let needle = &prompt.as_bytes()[..48];
            let at = bytes.windows(needle.len()).position(|w| w == needle).expect("the prompt in the store") + 40;
            bytes[at] ^= 0x80;
        }
        "four bytes of a stored vector" => {
            let at = *vectors_in(&bytes).first().expect("a stored vector") + 40;
            bytes[at..at + 4].copy_from_slice(&1.0e30_f32.to_le_bytes());
        }
        other => panic!("unknown case {other}"),
    }
    std::fs::write(path, bytes).unwrap();
}

const CASES: [&str; 12] = [
    "truncated to 0 bytes",
    "deleted",
    "replaced by another collection's",
    "byte 0 (magic number)",
    "byte 1 (magic number)",
    "byte 16 (region layout)",
    "byte 72 (commit slot 0)",
    "byte 200 (commit slot 1)",
    "byte 8192 (a page)",
    "byte 16384 (a page)",
    "a document's text",
    "four bytes of a stored vector",
];

#[test]
fn every_damage_is_reported_repaired_and_the_forgotten_session_never_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let reference = tmp.path().join("reference");
    let project = fresh(PROJECT);
    let (rc, _, err) = convdex(&reference, &["index", project.to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let (rc, _, err) = convdex(&reference, &["index", fresh(OTHER).to_str().unwrap(), "--json"]);
    assert_eq!(rc, 0, "{err}");
    let (rc, _, err) = convdex(&reference, &["forget", "--session", FORGOTTEN, "--json"]);
    assert_eq!(rc, 0, "{err}");
    let name = "petabit-bpaas";
    let expected = messages_of(&reference, name).unwrap();
    let collection =
        stats(&reference).iter().find(|c| c["project"] == name).unwrap()["collection"].as_str().unwrap().to_string();
    let other =
        stats(&reference).iter().find(|c| c["project"] != name).unwrap()["collection"].as_str().unwrap().to_string();
    let ask = ["search", "--mode", "lexical", "--limit", "5", "--json", "見積 plan"];
    let (rc, unchanged, err) = convdex(&reference, &ask);
    assert_eq!(rc, 0, "{err}");
    println!(
        "| damage | search | doctor | repair: documents from the store | messages after `index` | forgotten session |"
    );
    println!("|---|---|---|---|---|---|");
    for case in CASES {
        let data = tmp.path().join(case.replace([' ', '(', ')', '\''], "_"));
        copy_dir(&reference, &data);
        let store = data.join(&collection).join("data.redb");
        let modified = std::fs::metadata(&store).unwrap().modified().unwrap();
        damage(case, &store, &data.join(&other).join("data.redb"));
        if store.exists() {
            // Bit rot keeps the size and the time: nothing but the bytes tells.
            std::fs::File::options().write(true).open(&store).unwrap().set_modified(modified).unwrap();
        }
        // A search across projects: the damaged collection is named with its fix, the other
        // project still answers, and the exit code says something went wrong.
        let (rc, out, err) = convdex(&data, &ask);
        let reported = err.contains(&collection) && err.contains("doctor --repair");
        let search = match (rc, reported) {
            (3, true) => "rc 3, named, fix given",
            (0, _) if out == unchanged => "rc 0, results unchanged",
            (0, _) => "rc 0, results CHANGED",
            (_, true) => "error, named, fix given",
            _ => "error",
        };
        // Exit 0 only with the very results the undamaged collection gives.
        assert!(rc != 0 || out == unchanged, "{case}: results changed in silence:\n{out}\nvs\n{unchanged}");
        assert!(rc == 0 || reported, "{case}: search exited {rc} without naming the damage: {err}");
        // A damaged vector is never served: every cosine of a search by meaning at most 1.
        let by_meaning = |data: &Path| {
            let (rc, out, _) = convdex(data, &["search", "--mode", "semantic", "--json", "見積の前提条件"]);
            let hits: Vec<Value> = serde_json::from_str(&out).unwrap_or_default();
            assert!(hits.iter().all(|h| h["signals"]["semantic"].as_f64().is_none_or(|c| c <= 1.0001)), "{out}");
            rc
        };
        by_meaning(&data);
        let (_, out, _) = convdex(&data, &["doctor", "--json", "--history", project.to_str().unwrap()]);
        let doctor: Value = serde_json::from_str(&out).unwrap();
        let row =
            doctor["collections"].as_array().unwrap().iter().find(|c| c["collection"] == collection.as_str()).cloned();
        let doctor_state = row.as_ref().map_or("missing".into(), |r| r["state"].as_str().unwrap_or("").to_string());
        let (rc, out, err) = convdex(&data, &["doctor", "--repair", "--json", "--history", project.to_str().unwrap()]);
        assert!(rc == 0 || rc == 3, "{case}: repair exited {rc}: {err}");
        let repaired: Value = serde_json::from_str(&out).unwrap();
        let detail = repaired["collections"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["collection"] == collection.as_str())
            .map(|c| c["detail"].as_str().unwrap_or("").to_string())
            .unwrap_or_default();
        let from_store = detail
            .split("repaired ")
            .nth(1)
            .and_then(|d| d.split(": ").nth(1))
            .and_then(|d| d.split(' ').next().and_then(|n| n.parse::<usize>().ok()));
        let (rc, _, err) = convdex(&data, &["index", project.to_str().unwrap(), "--json"]);
        assert_eq!(rc, 0, "{case}: {err}");
        assert_eq!(by_meaning(&data), 0, "{case}: a search by meaning after the repair");
        let after = messages_of(&data, name);
        assert_eq!(after, Some(expected), "{case}: the messages of the reference come back");
        // The forgotten session stays forgotten whatever happened to the store.
        let (rc, out, _) = convdex(&data, &["session", FORGOTTEN, "--json"]);
        assert!(rc != 0 || !out.contains("\"messages\""), "{case}: the forgotten session came back");
        let (_, out, _) = convdex(&data, &["search", "--mode", "lexical", "--session", FORGOTTEN, "--json", "見積"]);
        assert!(out.trim() == "[]" || out.trim().is_empty(), "{case}: the forgotten session is searchable: {out}");
        println!(
            "| {case} | {search} | {doctor_state} | {} | {} of {expected} | stays forgotten |",
            from_store.map_or("—".to_string(), |n| n.to_string()),
            after.unwrap_or(0)
        );
    }
}
