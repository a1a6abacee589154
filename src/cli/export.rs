//! `convdex export`: a project's layered context, V1 or V2, and `--decode`.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::{Ctx, skipped};

/// Export a project's sessions, decisions, files, topics and blockers as layered context:
/// V1 (readable JSON) or V2 (string table, positional arrays; for a model's context).
/// Sizes and tokens of both forms go to stderr.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// v1 or v2.
    #[arg(long, default_value = "v2", value_parser = ["v1", "v2"])]
    pub format: String,
    /// Project to export (required when there are several).
    #[arg(long)]
    pub project: Option<String>,
    /// Instead of exporting, read this V2 file and print it as V1.
    #[arg(long, value_name = "V2_FILE")]
    pub decode: Option<PathBuf>,
}

/// Runs `convdex export`.
pub fn run(ctx: &Ctx, a: ExportArgs) -> anyhow::Result<()> {
    if let Some(file) = a.decode {
        let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let v2: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
        let v1 = convdex::export::decode(&v2).context("not a valid V2 export")?;
        println!("{}", serde_json::to_string_pretty(&v1)?);
        return Ok(());
    }
    let found = ctx.index()?.readable(a.project.as_deref())?;
    skipped(&found.skipped);
    let mut colls = found.found;
    if colls.len() != 1 {
        let names: Vec<String> = colls.iter().map(|(i, _)| i.project.clone()).collect();
        anyhow::bail!("{} projects match; pass --project with one of: {}", colls.len(), names.join(", "));
    }
    let (_, coll) = colls.remove(0);
    let v1 = coll.guarded(|c| c.export_v1())?;
    let sizes = convdex::export::sizes(&v1)?;
    if a.format == "v1" {
        println!("{}", serde_json::to_string_pretty(&v1)?);
    } else {
        println!("{}", convdex::export::encode(&v1)?);
    }
    eprintln!(
        "pretty V1 {} bytes {} tokens; minified V1 {} bytes {} tokens; V2 {} bytes {} tokens ({:.0}% fewer tokens than \
         pretty V1; cl100k_base)",
        sizes.v1_pretty.bytes,
        sizes.v1_pretty.tokens,
        sizes.v1_min.bytes,
        sizes.v1_min.tokens,
        sizes.v2.bytes,
        sizes.v2.tokens,
        100.0 * (1.0 - sizes.v2.tokens as f64 / sizes.v1_pretty.tokens.max(1) as f64)
    );
    Ok(())
}
