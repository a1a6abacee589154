//! `convdex hook session-start|prompt`: Claude Code hook commands (payload on stdin). They
//! print context in Claude Code's hook output form, or nothing; they never fail the session
//! (exit 0 whatever happens; the problem goes to stderr and to `<data dir>/hooks/<name>.json`,
//! which `convdex doctor` reads).

use std::io::Read;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Subcommand};
use convdex::{Index, RecallOptions};
use serde_json::{Value, json};

use super::Ctx;

/// Which hook.
#[derive(Debug, Subcommand)]
pub enum HookKind {
    /// `SessionStart`: the brief of this project's last sessions, decisions in force, open tasks.
    SessionStart(BriefArgs),
    /// `UserPromptSubmit`: earlier decisions and messages relevant to the prompt, or nothing.
    Prompt(PromptArgs),
}

/// Arguments of `hook session-start`.
#[derive(Debug, Args)]
pub struct BriefArgs {
    /// Token budget of the brief (cl100k_base tokens).
    #[arg(long, default_value_t = convdex::derive::brief::DEFAULT_BRIEF_TOKENS)]
    pub budget: usize,
}

/// Arguments of `hook prompt`.
#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The least relevance (0–100) a recalled hit needs.
    #[arg(long, default_value_t = convdex::DEFAULT_RECALL_RELEVANCE)]
    pub min_relevance: u8,
    /// Hits at most.
    #[arg(long, default_value_t = 3)]
    pub limit: usize,
    /// When this project recalls fewer hits than `--limit`, fill the rest with decisions of the
    /// data dir's other projects (off by default: replayed on 474 real prompts, they were never
    /// judged relevant; see `RecallOptions::other_projects`).
    #[arg(long)]
    pub other_projects: bool,
}

/// Runs a hook: never an error for the caller.
pub fn run(ctx: &Ctx, kind: HookKind) -> anyhow::Result<()> {
    let start = Instant::now();
    let name = match kind {
        HookKind::SessionStart(_) => "session-start",
        HookKind::Prompt(_) => "prompt",
    };
    let result = payload().and_then(|p| match kind {
        HookKind::SessionStart(a) => session_start(ctx, &p, a),
        HookKind::Prompt(a) => prompt(ctx, &p, a),
    });
    let printed = match &result {
        Ok(Some((event, text))) => {
            let out = json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}});
            println!("{out}");
            true
        }
        Ok(None) => false,
        Err(e) => {
            eprintln!("convdex hook {name}: {e:#}");
            false
        }
    };
    record(ctx, name, start, printed, result.as_ref().err().map(|e| format!("{e:#}")));
    Ok(())
}

/// Records a hook run in `<data dir>/hooks/<name>.json` (best effort: a hook never fails for it).
pub fn record(ctx: &Ctx, name: &str, start: Instant, printed: bool, error: Option<String>) {
    let dir = ctx.dir.join("hooks");
    let entry = json!({
        "at": chrono::Utc::now().to_rfc3339(),
        "ok": error.is_none(),
        "error": error,
        "printed": printed,
        "millis": start.elapsed().as_millis() as u64,
    });
    if std::fs::create_dir_all(&dir).is_ok() {
        let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
        if std::fs::write(&tmp, entry.to_string()).is_ok() {
            let _ = std::fs::rename(&tmp, dir.join(format!("{name}.json")));
        }
    }
}

/// Claude Code's hook payload on stdin (at most 1 MiB), as JSON.
pub fn payload() -> anyhow::Result<Value> {
    let mut input = String::new();
    std::io::stdin().take(1 << 20).read_to_string(&mut input).context("cannot read the hook input on stdin")?;
    serde_json::from_str(&input).context("hook input is not JSON (expected Claude Code's hook payload)")
}

fn field<'a>(p: &'a Value, key: &str) -> Option<&'a str> {
    p.get(key).and_then(Value::as_str).filter(|s| !s.is_empty())
}

fn open(ctx: &Ctx) -> anyhow::Result<Index> {
    // A hook must not wait long for a collection an indexing run is writing.
    let mut opts = ctx.options()?;
    opts.collection.lock_wait = std::time::Duration::from_millis(1500);
    Ok(Index::open(&ctx.dir, opts)?)
}

fn cwd(p: &Value) -> anyhow::Result<String> {
    match field(p, "cwd") {
        Some(c) => Ok(c.to_string()),
        None => Ok(std::env::current_dir().context("no `cwd` in the payload")?.to_string_lossy().into_owned()),
    }
}

type Output = Option<(&'static str, String)>;

fn session_start(ctx: &Ctx, p: &Value, a: BriefArgs) -> anyhow::Result<Output> {
    if !ctx.dir.is_dir() {
        return Ok(None);
    }
    let index = open(ctx)?;
    let Some(info) = index.project_at(&cwd(p)?)? else { return Ok(None) };
    let brief = index.session_brief(&info, field(p, "session_id"), a.budget)?;
    Ok(brief.map(|b| ("SessionStart", b)))
}

fn prompt(ctx: &Ctx, p: &Value, a: PromptArgs) -> anyhow::Result<Output> {
    let text = field(p, "prompt").unwrap_or_default().trim();
    // Slash commands and shell escapes are not questions.
    if text.is_empty() || text.starts_with('/') || text.starts_with('!') || !ctx.dir.is_dir() {
        return Ok(None);
    }
    let index = open(ctx)?;
    let Some(info) = index.project_at(&cwd(p)?)? else { return Ok(None) };
    let options = RecallOptions {
        min_relevance: a.min_relevance,
        limit: a.limit,
        other_projects: a.other_projects,
        exclude_session: field(p, "session_id").map(str::to_string),
        ..RecallOptions::default()
    };
    let hits = index.recall(&info, text, &options)?;
    if hits.is_empty() {
        return Ok(None);
    }
    let others = if hits.iter().any(|h| h.project != info.project) { " and other projects" } else { "" };
    let mut block = format!("convdex recalled from earlier sessions of {}{others}:\n", info.project);
    for h in &hits {
        let d = &h.hit.doc;
        let what = match &d.body {
            convdex::DocBody::Decision(f) => format!("decision: {}", convdex::text::one_line(&f.summary, 240)),
            convdex::DocBody::Summary(s) => format!("session summary: {}", convdex::text::one_line(&s.goal, 240)),
            convdex::DocBody::Message(m) => {
                let excerpt = convdex::text::one_line(h.hit.snippet.as_deref().unwrap_or(&d.content), 240);
                format!("{} said: {excerpt}", format!("{:?}", m.role).to_lowercase())
            }
        };
        let session = convdex::text::prefix_chars(&d.session_id, 8);
        // A decision of another project says where it was made.
        let project = if h.project == info.project { String::new() } else { format!("project {}, ", h.project) };
        block.push_str(&format!(
            "- [{}, {project}session {session}, relevance {}] {what}\n",
            d.timestamp.format("%Y-%m-%d"),
            h.hit.relevance
        ));
    }
    block.push_str("(more: the convdex MCP tools `search` and `session`)\n");
    Ok(Some(("UserPromptSubmit", block)))
}
