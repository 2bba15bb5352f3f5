//! OpenSM's dump files against OpenSM's own: `opensm -o` and `ibqos sm --once`, each on a fresh
//! ibsim of the same fabric with the same opensm.conf, each writing its dumps under its
//! `dump_files_dir`; the files must be the same byte for byte. The two SMs give the same LIDs
//! on these fabrics (tests/tests/sa_oracle.rs holds them to that), so nothing needs
//! normalising.
//!
//! Compared: `opensm-subnet.lst`, which OpenSM writes after every SUBNET UP, and
//! `opensm-lfts.dump` and (with QoS on) `opensm-sl2vl.dump`, which it writes when `log_flags`
//! has ROUTING (0x40), as both SMs are configured here.

use ibqos_fabric::generate;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::sa::unified_diff;
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::{Ibsim, SimTools, TestDir};

const FILES: [&str; 3] = ["opensm-subnet.lst", "opensm-lfts.dump", "opensm-sl2vl.dump"];

/// OpenSM's default log flags (errors, info) and ROUTING, which writes the routing dumps; QoS,
/// for the SL2VL dump and tables worth dumping.
const OPTIONS: &str = "log_flags 0x43\nqos TRUE\n";

/// The dump files each SM wrote on `fabric`: OpenSM's, then ibqos's.
fn dumps(fabric: &Fabric, dir: &TestDir) -> Vec<(String, String)> {
    let tools = SimTools::require();
    let opensm_dir = dir.subdir("opensm");
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("opensm-ibsim")).unwrap();
    run_opensm_once(&tools, &sim, &fabric.sm_node, OPTIONS, &opensm_dir)
        .unwrap_or_else(|e| panic!("{}: OpenSM: {e}", fabric.name));
    drop(sim);

    let ibqos_dumps = dir.subdir("ibqos-dumps");
    let options = format!("{OPTIONS}dump_files_dir {}/\n", ibqos_dumps.display());
    let conf = write_opensm_conf(dir.path(), &options).unwrap();
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibqos-ibsim")).unwrap();
    SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf)
        .run_up(&ibqos_binary().unwrap(), &sim)
        .unwrap_or_else(|e| panic!("{}: ibqos: {e}", fabric.name));
    let read = |path: std::path::PathBuf| {
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    FILES
        .iter()
        .map(|name| (read(opensm_dir.join(name)), read(ibqos_dumps.join(name))))
        .collect()
}

fn same_as_opensm(fabric: &Fabric, dir: &TestDir) {
    for (name, (theirs, ours)) in FILES.iter().zip(dumps(fabric, dir)) {
        assert!(
            !theirs.is_empty(),
            "{}: OpenSM wrote an empty {name}",
            fabric.name
        );
        let diff = unified_diff(&theirs, &ours, 2);
        assert!(
            diff.is_empty(),
            "{}: {name} differs (- OpenSM, + ibqos):\n{diff}",
            fabric.name
        );
    }
}

#[test]
fn dump_files_of_two_switch_are_opensms() {
    let dir = TestDir::new("dumps-two-switch");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    same_as_opensm(&fabric, &dir);
}

#[test]
fn dump_files_of_a_ring_are_opensms() {
    let dir = TestDir::new("dumps-ring");
    let topology = generate::ring(4, 2).unwrap();
    let fabric = Fabric::generated("ring-4", &topology, dir.path()).unwrap();
    same_as_opensm(&fabric, &dir);
}
