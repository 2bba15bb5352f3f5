//! The emulated fabric's performance management agents, as ibsim's answer `perfquery`:
//! ClassPortInfo, PortCounters and PortCountersExtended Get and Set, PortSelect, the counting of
//! every MAD on every link it crosses (in ibsim's order), losses, LinkDownedCounter, the statuses
//! of a real PMA, GMPs routed by LID to the port that owns it, and malformed input.

mod support;

use ibqos_emu::{Emulator, FaultSchedule, Flap, builtin_topology};
use ibqos_fabric::netfile::parse_net_str;
use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_mad::{
    Attribute, AttributeId, DrPath, LinearForwardingTableRepr, Method, MgmtClass, PerfAttributeId,
    PerfMgtMad, PhysPortState, PortCounters, PortCountersExtended, PortCountersExtendedRepr,
    PortCountersRepr, PortState, PortVlOpData, Routing, Smp, SmpRepr, Status,
};
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
    // PortSamplesControl and PortRcvDataSL: attributes this PMA does not have.
    assert_eq!(answer(&with(17, 0x10)), Some(Status(0x000c)));
    assert_eq!(answer(&with(17, 0x37)), Some(Status(0x000c)));
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
fn the_optional_counters_read_zero_whatever_the_request_holds() {
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
    assert!((0..16).all(|vl| view.data(vl) == 0));
    assert_eq!(response[64 + 68..], request[64 + 68..]);
    for attribute in 0x15..=0x1c {
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
                bytes[17] %= 0x20;
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
