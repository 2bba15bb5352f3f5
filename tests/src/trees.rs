//! The fabrics the routing engines are checked on against OpenSM, written by
//! `scripts/routing-trees` (issue 32's trees) and `scripts/routing-layered` (issue 33's fabrics
//! with cycles): the one definition of each, see the scripts' headers for their shapes.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::process::{command_line, run_bounded};
use crate::scenario::Fabric;
use crate::{Error, Result, TestDir};

/// The trees `scripts/routing-trees` writes, by the name of their net file (without `.net`).
pub const TREES: [&str; 5] = [
    "fat-tree-16",
    "fat-tree-648",
    "three-level",
    "wide",
    "degraded",
];

/// The fabrics with cycles `scripts/routing-layered` writes, by the name of their net file.
pub const LAYERED: [&str; 3] = ["torus-4x4", "mesh-3x3", "dragonfly"];

/// Each script writes a few small files; the limit only bounds a hang.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// The tree `name` (one of [`TREES`]), written into `dir` by `scripts/routing-trees` with the
/// ibqos binary under test.
pub fn tree(name: &str, dir: &TestDir) -> Result<Fabric> {
    scripted("routing-trees", &TREES, name, &dir.subdir("trees"))
}

/// The fabric `name` (one of [`LAYERED`]), written into `dir` by `scripts/routing-layered` with
/// the ibqos binary under test.
pub fn layered(name: &str, dir: &TestDir) -> Result<Fabric> {
    scripted("routing-layered", &LAYERED, name, &dir.subdir("layered"))
}

/// The fabric `name`, one of the `names` that `scripts/{script}` writes, written into `out`.
fn scripted(script: &str, names: &[&str], name: &str, out: &Path) -> Result<Fabric> {
    if !names.contains(&name) {
        return Err(Error::new(format!(
            "no fabric {name:?}; scripts/{script} writes {names:?}"
        )));
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scripts")
        .join(script);
    let mut cmd = Command::new(&path);
    cmd.arg(out).arg(crate::planner::ibqos_binary()?);
    let line = command_line(&cmd);
    run_bounded(&mut cmd, SCRIPT_TIMEOUT)?.success(&line)?;
    Fabric::load(name, &out.join(format!("{name}.net")))
}
