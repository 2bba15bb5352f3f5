//! The SA's view of the fabric: a snapshot of what the last sweep found and programmed, indexed
//! for the queries the SA answers. It is built once per sweep and never per query: OpenSM too
//! answers from its subnet database, not from fresh SMPs, and a query must not cost a scan of
//! the fabric.

use std::collections::BTreeMap;
use std::sync::Arc;

use ibqos_fabric::routing::Layering;
use ibqos_mad::{
    Guid, NodeType, PortState, SlToVlMappingTableRepr, SlToVlModifier, SmInfoRepr,
    VlArbitrationTableRepr,
};

use ibqos_qos::partitions::{SubnetPartition, SubnetPartitions};

use crate::engine::pkeys::KeyRule;
use crate::engine::subnet::{DiscoveredNode, Port, PortKey, Subnet};
use crate::engine::sweep::Sweep;
use crate::engine::write::{TableBlock, TableModifier, TableWrite};

use super::sl2vl::Sl2VlTables;
use super::vlarb::VlArbTables;

/// What the SA answers from, as of the last sweep.
#[derive(Debug, Clone, Default)]
pub struct SaDb {
    pub(super) subnet: Arc<Subnet>,
    /// Every LID an endport answers to (base to base + 2^LMC - 1), and the endport.
    by_lid: BTreeMap<u16, PortKey>,
    /// Endports by port GUID.
    by_guid: BTreeMap<u64, PortKey>,
    /// Endports in OpenSM's port table order (see `Guid::opensm_order`).
    port_order: Vec<PortKey>,
    /// Node GUIDs in OpenSM's node table order.
    node_order: Vec<u64>,
    /// Forwarding tables by switch GUID: entry `lid` is the egress port.
    pub(super) lfts: BTreeMap<u64, Vec<u8>>,
    /// The routing engine that computed them, which has the last word on a path's SL.
    pub(super) layering: Option<Arc<dyn Layering>>,
    /// SL2VL tables as programmed, by node, input port and output port.
    pub(super) sl2vl: Sl2VlTables,
    /// VLArb blocks as programmed, by (node, output port, block 1-4).
    pub(super) vlarb: VlArbTables,
    /// Every P_Key table the last sweep read, with its Sets written in.
    pub(super) pkeys: BTreeMap<PortKey, Vec<u16>>,
    /// Which P_Keys count as one (`allow_both_pkeys`).
    pkey_rule: KeyRule,
    /// Each port's P_Keys by key, built once from `pkeys`: every PathRecord pair looks two up.
    pkey_maps: BTreeMap<PortKey, BTreeMap<u16, u16>>,
    /// The partitions the last sweep programmed.
    partitions: SubnetPartitions,
    /// The SM's own port.
    pub(super) sm_port: Option<PortKey>,
    /// Every switch's multicast forwarding table as programmed, by (switch node GUID, block,
    /// position): the 32 port masks of that block and position.
    pub(super) mfts: BTreeMap<(u64, u16, u8), [u16; 32]>,
    /// The other SMs the election knows, as they last answered their SMInfo.
    pub(super) remote_sms: Vec<SmInfoRepr>,
}

impl SaDb {
    /// The snapshot of a finished sweep.
    pub fn new(sweep: &Sweep) -> SaDb {
        let subnet = sweep.shared_subnet();
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
        node_order.sort_by_key(|guid| Guid(*guid).opensm_order());
        let mut port_order: Vec<(u64, PortKey)> = by_guid.iter().map(|(g, k)| (*g, *k)).collect();
        port_order.sort_by_key(|(guid, _)| Guid(*guid).opensm_order());
        let port_order = port_order.into_iter().map(|(_, key)| key).collect();
        let pkeys = sweep.pkey_tables();
        let pkey_rule = sweep.pkey_rule();
        let pkey_maps = pkeys
            .iter()
            .map(|(port, table)| (*port, pkey_map(pkey_rule, table)))
            .collect();
        let mut db = SaDb {
            sm_port: subnet.sm_port,
            node_order,
            port_order,
            subnet,
            by_lid,
            by_guid,
            lfts: sweep.lfts().tables.clone(),
            layering: Some(Arc::clone(sweep.layering())),
            pkeys,
            pkey_rule,
            pkey_maps,
            partitions: sweep.partitions().clone(),
            ..SaDb::default()
        };
        for write in sweep.verified_qos().chain(sweep.verified_mfts()) {
            db.learn_table(write);
        }
        db
    }

    /// The snapshot with the other SMs the election knows, for the SMInfoRecords.
    pub fn with_remote_sms(mut self, sms: impl Iterator<Item = SmInfoRepr>) -> SaDb {
        self.remote_sms = sms.collect();
        self
    }

    /// A programmed SL2VL, VLArb or MFT table, under every (port, port), (port, block) or
    /// (block, position) it covers.
    /// A CA or router ignores the modifier's ports and answers for the port the Set reached
    /// it by: its table is that port's, input port 0 (OpenSM osm_sa_slvl_record.c:138-180).
    pub(super) fn learn_table(&mut self, write: &TableWrite) {
        let guid = write.node.0;
        let Some(node) = self.subnet.nodes.get(&guid) else {
            return;
        };
        let switch = node.is_switch();
        match (write.block, write.modifier) {
            (TableBlock::SlToVl(table), TableModifier::SlToVl(modifier)) => {
                let last = node.ports.keys().next_back();
                let dimension = last.map_or(0, |&last| usize::from(last) + 1);
                if switch && modifier == SlToVlModifier::All && node.ports.len() == dimension {
                    self.sl2vl.insert_every_pair(guid, dimension, table);
                } else if switch {
                    // Without SL2VL programming for all pairs at once, a switch takes one Set
                    // per pair: 72,576 on fat-tree-648. Its ports are listed only when asked.
                    let ports = || node.ports.keys().copied();
                    let pairs = modifier.pairs(ports(), ports());
                    self.sl2vl.insert(guid, dimension, pairs, table);
                } else {
                    let pairs = write.ports.iter().map(|p| (0, p.port));
                    self.sl2vl.insert(guid, dimension, pairs, table);
                }
            }
            (TableBlock::Mft(table), TableModifier::Mft(m)) => {
                let key = (guid, m.block(), m.position());
                self.mfts.insert(key, table.port_masks);
            }
            (TableBlock::VlArb(table), TableModifier::VlArb(modifier)) => {
                let block = modifier.block.number();
                let port = if switch {
                    modifier.port
                } else {
                    write.via.port
                };
                self.vlarb.insert(guid, port, block, table);
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

    pub fn node(&self, guid: u64) -> Option<&DiscoveredNode> {
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
    pub fn nodes(&self) -> impl Iterator<Item = &DiscoveredNode> {
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

    /// The highest MLID the subnet's switches all have room for: MLIDs start at 0xC000 and
    /// OpenSM lowers its limit (0xFFFE) to the smallest MulticastFDBCap a switch advertises,
    /// switches without multicast (cap 0) aside (osm_sw_info_rcv.c:224-233).
    pub fn max_mcast_lid(&self) -> u16 {
        const FIRST_MLID: u32 = 0xc000;
        const LAST_MLID: u32 = 0xfffe;
        self.subnet
            .nodes
            .values()
            .filter_map(|node| node.switch)
            .map(|info| u32::from(info.multicast_fdb_cap))
            .filter(|&cap| cap != 0)
            .map(|cap| cap + FIRST_MLID - 1)
            .fold(LAST_MLID, u32::min) as u16
    }

    /// The smallest MTUCap of a port past port 0 that is not down: OpenSM's `min_ca_mtu`,
    /// tracked as PortInfo comes in (osm_port_info_rcv.c:99-108), from 4096 (code 5) down.
    pub fn min_port_mtu_cap(&self) -> u8 {
        const MAX_MTU: u8 = 5;
        self.subnet
            .nodes
            .values()
            .flat_map(|node| node.ports.iter())
            .filter(|(number, port)| **number != 0 && port.info.port_state != PortState::Down)
            .map(|(_, port)| port.info.mtu_cap)
            .fold(MAX_MTU, u8::min)
    }

    /// Whether the node at `key` is a switch.
    /// The SL2VL table the last sweep programmed for (input, output) of `node` (a CA's: input
    /// 0, output its port), `None` where it programmed none.
    pub fn sl2vl_table(&self, node: u64, input: u8, output: u8) -> Option<&SlToVlMappingTableRepr> {
        self.sl2vl.get(node, input, output)
    }

    /// VLArbitration block `block` (1-4) of `port` as the last sweep programmed it.
    pub fn vlarb_table(&self, node: u64, port: u8, block: u8) -> Option<&VlArbitrationTableRepr> {
        self.vlarb.get(node, port, block)
    }

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

/// Partitions as the SA sees them (`osm_pkey.c`): each port's P_Keys by key, the first valid
/// entry of each in table order (`osm_pkey_tbl_set`), and the rules for two ports sharing one.
impl SaDb {
    /// The port's P_Keys by key (see [`pkey_map`]); empty when its table is not known.
    fn pkey_map(&self, port: PortKey) -> &BTreeMap<u16, u16> {
        const UNKNOWN: &BTreeMap<u16, u16> = &BTreeMap::new();
        self.pkey_maps.get(&port).unwrap_or(UNKNOWN)
    }

    /// Whether `a` and `b` share `pkey` (`osm_physp_share_this_pkey`): both hold it, one of
    /// them as a full member.
    pub fn share_this_pkey(&self, a: PortKey, b: PortKey, pkey: u16) -> bool {
        let find = |port| {
            let map = self.pkey_map(port);
            if self.pkey_rule.allow_both_pkeys {
                map.get(&(pkey | 0x8000).swap_bytes())
                    .or_else(|| map.get(&(pkey & 0x7fff).swap_bytes()))
                    .copied()
            } else {
                map.get(&(pkey & 0x7fff).swap_bytes()).copied()
            }
        };
        matches!((find(a), find(b)), (Some(x), Some(y)) if match_pkey(x, y))
    }

    /// The first P_Key `a` and `b` share, walking both maps in order
    /// (`osm_physp_find_common_pkey`); 0 when there is none. With `allow_both_pkeys`, a's
    /// full keys against b's limited ones and then the other way round are tried too.
    pub fn common_pkey(&self, a: PortKey, b: PortKey) -> u16 {
        let (first, second) = (self.pkey_map(a), self.pkey_map(b));
        let all = |_: u16| true;
        let full = |pkey: u16| pkey & 0x8000 != 0;
        let limited = |pkey: u16| pkey & 0x8000 == 0;
        let mut found = merge_find(first, second, all, all);
        if found == 0 && self.pkey_rule.allow_both_pkeys {
            found = merge_find(first, second, full, limited);
            if found == 0 {
                found = merge_find(first, second, limited, full);
            }
        }
        found
    }

    /// Whether two ports share a partition (`osm_physp_share_pkey`): a port with itself, or
    /// with no P_Key table known, always does.
    pub fn share_pkey(&self, a: PortKey, b: PortKey) -> bool {
        a == b
            || self.pkey_map(a).is_empty()
            || self.pkey_map(b).is_empty()
            || self.common_pkey(a, b) != 0
    }

    /// The partition a P_Key belongs to.
    pub fn partition(&self, pkey: u16) -> Option<&SubnetPartition> {
        self.partitions.get(pkey)
    }

    /// Every partition, in OpenSM's table order.
    pub fn partitions(&self) -> &[SubnetPartition] {
        &self.partitions.partitions
    }

    /// The subnet's partitions, as the policy's port groups take them.
    pub fn subnet_partitions(&self) -> &SubnetPartitions {
        &self.partitions
    }

    /// Whether `port` holds `pkey` (`osm_physp_has_pkey`): its map has the P_Key's base as a
    /// key, whatever the membership. With `allow_both_pkeys` the map is keyed by whole P_Keys,
    /// so only a limited entry is found, as in OpenSM. A P_Key whose base is 0 is held by
    /// every port.
    pub fn has_pkey(&self, port: PortKey, pkey: u16) -> bool {
        let base = pkey & 0x7fff;
        base == 0 || self.pkey_map(port).contains_key(&base.swap_bytes())
    }
}

/// A port's P_Keys by key (the base, or with `allow_both_pkeys` the whole P_Key), in OpenSM's
/// map order: the key as it is on the wire, compared as a little-endian integer. The first valid
/// entry of each key in table order wins (`osm_pkey_tbl_set`).
fn pkey_map(rule: KeyRule, table: &[u16]) -> BTreeMap<u16, u16> {
    let mut keys: BTreeMap<u16, u16> = BTreeMap::new();
    for &pkey in table {
        if pkey & 0x7fff != 0 {
            keys.entry(rule.key(pkey).swap_bytes()).or_insert(pkey);
        }
    }
    keys
}

/// Two P_Keys match when their bases are equal and one of them is a full member (`match_pkey`).
pub(super) fn match_pkey(a: u16, b: u16) -> bool {
    (a | b) & 0x8000 != 0 && a & 0x7fff == b & 0x7fff
}

/// The walk of `osm_physp_find_common_pkey` over two key maps: the first matching pair, the
/// lower key advanced otherwise, entries the filters refuse skipped. Keys are compared by base.
fn merge_find(
    first: &BTreeMap<u16, u16>,
    second: &BTreeMap<u16, u16>,
    take_first: impl Fn(u16) -> bool,
    take_second: impl Fn(u16) -> bool,
) -> u16 {
    let mut a = first.iter().peekable();
    let mut b = second.iter().peekable();
    while let (Some(&(&key_a, &pkey_a)), Some(&(&key_b, &pkey_b))) = (a.peek(), b.peek()) {
        if !take_first(pkey_a) {
            a.next();
            continue;
        }
        if !take_second(pkey_b) {
            b.next();
            continue;
        }
        if match_pkey(pkey_a, pkey_b) {
            return pkey_a;
        }
        // The keys' bases as they are on the wire (`ib_pkey_get_base` of a map key).
        let wire_base = (0x7fff_u16).swap_bytes();
        let (order_a, order_b) = (key_a & wire_base, key_b & wire_base);
        if order_a == order_b {
            a.next();
            b.next();
        } else if order_b < order_a {
            b.next();
        } else {
            a.next();
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sweep::{Learned, SweepMode};
    use crate::testing::{Fabric, config, partitioned, settings, sweep};
    use ibqos_fabric::PortRef;

    /// The snapshot of a forced sweep of the two-switch fabric with `settings`.
    fn snapshot(fabric: &mut Fabric, settings: &ibqos_opensm::Settings) -> SaDb {
        let sweep = sweep(
            fabric,
            config(settings, SweepMode::Forced),
            Learned::default(),
        );
        SaDb::new(&sweep)
    }

    /// The end port `port` is, as the snapshot keys it.
    fn key(db: &SaDb, fabric: &Fabric, port: PortRef) -> PortKey {
        db.endport_of_guid(fabric.guid_of(port)).unwrap()
    }

    #[test]
    fn every_lid_of_an_end_port_leads_to_it_whatever_the_lmc() {
        let mut spans = std::collections::BTreeSet::new();
        for lmc in [0, 1, 2] {
            let mut fabric = Fabric::two_switch();
            let db = snapshot(&mut fabric, &settings(&format!("lmc {lmc}\n")));
            let ends = ["S1", "S2"].map(|s| (s, 0)).into_iter();
            let ends = ends.chain([
                ("H1", 1),
                ("H2", 1),
                ("H3", 1),
                ("H4", 1),
                ("H5", 1),
                ("H5", 2),
            ]);
            for (node, number) in ends {
                let port = fabric.port_of(node, number);
                let key = key(&db, &fabric, port);
                let base = fabric.lid_of(port);
                // As many LIDs as the LMC the port holds: a base switch port 0 keeps LMC 0.
                let count = 1 << fabric.emulator.port_info(port).unwrap().lmc;
                let lids = db.lids_of(key).unwrap();
                assert_eq!(lids, base..=base + count - 1, "{node}[{number}] lmc {lmc}");
                for lid in lids {
                    assert_eq!(db.endport_of_lid(lid), Some(key));
                    assert!(db.has_lid(key, lid));
                }
                assert_eq!(db.base_lid(key), base);
                assert!(!db.has_lid(key, base + count));
                spans.insert(count);
            }
        }
        assert_eq!(spans, [1, 2, 4].into(), "every LMC was held by some port");
    }

    #[test]
    fn ports_share_what_their_programmed_tables_hold() {
        let dir = tempfile::tempdir().unwrap();
        let mut fabric = Fabric::two_switch();
        let settings = partitioned(&fabric, &dir);
        let db = snapshot(&mut fabric, &settings);
        let port = |name| key(&db, &fabric, fabric.port_of(name, 1));
        // (a, b, the first P_Key they share, 0 for none)
        let cases = [
            ("H2", "H3", 0x8101),
            // Both limited members of the Default partition and of nothing else.
            ("H2", "H4", 0),
            // The SM's port is a full member of the Default partition.
            ("H1", "H4", 0xffff),
            ("H4", "H1", 0x7fff),
        ];
        for (a, b, common) in cases {
            assert_eq!(db.common_pkey(port(a), port(b)), common, "{a} {b}");
            assert_eq!(db.share_pkey(port(a), port(b)), common != 0, "{a} {b}");
        }
        assert!(
            db.share_pkey(port("H4"), port("H4")),
            "a port shares with itself"
        );
        assert!(db.share_this_pkey(port("H2"), port("H3"), 0x0101));
        assert!(!db.share_this_pkey(port("H2"), port("H4"), 0x7fff));
        // Held whatever the membership; never by a port outside the partition.
        assert!(db.has_pkey(port("H2"), 0x0101));
        assert!(!db.has_pkey(port("H4"), 0x8101));
        let hosts = db.partition(0x0101).unwrap();
        assert_eq!(db.partition(0x8101).map(|p| p.pkey), Some(hosts.pkey));
    }
}
