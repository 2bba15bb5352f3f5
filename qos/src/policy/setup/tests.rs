use super::*;
use crate::policy::{NodeType, NodeTypes, PortGroup, QosSetup, RangeSet, Sl2vlScope, VlarbScope};

/// A switch 0x100 with ports 1-3: port 1 to CA 0x11 (Storage), port 2 to CA 0x21 (Compute),
/// port 3 down; base port 0.
fn ports() -> Vec<SetupPort> {
    let switch = EndPort {
        guid: 0x100,
        node_type: NodeType::Switch,
    };
    let ca = |guid| EndPort {
        guid,
        node_type: NodeType::Ca,
    };
    let switch_port = |port, peer: Option<EndPort>| SetupPort {
        node: 0x100,
        port,
        member: switch,
        peer,
        switch: true,
        output: peer.is_some(),
        name: format!("sw/P{port}"),
    };
    let ca_port = |node: u64, guid| SetupPort {
        node,
        port: 1,
        member: ca(guid),
        peer: Some(switch),
        switch: false,
        output: true,
        name: format!("{node:#x}/P1"),
    };
    vec![
        switch_port(0, None),
        switch_port(1, Some(ca(0x11))),
        switch_port(2, Some(ca(0x21))),
        switch_port(3, None),
        ca_port(0x10, 0x11),
        ca_port(0x20, 0x21),
    ]
}

fn group(name: &str, guids: &[u64], switch: bool) -> (PortGroup, ResolvedGroup) {
    let node_types = NodeTypes {
        switch,
        ..NodeTypes::default()
    };
    (
        PortGroup {
            name: name.to_string(),
            port_guids: RangeSet::new(guids.iter().map(|&g| (g, g))),
            node_types,
            ..PortGroup::default()
        },
        ResolvedGroup {
            name: name.to_string(),
            guids: guids.iter().copied().collect(),
            node_types,
        },
    )
}

/// The policy with groups Storage (CA 0x11), Compute (CA 0x21), Switches (node type), and
/// their resolution on [`ports`].
fn policy(setup: QosSetup) -> (QosPolicy, Vec<ResolvedGroup>) {
    let (groups, resolved): (Vec<_>, Vec<_>) = [
        group("Storage", &[0x11], false),
        group("Compute", &[0x21], false),
        group("Switches", &[], true),
    ]
    .into_iter()
    .unzip();
    (
        QosPolicy {
            port_groups: groups,
            setup,
            ..QosPolicy::default()
        },
        resolved,
    )
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn apply(setup: QosSetup) -> Result<SetupTables, Vec<SetupError>> {
    let (policy, groups) = policy(setup);
    policy.check_setup()?.apply(&groups, &ports())
}

fn table(entries: &[(u8, u8)]) -> VlArbTable {
    let entries: Vec<VlArbEntry> = entries
        .iter()
        .map(|&(v, w)| VlArbEntry::new(v, w))
        .collect();
    VlArbTable::from_entries(&entries)
}

#[test]
fn a_vlarb_scope_programs_its_group_and_the_ports_facing_it() {
    let tables = apply(QosSetup {
        vlarb_scopes: vec![VlarbScope {
            groups: names(&["storage"]),
            across: names(&["Storage"]),
            vlarb_high: vec![(1, 255)],
            vl_high_limit: Some(10),
            ..VlarbScope::default()
        }],
        ..QosSetup::default()
    })
    .unwrap();
    let programmed: Vec<(u64, u8)> = tables.ports.keys().copied().collect();
    // The storage CA's port, and the switch port facing it; not the compute side.
    assert_eq!(programmed, [(0x10, 1), (0x100, 1)]);
    let port = tables.port(0x100, 1).unwrap();
    assert_eq!(port.vlarb_high.unwrap().value, table(&[(1, 255)]));
    assert_eq!(port.vlarb_low, None, "left to the port class");
    assert_eq!(
        port.vl_high_limit,
        Some(Scoped {
            value: 10,
            scope: ScopeId::Vlarb(1)
        })
    );
}

#[test]
fn a_switch_group_takes_every_output_port_of_the_switch() {
    let tables = apply(QosSetup {
        vlarb_scopes: vec![VlarbScope {
            groups: names(&["Switches"]),
            vlarb_low: vec![(0, 1), (1, 2)],
            ..VlarbScope::default()
        }],
        ..QosSetup::default()
    })
    .unwrap();
    let programmed: Vec<(u64, u8)> = tables.ports.keys().copied().collect();
    // Ports 1 and 2 are up; base port 0 and down port 3 are no outputs.
    assert_eq!(programmed, [(0x100, 1), (0x100, 2)]);
}

#[test]
fn sl2vl_scopes_choose_entries_by_group_and_by_the_peers_of_inputs_and_outputs() {
    let vls: [u8; 16] = std::array::from_fn(|sl| (sl % 4) as u8);
    let tables = apply(QosSetup {
        sl2vl_scopes: vec![
            // Traffic from compute to storage through the switch.
            Sl2vlScope {
                across_from: names(&["Compute"]),
                across_to: names(&["Storage"]),
                sl2vl_table: vls,
                ..Sl2vlScope::default()
            },
            // The compute CA's own table.
            Sl2vlScope {
                groups: names(&["Compute"]),
                sl2vl_table: vls,
                ..Sl2vlScope::default()
            },
        ],
        ..QosSetup::default()
    })
    .unwrap();
    let entries: Vec<(u64, u8, u8)> = tables.sl2vl.keys().copied().collect();
    assert_eq!(entries, [(0x20, 0, 1), (0x100, 2, 1)]);
    assert_eq!(tables.sl2vl[&(0x100, 2, 1)].scope, ScopeId::Sl2vl(1));
}

#[test]
fn from_and_to_keep_port_numbers_of_a_grouped_switch() {
    let tables = apply(QosSetup {
        sl2vl_scopes: vec![Sl2vlScope {
            groups: names(&["Switches"]),
            from: 1 << 0 | 1 << 3,
            to: 1 << 2,
            ..Sl2vlScope::default()
        }],
        ..QosSetup::default()
    })
    .unwrap();
    let entries: Vec<(u64, u8, u8)> = tables.sl2vl.keys().copied().collect();
    // Down port 3 is still an input.
    assert_eq!(entries, [(0x100, 0, 2), (0x100, 3, 2)]);
}

#[test]
fn scopes_that_disagree_on_a_port_are_an_error_naming_both() {
    let scope = |weight| VlarbScope {
        groups: names(&["Switches"]),
        vlarb_high: vec![(0, weight)],
        ..VlarbScope::default()
    };
    let errors = apply(QosSetup {
        vlarb_scopes: vec![scope(4), scope(4), scope(8)],
        ..QosSetup::default()
    })
    .unwrap_err();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        errors[0].to_string(),
        "vlarb-scope 1 and vlarb-scope 3 both set vlarb-high on sw/P1 (and on 1 more), to \
         different values"
    );
    assert_eq!(errors[0].scope(), ScopeId::Vlarb(3));
    // The same table twice is no conflict.
    assert!(
        apply(QosSetup {
            vlarb_scopes: vec![scope(4), scope(4)],
            ..QosSetup::default()
        })
        .is_ok()
    );
}

#[test]
fn what_no_port_can_hold_is_refused_before_any_fabric() {
    let (policy, _) = policy(QosSetup {
        vlarb_scopes: vec![VlarbScope {
            groups: names(&["Nobody"]),
            vlarb_high: vec![(15, 1), (1, 256)],
            vlarb_low: vec![(0, 1); 65],
            vl_high_limit: Some(256),
            ..VlarbScope::default()
        }],
        ..QosSetup::default()
    });
    let messages: Vec<String> = policy
        .check_setup()
        .unwrap_err()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        messages,
        [
            "vlarb-scope 1: port-group 'Nobody' not found",
            "vlarb-scope 1: vlarb-high entry 1 is 15:1; a VL arbitration entry is a VL 0-14 and \
             a weight 0-255",
            "vlarb-scope 1: vlarb-high entry 2 is 1:256; a VL arbitration entry is a VL 0-14 \
             and a weight 0-255",
            "vlarb-scope 1: vlarb-low has 65 entries; a VL arbitration table holds at most 64",
            "vlarb-scope 1: vl-high-limit 256 does not fit PortInfo.VLHighLimit (0-255)",
        ]
    );
}
