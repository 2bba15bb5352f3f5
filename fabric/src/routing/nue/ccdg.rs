//! Nue's complete channel dependency graph (`osm_ucast_nue.c`: `build_complete_cdg` and the
//! colour helpers).
//!
//! A vertex (a channel) per directed switch-to-switch link, and a fake channel per switch from
//! the switch to itself, the source of each Dijkstra; an edge from a channel to each channel
//! leaving the switch it enters, but the one straight back. Channels sort by OpenSM's channel
//! id (`lid_order` of the start, its port, `lid_order` of the end, its port); edges keep the
//! order of the links they lead to.
//!
//! Colours mark which dependencies routes already use: each destination's routes form an
//! acyclic subgraph of one colour, and a dependency joins only if it closes no cycle. Colours
//! are OpenSM's objects with a `real_col` pointer one level deep: a vertex or edge refers to a
//! colour object, and reads the colour that object points to. Merging two subgraphs points the
//! lower one's object at the higher one's; fixing makes each vertex and edge refer to what its
//! object points to. The one-level indirection decides which later additions need a cycle
//! search, so it is kept as it is.

use std::collections::HashMap;
use std::ops::Range;

use super::network::{INFINITY, Network, lid_order};

/// A dependency a route may not take: it would close a cycle.
pub(super) const BLOCKED: usize = 0;
/// A dependency or channel no route uses.
pub(super) const UNUSED: usize = 1;
/// The escape paths' colour; each destination's colour comes after it.
pub(super) const ESCAPE: usize = 2;

/// A dependency from one channel to the next (`ccdg_edge_t`).
#[derive(Debug)]
struct Edge {
    to: usize,
    colour: usize,
    /// Coloured while routing the current destination: undone unless its route keeps it.
    wet: bool,
}

/// A vertex (`ccdg_node_t`).
#[derive(Debug)]
pub(super) struct Channel {
    /// The switch the channel leaves and the one it enters (the same for a fake channel).
    pub(super) from: usize,
    pub(super) to: usize,
    /// Its link in the network, `None` for a fake channel.
    pub(super) link: Option<usize>,
    edges: Range<usize>,
    /// The modified Dijkstra's distance.
    pub(super) distance: u64,
    colour: usize,
    wet: bool,
    /// Exhausted by the current search for a path.
    black: bool,
    next_edge: usize,
    pre: Option<usize>,
}

/// The cCDG and its colours.
#[derive(Debug)]
pub(super) struct Ccdg {
    pub(super) channels: Vec<Channel>,
    edges: Vec<Edge>,
    /// `real_col` of each colour object, by id.
    real: Vec<usize>,
}

/// A channel before the channels are sorted: its key, ends and link, and the links its
/// dependencies lead to.
struct Draft {
    key: u64,
    from: usize,
    to: usize,
    link: Option<usize>,
    onward: Vec<usize>,
}

/// OpenSM's channel id as one sortable key.
fn channel_key(from_lid: u16, from_port: u8, to_lid: u16, to_port: u8) -> u64 {
    (u64::from(lid_order(from_lid)) << 48)
        + (u64::from(from_port) << 32)
        + (u64::from(lid_order(to_lid)) << 16)
        + u64::from(to_port)
}

impl Ccdg {
    /// The cCDG of `net`; tells each switch its fake channel and each link its channel.
    pub(super) fn new(net: &mut Network) -> Ccdg {
        let mut built: Vec<Draft> = Vec::new();
        for (s, switch) in net.switches.iter().enumerate() {
            let key = channel_key(switch.lid, 0, switch.lid, 0);
            built.push(Draft {
                key,
                from: s,
                to: s,
                link: None,
                onward: net.links_of(s).collect(),
            });
            for l in net.links_of(s) {
                let link = &net.links[l];
                let onward = net
                    .links_of(link.to)
                    .filter(|&o| !(net.links[o].to == s && net.links[o].to_port == link.from_port))
                    .collect();
                let to_lid = net.switches[link.to].lid;
                let key = channel_key(switch.lid, link.from_port, to_lid, link.to_port);
                built.push(Draft {
                    key,
                    from: s,
                    to: link.to,
                    link: Some(l),
                    onward,
                });
            }
        }
        built.sort_by_key(|b| b.key);
        let mut channel_of_link = HashMap::new();
        for (c, b) in built.iter().enumerate() {
            match b.link {
                Some(l) => {
                    channel_of_link.insert(l, c);
                    net.links[l].channel = c;
                }
                None => net.switches[b.from].fake_channel = c,
            }
        }
        let mut channels = Vec::with_capacity(built.len());
        let mut edges = Vec::new();
        for Draft {
            from,
            to,
            link,
            onward,
            ..
        } in built
        {
            let first = edges.len();
            edges.extend(onward.iter().map(|l| Edge {
                to: channel_of_link[l],
                colour: UNUSED,
                wet: false,
            }));
            channels.push(Channel {
                from,
                to,
                link,
                edges: first..edges.len(),
                distance: INFINITY,
                colour: UNUSED,
                wet: false,
                black: false,
                next_edge: 0,
                pre: None,
            });
        }
        Ccdg {
            channels,
            edges,
            real: Vec::new(),
        }
    }

    /// `reset_ccdg_color_array` and `init_ccdg_colors`: `colours` objects, each its own
    /// colour, and every channel and dependency unused.
    pub(super) fn reset_colours(&mut self, colours: usize) {
        self.real = (0..colours.max(ESCAPE + 1)).collect();
        for c in &mut self.channels {
            c.colour = UNUSED;
            c.wet = false;
        }
        for e in &mut self.edges {
            e.colour = UNUSED;
            e.wet = false;
        }
    }

    pub(super) fn edges_of(&self, c: usize) -> Range<usize> {
        self.channels[c].edges.clone()
    }

    /// Where dependency `e` leads.
    pub(super) fn target(&self, e: usize) -> usize {
        self.edges[e].to
    }

    /// The dependency from `a` to `b`, if the graph has it.
    pub(super) fn edge_between(&self, a: usize, b: usize) -> Option<usize> {
        self.edges_of(a).find(|&e| self.edges[e].to == b)
    }

    pub(super) fn colour(&self, c: usize) -> usize {
        self.real[self.channels[c].colour]
    }

    pub(super) fn edge_colour(&self, e: usize) -> usize {
        self.real[self.edges[e].colour]
    }

    pub(super) fn edge_is_wet(&self, e: usize) -> bool {
        self.edges[e].wet
    }

    /// Puts channel `c` on the escape paths.
    pub(super) fn escape_channel(&mut self, c: usize) {
        self.channels[c].colour = ESCAPE;
    }

    /// Puts the dependency from `a` to `b` on the escape paths.
    pub(super) fn escape_edge(&mut self, a: usize, b: usize) {
        if let Some(e) = self.edge_between(a, b) {
            self.edges[e].colour = ESCAPE;
        }
    }

    /// `change_fake_ccdg_node_color`: the source of a destination's Dijkstra takes `colour`;
    /// when it already has one, its colour object now points at `colour`, and takes what was
    /// routed from it before along.
    pub(super) fn colour_source(&mut self, c: usize, colour: usize) {
        if self.colour(c) > UNUSED {
            self.real[self.channels[c].colour] = colour;
        } else {
            self.channels[c].colour = colour;
        }
    }

    /// `reset_ccdg_edge_color`: a dependency coloured for the current destination is unused
    /// again.
    pub(super) fn reset_edge(&mut self, e: usize) {
        if self.edges[e].wet {
            self.edges[e].colour = UNUSED;
            self.edges[e].wet = false;
        }
    }

    /// `using_edge_induces_cycle_in_ccdg`: whether the route may not take dependency `e` from
    /// `head`, for the destination of `colour`. A dependency already used is free; an unused
    /// one joins `head`'s subgraph unless a path inside it leads back to `head`, in which case
    /// it is blocked for good. A dependency into another subgraph merges the two.
    pub(super) fn closes_cycle(&mut self, head: usize, e: usize, colour: usize) -> bool {
        let tail = self.edges[e].to;
        if self.edge_colour(e) > UNUSED {
            return false;
        }
        if colour == self.colour(tail) {
            if self.path_within(tail, head) {
                self.edges[e].colour = BLOCKED;
                return true;
            }
        } else if self.colour(tail) == UNUSED {
            self.channels[tail].colour = self.channels[head].colour;
            self.channels[tail].wet = true;
        } else {
            let tail_object = self.channels[tail].colour;
            self.real[tail_object] = self.channels[head].colour;
        }
        self.edges[e].colour = self.channels[head].colour;
        self.edges[e].wet = true;
        false
    }

    /// `found_path_between_ccdg_nodes_in_subgraph`: a depth-first search from `source` over
    /// used dependencies for `target`. OpenSM marks only exhausted channels, so a cycle among
    /// used dependencies would keep it searching for ever; this search takes re-entering a
    /// channel on its own path as the cycle it is.
    fn path_within(&mut self, source: usize, target: usize) -> bool {
        let mut on_path = vec![false; self.channels.len()];
        let mut found = false;
        let mut current = Some(source);
        self.channels[source].next_edge = 0;
        self.channels[source].pre = None;
        on_path[source] = true;
        while let Some(c) = current {
            let mut next = None;
            for e in self.channels[c].edges.start + self.channels[c].next_edge
                ..self.channels[c].edges.end
            {
                let to = self.edges[e].to;
                if self.channels[to].black || self.edge_colour(e) <= UNUSED {
                    continue;
                }
                if to == target || on_path[to] {
                    found = true;
                } else {
                    next = Some(to);
                    self.channels[c].next_edge = e + 1 - self.channels[c].edges.start;
                }
                break;
            }
            match next {
                Some(n) => {
                    self.channels[n].next_edge = 0;
                    self.channels[n].pre = Some(c);
                    on_path[n] = true;
                    current = Some(n);
                }
                None => {
                    self.channels[c].black = true;
                    on_path[c] = false;
                    current = self.channels[c].pre;
                }
            }
            if found {
                break;
            }
        }
        for c in &mut self.channels {
            c.black = false;
        }
        found
    }

    /// `fix_ccdg_colors`, after a destination: keeps the colours of the channels and
    /// dependencies its routes use (toward `source`, the destination's switch, from its fake
    /// channel `source_channel`), undoes every other colour it set, and makes the merges of
    /// subgraphs official.
    pub(super) fn fix_colours(&mut self, net: &Network, source: usize, source_channel: usize) {
        for s in &net.switches {
            let Some(l) = s.used_link else { continue };
            let c = net.links[l].channel;
            self.channels[c].wet = false;
            let from = self.channels[c].from;
            let pre = if from == source {
                Some(source_channel)
            } else {
                net.switches[from].used_link.map(|p| net.links[p].channel)
            };
            if let Some(e) = pre.and_then(|p| self.edge_between(p, c)) {
                self.edges[e].wet = false;
            }
        }
        for c in 0..self.channels.len() {
            if self.channels[c].wet {
                self.channels[c].colour = UNUSED;
                self.channels[c].wet = false;
            }
            for e in self.edges_of(c) {
                self.reset_edge(e);
                self.edges[e].colour = self.real[self.edges[e].colour];
            }
            self.channels[c].colour = self.real[self.channels[c].colour];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{assign_lids, ring};
    use crate::routing::nue::network::network_of;

    /// A ring of `n` switches and its cCDG, colours reset for one destination.
    fn ring_ccdg(n: usize) -> (Network, Ccdg) {
        let mut topo = ring(n, 0).unwrap();
        assign_lids(&mut topo, 0).unwrap();
        let mut net = network_of(&topo);
        let mut ccdg = Ccdg::new(&mut net);
        ccdg.reset_colours(ESCAPE + 2);
        (net, ccdg)
    }

    /// The channel of the link from switch `a` to switch `b`.
    fn channel(net: &Network, a: usize, b: usize) -> usize {
        let l = net.links_of(a).find(|&l| net.links[l].to == b).unwrap();
        net.links[l].channel
    }

    /// A ring's cCDG: two channels per link plus a fake one per switch; each channel depends
    /// on the one channel onward (not back), each fake channel on both of its switch's.
    #[test]
    fn a_ring_has_one_dependency_onward_per_channel() {
        let (net, ccdg) = ring_ccdg(4);
        assert_eq!(ccdg.channels.len(), 4 * 2 + 4);
        for (c, channel) in ccdg.channels.iter().enumerate() {
            let onward: Vec<usize> = ccdg.edges_of(c).map(|e| ccdg.target(e)).collect();
            match channel.link {
                None => assert_eq!(onward.len(), 2),
                Some(_) => {
                    assert_eq!(onward.len(), 1);
                    assert_ne!(ccdg.channels[onward[0]].to, channel.from);
                }
            }
        }
        let first = channel(&net, 0, 1);
        assert!(ccdg.edge_between(first, channel(&net, 1, 2)).is_some());
        assert!(ccdg.edge_between(first, channel(&net, 1, 0)).is_none());
    }

    /// Routing round a ring in one direction: the dependencies join one colour until the last
    /// would close the ring, which is blocked for good.
    #[test]
    fn the_dependency_closing_a_cycle_is_blocked() {
        let (net, mut ccdg) = ring_ccdg(4);
        let colour = ESCAPE + 1;
        let around: Vec<usize> = (0..4).map(|s| channel(&net, s, (s + 1) % 4)).collect();
        ccdg.colour_source(net.switches[0].fake_channel, colour);
        let fake = net.switches[0].fake_channel;
        let start = ccdg.edge_between(fake, around[0]).unwrap();
        assert!(!ccdg.closes_cycle(fake, start, colour));
        for hop in 0..3 {
            let e = ccdg.edge_between(around[hop], around[hop + 1]).unwrap();
            assert!(!ccdg.closes_cycle(around[hop], e, colour), "hop {hop}");
            assert_eq!(ccdg.colour(around[hop + 1]), colour);
        }
        let last = ccdg.edge_between(around[3], around[0]).unwrap();
        assert!(ccdg.closes_cycle(around[3], last, colour));
        assert_eq!(ccdg.edge_colour(last), BLOCKED);
        // The other way round is still free.
        let back = channel(&net, 1, 0);
        let e = ccdg.edge_between(channel(&net, 2, 1), back).unwrap();
        assert_eq!(ccdg.edge_colour(e), UNUSED);
    }

    /// A dependency into another destination's subgraph merges the two without a search: the
    /// older colour object now reads as the newer colour.
    #[test]
    fn joining_another_subgraph_merges_the_colours() {
        let (net, mut ccdg) = ring_ccdg(4);
        ccdg.reset_colours(ESCAPE + 3);
        let (older, newer) = (ESCAPE + 1, ESCAPE + 2);
        let a = channel(&net, 0, 1);
        let b = channel(&net, 1, 2);
        ccdg.channels[b].colour = older;
        ccdg.channels[a].colour = newer;
        let e = ccdg.edge_between(a, b).unwrap();
        assert!(!ccdg.closes_cycle(a, e, newer));
        assert_eq!(ccdg.colour(b), newer);
        assert_eq!(ccdg.real[older], newer);
        assert_eq!(ccdg.edge_colour(e), newer);
    }
}
