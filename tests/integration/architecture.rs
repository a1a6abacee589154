//! The layout rules of ARCHITECTURE.md, read from the code: which module may use which (every
//! `crate::…` path outside comments counts, not only `use` lines), no circle between modules,
//! no file over 600 lines of code (tests apart), and
//! no function of the CLI over 80 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module a file belongs to, as the rules name it.
fn module_of(rel: &str) -> String {
    let rel = rel.trim_end_matches(".rs");
    match rel {
        "lexical/tokenize" => "lexical::tokenize".into(),
        "lexical/glossary" => "lexical::glossary".into(),
        "main" => "cli".into(),
        _ => rel.split('/').next().unwrap_or(rel).trim_end_matches("/mod").to_string(),
    }
}

/// The code of a file without its test module and without comment lines.
fn code_lines(text: &str) -> Vec<&str> {
    let end = text.find("\n#[cfg(test)]").unwrap_or(text.len());
    text.get(..end).unwrap_or(text).lines().filter(|l| !l.trim_start().starts_with("//")).collect()
}

/// Layers, bottom up: a module may use its own layer's modules (without a circle) and the
/// layers below, never a layer above.
fn layer(module: &str) -> u8 {
    match module {
        "error" | "doc" | "durable" | "mapped" | "ids" | "vector" | "text" | "sync" => 0,
        "ingest" | "derive" | "search" | "lexical::tokenize" | "lexical::glossary" | "setup" => 1,
        "store" | "ann" | "lexical" | "embed" | "models" | "warm" => 2,
        "collection" => 3,
        "index" => 4,
        "indexer" | "team" => 5,
        "lib" | "testutil" | "cli" => 6,
        other => panic!("module `{other}` has no layer: add it to ARCHITECTURE.md and to this table"),
    }
}

/// Uses the rules allow across one layer's modules (adapters do not use each other but for the
/// embedder finding its model files; the store reads the filter's clauses).
fn allowed_sideways(from: &str, to: &str) -> bool {
    matches!((from, to), ("embed", "models") | ("lexical", "lexical::tokenize") | ("lexical", "lexical::glossary"))
}

fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let re = regex::Regex::new(r"crate::([a-z_]+)(::([a-z_]+))?").unwrap();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
        let from = module_of(&rel);
        if from == "cli" {
            continue; // the binary's `crate` is the binary; it uses the library's public API
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for line in code_lines(&text) {
            for c in re.captures_iter(line) {
                let top = c[1].to_string();
                let to = if let Some(sub) =
                    c.get(3).filter(|m| top == "lexical" && ["tokenize", "glossary"].contains(&m.as_str()))
                {
                    format!("lexical::{}", sub.as_str())
                } else {
                    top
                };
                let known = [
                    "error",
                    "doc",
                    "ids",
                    "vector",
                    "text",
                    "ingest",
                    "derive",
                    "search",
                    "setup",
                    "store",
                    "ann",
                    "lexical",
                    "lexical::tokenize",
                    "lexical::glossary",
                    "embed",
                    "models",
                    "collection",
                    "index",
                    "indexer",
                    "team",
                    "testutil",
                ];
                if to != from && known.contains(&to.as_str()) {
                    out.entry(from.clone()).or_default().insert(to);
                }
            }
        }
    }
    out
}

#[test]
fn modules_use_only_what_their_layer_may() {
    let uses = uses();
    let mut broken = Vec::new();
    for (from, tos) in &uses {
        for to in tos {
            let (lf, lt) = (layer(from), layer(to));
            let ok =
                lt < lf || (lt == lf && (lf <= 1 || allowed_sideways(from, to))) || (from == "store" && to == "search");
            if !ok {
                broken.push(format!("{from} (layer {lf}) uses {to} (layer {lt})"));
            }
        }
    }
    assert!(broken.is_empty(), "{broken:#?}");
    // Pure modules never reach storage, indexes or the model.
    for pure in [
        "text",
        "ingest",
        "derive",
        "search",
        "lexical::tokenize",
        "lexical::glossary",
        "setup",
        "doc",
        "ids",
        "vector",
    ] {
        for adapter in ["store", "ann", "lexical", "embed", "models", "warm", "collection", "index", "indexer", "team"]
        {
            assert!(!uses.get(pure).is_some_and(|t| t.contains(adapter)), "{pure} uses {adapter}");
        }
    }
}

#[test]
fn no_circle_between_modules() {
    let uses = uses();
    fn visit(n: &str, g: &BTreeMap<String, BTreeSet<String>>, path: &mut Vec<String>, done: &mut BTreeSet<String>) {
        if let Some(i) = path.iter().position(|x| x == n) {
            panic!("circle: {} -> {n}", path[i..].join(" -> "));
        }
        if !done.insert(n.to_string()) {
            return;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            visit(m, g, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for n in uses.keys() {
        visit(n, &uses, &mut Vec::new(), &mut done);
    }
}

#[test]
fn files_and_cli_functions_stay_small() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(src()).unwrap().to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let end = text.find("\n#[cfg(test)]").unwrap_or(text.len());
        let code = text.get(..end).unwrap_or(&text).lines().count();
        if code > 600 {
            long.push(format!("{rel}: {code} lines"));
        }
        if rel == "main.rs" || rel.starts_with("cli/") {
            let lines: Vec<&str> = text.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                let t = l.trim_start();
                if t.starts_with("fn ") || t.starts_with("pub fn ") || t.starts_with("async fn ") {
                    let indent = l.len() - t.len();
                    let close = format!("{}}}", " ".repeat(indent));
                    let n = lines[i..].iter().position(|x| *x == close).unwrap_or(0) + 1;
                    if n > 80 {
                        long.push(format!("{rel}:{}: a function of {n} lines", i + 1));
                    }
                }
            }
        }
    }
    assert!(long.is_empty(), "{long:#?}");
}
