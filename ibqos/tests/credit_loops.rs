//! The credit-loop checker on the emulated fabric: the SM's check after each routing (its count
//! and the loops it finds), tables changed behind the SM's back found in what the fabric holds,
//! and `ibqos credit-loops` on net files and dumps.

mod common;

use ibqos_emu::{Emulator, attach_port};
use ibqos_fabric::credit_loops::CreditReport;
use ibqos_fabric::generate::{assign_missing_lids, ring};
use ibqos_fabric::{PortRef, Topology};
use ibqos_mad::{Attribute, Routing, SlToVlMappingTableRepr, SlToVlModifier, Smp, SmpRepr};
use ibqos_sm::manager::Run;
use ibqos_transport::emulated::EmulatedTransport;
use tempfile::TempDir;

use common::dateline::{check_with_dateline, dateline_tables, names_the_loop_up_the_ring};
use common::{EmulatedSm, generated_net, ibqos, scratch_file};

/// A 6-switch ring with one host each, the SM attached at H0_0.
fn ring6() -> EmulatedTransport {
    let mut topology = ring(6, 1).unwrap();
    assign_missing_lids(&mut topology).unwrap();
    let attach = attach_port(&topology, None).unwrap();
    EmulatedTransport::virtual_time(Emulator::new(topology).unwrap(), attach)
}

fn settings(dir: &TempDir, text: &str) -> ibqos_opensm::Settings {
    let conf = scratch_file(dir, "opensm.conf", text);
    ibqos_opensm::load(&conf).unwrap().settings
}

/// Each routing is checked once: minhop's two loops on the ring (one each way) after the first
/// sweep, no second check of the same routing, and a new check when a reload routes by updn.
#[test]
fn the_sm_checks_each_routing_once() {
    let dir = TempDir::new().unwrap();
    let minhop = settings(&dir, "routing_engine minhop\nqos TRUE\n");
    let mut sm = EmulatedSm::new(ring6(), Run::Daemon, &minhop);
    assert!(sm.sweep_done().subnet_up);
    assert_eq!(sm.manager.credit_loops(), Some(2));
    assert_eq!(sm.manager.counters().credit_loop_checks, 1);
    assert!(sm.sweep_done().subnet_up);
    assert_eq!(sm.manager.counters().credit_loop_checks, 1);

    let s0 = "0x0000000000200000\n";
    let roots = scratch_file(&dir, "roots", s0);
    let updn = format!(
        "routing_engine updn\nroot_guid_file {}\nqos TRUE\n",
        roots.display()
    );
    sm.manager.reload(settings(&dir, &updn));
    assert!(sm.sweep_done().subnet_up);
    assert_eq!(sm.manager.credit_loops(), Some(0));
    assert_eq!(sm.manager.counters().credit_loop_checks, 2);
}

/// Sends an SL2VL Set of (`input`, `output`) on switch `name` by its LID, as another SM would.
fn set_sl2vl(transport: &mut EmulatedTransport, name: &str, input: u8, output: u8, vls: [u8; 16]) {
    let emulator = transport.emulator_mut();
    let switch = emulator.topology().node_by_name(name).unwrap();
    let lid = emulator.port_info(PortRef::new(switch, 0)).unwrap().lid;
    let table = Attribute::SlToVlMappingTable(SlToVlMappingTableRepr { vls });
    let modifier = u32::from(SlToVlModifier::Pair { input, output });
    let mut mad = vec![0; 256];
    SmpRepr::set(&table, modifier, 7, Routing::Lid).emit(&mut Smp::new_unchecked(&mut mad[..]));
    let origin = emulator.topology().node_by_name("H0_0").unwrap();
    let at_ns = transport.now_ns();
    let reply = transport.emulator_mut().exchange(ibqos_emu::Request {
        origin: PortRef::new(origin, 1),
        at_ns,
        dlid: Some(lid),
        mad: &mad,
    });
    assert!(reply.is_some(), "the Set of {name} was answered");
}

/// Another SM's Sets of the dateline's tables.
fn program_dateline(transport: &mut EmulatedTransport) {
    for (switch, input, output, vls) in dateline_tables() {
        set_sl2vl(transport, &switch, input, output, vls);
    }
}

/// What the emulated fabric holds (its own dump), checked with the dateline's SLs.
fn check_held(transport: &EmulatedTransport) -> (Topology, CreditReport) {
    let emulator = transport.emulator();
    check_with_dateline(emulator.topology(), &ibqos_emu::dump(emulator)).unwrap()
}

/// The ring is free of credit loops with the dateline's tables; once another SM sets one table
/// of S0 to send SL1 on VL0, the loop around the ring is found again in what the fabric holds.
#[test]
fn a_table_changed_behind_the_sms_back_closes_the_loop_again() {
    let dir = TempDir::new().unwrap();
    let conf = settings(&dir, "routing_engine minhop\nqos TRUE\nmax_op_vls 2\n");
    let mut sm = EmulatedSm::new(ring6(), Run::Once, &conf);
    let (_, outcome) = sm.finish();
    assert!(outcome.is_success(), "{outcome:?}");
    program_dateline(&mut sm.transport);
    let (topology, report) = check_held(&sm.transport);
    assert!(report.is_free(), "{}", report.describe(&topology));
    assert!(report.dependencies > 0);
    assert_eq!(report.discard_count, 0, "{}", report.describe(&topology));

    set_sl2vl(&mut sm.transport, "S0", 1, 2, [0; 16]);
    let (topology, report) = check_held(&sm.transport);
    assert!(
        names_the_loop_up_the_ring(&report, &topology),
        "{}",
        report.describe(&topology)
    );
}

/// The command on a torus: minhop's loop named with its closing routes and exit status 1; updn
/// with a root none and 0; the same loop from a dump of the fabric the SM programmed, and from
/// that fabric read live.
#[test]
fn the_command_finds_minhops_loop_on_a_torus_and_none_with_updn() {
    let dir = TempDir::new().unwrap();
    let net = generated_net(
        &dir,
        "torus.net",
        &["torus", "--x", "4", "--y", "4", "--hosts", "1"],
    );
    let net = net.to_str().unwrap();
    let minhop = ibqos(&["credit-loops", "--topology", net]);
    assert_eq!(minhop.status.code(), Some(1), "{minhop:?}");
    let text = String::from_utf8(minhop.stdout).unwrap();
    let cycle = "\"S0_0\"/P1 VL0 -> \"S1_0\"/P3 VL0 -> \"S1_1\"/P2 VL0 -> \"S0_1\"/P4 VL0 -> \
                 \"S0_0\"/P1 VL0";
    assert!(
        text.contains("1 credit loop: 64 channels between switches"),
        "{text}"
    );
    assert!(text.contains(cycle), "{text}");
    // One route per dependency (the fabric crate's tests trace each through its two channels).
    assert!(
        text.contains("\"S0_0\"/P1 VL0 waits on \"S1_0\"/P3 VL0: LID "),
        "{text}"
    );

    let roots = scratch_file(&dir, "roots", "0x0000000000200000\n");
    let conf = scratch_file(
        &dir,
        "updn.conf",
        format!("routing_engine updn\nroot_guid_file {}\n", roots.display()),
    );
    let updn = ibqos(&[
        "credit-loops",
        "--topology",
        net,
        "-F",
        conf.to_str().unwrap(),
    ]);
    assert_eq!(updn.status.code(), Some(0), "{updn:?}");
    let text = String::from_utf8(updn.stdout).unwrap();
    assert!(text.contains("(routed by updn)"), "{text}");
    assert!(text.contains("No credit loop: 64 channels"), "{text}");

    let dump = dir.path().join("held.json");
    let sm = ibqos(&[
        "sm",
        "--once",
        "--fabric",
        &format!("sim:{net}"),
        "--dump-fabric",
        dump.to_str().unwrap(),
    ]);
    assert!(sm.status.success(), "{sm:?}");
    let log = String::from_utf8(sm.stderr).unwrap();
    assert!(
        log.contains("credit loop: \"0x0000000000200000\"/P1 VL0 -> "),
        "{log}"
    );
    let held = ibqos(&[
        "credit-loops",
        "--topology",
        net,
        "--dump",
        dump.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(held.status.code(), Some(1), "{held:?}");
    let report: serde_json::Value = serde_json::from_slice(&held.stdout).unwrap();
    assert_eq!(report["credit_loops"], 1);
    assert_eq!(report["routed_by"], serde_json::Value::Null);
    let first = &report["loops"][0]["channels"][0];
    assert_eq!(
        (first["node"].as_str(), first["port"].as_u64()),
        (Some("S0_0"), Some(1))
    );
    let closing = report["loops"][0]["closing"].as_array().unwrap();
    assert_eq!(closing.len(), 4);
    assert!(
        closing
            .iter()
            .all(|route| route["sl"] == 0 && route["dlid"].as_u64() > Some(0))
    );
}
