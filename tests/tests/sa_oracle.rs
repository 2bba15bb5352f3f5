//! Subnet Administration, differential: the same saquery and osmtest commands against OpenSM and
//! against ibqos, each on a fresh ibsim of the same net file with the SM attached at the same
//! node, must print the same (see `ibqos_tests::sa` for what is normalised, and why).
//!
//! One test per group of commands, so a failure names the group and diffs each command that
//! answered differently. `IBQOS_SA_SUBJECT=opensm` runs OpenSM against itself: the harness's
//! self-check. `IBQOS_SA_ORACLE_OUT=DIR` keeps every transcript.

use ibqos_tests::readback::PortKey;
use ibqos_tests::sa::{
    Flow, Lids, Query, SaTools, Session, SmKind, SmSetup, assert_same_answers,
    assert_same_answers_with, lid_list, lid_table, port_info_targets,
};
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::{NodeKind, TestDir};

/// The repository's fabrics, smallest first.
const NETS: [&str; 2] = ["two-switch", "fat-tree-16"];

fn fabric(name: &str) -> Fabric {
    Fabric::load(name, &testdata(&format!("{name}.net"))).unwrap()
}

fn every_fabric(group: &str, build: impl Fn(&Fabric, &Lids) -> Vec<Query>) {
    assert_same_answers(&NETS.map(fabric), group, build);
}

/// The LID of the port the SM runs at: the source of the PathRecords with requirements.
fn sm_lid(fabric: &Fabric, lids: &Lids) -> u16 {
    let key: PortKey = (fabric.sm_node.clone(), 1);
    lids[&key]
}

#[test]
fn both_sms_assign_the_same_lids() {
    let tools = SaTools::require();
    let dir = TestDir::new("sa-lids");
    let subject = SmKind::subject();
    let mut mismatches = Vec::new();
    for name in NETS {
        let fabric = fabric(name);
        let lids = |kind: SmKind, label: &str| {
            Session::start(
                kind,
                &tools,
                &fabric,
                &SmSetup::default(),
                &dir.subdir(&format!("{name}-{label}")),
            )
            .unwrap_or_else(|e| panic!("{name}: starting {kind}: {e}"))
            .lids
        };
        let reference = lids(SmKind::OpenSm, "reference");
        assert_eq!(
            reference.len(),
            ibqos_tests::readback::endports(&fabric.topology).len(),
            "{name}: OpenSM left endports without a LID"
        );
        let theirs = lids(subject, "subject");
        if reference != theirs {
            mismatches.push(format!(
                "{name}: the SMs assigned different LIDs\n--- OpenSM ---\n{}--- {subject} ---\n{}",
                lid_table(&reference),
                lid_table(&theirs)
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn class_port_info_and_node_records() {
    every_fabric("node-records", |_, lids| {
        let mut queries = vec![Query::saquery("-c"), Query::saquery("")];
        queries.extend(
            lid_list(lids)
                .into_iter()
                .map(|lid| Query::saquery(&format!("NR {lid}"))),
        );
        queries
    });
}

#[test]
fn port_info_records_by_lid_and_port() {
    every_fabric("port-info-records", |fabric, lids| {
        let by_lid = lid_list(lids)
            .into_iter()
            .map(|lid| Query::saquery(&format!("PIR {lid}")));
        let by_port = port_info_targets(fabric, lids)
            .into_iter()
            .map(|(lid, port)| Query::saquery(&format!("PIR {lid}/{port}")));
        by_lid.chain(by_port).collect()
    });
}

/// Every record of the fabric's ports and switches, as one saquery each.
const FABRIC_RECORDS: [&str; 8] = [
    "LR",
    "SWIR",
    "SL2VL",
    "VLAR",
    "LFTR",
    "GIR",
    "--smkey 1 PKTR",
    "SMIR",
];

#[test]
fn fabric_records() {
    every_fabric("fabric-records", |_, _| {
        FABRIC_RECORDS
            .into_iter()
            .chain(["SR", "IIR"])
            .map(Query::saquery)
            .collect()
    });
}

/// `saquery -p --slid A --dlid B` for every ordered pair of LIDs (A = B included).
fn every_pair(lids: &Lids) -> Vec<Query> {
    let list = lid_list(lids);
    list.iter()
        .flat_map(|a| {
            list.iter()
                .map(move |b| Query::saquery(&format!("-p --slid {a} --dlid {b}")))
        })
        .collect()
}

#[test]
fn path_records_between_every_pair_of_lids_on_two_switch() {
    assert_same_answers(&[fabric("two-switch")], "path-records", |_, lids| {
        every_pair(lids)
    });
}

#[test]
fn path_records_between_every_pair_of_lids_on_fat_tree_16() {
    assert_same_answers(&[fabric("fat-tree-16")], "path-records", |_, lids| {
        every_pair(lids)
    });
}

/// Both SMs at a managed switch (two-switch's S1, its enhanced port 0): the clients' records,
/// the fabric's records and every PathRecord, answered alike.
#[test]
fn records_and_paths_from_an_sm_at_a_switch() {
    let at_s1 = Fabric {
        sm_node: "S1".into(),
        ..fabric("two-switch")
    };
    assert_same_answers(&[at_s1], "sm-at-switch", |_, lids| {
        let records = ["-c", ""].into_iter().chain(FABRIC_RECORDS);
        records
            .chain(["SR", "IIR"])
            .map(Query::saquery)
            .chain(every_pair(lids))
            .collect()
    });
}

/// What a PathRecord query may ask for beyond its endpoints: an SL, the default P_Key, a service
/// ID, a QoS class, and MTU and rate with each selector (0 greater than, 1 less than, 2 exactly,
/// 3 largest; MTU 3 = 1024, 4 = 2048; rate 3 = 10 Gb/s, 6 = 30 Gb/s).
const REQUIREMENTS: [&str; 14] = [
    "--sl 0",
    "--sl 1",
    "--pkey 0xffff",
    "--pkey 0x7fff",
    "--service_id 0x10",
    "--service_id 0x1000000000000000",
    "-Q 0",
    "-Q 1",
    "-M 3:2",
    "-M 4:0",
    "-M 4:1",
    "-M 3:3",
    "-R 3:2",
    "-R 6:1",
];

#[test]
fn path_records_with_requirements() {
    every_fabric("path-records-with-requirements", |fabric, lids| {
        let from = sm_lid(fabric, lids);
        // To every CA port and to one switch: a path to a switch ends at its port 0.
        let switch = fabric
            .topology
            .nodes()
            .find(|n| n.kind == NodeKind::Switch)
            .and_then(|n| lids.get(&(n.id.clone(), 0)));
        let targets: Vec<u16> = ibqos_tests::readback::ca_ports(&fabric.topology)
            .iter()
            .filter_map(|key| lids.get(key))
            .chain(switch)
            .copied()
            .collect();
        targets
            .iter()
            .flat_map(|to| {
                REQUIREMENTS
                    .iter()
                    .map(move |req| Query::saquery(&format!("-p --slid {from} --dlid {to} {req}")))
            })
            .collect()
    });
}

#[test]
fn osmtest_inventory_and_qos_tables() {
    every_fabric("osmtest-inventory-qos", |_, _| {
        vec![
            Query::Osmtest(Flow::Inventory),
            Query::Osmtest(Flow::QosTables),
        ]
    });
}

#[test]
fn osmtest_all_and_services_end_alike() {
    every_fabric("osmtest-all-services", |_, _| {
        vec![
            Query::Osmtest(Flow::Inventory),
            Query::Osmtest(Flow::All),
            Query::Osmtest(Flow::Services),
        ]
    });
}

#[test]
fn osmtest_stress_passes() {
    assert_same_answers(&[fabric("two-switch")], "osmtest-stress", |_, _| {
        vec![Query::Osmtest(Flow::Stress)]
    });
}

/// A qos-policy.conf for two-switch.net exercising what decides a path's SL. It has a port group by
/// port name, and levels with an SL, mtu-limit, rate-limit, packet-life and a P_Key list. It has
/// rules by destination and by service ID. It has qos-ulps shortcuts, which OpenSM appends after
/// the rules: by P_Key, by service ID ranges written backwards, and by one GUID as both source and
/// destination (opensm-qos vectors 39 and 43). And a second `default` level, which loses to the
/// first (vector 40).
const POLICY: &str = "\
port-groups
    port-group
        name: Storage
        port-name: \"host-three HCA-1/P1\"
    end-port-group
    port-group
        name: Switches
        node-type: SWITCH
    end-port-group
end-port-groups
qos-levels
    qos-level
        name: DEFAULT
        sl: 0
    end-qos-level
    qos-level
        name: Gold
        sl: 3
        mtu-limit: 3
        packet-life: 12
    end-qos-level
    qos-level
        name: Silver
        sl: 5
        rate-limit: 3
        pkey: 0x7fff
    end-qos-level
    qos-level
        name: Management
        sl: 7
    end-qos-level
end-qos-levels
qos-match-rules
    qos-match-rule
        destination: Storage
        qos-level-name: Gold
    end-qos-match-rule
    qos-match-rule
        service-id: 0x10000-0x1ffff
        qos-level-name: Silver
    end-qos-match-rule
    qos-match-rule
        destination: Switches
        qos-level-name: Management
    end-qos-match-rule
end-qos-match-rules
qos-levels
    qos-level
        name: default
        sl: 6
    end-qos-level
end-qos-levels
qos-ulps
    any, service-id 0x30-0x20, 0x40 : 2
    any, source-target-port-guid 0x0002c90000100001 : 1
    any, pkey 0x7fff : 4
end-qos-ulps
";

/// What PathRecords ask for under a policy: the rules' and qos-ulps' service IDs (SDP port
/// 30000, RDS port 25000, iSER port 900, a bare one), P_Keys, QoS classes, SLs that agree or
/// disagree with the level, and selectors the level's limits decide.
const POLICY_REQUIREMENTS: [&str; 17] = [
    "",
    "--service_id 0x10000",
    "--service_id 0x1ffff",
    "--service_id 0x25",
    "--service_id 0x17530",
    "--service_id 0x10661a8",
    "--service_id 0x1060384",
    "--service_id 0x6234",
    "--pkey 0x7fff",
    "--pkey 0xffff --service_id 0x10000",
    "-Q 8",
    "--sl 3",
    "--sl 2",
    "-M 3:0",
    "--pkt_lifetime 12 --pkt_lifetime_selector 1",
    "-R 3:2",
    "-R 5:1",
];

/// PathRecords from the SM's host and from the first switch to every LID, with each of the
/// requirements, both SMs reading `policy` with `qos TRUE`.
fn path_records_under(group: &str, policy: &'static str) {
    let setup = SmSetup {
        options: "qos TRUE\n",
        policy: Some(policy),
        ..SmSetup::default()
    };
    assert_same_answers_with(&setup, &[fabric("two-switch")], group, |f, lids| {
        let all = lid_list(lids);
        let sources = [sm_lid(f, lids), all[1]];
        sources
            .into_iter()
            .flat_map(|from| all.iter().map(move |&to| (from, to)))
            .flat_map(|(from, to)| {
                POLICY_REQUIREMENTS
                    .iter()
                    .map(move |req| Query::saquery(&format!("-p --slid {from} --dlid {to} {req}")))
            })
            .collect()
    });
}

#[test]
fn path_records_under_a_qos_policy() {
    path_records_under("path-records-policy", POLICY);
}

/// The policies the reader's own tests accept: every section and shape (SL 16 on a level, a
/// qos-ulps line per ULP), and the least a policy can be.
#[test]
fn path_records_under_the_readers_accepted_policies() {
    path_records_under(
        "path-records-policy-full",
        include_str!("../../opensm-compat/tests/data/qos-policy/accepted/full.conf"),
    );
    path_records_under(
        "path-records-policy-minimal",
        include_str!("../../opensm-compat/tests/data/qos-policy/accepted/minimal.conf"),
    );
}

/// The Default partition limited for every port but the SM's, and a partition of three of the
/// hosts (H3, H4 and both ports of H5, the query node): H2 and the switches share no partition
/// with the query node.
const SPLIT_PARTITIONS: &str = "\
Default=0x7fff : ALL, SELF=full ;
hosts=0x0101 : 0x0002c90000100005=full, 0x0002c90000100007=full, 0x0002c90000100009=full, \
0x0002c9000010000a=full ;
";

/// What a port is told of the ports it shares no partition with: every record and path from
/// the query node, both SMs reading the same partitions.conf.
#[test]
fn records_and_paths_hide_ports_that_share_no_partition() {
    let setup = SmSetup {
        partitions: Some(SPLIT_PARTITIONS),
        ..SmSetup::default()
    };
    assert_same_answers_with(&setup, &[fabric("two-switch")], "partitions", |_, lids| {
        let mut queries: Vec<Query> = ["", "PIR", "-g"]
            .into_iter()
            .chain(FABRIC_RECORDS)
            .map(Query::saquery)
            .collect();
        // Per LID, where a whole answer fits one MAD (ibsim carries no more): hidden or not.
        for lid in lid_list(lids) {
            for query in ["NR", "PIR", "--smkey 1 PKTR"] {
                queries.push(Query::saquery(&format!("{query} {lid}")));
            }
        }
        // Paths between every two LIDs, which the query node is told only when it shares a
        // partition with both ends.
        queries.extend(every_pair(lids));
        queries
    });
}

/// The records ibqos answers differently from OpenSM on purpose, as README's compatibility
/// section lists them: per query, the records each SM answers (`None`: the query failed) and,
/// for a PortInfoRecord, the VLCap it shows. If OpenSM or ibqos changes one of these, this
/// test fails and the list is to be brought up to date.
#[test]
fn deliberate_differences_are_those_the_readme_lists() {
    let tools = SaTools::require();
    let dir = TestDir::new("sa-deliberate-differences");
    let fabric = fabric("two-switch");
    // Each query with OpenSM's answer and ibqos's: (records, VLCap). The crash is last, as
    // OpenSM answers nothing after it.
    type Answer = (Option<usize>, Option<&'static str>);
    let cases = |lids: &Lids| -> Vec<(String, Answer, Answer)> {
        let s1 = lids[&("S1".to_owned(), 0)];
        let h1 = lids[&("H1".to_owned(), 1)];
        vec![
            // S1's port 6 has no link: OpenSM zeros the record, ibqos shows the port.
            (
                format!("PIR {s1}/6"),
                (Some(1), Some("?(0)")),
                (Some(1), Some("VL0-7")),
            ),
            // No input port 9 on an 8-port switch: OpenSM answers a zeroed table.
            (format!("SL2VL {s1}/9/1"), (Some(1), None), (Some(0), None)),
            // No P_Key block 100 on H1, no block 1 on S1's port 0: OpenSM answers zeros.
            (
                format!("--smkey 1 PKTR {h1}/1/100"),
                (Some(1), None),
                (Some(0), None),
            ),
            (
                format!("--smkey 1 PKTR {s1}/0/1"),
                (Some(1), None),
                (Some(0), None),
            ),
            // S1's port 3 links to S2: ibqos reads no P_Key table between switches.
            (
                format!("--smkey 1 PKTR {s1}/3/0"),
                (Some(1), None),
                (Some(0), None),
            ),
            // No output port 9: OpenSM's SA dies (saquery times out), ibqos answers none.
            (format!("SL2VL {s1}/1/9"), (None, None), (Some(0), None)),
        ]
    };
    let mut wrong = Vec::new();
    for kind in [SmKind::OpenSm, SmKind::Ibqos] {
        let session = Session::start(
            kind,
            &tools,
            &fabric,
            &SmSetup::default(),
            &dir.subdir(&kind.to_string()),
        )
        .unwrap_or_else(|e| panic!("starting {kind}: {e}"));
        for (query, opensm, ibqos) in cases(&session.lids) {
            let raw = session.run(&Query::saquery(&query)).unwrap().raw;
            let records = raw
                .contains("--- exit status: 0")
                .then(|| raw.matches("Record dump:").count());
            let vl_cap = raw
                .lines()
                .find_map(|l| l.trim().strip_prefix("VLCap:"))
                .map(|v| v.trim_start_matches('.'));
            let expected = if kind == SmKind::OpenSm {
                opensm
            } else {
                ibqos
            };
            if (records, vl_cap) != expected {
                wrong.push(format!(
                    "{kind}: `saquery {query}`: {records:?} records, VLCap {vl_cap:?}; the \
                     README lists {expected:?}\n{raw}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
