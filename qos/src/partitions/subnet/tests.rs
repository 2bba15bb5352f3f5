use super::*;
use ibqos_mad::Guid;

const SM: u64 = 0x10;
const CA1: u64 = 0x11;
const CA2: u64 = 0x12;
const SWITCH: u64 = 0x20;

fn ports() -> Vec<EndPort> {
    let port = |guid, node_type| EndPort { guid, node_type };
    vec![
        port(SM, NodeType::Ca),
        port(CA1, NodeType::Ca),
        port(CA2, NodeType::Ca),
        port(SWITCH, NodeType::Switch),
    ]
}

fn member(ports: Members, membership: Membership) -> Member {
    Member { ports, membership }
}

fn definition(name: &str, pkey: Option<u16>, members: Vec<Member>) -> Partition {
    Partition {
        name: name.to_string(),
        pkey,
        members,
        ..Partition::default()
    }
}

fn resolve_with(definitions: Option<&Partitions>, options: PartitionOptions) -> SubnetPartitions {
    resolve(definitions, &ports(), Some(SM), options)
}

fn set(guids: &[u64]) -> BTreeSet<u64> {
    guids.iter().copied().collect()
}

#[test]
fn without_definitions_every_port_is_a_full_member_with_the_broadcast_group() {
    let subnet = resolve_with(None, PartitionOptions::default());
    let [default] = subnet.partitions.as_slice() else {
        panic!("one partition expected: {subnet:?}");
    };
    assert_eq!((default.name.as_str(), default.pkey), ("Default", 0x7fff));
    assert_eq!(default.full, set(&[SM, CA1, CA2, SWITCH]));
    assert!(default.limited.is_empty());
    let groups: Vec<_> = subnet.groups_of(0x7fff).collect();
    let [group] = groups.as_slice() else {
        panic!("one group expected: {subnet:?}");
    };
    assert_eq!(
        group.mgid,
        Gid(0xff12_401b_ffff_0000_0000_0000_ffff_ffff),
        "the P_Key bytes of the default group are 0xffff"
    );
    assert_eq!(
        (group.flags.q_key, group.flags.mtu, group.flags.rate),
        (0x0b1b, 4, 3)
    );
}

#[test]
fn with_definitions_the_default_partition_is_limited_but_for_the_sm_port() {
    let file = Partitions {
        partitions: vec![definition(
            "a",
            Some(0x8001),
            vec![member(Members::Port(Guid(CA1)), Membership::Full)],
        )],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let default = subnet.get(0x7fff).expect("the Default partition");
    assert_eq!(default.full, set(&[SM]));
    assert_eq!(default.limited, set(&[CA1, CA2, SWITCH]));
    assert!(
        subnet.groups_of(0x7fff).next().is_none(),
        "no ipoib on the implicit Default line"
    );
    let a = subnet
        .get(0x0001)
        .expect("P_Key 0x8001 keeps its low 15 bits");
    assert_eq!((a.full.clone(), a.limited.len()), (set(&[CA1]), 0));
    // The SM port's P_Keys: the Default one, full.
    assert_eq!(subnet.pkeys_of(SM), [0xffff]);
    assert_eq!(
        subnet.pkeys_of(CA1),
        [0x8001, 0x7fff],
        "table order: 0x0100 < 0xff7f"
    );
}

#[test]
fn partitions_are_in_the_order_of_the_byte_swapped_pkey() {
    let all = || vec![member(Members::All, Membership::Full)];
    let file = Partitions {
        partitions: vec![
            definition("x", Some(0x0200), all()),
            definition("y", Some(0x0003), all()),
            definition("z", Some(0x0101), all()),
        ],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let order: Vec<u16> = subnet.partitions.iter().map(|p| p.pkey).collect();
    // Swapped: 0x0200 -> 0x0002, 0x0101 -> 0x0101, 0x0003 -> 0x0300, 0x7fff -> 0xff7f.
    assert_eq!(order, [0x0200, 0x0101, 0x0003, 0x7fff]);
}

#[test]
fn a_repeated_pkey_merges_the_first_name_wins_and_the_last_membership_counts() {
    let file = Partitions {
        partitions: vec![
            definition(
                "first",
                Some(0x10),
                vec![member(Members::AllCas, Membership::Limited)],
            ),
            definition(
                "second",
                Some(0x8010),
                vec![member(Members::Port(Guid(CA2)), Membership::Full)],
            ),
        ],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let p = subnet.get(0x10).expect("one partition 0x10");
    assert_eq!(p.name, "first");
    assert_eq!(p.full, set(&[CA2]));
    assert_eq!(p.limited, set(&[SM, CA1]));
}

#[test]
fn unknown_ports_are_ignored_and_empty_partitions_dropped() {
    let file = Partitions {
        partitions: vec![
            definition(
                "ghost",
                Some(0x5),
                vec![member(Members::Port(Guid(0x99)), Membership::Full)],
            ),
            definition(
                "routers",
                Some(0x6),
                vec![member(Members::AllRouters, Membership::Full)],
            ),
        ],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let pkeys: Vec<u16> = subnet.partitions.iter().map(|p| p.pkey).collect();
    assert_eq!(pkeys, [0x7fff]);
}

#[test]
fn pkeys_are_generated_from_one_and_a_name_without_pkey_is_found_again() {
    let file = Partitions {
        partitions: vec![
            definition(
                "taken",
                Some(0x1),
                vec![member(Members::Port(Guid(CA1)), Membership::Full)],
            ),
            definition(
                "auto",
                None,
                vec![member(Members::Port(Guid(CA1)), Membership::Full)],
            ),
            definition(
                "auto",
                None,
                vec![member(Members::Port(Guid(CA2)), Membership::Full)],
            ),
            definition(
                "",
                None,
                vec![member(Members::AllSwitches, Membership::Full)],
            ),
        ],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let auto = subnet.get(0x2).expect("0x1 is taken, so 0x2");
    assert_eq!(
        (auto.name.as_str(), auto.full.clone()),
        ("auto", set(&[CA1, CA2]))
    );
    let unnamed = subnet.get(0x3).expect("the next generated P_Key");
    assert_eq!(unnamed.name, "0003");
}

#[test]
fn both_is_full_unless_allowed_and_sl_needs_qos() {
    let mut storage = definition(
        "s",
        Some(0x7),
        vec![member(Members::Port(Guid(CA1)), Membership::Both)],
    );
    storage.flags.sl = 3;
    let file = Partitions {
        partitions: vec![storage],
    };
    let plain = resolve_with(Some(&file), PartitionOptions::default());
    let s = plain.get(0x7).unwrap();
    assert_eq!((s.full.clone(), s.limited.len(), s.sl), (set(&[CA1]), 0, 0));
    let allowed = resolve_with(
        Some(&file),
        PartitionOptions {
            allow_both_pkeys: true,
            qos: true,
        },
    );
    let s = allowed.get(0x7).unwrap();
    assert_eq!(
        (s.full.clone(), s.limited.clone(), s.sl),
        (set(&[CA1]), set(&[CA1]), 3)
    );
    assert_eq!(allowed.pkeys_of(CA1), [0x0007, 0x8007, 0x7fff]);
}

#[test]
fn indx0_marks_the_port_and_a_later_plain_definition_of_it_clears_the_mark() {
    let mut first = definition(
        "i",
        Some(0x9),
        vec![member(Members::Port(Guid(CA1)), Membership::Full)],
    );
    first.indx0 = true;
    let file = Partitions {
        partitions: vec![first.clone()],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    assert_eq!(subnet.indx0, BTreeMap::from([(CA1, 0x8009)]));
    let again = definition(
        "i",
        Some(0x9),
        vec![member(Members::Port(Guid(CA1)), Membership::Limited)],
    );
    let file = Partitions {
        partitions: vec![first, again],
    };
    assert!(
        resolve_with(Some(&file), PartitionOptions::default())
            .indx0
            .is_empty()
    );
}

#[test]
fn an_ipoib_definition_creates_its_broadcast_group_without_the_header_scopes() {
    let mut ipoib = definition(
        "ip",
        Some(0x8123),
        vec![member(Members::All, Membership::Full)],
    );
    ipoib.ipoib = true;
    ipoib.flags.scope_mask = 1 << 5;
    ipoib.flags.mtu = 5;
    let file = Partitions {
        partitions: vec![ipoib],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let groups: Vec<_> = subnet.groups_of(0x123).collect();
    let [group] = groups.as_slice() else {
        panic!("one group");
    };
    assert_eq!(group.mgid, Gid(0xff12_401b_8123_0000_0000_0000_ffff_ffff));
    assert_eq!(
        (group.flags.scope_mask, group.flags.mtu, group.flags.q_key),
        (0, 5, 0x0b1b)
    );
}

#[test]
fn groups_are_in_the_files_order_with_those_of_dropped_partitions() {
    let with_ipoib = |name: &str, pkey: u16, ports: Members| Partition {
        ipoib: true,
        ..definition(name, Some(pkey), vec![member(ports, Membership::Full)])
    };
    let file = Partitions {
        partitions: vec![
            with_ipoib("Default", 0x7fff, Members::All),
            with_ipoib("absent", 0x0005, Members::Port(Guid(0xdead))),
            with_ipoib("storage", 0x0010, Members::All),
        ],
    };
    let subnet = resolve_with(Some(&file), PartitionOptions::default());
    let created: Vec<u16> = subnet.groups.iter().map(|g| g.pkey).collect();
    assert_eq!(
        created,
        [0x7fff, 0x0005, 0x0010],
        "definitions in file order"
    );
    assert!(subnet.get(0x0005).is_none(), "no member: dropped");
    let pkeys: Vec<u16> = subnet.partitions.iter().map(|p| p.pkey).collect();
    assert_eq!(pkeys, [0x0010, 0x7fff], "the table stays in P_Key order");
}
