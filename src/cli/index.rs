//! `convdex index [PATH…]` and `convdex index --hook` (a Claude Code hook payload on stdin).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use convdex::{Index, IndexOptions};

use super::{Ctx, print_json, problem};

/// Index coding-agent histories: Claude Code, Codex CLI, Gemini CLI and Aider (default: every
/// agent's history found: ~/.claude/projects, ~/.codex/sessions, ~/.gemini/tmp, and the Aider
/// histories of the projects they name).
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// A history root (for Claude Code also its config directory, `~/.claude`, or a folder
    /// holding one as `.claude/`), one project folder, or one session file, of any agent.
    pub paths: Vec<PathBuf>,
    /// Re-index every session from scratch.
    #[arg(long)]
    pub force: bool,
    /// Tenant of the collections (default: the OS user).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Skip session files whose path contains this string (repeatable).
    #[arg(long)]
    pub exclude: Vec<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Claude Code hook mode (`SessionEnd` / `Stop`): read the hook's JSON from stdin and
    /// index the session in its `transcript_path`, quietly. Never fails the user's session:
    /// problems go to stderr and the exit code is 0.
    #[arg(long, conflicts_with = "paths")]
    pub hook: bool,
}

/// Runs `convdex index`.
pub fn run(ctx: &Ctx, a: IndexArgs) -> anyhow::Result<()> {
    // Words first (every session searchable by words, filters, decisions at once), vectors
    // after; the hook indexes one session, embedded at once.
    let options = ctx.index_options(IndexOptions {
        force: a.force,
        tenant: a.tenant,
        exclude: a.exclude,
        defer_vectors: !a.hook,
        ..Default::default()
    })?;
    if a.hook {
        let start = std::time::Instant::now();
        let result = hook(ctx, options);
        if let Err(e) = &result {
            eprintln!("convdex hook: {e:#}");
        }
        super::hook::record(ctx, "session-end", start, false, result.err().map(|e| format!("{e:#}")));
        return Ok(());
    }
    // No path: every agent's history found on this machine (Claude Code's when none is).
    let explicit = !a.paths.is_empty();
    let paths = match (a.paths.is_empty(), convdex::default_paths()) {
        (false, _) => a.paths,
        (true, found) if !found.is_empty() => found,
        (true, _) => vec![convdex::default_history()],
    };
    let start = std::time::Instant::now();
    let index = ctx.bulk_index()?;
    // Collections built with another model move to the configured one first (resumable; they
    // answer with their old model until then).
    super::migrate::migrate_all(&index, None, a.json)?;
    let tty = !a.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut report = words_first(&index, &paths, &options, tty)?;
    let words = start.elapsed().as_secs_f64();
    report.words_seconds = Some(words);
    if tty {
        eprintln!("searchable by words after {words:.1} s; now embedding");
    }
    let embedded = embed_pending(&index, tty)?;
    // Conversations imported before each turn kept the turn it answers are imported again
    // (once per collection; afterwards a flag in its metadata says there is nothing to do).
    // (A collection it cannot read was reported by the passes above.)
    let imports = convdex::refresh_answering_all(&index, None)?;
    if !a.json {
        for (c, r) in &imports.found {
            eprintln!("{c}: {} imported conversations imported again with the turn each turn answers", r.conversations);
        }
    }
    report.chunks += embedded.iter().map(|r| r.chunks).sum::<usize>();
    report.embedded += embedded.iter().map(|r| r.embedded).sum::<usize>();
    report.elapsed = start.elapsed();
    report.seconds = report.elapsed.as_secs_f64();
    for f in &report.failures {
        problem(format!("not indexed: {f}"));
    }
    // A path given that holds nothing is most likely the wrong path (the default ones may
    // rightly be empty).
    for p in report.empty_paths.iter().filter(|_| explicit) {
        eprintln!("{}", super::render::no_session_note(p));
    }
    if a.json {
        return print_json(&report);
    }
    for (file, s) in report.skipped_lines.iter().take(20) {
        eprintln!("skipped {}:{}: {}", file.display(), s.line, s.reason);
    }
    println!("{report}");
    println!("collections: {}", report.collections.join(", "));
    Ok(())
}

/// The indexing pass (documents and words; vectors pending when `options` defer them), with a
/// progress bar on a terminal.
fn words_first(
    index: &Index,
    paths: &[PathBuf],
    options: &IndexOptions,
    tty: bool,
) -> anyhow::Result<convdex::IndexReport> {
    let bar = tty.then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} sessions {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let report = convdex::index_paths_with_progress(index, paths, options, &mut |p| {
        if let Some(b) = &bar {
            b.set_length(p.total as u64);
            b.set_position(p.done as u64);
            b.set_message(convdex::text::prefix_chars(p.session, 8).to_string());
        }
    })
    .context("indexing failed")?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(report)
}

/// Embeds what the indexing pass left pending, with a progress line (rate, time left) on a
/// terminal. Resumable: a kill or Ctrl-C loses at most one batch.
fn embed_pending(index: &Index, tty: bool) -> anyhow::Result<Vec<convdex::EmbedReport>> {
    let found = index.embed_pending(None, &mut |p| {
        if tty {
            let rate = p.done as f64 / p.seconds.max(1e-3);
            let left = p.total.saturating_sub(p.done) as f64 / rate.max(1e-3);
            eprint!(
                "\r\x1b[2Kembedding {}: {} of {} documents, {rate:.1}/s, about {left:.0} s left",
                p.collection, p.done, p.total
            );
        }
        std::ops::ControlFlow::Continue(())
    })?;
    if tty {
        eprintln!();
    }
    super::skipped(&found.skipped);
    Ok(found.found)
}

/// `convdex index --hook`: the hook's JSON on stdin names the transcript to index.
fn hook(ctx: &Ctx, options: IndexOptions) -> anyhow::Result<()> {
    let v = super::hook::payload()?;
    let path = v
        .get("transcript_path")
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.is_empty())
        .context("hook input has no `transcript_path`")?;
    let path = PathBuf::from(path);
    if !path.is_file() {
        anyhow::bail!("transcript {} does not exist", path.display());
    }
    // A hook runs in the background: wait longer for a collection another process is writing
    // (an MCP server's `index`, a manual run) than an interactive command would.
    let mut opts = ctx.bulk_options()?;
    opts.collection.lock_wait = std::time::Duration::from_secs(30);
    let index = Index::open(&ctx.dir, opts)?;
    convdex::index_paths(&index, &[path], &options).context("indexing failed")?;
    Ok(())
}
