//! The `convdex` command-line tool: parses the command line and hands it to the command's
//! module in [`cli`]. Exit codes: 0 ok, 1 error, 2 usage, 3 done with problems.

use std::process::ExitCode;

use clap::Parser;

mod cli;

use cli::args::{Cli, Command};

fn run(cli: Cli) -> anyhow::Result<()> {
    let ctx = cli::Ctx { dir: cli::data_dir(&cli.data_dir)?, config: cli.config, model: cli.model };
    match cli.command {
        Command::Index(a) => cli::index::run(&ctx, a),
        Command::Import(a) => cli::import::run(&ctx, a),
        Command::Search(a) => cli::search::run(&ctx, a),
        Command::Decisions(a) => cli::decisions::run(&ctx, a),
        Command::Resume(a) => cli::resume::run(&ctx, a),
        Command::Ui(a) => cli::ui::run(&ctx, a),
        Command::Push(a) => cli::team::push(&ctx, a),
        Command::Pull(a) => cli::team::pull(&ctx, a),
        Command::Team(a) => cli::team::team(&ctx, a),
        Command::Blame(a) => cli::blame::run(&ctx, a),
        Command::Handoff(a) => cli::handoff::run(&ctx, a),
        Command::Forget(a) => cli::forget::run(&ctx, a),
        Command::Compact(a) => cli::forget::compact(&ctx, a),
        Command::Mcp => cli::mcp::serve(&ctx),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "convdex", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => {
            let cmd = <Cli as clap::CommandFactory>::command();
            clap_mangen::Man::new(cmd).render(&mut std::io::stdout())?;
            Ok(())
        }
        Command::Runs(a) => cli::runs::run(a),
        Command::Export(a) => cli::export::run(&ctx, a),
        Command::Session(a) => cli::session::run(&ctx, a),
        Command::Doctor(a) => cli::doctor::run(&ctx, a),
        Command::Stats(a) => cli::stats::run(&ctx, a),
        Command::Migrate(a) => cli::migrate::run(&ctx, a),
        Command::Hook { kind } => cli::hook::run(&ctx, kind),
        Command::Remember(a) => cli::remember::run(&ctx, a),
        Command::Install(a) => cli::install::install(&ctx, a),
        Command::Uninstall(a) => cli::install::uninstall(&ctx, a),
        Command::Warm(a) => cli::warm::run(&ctx, a),
        Command::Models { action } => cli::models::run(action),
    }
}

fn main() -> ExitCode {
    // The storage engine panics on some damaged pages; convdex catches those panics and reports
    // the collection as damaged (with the fix), so they are not printed twice. Any other panic
    // is a bug and keeps Rust's report.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_storage = info.location().is_some_and(|l| l.file().contains("/redb-"));
        if !in_storage {
            default_hook(info);
        }
    }));
    match run(Cli::parse()) {
        Ok(()) if cli::had_problems() => ExitCode::from(cli::EXIT_PROBLEMS),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
