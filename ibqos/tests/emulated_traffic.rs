//! Traffic inside the embedded emulated fabric: the SM programs QoS, the packet simulator runs a
//! traffic file over the tables the SMAs hold, and the PMAs' per-SL and per-VL counters carry
//! what the simulator's samples gave each port. A traffic file with an error is refused at its
//! place before anything starts.

use std::collections::BTreeMap;

use ibqos_emu::{Emulator, Request, TrafficEvent, TrafficOutcome, TrafficPlan};
use ibqos_fabric::PortRef;
use ibqos_mad::{
    AttributeId, Method, MgmtClass, PerfAttributeId, PerfMgtMad, PortRcvDataSl,
    PortVlXmitWaitCounters, PortXmitDataSl,
};
use ibqos_sm::manager::Run;
use tempfile::TempDir;

mod common;
use common::{EmulatedSm, ibqos, scratch_file, settings, two_switch};

/// Two greedy flows into H3 for 100 us, on SL 1 and SL 2: with examples/sim/opensm.conf's
/// tables SL n goes on VL n, VL 2 of high priority.
const TRAFFIC: &str = "examples/sim/two-switch-traffic.toml";

/// The bytes of [`TRAFFIC`].
fn traffic_file() -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(TRAFFIC);
    std::fs::read(path).unwrap()
}

/// A PerfMgt Get of `attribute` for port `port_select`, from the SM's port to `dlid`: the data
/// area of the answer.
fn perf_get(
    emulator: &mut Emulator,
    origin: PortRef,
    dlid: u16,
    attribute: PerfAttributeId,
    port_select: u8,
) -> Vec<u8> {
    let mut bytes = vec![0; 256];
    let mut mad = PerfMgtMad::new_unchecked(&mut bytes[..]);
    let mut header = mad.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::PerfMgt);
    header.set_class_version(1);
    header.set_method(Method::Get);
    header.set_transaction_id(7);
    header.set_attribute_id(AttributeId::from(u16::from(attribute)));
    mad.data_mut()[1] = port_select;
    let request = Request {
        origin,
        at_ns: 0,
        dlid: Some(dlid),
        mad: &bytes,
    };
    let reply = emulator.exchange(request).expect("the PMA answers");
    PerfMgtMad::new_checked(&reply.mad[..])
        .unwrap()
        .data()
        .to_vec()
}

/// Runs the SM with QoS on the two-switch fabric carrying [`TRAFFIC`] until the traffic ended:
/// the fabric and the outcome.
fn run_traffic() -> (EmulatedSm, TrafficOutcome) {
    let mut transport = two_switch();
    let emulator = transport.emulator_mut();
    let traffic = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(TRAFFIC);
    let bytes = std::fs::read(&traffic).unwrap();
    let plan = TrafficPlan::new(TRAFFIC, bytes, emulator.topology(), 0);
    emulator.set_traffic(plan.unwrap());
    let qos = settings("examples/sim/opensm.conf");
    let mut sm = EmulatedSm::new(transport, Run::Daemon, &qos);
    let mut events = Vec::new();
    // The traffic starts once the first sweep programmed the LFTs, and ends 100 us later: in
    // virtual time, the wait for the next sweep steps it through.
    for _ in 0..3 {
        assert!(sm.sweep_done().subnet_up);
        events.extend(sm.transport.emulator_mut().take_traffic_events());
        if let Some(TrafficEvent::Finished(outcome)) = events.last() {
            let outcome = outcome.as_ref().clone();
            return (sm, outcome);
        }
    }
    panic!("the traffic did not end: {events:?}");
}

#[test]
fn the_pmas_count_what_the_simulated_traffic_did_over_the_tables_the_sm_programmed() {
    let (mut sm, outcome) = run_traffic();
    assert_eq!(outcome.rebuilt, 0, "no table changed while it ran");
    assert_eq!(outcome.ended_ns - outcome.started_ns, 100_000);

    // What the ports were given adds up to the simulator's report, link by link and VL by VL.
    let mut given: BTreeMap<(String, u8), u64> = BTreeMap::new();
    for total in &outcome.ports {
        for lane in &total.sent {
            *given
                .entry((format!("{}[{}]", total.node, total.port), lane.vl))
                .or_default() += lane.words;
        }
    }
    let mut reported = BTreeMap::new();
    for link in &outcome.report.links {
        for vl in link.vls.iter().filter(|v| v.vl != 15 && v.packets > 0) {
            reported.insert((link.from.clone(), vl.vl), vl.bytes / 4);
        }
    }
    assert_eq!(given, reported);
    // Both flows leave S1 by the same port to S2, each SL on its own VL, and there each VL
    // waits while the other is sent.
    let to_s2 = outcome
        .ports
        .iter()
        .find(|t| t.node == "S1" && t.sent.len() == 2)
        .expect("a port of S1 carries both flows");
    let vls: Vec<(u8, u8)> = to_s2.sent.iter().map(|l| (l.sl, l.vl)).collect();
    assert_eq!(vls, [(1, 1), (2, 2)]);
    assert!(
        to_s2.xmit_wait[1] > 0 && to_s2.xmit_wait[2] > 0,
        "{to_s2:?}"
    );

    // The PMAs hold exactly that: MADs go on SL 0 and never wait, so the per-SL data of SLs 1
    // and 2 and every VL's XmitWait are the traffic's alone.
    let origin = sm.transport.port();
    let emulator = sm.transport.emulator_mut();
    let topology = emulator.topology().clone();
    for total in &outcome.ports {
        let node = topology.node_by_name(&total.node).unwrap();
        let switch = topology.node(node).unwrap().is_switch();
        let addressed = PortRef::new(node, if switch { 0 } else { total.port });
        let lid = emulator.port_info(addressed).unwrap().lid;
        let mut get = |attribute| perf_get(emulator, origin, lid, attribute, total.port);
        let xmit = get(PerfAttributeId::PortXmitDataSl);
        let rcv = get(PerfAttributeId::PortRcvDataSl);
        let wait = get(PerfAttributeId::PortVlXmitWaitCounters);
        let (xmit, rcv) = (
            PortXmitDataSl::new_checked(&xmit[..]).unwrap(),
            PortRcvDataSl::new_checked(&rcv[..]).unwrap(),
        );
        let wait = PortVlXmitWaitCounters::new_checked(&wait[..]).unwrap();
        let words = |lanes: &[ibqos_sim::LaneCount], sl: u8| -> u64 {
            lanes.iter().filter(|l| l.sl == sl).map(|l| l.words).sum()
        };
        let at = format!("{}[{}]", total.node, total.port);
        for sl in 1..=2 {
            assert_eq!(
                u64::from(xmit.data(sl)),
                words(&total.sent, sl as u8),
                "{at} SL{sl}"
            );
            assert_eq!(
                u64::from(rcv.data(sl)),
                words(&total.received, sl as u8),
                "{at} SL{sl}"
            );
        }
        for vl in 0..16 {
            let expected = total.xmit_wait[vl].min(u64::from(u16::MAX));
            assert_eq!(u64::from(wait.wait(vl)), expected, "{at} VL{vl}");
        }
    }
}

#[test]
fn a_traffic_file_with_an_error_is_refused_at_its_place_before_anything_starts() {
    let dir = TempDir::new().unwrap();
    let good = String::from_utf8(traffic_file()).unwrap();
    let bad = good.replace("dst = \"H3\"\nsl = 2", "dst = \"H9\"\nsl = 2");
    assert_ne!(bad, good);
    let file = scratch_file(&dir, "bad.toml", bad);
    let file = file.to_str().unwrap();
    for args in [
        &[
            "fabric",
            "serve",
            "two-switch",
            "--sockname",
            "ibqos-bad-traffic",
            "--traffic",
            file,
        ][..],
        &[
            "sm",
            "--fabric",
            "sim:two-switch",
            "--once",
            "--traffic",
            file,
        ][..],
    ] {
        let out = ibqos(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {stderr}");
        assert!(stderr.contains("bad.toml:22:7"), "{args:?}: {stderr}");
        assert!(stderr.contains("unknown node `H9`"), "{args:?}: {stderr}");
    }
}
