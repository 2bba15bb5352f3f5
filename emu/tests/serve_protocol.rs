//! The ibsim-protocol server: control requests, SMP answers, forwarding to the SM client and
//! back, drops with status 110, and malformed datagrams counted, never a panic. The last test
//! runs the real sockets.

use std::os::unix::net::UnixDatagram;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ibqos_emu::serve::{Server, Switchboard, abstract_addr};
use ibqos_emu::{Latency, Models, builtin_topology};
use ibqos_fabric::PortRef;
use ibqos_fabric::netfile::parse_net_str;
use ibqos_mad::ibsim::{
    CTL_LEN, CtlType, DROPPED_STATUS, HostU32, MAD_LEN, MAGIC, REQUEST_LEN, SimClientInfo, SimCtl,
    SimRequest,
};
use ibqos_mad::{Attribute, AttributeId, CapabilityMask, DrPath, Method, Routing, Smp, SmpRepr};
use proptest::prelude::*;

fn board() -> Switchboard {
    let text = builtin_topology("two-switch").unwrap();
    Switchboard::new(parse_net_str(text).unwrap().topology, Some("H1")).unwrap()
}

fn ctl(client: u32, kind: CtlType, data: &[u8]) -> [u8; CTL_LEN] {
    let mut msg = [0u8; CTL_LEN];
    let mut ctl = SimCtl::new_unchecked(&mut msg[..]);
    ctl.set_magic(HostU32(MAGIC));
    ctl.set_client_id(HostU32(client));
    ctl.set_ctl_type(kind);
    ctl.set_len(HostU32(data.len() as u32));
    ctl.data_mut()[..data.len()].copy_from_slice(data);
    msg
}

/// CONNECT's data.
fn client_info(pid: u32, issm: bool, node: &str) -> [u8; 44] {
    let mut info = [0u8; 44];
    let mut client = SimClientInfo::new_unchecked(&mut info[..]);
    client.set_id(HostU32(pid));
    client.set_issm(HostU32(issm.into()));
    client.set_node_id(node);
    info
}

/// The client number CONNECT gives, `None` if it is refused.
fn connect(board: &mut Switchboard, pid: u32, issm: bool, node: &str) -> Option<u32> {
    let reply = board
        .control(&ctl(0, CtlType::Connect, &client_info(pid, issm, node)))
        .unwrap();
    let reply = SimCtl::new_unchecked(&reply[..]);
    (reply.ctl_type() != CtlType::Error).then(|| SimClientInfo::new_unchecked(reply.data()).id().0)
}

/// A datagram with `mad` to `dlid` (0xFFFF: directed route), slid left for ibsim to fill in.
fn datagram(mad: &[u8], dlid: u16) -> [u8; REQUEST_LEN] {
    let mut dgram = [0u8; REQUEST_LEN];
    let mut request = SimRequest::new_unchecked(&mut dgram[..]);
    request.set_dlid(dlid);
    request.set_slid(if dlid == DrPath::PERMISSIVE_LID {
        dlid
    } else {
        0
    });
    request.set_length(MAD_LEN as u64);
    request.mad_mut()[..mad.len()].copy_from_slice(mad);
    dgram
}

fn request(smp: &SmpRepr, dlid: u16) -> [u8; REQUEST_LEN] {
    let mut mad = [0u8; MAD_LEN];
    smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
    datagram(&mad, dlid)
}

fn dr_get(attribute: AttributeId, path: &[u8], tid: u64) -> SmpRepr {
    SmpRepr::get(
        attribute,
        0,
        tid,
        Routing::Directed(DrPath::request(path).unwrap()),
    )
}

fn status(dgram: &[u8; REQUEST_LEN]) -> u32 {
    SimRequest::new_unchecked(&dgram[..]).status()
}

fn smp(dgram: &[u8; REQUEST_LEN]) -> SmpRepr {
    SmpRepr::parse(&Smp::new_checked(SimRequest::new_unchecked(&dgram[..]).mad()).unwrap()).unwrap()
}

#[test]
fn connect_attaches_at_the_node_named_as_ibsim_does() {
    let mut b = board();
    assert_eq!(connect(&mut b, 100, false, "H1"), Some(0));
    assert_eq!(
        connect(&mut b, 101, false, ""),
        Some(1),
        "empty: default node"
    );
    assert_eq!(connect(&mut b, 102, false, "host-one HCA-1"), Some(2));
    assert_eq!(connect(&mut b, 103, false, "H3"), Some(3), "another CA");
    assert_eq!(connect(&mut b, 113, false, "S2"), Some(4), "a switch");
    assert_eq!(connect(&mut b, 114, false, "nowhere"), None);
    let t = b.emulator().topology().clone();
    let at = |name: &str, port| Some(PortRef::new(t.node_by_name(name).unwrap(), port));
    assert_eq!(b.client_port(1), at("H1", 1));
    assert_eq!(b.client_port(3), at("H3", 1));
    assert_eq!(b.client_port(4), at("S2", 0), "switch port 0");
    // An SM client makes its port advertise IsSM; one per node.
    let is_sm = |b: &Switchboard, port: Option<PortRef>| {
        b.emulator()
            .port_info(port.unwrap())
            .unwrap()
            .capability_mask
            .0
            & CapabilityMask::IS_SM.0
            != 0
    };
    assert!(!is_sm(&b, at("H1", 1)), "no SM yet");
    assert_eq!(connect(&mut b, 104, true, "H1"), Some(5));
    assert!(is_sm(&b, at("H1", 1)));
    assert_eq!(connect(&mut b, 105, true, "H1"), None, "a second SM");
    assert_eq!(connect(&mut b, 106, true, "H3"), Some(6), "an SM elsewhere");
    for pid in 107..110 {
        connect(&mut b, pid, false, "H1");
    }
    assert_eq!(
        connect(&mut b, 999, false, "H1"),
        None,
        "all 10 slots taken"
    );
    assert_eq!(b.client_pid(5), Some(104));
    b.control(&ctl(5, CtlType::Disconnect, &[])).unwrap();
    assert_eq!(b.client_pid(5), None, "DISCONNECT frees the slot");
    assert!(!is_sm(&b, at("H1", 1)), "and its port is no SM's any more");
}

/// An SM client elsewhere receives the SMInfo sent to its port; the SMAs answer after the
/// fabric's latency, not at once.
#[test]
fn clients_at_other_ports_send_from_there_and_answers_wait_for_the_latency_model() {
    let mut b = board();
    let diag = connect(&mut b, 1, false, "H1").unwrap() as usize;
    let sm = connect(&mut b, 2, true, "H3").unwrap() as usize;
    b.emulator_mut().set_models(Models {
        latency: Latency {
            wire_ns: 100,
            switch_sma_ns: 20_000,
            ca_sma_ns: 2_000,
        },
        ..Models::default()
    });
    // From H3, hop 0 is H3 itself, answered by its own SMA: 2 us.
    let answer = b
        .request(
            sm,
            &request(&dr_get(AttributeId::NodeInfo, &[], 1), 0xffff),
            1_000,
        )
        .unwrap();
    let Ok(Attribute::NodeInfo(info)) =
        Attribute::parse(AttributeId::NodeInfo, &smp(&answer.datagram).data)
    else {
        panic!()
    };
    let t = b.emulator().topology();
    assert_eq!(
        info.node_guid,
        t.node(t.node_by_name("H3").unwrap()).unwrap().guid
    );
    assert_eq!(answer.at_ns, 1_000 + 2_000);
    // Two hops to S1, a switch: 4 links and 20 us.
    let answer = b
        .request(
            sm,
            &request(&dr_get(AttributeId::NodeInfo, &[1, 3], 2), 0xffff),
            5_000,
        )
        .unwrap();
    assert_eq!(answer.at_ns, 5_000 + 4 * 100 + 20_000);
    // SMInfo from H1 along H1-S1-S2-H3 reaches the SM client at H3, at once.
    let fwd = b
        .request(
            diag,
            &request(&dr_get(AttributeId::SmInfo, &[1, 3, 1], 3), 0xffff),
            9_000,
        )
        .unwrap();
    assert_eq!((fwd.client, fwd.at_ns), (sm, 9_000));
}

#[test]
fn control_queries_answer_in_ibsims_layouts() {
    let mut b = board();
    connect(&mut b, 7, false, "H1").unwrap();
    let data = |b: &mut Switchboard, kind: CtlType, arg: &[u8]| {
        let reply = b.control(&ctl(0, kind, arg)).unwrap();
        let reply = SimCtl::new_unchecked(&reply[..]);
        assert_eq!(reply.ctl_type(), kind);
        reply.data().to_vec()
    };
    let node_info = data(&mut b, CtlType::GetNodeInfo, &[]);
    let Ok(Attribute::NodeInfo(info)) = Attribute::parse(AttributeId::NodeInfo, &node_info) else {
        panic!("NodeInfo {node_info:?}")
    };
    assert_eq!(info.node_guid, 0x0002_c900_0010_0000);
    let guid = data(&mut b, CtlType::GetGuid, &[]);
    assert_eq!(
        u64::from_ne_bytes(guid[0..8].try_into().unwrap()),
        0x0002_c900_0010_0000
    );
    let port_info = data(&mut b, CtlType::GetPortInfo, &[0]);
    assert_eq!(port_info[32] & 0x0f, 2, "H1[1] is INIT before an SM runs");
    let vendor = data(&mut b, CtlType::GetVendor, &[]);
    assert_eq!(u64::from_ne_bytes(vendor[16..24].try_into().unwrap()), 1);
    let pkeys = data(&mut b, CtlType::GetPkeys, &[]);
    assert_eq!(&pkeys[0..2], &[0xff, 0xff], "default P_Key first");
    assert_eq!(b.stats().malformed, 0);
}

#[test]
fn smps_are_answered_and_sminfo_goes_to_the_sm_client_and_back() {
    let mut b = board();
    let sm = connect(&mut b, 1, true, "H1").unwrap() as usize;
    let diag = connect(&mut b, 2, false, "H1").unwrap() as usize;

    let answer = b
        .request(
            diag,
            &request(&dr_get(AttributeId::NodeInfo, &[1], 9), 0xffff),
            0,
        )
        .unwrap();
    assert_eq!((answer.client, status(&answer.datagram)), (diag, 0));
    let response = smp(&answer.datagram);
    assert_eq!(response.method, Method::GetResp);

    // SMInfo to the SM's own port (hop 0) reaches the SM client, TID[63:48] = requester.
    let fwd = b
        .request(
            diag,
            &request(&dr_get(AttributeId::SmInfo, &[], 0x1234), 0xffff),
            0,
        )
        .unwrap();
    assert_eq!(fwd.client, sm);
    assert_eq!(smp(&fwd.datagram).transaction_id >> 48, diag as u64);
    let mut reply = smp(&fwd.datagram);
    reply.method = Method::GetResp;
    let back = b.request(sm, &request(&reply, 0xffff), 0).unwrap();
    assert_eq!(back.client, diag);
    assert_eq!(smp(&back.datagram).transaction_id & 0xffff, 0x1234);

    // SMInfo one hop away: no SM client there, so back to the sender with 110.
    let lost = b
        .request(
            diag,
            &request(&dr_get(AttributeId::SmInfo, &[1], 5), 0xffff),
            0,
        )
        .unwrap();
    assert_eq!(
        (lost.client, status(&lost.datagram)),
        (diag, DROPPED_STATUS)
    );
    // A directed route into nowhere: 110 as well.
    let lost = b
        .request(
            diag,
            &request(&dr_get(AttributeId::NodeInfo, &[1, 7], 6), 0xffff),
            0,
        )
        .unwrap();
    assert_eq!(status(&lost.datagram), DROPPED_STATUS);
    let s = b.stats();
    assert_eq!((s.mads, s.answered, s.forwarded, s.dropped), (5, 1, 2, 2));
}

/// PerfMgt GMPs (what perfquery sends) are answered by the fabric's PMAs, as by ibsim's, and
/// never forwarded to an SM client; one the fabric cannot route comes back with 110.
#[test]
fn perf_mgt_gmps_are_answered_by_the_fabric() {
    let mut b = board();
    let sm = connect(&mut b, 1, true, "H1").unwrap() as usize;
    let diag = connect(&mut b, 2, false, "S1").unwrap() as usize;
    let gmp = |dlid: u16, attribute: u8| {
        let mut mad = [0u8; MAD_LEN];
        mad[0..4].copy_from_slice(&[1, 0x04, 1, 0x01]);
        mad[8..16].copy_from_slice(&7u64.to_be_bytes());
        mad[17] = attribute;
        datagram(&mad, dlid)
    };
    // ClassPortInfo of the client's own node, a switch: AllPortSelect.
    let answer = b.request(diag, &gmp(0xffff, 0x01), 0).unwrap();
    assert_eq!((answer.client, status(&answer.datagram)), (diag, 0));
    let mad = &answer.datagram[32..];
    assert_eq!(
        (mad[3], &mad[4..6], &mad[66..68]),
        (0x81, &[0, 0][..], &[0x13, 0][..])
    );
    // From the SM's port, PortCounters of H1 port 1.
    let mut counters = gmp(0xffff, 0x12);
    counters[32 + 65] = 1;
    let answer = b.request(sm, &counters, 0).unwrap();
    assert_eq!((answer.client, status(&answer.datagram)), (sm, 0));
    // No LIDs yet: nowhere to go.
    let lost = b.request(diag, &gmp(5, 0x12), 0).unwrap();
    assert_eq!(
        (lost.client, status(&lost.datagram)),
        (diag, DROPPED_STATUS)
    );
    let s = b.stats();
    assert_eq!((s.answered, s.forwarded, s.dropped), (2, 0, 1));
}

#[test]
fn malformed_datagrams_are_counted_and_dropped() {
    let mut b = board();
    let client = connect(&mut b, 1, false, "H1").unwrap() as usize;
    assert!(b.control(&[0u8; 79]).is_none());
    let mut bad_magic = ctl(0, CtlType::GetNodeInfo, &[]);
    bad_magic[0] = 0;
    assert!(b.control(&bad_magic).is_none());
    assert!(
        b.control(&ctl(10, CtlType::GetNodeInfo, &[])).is_none(),
        "client 10 does not exist"
    );
    assert!(b.request(client, &[0u8; 287], 0).is_none());
    assert!(b.request(client, &[0u8; 289], 0).is_none());
    assert!(
        b.request(5, &[0u8; REQUEST_LEN], 0).is_none(),
        "unconnected"
    );
    assert_eq!(b.stats().malformed, 6);
}

proptest! {
    #[test]
    fn any_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400), client in 0usize..12) {
        let mut b = board();
        connect(&mut b, 1, true, "H1");
        let _ = b.control(&bytes);
        let _ = b.request(client, &bytes, 0);
        let mut sized = [0u8; REQUEST_LEN];
        for (d, s) in sized.iter_mut().zip(&bytes) {
            *d = *s;
        }
        let _ = b.request(0, &sized, 0);
    }
}

/// A raw client as libumad2sim is one: ctl<pid> and in<pid>, CONNECT, then one DR NodeInfo.
#[test]
fn sockets_carry_the_protocol() {
    let sockname = format!("ibqos-serve-test-{}", std::process::id());
    let mut server = Server::bind(board(), &sockname).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        server.run(&flag, &mut |_| {}).unwrap();
        server.switchboard().stats()
    });
    let pid: u32 = 4242;
    let addr = |name: String| abstract_addr(&name).unwrap();
    let ctl_sock = UnixDatagram::bind_addr(&addr(format!("{sockname}:ctl{pid}"))).unwrap();
    ctl_sock
        .connect_addr(&addr(format!("{sockname}:ctl")))
        .unwrap();
    ctl_sock
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let data = UnixDatagram::bind_addr(&addr(format!("{sockname}:in{pid}"))).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();

    ctl_sock.send(&[1, 2, 3]).unwrap();
    let info = client_info(pid, false, "H1");
    ctl_sock.send(&ctl(0, CtlType::Connect, &info)).unwrap();
    let mut reply = [0u8; CTL_LEN];
    assert_eq!(ctl_sock.recv(&mut reply).unwrap(), CTL_LEN);
    let client = SimClientInfo::new_unchecked(SimCtl::new_unchecked(&reply[..]).data())
        .id()
        .0;
    data.connect_addr(&addr(format!("{sockname}:out{client}")))
        .unwrap();
    data.send(&[0u8; 12]).unwrap();
    data.send(&request(&dr_get(AttributeId::NodeInfo, &[1], 77), 0xffff))
        .unwrap();
    let mut got = [0u8; REQUEST_LEN];
    assert_eq!(data.recv(&mut got).unwrap(), REQUEST_LEN);
    assert_eq!(status(&got), 0);
    assert_eq!(smp(&got).transaction_id, 77);

    stop.store(true, Ordering::Relaxed);
    let stats = thread.join().unwrap();
    assert_eq!((stats.answered, stats.malformed), (1, 2));
}
