//! `convdex ui`: a local web app served by the binary itself (HTML made on the server, one small
//! script and one stylesheet embedded in the binary; nothing from a network).
//!
//! Safe by default: it listens on loopback unless `--bind` names another address; every request
//! needs the random token of this run (from the address it prints, then a cookie scoped to the
//! app: `HttpOnly`, `SameSite=Strict`); the `Host` header must name the address it listens on
//! (no DNS rebinding); every action is a POST carrying a CSRF token; every response forbids
//! inline and remote scripts and styles (Content-Security-Policy) and every piece of
//! transcript text is escaped ([`html::esc`]). A damaged or busy collection shows as such.

mod actions;
mod html;
mod pages;
mod views;

use std::io::Read;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use clap::Args;
use sha2::Digest;

use super::Ctx;

/// A local web app to search and read your history (loopback only, behind a token).
#[derive(Debug, Args)]
pub struct UiArgs {
    /// Port to listen on (default: a free one).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Open the app in the default browser.
    #[arg(long)]
    pub open: bool,
    /// Address to listen on (default 127.0.0.1). Another address serves the network: the token
    /// is still required on every request.
    #[arg(long)]
    pub bind: Option<IpAddr>,
}

/// The running app: the index it reads, and its secrets.
pub(crate) struct App {
    pub(crate) index: convdex::Index,
    pub(crate) ctx: Ctx,
    token: String,
    pub(crate) csrf: String,
    hosts: Vec<String>,
    cookie: String,
}

/// What a request is answered with.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) body: Vec<u8>,
    pub(crate) headers: Vec<(String, String)>,
}

impl Reply {
    pub(crate) fn html(status: u16, body: String) -> Reply {
        Reply { status, content_type: "text/html; charset=utf-8", body: body.into_bytes(), headers: Vec::new() }
    }

    pub(crate) fn redirect(to: &str) -> Reply {
        Reply {
            status: 303,
            content_type: "text/plain; charset=utf-8",
            body: Vec::new(),
            headers: vec![("Location".into(), to.to_string())],
        }
    }

    fn refused(why: &str) -> Reply {
        let body = html::page("Refused", "", &format!("<h1>Refused</h1><p>{}</p>", html::esc(why)));
        Reply::html(403, body)
    }
}

/// A request as the views read it.
pub(crate) struct Req {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) form: Vec<(String, String)>,
}

impl Req {
    /// A query parameter (empty when absent).
    pub(crate) fn get(&self, key: &str) -> &str {
        self.query.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
    }

    /// A field of the posted form (empty when absent).
    pub(crate) fn field(&self, key: &str) -> &str {
        self.form.iter().find(|(k, _)| k == key).map_or("", |(_, v)| v.as_str())
    }
}

/// Runs `convdex ui`: prints the address (with the token), then serves until interrupted.
pub fn run(ctx: &Ctx, a: UiArgs) -> anyhow::Result<()> {
    let bind = a.bind.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let server = tiny_http::Server::http(SocketAddr::new(bind, a.port))
        .map_err(|e| anyhow::anyhow!("cannot listen on {bind}:{}: {e}; choose another --port", a.port))?;
    let port = server.server_addr().to_ip().map_or(a.port, |s| s.port());
    let token = uuid::Uuid::new_v4().simple().to_string();
    let csrf = hex(&sha2::Sha256::digest(format!("{token}/csrf").as_bytes()));
    let host = if bind.is_loopback() { "127.0.0.1".to_string() } else { bind.to_string() };
    let mut hosts = vec![format!("127.0.0.1:{port}"), format!("localhost:{port}"), format!("[::1]:{port}")];
    hosts.push(format!("{bind}:{port}"));
    let app = Arc::new(App {
        index: ctx.index()?,
        ctx: ctx.clone(),
        cookie: format!("convdex_ui_{port}"),
        token,
        csrf,
        hosts,
    });
    let address = format!("http://{host}:{port}/search?t={}", app.token);
    println!("{address}");
    eprintln!("convdex ui: open the address above (it holds this run's token); Ctrl-C stops");
    if a.open {
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        let _ = std::process::Command::new(opener).arg(&address).spawn();
    }
    let server = Arc::new(server);
    std::thread::scope(|s| {
        for _ in 0..4 {
            let (server, app) = (server.clone(), app.clone());
            s.spawn(move || {
                while let Ok(request) = server.recv() {
                    serve(&app, request);
                }
            });
        }
    });
    Ok(())
}

/// Answers one request; a panic in a view is a 500, never the app's end.
fn serve(app: &App, mut request: tiny_http::Request) {
    let reply = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| answer(app, &mut request)))
        .unwrap_or_else(|_| Reply::html(500, html::page("Error", "", "<h1>Something went wrong</h1>")));
    let mut response = tiny_http::Response::from_data(reply.body).with_status_code(reply.status);
    let mut headers = vec![
        ("Content-Type".to_string(), reply.content_type.to_string()),
        (
            "Content-Security-Policy".into(),
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
                .into(),
        ),
        ("X-Content-Type-Options".into(), "nosniff".into()),
        ("Referrer-Policy".into(), "no-referrer".into()),
        ("Cache-Control".into(), "no-store".into()),
    ];
    headers.extend(reply.headers);
    for (k, v) in headers {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            response.add_header(h);
        }
    }
    let _ = request.respond(response);
}

/// Checks the host and the token, then routes.
fn answer(app: &App, request: &mut tiny_http::Request) -> Reply {
    let header = |name: &'static str| {
        request.headers().iter().find(|h| h.field.equiv(name)).map(|h| h.value.as_str().to_string()).unwrap_or_default()
    };
    if !app.hosts.iter().any(|h| h.eq_ignore_ascii_case(&header("Host"))) {
        return Reply::refused("this app answers only at the address it printed (the Host header names another)");
    }
    let (path, query) = request.url().split_once('?').unwrap_or((request.url(), ""));
    let (path, query) = (path.to_string(), html::pairs(query));
    let cookie = header("Cookie");
    let from_cookie =
        cookie.split(';').filter_map(|c| c.trim().split_once('=')).any(|(k, v)| k == app.cookie && v == app.token);
    let from_query = query.iter().any(|(k, v)| k == "t" && *v == app.token);
    if !from_cookie && !from_query && !path.starts_with("/static/") {
        return Reply::refused("this app needs the address `convdex ui` printed (it carries this run's token)");
    }
    let method = request.method().as_str().to_string();
    let mut body = String::new();
    if method == "POST" {
        let _ = request.as_reader().take(1 << 20).read_to_string(&mut body);
    }
    let req = Req { method, path, query, form: html::pairs(&body) };
    let mut reply = route(app, &req);
    if from_query {
        reply
            .headers
            .push(("Set-Cookie".into(), format!("{}={}; HttpOnly; SameSite=Strict; Path=/", app.cookie, app.token)));
    }
    reply
}

fn route(app: &App, req: &Req) -> Reply {
    if req.method == "POST" {
        if req.field("csrf") != app.csrf {
            return Reply::refused("the form is missing this run's CSRF token; reload the page and try again");
        }
        return actions::act(app, req);
    }
    let path = req.path.as_str();
    match path {
        "/" => Reply::redirect("/search"),
        "/static/app.js" => asset("text/javascript; charset=utf-8", include_str!("app.js")),
        "/static/style.css" => asset("text/css; charset=utf-8", include_str!("style.css")),
        "/search" => pages::search(app, req),
        "/decisions" => pages::decisions(app, req),
        "/file" => views::file(app, req),
        "/health" => views::health(app),
        _ => match path.split_once('/').map(|(_, rest)| rest.split('/').collect::<Vec<_>>()).as_deref() {
            Some(["session", id]) => pages::session(app, &html::dec(id)),
            Some(["session", id, "export.md"]) => views::export(app, &html::dec(id)),
            Some(["session", id, "forget"]) => actions::confirm_forget(app, &html::dec(id)),
            Some(["project", name]) => views::project(app, &html::dec(name)),
            _ => {
                Reply::html(404, html::page("Not found", "", "<h1>Not found</h1><p><a href=\"/search\">Search</a></p>"))
            }
        },
    }
}

fn asset(content_type: &'static str, text: &'static str) -> Reply {
    Reply { status: 200, content_type, body: text.as_bytes().to_vec(), headers: Vec::new() }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An error shown in a page (a damaged or busy collection never takes the page down).
pub(crate) fn problem_html(e: &convdex::Error) -> String {
    format!("<p class=\"problem\">{}</p>", html::esc(&e.chain()))
}
