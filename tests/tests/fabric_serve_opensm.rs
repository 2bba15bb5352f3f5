//! `ibqos fabric serve` in place of ibsim: the real OpenSM (under libumad2sim.so) and `ibqos sm`
//! (native ibsim client) bring the served fabric up, and smpquery and ibroute, also under the
//! shim, read back what they programmed.
//!
//! Every client here attaches at H1 (fabric_serve_attach.rs covers the others). The QoS
//! tables OpenSM programs are compared port by port with what the same `opensm -o` programs on
//! the real ibsim of the same net file: the served fabric must be indistinguishable. For that
//! comparison both switches have an enhanced port 0: on a base port 0 the emulator refuses an
//! SL2VL with output port 0 (IBA 18.2.4.3: a base port 0 has no VLs), where ibsim answers its
//! power-on table, so smpquery's full readback fails there by design.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm, smpquery, ibroute) fails the test.

use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::qos::{QosReadback, compare_fabrics};
use ibqos_tests::readback::{Failures, check_up, write_net_file};
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir, Topology};

/// The node every client attaches at.
const ATTACH: &str = "H1";

/// QoS with 4 VLs and non-default tables, so that every table OpenSM writes differs from the
/// power-on one.
const QOS: &str = "\
qos TRUE
qos_max_vls 4
qos_high_limit 9
qos_vlarb_high 0:8,1:16
qos_vlarb_low 0:32,1:32,2:32,3:32
qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15
";

#[test]
fn opensm_programs_the_served_fabric_as_it_programs_ibsim() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-opensm");
    let text = std::fs::read_to_string(testdata("two-switch.net")).unwrap();
    let text = text.replace("# \"sw-two\"", "# \"sw-two\" enhanced port 0");
    let netfile = write_net_file(dir.path(), "two-switch-enhanced", &text).unwrap();
    let topology = Topology::load(&netfile).unwrap();

    let served_dir = dir.path().join("served");
    std::fs::create_dir_all(&served_dir).unwrap();
    let served = Ibsim::serve(&tools, &ibqos, &netfile, ATTACH, &served_dir).unwrap();
    let run = run_opensm_once(&tools, &served, ATTACH, QOS, &served_dir.join("opensm")).unwrap();
    assert_eq!(run.error_lines(), Vec::<&str>::new(), "{}", run.log);
    check_up(
        "opensm on the served fabric",
        &tools,
        &served,
        &topology,
        ATTACH,
    );
    let ours = QosReadback::read(&tools, &served, &topology, ATTACH).unwrap();

    let ibsim_dir = dir.path().join("ibsim");
    std::fs::create_dir_all(&ibsim_dir).unwrap();
    let ibsim = Ibsim::start(&tools, &netfile, &ibsim_dir).unwrap();
    run_opensm_once(&tools, &ibsim, ATTACH, QOS, &ibsim_dir.join("opensm")).unwrap();
    let theirs = QosReadback::read(&tools, &ibsim, &topology, ATTACH).unwrap();

    let mut f = Failures::new("QoS tables: served fabric vs ibsim, both programmed by OpenSM");
    compare_fabrics(&mut f, &ours, &theirs, "served", "ibsim");
    f.assert_none();
}

#[test]
fn ibqos_sm_brings_the_served_fabric_up() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-sm");
    let netfile = testdata("two-switch.net");
    let topology = Topology::load(&netfile).unwrap();
    let served = Ibsim::serve(&tools, &ibqos, &netfile, ATTACH, dir.path()).unwrap();

    let sm = SmInvocation::new(SmFabric::Native, ATTACH, &dir.path().join("cache"));
    let (run, summary) = sm.run_up(&ibqos, &served).unwrap();
    assert_eq!(
        (summary.nodes, summary.switches, summary.lids),
        (7, 2, 8),
        "{}",
        run.stderr
    );
    assert_eq!(summary.timeouts, 0, "{}", run.stderr);
    check_up(
        "ibqos sm on the served fabric",
        &tools,
        &served,
        &topology,
        ATTACH,
    );
}
