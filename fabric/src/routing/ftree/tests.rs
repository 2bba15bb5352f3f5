use super::*;
use crate::generate::{assign_lids, fat_tree, fat_tree3};
use crate::routing::trace;
use crate::topology::PortRef;

fn with_lids(mut topo: Topology, lmc: u8) -> Topology {
    assign_lids(&mut topo, lmc).unwrap();
    topo
}

/// fat-tree-16's shape: 4 leaves of 4 hosts, 2 spines.
fn two_level() -> Topology {
    with_lids(fat_tree(4, 2, 4, 8).unwrap(), 0)
}

fn node(topo: &Topology, name: &str) -> NodeId {
    topo.node_by_name(name).unwrap()
}

/// The switch of the tree that `name` is.
fn switch<'t>(tree: &'t Tree, topo: &Topology, name: &str) -> &'t Switch {
    let id = node(topo, name);
    tree.switches.iter().find(|sw| sw.node == id).unwrap()
}

fn refusal(topo: &Topology, options: &RoutingOptions) -> String {
    match ftree(topo, options) {
        Err(RoutingError::Refused(reason)) => reason,
        other => panic!("ftree did not refuse: {other:?}"),
    }
}

#[test]
fn leaves_rank_below_the_spines_with_one_group_per_neighbour() {
    let topo = two_level();
    let tree = Tree::construct(&topo, &RoutingOptions::default()).unwrap();
    assert_eq!(tree.leaf_rank, 1);
    let (leaf, spine) = (switch(&tree, &topo, "L0"), switch(&tree, &topo, "S1"));
    assert_eq!((leaf.rank, spine.rank), (Some(1), Some(0)));
    assert!(leaf.is_leaf && !spine.is_leaf);
    // One group per host port below the leaf, one per spine above it; each spine's groups
    // lead to the four leaves.
    assert_eq!((leaf.down.len(), leaf.up.len()), (4, 2));
    assert_eq!((spine.down.len(), spine.up.len()), (4, 0));
    assert!(leaf.sibling.is_empty() && spine.sibling.is_empty());
    // The first leaf in GUID order is 1.0; its spines 0.0 and 0.1 by the BFS.
    assert_eq!(tuple_text(&leaf.tuple), "1.0");
    let spines: Vec<String> = leaf
        .up
        .iter()
        .map(|&g| tuple_text(&tree.remote_tuple(g)))
        .collect();
    assert_eq!(spines, ["0.0", "0.1"]);
    assert_eq!(tree.leaves.len(), 4);
    assert_eq!(tree.max_cn_per_leaf, 4);
}

#[test]
fn parallel_links_form_one_group() {
    // Two leaves and four spines; each leaf's links to S2 and S3 move to S0 and S1, which then
    // have two links to each leaf, and S2 and S3 none.
    let mut topo = fat_tree(2, 4, 2, 8).unwrap();
    let name = |topo: &Topology, n: &str| node(topo, n);
    let (s0, s1) = (name(&topo, "S0"), name(&topo, "S1"));
    for (leaf, spare) in [("L0", 3), ("L1", 4)] {
        let leaf = name(&topo, leaf);
        for (port, spine) in [(5, s0), (6, s1)] {
            topo.disconnect(PortRef::new(leaf, port)).unwrap();
            topo.connect(PortRef::new(leaf, port), PortRef::new(spine, spare))
                .unwrap();
        }
    }
    let topo = with_lids(topo, 0);
    let tree = Tree::construct(&topo, &RoutingOptions::default()).unwrap();
    let leaf = switch(&tree, &topo, "L0");
    let ports: Vec<Vec<u8>> = leaf
        .up
        .iter()
        .map(|&g| tree.groups[g].links.iter().map(|l| l.port).collect())
        .collect();
    assert_eq!(ports, [vec![3, 5], vec![4, 6]]);
    // The spines without links are unranked and leave the tree.
    assert_eq!(tree.switches.len(), 4);
    let routes = ftree(&topo, &RoutingOptions::default()).unwrap();
    every_ca_reaches_every_ca(&topo, &routes);
}

#[test]
fn a_leaf_missing_an_uplink_is_no_fat_tree() {
    let mut topo = fat_tree(4, 2, 4, 8).unwrap();
    topo.disconnect(PortRef::new(node(&topo, "L0"), 6)).unwrap();
    let topo = with_lids(topo, 0);
    let reason = refusal(&topo, &RoutingOptions::default());
    assert!(
        reason.starts_with("ERR AB09: Different number of upward port groups on switches: "),
        "{reason}"
    );
    assert!(reason.contains("Index 1.0 - 1 groups"), "{reason}");
    // A root file skips the check, as OpenSM skips it: the tree routes.
    let roots = ["S0", "S1"].map(|s| topo.node(node(&topo, s)).unwrap().guid);
    let options = RoutingOptions {
        root_guids: Some(roots.to_vec()),
        ..RoutingOptions::default()
    };
    let routes = ftree(&topo, &options).unwrap();
    every_ca_reaches_every_ca(&topo, &routes);
}

#[test]
fn what_ftree_refuses_before_it_looks_at_the_tree() {
    let defaults = RoutingOptions::default();
    assert_eq!(
        refusal(&with_lids(fat_tree(4, 2, 4, 8).unwrap(), 2), &defaults),
        "LMC > 0 is not supported by fat-tree routing"
    );
    let mut one_switch = Topology::new();
    let sw = one_switch
        .add_node(crate::topology::Node::new(
            crate::NodeKind::Switch,
            0x10,
            "S",
            4,
        ))
        .unwrap();
    for (i, guid) in [0x20, 0x30].into_iter().enumerate() {
        let ca = crate::topology::Node::new(crate::NodeKind::Ca, guid, format!("H{i}"), 1);
        let ca = one_switch.add_node(ca).unwrap();
        one_switch
            .connect(PortRef::new(ca, 1), PortRef::new(sw, i as u8 + 1))
            .unwrap();
    }
    assert_eq!(
        refusal(&with_lids(one_switch, 0), &defaults),
        "Fabric has 1 switches - topology is not fat-tree"
    );
    let no_cns = RoutingOptions {
        cn_guids: Some(Vec::new()),
        ..RoutingOptions::default()
    };
    assert_eq!(
        refusal(&two_level(), &no_cns),
        "ERR AB27: Compute node guids file has no valid guids"
    );
    // One leaf under one spine: a fat tree needs two leaves with compute nodes.
    assert_eq!(
        refusal(&with_lids(fat_tree(1, 1, 2, 8).unwrap(), 0), &defaults),
        "Failed to find leaf switches - topology is not fat-tree"
    );
}

/// Follows every CA's route to every other CA port: it arrives, and loops nowhere.
fn every_ca_reaches_every_ca(topo: &Topology, routes: &Routes) {
    let ports: Vec<PortRef> = topo
        .cas()
        .flat_map(|(id, n)| n.existing_ports().map(move |(p, _)| PortRef::new(id, p)))
        .filter(|&p| topo.peer(p).is_some())
        .collect();
    for &from in &ports {
        for &to in &ports {
            let lid = topo.port(to).unwrap().lid;
            trace(topo, routes, from, lid).unwrap_or_else(|e| panic!("{from} to {to}: {e}"));
        }
    }
}

#[test]
fn every_ca_reaches_every_ca_on_two_and_three_level_trees() {
    let defaults = RoutingOptions::default();
    for topo in [
        two_level(),
        with_lids(fat_tree(6, 3, 5, 12).unwrap(), 0),
        with_lids(fat_tree3(4, 4, 2).unwrap(), 0),
        with_lids(fat_tree3(8, 3, 3).unwrap(), 0),
    ] {
        let routes = ftree(&topo, &defaults).unwrap();
        every_ca_reaches_every_ca(&topo, &routes);
    }
}

/// On a three-level tree only compute nodes move the counters first: listing a few CNs changes
/// where the rest go, and every CA still reaches every other.
#[test]
fn a_cn_list_changes_the_balance() {
    let topo = with_lids(fat_tree3(4, 4, 2).unwrap(), 0);
    let defaults = RoutingOptions::default();
    let port_guid = |name: &str| topo.port(PortRef::new(node(&topo, name), 1)).unwrap().guid;
    let cns = RoutingOptions {
        cn_guids: Some(
            ["H0_0_0", "H1_0_0", "H2_0_0", "H3_0_0", "H0_1_1"]
                .map(port_guid)
                .to_vec(),
        ),
        ..RoutingOptions::default()
    };
    let (all, some) = (
        ftree(&topo, &defaults).unwrap(),
        ftree(&topo, &cns).unwrap(),
    );
    assert_ne!(all, some);
    every_ca_reaches_every_ca(&topo, &some);
}

#[test]
fn switches_reach_switches_only_up_and_down() {
    // OpenSM's ftree routes no spine to another spine of a two-level tree; with
    // connect_roots they go through the last leaf.
    let topo = two_level();
    let (s0, s1) = (node(&topo, "S0"), node(&topo, "S1"));
    let s1_lid = topo.port(PortRef::new(s1, 0)).unwrap().lid;
    let routes = ftree(&topo, &RoutingOptions::default()).unwrap();
    assert_eq!(routes.port(s0, s1_lid), None);
    let connected = RoutingOptions {
        connect_roots: true,
        ..RoutingOptions::default()
    };
    let routes = ftree(&topo, &connected).unwrap();
    let last_leaf = node(&topo, "L3");
    assert_eq!(routes.port(s0, s1_lid), Some(4), "S0's port to L3");
    assert!(
        trace(&topo, &routes, PortRef::new(s0, 0), s1_lid)
            .unwrap()
            .iter()
            .any(|p| p.node == last_leaf)
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Any two-level tree ftree accepts routes every CA to every other, loop-free, and ftree
    /// accepts every full one.
    #[test]
    fn two_level_trees_route_every_ca(leaves in 2usize..7, spines in 1usize..5, hosts in 1usize..5) {
        let topo = with_lids(fat_tree(leaves, spines, hosts, 12).unwrap(), 0);
        let routes = ftree(&topo, &RoutingOptions::default()).unwrap();
        every_ca_reaches_every_ca(&topo, &routes);
    }
}
