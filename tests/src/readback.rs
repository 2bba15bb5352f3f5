//! Reading a configured fabric back with infiniband-diags, and checking it.
//!
//! Every read is by directed route from the querying client's port, computed from the net file,
//! so it depends only on physically up links, not on the LIDs and forwarding tables under test.
//! PortInfo comes from `smpquery portinfo`, forwarding tables from `ibroute -n` (one call per
//! switch dumps every LID up to LinearFDBTop, so a top set too low shows up as missing routes).
//! Reachability is then checked by walking those tables from every CA port to every LID in the
//! test process: one ibroute per switch instead of one ibtracert per pair of ports.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::process::{command_line, run_bounded};
use crate::smpquery::{PortInfo, SmpQuery, Target};
use crate::{DrPath, Error, Ibsim, Node, NodeKind, Result, SimTools, Topology};

/// One ibroute takes about 15 ms; the limit only bounds a hang.
const IBROUTE_TIMEOUT: Duration = Duration::from_secs(60);

/// A forwarding path longer than this is a loop (IBA allows 64 hops of directed route; no test
/// fabric is more than a few switches across).
const MAX_HOPS: usize = 64;

/// (node id, port number)
pub type PortKey = (String, u8);

/// `H1[1]`, as failure messages name a port.
pub fn port_name(key: &PortKey) -> String {
    format!("{}[{}]", key.0, key.1)
}

/// What a fabric holds after an SM ran.
#[derive(Debug, Clone)]
pub struct Readback {
    /// Every port of every switch (0 to NumPorts) and every linked CA port.
    pub ports: BTreeMap<PortKey, PortInfo>,
    /// Each switch's forwarding table: LID to output port, valid entries only.
    pub lfts: BTreeMap<String, BTreeMap<u16, u8>>,
}

/// One port to read, and how: the directed route from the querying CA and the port argument
/// smpquery takes (`Some(port)` on a switch; `None` on a CA, which answers for the port the
/// route arrives at).
#[derive(Debug, Clone)]
pub struct PortTarget<'a> {
    pub node: &'a Node,
    pub port: u8,
    pub target: Target,
    pub port_arg: Option<u8>,
}

/// The directed route from port 1 of `query_node` to a node.
pub fn route_to(topology: &Topology, query_node: &str, node: &str) -> Result<DrPath> {
    topology
        .dr_path(query_node, node)
        .ok_or_else(|| Error::new(format!("no directed route from {query_node} to {node}")))
}

/// Every port of every switch (0 to NumPorts) and every linked CA port, in node order.
pub fn port_targets<'a>(topology: &'a Topology, query_node: &str) -> Result<Vec<PortTarget<'a>>> {
    let mut targets = Vec::new();
    for node in topology.nodes() {
        if node.kind == NodeKind::Switch {
            let target = Target::Dr(route_to(topology, query_node, &node.id)?);
            for port in 0..=node.num_ports {
                targets.push(PortTarget {
                    node,
                    port,
                    target: target.clone(),
                    port_arg: Some(port),
                });
            }
        } else {
            for &port in node.links.keys() {
                let path = topology
                    .dr_path_to_port(query_node, &node.id, port)
                    .ok_or_else(|| {
                        Error::new(format!(
                            "no directed route from {query_node} to {}[{port}]",
                            node.id
                        ))
                    })?;
                targets.push(PortTarget {
                    node,
                    port,
                    target: Target::Dr(path),
                    port_arg: None,
                });
            }
        }
    }
    Ok(targets)
}

impl PortTarget<'_> {
    /// `node[port]`, for messages.
    pub fn name(&self) -> String {
        format!("{}[{}]", self.node.id, self.port)
    }

    /// The port's PortInfo; on a CA, checked to be the port meant (the route's arrival port).
    pub fn portinfo(&self, query: &SmpQuery) -> Result<PortInfo> {
        let info = query
            .portinfo(&self.target, self.port_arg)
            .map_err(|e| e.context(self.name()))?;
        if self.port_arg.is_none() && info.local_port != self.port {
            return Err(Error::new(format!(
                "{}: the directed route reached port {}",
                self.name(),
                info.local_port
            )));
        }
        Ok(info)
    }
}

impl Readback {
    /// Reads `topology` back from `sim`, querying from port 1 of the CA `query_node`.
    pub fn read(
        tools: &SimTools,
        sim: &Ibsim,
        topology: &Topology,
        query_node: &str,
    ) -> Result<Readback> {
        let query = SmpQuery::new(tools, sim, query_node);
        let mut ports = BTreeMap::new();
        for port in port_targets(topology, query_node)? {
            ports.insert((port.node.id.clone(), port.port), port.portinfo(&query)?);
        }
        let lfts = read_lfts(tools, sim, topology, query_node)?;
        Ok(Readback { ports, lfts })
    }

    pub fn port(&self, key: &PortKey) -> Option<&PortInfo> {
        self.ports.get(key)
    }

    /// The LID of every endport: port 0 of each switch and each linked CA port.
    pub fn endport_lids(&self, topology: &Topology) -> BTreeMap<PortKey, u16> {
        endports(topology)
            .into_iter()
            .filter_map(|key| self.ports.get(&key).map(|info| (key, info.lid)))
            .collect()
    }
}

/// Port 0 of each switch and each linked CA port, in net-file order.
pub fn endports(topology: &Topology) -> Vec<PortKey> {
    let mut keys = Vec::new();
    for node in topology.nodes() {
        match node.kind {
            NodeKind::Switch => keys.push((node.id.clone(), 0)),
            _ => keys.extend(node.links.keys().map(|&p| (node.id.clone(), p))),
        }
    }
    keys
}

/// Every linked CA port, in net-file order.
pub fn ca_ports(topology: &Topology) -> Vec<PortKey> {
    endports(topology)
        .into_iter()
        .filter(|(id, _)| {
            topology
                .node(id)
                .is_some_and(|n| n.kind != NodeKind::Switch)
        })
        .collect()
}

/// Every switch's forwarding table, by switch name: LID to output port, read by ibroute over
/// directed routes from port 1 of the CA `query_node`.
pub fn read_lfts(
    tools: &SimTools,
    sim: &Ibsim,
    topology: &Topology,
    query_node: &str,
) -> Result<BTreeMap<String, BTreeMap<u16, u8>>> {
    let mut lfts = BTreeMap::new();
    for node in topology.nodes().filter(|n| n.kind == NodeKind::Switch) {
        let path = route_to(topology, query_node, &node.id)?;
        let lft = read_lft(tools, sim, query_node, &path.to_string())
            .map_err(|e| e.context(format!("forwarding table of {}", node.id)))?;
        lfts.insert(node.id.clone(), lft);
    }
    Ok(lfts)
}

/// `ibroute -n -D <path>` run from `query_node`: LID to output port.
fn read_lft(
    tools: &SimTools,
    sim: &Ibsim,
    query_node: &str,
    path: &str,
) -> Result<BTreeMap<u16, u8>> {
    let mut cmd = sim.client(&tools.ibroute.path, query_node);
    // -n: do not resolve each destination (LID-routed queries that would depend on the routes
    // under test, and cost one query per LID).
    cmd.args(["-n", "-D", path]);
    let line = command_line(&cmd);
    let out = run_bounded(&mut cmd, IBROUTE_TIMEOUT)?.success(&line)?;
    parse_ibroute(&out.stdout).map_err(|e| e.context(format!("output of `{line}`")))
}

/// Parses ibroute's unicast dump: a header, then `0x0001 003 : (...)` per valid LID (with `-n`,
/// without the destination part), then `N valid lids dumped`.
pub fn parse_ibroute(text: &str) -> Result<BTreeMap<u16, u8>> {
    if !text.contains("valid lids dumped") {
        return Err(Error::new(format!(
            "no 'valid lids dumped' line in:\n{text}"
        )));
    }
    text.lines()
        .filter(|l| l.starts_with("0x"))
        .map(|l| {
            let mut words = l.split_whitespace();
            let lid = words
                .next()
                .and_then(|w| u16::from_str_radix(w.trim_start_matches("0x"), 16).ok());
            let port = words.next().and_then(|w| w.parse::<u8>().ok());
            lid.zip(port)
                .ok_or_else(|| Error::new(format!("bad ibroute line {l:?}")))
        })
        .collect()
}

/// Collects every failed check of a scenario, so one run reports all of them.
#[derive(Debug)]
pub struct Failures {
    what: String,
    failures: Vec<String>,
    checked: usize,
}

impl Failures {
    pub fn new(what: impl Into<String>) -> Failures {
        Failures {
            what: what.into(),
            failures: Vec::new(),
            checked: 0,
        }
    }

    /// Records one check.
    pub fn check(&mut self, ok: bool, message: impl FnOnce() -> String) {
        self.checked += 1;
        if !ok {
            self.failures.push(message());
        }
    }

    pub fn checked(&self) -> usize {
        self.checked
    }

    /// The failures recorded so far.
    pub fn failures(&self) -> &[String] {
        &self.failures
    }

    /// Panics listing every failure (the first 40), or if nothing was checked.
    pub fn assert_none(self) {
        const SHOWN: usize = 40;
        let mut text = String::new();
        for f in self.failures.iter().take(SHOWN) {
            let _ = writeln!(text, "  {f}");
        }
        if self.failures.len() > SHOWN {
            let _ = writeln!(text, "  ... and {} more", self.failures.len() - SHOWN);
        }
        assert!(
            self.failures.is_empty(),
            "{}: {} of {} checks failed:\n{text}",
            self.what,
            self.failures.len(),
            self.checked
        );
        assert!(self.checked > 0, "{}: nothing was checked", self.what);
    }
}

/// Every linked port of the nodes `include` accepts is Active.
pub fn check_active(
    f: &mut Failures,
    topology: &Topology,
    rb: &Readback,
    include: &dyn Fn(&PortKey) -> bool,
) {
    for node in topology.nodes() {
        for &port in node.links.keys() {
            let key = (node.id.clone(), port);
            if !include(&key) {
                continue;
            }
            let state = rb.port(&key).map(|p| p.link_state.as_str());
            f.check(state == Some("Active"), || {
                format!("{}: LinkState {state:?}, expected Active", port_name(&key))
            });
        }
    }
}

/// Every endport `include` accepts has a LID, none zero and no two the same.
pub fn check_lids(
    f: &mut Failures,
    topology: &Topology,
    rb: &Readback,
    include: &dyn Fn(&PortKey) -> bool,
) {
    let mut owner: BTreeMap<u16, PortKey> = BTreeMap::new();
    for (key, lid) in rb.endport_lids(topology) {
        if !include(&key) {
            continue;
        }
        f.check(lid != 0, || format!("{}: LID 0", port_name(&key)));
        if lid == 0 {
            continue;
        }
        let clash = owner.insert(lid, key.clone());
        f.check(clash.is_none(), || {
            format!(
                "LID {lid} is held by both {} and {}",
                port_name(clash.as_ref().unwrap()),
                port_name(&key)
            )
        });
    }
}

/// The whole fabric is up, read by smpquery and ibroute attached at `node`: every linked port
/// Active, every endport a unique LID, and from every CA port the forwarding tables lead to
/// every endport. Panics with every failure, titled `what`.
pub fn check_up(what: &str, tools: &SimTools, sim: &Ibsim, topology: &Topology, node: &str) {
    let rb = Readback::read(tools, sim, topology, node)
        .unwrap_or_else(|e| panic!("{what}: reading the fabric back: {e}"));
    let mut f = Failures::new(what);
    check_active(&mut f, topology, &rb, &|_| true);
    check_lids(&mut f, topology, &rb, &|_| true);
    check_reachability(
        &mut f,
        topology,
        &rb,
        &ca_ports(topology),
        &endports(topology),
    );
    f.assert_none();
}

/// From every CA port in `sources`, the forwarding tables lead to every endport in `targets`.
pub fn check_reachability(
    f: &mut Failures,
    topology: &Topology,
    rb: &Readback,
    sources: &[PortKey],
    targets: &[PortKey],
) {
    let lids = rb.endport_lids(topology);
    for src in sources {
        for dst in targets {
            if src == dst {
                continue;
            }
            let Some(&dlid) = lids.get(dst) else {
                f.check(false, || format!("{}: no LID read back", port_name(dst)));
                continue;
            };
            let walked = walk(topology, rb, src, dlid, dst);
            f.check(walked.is_ok(), || {
                format!(
                    "{} -> {} (LID {dlid}): {}",
                    port_name(src),
                    port_name(dst),
                    walked.unwrap_err()
                )
            });
        }
    }
}

/// Follows the forwarding tables from CA port `src` towards `dlid`; Ok if it arrives at `dst`.
pub fn walk(
    topology: &Topology,
    rb: &Readback,
    src: &PortKey,
    dlid: u16,
    dst: &PortKey,
) -> std::result::Result<Vec<PortKey>, String> {
    let node = |id: &str| topology.node(id).ok_or(format!("no node {id}"));
    let (first, first_port) = node(&src.0)?
        .peer(src.1)
        .ok_or(format!("{} is not linked", port_name(src)))?;
    let mut at: PortKey = (first.to_owned(), first_port);
    let mut hops = vec![at.clone()];
    for _ in 0..MAX_HOPS {
        let here = node(&at.0)?;
        if here.kind != NodeKind::Switch {
            return if &at == dst {
                Ok(hops)
            } else {
                Err(format!("arrived at {} instead", port_name(&at)))
            };
        }
        let out = rb
            .lfts
            .get(&at.0)
            .and_then(|lft| lft.get(&dlid))
            .copied()
            .ok_or_else(|| format!("{} has no forwarding entry for LID {dlid}", at.0))?;
        if out == 0 {
            let this = (at.0.clone(), 0);
            return if &this == dst {
                Ok(hops)
            } else {
                Err(format!("{} delivers it to itself (port 0)", at.0))
            };
        }
        let (peer, peer_port) = here
            .peer(out)
            .ok_or_else(|| format!("{} forwards it to unlinked port {out}", at.0))?;
        // ibsim forwards LID-routed packets only over Active ports at both ends.
        for end in [(at.0.clone(), out), (peer.to_owned(), peer_port)] {
            if let Some(info) = rb.port(&end).filter(|i| i.link_state != "Active") {
                return Err(format!(
                    "forwarded over {}, which is {}",
                    port_name(&end),
                    info.link_state
                ));
            }
        }
        at = (peer.to_owned(), peer_port);
        hops.push(at.clone());
    }
    let path: Vec<String> = hops.iter().map(port_name).collect();
    Err(format!(
        "no arrival within {MAX_HOPS} hops: {}",
        path.join(" ")
    ))
}

/// OperVLs and HOQLife of every port read back equal the oracle's (OpenSM's) on the same port.
pub fn compare_link_settings(f: &mut Failures, ours: &Readback, oracle: &Readback) {
    for (key, theirs) in &oracle.ports {
        let Some(mine) = ours.port(key) else {
            f.check(false, || format!("{}: not read back", port_name(key)));
            continue;
        };
        f.check(mine.oper_vls == theirs.oper_vls, || {
            format!(
                "{}: OperVLs {} VLs, OpenSM set {} VLs",
                port_name(key),
                mine.oper_vls,
                theirs.oper_vls
            )
        });
        f.check(mine.hoq_life == theirs.hoq_life, || {
            format!(
                "{}: HOQLife {:#x}, OpenSM set {:#x}",
                port_name(key),
                mine.hoq_life,
                theirs.hoq_life
            )
        });
    }
}

/// The set of LIDs a readback holds, by endport; for comparing runs.
pub fn lid_map(topology: &Topology, rb: &Readback) -> BTreeMap<PortKey, u16> {
    rb.endport_lids(topology)
}

/// Node ids of one kind.
pub fn node_ids(topology: &Topology, kind: NodeKind) -> BTreeSet<String> {
    topology
        .nodes()
        .filter(|n| n.kind == kind)
        .map(|n| n.id.clone())
        .collect()
}

/// A net file written into `dir`, from a topology the fabric crate generated.
pub fn write_net_file(dir: &std::path::Path, name: &str, text: &str) -> Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, text)
        .map_err(|e| Error::new(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NET: &str = "\
Switch 4 \"S1\"
[1] \"H1\"[1]
[2] \"S2\"[2]

Switch 4 \"S2\"
[1] \"H2\"[1]
[2] \"S1\"[2]

Hca 1 \"H1\"
[1] \"S1\"[1]

Hca 1 \"H2\"
[1] \"S2\"[1]
";

    fn readback(s1: &[(u16, u8)], s2: &[(u16, u8)]) -> Readback {
        Readback {
            ports: BTreeMap::new(),
            lfts: BTreeMap::from([
                ("S1".to_owned(), s1.iter().copied().collect()),
                ("S2".to_owned(), s2.iter().copied().collect()),
            ]),
        }
    }

    fn key(id: &str, port: u8) -> PortKey {
        (id.to_owned(), port)
    }

    #[test]
    fn walks_across_two_switches() {
        let t = Topology::parse(NET).unwrap();
        let rb = readback(&[(1, 1), (3, 2), (4, 0)], &[(1, 2), (3, 1), (4, 2)]);
        let hops = walk(&t, &rb, &key("H1", 1), 3, &key("H2", 1)).unwrap();
        assert_eq!(hops, [key("S1", 1), key("S2", 2), key("H2", 1)]);
        assert!(walk(&t, &rb, &key("H2", 1), 4, &key("S1", 0)).is_ok());
    }

    #[test]
    fn walk_does_not_cross_a_port_that_is_not_active() {
        let t = Topology::parse(NET).unwrap();
        let mut rb = readback(&[(3, 2)], &[(3, 1)]);
        let init = crate::smpquery::parse_portinfo(include_str!(
            "../testdata/smpquery-portinfo-switch.txt"
        ))
        .map(|mut p| {
            p.link_state = "Initialize".to_owned();
            p
        })
        .unwrap();
        rb.ports.insert(key("S2", 2), init);
        let err = walk(&t, &rb, &key("H1", 1), 3, &key("H2", 1)).unwrap_err();
        assert!(err.contains("S2[2], which is Initialize"), "{err}");
    }

    #[test]
    fn walk_reports_missing_entries_wrong_arrivals_and_loops() {
        let t = Topology::parse(NET).unwrap();
        let rb = readback(&[(1, 1)], &[]);
        let err = walk(&t, &rb, &key("H1", 1), 3, &key("H2", 1)).unwrap_err();
        assert!(
            err.contains("S1 has no forwarding entry for LID 3"),
            "{err}"
        );
        let rb = readback(&[(3, 1)], &[]);
        let err = walk(&t, &rb, &key("H2", 1), 3, &key("H2", 1)).unwrap_err();
        assert!(err.contains("S2 has no forwarding entry"), "{err}");
        let rb = readback(&[(3, 2)], &[(3, 2)]);
        let err = walk(&t, &rb, &key("H1", 1), 3, &key("H2", 1)).unwrap_err();
        assert!(err.contains("no arrival within"), "{err}");
        let rb = readback(&[(3, 1)], &[]);
        let err = walk(&t, &rb, &key("H2", 1), 3, &key("H1", 1));
        assert!(err.is_err());
    }

    #[test]
    fn parses_an_ibroute_dump() {
        let text = "Unicast lids [0x0-0x8] of switch DR path slid 65535; dlid 65535; 0,1,3 guid \
                    0x0002c90000002000 (sw-two):\n  Lid  Out   Destination\n       Port     Info \n\
                    0x0001 003 : (Channel Adapter portguid 0x0002c90000100001: 'host-one')\n\
                    0x0003 000 \n2 valid lids dumped \n";
        let lft = parse_ibroute(text).unwrap();
        assert_eq!(lft, BTreeMap::from([(1, 3), (3, 0)]));
        assert!(parse_ibroute("garbage").is_err());
    }

    #[test]
    fn failures_collect_and_name_ports() {
        let mut f = Failures::new("unit");
        f.check(true, || unreachable!());
        assert_eq!(f.checked(), 1);
        f.assert_none();
        let mut f = Failures::new("unit");
        f.check(false, || format!("{}: LID 0", port_name(&key("H1", 1))));
        let msg = std::panic::catch_unwind(move || f.assert_none()).unwrap_err();
        let msg = msg.downcast_ref::<String>().unwrap();
        assert!(msg.contains("H1[1]: LID 0"), "{msg}");
    }
}
