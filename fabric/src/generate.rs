//! Generated fabrics for tests, benchmarks and the simulator.
//!
//! GUIDs follow ibsim's defaults (switches from 0x200000 advancing by 1, CAs from 0x100000
//! advancing by ports + 1), and nodes are created switches first, so a generated fabric written
//! with [`to_net_file`](crate::netfile::to_net_file) and one ibsim builds from an equivalent
//! hand-written file without GUID lines agree. [`fat_tree`] builds exactly the fabrics of the
//! shared `fat-tree-16.net` and `fat-tree-648.net`.

use crate::topology::{Node, NodeId, NodeKind, PortRef, Topology, TopologyError};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    #[error("impossible shape: {0}")]
    Shape(String),
    #[error(transparent)]
    Topology(#[from] TopologyError),
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
    let mut b = Builder::new();
    let sw = (0..switches)
        .map(|i| b.node(NodeKind::Switch, format!("S{i}"), 2 + hosts))
        .collect::<Result<Vec<_>, _>>()?;
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
    if leaves == 0 || spines == 0 || hosts_per_leaf + spines > radix || leaves > radix {
        return Err(GenError::Shape(format!(
            "{leaves} leaves x {spines} spines with {hosts_per_leaf} hosts per leaf on {radix}-port switches"
        )));
    }
    let mut b = Builder::new();
    let leaf = (0..leaves)
        .map(|l| b.node(NodeKind::Switch, format!("L{l}"), radix))
        .collect::<Result<Vec<_>, _>>()?;
    let spine = (0..spines)
        .map(|s| b.node(NodeKind::Switch, format!("S{s}"), radix))
        .collect::<Result<Vec<_>, _>>()?;
    for (l, &lf) in leaf.iter().enumerate() {
        for (s, &sp) in spine.iter().enumerate() {
            b.link(lf, hosts_per_leaf + 1 + s, sp, l + 1)?;
        }
    }
    for (l, &lf) in leaf.iter().enumerate() {
        b.hosts(lf, &l.to_string(), 1..=hosts_per_leaf)?;
    }
    Ok(b.topo)
}

/// A `x` by `y` torus of switches `S{i}_{j}`: port 1 to +x, 2 to -x, 3 to +y, 4 to -y (a
/// dimension of size 1 has no links, of size 2 two parallel ones), `hosts` CAs `H{i}_{j}_{h}` on
/// ports 5...
pub fn torus_2d(x: usize, y: usize, hosts: usize) -> Result<Topology, GenError> {
    if x == 0 || y == 0 || x * y < 2 {
        return Err(GenError::Shape(format!("a {x}x{y} torus")));
    }
    let mut b = Builder::new();
    let mut sw = Vec::with_capacity(x * y);
    for i in 0..x {
        for j in 0..y {
            sw.push(b.node(NodeKind::Switch, format!("S{i}_{j}"), 4 + hosts)?);
        }
    }
    let at = |i: usize, j: usize| sw[i * y + j];
    for i in 0..x {
        for j in 0..y {
            if x > 1 {
                b.link(at(i, j), 1, at((i + 1) % x, j), 2)?;
            }
            if y > 1 {
                b.link(at(i, j), 3, at(i, (j + 1) % y), 4)?;
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

/// Gives every switch port 0 and every linked CA/router port a LID, in
/// [`Topology::endports`] order, each base aligned to `2^lmc`; returns the highest LID used.
/// What a simple SM's LID manager does; tests and the offline simulator use it.
pub fn assign_lids(topo: &mut Topology, lmc: u8) -> Result<u16, GenError> {
    if lmc > 7 {
        return Err(GenError::Shape(format!("LMC {lmc}")));
    }
    let step = 1u32 << lmc;
    let mut next = step.max(1);
    let mut max = 0;
    let endports: Vec<PortRef> = topo.endports().collect();
    for ep in endports {
        let is_switch = topo.node(ep.node).is_some_and(Node::is_switch);
        let Some(port) = topo.port_mut(ep) else {
            continue;
        };
        if !is_switch && port.peer.is_none() {
            continue;
        }
        let last = next + step - 1;
        if last > u32::from(crate::MAX_UNICAST_LID) {
            return Err(GenError::Shape("more LIDs than the unicast space".into()));
        }
        port.lid = next as u16;
        port.lmc = lmc;
        max = last as u16;
        next += step;
    }
    Ok(max)
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn lids_are_aligned_and_skip_unlinked_ports() {
        let mut t = ring(2, 1).unwrap();
        let max = assign_lids(&mut t, 1).unwrap();
        let lids: Vec<u16> = t.endports().map(|p| t.port(p).unwrap().lid).collect();
        assert_eq!(lids, vec![2, 4, 6, 8]);
        assert_eq!(max, 9);
    }
}
