//! SL2VL tables against OpenSM's, per routing engine: the tables an engine leaves the QoS
//! manager to write (torus-2QoS writes its own), with qos off (nothing written) and on.
//!
//! One fabric, one opensm.conf, two fresh ibsims: `ibqos sm --once` configures one, `opensm -o`
//! the other. smpquery reads every port's SL2VL back from each by directed route (every
//! (input, output) pair of every switch, every CA port), and the tables are compared port by
//! port ([`crate::qos::compare_sl2vl`]).

use crate::opensm::run_opensm_once;
use crate::qos::{QosReadback, compare_sl2vl};
use crate::readback::Failures;
use crate::scenario::Fabric;
use crate::sm::{SmFabric, SmInvocation, write_opensm_conf};
use crate::{Ibsim, SimTools, TestDir};

/// `ibqos sm --once` and `opensm -o`, each on a fresh ibsim of `fabric` with `options` as
/// opensm.conf, leave the same SL2VL table on every port. Returns OpenSM's log, for tests that
/// check which engine it routed with.
pub fn sl2vls_match_opensm(fabric: &Fabric, options: &str, dir: &TestDir) -> String {
    let tools = SimTools::require();
    let what = format!("{} with {options:?}", fabric.name);
    let read = |sim: &Ibsim, whose: &str| {
        QosReadback::read(&tools, sim, &fabric.topology, &fabric.query_node)
            .unwrap_or_else(|e| panic!("{what}: reading back {whose}'s fabric: {e}"))
    };
    let ibqos = crate::planner::ibqos_binary().unwrap();
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibqos-ibsim")).unwrap();
    let conf = write_opensm_conf(&dir.subdir("ibqos"), options).unwrap();
    SmInvocation::new(
        SmFabric::Native,
        &fabric.sm_node,
        &dir.subdir("ibqos-cache"),
    )
    .opensm_conf(&conf)
    .run_up(&ibqos, &sim)
    .unwrap_or_else(|e| panic!("{what}: ibqos: {e}"));
    let ours = read(&sim, "ibqos");
    drop(sim);
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("opensm-ibsim")).unwrap();
    let run = run_opensm_once(
        &tools,
        &sim,
        &fabric.sm_node,
        options,
        &dir.subdir("opensm"),
    )
    .unwrap_or_else(|e| panic!("{what}: OpenSM: {e}"));
    let theirs = read(&sim, "OpenSM");
    let mut f = Failures::new(what);
    compare_sl2vl(&mut f, &ours, &theirs);
    f.assert_none();
    run.log
}
