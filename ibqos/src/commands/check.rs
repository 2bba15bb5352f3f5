//! `ibqos check`: diagnostics for configuration files. They are what the command answers, so
//! all of them go to standard output, a file it cannot read among them (with `--json`, as JSON
//! like the others).

use std::io::Write as _;
use std::path::Path;

use anyhow::Result;
use ibqos_fabric::routing::{ENGINES, EngineList, Listed, OPENSM_ONLY_ENGINES};
use ibqos_opensm::{
    Code, Diagnostic, LoadError, Loaded, PartitionsLoad, PolicyLoad, Settings, changed_options,
    load, load_partitions, qos_policy, sort_in_reading_order,
};
use ibqos_sm::config::{Takes, congestion_options, takes_effect};

use crate::cli::CheckArgs;
use crate::commands::Outcome;
use crate::diagnostics::Report;

pub(crate) mod qos_routing;

pub fn run(args: &CheckArgs) -> Result<Outcome> {
    let mut out = std::io::stdout().lock();
    let mut report = Report::new(args.diagnostics.strict);
    for path in &args.files {
        let mut loaded = match load(path) {
            Ok(loaded) => loaded,
            Err(error) => {
                report.extend(error.diagnostics());
                continue;
            }
        };
        // A GUID file that cannot be read is placed at the option naming it, in this file.
        let (at_options, in_guid_files): (Vec<_>, Vec<_>) = std::mem::take(&mut loaded.guid_files)
            .into_iter()
            .partition(|d| d.code == Code::GuidFileUnreadable);
        let mut diagnostics = at_options;
        diagnostics.extend(not_acted_on(&loaded));
        diagnostics.extend(unused_routing_options(&loaded));
        diagnostics.extend(qos_routing::diagnostics(&loaded));
        diagnostics.extend(ccti_min_past_the_table(&loaded));
        diagnostics.extend(loaded.diagnostics);
        sort_in_reading_order(&mut diagnostics);
        report.extend(diagnostics);
        report.extend(in_guid_files);
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

/// What ibqos does in place of OpenSM's unicast routing cache.
pub const NO_UCAST_CACHE: &str = "ibqos has no unicast routing cache (`use_ucast_cache`): it \
    routes again at every heavy sweep, as OpenSM does with `use_ucast_cache FALSE`";

/// Where that gives other tables than OpenSM's cache.
pub const UCAST_CACHE_DIFFERS: &str = "the tables are the same while the fabric is unchanged; \
    when CAs, routers or leaf switches leave or come back where they were, OpenSM's cache \
    keeps its last routes, and ibqos's new routing may balance the others differently";

/// A warning for each option the file sets to other than OpenSM's default that ibqos does not
/// act on (what a reload reports as "ibqos does not use it"), and for each routing engine it
/// does not have ([`routing_engine_names`]).
fn not_acted_on(loaded: &Loaded) -> Vec<Diagnostic> {
    let settings = &loaded.settings;
    let mut diagnostics: Vec<Diagnostic> = changed_options(&Settings::default(), settings)
        .into_iter()
        .filter(|change| takes_effect(&change.key) == Takes::Never)
        .map(|change| {
            let place = loaded.places.get(&change.key).cloned();
            if change.key == "use_ucast_cache" {
                return Diagnostic::warning(Code::NotActedOn, NO_UCAST_CACHE)
                    .at(place)
                    .with_help(UCAST_CACHE_DIFFERS);
            }
            let what = format!(
                "ibqos does not act on `{}` yet: it runs as with OpenSM's default {}, not {}",
                change.key, change.old, change.new
            );
            Diagnostic::warning(Code::NotActedOn, what).at(place)
        })
        .collect();
    diagnostics.extend(routing_engine_names(loaded));
    diagnostics
}

/// The engines of the minhop family: they assign LFT entries port by port with OpenSM's
/// balancing step, which reads the routing order file, `port_shifting` and `scatter_ports`.
const MINHOP_FAMILY: &[&str] = &["minhop", "updn", "dnup", "dor"];

/// The OpenSM engines that read each routing option (`osm_ucast_*.c`).
const OPTION_READERS: [(&str, &[&str]); 15] = [
    ("root_guid_file", &["updn", "ftree"]),
    ("cn_guid_file", &["ftree", "dfsssp", "sssp"]),
    ("io_guid_file", &["ftree", "dfsssp", "sssp"]),
    ("max_reverse_hops", &["ftree"]),
    ("guid_routing_order_file", MINHOP_FAMILY),
    ("guid_routing_order_no_scatter", MINHOP_FAMILY),
    ("port_shifting", MINHOP_FAMILY),
    ("scatter_ports", MINHOP_FAMILY),
    ("connect_roots", &["updn", "dnup", "ftree"]),
    ("avoid_throttled_links", &["dfsssp", "nue"]),
    ("torus_config", &["torus-2QoS"]),
    ("lash_start_vl", &["lash"]),
    ("do_mesh_analysis", &["lash"]),
    ("nue_max_num_vls", &["nue"]),
    ("nue_include_switches", &["nue"]),
];

/// A warning at each routing option the file sets that no engine which may route reads: none
/// of `routing_engine`'s engines, nor minhop, the last resort unless `no_fallback`.
fn unused_routing_options(loaded: &Loaded) -> Vec<Diagnostic> {
    let settings = &loaded.settings;
    let list = EngineList::parse(settings.sm.routing_engine.as_deref());
    let mut may_route: Vec<&str> = Vec::new();
    let mut fallback = true;
    for entry in list.entries() {
        match entry.listed {
            Listed::Engine(_) | Listed::OpenSmOnly => may_route.push(&entry.name),
            Listed::NoFallback => fallback = false,
            Listed::Unknown => {}
        }
    }
    if fallback && !may_route.contains(&"minhop") {
        may_route.push("minhop");
    }
    let changed = changed_options(&Settings::default(), settings);
    let mut found: Vec<Diagnostic> = OPTION_READERS
        .iter()
        .filter(|(option, _)| changed.iter().any(|c| c.key == *option))
        .filter(|(_, readers)| !readers.iter().any(|r| may_route.contains(r)))
        .map(|(option, readers)| {
            let verb = if readers.len() == 1 { "reads" } else { "read" };
            let message = format!(
                "`{option}` has no effect: only {} {verb} it, and the engines that may route are {}",
                readers.join(", "),
                may_route.join(", ")
            );
            Diagnostic::warning(Code::RoutingOptionUnused, message)
                .at(loaded.places.get(*option).cloned())
        })
        .collect();
    found.extend(nue_layers_without_qos(loaded, &may_route));
    found
}

/// A warning at `nue_max_num_vls` when it asks nue for other than one VL layer with qos off:
/// Nue then routes on one (OpenSM's `WRN NUE48`), since the SL2VL tables it would need are
/// the QoS manager's.
fn nue_layers_without_qos(loaded: &Loaded, may_route: &[&str]) -> Option<Diagnostic> {
    let settings = &loaded.settings;
    let asked = settings.opensm_uint("nue_max_num_vls")?;
    if asked == 1 || settings.qos.enabled || !may_route.contains(&"nue") {
        return None;
    }
    let message = format!(
        "`nue_max_num_vls` {asked} has no effect with qos FALSE: nue routes on one VL layer \
         (OpenSM's WRN NUE48)"
    );
    Some(
        Diagnostic::warning(Code::RoutingOptionUnused, message)
            .at(loaded.places.get("nue_max_num_vls").cloned())
            .with_help("set `qos TRUE` for the SL2VL tables that keep Nue's layers apart"),
    )
}

/// An error at each SL's `cc_ca_cong_setting_ccti_min` past the last index of `cc_cct`
/// (CCTI_Limit: OpenSM sends the table's entries less one), when congestion control is on. A
/// CA's index may fall no lower than CCTI_Min and rise no higher than CCTI_Limit (IBA annex
/// A10.4.3): no index fits both, and OpenSM sends them as they are.
fn ccti_min_past_the_table(loaded: &Loaded) -> Vec<Diagnostic> {
    let options = congestion_options(&loaded.settings);
    if !options.enabled {
        return Vec::new();
    }
    let limit = options.cct.len().saturating_sub(1);
    (0..)
        .zip(&options.ca_entries)
        .filter(|(_, entry)| usize::from(entry.ccti_min) > limit)
        .map(|(sl, entry)| {
            let key = "cc_ca_cong_setting_ccti_min";
            let message = format!(
                "`{key}` {} for SL {sl} is past the congestion control table's last index, \
                 {limit} (`cc_cct` has {} entries): a CA's index may fall no lower than \
                 CCTI_Min and rise no higher than CCTI_Limit",
                entry.ccti_min,
                options.cct.len()
            );
            let place = loaded.places.get(&format!("{key} {sl}"));
            Diagnostic::error(Code::CcMinPastLimit, message)
                .at(place.or_else(|| loaded.places.get(key)).cloned())
                .with_help("give `cc_cct` more entries, or a lower CCTI_Min")
        })
        .collect()
}

/// A warning at each name of `routing_engine` that does not route: one OpenSM has and ibqos
/// does not yet (the next engine routes in its place), and one OpenSM does not know either.
fn routing_engine_names(loaded: &Loaded) -> Vec<Diagnostic> {
    let list = EngineList::parse(loaded.settings.sm.routing_engine.as_deref());
    let mut diagnostics = Vec::new();
    for (index, engine) in qos_routing::named_engines(loaded).into_iter().enumerate() {
        let name = &engine.name;
        let in_its_place = match list.fallback_after(index) {
            Some(engine) => format!("{engine} routes in its place"),
            None => "nothing routes in its place (`no_fallback`)".to_string(),
        };
        let diagnostic = match engine.listed {
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
        diagnostics.push(diagnostic.at(engine.location));
    }
    diagnostics
}
