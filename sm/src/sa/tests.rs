//! The SA's request pipeline over the snapshot of a sweep of the emulated two-switch fabric:
//! which requests are dropped, which get an error status, and how an answer is built.

use super::*;
use crate::testing::{Fabric, sa_request, subnet_up};
use ibqos_mad::sa::{NodeRecord, NodeRecordMask, SaHeaderRepr, SaRecord, parse_sa};

/// An SA with `config`, serving the snapshot of a forced sweep.
pub(super) fn serving(config: SaConfig) -> (Fabric, Sa) {
    serving_changed(config, |_| {})
}

/// An SA with `config`, serving the snapshot of a forced sweep as `change` leaves it.
pub(super) fn serving_changed(config: SaConfig, change: impl FnOnce(&mut SaDb)) -> (Fabric, Sa) {
    let (fabric, sweep) = subnet_up("");
    let mut db = SaDb::new(&sweep);
    change(&mut db);
    let mut sa = Sa::new(config);
    sa.update(fabric.now(), db);
    (fabric, sa)
}

/// A NodeRecord request, for the LID `lid` when it is `Some`.
fn node_records(method: Method, lid: Option<u16>, sm_key: u64) -> Vec<u8> {
    let mask = lid.map_or(0, |_| NodeRecordMask::LID.0);
    sa_request(method, SaAttributeId::NodeRecord, mask, sm_key, |data| {
        NodeRecord::new_unchecked(data).set_lid(lid.unwrap_or(0));
    })
}

/// What the SA did with a request.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    Dropped,
    /// An answer: its method, status and the records it holds.
    Answered(Method, Status, Vec<SaRecord>),
}

pub(super) fn ask(sa: &mut Sa, fabric: &Fabric, mad: &[u8], from: Peer) -> Outcome {
    match sa.on_request(fabric.now(), mad, from, 0) {
        None => Outcome::Dropped,
        Some(answer) => {
            assert_eq!(answer.address, Address::Peer(from));
            let (header, records): (SaHeaderRepr, _) = parse_sa(&answer.mad).unwrap();
            Outcome::Answered(header.method, header.status, records)
        }
    }
}

#[test]
fn requests_are_dropped_answered_or_refused_as_opensm_does() {
    let (fabric, mut sa) = serving(SaConfig::default());
    let sm = Peer::lid(fabric.lid_of(fabric.port));
    let h2 = fabric.lid_of(fabric.port_of("H2", 1));
    let mut wrong_version = node_records(Method::GetTable, None, 0);
    SaMad::new_unchecked(&mut wrong_version[..])
        .header_mut()
        .set_class_version(1);
    let before_any_sweep = ask(
        &mut Sa::default(),
        &fabric,
        &node_records(Method::GetTable, None, 0),
        sm,
    );
    assert_eq!(before_any_sweep, Outcome::Dropped);
    let dropped = |mad: Vec<u8>, from: Peer| (mad, from, None);
    let answered = |mad: Vec<u8>, status: Status| (mad, sm, Some(status));
    // (request, from, the answer's status or None for dropped)
    let cases = [
        dropped(node_records(Method::GetTable, None, 0)[..200].to_vec(), sm),
        dropped(wrong_version, sm),
        dropped(node_records(Method::GetTable, None, 5), sm),
        dropped(node_records(Method::ReportResp, None, 0), sm),
        dropped(node_records(Method::Set, None, 0), sm),
        dropped(node_records(Method::GetTable, None, 0), Peer::lid(0x999)),
        answered(
            node_records(Method::GetTable, None, DEFAULT_SA_KEY),
            Status::OK,
        ),
        answered(
            node_records(Method::Get, None, 0),
            Status::SA_TOO_MANY_RECORDS,
        ),
        answered(
            node_records(Method::Get, Some(0x999), 0),
            Status::SA_NO_RECORDS,
        ),
        answered(node_records(Method::Get, Some(h2), 0), Status::OK),
        answered(node_records(Method::GetTable, Some(0x999), 0), Status::OK),
    ];
    let mut expected = SaCounts::default();
    for (i, (mad, from, status)) in cases.into_iter().enumerate() {
        let outcome = ask(&mut sa, &fabric, &mad, from);
        match (status, outcome) {
            (None, outcome) => {
                assert_eq!(outcome, Outcome::Dropped, "case {i}");
                expected.dropped += 1;
            }
            (Some(status), Outcome::Answered(method, got, _)) => {
                let request = SaMad::new_checked(&mad[..]).unwrap().header().method();
                assert_eq!((method, got), (request.response(), status), "case {i}");
                expected.answered += 1;
            }
            (Some(_), Outcome::Dropped) => panic!("case {i} dropped"),
        }
    }
    assert_eq!(sa.take_counts(), expected);
}

#[test]
fn a_get_answers_its_one_record_and_a_get_table_every_match() {
    let (fabric, mut sa) = serving(SaConfig::default());
    let sm = Peer::lid(fabric.lid_of(fabric.port));
    let h2 = fabric.port_of("H2", 1);
    let request = node_records(Method::Get, Some(fabric.lid_of(h2)), 0);
    let Outcome::Answered(_, _, records) = ask(&mut sa, &fabric, &request, sm) else {
        panic!("dropped")
    };
    let [SaRecord::NodeRecord(record)] = &records[..] else {
        panic!("{records:?}")
    };
    assert_eq!(record.lid, fabric.lid_of(h2));
    assert_eq!(record.node_info.port_guid, fabric.guid_of(h2));
    // No record matches: a GetTable answers none, with AttributeOffset 0.
    let none = node_records(Method::GetTable, Some(0x999), 0);
    let answer = sa.on_request(fabric.now(), &none, sm, 0).unwrap();
    assert_eq!(answer.mad.len(), SA_HEADER_LEN);
    assert_eq!(
        SaMad::new_checked(&answer.mad[..])
            .unwrap()
            .attribute_offset(),
        0
    );
}

#[test]
fn an_answer_over_the_bound_is_no_resources() {
    let config = SaConfig {
        max_answer_bytes: NodeRecord::<&[u8]>::LEN,
        ..SaConfig::default()
    };
    let (fabric, mut sa) = serving(config);
    let sm = Peer::lid(fabric.lid_of(fabric.port));
    let h2 = fabric.lid_of(fabric.port_of("H2", 1));
    let one = ask(
        &mut sa,
        &fabric,
        &node_records(Method::GetTable, Some(h2), 0),
        sm,
    );
    assert!(
        matches!(one, Outcome::Answered(_, Status::OK, ref r) if r.len() == 1),
        "{one:?}"
    );
    let all = ask(
        &mut sa,
        &fabric,
        &node_records(Method::GetTable, None, 0),
        sm,
    );
    assert!(
        matches!(all, Outcome::Answered(_, Status::SA_NO_RESOURCES, _)),
        "{all:?}"
    );
}

#[test]
fn a_reset_forgets_the_snapshot_and_the_sa_drops_again() {
    let (fabric, mut sa) = serving(SaConfig::default());
    let sm = Peer::lid(fabric.lid_of(fabric.port));
    assert!(sa.is_serving());
    sa.reset();
    assert!(!sa.is_serving());
    let request = node_records(Method::GetTable, None, 0);
    assert_eq!(ask(&mut sa, &fabric, &request, sm), Outcome::Dropped);
}
