//! The SA's view of the fabric: a snapshot of what the last sweep found and programmed, indexed
//! for the queries the SA answers. It is built once per sweep and never per query: OpenSM too
//! answers from its subnet database, not from fresh SMPs, and a query must not cost a scan of
//! the fabric.

use std::collections::BTreeMap;

use ibqos_mad::{
    Attribute, NodeType, SlToVlMappingTableRepr, SlToVlModifier, VlArbModifier,
    VlArbitrationTableRepr,
};

use crate::engine::qos::QosWrite;
use crate::engine::subnet::{Node, Port, PortKey, Subnet, opensm_order};
use crate::engine::sweep::Sweep;

/// What the SA answers from, as of the last sweep.
#[derive(Debug, Clone, Default)]
pub struct SaDb {
    pub(super) subnet: Subnet,
    /// Every LID an endport answers to (base to base + 2^LMC - 1), and the endport.
    by_lid: BTreeMap<u16, PortKey>,
    /// Endports by port GUID.
    by_guid: BTreeMap<u64, PortKey>,
    /// Endports in OpenSM's port table order (see `opensm_order`).
    port_order: Vec<PortKey>,
    /// Node GUIDs in OpenSM's node table order.
    node_order: Vec<u64>,
    /// Forwarding tables by switch GUID: entry `lid` is the egress port.
    pub(super) lfts: BTreeMap<u64, Vec<u8>>,
    /// SL2VL tables as programmed, by (node, input port, output port).
    pub(super) sl2vl: BTreeMap<(u64, u8, u8), SlToVlMappingTableRepr>,
    /// VLArb blocks as programmed, by (node, output port, block 1-4).
    pub(super) vlarb: BTreeMap<(u64, u8, u8), VlArbitrationTableRepr>,
    /// The SM's own port.
    pub(super) sm_port: Option<PortKey>,
}

impl SaDb {
    /// The snapshot of a finished sweep.
    pub fn new(sweep: &Sweep) -> SaDb {
        let subnet = sweep.subnet().clone();
        let mut by_lid = BTreeMap::new();
        let mut by_guid = BTreeMap::new();
        for (guid, number, port) in subnet.endports() {
            let key = PortKey::new(guid, number);
            by_guid.insert(port.guid, key);
            if port.lid != 0 {
                for lid in lid_range(port) {
                    by_lid.insert(lid, key);
                }
            }
        }
        let mut node_order: Vec<u64> = subnet.nodes.keys().copied().collect();
        node_order.sort_by_key(|guid| opensm_order(*guid));
        let mut port_order: Vec<(u64, PortKey)> = by_guid.iter().map(|(g, k)| (*g, *k)).collect();
        port_order.sort_by_key(|(guid, _)| opensm_order(*guid));
        let port_order = port_order.into_iter().map(|(_, key)| key).collect();
        let mut db = SaDb {
            sm_port: subnet.sm_port,
            node_order,
            port_order,
            subnet,
            by_lid,
            by_guid,
            lfts: sweep.lfts().tables.clone(),
            ..SaDb::default()
        };
        for write in sweep.verified_qos() {
            db.learn_table(write);
        }
        db
    }

    /// A programmed SL2VL or VLArb table, under every (port, port) or (port, block) it covers.
    /// A CA or router ignores the modifier's ports and answers for the port the Set reached
    /// it by: its table is that port's, input port 0 (OpenSM osm_sa_slvl_record.c:138-180).
    fn learn_table(&mut self, write: &QosWrite) {
        let Some(node) = self.subnet.nodes.get(&write.node) else {
            return;
        };
        let switch = node.is_switch();
        let ports: Vec<u8> = node.ports.keys().copied().collect();
        match write.attribute {
            Attribute::SlToVlMappingTable(table) => {
                let pairs: Vec<(u8, u8)> = if switch {
                    match SlToVlModifier::try_from(write.modifier) {
                        Ok(modifier) => modifier.pairs(ports.clone(), ports).collect(),
                        Err(_) => return,
                    }
                } else {
                    write.ports.iter().map(|p| (0, p.port)).collect()
                };
                for (input, output) in pairs {
                    self.sl2vl.insert((write.node, input, output), table);
                }
            }
            Attribute::VlArbitrationTable(table) => {
                let Ok(modifier) = VlArbModifier::try_from(write.modifier) else {
                    return;
                };
                let block = modifier.block.number();
                let port = if switch {
                    modifier.port
                } else {
                    write.via.port
                };
                self.vlarb.insert((write.node, port, block), table);
            }
            _ => {}
        }
    }

    /// The endport a LID belongs to.
    pub fn endport_of_lid(&self, lid: u16) -> Option<PortKey> {
        self.by_lid.get(&lid).copied()
    }

    /// The endport with this port GUID.
    pub fn endport_of_guid(&self, guid: u64) -> Option<PortKey> {
        self.by_guid.get(&guid).copied()
    }

    pub fn node(&self, guid: u64) -> Option<&Node> {
        self.subnet.nodes.get(&guid)
    }

    pub fn port(&self, key: PortKey) -> Option<&Port> {
        self.subnet.port(key)
    }

    /// The port at the other end of a port's link.
    pub fn peer(&self, key: PortKey) -> Option<PortKey> {
        self.subnet.peer(key)
    }

    /// The endport a port's node answers by: port 0 of a switch, the port itself otherwise.
    pub fn endport(&self, key: PortKey) -> PortKey {
        match self.node(key.node) {
            Some(node) if node.is_switch() => PortKey::new(key.node, 0),
            _ => key,
        }
    }

    /// The base LID of a port: a switch port answers with its port 0's.
    pub fn base_lid(&self, key: PortKey) -> u16 {
        self.port(self.endport(key)).map_or(0, |p| p.lid)
    }

    /// Every endport with a LID, in OpenSM's port table order.
    pub fn endports_by_guid(&self) -> impl Iterator<Item = PortKey> + '_ {
        self.port_order
            .iter()
            .copied()
            .filter(|key| self.port(*key).is_some_and(|p| p.lid != 0))
    }

    /// The GUIDs of every endport with a LID.
    pub fn endport_guids(&self) -> std::collections::BTreeSet<u64> {
        self.endports().map(|(_, port)| port.guid).collect()
    }

    /// Every node, in OpenSM's node table order.
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.node_order.iter().filter_map(|guid| self.node(*guid))
    }

    /// Every endport with a LID, as (key, port), node by node in OpenSM's order.
    pub fn endports(&self) -> impl Iterator<Item = (PortKey, &Port)> {
        self.nodes().flat_map(|node| {
            let guid = node.info.node_guid;
            node.endports()
                .filter(|(_, p)| p.lid != 0)
                .map(move |(n, p)| (PortKey::new(guid, n), p))
        })
    }

    /// The LIDs a port answers to: its endport's base LID and LMC range; `None` without a LID.
    pub fn lids_of(&self, key: PortKey) -> Option<std::ops::RangeInclusive<u16>> {
        self.port(self.endport(key))
            .filter(|p| p.lid != 0)
            .map(lid_range)
    }

    /// Whether `lid` is one of the LIDs a port answers to.
    pub fn has_lid(&self, key: PortKey, lid: u16) -> bool {
        self.lids_of(key).is_some_and(|lids| lids.contains(&lid))
    }

    /// Whether the node at `key` is a switch.
    pub fn is_switch(&self, key: PortKey) -> bool {
        self.node(key.node)
            .is_some_and(|n| n.info.node_type == NodeType::Switch)
    }
}

/// The LIDs an endport answers to: its base LID and the 2^LMC - 1 after it.
fn lid_range(port: &Port) -> std::ops::RangeInclusive<u16> {
    let count = 1u32 << port.info.lmc.min(7);
    let last = (u32::from(port.lid) + count - 1).min(0xbfff) as u16;
    port.lid..=last
}
