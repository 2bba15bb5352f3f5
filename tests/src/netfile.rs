//! The topology of an ibsim net file, and directed routes through it.
//!
//! A test reads the same net file it gives ibsim, so the ports it checks and the paths it
//! queries them by come from one place. Only the subset of the format our topology files use is
//! read (ibsim's full grammar is in wire-and-ibsim.md §5.6): `Switch`/`Hca`/`Ca`/`Rt` records
//! with `[port] "peer"[peer-port]` lines, `enhanced port 0` on switch headers, comments, and
//! `name=value` directives (ignored: they set GUIDs and link speeds, not the shape). Aliases
//! (`@`) and `include` are rejected rather than misread. Replace this with the ibqos-fabric
//! parser when that crate exists.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::path::Path;

use crate::{Error, Result};

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    Switch,
    Ca,
    Router,
}

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
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::new(format!("cannot read {}: {e}", path.display())))?;
        Topology::parse(&text).map_err(|e| e.context(path.display()))
    }

    pub fn parse(text: &str) -> Result<Topology> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut in_record = false;
        for (n, line) in text.lines().enumerate() {
            let bad = |why: &str| Error::new(format!("line {}: {why}: {line:?}", n + 1));
            let line = line.trim_end();
            if line.starts_with('#') {
                continue;
            }
            if line.trim().is_empty() {
                in_record = false;
                continue;
            }
            if line.starts_with('@') || line.starts_with("include") {
                return Err(bad("aliases and includes are not supported"));
            }
            if line.starts_with('[') {
                let node = match nodes.last_mut() {
                    Some(node) if in_record => node,
                    _ => return Err(bad("port line outside a node record")),
                };
                let (port, peer, peer_port) =
                    parse_port_line(line).ok_or_else(|| bad("bad port line"))?;
                if port == 0 || port > node.num_ports {
                    return Err(bad("port number out of range"));
                }
                node.links.insert(port, (peer, peer_port));
            } else if let Some(node) = parse_header(line) {
                let node = node.ok_or_else(|| bad("bad node header"))?;
                if nodes.iter().any(|other| other.id == node.id) {
                    return Err(bad("duplicate node id"));
                }
                nodes.push(node);
                in_record = true;
            } else if !line.contains('=') {
                return Err(bad("unrecognised line"));
            }
        }
        let index = nodes
            .iter()
            .enumerate()
            .map(|(i, node)| (node.id.clone(), i))
            .collect();
        let topology = Topology { nodes, index };
        topology.check_links()?;
        Ok(topology)
    }

    /// Every link must be listed the same way at both ends, as ibsim requires.
    fn check_links(&self) -> Result<()> {
        for node in &self.nodes {
            for (&port, (peer_id, peer_port)) in &node.links {
                let back = self.node(peer_id).and_then(|peer| peer.peer(*peer_port));
                if back != Some((node.id.as_str(), port)) {
                    return Err(Error::new(format!(
                        "link {}[{port}] -> {peer_id}[{peer_port}] is not listed back",
                        node.id
                    )));
                }
            }
        }
        Ok(())
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

/// `Switch 8 "S1" # "desc" enhanced port 0` and friends. `None` if the line is not a header,
/// `Some(None)` if it is one but malformed.
fn parse_header(line: &str) -> Option<Option<Node>> {
    let (keyword, rest) = line.split_once(char::is_whitespace)?;
    let kind = match keyword {
        "Switch" => NodeKind::Switch,
        "Hca" | "Ca" => NodeKind::Ca,
        "Rt" => NodeKind::Router,
        _ => return None,
    };
    Some((|| {
        let (count, rest) = rest.trim_start().split_once(char::is_whitespace)?;
        let num_ports = count.parse().ok()?;
        let (id, tail) = quoted(rest.trim_start())?;
        Some(Node {
            id,
            kind,
            num_ports,
            enhanced_port0: kind == NodeKind::Switch && tail.contains("enhanced port 0"),
            links: BTreeMap::new(),
        })
    })())
}

/// `[3] "S2"[4] ...`, separated by blanks or tabs (the peer port defaults to 1).
fn parse_port_line(line: &str) -> Option<(u8, String, u8)> {
    let (port, rest) = line.strip_prefix('[')?.split_once(']')?;
    let (peer, tail) = quoted(rest.trim_start())?;
    let peer_port = match tail.strip_prefix('[') {
        Some(t) => t.split_once(']')?.0.parse().ok()?,
        None => 1,
    };
    Some((port.parse().ok()?, peer, peer_port))
}

/// `"text"rest` to (`text`, `rest`).
fn quoted(s: &str) -> Option<(String, &str)> {
    let (text, rest) = s.strip_prefix('"')?.split_once('"')?;
    Some((text.to_owned(), rest))
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

    #[test]
    fn unsupported_lines_are_errors() {
        assert!(Topology::parse("Switch 8 \"S1\"\n@[1] \"x\"\n").is_err());
        assert!(Topology::parse("include \"other.net\"\n").is_err());
        assert!(Topology::parse("[1] \"S1\"[1]\n").is_err());
    }
}
