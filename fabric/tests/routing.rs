//! Routing engines on the shared and generated fabrics, traced hop by hop.

use ibqos_fabric::generate::{self, assign_lids};
use ibqos_fabric::netfile::parse_net_str;
use std::collections::{BTreeMap, BTreeSet};

use ibqos_fabric::routing::{
    MulticastRouting, MulticastTree, PortMask, Ranks, Routes, RoutingError, RoutingOptions,
    TraceError, dnup, mft_blocks, minhop, trace, updn, updn_roots,
};
use ibqos_fabric::{Node, NodeId, PortRef, Topology};
use ibqos_mad::MftModifier;
use proptest::prelude::*;

fn with_lids(mut t: Topology, lmc: u8) -> Topology {
    assign_lids(&mut t, lmc).unwrap();
    t
}

fn net(text: &str) -> Topology {
    with_lids(parse_net_str(text).unwrap().topology, 0)
}

fn fabrics() -> Vec<(&'static str, Topology)> {
    vec![
        ("two-switch", net(include_str!("../data/two-switch.net"))),
        ("fat-tree-16", net(include_str!("../data/fat-tree-16.net"))),
        (
            "fat-tree3",
            with_lids(generate::fat_tree3(4, 4, 2).unwrap(), 0),
        ),
        ("ring", with_lids(generate::ring(6, 2).unwrap(), 0)),
        ("torus", with_lids(generate::torus_2d(4, 3, 1).unwrap(), 0)),
        (
            "torus-lmc",
            with_lids(generate::torus_2d(3, 3, 1).unwrap(), 2),
        ),
    ]
}

fn is_switch(t: &Topology, id: NodeId) -> bool {
    t.node(id).is_some_and(Node::is_switch)
}

/// The switch-to-switch steps of a traced path.
fn switch_hops(t: &Topology, path: &[PortRef]) -> Vec<(NodeId, NodeId)> {
    path.iter()
        .filter(|p| p.port != 0 && is_switch(t, p.node))
        .filter_map(|&p| Some((p.node, t.peer(p)?.node)))
        .filter(|&(_, n)| is_switch(t, n))
        .collect()
}

/// Every end port reaches every LID of every other end port; returns each path.
fn all_paths(t: &Topology, routes: &Routes) -> Vec<(PortRef, PortRef, Vec<PortRef>)> {
    paths_to(t, routes, |_| true)
}

/// Every end port's paths to every LID of the end ports `wanted` accepts; panics on a loop, a
/// missing route or a wrong destination.
fn paths_to(
    t: &Topology,
    routes: &Routes,
    wanted: impl Fn(PortRef) -> bool,
) -> Vec<(PortRef, PortRef, Vec<PortRef>)> {
    let ends: Vec<PortRef> = t
        .endports()
        .filter(|&p| t.port(p).unwrap().lid != 0)
        .collect();
    let mut out = Vec::new();
    for &from in &ends {
        for &to in ends.iter().filter(|&&to| wanted(to)) {
            for lid in t.port(to).unwrap().lid_range().unwrap() {
                let path = trace(t, routes, from, lid)
                    .unwrap_or_else(|e| panic!("{from} -> LID {lid}: {e}"));
                assert_eq!(path.last(), Some(&to));
                out.push((from, to, path));
            }
        }
    }
    out
}

/// BFS hop distance between switches.
fn switch_distance(t: &Topology, a: NodeId, b: NodeId) -> usize {
    let mut dist = vec![usize::MAX; t.len()];
    let mut queue = std::collections::VecDeque::from([a]);
    dist[a.index()] = 0;
    while let Some(s) = queue.pop_front() {
        for (_, port) in t.node(s).unwrap().existing_ports() {
            if let Some(peer) = port.peer.filter(|p| is_switch(t, p.node))
                && dist[peer.node.index()] == usize::MAX
            {
                dist[peer.node.index()] = dist[s.index()] + 1;
                queue.push_back(peer.node);
            }
        }
    }
    dist[b.index()]
}

fn attached_switch(t: &Topology, p: PortRef) -> NodeId {
    if is_switch(t, p.node) {
        p.node
    } else {
        t.peer(p).unwrap().node
    }
}

#[test]
fn minhop_reaches_everything_on_shortest_paths() {
    for (name, t) in fabrics() {
        let routes = minhop(&t, &RoutingOptions::default()).unwrap();
        for (sw, lft) in routes.iter() {
            assert_eq!(lft.len(), usize::from(routes.max_lid()) + 1);
            let own = t.port(PortRef::new(sw, 0)).unwrap().lid_range().unwrap();
            assert!(own.clone().all(|l| lft[usize::from(l)] == 0), "{name}");
        }
        for (from, to, path) in all_paths(&t, &routes) {
            let hops = switch_hops(&t, &path).len();
            let expected = switch_distance(&t, attached_switch(&t, from), attached_switch(&t, to));
            if from != to {
                assert_eq!(hops, expected, "{name}: {from} -> {to}: {path:?}");
            }
        }
    }
}

#[test]
fn minhop_balances_leaf_uplinks_like_opensm() {
    let t = net(include_str!("../data/fat-tree-16.net"));
    let routes = minhop(&t, &RoutingOptions::default()).unwrap();
    for leaf in ["L0", "L1", "L2", "L3"] {
        let id = t.node_by_name(leaf).unwrap();
        // CA LIDs per uplink: OpenSM's port profile counts CA destinations only.
        let mut per_port = [0usize; 2];
        for (_, ca) in t.cas() {
            let lid = ca.port(1).unwrap().lid;
            match routes.port(id, lid).unwrap() {
                5 => per_port[0] += 1,
                6 => per_port[1] += 1,
                _ => {}
            }
        }
        assert_eq!(per_port, [6, 6], "{leaf}");
    }
}

/// On a full three-level fat tree every host reaches every other up to the lowest common tier and
/// straight back down: 2 links behind one edge switch, 4 within a pod, 6 between pods.
#[test]
fn minhop_on_a_three_level_fat_tree_goes_up_then_down() {
    for k in [4, 8] {
        let t = with_lids(generate::fat_tree3(k, k, k / 2).unwrap(), 0);
        let routes = minhop(&t, &RoutingOptions::default()).unwrap();
        let name = |p: PortRef| t.node(p.node).unwrap().name.as_str();
        // `H{pod}_{edge}_{h}` without its host number: the edge switch it hangs off.
        let edge = |p: PortRef| name(p).rsplit_once('_').unwrap().0.to_owned();
        let pod = |p: PortRef| name(p).split_once('_').unwrap().0.to_owned();
        // Switch names start with their tier: Edge, Aggregation, Core.
        let tier = |p: &PortRef| "EAC".find(&name(*p)[..1]).unwrap();
        let mut pairs = 0;
        for (from, to, path) in all_paths(&t, &routes) {
            if from == to || is_switch(&t, from.node) || is_switch(&t, to.node) {
                continue;
            }
            let tiers: Vec<usize> = path[1..path.len() - 1].iter().map(tier).collect();
            let expected: &[usize] = if pod(from) != pod(to) {
                &[0, 1, 2, 1, 0]
            } else if edge(from) != edge(to) {
                &[0, 1, 0]
            } else {
                &[0]
            };
            assert_eq!(
                (path.len() - 1, tiers.as_slice()),
                (expected.len() + 1, expected),
                "k={k}: {from} -> {to}: {path:?}"
            );
            pairs += 1;
        }
        let hosts = k * k * k / 4;
        assert_eq!(pairs, hosts * (hosts - 1), "k={k}");
    }
}

#[test]
fn lmc_ranges_spread_over_paths() {
    let t = with_lids(generate::fat_tree(2, 2, 1, 4).unwrap(), 1);
    let routes = minhop(&t, &RoutingOptions::default()).unwrap();
    let l0 = t.node_by_name("L0").unwrap();
    let h1 = t
        .node(t.node_by_name("H1_0").unwrap())
        .unwrap()
        .port(1)
        .unwrap()
        .lid;
    let ports: Vec<u8> = (h1..h1 + 2).map(|l| routes.port(l0, l).unwrap()).collect();
    assert_eq!(ports, vec![2, 3]);
}

/// Where OpenSM detects roots, every end port reaches every CA, on a path that never turns
/// from down to up; where it detects none (a ring, a torus, two equal switches), updn fails.
#[test]
fn updn_reaches_every_ca_and_never_turns_down_then_up() {
    for (name, t) in fabrics() {
        let roots = updn_roots(&t);
        let Ok(routes) = updn(&t, &RoutingOptions::default()) else {
            assert!(roots.is_empty(), "{name}");
            assert_eq!(
                updn(&t, &RoutingOptions::default()),
                Err(RoutingError::NoRoots),
                "{name}"
            );
            continue;
        };
        assert!(matches!(name, "fat-tree-16" | "fat-tree3"), "{name}");
        let ranks = Ranks::new(&t, &roots).unwrap();
        let guids = roots.iter().map(|&r| t.node(r).unwrap().guid).collect();
        let named = RoutingOptions {
            root_guids: Some(guids),
            ..RoutingOptions::default()
        };
        assert_eq!(routes, updn(&t, &named).unwrap(), "{name}");
        for (from, to, path) in paths_to(&t, &routes, |to| !is_switch(&t, to.node)) {
            let mut gone_down = false;
            for (a, b) in switch_hops(&t, &path) {
                let up = ranks.is_up(a, b);
                assert!(
                    !(gone_down && up),
                    "{name}: {from} -> {to} turns down then up: {path:?}"
                );
                gone_down |= !up;
            }
        }
    }
}

/// OpenSM leaves a spine's LID unset on the other spines: the only path goes down and up.
#[test]
fn updn_leaves_spine_to_spine_unrouted() {
    let t = net(include_str!("../data/fat-tree-16.net"));
    let routes = updn(&t, &RoutingOptions::default()).unwrap();
    let lid = |name: &str| {
        let id = t.node_by_name(name).unwrap();
        t.port(PortRef::new(id, 0)).unwrap().lid
    };
    let (s0, s1) = (t.node_by_name("S0").unwrap(), t.node_by_name("S1").unwrap());
    assert_eq!(routes.port(s0, lid("S1")), None);
    assert_eq!(routes.port(s1, lid("S0")), None);
    assert_eq!(
        trace(&t, &routes, PortRef::new(s0, 0), lid("S1")),
        Err(TraceError::NoRoute {
            switch: s0,
            lid: lid("S1")
        })
    );
    // The leaves reach both spines, and minhop routes spine to spine through a leaf.
    let l0 = t.node_by_name("L0").unwrap();
    assert!(routes.port(l0, lid("S1")).is_some());
    assert!(
        minhop(&t, &RoutingOptions::default())
            .unwrap()
            .port(s0, lid("S1"))
            .is_some()
    );
}

#[test]
fn updn_roots_are_the_spines_of_a_fat_tree() {
    let t = net(include_str!("../data/fat-tree-16.net"));
    let names: Vec<&str> = updn_roots(&t)
        .into_iter()
        .map(|id| t.node(id).unwrap().name.as_str())
        .collect();
    assert_eq!(names, vec!["S0", "S1"]);
    // Three levels: the cores, two hops from every edge switch.
    let t = generate::fat_tree3(4, 4, 2).unwrap();
    let names: Vec<&str> = updn_roots(&t)
        .into_iter()
        .map(|id| t.node(id).unwrap().name.as_str())
        .collect();
    assert_eq!(names, vec!["C0", "C1", "C2", "C3"]);
    // 36 leaves: each holds under 5% of the hosts, so every leaf is a root too.
    let t = net(include_str!("../data/fat-tree-648.net"));
    assert_eq!(updn_roots(&t).len(), t.switches().count());
    // A ring has no spine, and no root.
    assert!(updn_roots(&generate::ring(5, 1).unwrap()).is_empty());
}

#[test]
fn routing_errors() {
    let t = generate::ring(3, 1).unwrap();
    assert_eq!(
        minhop(&t, &RoutingOptions::default()),
        Err(RoutingError::NoLids)
    );
    let mut partial = with_lids(t.clone(), 0);
    let s0 = partial.node_by_name("S0").unwrap();
    partial.port_mut(PortRef::new(s0, 0)).unwrap().lid = 0;
    assert_eq!(
        minhop(&partial, &RoutingOptions::default()),
        Err(RoutingError::MissingLid("\"S0\"[0]".into()))
    );
    partial.port_mut(PortRef::new(s0, 0)).unwrap().lid = 2;
    assert!(matches!(
        minhop(&partial, &RoutingOptions::default()),
        Err(RoutingError::Lid(_))
    ));
    let mut cut = with_lids(t, 0);
    let s1 = cut.node_by_name("S1").unwrap();
    cut.disconnect(PortRef::new(s1, 1));
    cut.disconnect(PortRef::new(s1, 2));
    assert!(matches!(
        minhop(&cut, &RoutingOptions::default()),
        Err(RoutingError::Unreachable { .. })
    ));
    let h = cut.node_by_name("H0_0").unwrap();
    assert_eq!(Ranks::new(&cut, &[h]), Err(RoutingError::BadRoot(h)));
    // OpenSM looks the root GUIDs up among the switches: a CA's is ignored, and none is left.
    let ca_root = RoutingOptions {
        root_guids: Some(vec![cut.node(h).unwrap().guid]),
        ..RoutingOptions::default()
    };
    assert_eq!(updn(&cut, &ca_root), Err(RoutingError::NoRoots));
    let no_hosts = with_lids(generate::ring(3, 0).unwrap(), 0);
    assert_eq!(
        dnup(&no_hosts, &RoutingOptions::default()),
        Err(RoutingError::NoLeaves)
    );
}

/// A random connected fabric: a random spanning tree plus extra links, some hosts.
fn arb_fabric() -> impl Strategy<Value = Topology> {
    (1usize..9)
        .prop_flat_map(|n| {
            (
                Just(n),
                proptest::collection::vec(any::<prop::sample::Index>(), n),
                proptest::collection::vec(
                    (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
                    0..n + 2,
                ),
                proptest::collection::vec(0usize..3, n),
            )
        })
        .prop_map(|(n, parents, extra, hosts)| {
            let mut edges: Vec<(usize, usize)> = (1..n).map(|i| (parents[i].index(i), i)).collect();
            edges.extend(
                extra
                    .iter()
                    .map(|(a, b)| (a.index(n), b.index(n)))
                    .filter(|(a, b)| a != b),
            );
            let mut t = Topology::new();
            let mut next_port = vec![1usize; n];
            let radix = 2 * edges.len() + 3;
            let sw: Vec<NodeId> = (0..n)
                .map(|i| {
                    t.add_node(Node::new(
                        ibqos_fabric::NodeKind::Switch,
                        0x200000 + i as u64,
                        format!("S{i}"),
                        radix as u8,
                    ))
                    .unwrap()
                })
                .collect();
            for (a, b) in edges {
                let (pa, pb) = (next_port[a], next_port[b]);
                next_port[a] += 1;
                next_port[b] += 1;
                t.connect(PortRef::new(sw[a], pa as u8), PortRef::new(sw[b], pb as u8))
                    .unwrap();
            }
            for (i, &h) in hosts.iter().enumerate() {
                for k in 0..h {
                    let ca = t
                        .add_node(Node::new(
                            ibqos_fabric::NodeKind::Ca,
                            0x100000 + 8 * (i * 3 + k) as u64,
                            format!("H{i}_{k}"),
                            1,
                        ))
                        .unwrap();
                    t.connect(PortRef::new(sw[i], next_port[i] as u8), PortRef::new(ca, 1))
                        .unwrap();
                    next_port[i] += 1;
                }
            }
            with_lids(t, 0)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_fabrics_route_without_loops(t in arb_fabric()) {
        // all_paths panics on any unreachable LID or loop.
        let min = minhop(&t, &RoutingOptions::default()).unwrap();
        all_paths(&t, &min);
        // OpenSM's up/down searches may leave a CA unreached on an irregular fabric, but what
        // they route never loops and arrives where the LID lives.
        let root = t.switches().next().unwrap().1.guid;
        let one_root = RoutingOptions {
            root_guids: Some(vec![root]),
            ..RoutingOptions::default()
        };
        let connected = RoutingOptions {
            connect_roots: true,
            ..RoutingOptions::default()
        };
        // With a single root, the search's row toward it is already the min-hop row that
        // `connect_roots` keeps.
        let one_root_connected = RoutingOptions {
            connect_roots: true,
            ..one_root.clone()
        };
        prop_assert_eq!(updn(&t, &one_root_connected), updn(&t, &one_root));
        let restricted = [
            updn(&t, &one_root),
            updn(&t, &connected),
            dnup(&t, &RoutingOptions::default()),
            dnup(&t, &connected),
        ];
        for routes in restricted.iter().flatten() {
            for from in t.endports().filter(|&p| t.port(p).unwrap().lid != 0) {
                for to in t.endports() {
                    for lid in t.port(to).unwrap().lid_range().into_iter().flatten() {
                        match trace(&t, routes, from, lid) {
                            Ok(path) => prop_assert_eq!(path.last(), Some(&to)),
                            Err(e) => {
                                prop_assert!(matches!(e, TraceError::NoRoute { .. }), "{}", e)
                            }
                        }
                    }
                }
            }
        }
        prop_assert_eq!(minhop(&t, &RoutingOptions::default()).unwrap(), min);
    }
}

/// A random fabric and a random set of its end ports.
fn arb_members() -> impl Strategy<Value = (Topology, Vec<PortRef>)> {
    arb_fabric().prop_flat_map(|t| {
        let ends: Vec<PortRef> = t.endports().collect();
        let all = ends.len();
        (Just(t), proptest::sample::subsequence(ends, 0..=all))
    })
}

/// Follows a tree's entries from its root, into a switch only over a link whose both ends'
/// entries hold it, never back out the way it came: the member ports the tree delivers to.
/// Fails on a switch met twice (a loop) and on an entry the walk does not meet.
fn delivered(t: &Topology, tree: &MulticastTree) -> BTreeSet<PortRef> {
    let mut out = BTreeSet::new();
    let Some(root) = tree.root else {
        assert!(tree.masks.is_empty());
        return out;
    };
    let mut seen = BTreeSet::new();
    let mut stack = vec![(root, None)];
    while let Some((switch, entered)) = stack.pop() {
        assert!(seen.insert(switch), "the tree loops through {switch}");
        let mask = tree.masks.get(&switch).copied().unwrap_or_default();
        for port in mask.ports().filter(|&p| Some(p) != entered) {
            if port == 0 {
                out.insert(PortRef::new(switch, 0));
                continue;
            }
            let peer = t
                .peer(PortRef::new(switch, port))
                .expect("an entry's port is linked");
            if !is_switch(t, peer.node) {
                out.insert(peer);
            } else if tree
                .masks
                .get(&peer.node)
                .is_some_and(|m| m.contains(peer.port))
            {
                stack.push((peer.node, Some(peer.port)));
            }
        }
    }
    let entries: BTreeSet<NodeId> = tree.masks.keys().copied().collect();
    assert!(entries.is_subset(&seen), "entries off the tree");
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// With every switch doing multicast, a tree reaches every member and nothing else, from
    /// one root, without loops, through linked ports only.
    #[test]
    fn multicast_trees_reach_every_member_without_loops((t, members) in arb_members()) {
        let tree = MulticastRouting::min_hop(&t, |_| true).unwrap().tree(&members).unwrap();
        prop_assert!(tree.unreached.is_empty());
        let expected: BTreeSet<PortRef> = members.iter().copied().collect();
        if expected.len() < 2 {
            prop_assert_eq!(tree, MulticastTree::default());
        } else {
            prop_assert_eq!(delivered(&t, &tree), expected);
        }
    }

    /// Switches without multicast hold no entry and stop their branches: every member is
    /// either delivered to or named unreached, never both.
    #[test]
    fn multicast_trees_skip_switches_without_multicast(
        (t, members) in arb_members(),
        unable in proptest::collection::vec(any::<bool>(), 8),
    ) {
        let unable = |s: NodeId| unable[s.index() % unable.len()];
        let Ok(tree) = MulticastRouting::min_hop(&t, |s| !unable(s)).unwrap().tree(&members) else {
            prop_assert!(t.switches().all(|(s, _)| unable(s)));
            return Ok(());
        };
        prop_assert!(tree.masks.keys().all(|&s| !unable(s)));
        let reached = delivered(&t, &tree);
        let missed: BTreeSet<PortRef> = tree.unreached.iter().map(|u| u.member).collect();
        prop_assert!(reached.is_disjoint(&missed));
        let all: BTreeSet<PortRef> = reached.union(&missed).copied().collect();
        if members.len() >= 2 {
            prop_assert_eq!(all, members.iter().copied().collect::<BTreeSet<_>>());
        }
    }

    /// The MFT blocks hold exactly the entries of the trees, each block once, every switch's
    /// top past its highest MLID with an entry.
    #[test]
    fn mft_blocks_hold_the_trees_entries(
        (t, members) in arb_members(),
        mlids in proptest::collection::vec(0u16..200, 1..4),
    ) {
        let routing = MulticastRouting::min_hop(&t, |_| true).unwrap();
        // Each MLID's members: the sample less its last k ports, so the trees differ.
        let trees: BTreeMap<u16, MulticastTree> = mlids
            .iter()
            .enumerate()
            .map(|(k, &offset)| {
                let mut m = members.clone();
                m.truncate(members.len().saturating_sub(k));
                (MftModifier::FIRST_MLID + offset, routing.tree(&m).unwrap())
            })
            .collect();
        let mfts = mft_blocks(&t, trees.iter().map(|(m, tree)| (*m, tree))).unwrap();
        let mut held: BTreeMap<(NodeId, u16), PortMask> = BTreeMap::new();
        let mut blocks = BTreeSet::new();
        for block in &mfts.blocks {
            prop_assert!(blocks.insert((block.switch, block.modifier)));
            let top = mfts.tops[&block.switch];
            prop_assert!(block.modifier.first_mlid() <= top);
            for (i, &bits) in block.table.port_masks.iter().enumerate() {
                let mlid = block.modifier.first_mlid() + i as u16;
                for k in (0..16).filter(|k| bits & 1 << k != 0) {
                    let port = block.modifier.position() * MftModifier::PORTS_PER_POSITION + k;
                    held.entry((block.switch, mlid)).or_default().insert(port);
                }
            }
        }
        let routed: BTreeMap<(NodeId, u16), PortMask> = trees
            .iter()
            .flat_map(|(&mlid, tree)| tree.masks.iter().map(move |(&s, &m)| ((s, mlid), m)))
            .collect();
        prop_assert_eq!(held, routed);
    }
}
