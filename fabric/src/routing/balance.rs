//! The balancing step shared by every engine: which of the candidate ports a switch uses for
//! each destination LID.
//!
//! It follows OpenSM's `osm_switch_recommend_path` (osm_switch.c) as `ucast_mgr_build_lfts` and
//! `ucast_mgr_process_port` (osm_ucast_mgr.c) call it on the first sweep, when existing LFTs are
//! ignored:
//! - switches are routed one by one in OpenSM's GUID order, and on each the LIDs offset by offset
//!   (every destination's base LID, then every base + 1, ...), destinations in the order of
//!   [`super::destinations`];
//! - each switch keeps a per-port count of CA/router LIDs routed so far (OpenSM's port profile;
//!   switch LIDs are not counted, as with `port_profile_switch_nodes FALSE`) and picks the
//!   candidate with the lowest count, the first in search order on ties. The search starts at
//!   port 1 for a base LID and after the previous LID's port for the LIDs after it;
//! - for the LIDs after a port's base LID (LMC > 0), a candidate leading to a system image not yet
//!   used by this destination's LIDs wins, then one leading to a node not yet used, and among
//!   ports whose node is used, ties go to the node this switch forwarded fewer of them to;
//! - `port_shifting` searches the candidates again from an offset that grows with their counts,
//!   so destinations do not all line up on the first port;
//! - `scatter_ports` picks at random among the ports tied at the lowest count, for base LIDs,
//!   with glibc's `random()` seeded afresh for each routing, so the tables are OpenSM's.
//!
//! DOR (OpenSM's `is_dor`) changes two things: the search starts at port 1 for every LID, and
//! for the LIDs after a base LID the only preference is the remote (node, port) this
//! destination's LIDs went to fewest times; its engine gives the candidates of one dimension.
//!
//! Not mirrored: keeping existing LFT entries (the engines are pure functions), and the hop
//! weights, port search ordering and port-profile-ignore files.

use std::collections::BTreeMap;

use ibqos_mad::Guid;

use super::glibc_random::GlibcRandom;
use super::{Dest, NO_ROUTE, Routes, RoutingError, RoutingOptions, SwitchGraph};
use crate::topology::{PortRef, Topology};

/// What a switch with no candidate port toward a destination does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoPath {
    /// The routing fails: the engine promises every route.
    Fail,
    /// The entry stays [`NO_ROUTE`], as OpenSM's `osm_switch_recommend_path` leaves it.
    Unset,
}

/// Which of OpenSM's two balancing modes chooses among the candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// minhop and up*/down*.
    MinHop,
    /// DOR: OpenSM's `is_dor`.
    Dor,
}

/// Builds every switch's table. `toward(is_switch, t, s)` lists the ports of switch `s` an engine
/// allows toward a destination attached to switch `t` (a switch's own port 0 when `is_switch`),
/// in port order; where it lists none, `no_path` says what happens.
pub(super) fn build<'t>(
    topo: &Topology,
    graph: &SwitchGraph,
    dests: &[Dest],
    no_path: NoPath,
    options: &RoutingOptions,
    toward: impl Fn(bool, usize, usize) -> &'t [u8],
) -> Result<Routes, RoutingError> {
    build_in(Style::MinHop, topo, graph, dests, no_path, options, toward)
}

/// [`build`] the way DOR balances (see the module's comment); every route must exist.
pub(super) fn build_dor<'t>(
    topo: &Topology,
    graph: &SwitchGraph,
    dests: &[Dest],
    options: &RoutingOptions,
    toward: impl Fn(bool, usize, usize) -> &'t [u8],
) -> Result<Routes, RoutingError> {
    build_in(
        Style::Dor,
        topo,
        graph,
        dests,
        NoPath::Fail,
        options,
        toward,
    )
}

fn build_in<'t>(
    style: Style,
    topo: &Topology,
    graph: &SwitchGraph,
    dests: &[Dest],
    no_path: NoPath,
    options: &RoutingOptions,
    toward: impl Fn(bool, usize, usize) -> &'t [u8],
) -> Result<Routes, RoutingError> {
    let max_lid = dests
        .iter()
        .map(|d| d.base + (d.count - 1))
        .max()
        .unwrap_or(0);
    let max_count = dests.iter().map(|d| d.count).max().unwrap_or(1);
    // OpenSM seeds once per routing and walks its switch table in GUID order, so the random
    // draws of one switch follow those of the switches before it.
    let mut random = (options.scatter_ports != 0).then(|| GlibcRandom::new(options.scatter_ports));
    let mut order: Vec<usize> = (0..graph.len()).collect();
    order.sort_by_key(|&s| Guid(graph.guid[s]).opensm_order());
    let mut lfts = BTreeMap::new();
    let mut scan = Vec::new();
    for s in order {
        let id = graph.ids[s];
        let Some(node) = topo.node(id) else { continue };
        // What is behind each port.
        let remote: Vec<Remote> = (0..node.ports.len())
            .map(|p| {
                let peer = node.port(p as u8).and_then(|port| port.peer);
                peer.and_then(|peer| Some((topo.node(peer.node)?, peer.port)))
                    .map_or(Remote::default(), |(n, port)| Remote {
                        system: n.system_image_guid,
                        node: n.guid,
                        port,
                    })
            })
            .collect();
        let mut lft = vec![NO_ROUTE; usize::from(max_lid) + 1];
        let mut profile = vec![0u32; node.ports.len()];
        let mut used: Vec<Vec<Forwarded>> = vec![Vec::new(); dests.len()];
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
                // Whether OpenSM draws among the tied ports for this LID.
                let draws = offset == 0 && dest.scattered && random.is_some();
                let chosen = match dest.attach {
                    Some((t, p)) if t == s => Some(p),
                    Some((t, _)) if offset == 0 && !options.port_shifting && !draws => {
                        // The first LID of each destination, chosen the plain way: nothing of
                        // its range is used yet, and the search starts at port 1, so it is the
                        // first least-loaded port in port order.
                        let candidates = toward(dest.is_switch, t, s);
                        let cursor = &mut cursors[2 * t + usize::from(dest.is_switch)];
                        cursor.least_loaded(candidates, &profile)
                    }
                    Some((t, _)) => {
                        let start = if offset == 0 || style == Style::Dor {
                            1
                        } else {
                            usize::from(lft[usize::from(lid - 1)]) + 1
                        };
                        let choice = Choice {
                            style,
                            profile: &profile,
                            remote: &remote,
                            used: (offset > 0).then_some(used[d].as_slice()),
                            port_shifting: options.port_shifting,
                        };
                        let scatter = random.as_mut().filter(|_| draws);
                        choice.best(toward(dest.is_switch, t, s), start, scatter, &mut scan)
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
                        Forwarded::count(&mut used[d], remote[usize::from(port)], style);
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

/// What is behind one port of a switch: the system image GUID, node GUID and port number of
/// its peer (zeros for no peer).
#[derive(Debug, Clone, Copy, Default)]
struct Remote {
    system: u64,
    node: u64,
    port: u8,
}

impl Remote {
    /// Whether `self` and `other` are one remote as `style` tells them apart: by node, or for
    /// DOR by node and port.
    fn same(&self, other: &Remote, style: Style) -> bool {
        self.node == other.node && (style == Style::MinHop || self.port == other.port)
    }
}

/// A remote one switch forwarded some of a destination's LIDs to (OpenSM's `osm_remote_node`),
/// with how many.
#[derive(Debug, Clone, Copy)]
struct Forwarded {
    remote: Remote,
    lids: u32,
}

impl Forwarded {
    /// Counts one more LID forwarded to `remote`.
    fn count(used: &mut Vec<Forwarded>, remote: Remote, style: Style) {
        match used.iter_mut().find(|f| f.remote.same(&remote, style)) {
            Some(f) => f.lids += 1,
            None => used.push(Forwarded { remote, lids: 1 }),
        }
    }
}

/// One candidate port for a LID, with what the choice reads of it.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    port: u8,
    /// The destinations this switch routed through the port so far.
    count: u32,
    /// For a LID after the base LID: whether the destination's earlier LIDs already go to the
    /// port's remote system image.
    system_used: bool,
    /// And if they go to its remote node, how many of them.
    forwarded: Option<u32>,
}

/// The running choice of one search over the candidates (OpenSM's locals in
/// `osm_switch_recommend_path`): the least-loaded port, and the least-loaded ports to a new
/// system image and to a new node.
#[derive(Debug, Clone, Copy)]
struct Best {
    port: Option<u8>,
    least: u32,
    /// The fewest LIDs forwarded to a used node among the ports taken so far. OpenSM keeps it
    /// across a port that lowers the count, and resets it to 0 on a port to a new system or
    /// node; both only matter when every candidate's node is used, so they are kept as is.
    least_forwarded: u32,
    new_system: Option<(u32, u8)>,
    new_node: Option<(u32, u8)>,
}

impl Best {
    const NONE: Best = Best {
        port: None,
        least: u32::MAX,
        least_forwarded: u32::MAX,
        new_system: None,
        new_node: None,
    };

    /// Weighs `c` after the candidates before it; `for_lmc` for a LID after the base LID.
    fn consider(&mut self, c: &Candidate, for_lmc: bool) {
        if for_lmc {
            // A port to a new system, else to a new node, is taken if it is the least loaded
            // such port so far.
            let slot = match (c.system_used, c.forwarded) {
                (false, _) => Some(&mut self.new_system),
                (true, None) => Some(&mut self.new_node),
                (true, Some(_)) => None,
            };
            if let Some(slot) = slot
                && slot.is_none_or(|(least, _)| c.count < least)
            {
                *slot = Some((c.count, c.port));
                self.least_forwarded = 0;
            }
        }
        if c.count < self.least {
            self.port = Some(c.port);
            self.least = c.count;
            if let Some(f) = c.forwarded {
                self.least_forwarded = self.least_forwarded.min(f);
            }
        } else if let Some(f) = c
            .forwarded
            .filter(|&f| c.count == self.least && f < self.least_forwarded)
        {
            // As loaded as the best: the node that got fewer of the destination's LIDs wins.
            self.least_forwarded = f;
            self.port = Some(c.port);
        }
    }

    /// The chosen port: one to a new system, else to a new node, else the least loaded.
    fn port(&self) -> Option<u8> {
        self.new_system
            .or(self.new_node)
            .map(|(_, p)| p)
            .or(self.port)
    }
}

/// One switch's state while choosing a port for one LID.
struct Choice<'a> {
    style: Style,
    profile: &'a [u32],
    remote: &'a [Remote],
    /// The remote nodes this destination's earlier LIDs went to, for a LID after its base LID;
    /// `None` for a base LID.
    used: Option<&'a [Forwarded]>,
    port_shifting: bool,
}

impl Choice<'_> {
    /// The port for the LID: the candidates searched from port `start` round the switch, with
    /// OpenSM's preferences, and a draw from `scatter` among the least-loaded when it is given.
    /// `candidates` are in port order, so the search order is that list turned to begin at the
    /// first port from `start`: no sort for each of the fabric's LIDs on each switch. `scan`
    /// is scratch space, kept by the caller so no LID allocates.
    fn best(
        &self,
        candidates: &[u8],
        start: usize,
        scatter: Option<&mut GlibcRandom>,
        scan: &mut Vec<Candidate>,
    ) -> Option<u8> {
        debug_assert!(candidates.is_sorted(), "candidates in port order");
        let from = start % self.profile.len().max(1);
        let turn = candidates.partition_point(|&p| usize::from(p) < from);
        let order = candidates[turn..].iter().chain(&candidates[..turn]);
        // Only a draw or a second search reads the candidates again.
        let keep = scatter.is_some() || self.port_shifting;
        scan.clear();
        let mut best = Best::NONE;
        for &port in order {
            let c = self.candidate(port);
            best.consider(&c, self.used.is_some());
            if keep {
                scan.push(c);
            }
        }
        if let Some(random) = scatter {
            // OpenSM's draw is among the ports at the lowest count, in search order.
            let mut tied = scan.iter().filter(|c| c.count == best.least);
            let ties = tied.clone().count();
            return tied
                .nth(random.next() as usize % ties.max(1))
                .map(|c| c.port);
        }
        if self.port_shifting && !scan.is_empty() {
            // The same search again, from the index the candidates' average count points at,
            // so that successive destinations do not all start on the same port.
            let total: u32 = scan.iter().map(|c| c.count).sum();
            let first = total as usize / scan.len();
            best = Best::NONE;
            for i in 0..scan.len() {
                let c = scan[(first + i) % scan.len()];
                // OpenSM never marks a system or node found for DOR, and its second search
                // reads those marks: every port leads to a new system there.
                let c = match self.style {
                    Style::MinHop => c,
                    Style::Dor => Candidate {
                        system_used: false,
                        forwarded: None,
                        ..c
                    },
                };
                best.consider(&c, self.used.is_some());
            }
        }
        best.port()
    }

    /// What the choice reads of `port`.
    fn candidate(&self, port: u8) -> Candidate {
        let remote = self.remote[usize::from(port)];
        let count = self.profile[usize::from(port)];
        let Some(used) = self.used else {
            return Candidate {
                port,
                count,
                system_used: false,
                forwarded: None,
            };
        };
        if self.style == Style::Dor {
            // DOR prefers no new system or node: each port counts as used, and one to a remote
            // port none of the LIDs went to as forwarded to zero times.
            let forwarded = used.iter().find(|f| f.remote.same(&remote, Style::Dor));
            return Candidate {
                port,
                count,
                system_used: true,
                forwarded: Some(forwarded.map_or(0, |f| f.lids)),
            };
        }
        let system_used = used.iter().any(|f| f.remote.system == remote.system);
        Candidate {
            port,
            count,
            system_used,
            // A node of a system not used yet is not used either.
            forwarded: used
                .iter()
                .find(|f| system_used && f.remote.same(&remote, Style::MinHop))
                .map(|f| f.lids),
        }
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
