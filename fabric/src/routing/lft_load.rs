//! How evenly a fabric's forwarding tables spread routes over the switches' ports: the figures
//! of infiniband-diags' `check_lft_balance`, from a topology with LIDs and its LFTs.
//!
//! A port's load is the number of LIDs the switch forwards out of it, counting only LIDs of CA
//! and router ports: data traffic goes there, while a switch's own LID draws management traffic
//! alone. Every LID of an LMC range counts, the base LID and each further path. Ports linked to
//! a CA or router are left out of the figures, as `check_lft_balance` leaves them out: they carry
//! exactly the LIDs of the one node behind them, whatever the routing did. A switch is balanced
//! when its counted ports differ by at most one route, `check_lft_balance`'s rule.

use serde::Serialize;

use super::{NO_ROUTE, Routes};
use crate::topology::{LidError, PortRef, Topology};

/// What the far end of a switch port is, which decides whether its routes count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Toward {
    /// Another switch: its routes count.
    Switch,
    /// A CA or router: left out of the figures.
    EndNode,
    /// Nothing, yet the LFT forwards there: its routes count, since they are lost.
    Unlinked,
}

/// One port of a switch and the routes it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortLoad {
    pub port: u8,
    pub toward: Toward,
    /// The CA and router LIDs the switch forwards out of this port.
    pub routes: u32,
}

/// The port carrying the most counted routes (the first in port order on a tie), if any carries
/// one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorstPort {
    pub port: u8,
    pub routes: u32,
    /// Its part of the switch's counted routes, above 0 and at most 1.
    pub share: f64,
}

/// One switch's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchLoad {
    /// NodeGUID, as `0x` and 16 hex digits.
    pub guid: String,
    /// NodeDescription, else the net file's name of the node.
    pub name: String,
    /// Every port 1..N that is linked or that the LFT forwards to, in port order.
    pub ports: Vec<PortLoad>,
    /// The routes of the counted ports (those not toward an end node).
    pub routes: u32,
    /// The fewest and most routes on a counted port; both 0 when there is none.
    pub min: u32,
    pub max: u32,
    /// `max - min`.
    pub spread: u32,
    pub worst: Option<WorstPort>,
    /// The spread is at most 1.
    pub balanced: bool,
    /// CA and router LIDs this switch has no route to.
    pub unrouted: u32,
}

/// Every switch's figures, in the topology's node order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LftLoad {
    /// The CA and router LIDs (LMC ranges included): what each switch routes and counts.
    pub end_lids: u32,
    pub switches: Vec<SwitchLoad>,
}

impl LftLoad {
    /// The switches whose counted ports differ by more than one route.
    pub fn unbalanced(&self) -> impl Iterator<Item = &SwitchLoad> {
        self.switches.iter().filter(|s| !s.balanced)
    }

    /// The switch with the largest spread (the first in node order on a tie), if any counts a
    /// route.
    pub fn worst(&self) -> Option<&SwitchLoad> {
        self.switches
            .iter()
            .filter(|s| s.worst.is_some())
            .rev()
            .max_by_key(|s| s.spread)
    }
}

/// The load of every switch port of `topo` under `routes`. Fails only when two end ports' LID
/// ranges overlap, since a LID's owner then decides nothing.
pub fn lft_load(topo: &Topology, routes: &Routes) -> Result<LftLoad, LidError> {
    let end_node_lids = end_node_lids(topo)?;
    let end_lids = end_node_lids.iter().filter(|&&end| end).count();
    let switches = topo
        .switches()
        .map(|(id, node)| {
            let lft = routes.lft(id).unwrap_or_default();
            let mut carried = vec![0u32; usize::from(node.num_ports()) + 1];
            let mut unrouted = 0;
            for (lid, _) in end_node_lids.iter().enumerate().filter(|(_, end)| **end) {
                match lft.get(lid).copied().unwrap_or(NO_ROUTE) {
                    NO_ROUTE => unrouted += 1,
                    port => {
                        if let Some(count) = carried.get_mut(usize::from(port)) {
                            *count += 1;
                        }
                    }
                }
            }
            let ports = (1..=node.num_ports())
                .filter_map(|port| {
                    let routes = carried[usize::from(port)];
                    let toward = match topo.peer(PortRef::new(id, port)) {
                        Some(peer) if topo.node(peer.node).is_some_and(|n| n.is_switch()) => {
                            Toward::Switch
                        }
                        Some(_) => Toward::EndNode,
                        None if routes > 0 => Toward::Unlinked,
                        None => return None,
                    };
                    Some(PortLoad {
                        port,
                        toward,
                        routes,
                    })
                })
                .collect();
            let name = if node.description.is_empty() {
                &node.name
            } else {
                &node.description
            };
            switch_load(node.guid, name, ports, unrouted)
        })
        .collect();
    Ok(LftLoad {
        end_lids: u32::try_from(end_lids).unwrap_or(u32::MAX),
        switches,
    })
}

/// Per LID, whether a CA or router port holds it.
fn end_node_lids(topo: &Topology) -> Result<Vec<bool>, LidError> {
    let owners = topo.lid_map()?;
    let top = owners
        .values()
        .filter_map(|&p| topo.port(p)?.lid_range())
        .map(|range| usize::from(*range.end()))
        .max()
        .unwrap_or(0);
    let mut end = vec![false; top + 1];
    for &owner in owners.values() {
        let is_end_node = topo.node(owner.node).is_some_and(|n| !n.is_switch());
        if let Some(range) = topo.port(owner).and_then(|p| p.lid_range())
            && is_end_node
        {
            for lid in range {
                end[usize::from(lid)] = true;
            }
        }
    }
    Ok(end)
}

/// A switch's figures from the load of its ports.
fn switch_load(guid: u64, name: &str, ports: Vec<PortLoad>, unrouted: u32) -> SwitchLoad {
    let counted = || ports.iter().filter(|p| p.toward != Toward::EndNode);
    let routes = counted().map(|p| p.routes).sum();
    let min = counted().map(|p| p.routes).min().unwrap_or(0);
    let worst = counted()
        .rev()
        .max_by_key(|p| p.routes)
        .filter(|p| p.routes > 0)
        .map(|p| WorstPort {
            port: p.port,
            routes: p.routes,
            share: f64::from(p.routes) / f64::from(routes),
        });
    let max = worst.as_ref().map_or(0, |w| w.routes);
    SwitchLoad {
        guid: ibqos_mad::Guid(guid).to_string(),
        name: name.to_owned(),
        ports,
        routes,
        min,
        max,
        spread: max - min,
        worst,
        balanced: max - min <= 1,
        unrouted,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::generate::{assign_lids, fat_tree};
    use crate::routing::testing::{add, link};
    use crate::routing::{RoutingOptions, minhop};
    use crate::{NodeId, NodeKind};

    fn set_lid(t: &mut Topology, port: PortRef, lid: u16, lmc: u8) {
        let port = t.port_mut(port).unwrap();
        port.lid = lid;
        port.lmc = lmc;
    }

    /// Switch A (5 ports: H1 and H2 on 1-2, B on 3 and 4, port 5 unlinked) and switch B (H3 and
    /// H4 on 1-2, A on 3 and 4). LIDs: A 1, B 2, H1-H4 3-6; H4 has LMC 1, so LIDs 6 and 7.
    fn two_switches() -> (Topology, NodeId, NodeId) {
        let mut t = Topology::new();
        let a = add(&mut t, NodeKind::Switch, 0xa, "A", 5);
        let b = add(&mut t, NodeKind::Switch, 0xb, "B", 4);
        link(&mut t, a, 3, b, 3);
        link(&mut t, a, 4, b, 4);
        for (i, (switch, port)) in [(a, 1), (a, 2), (b, 1), (b, 2)].into_iter().enumerate() {
            let h = add(
                &mut t,
                NodeKind::Ca,
                0x10 + i as u64,
                &format!("H{}", i + 1),
                1,
            );
            link(&mut t, switch, port, h, 1);
            let lmc = u8::from(i == 3);
            set_lid(&mut t, PortRef::new(h, 1), 3 + i as u16, lmc);
        }
        set_lid(&mut t, PortRef::new(a, 0), 1, 0);
        set_lid(&mut t, PortRef::new(b, 0), 2, 0);
        (t, a, b)
    }

    /// No route, as a table entry.
    const X: u8 = NO_ROUTE;

    /// Tables indexed by LID 0...
    fn tables(entries: &[(NodeId, &[u8])]) -> Routes {
        let lfts: BTreeMap<NodeId, Vec<u8>> = entries
            .iter()
            .map(|(id, lft)| (*id, lft.to_vec()))
            .collect();
        Routes::from_tables(lfts)
    }

    fn loads(switch: &SwitchLoad) -> Vec<(u8, Toward, u32)> {
        switch
            .ports
            .iter()
            .map(|p| (p.port, p.toward, p.routes))
            .collect()
    }

    #[test]
    fn routes_count_per_port_toward_end_nodes_only() {
        let (t, a, b) = two_switches();
        let routes = tables(&[
            // LID:  0  A  B H1 H2 H3 H4 H4+1
            (a, &[X, 0, 4, 1, 2, 3, 3, 3]),
            (b, &[X, 3, 0, 3, 4, 1, 2, 2]),
        ]);
        let load = lft_load(&t, &routes).unwrap();
        assert_eq!(load.end_lids, 5, "H1-H3 and H4's two LIDs");
        let [sa, sb] = &load.switches[..] else {
            panic!("{load:?}")
        };
        // A: B's own LID goes out of port 4 but does not count; all three of B's end-node LIDs
        // go out of port 3.
        assert_eq!(
            loads(sa),
            [
                (1, Toward::EndNode, 1),
                (2, Toward::EndNode, 1),
                (3, Toward::Switch, 3),
                (4, Toward::Switch, 0),
            ]
        );
        assert_eq!((sa.routes, sa.min, sa.max, sa.spread), (3, 0, 3, 3));
        assert_eq!(
            sa.worst,
            Some(WorstPort {
                port: 3,
                routes: 3,
                share: 1.0
            })
        );
        assert!(!sa.balanced);
        assert_eq!(
            (sa.name.as_str(), sa.guid.as_str()),
            ("A", "0x000000000000000a")
        );
        // B: H1 on 3, H2 on 4: even, and the tie's worst port is the first.
        assert_eq!((sb.routes, sb.min, sb.max, sb.spread), (2, 1, 1, 0));
        assert_eq!(sb.worst.as_ref().map(|w| (w.port, w.share)), Some((3, 0.5)));
        assert!(sb.balanced);
        assert_eq!(
            load.unbalanced().map(|s| &s.name).collect::<Vec<_>>(),
            ["A"]
        );
        assert_eq!(load.worst().map(|s| s.name.as_str()), Some("A"));
    }

    #[test]
    fn a_missing_entry_is_unrouted_and_one_to_an_unlinked_port_counts() {
        let (t, a, b) = two_switches();
        let routes = tables(&[(a, &[X, 0, 4, 1, 2, 5, 4, X]), (b, &[X, 3, 0, 3, 4, 1, 2])]);
        let load = lft_load(&t, &routes).unwrap();
        let sa = &load.switches[0];
        assert_eq!(
            loads(sa)[2..],
            [
                (3, Toward::Switch, 0),
                (4, Toward::Switch, 1),
                (5, Toward::Unlinked, 1),
            ]
        );
        assert_eq!((sa.unrouted, sa.spread, sa.balanced), (1, 1, true));
        // B's table ends before H4's second LID: shorter tables are padded with no route.
        assert_eq!(load.switches[1].unrouted, 1);
    }

    #[test]
    fn a_switch_with_only_end_nodes_has_no_worst_port() {
        let mut t = Topology::new();
        let s = add(&mut t, NodeKind::Switch, 0x1, "S", 2);
        set_lid(&mut t, PortRef::new(s, 0), 1, 0);
        for p in 1..=2 {
            let h = add(
                &mut t,
                NodeKind::Ca,
                0x10 + u64::from(p),
                &format!("H{p}"),
                1,
            );
            link(&mut t, s, p, h, 1);
            set_lid(&mut t, PortRef::new(h, 1), 1 + u16::from(p), 0);
        }
        let routes = tables(&[(s, &[X, 0, 1, 2])]);
        let load = lft_load(&t, &routes).unwrap();
        let only = &load.switches[0];
        assert_eq!(
            (only.routes, only.worst.as_ref(), only.balanced),
            (0, None, true)
        );
        assert_eq!(load.worst(), None);
    }

    #[test]
    fn overlapping_lid_ranges_are_an_error() {
        let (mut t, a, _) = two_switches();
        // H3 at LID 6 collides with H4's range 6-7.
        let h3 = t.node_by_name("H3").unwrap();
        set_lid(&mut t, PortRef::new(h3, 1), 6, 0);
        let routes = tables(&[(a, &[X])]);
        assert!(matches!(
            lft_load(&t, &routes),
            Err(LidError::Collision { lid: 6, .. })
        ));
    }

    #[test]
    fn minhop_spreads_a_full_fat_tree_evenly() {
        // 4 leaves of 4 hosts under 2 spines: each leaf sends the other 12 hosts up 2 ports (6
        // each), each spine sends each leaf's 4 hosts down its port.
        let mut t = fat_tree(4, 2, 4, 8).unwrap();
        assign_lids(&mut t, 0).unwrap();
        let load = lft_load(&t, &minhop(&t, &RoutingOptions::default()).unwrap()).unwrap();
        assert_eq!(load.end_lids, 16);
        for switch in &load.switches {
            let counted: Vec<u32> = switch
                .ports
                .iter()
                .filter(|p| p.toward == Toward::Switch)
                .map(|p| p.routes)
                .collect();
            let expected = if switch.name.starts_with('L') {
                [6, 6].as_slice()
            } else {
                &[4; 4]
            };
            assert_eq!(counted, expected, "{}", switch.name);
            assert!(switch.balanced && switch.unrouted == 0, "{switch:?}");
        }
    }
}
