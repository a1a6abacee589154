//! `convdex session ID`: one session, summary first, then its messages.

use clap::Args;
use convdex::DocKind;

use super::render::{decision_json, document_fields, role, snippet};
use super::{Ctx, print_json, skipped};

/// One session by id or id prefix: its summary, then its messages in order.
#[derive(Debug, Args)]
pub struct SessionArgs {
    /// Session id, or a unique prefix of one.
    pub id: String,
    /// Only this project; all projects when absent.
    #[arg(long)]
    pub project: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs `convdex session`.
pub fn run(ctx: &Ctx, a: SessionArgs) -> anyhow::Result<()> {
    let index = ctx.index()?;
    let found = index.find_session(&a.id, a.project.as_deref())?;
    skipped(&found.skipped);
    let s = found.found;
    let docs = s.collection.session_documents(&s.session)?;
    let summary = docs.iter().find(|d| d.kind() == DocKind::Summary);
    let messages: Vec<&convdex::Document> = docs.iter().filter(|d| d.kind() == DocKind::Message).collect();
    if a.json {
        let with_fields = |d: &convdex::Document| {
            let mut v = serde_json::json!({"id": d.id, "time": d.timestamp.to_rfc3339(), "content": d.content});
            if let (serde_json::Value::Object(out), serde_json::Value::Object(f)) = (&mut v, document_fields(d)) {
                out.extend(f);
            }
            v
        };
        let decisions: Vec<serde_json::Value> =
            docs.iter().filter(|d| d.kind() == DocKind::Decision).map(|d| decision_json(&s.info.project, d)).collect();
        return print_json(&serde_json::json!({
            "project": s.info.project, "session": s.session,
            "summary": summary.map(|d| &d.content),
            "messages": messages.iter().map(|d| with_fields(d)).collect::<Vec<_>>(),
            "decisions": decisions,
        }));
    }
    println!("# {} {}", s.info.project, s.session);
    if let Some(sum) = summary {
        println!("\n{}\n", sum.content);
    }
    for d in messages {
        println!("{}  {}: {}", d.timestamp.format("%Y-%m-%d %H:%M"), role(d), snippet(&d.content, 300));
    }
    Ok(())
}
