//! Test support shared by the end-to-end tests.
//!
//! The oracle tests run the real OpenSM against ibsim (the InfiniBand fabric simulator) and read
//! back what it programmed with smpquery (infiniband-diags). These modules wrap each of those
//! programs once, so a test reads as the scenario it checks:
//!
//! - [`tool`]: find the external programs; a missing one fails the test, naming its apt package.
//! - [`testdir`]: a scratch directory per test, kept on failure for debugging.
//! - [`process`]: run a program with a time limit, killing it by PID when it overruns.
//! - [`ibsim`]: an ibsim instance per test, and the environment that attaches a client to it.
//! - [`opensm`]: run `opensm -o` (one sweep, then exit), or OpenSM as a daemon, against an ibsim.
//! - [`smpquery`]: read SL2VL, VLArb and PortInfo back, parsed into typed values.
//! - [`perfquery`]: run perfquery from one node against the LIDs of others.
//! - [`perfmgr`]: read a PerfMgr's machine-readable counter dump.
//! - [`netfile`]: the topology from an ibsim net file, and directed-route paths through it.
//! - [`planner`]: run `ibqos plan` and parse its JSON.
//! - [`query`]: run `ibqos query` (native ibsim client or umad under the shim) and read it.
//! - [`sm`]: run `ibqos sm --once --json` and parse its summary.
//! - [`daemon`]: run `ibqos sm` as a daemon, read its per-sweep summaries, signal and stop it.
//! - [`qos`]: read every QoS table of a fabric back and compare two fabrics port by port.
//! - [`lfts`]: every switch's forwarding table against OpenSM's, by switch and destination.
//! - [`lft_balance`]: check_lft_balance's routes per switch port, to hold `ibqos lft-balance` to.
//! - [`readback`]: read a configured fabric back (PortInfo, forwarding tables) and check it.
//! - [`scenario`]: the fabrics `ibqos sm` runs on, and the checks every run must pass.
//! - [`trees`]: the fabrics of the routing oracle, from `scripts/routing-trees`.
//! - [`sa`]: the SA oracle: saquery and osmtest against OpenSM and ibqos, compared by diff.
//! - [`path_sls`]: every pair's PathRecord SL against OpenSM's, for the engines that choose SLs.
//! - [`sl2vls`]: every port's SL2VL tables against OpenSM's, per routing engine.
//!
//! Everything here is Linux-only, as ibsim and its LD_PRELOAD shim are.

pub mod daemon;
pub mod error;
pub mod ibsim;
pub mod lft_balance;
pub mod lfts;
pub mod multicast;
pub mod netfile;
pub mod opensm;
pub mod path_sls;
pub mod perfmgr;
pub mod perfquery;
pub mod planner;
pub mod process;
pub mod qos;
pub mod query;
pub mod readback;
pub mod sa;
pub mod scenario;
pub mod sl2vls;
pub mod sm;
pub mod smpquery;
pub mod testdir;
pub mod tool;
pub mod trees;

pub use error::{Error, Result};
pub use ibsim::Ibsim;
pub use netfile::{DrPath, Node, NodeKind, Topology};
pub use testdir::TestDir;
pub use tool::{SimTools, Tool};

/// A suffix unique within this machine for the lifetime of this process: the PID plus a
/// process-wide counter. Used for scratch directory and ibsim socket names, so tests running in
/// parallel (threads of one binary, or several binaries) never share one.
pub fn unique_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}
