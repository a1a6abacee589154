//! The read and write operations behind both front ends, the CLI and the MCP server: each takes
//! plain arguments and returns data; printing is the caller's business.

use std::sync::Arc;

use anyhow::Context;
use chrono::{DateTime, Utc};
use convdex::{Collection, CollectionInfo, DocBody, DocKind, Document, Hit, Index, IndexOptions, SearchMode};
use serde_json::{Value, json};

/// Where the front ends report what they skipped: the CLI prints a warning and exits with
/// "done with problems"; the MCP server adds a note to the tool's result.
pub type Warn<'a> = &'a mut dyn FnMut(String);

/// The collections to read: one project's (matched by name or name prefix), or all. A
/// collection that cannot be opened (busy, damaged) is reported through `warn` and left out;
/// it is an error only when nothing could be opened.
pub fn collections(
    index: &Index,
    project: Option<&str>,
    warn: Warn<'_>,
) -> anyhow::Result<Vec<(CollectionInfo, Arc<Collection>)>> {
    let opened = index.open_collections(project)?;
    if opened.collections.is_empty() && !opened.skipped.is_empty() {
        let why: Vec<String> = opened.skipped.iter().map(ToString::to_string).collect();
        anyhow::bail!("no collection could be opened:\n  {}", why.join("\n  "));
    }
    for s in &opened.skipped {
        warn(s.to_string());
    }
    if opened.collections.is_empty() {
        match project.map(convdex::normalize_name) {
            Some(p) => anyhow::bail!("no collection for project `{p}`; `convdex stats` lists them"),
            None => anyhow::bail!(
                "nothing is indexed in {} yet; run `convdex index` (or the MCP `index` tool) first",
                index.root().display()
            ),
        }
    }
    Ok(opened.collections)
}

/// Runs `f` on each collection. A collection whose files fail (damaged pages met while
/// reading, say) is reported through `warn` and the others go on; any other error (a bad
/// request) is returned at once.
pub fn each<T>(
    colls: &[(CollectionInfo, Arc<Collection>)],
    warn: Warn<'_>,
    mut f: impl FnMut(&CollectionInfo, &Collection) -> convdex::Result<T>,
) -> anyhow::Result<Vec<T>> {
    let mut out = Vec::new();
    for (info, c) in colls {
        match c.guarded(|c| f(info, c)) {
            Ok(v) => out.push(v),
            Err(e) if e.is_collection_fault() => warn(format!("skipped collection {}: {}", info.name, e.chain())),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

/// RFC 3339, or `YYYY-MM-DD` (start of the day, or its end when `end_of_day`).
pub fn parse_time(s: &str, end_of_day: bool) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.to_utc());
    }
    let d = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
        .with_context(|| format!("`{s}` is not a date; use YYYY-MM-DD or RFC 3339"))?;
    let t = if end_of_day { d.and_hms_milli_opt(23, 59, 59, 999) } else { d.and_hms_opt(0, 0, 0) };
    Ok(t.context("valid time")?.and_utc())
}

/// Whitespace collapsed, cut at `max` characters with an ellipsis.
pub fn snippet(text: &str, max: usize) -> String {
    convdex::text::one_line(text, max)
}

/// A search across projects.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    pub query: String,
    pub project: Option<String>,
    pub kind: Option<DocKind>,
    pub tags: Vec<String>,
    pub domain: Option<String>,
    pub session: Option<String>,
    pub file: Option<String>,
    pub file_prefix: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    pub mode: SearchMode,
    pub limit: usize,
}

/// Runs a search in every selected collection and merges the hits by score.
pub fn search(index: &Index, r: &SearchRequest, warn: Warn<'_>) -> anyhow::Result<Vec<(String, Hit)>> {
    let colls = collections(index, r.project.as_deref(), warn)?;
    let mut all = Vec::new();
    let per = each(&colls, warn, |info, c| {
        let mut b = c.search(&r.query).mode(r.mode).limit(r.limit);
        if let Some(k) = r.kind {
            b = b.kind(k);
        }
        if !r.tags.is_empty() {
            b = b.tags_any(r.tags.clone());
        }
        if let Some(d) = &r.domain {
            b = b.domain(d);
        }
        if let Some(s) = &r.session {
            b = b.session(s);
        }
        if let Some(f) = &r.file {
            b = b.file(f);
        }
        if let Some(f) = &r.file_prefix {
            b = b.file_prefix(f);
        }
        if let Some(s) = r.since {
            b = b.since(s);
        }
        if let Some(u) = r.until {
            b = b.until(u);
        }
        Ok(b.run()?.into_iter().map(|h| (info.project.clone(), h)).collect::<Vec<_>>())
    })?;
    all.extend(per.into_iter().flatten());
    all.sort_by(|x, y| y.1.score.total_cmp(&x.1.score));
    all.truncate(r.limit);
    Ok(all)
}

/// `user` / `assistant` for messages, the document type otherwise.
pub fn role(d: &Document) -> &str {
    match &d.body {
        DocBody::Message(m) => m.role.as_str(),
        _ => d.kind().as_str(),
    }
}

/// One hit as JSON (the CLI's `--json` shape).
pub fn hit_json(project: &str, h: &Hit) -> Value {
    json!({
        "project": project, "score": h.score, "session": h.doc.session_id, "id": h.doc.id,
        "type": h.doc.kind().as_str(), "time": h.doc.timestamp.to_rfc3339(),
        "files": h.doc.files_discussed.iter().map(|f| &f.path).collect::<Vec<_>>(),
        "signals": {
            "semantic": h.signals.semantic, "semantic_rank": h.signals.semantic_rank,
            "lexical": h.signals.lexical, "lexical_rank": h.signals.lexical_rank,
        },
        "snippet": h.snippet,
        "content": h.doc.content,
    })
}

/// Which signals found a hit, in words.
pub fn matched(h: &Hit) -> &'static str {
    match (h.signals.semantic_rank.is_some(), h.signals.lexical.is_some()) {
        (true, true) => "meaning+words",
        (false, true) => "words",
        _ => "meaning",
    }
}

/// Which decisions to list.
#[derive(Debug, Clone, Default)]
pub struct DecisionFilter {
    pub project: Option<String>,
    pub file: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub tag: Option<String>,
    /// Superseded and rejected ones too.
    pub all: bool,
}

/// Decisions matching the filter, newest first, with their project.
pub fn decisions(index: &Index, f: &DecisionFilter, warn: Warn<'_>) -> anyhow::Result<Vec<(String, Document)>> {
    let colls = collections(index, f.project.as_deref(), warn)?;
    let per = each(&colls, warn, |info, c| {
        let forms = match &f.file {
            Some(p) => convdex::text::paths::lookup_forms(p, c.meta()?.project_path.as_deref()),
            None => Vec::new(),
        };
        let mut rows = Vec::new();
        for d in c.documents_of_kind(DocKind::Decision)? {
            let DocBody::Decision(fields) = &d.body else { continue };
            let keep = (f.all || fields.status == convdex::DecisionStatus::Active)
                && (forms.is_empty() || d.files_discussed.iter().any(|x| forms.contains(&x.path)))
                && f.since.is_none_or(|s| d.timestamp >= s)
                && f.tag.as_deref().is_none_or(|t| d.tags.iter().any(|x| x == t));
            if keep {
                rows.push((info.project.clone(), d));
            }
        }
        Ok(rows)
    })?;
    let mut rows: Vec<(String, Document)> = per.into_iter().flatten().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1.timestamp));
    Ok(rows)
}

/// One decision as JSON.
pub fn decision_json(project: &str, d: &Document) -> Value {
    let DocBody::Decision(f) = &d.body else { return Value::Null };
    json!({
        "project": project, "id": d.id, "session": d.session_id, "time": d.timestamp.to_rfc3339(),
        "summary": f.summary, "alternatives": f.alternatives, "reasoning": f.reasoning,
        "confidence": f.confidence, "status": format!("{:?}", f.status).to_lowercase(),
        "superseded_by": f.superseded_by, "supersedes": f.supersedes,
        "files": d.files_discussed.iter().map(|x| &x.path).collect::<Vec<_>>(),
    })
}

/// ` [superseded]` / ` [rejected]` for inactive decisions.
pub fn status_mark(d: &Document) -> &'static str {
    match &d.body {
        DocBody::Decision(f) => match f.status {
            convdex::DecisionStatus::Active => "",
            convdex::DecisionStatus::Superseded => " [superseded]",
            convdex::DecisionStatus::Rejected => " [rejected]",
        },
        _ => "",
    }
}

/// The one session whose id starts with `id`: (its collection's identity, the collection, the
/// full session id).
pub fn find_session(
    index: &Index,
    id: &str,
    project: Option<&str>,
    warn: Warn<'_>,
) -> anyhow::Result<(CollectionInfo, Arc<Collection>, String)> {
    if id.trim().is_empty() {
        anyhow::bail!("the session id is empty; give a session id or a unique prefix of one");
    }
    let colls = collections(index, project, warn)?;
    let per = each(&colls, warn, |info, c| Ok((info.clone(), c.sessions()?)))?;
    let mut found = Vec::new();
    for (info, sessions) in per {
        let c = colls.iter().find(|x| x.0 == info).map(|x| x.1.clone()).expect("listed");
        for s in sessions {
            if s.starts_with(id) {
                found.push((info.clone(), c.clone(), s));
            }
        }
    }
    match found.len() {
        0 => anyhow::bail!("no session starts with `{id}`; `convdex search` shows session ids"),
        1 => Ok(found.remove(0)),
        n => anyhow::bail!(
            "`{id}` matches {n} sessions ({}); give more of the id",
            found.iter().map(|f| f.2.as_str()).take(5).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The handoff brief of the most recently active session: (project, brief).
pub fn handoff(index: &Index, project: Option<&str>, warn: Warn<'_>) -> anyhow::Result<(String, String)> {
    let colls = collections(index, project, warn)?;
    let per = each(&colls, warn, |info, c| {
        let latest = c.documents_of_kind(DocKind::Summary)?.into_iter().map(|d| d.timestamp.timestamp_millis()).max();
        Ok((latest, info.project.clone(), c.handoff()?))
    })?;
    let mut best: Option<(i64, String, String)> = None;
    for (latest, project, brief) in per {
        if let (Some(t), Some(brief)) = (latest, brief)
            && best.as_ref().is_none_or(|b| t > b.0)
        {
            best = Some((t, project, brief));
        }
    }
    best.map(|(_, p, b)| (p, b)).context("no indexed session to hand off; run `convdex index` first")
}

/// Loads the config file (default `~/.config/convdex/config.json`) into indexing options.
pub fn apply_config(config: Option<&std::path::Path>, options: &mut IndexOptions) -> anyhow::Result<()> {
    let path = config
        .map(std::path::Path::to_path_buf)
        .or_else(|| dirs::config_dir().map(|d| d.join("convdex").join("config.json")));
    if let Some(p) = path {
        convdex::Config::load(&p)?.apply(options);
    }
    Ok(())
}

/// What `forget` selects.
#[derive(Debug, Clone, Default)]
pub struct ForgetRequest {
    /// One session (id or unique prefix).
    pub session: Option<String>,
    /// A whole project (exact name), or the project the other selectors are limited to.
    pub project: Option<String>,
    /// Sessions whose last message is before this time.
    pub before: Option<DateTime<Utc>>,
    /// List what would be forgotten without deleting anything.
    pub dry_run: bool,
}

/// One forgotten (or, in a dry run, selected) session.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Forgotten {
    pub project: String,
    pub session: String,
    pub last: DateTime<Utc>,
    pub documents: usize,
}

/// (tenant, project) of a collection.
pub type CollectionKey = (String, String);

/// Forgets the selected sessions and returns them with the collections touched.
pub fn forget(
    index: &Index,
    r: &ForgetRequest,
    warn: Warn<'_>,
) -> anyhow::Result<(Vec<Forgotten>, Vec<CollectionKey>)> {
    if r.session.is_none() && r.project.is_none() && r.before.is_none() {
        anyhow::bail!("say what to forget: --session ID, --project P or --before DATE");
    }
    let mut picked: Vec<(CollectionInfo, Arc<Collection>, String)> = Vec::new();
    if let Some(id) = &r.session {
        picked.push(find_session(index, id, r.project.as_deref(), warn)?);
    } else {
        let want = r.project.as_deref().map(convdex::normalize_name);
        let mut any = false;
        for info in index.collections()? {
            if want.as_deref().is_some_and(|p| info.project != p) {
                continue;
            }
            any = true;
            let sessions = index.collection(&info.tenant, &info.project).and_then(|c| {
                let s = c.guarded(|c| c.sessions())?;
                Ok((c, s))
            });
            match sessions {
                Ok((c, sessions)) => picked.extend(sessions.into_iter().map(|s| (info.clone(), c.clone(), s))),
                Err(e) if e.is_collection_fault() => warn(format!("skipped collection {}: {}", info.name, e.chain())),
                Err(e) => return Err(e.into()),
            }
        }
        if !any && let Some(p) = want {
            anyhow::bail!("no project named exactly `{p}`; `convdex stats` lists them");
        }
    }
    let mut out = Vec::new();
    let mut touched: Vec<CollectionKey> = Vec::new();
    for (info, coll, session) in picked {
        let docs = coll.session_documents(&session)?;
        let last = docs.iter().map(|d| d.timestamp).max().unwrap_or_default();
        if r.before.is_some_and(|b| last >= b) {
            continue;
        }
        let documents = if r.dry_run { docs.len() } else { coll.forget_session(&session)?.documents };
        if !touched.iter().any(|t| t.0 == info.tenant && t.1 == info.project) {
            touched.push((info.tenant.clone(), info.project.clone()));
        }
        out.push(Forgotten { project: info.project.clone(), session, last, documents });
    }
    Ok((out, touched))
}
