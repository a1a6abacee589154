//! `convdex remember TEXT`: store a note or decision on purpose.

use clap::Args;
use convdex::{Remember, RememberIn};

use super::{Ctx, print_json};

/// Store a note or decision on purpose (a decision document, extraction method `manual`):
/// searchable at once, shown first in session briefs.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// What to remember, as it should be read later.
    pub text: String,
    /// Why (kept as the decision's reasoning).
    #[arg(long)]
    pub why: Option<String>,
    /// Project by name (default: the project of the current directory; a new one for it when
    /// none is indexed).
    #[arg(long)]
    pub project: Option<String>,
    /// A file it is about (repeatable).
    #[arg(long = "file")]
    pub files: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex remember`.
pub fn run(ctx: &Ctx, a: RememberArgs) -> anyhow::Result<()> {
    let cwd = std::env::current_dir()?.to_string_lossy().into_owned();
    let target = match &a.project {
        Some(p) => RememberIn::Project(p),
        None => RememberIn::Dir(&cwd),
    };
    let what = Remember { text: &a.text, why: a.why.as_deref(), files: &a.files, target, tenant: None };
    let r = convdex::remember(&ctx.index()?, &what)?;
    if a.json {
        return print_json(&serde_json::json!({
            "project": r.project, "collection": r.collection, "id": r.document.id, "new": r.new,
        }));
    }
    let verb = if r.new { "remembered" } else { "already remembered" };
    println!("{verb} in {}: {}", r.project, r.document.id);
    Ok(())
}
