//! PathRecord SLs as OpenSM gives them, per routing engine and QoS policy, through the shared
//! oracle of `ibqos_tests::path_sls`: every ordered pair of endports asked of both SAs.

use ibqos_fabric::generate;
use ibqos_tests::path_sls::{path_sls_match_opensm, path_sls_within, two_level_policy};
use ibqos_tests::sa::SmSetup;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::{NodeKind, TestDir};

/// MinHop has no path SL: every PathRecord carries the policy's SL, on both SMs, on a ring
/// (a fabric with a cycle, where the layered engines would spend SLs).
#[test]
fn minhop_keeps_the_policys_sl_for_every_pair() {
    let dir = TestDir::new("path-sl-minhop");
    let fabric = Fabric::generated("ring-4", &generate::ring(4, 2).unwrap(), dir.path()).unwrap();
    // SL 5 toward a switch, SL 3 between CAs.
    let policy = two_level_policy(3, 5);
    let setup = SmSetup {
        options: "routing_engine minhop\nqos TRUE\n",
        policy: Some(&policy),
        ..SmSetup::default()
    };
    let sls = path_sls_match_opensm(&fabric, &setup, &dir);
    let is_switch = |name: &str| fabric.topology.node(name).unwrap().kind == NodeKind::Switch;
    for ((_, destination), answers) in &sls {
        let expected = if is_switch(&destination.0) { 5 } else { 3 };
        assert_eq!(answers, &[Some(expected)], "toward {}", destination.0);
    }
}

/// Pairs the requester (the query node, a limited member) may not see have no record on both
/// SAs; the pairs with the SM's port, the one full member, have a path. Its SL is the policy's
/// default level's (0), which wins over the partition's `sl=2`.
#[test]
fn hidden_pairs_have_no_record_and_the_default_level_beats_the_partition_sl() {
    let dir = TestDir::new("path-sl-partitions");
    let fabric = Fabric::generated("ring-3", &generate::ring(3, 1).unwrap(), dir.path()).unwrap();
    let setup = SmSetup {
        options: "routing_engine minhop\nqos TRUE\n",
        partitions: Some("Default=0x7fff, sl=2 : ALL, SELF=full ;\n"),
        ..SmSetup::default()
    };
    let sls = path_sls_match_opensm(&fabric, &setup, &dir);
    let answers: std::collections::BTreeSet<&[Option<u8>]> =
        sls.values().map(Vec::as_slice).collect();
    assert_eq!(
        answers,
        [&[None][..], &[Some(0)][..]].into(),
        "both kinds of answer"
    );
}

/// DFSSSP sizes its layers from the OperVLs the switch ports hold when it routes, as OpenSM's
/// does: ibsim's ports run 8 VLs, so every SL it hands out is below 8 on both SMs (OpenSM draws
/// one at random in the pair's layer group, several times per pair), though `max_op_vls`
/// allows 15.
#[test]
fn dfsssp_hands_out_sls_within_the_vls_the_switch_ports_run() {
    let dir = TestDir::new("path-sl-dfsssp");
    let fabric = Fabric::generated("ring-4", &generate::ring(4, 1).unwrap(), dir.path()).unwrap();
    let setup = SmSetup {
        options: "routing_engine dfsssp\nqos TRUE\n",
        ..SmSetup::default()
    };
    path_sls_within(&fabric, &setup, &dir, |_| Some(0..=7));
}
