//! `convdex migrate`: re-embed collections built with another model (also run first by
//! `convdex index`), and import again the conversations imported before each turn kept the
//! turn it answers.

use clap::Args;
use convdex::{Index, MigrationProgress};

use super::{Ctx, print_json, skipped};

/// Re-embed collections built with another model than the configured one, and import again
/// from their stored texts the conversations imported before each turn kept the turn it answers.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Only this project's collections.
    #[arg(long)]
    pub project: Option<String>,
    /// Only say which collections need it and how far they got.
    #[arg(long)]
    pub dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex migrate`.
pub fn run(ctx: &Ctx, a: MigrateArgs) -> anyhow::Result<()> {
    let index = ctx.bulk_index()?;
    if a.dry_run {
        let found = index.migrations(a.project.as_deref())?;
        skipped(&found.skipped);
        let imports = stale_imports(&index, a.project.as_deref())?;
        if a.json {
            let mut rows: Vec<_> = found.found.iter().map(progress_json).collect();
            rows.extend(
                imports.iter().map(
                    |(c, ids)| serde_json::json!({"kind": "imports", "collection": c, "conversations": ids.len()}),
                ),
            );
            return print_json(&rows);
        }
        if found.found.is_empty() {
            println!("every collection holds {}'s vectors", index.embedder()?.model_id());
        }
        for p in &found.found {
            println!("{}: {} → {}, {} of {} documents re-embedded", p.collection, p.from, p.to, p.done, p.total);
        }
        for (c, ids) in &imports {
            println!("{c}: {} imported conversations to import again with the turn each turn answers", ids.len());
        }
        return Ok(());
    }
    // Other processes' searches are answered by this one while it re-embeds.
    let (reports, imports) = index.while_serving(|| -> anyhow::Result<_> {
        let reports = migrate_all(&index, a.project.as_deref(), a.json)?;
        Ok((reports, convdex::refresh_answering_all(&index, a.project.as_deref())?))
    })?;
    skipped(&imports.skipped);
    if a.json {
        let mut rows: Vec<_> = reports
            .iter()
            .map(|r| {
                serde_json::json!({"kind": "model", "from": r.from, "to": r.to, "documents": r.documents,
                    "embedded": r.embedded, "cached": r.cached, "resumed_at": r.resumed_at, "finished": r.finished})
            })
            .collect();
        rows.extend(imports.found.iter().map(|(c, r)| {
            serde_json::json!({"kind": "imports", "collection": c, "conversations": r.conversations,
                "messages": r.messages})
        }));
        return print_json(&rows);
    }
    if reports.is_empty() {
        let nothing = if imports.found.is_empty() { "nothing to migrate: " } else { "" };
        println!("{nothing}every collection holds {}'s vectors", index.embedder()?.model_id());
    }
    for (c, r) in &imports.found {
        println!(
            "{c}: {} imported conversations ({} messages) imported again with the turn each turn answers",
            r.conversations, r.messages
        );
    }
    Ok(())
}

/// Collections with conversations imported before each turn kept the turn it answers, and
/// their ids (collections that cannot be read are left to the model migration's report).
fn stale_imports(index: &Index, project: Option<&str>) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let mut out = Vec::new();
    for (_, c) in index.open_collections(project)?.collections {
        if let Ok(ids) = convdex::conversations_without_answering(&c)
            && !ids.is_empty()
        {
            out.push((c.name().to_string(), ids));
        }
    }
    Ok(out)
}

fn progress_json(p: &MigrationProgress) -> serde_json::Value {
    serde_json::json!({"kind": "model", "collection": p.collection, "from": p.from, "to": p.to, "done": p.done, "total": p.total})
}

/// Migrates every collection that needs it, with one progress line per batch on a terminal
/// (rate and time left) and one line per collection otherwise; `quiet` prints nothing.
pub fn migrate_all(index: &Index, project: Option<&str>, quiet: bool) -> anyhow::Result<Vec<convdex::MigrationReport>> {
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut last = String::new();
    let found = index.migrate(project, &mut |p| {
        if quiet {
            return std::ops::ControlFlow::Continue(());
        }
        let rate = p.embedded as f64 / p.seconds.max(1e-3);
        let left = p.total.saturating_sub(p.done);
        let per_doc = p.seconds / (p.this_run.max(1) as f64);
        let line = format!(
            "migrating {}: {} of {} documents ({} → {}), {rate:.0} chunks/s, about {:.0} s left",
            p.collection,
            p.done,
            p.total,
            p.from,
            p.to,
            per_doc * left as f64
        );
        if tty {
            eprint!("\r\x1b[2K{line}");
        }
        last = line;
        std::ops::ControlFlow::Continue(())
    })?;
    if !quiet && !last.is_empty() {
        if tty {
            eprintln!();
        } else {
            eprintln!("{last}");
        }
    }
    skipped(&found.skipped);
    Ok(found.found)
}
