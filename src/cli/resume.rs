//! `convdex resume ID`: the command that reopens a past session in its own agent and directory.

use clap::Args;

use super::{Ctx, print_json, skipped};

/// The command that reopens a session in its own agent and directory (`claude --resume …`,
/// `codex resume …`), printed to copy; `--run` runs it.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The session: its id or a unique prefix of one.
    pub id: String,
    /// Only this project.
    #[arg(long)]
    pub project: Option<String>,
    /// Run the command (in a shell) instead of printing it.
    #[arg(long)]
    pub run: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex resume`.
pub fn run(ctx: &Ctx, a: ResumeArgs) -> anyhow::Result<()> {
    let found = ctx.index()?.resume(&a.id, a.project.as_deref())?;
    skipped(&found.skipped);
    let r = found.found;
    if a.json {
        return print_json(&r);
    }
    if a.run {
        let status = std::process::Command::new("sh").args(["-c", &r.command]).status()?;
        std::process::exit(status.code().unwrap_or(1));
    }
    println!("{}", r.command);
    Ok(())
}
