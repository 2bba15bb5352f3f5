//! The torus placed in the fabric: each switch at its coordinates, found from the seed as
//! OpenSM's `build_torus` finds it, and its ports grouped by direction as `link_tswitches` and
//! `link_srcsink` group them.
//!
//! OpenSM grows the torus from the seed one cube of eight switches at a time, with a case for
//! every pattern of missing switches, so that it can route around failures. ibqos places a
//! complete torus only: the only placement of the ideal torus onto the switches that agrees
//! with the seed. On a complete torus both give the same coordinates, because the seed fixes
//! the origin and every direction (that is why a radix-4 ring needs both of its seed links).

use std::collections::BTreeSet;

use ibqos_mad::Guid;
use ibqos_opensm::torus_config::{DIMENSIONS, TorusConfig, TorusSeed};

use crate::topology::{NodeId, Topology};

/// The port group of a switch's end ports: port 0 and the CA and router ports (OpenSM's
/// `ptgrp[2 * TORUS_MAX_DIM]`). Groups `2d` and `2d + 1` lead in the negative and positive
/// direction of dimension `d`.
pub(super) const ENDPORT_GROUP: usize = 6;

/// Why torus-2QoS does not route the fabric: OpenSM's error line.
pub(super) type Refusal = String;

/// A coordinate: x, y and z.
pub(super) type Coord = [usize; 3];

/// One switch of the torus.
#[derive(Debug)]
pub(super) struct TorusSwitch {
    pub node: NodeId,
    pub guid: u64,
    pub coord: Coord,
    /// The port numbers of each group, in OpenSM's order within the group.
    pub groups: [Vec<u8>; 7],
    /// For each group but the end ports', the switch its links reach.
    pub toward: [Option<usize>; 6],
}

impl TorusSwitch {
    /// The group `port` belongs to, `None` for a port outside the torus.
    pub fn group_of(&self, port: u8) -> Option<usize> {
        self.groups.iter().position(|g| g.contains(&port))
    }
}

/// The torus: its switches in OpenSM's `sw_pool` order, and where each coordinate is.
#[derive(Debug)]
pub(super) struct Torus {
    pub radix: Coord,
    pub switches: Vec<TorusSwitch>,
    /// The switch at each coordinate, by [`Torus::index`].
    at: Vec<usize>,
}

impl Torus {
    fn index(radix: Coord, c: Coord) -> usize {
        c[0] + radix[0] * (c[1] + radix[1] * c[2])
    }

    /// The switch at `c`.
    pub fn at(&self, c: Coord) -> usize {
        self.at[Torus::index(self.radix, c)]
    }

    /// Places the switches of `topo` (`physical`) in the torus `config` describes, from
    /// `seed`.
    pub fn build(
        config: &TorusConfig,
        seed: &TorusSeed,
        topo: &Topology,
        physical: &Physical,
    ) -> Result<Torus, Refusal> {
        let radix = config.radix.map(|r| r as usize);
        let ideal = Ideal {
            radix,
            mesh: config.mesh,
        };
        let size = ideal.len();
        if physical.len() != size {
            return Err(format!(
                "the fabric has {} switches and a {} x {} x {} torus {}: ibqos routes a \
                 complete torus only",
                physical.len(),
                radix[0],
                radix[1],
                radix[2],
                size
            ));
        }
        let mut placement = Placement::new(size, physical.len());
        let origin: Coord =
            std::array::from_fn(|d| canonical(-i64::from(seed.dateline[d]), radix[d]));
        // The seed's switches, in the order OpenSM installs them: x, y, z, each + then -.
        let mut installed = Vec::new();
        for d in 0..3 {
            for (step, link) in [(1, seed.links[d][1]), (-1, seed.links[d][0])] {
                let Some((from, to)) = link else { continue };
                let mut next = origin;
                next[d] = canonical(origin[d] as i64 + step, radix[d]);
                for (guid, c) in [(from, origin), (to, next)] {
                    let s = physical.by_guid(guid).ok_or_else(|| seed_error(guid))?;
                    match (placement.switch_at(&ideal, c), placement.coord_of(s)) {
                        (None, None) => {
                            placement.place(&ideal, c, s);
                            installed.push(s);
                        }
                        // OpenSM keeps the switch installed first at a coordinate.
                        (Some(_), _) => {}
                        (None, Some(_)) => {
                            return Err(format!(
                                "ERR 4E57: build_torus finished with errors (the seed places \
                                 switch {} twice)",
                                Guid(guid)
                            ));
                        }
                    }
                }
            }
        }
        if !placement.extend(&ideal, physical) {
            return Err(
                "ERR 4E57: build_torus finished with errors (the switches do not form the \
                 configured torus around its seed; ibqos routes a complete torus only)"
                    .to_string(),
            );
        }
        let mut order = installed;
        for k in 0..radix[2] {
            for j in 0..radix[1] {
                for i in 0..radix[0] {
                    let s = placement.at[Torus::index(radix, [i, j, k])].expect("complete");
                    if !order.contains(&s) {
                        order.push(s);
                    }
                }
            }
        }
        let slot_of: Vec<usize> = {
            let mut slot = vec![0; order.len()];
            for (i, &s) in order.iter().enumerate() {
                slot[s] = i;
            }
            slot
        };
        let mut switches: Vec<TorusSwitch> = order
            .iter()
            .map(|&s| TorusSwitch {
                node: physical.ids[s],
                guid: physical.guid[s],
                coord: placement.coord[s].expect("complete"),
                groups: Default::default(),
                toward: [None; 6],
            })
            .collect();
        let at = placement
            .at
            .iter()
            .map(|s| slot_of[s.expect("complete")])
            .collect();
        let mut torus = Torus {
            radix,
            switches: Vec::new(),
            at,
        };
        let max = config.portgroup_max_ports as usize;
        for lower in 0..switches.len() {
            for d in 0..3 {
                let Some(upper_coord) = ideal.step(switches[lower].coord, d, 1) else {
                    continue;
                };
                let upper = torus.at(upper_coord);
                if upper == lower {
                    continue;
                }
                link_switches(topo, &mut switches, lower, upper, d, max)?;
            }
        }
        for sw in &mut switches {
            group_endports(topo, sw, max)?;
        }
        torus.switches = switches;
        Ok(torus)
    }
}

fn seed_error(guid: u64) -> Refusal {
    format!(
        "ERR 4E30: Every configured torus seed has at least one switch missing in fabric! \
         (switch {})",
        Guid(guid)
    )
}

/// `v` on a ring of `radix`, as OpenSM's `canonicalize`.
pub(super) fn canonical(v: i64, radix: usize) -> usize {
    let radix = radix.max(1) as i64;
    v.rem_euclid(radix) as usize
}

/// Groups the links between `lower` and `upper`, its neighbour in the positive direction of
/// `d`: all into `lower`'s positive group and `upper`'s negative one, in `lower`'s port order.
fn link_switches(
    topo: &Topology,
    switches: &mut [TorusSwitch],
    lower: usize,
    upper: usize,
    d: usize,
    max: usize,
) -> Result<(), Refusal> {
    let (from, to) = (switches[lower].node, switches[upper].node);
    let links: Vec<(u8, u8)> = topo
        .node(from)
        .into_iter()
        .flat_map(|n| n.existing_ports())
        .filter_map(|(p, port)| {
            let peer = port.peer?;
            (p != 0 && peer.node == to).then_some((p, peer.port))
        })
        .collect();
    for (p, q) in links {
        for (s, code) in [(lower, "4E17"), (upper, "4E18")] {
            if switches[s].groups[2 * d + usize::from(s == lower)].len() == max {
                return Err(group_full(code, max, switches[s].guid));
            }
        }
        switches[lower].groups[2 * d + 1].push(p);
        switches[upper].groups[2 * d].push(q);
    }
    switches[lower].toward[2 * d + 1] = Some(upper);
    switches[upper].toward[2 * d] = Some(lower);
    Ok(())
}

/// Port 0 and the CA and router ports, in port order (`link_srcsink`).
fn group_endports(topo: &Topology, sw: &mut TorusSwitch, max: usize) -> Result<(), Refusal> {
    let Some(node) = topo.node(sw.node) else {
        return Ok(());
    };
    for (p, port) in node.existing_ports() {
        let endport = p == 0
            || port
                .peer
                .is_some_and(|peer| topo.node(peer.node).is_some_and(|n| !n.is_switch()));
        if !endport {
            continue;
        }
        if sw.groups[ENDPORT_GROUP].len() == max {
            return Err(group_full(
                if p == 0 { "4E1D" } else { "4E1E" },
                max,
                sw.guid,
            ));
        }
        sw.groups[ENDPORT_GROUP].push(p);
    }
    Ok(())
}

fn group_full(code: &str, max: usize, guid: u64) -> Refusal {
    format!(
        "ERR {code}: exceeded port group max port count ({max}): switch GUID {}",
        Guid(guid)
    )
}

/// The torus the configuration describes, before any switch is placed in it.
struct Ideal {
    radix: Coord,
    mesh: [bool; 3],
}

impl Ideal {
    fn len(&self) -> usize {
        self.radix.iter().product()
    }

    /// The coordinate one `step` (+1 or -1) from `c` along `d`, `None` off the end of a mesh
    /// or in a dimension of radix 1.
    fn step(&self, c: Coord, d: usize, step: i64) -> Option<Coord> {
        let r = self.radix[d];
        if r < 2 {
            return None;
        }
        let v = c[d] as i64 + step;
        if self.mesh[d] && (v < 0 || v >= r as i64) {
            return None;
        }
        let mut next = c;
        next[d] = canonical(v, r);
        Some(next)
    }

    /// The neighbours of `c`, each once.
    fn neighbours(&self, c: Coord) -> BTreeSet<Coord> {
        (0..3)
            .flat_map(|d| [self.step(c, d, 1), self.step(c, d, -1)])
            .flatten()
            .filter(|&n| n != c)
            .collect()
    }

    fn coord(&self, index: usize) -> Coord {
        let [x, y, _] = self.radix;
        [index % x, (index / x) % y, index / (x * y)]
    }
}

/// The switches of the fabric, numbered 0.., and the switches each is linked to.
pub(super) struct Physical {
    pub ids: Vec<NodeId>,
    pub guid: Vec<u64>,
    pub neighbours: Vec<BTreeSet<usize>>,
}

impl Physical {
    fn len(&self) -> usize {
        self.ids.len()
    }

    fn by_guid(&self, guid: u64) -> Option<usize> {
        self.guid.iter().position(|&g| g == guid)
    }
}

/// Which switch is at which coordinate, as far as known.
struct Placement {
    /// By [`Torus::index`].
    at: Vec<Option<usize>>,
    /// By switch.
    coord: Vec<Option<Coord>>,
}

impl Placement {
    fn new(size: usize, switches: usize) -> Placement {
        Placement {
            at: vec![None; size],
            coord: vec![None; switches],
        }
    }

    fn switch_at(&self, ideal: &Ideal, c: Coord) -> Option<usize> {
        self.at[Torus::index(ideal.radix, c)]
    }

    fn coord_of(&self, s: usize) -> Option<Coord> {
        self.coord[s]
    }

    /// Puts `s`, unplaced, at the free coordinate `c`.
    fn place(&mut self, ideal: &Ideal, c: Coord, s: usize) {
        self.at[Torus::index(ideal.radix, c)] = Some(s);
        self.coord[s] = Some(c);
    }

    fn unplace(&mut self, ideal: &Ideal, c: Coord) {
        let slot = Torus::index(ideal.radix, c);
        if let Some(s) = self.at[slot].take() {
            self.coord[s] = None;
        }
    }

    /// Whether switch `s` at `c` agrees with every switch placed so far: linked to each placed
    /// neighbour of `c`, and to no other placed switch.
    fn fits(&self, ideal: &Ideal, physical: &Physical, c: Coord, s: usize) -> bool {
        let expected: BTreeSet<usize> = ideal
            .neighbours(c)
            .into_iter()
            .filter_map(|n| self.switch_at(ideal, n))
            .collect();
        let placed: BTreeSet<usize> = physical.neighbours[s]
            .iter()
            .copied()
            .filter(|&n| self.coord[n].is_some())
            .collect();
        expected == placed
    }

    /// The free coordinate with the most placed neighbours (its candidates are fewest), and
    /// those neighbours; `None` when every coordinate holds a switch.
    fn next_free(&self, ideal: &Ideal) -> Option<(Coord, Vec<usize>)> {
        (0..ideal.len())
            .map(|i| ideal.coord(i))
            .filter(|&c| self.switch_at(ideal, c).is_none())
            .map(|c| {
                let placed: Vec<usize> = ideal
                    .neighbours(c)
                    .into_iter()
                    .filter_map(|n| self.switch_at(ideal, n))
                    .collect();
                (c, placed)
            })
            .max_by_key(|(c, placed)| (placed.len(), std::cmp::Reverse(*c)))
    }

    /// Places every switch still unplaced, coordinate by coordinate outward from those placed,
    /// going back on a choice that leads nowhere. False when no complete placement exists, or
    /// none is found within a budget of steps that a torus with its seed never needs.
    fn extend(&mut self, ideal: &Ideal, physical: &Physical) -> bool {
        // Each frame: a coordinate, its candidates, and the next candidate to try.
        let mut stack: Vec<(Coord, Vec<usize>, usize)> = Vec::new();
        let mut budget = 16 * ideal.len() + 1024;
        loop {
            match self.next_free(ideal) {
                Some((c, placed)) => {
                    let candidates = placed.first().map_or_else(Vec::new, |&n| {
                        physical.neighbours[n]
                            .iter()
                            .copied()
                            .filter(|&s| self.coord[s].is_none())
                            .collect()
                    });
                    stack.push((c, candidates, 0));
                }
                None => {
                    let complete = (0..physical.len())
                        .all(|s| self.coord[s].is_some_and(|c| self.fits(ideal, physical, c, s)));
                    if complete {
                        return true;
                    }
                }
            }
            // Try the next candidate of the innermost coordinate, going back when none is left.
            loop {
                if budget == 0 {
                    return false;
                }
                budget -= 1;
                let Some((c, candidates, next)) = stack.last_mut() else {
                    return false;
                };
                let c = *c;
                self.unplace(ideal, c);
                let found = candidates[*next..]
                    .iter()
                    .position(|&s| self.fits(ideal, physical, c, s));
                match found {
                    Some(at) => {
                        let s = candidates[*next + at];
                        *next += at + 1;
                        self.place(ideal, c, s);
                        break;
                    }
                    None => {
                        stack.pop();
                    }
                }
            }
        }
    }
}

/// The name of dimension `d`.
pub(super) fn dimension(d: usize) -> char {
    DIMENSIONS[d]
}
