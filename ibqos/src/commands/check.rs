//! `ibqos check`: diagnostics for configuration files.

use std::io::Write as _;

use anyhow::{Context, Result};
use ibqos_opensm::{PartitionsLoad, PolicyLoad, load_partitions, qos_policy};

use crate::cli::CheckArgs;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;

pub fn run(args: &CheckArgs) -> Result<Outcome> {
    let mut out = std::io::stdout().lock();
    let mut report = Report::new(args.diagnostics.strict);
    for path in &args.files {
        let loaded = load_config(path)?;
        report.extend(loaded.diagnostics);
        if args.qos_policy.is_none() {
            report.extend(loaded.policy.iter().flat_map(PolicyLoad::diagnostics));
        }
        if args.partitions.is_none() {
            report.extend(
                loaded
                    .partitions
                    .iter()
                    .flat_map(PartitionsLoad::diagnostics),
            );
        }
    }
    if let Some(path) = &args.partitions {
        // Named on the command line: a missing file is an error, wherever it is.
        let path = path.display().to_string();
        std::fs::metadata(&path).with_context(|| format!("cannot read {path}"))?;
        report.extend(load_partitions(&path).diagnostics());
    }
    if let Some(path) = &args.qos_policy {
        let bytes =
            std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
        match qos_policy::read(&path.display().to_string(), &bytes) {
            Ok(read) => report.extend(read.diagnostics),
            Err(error) => report.extend([error.to_diagnostic()]),
        }
    }
    if args.json {
        for diagnostic in report.to_json() {
            writeln!(out, "{diagnostic}")?;
        }
    } else {
        write!(out, "{}", report.render_human(true))?;
        if report.error_count() + report.warning_count() == 0 {
            writeln!(
                out,
                "{} file(s) checked: no problems found",
                args.files.len()
            )?;
        }
    }
    Ok(Outcome::from_report(&report))
}
