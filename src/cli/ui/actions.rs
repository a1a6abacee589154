//! What the app changes: a note remembered, a session tagged, a session forgotten (after a
//! confirmation). Every action is a POST carrying the run's CSRF token (checked by the router).

use super::html::{csrf_input, enc, esc, page};
use super::{App, Reply, Req, problem_html};
use crate::cli::render::short;

/// Runs the action the form names, then shows where it acted.
pub(crate) fn act(app: &App, req: &Req) -> Reply {
    match req.path.as_str() {
        "/act/remember" => {
            let what = convdex::Remember {
                text: req.field("text"),
                why: Some(req.field("why")).filter(|w| !w.trim().is_empty()),
                files: &[],
                target: convdex::RememberIn::Project(req.field("project")),
                tenant: None,
            };
            match convdex::remember(&app.index, &what) {
                Ok(r) => Reply::redirect(&format!("/project/{}", enc(&r.project))),
                Err(e) => Reply::html(400, page("Remember", "", &problem_html(&e))),
            }
        }
        "/act/tag" => {
            let session = req.field("session");
            let tagged = app
                .index
                .find_session(session, None)
                .and_then(|f| f.found.collection.tag_session(&f.found.session, req.field("tag")));
            match tagged {
                Ok(_) => Reply::redirect(&format!("/session/{}", enc(session))),
                Err(e) => Reply::html(400, page("Tag", "", &problem_html(&e))),
            }
        }
        "/act/forget" => forget(app, req.field("session")),
        _ => Reply::html(404, page("Not found", "", "<h1>Not found</h1>")),
    }
}

/// `/session/ID/forget`: asks before anything is deleted.
pub(crate) fn confirm_forget(app: &App, id: &str) -> Reply {
    let found = match app.index.find_session(id, None) {
        Ok(f) => f.found,
        Err(e) => return Reply::html(404, page("Forget", "", &problem_html(&e))),
    };
    let body = format!(
        "<h1>Forget session {} of {}?</h1><p>Its messages, decisions, vectors and words are deleted for good, and the \
         collection's files are rewritten so that no byte of them remains. A tombstone keeps the next <code>index</code> from \
         bringing it back.</p><form method=\"post\" action=\"/act/forget\">{}<input type=\"hidden\" name=\"session\" value=\"{}\">\
         <button type=\"submit\" id=\"forget\" class=\"danger\">Forget it</button> <a href=\"/session/{}\">Keep it</a></form>",
        esc(short(&found.session)),
        esc(&found.info.project),
        csrf_input(&app.csrf),
        esc(&found.session),
        enc(&found.session)
    );
    Reply::html(200, page("Forget", "", &body))
}

fn forget(app: &App, id: &str) -> Reply {
    let found = match app.index.find_session(id, None) {
        Ok(f) => f.found,
        Err(e) => return Reply::html(404, page("Forget", "", &problem_html(&e))),
    };
    let done = found.collection.forget_session(&found.session);
    let (tenant, project) = (found.info.tenant.clone(), found.info.project.clone());
    drop(found);
    let r = match done {
        Ok(r) => r,
        Err(e) => return Reply::html(500, page("Forget", "", &problem_html(&e))),
    };
    // The freed pages are scrubbed now, or (the collection still open for a search under way)
    // at its next open: the forget recorded the compaction it owes first.
    let compacted = match app.index.compact(&tenant, &project) {
        Ok(_) => "The collection's files were rewritten without them.".to_string(),
        Err(e) => format!("The files are rewritten without them the next time the collection opens ({}).", e.chain()),
    };
    let body = format!(
        "<h1>Forgotten</h1><p>{} documents of session {} deleted. {}</p><p><a href=\"/search\">Search</a></p>",
        r.documents,
        esc(short(id)),
        esc(&compacted)
    );
    Reply::html(200, page("Forgotten", "", &body))
}
