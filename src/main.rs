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
            // Written whole, so that a closed pipe is an error here, not a panic in the generator.
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cmd, "convdex", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)?;
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
    // Output piped into a reader that stops early (`| head`): `println!` panics on the closed
    // pipe; the command stops there, quietly and successfully, as other command-line tools do
    // (what was written stays written: a store write in progress is left as a kill leaves it).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(finished().into());
        }
        let in_storage = info.location().is_some_and(|l| l.file().contains("/redb-"));
        if !in_storage {
            default_hook(info);
        }
    }));
    match run(Cli::parse()) {
        Err(e) if !broken_pipe(&e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(if usage(&e) { 2 } else { 1 })
        }
        // Done, or stopped by a reader that had read enough.
        _ => ExitCode::from(finished()),
    }
}

/// The exit code of a command that finished: 0, or [`cli::EXIT_PROBLEMS`] when it reported
/// problems.
fn finished() -> u8 {
    if cli::had_problems() { cli::EXIT_PROBLEMS } else { 0 }
}

/// Whether the error is the closed pipe of a reader that stopped early.
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// Whether the error is a value the command refuses ([`cli::Usage`]; exit code 2, as for an
/// argument the parser refuses), or a query the library refused as such: empty or too long, a
/// limit out of range, an inverted time range.
fn usage(e: &anyhow::Error) -> bool {
    use convdex::Error as E;
    e.chain().any(|c| {
        c.downcast_ref::<cli::Usage>().is_some()
            || matches!(
                c.downcast_ref::<E>(),
                Some(
                    E::EmptyQuery
                        | E::ZeroLimit
                        | E::LimitTooLarge { .. }
                        | E::QueryTooLong { .. }
                        | E::InvertedTimeRange { .. }
                )
            )
    })
}
