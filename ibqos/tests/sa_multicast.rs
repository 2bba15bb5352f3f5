//! The SA's multicast groups through the manager, on the built-in two-switch fabric emulated in
//! virtual time: joins, creates, leaves and queries of MCMemberRecords as hosts send them, and
//! the traps 66 and 67 a subscriber hears. Expected values follow OpenSM 3.3.23's rules
//! (osm_sa_mcmember_record.c, osm_multicast.c, osm_prtn.c), worked by hand below from the
//! fabric's own PortInfo: its hosts run 4x SDR (10 Gb/s, rate code 3) with NeighborMTU 2048
//! (code 4).

use ibqos_exchange::{Address, OutgoingMad, Peer};
use ibqos_fabric::PortRef;
use ibqos_mad::sa::{
    InformInfoRepr, JoinState, McMemberRecordMask as M, McMemberRecordRepr, Mtu, Rate, Record,
    SaAttributeId, SaMad, SaNoticeRepr, Selector,
};
use ibqos_mad::{AttributeId, Gid, Method, Status};
use ibqos_sm::manager::Run;
use tempfile::TempDir;

mod common;
use common::{
    EmulatedSm, ask, ask_with_reports, host, partitioned, request, settings, status, two_switch,
};

const CONFIG: &str = "examples/opensm-qos.conf";
/// The default partition's IPv4 broadcast group, which OpenSM creates without a
/// partitions.conf (`prtn_make_default`): scope 2, P_Key 0xffff.
const BROADCAST: Gid = Gid(0xff12_401b_ffff_0000_0000_0000_ffff_ffff);
/// The SA's key (OpenSM's `sa_key` default): a trusted requester's SM_Key.
const TRUSTED: u64 = 1;
/// IPoIB's join of the broadcast group: MGID | PortGID | P_Key | JoinState.
const IPOIB_JOIN: u64 = 0x10083;
/// What creating a group needs: MGID | PortGID | JoinState | Q_Key | TClass | P_Key |
/// FlowLabel | SL.
const CREATE: u64 = 0x130c7;

fn up(settings: &ibqos_opensm::Settings) -> EmulatedSm {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, settings);
    sm.sweep_done();
    sm
}

/// A host's address and its port GID on the default subnet prefix.
fn member(sm: &EmulatedSm, name: &str) -> (Peer, Gid) {
    let peer = host(sm, name);
    let sweep = sm.manager.last_sweep().unwrap();
    let port = sweep
        .subnet()
        .ports()
        .find(|(_, p)| p.lid == peer.lid)
        .unwrap()
        .1;
    // The premise of every expected MTU and rate here.
    assert_eq!(
        (
            port.info.neighbor_mtu,
            port.info.link_width_active,
            port.info.link_speed_active
        ),
        (4, 2, 1),
        "{name}: NeighborMTU 2048, 4x SDR"
    );
    (peer, Gid::new(Gid::DEFAULT_SUBNET_PREFIX, port.guid))
}

fn blank() -> McMemberRecordRepr {
    McMemberRecordRepr::parse_bytes(&[0u8; 56]).unwrap()
}

fn mcmr(method: Method, mask: u64, sm_key: u64, record: McMemberRecordRepr) -> Vec<u8> {
    request(
        method,
        SaAttributeId::McMemberRecord,
        mask,
        sm_key,
        |data| record.emit_bytes(data),
    )
}

/// IPoIB's join (or leave) of `mgid` with `state`.
fn ipoib(method: Method, mgid: Gid, port_gid: Gid, state: JoinState) -> Vec<u8> {
    let record = McMemberRecordRepr {
        mgid,
        port_gid,
        p_key: 0xffff,
        join_state: state,
        ..blank()
    };
    mcmr(method, IPOIB_JOIN, 0, record)
}

/// The records of an answer, checking it succeeded.
fn records(answer: &OutgoingMad) -> Vec<McMemberRecordRepr> {
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(view.header().status(), Status::OK);
    match view.header().method() {
        Method::GetTableResp => view
            .records()
            .map(|r| McMemberRecordRepr::parse_bytes(r).unwrap())
            .collect(),
        _ => vec![McMemberRecordRepr::parse_bytes(view.data()).unwrap()],
    }
}

fn table(
    sm: &mut EmulatedSm,
    from: Peer,
    mask: u64,
    sm_key: u64,
    t: McMemberRecordRepr,
) -> Vec<McMemberRecordRepr> {
    records(&ask(sm, &mcmr(Method::GetTable, mask, sm_key, t), from).unwrap())
}

/// Subscribes `peer` on QP 5 (as srp_daemon does, from a UD QP) to every generic trap.
fn subscribe(sm: &mut EmulatedSm, peer: Peer) -> Peer {
    let subscriber = Peer { qp: 5, ..peer };
    let inform = InformInfoRepr {
        gid: Gid(0),
        lid_range_begin: InformInfoRepr::ALL_LIDS,
        lid_range_end: 0,
        is_generic: 1,
        subscribe: 1,
        notice_type: 0xffff,
        trap_number: 0xffff,
        qpn: 5,
        resp_time_value: 18,
        producer_type: 0xff_ffff,
    };
    let set = request(Method::Set, SaAttributeId::InformInfo, 0, 0, |data| {
        inform.emit_bytes(data)
    });
    assert_eq!(status(&ask(sm, &set, subscriber).unwrap()), Status::OK);
    subscriber
}

/// The notice a Report carries, checking it is a Report to `to`.
fn notice(report: &OutgoingMad, to: Peer) -> SaNoticeRepr {
    assert_eq!(report.address, Address::Peer(to));
    let view = SaMad::new_checked(&report.mad[..]).unwrap();
    assert_eq!(view.header().method(), Method::Report);
    assert_eq!(view.sa_attribute_id(), SaAttributeId::Notice);
    SaNoticeRepr::parse_bytes(view.data()).unwrap()
}

/// A trap 66 or 67 about `mgid` as OpenSM's `mgrp_send_notice` fills it: generic, type 3
/// (subnet management), producer 4 (class manager), issued by the SM (H1's port), the MGID at
/// data details offset 6 (byte 16 of the notice).
fn assert_group_notice(notice: &SaNoticeRepr, trap: u16, mgid: Gid, sm: Peer, sm_gid: Gid) {
    let n = &notice.notice;
    assert!(n.is_generic);
    assert_eq!(u8::from(n.notice_type), 3);
    assert_eq!((n.producer_type, n.trap_number), (4, trap));
    assert_eq!((n.issuer_lid, notice.issuer_gid), (sm.lid, sm_gid));
    assert_eq!(n.data_details[6..22], mgid.to_bytes());
}

/// After the first sweep the default partition's broadcast group exists, empty, with the record
/// `osm_prtn_add_mcgroup` gives it: MLID 0xC000 (the first free), Q_Key 0x0B1B, MTU 2048 and
/// 10 Gb/s exactly (the defaults rate 3, MTU 4), lifetime subnet_timeout (18), SL 0, HopLimit 0
/// at link-local scope. IPoIB's join (mask 0x10083, JoinState full) then succeeds with those
/// parameters, and a subscriber hears trap 66 (the first full member) and, when the member
/// leaves, trap 67; the group stays, well-known, and takes the member again.
#[test]
fn ipoib_joins_the_default_broadcast_group_and_subscribers_hear_of_it() {
    let mut sm = up(&settings(CONFIG));
    let (h1, h1_gid) = member(&sm, "H1");
    let (h2, h2_gid) = member(&sm, "H2");
    let (h3, _) = member(&sm, "H3");
    // Untrusted, the group's own record; trusted, one per member: none yet.
    let groups = table(&mut sm, h2, 0, 0, blank());
    assert_eq!(groups.len(), 1);
    let group = groups[0];
    assert_eq!(
        (group.mgid, group.mlid, group.q_key, group.p_key),
        (BROADCAST, 0xc000, 0x0b1b, 0xffff)
    );
    assert_eq!(
        (group.mtu_selector, group.mtu),
        (Selector::Exactly, Mtu::Mtu2048)
    );
    assert_eq!(
        (group.rate_selector, group.rate),
        (Selector::Exactly, Rate::Gbps10)
    );
    assert_eq!(
        (group.packet_life_selector, group.packet_life),
        (Selector::Exactly, 18)
    );
    assert_eq!(
        (group.sl, group.flow_label, group.hop_limit, group.scope),
        (0, 0, 0, 2)
    );
    assert_eq!(
        (group.port_gid, group.join_state, group.proxy_join),
        (Gid(0), JoinState::NONE, false)
    );
    assert!(table(&mut sm, h2, 0, TRUSTED, blank()).is_empty());

    let subscriber = subscribe(&mut sm, h3);
    let (answer, reports) = ask_with_reports(
        &mut sm,
        &ipoib(Method::Set, BROADCAST, h2_gid, JoinState::FULL),
        h2,
    );
    let answer = answer.unwrap();
    assert_eq!(
        SaMad::new_checked(&answer.mad[..])
            .unwrap()
            .header()
            .method(),
        Method::GetResp
    );
    let joined = records(&answer)[0];
    // The request with the group's parameters, selectors "exactly", the JoinState held.
    assert_eq!(
        joined,
        McMemberRecordRepr {
            port_gid: h2_gid,
            join_state: JoinState::FULL,
            ..group
        }
    );
    assert_eq!(reports.len(), 1);
    assert_group_notice(&notice(&reports[0], subscriber), 66, BROADCAST, h1, h1_gid);

    // Trusted: H2's membership.
    let members = table(&mut sm, h2, 0, TRUSTED, blank());
    assert_eq!(members.len(), 1);
    assert_eq!(
        (members[0].port_gid, members[0].join_state),
        (h2_gid, JoinState::FULL)
    );

    // Joining again as a non-member OR-s the states: full | non-member; no second trap 66.
    let (answer, reports) = ask_with_reports(
        &mut sm,
        &ipoib(Method::Set, BROADCAST, h2_gid, JoinState::NON_MEMBER),
        h2,
    );
    assert_eq!(records(&answer.unwrap())[0].join_state, JoinState(0x3));
    assert!(reports.is_empty());

    // Leaving full: H2 is the only full member, so nothing is kept (osm_mgrp_remove_port),
    // the answer has JoinState 0, trap 67 goes out, and the well-known group stays, empty.
    let (answer, reports) = ask_with_reports(
        &mut sm,
        &ipoib(Method::Delete, BROADCAST, h2_gid, JoinState::FULL),
        h2,
    );
    let answer = answer.unwrap();
    assert_eq!(
        SaMad::new_checked(&answer.mad[..])
            .unwrap()
            .header()
            .method(),
        Method::DeleteResp
    );
    assert_eq!(records(&answer)[0].join_state, JoinState::NONE);
    assert_eq!(reports.len(), 1);
    assert_group_notice(&notice(&reports[0], subscriber), 67, BROADCAST, h1, h1_gid);
    assert!(table(&mut sm, h2, 0, TRUSTED, blank()).is_empty());
    assert_eq!(table(&mut sm, h2, 0, 0, blank()).len(), 1);

    // Leaving again: no longer a member.
    let again = ipoib(Method::Delete, BROADCAST, h2_gid, JoinState::FULL);
    assert_eq!(
        status(&ask(&mut sm, &again, h2).unwrap()),
        Status::SA_REQ_INVALID
    );
    // Re-joining: trap 66 again.
    let (answer, reports) = ask_with_reports(
        &mut sm,
        &ipoib(Method::Set, BROADCAST, h2_gid, JoinState::FULL),
        h2,
    );
    assert_eq!(records(&answer.unwrap())[0].mlid, 0xc000);
    assert_eq!(notice(&reports[0], subscriber).notice.trap_number, 66);
}

/// A create with MGID 0 gets the SA's own MGID (`build_new_mgid`): ff12:a01b (link-local, as
/// no scope is given), the subnet prefix fe80:: in bytes 4-11 with the counter (0 for the
/// first) over bytes 10-13: ff12:a01b:fe80::. Its MLID is the next free one, 0xC001; without
/// MTU and rate in the request it takes the port's, 2048 and 10 Gb/s. When its only (full)
/// member leaves, the group is deleted, unlike a well-known one, and a plain join no longer
/// finds it.
#[test]
fn a_group_created_with_mgid_zero_gets_the_sas_mgid_and_goes_with_its_last_member() {
    let mut sm = up(&settings(CONFIG));
    let (h3, h3_gid) = member(&sm, "H3");
    let (h4, h4_gid) = member(&sm, "H4");
    let create = McMemberRecordRepr {
        port_gid: h3_gid,
        q_key: 0x1234,
        p_key: 0xffff,
        packet_life: 14,
        join_state: JoinState::FULL,
        ..blank()
    };
    let created = records(&ask(&mut sm, &mcmr(Method::Set, CREATE, 0, create), h3).unwrap())[0];
    let mgid = Gid(0xff12_a01b_fe80_0000_0000_0000_0000_0000);
    assert_eq!(
        (created.mgid, created.mlid, created.q_key),
        (mgid, 0xc001, 0x1234)
    );
    assert_eq!(
        (created.mtu, created.rate, created.packet_life),
        (Mtu::Mtu2048, Rate::Gbps10, 14)
    );
    // The group's scope is the request's (0 here), not the MGID's: OpenSM stores the
    // creating record as it came.
    assert_eq!((created.scope, created.join_state), (0, JoinState::FULL));
    // H4 joins as a send-only non-member with the IPoIB mask.
    let send_only = ipoib(Method::Set, mgid, h4_gid, JoinState::SEND_ONLY_NON_MEMBER);
    assert_eq!(
        records(&ask(&mut sm, &send_only, h4).unwrap())[0].join_state,
        JoinState::SEND_ONLY_NON_MEMBER
    );
    // Both, trusted, by MGID.
    let by_mgid = McMemberRecordRepr { mgid, ..blank() };
    assert_eq!(table(&mut sm, h3, M::MGID.0, TRUSTED, by_mgid).len(), 2);
    // H3, the only full member, leaves: the group and H4's membership go.
    let leave = ipoib(Method::Delete, mgid, h3_gid, JoinState::FULL);
    assert_eq!(
        records(&ask(&mut sm, &leave, h3).unwrap())[0].join_state,
        JoinState::NONE
    );
    assert!(table(&mut sm, h3, M::MGID.0, 0, by_mgid).is_empty());
    let join = ipoib(Method::Set, mgid, h3_gid, JoinState::FULL);
    assert_eq!(
        status(&ask(&mut sm, &join, h3).unwrap()),
        Status::SA_REQ_INSUFFICIENT_COMPONENTS
    );
    // A second create counts on: counter 1 in byte 10, and MLID 0xC001 is free again.
    let again = records(&ask(&mut sm, &mcmr(Method::Set, CREATE, 0, create), h3).unwrap())[0];
    assert_eq!(again.mgid.to_bytes()[10..14], [1, 0, 0, 0]);
    assert_eq!(again.mlid, 0xc001);
}

/// Every way OpenSM refuses a join, leave or query, each with its status.
#[test]
fn joins_and_leaves_are_refused_with_opensms_status() {
    let mut sm = up(&settings(CONFIG));
    let (h2, h2_gid) = member(&sm, "H2");
    let (h3, h3_gid) = member(&sm, "H3");
    let join = McMemberRecordRepr {
        mgid: BROADCAST,
        port_gid: h2_gid,
        p_key: 0xffff,
        join_state: JoinState::FULL,
        ..blank()
    };
    let refused = |sm: &mut EmulatedSm, method, mask, record, from| {
        status(&ask(sm, &mcmr(method, mask, 0, record), from).unwrap())
    };
    use Status as S;
    let cases: [(&str, Method, u64, McMemberRecordRepr, Status); 14] = [
        (
            "no MGID (1B18)",
            Method::Set,
            IPOIB_JOIN & !M::MGID.0,
            join,
            S::SA_REQ_INSUFFICIENT_COMPONENTS,
        ),
        (
            "no JoinState (1B20)",
            Method::Delete,
            M::MGID.0 | M::PORT_GID.0,
            join,
            S::SA_REQ_INSUFFICIENT_COMPONENTS,
        ),
        (
            "rate code 0 with its selector",
            Method::Set,
            IPOIB_JOIN | M::RATE.0 | M::RATE_SELECTOR.0,
            join,
            S::SA_REQ_INVALID,
        ),
        (
            "MTU code 6 with its selector",
            Method::Set,
            IPOIB_JOIN | M::MTU.0 | M::MTU_SELECTOR.0,
            McMemberRecordRepr {
                mtu: Mtu::from(6),
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        (
            "PortGID of another subnet (1B40)",
            Method::Set,
            IPOIB_JOIN,
            McMemberRecordRepr {
                port_gid: Gid::new(0xfec0 << 48, h2_gid.interface_id()),
                ..join
            },
            S::SA_REQ_INVALID_GID,
        ),
        (
            "unknown port GUID",
            Method::Set,
            IPOIB_JOIN,
            McMemberRecordRepr {
                port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x42),
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        (
            "P_Key with base 0",
            Method::Set,
            IPOIB_JOIN,
            McMemberRecordRepr {
                p_key: 0x8000,
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        (
            "create as a non-member (1B10)",
            Method::Set,
            CREATE,
            McMemberRecordRepr {
                mgid: Gid(0),
                join_state: JoinState::NON_MEMBER,
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        (
            "create without Q_Key, TClass, FlowLabel, SL (1B11)",
            Method::Set,
            IPOIB_JOIN,
            McMemberRecordRepr {
                mgid: Gid(0),
                ..join
            },
            S::SA_REQ_INSUFFICIENT_COMPONENTS,
        ),
        (
            "create with a reserved MGID flag (1B28)",
            Method::Set,
            CREATE,
            McMemberRecordRepr {
                mgid: Gid(0xff32_1234 << 96 | 1),
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        // An IPv6 group of scope 5 needs the scope-5 broadcast group, which does not exist.
        (
            "IPoIB group without its broadcast group (1B1B)",
            Method::Set,
            CREATE,
            McMemberRecordRepr {
                mgid: Gid(0xff15_601b_ffff << 80 | 1),
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        (
            "Q_Key other than the group's (1B1A)",
            Method::Set,
            IPOIB_JOIN | M::Q_KEY.0,
            join,
            S::SA_REQ_INVALID,
        ),
        // The group's MTU is 2048: "greater than 2048" cannot hold.
        (
            "MTU above the group's (1B12)",
            Method::Set,
            IPOIB_JOIN | M::MTU_SELECTOR.0 | M::MTU.0,
            McMemberRecordRepr {
                mtu_selector: Selector::GreaterThan,
                mtu: Mtu::Mtu2048,
                ..join
            },
            S::SA_REQ_INVALID,
        ),
        (
            "JoinState 0 (1B12)",
            Method::Set,
            IPOIB_JOIN,
            McMemberRecordRepr {
                join_state: JoinState::NONE,
                ..join
            },
            S::SA_REQ_INVALID,
        ),
    ];
    for (what, method, mask, record, expected) in cases {
        assert_eq!(
            refused(&mut sm, method, mask, record, h2),
            expected,
            "{what}"
        );
    }
    // GetMulti is no method of MCMemberRecords (0x000C, OpenSM ERR 1B21).
    let get_multi = mcmr(Method::GetMulti, 0, 0, join);
    assert_eq!(
        status(&ask(&mut sm, &get_multi, h2).unwrap()),
        Status::METHOD_ATTRIBUTE_UNSUPPORTED
    );
    // Leaves: of a group that does not exist, of a state not held, and of another port's own
    // membership (not joined by proxy), are invalid (1B25).
    let leave = |mgid, port_gid, state| McMemberRecordRepr {
        mgid,
        port_gid,
        join_state: state,
        ..join
    };
    assert_eq!(
        refused(
            &mut sm,
            Method::Delete,
            IPOIB_JOIN,
            leave(Gid(0xff12_a01b << 96), h2_gid, JoinState::FULL),
            h2
        ),
        S::SA_REQ_INVALID
    );
    assert_eq!(refused(&mut sm, Method::Set, IPOIB_JOIN, join, h2), S::OK);
    assert_eq!(
        refused(
            &mut sm,
            Method::Delete,
            IPOIB_JOIN,
            leave(BROADCAST, h2_gid, JoinState::NON_MEMBER),
            h2
        ),
        S::SA_REQ_INVALID
    );
    assert_eq!(
        refused(
            &mut sm,
            Method::Delete,
            IPOIB_JOIN,
            leave(BROADCAST, h2_gid, JoinState::FULL),
            h3
        ),
        S::SA_REQ_INVALID
    );
    // H2 joins H3 to the group: a proxy join (the two share the default partition), stored
    // with ProxyJoin, so any port of the partition may change it, H3 itself included.
    let by_proxy = McMemberRecordRepr {
        port_gid: h3_gid,
        join_state: JoinState::NON_MEMBER,
        ..join
    };
    assert_eq!(
        refused(&mut sm, Method::Set, IPOIB_JOIN, by_proxy, h2),
        S::OK
    );
    let members = table(
        &mut sm,
        h2,
        M::PORT_GID.0,
        TRUSTED,
        McMemberRecordRepr {
            port_gid: h3_gid,
            ..blank()
        },
    );
    assert_eq!((members.len(), members[0].proxy_join), (1, true));
    assert_eq!(
        refused(&mut sm, Method::Delete, IPOIB_JOIN, by_proxy, h3),
        S::OK
    );
}

/// Queries as OpenSM answers them (`mcmr_by_comp_mask`): trusted, one record per member in
/// OpenSM's GUID order, filtered by JoinState when the mask has it, or the named member's;
/// untrusted, the group's record with PortGID, JoinState and ProxyJoin zero. A Get of the
/// group by MGID is one record.
#[test]
fn queries_answer_trusted_and_untrusted_requesters_apart() {
    let mut sm = up(&settings(CONFIG));
    let (h2, h2_gid) = member(&sm, "H2");
    let (h3, h3_gid) = member(&sm, "H3");
    ask(
        &mut sm,
        &ipoib(Method::Set, BROADCAST, h2_gid, JoinState::FULL),
        h2,
    )
    .unwrap();
    ask(
        &mut sm,
        &ipoib(Method::Set, BROADCAST, h3_gid, JoinState::NON_MEMBER),
        h3,
    )
    .unwrap();
    // OpenSM's map order is that of the byte-swapped GUIDs: ...0003 (H2) swaps to
    // 0x03000010..., ...0005 (H3) to 0x05000010..., so H2 first.
    let all = table(&mut sm, h2, 0, TRUSTED, blank());
    let listed: Vec<(Gid, JoinState)> = all.iter().map(|r| (r.port_gid, r.join_state)).collect();
    assert_eq!(
        listed,
        [(h2_gid, JoinState::FULL), (h3_gid, JoinState::NON_MEMBER)]
    );
    let full_only = McMemberRecordRepr {
        join_state: JoinState::FULL,
        ..blank()
    };
    let full: Vec<Gid> = table(&mut sm, h2, M::JOIN_STATE.0, TRUSTED, full_only)
        .iter()
        .map(|r| r.port_gid)
        .collect();
    assert_eq!(full, [h2_gid]);
    let named = McMemberRecordRepr {
        port_gid: h3_gid,
        ..blank()
    };
    let h3_only = table(&mut sm, h2, M::PORT_GID.0, TRUSTED, named);
    assert_eq!(
        (h3_only.len(), h3_only[0].join_state),
        (1, JoinState::NON_MEMBER)
    );
    // Untrusted: one record, nothing of the members; by PortGID, the member's, zeroed.
    let untrusted = table(&mut sm, h2, 0, 0, blank());
    assert_eq!(untrusted.len(), 1);
    assert_eq!(
        (untrusted[0].port_gid, untrusted[0].join_state),
        (Gid(0), JoinState::NONE)
    );
    let h3_hidden = table(&mut sm, h2, M::PORT_GID.0, 0, named);
    assert_eq!((h3_hidden.len(), h3_hidden[0].port_gid), (1, Gid(0)));
    let get = mcmr(
        Method::Get,
        M::MGID.0,
        0,
        McMemberRecordRepr {
            mgid: BROADCAST,
            ..blank()
        },
    );
    assert_eq!(records(&ask(&mut sm, &get, h3).unwrap())[0].mlid, 0xc000);
}

/// With a partitions.conf: no `ipoib` flag, so no broadcast group; a group of the `hosts`
/// partition (0x0101, H2 and H3) is hidden from H4, which holds only `storage` (and Default
/// limited), and H4 may not join it (1B14); H3 may.
#[test]
fn groups_belong_to_their_partition() {
    let dir = TempDir::new().unwrap();
    let mut sm = up(&partitioned(&dir));
    let (h2, h2_gid) = member(&sm, "H2");
    let (h3, h3_gid) = member(&sm, "H3");
    let (h4, h4_gid) = member(&sm, "H4");
    assert!(table(&mut sm, h2, 0, 0, blank()).is_empty());
    let create = McMemberRecordRepr {
        port_gid: h2_gid,
        p_key: 0x8101,
        join_state: JoinState::FULL,
        ..blank()
    };
    let group = records(&ask(&mut sm, &mcmr(Method::Set, CREATE, 0, create), h2).unwrap())[0];
    assert_eq!((group.p_key, group.mlid), (0x8101, 0xc000));
    let join = |port_gid| McMemberRecordRepr {
        mgid: group.mgid,
        port_gid,
        p_key: 0x8101,
        ..create
    };
    assert_eq!(
        status(&ask(&mut sm, &mcmr(Method::Set, IPOIB_JOIN, 0, join(h4_gid)), h4).unwrap()),
        Status::SA_REQ_INVALID
    );
    assert!(table(&mut sm, h4, 0, 0, blank()).is_empty());
    assert_eq!(
        status(&ask(&mut sm, &mcmr(Method::Set, IPOIB_JOIN, 0, join(h3_gid)), h3).unwrap()),
        Status::OK
    );
    assert_eq!(table(&mut sm, h3, 0, 0, blank()).len(), 1);
}

/// The ports of MLID 0xC000 (the broadcast group's) in each switch's multicast forwarding
/// table, as the emulated switches hold them.
fn broadcast_entries(sm: &EmulatedSm) -> [Vec<u8>; 2] {
    let emulator = sm.transport.emulator();
    let ports = |switch: &str| {
        let id = emulator.topology().node_by_name(switch).unwrap();
        emulator.mft_ports(id, 0xc000).unwrap()
    };
    [ports("S1"), ports("S2")]
}

#[test]
fn forwarding_tables_follow_joins_and_leaves_and_clear_when_the_members_go() {
    let mut sm = up(&settings(CONFIG));
    // Each step, and the entries OpenSM 3.3.23 programs on ibsim's two-switch fabric after the
    // same step (tests/tests/multicast_oracle.rs runs both SMs through it there). The root is
    // the switch whose farthest member is nearest, ties to the first in OpenSM's switch order
    // (S1); each switch sends a member out of its first least-hop port (S1 and S2 meet at
    // ports 3 and 4: 3) and, below the root, back up the port the tree came in by.
    let steps: [(Method, &str, [&[u8]; 2]); 8] = [
        // One member: no tree.
        (Method::Set, "H3", [&[], &[]]),
        // H3 and H4 both on S2: S2 is the root, and S1 has no entry.
        (Method::Set, "H4", [&[], &[1, 2]]),
        // H2 on S1 too: both switches are 2 from their farthest member; S1 roots the tree.
        (Method::Set, "H2", [&[2, 3], &[1, 2, 3]]),
        (Method::Delete, "H4", [&[2, 3], &[1, 3]]),
        // H2 alone again: its entries go.
        (Method::Delete, "H3", [&[], &[]]),
        (Method::Set, "H4", [&[2, 3], &[2, 3]]),
        (Method::Delete, "H2", [&[], &[]]),
        (Method::Delete, "H4", [&[], &[]]),
    ];
    let mut members: Vec<&str> = Vec::new();
    let mut before = broadcast_entries(&sm);
    for (number, (method, host, expected)) in steps.into_iter().enumerate() {
        let (peer, gid) = member(&sm, host);
        let join = ipoib(method, BROADCAST, gid, JoinState::FULL);
        let sets = || {
            let emulator = sm.transport.emulator();
            emulator.handled(AttributeId::MulticastForwardingTable, Method::Set)
        };
        let sets_before = sets();
        let answer = ask(&mut sm, &join, peer).unwrap();
        assert_eq!(
            status(&answer),
            Status::OK,
            "step {number}: {method} {host}"
        );
        let (_, failed) = sm.multicast_updated();
        assert_eq!(failed, 0, "step {number}");
        let held = broadcast_entries(&sm);
        // Only the switches whose entry changed are sent their block (one each here: MLID
        // 0xC000's block at position 0 holds every port of these 8-port switches).
        let changed = held.iter().zip(&before).filter(|(a, b)| a != b).count() as u64;
        let sets_after = sm
            .transport
            .emulator()
            .handled(AttributeId::MulticastForwardingTable, Method::Set);
        assert_eq!(sets_after - sets_before, changed, "step {number}: MFT Sets");
        before = held.clone();
        assert_eq!(
            [held[0].as_slice(), held[1].as_slice()],
            expected,
            "step {number}: {method} {host}"
        );
        match method {
            Method::Set => members.push(host),
            _ => members.retain(|m| *m != host),
        }
        // With two members or more, what one sends to the group reaches exactly the others.
        if members.len() >= 2 {
            assert_delivered_to_each_other(&sm, &members, &format!("step {number}"));
        }
    }
}

/// Port 1 of host `name` in the emulated fabric.
fn host_port(sm: &EmulatedSm, name: &str) -> PortRef {
    let topology = sm.transport.emulator().topology();
    PortRef::new(topology.node_by_name(name).unwrap(), 1)
}

/// Every member's packets to the broadcast group reach exactly the other members.
fn assert_delivered_to_each_other(sm: &EmulatedSm, members: &[&str], when: &str) {
    for sender in members {
        let emulator = sm.transport.emulator();
        let mut reached = emulator.multicast_targets(host_port(sm, sender), 0xc000);
        reached.sort();
        let mut others: Vec<PortRef> = members
            .iter()
            .filter(|m| *m != sender)
            .map(|m| host_port(sm, m))
            .collect();
        others.sort();
        assert_eq!(reached, others, "{when}: from {sender}");
    }
}

#[test]
fn joins_while_an_inter_switch_link_flaps_end_with_the_tree_of_the_whole_fabric() {
    use ibqos_emu::{FaultSchedule, Flap};
    let mut sm = up(&settings(CONFIG));
    for host in ["H2", "H3", "H4"] {
        let (peer, gid) = member(&sm, host);
        let join = ipoib(Method::Set, BROADCAST, gid, JoinState::FULL);
        assert_eq!(status(&ask(&mut sm, &join, peer).unwrap()), Status::OK);
        sm.multicast_updated();
    }
    assert_eq!(broadcast_entries(&sm), [vec![2, 3], vec![1, 2, 3]]);
    // S1[3]-S2[3], the first of the two links between the switches, goes down for two
    // seconds.
    let now = sm.transport.now_ns();
    let s1 = sm
        .transport
        .emulator()
        .topology()
        .node_by_name("S1")
        .unwrap();
    sm.transport.emulator_mut().schedule(&FaultSchedule {
        flaps: vec![Flap {
            port: PortRef::new(s1, 3),
            down_ns: now + 1_000_000_000,
            up_ns: Some(now + 3_000_000_000),
        }],
        dead: vec![],
        ..FaultSchedule::default()
    });
    // The trap's sweep routes the group over the other link, port 4.
    let (reason, _) = sm.sweep_started();
    assert_eq!(reason, ibqos_sm::manager::SweepReason::LinkChange);
    assert!(sm.sweep_done().subnet_up);
    assert_eq!(broadcast_entries(&sm), [vec![2, 4], vec![1, 2, 4]]);
    assert_delivered_to_each_other(&sm, &["H2", "H3", "H4"], "link down");
    // H5 joins while the link is down.
    let (peer, gid) = member(&sm, "H5");
    let join = ipoib(Method::Set, BROADCAST, gid, JoinState::FULL);
    assert_eq!(status(&ask(&mut sm, &join, peer).unwrap()), Status::OK);
    sm.multicast_updated();
    assert_eq!(broadcast_entries(&sm), [vec![2, 4, 5], vec![1, 2, 4]]);
    // The link comes back: the next sweep gives the group the tree of the whole fabric, whose
    // first least-hop port between the switches is 3 again, and port 4's entries go.
    let (reason, _) = sm.sweep_started();
    assert_eq!(reason, ibqos_sm::manager::SweepReason::LinkChange);
    assert!(sm.sweep_done().subnet_up);
    assert_eq!(broadcast_entries(&sm), [vec![2, 3, 5], vec![1, 2, 3]]);
    assert_delivered_to_each_other(&sm, &["H2", "H3", "H4", "H5"], "link back up");
}
