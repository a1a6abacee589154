//! `convdex runs`: compact run records of the sub-agent runs in transcripts.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::print_json;

/// Compact run records of sub-agent runs (Task / Agent calls and their sidechains), read from
/// the transcripts: `task_id|department|attempt|model|tools|files|outcome|duration|error|summary`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// A projects root, one project folder, or one session file (default: the Claude Code
    /// history).
    pub path: Option<PathBuf>,
    /// Only this session (id or id prefix).
    #[arg(long)]
    pub session: Option<String>,
    /// Print the readable blocks instead of the compact lines.
    #[arg(long)]
    pub readable: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex runs`.
pub fn run(a: RunsArgs) -> anyhow::Result<()> {
    let path = a.path.unwrap_or_else(convdex::default_history);
    let mut sessions = convdex::runs_in(&path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(s) = &a.session {
        sessions.retain(|r| r.session_id.starts_with(s.as_str()));
        if sessions.is_empty() {
            anyhow::bail!("no sub-agent runs in a session starting with `{s}` under {}", path.display());
        }
    }
    if a.json {
        return print_json(&sessions);
    }
    let (mut compact, mut readable, mut n) = (0, 0, 0);
    for s in &sessions {
        println!("# {} {}", s.project, s.session_id);
        for r in &s.runs {
            let (c, t) = (r.compact(), r.readable());
            (compact, readable, n) = (compact + c.len(), readable + t.len(), n + 1);
            if a.readable { println!("{t}\n") } else { println!("{c}") }
        }
    }
    if n > 0 {
        eprintln!(
            "{n} runs in {} sessions; compact {compact} bytes, readable {readable} bytes ({:.0}% shorter)",
            sessions.len(),
            100.0 * (1.0 - compact as f64 / readable as f64)
        );
    } else {
        eprintln!("no sub-agent runs under {}", path.display());
    }
    Ok(())
}
