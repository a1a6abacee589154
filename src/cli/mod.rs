//! The command line: argument parsing ([`args`]), one file per command, shared rendering
//! ([`render`]), and the MCP server ([`mcp`]). Every command parses its input, asks the library,
//! and renders what comes back; no product logic lives here.

pub mod args;
pub mod blame;
pub mod decisions;
pub mod doctor;
pub mod export;
pub mod forget;
pub mod handoff;
pub mod hook;
pub mod import;
pub mod index;
pub mod install;
pub mod mcp;
pub mod migrate;
pub mod models;
pub mod remember;
pub mod render;
pub mod resume;
pub mod runs;
pub mod search;
pub mod session;
pub mod stats;
pub mod team;
pub mod ui;
pub mod warm;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use convdex::{Index, IndexOptions, Options, Skipped};

/// Problems reported during a command that still finished: the process exits with
/// [`EXIT_PROBLEMS`] instead of 0.
static PROBLEMS: AtomicUsize = AtomicUsize::new(0);

/// Exit code of a command that finished but skipped something (a damaged or busy collection, a
/// session that could not be read, an invalid document): distinct from success (0), failure (1)
/// and usage errors (2).
pub const EXIT_PROBLEMS: u8 = 3;

/// A value the command refuses (a date it cannot read, a query the search refuses): the process
/// exits 2, as for an argument the command-line parser refuses.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// Prints `warning: <message>` to stderr and records a problem.
pub fn problem(message: String) {
    eprintln!("warning: {message}");
    PROBLEMS.fetch_add(1, Ordering::SeqCst);
}

/// Records a problem already reported another way.
pub fn count_problem() {
    PROBLEMS.fetch_add(1, Ordering::SeqCst);
}

/// True when a problem was reported.
pub fn had_problems() -> bool {
    PROBLEMS.load(Ordering::SeqCst) > 0
}

/// Reports the collections a command skipped.
pub fn skipped(skipped: &[Skipped]) {
    for s in skipped {
        problem(s.to_string());
    }
}

/// What every command gets: the data directory and the config file.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The data directory.
    pub dir: PathBuf,
    /// The config file given with `--config`, if any.
    pub config: Option<PathBuf>,
    /// The embedding model given with `--model` (or `$CONVDEX_MODEL`), if any.
    pub model: Option<String>,
}

impl Ctx {
    /// Index options with the chosen model.
    pub fn options(&self) -> anyhow::Result<Options> {
        let mut options = Options::default();
        if let Some(m) = &self.model {
            options.embed = options.embed.model(m.clone());
            options.embed.spec()?;
        }
        Ok(options)
    }

    /// The data directory's index, with the chosen model.
    pub fn index(&self) -> anyhow::Result<Index> {
        Ok(Index::open(&self.dir, self.options()?)?)
    }

    /// The index for a command that embeds many texts (`index`, `import`, `migrate`): ONNX
    /// Runtime's idle threads spin between calls ([`convdex::EmbedOptions::spin_wait`]), which
    /// `benches/embed` (part `spin`) measured about 10 % faster for bulk embedding.
    pub fn bulk_index(&self) -> anyhow::Result<Index> {
        Ok(Index::open(&self.dir, self.bulk_options()?)?)
    }

    /// [`Ctx::options`] for a command that embeds many texts ([`Ctx::bulk_index`]).
    pub fn bulk_options(&self) -> anyhow::Result<Options> {
        let mut options = self.options()?;
        options.embed.spin_wait = true;
        Ok(options)
    }

    /// Indexing options with the config file applied.
    pub fn index_options(&self, mut options: IndexOptions) -> anyhow::Result<IndexOptions> {
        apply_config(self.config.as_deref(), &mut options)?;
        Ok(options)
    }
}

/// Loads the config file (default `~/.config/convdex/config.json`) into indexing options.
pub fn apply_config(config: Option<&Path>, options: &mut IndexOptions) -> anyhow::Result<()> {
    let path =
        config.map(Path::to_path_buf).or_else(|| dirs::config_dir().map(|d| d.join("convdex").join("config.json")));
    if let Some(p) = path {
        convdex::Config::load(&p)?.apply(options);
    }
    Ok(())
}

/// The data directory: `--data-dir`, `$CONVDEX_DATA_DIR`, else the platform's.
pub fn data_dir(given: &Option<PathBuf>) -> anyhow::Result<PathBuf> {
    match given {
        Some(d) => Ok(d.clone()),
        None => dirs::data_dir().map(|d| d.join("convdex")).context("no platform data dir; pass --data-dir"),
    }
}

/// Prints a value as pretty JSON.
pub fn print_json(v: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}
