//! One module per subcommand.

use std::path::Path;

use anyhow::Result;
use ibqos_opensm::{Loaded, load};

use crate::diagnostics::Report;

pub mod check;
pub mod fabric;
pub mod migrate;
pub mod plan;
pub mod query;
pub mod sim;
pub mod sm;

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
