//! `convdex stats`: per collection, counts, size, model, last indexed.

use clap::Args;

use super::{Ctx, print_json, skipped};

/// Per-collection counts.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex stats`.
pub fn run(ctx: &Ctx, a: StatsArgs) -> anyhow::Result<()> {
    let found = ctx
        .index()?
        .each(None, |info, c| Ok((info.clone(), c.stats()?, c.migration_progress()?, c.pending_vectors()?)))?;
    skipped(&found.skipped);
    let rows = found.found;
    if a.json {
        let v: Vec<_> = rows
            .iter()
            .map(|(i, s, m, pending)| {
                let migration = m.as_ref().map(|p| serde_json::json!({"to": p.to, "done": p.done, "total": p.total}));
                serde_json::json!({"collection": i.name, "tenant": i.tenant, "project": i.project, "stats": s,
                    "migration": migration, "pending_vectors": pending})
            })
            .collect();
        return print_json(&v);
    }
    for (i, s, m, pending) in rows {
        let last = s.last_indexed.map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_else(|| "never".into());
        let mut forgotten =
            if s.forgotten_sessions > 0 { format!("; {} forgotten", s.forgotten_sessions) } else { String::new() };
        if let Some(p) = m {
            forgotten.push_str(&format!("; moving to {} ({} of {} re-embedded)", p.to, p.done, p.total));
        }
        if pending > 0 {
            forgotten.push_str(&format!("; {pending} documents wait for vectors (`convdex index` embeds them)"));
        }
        println!(
            "{}: {} sessions, {} messages, {} decisions, {} summaries, {} chunks, {:.1} MB; model {}; last indexed {last}{forgotten}",
            i.name,
            s.sessions,
            s.messages,
            s.decisions,
            s.summaries,
            s.chunks,
            s.bytes_on_disk as f64 / 1e6,
            s.model,
        );
    }
    Ok(())
}
