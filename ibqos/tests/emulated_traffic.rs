//! Traffic inside the embedded emulated fabric: the SM programs QoS, the packet simulator runs a
//! traffic file over the tables the SMAs hold, and the PMAs' per-SL and per-VL counters carry
//! what the simulator's samples gave each port. A traffic file with an error is refused at its
//! place before anything starts.

use std::collections::BTreeMap;

use ibqos_emu::{Emulator, Request, SAMPLE_NS, TrafficEvent, TrafficOutcome, TrafficPlan};
use ibqos_fabric::PortRef;
use ibqos_mad::{
    Attribute, AttributeId, DrPath, Method, MgmtClass, PerfAttributeId, PerfMgtMad, PortRcvDataSl,
    PortSlRcvBecn, PortSlRcvFecn, PortVlXmitWaitCounters, PortXmitDataSl, Routing, Smp, SmpRepr,
    VlArbBlock, VlArbEntry, VlArbModifier, VlArbitrationTableRepr,
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

/// The two-switch fabric carrying [`TRAFFIC`], in virtual time, once the SM's first sweep
/// programmed QoS and brought the subnet up.
fn programmed_with_traffic() -> EmulatedSm {
    programmed_with(traffic_file(), "examples/sim/opensm.conf")
}

/// The two-switch fabric carrying the traffic file `traffic`, once the SM's first sweep with
/// the configuration `config` brought the subnet up.
fn programmed_with(traffic: Vec<u8>, config: &str) -> EmulatedSm {
    let mut transport = two_switch();
    let emulator = transport.emulator_mut();
    let plan = TrafficPlan::new(TRAFFIC, traffic, emulator.topology(), 0);
    emulator.set_traffic(plan.unwrap());
    let mut sm = EmulatedSm::new(transport, Run::Daemon, &settings(config));
    assert!(sm.sweep_done().subnet_up);
    sm
}

/// The outcome among `events`, if the traffic finished.
fn finished(events: &[TrafficEvent]) -> Option<TrafficOutcome> {
    events.iter().find_map(|event| match event {
        TrafficEvent::Finished(outcome) => Some(outcome.as_ref().clone()),
        _ => None,
    })
}

/// Runs the SM with QoS on the two-switch fabric carrying [`TRAFFIC`] until the traffic ended:
/// the fabric and the outcome.
fn run_traffic() -> (EmulatedSm, TrafficOutcome) {
    run_traffic_of(traffic_file(), "examples/sim/opensm.conf")
}

/// [`run_traffic`] with the traffic file `traffic` and the configuration `config`.
fn run_traffic_of(traffic: Vec<u8>, config: &str) -> (EmulatedSm, TrafficOutcome) {
    let mut sm = programmed_with(traffic, config);
    let mut events = sm.transport.emulator_mut().take_traffic_events();
    // The traffic starts once the first sweep programmed the LFTs, and ends 100 us later: in
    // virtual time, the wait for the next sweep steps it through.
    for _ in 0..2 {
        if let Some(outcome) = finished(&events) {
            return (sm, outcome);
        }
        assert!(sm.sweep_done().subnet_up);
        events.extend(sm.transport.emulator_mut().take_traffic_events());
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

/// Under the traffic file's congestion control, S1's port to S2 (both flows share it at twice
/// its rate) marks packets FECN: H3 counts them by SL, H1 and H2 the BECNs that came back, and
/// the PMAs hold what the simulator's samples gave each port.
#[test]
fn the_pmas_count_the_fecn_and_becn_of_congestion_controlled_traffic() {
    let mut traffic = traffic_file();
    traffic.extend_from_slice(
        b"\n[congestion_control]\ncc_sw_cong_setting_threshold = 15\n\
          cc_ca_cong_setting_control_map = 0x0006\n\
          cc_ca_cong_setting_ccti_timer = [20, 20, 20]\n\
          cc_ca_cong_setting_ccti_increase = [1, 1, 1]\n\
          cc_cct = \"0:0,0:1,0:2,0:3,0:4,0:5,0:6,0:7\"\n",
    );
    let (mut sm, outcome) = run_traffic_of(traffic, "examples/sim/opensm.conf");
    let total = |node: &str| {
        let port = outcome.ports.iter().find(|t| t.node == node);
        port.unwrap_or_else(|| panic!("{node} counted nothing"))
    };
    let h3 = total("H3");
    assert!(h3.rcv_fecn[1] > 0 && h3.rcv_fecn[2] > 0, "{h3:?}");
    assert!(total("H1").rcv_becn[1] > 0, "{:?}", total("H1"));
    assert!(total("H2").rcv_becn[2] > 0, "{:?}", total("H2"));

    let origin = sm.transport.port();
    let emulator = sm.transport.emulator_mut();
    let topology = emulator.topology().clone();
    for total in outcome.ports.iter().filter(|t| t.node.starts_with('H')) {
        let node = topology.node_by_name(&total.node).unwrap();
        let lid = emulator
            .port_info(PortRef::new(node, total.port))
            .unwrap()
            .lid;
        let mut get = |attribute| perf_get(emulator, origin, lid, attribute, total.port);
        let (fecn, becn) = (
            get(PerfAttributeId::PortSlRcvFecn),
            get(PerfAttributeId::PortSlRcvBecn),
        );
        let fecn = PortSlRcvFecn::new_checked(&fecn[..]).unwrap();
        let becn = PortSlRcvBecn::new_checked(&becn[..]).unwrap();
        for sl in 0..16 {
            let at = format!("{}[{}] SL{sl}", total.node, total.port);
            assert_eq!(u64::from(fecn.fecn(sl)), total.rcv_fecn[sl], "{at}");
            assert_eq!(u64::from(becn.becn(sl)), total.rcv_becn[sl], "{at}");
        }
    }
}

/// A traffic file without congestion control of its own runs with what the SM programmed into
/// the agents (examples/opensm-cc.conf: SL1 and SL2 controlled, the most sensitive threshold):
/// H3 counts FECNs, and the report has each flow's reaction point.
#[test]
fn traffic_runs_with_the_congestion_control_the_sm_programmed() {
    let (_, outcome) = run_traffic_of(traffic_file(), "examples/opensm-cc.conf");
    let h3 = outcome
        .ports
        .iter()
        .find(|t| t.node == "H3")
        .expect("H3 counted");
    assert!(h3.rcv_fecn[1] > 0 && h3.rcv_fecn[2] > 0, "{h3:?}");
    for flow in &outcome.report.flows {
        let cc = flow.congestion_control.as_ref();
        assert!(cc.is_some_and(|cc| cc.becns_received > 0), "{flow:?}");
    }
}

/// S1's low-priority VLArb table on its port 3 rewritten behind the SM while the traffic runs:
/// the simulation is rebuilt over it there and the counters go on; the report is the rebuilt
/// simulation's, from then on.
#[test]
fn a_table_rewritten_while_the_traffic_runs_rebuilds_its_simulation_there() {
    let mut sm = programmed_with_traffic();
    let (origin, now) = (sm.transport.port(), sm.transport.now_ns());
    let emulator = sm.transport.emulator_mut();
    let mut events = emulator.take_traffic_events();
    // The fabric looked every millisecond whether it carried the traffic, and it started
    // during the sweep: the rewrite comes 10 us after the sweep ended, in the middle.
    let started = events.iter().find_map(|event| match event {
        TrafficEvent::Started { at_ns } => Some(*at_ns),
        _ => None,
    });
    let started = started.expect("started during the first sweep");
    let rewritten_at = now + 10_000;
    assert!(rewritten_at < started + 90_000, "{started} {now}");
    let mut entries = [VlArbEntry::default(); 32];
    entries[0] = VlArbEntry { vl: 1, weight: 1 };
    let table = Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries });
    let modifier = VlArbModifier {
        block: VlArbBlock::Low0To31,
        port: 3,
    };
    let to_s1 = Routing::Directed(DrPath::request(&[1]).unwrap());
    let set = SmpRepr::set(&table, u32::from(modifier), 0x5eed, to_s1);
    let mut mad = [0u8; 256];
    set.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let request = Request {
        origin,
        at_ns: rewritten_at,
        dlid: None,
        mad: &mad,
    };
    assert!(emulator.exchange(request).is_some(), "S1 took the Set");
    emulator.advance_to(started + 200_000);
    events.extend(emulator.take_traffic_events());
    // At the sampling step the rewrite fell in: the fabric's counters were there.
    let step = started + (rewritten_at - started) / SAMPLE_NS * SAMPLE_NS;
    let rebuilt = |e: &TrafficEvent| matches!(e, TrafficEvent::Rebuilt { at_ns } if *at_ns == step);
    assert!(events.iter().any(rebuilt), "{events:?}");
    let outcome = finished(&events).expect("the traffic ended");
    assert_eq!(outcome.rebuilt, 1);
    // S1[3] was given the whole run; the report holds what followed the rewrite.
    let given: u64 = outcome
        .ports
        .iter()
        .filter(|t| t.node == "S1" && t.port == 3)
        .flat_map(|t| &t.sent)
        .map(|lane| lane.words * 4)
        .sum();
    let reported = outcome
        .report
        .links
        .iter()
        .find(|l| l.from == "S1[3]")
        .expect("S1[3] sent")
        .bytes;
    assert!(
        reported < given && reported > given / 2,
        "{reported} of {given}"
    );
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
