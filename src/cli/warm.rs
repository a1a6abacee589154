//! `convdex warm`: the warm helper ([`convdex::Index::serve_warm`]) in the foreground, its
//! status, or stopping it; and [`spawn`], which a search that loaded the model in its own
//! process uses to start one in the background for the searches after it.

use std::time::Duration;

use clap::Args;
use convdex::{Across, Answered, Index, ProjectHit, Query, WarmExit, WarmOptions};

use super::{Ctx, print_json};

/// The environment variable that turns the warm helper off (`off`, `0`, `false` or `no`):
/// searches neither ask one nor start one.
pub const WARM_ENV: &str = "CONVDEX_WARM";

/// Keep the model and the collections loaded between searches.
#[derive(Debug, Args)]
pub struct WarmArgs {
    /// Exit after this many seconds without a request.
    #[arg(long, default_value_t = 600)]
    pub idle: u64,
    /// Show the running helper (exit 3 when none runs) instead of starting one.
    #[arg(long, conflicts_with = "stop")]
    pub status: bool,
    /// Stop the running helper (returns once it has let go of the data dir).
    #[arg(long)]
    pub stop: bool,
    /// Print --status as JSON.
    #[arg(long, requires = "status")]
    pub json: bool,
}

/// Whether searches may use (and start) the warm helper: on unless [`WARM_ENV`] says off.
pub fn enabled() -> bool {
    let v = std::env::var(WARM_ENV).unwrap_or_default().to_ascii_lowercase();
    !matches!(v.as_str(), "off" | "0" | "false" | "no")
}

/// A front end's search (`convdex search`, the MCP `search` tool): through the data dir's warm
/// helper when [`enabled`] (in this process when none answers), else in this process; with
/// `sessions`, the pool of hits that [`convdex::group_sessions`] ranks sessions from
/// ([`convdex::pool_query`]). The second value says who answered, `None` when warm searches are off.
pub fn search(
    index: &Index,
    project: Option<&str>,
    query: &Query,
    sessions: bool,
) -> convdex::Result<(Across<Vec<ProjectHit>>, Option<Answered>)> {
    let pooled;
    let query = if sessions {
        pooled = convdex::pool_query(query);
        &pooled
    } else {
        query
    };
    if enabled() {
        let (found, answered) = index.search_warm(project, query)?;
        Ok((found, Some(answered)))
    } else {
        Ok((index.search(project, query)?, None))
    }
}

/// Runs `convdex warm`.
pub fn run(ctx: &Ctx, a: WarmArgs) -> anyhow::Result<()> {
    if a.status || a.stop {
        let index = ctx.index()?;
        return status_or_stop(&index, &a);
    }
    let mut options = ctx.options()?;
    // A collection another process holds is declined (that process's searches answer it),
    // never waited for.
    options.collection.lock_wait = Duration::from_millis(200);
    let index = Index::open(&ctx.dir, options)?;
    let exit = index.serve_warm(&WarmOptions { idle: Duration::from_secs(a.idle), ..WarmOptions::default() })?;
    if exit == WarmExit::AlreadyServed {
        eprintln!("a warm helper already serves {}", ctx.dir.display());
    }
    Ok(())
}

fn status_or_stop(index: &Index, a: &WarmArgs) -> anyhow::Result<()> {
    if a.stop {
        if index.stop_warm() {
            println!("stopped the warm helper");
        } else {
            println!("no warm helper runs for {}", index.root().display());
        }
        return Ok(());
    }
    match index.warm_status() {
        Some(s) if a.json => print_json(&s),
        Some(s) => {
            println!(
                "warm helper {}: {} collections open, model {}, {} searches, idle {} s",
                s.pid, s.collections, s.model, s.searches, s.idle_seconds
            );
            Ok(())
        }
        None => {
            println!("no warm helper runs for {}", index.root().display());
            super::count_problem();
            Ok(())
        }
    }
}

/// Starts `convdex warm` for this data directory in the background, detached from this
/// process and its terminal; it exits by itself when idle. Failing to start is not an error
/// (the next search runs in its own process again).
pub fn spawn(ctx: &Ctx) {
    let Ok(exe) = std::env::current_exe() else { return };
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--data-dir").arg(&ctx.dir);
    if let Some(m) = &ctx.model {
        cmd.arg("--model").arg(m);
    }
    cmd.arg("warm")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Its own process group: a Ctrl-C meant for the search does not reach it.
        cmd.process_group(0);
        let _ = cmd.spawn();
    }
}
