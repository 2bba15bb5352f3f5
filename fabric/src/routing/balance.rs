//! The balancing step shared by every engine: which of the candidate ports a switch uses for
//! each destination LID.
//!
//! It follows OpenSM's `osm_switch_recommend_path` (osm_switch.c) as called by
//! `ucast_mgr_process_tbl` / `ucast_mgr_process_port` (osm_ucast_mgr.c) with default options:
//! - LIDs are routed offset by offset (every destination's base LID, then every base + 1, ...),
//!   destinations in the order of [`super::destinations`];
//! - each switch keeps a per-port count of CA/router LIDs routed so far (OpenSM's port profile;
//!   switch LIDs are not counted, as with `port_profile_switch_nodes FALSE`) and picks the
//!   candidate with the lowest count, the first in port order on ties;
//! - for the LIDs after a port's base LID (LMC > 0) the search starts after the port used for
//!   the previous LID, and a candidate leading to a system image not yet used for this
//!   destination wins, then one leading to a node not yet used, so the LID range spreads over
//!   paths. OpenSM additionally breaks ties by how often a remote node was forwarded to; that
//!   refinement is left out.
//!
//! Not mirrored: keeping existing LFT entries (the engines are pure functions), port shifting,
//! scatter ports, and routing-order / port-profile-ignore files.

use std::collections::BTreeMap;

use super::{Dest, NO_ROUTE, Routes, RoutingError, SwitchGraph};
use crate::topology::{PortRef, Topology};

/// What a switch with no candidate port toward a destination does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoPath {
    /// The routing fails: the engine promises every route.
    Fail,
    /// The entry stays [`NO_ROUTE`], as OpenSM's `osm_switch_recommend_path` leaves it.
    Unset,
}

/// Builds every switch's table. `toward(is_switch, t, s)` lists the ports of switch `s` an engine
/// allows toward a destination attached to switch `t` (a switch's own port 0 when `is_switch`),
/// in port order; where it lists none, `no_path` says what happens.
pub(super) fn build<'t>(
    topo: &Topology,
    graph: &SwitchGraph,
    dests: &[Dest],
    no_path: NoPath,
    toward: impl Fn(bool, usize, usize) -> &'t [u8],
) -> Result<Routes, RoutingError> {
    let max_lid = dests
        .iter()
        .map(|d| d.base + (d.count - 1))
        .max()
        .unwrap_or(0);
    let max_count = dests.iter().map(|d| d.count).max().unwrap_or(1);
    let mut lfts = BTreeMap::new();
    for (s, &id) in graph.ids.iter().enumerate() {
        let Some(node) = topo.node(id) else { continue };
        // (system image GUID, node GUID) behind each port.
        let remote: Vec<(u64, u64)> = (0..node.ports.len())
            .map(|p| {
                node.port(p as u8)
                    .and_then(|port| topo.node(port.peer?.node))
                    .map_or((0, 0), |n| (n.system_image_guid, n.guid))
            })
            .collect();
        let mut lft = vec![NO_ROUTE; usize::from(max_lid) + 1];
        let mut profile = vec![0u32; node.ports.len()];
        let mut used: Vec<Vec<(u64, u64)>> = vec![Vec::new(); dests.len()];
        // One per candidate list of this switch: toward each switch, for CAs and for switches.
        let mut cursors = vec![Cursor::default(); 2 * graph.ids.len()];
        for offset in 0..max_count {
            for (d, dest) in dests.iter().enumerate() {
                if offset >= dest.count {
                    continue;
                }
                let lid = dest.base + offset;
                let unreachable = || RoutingError::Unreachable {
                    switch: topo.describe(PortRef::new(id, 0)),
                    dest: topo.describe(dest.port),
                    lid,
                };
                let chosen = match dest.attach {
                    Some((t, p)) if t == s => Some(p),
                    Some((t, _)) if offset == 0 => {
                        // The first LID of each destination: nothing of its range is used yet,
                        // and the search starts at port 1, so it is the first least-loaded
                        // port in port order.
                        let candidates = toward(dest.is_switch, t, s);
                        let cursor = &mut cursors[2 * t + usize::from(dest.is_switch)];
                        cursor.least_loaded(candidates, &profile)
                    }
                    Some((t, _)) => {
                        let start = usize::from(lft[usize::from(lid - 1)]) + 1;
                        let choice = Choice {
                            profile: &profile,
                            remote: &remote,
                            used: &used[d],
                        };
                        choice.best(toward(dest.is_switch, t, s), start)
                    }
                    None => None,
                };
                let Some(port) = chosen else {
                    match no_path {
                        NoPath::Fail => return Err(unreachable()),
                        NoPath::Unset => continue,
                    }
                };
                lft[usize::from(lid)] = port;
                if !dest.is_switch {
                    profile[usize::from(port)] += 1;
                    if dest.count > 1 && port != 0 {
                        used[d].push(remote[usize::from(port)]);
                    }
                }
            }
        }
        lfts.insert(id, lft);
    }
    Ok(Routes { lfts, max_lid })
}

/// Where the search of one candidate list for its least-loaded port resumes. A switch's port
/// counts only grow while it is routed, so the lowest count in a list never falls, and the ports
/// before the cursor stay above it: the next search starts at the cursor, not at the first
/// port. It finds the port a scan of the whole list would, in a few steps rather than a list's
/// length (48 for each LID on each leaf of a large fat tree).
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    /// The index in the list where the search resumes.
    next: usize,
    /// The lowest count in the list, as last found.
    least: u32,
}

impl Cursor {
    /// The first port of `candidates` (in port order, none of them port 0) with the lowest
    /// count in `profile`; `None` for no candidate.
    fn least_loaded(&mut self, candidates: &[u8], profile: &[u32]) -> Option<u8> {
        debug_assert!(candidates.is_sorted() && candidates.first() != Some(&0));
        let count = |p: u8| profile[usize::from(p)];
        loop {
            while let Some(&port) = candidates.get(self.next) {
                if count(port) <= self.least {
                    return Some(port);
                }
                self.next += 1;
            }
            // Every port is above the lowest count found: start again at the new lowest.
            self.least = candidates.iter().map(|&p| count(p)).min()?;
            self.next = 0;
        }
    }
}

/// One switch's state while choosing a port for one LID.
struct Choice<'a> {
    profile: &'a [u32],
    remote: &'a [(u64, u64)],
    /// Remote (system image, node) GUIDs already used by this destination's LIDs.
    used: &'a [(u64, u64)],
}

impl Choice<'_> {
    /// The least-loaded candidate, searching from port `start` round the switch, preferring a
    /// new remote system, then a new remote node. `candidates` are in port order, so the
    /// search order is that list turned to begin at the first port from `start`: no copy and
    /// no sort for each of the fabric's LIDs on each switch.
    fn best(&self, candidates: &[u8], start: usize) -> Option<u8> {
        debug_assert!(candidates.is_sorted(), "candidates in port order");
        let from = start % self.profile.len().max(1);
        let turn = candidates.partition_point(|&p| usize::from(p) < from);
        let order = candidates[turn..]
            .iter()
            .chain(&candidates[..turn])
            .copied();
        let mut best: Option<(u32, u8)> = None;
        let mut other_sys: Option<(u32, u8)> = None;
        let mut other_node: Option<(u32, u8)> = None;
        let better = |slot: &mut Option<(u32, u8)>, count: u32, port: u8| {
            if slot.is_none_or(|(c, _)| count < c) {
                *slot = Some((count, port));
            }
        };
        for p in order {
            let count = self.profile[usize::from(p)];
            let (sys, node) = self.remote[usize::from(p)];
            if !self.used.iter().any(|u| u.0 == sys) {
                better(&mut other_sys, count, p);
            } else if !self.used.iter().any(|u| u.1 == node) {
                better(&mut other_node, count, p);
            }
            better(&mut best, count, p);
        }
        other_sys.or(other_node).or(best).map(|(_, p)| p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The first port of `candidates` with the lowest count: what the cursor must find.
    fn scanned(candidates: &[u8], profile: &[u32]) -> Option<u8> {
        candidates
            .iter()
            .copied()
            .min_by_key(|&p| profile[usize::from(p)])
    }

    proptest! {
        /// Several lists over one switch's ports, chosen from in any order, each choice adding
        /// to its port's count or not (a switch destination adds nothing), and other ports'
        /// counts growing between choices: the cursor always finds the scan's port.
        #[test]
        fn the_cursor_finds_the_first_least_loaded_port(
            lists in prop::collection::vec(prop::collection::btree_set(1u8..12, 1..8), 1..4),
            steps in prop::collection::vec((0usize..4, any::<bool>(), 0u8..12), 1..200),
        ) {
            let lists: Vec<Vec<u8>> = lists.into_iter().map(|l| l.into_iter().collect()).collect();
            let mut profile = vec![0u32; 12];
            let mut cursors = vec![Cursor::default(); lists.len()];
            for (list, counted, elsewhere) in steps {
                let list = list % lists.len();
                let expected = scanned(&lists[list], &profile);
                let found = cursors[list].least_loaded(&lists[list], &profile);
                prop_assert_eq!(found, expected);
                if counted && let Some(port) = found {
                    profile[usize::from(port)] += 1;
                }
                profile[usize::from(elsewhere)] += 1;
            }
        }
    }

    #[test]
    fn no_candidate_no_port() {
        assert_eq!(Cursor::default().least_loaded(&[], &[0, 0]), None);
    }
}
