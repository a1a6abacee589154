//! The app's other views: a file's history, a project, the app's health, a session as Markdown.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use convdex::{DocBody, DocKind, FileAction};

use super::html::{enc, esc, page};
use super::{App, Reply, Req, problem_html};
use crate::cli::render::short;

/// `/file?path=…`: the sessions that read or changed a file, newest first, with what they did,
/// their decisions and commits.
pub(crate) fn file(app: &App, req: &Req) -> Reply {
    let path = req.get("path");
    let mut body = format!(
        "<h1>A file's history</h1><form method=\"get\" action=\"/file\"><input name=\"path\" placeholder=\"src/auth.rs\" value=\"{}\" aria-label=\"path\">\
         <button type=\"submit\">Show</button></form>",
        esc(path)
    );
    if !path.trim().is_empty() {
        let project = Some(req.get("project")).filter(|p| !p.is_empty());
        match app.index.blame(project, path) {
            Ok(found) if found.found.is_empty() => body.push_str("<p>No session read or changed it.</p>"),
            Ok(found) => {
                body.push_str("<ol class=\"blame\">");
                for b in &found.found {
                    let _ = write!(
                        body,
                        "<li><a href=\"/session/{}\">{} · {}</a> <span class=\"meta\">{} · {}</span>",
                        enc(&b.session),
                        esc(&b.project),
                        esc(short(&b.session)),
                        b.last.format("%Y-%m-%d"),
                        esc(&b.actions.join(", "))
                    );
                    for d in b.documents.iter().filter(|d| d.kind() == DocKind::Decision) {
                        if let DocBody::Decision(f) = &d.body {
                            let _ = write!(body, "<p class=\"decision\">{}</p>", esc(&f.summary));
                        }
                    }
                    for c in &b.commits {
                        let _ = write!(body, "<p class=\"commit\">{}</p>", esc(c));
                    }
                    body.push_str("</li>");
                }
                body.push_str("</ol>");
            }
            Err(e) => body.push_str(&problem_html(&e)),
        }
    }
    Reply::html(200, page("Files", "/file", &body))
}

/// Sessions and messages per week over the 26 weeks up to the project's last message, as bars
/// (messages the height, sessions written over each bar), the first and last week named below.
fn activity_svg(weeks: &[(usize, usize)], last: chrono::DateTime<chrono::Utc>) -> String {
    let max = weeks.iter().map(|w| w.1).max().unwrap_or(0).max(1);
    let mut svg = String::from(
        "<svg class=\"chart\" viewBox=\"0 0 520 150\" role=\"img\" aria-label=\"sessions and messages per week\">",
    );
    for (i, (sessions, messages)) in weeks.iter().enumerate() {
        let h = 100 * messages / max;
        let _ = write!(
            svg,
            "<rect x=\"{}\" y=\"{}\" width=\"16\" height=\"{h}\" fill=\"#4a7bd0\"><title>{sessions} sessions, {messages} messages</title></rect>",
            i * 20,
            115 - h
        );
        if *sessions > 0 {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" font-size=\"9\" text-anchor=\"middle\" fill=\"#333\">{sessions}</text>",
                i * 20 + 8,
                112 - h
            );
        }
    }
    let first = last - chrono::Duration::weeks(weeks.len().saturating_sub(1) as i64);
    let _ = write!(
        svg,
        "<text x=\"0\" y=\"135\" font-size=\"11\" fill=\"#555\">week of {}</text>\
         <text x=\"520\" y=\"135\" font-size=\"11\" text-anchor=\"end\" fill=\"#555\">week of {}</text>\
         <text x=\"260\" y=\"148\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">bars: messages · numbers: sessions</text>",
        first.format("%Y-%m-%d"),
        last.format("%Y-%m-%d")
    );
    svg + "</svg>"
}

/// `/project/NAME`: activity over time, files most worked on, agents, open tasks, the brief.
pub(crate) fn project(app: &App, name: &str) -> Reply {
    let info = match app.index.collections_of(Some(name)).map(|v| v.into_iter().find(|i| i.project == name)) {
        Ok(Some(i)) => i,
        Ok(None) => {
            return Reply::html(
                404,
                page(name, "", &problem_html(&convdex::Error::NoSuchProject { project: name.into() })),
            );
        }
        Err(e) => return Reply::html(500, page(name, "", &problem_html(&e))),
    };
    let c = match app.index.collection(&info.tenant, &info.project) {
        Ok(c) => c,
        Err(e) => return Reply::html(200, page(name, "", &format!("<h1>{}</h1>{}", esc(name), problem_html(&e)))),
    };
    let messages = c.documents_of_kind(DocKind::Message).unwrap_or_default();
    // The 26 weeks up to the last message (a project at rest still shows its activity).
    let now = messages.iter().map(|m| m.timestamp).max().unwrap_or_else(chrono::Utc::now);
    let mut weeks = vec![(0usize, 0usize); 26];
    let mut sessions_seen: BTreeMap<(usize, String), ()> = BTreeMap::new();
    let mut files: BTreeMap<&str, usize> = BTreeMap::new();
    let mut agents: BTreeMap<&str, usize> = BTreeMap::new();
    for m in &messages {
        let age = (now - m.timestamp).num_weeks();
        if (0..26).contains(&age) {
            let w = 25 - age as usize;
            weeks[w].1 += 1;
            if sessions_seen.insert((w, m.session_id.clone()), ()).is_none() {
                weeks[w].0 += 1;
            }
        }
        for f in m.files_discussed.iter().filter(|f| f.action != FileAction::Read) {
            *files.entry(f.path.as_str()).or_default() += 1;
        }
        *agents.entry(m.agent().unwrap_or("claude-code")).or_default() += 1;
    }
    let mut top: Vec<(&str, usize)> = files.into_iter().collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut body =
        format!("<h1>{}</h1><p class=\"meta\">{}</p>", esc(name), esc(info.project_path.as_deref().unwrap_or("")));
    if let Ok(s) = c.stats() {
        let _ = write!(body, "<p>{} sessions, {} messages, {} decisions</p>", s.sessions, s.messages, s.decisions);
    }
    body.push_str("<h2>Messages per week</h2>");
    body.push_str(&activity_svg(&weeks, now));
    body.push_str("<h2>Files most worked on</h2><ol class=\"files\">");
    for (f, n) in top.iter().take(15) {
        let _ = write!(
            body,
            "<li><a href=\"/file?path={}&amp;project={}\">{}</a> <span class=\"meta\">{n}</span></li>",
            enc(f),
            enc(name),
            esc(f)
        );
    }
    body.push_str("</ol><h2>Agents</h2><p>");
    body.push_str(&agents.iter().map(|(a, n)| format!("{} {n}", esc(a))).collect::<Vec<_>>().join(" · "));
    body.push_str("</p>");
    let summaries = c.documents_of_kind(DocKind::Summary).unwrap_or_default();
    if let Some(DocBody::Summary(s)) = convdex::life::latest(&summaries).map(|d| &d.body) {
        body.push_str("<h2>Open tasks</h2><ul>");
        for t in &s.tasks_remaining {
            let _ = write!(body, "<li>{}</li>", esc(t));
        }
        body.push_str("</ul>");
    }
    if let Ok(Some(brief)) = app.index.session_brief(&info, None, convdex::derive::brief::DEFAULT_BRIEF_TOKENS) {
        let _ = write!(body, "<h2>The brief a new session starts with</h2><pre>{}</pre>", esc(&brief));
    }
    let _ = write!(body, "<p><a href=\"/decisions?project={}\">Decisions</a></p>", enc(name));
    Reply::html(200, page(name, "", &body))
}

/// `/health`: what `doctor` says of each collection, vectors waiting, an indexing run under way,
/// and the hooks.
pub(crate) fn health(app: &App) -> Reply {
    let mut body = String::from("<h1>Health</h1><table><tr><th>collection</th><th>state</th><th>detail</th></tr>");
    for info in app.index.collections().unwrap_or_default() {
        let (state, detail) = match app.index.collection(&info.tenant, &info.project) {
            Ok(c) => match c.pending_vectors() {
                Ok(0) => ("ok", String::new()),
                Ok(n) => ("ok", format!("{n} documents wait for their vectors (searchable by words already)")),
                Err(e) => ("damaged", e.chain()),
            },
            Err(e @ convdex::Error::InUse { .. }) => ("busy", e.chain()),
            Err(e) => ("damaged", e.chain()),
        };
        let _ = write!(
            body,
            "<tr class=\"{state}\"><td>{}</td><td>{state}</td><td>{}</td></tr>",
            esc(&info.name),
            esc(&detail)
        );
    }
    body.push_str("</table>");
    if let Some(pid) = app.index.writer_pid() {
        let _ = write!(body, "<p>An indexing run (process {pid}) is writing; it answers searches meanwhile.</p>");
    }
    let hooks = crate::cli::doctor::hooks(&app.ctx);
    body.push_str("<h2>Claude Code hooks</h2><table><tr><th>event</th><th>state</th><th>detail</th></tr>");
    for h in hooks.as_array().into_iter().flatten() {
        let field = |k: &str| h[k].as_str().unwrap_or("").to_string();
        let _ = write!(
            body,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&field("state")),
            esc(&field("event")),
            esc(&field("state")),
            esc(&field("detail"))
        );
    }
    body.push_str("</table>");
    Reply::html(200, page("Health", "/health", &body))
}

/// `/session/ID/export.md`: the session as Markdown, to download.
pub(crate) fn export(app: &App, id: &str) -> Reply {
    let found = match app.index.find_session(id, None) {
        Ok(f) => f.found,
        Err(e) => return Reply::html(404, page("Export", "", &problem_html(&e))),
    };
    let docs = found.collection.session_documents(&found.session).unwrap_or_default();
    let mut md = format!("# {} · session {}\n\n", found.info.project, found.session);
    if let Some(s) = docs.iter().find(|d| d.kind() == DocKind::Summary) {
        let _ = write!(md, "{}\n\n", s.content);
    }
    for d in &docs {
        match &d.body {
            DocBody::Message(m) => {
                let _ = write!(md, "## {:?} · {}\n\n{}\n\n", m.role, d.timestamp.format("%Y-%m-%d %H:%M"), d.content);
            }
            DocBody::Decision(f) => {
                let _ = write!(md, "> **Decided** ({:.2}): {}\n\n", f.confidence, f.summary);
            }
            DocBody::Summary(_) => {}
        }
    }
    Reply {
        status: 200,
        content_type: "text/markdown; charset=utf-8",
        body: md.into_bytes(),
        headers: vec![(
            "Content-Disposition".into(),
            format!("attachment; filename=\"{}-{}.md\"", found.info.project, short(&found.session)),
        )],
    }
}
