//! `ibqos dump` and the read-only survey under it, on the emulated fabric in virtual time. The
//! survey reads over the wire exactly what the fabric's own dump holds: as powered on, after the SM
//! programmed it, and on ports of every mix of QoS capabilities. It sends nothing but SubnGets, and
//! names every Get it could not complete.

mod common;

use std::process::Command;

use ibqos_congestion::CongestionReader;
use ibqos_emu::{Emulator, FaultSchedule, attach_port, dump};
use ibqos_fabric::dump::{CongestionDump, FabricDump};
use ibqos_mad::Method;
use ibqos_opensm::Settings;
use ibqos_sm::config::scheduler_config;
use ibqos_sm::engine::survey::Survey;
use ibqos_sm::manager::{Outcome, Run};
use ibqos_transport::driver::drive;
use ibqos_transport::emulated::EmulatedTransport;

use common::{EmulatedSm, mixed_capability_fat_tree, settings, two_switch};

/// Every SMP the fabric has handled so far, as (Gets, Sets).
fn handled(emulator: &Emulator) -> (u64, u64) {
    let count = |wanted| {
        emulator
            .handled_all()
            .filter(|(_, method, _)| *method == wanted)
            .map(|(_, _, n)| n)
            .sum()
    };
    (count(Method::Get), count(Method::Set))
}

/// A survey of the fabric behind `transport`, scheduled as the SM schedules by default, and
/// the Gets and Sets the fabric handled meanwhile.
fn survey_counted(transport: &mut EmulatedTransport) -> (Survey, (u64, u64)) {
    let before = handled(transport.emulator());
    let mut surveyed = Survey::start(scheduler_config(&Settings::default()));
    drive(
        transport,
        &mut surveyed,
        |s: &mut Survey| s.is_done().then_some(()),
        &|| false,
    )
    .unwrap();
    let after = handled(transport.emulator());
    (surveyed, (after.0 - before.0, after.1 - before.1))
}

/// The survey read the whole fabric with Gets alone, and what it read is the fabric's own dump.
fn assert_reads_the_fabric(transport: &mut EmulatedTransport) -> FabricDump {
    let (surveyed, (gets, sets)) = survey_counted(transport);
    assert_eq!(surveyed.unread(), []);
    assert_eq!(sets, 0, "a survey sends no Set");
    assert_eq!(
        gets,
        surveyed.stats().total_sent(),
        "every SMP it sent was a Get"
    );
    let read = surveyed.dump();
    assert_eq!(read, dump(transport.emulator()));
    read
}

#[test]
fn the_survey_of_the_power_on_fabric_is_its_dump() {
    let read = assert_reads_the_fabric(&mut two_switch());
    let ports: usize = read.nodes.values().map(|n| n.ports.len()).sum();
    assert_eq!((read.nodes.len(), ports), (7, 24));
}

#[test]
fn the_survey_reads_the_tables_the_sm_programmed() {
    let mut sm = EmulatedSm::new(
        two_switch(),
        Run::Once,
        &settings("examples/opensm-qos.conf"),
    );
    assert_eq!(sm.finish().1, Outcome::SubnetUp);
    let programmed = assert_reads_the_fabric(&mut sm.transport);
    let power_on = assert_reads_the_fabric(&mut two_switch());
    // What the SM changed is there: LIDs, ACTIVE, and the example's CA tables (VLHighLimit
    // qos_ca_high_limit 4; VL 0 weight 16 first in the low table).
    let h1 = programmed
        .nodes
        .values()
        .find(|n| n.name == "host-one HCA-1")
        .unwrap();
    let port = &h1.ports[&1];
    assert_ne!(port.lid, 0);
    assert_eq!(port.port_state, "Active");
    assert_eq!((port.vl_high_limit, port.vlarb_low[0]), (4, [0, 16]));
    assert_ne!(programmed, power_on);
}

#[test]
fn the_survey_reads_ports_of_every_mix_of_capabilities() {
    let mut topology = mixed_capability_fat_tree(true);
    let switches: Vec<_> = topology.switches().map(|(id, _)| id).collect();
    topology.node_mut(switches[0]).unwrap().enhanced_port0 = true;
    // Where `ibqos sm` attaches: port 1 of the first CA.
    let attach = attach_port(&topology, None).unwrap();
    let emulator = Emulator::new(topology).unwrap();
    let read = assert_reads_the_fabric(&mut EmulatedTransport::virtual_time(emulator, attach));
    let all: Vec<_> = read.nodes.values().flat_map(|n| n.ports.values()).collect();
    assert!(all.iter().any(|p| p.vlarb_low.len() == 64));
    assert!(all.iter().any(|p| p.vlarb_high.len() == 33));
    assert!(
        all.iter()
            .any(|p| p.sl2vl.is_empty() && !p.vlarb_low.is_empty())
    );
}

#[test]
fn a_node_that_answers_nothing_is_named_and_left_out() {
    let mut transport = two_switch();
    let h3 = transport.emulator().topology().node_by_name("H3").unwrap();
    transport.emulator_mut().schedule(&FaultSchedule {
        flaps: vec![],
        dead: vec![h3],
        ..FaultSchedule::default()
    });
    let (surveyed, (_, sets)) = survey_counted(&mut transport);
    assert_eq!(sets, 0);
    // H3 hangs off S2's port 1; H1, where the survey sits, reaches S2 through S1's port 3.
    let unread: Vec<String> = surveyed.unread().iter().map(ToString::to_string).collect();
    assert_eq!(
        unread,
        ["the node at directed route 0,1,3,1: NodeInfo (modifier 0x0): no answer after 4 attempts"]
    );
    let read = surveyed.dump();
    assert_eq!(read.nodes.len(), 6);
    assert!(
        !read
            .nodes
            .values()
            .any(|n| n.name.starts_with("host-three"))
    );
}

/// The survey of the fabric behind `transport` with what each congestion control agent holds,
/// and the CC Gets given up, as `ibqos dump --congestion` reads them.
fn survey_with_congestion(transport: &mut EmulatedTransport) -> (FabricDump, Vec<String>) {
    let config = scheduler_config(&Settings::default());
    let (surveyed, _) = survey_counted(transport);
    let mut read = surveyed.dump();
    let mut reader = CongestionReader::start(&read, config);
    drive(
        transport,
        &mut reader,
        |r: &mut CongestionReader| r.is_done().then_some(()),
        &|| false,
    )
    .unwrap();
    reader.fill(&mut read);
    let unread = reader.unread().iter().map(ToString::to_string).collect();
    (read, unread)
}

/// Every port's congestion section, by node name and port.
fn congestion_of(dump: &FabricDump) -> Vec<(String, u8, CongestionDump)> {
    dump.nodes
        .values()
        .flat_map(|node| {
            node.ports.iter().filter_map(|(&number, port)| {
                Some((node.name.clone(), number, port.congestion.clone()?))
            })
        })
        .collect()
}

/// After `ibqos sm` programs congestion control, the agents read over the wire hold what the
/// emulator's own dump says they hold: the dump with them is the fabric's dump.
#[test]
fn the_congestion_read_of_a_programmed_fabric_is_its_dump() {
    let mut sm = EmulatedSm::new(
        two_switch(),
        Run::Once,
        &settings("examples/opensm-cc.conf"),
    );
    assert_eq!(sm.finish().1, Outcome::SubnetUp);
    let (read, unread) = survey_with_congestion(&mut sm.transport);
    assert_eq!(unread, Vec::<String>::new());
    assert_eq!(read, dump(sm.transport.emulator()));
    let agents = congestion_of(&read);
    // Two switches at port 0 and the six CA ports (host-five has two).
    let switches = agents
        .iter()
        .filter(|(_, _, cc)| matches!(cc, CongestionDump::Switch(_)))
        .count();
    assert_eq!((switches, agents.len()), (2, 8), "{agents:?}");
    let Some((_, _, CongestionDump::Ca(ca))) = agents
        .iter()
        .find(|(_, _, cc)| matches!(cc, CongestionDump::Ca(_)))
    else {
        panic!("no CA read: {agents:?}");
    };
    assert_eq!(ca.ccti_limit, 5);
    assert_eq!(ca.table, [0, 4, 0x4008, 0x4010, 0x8040, 0xc3e8]);
}

/// A switch whose agent answers status 0x0008 keeps no congestion section, and the read says
/// why; every other agent is read.
#[test]
fn an_agent_that_answers_an_error_is_named_and_left_out() {
    let mut transport = two_switch();
    let s2 = transport.emulator().topology().node_by_name("S2").unwrap();
    transport.emulator_mut().schedule(&FaultSchedule {
        without_cc: vec![s2],
        ..FaultSchedule::default()
    });
    let mut sm = EmulatedSm::new(transport, Run::Once, &settings("examples/opensm-cc.conf"));
    assert_eq!(sm.finish().1, Outcome::SubnetUp);
    let (read, unread) = survey_with_congestion(&mut sm.transport);
    assert_eq!(unread.len(), 1, "{unread:?}");
    assert!(
        unread[0].ends_with("[0]: SwitchCongestionSetting (modifier 0x0): answered status 0x0008"),
        "{unread:?}"
    );
    let agents = congestion_of(&read);
    assert_eq!(agents.len(), 7, "{agents:?}");
    assert!(
        !agents.iter().any(|(name, ..)| name == "sw-two"),
        "{agents:?}"
    );
}

fn ibqos(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

/// `ibqos dump` of an emulated fabric writes the bytes `ibqos fabric dump` writes of it.
#[test]
fn ibqos_dump_of_the_emulated_fabric_is_fabric_dump() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("live.json");
    let out = ibqos(&[
        "dump",
        "--fabric",
        "sim:two-switch",
        "-o",
        file.to_str().unwrap(),
    ]);
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("ibqos dump: 7 nodes, 24 ports"), "{log}");
    let emulated = ibqos(&["fabric", "dump", "two-switch"]);
    assert!(emulated.status.success());
    assert_eq!(std::fs::read(&file).unwrap(), emulated.stdout);
}

#[test]
fn ibqos_dump_of_a_fabric_it_cannot_open_says_which() {
    let out = ibqos(&["dump", "--fabric", "sim:no-such.net"]);
    assert!(!out.status.success());
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(
        error.contains("cannot open fabric sim:no-such.net"),
        "{error}"
    );
    assert!(out.stdout.is_empty());
}
