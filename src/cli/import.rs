//! `convdex import FILE`: structured conversations (Slack, Discord, WhatsApp, …).

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::{Ctx, count_problem, print_json};

/// Import structured conversations (Slack, Discord, WhatsApp, …) from a JSON file: one
/// document, an array, or JSON Lines. Bad documents are reported and skipped.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The file.
    pub file: PathBuf,
    /// Project (collection) to import into (default: the file's name).
    #[arg(long)]
    pub project: Option<String>,
    /// Tenant (default: the OS user).
    #[arg(long)]
    pub tenant: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex import`.
pub fn run(ctx: &Ctx, a: ImportArgs) -> anyhow::Result<()> {
    let file = a.file;
    let bytes = std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let (good, bad) = convdex::ingest::structured::parse(&bytes);
    let report_bad = |bad: &[convdex::ingest::structured::Invalid]| {
        for b in bad {
            eprintln!("skipped document {} ({}): {}", b.index, b.id.as_deref().unwrap_or("no id"), b.message);
        }
    };
    if good.is_empty() {
        report_bad(&bad);
        let what =
            if bad.is_empty() { "no document found".to_string() } else { format!("{} invalid documents", bad.len()) };
        anyhow::bail!(
            "nothing to import from {}: {what} (expected structured conversations: one JSON document, an array, or \
             JSON Lines; see `convdex import --help`)",
            file.display()
        );
    }
    let project = a.project.unwrap_or_else(|| {
        convdex::normalize_name(&file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default())
    });
    let tenant = a.tenant.unwrap_or_else(convdex::default_tenant);
    let index = ctx.bulk_index()?;
    let coll = index.collection(&tenant, &project)?;
    let mut report = convdex::import_conversations(&coll, &good)?;
    report.invalid = bad;
    coll.flush()?;
    if !report.invalid.is_empty() {
        count_problem();
    }
    if a.json {
        return print_json(&report);
    }
    report_bad(&report.invalid);
    println!(
        "imported {} conversations ({} messages) into {}; {} invalid",
        report.conversations,
        report.messages,
        coll.name(),
        report.invalid.len()
    );
    Ok(())
}
