//! The app's main views: search, a session, the decision ledger.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use convdex::{DecisionFilter, DocBody, DocKind, Document, Filter, Query, SearchMode};

use super::html::{csrf_input, esc, marked, page};
use super::{App, Reply, Req, problem_html};
use crate::cli::render::short;

/// The query a search page asks, from its parameters (a bad one is an error to show).
fn query_of(req: &Req) -> anyhow::Result<Query> {
    let mut q = Query::new(req.get("q").trim());
    q.limit = if req.get("group") == "messages" { 50 } else { 20 };
    q.mode = match req.get("mode") {
        "semantic" => Some(SearchMode::Semantic),
        "lexical" => Some(SearchMode::Lexical),
        "hybrid" => Some(SearchMode::Hybrid),
        _ => None,
    };
    let mut f = Filter::default();
    if !req.get("type").is_empty() {
        f.kinds = vec![req.get("type").parse::<DocKind>()?];
    }
    if !req.get("agent").is_empty() {
        f.agents = vec![req.get("agent").parse()?];
    }
    if !req.get("tag").is_empty() {
        f.tags_any = vec![req.get("tag").to_string()];
    }
    f.domain = Some(req.get("domain").to_string()).filter(|d| !d.is_empty());
    if !req.get("file").is_empty() {
        f.files = vec![req.get("file").to_string()];
    }
    let time = |k: &str, end: bool| -> anyhow::Result<_> {
        let v = req.get(k);
        if v.is_empty() { Ok(None) } else { Ok(Some(crate::cli::render::parse_time(v, end)?)) }
    };
    f.since = time("since", false)?;
    f.until = time("until", true)?;
    q.filter = f;
    Ok(q)
}

/// The search form, filled with the request's values.
fn form(app: &App, req: &Req) -> String {
    let projects: Vec<String> = app.index.collections().unwrap_or_default().into_iter().map(|c| c.project).collect();
    let select = |name: &str, options: &[(&str, &str)]| {
        let mut s = format!("<select name=\"{name}\" aria-label=\"{name}\">");
        for (value, label) in options {
            let sel = if req.get(name) == *value { " selected" } else { "" };
            let _ = write!(s, "<option value=\"{}\"{sel}>{}</option>", esc(value), esc(label));
        }
        s + "</select>"
    };
    let mut project_options: Vec<(&str, &str)> = vec![("", "every project")];
    project_options.extend(projects.iter().map(|p| (p.as_str(), p.as_str())));
    let text = |name: &str, hint: &str| {
        format!("<input name=\"{name}\" placeholder=\"{hint}\" value=\"{}\" aria-label=\"{name}\">", esc(req.get(name)))
    };
    format!(
        "<form id=\"search\" action=\"/search\" method=\"get\" autocomplete=\"off\">\
         <input id=\"q\" name=\"q\" type=\"search\" placeholder=\"Search your history (press /)\" value=\"{}\" autofocus>\
         <div class=\"filters\">{}{}{}{}{}{}{}{}{}{}</div><button type=\"submit\">Search</button></form>",
        esc(req.get("q")),
        select("project", &project_options),
        select(
            "agent",
            &[
                ("", "every agent"),
                ("claude-code", "Claude Code"),
                ("codex", "Codex"),
                ("gemini", "Gemini"),
                ("aider", "Aider")
            ]
        ),
        select(
            "type",
            &[("", "every kind"), ("message", "messages"), ("decision", "decisions"), ("summary", "summaries")]
        ),
        select("mode", &[("", "words and meaning"), ("semantic", "meaning"), ("lexical", "words")]),
        select("group", &[("", "by session"), ("messages", "as messages")]),
        text("tag", "tag"),
        text("domain", "domain"),
        text("file", "file"),
        text("since", "since YYYY-MM-DD"),
        text("until", "until YYYY-MM-DD"),
    )
}

/// One hit as a line of results.
fn hit_html(project: &str, h: &convdex::Hit) -> String {
    let d = &h.doc;
    let anchor = match &d.body {
        DocBody::Message(m) => format!("#m-{}", m.message_uuid),
        DocBody::Decision(f) => format!("#m-{}", f.source_message_uuid),
        DocBody::Summary(_) => String::new(),
    };
    let text = match &h.snippet {
        Some(s) => marked(s),
        None => esc(&convdex::text::one_line(&d.content, 240)),
    };
    format!(
        "<li class=\"hit\"><a href=\"/session/{}{anchor}\"><span class=\"meta\">{} · {} · {} · {} · relevance {}</span>\
         <span class=\"text\">{text}</span></a></li>",
        super::html::enc(&d.session_id),
        esc(project),
        esc(short(&d.session_id)),
        d.timestamp.format("%Y-%m-%d %H:%M"),
        esc(d.kind().as_str()),
        h.relevance,
    )
}

/// Counts of hits per project and per agent.
fn counts(hits: &[(&str, &convdex::Hit)]) -> String {
    let mut projects: BTreeMap<&str, usize> = BTreeMap::new();
    let mut agents: BTreeMap<&str, usize> = BTreeMap::new();
    for (p, h) in hits {
        *projects.entry(p).or_default() += 1;
        *agents.entry(h.doc.agent().unwrap_or("claude-code")).or_default() += 1;
    }
    let list =
        |m: &BTreeMap<&str, usize>| m.iter().map(|(k, n)| format!("{} {n}", esc(k))).collect::<Vec<_>>().join(" · ");
    format!("<p class=\"counts\">projects: {} — agents: {}</p>", list(&projects), list(&agents))
}

/// The results of a search (also the fragment the script asks for as the user types).
fn results(app: &App, req: &Req) -> String {
    if req.get("q").trim().is_empty() {
        return "<div id=\"results\"><p class=\"hint\">Type a question, a file name, an error message; filters narrow it.</p></div>".into();
    }
    let query = match query_of(req) {
        Ok(q) => q,
        Err(e) => return format!("<div id=\"results\"><p class=\"problem\">{}</p></div>", esc(&format!("{e:#}"))),
    };
    let project = Some(req.get("project")).filter(|p| !p.is_empty());
    let mut out = String::from("<div id=\"results\">");
    if req.get("group") == "messages" {
        match app.index.search(project, &query) {
            Ok(found) => {
                let hits: Vec<(&str, &convdex::Hit)> =
                    found.found.iter().map(|h| (h.project.as_str(), &h.hit)).collect();
                out.push_str(&counts(&hits));
                out.push_str("<ol class=\"hits\">");
                for (p, h) in hits {
                    out.push_str(&hit_html(p, h));
                }
                out.push_str("</ol>");
                out.extend(found.skipped.iter().map(|s| format!("<p class=\"problem\">{}</p>", esc(&s.to_string()))));
            }
            Err(e) => out.push_str(&problem_html(&e)),
        }
    } else {
        match app.index.search_sessions(project, &query) {
            Ok(found) => {
                let hits: Vec<(&str, &convdex::Hit)> =
                    found.found.iter().flat_map(|s| s.hits.iter().map(move |h| (s.project.as_str(), h))).collect();
                out.push_str(&counts(&hits));
                out.push_str("<ol class=\"sessions\">");
                for s in &found.found {
                    let _ = write!(
                        out,
                        "<li class=\"session\"><h3><a href=\"/session/{}\">{} · {}</a> <span class=\"meta\">relevance {}, {} matches</span></h3><ol class=\"hits\">",
                        super::html::enc(&s.session_id),
                        esc(&s.project),
                        esc(short(&s.session_id)),
                        s.relevance,
                        s.matched
                    );
                    for h in &s.hits {
                        out.push_str(&hit_html(&s.project, h));
                    }
                    out.push_str("</ol></li>");
                }
                out.push_str("</ol>");
                out.extend(found.skipped.iter().map(|s| format!("<p class=\"problem\">{}</p>", esc(&s.to_string()))));
            }
            Err(e) => out.push_str(&problem_html(&e)),
        }
    }
    out + "</div>"
}

/// `/search`: the form and its results, in the HTML (the page works without its script); with
/// `fragment=1`, the results alone.
pub(crate) fn search(app: &App, req: &Req) -> Reply {
    if req.get("fragment") == "1" {
        return Reply::html(200, results(app, req));
    }
    let body = format!("{}{}", form(app, req), results(app, req));
    let title = if req.get("q").is_empty() { "Search".to_string() } else { req.get("q").to_string() };
    Reply::html(200, page(&title, "/search", &body))
}

/// A message as it reads in a session: who, when, the text, files and commits, and the
/// decisions it made.
fn message_html(d: &Document, decided: &[&Document]) -> String {
    let DocBody::Message(m) = &d.body else { return String::new() };
    let role = format!("{:?}", m.role).to_lowercase();
    let mut out = format!(
        "<article id=\"m-{}\" class=\"message {role}\"><p class=\"meta\"><a href=\"#m-{}\">{}</a> · {role}</p><div class=\"text\">{}</div>",
        esc(&m.message_uuid),
        esc(&m.message_uuid),
        d.timestamp.format("%Y-%m-%d %H:%M"),
        esc(&d.content)
    );
    let files: Vec<String> = d.files_discussed.iter().map(|f| format!("{} {}", f.action.as_str(), f.path)).collect();
    if !files.is_empty() {
        let _ = write!(out, "<p class=\"files\">{}</p>", esc(&files.join(" · ")));
    }
    for c in &d.commits_made {
        let _ = write!(out, "<p class=\"commit\">commit {} {}</p>", esc(&c.sha), esc(&c.message));
    }
    for dec in decided {
        if let DocBody::Decision(f) = &dec.body {
            let mark = if convdex::life::trusted(dec) { "decision" } else { "decision candidate" };
            let _ = write!(
                out,
                "<p id=\"d-{}\" class=\"{mark}\"><strong>{}</strong> {} <span class=\"meta\">confidence {:.2}, {:?}</span></p>",
                dec.id,
                if mark == "decision" { "Decided:" } else { "Decided?" },
                esc(&f.summary),
                f.confidence,
                f.status
            );
        }
    }
    out + "</article>"
}

/// Whether a message only made tool calls (its text is what it did: `edited x; created y`).
fn tool_steps(d: &Document) -> bool {
    let first = d.content.split(';').next().unwrap_or("").trim_start();
    ["edited ", "created ", "deleted ", "read ", "committed ", "moved "].iter().any(|p| first.starts_with(p))
}

/// `/session/ID`: the summary, the conversation in order (sub-agent runs and tool steps folded),
/// decisions where they were made, and the command that resumes it.
pub(crate) fn session(app: &App, id: &str) -> Reply {
    let found = match app.index.find_session(id, None) {
        Ok(f) => f.found,
        Err(e) => return Reply::html(404, page("Session", "/search", &problem_html(&e))),
    };
    let docs = match found.collection.session_documents(&found.session) {
        Ok(d) => d,
        Err(e) => return Reply::html(500, page("Session", "/search", &problem_html(&e))),
    };
    let resume = app.index.resume(&found.session, Some(&found.info.project)).map(|r| r.found.command);
    let mut decided: BTreeMap<&str, Vec<&Document>> = BTreeMap::new();
    for d in &docs {
        if let DocBody::Decision(f) = &d.body {
            decided.entry(f.source_message_uuid.as_str()).or_default().push(d);
        }
    }
    let s = &found.session;
    let mut body = format!(
        "<h1><a href=\"/project/{}\">{}</a> · session {}</h1>",
        super::html::enc(&found.info.project),
        esc(&found.info.project),
        esc(short(s))
    );
    if let Ok(cmd) = &resume {
        let _ = write!(
            body,
            "<p class=\"resume\">Resume: <code id=\"resume\">{}</code> <button type=\"button\" data-copy=\"{}\">Copy</button></p>",
            esc(cmd),
            esc(cmd)
        );
    }
    let _ = write!(
        body,
        "<p class=\"actions\"><a href=\"/session/{0}/export.md\">Export as Markdown</a> · <a href=\"/session/{0}/forget\">Forget…</a></p>\
         <form class=\"tag\" method=\"post\" action=\"/act/tag\">{1}<input type=\"hidden\" name=\"session\" value=\"{2}\">\
         <input name=\"tag\" placeholder=\"tag this session\" aria-label=\"tag\"><button type=\"submit\">Tag</button></form>",
        super::html::enc(s),
        csrf_input(&app.csrf),
        esc(s)
    );
    if let Some(DocBody::Summary(sum)) = docs.iter().find(|d| d.kind() == DocKind::Summary).map(|d| &d.body) {
        let _ = write!(
            body,
            "<section class=\"summary\"><h2>Summary</h2><p>{}</p><p>{}</p></section>",
            esc(&sum.goal),
            esc(&sum.outcome)
        );
    }
    body.push_str(&conversation(&docs, &decided));
    Reply::html(200, page(&format!("{} {}", found.info.project, short(s)), "/search", &body))
}

/// The messages in order: runs of sub-agent messages and of tool steps folded.
fn conversation(docs: &[Document], decided: &BTreeMap<&str, Vec<&Document>>) -> String {
    let messages: Vec<&Document> = docs.iter().filter(|d| d.kind() == DocKind::Message).collect();
    let fold = |d: &Document| -> Option<String> {
        if let Some(a) = d.tags.iter().find_map(|t| t.strip_prefix("agent:")) {
            return Some(format!("sub-agent run: {a}"));
        }
        tool_steps(d).then(|| "tool steps".to_string())
    };
    let mut out = String::from("<section class=\"conversation\">");
    let mut i = 0;
    while i < messages.len() {
        let uuid = |d: &Document| match &d.body {
            DocBody::Message(m) => m.message_uuid.clone(),
            _ => String::new(),
        };
        let none = Vec::new();
        match fold(messages[i]) {
            Some(kind) => {
                let start = i;
                while i < messages.len() && fold(messages[i]).as_deref() == Some(kind.as_str()) {
                    i += 1;
                }
                let _ =
                    write!(out, "<details class=\"folded\"><summary>{} ({} messages)</summary>", esc(&kind), i - start);
                for d in &messages[start..i] {
                    out.push_str(&message_html(d, decided.get(uuid(d).as_str()).unwrap_or(&none)));
                }
                out.push_str("</details>");
            }
            None => {
                out.push_str(&message_html(messages[i], decided.get(uuid(messages[i]).as_str()).unwrap_or(&none)));
                i += 1;
            }
        }
    }
    out + "</section>"
}

/// `/decisions`: a project's ledger (all projects by default) as a timeline, each decision
/// with its status, its message and what replaced it.
pub(crate) fn decisions(app: &App, req: &Req) -> Reply {
    let as_of = match req.get("as_of") {
        "" => None,
        v => crate::cli::render::parse_time(v, true).ok(),
    };
    let filter = DecisionFilter { all: true, as_of, ..Default::default() };
    let project = Some(req.get("project")).filter(|p| !p.is_empty());
    let mut body = format!(
        "<h1>Decisions</h1><form method=\"get\" action=\"/decisions\"><input name=\"project\" placeholder=\"project\" value=\"{}\" aria-label=\"project\">\
         <input name=\"as_of\" placeholder=\"as of YYYY-MM-DD\" value=\"{}\" aria-label=\"as of\"><button type=\"submit\">Show</button></form>",
        esc(req.get("project")),
        esc(req.get("as_of"))
    );
    match app.index.ledger(project, &filter) {
        Ok(found) => {
            body.push_str("<ol class=\"timeline\">");
            for e in &found.found {
                body.push_str(&ledger_entry(e));
            }
            body.push_str("</ol>");
            body.extend(found.skipped.iter().map(|s| format!("<p class=\"problem\">{}</p>", esc(&s.to_string()))));
        }
        Err(e) => body.push_str(&problem_html(&e)),
    }
    Reply::html(200, page("Decisions", "/decisions", &body))
}

fn ledger_entry(e: &convdex::LedgerEntry) -> String {
    let d = &e.decision;
    let DocBody::Decision(f) = &d.body else { return String::new() };
    let status = format!("{:?}", f.status).to_lowercase();
    let trust = if e.trusted { "" } else { " candidate" };
    let mut out = format!(
        "<li id=\"d-{}\" class=\"entry {status}{trust}\"><span class=\"meta\">{} · {} · {status}{} · confidence {:.2}</span> \
         <a href=\"/session/{}#m-{}\">{}</a>",
        d.id,
        d.timestamp.format("%Y-%m-%d"),
        esc(&e.project),
        if e.trusted { "" } else { " (candidate)" },
        f.confidence,
        super::html::enc(&d.session_id),
        esc(&f.source_message_uuid),
        esc(&f.summary)
    );
    if let Some(r) = &e.replaced_by {
        let _ = write!(
            out,
            "<p class=\"replaced\">replaced {} by <a href=\"#d-{}\">{}</a></p>",
            r.time.format("%Y-%m-%d"),
            r.id,
            esc(&r.summary)
        );
    }
    if !f.alternatives.is_empty() {
        let _ = write!(out, "<p class=\"meta\">instead of {}</p>", esc(&f.alternatives.join(", ")));
    }
    if !e.followed_by.commits.is_empty() {
        let _ = write!(out, "<p class=\"commit\">then {}</p>", esc(&e.followed_by.commits.join(" · ")));
    }
    out + "</li>"
}
