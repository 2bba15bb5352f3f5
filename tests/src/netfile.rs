//! The topology of a net file as the tests address it (nodes by the id ibsim and smpquery
//! take), and directed routes through it. The file is read by [`ibqos_fabric::netfile`], the
//! same reader the SM and the emulator use, so a test checks the fabric ibsim was given.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::path::Path;

pub use ibqos_fabric::NodeKind;
use ibqos_fabric::netfile::{NetError, NetFile, parse_net_file, parse_net_str};

use crate::{Error, Result};

/// One node of the net file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// The node id in quotes (what `SIM_HOST` takes).
    pub id: String,
    pub kind: NodeKind,
    pub num_ports: u8,
    /// A switch whose header says `enhanced port 0`; ibsim's default is base port 0.
    pub enhanced_port0: bool,
    /// Linked ports: local port to (peer node id, peer port).
    pub links: BTreeMap<u8, (String, u8)>,
}

impl Node {
    /// The peer of `port`, if the port is linked.
    pub fn peer(&self, port: u8) -> Option<(&str, u8)> {
        self.links.get(&port).map(|(id, p)| (id.as_str(), *p))
    }
}

/// A directed route in smpquery's notation: `0` is the querying port itself, then one output
/// port per hop (`0,1,3` leaves the querying CA at port 1, then its switch at port 3).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DrPath(pub Vec<u8>);

impl fmt::Display for DrPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("0")?;
        for hop in &self.0 {
            write!(f, ",{hop}")?;
        }
        Ok(())
    }
}

/// The nodes and links of a net file.
#[derive(Debug, Clone)]
pub struct Topology {
    nodes: Vec<Node>,
    index: HashMap<String, usize>,
}

impl Topology {
    pub fn load(path: &Path) -> Result<Topology> {
        Topology::read(parse_net_file(path))
    }

    pub fn parse(text: &str) -> Result<Topology> {
        Topology::read(parse_net_str(text))
    }

    fn read(parsed: std::result::Result<NetFile, NetError>) -> Result<Topology> {
        let topology = parsed.map_err(|e| Error::new(e.to_string()))?.topology;
        let nodes: Vec<Node> = topology
            .nodes()
            .map(|(_, node)| Node {
                id: node.name.clone(),
                kind: node.kind,
                num_ports: node.num_ports(),
                enhanced_port0: node.enhanced_port0,
                links: node
                    .existing_ports()
                    .filter_map(|(port, p)| {
                        let peer = p.peer?;
                        let peer_id = topology.node(peer.node)?.name.clone();
                        Some((port, (peer_id, peer.port)))
                    })
                    .collect(),
            })
            .collect();
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, node)| (node.id.clone(), i))
            .collect();
        Ok(Topology { nodes, index })
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.nodes.iter()
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.index.get(id).map(|&i| &self.nodes[i])
    }

    /// The directed route from `from`'s attach port (port 1 of a CA, port 0 of a switch) to the
    /// node `to`, through switches only (a CA does not forward directed-route SMPs). For a CA
    /// with several ports the route reaches whichever port is closest; use
    /// [`Topology::dr_path_to_port`] to pick one.
    pub fn dr_path(&self, from: &str, to: &str) -> Option<DrPath> {
        if from == to {
            return Some(DrPath(Vec::new()));
        }
        let start = self.node(from)?;
        // Breadth-first over nodes; a CA source may only leave through its attach port 1.
        let mut previous: HashMap<&str, (&str, u8)> = HashMap::new();
        let mut queue = VecDeque::from([start.id.as_str()]);
        while let Some(id) = queue.pop_front() {
            let node = self.node(id)?;
            if node.kind != NodeKind::Switch && id != start.id {
                continue;
            }
            for (&port, (peer, _)) in &node.links {
                if node.kind != NodeKind::Switch && port != 1 {
                    continue;
                }
                if peer == &start.id || previous.contains_key(peer.as_str()) {
                    continue;
                }
                previous.insert(peer, (id, port));
                if peer == to {
                    return Some(self.unwind(&previous, to));
                }
                queue.push_back(peer);
            }
        }
        None
    }

    /// The directed route from `from`'s attach port to port `port` of the CA or router `to`:
    /// the route to the switch on the other end of that port, then out through it.
    pub fn dr_path_to_port(&self, from: &str, to: &str, port: u8) -> Option<DrPath> {
        let node = self.node(to)?;
        if from == to && port == 1 {
            return Some(DrPath(Vec::new()));
        }
        let (peer, peer_port) = node.peer(port)?;
        if self.node(peer)?.kind != NodeKind::Switch {
            return None;
        }
        let mut path = self.dr_path(from, peer)?;
        path.0.push(peer_port);
        Some(path)
    }

    fn unwind(&self, previous: &HashMap<&str, (&str, u8)>, to: &str) -> DrPath {
        let mut hops = Vec::new();
        let mut at = to;
        while let Some(&(from, port)) = previous.get(at) {
            hops.push(port);
            at = from;
        }
        hops.reverse();
        DrPath(hops)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: &str = "\
# comment
switchguid=0x0002c90000001000
Switch\t8 \"S1\"\t# \"sw-one\" enhanced port 0
[1]\t\"H1\"[1]
[3]\t\"S2\"[3]
[5]\t\"H5\"[1]

Switch\t8 \"S2\"\t# \"sw-two\"
[3]\t\"S1\"[3]
[5]\t\"H5\"[2]

hcaguids=0x0002c90000100000
Hca\t1 \"H1\"\t# \"host-one HCA-1\"
[1]\t\"S1\"[1]

Hca\t2 \"H5\"
[1]\t\"S1\"[5]
[2]\t\"S2\"[5]
";

    #[test]
    fn parses_nodes_and_links() {
        let t = Topology::parse(NET).unwrap();
        let s1 = t.node("S1").unwrap();
        assert_eq!(
            (s1.kind, s1.num_ports, s1.enhanced_port0),
            (NodeKind::Switch, 8, true)
        );
        assert_eq!(s1.peer(3), Some(("S2", 3)));
        assert_eq!(s1.peer(2), None);
        assert!(!t.node("S2").unwrap().enhanced_port0);
        let h5 = t.node("H5").unwrap();
        assert_eq!((h5.kind, h5.num_ports), (NodeKind::Ca, 2));
        assert_eq!(h5.peer(2), Some(("S2", 5)));
        assert_eq!(t.nodes().count(), 4);
    }

    #[test]
    fn directed_routes() {
        let t = Topology::parse(NET).unwrap();
        let path = |from, to| t.dr_path(from, to).map(|p| p.to_string());
        assert_eq!(path("H1", "H1").as_deref(), Some("0"));
        assert_eq!(path("H1", "S1").as_deref(), Some("0,1"));
        assert_eq!(path("H1", "S2").as_deref(), Some("0,1,3"));
        assert_eq!(path("S2", "H1").as_deref(), Some("0,3,1"));
        let port = |from, to, p| t.dr_path_to_port(from, to, p).map(|p| p.to_string());
        assert_eq!(port("H1", "H5", 1).as_deref(), Some("0,1,5"));
        assert_eq!(port("H1", "H5", 2).as_deref(), Some("0,1,3,5"));
        assert_eq!(port("H1", "H1", 1).as_deref(), Some("0"));
        assert_eq!(path("S2", "S1").as_deref(), Some("0,3"));
    }

    #[test]
    fn directed_routes_do_not_pass_through_a_ca() {
        // S1 and S2 are joined only through the two-port CA H5.
        let net = "Switch 8 \"S1\"\n[5] \"H5\"[1]\n\nSwitch 8 \"S2\"\n[5] \"H5\"[2]\n\n\
                   Hca 2 \"H5\"\n[1] \"S1\"[5]\n[2] \"S2\"[5]\n";
        let t = Topology::parse(net).unwrap();
        assert_eq!(t.dr_path("S1", "S2"), None);
        assert_eq!(
            t.dr_path("H5", "S1").map(|p| p.to_string()).as_deref(),
            Some("0,1")
        );
        assert_eq!(t.dr_path("H5", "S2"), None);
    }

    #[test]
    fn one_sided_link_is_an_error() {
        let net = "Switch 8 \"S1\"\n[1] \"H1\"[1]\n\nHca 1 \"H1\"\n[1] \"S1\"[2]\n";
        assert!(Topology::parse(net).is_err());
    }
}
