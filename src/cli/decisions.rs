//! `convdex decisions`: what was decided, why, over what; newest first.

use clap::Args;
use convdex::{DecisionFilter, DocBody};

use super::render::{decision_json, parse_time, status_mark};
use super::{Ctx, print_json, skipped};

/// Decisions, newest first (active only unless --all).
#[derive(Debug, Args)]
pub struct DecisionsArgs {
    /// Only this project; all projects when absent.
    #[arg(long)]
    pub project: Option<String>,
    /// Only decisions about this file.
    #[arg(long)]
    pub file: Option<String>,
    /// Only at or after this time (RFC 3339 or YYYY-MM-DD).
    #[arg(long)]
    pub since: Option<String>,
    /// Only decisions with this tag.
    #[arg(long)]
    pub tag: Option<String>,
    /// Include superseded and rejected decisions (marked).
    #[arg(long)]
    pub all: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex decisions`.
pub fn run(ctx: &Ctx, a: DecisionsArgs) -> anyhow::Result<()> {
    let since = a.since.as_deref().map(|s| parse_time(s, false)).transpose()?;
    let filter = DecisionFilter { file: a.file, since, tag: a.tag, all: a.all };
    let found = ctx.index()?.decisions(a.project.as_deref(), &filter)?;
    skipped(&found.skipped);
    let rows = found.found;
    if a.json {
        let v: Vec<_> = rows.iter().map(|(p, d)| decision_json(p, d)).collect();
        return print_json(&v);
    }
    if rows.is_empty() {
        println!("no decisions");
    }
    for (p, d) in &rows {
        let DocBody::Decision(f) = &d.body else { continue };
        let mark = status_mark(d);
        println!("{}  {}  {:.2}  {}{mark}", d.timestamp.format("%Y-%m-%d"), p, f.confidence, f.summary);
        if let Some(r) = &f.reasoning {
            println!("      why: {r}");
        }
        if !f.alternatives.is_empty() {
            println!("      instead of: {}", f.alternatives.join(", "));
        }
    }
    Ok(())
}
