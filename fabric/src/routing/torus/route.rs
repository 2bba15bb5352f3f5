//! The LFTs (`torus_lft`, `lft_port`): dimension order, x then y then z, each ring the short way
//! round, and parallel links taken in turn.

use std::collections::BTreeMap;

use ibqos_mad::Guid;
use ibqos_opensm::torus_config::TorusConfig;

use ibqos_mad::LinearForwardingTableRepr;

use super::build::{Coord, ENDPORT_GROUP, Refusal, Torus};
use crate::topology::{NodeId, PortRef, Topology};

/// The LFT entry for no route.
const NO_ROUTE: u8 = LinearForwardingTableRepr::NO_ROUTE;

/// One end port of the torus, as `torus_lft` visits them.
#[derive(Debug)]
pub(super) struct Dest {
    /// The switch it hangs off (its own, for port 0), by pool slot.
    pub switch: usize,
    /// The port of that switch it is reached by.
    pub port: u8,
    pub base: u16,
    pub count: u16,
    /// A CA or router port, not a switch's port 0: it counts on its own counter.
    pub ca: bool,
}

/// The end ports in OpenSM's order: destination switch by destination switch in pool order,
/// and on each, its end-port group in `port_order`. Fails with the first end port without a
/// LID.
pub(super) fn destinations(
    torus: &Torus,
    config: &TorusConfig,
    topo: &Topology,
) -> Result<Vec<Dest>, PortRef> {
    let mut dests = Vec::new();
    for (s, sw) in torus.switches.iter().enumerate() {
        let group = &sw.groups[ENDPORT_GROUP];
        for &wanted in &config.port_order {
            let Some(&port) = group.iter().find(|&&p| u32::from(p) == wanted) else {
                continue;
            };
            let at = PortRef::new(sw.node, port);
            let owner = if port == 0 { Some(at) } else { topo.peer(at) };
            let range = owner
                .and_then(|o| topo.port(o))
                .and_then(|p| p.lid_range())
                .ok_or(owner.unwrap_or(at))?;
            dests.push(Dest {
                switch: s,
                port,
                base: *range.start(),
                count: range.end() - range.start() + 1,
                ca: port != 0,
            });
        }
    }
    Ok(dests)
}

/// Every torus switch's LFT toward `dests`, and the highest LID they cover.
pub(super) fn lfts(
    torus: &Torus,
    dests: &[Dest],
) -> Result<(BTreeMap<NodeId, Vec<u8>>, u16), Refusal> {
    let max_lid = dests
        .iter()
        .map(|d| d.base + (d.count - 1))
        .max()
        .unwrap_or(0);
    let mut lfts = BTreeMap::new();
    for (s, sw) in torus.switches.iter().enumerate() {
        let mut lft = vec![NO_ROUTE; usize::from(max_lid) + 1];
        // Per direction group, how many switch LIDs and CA LIDs it carries so far
        // (`sw_dlid_cnt`, `ca_dlid_cnt`): the next parallel link to take.
        let mut counts = [[0usize; 2]; ENDPORT_GROUP];
        for dest in dests {
            let port = if dest.switch == s {
                dest.port
            } else {
                let group = next_group(torus, s, dest.switch)
                    .filter(|&g| !sw.groups[g].is_empty())
                    .ok_or_else(|| {
                        format!(
                            "ERR 4E39: routing on sw {}: sending traffic for dest sw {} to \
                             port {NO_ROUTE}",
                            Guid(sw.guid),
                            Guid(torus.switches[dest.switch].guid)
                        )
                    })?;
                let ports = &sw.groups[group];
                let count = &mut counts[group][usize::from(dest.ca)];
                let port = ports[*count % ports.len()];
                *count += 1;
                port
            };
            for lid in dest.base..=dest.base + (dest.count - 1) {
                lft[usize::from(lid)] = port;
            }
        }
        lfts.insert(sw.node, lft);
    }
    Ok((lfts, max_lid))
}

/// The group of switch `s` toward switch `d` (`lft_port`): along the first dimension in which
/// they differ; when no progress is possible there, along the next.
fn next_group(torus: &Torus, s: usize, d: usize) -> Option<usize> {
    let (from, to) = (torus.switches[s].coord, torus.switches[d].coord);
    let first = (0..3).find(|&c| from[c] != to[c]).unwrap_or(2);
    (first..3)
        .filter(|&c| c == first || from[c] != to[c])
        .find_map(|c| next_hop(torus, c, s, to))
}

/// The group of switch `s` that makes progress along dimension `c` toward the switch where
/// the path to `to` turns out of `c` (`next_hop_path`).
fn next_hop(torus: &Torus, c: usize, s: usize, to: Coord) -> Option<usize> {
    let mut turn = torus.switches[s].coord;
    turn[c] = to[c];
    let turn = torus.at(turn);
    let direction = ring_direction(torus, c, s, turn);
    (direction != 0).then_some(2 * c + usize::from(direction > 0))
}

/// +1 or -1: the direction along ring `c` that reaches `to` from `s`, the shorter one when both
/// do (`ring_dir_path`); 0 when `to` is `s` or cannot be reached.
fn ring_direction(torus: &Torus, c: usize, s: usize, to: usize) -> i64 {
    let radix = torus.radix[c];
    let direction = ring_dir_idx(
        torus.switches[s].coord[c],
        torus.switches[to].coord[c],
        radix,
    );
    if direction == 0 {
        return 0;
    }
    for direction in [direction, -direction] {
        let group = 2 * c + usize::from(direction > 0);
        let mut at = s;
        for _ in 0..radix {
            let next = torus.switches[at].toward[group]
                .filter(|_| !torus.switches[at].groups[group].is_empty());
            match next {
                Some(n) if n == to => return direction,
                Some(n) => at = n,
                None => break,
            }
        }
    }
    0
}

/// The lengths of the direct path between `src` and `dst` on a ring of `count`, and of the
/// path that wraps round (crossing the dateline).
fn path_lengths(src: usize, dst: usize, count: usize) -> (usize, usize) {
    let (short, long) = (src.min(dst), src.max(dst));
    (long - short, short + count - long)
}

/// +1 when the positive direction is the shorter from `src` to `dst`, -1 for the negative, 0
/// for the same place; a tie goes the direct way (`ring_dir_idx`).
fn ring_dir_idx(src: usize, dst: usize, count: usize) -> i64 {
    if src == dst {
        return 0;
    }
    let (direct, wrapped) = path_lengths(src, dst, count);
    match (dst > src, direct <= wrapped) {
        (true, true) | (false, false) => 1,
        (true, false) | (false, true) => -1,
    }
}

/// Whether the shorter path from `src` to `dst` on a ring of `count` crosses the dateline
/// (`use_vl1`).
pub(super) fn crosses_dateline(src: usize, dst: usize, count: usize) -> bool {
    let (direct, wrapped) = path_lengths(src, dst, count);
    direct > wrapped
}
