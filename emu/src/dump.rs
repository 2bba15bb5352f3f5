//! The QoS-relevant state of every port of an emulated fabric, as JSON: what an SM left behind,
//! for comparing two runs or feeding the simulator.
//!
//! Stable: nodes are keyed by GUID as fixed-width hex (so text order is numeric order), ports
//! and SL2VL input ports by number, all in `BTreeMap`s, so the same state always gives the same
//! bytes. [`FabricDump::from_json`] reads a dump back.

use std::collections::BTreeMap;

use ibqos_mad::{Guid, Priority};
use serde::{Deserialize, Serialize};

use super::Emulator;
use ibqos_fabric::{NodeKind, PortRef};

/// Every node of the fabric by GUID (`0x` and 16 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricDump {
    pub nodes: BTreeMap<String, NodeDump>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDump {
    pub name: String,
    /// `ca`, `switch` or `router`.
    pub kind: String,
    /// Every port the node has (a switch's port 0 included), by number.
    pub ports: BTreeMap<u8, PortDump>,
}

/// One port's state. Encodings are the IBA's raw values, as PortInfo carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortDump {
    pub lid: u16,
    /// PortState by name (`Down`, `Init`, `Armed`, `Active`).
    pub port_state: String,
    /// PortPhysicalState by name (`LinkUp`, `Polling`, `Disabled`, ...).
    pub phys_state: String,
    pub oper_vls: u8,
    pub neighbor_mtu: u8,
    pub vl_high_limit: u8,
    pub hoq_life: u8,
    pub vl_stall_count: u8,
    /// SL2VL tables by input port, each the VL of SL 0..15: on a switch the table of traffic
    /// entering each input port and leaving by this one; on a CA its one table, under its own
    /// number.
    pub sl2vl: BTreeMap<u8, [u8; 16]>,
    /// The VLArbitration tables, exactly the port's VLArbitrationLowCap / HighCap entries, each
    /// `[vl, weight]`.
    pub vlarb_low: Vec<[u8; 2]>,
    pub vlarb_high: Vec<[u8; 2]>,
}

impl FabricDump {
    /// Pretty JSON ending in a newline: the form `ibqos sm --dump-fabric` writes.
    pub fn to_json(&self) -> String {
        // Maps with string and integer keys and plain values: serialising cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads what [`FabricDump::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<FabricDump, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// The state of every port of `emulator`.
pub fn dump(emulator: &Emulator) -> FabricDump {
    let topology = emulator.topology();
    let nodes = topology
        .nodes()
        .map(|(id, node)| {
            let inputs: Vec<u8> = node.existing_ports().map(|(n, _)| n).collect();
            let ports = node
                .existing_ports()
                .filter_map(|(number, _)| {
                    let port = PortRef::new(id, number);
                    let info = emulator.port_info(port)?;
                    let sl2vl = if node.is_switch() {
                        inputs
                            .iter()
                            .filter_map(|&i| {
                                let table = emulator.sl2vl(PortRef::new(id, i), number)?;
                                Some((i, table.vls))
                            })
                            .collect()
                    } else {
                        emulator
                            .sl2vl(port, number)
                            .map(|table| (number, table.vls))
                            .into_iter()
                            .collect()
                    };
                    let vlarb = |priority| {
                        emulator
                            .vlarb(port, priority)
                            .unwrap_or_default()
                            .iter()
                            .map(|e| [e.vl, e.weight])
                            .collect()
                    };
                    let dump = PortDump {
                        lid: info.lid,
                        port_state: format!("{:?}", info.port_state),
                        phys_state: format!("{:?}", info.port_phys_state),
                        oper_vls: info.operational_vls,
                        neighbor_mtu: info.neighbor_mtu,
                        vl_high_limit: info.vl_high_limit,
                        hoq_life: info.hoq_life,
                        vl_stall_count: info.vl_stall_count,
                        sl2vl,
                        vlarb_low: vlarb(Priority::Low),
                        vlarb_high: vlarb(Priority::High),
                    };
                    Some((number, dump))
                })
                .collect();
            let kind = match node.kind {
                NodeKind::Ca => "ca",
                NodeKind::Switch => "switch",
                NodeKind::Router => "router",
            };
            let dump = NodeDump {
                name: node.name.clone(),
                kind: kind.to_owned(),
                ports,
            };
            (Guid(node.guid).to_string(), dump)
        })
        .collect();
    FabricDump { nodes }
}
