//! OpenSM's `do_routing` over a constructed [`Tree`]: its walks, counters and orders, quirks
//! included, since the tables must equal OpenSM's.
//!
//! A route to a LID is laid from the switch it hangs off: up, one main group per switch (the
//! least loaded, whose counters move) plus secondary paths through the other up groups and the
//! siblings; and at each switch on the way, down through every other down group, so that the
//! switches below reach the LID by going up. Dummy targets (LID 0) fill every leaf up to the
//! largest number of compute nodes on one, so that the counters move alike for every leaf.

use std::cmp::Ordering;

use super::{GroupEnd, NO_ROUTE, Remote, RoutingOptions, Tree};

/// How a route is being laid: on the main path (its counters move) or a secondary one.
#[derive(Debug, Clone, Copy)]
struct Walk {
    lid: u16,
    main: bool,
    /// How many more times the route may turn down and up again (I/O nodes).
    reverse_credit: u16,
}

impl Tree {
    pub(super) fn route(&mut self, options: &RoutingOptions) {
        self.ends = self.groups.iter().map(GroupEnd::of).collect();
        self.route_to_cns();
        self.route_to_non_cns(options.max_reverse_hops);
        self.route_to_switches();
        if options.connect_roots {
            self.route_roots();
        }
    }

    /// Each leaf in tuple order, each of its compute-node ports in port order, then as many
    /// dummy targets as it has fewer compute nodes than the fullest leaf.
    fn route_to_cns(&mut self) {
        for i in 0..self.leaves.len() {
            let leaf = self.leaves[i];
            let mut routed = 0;
            for j in 0..self.switches[leaf].down.len() {
                let g = self.switches[leaf].down[j];
                let is_cn = self.ca_group(g).is_some_and(|cg| self.groups[cg].is_cn);
                if !is_cn {
                    continue;
                }
                let lid = self.groups[g].remote_lid;
                self.set(leaf, lid, self.groups[g].links[0].port, 1);
                self.down_by_going_up(leaf, None, Walk::main(lid, 0), 1);
                routed += 1;
            }
            for _ in routed..self.max_cn_per_leaf {
                self.hops.set(leaf, 0, 1);
                self.down_by_going_up(leaf, None, Walk::main(0, 0), 1);
                for s in 0..self.switches.len() {
                    self.set(s, 0, NO_ROUTE, NO_ROUTE);
                }
            }
        }
    }

    /// Every other CA port, CAs in GUID order, as a main path; an I/O node's route may turn
    /// down and up again `max_reverse_hops` times.
    fn route_to_non_cns(&mut self, max_reverse_hops: u16) {
        for c in 0..self.cas.len() {
            for i in 0..self.cas[c].groups.len() {
                let group = &self.groups[self.cas[c].groups[i]];
                let Some(s) = self.remote_switch(group).filter(|_| !group.is_cn) else {
                    continue;
                };
                let credit = if group.is_io { max_reverse_hops } else { 0 };
                let (lid, port) = (group.lid, group.links[0].remote_port);
                self.set(s, lid, port, 1);
                self.down_by_going_up(s, None, Walk::main(lid, credit), 1);
            }
        }
    }

    /// Every switch's own LID, on secondary paths: no counter moves.
    fn route_to_switches(&mut self) {
        for s in 0..self.switches.len() {
            let lid = self.switches[s].lid;
            self.set(s, lid, 0, 0);
            let walk = Walk {
                lid,
                main: false,
                reverse_credit: 0,
            };
            self.down_by_going_up(s, None, walk, 0);
        }
    }

    /// `connect_roots`: every switch above the leaves reaches the switch LIDs it has no route
    /// to through the last leaf, which then carries every down-up turn.
    fn route_roots(&mut self) {
        let Some(&leaf) = self.leaves.last() else {
            return;
        };
        let leaf_lid = self.switches[leaf].lid;
        let switch_lids: std::collections::HashSet<u16> =
            self.switches.iter().map(|sw| sw.lid).collect();
        for s in 0..self.switches.len() {
            if self.switches[s].rank.is_none_or(|r| r >= self.leaf_rank) {
                continue;
            }
            for lid in 1..=self.max_lid {
                if self.lfts.get(s, lid) != NO_ROUTE
                    || self.hops.get(leaf, lid) == NO_ROUTE
                    || !switch_lids.contains(&lid)
                {
                    continue;
                }
                let hops = self
                    .hops
                    .get(s, leaf_lid)
                    .wrapping_add(self.hops.get(leaf, lid));
                self.set(s, lid, self.lfts.get(s, leaf_lid), hops);
            }
        }
    }

    fn set(&mut self, s: usize, lid: u16, port: u8, hops: u8) {
        self.lfts.set(s, lid, port);
        self.hops.set(s, lid, hops);
    }

    /// OpenSM's `fabric_route_downgoing_by_going_up`: the routes toward `walk.lid` from switch
    /// `s`, reached `hops` hops from the LID (from `prev`, below, or from nowhere at the start).
    fn down_by_going_up(&mut self, s: usize, prev: Option<usize>, walk: Walk, hops: u8) -> bool {
        let mut created = self.up_by_going_down(s, prev, walk, hops);
        let next = hops.wrapping_add(1);
        if self.switches[s].rank == Some(0) {
            let count = self.switches[s].down.len();
            if walk.reverse_credit > 0 && count > 0 {
                let sw = &mut self.switches[s];
                sw.down_index = (sw.down_index + 1) % count;
                let mut i = sw.down_index;
                for _ in 0..count {
                    let g = self.switches[s].down[i];
                    i = (i + 1) % count;
                    if let Some(r) = self.remote_switch(&self.groups[g]) {
                        let reverse = walk.spend_reverse_hop(walk.main);
                        created |= self.down_by_going_up(r, Some(s), reverse, next);
                    }
                }
            }
            return created;
        }
        let mut up = std::mem::take(&mut self.switches[s].up);
        bubble_sort(&mut up, |a, b| self.compare_load_down(a, b));
        self.switches[s].up = up;
        let Some(&main_group) = self.switches[s].up.first() else {
            return created;
        };
        let main_link = self.least_loaded(main_group, |l| l.counter_down);
        let Some(r) = self.remote_switch(&self.groups[main_group]) else {
            return created;
        };
        if walk.main {
            self.groups[main_group].counter_down += 1;
            self.groups[main_group].links[main_link].counter_down += 1;
            if self.groups[main_group].counter_down == self.switches[r].min_counter_down + 1 {
                self.recalculate_min_counter_down(r);
            }
            let lid = walk.lid;
            if self.lfts.get(r, lid) == NO_ROUTE
                || u32::from(hops) + 1 < u32::from(self.hops.get(r, lid))
            {
                let port = self.groups[main_group].links[main_link].remote_port;
                self.set(r, walk.lid, port, next);
            }
            created |= self.down_by_going_up(r, Some(s), walk, next);
        }
        let secondary = Walk {
            main: false,
            ..walk
        };
        for i in usize::from(walk.main)..self.switches[s].up.len() {
            let g = self.switches[s].up[i];
            if let Some((_, routed)) = self.secondary_path(s, g, secondary, hops) {
                created |= routed;
            }
        }
        let mut siblings = std::mem::take(&mut self.switches[s].sibling);
        if !siblings.is_empty() {
            bubble_sort(&mut siblings, |a, b| self.compare_load_down(a, b));
        }
        self.switches[s].sibling = siblings;
        for i in 0..self.switches[s].sibling.len() {
            let g = self.switches[s].sibling[i];
            if let Some((link, routed)) = self.secondary_path(s, g, secondary, hops) {
                created |= routed;
                // OpenSM charges the main group, and the sibling's port.
                if routed {
                    self.groups[main_group].counter_down += 1;
                    self.groups[g].links[link].counter_down += 1;
                }
            }
        }
        if walk.reverse_credit == 0 || self.switches[s].is_leaf {
            return created;
        }
        for i in 0..self.switches[s].down.len() {
            let g = self.switches[s].down[i];
            if let Some(r) = self.remote_switch(&self.groups[g]) {
                created |= self.down_by_going_up(r, Some(s), walk.spend_reverse_hop(true), next);
            }
        }
        created
    }

    /// A secondary path from switch `s` through its group `g`, unless the switch there already
    /// has a route as short: the link used and whether a route was created beyond.
    fn secondary_path(
        &mut self,
        s: usize,
        g: usize,
        walk: Walk,
        hops: u8,
    ) -> Option<(usize, bool)> {
        let r = self.remote_switch(&self.groups[g])?;
        let lid = walk.lid;
        if self.lfts.get(r, lid) != NO_ROUTE
            && u32::from(hops) + 1 >= u32::from(self.hops.get(r, lid))
        {
            return None;
        }
        if self.groups[g].links.is_empty() {
            return None;
        }
        let link = self.least_loaded(g, |l| l.counter_down);
        let next = hops.wrapping_add(1);
        self.set(r, walk.lid, self.groups[g].links[link].remote_port, next);
        Some((link, self.down_by_going_up(r, Some(s), walk, next)))
    }

    /// OpenSM's `fabric_route_upgoing_by_going_down`: from switch `s`, down through every down
    /// group (and, for a real LID, every sibling) but the one toward `prev`, so the switches
    /// below reach the LID going up. Whether a route reached a CA-attached switch.
    fn up_by_going_down(&mut self, s: usize, prev: Option<usize>, walk: Walk, hops: u8) -> bool {
        if self.switches[s].down.is_empty() {
            return false;
        }
        if self.switches[s].counter_up_changed {
            let mut down = std::mem::take(&mut self.switches[s].down);
            bubble_sort(&mut down, |a, b| self.compare_load_up(a, b));
            self.switches[s].down = down;
            self.switches[s].counter_up_changed = false;
        }
        let mut siblings = std::mem::take(&mut self.switches[s].sibling);
        if !siblings.is_empty() {
            bubble_sort(&mut siblings, |a, b| self.compare_load_up(a, b));
        }
        self.switches[s].sibling = siblings;
        let downs = self.switches[s].down.len();
        let siblings = if walk.lid != 0 {
            self.switches[s].sibling.len()
        } else {
            0
        };
        let prev_lid = prev.map(|p| self.switches[p].lid);
        let next = hops.wrapping_add(1);
        // A group toward a CA only counts as a route created; a leaf's down groups are all such.
        let to_cas = self.switches[s].down_to_cas;
        let mut created = to_cas > 0;
        let first = if to_cas == downs { downs } else { 0 };
        let mut from = first;
        while let Some((k, g, r)) =
            self.next_shorter(s, from..downs + siblings, walk.lid, prev_lid, hops)
        {
            from = k + 1;
            let link = self.least_loaded(g, |l| l.counter_up);
            self.set(r, walk.lid, self.groups[g].links[link].remote_port, next);
            let routed = self.up_by_going_down(r, None, walk, next);
            created |= routed;
            if routed {
                self.groups[g].links[link].counter_up += 1;
                self.groups[g].counter_up += 1;
                self.switches[s].counter_up_changed = true;
            }
        }
        if created {
            let sw = &mut self.switches[s];
            sw.down_index = (sw.down_index + 1) % downs;
        }
        created
    }

    /// The first of switch `s`'s down groups (then siblings), at positions `positions`, whose
    /// remote switch is not `prev_lid`'s and has no route to `lid` as short as `hops` + 1:
    /// its position, group and remote switch. Nearly every group of a scan fails this, so it
    /// reads only the packed [`GroupEnd`]s and the LID's row of hops. The lists are read
    /// afresh at each call, as OpenSM indexes them while the walks below may re-sort them.
    fn next_shorter(
        &self,
        s: usize,
        positions: std::ops::Range<usize>,
        lid: u16,
        prev_lid: Option<u16>,
        hops: u8,
    ) -> Option<(usize, usize, usize)> {
        let sw = &self.switches[s];
        let row = self.hops.row(lid);
        let limit = u32::from(hops) + 1;
        let shorter = |offset: usize, list: &[usize], from: usize, to: usize| {
            let (from, to) = (from.min(list.len()), to.min(list.len()));
            list[from..to].iter().enumerate().find_map(|(i, &g)| {
                let end = self.ends[g];
                if end.switch == GroupEnd::NO_SWITCH || prev_lid == Some(end.remote_lid) {
                    return None;
                }
                let r = end.switch as usize;
                let least = row[r];
                (least == NO_ROUTE || limit < u32::from(least)).then_some((offset + from + i, g, r))
            })
        };
        let downs = sw.down.len();
        shorter(0, &sw.down, positions.start, positions.end).or_else(|| {
            let start = positions.start.saturating_sub(downs);
            shorter(
                downs,
                &sw.sibling,
                start,
                positions.end.saturating_sub(downs),
            )
        })
    }

    /// The first link of group `g` with the least `counter`.
    fn least_loaded(&self, g: usize, counter: impl Fn(&super::Link) -> u32) -> usize {
        let links = &self.groups[g].links;
        let mut best = 0;
        for (i, link) in links.iter().enumerate().skip(1) {
            if counter(link) < counter(&links[best]) {
                best = i;
            }
        }
        best
    }

    /// OpenSM's `recalculate_min_counter_down`: the least `counter_down` of the switch's down
    /// groups (2^30 when it has none).
    fn recalculate_min_counter_down(&mut self, s: usize) {
        let least = self.switches[s]
            .down
            .iter()
            .map(|&g| self.groups[g].counter_down)
            .fold(1 << 30, u32::min);
        self.switches[s].min_counter_down = least;
    }

    /// OpenSM's `port_group_compare_load_up`: fewer up-routes first, then the remote tuple.
    fn compare_load_up(&self, a: usize, b: usize) -> Ordering {
        let (ga, gb) = (&self.groups[a], &self.groups[b]);
        signed(ga.counter_up.wrapping_sub(gb.counter_up))
            .then_with(|| self.remote_tuple(a).cmp(&self.remote_tuple(b)))
    }

    /// OpenSM's `port_group_compare_load_down`: fewer down-routes first; then a remote switch
    /// whose least-loaded down group is more loaded sorts later, but one less loaded does not
    /// sort earlier (OpenSM tests one sign only); then the remote tuple.
    fn compare_load_down(&self, a: usize, b: usize) -> Ordering {
        let (ga, gb) = (&self.groups[a], &self.groups[b]);
        let by_count = signed(ga.counter_down.wrapping_sub(gb.counter_down));
        if by_count != Ordering::Equal {
            return by_count;
        }
        let load = |g: &super::Group| match g.remote {
            Remote::Switch(r) => self.switches[r].min_counter_down,
            Remote::Ca(_) => 0,
        };
        if signed(load(ga).wrapping_sub(load(gb))) == Ordering::Greater {
            return Ordering::Greater;
        }
        self.remote_tuple(a).cmp(&self.remote_tuple(b))
    }
}

impl Walk {
    fn main(lid: u16, reverse_credit: u16) -> Walk {
        Walk {
            lid,
            main: true,
            reverse_credit,
        }
    }

    /// The walk after one more turn down and up again.
    fn spend_reverse_hop(self, main: bool) -> Walk {
        Walk {
            main,
            reverse_credit: self.reverse_credit - 1,
            ..self
        }
    }
}

/// The sign of a difference of two counters as OpenSM reads it, stored in an `int`.
fn signed(difference: u32) -> Ordering {
    (difference as i32).cmp(&0)
}

/// OpenSM's bubble sort of port groups: passes of adjacent swaps (where `compare(later,
/// earlier)` is `Less`) until one swaps nothing, each pass one shorter. The comparison is not
/// always a total order, so only this exact procedure gives OpenSM's order.
fn bubble_sort(list: &mut [usize], compare: impl Fn(usize, usize) -> Ordering) {
    let mut pass = 0;
    let mut swapped = true;
    while swapped {
        swapped = false;
        for j in 1..list.len().saturating_sub(pass) {
            if compare(list[j], list[j - 1]) == Ordering::Less {
                list.swap(j, j - 1);
                swapped = true;
            }
        }
        pass += 1;
    }
}
