//! `convdex doctor [--repair]`: verify every collection and the model; rebuild damaged ones.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use convdex::IndexOptions;

use super::{Ctx, problem};

/// Verify every collection (every page of its store, its derived indexes) and the model; with
/// --repair, rebuild damaged collections from what can still be read and index their
/// transcripts again.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Rebuild damaged collections (the damaged files are kept beside them).
    #[arg(long)]
    pub repair: bool,
    /// Claude Code projects root to compare with the index and to read transcripts from when
    /// repairing (default: every agent's history found on this machine; ~/.claude/projects, or
    /// $CLAUDE_CONFIG_DIR/projects, when repairing).
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `convdex doctor`: every collection opened (which repairs what redb and the derived-index
/// checks repair on their own), the damaged ones rebuilt with `--repair`, and the model checked.
pub fn run(ctx: &Ctx, a: DoctorArgs) -> anyhow::Result<()> {
    let DoctorArgs { repair, history, json } = a;
    let index = ctx.index()?;
    // Asked first: opening the collections below asks a helper that holds them to let go.
    let warm = warm_report(&index);
    let mut rows = Vec::new();
    for info in index.collections()? {
        // No seal: the open verifies every page of the store and the lexical index's checksums,
        // whatever the files' sizes and times say.
        let _ = std::fs::remove_file(info.dir.join("SEAL"));
        // Every document read back too: bit rot inside a record passes redb's page checks.
        let opened =
            index.collection(&info.tenant, &info.project).and_then(|c| c.guarded(|c| c.verify_documents()).map(|_| c));
        let (state, detail) = match opened {
            Ok(c) => ("ok", notes(&c)),
            Err(e @ convdex::Error::Damaged { .. }) if repair => {
                let report = index.repair(&info).context("repair failed")?;
                let mut line = report.to_string();
                // Read the transcripts again: the repaired collection has no fingerprints, so its
                // sessions whose transcripts still exist are indexed again (the other projects'
                // sessions are unchanged and cost a `stat`).
                let root = history.clone().unwrap_or_else(convdex::default_history);
                if root.is_dir() {
                    let options = ctx.index_options(IndexOptions::default())?;
                    let r = convdex::index_paths(&index, &[root], &options)?;
                    line.push_str(&format!("; transcripts indexed again: {r}"));
                }
                eprintln!("was damaged: {}", e.chain());
                ("repaired", line)
            }
            Err(e) => {
                problem(format!("{}: {}", info.name, e.chain()));
                let state = match e {
                    convdex::Error::InUse { .. } => "busy",
                    convdex::Error::LockNotAFile { .. } => "blocked",
                    _ => "damaged",
                };
                (state, e.chain())
            }
        };
        rows.push(serde_json::json!({"collection": info.name, "state": state, "detail": detail}));
    }
    let spec = ctx.options()?.embed.spec()?;
    let located = match spec.kind {
        convdex::models::ModelKind::Onnx => convdex::models::locate_model(None, spec).map(|f| f.dir),
        convdex::models::ModelKind::Static => convdex::models::locate_static(None, spec).map(|(t, _)| t),
    };
    let model = match located {
        Ok(dir) => serde_json::json!({"state": "ok", "dir": dir}),
        Err(e) => {
            problem(format!("model: {e}"));
            serde_json::json!({"state": "missing", "detail": e.to_string()})
        }
    };
    let glossary = glossary_report(ctx, &index);
    let set_aside = index.set_aside()?;
    let data_dir = serde_json::json!({"path": ctx.dir, "bytes": index.bytes_on_disk(), "set_aside": set_aside});
    let out = serde_json::json!({
        "collections": rows,
        "model": model,
        "hooks": hooks(ctx),
        "history": behind(ctx, &index, history),
        "warm": warm,
        "glossary": glossary,
        "data_dir": data_dir,
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_text(&out, repair);
    }
    Ok(())
}

/// The glossary's concepts (built in, from the data directory's file) and the file's lines left
/// out, each also a problem.
fn glossary_report(ctx: &Ctx, index: &convdex::Index) -> serde_json::Value {
    let own = ctx.dir.join(convdex::GLOSSARY_FILE);
    let skipped: Vec<serde_json::Value> = index
        .glossary_skipped()
        .iter()
        .map(|s| {
            problem(format!("{}, line {}: {}", own.display(), s.line, s.reason));
            serde_json::json!({"line": s.line, "reason": s.reason})
        })
        .collect();
    serde_json::json!({
        "state": if skipped.is_empty() { "ok" } else { "skipped" },
        "concepts": index.options().collection.glossary.len(),
        "builtin": convdex::Glossary::builtin().len(),
        "own": own.exists().then_some(&own),
        "skipped": skipped,
    })
}

/// The report `--json` prints, as lines of text.
fn print_text(out: &serde_json::Value, repair: bool) {
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let rows = out["collections"].as_array().cloned().unwrap_or_default();
    for r in &rows {
        let detail = text(&r["detail"]);
        let detail = if detail.is_empty() { detail } else { format!(": {detail}") };
        println!("{:<9} {}{detail}", text(&r["state"]), text(&r["collection"]));
    }
    let model = &out["model"];
    println!(
        "{:<9} model{}",
        text(&model["state"]),
        model["dir"].as_str().map(|d| format!(" in {d}")).unwrap_or_default()
    );
    print_hooks(&out["hooks"]);
    let behind = &out["history"];
    println!("{:<9} history: {}", text(&behind["state"]), text(&behind["detail"]));
    for p in behind["sessions"].as_array().into_iter().flatten().take(10) {
        println!("          {}", text(p));
    }
    let warm = &out["warm"];
    println!("{:<9} warm helper: {}", text(&warm["state"]), text(&warm["detail"]));
    let g = &out["glossary"];
    let (all, builtin) = (g["concepts"].as_u64().unwrap_or(0), g["builtin"].as_u64().unwrap_or(0));
    let own = g["own"].as_str().map(|p| format!(", {} from {p}", all.saturating_sub(builtin))).unwrap_or_default();
    println!("{:<9} glossary: {all} concepts ({builtin} built in{own})", text(&g["state"]));
    for s in g["skipped"].as_array().into_iter().flatten() {
        println!("          line {} left out: {}", s["line"], text(&s["reason"]));
    }
    let dir = &out["data_dir"];
    println!("{:<9} data dir {} ({:.1} MB)", "", text(&dir["path"]), dir["bytes"].as_f64().unwrap_or(0.0) / 1e6);
    for kept in dir["set_aside"].as_array().into_iter().flatten() {
        println!(
            "{:<9} {} ({:.1} MB): damaged files a repair moved aside; delete the folder once nothing in it is needed",
            "kept",
            text(&kept["dir"]),
            kept["bytes"].as_f64().unwrap_or(0.0) / 1e6
        );
    }
    if !repair && rows.iter().any(|r| r["state"] == "damaged") {
        println!("run `convdex doctor --repair` to rebuild the damaged collections");
    }
}

/// Sessions on disk that are not indexed, or changed since they were (a dry run of `convdex
/// index`: nothing written).
fn behind(ctx: &Ctx, index: &convdex::Index, history: Option<PathBuf>) -> serde_json::Value {
    let paths: Vec<PathBuf> = match history {
        Some(p) => vec![p],
        None => convdex::default_paths(),
    };
    let paths: Vec<PathBuf> = paths.into_iter().filter(|p| p.exists()).collect();
    if paths.is_empty() {
        return serde_json::json!({"state": "none", "detail": "no history found on this machine (give --history)", "sessions": []});
    }
    let report = ctx
        .index_options(IndexOptions { dry_run: true, ..Default::default() })
        .and_then(|o| Ok(convdex::index_paths(index, &paths, &o)?));
    // Files that look like sessions and gave nothing: said every time, never passed over.
    if let Ok(r) = &report {
        for f in r.files.iter().filter(|f| f.outcome == convdex::FileOutcome::Empty) {
            problem(format!("no message in {}: {}", f.path.display(), f.reason.as_deref().unwrap_or("")));
        }
    }
    match report {
        Ok(r) if r.would_index.is_empty() => serde_json::json!({
            "state": "ok",
            "detail": format!("{} sessions on disk, all indexed and unchanged", r.sessions_skipped),
            "sessions": [],
        }),
        Ok(r) => {
            problem(format!(
                "{} sessions on disk are not indexed or changed since: run `convdex index`",
                r.would_index.len()
            ));
            serde_json::json!({
                "state": "behind",
                "detail": format!(
                    "{} sessions not indexed, {} changed since they were, {} up to date: run `convdex index`",
                    r.sessions_new, r.sessions_appended, r.sessions_skipped
                ),
                "sessions": r.would_index,
            })
        }
        Err(e) => serde_json::json!({"state": "unknown", "detail": format!("{e:#}"), "sessions": []}),
    }
}

/// What opening a collection repaired on its own, work it still has pending, and a migration
/// it still needs.
fn notes(c: &convdex::Collection) -> String {
    let mut notes = Vec::new();
    if let Ok(n) = c.pending_vectors()
        && n > 0
    {
        notes.push(format!(
            "{n} documents wait for their vectors (searchable by words already); `convdex index` embeds them"
        ));
    }
    let graph = match c.vector_index_state() {
        Ok(s) => s.clone(),
        Err(e) => {
            notes.push(format!("graph not loaded ({e})"));
            convdex::VectorIndexState::Loaded
        }
    };
    if let Ok(n @ 1..) = c.requeue_damaged_vectors() {
        notes.push(format!(
            "{n} documents' vectors were damaged on disk; they are no longer served and `convdex index` embeds them again"
        ));
    }
    if let Ok(Some(why)) = c.mend_graph_links() {
        notes.push(format!("graph links damaged ({why}); rebuilt from the vectors and saved"));
    }
    for (what, s) in [("graph", &graph), ("lexical index", c.lexical_index_state())] {
        if let convdex::VectorIndexState::Rebuilt(r) = s
            && *r != convdex::RebuildReason::Missing
        {
            notes.push(format!("{what} rebuilt ({r:?})"));
        }
    }
    if let Ok(Some(p)) = c.migration_progress() {
        notes.push(format!(
            "holds {}'s vectors ({} of {} documents re-embedded for {}); `convdex migrate` or `convdex index` moves it",
            p.from, p.done, p.total, p.to
        ));
    }
    if let Ok(ids) = convdex::conversations_without_answering(c)
        && !ids.is_empty()
    {
        notes.push(format!(
            "{} imported conversations lack the turn each turn answers (imported before 2026-11-26); `convdex index` or `convdex migrate` imports them again from the stored texts",
            ids.len()
        ));
    }
    notes.join("; ")
}

/// Each hook: installed in Claude Code's settings or not, and how its last run went.
pub(crate) fn hooks(ctx: &Ctx) -> serde_json::Value {
    let settings = super::install::claude_files().ok().and_then(|(s, _)| super::install::read_json(&s).ok());
    let installed = settings.map(|(_, v)| convdex::setup::installed_hooks(&v)).unwrap_or_default();
    let mut out = Vec::new();
    for (event, args, _) in convdex::setup::HOOKS {
        // `index --hook` (SessionEnd) records its runs as `session-end`.
        let name = if args == "index --hook" { "session-end" } else { args.trim_start_matches("hook ") };
        let log = std::fs::read_to_string(ctx.dir.join("hooks").join(format!("{name}.json"))).ok();
        let last: Option<serde_json::Value> = log.and_then(|t| serde_json::from_str(&t).ok());
        let is_in = installed.iter().any(|(e, _)| *e == event);
        let failed = last.as_ref().is_some_and(|l| l["ok"] == false);
        let state = match (is_in, failed) {
            (false, _) => "missing",
            (true, true) => "failing",
            (true, false) => "ok",
        };
        let mut detail = event.to_string();
        if !is_in {
            detail.push_str(": not installed; run `convdex install`");
        }
        if let Some(l) = &last {
            detail.push_str(&format!("; last run {} ({} ms)", l["at"].as_str().unwrap_or("?"), l["millis"]));
            if let Some(e) = l["error"].as_str() {
                problem(format!("hook {event} failed last time: {e}"));
                detail.push_str(&format!(": {e}"));
            }
        }
        out.push(serde_json::json!({"event": event, "state": state, "detail": detail, "last_run": last}));
    }
    serde_json::Value::Array(out)
}

fn print_hooks(hooks: &serde_json::Value) {
    for h in hooks.as_array().into_iter().flatten() {
        let (state, detail) = (h["state"].as_str().unwrap_or_default(), h["detail"].as_str().unwrap_or_default());
        println!("{state:<9} hook {detail}");
    }
}

/// Whether a warm helper serves this data directory, and what it holds (not a problem either
/// way: searches run in their own process without one).
fn warm_report(index: &convdex::Index) -> serde_json::Value {
    match index.warm_status() {
        Some(w) => serde_json::json!({
            "state": "running",
            "detail": format!(
                "pid {}, convdex {}, model {}, {} collections open, {} searches, idle {} s (`convdex warm --stop` stops it)",
                w.pid, w.version, w.model, w.collections, w.searches, w.idle_seconds
            ),
            "status": w,
        }),
        None if !super::warm::enabled() => serde_json::json!({
            "state": "off",
            "detail": format!("{} turns it off; searches load the model in their own process", super::warm::WARM_ENV),
        }),
        None => serde_json::json!({
            "state": "none",
            "detail": "not running; the next semantic or hybrid search starts one (`convdex warm` runs it in the foreground)",
        }),
    }
}
