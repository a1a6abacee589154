//! `convdex blame PATH`: the sessions that discussed or changed a file, newest first.

use clap::Args;
use convdex::{DocBody, DocKind};

use super::render::decision_json;
use super::{Ctx, print_json, skipped};

/// Why is this file the way it is: sessions that discussed or changed it, newest first, with
/// their decisions and commits.
#[derive(Debug, Args)]
pub struct BlameArgs {
    /// File path, relative to the project root or absolute.
    pub path: String,
    /// Only this project; all projects when absent.
    #[arg(long)]
    pub project: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex blame`.
pub fn run(ctx: &Ctx, a: BlameArgs) -> anyhow::Result<()> {
    let found = ctx.index()?.blame(a.project.as_deref(), &a.path)?;
    skipped(&found.skipped);
    let sessions = found.found;
    if a.json {
        let v: Vec<_> = sessions
            .iter()
            .map(|s| {
                serde_json::json!({
                    "project": s.project, "session": s.session, "last": s.last.to_rfc3339(), "actions": s.actions,
                    "decisions": s.documents.iter().filter(|d| d.kind() == DocKind::Decision)
                        .map(|d| decision_json(&s.project, d)).collect::<Vec<_>>(),
                    "commits": s.commits,
                })
            })
            .collect();
        return print_json(&v);
    }
    if sessions.is_empty() {
        println!("no session discussed {}", a.path);
    }
    for s in &sessions {
        println!("{}  {}  {}  [{}]", s.last.format("%Y-%m-%d %H:%M"), s.project, s.session, s.actions.join(", "));
        for d in &s.documents {
            if let DocBody::Decision(f) = &d.body {
                println!("    decided: {}", f.summary);
            }
        }
        for c in &s.commits {
            println!("    commit:  {c}");
        }
    }
    Ok(())
}
