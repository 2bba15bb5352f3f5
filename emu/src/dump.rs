//! The QoS state of every port of an emulated fabric, and every switch's LFT, as a
//! [`FabricDump`]: what an SM left behind, for comparing two runs or feeding the simulator.
//! Each table is what the SMA answers a SubnGet for it (read without counting), so the dump
//! equals what `ibqos dump` reads from the same fabric over the wire.

use std::collections::BTreeMap;

use ibqos_fabric::PortRef;
use ibqos_fabric::dump::{FabricDump, NodeDump, PortDump, SwitchShape, TableRead};
use ibqos_mad::{Attribute, AttributeId, CapabilityMask};

use super::Emulator;

/// The state of every port of `emulator`.
pub fn dump(emulator: &Emulator) -> FabricDump {
    let topology = emulator.topology();
    let nodes = topology
        .nodes()
        .map(|(id, node)| {
            let port0 = emulator.port_info(PortRef::new(id, 0));
            let switch = emulator.switch_info(id).map(|info| SwitchShape {
                num_ports: node.num_ports(),
                enhanced_port0: info.enhanced_port0,
                sl_mapping: port0.is_some_and(|p| {
                    p.capability_mask
                        .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED)
                }),
            });
            let ports = node
                .existing_ports()
                .filter_map(|(number, _)| {
                    let port = PortRef::new(id, number);
                    let info = emulator.port_info(port)?;
                    let mut dump = PortDump::new(info);
                    for read in TableRead::of_port(switch, number, info) {
                        if let Ok(answer) = emulator.get(port, read.attribute, read.modifier) {
                            dump.record(&read, &answer);
                        }
                    }
                    dump.congestion = emulator.ccas.dump(port);
                    Some((number, dump))
                })
                .collect();
            let name = match emulator.get(PortRef::new(id, 0), AttributeId::NodeDescription, 0) {
                Ok(Attribute::NodeDescription(description)) => {
                    description.to_string_lossy().into_owned()
                }
                _ => node.description.clone(),
            };
            let top = emulator
                .switch_info(id)
                .map_or(0, |info| info.linear_fdb_top);
            let mut lft = BTreeMap::new();
            for block in NodeDump::lft_blocks(top) {
                let port0 = PortRef::new(id, 0);
                let read = emulator.get(port0, AttributeId::LinearForwardingTable, block);
                if let Ok(Attribute::LinearForwardingTable(table)) = read {
                    lft.extend(NodeDump::lft_routes(block, &table, top));
                }
            }
            let dump = NodeDump {
                name,
                kind: NodeDump::kind_name(node.kind.into()),
                ports,
                lft,
            };
            (FabricDump::node_key(node.guid), dump)
        })
        .collect();
    FabricDump { nodes }
}
