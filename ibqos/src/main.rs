//! The `ibqos` command.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod diagnostics;
mod logfile;
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
        Command::Fabric(command) => commands::fabric::run(command),
        Command::Ports(args) => commands::ports::run(args),
        Command::GenerateAssets(args) => commands::generate_assets::run(args),
        Command::Sm(args) => match &args.log_file {
            Some(path) => logfile::LogFile::open(path).and_then(|file| {
                init_logging_to(file, false);
                commands::sm::run(args)
            }),
            None => {
                init_logging();
                commands::sm::run(args)
            }
        },
        Command::Dump(args) => {
            init_logging();
            commands::dump::run(args)
        }
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Failed) => ExitCode::from(1),
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

/// Logs go to standard error, at `info` unless RUST_LOG says otherwise (OpenSM's milestones are
/// info: discovering, LIDs assigned, switches configured, SUBNET UP). Colour only on a terminal,
/// and never with NO_COLOR set: a log file or the journal gets plain lines.
fn init_logging() {
    use std::io::IsTerminal;
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    init_logging_to(std::io::stderr, colour);
}

/// Logs to `writer`, at `info` unless RUST_LOG says otherwise.
fn init_logging_to<W>(writer: W, colour: bool)
where
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Send + Sync + 'static,
{
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(colour)
        .init();
}
