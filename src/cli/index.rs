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
    /// Print the report as JSON (with every transcript file seen and what became of it).
    #[arg(long)]
    pub json: bool,
    /// Only find what would be indexed (new or changed sessions) and account for every file,
    /// writing nothing.
    #[arg(long, conflicts_with = "hook")]
    pub dry_run: bool,
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
        dry_run: a.dry_run,
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
    if a.dry_run {
        let report = convdex::index_paths(&index, &paths, &options).context("indexing failed")?;
        return print_report(&report, explicit, a.json);
    }
    // Other processes' searches are answered by this one while it writes: they never wait
    // for the collections it holds.
    index.while_serving(|| index_and_embed(&index, &paths, &options, start, explicit, a.json))
}

/// The run: words first, then the vectors, then the report.
fn index_and_embed(
    index: &Index,
    paths: &[PathBuf],
    options: &IndexOptions,
    start: std::time::Instant,
    explicit: bool,
    json: bool,
) -> anyhow::Result<()> {
    // Collections built with another model move to the configured one first (resumable; they
    // answer with their old model until then).
    super::migrate::migrate_all(index, None, json)?;
    let tty = !json && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut report = words_first(index, paths, options, tty)?;
    let words = start.elapsed().as_secs_f64();
    report.words_seconds = Some(words);
    if tty {
        eprintln!("searchable by words after {words:.1} s; now embedding");
    }
    let embedded = embed_pending(index, tty)?;
    // Conversations imported before each turn kept the turn it answers are imported again
    // (once per collection; afterwards a flag in its metadata says there is nothing to do).
    // (A collection it cannot read was reported by the passes above.)
    let imports = convdex::refresh_answering_all(index, None)?;
    if !json {
        for (c, r) in &imports.found {
            eprintln!("{c}: {} imported conversations imported again with the turn each turn answers", r.conversations);
        }
    }
    report.chunks += embedded.iter().map(|r| r.chunks).sum::<usize>();
    report.embedded += embedded.iter().map(|r| r.embedded).sum::<usize>();
    report.elapsed = start.elapsed();
    report.seconds = report.elapsed.as_secs_f64();
    print_report(&report, explicit, json)
}

/// The run's report: failures and warnings on stderr (every one), then the report as a line
/// or as JSON.
fn print_report(report: &convdex::IndexReport, explicit: bool, json: bool) -> anyhow::Result<()> {
    for f in &report.failures {
        problem(format!("not indexed: {f}"));
    }
    // A file that looks like a session and yielded nothing is said, never passed over.
    for f in report.files.iter().filter(|f| f.outcome == convdex::FileOutcome::Empty) {
        problem(format!("no message in {}: {}", f.path.display(), f.reason.as_deref().unwrap_or("")));
    }
    // A path given that holds nothing is most likely the wrong path (the default ones may
    // rightly be empty).
    for p in report.empty_paths.iter().filter(|_| explicit) {
        eprintln!("{}", super::render::no_session_note(p));
    }
    if json {
        return print_json(report);
    }
    for (file, s) in report.skipped_lines.iter().take(20) {
        eprintln!("skipped {}:{}: {}", file.display(), s.line, s.reason);
    }
    if report.skipped_lines.len() > 20 {
        eprintln!("… and {} more skipped lines (`--json` lists them)", report.skipped_lines.len() - 20);
    }
    let left_out = report.files.iter().filter(|f| f.outcome == convdex::FileOutcome::LeftOut).count();
    if left_out > 0 {
        eprintln!("{left_out} files left out on purpose (internal agents, second copies; `--json` says why for each)");
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
            let rate = p.pass_done as f64 / p.seconds.max(1e-3);
            let left = p.pass_total.saturating_sub(p.pass_done) as f64 / rate.max(1e-3);
            eprint!(
                "\r\x1b[2Kembedding, newest first: {} of {} documents, {rate:.1}/s, about {left:.0} s left ({})",
                p.pass_done, p.pass_total, p.collection
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
    // Searches from other processes (the next prompt's hook) are answered by this one while
    // it writes the session.
    index.while_serving(|| convdex::index_paths(&index, &[path], &options)).context("indexing failed")?;
    Ok(())
}
