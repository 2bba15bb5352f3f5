//! Services and event subscriptions through the manager, on the built-in two-switch fabric
//! emulated in virtual time: a subscriber of our own (a host on a UD QP other than 1, as
//! srp_daemon subscribes) gets Reports of the traps the fabric raises and of ports leaving
//! the subnet, each until it answers with a ReportResp.

use std::time::Duration;

use ibqos_emu::{Emulator, FaultSchedule, Flap, attach_port, load_topology};
use ibqos_exchange::{Address, OutgoingMad, Peer};
use ibqos_fabric::PortRef;
use ibqos_mad::sa::{
    InformInfoRepr, Record, SaAttributeId, SaMad, SaNoticeRepr, ServiceRecordRepr,
};
use ibqos_mad::{Gid, Method, MgmtClass, Status};
use ibqos_sm::manager::{Event, Manager, Run};
use ibqos_transport::driver::drive;
use ibqos_transport::emulated::EmulatedTransport;
use ibqos_transport::{Incoming, LocalPort, Outgoing, Transport, TransportError};

mod common;
use common::{EmulatedSm, request, settings};

const CONFIG: &str = "examples/opensm-qos.conf";

fn two_switch_up() -> EmulatedSm {
    let topology = load_topology("two-switch").unwrap().topology;
    let attach = attach_port(&topology, None).unwrap();
    let transport = EmulatedTransport::virtual_time(Emulator::new(topology).unwrap(), attach);
    let mut sm = EmulatedSm::new(transport, Run::Daemon, &settings(CONFIG));
    sm.sweep_done();
    sm
}

/// An SA request with transaction ID `tid` and `data` as its template.
fn sa_mad(method: Method, attribute: SaAttributeId, mask: u64, tid: u64, data: &[u8]) -> Vec<u8> {
    let mut mad = request(method, attribute, mask, 0, |template| {
        template[..data.len()].copy_from_slice(data)
    });
    SaMad::new_unchecked(&mut mad[..])
        .header_mut()
        .set_transaction_id(tid);
    mad
}

/// The manager's answer to `mad` from `from` at virtual time `at_ns` from now.
fn ask(sm: &mut EmulatedSm, mad: &[u8], from: Peer, later: Duration) -> OutgoingMad {
    let now = sm.transport.now() + later;
    sm.manager.on_mad(now, mad, from);
    let answer = sm.manager.poll_transmit(now).expect("an answer");
    assert_eq!(answer.address, Address::Peer(from));
    answer
}

fn host(sm: &EmulatedSm, description: &str, qp: u32) -> (Peer, u64) {
    let sweep = sm.manager.last_sweep().unwrap();
    let node = sweep
        .subnet()
        .nodes
        .values()
        .find(|n| n.description.starts_with(description))
        .unwrap();
    let port = node.ports.values().next().unwrap();
    let peer = Peer {
        lid: port.lid,
        qp,
        pkey_index: 0,
    };
    (peer, port.guid)
}

fn status(answer: &OutgoingMad) -> Status {
    SaMad::new_checked(&answer.mad[..])
        .unwrap()
        .header()
        .status()
}

#[test]
fn a_service_is_registered_found_deleted_and_its_lease_ends() {
    let mut sm = two_switch_up();
    let (h1, guid) = host(&sm, "host-one", 1);
    let mut service = ServiceRecordRepr::parse_bytes(&[0u8; 176]).unwrap();
    service.id = 0x1000_0000_0000_0042;
    service.gid = Gid::new(0xfe80_0000_0000_0000, guid);
    service.lease = 2;
    service.key = [7; 16];
    service.name[..9].copy_from_slice(b"ibqos.svc");
    let mut bytes = [0u8; 176];
    service.emit_bytes(&mut bytes);
    // ID | GID | LEASE | KEY | NAME.
    let register = sa_mad(Method::Set, SaAttributeId::ServiceRecord, 0x73, 1, &bytes);
    let answer = ask(&mut sm, &register, h1, Duration::ZERO);
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(
        (view.header().method(), view.header().status()),
        (Method::GetResp, Status::OK)
    );
    let stored = ServiceRecordRepr::parse_bytes(view.data()).unwrap();
    assert_eq!(
        (stored.id, stored.p_key, stored.lease),
        (service.id, 0xffff, 2)
    );
    // By name, untrusted: found, its key hidden.
    let by_name = sa_mad(
        Method::GetTable,
        SaAttributeId::ServiceRecord,
        1 << 6,
        2,
        &bytes,
    );
    let answer = ask(&mut sm, &by_name, h1, Duration::from_secs(1));
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    let found: Vec<ServiceRecordRepr> = view
        .records()
        .map(|r| ServiceRecordRepr::parse_bytes(r).unwrap())
        .collect();
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].id, found[0].key), (service.id, [0; 16]));
    // Two seconds on, the lease has ended.
    let answer = ask(&mut sm, &by_name, h1, Duration::from_secs(3));
    assert_eq!(
        SaMad::new_checked(&answer.mad[..])
            .unwrap()
            .records()
            .count(),
        0
    );
    // Registered again for ever, then deleted; a second delete finds nothing.
    let forever = sa_mad(Method::Set, SaAttributeId::ServiceRecord, 0x63, 3, &bytes);
    assert_eq!(
        status(&ask(&mut sm, &forever, h1, Duration::from_secs(4))),
        Status::OK
    );
    let delete = sa_mad(Method::Delete, SaAttributeId::ServiceRecord, 0x3, 4, &bytes);
    let answer = ask(&mut sm, &delete, h1, Duration::from_secs(100));
    assert_eq!(
        (
            SaMad::new_checked(&answer.mad[..])
                .unwrap()
                .header()
                .method(),
            status(&answer)
        ),
        (Method::DeleteResp, Status::OK)
    );
    assert_eq!(
        status(&ask(&mut sm, &delete, h1, Duration::from_secs(100))),
        Status::SA_NO_RECORDS
    );
    // Without a ServiceGID no service can be registered.
    let no_gid = sa_mad(Method::Set, SaAttributeId::ServiceRecord, 0x1, 5, &bytes);
    assert_eq!(
        status(&ask(&mut sm, &no_gid, h1, Duration::from_secs(100))),
        Status::SA_REQ_INVALID
    );
}

/// The manager's transport, recording what is sent.
struct Recording<'a> {
    inner: &'a mut EmulatedTransport,
    sent: Vec<Outgoing>,
}

impl Transport for Recording<'_> {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        self.sent.push(out.clone());
        self.inner.send(out)
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        self.inner.recv(timeout)
    }
    fn local_port(&self) -> LocalPort {
        self.inner.local_port()
    }
    fn now(&self) -> std::time::Instant {
        self.inner.now()
    }
}

/// The Reports among `sent`: (where to, TID, the notice).
fn reports(sent: &[Outgoing]) -> Vec<(Address, u64, SaNoticeRepr)> {
    sent.iter()
        .filter_map(|out| {
            let view = SaMad::new_checked(&out.mad[..]).ok()?;
            let header = view.header();
            (header.mgmt_class() == MgmtClass::SubnAdm && header.method() == Method::Report).then(
                || {
                    let notice = SaNoticeRepr::parse_bytes(view.data()).unwrap();
                    (out.address, header.transaction_id(), notice)
                },
            )
        })
        .collect()
}

#[test]
fn a_subscriber_gets_reports_of_traps_and_of_ports_leaving_until_it_answers() {
    let mut sm = two_switch_up();
    // H3 subscribes from UD QP 0x45 to every notice of the subnet.
    let (h3, _) = host(&sm, "host-three", 0x45);
    let (_, h2_guid) = host(&sm, "host-two", 1);
    let mut inform = InformInfoRepr::parse_bytes(&[0u8; 36]).unwrap();
    inform.lid_range_begin = 0xffff;
    inform.is_generic = 1;
    inform.subscribe = 1;
    inform.notice_type = 0xffff;
    inform.trap_number = 0xffff;
    inform.producer_type = 0xff_ffff;
    let mut bytes = [0u8; 36];
    inform.emit_bytes(&mut bytes);
    let subscribe = sa_mad(Method::Set, SaAttributeId::InformInfo, 0, 9, &bytes);
    let answer = ask(&mut sm, &subscribe, h3, Duration::ZERO);
    let echoed =
        InformInfoRepr::parse_bytes(SaMad::new_checked(&answer.mad[..]).unwrap().data()).unwrap();
    assert_eq!(
        echoed.qpn, 0x45,
        "Reports go to the QP the subscription came from"
    );

    // H2's link goes down: switch S1 raises trap 128, and the sweep it starts finds H2 gone.
    let emulator = sm.transport.emulator_mut();
    let s1 = emulator.topology().node_by_name("S1").unwrap();
    let down_ns = sm.transport.now_ns() + 1_000_000;
    sm.transport.emulator_mut().schedule(&FaultSchedule {
        flaps: vec![Flap {
            port: PortRef::new(s1, 2),
            down_ns,
            up_ns: None,
        }],
        dead: vec![],
        ..FaultSchedule::default()
    });
    let mut recording = Recording {
        inner: &mut sm.transport,
        sent: Vec::new(),
    };
    loop {
        let event = drive(
            &mut recording,
            &mut sm.manager,
            Manager::poll_event,
            &|| false,
        )
        .unwrap()
        .unwrap();
        if matches!(event, Event::SweepDone(_)) {
            break;
        }
    }
    let got = reports(&recording.sent);
    let to_h3 = Address::Peer(h3);
    let trap = |n: u16| {
        got.iter()
            .find(|(to, _, notice)| *to == to_h3 && notice.notice.trap_number == n)
    };
    let (_, link_tid, link) = trap(128).expect("a Report of trap 128");
    assert_eq!(link.notice.issuer_lid, s1_lid(&sm));
    let (_, _, gone) = trap(65).expect("a Report of trap 65: H2 out of service");
    assert_eq!(
        Gid::from_bytes(gone.notice.data_details[6..22].try_into().unwrap()).interface_id(),
        h2_guid
    );
    // Unanswered, the Report of trap 128 goes again a second later; a ReportResp ends it.
    let link_tid = *link_tid;
    let later = sm.transport.now() + Duration::from_secs(2);
    sm.manager.on_time(later);
    let mut resent = Vec::new();
    while let Some(out) = sm.manager.poll_transmit(later) {
        resent.push(out);
    }
    assert!(reports(&resent).iter().any(|(_, tid, _)| *tid == link_tid));
    let mut resp = resent
        .iter()
        .find(|out| {
            reports(std::slice::from_ref(out))
                .iter()
                .any(|(_, t, _)| *t == link_tid)
        })
        .unwrap()
        .mad
        .clone();
    SaMad::new_unchecked(&mut resp[..])
        .header_mut()
        .set_method(Method::ReportResp);
    sm.manager.on_mad(later, &resp, h3);
    let much_later = later + Duration::from_secs(10);
    sm.manager.on_time(much_later);
    let mut after = Vec::new();
    while let Some(out) = sm.manager.poll_transmit(much_later) {
        after.push(out);
    }
    assert!(!reports(&after).iter().any(|(_, tid, _)| *tid == link_tid));

    // Unsubscribing needs the subscription as stored; then nothing more comes.
    let mut gone_inform = echoed;
    gone_inform.subscribe = 0;
    gone_inform.emit_bytes(&mut bytes);
    let unsubscribe = sa_mad(Method::Set, SaAttributeId::InformInfo, 0, 10, &bytes);
    assert_eq!(
        status(&ask(&mut sm, &unsubscribe, h3, Duration::from_secs(20))),
        Status::OK
    );
    assert_eq!(
        status(&ask(&mut sm, &unsubscribe, h3, Duration::from_secs(20))),
        Status::SA_REQ_INVALID
    );
}

fn s1_lid(sm: &EmulatedSm) -> u16 {
    let sweep = sm.manager.last_sweep().unwrap();
    sweep
        .subnet()
        .switches()
        .find(|n| n.description.starts_with("sw-one"))
        .and_then(|n| n.ports.get(&0))
        .map(|p| p.lid)
        .unwrap()
}
