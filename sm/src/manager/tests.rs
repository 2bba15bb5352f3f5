//! The manager's states driven over the two-switch fabric, emulated in the same process with
//! time passed in: what each state sends, and which state and event follow.

use super::*;
use crate::cache::read_guid2lid;
use crate::qos_report::Verdict;
use crate::sa::SaCounts;
use crate::testing::{Fabric, sa_request, settings, trap};
use ibqos_exchange::Address;
use ibqos_fabric::{NodeKind, PortRef};
use ibqos_mad::sa::{SA_HEADER_LEN, SaAttributeId, SaMad};
use ibqos_mad::{AttributeId, Mad, MgmtClass, VlArbEntry};
use ibqos_perfmgr::lanes::Lane;

fn manager(fabric: &Fabric, run: Run, conf: &str) -> Manager {
    Manager::new(
        run,
        &settings(conf),
        BTreeMap::new(),
        Guid(fabric.port_guid()),
    )
}

/// Drives until the manager gives an event `pick` takes: that, and the events before it.
fn until<T>(
    fabric: &mut Fabric,
    manager: &mut Manager,
    pick: impl Fn(&Event) -> Option<T>,
) -> (T, Vec<Event>) {
    let mut seen = Vec::new();
    let mut picked = None;
    fabric.drive(manager, |manager| {
        while let Some(event) = manager.poll_event() {
            match pick(&event) {
                Some(found) => {
                    picked = Some(found);
                    return true;
                }
                None => seen.push(event),
            }
        }
        false
    });
    (picked.unwrap(), seen)
}

fn sweep_done(fabric: &mut Fabric, manager: &mut Manager) -> SweepSummary {
    let pick = |event: &Event| match event {
        Event::SweepDone(summary) => Some(summary.as_ref().clone()),
        _ => None,
    };
    until(fabric, manager, pick).0
}

/// The next sweep that starts: its number, mode and reason.
fn sweep_started(fabric: &mut Fabric, manager: &mut Manager) -> (u32, SweepMode, SweepReason) {
    let pick = |event: &Event| match event {
        Event::SweepStarted {
            sweep,
            mode,
            reason,
        } => Some((*sweep, *mode, *reason)),
        _ => None,
    };
    until(fabric, manager, pick).0
}

fn finished(fabric: &mut Fabric, manager: &mut Manager) -> Outcome {
    let pick = |event: &Event| match event {
        Event::Finished(outcome) => Some(*outcome),
        _ => None,
    };
    until(fabric, manager, pick).0
}

/// The Sets among the SMPs sent since the `from`th MAD.
fn sets_since(fabric: &Fabric, from: usize) -> usize {
    let smps = fabric.smps_sent_since(from);
    smps.iter().filter(|smp| smp.method == Method::Set).count()
}

#[test]
fn a_once_run_brings_the_subnet_up_saves_every_lid_and_ends() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Once, "");
    let (outcome, events) = until(&mut fabric, &mut sm, |event| match event {
        Event::Finished(outcome) => Some(*outcome),
        _ => None,
    });
    assert_eq!(outcome, Outcome::SubnetUp);
    let Event::SweepStarted {
        sweep,
        mode,
        reason,
    } = events[0]
    else {
        panic!("{events:#?}")
    };
    assert_eq!(
        (sweep, mode, reason),
        (1, SweepMode::Forced, SweepReason::First)
    );
    // Alone on the fabric, the SM becomes master as its discovery ends.
    let masters: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::StateChanged(change) => Some((change.from, change.to)),
            _ => None,
        })
        .collect();
    assert_eq!(masters, [(SmState::Discovering, SmState::Master)]);
    // The LIDs saved are those the fabric's end ports hold now.
    let saved = events.iter().find_map(|event| match event {
        Event::SaveLids(text) => Some(read_guid2lid(text).0),
        _ => None,
    });
    let topology = fabric.emulator.topology();
    // End ports: a switch's port 0 and every port of a CA.
    let held: BTreeMap<u64, u16> = topology
        .nodes()
        .flat_map(|(id, node)| match node.kind {
            NodeKind::Switch => vec![PortRef::new(id, 0)],
            _ => node
                .existing_ports()
                .map(|(p, _)| PortRef::new(id, p))
                .collect(),
        })
        .map(|port| (fabric.guid_of(port), fabric.lid_of(port)))
        .collect();
    assert_eq!(held.len(), 8);
    assert!(held.values().all(|lid| *lid != 0), "{held:?}");
    assert_eq!(saved.as_ref(), Some(&held));
    // Finished: nothing more to send or wait for, and the SA answers from the sweep.
    assert!(matches!(sm.state, State::Finished));
    assert_eq!(
        (sm.poll_transmit(fabric.now()), sm.next_deadline()),
        (None, None)
    );
    assert!(sm.sa.is_serving());
}

#[test]
fn a_daemon_waits_its_interval_then_sweeps_again_setting_nothing_unchanged() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Daemon, "sweep_interval 7\n");
    assert!(sweep_done(&mut fabric, &mut sm).subnet_up);
    let (done, sent) = (fabric.now(), fabric.sent.len());
    let State::Waiting { until } = sm.state else {
        panic!("{:?}", sm.state)
    };
    assert_eq!(until, done + Duration::from_secs(7));
    assert_eq!(
        sweep_started(&mut fabric, &mut sm),
        (2, SweepMode::Diff, SweepReason::Interval)
    );
    assert_eq!(fabric.now(), until);
    let second = sweep_done(&mut fabric, &mut sm);
    assert!(second.subnet_up);
    // The fabric holds what the first sweep Set: a diff sweep reads it and Sets nothing.
    assert_eq!(sets_since(&fabric, sent), 0);
}

/// The LID of switch S1's management port, which issues traps.
fn switch_lid(fabric: &Fabric) -> u16 {
    fabric.lid_of(fabric.port_of("S1", 0))
}

#[test]
fn a_trap_128_between_sweeps_is_repressed_and_starts_a_sweep_at_once() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Daemon, "");
    sweep_done(&mut fabric, &mut sm);
    let issuer = switch_lid(&fabric);
    let (arrived, sent) = (fabric.now(), fabric.sent.len());
    fabric.arrive(trap(128, issuer), Peer::lid(issuer));
    assert_eq!(
        sweep_started(&mut fabric, &mut sm),
        (2, SweepMode::Diff, SweepReason::LinkChange)
    );
    assert_eq!(fabric.now(), arrived);
    let repress = &fabric.smps_sent_since(sent)[0];
    assert_eq!(
        (repress.method, repress.attribute_id),
        (Method::TrapRepress, AttributeId::Notice)
    );
    assert_eq!(fabric.sent[sent].address, Address::Lid(issuer));
}

#[test]
fn a_trap_128_during_a_sweep_makes_another_sweep_after_it() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Once, "");
    // Which LID issues it does not matter to the manager.
    fabric.drive(&mut sm, |sm| sm.smps_outstanding() > 0);
    fabric.arrive(trap(128, 1), Peer::lid(1));
    let (reasons, outcome) = {
        let mut reasons = Vec::new();
        let outcome = loop {
            let (event, _) = until(&mut fabric, &mut sm, |event| match event {
                Event::SweepStarted { reason, .. } => Some(Ok(*reason)),
                Event::Finished(outcome) => Some(Err(*outcome)),
                _ => None,
            });
            match event {
                Ok(reason) => reasons.push(reason),
                Err(outcome) => break outcome,
            }
        };
        (reasons, outcome)
    };
    assert_eq!(
        reasons,
        [SweepReason::First, SweepReason::LinkChangeDuringSweep]
    );
    assert_eq!(outcome, Outcome::SubnetUp);
    assert_eq!(sm.sweeps, 2);
}

#[test]
fn a_stop_between_sweeps_ends_at_once_and_sends_nothing() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Daemon, "");
    sweep_done(&mut fabric, &mut sm);
    while sm.poll_event().is_some() {}
    sm.stop(fabric.now());
    assert_eq!(sm.poll_event(), Some(Event::Finished(Outcome::Stopped)));
    assert_eq!(
        (sm.poll_transmit(fabric.now()), sm.next_deadline()),
        (None, None)
    );
}

/// A daemon stopped in the middle of its first sweep, with SMPs on the wire.
fn stopped_during_a_sweep() -> (Fabric, Manager, Instant, usize) {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Daemon, "");
    fabric.drive(&mut sm, |sm| {
        sm.election.state() == SmState::Master && sm.smps_outstanding() > 0
    });
    // What the sweep has queued goes out first, as a driver sends it before it stops.
    fabric.flush(&mut sm);
    let on_the_wire = sm.smps_outstanding();
    let stopped = fabric.now();
    sm.stop(stopped);
    (fabric, sm, stopped, on_the_wire)
}

#[test]
fn a_stop_during_a_sweep_sends_nothing_more_and_ends_when_its_smps_are_answered() {
    let (mut fabric, mut sm, stopped, on_the_wire) = stopped_during_a_sweep();
    assert!(on_the_wire > 0);
    assert!(matches!(sm.state, State::Stopping { unanswered, .. } if unanswered == on_the_wire));
    let sent = fabric.sent.len();
    assert_eq!(finished(&mut fabric, &mut sm), Outcome::Stopped);
    assert_eq!(fabric.sent.len(), sent, "nothing sent after the stop");
    assert!(fabric.now() < stopped + STOP_WAIT);
}

#[test]
fn a_stop_during_a_sweep_ends_after_its_wait_when_no_answer_comes() {
    let (mut fabric, mut sm, stopped, _) = stopped_during_a_sweep();
    fabric.lose_arrivals();
    assert_eq!(sm.next_deadline(), Some(stopped + STOP_WAIT));
    assert_eq!(finished(&mut fabric, &mut sm), Outcome::Stopped);
    assert_eq!(fabric.now(), stopped + STOP_WAIT);
}

#[test]
fn the_sa_is_asked_only_while_the_sm_is_master() {
    // (run, sweep to its end first, state, answered)
    let cases = [
        (Run::Daemon, false, SmState::Discovering, false),
        (Run::DryRun, true, SmState::NotActive, false),
        (Run::Daemon, true, SmState::Master, true),
    ];
    for (run, sweep_first, state, answered) in cases {
        let mut fabric = Fabric::two_switch();
        let mut sm = manager(&fabric, run, "");
        if sweep_first {
            sweep_done(&mut fabric, &mut sm);
        }
        assert_eq!(sm.election.state(), state, "{run:?}");
        let requester = Peer::lid(fabric.lid_of(fabric.port));
        let query = sa_request(Method::GetTable, SaAttributeId::NodeRecord, 0, 0, |_| {});
        sm.on_mad(fabric.now(), &query, requester);
        let answers: Vec<OutgoingMad> = sm.queued.drain(..).collect();
        let counts = sm.sa.take_counts();
        if answered {
            let [answer] = &answers[..] else {
                panic!("{answers:?}")
            };
            assert_eq!(answer.address, Address::Peer(requester));
            let header = Mad::new_checked(&answer.mad[..]).unwrap();
            assert_eq!(
                (header.mgmt_class(), header.method()),
                (MgmtClass::SubnAdm, Method::GetTableResp)
            );
            // One NodeRecord per end port with a LID (a CA's every port, a switch's port 0).
            let stride = usize::from(
                SaMad::new_checked(&answer.mad[..])
                    .unwrap()
                    .attribute_offset(),
            ) * 8;
            let lids = sm.last_sweep().unwrap().counts().lids;
            assert_eq!((answer.mad.len() - SA_HEADER_LEN) / stride, lids);
            assert_eq!(counts.answered, 1);
        } else {
            // Dropped before the SA sees it, as OpenSM drops it when not MASTER.
            assert!(answers.is_empty(), "{run:?}: {answers:?}");
            assert_eq!(counts, SaCounts::default(), "{run:?}");
        }
    }
}

#[test]
fn an_operators_sweep_starts_only_when_the_sm_waits() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Daemon, "");
    fabric.drive(&mut sm, |sm| matches!(sm.state, State::Sweeping { .. }));
    assert!(!sm.sweep_now(), "under way already");
    sweep_done(&mut fabric, &mut sm);
    let asked = fabric.now();
    assert!(sm.sweep_now());
    assert!(!sm.sweep_now(), "due already");
    assert_eq!(
        sweep_started(&mut fabric, &mut sm),
        (2, SweepMode::Diff, SweepReason::Requested)
    );
    assert_eq!(fabric.now(), asked);
}

#[test]
fn a_reload_sweeps_at_once_and_its_interval_rules_the_wait_after() {
    let mut fabric = Fabric::two_switch();
    let mut sm = manager(&fabric, Run::Daemon, "sweep_interval 5\n");
    sweep_done(&mut fabric, &mut sm);
    let reloaded = fabric.now();
    sm.reload(settings("sweep_interval 40\n"));
    assert_eq!(
        sweep_started(&mut fabric, &mut sm),
        (2, SweepMode::Diff, SweepReason::Reload)
    );
    assert_eq!(fabric.now(), reloaded);
    sweep_done(&mut fabric, &mut sm);
    let done = fabric.now();
    assert_eq!(
        sweep_started(&mut fabric, &mut sm),
        (3, SweepMode::Diff, SweepReason::Interval)
    );
    assert_eq!(fabric.now() - done, Duration::from_secs(40));
}

/// With a PerfMgr, a master hands it the subnet after the sweep that brought it up, and the
/// PerfMgr reads every port on its own timer: ClassPortInfo first, then the counters, whose
/// answers reach it.
#[test]
fn a_master_runs_the_perfmgr_on_its_timer() {
    let mut fabric = Fabric::two_switch();
    let conf = "perfmgr TRUE\nperfmgr_sweep_time_s 1\nsweep_interval 100\n";
    let config = crate::config::perfmgr_config(&settings(conf));
    let start = fabric.now();
    let mut manager = manager(&fabric, Run::Daemon, conf).with_perfmgr(config, start, 0);
    assert!(sweep_done(&mut fabric, &mut manager).subnet_up);
    let sent = fabric.sent.len();
    // Every switch port (S1's enhanced port 0 included) and every CA port.
    let read_everywhere = |manager: &mut Manager| {
        let perfmgr = manager.perfmgr().unwrap();
        let valid = perfmgr.db().nodes().flat_map(|node| &node.ports);
        valid.filter(|port| port.valid).count() == 23 && perfmgr.outstanding() == 0
    };
    fabric.drive(&mut manager, read_everywhere);
    let classes: Vec<(MgmtClass, AttributeId)> = fabric.sent[sent..]
        .iter()
        .map(|out| {
            let header = Mad::new_checked(&out.mad[..]).unwrap();
            (header.mgmt_class(), header.attribute_id())
        })
        .collect();
    let cpi = AttributeId::from(u16::from(ibqos_mad::PerfAttributeId::ClassPortInfo));
    assert_eq!(classes[..8], [(MgmtClass::PerfMgt, cpi); 8]);
    assert!(
        classes
            .iter()
            .all(|(class, _)| *class == MgmtClass::PerfMgt)
    );
    assert_eq!(classes.len(), 8 + 2 * 23);
    assert!(
        fabric.now() < start + Duration::from_secs(3),
        "two PerfMgr sweeps"
    );
    let s1 = fabric.emulator.topology().node_by_name("S1").unwrap();
    let s1_guid = fabric.emulator.topology().node(s1).unwrap().guid;
    let db = manager.perfmgr().unwrap().db();
    let s1_port1 = &db.node(s1_guid).unwrap().ports[1];
    assert!(
        s1_port1.data_total.counts[0] > 0,
        "the sweep's SMPs crossed it"
    );
}

/// The congestion control options of the tests below: a switch setting, SL 1 of the CAs and a
/// two-entry table.
const CONGESTION: &str = "congestion_control TRUE\ncc_sw_cong_setting_control_map 0x1f\n\
                          cc_sw_cong_setting_threshold 0xf\ncc_sw_cong_setting_marking_rate 10\n\
                          cc_ca_cong_setting_port_control 1\ncc_ca_cong_setting_control_map 0x2\n\
                          cc_ca_cong_setting_ccti_timer 1 150\ncc_cct 0:0,1:5\n";

/// The congestion control MADs of `method` among those sent since the `from`th: (attribute,
/// modifier).
fn cc_mads_since(fabric: &Fabric, from: usize, method: Method) -> Vec<(u16, u32)> {
    fabric.sent[from..]
        .iter()
        .filter(|out| out.class == MgmtClass::CongestionControl)
        .filter_map(|out| {
            let header = Mad::new_checked(&out.mad[..]).unwrap();
            (header.method() == method).then(|| {
                (
                    u16::from(header.attribute_id()),
                    header.attribute_modifier(),
                )
            })
        })
        .collect()
}

/// The congestion control Sets among the MADs sent since the `from`th.
fn cc_sets_since(fabric: &Fabric, from: usize) -> Vec<(u16, u32)> {
    cc_mads_since(fabric, from, Method::Set)
}

/// With `congestion_control TRUE` every switch gets its setting and every CA port its setting
/// and table before the sweep reports SUBNET UP; a diff sweep sends none of them again.
#[test]
fn congestion_control_is_programmed_before_subnet_up_and_not_again() {
    use ibqos_emu::CongestionSettings;
    let mut fabric = Fabric::two_switch();
    let mut manager = manager(&fabric, Run::Daemon, CONGESTION);
    let summary = sweep_done(&mut fabric, &mut manager);
    assert!(summary.subnet_up, "{summary:?}");
    let sets = cc_sets_since(&fabric, 0);
    let topology = fabric.emulator.topology().clone();
    let switches = topology.nodes().filter(|(_, n)| n.is_switch()).count();
    let ca_ports: usize = topology
        .nodes()
        .filter(|(_, n)| !n.is_switch())
        .map(|(_, n)| usize::from(n.num_ports()))
        .sum();
    assert_eq!(sets.len(), switches + 2 * ca_ports, "{sets:?}");
    // Each CA port: its setting, then its one table block.
    assert!(
        sets.windows(2).any(|w| w == [(0x16, 0), (0x17, 0)]),
        "{sets:?}"
    );
    for (id, node) in topology.nodes() {
        let port = PortRef::new(id, if node.is_switch() { 0 } else { 1 });
        let agent = fabric.emulator.congestion_agent(port).unwrap();
        match agent.settings {
            CongestionSettings::Switch(switch) => {
                assert_eq!(
                    (switch.setting.threshold, switch.setting.marking_rate),
                    (15, 10)
                );
            }
            CongestionSettings::Ca(ca) => {
                assert_eq!(ca.setting.port_control, 1, "{}", node.name);
                assert_eq!(ca.setting.entries[1].ccti_timer, 150, "{}", node.name);
                assert_eq!(ca.ccti_limit, 1);
                assert_eq!(ca.table[1].multiplier(), 5);
            }
        }
    }
    assert!(manager.congestion.is_idle());

    // The next sweep finds every port holding what it wants: nothing is sent again.
    let from = fabric.sent.len();
    assert!(manager.sweep_now());
    sweep_done(&mut fabric, &mut manager);
    assert_eq!(cc_sets_since(&fabric, from), []);
}

/// With `congestion_control` FALSE (OpenSM's default) no congestion control MAD goes out.
#[test]
fn congestion_control_off_sends_nothing() {
    let mut fabric = Fabric::two_switch();
    let mut manager = manager(
        &fabric,
        Run::Daemon,
        "congestion_control FALSE\ncc_cct 0:0,1:5\n",
    );
    sweep_done(&mut fabric, &mut manager);
    assert_eq!(cc_sets_since(&fabric, 0), []);
}

/// The marking rate the SwitchCongestionSetting of switch `name` holds.
fn marking_rate(fabric: &Fabric, name: &str) -> u16 {
    use ibqos_emu::CongestionSettings;
    let agent = fabric.emulator.congestion_agent(fabric.port_of(name, 0));
    match agent.unwrap().settings {
        CongestionSettings::Switch(switch) => switch.setting.marking_rate,
        CongestionSettings::Ca(_) => panic!("{name} is a switch"),
    }
}

/// A SwitchCongestionSetting that sets the marking rate alone, as attribute data.
fn marking_rate_setting(rate: u16) -> [u8; 76] {
    use ibqos_mad::{SwitchCongestionSetting, SwitchCongestionSettingRepr, SwitchControlMap};
    let setting = SwitchCongestionSettingRepr {
        control_map: SwitchControlMap::MARKING_RATE,
        marking_rate: rate,
        ..SwitchCongestionSettingRepr::default()
    };
    let mut data = [0u8; 76];
    setting.emit(&mut SwitchCongestionSetting::new_unchecked(&mut data[..]));
    data
}

/// A switch setting rewritten behind the SM's back is read back and Set again at the next
/// sweep; a sweep that finds every port holding what it was Set sends Gets alone.
#[test]
fn a_congestion_setting_changed_behind_the_back_is_set_again_at_the_next_sweep() {
    use ibqos_mad::CcAttributeId;
    let mut fabric = Fabric::two_switch();
    let mut manager = manager(&fabric, Run::Daemon, CONGESTION);
    sweep_done(&mut fabric, &mut manager);
    assert_eq!(marking_rate(&fabric, "S1"), 10);
    let s1 = fabric.port_of("S1", 0);
    let setting = CcAttributeId::SwitchCongestionSetting;
    assert!(fabric.cc_set_behind_the_back(s1, setting, &marking_rate_setting(3), 0));
    assert_eq!(marking_rate(&fabric, "S1"), 3);

    let from = fabric.sent.len();
    assert!(manager.sweep_now());
    sweep_done(&mut fabric, &mut manager);
    assert_eq!(cc_sets_since(&fabric, from), [(0x14, 0)]);
    assert_eq!(marking_rate(&fabric, "S1"), 10);
    let once = BTreeMap::from([(setting, 1)]);
    let drift = &manager.counters().congestion_drift;
    assert_eq!((&drift.found, &drift.repaired), (&once, &once));

    let from = fabric.sent.len();
    assert!(manager.sweep_now());
    sweep_done(&mut fabric, &mut manager);
    assert_eq!(cc_sets_since(&fabric, from), []);
    let reads = cc_mads_since(&fabric, from, Method::Get);
    assert!(reads.contains(&(0x14, 0)), "{reads:?}");
}

/// With `[sm] cc_key_program`, every agent gets `cc_key` before its settings, and a Set
/// without it is dropped. A port whose agent another manager gave its own key is left alone.
#[test]
fn the_cc_key_is_programmed_when_asked_and_a_port_with_another_is_left_alone() {
    use ibqos_mad::{CcAttributeId, CongestionKeyInfo, CongestionKeyInfoRepr};
    let key = 0x1234;
    let mut settings = settings(&format!("{CONGESTION}cc_key {key:#x}\n"));
    settings.cc_key_program = true;
    settings.cc_key_protect = true;
    let mut fabric = Fabric::two_switch();
    let mut manager = Manager::new(
        Run::Daemon,
        &settings,
        BTreeMap::new(),
        Guid(fabric.port_guid()),
    );
    let summary = sweep_done(&mut fabric, &mut manager);
    assert!(summary.subnet_up, "{summary:?}");
    let sets = cc_sets_since(&fabric, 0);
    let topology = fabric.emulator.topology().clone();
    let agents: Vec<PortRef> = topology
        .nodes()
        .flat_map(|(id, node)| {
            let ports = if node.is_switch() {
                0..=0
            } else {
                1..=node.num_ports()
            };
            ports.map(move |port| PortRef::new(id, port))
        })
        .collect();
    let key_sets = sets.iter().take_while(|set| set.0 == 0x12).count();
    assert_eq!(key_sets, agents.len(), "{sets:?}");
    for &port in &agents {
        let held = fabric.emulator.congestion_agent(port).unwrap().key;
        assert_eq!((held.cc_key, held.protect), (key, true), "{port:?}");
    }
    let s1 = fabric.port_of("S1", 0);
    let setting = CcAttributeId::SwitchCongestionSetting;
    assert!(!fabric.cc_set_behind_the_back(s1, setting, &marking_rate_setting(3), 0));
    assert_eq!(marking_rate(&fabric, "S1"), 10);

    // Another manager, knowing the key, gives S1 its own; then rewrites its setting.
    let other = CongestionKeyInfoRepr {
        cc_key: 0x99,
        protect: true,
        lease_period: 0,
        violations: 0,
    };
    let mut data = [0u8; 16];
    other.emit(&mut CongestionKeyInfo::new_unchecked(&mut data[..]));
    let key_info = CcAttributeId::CongestionKeyInfo;
    assert!(fabric.cc_set_behind_the_back(s1, key_info, &data, key));
    assert!(fabric.cc_set_behind_the_back(s1, setting, &marking_rate_setting(3), 0x99));
    let from = fabric.sent.len();
    assert!(manager.sweep_now());
    sweep_done(&mut fabric, &mut manager);
    assert_eq!(cc_sets_since(&fabric, from), []);
    assert_eq!(marking_rate(&fabric, "S1"), 3);
    let s1_guid = fabric.guid_of(s1);
    assert!(manager.congestion.ports()[&s1_guid].foreign_key);
}

/// Traffic a port sent on VLs 0 and 1 (SL n on VL n), `packets` 2048-byte packets on each, both
/// backlogged (each waited while the other sent: more ticks than a 16-bit counter holds), and
/// what its peer received of it. The PerfMgr's own MADs on VL 0 are a few hundred words.
fn saturated_pair(packets: [u64; 2]) -> (ibqos_emu::PortTraffic, ibqos_emu::PortTraffic) {
    use ibqos_emu::{LaneTraffic, PortTraffic};
    use ibqos_qos::{Sl, Vl};
    const WORDS: u64 = 2048 / 4;
    const BLOCKS: u64 = 2048 / 64;
    let lanes: Vec<LaneTraffic> = (0..2)
        .map(|vl| LaneTraffic {
            sl: Sl::new(vl as u8).unwrap(),
            vl: Vl::new(vl as u8).unwrap(),
            words: packets[vl] * WORDS,
            packets: packets[vl],
        })
        .collect();
    let mut xmit_wait = [0; 16];
    xmit_wait[0] = packets[1] * BLOCKS;
    xmit_wait[1] = packets[0] * BLOCKS;
    let sent = PortTraffic {
        sent: lanes.clone(),
        xmit_wait,
        ..PortTraffic::default()
    };
    let received = PortTraffic {
        received: lanes,
        ..PortTraffic::default()
    };
    (sent, received)
}

/// The conformance report holds each port to the VL arbitration the SM verified, not to what
/// the port holds now: with VL 0 promised three packets to VL 1's one, the port whose low
/// table another agent rewrote to the reverse, and whose VLs split 1:3 as it now says, is
/// outside the tolerance with both figures; the port that split 3:1 conforms.
#[test]
fn the_qos_report_lists_the_port_that_breaks_its_promise() {
    let mut fabric = Fabric::two_switch();
    let conf = "qos TRUE\nqos_max_vls 2\nqos_high_limit 0\nqos_vlarb_high 0:0\n\
                qos_vlarb_low 0:96,1:32\nqos_sl2vl 0,1,0,1,0,1,0,1,0,1,0,1,0,1,0,1\n\
                perfmgr TRUE\nperfmgr_sweep_time_s 1\nsweep_interval 100\n";
    let mut settings = settings(conf);
    settings.perfmgr_lanes = true;
    let config = crate::config::perfmgr_config(&settings);
    let start = fabric.now();
    let mut manager = Manager::new(
        Run::Daemon,
        &settings,
        BTreeMap::new(),
        Guid(fabric.port_guid()),
    )
    .with_perfmgr(config, start, 0);
    assert!(sweep_done(&mut fabric, &mut manager).subnet_up);
    let (breaking, conforming) = (fabric.port_of("S1", 3), fabric.port_of("S1", 4));
    let s2 = |port| fabric.port_of("S2", port);
    let (breaking_peer, conforming_peer) = (s2(3), s2(4));
    let s2_guid = fabric
        .emulator
        .topology()
        .node(conforming_peer.node)
        .unwrap()
        .guid;
    let read_at = move |manager: &Manager, port: PortRef| {
        let lanes = manager.perfmgr().unwrap().lanes();
        lanes
            .get(s2_guid, port.port, Lane::VlOpData)
            .map(|c| c.read_at)
    };
    // A first reading of every port, then the rewrite and the traffic, then a second reading.
    fabric.drive(&mut manager, |m| read_at(m, conforming_peer).is_some());
    let first = read_at(&manager, conforming_peer);
    let reverse = [VlArbEntry::new(0, 32), VlArbEntry::new(1, 96)];
    fabric.emulator.schedule(&ibqos_emu::FaultSchedule {
        vlarbs: vec![ibqos_emu::VlArbRewrite {
            port: breaking,
            at_ns: 0,
            high: None,
            low: Some(ibqos_qos::VlArbTable::from_entries(&reverse)),
        }],
        ..ibqos_emu::FaultSchedule::default()
    });
    let (sent, received) = saturated_pair([12_000, 36_000]);
    fabric.emulator.add_traffic(breaking, &sent).unwrap();
    fabric
        .emulator
        .add_traffic(breaking_peer, &received)
        .unwrap();
    let (sent, received) = saturated_pair([36_000, 12_000]);
    fabric.emulator.add_traffic(conforming, &sent).unwrap();
    fabric
        .emulator
        .add_traffic(conforming_peer, &received)
        .unwrap();
    fabric.drive(&mut manager, |m| {
        read_at(m, conforming_peer) != first && m.perfmgr().unwrap().outstanding() == 0
    });

    let report = manager.qos_report().unwrap();
    let s1 = fabric.emulator.topology().node(breaking.node).unwrap().guid;
    let port = |number: u8| {
        report
            .ports
            .iter()
            .find(|p| p.node_guid == Guid(s1) && p.port == number)
            .unwrap()
    };
    let outside: Vec<(Guid, u8)> = report
        .ports
        .iter()
        .filter(|p| p.verdict == Verdict::Outside)
        .map(|p| (p.node_guid, p.port))
        .collect();
    assert_eq!(outside, [(Guid(s1), 3)], "{report:#?}");
    let figures = |number: u8| -> Vec<(u8, u32, u32)> {
        port(number)
            .vls
            .iter()
            .map(|v| {
                let percent = |share: f64| (share * 1000.0).round() as u32;
                (v.vl, percent(v.measured), percent(v.promised))
            })
            .collect()
    };
    // Per mille: VL 0 got a quarter of the data against three quarters promised.
    assert_eq!(figures(3), [(0, 250, 750), (1, 750, 250)]);
    let held = fabric
        .emulator
        .vlarb(breaking, ibqos_mad::Priority::Low)
        .unwrap();
    assert_eq!(held[..2], reverse, "the port holds the rewritten table");
    assert_eq!(port(4).verdict, Verdict::Conforms);
    assert_eq!(figures(4), [(0, 750, 750), (1, 250, 250)]);
    // Ports without traffic had nothing to arbitrate.
    assert!(report.count(Verdict::Idle) > 0, "{report:#?}");
    assert_eq!(report.count(Verdict::Outside), 1);
    let text = report.to_string();
    let s1_port3 = format!(
        "sw-one ({}) port 3: outside: VL 0 got 50.0 points less than promised; VL 1 got 50.0 \
         points more than promised\n  VL  measured  promised  backlogged\n   0     25.0%     \
         75.0%  yes\n   1     75.0%     25.0%  yes\n",
        Guid(s1)
    );
    assert!(text.contains(&s1_port3), "{text}");
    assert!(text.starts_with("QoS conformance, tolerance 2 points: 1 outside, 1 conforming"));

    // The next sweep finds the rewritten table and Sets what it verified again.
    assert!(manager.sweep_now());
    let summary = sweep_done(&mut fabric, &mut manager);
    let vlarb = AttributeId::VlArbitrationTable;
    assert!(
        summary
            .changes
            .iter()
            .any(|change| change.attribute == vlarb && change.sent),
        "{:?}",
        summary.changes
    );
    let held = fabric
        .emulator
        .vlarb(breaking, ibqos_mad::Priority::Low)
        .unwrap();
    assert_eq!(held[..2], [VlArbEntry::new(0, 96), VlArbEntry::new(1, 32)]);
}
