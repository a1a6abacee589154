//! `convdex handoff`: a markdown brief of the latest session.

use clap::Args;

use super::{Ctx, print_json, skipped};

/// A markdown brief of the latest session: what was being done, decided, open, broken.
#[derive(Debug, Args)]
pub struct HandoffArgs {
    /// Project (the most recently indexed one when absent).
    #[arg(long)]
    pub project: Option<String>,
    /// Print JSON: {project, brief}.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex handoff`.
pub fn run(ctx: &Ctx, a: HandoffArgs) -> anyhow::Result<()> {
    let found = ctx.index()?.latest_handoff(a.project.as_deref())?;
    skipped(&found.skipped);
    let Some((project, brief)) = found.found else {
        anyhow::bail!(
            "no session summary to hand off: run `convdex index` first (a session whose transcript holds no request of the person's has no summary)"
        );
    };
    if a.json {
        return print_json(&serde_json::json!({"project": project, "brief": brief}));
    }
    println!("{brief}");
    Ok(())
}
