//! One module per subcommand.

use std::path::Path;

use anyhow::{Context, Result};
use ibqos_fabric::Topology;
use ibqos_fabric::generate::assign_missing_lids;
use ibqos_fabric::groups::{SetupProblem, setup_tables};
use ibqos_fabric::routing::{EngineList, Routed};
use ibqos_opensm::{Loaded, Settings, load, qos_policy};
use ibqos_qos::VlCount;
use ibqos_qos::policy::setup::SetupTables;
use ibqos_sm::config::routing_engines;

use crate::diagnostics::{FileError, Report};

pub mod check;
pub mod credit_loops;
pub mod ctl;
pub mod dump;
pub mod fabric;
pub mod generate_assets;
pub mod lft_balance;
pub mod migrate;
pub mod plan;
pub mod ports;
pub mod query;
pub mod reload;
pub mod sim;
pub mod sm;
pub mod status;

/// How a command ended, for the exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// The command ran but found errors (or, with --strict, warnings): exit status 1.
    Failed,
    /// `ibqos sim`: a credit loop stopped the simulated fabric: exit status 3.
    Deadlocked,
}

impl Outcome {
    pub fn from_report(report: &Report) -> Outcome {
        if report.error_count() > 0 {
            Outcome::Failed
        } else {
            Outcome::Success
        }
    }
}

/// Reads a configuration file, choosing the reader by its name.
pub fn load_config(path: &Path) -> Result<Loaded> {
    Ok(load(path)?)
}

/// Reads a configuration file as [`load_config`] does, to route with the engines
/// `routing_engine` lists (`--routing-engine`) in place of its own when given, with its routing
/// options and the files they name (torus-2QoS's `torus_config` included). A file with errors
/// is noted on standard error, with what the command does all the same: `going_on` ("routing
/// as OpenSM would make of it").
pub fn load_config_routed(
    path: &Path,
    routing_engine: Option<&str>,
    going_on: &str,
) -> Result<Loaded> {
    let mut loaded = load_config(path)?;
    if let Some(names) = routing_engine {
        loaded.set_routing_engine(names);
    }
    if loaded.has_errors() {
        eprintln!(
            "note: {} has errors (see `ibqos check`); {going_on}",
            path.display()
        );
    }
    Ok(loaded)
}

/// The engines a command routes with: those of the configuration `loaded`
/// ([`load_config_routed`]), or without one those `routing_engine` lists with OpenSM's default
/// options (minhop when it lists none).
pub fn routing_engines_of(loaded: Option<&Loaded>, routing_engine: Option<&str>) -> EngineList {
    match loaded {
        Some(loaded) => routing_engines(&loaded.settings),
        None => EngineList::parse(routing_engine),
    }
}

/// What the configuration's qos-setup programs on `topo`: nothing unless it sets
/// `program_policy_setup`, else the scopes' tables, or why they do not fit this fabric, at
/// their places in `config`.
pub fn setup_on(topo: &Topology, settings: &Settings, config: &Path) -> Result<SetupTables> {
    let Some(policy) = settings
        .qos_policy
        .as_ref()
        .filter(|_| settings.program_policy_setup)
    else {
        return Ok(SetupTables::default());
    };
    setup_tables(topo, policy).map_err(|problem| {
        let diagnostics = match &problem {
            SetupProblem::Groups(error) => vec![qos_policy::resolve_error_diagnostic(
                &config.display().to_string(),
                error,
            )],
            SetupProblem::Scopes(errors) => {
                qos_policy::setup_diagnostics(errors, &settings.qos_setup_places)
            }
        };
        FileError(diagnostics).into()
    })
}

/// Routes `topo` (read from `name`) as the SM would: LIDs as a simple LID manager gives them
/// where the net file has none (the SM's own are not known offline), then the first of
/// `engines` that routes on links of `vls` data VLs. A note names each engine passed over.
pub fn route_offline(
    topo: &mut Topology,
    engines: &EngineList,
    vls: VlCount,
    name: &str,
) -> Result<Routed> {
    assign_missing_lids(topo)?;
    let routed = engines
        .route(topo, vls)
        .with_context(|| format!("cannot route {name}"))?;
    for attempt in &routed.attempts {
        eprintln!(
            "note: routing engine `{}` passed over: {}",
            attempt.name, attempt.skipped
        );
    }
    Ok(routed)
}
