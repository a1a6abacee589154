//! `convdex decisions`: what was decided, why, over what; newest first.

use clap::Args;
use convdex::{DecisionFilter, DocBody};

use super::render::{ledger_json, parse_time, status_mark};
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
    /// What was believed on this date (RFC 3339 or YYYY-MM-DD, the end of that day): decisions
    /// made by then, with the status each had then.
    #[arg(long)]
    pub as_of: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex decisions`: those that may be stated as in force, then the candidates (an
/// extracted decision below the confidence measured right 90 % of the time), each with why,
/// what it replaced and what followed it.
pub fn run(ctx: &Ctx, a: DecisionsArgs) -> anyhow::Result<()> {
    let since = a.since.as_deref().map(|s| parse_time(s, false)).transpose()?;
    let as_of = a.as_of.as_deref().map(|s| parse_time(s, true)).transpose()?;
    let filter = DecisionFilter { file: a.file, since, tag: a.tag, all: a.all, as_of };
    let found = ctx.index()?.ledger(a.project.as_deref(), &filter)?;
    skipped(&found.skipped);
    let rows = found.found;
    if a.json {
        let v: Vec<_> = rows.iter().map(ledger_json).collect();
        return print_json(&v);
    }
    if rows.is_empty() {
        println!("no decisions");
    }
    let mut candidates_heading = false;
    for e in &rows {
        let d = &e.decision;
        let DocBody::Decision(f) = &d.body else { continue };
        if !e.trusted && !candidates_heading {
            candidates_heading = true;
            println!("\ncandidates (extracted with less confidence; check them against their message):");
        }
        let mark = status_mark(d);
        println!("{}  {}  {:.2}  {}{mark}", d.timestamp.format("%Y-%m-%d"), e.project, f.confidence, f.summary);
        if let Some(r) = &f.reasoning {
            println!("      why: {r}");
        }
        if !f.alternatives.is_empty() {
            println!("      instead of: {}", f.alternatives.join(", "));
        }
        if let Some(r) = &e.replaced_by {
            println!("      replaced on {} by: {}", r.time.format("%Y-%m-%d"), r.summary);
        }
        for r in &e.replaces {
            println!("      replaces ({}): {}", r.time.format("%Y-%m-%d"), r.summary);
        }
        if !e.followed_by.commits.is_empty() {
            println!("      then: {}", e.followed_by.commits.join("; "));
        }
        println!("      from: session {} message {}", super::render::short(&d.session_id), f.source_message_uuid);
    }
    Ok(())
}
