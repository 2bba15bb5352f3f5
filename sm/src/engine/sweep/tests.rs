//! A bare sweep driven over the two-switch fabric, emulated in the same process: the phases it
//! passes, what it counts, and where it stops.

use super::*;
use crate::testing::{Bare, Fabric, config, settings, subnet_up, sweep};
use ibqos_emu::FaultSchedule;
use ibqos_mad::Method;

/// Every phase a sweep passes through, in order, each once.
fn phases(fabric: &mut Fabric, sweep: Sweep) -> (Vec<Phase>, Sweep) {
    let mut bare = Bare(sweep);
    let mut seen = vec![bare.0.phase().clone()];
    fabric.drive(&mut bare, |bare| {
        if seen.last() != Some(bare.0.phase()) {
            seen.push(bare.0.phase().clone());
        }
        bare.0.is_done()
    });
    (seen, bare.0)
}

#[test]
fn a_forced_sweep_passes_every_phase_in_order_to_subnet_up() {
    let mut fabric = Fabric::two_switch();
    // Every phase has SMPs to wait for: another port with IsSM to read, QoS on, a multicast
    // group with members.
    let h4 = fabric.port_of("H4", 1);
    fabric.emulator.set_is_sm(h4, true);
    let members = [fabric.port_of("H1", 1), h4].map(|port| Guid(fabric.guid_of(port)));
    let start = SweepConfig {
        multicast: [(0xc000, members.into())].into(),
        ..config(&settings("qos TRUE\n"), SweepMode::Forced)
    };
    let start = Sweep::start(start, Learned::default(), fabric.now());
    let (seen, sweep) = phases(&mut fabric, start);
    assert_eq!(
        seen,
        [
            Phase::Discovering,
            Phase::ReadingSmInfo,
            Phase::ProgrammingPartitions,
            Phase::ConfiguringPorts,
            Phase::ProgrammingQos,
            Phase::ProgrammingSwitches,
            Phase::ProgrammingMulticast,
            Phase::Activating,
            Phase::SubnetUp,
        ]
    );
    // What it counts is what the fabric has: a LID for each switch and each CA port.
    let topology = fabric.emulator.topology();
    let end_ports = topology.nodes().map(|(_, node)| match node.kind {
        ibqos_fabric::NodeKind::Switch => 1,
        _ => node.existing_ports().count(),
    });
    let counts = sweep.counts();
    assert_eq!(counts.nodes, topology.nodes().count());
    assert_eq!(counts.lids, end_ports.sum::<usize>());
    assert_eq!((counts.failed_requests, counts.ports_not_active), (0, 0));
    assert!(sweep.subnet_up_after().is_some());
}

#[test]
fn an_electing_sweep_sets_nothing_until_it_may_proceed() {
    let mut fabric = Fabric::two_switch();
    let start = config(&settings(""), SweepMode::Forced);
    let mut bare = Bare(Sweep::start_electing(
        start,
        Learned::default(),
        fabric.now(),
    ));
    fabric.drive(&mut bare, |bare| {
        *bare.0.phase() == Phase::Discovered && bare.0.outstanding() == 0
    });
    // It waits there, with nothing to send and no timer.
    fabric.flush(&mut bare);
    assert_eq!(bare.0.next_deadline(), None);
    let sets = |fabric: &Fabric| {
        let smps = fabric.smps_sent_since(0);
        smps.iter().filter(|smp| smp.method == Method::Set).count()
    };
    assert_eq!(sets(&fabric), 0);
    bare.0.proceed(fabric.now(), false);
    fabric.drive(&mut bare, |bare| bare.0.is_done());
    assert_eq!(*bare.0.phase(), Phase::SubnetUp);
    assert!(sets(&fabric) > 0);
}

#[test]
fn a_sweep_that_cannot_assign_lids_fails_with_the_reason() {
    let mut fabric = Fabric::two_switch();
    let bad = SweepConfig {
        lmc: 8,
        ..config(&settings(""), SweepMode::Forced)
    };
    let sweep = sweep(&mut fabric, bad, Learned::default());
    let failure = SweepFailure::Lids(LidError::BadLmc(8));
    assert_eq!(*sweep.phase(), Phase::Failed(failure.clone()));
    // Shown as the error it wraps, as the summary prints it.
    assert_eq!(failure.to_string(), LidError::BadLmc(8).to_string());
    // It failed before any PortInfo Set.
    let smps = fabric.smps_sent_since(0);
    assert!(smps.iter().all(|smp| smp.method != Method::Set), "{smps:?}");
}

#[test]
fn a_dead_host_leaves_the_sweep_incomplete_with_its_switch_port_not_active() {
    let mut fabric = Fabric::two_switch();
    let h3 = fabric.port_of("H3", 1);
    fabric.emulator.schedule(&FaultSchedule {
        flaps: vec![],
        dead: vec![h3.node],
        ..FaultSchedule::default()
    });
    let sweep = sweep(
        &mut fabric,
        config(&settings(""), SweepMode::Forced),
        Learned::default(),
    );
    let counts = sweep.counts();
    assert_eq!(
        *sweep.phase(),
        Phase::Incomplete {
            failed_requests: counts.failed_requests,
            ports_not_active: counts.ports_not_active,
        }
    );
    // The NodeInfo to H3 found no one; S2's port to it stays linked and not ACTIVE.
    assert!(counts.failed_requests > 0);
    assert_eq!(counts.ports_not_active, 1);
    let s2_port = fabric.port_of("S2", 1);
    assert_ne!(
        fabric.emulator.port_info(s2_port).unwrap().port_state,
        PortState::Active
    );
    // Everyone else is up.
    let (_, up) = subnet_up("");
    assert_eq!(counts.nodes + 1, up.counts().nodes);
}

/// A routing that spends SLs: each path's SL from its LIDs and the hint.
#[derive(Debug)]
struct SlFromLids;

impl Layering for SlFromLids {
    fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        ((u16::from(hint) + 2 * slid + dlid) % 16) as u8
    }
}

/// MasterSMSL is the routing's SL of the path from each endport to the SM, with `sm_sl` as
/// the hint (OpenSM `link_mgr_get_smsl`); without a routing that spends SLs, `sm_sl` itself.
#[test]
fn each_endports_master_sm_sl_is_the_routings_sl_toward_the_sm() {
    let (_, mut sweep) = subnet_up("sm_sl 2\n");
    let sm_lid = sweep
        .subnet
        .sm_port
        .and_then(|key| sweep.subnet.port(key))
        .unwrap()
        .lid;
    let endports: Vec<(PortKey, u16)> = sweep
        .subnet
        .endports()
        .map(|(guid, number, port)| (PortKey::new(guid, number), port.lid))
        .collect();
    let sm_sls = |sweep: &Sweep| -> Vec<u8> {
        endports
            .iter()
            .map(|&(key, _)| sweep.port_settings(key, sm_lid).unwrap().0.master_sm_sl)
            .collect()
    };
    assert!(sm_sls(&sweep).iter().all(|&sl| sl == 2));
    sweep.layering = Arc::new(SlFromLids);
    let expected: Vec<u8> = endports
        .iter()
        .map(|&(_, lid)| SlFromLids.path_sl(2, lid, sm_lid))
        .collect();
    assert_eq!(sm_sls(&sweep), expected);
    assert!(expected.iter().any(|&sl| sl != 2), "{expected:?}");
}

/// A routing whose layers need eight data VLs.
#[derive(Debug)]
struct EightLayers;

impl Layering for EightLayers {
    fn vls_used(&self) -> VlCount {
        VlCount::Eight
    }
}

/// The ports the sweep warns about: every switch-to-switch port when the routing needs more
/// data VLs than `max_op_vls` lets the links run; none when it needs no more.
#[test]
fn the_switch_ports_short_of_the_routings_vls_are_found() {
    let (fabric, mut sweep) = subnet_up("max_op_vls 2\n");
    assert_eq!(sweep.ports_short_of_vls(), []);
    sweep.layering = Arc::new(EightLayers);
    let topology = fabric.emulator.topology();
    let mut expected: Vec<PortKey> = topology
        .links()
        .flat_map(|(a, b)| [a, b])
        .filter(|port| {
            let is_switch = |p: ibqos_fabric::PortRef| topology.node(p.node).unwrap().is_switch();
            is_switch(*port)
                && topology
                    .port(*port)
                    .and_then(|p| p.peer)
                    .is_some_and(is_switch)
        })
        .map(|port| PortKey::new(topology.node(port.node).unwrap().guid, port.port))
        .collect();
    expected.sort();
    assert!(!expected.is_empty());
    assert_eq!(sweep.ports_short_of_vls(), expected);
    let (_, mut sweep) = subnet_up("");
    sweep.layering = Arc::new(EightLayers);
    assert_eq!(sweep.ports_short_of_vls(), [], "ibsim's ports run 8 VLs");
}
