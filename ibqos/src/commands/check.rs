//! `ibqos check`: diagnostics for configuration files. They are what the command answers, so
//! all of them go to standard output, a file it cannot read among them (with `--json`, as JSON
//! like the others).

use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use ibqos_fabric::routing::{ENGINES, EngineList, Listed, OPENSM_ONLY_ENGINES};
use ibqos_opensm::{
    Code, Diagnostic, LoadError, Loaded, Location, PartitionsLoad, PolicyLoad, Settings,
    changed_options, load, load_partitions, qos_policy, sort_in_reading_order,
};
use ibqos_sm::config::{Takes, takes_effect};

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
/// act on (what a reload reports as "ibqos does not use it"), and for each routing engine it
/// does not have ([`routing_engine_names`]).
fn not_acted_on(loaded: &Loaded) -> Vec<Diagnostic> {
    let settings = &loaded.settings;
    let mut diagnostics: Vec<Diagnostic> = changed_options(&Settings::default(), settings)
        .into_iter()
        .filter(|change| takes_effect(&change.key) == Takes::Never)
        .map(|change| {
            let what = format!(
                "ibqos does not act on `{}` yet: it runs as with OpenSM's default {}, not {}",
                change.key, change.old, change.new
            );
            Diagnostic::warning(Code::NotActedOn, what).at(loaded.places.get(&change.key).cloned())
        })
        .collect();
    diagnostics.extend(routing_engine_names(loaded));
    diagnostics
}

/// A warning at each name of `routing_engine` that does not route: one OpenSM has and ibqos
/// does not yet (the next engine routes in its place), and one OpenSM does not know either.
fn routing_engine_names(loaded: &Loaded) -> Vec<Diagnostic> {
    let Some(value) = loaded.settings.sm.routing_engine.as_deref() else {
        return Vec::new();
    };
    let place = loaded.places.get("routing_engine");
    // The value's first byte in its line, to place each name at its own column.
    let value_at = place.and_then(|p| {
        let after = p.col.checked_sub(1)?;
        Some(after + p.line_text.get(after..)?.find(value)?)
    });
    let list = EngineList::parse(Some(value));
    let mut diagnostics = Vec::new();
    for (index, entry) in list.entries().iter().enumerate() {
        let name = &entry.name;
        let in_its_place = match list.fallback_after(index) {
            Some(engine) => format!("{engine} routes in its place"),
            None => "nothing routes in its place (`no_fallback`)".to_string(),
        };
        let diagnostic = match entry.listed {
            Listed::Engine(_) | Listed::NoFallback => continue,
            Listed::OpenSmOnly => Diagnostic::warning(
                Code::NotActedOn,
                format!("ibqos has no routing engine `{name}` yet: {in_its_place}"),
            ),
            Listed::Unknown => Diagnostic::warning(
                Code::UnknownRoutingEngine,
                format!(
                    "`{name}` is unknown: OpenSM and ibqos have no routing engine of this name \
                     and skip it; {in_its_place}"
                ),
            )
            .with_help(format!(
                "ibqos routes with {}; OpenSM also has {} (names are case-sensitive)",
                ENGINES.map(|e| e.name()).join(", "),
                OPENSM_ONLY_ENGINES.join(", ")
            )),
        };
        let location = place.map(|p| match value_at {
            Some(at) => Location {
                col: at + entry.offset + 1,
                len: name.len(),
                ..p.clone()
            },
            None => p.clone(),
        });
        diagnostics.push(diagnostic.at(location));
    }
    diagnostics
}
