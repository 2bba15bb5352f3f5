//! `ibqos sm --once` against `opensm -o` as the oracle, for QoS. The same opensm.conf configures
//! two fresh ibsims of the same fabric, one by each SM. Then every QoS setting is read back from
//! both with smpquery and compared port by port: fabric against fabric, no hard-coded tables. On
//! every switch: SL2VL for every output port x every input port, and VLArb low and high on every
//! port including an enhanced port 0. On every CA port: SL2VL and VLArb. And LinkState, OperVLs and
//! HOQLife on every port. ibqos's summary must report every QoS port configured and verified, none
//! failed.
//!
//! Not compared: VLHighLimit, which ibsim does not store (it reads 0 after either SM).
//!
//! OpenSM's first sweep masks switch tables with stale OperVLs when `max_op_vls` is below a
//! port's VLCap (`osm_qos.c:165,269` mask with the cached OperVLs, and `osm_link_mgr.c:425-440`
//! programs switch OperVLs after QoS); ibqos deliberately masks with the OperVLs it programs.
//! Every config here leaves `max_op_vls` at its default (15 VLs, above ibsim's 8), where the two
//! agree, so any difference is a bug.
//!
//! Fabrics: fabric/data/two-switch.net (an enhanced and a base port 0, parallel links, a
//! dual-port CA) and a generated ring of four switches. Transports: the native ibsim client for
//! every config, and umad under ibsim's shim for the generic and the lenient configs.

use ibqos_fabric::generate;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::qos::{QosReadback, compare_fabrics};
use ibqos_tests::readback::Failures;
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// (a) Only `qos TRUE`: every table from OpenSM's compiled-in defaults.
const DEFAULTS: &str = "qos TRUE\n";

/// (b) Generic `qos_*` tables, the same for every class.
const GENERIC: &str = "\
qos TRUE
qos_max_vls 8
qos_high_limit 4
qos_vlarb_high 0:8,1:16,2:4
qos_vlarb_low 0:32,1:32,2:16,3:16,4:8,5:8,6:4,7:4
qos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,15
";

/// (c) Per-class tables that differ from each other and from the generic fallback, fields
/// falling back one by one, a router set that must not show up, non-default HOQ lifetimes.
const PER_CLASS: &str = "\
qos TRUE
qos_vlarb_high 0:5,1:5
qos_vlarb_low 0:1,1:1,2:1,3:1
qos_sl2vl 0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3
qos_ca_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0
qos_ca_vlarb_low 0:10,1:20,2:30,3:40,4:50,5:60,6:70,7:80
qos_ca_high_limit 2
qos_swe_sl2vl 7,6,5,4,3,2,1,0,7,6,5,4,3,2,1,15
qos_swe_vlarb_low 7:100,6:101,5:102,4:103,3:104,2:105,1:106,0:107
qos_swe_vlarb_high 2:64,3:32
qos_sw0_sl2vl 1,1,1,1,2,2,2,2,3,3,3,3,4,4,4,4
qos_sw0_vlarb_high 6:9,7:9
qos_sw0_vlarb_low 3:3,4:4
qos_rtr_sl2vl 5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5
qos_rtr_vlarb_low 5:255
qos_rtr_vlarb_high 5:255
head_of_queue_lifetime 0x0c
leaf_head_of_queue_lifetime 0x0a
";

/// (d) VLs beyond the ports' 8 OperVLs and lenient spellings OpenSM accepts: VL 12 on an 8-VL
/// port (masked to 4), `15:10` (VL taken mod 15), weights 256 and 300 (cut to a byte), any
/// single character as a separator, a blank before a comma, octal and hex, too few values;
/// and HOQ lifetimes wider than their 5-bit field.
const LENIENT: &str = "\
qos TRUE
qos_ca_sl2vl 0,9,12,3,4,5,6,7,8,13,14,15,16,17,1,2
qos_ca_vlarb_high 15:10,16:3,0x1:0x40,2:256,3:300
qos_ca_vlarb_low 0 4 1 5;2 6
qos_swe_vlarb_low 9:4 ,1:5,10:300,12:7
qos_swe_sl2vl 010,011,08,3,4,5,6,7,0x8,0x9,10,11,12,13,14,15
qos_swe_vlarb_high 1:1,12:12
qos_sw0_sl2vl 0 1 2 12
qos_sw0_vlarb_low 4:4,5:5,13:256
qos_sw0_vlarb_high 0:1,1:2
head_of_queue_lifetime 0x33
leaf_head_of_queue_lifetime 0x2b
";

fn two_switch() -> Fabric {
    Fabric::load("two-switch", &testdata("two-switch.net")).unwrap()
}

/// A ring of four switches, two hosts each: switch-to-switch links both ways round, no
/// enhanced port 0.
fn ring(dir: &TestDir) -> Fabric {
    let topology = generate::ring(4, 2).unwrap();
    Fabric::generated("ring-4", &topology, dir.path()).unwrap()
}

/// Runs `ibqos sm --once` over `transport` and `opensm -o`, each on a fresh ibsim of `fabric`
/// with `options` as opensm.conf, and compares every QoS setting port by port.
fn same_as_opensm(name: &str, fabric: &Fabric, transport: SmFabric, options: &str, dir: &TestDir) {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let what = format!("{name} on {} over {transport:?}", fabric.name);

    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibqos-ibsim")).unwrap();
    let conf = write_opensm_conf(dir.path(), options).unwrap();
    let (run, summary) = SmInvocation::new(transport, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf)
        .run_up(&ibqos, &sim)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let ours = QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node)
        .unwrap_or_else(|e| panic!("{what}: reading back ibqos's fabric: {e}"));
    drop(sim);

    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("opensm-ibsim")).unwrap();
    let opensm = run_opensm_once(
        &tools,
        &sim,
        &fabric.sm_node,
        options,
        &dir.subdir("opensm"),
    )
    .unwrap_or_else(|e| panic!("{what}: OpenSM: {e}"));
    let errors = opensm.error_lines();
    assert!(
        errors.is_empty(),
        "{what}: OpenSM (the oracle) logged errors:\n{}",
        errors.join("\n")
    );
    let theirs = QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node)
        .unwrap_or_else(|e| panic!("{what}: reading back OpenSM's fabric: {e}"));
    drop(sim);

    let mut f = Failures::new(&what);
    let count = |key: &str| summary.raw.get(key).and_then(serde_json::Value::as_u64);
    let (configured, verified, failed) = (
        count("qos_ports_configured"),
        count("qos_ports_verified"),
        count("qos_ports_failed"),
    );
    f.check(failed == Some(0), || {
        format!(
            "summary: qos_ports_failed {failed:?}, expected 0\n{}",
            run.output()
        )
    });
    f.check(
        configured.is_some_and(|c| c > 0) && verified == configured,
        || {
            format!(
                "summary: qos_ports_verified {verified:?} and qos_ports_configured \
                 {configured:?}, expected equal and non-zero: {}",
                summary.raw
            )
        },
    );
    compare_fabrics(&mut f, &ours, &theirs, "ibqos", "OpenSM");
    f.assert_none();

    // A comparison of two untouched fabrics would pass too: require that the QoS tables
    // differ from ibsim's power-on state somewhere, that is, that both SMs wrote something.
    let power_on = {
        let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("power-on-ibsim")).unwrap();
        QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node)
            .unwrap_or_else(|e| panic!("{what}: reading back an untouched fabric: {e}"))
    };
    let written = ibqos_tests::qos::differences(&power_on, &ours)
        .into_iter()
        .filter(|(_, s, _)| {
            matches!(
                s,
                ibqos_tests::qos::Setting::Sl2Vl | ibqos_tests::qos::Setting::VlArb
            )
        })
        .count();
    assert!(
        written > 0,
        "{what}: every SL2VL and VLArb table equals ibsim's power-on table; the config cannot \
         tell a programmed fabric from an untouched one"
    );
}

#[test]
fn defaults_two_switch_native() {
    let dir = TestDir::new("qos-oracle-defaults-2sw");
    same_as_opensm("defaults", &two_switch(), SmFabric::Native, DEFAULTS, &dir);
}

#[test]
fn defaults_ring_native() {
    let dir = TestDir::new("qos-oracle-defaults-ring");
    same_as_opensm("defaults", &ring(&dir), SmFabric::Native, DEFAULTS, &dir);
}

#[test]
fn generic_two_switch_native() {
    let dir = TestDir::new("qos-oracle-generic-2sw");
    same_as_opensm("generic", &two_switch(), SmFabric::Native, GENERIC, &dir);
}

#[test]
fn generic_ring_native() {
    let dir = TestDir::new("qos-oracle-generic-ring");
    same_as_opensm("generic", &ring(&dir), SmFabric::Native, GENERIC, &dir);
}

#[test]
fn generic_two_switch_umad() {
    let dir = TestDir::new("qos-oracle-generic-2sw-umad");
    same_as_opensm("generic", &two_switch(), SmFabric::Umad, GENERIC, &dir);
}

#[test]
fn per_class_two_switch_native() {
    let dir = TestDir::new("qos-oracle-per-class-2sw");
    same_as_opensm(
        "per-class",
        &two_switch(),
        SmFabric::Native,
        PER_CLASS,
        &dir,
    );
}

#[test]
fn per_class_ring_native() {
    let dir = TestDir::new("qos-oracle-per-class-ring");
    same_as_opensm("per-class", &ring(&dir), SmFabric::Native, PER_CLASS, &dir);
}

#[test]
fn lenient_two_switch_native() {
    let dir = TestDir::new("qos-oracle-lenient-2sw");
    same_as_opensm("lenient", &two_switch(), SmFabric::Native, LENIENT, &dir);
}

#[test]
fn lenient_ring_native() {
    let dir = TestDir::new("qos-oracle-lenient-ring");
    same_as_opensm("lenient", &ring(&dir), SmFabric::Native, LENIENT, &dir);
}

#[test]
fn lenient_two_switch_umad() {
    let dir = TestDir::new("qos-oracle-lenient-2sw-umad");
    same_as_opensm("lenient", &two_switch(), SmFabric::Umad, LENIENT, &dir);
}

#[test]
fn lenient_ring_umad() {
    let dir = TestDir::new("qos-oracle-lenient-ring-umad");
    same_as_opensm("lenient", &ring(&dir), SmFabric::Umad, LENIENT, &dir);
}

/// The SM at a managed switch (S1's enhanced port 0), as sites run it: ibqos from S1 must
/// program what OpenSM programs from S1.
fn two_switch_from_s1() -> Fabric {
    Fabric {
        sm_node: "S1".into(),
        ..two_switch()
    }
}

#[test]
fn per_class_two_switch_from_a_switch_native() {
    let dir = TestDir::new("qos-oracle-per-class-2sw-at-s1");
    let fabric = two_switch_from_s1();
    same_as_opensm("per-class", &fabric, SmFabric::Native, PER_CLASS, &dir);
}

#[test]
fn generic_two_switch_from_a_switch_umad() {
    let dir = TestDir::new("qos-oracle-generic-2sw-at-s1-umad");
    let fabric = two_switch_from_s1();
    same_as_opensm("generic", &fabric, SmFabric::Umad, GENERIC, &dir);
}
