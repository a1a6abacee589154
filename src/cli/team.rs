//! `convdex push`, `convdex team …` and `search --team`: the team store (PostgreSQL with
//! pgvector). The URL comes from `--team URL`, else `$CONVDEX_TEAM_URL`.

use clap::{Args, Subcommand};
use convdex::SearchMode;
use convdex::team::{TeamHit, TeamQuery, TeamStore};

use super::Ctx;
use super::print_json;

/// Where the team store is: `--team URL`, else `$CONVDEX_TEAM_URL`.
pub fn url(given: Option<&str>) -> anyhow::Result<String> {
    match given.filter(|u| !u.is_empty()) {
        Some(u) => Ok(u.to_string()),
        None => std::env::var("CONVDEX_TEAM_URL").ok().filter(|u| !u.is_empty()).ok_or_else(|| {
            anyhow::anyhow!("no team store named: give `--team postgres://user@host/db` or set CONVDEX_TEAM_URL")
        }),
    }
}

/// Send this machine's documents to the team store.
#[derive(Debug, Args)]
pub struct PushArgs {
    /// The team store (`postgres://…`); default `$CONVDEX_TEAM_URL`.
    #[arg(long)]
    pub team: Option<String>,
    /// Only this project.
    #[arg(long)]
    pub project: Option<String>,
    /// Documents per transaction (a killed push keeps every whole batch it sent).
    #[arg(long, default_value_t = convdex::team::PUSH_BATCH)]
    pub batch: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex push`.
pub fn push(ctx: &Ctx, a: PushArgs) -> anyhow::Result<()> {
    let store = TeamStore::connect(&url(a.team.as_deref())?)?.with_batch(a.batch);
    let index = ctx.index()?;
    let report = store.push(&index, a.project.as_deref())?;
    if a.json {
        return print_json(&report);
    }
    println!(
        "pushed {} collections to {}: {} documents sent, {} unchanged, {} of sessions the team forgot left out",
        report.collections,
        store.shown(),
        report.sent,
        report.unchanged,
        report.forgotten
    );
    if report.without_vectors > 0 {
        eprintln!(
            "note: {} documents had no vectors yet (searchable by words in the team store); run `convdex index`, then push again",
            report.without_vectors
        );
    }
    for c in &report.without_vector_index {
        eprintln!(
            "warning: {c} has no vector index in the team store (a first push was cut short, or is still loading); its searches scan every vector until a push by the owner of its tables builds it"
        );
    }
    Ok(())
}

/// Bring the team's documents into a local mirror, to search offline.
#[derive(Debug, Args)]
pub struct PullArgs {
    /// The team store (`postgres://…`); default `$CONVDEX_TEAM_URL`.
    #[arg(long)]
    pub team: Option<String>,
    /// Only this project.
    #[arg(long)]
    pub project: Option<String>,
    /// The mirror's data directory (default: `team` inside the data directory); search it with
    /// `convdex --data-dir DIR search …`. Each pull replaces what changed and removes what the
    /// team forgot.
    #[arg(long)]
    pub mirror: Option<std::path::PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex pull`.
pub fn pull(ctx: &Ctx, a: PullArgs) -> anyhow::Result<()> {
    let store = TeamStore::connect(&url(a.team.as_deref())?)?;
    let dir = a.mirror.clone().unwrap_or_else(|| ctx.dir.join("team"));
    let mirror = convdex::Index::open(&dir, ctx.options()?)?;
    let report = store.pull(&mirror, a.project.as_deref())?;
    if a.json {
        return print_json(&report);
    }
    println!(
        "mirrored {} collections of {} into {}: {} documents written, {} unchanged, {} removed (forgotten by the team)",
        report.collections,
        store.shown(),
        dir.display(),
        report.written,
        report.unchanged,
        report.removed
    );
    println!("search it offline: convdex --data-dir {} search \"…\"", dir.display());
    Ok(())
}

/// The team store: who may read what, what it holds, a session forgotten for everyone.
#[derive(Debug, Args)]
pub struct TeamArgs {
    /// The team store (`postgres://…`); default `$CONVDEX_TEAM_URL`.
    #[arg(long, global = true)]
    pub team: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub action: TeamAction,
}

/// What `convdex team` does.
#[derive(Debug, Subcommand)]
pub enum TeamAction {
    /// Prepare a new team store (the pgvector extension; run once, by the database's owner).
    Init,
    /// The tenants and projects this role can read.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give a database role a tenant (every project, now and later) or one project of it.
    Grant {
        /// The member's database role (it must exist: `CREATE ROLE … LOGIN`).
        role: String,
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
    },
    /// Take back what `grant` gave.
    Revoke {
        /// The member's database role.
        role: String,
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// Only this project.
        #[arg(long)]
        project: Option<String>,
    },
    /// Delete a session for everyone and leave a tombstone, so no machine pushes it again
    /// (`convdex forget` deletes it on this machine).
    Forget {
        /// The tenant.
        #[arg(long)]
        tenant: String,
        /// The project.
        #[arg(long)]
        project: String,
        /// The session's full id.
        #[arg(long)]
        session: String,
    },
}

/// Runs `convdex team …`.
pub fn team(_ctx: &Ctx, a: TeamArgs) -> anyhow::Result<()> {
    let store = TeamStore::connect(&url(a.team.as_deref())?)?;
    match a.action {
        TeamAction::Init => {
            store.init()?;
            println!("{} is ready for `convdex push`", store.shown());
        }
        TeamAction::List { json } => {
            let projects = store.projects()?;
            if json {
                let v: Vec<_> = projects.iter().map(|(t, p)| serde_json::json!({"tenant": t, "project": p})).collect();
                return print_json(&v);
            }
            if projects.is_empty() {
                println!("this role can read no project of {}", store.shown());
            }
            for (t, p) in projects {
                println!("{t}  {p}");
            }
        }
        TeamAction::Grant { role, tenant, project } => {
            store.grant(&role, &tenant, project.as_deref())?;
            println!("{role} may now read and write {}", scope(&tenant, project.as_deref()));
        }
        TeamAction::Revoke { role, tenant, project } => {
            store.revoke(&role, &tenant, project.as_deref())?;
            println!("{role} may no longer read or write {}", scope(&tenant, project.as_deref()));
        }
        TeamAction::Forget { tenant, project, session } => {
            let n = store.forget(&tenant, &project, &session)?;
            println!(
                "forgot session {session} of {tenant}/{project} in the team store: {n} documents deleted, a tombstone left"
            );
        }
    }
    Ok(())
}

fn scope(tenant: &str, project: Option<&str>) -> String {
    match project {
        Some(p) => format!("project {p} of tenant {tenant}"),
        None => format!("every project of tenant {tenant}"),
    }
}

/// A question asked of the team store at `url` (`None`: `$CONVDEX_TEAM_URL`), embedded by
/// `index`'s model unless it asks by words only: the store's address (for messages) and its hits.
/// `convdex search --team` and the MCP `search` tool with `team: true` ask through this.
pub fn ask(index: &convdex::Index, url_given: Option<&str>, q: &TeamQuery) -> anyhow::Result<(String, Vec<TeamHit>)> {
    let store = TeamStore::connect(&url(url_given)?)?;
    let embedder = if q.mode == SearchMode::Lexical { None } else { Some(index.embedder()?) };
    let hits = store.search(q, embedder.as_deref(), &index.options().collection.glossary)?;
    Ok((store.shown().to_string(), hits))
}

/// Prints team hits, a line each.
/// `asked`: the search's mode and the local index's default ranking (what the line above the hits
/// reads, [`super::render::among_line`]).
pub fn print_hits(shown: &str, asked: (SearchMode, convdex::Ranking), hits: &[TeamHit]) {
    if hits.is_empty() {
        println!("no hits in {shown}");
    } else {
        if let Some(line) = super::render::among_line(asked.0, asked.1, hits.iter().map(|h| h.relevance)) {
            println!("{line}");
        }
        println!("relevance (% chance it answers)  tenant/project  session  time  type");
    }
    for h in hits {
        let text: String = h.doc.content.chars().take(200).collect();
        println!(
            "{:>3}  {}/{}  {}  {}  {}  {}",
            h.relevance,
            h.tenant,
            h.project,
            super::render::short(&h.doc.session_id),
            h.doc.timestamp.format("%Y-%m-%d %H:%M"),
            h.doc.kind().as_str(),
            text.replace('\n', " ")
        );
    }
}
