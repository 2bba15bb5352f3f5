//! One module per subcommand.

use std::path::Path;

use anyhow::Result;
use ibqos_fabric::Topology;
use ibqos_fabric::groups::{SetupProblem, setup_tables};
use ibqos_opensm::{Loaded, Settings, load, qos_policy};
use ibqos_qos::policy::setup::SetupTables;

use crate::diagnostics::{FileError, Report};

pub mod check;
pub mod ctl;
pub mod dump;
pub mod fabric;
pub mod generate_assets;
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
