//! `ibqos generate-assets DIR` (hidden): the man pages (section 8: ibqos is an administrator's
//! daemon in /usr/sbin, as opensm(8) is) and the bash, zsh and fish completions, rendered from
//! the clap definitions so they never drift from the command line. The Debian package is built
//! from what this writes.

use std::path::Path;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, GenerateAssetsArgs};
use crate::commands::Outcome;

pub fn run(args: &GenerateAssetsArgs) -> Result<Outcome> {
    let man = args.dir.join("man");
    let completions = args.dir.join("completions");
    for dir in [&man, &completions] {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut command = Cli::command().disable_help_subcommand(true);
    command.build();
    write_man_pages(&command, &man)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        clap_complete::generate_to(shell, &mut command, "ibqos", &completions)
            .with_context(|| format!("cannot write the {shell} completion"))?;
    }
    Ok(Outcome::Success)
}

/// One page per command and subcommand (ibqos.8, ibqos-sm.8, ibqos-fabric-serve.8, ...), hidden
/// ones left out.
fn write_man_pages(command: &clap::Command, dir: &Path) -> Result<()> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_man_pages(sub, dir)?;
    }
    clap_mangen::Man::new(command.clone())
        .section("8")
        .source(format!("ibqos {}", env!("CARGO_PKG_VERSION")))
        .generate_to(dir)
        .with_context(|| format!("cannot write the man page of {}", command.get_name()))?;
    Ok(())
}
