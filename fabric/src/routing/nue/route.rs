//! Nue's routes toward one destination (`osm_ucast_nue.c`: `route_via_modified_dijkstra_on_ccdg`,
//! `attempt_local_backtracking`, `attempt_shortcut_discovery`).
//!
//! A Dijkstra from the destination's switch, run on the cCDG: a channel is a step of a route,
//! and a switch is reached by the first channel that brings it closer over the link weights,
//! provided the dependency into that channel closes no cycle in the destination's subgraph.
//! Used dependencies are tried before unused ones. When the heap runs dry with switches left
//! unreached, a local backtracking step looks for a neighbour that can switch to another
//! incoming channel; after such a step, a shorter way to an earlier switch is a shortcut, taken
//! only if it keeps the subgraph acyclic. With no way out, every switch takes the escape paths.

use super::ccdg::{BLOCKED, ESCAPE, UNUSED};
use super::network::INFINITY;
use super::{Context, RoutingError};

impl Context {
    /// Routes every switch toward `dest` (the switch a destination hangs off, or the
    /// destination itself) with the subgraph colour `colour`, leaving each switch's
    /// `used_link`.
    pub(super) fn route_toward(&mut self, dest: usize, colour: usize) -> Result<(), RoutingError> {
        for s in &mut self.net.switches {
            s.distance = INFINITY;
            s.used_link = None;
            s.stack.clear();
            s.found_after_backtracking = -1;
        }
        self.net.switches[dest].distance = 0;
        let mut found = 1;
        let source = self.net.switches[dest].fake_channel;
        self.ccdg.colour_source(source, colour);
        self.ccdg.channels[source].distance = 0;
        let mut backtracking_step = 0i32;
        let mut current = source;
        loop {
            for used_first in [true, false] {
                for e in self.ccdg.edges_of(current) {
                    let shade = self.ccdg.edge_colour(e);
                    if (used_first && shade < ESCAPE) || (!used_first && shade != UNUSED) {
                        continue;
                    }
                    found += self.relax(current, e, colour, backtracking_step)?;
                }
            }
            let mut next = self.heap.extract_root();
            if next.is_none() && found != self.net.switches.len() {
                match self.backtrack(dest, colour) {
                    Some(channel) => {
                        next = Some(channel);
                        found += 1;
                        backtracking_step += 1;
                    }
                    None => {
                        self.use_escape_paths(dest);
                        backtracking_step = 0;
                    }
                }
            }
            match next {
                Some(channel) => current = channel,
                None => break,
            }
        }
        self.ccdg.fix_colours(&self.net, dest, source);
        Ok(())
    }

    /// One step of the modified Dijkstra: dependency `e` from channel `current`. Returns 1 when
    /// it reached a switch for the first time.
    fn relax(
        &mut self,
        current: usize,
        e: usize,
        colour: usize,
        backtracking_step: i32,
    ) -> Result<usize, RoutingError> {
        let next = self.ccdg.target(e);
        let Some(link) = self.ccdg.channels[next].link else {
            return Ok(0);
        };
        let distance = self.ccdg.channels[current].distance + self.net.links[link].weight;
        let reached = self.net.links[link].to;
        let switch = &self.net.switches[reached];
        let mut newly = 0;
        if distance < switch.distance {
            if self.ccdg.closes_cycle(current, e, colour) {
                return Ok(0);
            }
            let switch = &self.net.switches[reached];
            if backtracking_step != 0
                && switch.used_link.is_some()
                && backtracking_step != switch.found_after_backtracking
            {
                if !self.shortcut(reached, next, colour) {
                    return Ok(0);
                }
            } else {
                match switch.used_link {
                    Some(old) => self.forget(old)?,
                    None => {
                        newly = 1;
                        self.net.switches[reached].found_after_backtracking = backtracking_step;
                    }
                }
                self.ccdg.channels[next].distance = distance;
                self.heap.insert(distance, next);
            }
            let switch = &mut self.net.switches[reached];
            switch.distance = distance;
            switch.used_link = Some(link);
        } else if self.ccdg.edge_colour(e) > UNUSED {
            if backtracking_step != 0 && switch.used_link.is_some() {
                return Ok(0);
            }
            self.ccdg.channels[next].distance = distance;
            push_once(&mut self.net.switches[reached].stack, link);
        }
        Ok(newly)
    }

    /// A switch reached again, closer: the channel `old` that reached it leaves the heap, from
    /// the place the heap last gave it, and the dependency into it is undone if it was new.
    fn forget(&mut self, old: usize) -> Result<(), RoutingError> {
        let channel = self.net.links[old].channel;
        let removed = self
            .heap
            .delete(self.heap.position(channel))
            .ok_or_else(|| {
                RoutingError::Refused(
                    "Nue lost a channel from its heap (OpenSM would crash here)".into(),
                )
            })?;
        let from = self.ccdg.channels[removed].from;
        if let Some(pre) = self.net.switches[from].used_link {
            let pre = self.net.links[pre].channel;
            if let Some(e) = self.ccdg.edge_between(pre, removed) {
                self.ccdg.reset_edge(e);
            }
        }
        Ok(())
    }

    /// `attempt_local_backtracking`: the first unreached switch (in LID order) with a
    /// reached neighbour that can take another incoming channel from its stack, without
    /// breaking the dependencies of the switches routed through it, and reach the switch from
    /// there without closing a cycle. Returns the new channel into that switch.
    fn backtrack(&mut self, dest: usize, colour: usize) -> Option<usize> {
        for unreached in 0..self.net.switches.len() {
            if self.net.switches[unreached].distance != INFINITY {
                continue;
            }
            let mut candidates = self.backtracking_candidates(unreached);
            if candidates.is_empty() {
                continue;
            }
            // glibc's qsort merges, so equal distances keep their order.
            candidates.sort_by_key(|&(_, pre)| self.ccdg.channels[pre].distance);
            let mut chosen = None;
            for (link, pre) in candidates {
                if let Some(channel) = self.try_candidate(unreached, link, pre, dest, colour) {
                    if chosen.is_none() {
                        self.take_candidate(unreached, link, pre, channel);
                        chosen = Some(channel);
                    } else if let Some(into) = self.ccdg.channels[channel].link {
                        push_once(&mut self.net.switches[unreached].stack, into);
                    }
                }
            }
            if chosen.is_some() {
                return chosen;
            }
        }
        None
    }

    /// The (link from `unreached` to a reached neighbour, channel into that neighbour from its
    /// stack) pairs whose channel keeps the used dependencies toward the switches the
    /// neighbour relays to.
    fn backtracking_candidates(&self, unreached: usize) -> Vec<(usize, usize)> {
        let net = &self.net;
        let mut candidates = Vec::new();
        for link in net.links_of(unreached) {
            let adj = net.links[link].to;
            if net.switches[adj].distance == INFINITY {
                continue;
            }
            let relayed: Vec<usize> = net
                .links_of(adj)
                .filter_map(|l| net.switches[net.links[l].to].used_link)
                .filter(|&u| net.links[u].from == adj)
                .map(|u| net.links[u].channel)
                .collect();
            for &stacked in &net.switches[adj].stack {
                let pre = net.links[stacked].channel;
                let keeps = relayed.iter().all(|&out| {
                    let back = self.ccdg.channels[pre].from == self.ccdg.channels[out].to
                        && self.ccdg.channels[pre].to == self.ccdg.channels[out].from;
                    !back
                        && self
                            .ccdg
                            .edge_between(pre, out)
                            .is_some_and(|e| self.ccdg.edge_colour(e) >= ESCAPE)
                });
                if keeps {
                    candidates.push((link, pre));
                }
            }
        }
        candidates
    }

    /// Whether the neighbour at the end of `link` can reach `unreached` through channel `pre`
    /// into it: both dependencies (into `pre`, and from `pre` toward `unreached`) must join
    /// the subgraph. Returns the channel into `unreached`.
    fn try_candidate(
        &mut self,
        unreached: usize,
        link: usize,
        pre: usize,
        dest: usize,
        colour: usize,
    ) -> Option<usize> {
        let channel = self.net.links[self.net.reverse(link)?].channel;
        debug_assert_eq!(self.ccdg.channels[channel].to, unreached);
        let onward = self.ccdg.edge_between(pre, channel)?;
        if self.ccdg.edge_colour(onward) == BLOCKED {
            return None;
        }
        let before = self.ccdg.channels[pre].from;
        if before == dest {
            return None;
        }
        let pre_pre = self.net.links[self.net.switches[before].used_link?].channel;
        let (p, q) = (&self.ccdg.channels[pre], &self.ccdg.channels[pre_pre]);
        if p.from == q.to && p.to == q.from {
            return None;
        }
        let into = self.ccdg.edge_between(pre_pre, pre)?;
        if self.ccdg.edge_colour(into) == BLOCKED {
            return None;
        }
        let was_wet = self.ccdg.edge_is_wet(into);
        if self.ccdg.closes_cycle(pre_pre, into, colour) {
            return None;
        }
        if self.ccdg.closes_cycle(pre, onward, colour) {
            if !was_wet {
                self.ccdg.reset_edge(into);
            }
            return None;
        }
        self.ccdg.channels[channel].distance = self.ccdg.channels[pre].distance
            + self.net.links[self.ccdg.channels[channel].link?].weight;
        Some(channel)
    }

    /// The first viable candidate: `unreached` is reached by `channel`, and the neighbour at
    /// the end of `link` switches to `pre`.
    fn take_candidate(&mut self, unreached: usize, link: usize, pre: usize, channel: usize) {
        let distance = self.ccdg.channels[channel].distance;
        if let Some(into) = self.ccdg.channels[channel].link {
            let switch = &mut self.net.switches[unreached];
            switch.used_link = Some(into);
            switch.distance = distance;
        }
        let adj = self.net.links[link].to;
        if let Some(pre_link) = self.ccdg.channels[pre].link {
            let pre_distance = self.ccdg.channels[pre].distance;
            let switch = &mut self.net.switches[adj];
            switch.used_link = Some(pre_link);
            switch.distance = pre_distance;
        }
    }

    /// `attempt_shortcut_discovery`: whether `switch`, found before the last backtracking
    /// step, may now be reached by channel `shortcut`: the dependencies from it to the
    /// switches `switch` relays to must join the subgraph. If they do, the dependency into the
    /// switch's old channel is undone, and so are the new ones still wet (OpenSM resets the
    /// shortcut's own dependencies where it means the old channel's, and the tables follow
    /// it). If not, the dependencies joined before the failure are undone unless they were
    /// already there.
    fn shortcut(&mut self, switch: usize, shortcut: usize, colour: usize) -> bool {
        let Some(old_link) = self.net.switches[switch].used_link else {
            return false;
        };
        let old = self.net.links[old_link].channel;
        let before = self.ccdg.channels[old].from;
        let Some(pre_old_link) = self.net.switches[before].used_link else {
            return false;
        };
        let pre_old = self.net.links[pre_old_link].channel;
        let dependent: Vec<usize> = self
            .net
            .links_of(switch)
            .filter_map(|l| self.net.switches[self.net.links[l].to].used_link)
            .filter(|&u| self.net.links[u].from == switch)
            .filter_map(|u| self.ccdg.edge_between(shortcut, self.net.links[u].channel))
            .collect();
        let was_wet: Vec<bool> = dependent
            .iter()
            .map(|&e| self.ccdg.edge_is_wet(e))
            .collect();
        let failed_at = dependent.iter().position(|&e| {
            self.ccdg.edge_colour(e) == BLOCKED || self.ccdg.closes_cycle(shortcut, e, colour)
        });
        match failed_at {
            None => {
                if let Some(e) = self.ccdg.edge_between(pre_old, old) {
                    self.ccdg.reset_edge(e);
                }
                for &e in &dependent {
                    self.ccdg.reset_edge(e);
                }
                true
            }
            Some(at) => {
                for (&e, &wet) in dependent[..at].iter().zip(&was_wet) {
                    if self.ccdg.edge_colour(e) != BLOCKED && !wet {
                        self.ccdg.reset_edge(e);
                    }
                }
                false
            }
        }
    }
}

/// `add_link_to_stack_of_used_links`: `link` joins the stack unless it is there.
fn push_once(stack: &mut Vec<usize>, link: usize) {
    if !stack.contains(&link) {
        stack.push(link);
    }
}
