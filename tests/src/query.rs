//! `ibqos query`, the SM's own smpquery: run it against an ibsim and read its `Name: value`
//! output.

use std::path::Path;
use std::time::Duration;

use crate::process::{Finished, run_bounded};
use crate::{Ibsim, Result};

/// Long enough for a query with retries; a hang fails the test instead of stalling it.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// `ibqos query --fabric ibsim:SOCK@NODE ARGS`: the native ibsim client.
pub fn native(ibqos: &Path, sim: &Ibsim, node: &str, args: &[&str]) -> Result<Finished> {
    let fabric = format!("ibsim:{}@{node}", sim.sockname());
    run_bounded(
        std::process::Command::new(ibqos)
            .args(["query", "--fabric", &fabric])
            .args(args),
        QUERY_TIMEOUT,
    )
}

/// `ibqos query --fabric umad ARGS` under ibsim's LD_PRELOAD shim, attached at `node`.
pub fn umad(ibqos: &Path, sim: &Ibsim, node: &str, args: &[&str]) -> Result<Finished> {
    run_bounded(
        sim.client(ibqos, node)
            .args(["query", "--fabric", "umad"])
            .args(args),
        QUERY_TIMEOUT,
    )
}

/// The standard output of a query that must have succeeded (else the failure shows both
/// streams).
pub fn stdout(out: Finished) -> String {
    out.success("ibqos query").unwrap().stdout
}

/// The value of `Name: value` in `ibqos query` output.
pub fn field<'a>(stdout: &'a str, name: &str) -> &'a str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(": "))
        .unwrap_or_else(|| panic!("no `{name}` in:\n{stdout}"))
}
