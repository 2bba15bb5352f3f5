//! `ibqos check`: diagnostics for configuration files.

use std::io::Write as _;

use anyhow::Result;

use crate::cli::CheckArgs;
use crate::commands::{Outcome, load_config};
use crate::diagnostics::Report;

pub fn run(args: &CheckArgs) -> Result<Outcome> {
    let mut out = std::io::stdout().lock();
    let mut report = Report::new(args.diagnostics.strict);
    for path in &args.files {
        report.extend(load_config(path)?.diagnostics);
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
