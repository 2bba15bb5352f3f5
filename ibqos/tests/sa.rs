//! The subnet administrator through the manager, on the built-in two-switch fabric emulated in
//! virtual time: SA requests as a host sends them (from its LID, on QP1), answers as the
//! manager sends them back. The expected counts and values come from the topology or from the
//! fabric's own PortInfo, never from a table written here.

use ibqos_emu::{Emulator, attach_port, load_topology};
use ibqos_exchange::{OutgoingMad, Peer};
use ibqos_fabric::Topology;
use ibqos_mad::sa::{
    Mtu, NodeRecord, NodeRecordRepr, PKeyTableRecord, PKeyTableRecordRepr, PathRecord,
    PathRecordRepr, Record, SA_CLASS_VERSION, SaAttributeId, SaMad, Selector,
};
use ibqos_mad::{ClassPortInfo, Method, Status};
use ibqos_opensm::Settings;
use ibqos_sm::manager::Run;
use ibqos_sm::sa::{Sa, SaConfig, SaDb};
use ibqos_transport::Transport;
use ibqos_transport::emulated::EmulatedTransport;

mod common;
use common::{EmulatedSm, ask, host, partitioned, request, settings, status};

const CONFIG: &str = "examples/opensm-qos.conf";

fn two_switch() -> (Topology, EmulatedSm) {
    two_switch_with(&settings(CONFIG))
}

fn two_switch_with(settings: &Settings) -> (Topology, EmulatedSm) {
    let topology = load_topology("two-switch").unwrap().topology;
    let attach = attach_port(&topology, None).unwrap();
    let transport =
        EmulatedTransport::virtual_time(Emulator::new(topology.clone()).unwrap(), attach);
    let sm = EmulatedSm::new(transport, Run::Daemon, settings);
    (topology, sm)
}

/// A PathRecord template with every field zero.
fn blank_path() -> PathRecordRepr {
    PathRecordRepr::parse_bytes(&[0u8; 64]).unwrap()
}

#[test]
fn the_sa_is_silent_until_the_subnet_is_up_then_answers_class_port_info() {
    let (_, mut sm) = two_switch();
    let from = Peer {
        lid: 1,
        qp: 1,
        pkey_index: 0,
    };
    let cpi = request(Method::Get, SaAttributeId::ClassPortInfo, 0, 0, |_| {});
    // During the first sweep there is nothing to answer from.
    sm.sweep_started();
    assert_eq!(ask(&mut sm, &cpi, from), None);
    sm.sweep_done();
    let from = host(&sm, "H1");
    let answer = ask(&mut sm, &cpi, from).expect("ClassPortInfo answered");
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(view.header().method(), Method::GetResp);
    assert_eq!(view.header().status(), Status::OK);
    assert_eq!(view.header().transaction_id(), 0x0001_0000_0000_4242);
    let info = ClassPortInfo::new_checked(view.data()).unwrap();
    assert_eq!(info.capability_mask().0, 0x2602);
    assert_eq!(info.resp_time_value(), 16);
    // Anything but a Get of ClassPortInfo is an invalid request (OpenSM's 0x0200).
    let table = request(Method::GetTable, SaAttributeId::ClassPortInfo, 0, 0, |_| {});
    let answer = ask(&mut sm, &table, from).unwrap();
    assert_eq!(status(&answer), Status::SA_REQ_INVALID);
}

#[test]
fn node_records_are_one_per_switch_and_one_per_ca_port_with_opensm_counts() {
    let (topology, mut sm) = two_switch();
    sm.sweep_done();
    let from = host(&sm, "H1");
    // Every port of the two-switch fabric is cabled, so every endport gets a LID.
    let switches = topology.switches().count();
    let ca_ports = topology.endports().count() - switches;
    let table = request(Method::GetTable, SaAttributeId::NodeRecord, 0, 0, |_| {});
    let answer = ask(&mut sm, &table, from).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(view.header().method(), Method::GetTableResp);
    assert_eq!(
        usize::from(view.attribute_offset()) * 8,
        NodeRecordRepr::SIZE
    );
    let records: Vec<NodeRecordRepr> = view
        .records()
        .map(|r| NodeRecordRepr::parse(&NodeRecord::new_checked(r).unwrap()).unwrap())
        .collect();
    assert_eq!(records.len(), switches + ca_ports);
    // A Get of many is TOO_MANY_RECORDS; of a LID nobody has, NO_RECORDS; a GetTable of
    // nothing is a success with no record.
    let get = request(Method::Get, SaAttributeId::NodeRecord, 0, 0, |_| {});
    assert_eq!(
        status(&ask(&mut sm, &get, from).unwrap()),
        Status::SA_TOO_MANY_RECORDS
    );
    let by_lid = |method, lid: u16| {
        request(method, SaAttributeId::NodeRecord, 1, 0, move |data| {
            data[..2].copy_from_slice(&lid.to_be_bytes())
        })
    };
    let answer = ask(&mut sm, &by_lid(Method::Get, 0x9999), from).unwrap();
    assert_eq!(status(&answer), Status::SA_NO_RECORDS);
    // The error answer is the request with the status set.
    assert_eq!(answer.mad[56..58], 0x9999u16.to_be_bytes());
    let answer = ask(&mut sm, &by_lid(Method::GetTable, 0x9999), from).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(
        (view.header().status(), view.attribute_offset()),
        (Status::OK, 0)
    );
    // By the requester's own LID: exactly its own record.
    let answer = ask(&mut sm, &by_lid(Method::Get, from.lid), from).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    let record = NodeRecordRepr::parse(&NodeRecord::new_checked(view.data()).unwrap()).unwrap();
    assert_eq!(record.lid, from.lid);
    assert!(record.description.to_string_lossy().starts_with("host-one"));
    // A Set of a record clients cannot change gets no answer at all, as from OpenSM (its Set
    // dispatcher knows no NodeRecord: ERR 1A02).
    let set = request(Method::Set, SaAttributeId::NodeRecord, 0, 0, |_| {});
    assert_eq!(ask(&mut sm, &set, from), None);
}

#[test]
fn requests_opensm_drops_get_no_answer() {
    let (_, mut sm) = two_switch();
    sm.sweep_done();
    let from = host(&sm, "H1");
    let node_records = |sm_key| {
        request(
            Method::GetTable,
            SaAttributeId::NodeRecord,
            0,
            sm_key,
            |_| {},
        )
    };
    // A wrong SM_Key: dropped (osmtest waits for the timeout); the SA's key (1): trusted.
    assert_eq!(ask(&mut sm, &node_records(9999), from), None);
    assert!(ask(&mut sm, &node_records(1), from).is_some());
    // An unknown requester LID, an attribute the SA does not serve, a method it does not take.
    let stranger = Peer {
        lid: 0x7777,
        ..from
    };
    assert_eq!(ask(&mut sm, &node_records(0), stranger), None);
    let trace = request(Method::GetTable, SaAttributeId::TraceRecord, 0, 0, |_| {});
    assert_eq!(ask(&mut sm, &trace, from), None);
    let report = request(Method::Report, SaAttributeId::NodeRecord, 0, 0, |_| {});
    assert_eq!(ask(&mut sm, &report, from), None);
}

#[test]
fn a_path_between_two_hosts_carries_the_default_partition_and_sl_and_the_path_mtu() {
    let (_, mut sm) = two_switch();
    sm.sweep_done();
    let (h1, h3) = (host(&sm, "H1"), host(&sm, "H3"));
    // SLID | DLID | Reversible | NumbPath, as rdma_cm-like clients ask.
    let mask = (1 << 4) | (1 << 5) | (1 << 11) | (1 << 12);
    let get = request(Method::Get, SaAttributeId::PathRecord, mask, 0, |data| {
        let template = PathRecordRepr {
            slid: h1.lid,
            dlid: h3.lid,
            reversible: true,
            numb_path: 1,
            ..blank_path()
        };
        template.emit(&mut PathRecord::new_unchecked(data));
    });
    let answer = ask(&mut sm, &get, h1).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(view.header().status(), Status::OK);
    let path = PathRecordRepr::parse(&PathRecord::new_checked(view.data()).unwrap()).unwrap();
    assert_eq!((path.slid, path.dlid), (h1.lid, h3.lid));
    assert_eq!((path.p_key, path.sl, path.reversible), (0xffff, 0, true));
    assert_eq!(
        (path.mtu_selector, path.rate_selector),
        (Selector::Exactly, Selector::Exactly)
    );
    assert_eq!(path.packet_life, 18);
    // The path MTU is no more than either end's MTUCap, as the fabric reports it.
    let sweep = sm.manager.last_sweep().unwrap();
    let cap = |lid| {
        sweep
            .subnet()
            .ports()
            .find(|(_, p)| p.lid == lid)
            .map(|(_, p)| p.info.mtu_cap)
            .unwrap()
    };
    let mtu = u8::from(path.mtu);
    assert!((1..=cap(h1.lid).min(cap(h3.lid))).contains(&mtu), "{mtu}");
    // A requested SL is answered as asked; an MTU no path has is no path.
    let too_big = request(
        Method::Get,
        SaAttributeId::PathRecord,
        mask | (1 << 16) | (1 << 17),
        0,
        |data| {
            let template = PathRecordRepr {
                slid: h1.lid,
                dlid: h3.lid,
                mtu_selector: Selector::GreaterThan,
                mtu: Mtu::Mtu4096,
                ..blank_path()
            };
            template.emit(&mut PathRecord::new_unchecked(data));
        },
    );
    assert_eq!(
        status(&ask(&mut sm, &too_big, h1).unwrap()),
        Status::SA_NO_RECORDS
    );
}

#[test]
fn paths_from_a_gid_reach_every_port_and_a_foreign_prefix_reaches_none() {
    let (topology, mut sm) = two_switch();
    sm.sweep_done();
    let h1 = host(&sm, "H1");
    let sweep = sm.manager.last_sweep().unwrap();
    let guid = sweep
        .subnet()
        .ports()
        .find(|(_, p)| p.lid == h1.lid)
        .map(|(_, p)| p.guid)
        .unwrap();
    let from_gid = |prefix: u64| {
        request(
            Method::GetTable,
            SaAttributeId::PathRecord,
            1 << 3,
            0,
            move |data| {
                let template = PathRecordRepr {
                    sgid: ibqos_mad::Gid::new(prefix, guid),
                    ..blank_path()
                };
                template.emit(&mut PathRecord::new_unchecked(data));
            },
        )
    };
    // A half-world query (osmtest -f c asks this for its inventory): one path to every
    // endport of the fabric, the source's own included.
    let answer = ask(&mut sm, &from_gid(0xfe80_0000_0000_0000), h1).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    let paths: Vec<PathRecordRepr> = view
        .records()
        .map(|r| PathRecordRepr::parse_bytes(r).unwrap())
        .collect();
    assert_eq!(paths.len(), topology.endports().count());
    assert!(
        paths
            .iter()
            .all(|p| p.slid == h1.lid && p.sgid.interface_id() == guid)
    );
    let answer = ask(&mut sm, &from_gid(0x1234_0000_0000_0000), h1).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    assert_eq!(
        (view.header().status(), view.records().count()),
        (Status::OK, 0)
    );
}

/// The attributes a fuzzed request names: every one the SA serves, and some it does not.
const ATTRIBUTES: [u16; 16] = [
    0x01, 0x02, 0x03, 0x11, 0x12, 0x13, 0x14, 0x15, 0x18, 0x20, 0x30, 0x31, 0x33, 0x35, 0x36, 0xf3,
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Any SA request at all, trusted or not, of any method and ComponentMask, with any
    /// template: an answer to the requester with its TID, or silence; never a panic.
    #[test]
    fn any_sa_request_gets_an_answer_or_silence_never_a_panic(
        bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 256),
        method in proptest::prelude::any::<u8>(),
        attribute in 0..ATTRIBUTES.len(),
        mask in proptest::prelude::any::<u64>(),
        trusted in proptest::prelude::any::<bool>(),
    ) {
        let (_, mut sm) = two_switch_up();
        let from = host(&sm, "H1");
        let mut mad = bytes.clone();
        mad[..4].copy_from_slice(&[1, 0x03, SA_CLASS_VERSION, method]);
        mad[16..18].copy_from_slice(&ATTRIBUTES[attribute].to_be_bytes());
        mad[36..44].copy_from_slice(&u64::from(trusted).to_be_bytes());
        mad[48..56].copy_from_slice(&mask.to_be_bytes());
        if let Some(answer) = ask(&mut sm, &mad, from) {
            let view = SaMad::new_checked(&answer.mad[..]).unwrap();
            proptest::prop_assert_eq!(view.header().transaction_id(), u64::from_be_bytes(
                mad[8..16].try_into().unwrap()));
            proptest::prop_assert!(view.header().method().is_response());
        }
    }
}

/// The two-switch fabric with its subnet up (in virtual time: a few ms a case).
fn two_switch_up() -> (Topology, EmulatedSm) {
    let (topology, mut sm) = two_switch();
    sm.sweep_done();
    (topology, sm)
}

/// An answer over the SA's bound is ERR_NO_RESOURCES, not a huge message: the world PathRecord
/// GetTable of two-switch (8 endports: 2 switches, 6 HCA ports; 64 paths, 4096 bytes) under a
/// 1000-byte bound, while a one-source query (8 paths, 512 bytes) is still answered.
#[test]
fn an_answer_over_the_bound_is_no_resources() {
    let (_, sm) = two_switch_up();
    let h1 = host(&sm, "H1");
    let sweep = sm.manager.last_sweep().unwrap();
    let mut sa = Sa::new(SaConfig {
        max_answer_bytes: 1000,
        ..SaConfig::default()
    });
    let now = sm.transport.now();
    sa.update(now, SaDb::new(sweep));
    let paths = |mask, template: PathRecordRepr| {
        request(
            Method::GetTable,
            SaAttributeId::PathRecord,
            mask,
            0,
            |data| template.emit(&mut PathRecord::new_unchecked(data)),
        )
    };
    let world = sa.on_request(now, &paths(0, blank_path()), h1, 0).unwrap();
    assert_eq!(status(&world), Status::SA_NO_RESOURCES);
    assert_eq!(world.mad.len(), 256, "the request echoed, no records");
    let from_h1 = PathRecordRepr {
        slid: h1.lid,
        ..blank_path()
    };
    let one_source = sa.on_request(now, &paths(1 << 5, from_h1), h1, 0).unwrap();
    let view = SaMad::new_checked(&one_source.mad[..]).unwrap();
    assert_eq!(
        (view.header().status(), view.records().count()),
        (Status::OK, 8)
    );
}

/// The P_Key of the path from `from` to `to` (asked by `from`), or the status of the answer
/// that has none.
fn path_p_key(sm: &mut EmulatedSm, from: Peer, to: Peer) -> Result<u16, Status> {
    let mask = (1 << 4) | (1 << 5);
    let get = request(Method::Get, SaAttributeId::PathRecord, mask, 0, |data| {
        let template = PathRecordRepr {
            slid: from.lid,
            dlid: to.lid,
            ..blank_path()
        };
        template.emit(&mut PathRecord::new_unchecked(data));
    });
    let answer = ask(sm, &get, from).unwrap();
    let view = SaMad::new_checked(&answer.mad[..]).unwrap();
    match view.header().status() {
        Status::OK => Ok(
            PathRecordRepr::parse(&PathRecord::new_checked(view.data()).unwrap())
                .unwrap()
                .p_key,
        ),
        status => Err(status),
    }
}

#[test]
fn paths_carry_the_first_partition_the_ends_share_and_none_joins_limited_members() {
    let dir = tempfile::TempDir::new().unwrap();
    let (_, mut sm) = two_switch_with(&partitioned(&dir));
    assert!(sm.sweep_done().subnet_up);
    let [h1, h2, h3, h4] = ["H1", "H2", "H3", "H4"].map(|name| host(&sm, name));
    // H2 and H3 share `hosts` as full members; their limited Default keys do not count.
    assert_eq!(path_p_key(&mut sm, h2, h3), Ok(0x8101));
    // H2 and H4 hold the Default key only as limited members: no partition, no path.
    assert_eq!(path_p_key(&mut sm, h2, h4), Err(Status::SA_NO_RECORDS));
    // The SM's port is a full member of Default, so it reaches every limited one; the answer
    // carries the source's key.
    assert_eq!(path_p_key(&mut sm, h1, h4), Ok(0xffff));
    assert_eq!(path_p_key(&mut sm, h4, h1), Ok(0x7fff));
}

#[test]
fn pkey_table_records_are_the_tables_programmed_and_hidden_from_ports_sharing_none() {
    let dir = tempfile::TempDir::new().unwrap();
    let (_, mut sm) = two_switch_with(&partitioned(&dir));
    assert!(sm.sweep_done().subnet_up);
    let [h1, h2, h4] = ["H1", "H2", "H4"].map(|name| host(&sm, name));
    let of_lid = |lid: u16| {
        request(
            Method::GetTable,
            SaAttributeId::PKeyTableRecord,
            1,
            ibqos_sm::sa::DEFAULT_SA_KEY,
            move |data| data[..2].copy_from_slice(&lid.to_be_bytes()),
        )
    };
    let records = |answer: &OutgoingMad| -> Vec<PKeyTableRecordRepr> {
        SaMad::new_checked(&answer.mad[..])
            .unwrap()
            .records()
            .map(|r| PKeyTableRecordRepr::parse(&PKeyTableRecord::new_checked(r).unwrap()).unwrap())
            .collect()
    };
    let answer = ask(&mut sm, &of_lid(h4.lid), h1).unwrap();
    let blocks = records(&answer);
    // A CA port's two blocks (64 entries), storage at index 0 by indx0 and Default after it.
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].table.p_keys[..3], [0x8002, 0x7fff, 0]);
    assert!(blocks[1].table.p_keys.iter().all(|&k| k == 0));
    // BlockNum in OpenSM's (little-endian) byte order, as saquery reads it: block 1 is 0x0100
    // big-endian.
    assert_eq!((blocks[0].block, blocks[1].block), (0, 0x0100));
    // H2 shares no partition with H4, so it is not told H4's table.
    let answer = ask(&mut sm, &of_lid(h4.lid), h2).unwrap();
    assert_eq!(status(&answer), Status::OK);
    assert!(records(&answer).is_empty());
}
