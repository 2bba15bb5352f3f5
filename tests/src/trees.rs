//! The fabrics the routing engines are checked on against OpenSM, written by
//! `scripts/routing-trees` (the one definition of them; see its header for each tree's shape).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::process::{command_line, run_bounded};
use crate::scenario::Fabric;
use crate::{Error, Result, TestDir};

/// The trees the script writes, by the name of their net file (without `.net`).
pub const TREES: [&str; 5] = [
    "fat-tree-16",
    "fat-tree-648",
    "three-level",
    "wide",
    "degraded",
];

/// The script writes five small files; the limit only bounds a hang.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The tree `name` (one of [`TREES`]), written into `dir` by `scripts/routing-trees` with the
/// ibqos binary under test.
pub fn tree(name: &str, dir: &TestDir) -> Result<Fabric> {
    if !TREES.contains(&name) {
        return Err(Error::new(format!(
            "no tree {name:?}; scripts/routing-trees writes {TREES:?}"
        )));
    }
    let out = dir.subdir("trees");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/routing-trees");
    let mut cmd = Command::new(&script);
    cmd.arg(&out).arg(crate::planner::ibqos_binary()?);
    let line = command_line(&cmd);
    run_bounded(&mut cmd, SCRIPT_TIMEOUT)?.success(&line)?;
    Fabric::load(name, &out.join(format!("{name}.net")))
}
