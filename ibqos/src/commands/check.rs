//! `ibqos check`: diagnostics for configuration files. They are what the command answers, so
//! all of them go to standard output, a file it cannot read among them (with `--json`, as JSON
//! like the others).

use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use ibqos_opensm::{
    Code, Diagnostic, LoadError, Loaded, PartitionsLoad, PolicyLoad, Settings, changed_options,
    load, load_partitions, qos_policy, sort_in_reading_order,
};
use ibqos_sm::config::{Takes, routing_engine, takes_effect};

use crate::cli::CheckArgs;
use crate::commands::Outcome;
use crate::diagnostics::Report;

pub fn run(args: &CheckArgs) -> Result<Outcome> {
    let mut out = std::io::stdout().lock();
    let mut report = Report::new(args.diagnostics.strict);
    for path in &args.files {
        let loaded = match load(path) {
            Ok(loaded) => loaded,
            Err(error) => {
                report.extend(error.diagnostics());
                continue;
            }
        };
        let mut diagnostics = not_acted_on(&loaded);
        diagnostics.extend(loaded.diagnostics);
        sort_in_reading_order(&mut diagnostics);
        report.extend(diagnostics);
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
        match std::fs::metadata(path) {
            Ok(_) => report.extend(load_partitions(&path.display().to_string()).diagnostics()),
            Err(error) => report.extend(unreadable(path, error)),
        }
    }
    if let Some(path) = &args.qos_policy {
        match std::fs::read(path) {
            Ok(bytes) => match qos_policy::read(&path.display().to_string(), &bytes) {
                Ok(read) => report.extend(read.diagnostics),
                Err(error) => report.extend([error.to_diagnostic()]),
            },
            Err(error) => report.extend(unreadable(path, error)),
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

/// A file named on the command line that cannot be read, said as a configuration that cannot.
fn unreadable(path: &Path, error: std::io::Error) -> Vec<Diagnostic> {
    let path = path.to_path_buf();
    LoadError::Read { path, error }.diagnostics()
}

/// A warning for each option the file sets to other than OpenSM's default that ibqos does not
/// act on (what a reload reports as "ibqos does not use it"), and for a routing engine ibqos
/// does not implement: OpenSM would, so the fabric would not run as the file says.
fn not_acted_on(loaded: &Loaded) -> Vec<Diagnostic> {
    let settings = &loaded.settings;
    let mut ignored: Vec<(String, String)> = changed_options(&Settings::default(), settings)
        .into_iter()
        .filter(|change| takes_effect(&change.key) == Takes::Never)
        .map(|change| {
            let what = format!(
                "ibqos does not act on `{}` yet: it runs as with OpenSM's default {}, not {}",
                change.key, change.old, change.new
            );
            (change.key, what)
        })
        .collect();
    if routing_engine(settings).is_none() {
        let engine = settings.sm.routing_engine.clone().unwrap_or_default();
        ignored.push((
            "routing_engine".to_string(),
            format!("ibqos has no routing engine {engine:?}: it routes with minhop (it has minhop and updn)"),
        ));
    }
    ignored
        .into_iter()
        .map(|(key, what)| {
            Diagnostic::warning(Code::NotActedOn, what).at(loaded.places.get(&key).cloned())
        })
        .collect()
}
