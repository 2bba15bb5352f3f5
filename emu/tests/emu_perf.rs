//! The emulated fabric's performance management agents, as ibsim's answer `perfquery`:
//! ClassPortInfo, PortCounters and PortCountersExtended Get and Set, PortSelect, the counting of
//! every MAD on every link it crosses (in ibsim's order), losses, LinkDownedCounter, the statuses
//! of a real PMA, GMPs routed by LID to the port that owns it, and malformed input.

mod support;

use ibqos_emu::{
    CounterId, CounterPresets, Emulator, FaultSchedule, Flap, LaneTraffic, PortTraffic,
    UnknownPort, builtin_topology,
};
use ibqos_fabric::netfile::parse_net_str;
use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_mad::{
    Attribute, AttributeId, DrPath, LinearForwardingTableRepr, Method, MgmtClass, PerfAttributeId,
    PerfMgtMad, PhysPortState, PortCounters, PortCountersExtended, PortCountersExtendedRepr,
    PortCountersRepr, PortState, PortVlOpData, Routing, Smp, SmpRepr, Status,
};
use ibqos_qos::{Sl, Vl};
use proptest::prelude::*;
use support::{exchange, sm_exchange, with_sm_at};

const INVALID: Status = Status(0x001c);

/// S1 (4 ports): port 1 to H1, ports 2 and 3 to the two ports of H2. The client is at H1.
const STAR: &str = r#"Switch 4 "S1" # "sw"
[1] "H1"[1]
[2] "H2"[1]
[3] "H2"[2]

Hca 1 "H1"
[1] "S1"[1]

Hca 2 "H2"
[1] "S1"[2]
[2] "S1"[3]
"#;

fn fabric(text: &str) -> (Emulator, Topology) {
    let t = parse_net_str(text).unwrap().topology;
    let h1 = PortRef::new(t.node_by_name("H1").unwrap(), 1);
    (with_sm_at(t.clone(), h1), t)
}

fn port(t: &Topology, node: &str, port: u8) -> PortRef {
    PortRef::new(t.node_by_name(node).unwrap(), port)
}

/// A PerfMgt request: `data` at the start of the data area, the rest zero.
fn gmp(method: Method, attribute: PerfAttributeId, data: &[u8]) -> Vec<u8> {
    let mut bytes = vec![0; 256];
    let mut mad = PerfMgtMad::new_unchecked(&mut bytes[..]);
    let mut header = mad.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::PerfMgt);
    header.set_class_version(1);
    header.set_method(method);
    header.set_transaction_id(0x0102_0304_0506_0708);
    header.set_attribute_id(AttributeId::from(u16::from(attribute)));
    mad.data_mut()[..data.len()].copy_from_slice(data);
    bytes
}

/// PortSelect and CounterSelect, the start of every counter attribute.
fn select(port_select: u8, counter_select: u16) -> [u8; 4] {
    let [hi, lo] = counter_select.to_be_bytes();
    [0, port_select, hi, lo]
}

/// Sends `request` from `origin` to `dlid` (none: the permissive LID, `origin` itself).
fn perf(emu: &mut Emulator, origin: PortRef, dlid: Option<u16>, request: &[u8]) -> Option<Vec<u8>> {
    exchange(emu, origin, 0, request, dlid).map(|reply| reply.mad)
}

fn status(response: &[u8]) -> Status {
    PerfMgtMad::new_checked(response).unwrap().header().status()
}

/// PortCounters of `port_select` (`set`: cleared by `counter_select` first), asked from `origin`.
fn port_counters(
    emu: &mut Emulator,
    origin: PortRef,
    dlid: Option<u16>,
    port_select: u8,
    set: Option<u16>,
) -> Result<PortCountersRepr, Status> {
    let (method, clear) = set.map_or((Method::Get, 0), |c| (Method::Set, c));
    let request = gmp(
        method,
        PerfAttributeId::PortCounters,
        &select(port_select, clear),
    );
    let response = perf(emu, origin, dlid, &request).expect("an answer");
    match status(&response) {
        Status::OK => Ok(PortCountersRepr::parse(
            &PortCounters::new_checked(&response[64..]).unwrap(),
        )
        .unwrap()),
        other => Err(other),
    }
}

fn extended(
    emu: &mut Emulator,
    origin: PortRef,
    port_select: u8,
    set: Option<u16>,
) -> PortCountersExtendedRepr {
    let (method, clear) = set.map_or((Method::Get, 0), |c| (Method::Set, c));
    let request = gmp(
        method,
        PerfAttributeId::PortCountersExtended,
        &select(port_select, clear),
    );
    let response = perf(emu, origin, None, &request).expect("an answer");
    assert_eq!(status(&response), Status::OK);
    PortCountersExtendedRepr::parse(&PortCountersExtended::new_checked(&response[64..]).unwrap())
        .unwrap()
}

/// (PortXmitPkts, PortRcvPkts, PortXmitData, PortRcvData) of one port, read by a client at its
/// own node (port 0 of a switch), so that the read crosses no link.
fn traffic(emu: &mut Emulator, node: NodeId, switch: bool, port: u8) -> (u32, u32, u32, u32) {
    let origin = PortRef::new(node, if switch { 0 } else { port });
    let c = port_counters(emu, origin, None, port, None).unwrap();
    (
        c.port_xmit_pkts,
        c.port_rcv_pkts,
        c.port_xmit_data,
        c.port_rcv_data,
    )
}

fn smp(smp: &SmpRepr) -> Vec<u8> {
    let mut out = vec![0; 256];
    smp.emit(&mut Smp::new_unchecked(&mut out[..]));
    out
}

fn dr(path: &[u8]) -> Routing {
    Routing::Directed(DrPath::request(path).unwrap())
}

/// A directed-route Get, then a Set of the attribute `change` made of it, from H1.
fn dr_update(
    emu: &mut Emulator,
    path: &[u8],
    id: AttributeId,
    modifier: u32,
    change: impl FnOnce(&mut Attribute),
) {
    let got = sm_exchange(emu, &smp(&SmpRepr::get(id, modifier, 1, dr(path))), None).unwrap();
    let got = SmpRepr::parse(&Smp::new_checked(&got[..]).unwrap()).unwrap();
    let mut attribute = Attribute::parse(id, &got.data).unwrap();
    change(&mut attribute);
    let set = sm_exchange(
        emu,
        &smp(&SmpRepr::set(&attribute, modifier, 2, dr(path))),
        None,
    )
    .unwrap();
    let set = SmpRepr::parse(&Smp::new_checked(&set[..]).unwrap()).unwrap();
    assert_eq!(set.status, Status::OK, "{id:?} at {path:?} port {modifier}");
}

fn port_info(
    emu: &mut Emulator,
    path: &[u8],
    port: u32,
    change: impl FnOnce(&mut ibqos_mad::PortInfoRepr),
) {
    dr_update(emu, path, AttributeId::PortInfo, port, |a| match a {
        Attribute::PortInfo(p) => change(p),
        other => panic!("{other:?}"),
    });
}

/// Brings STAR up as an SM does, by directed route from H1: LIDs H1 1, S1 2, H2 port 1 3 and
/// port 2 4, every link Active, S1's LFT.
fn bring_up(emu: &mut Emulator) {
    for (path, lid) in [
        (&[][..], 1),
        (&[1][..], 2),
        (&[1, 2][..], 3),
        (&[1, 3][..], 4),
    ] {
        port_info(emu, path, 0, |p| p.lid = lid);
    }
    // Each link's ends: (path to the node, PortInfo modifier).
    let links: [[(&[u8], u32); 2]; 3] = [
        [(&[], 0), (&[1], 1)],
        [(&[1], 2), (&[1, 2], 0)],
        [(&[1], 3), (&[1, 3], 0)],
    ];
    for state in [PortState::Armed, PortState::Active] {
        for ends in links {
            for (path, port) in ends {
                port_info(emu, path, port, |p| p.port_state = state);
            }
        }
    }
    let mut lft = LinearForwardingTableRepr { ports: [0xff; 64] };
    lft.ports[1..=4].copy_from_slice(&[1, 0, 2, 3]);
    let lft = Attribute::LinearForwardingTable(lft);
    let set = sm_exchange(emu, &smp(&SmpRepr::set(&lft, 0, 3, dr(&[1]))), None).unwrap();
    assert_eq!(set[4..6], [0x80, 0x00]);
    dr_update(emu, &[1], AttributeId::SwitchInfo, 0, |a| match a {
        Attribute::SwitchInfo(s) => s.linear_fdb_top = 4,
        other => panic!("{other:?}"),
    });
}

#[test]
fn class_port_info_as_ibsim_answers_it() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let request = gmp(Method::Get, PerfAttributeId::ClassPortInfo, &[0xee; 72]);
    let ca = perf(&mut emu, port(&t, "H1", 1), None, &request).unwrap();
    // The request comes back with R set, GetResp, status 0, and ClassPortInfo in bytes 64-135.
    assert_eq!(ca[..8], [0x01, 0x04, 0x01, 0x81, 0x00, 0x00, 0x00, 0x00]);
    assert_eq!(ca[8..24], request[8..24]);
    #[rustfmt::skip]
    assert_eq!(ca[64..72], [
        0x01, 0x01,             // BaseVersion, ClassVersion
        0x12, 0x00,             // CapabilityMask: IsExtendedWidthSupported, PortXmitWait
        0x00, 0x00, 0x00, 0x12, // CapabilityMask2 0, RespTimeValue 18
    ]);
    assert!(
        ca[72..136].iter().all(|&b| b == 0),
        "no redirection, no traps"
    );
    assert_eq!(ca[136..], request[136..], "past the attribute, the request");

    let switch = perf(&mut emu, port(&t, "S1", 0), None, &request).unwrap();
    assert_eq!(switch[66..68], [0x13, 0x00], "switches add AllPortSelect");

    // ibsim takes no Set of it: 0x0008, and what it holds all the same.
    let set = gmp(Method::Set, PerfAttributeId::ClassPortInfo, &[]);
    let set = perf(&mut emu, port(&t, "H1", 1), None, &set).unwrap();
    assert_eq!((set[3], status(&set)), (0x81, Status(0x0008)));
    assert_eq!(set[64..72], ca[64..72]);
}

#[test]
fn directed_route_smps_count_on_every_link_both_ways() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let (h1, s1, s2) = (
        port(&t, "H1", 1),
        port(&t, "S1", 0).node,
        port(&t, "S2", 0).node,
    );
    // Out of H1, S1 port 3 into S2 port 3, and back.
    let node_info = SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[1, 3]));
    assert!(sm_exchange(&mut emu, &smp(&node_info), None).is_some());
    assert_eq!(traffic(&mut emu, h1.node, false, 1), (1, 1, 72, 72));
    assert_eq!(traffic(&mut emu, s1, true, 1), (1, 1, 72, 72));
    assert_eq!(traffic(&mut emu, s1, true, 3), (1, 1, 72, 72));
    assert_eq!(traffic(&mut emu, s2, true, 3), (1, 1, 72, 72));
    assert_eq!(
        traffic(&mut emu, s1, true, 4),
        (0, 0, 0, 0),
        "the parallel link"
    );
    assert_eq!(
        traffic(&mut emu, s1, true, 0),
        (0, 0, 0, 0),
        "port 0 has no link"
    );
    // PortSelect 0xFF: S1's ports summed.
    assert_eq!(traffic(&mut emu, s1, true, 0xff), (2, 2, 144, 144));
    // The extended counters count the same, apart.
    let ext = extended(&mut emu, PortRef::new(s1, 0), 3, None);
    assert_eq!(
        (
            ext.port_xmit_pkts,
            ext.port_rcv_pkts,
            ext.port_xmit_data,
            ext.port_rcv_data
        ),
        (1, 1, 72, 72)
    );
    assert_eq!(
        (ext.port_unicast_xmit_pkts, ext.port_multicast_rcv_pkts),
        (0, 0)
    );
    // A hop-0 SMP and the reads above crossed no link.
    assert!(
        sm_exchange(
            &mut emu,
            &smp(&SmpRepr::get(AttributeId::NodeInfo, 0, 2, dr(&[]))),
            None
        )
        .is_some()
    );
    assert_eq!(traffic(&mut emu, h1.node, false, 1), (1, 1, 72, 72));
}

#[test]
fn a_mad_lost_on_its_way_counts_where_it_was_lost() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let s1 = port(&t, "S1", 0);
    let lost = |emu: &mut Emulator, path: &[u8]| {
        let request = SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(path));
        assert!(sm_exchange(emu, &smp(&request), None).is_none(), "{path:?}");
    };
    // S1 port 7 has no link: S1 discards the SMP there.
    lost(&mut emu, &[1, 7]);
    // S1 has no port 9: a relay error of the port it came in at.
    lost(&mut emu, &[1, 9]);
    let at = |emu: &mut Emulator, p| port_counters(emu, s1, None, p, None).unwrap();
    assert_eq!(at(&mut emu, 7).port_xmit_discards, 1);
    assert_eq!(at(&mut emu, 1).port_rcv_switch_relay_errors, 1);
    // Both got as far as S1, and no further.
    assert_eq!(
        (
            at(&mut emu, 1).port_rcv_pkts,
            at(&mut emu, 1).port_xmit_pkts
        ),
        (2, 0)
    );
    let all = at(&mut emu, 0xff);
    assert_eq!(
        (all.port_xmit_discards, all.port_rcv_switch_relay_errors),
        (1, 1)
    );
}

#[test]
fn a_set_clears_the_counters_counter_select_names_and_answers_them_cleared() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let s1 = port(&t, "S1", 0);
    for _ in 0..3 {
        sm_exchange(
            &mut emu,
            &smp(&SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[1, 3]))),
            None,
        );
    }
    sm_exchange(
        &mut emu,
        &smp(&SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[1, 7]))),
        None,
    );
    // PortXmitPkts (bit 14) of port 3 only.
    let cleared = port_counters(&mut emu, s1, None, 3, Some(1 << 14)).unwrap();
    assert_eq!((cleared.port_xmit_pkts, cleared.port_rcv_pkts), (0, 3));
    assert_eq!(
        (cleared.port_xmit_data, cleared.counter_select),
        (216, 1 << 14)
    );
    // perfquery -R: every counter of CounterSelect, and XmitWait by CounterSelect2.
    let mut reset = gmp(
        Method::Set,
        PerfAttributeId::PortCounters,
        &select(0xff, 0xffff),
    );
    reset[64 + 18] = 0x01;
    let reset = perf(&mut emu, s1, None, &reset).unwrap();
    let reset = PortCountersRepr::parse(&PortCounters::new_checked(&reset[64..]).unwrap()).unwrap();
    assert_eq!((reset.port_select, reset.counter_select2), (0xff, 1));
    assert_eq!(
        (
            reset.port_rcv_pkts,
            reset.port_xmit_discards,
            reset.port_xmit_data
        ),
        (0, 0, 0)
    );
    for p in [1, 3, 7] {
        assert_eq!(
            port_counters(&mut emu, s1, None, p, None)
                .unwrap()
                .port_rcv_pkts,
            0
        );
    }
    // PortCountersExtended kept its own counts; its Set clears RcvPkts with bit 3.
    let ext = extended(&mut emu, s1, 3, Some(1 << 3));
    assert_eq!(
        (ext.port_xmit_pkts, ext.port_rcv_pkts, ext.port_rcv_data),
        (3, 0, 216)
    );
    let ext = extended(&mut emu, s1, 0xff, Some(0xff));
    assert_eq!((ext.port_xmit_pkts, ext.port_xmit_data), (0, 0));
}

#[test]
fn port_select_names_a_switch_port_or_all_of_them_and_only_the_arrival_port_of_a_ca() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let (s1, h1, h5) = (port(&t, "S1", 0), port(&t, "H1", 1), port(&t, "H5", 2));
    for p in [0, 5, 8, 0xff] {
        assert!(
            port_counters(&mut emu, s1, None, p, None).is_ok(),
            "S1 port {p}"
        );
    }
    assert_eq!(port_counters(&mut emu, s1, None, 9, None), Err(INVALID));
    assert_eq!(
        port_counters(&mut emu, h1, None, 1, None).map(|c| c.port_select),
        Ok(1)
    );
    for p in [0, 2, 0xff] {
        assert_eq!(
            port_counters(&mut emu, h1, None, p, None),
            Err(INVALID),
            "H1 port {p}"
        );
    }
    // A client at H5's second port asks that port's PMA.
    assert!(port_counters(&mut emu, h5, None, 2, None).is_ok());
    assert_eq!(port_counters(&mut emu, h5, None, 1, None), Err(INVALID));
    // On an error the request's data goes back as it came.
    let request = gmp(Method::Get, PerfAttributeId::PortCounters, &[0xaa; 44]);
    let response = perf(&mut emu, h1, None, &request).unwrap();
    assert_eq!(
        (status(&response), &response[64..]),
        (INVALID, &request[64..])
    );
}

#[test]
fn lid_routed_gmps_reach_the_port_that_owns_the_lid_and_count_their_way() {
    let (mut emu, t) = fabric(STAR);
    bring_up(&mut emu);
    let h1 = port(&t, "H1", 1);
    let (h2, s1) = (port(&t, "H2", 1).node, port(&t, "S1", 0).node);
    // H2's second port (LID 4) answers for itself, not for its first.
    assert_eq!(
        port_counters(&mut emu, h1, Some(4), 2, None).map(|c| c.port_select),
        Ok(2)
    );
    assert_eq!(port_counters(&mut emu, h1, Some(4), 1, None), Err(INVALID));
    let before = traffic(&mut emu, h2, false, 1);
    // The request is counted on its way in before the PMA reads, its response after: as in
    // ibsim, a Get sees its own arrival.
    let got = port_counters(&mut emu, h1, Some(3), 1, None).unwrap();
    assert_eq!(
        (got.port_rcv_pkts, got.port_xmit_pkts),
        (before.1 + 1, before.0)
    );
    assert_eq!(
        traffic(&mut emu, h2, false, 1),
        (before.0 + 1, before.1 + 1, before.2 + 72, before.3 + 72)
    );
    // The switch by its LID; the client's own LID and the permissive LID cross no link.
    assert!(port_counters(&mut emu, h1, Some(2), 3, None).is_ok());
    let own = traffic(&mut emu, h1.node, false, 1);
    port_counters(&mut emu, h1, Some(1), 1, None).unwrap();
    assert_eq!(traffic(&mut emu, h1.node, false, 1), own);
    // A LID S1 has no route for: lost, a relay error of the port it came in at.
    let request = gmp(Method::Get, PerfAttributeId::PortCounters, &select(1, 0));
    assert!(perf(&mut emu, h1, Some(9), &request).is_none());
    assert!(
        perf(&mut emu, h1, Some(0), &request).is_none(),
        "LID 0 goes nowhere"
    );
    let s1_port1 = port_counters(&mut emu, PortRef::new(s1, 0), None, 1, None).unwrap();
    assert_eq!(s1_port1.port_rcv_switch_relay_errors, 1);
}

#[test]
fn statuses_are_a_real_pmas_and_non_requests_are_dropped() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let h1 = port(&t, "H1", 1);
    let request = gmp(Method::Get, PerfAttributeId::PortCounters, &select(1, 0));
    let mut answer = |bytes: &[u8]| perf(&mut emu, h1, None, bytes).map(|r| status(&r));
    let with = |at: usize, value: u8| {
        let mut bytes = request.clone();
        bytes[at] = value;
        bytes
    };
    assert_eq!(answer(&request), Some(Status::OK));
    assert_eq!(answer(&with(2, 2)), Some(Status(0x0004)), "ClassVersion 2");
    assert_eq!(answer(&with(3, 0x03)), Some(Status(0x0008)), "Send");
    assert_eq!(answer(&with(3, 0x14)), Some(Status(0x0008)), "GetMulti");
    // PortSamplesControl and PortExtendedSpeedsCounters: attributes this PMA does not have.
    assert_eq!(answer(&with(17, 0x10)), Some(Status(0x000c)));
    assert_eq!(answer(&with(17, 0x1f)), Some(Status(0x000c)));
    // No answer: not a MAD, not PerfMgt, a response, TrapRepress, too short.
    assert_eq!(answer(&with(0, 2)), None);
    assert_eq!(answer(&with(1, 0x03)), None);
    assert_eq!(answer(&with(3, 0x81)), None);
    assert_eq!(answer(&with(3, 0x07)), None);
    assert_eq!(answer(&request[..255]), None);
    // Not from an external switch port, nor from a port that does not exist.
    assert!(perf(&mut emu, port(&t, "S1", 3), None, &request).is_none());
    assert!(perf(&mut emu, port(&t, "H1", 2), None, &request).is_none());
}

#[test]
fn the_optional_counters_keep_the_request_head_and_take_every_port_select() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let s1 = port(&t, "S1", 0);
    sm_exchange(
        &mut emu,
        &smp(&SmpRepr::get(AttributeId::NodeInfo, 0, 1, dr(&[1, 3]))),
        None,
    );
    let mut data = [0xff; 68];
    data[..4].copy_from_slice(&[0x5a, 0xff, 0xff, 0xff]);
    let request = gmp(Method::Get, PerfAttributeId::PortVlOpData, &data);
    let response = perf(&mut emu, s1, None, &request).unwrap();
    assert_eq!(status(&response), Status::OK);
    let view = PortVlOpData::new_checked(&response[64..]).unwrap();
    assert_eq!(
        (view.op_code(), view.port_select(), view.counter_select()),
        (0x5a, 0xff, 0xffff)
    );
    // Received on VL 15 at S1: the SMP from H1 at port 1, its response from S2 at port 3.
    assert!((0..15).all(|vl| view.data(vl) == 0));
    assert_eq!(view.data(15), 144);
    assert_eq!(response[64 + 68..], request[64 + 68..]);
    for attribute in (0x15..=0x1c).chain(0x30..=0x37) {
        let request = gmp(
            Method::Set,
            PerfAttributeId::from(attribute),
            &select(3, 0xffff),
        );
        let response = perf(&mut emu, s1, None, &request).unwrap();
        assert_eq!(status(&response), Status::OK, "{attribute:#x}");
        let bad = gmp(Method::Get, PerfAttributeId::from(attribute), &select(9, 0));
        assert_eq!(status(&perf(&mut emu, s1, None, &bad).unwrap()), INVALID);
    }
}

/// The unsigned field of `width` bits at bit `offset` of a response's data area, read at the
/// offsets libibmad's fields.c gives, independently of the layouts the PMA writes with.
fn field(response: &[u8], offset: usize, width: usize) -> u64 {
    let data = &response[64..];
    (offset..offset + width).fold(0, |value, bit| {
        value << 1 | u64::from(data[bit / 8] >> (7 - bit % 8) & 1)
    })
}

/// An optional attribute as a test reads it: its ID and name, the name of its counter
/// `index`, that counter's bit offset and width.
struct Row {
    id: u16,
    attribute: &'static str,
    counter: String,
    offset: usize,
    width: usize,
}

/// Each optional attribute as libibmad's fields.c lays it out: its ID, name, the name of its
/// first counter, and a row of `count` counters from bit 32, each `width` bits.
const ROWS: [(u16, &str, &str, usize, usize); 16] = [
    (
        0x15,
        "PortRcvErrorDetails",
        "PortLocalPhysicalErrors",
        6,
        16,
    ),
    (
        0x16,
        "PortXmitDiscardDetails",
        "PortInactiveDiscards",
        4,
        16,
    ),
    (0x17, "PortOpRcvCounters", "PortOpRcvPkts", 2, 32),
    (0x18, "PortFlowCtlCounters", "PortXmitFlowPkts", 2, 32),
    (0x19, "PortVLOpPackets", "PortVLOpPackets", 16, 16),
    (0x1a, "PortVLOpData", "PortVLOpData", 16, 32),
    (
        0x1b,
        "PortVLXmitFlowCtlUpdateErrors",
        "PortVLXmitFlowCtlUpdateErrors",
        16,
        2,
    ),
    (0x1c, "PortVLXmitWaitCounters", "PortVLXmitWait", 16, 16),
    (0x30, "SwPortVLCongestion", "SWPortVLCongestion", 16, 16),
    (0x31, "PortRcvConCtrl", "PortPktRcvFECN", 2, 32),
    (0x32, "PortSLRcvFECN", "PortSLRcvFECN", 16, 32),
    (0x33, "PortSLRcvBECN", "PortSLRcvBECN", 16, 32),
    (0x34, "PortXmitConCtrl", "PortXmitTimeCong", 1, 32),
    (0x35, "PortVLXmitTimeCong", "PortVLXmitTimeCong", 15, 32),
    (0x36, "PortXmitDataSL", "XmtDataSL", 16, 32),
    (0x37, "PortRcvDataSL", "RcvDataSL", 16, 32),
];

/// Counter `index` of every per-VL and per-SL row that has one; with `index` 0, the first
/// counter of the others too.
fn rows(index: usize) -> Vec<Row> {
    ROWS.iter()
        .filter(|&&(_, _, _, count, _)| index < count && (count >= 15 || index == 0))
        .map(|&(id, ..)| row(id, index))
        .collect()
}

/// Counter `index` of attribute `id`. A row of named counters is asked for by its first name
/// only, so `index` 0; a per-VL or per-SL row's names end in their index.
fn row(id: u16, index: usize) -> Row {
    let &(id, attribute, first, count, width) = ROWS.iter().find(|r| r.0 == id).unwrap();
    Row {
        id,
        attribute,
        counter: if count >= 15 {
            format!("{first}{index}")
        } else {
            first.to_owned()
        },
        offset: 32 + index * width,
        width,
    }
}

/// Sets `row`'s counter of S1 port 2 to `value`.
fn preset(emu: &mut Emulator, t: &Topology, row: &Row, value: u64) {
    let counter = CounterId::named(row.attribute, &row.counter).unwrap();
    emu.preset_counters(&CounterPresets {
        presets: vec![(port(t, "S1", 2), counter, value)],
    });
}

/// Counter `row` of S1 port `port_select`, Get or Set with `counter_select`, from S1 itself.
fn read_row(emu: &mut Emulator, t: &Topology, row: &Row, port_select: u8, set: Option<u16>) -> u64 {
    let (method, clear) = set.map_or((Method::Get, 0), |c| (Method::Set, c));
    let request = gmp(
        method,
        PerfAttributeId::from(row.id),
        &select(port_select, clear),
    );
    let response = perf(emu, port(t, "S1", 0), None, &request).unwrap();
    assert_eq!(status(&response), Status::OK, "{}", row.attribute);
    field(&response, row.offset, row.width)
}

#[test]
fn every_optional_counter_holds_a_preset_stops_at_its_width_and_clears_alone() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    for index in [0, 1, 14, 15] {
        for row in rows(index) {
            let max = (1u64 << row.width) - 1;
            let what = format!("{} {}", row.attribute, row.counter);
            preset(&mut emu, &t, &row, max - 1);
            assert_eq!(read_row(&mut emu, &t, &row, 2, None), max - 1, "{what}");
            // Too large a value stops at the counter's maximum.
            preset(&mut emu, &t, &row, u64::MAX);
            assert_eq!(read_row(&mut emu, &t, &row, 2, None), max, "{what}");
            // A Set of every other counter leaves it; its own bit clears it, in the answer.
            let others = !(1u16 << index);
            assert_eq!(read_row(&mut emu, &t, &row, 2, Some(others)), max, "{what}");
            assert_eq!(
                read_row(&mut emu, &t, &row, 2, Some(1 << index)),
                0,
                "{what}"
            );
            assert_eq!(read_row(&mut emu, &t, &row, 2, None), 0, "{what}");
        }
    }
}

#[test]
fn all_port_select_sums_a_switchs_ports_and_stops_at_the_width() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let sl3 = CounterId::named("PortXmitDataSL", "XmtDataSL3").unwrap();
    let wait7 = CounterId::named("PortVLXmitWaitCounters", "PortVLXmitWait7").unwrap();
    let presets = |values: [u64; 2]| CounterPresets {
        presets: vec![
            (port(&t, "S1", 1), sl3, values[0]),
            (port(&t, "S1", 5), sl3, values[1]),
            (port(&t, "S1", 1), wait7, values[0] & 0xffff),
            (port(&t, "S1", 5), wait7, values[1] & 0xffff),
        ],
    };
    let sl3_row = &row(0x36, 3);
    let wait7_row = &row(0x1c, 7);
    assert_eq!(
        (sl3_row.attribute, wait7_row.attribute),
        ("PortXmitDataSL", "PortVLXmitWaitCounters")
    );
    emu.preset_counters(&presets([10, 20]));
    assert_eq!(read_row(&mut emu, &t, sl3_row, 0xff, None), 30);
    assert_eq!(read_row(&mut emu, &t, wait7_row, 0xff, None), 30);
    emu.preset_counters(&presets([u64::from(u32::MAX) - 1, 0xfffe]));
    assert_eq!(
        read_row(&mut emu, &t, sl3_row, 0xff, None),
        u64::from(u32::MAX)
    );
    assert_eq!(read_row(&mut emu, &t, wait7_row, 0xff, None), 0xffff);
    // A Set with PortSelect 0xFF clears the counter at every port.
    assert_eq!(read_row(&mut emu, &t, sl3_row, 0xff, Some(1 << 3)), 0);
    assert_eq!(read_row(&mut emu, &t, sl3_row, 5, None), 0);
}

#[test]
fn switch_port_vl_congestion_is_a_switchs_alone() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let request = gmp(
        Method::Get,
        PerfAttributeId::SwPortVlCongestion,
        &select(1, 0),
    );
    let ca = perf(&mut emu, port(&t, "H1", 1), None, &request).unwrap();
    assert_eq!(status(&ca), Status(0x000c));
    let switch = perf(&mut emu, port(&t, "S1", 0), None, &request).unwrap();
    assert_eq!(status(&switch), Status::OK);
}

#[test]
fn a_gmp_counts_on_the_vl_the_sl2vl_table_maps_sl_0_to_and_an_smp_on_vl_15() {
    let (mut emu, t) = fabric(STAR);
    bring_up(&mut emu);
    // H1 sends SL 0 on VL 2; S1 keeps the power-on table, SL 0 on VL 0.
    dr_update(
        &mut emu,
        &[],
        AttributeId::SlToVlMappingTable,
        0,
        |a| match a {
            Attribute::SlToVlMappingTable(table) => table.vls[0] = 2,
            other => panic!("{other:?}"),
        },
    );
    let h1 = port(&t, "H1", 1);
    let vl_offset = |vl: usize| row(0x19, vl).offset;
    // S1 (LID 2) counts the request itself, received at port 1 on VL 2, before it answers.
    let request = gmp(Method::Get, PerfAttributeId::PortVlOpPackets, &select(1, 0));
    let response = perf(&mut emu, h1, Some(2), &request).unwrap();
    let received = |vl: usize| field(&response, vl_offset(vl), 16);
    assert_eq!((received(2), received(0)), (1, 0));
    assert!(received(15) > 0, "the SMPs of the bring-up");
    // The response came back to H1 by S1's table: VL 0.
    let own = gmp(Method::Get, PerfAttributeId::PortVlOpPackets, &select(1, 0));
    let own = perf(&mut emu, h1, None, &own).unwrap();
    assert_eq!(field(&own, vl_offset(0), 16), 1);
    assert_eq!(field(&own, vl_offset(2), 16), 0);
    // Both ways on SL 0: 72 dwords each.
    let sent = gmp(Method::Get, PerfAttributeId::PortXmitDataSl, &select(1, 0));
    let sent = perf(&mut emu, h1, None, &sent).unwrap();
    let sl0 = &row(0x36, 0);
    assert!(field(&sent, sl0.offset, 32) > 72, "the SMPs and the GMP");
    assert_eq!(field(&sent, row(0x36, 1).offset, 32), 0);
}

#[test]
fn traffic_from_the_simulator_reads_back_in_every_attribute_it_belongs_to() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let h2 = port(&t, "H2", 1);
    let lane = |sl: u8, vl: u8, words: u64, packets: u64| LaneTraffic {
        sl: Sl::new(sl).unwrap(),
        vl: Vl::new(vl).unwrap(),
        words,
        packets,
    };
    let mut step = PortTraffic {
        sent: vec![lane(4, 1, 4000, 16)],
        received: vec![lane(5, 2, 2000, 8)],
        ..PortTraffic::default()
    };
    step.xmit_wait[1] = 300;
    step.becn[4] = 2;
    step.discards.sw_hoq_lifetime_limit = 1;
    emu.add_traffic(h2, &step).unwrap();
    emu.add_traffic(h2, &step).unwrap();
    let read = |emu: &mut Emulator, id: PerfAttributeId| {
        perf(emu, h2, None, &gmp(Method::Get, id, &select(1, 0))).unwrap()
    };
    let sent = read(&mut emu, PerfAttributeId::PortXmitDataSl);
    assert_eq!(field(&sent, row(0x36, 4).offset, 32), 8000);
    let received = read(&mut emu, PerfAttributeId::PortRcvDataSl);
    assert_eq!(field(&received, row(0x37, 5).offset, 32), 4000);
    let vl_packets = read(&mut emu, PerfAttributeId::PortVlOpPackets);
    assert_eq!(field(&vl_packets, row(0x19, 2).offset, 16), 16);
    let wait = read(&mut emu, PerfAttributeId::PortVlXmitWaitCounters);
    assert_eq!(field(&wait, row(0x1c, 1).offset, 16), 600);
    let becn = read(&mut emu, PerfAttributeId::PortSlRcvBecn);
    assert_eq!(field(&becn, row(0x33, 4).offset, 32), 4);
    let discards = read(&mut emu, PerfAttributeId::PortXmitDiscardDetails);
    assert_eq!(field(&discards, 32 + 3 * 16, 16), 2);
    let totals = port_counters(&mut emu, h2, None, 1, None).unwrap();
    assert_eq!(
        (
            totals.port_xmit_data,
            totals.port_xmit_pkts,
            totals.port_xmit_wait
        ),
        (8000, 32, 600)
    );
    assert_eq!((totals.port_rcv_data, totals.port_xmit_discards), (4000, 2));
    let ext = extended(&mut emu, h2, 1, None);
    assert_eq!(
        (ext.port_unicast_xmit_pkts, ext.port_unicast_rcv_pkts),
        (32, 16)
    );
    assert_eq!(
        emu.add_traffic(port(&t, "H2", 3), &step),
        Err(UnknownPort(port(&t, "H2", 3)))
    );
}

#[test]
fn a_link_that_goes_down_counts_in_link_downed_at_both_ends() {
    let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
    let (s1, s2) = (port(&t, "S1", 0), port(&t, "S2", 0));
    emu.schedule(&FaultSchedule {
        flaps: vec![Flap {
            port: port(&t, "S1", 3),
            down_ns: 1_000,
            up_ns: Some(2_000),
        }],
        dead: vec![],
        ..FaultSchedule::default()
    });
    emu.advance_to(5_000);
    let downed = |emu: &mut Emulator, origin, p| {
        port_counters(emu, origin, None, p, None)
            .unwrap()
            .link_downed_counter
    };
    assert_eq!((downed(&mut emu, s1, 3), downed(&mut emu, s2, 3)), (1, 1));
    assert_eq!(downed(&mut emu, s1, 4), 0);
    // The SM disables S1 port 4: that link goes down too, once however often it is disabled.
    for _ in 0..2 {
        port_info(&mut emu, &[1], 4, |p| {
            p.port_phys_state = PhysPortState::Disabled
        });
    }
    assert_eq!((downed(&mut emu, s1, 4), downed(&mut emu, s2, 4)), (1, 1));
    // Bit 2 clears it.
    let cleared = port_counters(&mut emu, s1, None, 3, Some(1 << 2)).unwrap();
    assert_eq!(cleared.link_downed_counter, 0);
}

proptest! {
    /// Any bytes, framed as a PerfMgt request three times in four, from any port to any LID,
    /// in sequence: an answer with the request's TransactionID, or none, never a panic.
    #[test]
    fn any_gmp_never_panics(
        sends in proptest::collection::vec(
            (
                proptest::collection::vec(any::<u8>(), 0..300),
                any::<bool>(),
                0u32..4,
                0u8..10,
                proptest::option::of(0u16..12),
            ),
            1..8,
        ),
    ) {
        let (mut emu, t) = fabric(builtin_topology("two-switch").unwrap());
        let nodes: Vec<NodeId> = t.nodes().map(|(id, _)| id).collect();
        for (mut bytes, framed, node, port, dlid) in sends {
            if framed {
                bytes.resize(256, 0);
                bytes[..3].copy_from_slice(&[1, 0x04, 1]);
                bytes[3] &= 0x03;
                bytes[16] = 0;
                // Attributes 0x00-0x1F and 0x30-0x3F: every one the PMA keeps, and around.
                let attribute = bytes[17] % 0x30;
                bytes[17] = if attribute < 0x20 { attribute } else { attribute + 0x10 };
            }
            let origin = PortRef::new(nodes[node as usize % nodes.len()], port);
            if let Some(response) = perf(&mut emu, origin, dlid, &bytes) {
                prop_assert_eq!(response.len(), 256);
                prop_assert_eq!(response[3], 0x81);
                prop_assert_eq!(&response[8..24], &bytes[8..24]);
                let code = u16::from_be_bytes([response[4], response[5]]);
                prop_assert!([0, 0x04, 0x08, 0x0c, 0x1c].contains(&code), "status {code:#x}");
            }
        }
    }
}
