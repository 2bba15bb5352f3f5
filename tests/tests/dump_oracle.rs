//! `ibqos dump` on a fabric OpenSM programmed, and `ibqos sim --tables` on what it read.
//!
//! Each test starts a fresh ibsim on fabric/data/two-switch.net and reads it with `ibqos dump
//! --fabric ibsim:SOCK@H5` as powered on, runs the real OpenSM 3.3.23 once (`opensm -o`) with
//! `qos TRUE` and non-default tables, and reads it again. Then:
//!
//! - The dump of the untouched ibsim is byte for byte `ibqos fabric dump` of the same net file:
//!   the emulated fabric powers on as ibsim does, and the two readers agree.
//! - The dump after OpenSM, read through the native ibsim client and through umad (ibsim's
//!   shim) alike, holds what smpquery reads back from every port: PortInfo's LID, states,
//!   OperVLs, VLHighLimit, HOQLife and VLStallCount, every SL2VL row, both VLArb tables. (A base
//!   switch port 0 has no VLs, IBA 18.2.4.3, so a dump holds no tables there; ibsim still
//!   answers SL2VL with it as the output port, which is not compared.)
//! - `ibqos sim --tables after.json` against `ibqos sim -F` with OpenSM's own opensm.conf, the
//!   simulator's report as JSON, and `--tables before.json` to show that the tables change the
//!   traffic (so equal reports are not an accident of tables that do not matter).
//!
//! VLHighLimit: OpenSM sets it in a PortInfo Set, but ibsim does not store that field and reads
//! back 0, so a dump of ibsim holds 0 whatever OpenSM asked. Both configurations here set
//! `qos_high_limit 0`, so the planner's value is the one ibsim holds; with another the reports
//! would differ for that reason alone.
//!
//! OperVLs: with `max_op_vls` at its default (15, above ibsim's VLCap of 8) OpenSM and ibqos's
//! planner give every port 8 VLs and the same tables, and the reports are the same bytes. With
//! `max_op_vls 2` they are not, for a reason in OpenSM: its heavy sweep sets up QoS before the
//! link manager programs the OperVLs of switch external ports (`osm_state_mgr.c:1590,1627`), and
//! masks every table with the OperVLs it has cached for the port (`osm_qos.c:165,269`), which on
//! a switch port is still what discovery read, 8 VLs. So the switch ports run 2 VLs with tables
//! that map SLs to VLs 2 and 3, and the simulator, running exactly those tables, drops what
//! they send there; ibqos masks with the OperVLs it programs, and its plan delivers everything.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ibqos_fabric::dump::{FabricDump, PortDump};
use ibqos_qos::VlCount;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::process::run_bounded;
use ibqos_tests::qos::{PortQos, QosReadback};
use ibqos_tests::readback::{Failures, Readback};
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::{Ibsim, SimTools, TestDir};
use serde_json::Value;

/// A dump or a simulation of two-switch takes well under a second; the limit bounds a hang.
const TIMEOUT: Duration = Duration::from_secs(60);

/// Per-class tables that differ from ibsim's power-on ones and from each other.
const PER_CLASS: &str = "\
qos TRUE
qos_high_limit 0
qos_vlarb_high 0:8,1:16
qos_vlarb_low 0:32,1:64,2:128,3:16
qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15
qos_ca_vlarb_low 0:10,1:20,2:30,3:40
qos_ca_vlarb_high 2:64
qos_swe_sl2vl 0,1,2,3,3,2,1,0,0,1,2,3,3,2,1,15
qos_swe_vlarb_low 0:100,1:50,2:25,3:12
";

/// Every port runs 2 VLs; the generic SL-to-VL table maps SLs 2 and 3 to VLs 2 and 3.
const TWO_VLS: &str = "\
qos TRUE
max_op_vls 2
qos_high_limit 0
qos_vlarb_high 0:8
qos_vlarb_low 0:32,1:64,2:128,3:16
qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15
";

/// Three flows into H3 (on SLs 0, 1 and 2, from both switches) and one out of H4 on SL3, all
/// as fast as the fabric takes them: the arbitration tables of the switch ports into H3 share
/// that link, and every flow crosses a switch-to-switch link.
const TRAFFIC: &str = r#"
duration_us = 100

[link]
speed = "QDR"
width = 4
propagation_ns = 5
vl_buffer_bytes = 65536
credit_latency_ns = 100

[[flow]]
name = "sl0"
src = "H1"
dst = "H3"
sl = 0
payload = 4096

[[flow]]
name = "sl1"
src = "H2"
dst = "H3"
sl = 1
payload = 4096

[[flow]]
name = "sl2"
src = "H5"
dst = "H3"
sl = 2
payload = 2048

[[flow]]
name = "sl3"
src = "H4"
dst = "H1"
sl = 3
payload = 4096
"#;

/// A fabric as powered on and after OpenSM, read by `ibqos dump`, and the files it took.
struct Programmed {
    fabric: Fabric,
    sim: Ibsim,
    before: (PathBuf, FabricDump),
    after: (PathBuf, FabricDump),
    /// The opensm.conf OpenSM ran with.
    conf: PathBuf,
    traffic: PathBuf,
}

/// A fresh ibsim of two-switch, read, programmed by `opensm -o` with `options`, read again.
fn programmed(tools: &SimTools, ibqos: &Path, options: &str, dir: &TestDir) -> Programmed {
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let sim = Ibsim::start(tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    let before = dump(
        ibqos,
        &sim,
        &fabric.query_node,
        &dir.path().join("before.json"),
    );
    let opensm = run_opensm_once(tools, &sim, &fabric.sm_node, options, &dir.subdir("opensm"))
        .unwrap_or_else(|e| panic!("OpenSM: {e}"));
    let errors = opensm.error_lines();
    assert!(
        errors.is_empty(),
        "OpenSM logged errors:\n{}",
        errors.join("\n")
    );
    let after = dump(
        ibqos,
        &sim,
        &fabric.query_node,
        &dir.path().join("after.json"),
    );
    let traffic = dir.path().join("traffic.toml");
    std::fs::write(&traffic, TRAFFIC).unwrap();
    Programmed {
        fabric,
        sim,
        before,
        after,
        conf: opensm.config_file,
        traffic,
    }
}

/// `ibqos dump --fabric ibsim:SOCK@NODE -o FILE` (the native ibsim client), which must
/// succeed, and what it wrote.
fn dump(ibqos: &Path, sim: &Ibsim, node: &str, file: &Path) -> (PathBuf, FabricDump) {
    let fabric = format!("ibsim:{}@{node}", sim.sockname());
    dump_with(Command::new(ibqos), &fabric, file)
}

/// `cmd` (ibqos, run directly or as a client of ibsim's umad shim) `dump --fabric FABRIC -o
/// FILE`, which must succeed, and what it wrote.
fn dump_with(mut cmd: Command, fabric: &str, file: &Path) -> (PathBuf, FabricDump) {
    cmd.args(["dump", "--fabric", fabric, "-o"]).arg(file);
    run_bounded(&mut cmd, TIMEOUT)
        .and_then(|finished| finished.success(&format!("ibqos dump --fabric {fabric}")))
        .unwrap();
    let text = std::fs::read_to_string(file).unwrap();
    (file.to_owned(), FabricDump::from_json(&text).unwrap())
}

/// `ibqos sim --topology NET ARGS --traffic TRAFFIC --json`: the report's bytes.
fn simulate(ibqos: &Path, net: &Path, tables: &[&Path], flag: &str, traffic: &Path) -> String {
    let mut cmd = Command::new(ibqos);
    cmd.arg("sim").arg("--topology").arg(net).arg(flag);
    cmd.args(tables).arg("--traffic").arg(traffic).arg("--json");
    let what = format!("ibqos sim {flag} {}", tables[0].display());
    run_bounded(&mut cmd, TIMEOUT)
        .and_then(|finished| finished.success(&what))
        .unwrap()
        .stdout
}

impl Programmed {
    /// The report of the run with the tables of `dump` (a file of [`Programmed`]).
    fn with_tables(&self, ibqos: &Path, dump: &Path) -> String {
        simulate(
            ibqos,
            &self.fabric.netfile,
            &[dump],
            "--tables",
            &self.traffic,
        )
    }

    /// The report of the run with the tables ibqos plans from OpenSM's opensm.conf.
    fn planned(&self, ibqos: &Path) -> String {
        simulate(
            ibqos,
            &self.fabric.netfile,
            &[&self.conf],
            "-F",
            &self.traffic,
        )
    }
}

#[test]
fn the_tables_opensm_programmed_simulate_as_ibqos_plans_them() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("dump-oracle-per-class");
    let p = programmed(&tools, &ibqos, PER_CLASS, &dir);

    let mut emulated = Command::new(&ibqos);
    emulated.arg("fabric").arg("dump").arg(&p.fabric.netfile);
    let emulated = run_bounded(&mut emulated, TIMEOUT)
        .unwrap()
        .success("fabric dump")
        .unwrap();
    let before_text = std::fs::read_to_string(&p.before.0).unwrap();
    assert_eq!(
        before_text, emulated.stdout,
        "ibsim as powered on, read by `ibqos dump`, is the emulated fabric's own dump"
    );

    // Through the kernel's interface (ibsim's umad shim here), the same bytes.
    let umad = dump_with(
        p.sim.client(&ibqos, &p.fabric.query_node),
        "umad",
        &dir.path().join("after-umad.json"),
    );
    assert_eq!(
        umad.1, p.after.1,
        "ibqos dump through umad and the native ibsim client"
    );

    let readback = QosReadback::read(&tools, &p.sim, &p.fabric.topology, &p.fabric.query_node)
        .unwrap_or_else(|e| panic!("smpquery: {e}"));
    let mut f = Failures::new("ibqos dump against smpquery, after OpenSM");
    compare_with_smpquery(&mut f, &p.after.1, &readback);
    f.assert_none();

    // The LFTs OpenSM programmed, as `ibroute` reads them (the dump keys switches by GUID and
    // the net file by name, so the tables are compared as a set).
    let routes = Readback::read(&tools, &p.sim, &p.fabric.topology, &p.fabric.query_node)
        .unwrap_or_else(|e| panic!("ibroute: {e}"));
    let mut by_ibroute: Vec<_> = routes.lfts.into_values().collect();
    let switches = p.after.1.nodes.values().filter(|n| n.kind == "switch");
    let mut dumped: Vec<_> = switches.map(|n| n.lft.clone()).collect();
    by_ibroute.sort();
    dumped.sort();
    assert_eq!(dumped.len(), 2, "both switches' LFTs");
    assert_eq!(dumped, by_ibroute, "ibqos dump's LFTs against ibroute");

    let held = p.with_tables(&ibqos, &p.after.0);
    assert_eq!(
        held,
        p.planned(&ibqos),
        "the tables OpenSM left on ibsim simulate as ibqos plans them from its opensm.conf"
    );
    assert_ne!(
        held,
        p.with_tables(&ibqos, &p.before.0),
        "the power-on tables give another report: the tables matter to this traffic"
    );
}

#[test]
fn opensm_masks_switch_tables_with_stale_oper_vls_and_what_they_map_beyond_is_dropped() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("dump-oracle-two-vls");
    let p = programmed(&tools, &ibqos, TWO_VLS, &dir);

    // What OpenSM left: every linked port runs 2 VLs; a CA's table maps into VL0-1, a switch
    // external port's into VL0-3.
    let two_vls = VlCount::Two.encoding();
    let mut f = Failures::new("the tables OpenSM left with max_op_vls 2");
    for node in p.after.1.nodes.values() {
        for (number, port) in linked(node.kind == "switch", &node.ports) {
            let at = format!("{}[{number}]", node.name);
            f.check(port.oper_vls == two_vls, || {
                format!("{at}: OperVLs {}, expected {two_vls}", port.oper_vls)
            });
            let highest = port.sl2vl.values().flatten().filter(|&&vl| vl != 15).max();
            let expected = if node.kind == "switch" { 3 } else { 1 };
            f.check(highest == Some(&expected), || {
                format!("{at}: highest data VL {highest:?}, expected {expected}")
            });
        }
    }
    f.assert_none();

    let flows = |report: &str| -> Vec<(String, u64, u64)> {
        let report: Value = serde_json::from_str(report).unwrap();
        let flows = report["flows"].as_array().unwrap().iter();
        flows
            .map(|flow| {
                let count = |field: &str| flow[field].as_u64().unwrap();
                let name = flow["name"].as_str().unwrap().to_owned();
                (name, count("delivered_packets"), count("dropped_packets"))
            })
            .collect()
    };
    let planned = flows(&p.planned(&ibqos));
    assert!(
        planned
            .iter()
            .all(|(_, delivered, dropped)| *delivered > 0 && *dropped == 0),
        "ibqos masks with the OperVLs it programs, so every flow arrives: {planned:?}"
    );
    // SLs 2 and 3 leave their CA on VL0 and VL1, and the first switch sends them on VL2 and
    // VL3, which its links do not run; SLs 0 and 1 stay on VL0 and VL1 everywhere.
    let held = flows(&p.with_tables(&ibqos, &p.after.0));
    for (name, delivered, dropped) in &held {
        let lost = matches!(name.as_str(), "sl2" | "sl3");
        assert_eq!(
            (*delivered == 0, *dropped > 0),
            (lost, lost),
            "{name}: {delivered} delivered, {dropped} dropped: {held:?}"
        );
    }
}

/// The ports a dump of ibsim holds that have a link: all but a switch's port 0 and its ports
/// that are down.
fn linked(switch: bool, ports: &BTreeMap<u8, PortDump>) -> impl Iterator<Item = (u8, &PortDump)> {
    ports
        .iter()
        .filter(move |(n, p)| !(switch && **n == 0) && p.phys_state == "LinkUp")
        .map(|(n, p)| (*n, p))
}

/// Every port smpquery read equals the dump's, field by field.
fn compare_with_smpquery(f: &mut Failures, dump: &FabricDump, readback: &QosReadback) {
    for ((id, number), read) in &readback.ports {
        let guid = readback
            .guids
            .iter()
            .find(|(_, n)| *n == id)
            .map(|(g, _)| *g);
        let held = guid
            .and_then(|guid| dump.node(guid))
            .and_then(|node| Some((node, node.ports.get(number)?)));
        let at = format!("{id}[{number}]");
        let Some((node, port)) = held else {
            f.check(false, || format!("{at}: not in the dump"));
            continue;
        };
        // smpquery finds no VLArb tables on a base switch port 0.
        let base_port0 = node.kind == "switch" && *number == 0 && read.vlarb.is_none();
        compare_port(f, &at, base_port0, port, read);
    }
}

fn compare_port(f: &mut Failures, at: &str, base_port0: bool, held: &PortDump, read: &PortQos) {
    let info = &read.info;
    let oper_vls = VlCount::from_encoding(held.oper_vls).map_or(0, VlCount::count);
    let fields = [
        ("LID", u64::from(held.lid), u64::from(info.lid)),
        ("OperVLs", u64::from(oper_vls), u64::from(info.oper_vls)),
        (
            "VLHighLimit",
            held.vl_high_limit.into(),
            info.vl_high_limit.into(),
        ),
        ("HOQLife", held.hoq_life.into(), info.hoq_life.into()),
        (
            "VLStallCount",
            held.vl_stall_count.into(),
            info.vl_stall_count.into(),
        ),
    ];
    for (name, held, read) in fields {
        f.check(held == read, || {
            format!("{at} {name}: dump {held}, smpquery {read}")
        });
    }
    for (name, held, read) in [
        ("PortState", &held.port_state, &info.link_state),
        ("PortPhysicalState", &held.phys_state, &info.phys_link_state),
    ] {
        f.check(held == read, || {
            format!("{at} {name}: dump {held}, smpquery {read}")
        });
    }
    if !base_port0 {
        // A switch's rows are one per input port; a CA's one row, under its own number in
        // the dump.
        let mut rows: Vec<(u8, [u8; 16])> = read.sl2vl.iter().map(|r| (r.in_port, r.vls)).collect();
        rows.sort_unstable();
        let rows: Vec<[u8; 16]> = rows.into_iter().map(|(_, vls)| vls).collect();
        let tables: Vec<[u8; 16]> = held.sl2vl.values().copied().collect();
        f.check(rows == tables, || {
            format!("{at} SL2VL: dump {tables:?}, smpquery {rows:?}")
        });
    }
    let entries = |table: &[ibqos_tests::smpquery::VlArbEntry]| -> Vec<[u8; 2]> {
        table.iter().map(|e| [e.vl, e.weight]).collect()
    };
    let (low, high) = read.vlarb.as_ref().map_or((Vec::new(), Vec::new()), |t| {
        (entries(&t.low), entries(&t.high))
    });
    f.check(low == held.vlarb_low && high == held.vlarb_high, || {
        format!(
            "{at} VLArb: dump {:?} / {:?}, smpquery {low:?} / {high:?}",
            held.vlarb_low, held.vlarb_high
        )
    });
}
