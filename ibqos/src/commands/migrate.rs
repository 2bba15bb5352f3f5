//! `ibqos migrate`: opensm.conf to ibqos.toml and back.

use std::fs::OpenOptions;
use std::io::Write;

use anyhow::{Context, Result, bail};
use ibqos_opensm::{Format, to_native_toml, to_opensm_conf};

use crate::cli::MigrateArgs;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;

pub fn run(args: &MigrateArgs) -> Result<Outcome> {
    let loaded = load_config(&args.input)?;
    let mut report = Report::new(args.diagnostics.strict);
    report.extend(loaded.diagnostics);
    // A line the reader could not use would silently vanish from the output: refuse until it
    // is fixed, before converting anything.
    if report.error_count() > 0 {
        eprint!("{}", report.render_human(true));
        eprintln!(
            "nothing written: {} has errors; fix them and run again",
            args.input.display()
        );
        return Ok(Outcome::Failed);
    }
    let (text, losses) = match loaded.format {
        Format::OpenSmConf => to_native_toml(&loaded.settings),
        Format::NativeToml => to_opensm_conf(&loaded.settings),
    };
    report.extend(losses);
    eprint!("{}", report.render_human(true));
    let outcome = Outcome::from_report(&report);
    if outcome == Outcome::Failed {
        eprintln!("nothing written: see the problems above");
        return Ok(outcome);
    }
    write_output(args, &text)?;
    Ok(outcome)
}

fn write_output(args: &MigrateArgs, text: &str) -> Result<()> {
    if args.output.as_os_str() == "-" {
        std::io::stdout().lock().write_all(text.as_bytes())?;
        return Ok(());
    }
    if args.output.exists() && !args.force {
        bail!(
            "{} exists; pass --force to replace it",
            args.output.display()
        );
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&args.output)
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    eprintln!("wrote {}", args.output.display());
    Ok(())
}
