//! `convdex mcp`: a Model Context Protocol server over stdio (rmcp), exposing search,
//! decisions, handoff, session and index as tools. Results are compact text written for a
//! model to read: snippets, not transcripts; every hit names project, session, time and files.
//! A failing call returns a tool error with the message; the server keeps running.
//!
//! Collections are opened per call and closed after it, so a hook or a manual `convdex index`
//! can write between calls; the embedding model stays loaded.

use std::path::PathBuf;
use std::sync::Arc;

use convdex::{DecisionFilter, DocBody, DocKind, Filter, Index, IndexOptions, ProjectHit, Query, SearchMode};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

use super::render::{matched, parse_time, role, short, snippet, status_mark};

mod wire;
pub use wire::serve;

/// Arguments of the `search` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchParams {
    /// What to look for: words, an identifier, a file name, an error message, or a question in
    /// plain language. Quote a phrase ("...") to require it exactly.
    pub query: String,
    /// Only this project (its name or a prefix of it); every project when absent.
    pub project: Option<String>,
    /// Only this document type: `message`, `decision` or `summary`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Only documents with any of these tags.
    pub tags: Option<Vec<String>>,
    /// Only this domain (e.g. `backend`, `frontend`, `devops`).
    pub domain: Option<String>,
    /// Only this session (full id).
    pub session: Option<String>,
    /// Only documents that discuss this file (path relative to the project root).
    pub file: Option<String>,
    /// Only documents that discuss a file under this path prefix.
    pub file_prefix: Option<String>,
    /// Only at or after this time (YYYY-MM-DD or RFC 3339).
    pub since: Option<String>,
    /// Only at or before this time (YYYY-MM-DD or RFC 3339).
    pub until: Option<String>,
    /// Only sessions of these agents: `claude-code`, `codex`, `gemini`, `aider`.
    pub agents: Option<Vec<String>>,
    /// `hybrid` (default: words and meaning), `semantic` (meaning) or `lexical` (exact words).
    pub mode: Option<String>,
    /// Number of hits, 1 to 50 (default 8).
    pub limit: Option<usize>,
    /// Prefer newer sessions (half-life 30 days); active decisions count as new, superseded
    /// ones sink. Default false.
    pub recent: Option<bool>,
    /// Also match the query's words in English, Chinese, Japanese and Korean through the
    /// glossary (a Chinese question finds an English message by its words), and ask the
    /// meaning side with the query's glosses too when the model's ranking does. Default true;
    /// false asks with the query's own words and vector only.
    pub translate: Option<bool>,
    /// List sessions instead of messages ("which session was it?"): each ranked by its best
    /// hit, with its best hits; `limit` then counts sessions. Default false.
    pub sessions: Option<bool>,
    /// Search the team's shared memory (the team store at `$CONVDEX_TEAM_URL`) instead of this
    /// machine's history. Default false.
    pub team: Option<bool>,
}

/// Arguments of the `decisions` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionsParams {
    /// Only this project (its name or a prefix of it); every project when absent.
    pub project: Option<String>,
    /// Only decisions about this file (path relative to the project root).
    pub file: Option<String>,
    /// Only decisions made at or after this time (YYYY-MM-DD or RFC 3339).
    pub since: Option<String>,
    /// Only decisions with this tag.
    pub tag: Option<String>,
    /// Include superseded and rejected decisions (default false).
    pub all: Option<bool>,
    /// What was believed on this date (YYYY-MM-DD or RFC 3339): decisions made by then, with
    /// the status each had then.
    pub as_of: Option<String>,
    /// Number of decisions, newest first, 1 to 100 (default 20).
    pub limit: Option<usize>,
}

/// Arguments of the `handoff` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffParams {
    /// Project; the most recently active one when absent.
    pub project: Option<String>,
}

/// Arguments of the `session` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionParams {
    /// Session id, or a unique prefix of one (search hits show the first 8 characters).
    pub id: String,
    /// Only look in this project.
    pub project: Option<String>,
    /// First message to show, from 0 (default 0).
    pub offset: Option<usize>,
    /// Messages per page, 1 to 200 (default 40).
    pub limit: Option<usize>,
}

/// Arguments of the `index` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IndexParams {
    /// A history root, one project folder or one session file of Claude Code, Codex, Gemini or
    /// Aider, or a folder holding histories (looked into 6 levels down); the Claude Code
    /// history (`~/.claude/projects`) when absent.
    pub path: Option<String>,
    /// Re-index from scratch (also brings back forgotten sessions). Default false.
    pub force: Option<bool>,
}

/// Arguments of the `remember` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RememberParams {
    /// The note or decision, as it should be read later.
    pub text: String,
    /// Why, when there is a reason worth keeping.
    pub why: Option<String>,
    /// Project by name; default: the project of `dir`, else of the server's working directory.
    pub project: Option<String>,
    /// The directory whose project it belongs to (a new project when none is indexed).
    pub dir: Option<String>,
    /// Files it is about (absolute, or relative to the project).
    pub files: Option<Vec<String>>,
}

/// The server: one data directory, the model loaded on first use.
#[derive(Clone)]
pub struct Server {
    index: Arc<Index>,
    config: Option<PathBuf>,
    tool_router: ToolRouter<Server>,
}

type ToolResult = Result<String, String>;

/// Runs blocking work off the async runtime; errors become the tool error's text.
async fn blocking(f: impl FnOnce() -> anyhow::Result<String> + Send + 'static) -> ToolResult {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(s)) => Ok(s),
        Ok(Err(e)) => Err(format!("error: {e:#}")),
        Err(e) => Err(format!("error: the tool failed internally ({e}); the server is still running")),
    }
}

fn bounded(what: &str, v: Option<usize>, default: usize, max: usize) -> anyhow::Result<usize> {
    match v {
        None => Ok(default),
        Some(0) => anyhow::bail!("`{what}` must be at least 1"),
        Some(n) if n > max => anyhow::bail!("`{what}` is at most {max}"),
        Some(n) => Ok(n),
    }
}

/// The skipped collections as notes.
fn notes(skipped: &[convdex::Skipped]) -> Vec<String> {
    skipped.iter().map(ToString::to_string).collect()
}

/// A tool result with what was skipped (a damaged or busy collection) appended.
fn with_notes(mut out: String, notes: &[String]) -> String {
    for n in notes {
        out.push_str(&format!("\nnote: {n}"));
    }
    out
}

#[tool_router]
impl Server {
    /// A server over the data directory of `ctx`, with its model.
    pub fn new(ctx: &super::Ctx) -> anyhow::Result<Server> {
        let index = Arc::new(Index::open(&ctx.dir, ctx.options()?)?);
        Ok(Server { index, config: ctx.config.clone(), tool_router: Self::tool_router() })
    }

    #[tool(
        description = "Search past coding-agent conversations by words and meaning. Filters: project, type (message/decision/summary), tags, domain, session, file, file_prefix, since, until, agents (claude-code, codex, gemini, aider); `recent` prefers newer sessions; words are also matched in English, Chinese, Japanese and Korean unless `translate` is false. Returns the chance that one of the hits is an answer, then ranked hits with a relevance from 0 to 100, project, session id, time, role, files and a snippet; `sessions: true` lists sessions instead (each with its best hits); use `session` to read one in full."
    )]
    async fn search(&self, Parameters(p): Parameters<SearchParams>) -> ToolResult {
        let index = self.index.clone();
        blocking(move || {
            let filter = Filter {
                kinds: p.kind.as_deref().map(str::parse).transpose()?.into_iter().collect(),
                tags_any: p.tags.unwrap_or_default().iter().map(|t| t.to_lowercase()).collect(),
                domain: p.domain.map(|d| d.to_lowercase()),
                sessions: p.session.into_iter().collect(),
                files: p.file.into_iter().collect(),
                file_prefix: p.file_prefix,
                since: p.since.as_deref().map(|s| parse_time(s, false)).transpose()?,
                until: p.until.as_deref().map(|s| parse_time(s, true)).transpose()?,
                agents: p.agents.unwrap_or_default().iter().map(|a| a.parse()).collect::<Result<_, _>>()?,
                ..Default::default()
            };
            let mode: SearchMode = p.mode.as_deref().map(str::parse).transpose()?.unwrap_or_default();
            let mut query = Query::new(p.query);
            query.ranking = index.default_ranking();
            query.filter = filter;
            query.mode = Some(mode);
            query.limit = bounded("limit", p.limit, 8, 50)?;
            if p.recent.unwrap_or(false) {
                query.ranking.recent = Some(convdex::Recency::default());
            }
            if !p.translate.unwrap_or(true) {
                query.ranking.translation = 0.0;
                query.ranking.gloss = 0.0;
            }
            if p.team.unwrap_or(false) {
                return team_search(&index, p.project.as_deref(), &query);
            }
            let by_session = p.sessions.unwrap_or(false);
            // The data dir's warm helper answers when one runs (this process then opens no
            // collection); otherwise this long-lived process searches and keeps its model.
            let found = super::warm::search(&index, p.project.as_deref(), &query, by_session)?.0;
            let mut notes = notes(&found.skipped);
            let hits = found.found;
            notes.extend(super::render::unembedded_note(&hits));
            if by_session {
                return Ok(with_notes(sessions_text(convdex::group_sessions(hits, query.limit), &query.text), &notes));
            }
            if hits.is_empty() {
                return Ok(with_notes(
                    format!("no hits for {:?} ({mode:?} mode); try other words or fewer filters", query.text),
                    &notes,
                ));
            }
            let mut out = format!("{} hits for {:?}:\n", hits.len(), query.text);
            let relevances = hits.iter().map(|h| h.hit.relevance);
            if let Some(line) = super::render::among_line(mode, index.default_ranking(), relevances) {
                out.push_str(&format!("{line}\n"));
            }
            for (i, ProjectHit { project, hit: h }) in hits.iter().enumerate() {
                let files: Vec<&str> = h.doc.files_discussed.iter().take(4).map(|f| f.path.as_str()).collect();
                out.push_str(&format!(
                    "\n{}. relevance {} · {project} · session {} · {} · {}{} · matched {}\n   {}\n",
                    i + 1,
                    h.relevance,
                    short(&h.doc.session_id),
                    h.doc.timestamp.format("%Y-%m-%d %H:%M"),
                    role(&h.doc),
                    if files.is_empty() { String::new() } else { format!(" · files {}", files.join(", ")) },
                    matched(h),
                    h.snippet.clone().unwrap_or_else(|| snippet(&h.doc.content, 300)),
                ));
            }
            Ok(with_notes(out, &notes))
        })
        .await
    }

    #[tool(
        description = "Decisions extracted from past sessions (what was chosen, over what, why), newest first. Filters: project, file, since, tag; `all` includes superseded and rejected ones."
    )]
    async fn decisions(&self, Parameters(p): Parameters<DecisionsParams>) -> ToolResult {
        let index = self.index.clone();
        blocking(move || {
            let limit = bounded("limit", p.limit, 20, 100)?;
            let filter = DecisionFilter {
                since: p.since.as_deref().map(|s| parse_time(s, false)).transpose()?,
                file: p.file,
                tag: p.tag,
                all: p.all.unwrap_or(false),
                as_of: p.as_of.as_deref().map(|s| parse_time(s, true)).transpose()?,
            };
            let found = index.ledger(p.project.as_deref(), &filter)?;
            let notes = notes(&found.skipped);
            let rows = found.found;
            if rows.is_empty() {
                return Ok(with_notes("no decisions match".into(), &notes));
            }
            let mut out = format!(
                "{} decisions (showing {}; a candidate was extracted with less confidence: check it against its message):\n",
                rows.len(),
                rows.len().min(limit)
            );
            for e in rows.iter().take(limit) {
                let (project, d) = (&e.project, &e.decision);
                let DocBody::Decision(f) = &d.body else { continue };
                out.push_str(&format!(
                    "\n- {} · {project} · session {} · message {} · {:?} · confidence {:.2}{}{}\n  {}\n",
                    d.timestamp.format("%Y-%m-%d"),
                    short(&d.session_id),
                    f.source_message_uuid,
                    d.extraction_method,
                    f.confidence,
                    if e.trusted { "" } else { " · candidate" },
                    status_mark(d),
                    f.summary
                ));
                if let Some(r) = &e.replaced_by {
                    out.push_str(&format!("  replaced on {} by: {}\n", r.time.format("%Y-%m-%d"), r.summary));
                }
                if !d.tags.is_empty() {
                    out.push_str(&format!("  tags: {}\n", d.tags.join(", ")));
                }
                if let Some(r) = &f.reasoning {
                    out.push_str(&format!("  why: {}\n", snippet(r, 300)));
                }
                if !f.alternatives.is_empty() {
                    out.push_str(&format!("  instead of: {}\n", f.alternatives.join(", ")));
                }
                let files: Vec<&str> = d.files_discussed.iter().take(4).map(|f| f.path.as_str()).collect();
                if !files.is_empty() {
                    out.push_str(&format!("  files: {}\n", files.join(", ")));
                }
            }
            Ok(with_notes(out, &notes))
        })
        .await
    }

    #[tool(
        description = "A markdown brief of a project's latest session: the goal, what was done and decided, what is open or broken. Use it to pick up where the last session stopped."
    )]
    async fn handoff(&self, Parameters(p): Parameters<HandoffParams>) -> ToolResult {
        let index = self.index.clone();
        blocking(move || {
            let found = index.latest_handoff(p.project.as_deref())?;
            let Some((_, brief)) = found.found else {
                anyhow::bail!("no session summary to hand off: run the `index` tool first (a session whose transcript holds no request of the person's has no summary)");
            };
            Ok(with_notes(brief, &notes(&found.skipped)))
        })
        .await
    }

    #[tool(
        description = "One session by id or id prefix: its summary, then its messages in order, paged (offset, limit). Long messages are cut to a snippet."
    )]
    async fn session(&self, Parameters(p): Parameters<SessionParams>) -> ToolResult {
        let index = self.index.clone();
        blocking(move || {
            let limit = bounded("limit", p.limit, 40, 200)?;
            let offset = p.offset.unwrap_or(0);
            let found = index.find_session(&p.id, p.project.as_deref())?.found;
            let (info, coll, session) = (found.info, found.collection, found.session);
            let docs = coll.session_documents(&session)?;
            let messages: Vec<&convdex::Document> = docs.iter().filter(|d| d.kind() == DocKind::Message).collect();
            let mut out = format!("project {} · session {session} · {} messages\n", info.project, messages.len());
            if offset == 0
                && let Some(s) = docs.iter().find(|d| d.kind() == DocKind::Summary)
            {
                out.push_str(&format!("\n{}\n", s.content));
            }
            if offset >= messages.len() && !messages.is_empty() {
                anyhow::bail!("offset {offset} is past the last message ({} messages)", messages.len());
            }
            out.push('\n');
            let end = (offset + limit).min(messages.len());
            for (i, d) in messages.get(offset..end).unwrap_or_default().iter().enumerate() {
                out.push_str(&format!(
                    "[{}] {} {}: {}\n",
                    offset + i,
                    d.timestamp.format("%Y-%m-%d %H:%M"),
                    role(d),
                    snippet(&d.content, 600)
                ));
            }
            if end < messages.len() {
                out.push_str(&format!(
                    "\n(messages {offset}–{} of {}; next page: offset {end})\n",
                    end - 1,
                    messages.len()
                ));
            }
            Ok(out)
        })
        .await
    }

    #[tool(
        description = "Remember a note or decision on purpose (stored as a decision, extraction method manual): searchable at once and shown first in the next session's brief. Give `text` as it should be read later, `why` when there is a reason, `files` it is about; it goes to `project`, else the project of `dir` or of the working directory. Remembering the same text again changes nothing."
    )]
    async fn remember(&self, Parameters(p): Parameters<RememberParams>) -> ToolResult {
        let index = self.index.clone();
        blocking(move || {
            let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
            let dir = p.dir.unwrap_or(cwd);
            let target = match &p.project {
                Some(name) => convdex::RememberIn::Project(name),
                None => convdex::RememberIn::Dir(&dir),
            };
            let files = p.files.unwrap_or_default();
            let what = convdex::Remember { text: &p.text, why: p.why.as_deref(), files: &files, target, tenant: None };
            let r = convdex::remember(&index, &what)?;
            let verb = if r.new { "remembered" } else { "already remembered" };
            Ok(format!("{verb} in {} ({}): {}", r.project, r.collection, r.document.id))
        })
        .await
    }

    #[tool(
        description = "Index Claude Code transcripts incrementally: the default history, or a projects root, project folder or session file given as `path`. Returns what was indexed."
    )]
    async fn index(&self, Parameters(p): Parameters<IndexParams>) -> ToolResult {
        let index = self.index.clone();
        let config = self.config.clone();
        blocking(move || {
            let path = p.path.map(PathBuf::from).unwrap_or_else(convdex::default_history);
            if !path.exists() {
                anyhow::bail!(
                    "{} does not exist; give a history, a project folder, a session file or a folder holding them",
                    path.display()
                );
            }
            let mut options = IndexOptions { force: p.force.unwrap_or(false), ..Default::default() };
            super::apply_config(config.as_deref(), &mut options)?;
            // Other processes' searches are answered by this server while it writes.
            let report = index.while_serving(|| convdex::index_paths(&index, &[path], &options))?;
            let mut out = format!("{report}\ncollections: {}\n", report.collections.join(", "));
            for f in &report.failures {
                out.push_str(&format!("not indexed: {f}\n"));
            }
            for (file, s) in report.skipped_lines.iter().take(10) {
                out.push_str(&format!("skipped {}:{}: {}\n", file.display(), s.line, s.reason));
            }
            for p in &report.empty_paths {
                out.push_str(&super::render::no_session_note(p));
                out.push('\n');
            }
            Ok(out)
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_instructions(
            "convdex: memory of past coding-agent sessions on this machine. `search` finds messages, decisions and \
             summaries by words and meaning (filter by project, file, time, type); `decisions` lists what was decided \
             and why; `handoff` briefs the latest session; `session` reads one session; `index` indexes new sessions.",
        )
    }
}

/// The `search` tool's answer with `sessions`: a block per session, its best hits under it.
fn sessions_text(sessions: Vec<convdex::SessionFound>, text: &str) -> String {
    if sessions.is_empty() {
        return format!("no sessions for {text:?}; try other words or fewer filters");
    }
    let mut out = format!("{} sessions for {text:?}:\n", sessions.len());
    for (i, s) in sessions.iter().enumerate() {
        out.push_str(&format!(
            "\n{}. relevance {} · {} · session {} · {} of the pooled hits\n",
            i + 1,
            s.relevance,
            s.project,
            s.session_id,
            s.matched
        ));
        for h in &s.hits {
            out.push_str(&format!(
                "   - {} · {} · {}\n",
                h.doc.timestamp.format("%Y-%m-%d %H:%M"),
                role(&h.doc),
                h.snippet.clone().unwrap_or_else(|| snippet(&h.doc.content, 200))
            ));
        }
    }
    out
}

/// The `search` tool with `team: true`: the question asked of `$CONVDEX_TEAM_URL`, as text.
fn team_search(index: &convdex::Index, project: Option<&str>, query: &Query) -> anyhow::Result<String> {
    let mut q = convdex::team::TeamQuery::of(query);
    q.project = project.map(str::to_string);
    let (_, hits) = super::team::ask(index, None, &q)?;
    if hits.is_empty() {
        return Ok(format!("no hits in the team store for {:?}; try other words or fewer filters", q.text));
    }
    let mut out = format!("{} hits in the team store for {:?}:\n", hits.len(), q.text);
    let mode = query.mode.unwrap_or_default();
    if let Some(line) = super::render::among_line(mode, index.default_ranking(), hits.iter().map(|h| h.relevance)) {
        out.push_str(&format!("{line}\n"));
    }
    for (i, h) in hits.iter().enumerate() {
        out.push_str(&format!(
            "\n{}. relevance {} · {}/{} · session {} · {} · {}\n   {}\n",
            i + 1,
            h.relevance,
            h.tenant,
            h.project,
            short(&h.doc.session_id),
            h.doc.timestamp.format("%Y-%m-%d %H:%M"),
            h.doc.kind().as_str(),
            h.doc.content.chars().take(300).collect::<String>().replace('\n', " ")
        ));
    }
    Ok(out)
}
