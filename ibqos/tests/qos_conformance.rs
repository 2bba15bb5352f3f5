//! Issue 34's loop closed end to end on the embedded fabric: the SM programs QoS, the packet
//! simulator runs traffic inside the fabric over the tables the SMAs hold, the PerfMgr reads
//! the per-VL counters it left, and the QoS conformance report holds each port's measured
//! shares to what its verified VL arbitration promises. One port's VLArb table rewritten
//! behind the SM shows up with both figures.
//!
//! Two greedy flows meet at S1's port to H2: H1's on SL 1 (VL 1, low weight 192) and H5's on
//! SL 3 (VL 3, low weight 64), so that port's link is shared 3:1. The links run at SDR 1x
//! (2 Gb/s of data), slow enough that two simulated seconds are quick to run. The PerfMgr
//! sweeps every second of virtual time; the traffic runs from 0.5 s to 2.5 s, so the window
//! between its readings at 1 s and 2 s is all traffic.

use std::collections::BTreeMap;
use std::time::Instant;

use ibqos_emu::{FaultSchedule, TrafficEvent, TrafficPlan, VlArbRewrite};
use ibqos_fabric::PortRef;
use ibqos_mad::{Guid, VlArbEntry};
use ibqos_qos::VlArbTable;
use ibqos_sm::manager::{Manager, Run};
use ibqos_sm::qos_report::{PortShares, QosReport, Verdict};
use ibqos_transport::Transport;
use ibqos_transport::driver::drive;

mod common;
use common::{EmulatedSm, two_switch};

const QOS: &str = "qos TRUE
qos_max_vls 4
qos_high_limit 0
qos_vlarb_high 0:4
qos_vlarb_low 1:192,3:64
qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3
perfmgr TRUE
perfmgr_sweep_time_s 1
sweep_interval 100
";

const TRAFFIC: &str = "duration_us = 2000000

[link]
speed = \"SDR\"
width = 1

[[flow]]
name = \"heavy\"
src = \"H1\"
dst = \"H2\"
sl = 1
payload = 2048

[[flow]]
name = \"light\"
src = \"H5\"
dst = \"H2\"
sl = 3
payload = 2048
";

/// When the traffic starts, in emulated ns.
const TRAFFIC_START_NS: u64 = 500_000_000;

/// The SM with QoS, the PerfMgr reading per-VL counters, on the two-switch fabric carrying
/// [`TRAFFIC`], with `schedule` applied.
fn fabric(schedule: FaultSchedule) -> EmulatedSm {
    let mut transport = two_switch();
    let emulator = transport.emulator_mut();
    let plan = TrafficPlan::new(
        "traffic.toml",
        TRAFFIC.as_bytes().to_vec(),
        emulator.topology(),
        0,
    )
    .unwrap()
    .starting_at(TRAFFIC_START_NS);
    emulator.set_traffic(plan);
    emulator.schedule(&schedule);
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("opensm.conf");
    std::fs::write(&conf, QOS).unwrap();
    let mut settings = ibqos_opensm::load(&conf).unwrap().settings;
    settings.perfmgr_lanes = true;
    let perfmgr = ibqos_sm::config::perfmgr_config(&settings);
    let port_guid = transport.local_port().port_guid;
    let manager = Manager::new(Run::Daemon, &settings, BTreeMap::new(), Guid(port_guid))
        .with_perfmgr(perfmgr, Instant::now(), 0);
    EmulatedSm { transport, manager }
}

/// S1's port to H2, where the two flows meet.
fn shared_port(sm: &EmulatedSm) -> PortRef {
    let topology = sm.transport.emulator().topology();
    PortRef::new(topology.node_by_name("S1").unwrap(), 2)
}

/// Drives the SM until the report first judges `port` (both it and its peer read twice, with
/// traffic between): the report then.
fn judged(sm: &mut EmulatedSm, port: PortRef) -> QosReport {
    let guid = sm
        .transport
        .emulator()
        .topology()
        .node(port.node)
        .unwrap()
        .guid;
    let judged = |manager: &mut Manager| {
        let report = manager.qos_report()?;
        let found = report.ports.iter().any(|p| {
            p.node_guid == Guid(guid) && p.port == port.port && p.verdict != Verdict::Unread
        });
        (found && manager.perfmgr()?.outstanding() == 0).then_some(report)
    };
    drive(&mut sm.transport, &mut sm.manager, judged, &|| false)
        .unwrap()
        .expect("nothing interrupts")
}

fn port_shares<'r>(report: &'r QosReport, sm: &EmulatedSm, port: PortRef) -> &'r PortShares {
    let guid = sm
        .transport
        .emulator()
        .topology()
        .node(port.node)
        .unwrap()
        .guid;
    report
        .ports
        .iter()
        .find(|p| p.node_guid == Guid(guid) && p.port == port.port)
        .unwrap()
}

/// The share of each data VL in what the simulator's report says `link` carried.
fn simulated_shares(sm: &mut EmulatedSm, link: &str) -> BTreeMap<u8, f64> {
    // The traffic ends at 2.5 s; the SM's waits step it there.
    let outcome = loop {
        let events = sm.transport.emulator_mut().take_traffic_events();
        if let Some(outcome) = events.iter().find_map(|e| match e {
            TrafficEvent::Finished(outcome) => Some(outcome.clone()),
            _ => None,
        }) {
            break outcome;
        }
        sm.sweep_started();
    };
    let carried = outcome
        .report
        .links
        .iter()
        .find(|l| l.from == link)
        .unwrap_or_else(|| panic!("no link from {link}"));
    let data: Vec<(u8, u64)> = carried
        .vls
        .iter()
        .filter(|v| v.vl != 0 && v.vl != 15 && v.bytes > 0)
        .map(|v| (v.vl, v.bytes))
        .collect();
    let total: u64 = data.iter().map(|(_, bytes)| bytes).sum();
    data.into_iter()
        .map(|(vl, bytes)| (vl, bytes as f64 / total as f64))
        .collect()
}

/// The measured and promised share of each data VL of a judged port (VL 0 carries only the
/// SM's MADs).
fn figures(shares: &PortShares) -> BTreeMap<u8, (f64, f64)> {
    shares
        .vls
        .iter()
        .filter(|v| v.vl != 0)
        .map(|v| (v.vl, (v.measured, v.promised)))
        .collect()
}

/// A report, one port's verdict in it and that port's figures.
type Judged = (QosReport, Verdict, BTreeMap<u8, (f64, f64)>);

/// Drives the SM until the report judges [`shared_port`]: the report, that port's verdict and
/// its figures.
fn shared_port_judged(sm: &mut EmulatedSm) -> Judged {
    let port = shared_port(sm);
    let report = judged(sm, port);
    let shares = port_shares(&report, sm, port);
    let (verdict, measured) = (shares.verdict, figures(shares));
    (report, verdict, measured)
}

/// The simulator's own report for the shared link gives VLs 1 and 3 the `measured` shares
/// within 1 %.
fn assert_matches_the_simulator(sm: &mut EmulatedSm, measured: &BTreeMap<u8, (f64, f64)>) {
    let simulated = simulated_shares(sm, "S1[2]");
    assert_eq!(simulated.keys().copied().collect::<Vec<_>>(), [1, 3]);
    for (vl, share) in simulated {
        let (got, _) = measured[&vl];
        assert!(
            (got - share).abs() < 0.01,
            "VL {vl}: measured {got}, simulated {share}"
        );
    }
}

#[test]
fn measured_shares_match_the_simulator_and_the_tables_promise() {
    let mut sm = fabric(FaultSchedule::default());
    let (report, verdict, measured) = shared_port_judged(&mut sm);
    assert_eq!(verdict, Verdict::Conforms, "{report}");
    // The promise: 3:1 by the low table's weights, both VLs backlogged.
    let (heavy, light) = (measured[&1], measured[&3]);
    assert!(
        (heavy.1 - 0.75).abs() < 0.02 && (light.1 - 0.25).abs() < 0.02,
        "{report}"
    );
    for (measured, promised) in [heavy, light] {
        assert!(
            (measured - promised).abs() <= report.tolerance(),
            "{report}"
        );
    }
    assert_matches_the_simulator(&mut sm, &measured);
}

#[test]
fn a_port_whose_vlarb_was_rewritten_behind_the_sm_is_flagged_with_both_figures() {
    // The weights turned round on S1's port to H2 after the SM programmed it and before the
    // traffic: the simulation runs over the rewritten table, the SM does not sweep again.
    let topology = two_switch().emulator().topology().clone();
    let port = PortRef::new(topology.node_by_name("S1").unwrap(), 2);
    let reversed = [VlArbEntry::new(1, 64), VlArbEntry::new(3, 192)];
    let schedule = FaultSchedule {
        vlarbs: vec![VlArbRewrite {
            port,
            at_ns: TRAFFIC_START_NS - 100_000_000,
            high: None,
            low: Some(VlArbTable::from_entries(&reversed)),
        }],
        ..FaultSchedule::default()
    };
    let mut sm = fabric(schedule);
    let (report, verdict, measured) = shared_port_judged(&mut sm);
    assert_eq!(verdict, Verdict::Outside, "{report}");
    // VL 1 got about a quarter against three quarters promised, VL 3 the other way round.
    let (heavy, light) = (measured[&1], measured[&3]);
    assert!(
        (heavy.0 - 0.25).abs() < 0.02 && (heavy.1 - 0.75).abs() < 0.02,
        "{report}"
    );
    assert!(
        (light.0 - 0.75).abs() < 0.02 && (light.1 - 0.25).abs() < 0.02,
        "{report}"
    );
    // The text names the port, why, and both figures of each VL.
    let text = report.to_string();
    assert!(
        text.contains("sw-one (0x0002c90000001000) port 2: outside: VL 1 got 50.0 points less"),
        "{text}"
    );
    let row = |vl: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(vl))
            .unwrap()
    };
    let (vl1, vl3) = (row("1 "), row("3 "));
    assert!(vl1.contains("25.0%") && vl1.contains("75.0%"), "{text}");
    assert!(vl3.contains("75.0%") && vl3.contains("25.0%"), "{text}");
    // No other port breaks its promise.
    assert_eq!(report.count(Verdict::Outside), 1, "{report}");
    assert_matches_the_simulator(&mut sm, &measured);
}
