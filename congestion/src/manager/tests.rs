//! The manager against fake agents: each answers a Set with the echo a test chooses.

use std::time::Duration;

use ibqos_exchange::{Address, Message};
use ibqos_mad::{AttributeId, CC_CLASS_VERSION, CaCongestionEntry, CctEntry, MgmtClass};

use super::*;
use crate::config::CctOption;

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

/// A fake fabric: answers every Set with its echo, or with `status` at the LIDs listed, or not
/// at all at the silent LIDs. Returns what was sent, as (LID, attribute, modifier).
fn run(
    manager: &mut CongestionManager,
    status_at: &[(u16, Status)],
    silent: &[u16],
    now: Instant,
) -> Vec<(u16, CcAttributeId, u32)> {
    let mut sent = Vec::new();
    while let Some(out) = manager.poll_transmit(now) {
        let Address::Lid(lid) = out.address else {
            panic!("a CC MAD by directed route: {out:?}");
        };
        let request = Gmp::from_bytes(&out.mad).expect("a GMP");
        assert_eq!(request.class, MgmtClass::CongestionControl);
        assert_eq!(request.class_version, CC_CLASS_VERSION);
        assert_eq!(request.method, Method::Set);
        assert_eq!(out.mad[24..32], KEY.to_be_bytes());
        let attribute = CcAttributeId::from(u16::from(request.attribute_id));
        sent.push((lid, attribute, request.attribute_modifier));
        if silent.contains(&lid) {
            continue;
        }
        let mut response = request;
        response.method = Method::GetResp;
        if let Some(&(_, status)) = status_at.iter().find(|(l, _)| *l == lid) {
            response.status = status;
        }
        manager.on_mad(now, &response.to_bytes(), Peer::lid(lid));
    }
    sent
}

#[test]
fn sets_go_in_opensm_port_order_switches_and_ca_ports_only() {
    let mut manager = CongestionManager::new(options());
    manager.program(&ports(), true);
    let now = Instant::now();
    let sent = run(&mut manager, &[], &[], now);
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
    let mut manager = CongestionManager::new(options());
    let now = Instant::now();
    manager.program(&ports(), true);
    run(&mut manager, &[], &[], now);
    manager.program(&ports(), false);
    assert_eq!(run(&mut manager, &[], &[], now), []);
    manager.program(&ports(), true);
    assert_eq!(run(&mut manager, &[], &[], now).len(), 4);

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
    let sent = run(&mut manager, &[], &[], now);
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|(lid, _, _)| *lid == 5));
}

#[test]
fn an_unsupported_status_ends_a_port_for_good_and_other_statuses_do_not() {
    let mut manager = CongestionManager::new(options());
    let now = Instant::now();
    manager.program(&ports(), true);
    // The switch answers as ibsim does; the CA busy, which OpenSM ignores. (OpenSM tests the
    // bits, so 0x001C, an invalid value, would end the port too.)
    let statuses = [(1, Status::METHOD_UNSUPPORTED), (3, Status(0x0001))];
    run(&mut manager, &statuses, &[], now);
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
    manager.program(&ports(), true);
    let sent = run(&mut manager, &[], &[], now);
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
    for round in 1..=4 {
        manager.program(&switch_only, true);
        assert_eq!(run(&mut manager, &[], &[1], now).len(), 1, "round {round}");
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
    manager.program(&switch_only, true);
    assert_eq!(run(&mut manager, &[], &[], now), []);
}

#[test]
fn an_echo_without_a_selected_field_is_reported() {
    let mut manager = CongestionManager::new(options());
    let now = Instant::now();
    manager.program(&ports(), true);
    while let Some(out) = manager.poll_transmit(now) {
        let mut response = Gmp::from_bytes(&out.mad).unwrap();
        response.method = Method::GetResp;
        if response.attribute_id == AttributeId::from(0x0014) {
            // Marking_Rate, the last two bytes of the switch setting, comes back 0.
            response.payload[DATA_IN_PAYLOAD + 74..DATA_IN_PAYLOAD + 76].fill(0);
        }
        manager.on_mad(now, &response.to_bytes(), Peer::lid(1));
    }
    assert_eq!(
        manager.take_notices(),
        [CcNotice::NotKept {
            attribute: CcAttributeId::SwitchCongestionSetting,
            node_guid: 0x0200,
            port: 0,
        }]
    );
    // What the switch holds differs from what is wanted: the next sweep sends it again.
    manager.program(&ports(), false);
    assert_eq!(
        run(&mut manager, &[], &[], now),
        [(1, CcAttributeId::SwitchCongestionSetting, 0)]
    );
}

#[test]
fn an_invalid_value_status_ends_a_port_as_opensm_tests_the_bits() {
    let mut manager = CongestionManager::new(options());
    manager.program(&ports(), true);
    run(
        &mut manager,
        &[(3, Status::INVALID_VALUE)],
        &[],
        Instant::now(),
    );
    assert!(manager.ports()[&0x0101].unavailable);
}

#[test]
fn new_options_send_what_now_differs() {
    let mut manager = CongestionManager::new(options());
    let now = Instant::now();
    manager.program(&ports(), true);
    run(&mut manager, &[], &[], now);
    manager.set_options(CcOptions {
        switch_marking_rate: 20,
        ..options()
    });
    manager.program(&ports(), false);
    assert_eq!(
        run(&mut manager, &[], &[], now),
        [(1, CcAttributeId::SwitchCongestionSetting, 0)]
    );
}

#[test]
fn disabled_sends_nothing() {
    let mut manager = CongestionManager::new(CcOptions::default());
    manager.program(&ports(), true);
    assert_eq!(run(&mut manager, &[], &[], Instant::now()), []);
}
