//! Generated fabrics for tests, benchmarks and the simulator.
//!
//! GUIDs follow ibsim's defaults (switches from 0x200000 advancing by 1, CAs from 0x100000
//! advancing by ports + 1), and nodes are created switches first, so a generated fabric written
//! with [`to_net_file`](crate::netfile::to_net_file) and one ibsim builds from an equivalent
//! hand-written file without GUID lines agree. [`fat_tree`] builds exactly the fabrics of the
//! shared `fat-tree-16.net` and `fat-tree-648.net`; [`fat_tree3`] builds three-level ones;
//! [`torus_2d`], [`mesh_2d`] and [`dragonfly`] the fabrics with cycles that layered routing serves.

use crate::topology::{Node, NodeId, NodeKind, PortRef, Topology, TopologyError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    #[error("impossible shape: {0}")]
    Shape(String),
    #[error(transparent)]
    Topology(#[from] TopologyError),
}

/// Refuses a fabric of `end_ports` end ports (switch ports 0, CA and router ports; `None` when
/// counting them overflowed) that would need more LIDs at `lmc` than the unicast space holds,
/// before anything is built: an SM could not address it, and building it could exhaust memory.
fn check_lid_space(shape: &str, end_ports: Option<usize>, lmc: u8) -> Result<(), GenError> {
    let lids = usize::from(crate::MAX_UNICAST_LID);
    let per_port = 1usize << lmc;
    if end_ports.is_some_and(|n| n <= lids / per_port) {
        return Ok(());
    }
    let count = end_ports.map_or_else(|| "too many".to_string(), |n| n.to_string());
    Err(GenError::Shape(format!(
        "{shape} has {count} end ports (switch ports 0 and hosts), but the unicast LID space \
         holds {} with LMC {lmc}",
        lids / per_port
    )))
}

/// `a * b + c` end ports, `None` when it overflows.
fn end_ports(a: usize, b: usize, c: usize) -> Option<usize> {
    a.checked_mul(b)?.checked_add(c)
}

/// Creates nodes with ibsim's default GUID sequence.
#[derive(Debug)]
struct Builder {
    topo: Topology,
    switch_guid: u64,
    ca_guid: u64,
}

impl Builder {
    fn new() -> Builder {
        Builder {
            topo: Topology::new(),
            switch_guid: 0x200000,
            ca_guid: 0x100000,
        }
    }

    fn node(&mut self, kind: NodeKind, name: String, ports: usize) -> Result<NodeId, GenError> {
        let ports = u8::try_from(ports)
            .ok()
            .filter(|&p| p > 0 && p < 255)
            .ok_or_else(|| GenError::Shape(format!("{name} would need {ports} ports")))?;
        let guid = match kind {
            NodeKind::Switch => &mut self.switch_guid,
            _ => &mut self.ca_guid,
        };
        let node = Node::new(kind, *guid, name, ports);
        *guid += if kind == NodeKind::Switch {
            1
        } else {
            u64::from(ports) + 1
        };
        Ok(self.topo.add_node(node)?)
    }

    fn link(&mut self, a: NodeId, pa: usize, b: NodeId, pb: usize) -> Result<(), GenError> {
        let port = |p: usize| u8::try_from(p).map_err(|_| GenError::Shape(format!("port {p}")));
        Ok(self
            .topo
            .connect(PortRef::new(a, port(pa)?), PortRef::new(b, port(pb)?))?)
    }

    /// `count` switches of `ports` ports, the `i`th named `name(i)`.
    fn switches(
        &mut self,
        count: usize,
        ports: usize,
        name: impl Fn(usize) -> String,
    ) -> Result<Vec<NodeId>, GenError> {
        (0..count)
            .map(|i| self.node(NodeKind::Switch, name(i), ports))
            .collect()
    }

    /// Links every switch of `lower` to every switch of `upper`: `lower[i]` port `up + j` to
    /// `upper[j]` port `down + i`. One layer of a fat tree, whatever its level.
    fn mesh(
        &mut self,
        lower: &[NodeId],
        up: usize,
        upper: &[NodeId],
        down: usize,
    ) -> Result<(), GenError> {
        for (i, &l) in lower.iter().enumerate() {
            for (j, &u) in upper.iter().enumerate() {
                self.link(l, up + j, u, down + i)?;
            }
        }
        Ok(())
    }

    /// One single-port CA `H{tag}_{h}` on each of `ports` of `switch`.
    fn hosts(
        &mut self,
        switch: NodeId,
        tag: &str,
        ports: impl Iterator<Item = usize>,
    ) -> Result<(), GenError> {
        for (h, port) in ports.enumerate() {
            let ca = self.node(NodeKind::Ca, format!("H{tag}_{h}"), 1)?;
            self.link(switch, port, ca, 1)?;
        }
        Ok(())
    }
}

/// A ring of `switches` switches `S{i}` (port 1 to the previous switch, port 2 to the next), with
/// `hosts` CAs `H{i}_{h}` on ports 3.. of each.
pub fn ring(switches: usize, hosts: usize) -> Result<Topology, GenError> {
    if switches < 2 {
        return Err(GenError::Shape("a ring needs at least 2 switches".into()));
    }
    let ports = hosts
        .checked_add(1)
        .and_then(|per_switch| end_ports(switches, per_switch, 0));
    check_lid_space(&format!("a ring of {switches} switches"), ports, 0)?;
    let mut b = Builder::new();
    let sw = b.switches(switches, 2 + hosts, |i| format!("S{i}"))?;
    for (i, &s) in sw.iter().enumerate() {
        b.link(s, 2, sw[(i + 1) % switches], 1)?;
    }
    for (i, &s) in sw.iter().enumerate() {
        b.hosts(s, &i.to_string(), 3..3 + hosts)?;
    }
    Ok(b.topo)
}

/// A two-level fat tree of `radix`-port switches: leaves `L{l}` with `hosts_per_leaf` CAs
/// `H{l}_{h}` on ports 1.., and uplink `hosts_per_leaf + 1 + s` to spine `S{s}` port `l + 1`.
pub fn fat_tree(
    leaves: usize,
    spines: usize,
    hosts_per_leaf: usize,
    radix: usize,
) -> Result<Topology, GenError> {
    if leaves == 0 || spines == 0 || hosts_per_leaf.saturating_add(spines) > radix || leaves > radix
    {
        return Err(GenError::Shape(format!(
            "{leaves} leaves x {spines} spines with {hosts_per_leaf} hosts per leaf on {radix}-port switches"
        )));
    }
    check_lid_space(
        &format!("a fat tree of {leaves} leaves"),
        end_ports(leaves, hosts_per_leaf, leaves + spines),
        0,
    )?;
    let mut b = Builder::new();
    let leaf = b.switches(leaves, radix, |l| format!("L{l}"))?;
    let spine = b.switches(spines, radix, |s| format!("S{s}"))?;
    b.mesh(&leaf, hosts_per_leaf + 1, &spine, 1)?;
    for (l, &lf) in leaf.iter().enumerate() {
        b.hosts(lf, &l.to_string(), 1..=hosts_per_leaf)?;
    }
    Ok(b.topo)
}

/// A three-level fat tree of `radix`-port switches, the k-ary fat tree of Al-Fares et al. ("A
/// scalable, commodity data center network architecture", SIGCOMM 2008) with `k = radix`,
/// sized down by `pods` (at most `k`) and `hosts_per_edge` (at most `k / 2`). With `m = k / 2`:
///
/// - `pods` pods `p`, each of `m` edge switches `E{p}_{e}` and `m` aggregation switches
///   `A{p}_{a}`, every edge switch linked to every aggregation switch of its pod;
/// - `m * m` core switches `C{c}` in `m` groups of `m` (core `c` is in group `c / m`), group `a`
///   linked to aggregation switch `a` of every pod;
/// - `hosts_per_edge` single-port CAs `H{p}_{e}_{h}` on each edge switch.
///
/// Port numbers do not depend on the size, so a port's number alone says where it leads:
///
/// - edge `E{p}_{e}`: host `h` on port `h + 1`, aggregation `A{p}_{a}` on port `m + 1 + a`;
/// - aggregation `A{p}_{a}`: edge `E{p}_{e}` on port `e + 1`, core `C{a * m + j}` on port
///   `m + 1 + j`;
/// - core `C{c}`: aggregation `A{p}_{c / m}` on port `p + 1`.
///
/// A sized-down tree leaves edge ports `hosts_per_edge + 1..=m` and core ports `pods + 1..=k`
/// unlinked; the full tree (`pods = k`, `hosts_per_edge = m`) uses every switch port and has
/// `5k²/4` switches and `k³/4` hosts.
///
/// Switches are created bottom-up, as [`fat_tree`] creates leaves before spines: the edge
/// switches pod by pod, then the aggregation switches pod by pod, then the cores; then the hosts,
/// edge switch by edge switch. So `E0_0` has the first switch GUID and `H0_0_0` the first CA GUID.
pub fn fat_tree3(radix: usize, pods: usize, hosts_per_edge: usize) -> Result<Topology, GenError> {
    let m = radix / 2;
    if radix == 0 || !radix.is_multiple_of(2) {
        return Err(GenError::Shape(format!(
            "a three-level fat tree needs an even radix of at least 2, not {radix}: half of each \
             switch's ports go down, half up"
        )));
    }
    if pods == 0 || pods > radix {
        return Err(GenError::Shape(format!(
            "{pods} pods on {radix}-port switches: each core switch has one port per pod, so 1 to \
             {radix} pods"
        )));
    }
    if hosts_per_edge == 0 || hosts_per_edge > m {
        return Err(GenError::Shape(format!(
            "{hosts_per_edge} hosts per edge switch on {radix}-port switches: an edge switch keeps \
             {m} ports for its uplinks, so 1 to {m} hosts"
        )));
    }
    let edges = pods * m;
    check_lid_space(
        &format!("a {pods}-pod fat tree"),
        end_ports(edges, hosts_per_edge, 2 * edges + m * m),
        0,
    )?;
    let mut b = Builder::new();
    let edge = (0..pods)
        .map(|p| b.switches(m, radix, |e| format!("E{p}_{e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let aggregation = (0..pods)
        .map(|p| b.switches(m, radix, |a| format!("A{p}_{a}")))
        .collect::<Result<Vec<_>, _>>()?;
    let core = b.switches(m * m, radix, |c| format!("C{c}"))?;
    for (p, (edges, aggs)) in edge.iter().zip(&aggregation).enumerate() {
        b.mesh(edges, m + 1, aggs, 1)?;
        // Aggregation switch `a` of every pod takes core group `a`, so each core reaches every
        // pod once, by the port numbered after the pod.
        for (group, &agg) in core.chunks(m).zip(aggs) {
            b.mesh(&[agg], m + 1, group, p + 1)?;
        }
    }
    for (p, edges) in edge.iter().enumerate() {
        for (e, &sw) in edges.iter().enumerate() {
            b.hosts(sw, &format!("{p}_{e}"), 1..=hosts_per_edge)?;
        }
    }
    Ok(b.topo)
}

/// A `x` by `y` torus of switches `S{i}_{j}`: port 1 to +x, 2 to -x, 3 to +y, 4 to -y (a
/// dimension of size 1 has no links, of size 2 two parallel ones), `hosts` CAs `H{i}_{j}_{h}` on
/// ports 5...
pub fn torus_2d(x: usize, y: usize, hosts: usize) -> Result<Topology, GenError> {
    grid_2d("torus", x, y, hosts, true)
}

/// A `x` by `y` mesh: [`torus_2d`]'s switches, ports and hosts without the wrap-around links, so
/// a switch on an edge leaves the port towards the missing neighbour unlinked.
pub fn mesh_2d(x: usize, y: usize, hosts: usize) -> Result<Topology, GenError> {
    grid_2d("mesh", x, y, hosts, false)
}

/// The torus (`wrap`) or mesh `shape` of [`torus_2d`] and [`mesh_2d`].
fn grid_2d(
    shape: &str,
    x: usize,
    y: usize,
    hosts: usize,
    wrap: bool,
) -> Result<Topology, GenError> {
    if x == 0 || y == 0 || (x == 1 && y == 1) {
        return Err(GenError::Shape(format!("a {x}x{y} {shape}")));
    }
    let ports = hosts
        .checked_add(1)
        .and_then(|per_switch| end_ports(x.checked_mul(y)?, per_switch, 0));
    check_lid_space(&format!("a {x}x{y} {shape}"), ports, 0)?;
    let mut b = Builder::new();
    let sw = b.switches(x * y, 4 + hosts, |n| format!("S{}_{}", n / y, n % y))?;
    let at = |i: usize, j: usize| sw[i * y + j];
    // The neighbour one step up a dimension of `size` switches: wrapping on a torus, none past
    // the last switch of a mesh, and none in a dimension of one switch.
    let next = |i: usize, size: usize| match i + 1 {
        _ if size == 1 => None,
        n if n < size => Some(n),
        _ => wrap.then_some(0),
    };
    for i in 0..x {
        for j in 0..y {
            if let Some(up) = next(i, x) {
                b.link(at(i, j), 1, at(up, j), 2)?;
            }
            if let Some(up) = next(j, y) {
                b.link(at(i, j), 3, at(i, up), 4)?;
            }
        }
    }
    for i in 0..x {
        for j in 0..y {
            b.hosts(at(i, j), &format!("{i}_{j}"), 5..5 + hosts)?;
        }
    }
    Ok(b.topo)
}

/// A dragonfly-like fabric: `groups` groups of `per_group` switches `S{g}_{s}`, the switches of a
/// group linked all-to-all, and one global link between each pair of groups.
///
/// Every switch has the same ports, in the same order:
///
/// - ports `1..per_group`: the other switches of its group, in index order (switch `s` skipped);
/// - the next `global` ports, `global = ceil((groups - 1) / per_group)`: the global links. Group
///   `g`'s `k`th global link (`k` in `0..groups - 1`) leads to the `k`th other group in index
///   order, from switch `k / global`, port `per_group + k % global`; a switch without its full
///   share leaves the rest unlinked;
/// - then `hosts` CAs `H{g}_{s}_{h}`.
///
/// With `groups = per_group * global + 1` (say 4 groups of 3) every global port is linked.
/// Switches are created group by group, then the hosts in the same order.
pub fn dragonfly(groups: usize, per_group: usize, hosts: usize) -> Result<Topology, GenError> {
    if groups < 2 || per_group == 0 {
        return Err(GenError::Shape(format!(
            "a dragonfly of {groups} groups of {per_group} switches: it needs at least 2 groups \
             of at least 1 switch"
        )));
    }
    let switches = groups.checked_mul(per_group);
    let ports = hosts
        .checked_add(1)
        .and_then(|per_switch| end_ports(switches?, per_switch, 0));
    check_lid_space(&format!("a dragonfly of {groups} groups"), ports, 0)?;
    let global = (groups - 1).div_ceil(per_group);
    let first_global = per_group;
    let first_host = first_global + global;
    let mut b = Builder::new();
    let sw = (0..groups)
        .map(|g| b.switches(per_group, first_host - 1 + hosts, |s| format!("S{g}_{s}")))
        .collect::<Result<Vec<_>, _>>()?;
    for group in &sw {
        for (s, &a) in group.iter().enumerate() {
            for (t, &c) in group.iter().enumerate().skip(s + 1) {
                // Switch `t`'s ports skip `t` itself, so `s < t` is on port `s + 1`.
                b.link(a, t, c, s + 1)?;
            }
        }
    }
    // The end of group `g`'s global link to the `k`th other group.
    let end = |g: usize, k: usize| (sw[g][k / global], first_global + k % global);
    for g in 0..groups {
        for h in g + 1..groups {
            let (a, pa) = end(g, h - 1);
            let (c, pc) = end(h, g);
            b.link(a, pa, c, pc)?;
        }
    }
    for (g, group) in sw.iter().enumerate() {
        for (s, &switch) in group.iter().enumerate() {
            b.hosts(switch, &format!("{g}_{s}"), first_host..first_host + hosts)?;
        }
    }
    Ok(b.topo)
}

/// [`assign_lids`] with LMC 0 when some switch port 0 or linked CA/router port has no LID (a net
/// file rarely gives them): what the offline tools route and simulate with.
pub fn assign_missing_lids(topo: &mut Topology) -> Result<(), GenError> {
    let unassigned = topo.endports().any(|ep| {
        topo.port(ep)
            .is_some_and(|p| p.lid == 0 && (p.peer.is_some() || ep.port == 0))
    });
    if unassigned {
        assign_lids(topo, 0)?;
    }
    Ok(())
}

/// Gives every switch port 0 and every linked CA/router port a LID, in
/// [`Topology::endports`] order, each base aligned to `2^lmc`; returns the highest LID used.
/// What a simple SM's LID manager does; tests and the offline simulator use it.
pub fn assign_lids(topo: &mut Topology, lmc: u8) -> Result<u16, GenError> {
    if lmc > 7 {
        return Err(GenError::Shape(format!("LMC {lmc}")));
    }
    let addressed: Vec<PortRef> = topo
        .endports()
        .filter(|&ep| {
            let is_switch = topo.node(ep.node).is_some_and(Node::is_switch);
            is_switch || topo.port(ep).is_some_and(|port| port.peer.is_some())
        })
        .collect();
    check_lid_space("the fabric", Some(addressed.len()), lmc)?;
    let step = 1u32 << lmc;
    let mut next = step.max(1);
    let mut max = 0;
    for ep in addressed {
        let Some(port) = topo.port_mut(ep) else {
            continue;
        };
        let last = next + step - 1;
        port.lid = next as u16;
        port.lmc = lmc;
        max = last as u16;
        next += step;
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn shapes() {
        let r = ring(4, 2).unwrap();
        assert_eq!(
            (r.switches().count(), r.cas().count(), r.links().count()),
            (4, 8, 12)
        );
        let f = fat_tree(4, 2, 4, 8).unwrap();
        assert_eq!(
            (f.switches().count(), f.cas().count(), f.links().count()),
            (6, 16, 24)
        );
        let t = torus_2d(3, 2, 1).unwrap();
        // 3 x-links per row of 3 (2 rows) + 2 parallel y-links per column pair (3 columns).
        assert_eq!((t.switches().count(), t.links().count() - 6), (6, 12));
        assert!(fat_tree(4, 5, 4, 8).is_err());
        assert!(ring(1, 1).is_err());
    }

    /// Every link of a generated fabric, as (name, port, name, port) both ways round.
    fn links_by_name(t: &Topology) -> BTreeSet<(String, usize, String, usize)> {
        let name = |id: NodeId| t.node(id).unwrap().name.clone();
        t.nodes()
            .flat_map(|(id, n)| {
                n.existing_ports().filter_map(move |(p, port)| {
                    let peer = port.peer?;
                    Some((id, p, peer))
                })
            })
            .map(|(id, p, peer)| {
                let (p, q) = (usize::from(p), usize::from(peer.port));
                (name(id), p, name(peer.node), q)
            })
            .collect()
    }

    /// A set of designed links, entered one way round and stored both ways.
    #[derive(Default)]
    struct Design(BTreeSet<(String, usize, String, usize)>);

    impl Design {
        fn link(&mut self, a: String, pa: usize, b: String, pb: usize) {
            self.0.insert((a.clone(), pa, b.clone(), pb));
            self.0.insert((b, pb, a, pa));
        }
    }

    #[test]
    fn mesh_is_the_torus_without_wrap_around() {
        let mesh = mesh_2d(3, 3, 2).unwrap();
        let mut design = Design::default();
        for i in 0..3 {
            for j in 0..3 {
                let s = format!("S{i}_{j}");
                if i < 2 {
                    design.link(s.clone(), 1, format!("S{}_{j}", i + 1), 2);
                }
                if j < 2 {
                    design.link(s.clone(), 3, format!("S{i}_{}", j + 1), 4);
                }
                for h in 0..2 {
                    design.link(s.clone(), 5 + h, format!("H{i}_{j}_{h}"), 1);
                }
            }
        }
        assert_eq!(links_by_name(&mesh), design.0);
        let torus = torus_2d(3, 3, 2).unwrap();
        let wrap = links_by_name(&torus);
        assert!(design.0.is_subset(&wrap));
        // The 3 wrap-around links of each dimension, both ways round.
        assert_eq!(wrap.len() - design.0.len(), 2 * 6);
        assert!(mesh_2d(1, 1, 1).is_err());
        assert_eq!(mesh_2d(1, 3, 0).unwrap().links().count(), 2);
    }

    #[test]
    fn dragonfly_ports_follow_the_documented_numbering() {
        // (groups, switches per group, hosts): balanced, with spare global ports, one per group.
        for (groups, a, hosts) in [(4, 3, 1), (3, 2, 2), (6, 2, 1), (2, 1, 1)] {
            let t = dragonfly(groups, a, hosts).unwrap();
            let global = (groups - 1).div_ceil(a);
            let mut design = Design::default();
            let end = |g: usize, k: usize| (format!("S{g}_{}", k / global), a + k % global);
            for g in 0..groups {
                for s in 0..a {
                    for t in s + 1..a {
                        design.link(format!("S{g}_{s}"), t, format!("S{g}_{t}"), s + 1);
                    }
                    for h in 0..hosts {
                        let port = a + global + h;
                        design.link(format!("S{g}_{s}"), port, format!("H{g}_{s}_{h}"), 1);
                    }
                }
                for other in g + 1..groups {
                    let ((x, px), (y, py)) = (end(g, other - 1), end(other, g));
                    design.link(x, px, y, py);
                }
            }
            assert_eq!(links_by_name(&t), design.0, "({groups}, {a}, {hosts})");
            let ports = a - 1 + global + hosts;
            assert!(
                t.switches()
                    .all(|(_, n)| usize::from(n.num_ports()) == ports)
            );
            assert_eq!(t.switches().count(), groups * a);
            assert_eq!(t.cas().count(), groups * a * hosts);
        }
        // Balanced: every switch port is linked.
        let t = dragonfly(4, 3, 1).unwrap();
        let used = |n: &Node| n.existing_ports().filter(|(_, p)| p.peer.is_some()).count();
        assert!(t.switches().all(|(_, n)| used(n) == 4));
        for (groups, a) in [(1, 3), (0, 1), (3, 0)] {
            match dragonfly(groups, a, 1) {
                Err(GenError::Shape(m)) => assert!(m.contains("at least 2 groups"), "{m}"),
                other => panic!("({groups}, {a}): {other:?}"),
            }
        }
        assert!(dragonfly(300, 1, 0).is_err());
        assert!(dragonfly(2, usize::MAX, 1).is_err());
    }

    #[test]
    fn three_level_sizes() {
        // (radix, pods, hosts per edge) -> (switches, hosts, links).
        for (shape, expected) in [
            // Full trees: 5k²/4 switches, k³/4 hosts, k³/4 links per level.
            ((4, 4, 2), (20, 16, 48)),
            ((8, 8, 4), (80, 128, 384)),
            // Sized down: 4 cores, 2 pods of 2 + 2 switches, 1 host per edge.
            ((4, 2, 1), (12, 4, 20)),
            ((2, 1, 1), (3, 1, 3)),
        ] {
            let (k, pods, hosts) = shape;
            let t = fat_tree3(k, pods, hosts).unwrap();
            assert_eq!(
                (t.switches().count(), t.cas().count(), t.links().count()),
                expected,
                "{shape:?}"
            );
            assert!(t.switches().all(|(_, n)| usize::from(n.num_ports()) == k));
        }
    }

    /// Every link of a three-level tree is where [`fat_tree3`]'s doc comment puts it, nothing
    /// else is linked, and the full tree uses every switch port.
    #[test]
    fn three_level_ports_follow_the_documented_numbering() {
        for (k, pods, hosts) in [(4, 4, 2), (8, 8, 4), (6, 3, 1)] {
            let t = fat_tree3(k, pods, hosts).unwrap();
            let m = k / 2;
            let mut designed = Design::default();
            let mut link = |a, pa, b, pb| designed.link(a, pa, b, pb);
            for p in 0..pods {
                for e in 0..m {
                    for h in 0..hosts {
                        link(format!("E{p}_{e}"), h + 1, format!("H{p}_{e}_{h}"), 1);
                    }
                    for a in 0..m {
                        link(format!("E{p}_{e}"), m + 1 + a, format!("A{p}_{a}"), e + 1);
                    }
                }
                for a in 0..m {
                    for j in 0..m {
                        link(
                            format!("A{p}_{a}"),
                            m + 1 + j,
                            format!("C{}", a * m + j),
                            p + 1,
                        );
                    }
                }
            }
            assert_eq!(links_by_name(&t), designed.0, "({k}, {pods}, {hosts})");
            if (pods, hosts) == (k, m) {
                let used = |n: &Node| n.existing_ports().filter(|(_, p)| p.peer.is_some()).count();
                assert!(
                    t.switches().all(|(_, n)| used(n) == k),
                    "({k}, {pods}, {hosts})"
                );
            }
        }
    }

    #[test]
    fn three_level_guids_follow_ibsims_sequence() {
        let (pods, m, hosts) = (3, 2, 2);
        let t = fat_tree3(2 * m, pods, hosts).unwrap();
        let tier = |prefix: char| {
            (0..pods).flat_map(move |p| (0..m).map(move |i| format!("{prefix}{p}_{i}")))
        };
        // Switches bottom-up, GUIDs from 0x200000 by 1.
        let switches: Vec<String> = tier('E')
            .chain(tier('A'))
            .chain((0..m * m).map(|c| format!("C{c}")))
            .collect();
        // Single-port CAs edge switch by edge switch, GUIDs from 0x100000 by 2.
        let cas: Vec<String> = tier('E')
            .flat_map(|edge| (0..hosts).map(move |h| format!("H{}_{h}", &edge[1..])))
            .collect();
        for (names, base, step) in [(switches, 0x200000, 1), (cas, 0x100000, 2)] {
            for (i, name) in names.iter().enumerate() {
                let node = t.node(t.node_by_name(name).unwrap()).unwrap();
                assert_eq!(node.guid, base + step * i as u64, "{name}");
            }
        }
        assert_eq!(t.len(), 16 + 12);
    }

    #[test]
    fn impossible_three_level_shapes_say_why() {
        for ((k, pods, hosts), why) in [
            ((5, 5, 2), "an even radix of at least 2, not 5"),
            ((0, 1, 1), "an even radix of at least 2, not 0"),
            ((4, 5, 2), "5 pods on 4-port switches"),
            ((4, 0, 2), "0 pods on 4-port switches"),
            ((4, 4, 3), "3 hosts per edge switch on 4-port switches"),
            ((4, 4, 0), "0 hosts per edge switch"),
            ((256, 1, 1), "E0_0 would need 256 ports"),
        ] {
            match fat_tree3(k, pods, hosts) {
                Err(GenError::Shape(message)) => assert!(message.contains(why), "{message}"),
                other => panic!("({k}, {pods}, {hosts}): {other:?}"),
            }
        }
    }

    /// Shapes an SM could not address are refused before anything is built (100000 x 100000
    /// switches would exhaust memory first); the largest that fits is built.
    #[test]
    fn shapes_beyond_the_unicast_lid_space_are_refused() {
        let refused = [
            torus_2d(100_000, 100_000, 0),
            torus_2d(250, 250, 0),
            torus_2d(2, usize::MAX, 1),
            ring(49_152, 0),
            ring(2, usize::MAX),
            fat_tree(254, 1, 253, 254),
            torus_2d(1, 2, usize::MAX),
            fat_tree3(254, 254, 127),
        ];
        for result in refused {
            match result {
                Err(GenError::Shape(message)) => {
                    assert!(message.contains("unicast LID space"), "{message}")
                }
                other => panic!("{other:?}"),
            }
        }
        let mut largest = ring(49_151, 0).expect("49151 end ports fit");
        assert_eq!(assign_lids(&mut largest, 0), Ok(49_151));
        let error = assign_lids(&mut largest, 1).expect_err("twice the LIDs with LMC 1");
        assert!(
            error.to_string().contains("holds 24575 with LMC 1"),
            "{error}"
        );
    }

    #[test]
    fn lids_are_aligned_and_skip_unlinked_ports() {
        let mut t = ring(2, 1).unwrap();
        let max = assign_lids(&mut t, 1).unwrap();
        let lids: Vec<u16> = t.endports().map(|p| t.port(p).unwrap().lid).collect();
        assert_eq!(lids, vec![2, 4, 6, 8]);
        assert_eq!(max, 9);
    }
}
