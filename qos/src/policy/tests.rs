use super::*;

/// Two CAs (0x10, 0x11), one switch (0x20), SM on 0x10; partition 0x7fff with every port a
/// full member, as OpenSM has it without partitions.conf.
struct Fabric;

const CA1: EndPort = EndPort {
    guid: 0x10,
    node_type: NodeType::Ca,
};
const CA2: EndPort = EndPort {
    guid: 0x11,
    node_type: NodeType::Ca,
};
const SW: EndPort = EndPort {
    guid: 0x20,
    node_type: NodeType::Switch,
};

impl PortDirectory for Fabric {
    fn port_guids(&self) -> Vec<u64> {
        vec![0x10, 0x11, 0x20]
    }
    fn has_port(&self, guid: u64) -> bool {
        self.port_guids().contains(&guid)
    }
    fn node_port(&self, node: &str, port: u32) -> NodePort {
        match (node, port) {
            ("host HCA-1", 1) => NodePort::Port(0x10),
            ("host HCA-1", _) => NodePort::NoPort,
            _ => NodePort::NoNode,
        }
    }
    fn partition_by_pkey(&self, pkey: u16) -> Option<PartitionMembers> {
        (pkey == 0x7fff).then(|| PartitionMembers {
            full: self.port_guids(),
            limited: Vec::new(),
        })
    }
    fn partition_by_name(&self, name: &str) -> Option<PartitionMembers> {
        (name == "Default")
            .then(|| self.partition_by_pkey(0x7fff))
            .flatten()
    }
    fn sm_port(&self) -> Option<u64> {
        Some(0x10)
    }
}

fn level(name: &str, sl: u8) -> QosLevel {
    QosLevel {
        name: name.to_string(),
        sl,
        ..QosLevel::default()
    }
}

fn query(source: EndPort, destination: EndPort) -> PathQuery {
    PathQuery {
        source,
        destination,
        service_id: None,
        qos_class: None,
        pkey: None,
    }
}

fn sl_for(policy: &QosPolicy, q: &PathQuery) -> u8 {
    let (resolved, _) = policy.resolve(&Fabric).expect("resolves");
    resolved.level_for(q).expect("a level").sl
}

#[test]
fn ranges_are_swapped_sorted_and_merged_as_opensm_merges_them() {
    // Vector 39: `any, service-id 0x10-0x5, 0x20 : 2` and `any, pkey 0x8001 : 3`.
    assert_eq!(
        RangeSet::new([(0x10, 0x5), (0x20, 0x20)]).ranges(),
        [(0x5, 0x10), (0x20, 0x20)]
    );
    assert_eq!(RangeSet::pkeys([(0x8001, 0x8001)]).ranges(), [(1, 1)]);
    assert_eq!(
        RangeSet::new([(5, 9), (1, 4), (7, 12), (20, 20)]).ranges(),
        [(1, 12), (20, 20)],
        "adjacent and overlapping ranges join"
    );
    assert_eq!(
        RangeSet::new([(0, u64::MAX), (u64::MAX, u64::MAX)]).count(),
        1u128 << 64
    );
}

#[test]
fn first_default_level_wins() {
    // Vector 40: two qos-levels sections both defining `default`.
    let policy = QosPolicy {
        qos_levels: vec![level("default", 0), level("DEFAULT", 5)],
        ..QosPolicy::default()
    };
    assert_eq!(sl_for(&policy, &query(CA1, CA2)), 0);
}

#[test]
fn no_default_level_is_ac10_unless_qos_ulps_has_one() {
    let mut policy = QosPolicy {
        qos_levels: vec![level("Foo", 1)],
        ..QosPolicy::default()
    };
    assert_eq!(
        policy.resolve(&Fabric).unwrap_err(),
        ResolveError::NoDefaultLevel
    );
    policy.ulps.push(Ulp {
        kind: UlpKind::Default,
        sl: 4,
    });
    policy.ulps.push(Ulp {
        kind: UlpKind::Default,
        sl: 6,
    });
    assert_eq!(
        sl_for(&policy, &query(CA1, CA2)),
        6,
        "the last `default` line"
    );
}

#[test]
fn source_target_port_guid_needs_both_ends() {
    // Vector 43: `any, source-target-port-guid G : 8` with only the source in G.
    let policy = QosPolicy {
        qos_levels: vec![level("default", 0)],
        ulps: vec![Ulp {
            kind: UlpKind::AnySourcesTargets(RangeSet::new([(0x10, 0x10)])),
            sl: 8,
        }],
        ..QosPolicy::default()
    };
    assert_eq!(sl_for(&policy, &query(CA1, CA2)), 0);
    assert_eq!(sl_for(&policy, &query(CA1, CA1)), 8);
}

#[test]
fn criteria_need_their_component_mask_bits() {
    let policy = QosPolicy {
        qos_levels: vec![level("default", 0), level("storage", 3), level("hpc", 5)],
        match_rules: vec![
            MatchRule {
                service_ids: RangeSet::new([(0x100, 0x1ff)]),
                pkeys: RangeSet::pkeys([(0x8001, 0x8001)]),
                level: "STORAGE".to_string(),
                ..MatchRule::default()
            },
            MatchRule {
                qos_classes: RangeSet::new([(7, 7)]),
                level: "hpc".to_string(),
                ..MatchRule::default()
            },
        ],
        ..QosPolicy::default()
    };
    let mut q = query(CA1, CA2);
    q.service_id = Some(0x150);
    assert_eq!(
        sl_for(&policy, &q),
        0,
        "no P_Key in the query: rule 1 fails"
    );
    q.pkey = Some(0x0001);
    assert_eq!(sl_for(&policy, &q), 3, "P_Key compared without its top bit");
    q.service_id = None;
    q.qos_class = Some(7);
    assert_eq!(
        sl_for(&policy, &q),
        5,
        "rule 1 needs a service ID; rule 2 matches"
    );
}

#[test]
fn groups_match_by_node_type_guid_name_partition_and_self() {
    let group = |name: &str, g: PortGroup| PortGroup {
        name: name.to_string(),
        ..g
    };
    let policy = QosPolicy {
        port_groups: vec![
            group(
                "switches",
                PortGroup {
                    node_types: NodeTypes {
                        switch: true,
                        ..NodeTypes::default()
                    },
                    ..PortGroup::default()
                },
            ),
            group(
                "named",
                PortGroup {
                    port_names: vec![PortName {
                        node: "host HCA-1".to_string(),
                        port: 1,
                    }],
                    ..PortGroup::default()
                },
            ),
        ],
        qos_levels: vec![
            level("default", 0),
            level("to-switch", 2),
            level("from-named", 9),
        ],
        match_rules: vec![
            MatchRule {
                destinations: vec!["Switches".to_string()],
                level: "to-switch".to_string(),
                ..MatchRule::default()
            },
            MatchRule {
                sources: vec!["named".to_string()],
                level: "from-named".to_string(),
                ..MatchRule::default()
            },
        ],
        ..QosPolicy::default()
    };
    assert_eq!(sl_for(&policy, &query(CA2, SW)), 2);
    assert_eq!(sl_for(&policy, &query(CA1, CA2)), 9);
    assert_eq!(sl_for(&policy, &query(CA2, CA1)), 0);
}

#[test]
fn validation_errors_name_the_rule() {
    let mut policy = QosPolicy {
        qos_levels: vec![level("default", 0)],
        match_rules: vec![MatchRule {
            level: "nope".to_string(),
            ..MatchRule::default()
        }],
        ..QosPolicy::default()
    };
    assert_eq!(
        policy.resolve(&Fabric).unwrap_err().to_string(),
        "ERR AC11: qos-match-rule num 1: qos-level 'nope' not found"
    );
    policy.match_rules[0].level = "default".to_string();
    policy.match_rules[0].destinations = vec!["ghost".to_string()];
    assert_eq!(
        policy.resolve(&Fabric).unwrap_err(),
        ResolveError::UnknownDestination {
            rule: 1,
            group: "ghost".to_string()
        }
    );
    policy.match_rules[0].destinations.clear();
    policy.match_rules[0].pkeys = RangeSet::pkeys([(0x10, 0x11)]);
    let (_, warnings) = policy.resolve(&Fabric).unwrap();
    assert_eq!(warnings.len(), 2, "AC14 once per P_Key: {warnings:?}");
}

#[test]
fn ipoib_needs_a_partition_with_two_full_members() {
    // Vector 38.
    let mut policy = QosPolicy {
        qos_levels: vec![level("default", 0)],
        ulps: vec![Ulp {
            kind: UlpKind::Ipoib,
            sl: 4,
        }],
        ..QosPolicy::default()
    };
    let mut q = query(CA1, CA2);
    q.pkey = Some(0xffff);
    assert_eq!(sl_for(&policy, &q), 4);
    policy.ulps[0].kind = UlpKind::IpoibPkeys(RangeSet::pkeys([(0x8001, 0x8001)]));
    assert_eq!(
        policy.resolve(&Fabric).unwrap_err().to_string(),
        "IPoIB partition, pkey 0x0001 - partition doesn't exist"
    );
}

#[test]
fn a_full_guid_range_resolves_without_walking_it() {
    let policy = QosPolicy {
        port_groups: vec![PortGroup {
            name: "all".to_string(),
            port_guids: RangeSet::new([(0, u64::MAX)]),
            ..PortGroup::default()
        }],
        qos_levels: vec![level("default", 0)],
        ..QosPolicy::default()
    };
    let (resolved, _) = policy.resolve(&Fabric).unwrap();
    assert_eq!(resolved.groups[0].guids.len(), 3);
}

#[test]
fn port_name_of_a_missing_port_rejects_the_policy() {
    let policy = QosPolicy {
        port_groups: vec![PortGroup {
            name: "g".to_string(),
            port_names: vec![PortName {
                node: "host HCA-1".to_string(),
                port: 2,
            }],
            ..PortGroup::default()
        }],
        qos_levels: vec![level("default", 0)],
        ..QosPolicy::default()
    };
    assert_eq!(
        policy.resolve(&Fabric).unwrap_err().to_string(),
        "'host HCA-1' - port number out of range in port name"
    );
}
