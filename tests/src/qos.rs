//! Reading every QoS setting of a fabric back, and comparing two fabrics port by port.
//!
//! What is read, by directed route from the query node, so that nothing depends on the LIDs and
//! routes under test. On every switch, for every port 0..=NumPorts: its PortInfo, its SL2VL tables
//! as an output port (one row per input port 0..=NumPorts), and its VLArb tables (none on a base
//! port 0). On every linked CA port: its PortInfo, its SL2VL table and its VLArb tables. Plus the
//! NodeGUID of every node, because `ibqos sm --json` names ports by it.

use std::collections::BTreeMap;

use crate::readback::{Failures, PortKey, port_name, port_targets};
use crate::smpquery::{PortInfo, Sl2VlRow, SmpQuery, VlArbTables};
use crate::{Error, Ibsim, Result, SimTools, Topology};

/// The QoS settings of one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortQos {
    pub info: PortInfo,
    /// A switch port: one row per input port with this port as output. A CA port: one row.
    pub sl2vl: Vec<Sl2VlRow>,
    /// `None` where smpquery finds no tables (port 0 of a base-port-0 switch).
    pub vlarb: Option<VlArbTables>,
}

/// The QoS settings of a whole fabric.
#[derive(Debug, Clone)]
pub struct QosReadback {
    pub ports: BTreeMap<PortKey, PortQos>,
    /// NodeGUID to node id.
    pub guids: BTreeMap<u64, String>,
}

impl QosReadback {
    /// Reads everything from `sim`, querying from port 1 of the CA `query_node`.
    pub fn read(
        tools: &SimTools,
        sim: &Ibsim,
        topology: &Topology,
        query_node: &str,
    ) -> Result<QosReadback> {
        let query = SmpQuery::new(tools, sim, query_node);
        let mut ports = BTreeMap::new();
        let mut guids = BTreeMap::new();
        for port in port_targets(topology, query_node)? {
            let at = |e: Error| e.context(port.name());
            // A switch's NodeGUID once, through port 0; each CA port's (the node's) every time.
            if port.port_arg.is_none() || port.port == 0 {
                guids.insert(
                    query.node_guid(&port.target).map_err(at)?,
                    port.node.id.clone(),
                );
            }
            let qos = PortQos {
                info: port.portinfo(&query)?,
                sl2vl: query.sl2vl(&port.target, port.port_arg).map_err(at)?,
                vlarb: query.vlarb(&port.target, port.port_arg).map_err(at)?,
            };
            ports.insert((port.node.id.clone(), port.port), qos);
        }
        Ok(QosReadback { ports, guids })
    }

    pub fn port(&self, key: &PortKey) -> Option<&PortQos> {
        self.ports.get(key)
    }

    /// The node id of a NodeGUID.
    pub fn node_of(&self, guid: u64) -> Option<&str> {
        self.guids.get(&guid).map(String::as_str)
    }
}

/// Which QoS setting of a port, for messages and for comparing only part of a fabric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    LinkState,
    OperVls,
    HoqLife,
    Sl2Vl,
    VlArb,
}

/// Every port of `ours` equals the same port of `theirs` in every [`Setting`]; `ours_name` and
/// `theirs_name` say whose fabric each is in messages.
pub fn compare_fabrics(
    f: &mut Failures,
    ours: &QosReadback,
    theirs: &QosReadback,
    ours_name: &str,
    theirs_name: &str,
) {
    compare_ports(f, ours, theirs, ours_name, theirs_name, &|_| true);
}

/// [`compare_fabrics`] for the ports `include` accepts.
pub fn compare_ports(
    f: &mut Failures,
    ours: &QosReadback,
    theirs: &QosReadback,
    ours_name: &str,
    theirs_name: &str,
    include: &dyn Fn(&PortKey) -> bool,
) {
    f.check(ours.ports.len() == theirs.ports.len(), || {
        format!(
            "{ours_name} has {} ports read back, {theirs_name} {}",
            ours.ports.len(),
            theirs.ports.len()
        )
    });
    for (key, theirs_port) in theirs.ports.iter().filter(|(k, _)| include(k)) {
        let Some(our_port) = ours.port(key) else {
            f.check(false, || {
                format!("{}: not read back from {ours_name}", port_name(key))
            });
            continue;
        };
        compare_port(f, key, our_port, theirs_port, ours_name, theirs_name);
    }
}

fn compare_port(
    f: &mut Failures,
    key: &PortKey,
    ours: &PortQos,
    theirs: &PortQos,
    ours_name: &str,
    theirs_name: &str,
) {
    let at = port_name(key);
    let mut same = |what: &str, a: String, b: String| {
        f.check(a == b, || {
            format!("{at}: {what}: {ours_name} has {a}, {theirs_name} has {b}")
        });
    };
    same(
        "LinkState",
        ours.info.link_state.clone(),
        theirs.info.link_state.clone(),
    );
    same(
        "OperVLs",
        format!("{} VLs", ours.info.oper_vls),
        format!("{} VLs", theirs.info.oper_vls),
    );
    same(
        "HOQLife",
        format!("{:#x}", ours.info.hoq_life),
        format!("{:#x}", theirs.info.hoq_life),
    );
    same_sl2vl(&mut same, ours, theirs);
    match (&ours.vlarb, &theirs.vlarb) {
        (Some(a), Some(b)) => {
            same("VLArb low", format!("{:?}", a.low), format!("{:?}", b.low));
            same(
                "VLArb high",
                format!("{:?}", a.high),
                format!("{:?}", b.high),
            );
        }
        (a, b) => same(
            "VLArb tables",
            if a.is_some() { "tables" } else { "none" }.to_owned(),
            if b.is_some() { "tables" } else { "none" }.to_owned(),
        ),
    }
}

/// Requires `ours`'s SL2VL rows to be `theirs`'s, through `same(what, ours, theirs)`.
fn same_sl2vl(same: &mut impl FnMut(&str, String, String), ours: &PortQos, theirs: &PortQos) {
    same(
        "SL2VL row count",
        ours.sl2vl.len().to_string(),
        theirs.sl2vl.len().to_string(),
    );
    for (a, b) in ours.sl2vl.iter().zip(&theirs.sl2vl) {
        same(
            &format!("SL2VL in {} -> out {}", b.in_port, b.out_port),
            format!("in {} out {} {:?}", a.in_port, a.out_port, a.vls),
            format!("in {} out {} {:?}", b.in_port, b.out_port, b.vls),
        );
    }
}

/// Every port of `ours` has the SL2VL tables of the same port of `theirs`, and nothing else is
/// compared: what a routing engine decides of the QoS tables.
pub fn compare_sl2vl(f: &mut Failures, ours: &QosReadback, theirs: &QosReadback) {
    f.check(ours.ports.keys().eq(theirs.ports.keys()), || {
        "the two fabrics have different ports read back".to_string()
    });
    for (key, theirs_port) in &theirs.ports {
        let Some(our_port) = ours.port(key) else {
            continue;
        };
        let at = port_name(key);
        let mut same = |what: &str, a: String, b: String| {
            f.check(a == b, || {
                format!("{at}: {what}: ibqos has {a}, OpenSM has {b}")
            });
        };
        same_sl2vl(&mut same, our_port, theirs_port);
    }
}

/// The settings that differ between two readbacks of one fabric, as `(port, setting, "old ->
/// new")`: what changed between `before` and `after`.
pub fn differences(before: &QosReadback, after: &QosReadback) -> Vec<(PortKey, Setting, String)> {
    let mut out = Vec::new();
    for (key, b) in &before.ports {
        let Some(a) = after.port(key) else {
            continue;
        };
        let mut diff = |setting: Setting, x: String, y: String| {
            if x != y {
                out.push((key.clone(), setting, format!("{x} -> {y}")));
            }
        };
        diff(
            Setting::LinkState,
            b.info.link_state.clone(),
            a.info.link_state.clone(),
        );
        diff(
            Setting::OperVls,
            b.info.oper_vls.to_string(),
            a.info.oper_vls.to_string(),
        );
        diff(
            Setting::HoqLife,
            b.info.hoq_life.to_string(),
            a.info.hoq_life.to_string(),
        );
        diff(
            Setting::Sl2Vl,
            format!("{:?}", b.sl2vl),
            format!("{:?}", a.sl2vl),
        );
        diff(
            Setting::VlArb,
            format!("{:?}", b.vlarb),
            format!("{:?}", a.vlarb),
        );
    }
    out
}

/// A port as `ibqos sm --json` names it in "changes": `0x<NodeGUID>[<port>]`.
pub fn parse_target(target: &str) -> Option<(u64, u8)> {
    let (guid, port) = target.strip_suffix(']')?.split_once('[')?;
    let guid = u64::from_str_radix(guid.strip_prefix("0x")?, 16).ok()?;
    Some((guid, port.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_change_target() {
        assert_eq!(
            parse_target("0x0002c90000001000[5]"),
            Some((0x0002_c900_0000_1000, 5))
        );
        assert_eq!(parse_target("S1[5]"), None);
        assert_eq!(parse_target("0x10"), None);
    }

    #[test]
    fn parses_a_node_guid() {
        let text = "# Node info: DR path slid 65535; dlid 65535; 0,1\nBaseVers:........1\n\
                    SystemGuid:......0x1\nGuid:............................0x0002c90000001000\nNumPorts:.......8\n";
        assert_eq!(
            crate::smpquery::parse_node_guid(text).unwrap(),
            0x0002_c900_0000_1000
        );
        assert!(crate::smpquery::parse_node_guid("nothing").is_err());
    }
}
