//! Gemini CLI histories: `tmp/<sha256 of the project path>/chats/session-*.json` and
//! `tmp/<hash>/logs.json`. A session is the chat files of one `sessionId`; a session with no chat
//! file left is read from the prompts `logs.json` kept.
//!
//! The project a hashed folder stands for is the path whose SHA-256 is its name: one of the
//! paths the other agents' histories and the existing collections name, else one its own
//! sessions write (a file quoted in a prompt, a stack trace pasted in) or a folder above one.
//! Either way the hash decides, so a project found is never a guess.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Agent, ProjectFolder, SessionFiles};
use crate::error::{Error, Result};
use crate::ingest::gemini::{parse_chat, parse_logs, project_hash};

fn is_hash(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_project_dir(p: &Path) -> bool {
    p.file_name().is_some_and(|n| is_hash(&n.to_string_lossy()))
        && (p.join("chats").is_dir() || p.join("logs.json").is_file())
}

/// True for `~/.gemini`, its `tmp`, or one project's hashed folder.
pub(crate) fn is_root(path: &Path) -> bool {
    is_project_dir(path) || !project_dirs(path).is_empty()
}

fn project_dirs(path: &Path) -> Vec<PathBuf> {
    if is_project_dir(path) {
        return vec![path.to_path_buf()];
    }
    let base = if path.join("tmp").is_dir() { path.join("tmp") } else { path.to_path_buf() };
    let mut out: Vec<PathBuf> = std::fs::read_dir(&base)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_project_dir(p))
        .collect();
    out.sort();
    out
}

/// The project a hashed folder stands for: the known path whose SHA-256 is its name.
fn resolve(hash: &str, known: &[String]) -> Option<String> {
    known
        .iter()
        .find(|k| {
            let trimmed = k.trim_end_matches(['/', '\\']);
            project_hash(k).eq_ignore_ascii_case(hash) || project_hash(trimmed).eq_ignore_ascii_case(hash)
        })
        .cloned()
}

/// How many bytes of one folder's chat files and prompt log are read for the paths they name.
const TEXT_BUDGET: usize = 64 << 20;

/// How many distinct directories one folder's text may propose (each costs one SHA-256).
const MAX_CANDIDATES: usize = 200_000;

/// The longest path read from running text, in bytes.
const MAX_PATH: usize = 1024;

/// The project of the hashed folder `dir`, from the paths its own sessions write: the one among
/// them, or among the folders above them, whose SHA-256 is `hash`. Read within
/// [`TEXT_BUDGET`]; a file that cannot be read or parsed is passed over (indexing reports it).
fn resolve_from_text(dir: &Path, hash: &str) -> Option<String> {
    let mut files = chat_files(dir);
    files.push(dir.join("logs.json"));
    let mut tried: HashSet<String> = HashSet::new();
    let mut budget = TEXT_BUDGET;
    for f in files {
        let Ok(bytes) = std::fs::read(&f) else { continue };
        if bytes.len() > budget {
            break;
        }
        budget -= bytes.len();
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else { continue };
        let mut strings = Vec::new();
        collect_strings(&v, &mut strings);
        for s in strings {
            for candidate in named_paths(s).iter().flat_map(|p| ancestors(p)) {
                if tried.len() >= MAX_CANDIDATES {
                    return None;
                }
                if tried.insert(candidate.clone()) && project_hash(&candidate).eq_ignore_ascii_case(hash) {
                    return Some(candidate);
                }
            }
        }
    }
    None
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

/// Characters that end a path written in running text (a Windows path may hold spaces; its
/// folders above are proposed whatever follows).
fn ends_path(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\t'
            | '"'
            | '\''
            | '`'
            | '<'
            | '>'
            | '|'
            | '*'
            | '?'
            | ','
            | ';'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
    )
}

/// The absolute paths written in `text`: Windows ones (`C:\…`, `d:/…`) and POSIX ones (`/…`
/// after a space, a quote or the start), each up to the end of its line or a character that
/// cannot be part of it, and once more up to its first space.
fn named_paths(text: &str) -> Vec<String> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut out = Vec::new();
    for (i, &(at, c)) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j].1);
        let boundary = before.is_none_or(|b| !b.is_alphanumeric() && b != '/' && b != '\\' && b != '.');
        let windows = c.is_ascii_alphabetic()
            && chars.get(i + 1).is_some_and(|x| x.1 == ':')
            && chars.get(i + 2).is_some_and(|x| x.1 == '\\' || x.1 == '/');
        let posix = c == '/' && chars.get(i + 1).is_some_and(|x| x.1.is_alphanumeric() || x.1 == '.' || x.1 == '_');
        if !boundary || !(windows || posix) {
            continue;
        }
        let rest = text.get(at..).unwrap_or_default();
        // After the drive, a `:` ends a path (`file.js:12:3`).
        let skip = if windows { 2 } else { 0 };
        let end = rest
            .char_indices()
            .skip(skip)
            .find(|&(k, c)| k >= MAX_PATH || ends_path(c) || c == ':')
            .map_or(rest.len(), |(k, _)| k);
        let whole = rest.get(..end).unwrap_or_default().trim_end_matches([' ', '.']);
        out.push(whole.to_string());
        if let Some((first, _)) = whole.split_once(' ') {
            out.push(first.to_string());
        }
    }
    out
}

/// `path` and every folder above it, down to one below the root (`C:\Users`, `/home`), each
/// without a trailing separator; a lower-case drive letter is also proposed upper-case.
fn ancestors(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    let trimmed = path.trim_end_matches(['/', '\\']);
    let floor = if trimmed.as_bytes().get(1) == Some(&b':') { 3 } else { 1 };
    for (k, c) in trimmed.char_indices() {
        if (c == '/' || c == '\\') && k >= floor {
            out.extend(trimmed.get(..k).map(str::to_string));
        }
    }
    if trimmed.len() > floor {
        out.push(trimmed.to_string());
    }
    let upper: Vec<String> = out
        .iter()
        .filter(|p| p.as_bytes().first().is_some_and(u8::is_ascii_lowercase) && p.as_bytes().get(1) == Some(&b':'))
        .map(|p| p.get(..1).unwrap_or_default().to_ascii_uppercase() + p.get(1..).unwrap_or_default())
        .collect();
    out.extend(upper);
    out
}

/// The chat files of a project folder, sorted.
fn chat_files(dir: &Path) -> Vec<PathBuf> {
    let mut chats: Vec<PathBuf> = std::fs::read_dir(dir.join("chats"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    chats.sort();
    chats
}

/// The sessions under `path`, one folder per project; `known` project paths name the folders.
pub(crate) fn discover(path: &Path, known: &[String]) -> Result<Vec<ProjectFolder>> {
    if path.is_file() {
        // One chat file: its project folder is two levels up.
        let dir = path.parent().and_then(Path::parent).unwrap_or(path);
        let mut f = folder(dir, known);
        let id = parse_chat(&std::fs::read(path).map_err(|e| Error::io(path, e))?).session_id.unwrap_or_default();
        f.sessions = vec![SessionFiles { id, main: Some(path.to_path_buf()), ..SessionFiles::new(Agent::Gemini) }];
        return Ok(vec![f]);
    }
    let mut out = Vec::new();
    for dir in project_dirs(path) {
        let mut f = folder(&dir, known);
        let mut sessions: BTreeMap<String, SessionFiles> = BTreeMap::new();
        for c in chat_files(&dir) {
            let Some(id) = std::fs::read(&c).ok().and_then(|b| parse_chat(&b).session_id) else { continue };
            let s =
                sessions.entry(id.clone()).or_insert_with(|| SessionFiles { id, ..SessionFiles::new(Agent::Gemini) });
            if s.main.is_none() { s.main = Some(c) } else { s.parts.push(c) }
        }
        let logs = dir.join("logs.json");
        if let Ok(bytes) = std::fs::read(&logs) {
            for (id, _) in parse_logs(&bytes) {
                sessions.entry(id.clone()).or_insert_with(|| SessionFiles {
                    id,
                    main: Some(logs.clone()),
                    ..SessionFiles::new(Agent::Gemini)
                });
            }
        }
        f.sessions = sessions.into_values().collect();
        if !f.sessions.is_empty() {
            out.push(f);
        }
    }
    Ok(out)
}

fn folder(dir: &Path, known: &[String]) -> ProjectFolder {
    let hash = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let project = resolve(&hash, known).or_else(|| {
        // A folder indexed before its own paths were read keeps the collection named by its
        // hash (no second copy of its sessions under the project's name).
        let own = dir.to_string_lossy();
        let indexed = known.iter().any(|k| crate::text::paths::same_dir(k, &own));
        if indexed { None } else { resolve_from_text(dir, &hash) }
    });
    ProjectFolder { dir: dir.to_path_buf(), project, agent: Agent::Gemini, sessions: Vec::new(), left_out: Vec::new() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Gemini project folder for `project` under `home`, holding one chat file with `text`.
    fn gemini_folder(home: &Path, project: &str, text: &str) -> PathBuf {
        let dir = home.join("tmp").join(project_hash(project));
        std::fs::create_dir_all(dir.join("chats")).unwrap();
        let chat = serde_json::json!({"sessionId": "s-1", "messages": [
            {"id": "m1", "timestamp": "2025-09-30T23:51:24Z", "type": "user", "content": text},
            {"id": "m2", "timestamp": "2025-09-30T23:51:30Z", "type": "gemini", "content": "Okay."}]});
        std::fs::write(dir.join("chats/session-2025-09-30T23-49-s1.json"), chat.to_string()).unwrap();
        dir
    }

    #[test]
    fn a_folder_nobody_names_is_named_by_the_paths_its_sessions_write() {
        let tmp = tempfile::tempdir().unwrap();
        let cases = [
            // A Windows stack trace, spaces and Chinese in the path, a line number after it.
            (
                r"C:\Users\Ada Lovelace\代码\项目",
                "it fails:\n    at C:\\Users\\Ada Lovelace\\代码\\项目\\node_modules\\x\\index.js:12:3",
            ),
            // A POSIX path in prose, the project being a folder above the file named.
            ("/home/été/proj", "open /home/été/proj/src/main.rs: no such file"),
            // The project's own path, quoted, with a trailing separator.
            ("/srv/app", "cd '/srv/app/' and run it"),
        ];
        for (project, text) in cases {
            let home = tmp.path().join(project_hash(project));
            gemini_folder(&home, project, text);
            let found = discover(&home, &[]).unwrap();
            assert_eq!(found.len(), 1, "{project}");
            assert_eq!(found[0].project.as_deref(), Some(project), "{text}");
            assert_eq!(found[0].sessions.len(), 1);
        }
    }

    #[test]
    fn known_paths_come_first_and_a_folder_indexed_by_its_hash_keeps_its_collection() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = gemini_folder(tmp.path(), "/work/p", "see /work/p/README.md");
        // Known, it is named without reading anything (the spelling known is kept).
        let known = ["/work/p/".to_string()];
        assert_eq!(discover(tmp.path(), &known).unwrap()[0].project.as_deref(), Some("/work/p/"));
        // A collection keyed by the folder itself (indexed before): no second name.
        let own = [dir.to_string_lossy().into_owned()];
        assert_eq!(discover(tmp.path(), &own).unwrap()[0].project, None);
        // Nothing its sessions write hashes to its name: unnamed, as before.
        let other = tempfile::tempdir().unwrap();
        let d = other.path().join("tmp").join(project_hash("/elsewhere"));
        std::fs::create_dir_all(d.join("chats")).unwrap();
        std::fs::copy(dir.join("chats/session-2025-09-30T23-49-s1.json"), d.join("chats/s.json")).unwrap();
        std::fs::write(d.join("logs.json"), b"[{\"sessionId\": \"s-2\", \"type\": \"user\", \"message\": \"C:\\\\")
            .unwrap();
        let found = discover(other.path(), &[]).unwrap();
        assert_eq!(found[0].project, None);
    }

    #[test]
    fn paths_in_running_text_and_the_folders_above_them() {
        assert_eq!(
            named_paths("x C:\\a b\\c.txt, and /usr/lib/x.so:3 but not a/b or http://h/p"),
            ["C:\\a b\\c.txt", "C:\\a", "/usr/lib/x.so"]
        );
        assert_eq!(ancestors("c:\\u\\p\\"), ["c:\\u", "c:\\u\\p", "C:\\u", "C:\\u\\p"]);
        assert_eq!(ancestors("/home/u/p"), ["/home", "/home/u", "/home/u/p"]);
        assert!(ancestors("/").is_empty() && ancestors("C:\\").is_empty());
    }
}
