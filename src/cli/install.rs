//! `convdex install [--dry-run]` and `convdex uninstall`: the hooks in Claude Code's user
//! settings and the MCP server in its user registry ([`convdex::setup`]), idempotently, with a
//! backup of each file changed.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use convdex::setup::{self, Commands};
use serde_json::Value;

use super::Ctx;

/// Arguments of `install` and `uninstall`.
#[derive(Debug, Args)]
pub struct InstallArgs {
    /// Show what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// Claude Code's user settings and MCP registry: `$CLAUDE_CONFIG_DIR/settings.json` and
/// `$CLAUDE_CONFIG_DIR/.claude.json` when it is set, else `~/.claude/settings.json` and
/// `~/.claude.json`.
pub fn claude_files() -> anyhow::Result<(PathBuf, PathBuf)> {
    if let Some(d) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        let d = PathBuf::from(d);
        return Ok((d.join("settings.json"), d.join(".claude.json")));
    }
    let home = dirs::home_dir().context("no home directory; set CLAUDE_CONFIG_DIR")?;
    Ok((home.join(".claude").join("settings.json"), home.join(".claude.json")))
}

/// A JSON file's bytes and value (`{}` when it does not exist).
pub fn read_json(path: &Path) -> anyhow::Result<(Option<Vec<u8>>, Value)> {
    match std::fs::read(path) {
        Ok(b) if b.iter().all(u8::is_ascii_whitespace) => Ok((Some(b), Value::Object(Default::default()))),
        Ok(b) => {
            let v = serde_json::from_slice(&b)
                .with_context(|| format!("{} is not valid JSON; fix it by hand, then run again", path.display()))?;
            Ok((Some(b), v))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, Value::Object(Default::default()))),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".convdex-backup");
    path.with_file_name(name)
}

/// Writes `value` to `path` atomically, after keeping the previous bytes in `<file>.convdex-backup`.
fn write(path: &Path, before: Option<&[u8]>, value: &Value) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if let Some(b) = before {
        std::fs::write(backup_path(path), b).with_context(|| format!("cannot back up {}", path.display()))?;
    }
    let tmp = path.with_extension("convdex-tmp");
    std::fs::write(&tmp, format!("{}\n", serde_json::to_string_pretty(value)?))
        .with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))
}

/// Applies `change` to the JSON file at `path`: prints what changes, writes unless `dry_run`.
fn apply(path: &Path, dry_run: bool, change: impl Fn(&Value) -> anyhow::Result<Value>) -> anyhow::Result<bool> {
    let (bytes, before) = read_json(path)?;
    let after = change(&before)?;
    if after == before {
        println!("unchanged: {}", path.display());
        return Ok(false);
    }
    if dry_run {
        println!("would change {}:\n{}", path.display(), serde_json::to_string_pretty(&after)?);
        return Ok(true);
    }
    // Back to exactly what was there before convdex touched it, when that is what is left.
    let backup = read_json(&backup_path(path)).ok().and_then(|(b, v)| Some((b?, v)));
    match backup {
        Some((b, v)) if v == after => {
            std::fs::write(path, b).with_context(|| format!("cannot restore {}", path.display()))?;
        }
        _ => write(path, bytes.as_deref(), &after)?,
    }
    println!("changed: {} (backup: {})", path.display(), backup_path(path).display());
    Ok(true)
}

fn commands(ctx: &Ctx) -> anyhow::Result<Commands> {
    let exe = std::env::current_exe().context("cannot tell where this convdex program is")?;
    let default = super::data_dir(&None).ok();
    let data = (default.as_deref() != Some(ctx.dir.as_path())).then(|| ctx.dir.to_string_lossy().into_owned());
    Ok(Commands::new(&exe.to_string_lossy(), data.as_deref()).with_model(ctx.model.as_deref()))
}

/// Runs `convdex install`.
pub fn install(ctx: &Ctx, a: InstallArgs) -> anyhow::Result<()> {
    let (settings, registry) = claude_files()?;
    let c = commands(ctx)?;
    apply(&settings, a.dry_run, |v| Ok(setup::install_hooks(v, &c)?))?;
    apply(&registry, a.dry_run, |v| Ok(setup::install_mcp(v, &c)?))?;
    Ok(())
}

/// Runs `convdex uninstall`.
pub fn uninstall(_ctx: &Ctx, a: InstallArgs) -> anyhow::Result<()> {
    let (settings, registry) = claude_files()?;
    apply(&settings, a.dry_run, |v| Ok(setup::uninstall_hooks(v)))?;
    apply(&registry, a.dry_run, |v| Ok(setup::uninstall_mcp(v)))?;
    Ok(())
}
