//! The `ibqos` command.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod control;
mod diagnostics;
mod files;
mod logfile;
mod logging;
mod metrics;
mod port_wait;
mod signals;
mod systemd;

use cli::{Cli, Command};
use commands::Outcome;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Check(args) => commands::check::run(args),
        Command::Plan(args) => commands::plan::run(args),
        Command::Migrate(args) => commands::migrate::run(args),
        Command::Query(args) => commands::query::run(args),
        Command::Sim(args) => commands::sim::run(args),
        Command::LftBalance(args) => commands::lft_balance::run(args),
        Command::CreditLoops(args) => commands::credit_loops::run(args),
        Command::Fabric(command) => commands::fabric::run(command),
        Command::Ctl(args) => commands::ctl::run(args),
        Command::Ports(args) => commands::ports::run(args),
        Command::GenerateAssets(args) => commands::generate_assets::run(args),
        Command::Sm(args) => match &args.log_file {
            Some(path) => logging::Logging::to_file(path)
                .and_then(|logging| commands::sm::run(args, &logging)),
            None => commands::sm::run(args, &logging::Logging::to_stderr()),
        },
        Command::Dump(args) => {
            logging::Logging::to_stderr();
            commands::dump::run(args)
        }
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
        Ok(Outcome::Deadlocked) => ExitCode::from(3),
        // `ibqos plan ... | head` closes the pipe early; that is the reader's choice, not a failure.
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprint!("{}", diagnostics::render_error(&error));
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .downcast_ref::<std::io::Error>()
        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
}
