//! `convdex forget` and `convdex compact`: deleting sessions for good, and rewriting files so no
//! deleted byte remains.

use clap::Args;
use convdex::{CollectionInfo, Index};
use serde::Serialize;

use super::render::parse_time;
use super::{Ctx, print_json, problem, skipped};

/// Delete sessions for good: documents, vectors, lexical entries and embedding-cache rows, then
/// compact the collection's files so no byte of them remains. A tombstone keeps a later `index`
/// from bringing them back (`index --force` does).
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").required(true).multiple(true).args(["session", "project", "before"])))]
pub struct ForgetArgs {
    /// One session, by id or a unique prefix of one.
    #[arg(long, conflicts_with = "before")]
    pub session: Option<String>,
    /// Every session of this project (exact name); with --before, limits it to this project.
    #[arg(long)]
    pub project: Option<String>,
    /// Sessions whose last message is before this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub before: Option<String>,
    /// List what would be forgotten; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Skip compaction (deleted text stays in freed pages until `convdex compact` or the next
    /// open of the collection).
    #[arg(long)]
    pub no_compact: bool,
    /// Forget in the team store too, for everyone (a tombstone stops every machine from pushing
    /// the session again): `--team postgres://…` (`--team "$CONVDEX_TEAM_URL"` for the
    /// configured one).
    #[arg(long)]
    pub team: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One forgotten (or, in a dry run, selected) session.
#[derive(Debug, Clone, Serialize)]
struct Forgotten {
    project: String,
    session: String,
    last: chrono::DateTime<chrono::Utc>,
    documents: usize,
}

/// Runs `convdex forget`.
pub fn run(ctx: &Ctx, a: ForgetArgs) -> anyhow::Result<()> {
    let index = ctx.index()?;
    let before = a.before.as_deref().map(|s| parse_time(s, false)).transpose()?;
    let (gone, touched) = forget(&index, &a, before)?;
    let mut team_deleted = 0usize;
    if let (Some(team), false) = (&a.team, a.dry_run) {
        let store = convdex::team::TeamStore::connect(&super::team::url(Some(team))?)?;
        for g in &gone {
            for info in touched.iter().filter(|i| i.project == g.project) {
                team_deleted += store.forget(&info.tenant, &info.project, &g.session)?;
            }
        }
        eprintln!(
            "forgot {} sessions in the team store {} for everyone: {team_deleted} documents deleted, tombstones left",
            gone.len(),
            store.shown()
        );
    }
    let mut compacted = Vec::new();
    if !a.dry_run && !a.no_compact {
        for info in &touched {
            compacted.push(index.compact(&info.tenant, &info.project)?);
        }
    }
    if a.json {
        return print_json(
            &serde_json::json!({"dry_run": a.dry_run, "sessions": gone, "compacted": compacted, "team_deleted": team_deleted}),
        );
    }
    let verb = if a.dry_run { "would forget" } else { "forgot" };
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
    if !a.dry_run && !gone.is_empty() && a.no_compact {
        println!(
            "the deleted text stays in freed pages until `convdex compact` (or the next time the collection is opened)"
        );
    }
    Ok(())
}

/// Forgets the selected sessions; returns them with the collections touched.
fn forget(
    index: &Index,
    a: &ForgetArgs,
    before: Option<chrono::DateTime<chrono::Utc>>,
) -> anyhow::Result<(Vec<Forgotten>, Vec<CollectionInfo>)> {
    let picked = match &a.session {
        Some(id) => {
            let found = index.find_session(id, a.project.as_deref())?;
            skipped(&found.skipped);
            let s = found.found;
            let docs = s.collection.session_documents(&s.session)?;
            let last = docs.iter().map(|d| d.timestamp).max().unwrap_or_default();
            vec![convdex::SessionAt {
                info: s.info,
                collection: s.collection,
                session: s.session,
                last,
                documents: docs.len(),
            }]
        }
        None => {
            let found = index.sessions_with_times(a.project.as_deref())?;
            skipped(&found.skipped);
            found.found
        }
    };
    let mut out = Vec::new();
    let mut touched: Vec<CollectionInfo> = Vec::new();
    for convdex::SessionAt { info, collection, session, last, documents: n } in picked {
        if before.is_some_and(|b| last >= b) {
            continue;
        }
        let documents = if a.dry_run { n } else { collection.forget_session(&session)?.documents };
        if !touched.contains(&info) {
            touched.push(info.clone());
        }
        out.push(Forgotten { project: info.project.clone(), session, last, documents });
    }
    Ok((out, touched))
}

/// Rewrite collections' files so that nothing deleted remains in them, and rebuild their graph
/// and lexical index.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Only this project (exact name); all when absent.
    #[arg(long)]
    pub project: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex compact`.
pub fn compact(ctx: &Ctx, a: CompactArgs) -> anyhow::Result<()> {
    let index = ctx.index()?;
    let want = a.project.as_deref().map(convdex::normalize_name);
    let mut reports = Vec::new();
    let mut matched = false;
    for info in index.collections()? {
        if want.as_deref().is_some_and(|p| info.project != p) {
            continue;
        }
        matched = true;
        match index.compact(&info.tenant, &info.project) {
            Ok(r) => reports.push(r),
            Err(e) if e.is_collection_fault() => problem(format!("skipped collection {}: {}", info.name, e.chain())),
            Err(e) => return Err(e.into()),
        }
    }
    if let (false, Some(p)) = (matched, want) {
        anyhow::bail!("no project named exactly `{p}`; `convdex stats` lists them");
    }
    if a.json {
        return print_json(&reports);
    }
    for c in &reports {
        println!("{c}");
    }
    Ok(())
}
