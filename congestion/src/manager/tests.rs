//! The manager against fake agents: each answers a Set with the echo a test chooses.

use std::time::Duration;

use ibqos_exchange::{Address, Message};
use ibqos_mad::{CC_CLASS_VERSION, CaCongestionEntry, CctEntry, MgmtClass};

use super::*;
use crate::config::{CctOption, KeyProgram};

const KEY: u64 = 0x0102_0304_0506_0708;

fn options() -> CcOptions {
    let mut ca_entries = [CaCongestionEntry::default(); 16];
    ca_entries[1] = CaCongestionEntry {
        ccti_timer: 150,
        ccti_increase: 1,
        trigger_threshold: 2,
        ccti_min: 0,
    };
    CcOptions {
        enabled: true,
        cc_key: KEY,
        switch_control_map: 0x1f,
        switch_threshold: 0xf,
        switch_packet_size: 8,
        switch_marking_rate: 10,
        ca_port_control: 1,
        ca_control_map: 0x0002,
        ca_entries,
        cct: (0..70)
            .map(|i| CctOption {
                shift: 0,
                multiplier: i,
            })
            .collect(),
        timeout: Duration::from_millis(10),
        retries: 0,
        ..CcOptions::default()
    }
}

/// Port GUIDs whose host-order value sorts differently from their network-order value: OpenSM
/// walks 0x0200 (swapped 0x0002...) before 0x0101 (swapped 0x0101...).
fn ports() -> Vec<CcPort> {
    let port = |guid: u64, port: u8, lid: u16, kind| CcPort {
        port_guid: guid,
        node_guid: guid,
        port,
        lid,
        kind,
    };
    vec![
        port(0x0101, 1, 3, CcNodeKind::Ca),
        port(0x0200, 0, 1, CcNodeKind::Switch),
        port(0x0300, 1, 4, CcNodeKind::Router),
    ]
}

/// Fake agents by LID. Each keeps the attribute data it is Set, by attribute and modifier,
/// echoes a Set and answers a Get with what it keeps. One holding a CC_Key other than 0 drops a
/// Set carrying another and, with its protect bit set, reads its key as 0 to a Get carrying
/// another (IBA A10.4.1).
#[derive(Debug, Default)]
struct Agents {
    held: BTreeMap<(u16, u16, u32), Vec<u8>>,
    /// Every MAD to these LIDs is answered with this status.
    status_at: Vec<(u16, Status)>,
    /// No answer from these LIDs.
    silent: Vec<u16>,
    /// These bytes of this attribute's data (by its ID) are neither kept nor echoed.
    unkept: Option<(u16, std::ops::Range<usize>)>,
    /// Every MAD sent: (LID, method, attribute, modifier).
    seen: Vec<(u16, Method, CcAttributeId, u32)>,
    /// The CC_Key each CongestionKeyInfo Set carried.
    key_sets_carried: Vec<u64>,
}

/// (LID, attribute, modifier) of a MAD.
type Sent = (u16, CcAttributeId, u32);

impl Agents {
    /// Answers what `manager` sends until it is idle; returns the Sets among it.
    fn run(&mut self, manager: &mut CongestionManager, now: Instant) -> Vec<Sent> {
        let from = self.seen.len();
        while let Some(out) = manager.poll_transmit(now) {
            let Address::Lid(lid) = out.address else {
                panic!("a CC MAD by directed route: {out:?}");
            };
            let request = Gmp::from_bytes(&out.mad).expect("a GMP");
            assert_eq!(request.class, MgmtClass::CongestionControl);
            assert_eq!(request.class_version, CC_CLASS_VERSION);
            let attribute = CcAttributeId::from(u16::from(request.attribute_id));
            let carried = u64::from_be_bytes(out.mad[24..32].try_into().unwrap());
            if (request.method, attribute) == (Method::Set, CcAttributeId::CongestionKeyInfo) {
                self.key_sets_carried.push(carried);
            } else {
                assert_eq!(carried, manager.options().cc_key);
            }
            self.seen
                .push((lid, request.method, attribute, request.attribute_modifier));
            if let Some(response) = self.answer(lid, request) {
                manager.on_mad(now, &response.to_bytes(), Peer::lid(lid));
            }
        }
        self.since(from, Method::Set)
    }

    /// The MADs of `method` seen from the `from`th on.
    fn since(&self, from: usize, method: Method) -> Vec<Sent> {
        self.seen[from..]
            .iter()
            .filter(|seen| seen.1 == method)
            .map(|&(lid, _, attribute, modifier)| (lid, attribute, modifier))
            .collect()
    }

    fn key_at(&self, lid: u16) -> Option<CongestionKeyInfoRepr> {
        let data = self.held.get(&(lid, 0x12, 0))?;
        CongestionKeyInfoRepr::parse(&CongestionKeyInfo::new_unchecked(&data[..])).ok()
    }

    fn set_key_at(&mut self, lid: u16, key: CongestionKeyInfoRepr) {
        let mut data = vec![0u8; 192];
        key.emit(&mut CongestionKeyInfo::new_unchecked(&mut data[..]));
        self.held.insert((lid, 0x12, 0), data);
    }

    fn answer(&mut self, lid: u16, request: Gmp) -> Option<Gmp> {
        if self.silent.contains(&lid) {
            return None;
        }
        let mut response = request;
        response.method = Method::GetResp;
        if let Some(&(_, status)) = self.status_at.iter().find(|(l, _)| *l == lid) {
            response.status = status;
            return Some(response);
        }
        let carried = u64::from_be_bytes(request.payload[..8].try_into().unwrap());
        let held_key = self.key_at(lid);
        let wrong_key = held_key.is_some_and(|key| key.cc_key != 0 && key.cc_key != carried);
        let slot = (
            lid,
            u16::from(request.attribute_id),
            request.attribute_modifier,
        );
        if request.method == Method::Set {
            if wrong_key {
                return None;
            }
            let data = &mut response.payload[DATA_IN_PAYLOAD..];
            if let Some((_, bytes)) = self.unkept.clone().filter(|(id, _)| *id == slot.1) {
                data[bytes].fill(0);
            }
            self.held.insert(slot, data.to_vec());
        } else {
            let held = self.held.get(&slot).cloned().unwrap_or(vec![0; 192]);
            response.payload[DATA_IN_PAYLOAD..].copy_from_slice(&held);
            if wrong_key && slot.1 == 0x12 && held_key.is_some_and(|key| key.protect) {
                response.payload[DATA_IN_PAYLOAD..DATA_IN_PAYLOAD + 8].fill(0);
            }
        }
        Some(response)
    }
}

/// A manager with `options` that programmed the ports once, forced, to agents that keep what
/// they were Set; the time it did.
fn programmed(options: CcOptions) -> (CongestionManager, Agents, Instant) {
    let mut manager = CongestionManager::new(options);
    let mut agents = Agents::default();
    let now = Instant::now();
    manager.program(&ports(), true);
    agents.run(&mut manager, now);
    (manager, agents, now)
}

#[test]
fn sets_go_in_opensm_port_order_switches_and_ca_ports_only() {
    let mut manager = CongestionManager::new(options());
    manager.program(&ports(), true);
    let now = Instant::now();
    let sent = Agents::default().run(&mut manager, now);
    assert_eq!(
        sent,
        [
            (1, CcAttributeId::SwitchCongestionSetting, 0),
            (3, CcAttributeId::CaCongestionSetting, 0),
            (3, CcAttributeId::CongestionControlTable, 0),
            (3, CcAttributeId::CongestionControlTable, 1),
        ]
    );
    assert!(manager.is_idle());
    assert!(manager.take_notices().is_empty());
    let ca = &manager.ports()[&0x0101];
    assert_eq!(ca.ca, Some(manager.options().data().ca));
    assert_eq!(ca.table.len(), 2);
    assert_eq!(
        ca.table[1].unwrap().entries[5],
        CctEntry::new(0, 69),
        "block 1 holds entries 64-127"
    );
}

#[test]
fn what_the_ports_hold_is_not_sent_again_unless_forced() {
    let (mut manager, mut agents, now) = programmed(options());
    manager.program(&ports(), false);
    assert_eq!(agents.run(&mut manager, now), []);
    manager.program(&ports(), true);
    assert_eq!(agents.run(&mut manager, now).len(), 4);

    // A new port is sent to whatever the others hold.
    let mut more = ports();
    more.push(CcPort {
        port_guid: 0x0400,
        node_guid: 0x0400,
        port: 1,
        lid: 5,
        kind: CcNodeKind::Ca,
    });
    manager.program(&more, false);
    let sent = agents.run(&mut manager, now);
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|(lid, _, _)| *lid == 5));
    assert!(manager.take_notices().is_empty());
}

#[test]
fn an_unsupported_status_ends_a_port_for_good_and_other_statuses_do_not() {
    let mut manager = CongestionManager::new(options());
    let now = Instant::now();
    manager.program(&ports(), true);
    // The switch answers as ibsim does; the CA busy, which OpenSM ignores. (OpenSM tests the
    // bits, so 0x001C, an invalid value, would end the port too.)
    let mut agents = Agents {
        status_at: vec![(1, Status::METHOD_UNSUPPORTED), (3, Status(0x0001))],
        ..Agents::default()
    };
    agents.run(&mut manager, now);
    assert!(manager.ports()[&0x0200].unavailable);
    assert!(!manager.ports()[&0x0101].unavailable);
    assert_eq!(
        manager.take_notices(),
        [CcNotice::Unavailable {
            node_guid: 0x0200,
            port: 0,
            status: Status::METHOD_UNSUPPORTED,
        }]
    );
    // The CA kept nothing it answered with an error, so it is sent to again; the switch not.
    agents.status_at.clear();
    manager.program(&ports(), true);
    let sent = agents.run(&mut manager, now);
    assert!(sent.iter().all(|(lid, _, _)| *lid == 3), "{sent:?}");
    assert_eq!(sent.len(), 3);
}

#[test]
fn more_than_three_timeouts_in_a_row_end_a_port() {
    let mut manager = CongestionManager::new(options());
    let mut now = Instant::now();
    let switch_only: Vec<CcPort> = ports()
        .into_iter()
        .filter(|p| p.kind == CcNodeKind::Switch)
        .collect();
    let mut agents = Agents {
        silent: vec![1],
        ..Agents::default()
    };
    for round in 1..=4 {
        manager.program(&switch_only, true);
        assert_eq!(agents.run(&mut manager, now).len(), 1, "round {round}");
        now += Duration::from_millis(20);
        manager.on_time(now);
        assert!(manager.is_idle());
        assert_eq!(
            manager.ports()[&0x0200].unavailable,
            round == 4,
            "round {round}"
        );
    }
    // Only the first timeout of the run is logged, as OpenSM does.
    let notices = manager.take_notices();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0]
            .to_string()
            .starts_with("ERR C106: MAD Error (IB_TIMEOUT)")
    );
    agents.silent.clear();
    manager.program(&switch_only, true);
    assert_eq!(agents.run(&mut manager, now), []);
}

#[test]
fn an_echo_without_a_selected_field_is_reported() {
    let mut manager = CongestionManager::new(options());
    let now = Instant::now();
    // Marking_Rate, the last two bytes of the switch setting, is neither kept nor echoed.
    let mut agents = Agents {
        unkept: Some((0x0014, 74..76)),
        ..Agents::default()
    };
    manager.program(&ports(), true);
    agents.run(&mut manager, now);
    let lacking = [
        CcNotice::NotKept {
            attribute: CcAttributeId::SwitchCongestionSetting,
            node_guid: 0x0200,
            port: 0,
        },
        // Read back after the Sets.
        CcNotice::NotHeld {
            attribute: CcAttributeId::SwitchCongestionSetting,
            node_guid: 0x0200,
            port: 0,
        },
    ];
    assert_eq!(manager.take_notices(), lacking);
    // What the switch holds differs from what is wanted: the next sweep sends it again.
    manager.program(&ports(), false);
    assert_eq!(
        agents.run(&mut manager, now),
        [(1, CcAttributeId::SwitchCongestionSetting, 0)]
    );
    assert_eq!(manager.take_notices(), lacking);
}

#[test]
fn an_invalid_value_status_ends_a_port_as_opensm_tests_the_bits() {
    let mut manager = CongestionManager::new(options());
    manager.program(&ports(), true);
    let mut agents = Agents {
        status_at: vec![(3, Status::INVALID_VALUE)],
        ..Agents::default()
    };
    agents.run(&mut manager, Instant::now());
    assert!(manager.ports()[&0x0101].unavailable);
}

#[test]
fn new_options_send_what_now_differs() {
    let (mut manager, mut agents, now) = programmed(options());
    manager.set_options(CcOptions {
        switch_marking_rate: 20,
        ..options()
    });
    manager.program(&ports(), false);
    assert_eq!(
        agents.run(&mut manager, now),
        [(1, CcAttributeId::SwitchCongestionSetting, 0)]
    );
}

#[test]
fn disabled_sends_nothing() {
    let mut manager = CongestionManager::new(CcOptions::default());
    manager.program(&ports(), true);
    assert_eq!(Agents::default().run(&mut manager, Instant::now()), []);
    assert!(manager.is_idle());
}

/// The MADs of one programming as (method, attribute), in the order they went.
fn methods(agents: &Agents, from: usize) -> Vec<(Method, CcAttributeId)> {
    agents.seen[from..]
        .iter()
        .map(|&(_, method, attribute, _)| (method, attribute))
        .collect()
}

#[test]
fn each_set_is_read_back_after_the_sets_and_at_every_later_programming() {
    let (mut manager, mut agents, now) = programmed(options());
    let (switch, ca, table) = (
        CcAttributeId::SwitchCongestionSetting,
        CcAttributeId::CaCongestionSetting,
        CcAttributeId::CongestionControlTable,
    );
    let each = |method| {
        [
            (method, switch),
            (method, ca),
            (method, table),
            (method, table),
        ]
    };
    let forced: Vec<_> = each(Method::Set)
        .into_iter()
        .chain(each(Method::Get))
        .collect();
    assert_eq!(methods(&agents, 0), forced);

    // A later programming where every port holds what it was Set: Gets alone.
    let from = agents.seen.len();
    manager.program(&ports(), false);
    assert_eq!(agents.run(&mut manager, now), []);
    assert_eq!(methods(&agents, from), each(Method::Get));
    assert!(manager.take_notices().is_empty());
}

#[test]
fn what_changed_behind_the_managers_back_is_found_and_set_again() {
    let (mut manager, mut agents, now) = programmed(options());
    // Someone else rewrites the switch's setting and the CA's second table block.
    agents.held.insert((1, 0x14, 0), vec![0; 192]);
    agents.held.insert((3, 0x17, 1), vec![0; 192]);

    manager.program(&ports(), false);
    assert_eq!(
        agents.run(&mut manager, now),
        [
            (1, CcAttributeId::SwitchCongestionSetting, 0),
            (3, CcAttributeId::CongestionControlTable, 1),
        ]
    );
    let not_held = |attribute, node_guid, port| CcNotice::NotHeld {
        attribute,
        node_guid,
        port,
    };
    assert_eq!(
        manager.take_notices(),
        [
            not_held(CcAttributeId::SwitchCongestionSetting, 0x0200, 0),
            not_held(CcAttributeId::CongestionControlTable, 0x0101, 1),
        ]
    );
    let counted = BTreeMap::from([
        (CcAttributeId::SwitchCongestionSetting, 1),
        (CcAttributeId::CongestionControlTable, 1),
    ]);
    assert_eq!(manager.drift().found, counted);
    assert_eq!(manager.drift().repaired, counted);
    // Repaired: the next programming finds everything in place.
    manager.program(&ports(), false);
    assert_eq!(agents.run(&mut manager, now), []);
    assert!(manager.take_notices().is_empty());
    assert_eq!(manager.drift().found, counted);
}

#[test]
fn without_read_back_only_opensms_sets_go() {
    let (mut manager, mut agents, now) = programmed(CcOptions {
        read_back: false,
        ..options()
    });
    assert_eq!(agents.since(0, Method::Get), []);
    agents.held.clear();
    manager.program(&ports(), false);
    assert_eq!(agents.run(&mut manager, now), []);
    assert_eq!(agents.since(0, Method::Get), []);
}

#[test]
fn a_get_without_a_usable_answer_is_reported_and_ends_no_port() {
    let (mut manager, mut agents, mut now) = programmed(options());
    // The switch stops answering, the CA answers "unsupported": Gets alone, four times over.
    agents.silent.push(1);
    agents
        .status_at
        .push((3, Status::METHOD_ATTRIBUTE_UNSUPPORTED));
    for _ in 0..4 {
        manager.program(&ports(), false);
        assert_eq!(agents.run(&mut manager, now), []);
        now += Duration::from_millis(20);
        manager.on_time(now);
        assert!(manager.is_idle());
    }
    assert!(manager.ports().values().all(|port| !port.unavailable));
    let notices = manager.take_notices();
    assert_eq!(notices.len(), 4 * 4, "{notices:?}");
    assert_eq!(
        notices[0].to_string(),
        "read back: node 0x0000000000000101 port 1 gave no CaCongestionSetting: status 0x000c"
    );
    assert!(notices.contains(&CcNotice::Unread {
        attribute: CcAttributeId::SwitchCongestionSetting,
        node_guid: 0x0200,
        port: 0,
        status: None,
    }));
}

const PROTECTED: KeyProgram = KeyProgram {
    protect: true,
    lease_period: 60,
};

fn keyed() -> CcOptions {
    CcOptions {
        key_program: Some(PROTECTED),
        ..options()
    }
}

fn key_info(cc_key: u64, protect: bool) -> CongestionKeyInfoRepr {
    CongestionKeyInfoRepr {
        cc_key,
        protect,
        lease_period: 60,
        violations: 0,
    }
}

#[test]
fn the_key_is_read_then_set_before_the_other_sets_and_read_back() {
    let mut manager = CongestionManager::new(keyed());
    let now = Instant::now();
    let mut agents = Agents::default();
    manager.program(&ports(), true);
    let sent = agents.run(&mut manager, now);
    let key = CcAttributeId::CongestionKeyInfo;
    assert_eq!(
        &methods(&agents, 0)[..4],
        [
            (Method::Get, key),
            (Method::Get, key),
            (Method::Set, key),
            (Method::Set, key),
        ]
    );
    assert_eq!(sent.len(), 2 + 4);
    assert_eq!(agents.since(0, Method::Get).len(), 2 + (2 + 4));
    for lid in [1, 3] {
        assert_eq!(agents.key_at(lid), Some(key_info(KEY, true)), "LID {lid}");
    }
    assert!(manager.take_notices().is_empty());

    // Held: the next programming reads it and Sets nothing.
    manager.program(&ports(), false);
    assert_eq!(agents.run(&mut manager, now), []);
    assert!(manager.take_notices().is_empty());
}

#[test]
fn a_port_holding_another_key_is_reported_once_and_left_alone_until_it_holds_none() {
    let mut manager = CongestionManager::new(keyed());
    let now = Instant::now();
    let mut agents = Agents::default();
    agents.set_key_at(3, key_info(0x99, true));
    manager.program(&ports(), true);
    let sent = agents.run(&mut manager, now);
    assert!(sent.iter().all(|(lid, _, _)| *lid == 1), "{sent:?}");
    let foreign = CcNotice::ForeignKey {
        node_guid: 0x0101,
        port: 1,
        held: None,
    };
    assert!(foreign.to_string().contains("hidden by its protect bit"));
    assert_eq!(manager.take_notices(), [foreign]);
    assert!(manager.ports()[&0x0101].foreign_key);

    manager.program(&ports(), false);
    assert_eq!(agents.run(&mut manager, now), []);
    assert_eq!(manager.take_notices(), []);

    // Its key is cleared: the port gets the key and its settings.
    agents.set_key_at(3, key_info(0, false));
    manager.program(&ports(), false);
    let sent = agents.run(&mut manager, now);
    assert_eq!(sent.len(), 1 + 3, "{sent:?}");
    assert!(sent.iter().all(|(lid, _, _)| *lid == 3), "{sent:?}");
    assert_eq!(agents.key_at(3), Some(key_info(KEY, true)));
    assert!(!manager.ports()[&0x0101].foreign_key);
}

#[test]
fn a_new_cc_key_replaces_the_one_this_manager_programmed() {
    let (mut manager, mut agents, now) = programmed(keyed());
    let new_key = 0x0a0b_0c0d;
    manager.set_options(CcOptions {
        cc_key: new_key,
        ..keyed()
    });
    let from = agents.seen.len();
    manager.program(&ports(), false);
    let sent = agents.run(&mut manager, now);
    assert_eq!(
        sent,
        [
            (1, CcAttributeId::CongestionKeyInfo, 0),
            (3, CcAttributeId::CongestionKeyInfo, 0),
        ],
        "{:?}",
        &agents.seen[from..]
    );
    for lid in [1, 3] {
        assert_eq!(
            agents.key_at(lid),
            Some(key_info(new_key, true)),
            "LID {lid}"
        );
    }
    assert_eq!(agents.key_sets_carried, [KEY, KEY, KEY, KEY]);
    assert!(manager.take_notices().is_empty());
}
