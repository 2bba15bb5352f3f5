//! The multicast phase, after the unicast routes as in OpenSM (`osm_mcast_mgr_process`): the
//! tree of every MLID that has members, its entries in every switch's multicast forwarding
//! table, and the blocks Set as OpenSM stripes them, each echo checked by the table writes.
//! A diff sweep reads each block first and Sets only those that differ.

use std::collections::{BTreeMap, BTreeSet};

use ibqos_fabric::PortRef;
use ibqos_fabric::routing::{MulticastTree, mft_blocks};
use ibqos_mad::{CapabilityMask, Guid, MftModifier, MulticastForwardingTableRepr};
use tracing::{info, warn};

use super::writes::{TableKind, Writes};
use super::{Phase, Sweep};
use crate::engine::routing::topology;
use crate::engine::subnet::PortKey;
use crate::engine::write::{Ports, TableBlock, TableModifier, TableWrite};

/// The members of every multicast LID: the port GUIDs of all members of all its groups, as
/// the SA holds them.
pub type MulticastMembers = BTreeMap<u16, BTreeSet<Guid>>;

impl Sweep {
    /// Every MLID's tree and the MFT blocks it gives each switch, up to the highest block the
    /// switch was ever given (OpenSM keeps sending a block that emptied, so an entry is cleared
    /// when its group goes); and the MulticastFDBTop of switches that have one.
    pub(super) fn program_multicast(&mut self) {
        self.phase = Phase::ProgrammingMulticast;
        let (topo, guids) = match topology(&self.subnet, None) {
            Ok(t) => t,
            Err(error) => {
                warn!(%error, "no multicast routing: the fabric is inconsistent");
                return;
            }
        };
        let subnet = &self.subnet;
        let capable = |id: ibqos_fabric::NodeId| {
            guids
                .get(id.0 as usize)
                .and_then(|g| subnet.nodes.get(g))
                .and_then(|n| n.switch)
                .is_some_and(|s| s.multicast_fdb_cap > 0)
        };
        let routing = match self.routed_by.multicast(&topo, &*self.layering, &capable) {
            Ok(routing) => routing,
            Err(error) => {
                warn!(%error, "no multicast routing");
                return;
            }
        };
        let port_of_guid: BTreeMap<Guid, PortRef> = subnet
            .endports()
            .filter_map(|(node, number, port)| {
                let id = topo.node_by_guid(node)?;
                Some((Guid(port.guid), PortRef::new(id, number)))
            })
            .collect();
        let mut trees: Vec<(u16, MulticastTree)> = Vec::new();
        for (mlid, members) in &self.config.multicast {
            let ports: Vec<PortRef> = members
                .iter()
                .filter_map(|g| port_of_guid.get(g).copied())
                .collect();
            match routing.tree_for(*mlid, &ports) {
                Ok(tree) => {
                    for unreached in &tree.unreached {
                        warn!(
                            mlid = format!("{mlid:#06x}"),
                            ?unreached,
                            "multicast member not reached"
                        );
                    }
                    trees.push((*mlid, tree));
                }
                Err(error) => warn!(mlid = format!("{mlid:#06x}"), %error, "MLID not routed"),
            }
        }
        let mfts = match mft_blocks(&topo, trees.iter().map(|(m, t)| (*m, t))) {
            Ok(mfts) => mfts,
            Err(error) => {
                warn!(%error, "no multicast forwarding tables");
                return;
            }
        };
        let mut writes = Writes::default();
        let mut in_use: BTreeMap<u64, Option<u16>> = BTreeMap::new();
        for block in &mfts.blocks {
            let guid = guids[block.switch.0 as usize];
            let max = in_use.entry(guid).or_default();
            *max = Some(max.map_or(block.modifier.block(), |m| m.max(block.modifier.block())));
            self.plan_mft(&mut writes, guid, block.modifier, block.table);
        }
        // Blocks a switch was given before and holds no entry of now: Set empty.
        for (id, node) in topo.switches() {
            let guid = guids[id.0 as usize];
            let Some(&high) = self.learned.mft_high_water.get(&guid) else {
                continue;
            };
            let from = in_use.get(&guid).copied().flatten().map_or(0, |b| b + 1);
            let positions = (u16::from(node.num_ports()) + 1)
                .div_ceil(u16::from(MftModifier::PORTS_PER_POSITION));
            for block in from..=high {
                for position in 0..positions {
                    if let Ok(modifier) = MftModifier::new(block, position as u8) {
                        let empty = MulticastForwardingTableRepr::default();
                        self.plan_mft(&mut writes, guid, modifier, empty);
                    }
                }
            }
        }
        for (guid, max) in &in_use {
            if let Some(max) = max {
                let high = self.learned.mft_high_water.entry(*guid).or_insert(*max);
                *high = (*high).max(*max);
            }
        }
        info!(
            mlids = trees.iter().filter(|(_, t)| t.root.is_some()).count(),
            blocks = writes.len(),
            "{} multicast forwarding tables",
            self.logged("programming", "would program")
        );
        let pending = writes.pending();
        self.mft_writes = writes;
        for index in pending {
            self.plan_write(TableKind::Mft, index);
        }
        self.program_mft_tops(&mfts.tops, &guids);
    }

    /// One MFT block to write. An update after a join leaves alone the blocks it does not
    /// change, as the switch was last seen to hold them (a heavy sweep reads them all back
    /// instead).
    fn plan_mft(
        &self,
        writes: &mut Writes,
        guid: u64,
        modifier: MftModifier,
        table: MulticastForwardingTableRepr,
    ) {
        let held = self.learned.mfts.get(&(guid, u32::from(modifier)));
        let write = mft_write(guid, modifier, table);
        if self.multicast_only && held == Some(&table) {
            writes.push_held(write);
        } else {
            writes.push(write);
        }
    }

    /// SwitchInfo.MulticastFDBTop on switches whose port 0 has IsMulticastFDBTopSupported,
    /// with `use_mfttop` (`mcast_mgr_set_mfttop`): the last MLID of the highest block the
    /// switch was ever given, 0xBFFF before it was given one.
    fn program_mft_tops(&mut self, tops: &BTreeMap<ibqos_fabric::NodeId, u16>, guids: &[u64]) {
        if !self.config.use_mfttop {
            return;
        }
        for id in tops.keys() {
            let guid = guids[id.0 as usize];
            let Some(node) = self.subnet.nodes.get(&guid) else {
                continue;
            };
            let supported = node.ports.get(&0).is_some_and(|p| {
                p.info
                    .capability_mask
                    .contains(CapabilityMask::IS_MULTICAST_FDB_TOP_SUPPORTED)
            });
            let Some(held) = node.switch.filter(|_| supported) else {
                continue;
            };
            let top = self
                .learned
                .mft_high_water
                .get(&guid)
                .map_or(MftModifier::FIRST_MLID - 1, |&block| {
                    MftModifier::FIRST_MLID + (block + 1) * MftModifier::MLIDS_PER_BLOCK - 1
                });
            if held.multicast_fdb_top == top {
                continue;
            }
            let mut switch = held;
            switch.multicast_fdb_top = top;
            // Leave PortStateChange alone: writing 1 would clear it.
            switch.port_state_change = false;
            self.set_switch_info(guid, held, switch);
        }
    }
}

/// One MFT block's Set, by way of the switch's port 0.
fn mft_write(guid: u64, modifier: MftModifier, table: MulticastForwardingTableRepr) -> TableWrite {
    TableWrite {
        node: Guid(guid),
        via: PortKey::new(guid, 0),
        block: TableBlock::Mft(table),
        modifier: TableModifier::Mft(modifier),
        ports: Ports::One(PortKey::new(guid, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sweep::{Learned, SweepMode};
    use crate::testing::{Bare, Fabric, config, settings, sweep};
    use ibqos_mad::{AttributeId, Method};

    const MLID: u16 = 0xc000;

    /// A sweep in `mode` with `members` (node names, port 1) on MLID 0xc000.
    fn with_members(
        fabric: &mut Fabric,
        mode: SweepMode,
        members: &[&str],
        learned: Learned,
    ) -> Sweep {
        let guids = members
            .iter()
            .map(|name| Guid(fabric.guid_of(fabric.port_of(name, 1))));
        let config = super::super::SweepConfig {
            multicast: [(MLID, guids.collect())].into(),
            ..config(&settings(""), mode)
        };
        sweep(fabric, config, learned)
    }

    /// Whether the switch a member hangs off forwards the MLID to it.
    fn reaches(fabric: &Fabric, member: &str) -> bool {
        let topology = fabric.emulator.topology();
        let (switch_port, _) = topology
            .links()
            .map(|(a, b)| {
                if topology.node(a.node).unwrap().kind == ibqos_fabric::NodeKind::Switch {
                    (a, b)
                } else {
                    (b, a)
                }
            })
            .find(|(_, end)| *end == fabric.port_of(member, 1))
            .unwrap();
        let ports = fabric.emulator.mft_ports(switch_port.node, MLID).unwrap();
        ports.contains(&switch_port.port)
    }

    #[test]
    fn an_mlid_reaches_its_members_and_a_member_gone_is_cleared_next_sweep() {
        let mut fabric = Fabric::two_switch();
        let forced = with_members(
            &mut fabric,
            SweepMode::Forced,
            &["H1", "H3"],
            Learned::default(),
        );
        assert_eq!(*forced.phase(), Phase::SubnetUp);
        let reached = ["H1", "H2", "H3", "H4"].map(|member| reaches(&fabric, member));
        assert_eq!(reached, [true, false, true, false]);
        assert!(forced.verified_mfts().count() > 0);
        assert_eq!(forced.mft_counts().failed, 0);
        // H3 left: the diff sweep still sends its switch's block (the high water), now without it.
        let learned = forced.learned().clone();
        let diff = with_members(&mut fabric, SweepMode::Diff, &["H1"], learned);
        assert_eq!(*diff.phase(), Phase::SubnetUp);
        assert!(!reaches(&fabric, "H3"));
        assert!(
            diff.changes()
                .iter()
                .any(|c| c.attribute == AttributeId::MulticastForwardingTable)
        );
    }

    #[test]
    fn a_multicast_update_sets_only_multicast_forwarding_tables() {
        let mut fabric = Fabric::two_switch();
        let forced = with_members(&mut fabric, SweepMode::Forced, &["H1"], Learned::default());
        let before = fabric.sent.len();
        let guids = ["H1", "H4"].map(|name| Guid(fabric.guid_of(fabric.port_of(name, 1))));
        let update = super::super::SweepConfig {
            multicast: [(MLID, guids.into())].into(),
            ..config(&settings(""), SweepMode::Forced)
        };
        let update =
            Sweep::update_multicast(update, forced.learned().clone(), &forced, fabric.now());
        let mut bare = Bare(update);
        fabric.drive(&mut bare, |bare| bare.0.is_done());
        assert_eq!(*bare.0.phase(), Phase::SubnetUp);
        assert!(reaches(&fabric, "H4"));
        let smps = fabric.smps_sent_since(before);
        assert!(!smps.is_empty());
        let kinds: BTreeSet<_> = smps
            .iter()
            .map(|smp| (smp.method, smp.attribute_id))
            .collect();
        assert_eq!(
            kinds,
            [(Method::Set, AttributeId::MulticastForwardingTable)].into()
        );
    }
}
