//! The emulated fabric answering SMPs: per-attribute round trips, the IBA status codes, the
//! PortState rules, directed-route and LID-routed travel, M_Key protection, and malformed input.

mod support;

use ibqos_emu::{Emulator, MULTICAST_FDB_CAP};
use ibqos_fabric::{LinkCaps, Node, NodeKind, PortRef, Topology};
use ibqos_mad::{
    Attribute, AttributeId, Direction, DrPath, GuidInfoRepr, LinearForwardingTableRepr, Method,
    MftModifier, MulticastForwardingTableRepr, Notice, PKeyTableRepr, PortInfoRepr, PortState,
    Priority, Routing, SlToVlMappingTableRepr, SlToVlModifier, Smp, SmpRepr, Status, VlArbEntry,
    VlArbitrationTableRepr,
};
use proptest::prelude::*;
use support::{emulator, exchange, h1, node, sm_exchange, sm_exchange_at, two_switch, with_sm_at};

const INVALID: Status = Status(0x001c);

fn bytes(smp: &SmpRepr) -> Vec<u8> {
    let mut out = vec![0; 256];
    smp.emit(&mut Smp::new_unchecked(&mut out[..]));
    out
}

fn send(emu: &mut Emulator, smp: &SmpRepr, dlid: Option<u16>) -> Option<SmpRepr> {
    let sm = h1(emu.topology());
    send_from(emu, sm, smp, dlid)
}

fn send_from(
    emu: &mut Emulator,
    origin: PortRef,
    smp: &SmpRepr,
    dlid: Option<u16>,
) -> Option<SmpRepr> {
    let response = exchange(emu, origin, 0, &bytes(smp), dlid)?.mad;
    Some(SmpRepr::parse(&Smp::new_checked(&response[..]).unwrap()).unwrap())
}

fn dr(path: &[u8]) -> Routing {
    Routing::Directed(DrPath::request(path).unwrap())
}

fn get(emu: &mut Emulator, path: &[u8], id: AttributeId, modifier: u32) -> SmpRepr {
    send(emu, &SmpRepr::get(id, modifier, 7, dr(path)), None).expect("an answer")
}

fn set(emu: &mut Emulator, path: &[u8], attribute: Attribute, modifier: u32) -> SmpRepr {
    send(emu, &SmpRepr::set(&attribute, modifier, 8, dr(path)), None).expect("an answer")
}

fn attr(smp: &SmpRepr) -> Attribute {
    Attribute::parse(smp.attribute_id, &smp.data).unwrap()
}

fn port_info(emu: &mut Emulator, path: &[u8], port: u32) -> PortInfoRepr {
    match attr(&get(emu, path, AttributeId::PortInfo, port)) {
        Attribute::PortInfo(p) => p,
        other => panic!("{other:?}"),
    }
}

#[test]
fn directed_routes_reach_each_node_with_a_return_path() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    // Hop 0: the SM's own CA.
    let here = get(&mut emu, &[], AttributeId::NodeInfo, 0);
    let Attribute::NodeInfo(info) = attr(&here) else {
        panic!()
    };
    assert_eq!(info.node_guid, t.node(node(&t, "H1")).unwrap().guid);
    assert_eq!(info.port_guid, info.node_guid + 1);
    assert_eq!(info.local_port_num, 1);
    // Two hops: out of H1 port 1, then S1 port 3 into S2 port 3.
    let far = get(&mut emu, &[1, 3], AttributeId::NodeInfo, 0);
    assert_eq!(far.method, Method::GetResp);
    assert_eq!(far.status, Status::OK);
    assert_eq!(far.transaction_id, 7);
    let Routing::Directed(path) = far.routing else {
        panic!()
    };
    assert_eq!(path.direction, Direction::Returning);
    assert_eq!(path.hop_pointer, 0);
    assert_eq!(path.hop_count, 2);
    assert_eq!(&path.return_path[..4], &[1, 1, 3, 0]);
    let Attribute::NodeInfo(s2) = attr(&far) else {
        panic!()
    };
    assert_eq!(s2.node_guid, 0x0002_c900_0000_2000);
    assert_eq!(s2.local_port_num, 3);
    // Byte-exact: the D bit and the ingress ports on the wire.
    let raw = sm_exchange(
        &mut emu,
        &bytes(&SmpRepr::get(AttributeId::NodeInfo, 0, 7, dr(&[1, 3]))),
        None,
    )
    .unwrap();
    assert_eq!(&raw[..8], &[0x01, 0x81, 0x01, 0x81, 0x80, 0x00, 0x00, 0x02]);
    assert_eq!(&raw[192..196], &[1, 1, 3, 0]);
    assert_eq!(&raw[128..132], &[0, 1, 3, 0]);
}

#[test]
fn bad_directed_routes_get_no_answer() {
    let mut emu = emulator();
    let mut no_answer = |path: &[u8]| {
        let smp = SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(path));
        sm_exchange(&mut emu, &bytes(&smp), None)
    };
    // The first hop from a CA must leave by the CA's own port.
    assert!(no_answer(&[2]).is_none());
    // Unlinked port, port 0, a port that does not exist.
    assert!(no_answer(&[1, 7]).is_none());
    assert!(no_answer(&[1, 0]).is_none());
    assert!(no_answer(&[1, 9]).is_none());
    // H1 itself is reachable back through S1 port 1, but a CA is never an intermediate hop.
    assert!(no_answer(&[1, 1]).is_some());
    assert!(no_answer(&[1, 1, 1]).is_none());
    // A route with a LID-routed leg (DrSLID not permissive) is not supported, as in ibsim.
    let mut path = DrPath::request(&[1]).unwrap();
    path.dr_slid = 1;
    let smp = SmpRepr::get(AttributeId::NodeInfo, 0, 1, Routing::Directed(path));
    assert!(sm_exchange(&mut emu, &bytes(&smp), None).is_none());
    // Hop count 64 is not a directed route.
    let mut raw = bytes(&SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[1])));
    raw[7] = 64;
    assert!(sm_exchange(&mut emu, &raw, None).is_none());
}

#[test]
fn status_codes() {
    let mut emu = emulator();
    let status = |smp: SmpRepr| smp.status;
    let node_info = attr(&get(&mut emu, &[], AttributeId::NodeInfo, 0));
    assert_eq!(status(set(&mut emu, &[], node_info, 0)), Status(0x0008));
    assert_eq!(
        status(get(&mut emu, &[], AttributeId::SmInfo, 0)),
        Status(0x000c)
    );
    assert_eq!(
        status(get(&mut emu, &[], AttributeId::SwitchInfo, 0)),
        Status(0x000c)
    );
    assert_eq!(
        status(get(&mut emu, &[], AttributeId::LinearForwardingTable, 0)),
        Status(0x000c)
    );
    // S1 has 8 ports and the default VLArb caps 8/8: no port 9, no second block.
    assert_eq!(
        status(get(&mut emu, &[1], AttributeId::PortInfo, 9)),
        INVALID
    );
    assert_eq!(
        status(get(
            &mut emu,
            &[1],
            AttributeId::VlArbitrationTable,
            0x2_0001
        )),
        INVALID
    );
    assert_eq!(
        status(get(&mut emu, &[1], AttributeId::LinearForwardingTable, 768)),
        INVALID
    );
    // OperVLs above VLCap.
    let mut p = port_info(&mut emu, &[1], 1);
    p.operational_vls = p.vl_cap + 1;
    let answer = set(&mut emu, &[1], Attribute::PortInfo(p), 1);
    assert_eq!(answer.status, INVALID);
    // The data area comes back as sent.
    assert_eq!(attr(&answer), Attribute::PortInfo(p));
    // All-ports SL2VL on a switch that does not advertise optimized programming.
    let table = SlToVlMappingTableRepr { vls: [1; 16] };
    let all = u32::from(SlToVlModifier::All);
    let answer = set(&mut emu, &[1], Attribute::SlToVlMappingTable(table), all);
    assert_eq!(answer.status, INVALID);
    // A method an SMA does not take.
    let mut send_method = SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[]));
    send_method.method = Method::Send;
    assert_eq!(
        send(&mut emu, &send_method, None).unwrap().status,
        Status(0x0008)
    );
    assert_eq!(emu.handled(AttributeId::NodeInfo, Method::Set), 1);
    assert_eq!(emu.handled(AttributeId::PortInfo, Method::Set), 1);
}

#[test]
fn port_info_stores_every_writable_field() {
    let mut emu = emulator();
    let mut p = port_info(&mut emu, &[], 0);
    assert_eq!(p.capability_mask.0 & 0x2, 0x2, "the SM's port is IsSM");
    p.lid = 9;
    p.master_sm_lid = 9;
    p.gid_prefix = 0xfe80_0000_0000_0000;
    p.vl_high_limit = 4;
    p.neighbor_mtu = 3;
    p.vl_stall_count = 5;
    p.subnet_timeout = 18;
    p.hoq_life = 0x10;
    p.master_sm_sl = 3;
    p.operational_vls = 2;
    p.m_key_lease_period = 77;
    // A read-only field the SM cannot change, and ClientReregister: an action, counted, that
    // reads 0.
    let mut sent = p;
    sent.vl_cap = 1;
    sent.client_reregister = true;
    let answer = set(&mut emu, &[], Attribute::PortInfo(sent), 0);
    assert_eq!(emu.client_reregistrations(h1(emu.topology())), 1);
    assert_eq!(answer.status, Status::OK);
    assert_eq!(attr(&answer), Attribute::PortInfo(p));
    assert_eq!(port_info(&mut emu, &[], 0), p);
    assert_eq!(emu.port_info(h1(emu.topology())), Some(&p));
    // NeighborMTU above MTUCap.
    p.neighbor_mtu = p.mtu_cap + 1;
    assert_eq!(
        set(&mut emu, &[], Attribute::PortInfo(p), 0).status,
        INVALID
    );
}

#[test]
fn port_state_rules() {
    let mut emu = emulator();
    let s1 = node(emu.topology(), "S1");
    let to_state = |emu: &mut Emulator, path: &[u8], port: u32, state: PortState| {
        let mut p = port_info(emu, path, port);
        p.port_state = state;
        set(emu, path, Attribute::PortInfo(p), port).status
    };
    assert_eq!(port_info(&mut emu, &[1], 3).port_state, PortState::Init);
    assert_eq!(port_info(&mut emu, &[1], 7).port_state, PortState::Down);
    assert_eq!(port_info(&mut emu, &[1], 0).port_state, PortState::Active);
    // Not stepwise, switch port 0, an unlinked port, Init itself.
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Active), INVALID);
    assert_eq!(to_state(&mut emu, &[1], 0, PortState::Armed), INVALID);
    assert_eq!(to_state(&mut emu, &[1], 7, PortState::Armed), INVALID);
    // Armed, then Active only once the neighbour (S2 port 3) is Armed; never back to Init.
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Armed), Status::OK);
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Init), INVALID);
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Active), INVALID);
    assert_eq!(to_state(&mut emu, &[1, 3], 3, PortState::Armed), Status::OK);
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Active), Status::OK);
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Active), Status::OK);
    assert_eq!(port_info(&mut emu, &[1], 3).port_state, PortState::Active);
    // Down restarts the link: both ends back in Init, PortStateChange on both switches,
    // which writing 1 clears.
    assert_eq!(to_state(&mut emu, &[1], 3, PortState::Down), Status::OK);
    assert_eq!(port_info(&mut emu, &[1], 3).port_state, PortState::Init);
    assert_eq!(port_info(&mut emu, &[1, 3], 3).port_state, PortState::Init);
    assert!(emu.switch_info(s1).unwrap().port_state_change);
    let mut info = *emu.switch_info(s1).unwrap();
    info.linear_fdb_top = 12;
    info.life_time_value = 9;
    let answer = set(&mut emu, &[1], Attribute::SwitchInfo(info), 0);
    let Attribute::SwitchInfo(held) = attr(&answer) else {
        panic!()
    };
    assert!(!held.port_state_change);
    assert_eq!((held.linear_fdb_top, held.life_time_value), (12, 9));
    assert!(held.enhanced_port0);
}

#[test]
fn tables_round_trip() {
    let mut emu = emulator();
    let h1 = h1(emu.topology());
    // SL2VL: per (input, output) on a switch, per port on a CA.
    let table = SlToVlMappingTableRepr {
        vls: [3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 15],
    };
    let pair = u32::from(SlToVlModifier::Pair {
        input: 3,
        output: 5,
    });
    let answer = set(&mut emu, &[1], Attribute::SlToVlMappingTable(table), pair);
    assert_eq!(answer.status, Status::OK);
    assert_eq!(
        &answer.data[..8],
        &[0x32, 0x10, 0x32, 0x10, 0x32, 0x10, 0x32, 0x1f]
    );
    let s1 = node(emu.topology(), "S1");
    assert_eq!(emu.sl2vl(PortRef::new(s1, 3), 5), Some(&table));
    assert_ne!(emu.sl2vl(PortRef::new(s1, 5), 3), Some(&table));
    let default = get(&mut emu, &[], AttributeId::SlToVlMappingTable, 0);
    assert_eq!(
        &default.data[..8],
        &[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7]
    );
    set(&mut emu, &[], Attribute::SlToVlMappingTable(table), 0x0305);
    assert_eq!(emu.sl2vl(h1, 0), Some(&table));
    // VLArb block 1, cap 8: entries past the cap read back zero.
    let mut entries = [VlArbEntry::new(1, 9); 32];
    entries[0] = VlArbEntry::new(0, 200);
    let answer = set(
        &mut emu,
        &[1],
        Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries }),
        0x1_0002,
    );
    let Attribute::VlArbitrationTable(held) = attr(&answer) else {
        panic!()
    };
    assert_eq!(held.entries[..8], entries[..8]);
    assert_eq!(held.entries[8], VlArbEntry::default());
    assert_eq!(
        emu.vlarb(PortRef::new(s1, 2), Priority::Low).unwrap(),
        &entries[..8]
    );
    // P_Key: entry 0 defaults to the full default partition.
    let Attribute::PKeyTable(keys) = attr(&get(&mut emu, &[], AttributeId::PKeyTable, 0)) else {
        panic!()
    };
    assert_eq!(keys.p_keys[0], 0xffff);
    let mut p_keys = [0; 32];
    p_keys[1] = 0x8001;
    set(
        &mut emu,
        &[],
        Attribute::PKeyTable(PKeyTableRepr { p_keys }),
        0,
    );
    let Attribute::PKeyTable(keys) = attr(&get(&mut emu, &[], AttributeId::PKeyTable, 0)) else {
        panic!()
    };
    assert_eq!(keys.p_keys, p_keys);
    assert_eq!(
        get(&mut emu, &[], AttributeId::PKeyTable, 2).status,
        INVALID
    );
    // GUIDInfo: entry 0 is the port GUID and stays so.
    let answer = set(
        &mut emu,
        &[],
        Attribute::GuidInfo(GuidInfoRepr { guids: [5; 8] }),
        0,
    );
    let Attribute::GuidInfo(guids) = attr(&answer) else {
        panic!()
    };
    assert_eq!(guids.guids[0], emu.topology().port(h1).unwrap().guid);
    assert_eq!(guids.guids[1..], [5; 7]);
    // LFT.
    let mut lft = LinearForwardingTableRepr { ports: [0xff; 64] };
    lft.ports[1] = 4;
    let answer = set(&mut emu, &[1], Attribute::LinearForwardingTable(lft), 1);
    assert_eq!(attr(&answer), Attribute::LinearForwardingTable(lft));
    assert_eq!(emu.lft(s1, 65), Some(4));
    assert_eq!(emu.lft(s1, 64), Some(0xff));
}

#[test]
fn mlnx_extended_port_info_is_kept_per_port_as_ibsim_keeps_it() {
    let mut emu = emulator();
    let id = AttributeId::MlnxExtendedPortInfo;
    let raw = |smp: &SmpRepr| match attr(smp) {
        Attribute::Other { data, .. } => data,
        other => panic!("{other:?}"),
    };
    // Zero at the start, on a switch port and on the SM's CA port (0 there: the arrival port).
    assert_eq!(raw(&get(&mut emu, &[1], id, 3)), [0; 64]);
    assert_eq!(raw(&get(&mut emu, &[], id, 0)), [0; 64]);
    let mut data = [0; 64];
    data[..4].copy_from_slice(&[1, 0, 2, 3]);
    let answer = set(&mut emu, &[1], Attribute::Other { id, data }, 3);
    assert_eq!(answer.status, Status(0));
    assert_eq!(raw(&get(&mut emu, &[1], id, 3)), data);
    // Only that port holds it.
    assert_eq!(raw(&get(&mut emu, &[1], id, 4)), [0; 64]);
    // S1 has 8 ports; H1 has 1.
    assert_eq!(get(&mut emu, &[1], id, 9).status, INVALID);
    assert_eq!(get(&mut emu, &[], id, 2).status, INVALID);
}

fn mft(block: u16, position: u8) -> u32 {
    MftModifier::new(block, position).unwrap().into()
}

/// The MFT block `modifier` of the switch at `path`, which must answer with status 0.
fn mft_get(emu: &mut Emulator, path: &[u8], modifier: u32) -> MulticastForwardingTableRepr {
    let answer = get(emu, path, AttributeId::MulticastForwardingTable, modifier);
    assert_eq!(answer.status, Status::OK, "{modifier:#x}");
    let Attribute::MulticastForwardingTable(table) = attr(&answer) else {
        panic!()
    };
    table
}

/// MFT blocks are kept per (block, position) as ibsim keeps them: blocks 0-31 (MulticastFDBCap
/// 1024) and the positions of the switch's ports, port 0 included; any other block reads as
/// empty masks and a Set of it is lost, with status 0 both ways.
#[test]
fn multicast_forwarding_tables_per_block_and_position() {
    let mut emu = emulator();
    let Attribute::SwitchInfo(info) = attr(&get(&mut emu, &[1], AttributeId::SwitchInfo, 0)) else {
        panic!()
    };
    assert_eq!(info.multicast_fdb_cap, MULTICAST_FDB_CAP);
    assert_eq!(
        get(&mut emu, &[], AttributeId::MulticastForwardingTable, 0).status,
        Status(0x000c)
    );

    let mut table = MulticastForwardingTableRepr::default();
    table.port_masks[0] = 0x0013; // ports 0, 1 and 4
    table.port_masks[31] = 0x0100; // port 8
    let empty = MulticastForwardingTableRepr::default();
    // S1 has 8 ports: one position. Block 31 is the last kept.
    for block in [0, 31] {
        let answer = set(
            &mut emu,
            &[1],
            Attribute::MulticastForwardingTable(table),
            mft(block, 0),
        );
        assert_eq!(answer.status, Status::OK);
        assert_eq!(attr(&answer), Attribute::MulticastForwardingTable(table));
        assert_eq!(mft_get(&mut emu, &[1], mft(block, 0)), table);
    }
    assert_eq!(mft_get(&mut emu, &[1], mft(1, 0)), empty);
    // S2 keeps its own tables.
    assert_eq!(mft_get(&mut emu, &[1, 3], mft(0, 0)), empty);
    for lost in [mft(32, 0), mft(0, 1), mft(511, 15)] {
        let answer = set(
            &mut emu,
            &[1],
            Attribute::MulticastForwardingTable(table),
            lost,
        );
        assert_eq!(answer.status, Status::OK);
        assert_eq!(attr(&answer), Attribute::MulticastForwardingTable(empty));
        assert_eq!(mft_get(&mut emu, &[1], lost), empty);
    }
    // Bits 27:9 are reserved.
    assert_eq!(
        get(&mut emu, &[1], AttributeId::MulticastForwardingTable, 0x200).status,
        INVALID
    );

    // A 16-port switch has 17 ports with port 0: two positions. (The tests send from H1.)
    let mut t = Topology::new();
    let switch = t
        .add_node(Node::new(NodeKind::Switch, 0x20, "S", 16))
        .unwrap();
    let host = t.add_node(Node::new(NodeKind::Ca, 0x10, "H1", 1)).unwrap();
    t.connect(PortRef::new(host, 1), PortRef::new(switch, 16))
        .unwrap();
    let mut emu = with_sm_at(t, PortRef::new(host, 1));
    set(
        &mut emu,
        &[1],
        Attribute::MulticastForwardingTable(table),
        mft(0, 1),
    );
    assert_eq!(mft_get(&mut emu, &[1], mft(0, 1)), table);
    assert_eq!(mft_get(&mut emu, &[1], mft(0, 0)), empty);
    set(
        &mut emu,
        &[1],
        Attribute::MulticastForwardingTable(table),
        mft(0, 2),
    );
    assert_eq!(mft_get(&mut emu, &[1], mft(0, 2)), empty);
}

#[test]
fn optimized_sl2vl_and_large_vlarb_caps() {
    let mut t = two_switch();
    let s2 = node(&t, "S2");
    t.node_mut(s2).unwrap().optimized_sl_to_vl = true;
    let h3 = node(&t, "H3");
    t.port_mut(PortRef::new(h3, 1)).unwrap().link = LinkCaps {
        vlarb_low_cap: 64,
        vlarb_high_cap: 40,
        ..LinkCaps::end_port()
    };
    let h3 = PortRef::new(h3, 1);
    let mut emu = with_sm_at(t, h3);
    let from_h3 = |emu: &mut Emulator, smp| send_from(emu, h3, &smp, None).expect("an answer");
    let table = SlToVlMappingTableRepr { vls: [2; 16] };
    let all_inputs = u32::from(SlToVlModifier::AllInputs { output: 4 });
    let answer = from_h3(
        &mut emu,
        SmpRepr::set(
            &Attribute::SlToVlMappingTable(table),
            all_inputs,
            8,
            dr(&[1]),
        ),
    );
    assert_eq!(answer.status, Status::OK);
    for input in 0..=8 {
        assert_eq!(emu.sl2vl(PortRef::new(s2, input), 4), Some(&table));
    }
    assert_ne!(emu.sl2vl(PortRef::new(s2, 1), 3), Some(&table));
    // S2's port 0 is not enhanced: no output port 0.
    let to_port0 = u32::from(SlToVlModifier::Pair {
        input: 1,
        output: 0,
    });
    let get_to_port0 = SmpRepr::get(AttributeId::SlToVlMappingTable, to_port0, 7, dr(&[1]));
    assert_eq!(from_h3(&mut emu, get_to_port0).status, INVALID);
    // Low cap 64: both low blocks; high cap 40: block 4 holds 8 entries.
    let entries = [VlArbEntry::new(1, 1); 32];
    for block in 1..=4 {
        let table = Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries });
        let answer = from_h3(&mut emu, SmpRepr::set(&table, block << 16, 8, dr(&[])));
        assert_eq!(answer.status, Status::OK, "block {block}");
    }
    assert_eq!(emu.vlarb(h3, Priority::Low).unwrap().len(), 64);
    assert_eq!(emu.vlarb(h3, Priority::High).unwrap().len(), 40);
}

/// Brings the links on the way to H3 up as an SM does and programs the LFTs by hand.
#[test]
fn lid_routing_follows_the_lfts_over_active_links() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let (s1, s2, h3) = (node(&t, "S1"), node(&t, "S2"), node(&t, "H3"));
    // LIDs: H1 1, S1 2, S2 3, H3 4.
    let lids = [
        (&[][..], 0, 1u16),
        (&[1][..], 0, 2),
        (&[1, 3][..], 0, 3),
        (&[1, 3, 1][..], 0, 4),
    ];
    for (path, port, lid) in lids {
        let mut p = port_info(&mut emu, path, port);
        p.lid = lid;
        assert_eq!(
            set(&mut emu, path, Attribute::PortInfo(p), port).status,
            Status::OK
        );
    }
    let nodeinfo_at = |emu: &mut Emulator, dlid| {
        let smp = SmpRepr::get(AttributeId::NodeInfo, 0, 3, Routing::Lid);
        send(emu, &smp, Some(dlid)).map(|r| match attr(&r) {
            Attribute::NodeInfo(n) => n.node_guid,
            other => panic!("{other:?}"),
        })
    };
    // The SM's own LID needs no link.
    assert_eq!(
        nodeinfo_at(&mut emu, 1),
        Some(t.node(node(&t, "H1")).unwrap().guid)
    );
    // Links still in Init: nothing crosses them by LID.
    assert_eq!(nodeinfo_at(&mut emu, 2), None);
    for (path, port) in [
        (&[][..], 1),
        (&[1][..], 1),
        (&[1][..], 3),
        (&[1, 3][..], 3),
        (&[1, 3][..], 1),
        (&[1, 3, 1][..], 1),
    ] {
        for state in [PortState::Armed, PortState::Active] {
            let mut p = port_info(&mut emu, path, port);
            p.port_state = state;
            set(&mut emu, path, Attribute::PortInfo(p), port);
        }
    }
    // Armed then Active pairwise: the first end of each link stayed Armed until its peer was.
    for (path, port) in [(&[][..], 1), (&[1][..], 3), (&[1, 3][..], 1)] {
        let mut p = port_info(&mut emu, path, port);
        p.port_state = PortState::Active;
        set(&mut emu, path, Attribute::PortInfo(p), port);
    }
    let lft = |emu: &mut Emulator, path: &[u8], to: [(u16, u8); 4]| {
        let mut table = LinearForwardingTableRepr { ports: [0xff; 64] };
        for (lid, port) in to {
            table.ports[usize::from(lid)] = port;
        }
        set(emu, path, Attribute::LinearForwardingTable(table), 0);
        let mut switch = *emu
            .switch_info(if path.len() == 1 { s1 } else { s2 })
            .unwrap();
        switch.linear_fdb_top = 4;
        set(emu, path, Attribute::SwitchInfo(switch), 0);
    };
    // Before any LFT: no route.
    assert_eq!(nodeinfo_at(&mut emu, 3), None);
    lft(&mut emu, &[1], [(1, 1), (2, 0), (3, 3), (4, 3)]);
    lft(&mut emu, &[1, 3], [(1, 3), (2, 3), (3, 0), (4, 1)]);
    assert_eq!(nodeinfo_at(&mut emu, 2), Some(t.node(s1).unwrap().guid));
    assert_eq!(nodeinfo_at(&mut emu, 3), Some(t.node(s2).unwrap().guid));
    assert_eq!(nodeinfo_at(&mut emu, 4), Some(t.node(h3).unwrap().guid));
    // A LID no port has, and one past LinearFDBTop.
    assert_eq!(nodeinfo_at(&mut emu, 5), None);
    assert_eq!(nodeinfo_at(&mut emu, 40), None);
}

const M_KEY: u64 = 0x0123_4567_89ab_cdef;
const WRONG_KEY: u64 = 0xbad;
const SECOND: u64 = 1_000_000_000;

fn keyed(smp: SmpRepr, m_key: u64) -> SmpRepr {
    SmpRepr { m_key, ..smp }
}

/// The PortInfo of the port at the end of `path` (port 0 of a switch) as a Get carrying
/// `m_key` reads it, or `None` if the SMA drops the Get.
fn port_info_with(emu: &mut Emulator, path: &[u8], m_key: u64) -> Option<PortInfoRepr> {
    let get = SmpRepr::get(AttributeId::PortInfo, 0, 9, dr(path));
    match attr(&send(emu, &keyed(get, m_key), None)?) {
        Attribute::PortInfo(p) => Some(p),
        other => panic!("{other:?}"),
    }
}

/// A PortInfo Set carrying `m_key` of `info` to the port at the end of `path`: its status, or
/// `None` if the SMA drops it.
fn set_port_info(
    emu: &mut Emulator,
    path: &[u8],
    info: PortInfoRepr,
    m_key: u64,
) -> Option<Status> {
    let set = SmpRepr::set(&Attribute::PortInfo(info), 0, 9, dr(path));
    Some(send(emu, &keyed(set, m_key), None)?.status)
}

/// Gives the port at the end of `path` the M_Key [`M_KEY`], `protect` bits and a lease of
/// `lease_s` seconds, with a Set that carries `current`, its key until then.
fn protect(emu: &mut Emulator, path: &[u8], current: u64, protect: u8, lease_s: u16) {
    let mut p = port_info_with(emu, path, current).expect("the port's own key");
    p.m_key = M_KEY;
    p.m_key_protect_bits = protect;
    p.m_key_lease_period = lease_s;
    assert_eq!(set_port_info(emu, path, p, current), Some(Status::OK));
}

#[test]
fn m_key_sets_need_the_key() {
    let mut emu = emulator();
    // The SM's own port checks like any other.
    protect(&mut emu, &[], 0, 0, 0);
    let mut p = port_info_with(&mut emu, &[], M_KEY).unwrap();
    assert_eq!(p.m_key, M_KEY);
    p.lid = 7;
    // A wrong key and no key: no answer, nothing stored, a violation each.
    assert_eq!(set_port_info(&mut emu, &[], p, WRONG_KEY), None);
    assert_eq!(set_port_info(&mut emu, &[], p, 0), None);
    let held = port_info_with(&mut emu, &[], M_KEY).unwrap();
    assert_eq!((held.lid, held.m_key_violations), (0, 2));
    assert_eq!(emu.handled(AttributeId::PortInfo, Method::Set), 1);
    // The right key: stored, M_Key changes included; the old key is wrong from then on.
    p.m_key = 0x5eed;
    assert_eq!(set_port_info(&mut emu, &[], p, M_KEY), Some(Status::OK));
    assert_eq!(emu.port_info(h1(emu.topology())).map(|p| p.lid), Some(7));
    assert_eq!(set_port_info(&mut emu, &[], p, M_KEY), None);
    assert_eq!(set_port_info(&mut emu, &[], p, 0x5eed), Some(Status::OK));
    // M_KeyViolations is writable, and saturates.
    p.m_key_violations = 0xfffe;
    assert_eq!(set_port_info(&mut emu, &[], p, 0x5eed), Some(Status::OK));
    for _ in 0..2 {
        assert_eq!(set_port_info(&mut emu, &[], p, M_KEY), None);
    }
    let held = emu.port_info(h1(emu.topology())).unwrap();
    assert_eq!(held.m_key_violations, 0xffff);
}

#[test]
fn protection_levels_decide_what_a_get_without_the_key_sees() {
    let mut emu = emulator();
    let h3 = PortRef::new(node(emu.topology(), "H3"), 1);
    let path = [1, 3, 1];
    let node_info = |emu: &mut Emulator, m_key| {
        let get = SmpRepr::get(AttributeId::NodeInfo, 0, 9, dr(&path));
        send(emu, &keyed(get, m_key), None)
    };
    let mut current = 0;
    for (level, answered, key_read) in
        [(0, true, M_KEY), (1, true, 0), (2, false, 0), (3, false, 0)]
    {
        protect(&mut emu, &path, current, level, 0);
        current = M_KEY;
        let violations = emu.port_info(h3).unwrap().m_key_violations;
        let read = port_info_with(&mut emu, &path, WRONG_KEY);
        assert_eq!(read.is_some(), answered, "level {level}");
        assert_eq!(node_info(&mut emu, WRONG_KEY).is_some(), answered);
        if let Some(read) = read {
            assert_eq!(read.m_key, key_read, "level {level}");
            assert_eq!(read.m_key_protect_bits, level);
        }
        // A Get the level lets through is no violation; one it stops is.
        let counted = if answered { 0 } else { 2 };
        let held = emu.port_info(h3).unwrap();
        assert_eq!(held.m_key_violations, violations + counted, "level {level}");
        // With the key, every level answers in full.
        assert_eq!(port_info_with(&mut emu, &path, M_KEY).unwrap().m_key, M_KEY);
        assert!(node_info(&mut emu, M_KEY).is_some());
    }
}

#[test]
fn a_switch_answers_to_the_key_of_its_port_0() {
    let mut emu = emulator();
    let s1 = node(emu.topology(), "S1");
    protect(&mut emu, &[1], 0, 2, 0);
    let port3 = |emu: &mut Emulator, path: &[u8], m_key| {
        let get = SmpRepr::get(AttributeId::PortInfo, 3, 9, dr(path));
        send(emu, &keyed(get, m_key), None)
    };
    // In at port 1 from H1, and at port 3 from S2: port 0's key governs either way, and port 0
    // counts the violations.
    for path in [&[1][..], &[1, 3, 3]] {
        assert!(port3(&mut emu, path, WRONG_KEY).is_none(), "{path:?}");
        assert!(port3(&mut emu, path, M_KEY).is_some(), "{path:?}");
    }
    let violations = |emu: &Emulator, port| {
        emu.port_info(PortRef::new(s1, port))
            .unwrap()
            .m_key_violations
    };
    assert_eq!(
        (
            violations(&emu, 0),
            violations(&emu, 1),
            violations(&emu, 3)
        ),
        (2, 0, 0)
    );
    // An external port's own M_Key fields protect nothing.
    let mut p = match attr(&port3(&mut emu, &[1], M_KEY).unwrap()) {
        Attribute::PortInfo(p) => p,
        other => panic!("{other:?}"),
    };
    p.m_key = 0x5eed;
    let set = SmpRepr::set(&Attribute::PortInfo(p), 3, 9, dr(&[1]));
    assert_eq!(
        send(&mut emu, &keyed(set, M_KEY), None).unwrap().status,
        Status::OK
    );
    assert!(port3(&mut emu, &[1], 0x5eed).is_none());
    assert!(port3(&mut emu, &[1], M_KEY).is_some());
    // S2 has no key: anything goes.
    assert!(port_info_with(&mut emu, &[1, 3], WRONG_KEY).is_some());
}

#[test]
fn a_lease_clears_the_protect_bits_in_emulated_time() {
    let mut emu = emulator();
    let h3 = PortRef::new(node(emu.topology(), "H3"), 1);
    let path = [1, 3, 1];
    protect(&mut emu, &path, 0, 2, 10);
    let protect_bits = |emu: &Emulator| emu.port_info(h3).unwrap().m_key_protect_bits;
    // The first violation starts a 10 s lease; a second does not restart it.
    emu.advance_to(SECOND);
    assert_eq!(port_info_with(&mut emu, &path, WRONG_KEY), None);
    emu.advance_to(5 * SECOND);
    assert_eq!(port_info_with(&mut emu, &path, WRONG_KEY), None);
    emu.advance_to(11 * SECOND - 1);
    assert_eq!(protect_bits(&emu), 2);
    // A request's time moves lease time on too: at 11 s the lease is over, and the key is for
    // anyone to read.
    let get = SmpRepr::get(AttributeId::PortInfo, 0, 9, dr(&path));
    let answer = sm_exchange_at(&mut emu, 11 * SECOND, &bytes(&keyed(get, WRONG_KEY)), None);
    let answer = SmpRepr::parse(&Smp::new_checked(&answer.unwrap().mad[..]).unwrap()).unwrap();
    let Attribute::PortInfo(read) = attr(&answer) else {
        panic!()
    };
    assert_eq!((read.m_key, read.m_key_protect_bits), (M_KEY, 0));
    assert_eq!(read.m_key_violations, 2);
    // A request sent at an earlier time is taken as sent at the time the fabric has reached: a
    // lease it starts begins then, and ends only when the emulator is advanced past it.
    protect(&mut emu, &path, M_KEY, 2, 10);
    emu.advance_to(100 * SECOND);
    assert_eq!(port_info_with(&mut emu, &path, WRONG_KEY), None);
    emu.advance_to(110 * SECOND - 1);
    assert_eq!(protect_bits(&emu), 2);
    emu.advance_to(110 * SECOND);
    assert_eq!(protect_bits(&emu), 0);
}

#[test]
fn only_the_valid_key_stops_a_lease() {
    let mut emu = emulator();
    let h3 = PortRef::new(node(emu.topology(), "H3"), 1);
    let path = [1, 3, 1];
    let protect_bits = |emu: &Emulator| emu.port_info(h3).unwrap().m_key_protect_bits;
    // The key, 5 s into a 10 s lease: the lease stops.
    protect(&mut emu, &path, 0, 2, 10);
    assert_eq!(port_info_with(&mut emu, &path, WRONG_KEY), None);
    emu.advance_to(5 * SECOND);
    assert!(port_info_with(&mut emu, &path, M_KEY).is_some());
    emu.advance_to(20 * SECOND);
    assert_eq!(protect_bits(&emu), 2);
    // At level 1 a Get with a wrong key is answered, and the lease runs on (C14-17).
    protect(&mut emu, &path, M_KEY, 1, 10);
    let p = port_info_with(&mut emu, &path, M_KEY).unwrap();
    assert_eq!(set_port_info(&mut emu, &path, p, WRONG_KEY), None);
    emu.advance_to(25 * SECOND);
    assert_eq!(
        port_info_with(&mut emu, &path, WRONG_KEY).map(|p| p.m_key),
        Some(0)
    );
    emu.advance_to(30 * SECOND);
    assert_eq!(protect_bits(&emu), 0);
    assert_eq!(
        port_info_with(&mut emu, &path, WRONG_KEY).map(|p| p.m_key),
        Some(M_KEY)
    );
}

#[test]
fn malformed_smps_get_no_answer() {
    let mut emu = emulator();
    let good = bytes(&SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[])));
    assert!(sm_exchange(&mut emu, &good, None).is_some());
    for len in 0..256 {
        assert!(
            sm_exchange(&mut emu, &good[..len], None).is_none(),
            "{len} bytes"
        );
    }
    // Class 0x03 (SA): no agent of the fabric answers it.
    for (offset, value) in [(0, 2), (1, 0x03), (2, 2)] {
        let mut bad = good.clone();
        bad[offset] = value;
        assert!(
            sm_exchange(&mut emu, &bad, None).is_none(),
            "byte {offset} = {value}"
        );
    }
    // Class 0x04 makes it a PerfMgt GMP: the PMA, not the SMA, answers, and it has no
    // NodeInfo (0x000C).
    let mut perf = good.clone();
    perf[1] = 0x04;
    let answer = sm_exchange(&mut emu, &perf, None).expect("a PMA's answer");
    assert_eq!((answer[1], &answer[4..6]), (0x04, &[0x00, 0x0c][..]));
    // A LID-routed SMP needs the transport's destination LID.
    let lid = bytes(&SmpRepr::get(AttributeId::NodeInfo, 0, 1, Routing::Lid));
    assert!(sm_exchange(&mut emu, &lid, None).is_none());
    // A response or a TrapRepress is never answered.
    let mut response = good.clone();
    response[3] = 0x81;
    assert!(sm_exchange(&mut emu, &response, None).is_none());
    response[3] = 0x07;
    assert!(sm_exchange(&mut emu, &response, None).is_none());
}

proptest! {
    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        dlid in proptest::option::of(any::<u16>()),
    ) {
        let _ = sm_exchange(&mut emulator(), &bytes, dlid);
    }

    /// Valid SMP framing with random contents, routed or not: an answer or none, no panic,
    /// and any answer is a response to the same transaction.
    #[test]
    fn random_smps_never_panic(
        mut bytes in proptest::collection::vec(any::<u8>(), 256),
        directed: bool,
        set: bool,
        hops in 0u8..=3,
        attribute in 0x10u16..=0x20,
    ) {
        bytes[..4].copy_from_slice(&[1, if directed { 0x81 } else { 0x01 }, 1, if set { 2 } else { 1 }]);
        bytes[4] = 0;
        bytes[6] = 0;
        bytes[7] = hops;
        bytes[16..18].copy_from_slice(&attribute.to_be_bytes());
        bytes[32..36].fill(0xff);
        for b in &mut bytes[129..132] {
            *b %= 10;
        }
        let mut emu = emulator();
        if let Some(answer) = sm_exchange(&mut emu, &bytes, Some(1)) {
            prop_assert_eq!(&answer[8..16], &bytes[8..16]);
            prop_assert_eq!(answer[3], 0x81);
        }
    }
}

/// Clients elsewhere in the fabric (as `ibqos fabric serve` attaches them): a directed route
/// starts at their own port, and an external switch port is no place to send from.
#[test]
fn smps_from_another_port_start_there() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let (s2, h3) = (node(&t, "S2"), node(&t, "H3"));
    let node_guid = |emu: &mut Emulator, origin, path: &[u8]| {
        let request = bytes(&SmpRepr::get(AttributeId::NodeInfo, 0, 9, dr(path)));
        let response = exchange(emu, origin, 0, &request, None)?.mad;
        match attr(&SmpRepr::parse(&Smp::new_checked(&response[..]).unwrap()).unwrap()) {
            Attribute::NodeInfo(n) => Some(n.node_guid),
            other => panic!("{other:?}"),
        }
    };
    let guid = |id| t.node(id).unwrap().guid;
    let from_h3 = PortRef::new(h3, 1);
    assert_eq!(node_guid(&mut emu, from_h3, &[]), Some(guid(h3)));
    assert_eq!(node_guid(&mut emu, from_h3, &[1]), Some(guid(s2)));
    assert_eq!(
        node_guid(&mut emu, from_h3, &[1, 3]),
        Some(guid(node(&t, "S1")))
    );
    // A CA's first hop leaves by the client's own port, not another.
    assert_eq!(node_guid(&mut emu, from_h3, &[2]), None);
    let from_s2 = PortRef::new(s2, 0);
    assert_eq!(node_guid(&mut emu, from_s2, &[1]), Some(guid(h3)));
    assert_eq!(node_guid(&mut emu, PortRef::new(s2, 1), &[]), None);
    // Where an SMP no SMA answers (SMInfo) would arrive.
    let sm_info = bytes(&SmpRepr::get(AttributeId::SmInfo, 0, 9, dr(&[1, 3, 1])));
    assert_eq!(
        emu.carry(from_h3, &sm_info, None),
        Some(PortRef::new(node(&t, "H1"), 1))
    );
}

#[test]
fn a_violation_sends_trap_256_to_the_master_sm() {
    let mut emu = emulator();
    let h1 = h1(emu.topology());
    // H1 holds LID 1 and knows the SM is at LID 1: itself, so the trap needs no route.
    let mut own = port_info_with(&mut emu, &[], 0).unwrap();
    (own.lid, own.master_sm_lid) = (1, 1);
    assert_eq!(set_port_info(&mut emu, &[], own, 0), Some(Status::OK));
    protect(&mut emu, &[], 0, 2, 0);
    assert!(emu.take_traps().is_empty(), "no trap without a violation");
    let get = SmpRepr::get(AttributeId::NodeInfo, 0, 9, dr(&[]));
    assert!(send(&mut emu, &keyed(get, WRONG_KEY), None).is_none());
    let traps = emu.take_traps();
    assert_eq!(traps.len(), 1, "{traps:?}");
    assert_eq!((traps[0].to, traps[0].slid), (h1, 1));
    let trap = SmpRepr::parse_bytes(&traps[0].mad).unwrap();
    let notice = Notice::new_checked(&trap.data[..]).unwrap();
    assert_eq!(
        (
            notice.trap_number(),
            notice.issuer_lid(),
            notice.producer_type()
        ),
        (256, 1, 1)
    );
    assert_eq!(
        (
            notice.trap256_lid_addr(),
            notice.trap256_method(),
            notice.trap256_attribute_id(),
            notice.trap256_m_key()
        ),
        (1, 0x01, u16::from(AttributeId::NodeInfo), WRONG_KEY)
    );
    assert_eq!(emu.unrepressed_traps(), 1);
    // A TrapRepress without the key fails, counted, and raises no trap of its own.
    let repress = SmpRepr {
        method: Method::TrapRepress,
        ..trap
    };
    let violations = emu.port_info(h1).unwrap().m_key_violations;
    assert!(send(&mut emu, &repress, Some(1)).is_none());
    assert!(emu.take_traps().is_empty());
    assert_eq!(emu.unrepressed_traps(), 1);
    assert_eq!(emu.port_info(h1).unwrap().m_key_violations, violations + 1);
    // With the key, it ends the trap.
    assert!(send(&mut emu, &keyed(repress, M_KEY), Some(1)).is_none());
    assert_eq!(emu.unrepressed_traps(), 0);
}
