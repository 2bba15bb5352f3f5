//! Nue's escape paths (`osm_ucast_nue.c`: `mark_escape_paths`,
//! `use_escape_paths_to_solve_impass`): per layer, a spanning tree from the switch most central
//! to the layer's destinations, whose dependencies are reserved in the cCDG before any route.
//! When a destination's modified Dijkstra reaches an impasse, its routes fall back to the tree,
//! which is free of cycles with everything routed so far.

use super::{Context, RoutingError};

impl Context {
    /// Marks the layer's escape paths in the cCDG. `hanging` is the switch of each destination
    /// (the destination's own for a switch), `ca_switches` that of each CA destination. On the
    /// first layer (`check_reach`), a switch the tree does not reach refuses the fabric, as
    /// OpenSM's `ERR NUE45` does.
    pub(super) fn mark_escape_paths(
        &mut self,
        hanging: &[usize],
        ca_switches: &[usize],
        check_reach: bool,
    ) -> Result<(), RoutingError> {
        self.net.mark_convex_hull(hanging);
        let Some(central) = self.net.central_switch(ca_switches) else {
            return Ok(());
        };
        self.net.spanning_tree(central);
        let unreached = self
            .net
            .switches
            .iter()
            .filter(|s| s.escape_path.is_none())
            .count();
        if check_reach && unreached > 1 {
            return Err(RoutingError::Refused(
                "ERR NUE45: unsupported network state (detached and inaccessible switches \
                 found; gracefully shutdown this routing engine)"
                    .into(),
            ));
        }
        // The links from the root down to its children, each once, in the order found.
        let mut into_central: Vec<usize> = Vec::new();
        for start in 0..self.net.switches.len() {
            let with_reverse = self.net.switches[start].has_adj_destinations;
            let mut current = self.net.switches[start].escape_path;
            while let Some(link) = current {
                let parent = self.net.links[link].from;
                let channel = self.net.links[link].channel;
                self.ccdg.escape_channel(channel);
                let Some(next) = self.net.switches[parent].escape_path else {
                    if !into_central.contains(&link) {
                        into_central.push(link);
                    }
                    break;
                };
                let next_channel = self.net.links[next].channel;
                self.ccdg.escape_channel(next_channel);
                self.ccdg.escape_edge(next_channel, channel);
                if with_reverse {
                    self.mark_reverse(link, next, parent);
                }
                current = Some(next);
            }
        }
        for &down in &into_central {
            for &other in &into_central {
                if down == other {
                    continue;
                }
                let Some(up) = self.reverse_channel(other) else {
                    continue;
                };
                let channel = self.net.links[down].channel;
                self.ccdg.escape_channel(channel);
                self.ccdg.escape_channel(up);
                self.ccdg.escape_edge(up, channel);
            }
        }
        Ok(())
    }

    /// The way up the tree from a switch a destination hangs off: the reverse of `link` (into
    /// the switch, from `parent`) then of `next` (into `parent`), and the turns from the
    /// reverse of `link` down to `parent`'s other children.
    fn mark_reverse(&mut self, link: usize, next: usize, parent: usize) {
        let (Some(up), Some(up_next)) = (self.reverse_channel(link), self.reverse_channel(next))
        else {
            return;
        };
        self.ccdg.escape_channel(up);
        self.ccdg.escape_channel(up_next);
        self.ccdg.escape_edge(up, up_next);
        let child = self.net.links[link].to;
        for l in self.net.links_of(parent) {
            let neighbour = self.net.links[l].to;
            let Some(down) = self.net.switches[neighbour].escape_path else {
                continue;
            };
            if self.net.links[down].from == parent && self.net.links[down].to != child {
                let down_channel = self.net.links[down].channel;
                self.ccdg.escape_edge(up, down_channel);
            }
        }
    }

    fn reverse_channel(&self, link: usize) -> Option<usize> {
        self.net.reverse(link).map(|r| self.net.links[r].channel)
    }

    /// `use_escape_paths_to_solve_impass`: every switch routes along the spanning tree toward
    /// `dest`: the tree's links as they are, reversed from `dest` up to the root.
    pub(super) fn use_escape_paths(&mut self, dest: usize) {
        for s in &mut self.net.switches {
            s.used_link = s.escape_path;
        }
        let mut current = self.net.switches[dest].used_link.take();
        while let Some(link) = current {
            let parent = self.net.links[link].from;
            let reverse = self.net.reverse(link);
            current = self.net.switches[parent].used_link;
            self.net.switches[parent].used_link = reverse;
        }
    }
}
