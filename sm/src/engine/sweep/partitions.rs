//! The partition phase, OpenSM's first step after discovery (`osm_pkey_mgr_process`): read the
//! P_Key table of every end port and of every switch port facing one, place the partitions'
//! P_Keys as OpenSM places them, and Set the blocks that differ, each echo checked by the table
//! writes. The enforcement it decides for switch ports travels in the link manager's PortInfo
//! Set.

use std::collections::BTreeMap;

use ibqos_mad::{AttributeId, Guid, NodeType, PKeyTableModifier, PKeyTableRepr, PortInfoRepr};
use ibqos_qos::partitions::{EndPort, PartitionOptions, Partitions, SubnetPartitions, resolve};
use tracing::{info, warn};

use super::feed::{Feed, Job};
use super::writes::{TableKind, Writes};
use super::{Op, Phase, Sweep};
use crate::engine::pkeys::{BLOCK, KeyRule, PartEnforce, PortPkeys, peer_plan, place};
use crate::engine::subnet::{PortKey, Subnet};
use crate::engine::write::{Ports, TableBlock, TableModifier, TableWrite};

/// How the partition manager runs (opensm.conf's partition options).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionConfig {
    /// The partitions.conf's definitions; `None` without a usable file.
    pub definitions: Option<Partitions>,
    pub options: PartitionOptions,
    /// `keep_pkey_indexes`: a P_Key keeps its index from sweep to sweep.
    pub keep_pkey_indexes: bool,
    /// `part_enforce` (`off` too with `no_partition_enforcement`).
    pub enforce: PartEnforce,
}

/// A port whose P_Key table the partition manager reads and writes.
#[derive(Debug, Clone, Copy)]
struct Target {
    /// The port of the node the Gets and Sets travel by.
    via: PortKey,
    /// The modifier's port field: the port on a switch, 0 on a CA or router.
    port_field: u8,
    /// Entries the port has.
    capacity: u16,
}

impl Target {
    fn blocks(self) -> u16 {
        self.capacity.div_ceil(BLOCK as u16)
    }

    fn modifier(self, block: u16) -> PKeyTableModifier {
        PKeyTableModifier {
            port: u16::from(self.port_field),
            block,
        }
    }
}

/// The ports whose P_Key tables the partition manager reads and writes: every end port (its
/// table as long as NodeInfo's PartitionCap) and every switch port facing a CA or router
/// (SwitchInfo's PartitionEnforcementCap; none when that is 0). OpenSM reads the tables of the
/// ports between switches too, which it never writes: ibqos leaves them unread, a third of the
/// SMPs of a fat tree's first sweep, and its SA has no record of them.
fn targets(subnet: &Subnet) -> BTreeMap<PortKey, Target> {
    let mut targets = BTreeMap::new();
    let faces_an_end_port = |key: PortKey| {
        subnet
            .peer(key)
            .and_then(|peer| subnet.nodes.get(&peer.node))
            .is_some_and(|peer| !peer.is_switch())
    };
    for (guid, node) in &subnet.nodes {
        let Some(switch) = node.switch.filter(|s| s.partition_enforcement_cap > 0) else {
            continue;
        };
        for &number in node.ports.keys().filter(|&&n| n != 0) {
            let key = PortKey::new(*guid, number);
            if faces_an_end_port(key) {
                targets.insert(
                    key,
                    Target {
                        via: PortKey::new(*guid, 0),
                        port_field: number,
                        capacity: switch.partition_enforcement_cap,
                    },
                );
            }
        }
    }
    for (guid, number, _) in subnet.endports() {
        let Some(node) = subnet.nodes.get(&guid) else {
            continue;
        };
        let key = PortKey::new(guid, number);
        let via = if node.is_switch() {
            PortKey::new(guid, 0)
        } else {
            key
        };
        targets.insert(
            key,
            Target {
                via,
                port_field: 0,
                capacity: node.info.partition_cap,
            },
        );
    }
    targets
}

/// The subnet's end ports as the partitions name them, and the SM's port GUID.
fn end_ports(subnet: &Subnet) -> (Vec<EndPort>, Option<u64>) {
    let ports = subnet
        .endports()
        .filter_map(|(guid, _, port)| {
            let node_type = subnet.nodes.get(&guid)?.info.node_type;
            Some(EndPort {
                guid: port.guid,
                node_type,
            })
        })
        .collect();
    let sm = subnet.sm_port.and_then(|k| subnet.port(k)).map(|p| p.guid);
    (ports, sm)
}

/// The P_Key tables of the sweep: what each port held when read, and the P_Keys placed.
#[derive(Debug, Default)]
pub(super) struct PkeyState {
    targets: BTreeMap<PortKey, Target>,
    /// Every entry of every block read (an unreadable block as zeros).
    pub(super) held: BTreeMap<PortKey, Vec<u16>>,
    /// The subnet's partitions, once resolved.
    pub(super) partitions: SubnetPartitions,
    /// The enforcement each switch port facing an end port is to run.
    pub(super) enforce: BTreeMap<PortKey, PartEnforce>,
    planned: bool,
}

impl Sweep {
    /// Reads every P_Key block of the ports partitions go to.
    pub(super) fn read_pkeys(&mut self) {
        self.phase = Phase::ProgrammingPartitions;
        let targets = targets(&self.subnet);
        let mut held = BTreeMap::new();
        let mut reads = Vec::new();
        for (key, target) in &targets {
            if self.subnet.port(target.via).is_none() {
                continue;
            }
            held.insert(*key, vec![0; usize::from(target.blocks()) * BLOCK]);
            reads.extend(
                (0..target.blocks()).map(|block| (key.node, Job::ReadPKeys { port: *key, block })),
            );
        }
        info!(
            ports = targets.len(),
            blocks = reads.len(),
            "reading P_Key tables"
        );
        self.feed = Feed::new(reads);
        self.pkeys = PkeyState {
            targets,
            held,
            ..PkeyState::default()
        };
    }

    /// The Get of block `block` of `port`'s P_Key table, by the route to the port that answers
    /// for it.
    pub(super) fn read_pkey_block(&mut self, port: PortKey, block: u16) {
        let Some(target) = self.pkeys.targets.get(&port) else {
            return;
        };
        let Some(path) = self.subnet.port(target.via).map(|p| p.path.clone()) else {
            return;
        };
        let modifier = target.modifier(block).into();
        let op = Op::ReadPKeys { port, block };
        self.scheduler
            .get_directed(port.node, &path, AttributeId::PKeyTable, modifier, op);
    }

    /// A P_Key block read.
    pub(super) fn pkeys_read(&mut self, port: PortKey, block: u16, table: PKeyTableRepr) {
        if let Some(held) = self.pkeys.held.get_mut(&port) {
            let start = usize::from(block) * BLOCK;
            if let Some(entries) = held.get_mut(start..start + BLOCK) {
                entries.copy_from_slice(&table.p_keys);
            }
        }
    }

    /// Once the tables are read: the partitions resolved on this subnet, every end port's
    /// P_Keys placed, the facing switch ports' tables and enforcement, and a Set for each block
    /// that differs from what the port holds.
    pub(super) fn program_pkeys(&mut self) {
        self.pkeys.planned = true;
        let config = &self.config.partitions;
        let (ports, sm) = end_ports(&self.subnet);
        let partitions = resolve(config.definitions.as_ref(), &ports, sm, config.options);
        let rule = self.pkey_rule();
        let mut writes = Writes::default();
        let mut enforce = BTreeMap::new();
        let targets = self.pkeys.targets.clone();
        for (key, target) in targets.iter().filter(|(_, t)| t.port_field == 0) {
            let Some(guid) = self.subnet.port(*key).map(|p| p.guid) else {
                continue;
            };
            let held = self.pkeys.held.get(key).cloned().unwrap_or_default();
            if !self.config.partitions.keep_pkey_indexes {
                self.learned.pkey_indexes.remove(key);
            }
            let indexes = self.learned.pkey_indexes.entry(*key).or_default();
            let wanted = partitions.pkeys_of(guid);
            let placed = place(
                PortPkeys {
                    wanted: &wanted,
                    held: &held,
                    indx0: partitions.indx0.get(&guid).copied(),
                    capacity: target.capacity,
                    rule,
                },
                indexes,
            );
            for pkey in &placed.left_out {
                warn!(port = ?key, pkey = format!("{pkey:#06x}"), "P_Key table full; P_Key not set (OpenSM ERR 0512)");
            }
            block_writes(*key, *target, &held, &placed.table, &mut writes);
            let switch_port = self.subnet.peer(*key).filter(|f| targets.contains_key(f));
            let is_ca = self
                .subnet
                .nodes
                .get(&key.node)
                .is_some_and(|n| n.info.node_type != NodeType::Switch);
            let (Some(facing), true) = (switch_port, is_ca) else {
                continue;
            };
            let (Some(facing_target), Some(switch)) = (
                targets.get(&facing),
                self.subnet.nodes.get(&facing.node).and_then(|n| n.switch),
            ) else {
                continue;
            };
            let Some(plan) = peer_plan(
                &placed.table,
                switch.partition_enforcement_cap,
                self.config.partitions.enforce,
            ) else {
                continue;
            };
            let facing_held = self.pkeys.held.get(&facing).cloned().unwrap_or_default();
            let mut table = facing_held.clone();
            for (block, entries) in &plan.blocks {
                let start = usize::from(*block) * BLOCK;
                if let Some(slot) = table.get_mut(start..start + BLOCK) {
                    slot.copy_from_slice(entries);
                }
            }
            if plan.enforce == PartEnforce::Off
                && self.config.partitions.enforce != PartEnforce::Off
            {
                warn!(port = ?facing, "switch port cannot hold the P_Keys of the port it faces; partition enforcement off (OpenSM ERR 0507)");
            }
            block_writes(facing, *facing_target, &facing_held, &table, &mut writes);
            enforce.insert(facing, plan.enforce);
        }
        self.pkeys.partitions = partitions;
        self.pkeys.enforce = enforce;
        self.feed = Feed::new(writes.pending_jobs(TableKind::PKey));
        writes.planned();
        self.pkey_writes = writes;
        info!(
            partitions = self.pkeys.partitions.partitions.len(),
            ports = self.pkey_writes.counts().configured,
            "{} P_Key tables",
            self.logged("programming", "would program")
        );
    }

    /// The block a P_Key Set overwrites, as read.
    pub(super) fn held_block(&self, set: &TableWrite) -> PKeyTableRepr {
        let mut p_keys = [0; BLOCK];
        if let TableModifier::PKey(m) = set.modifier
            && let Some(held) = set
                .ports
                .first()
                .and_then(|p| self.pkeys.held.get(p))
                .and_then(|h| {
                    h.get(usize::from(m.block) * BLOCK..(usize::from(m.block) + 1) * BLOCK)
                })
        {
            p_keys.copy_from_slice(held);
        }
        PKeyTableRepr { p_keys }
    }

    /// Whether the partition phase has planned its Sets (it reads first).
    pub(super) fn pkeys_planned(&self) -> bool {
        self.pkeys.planned
    }

    /// Every port's P_Key table as the ports hold it after this sweep: as read, with each Set
    /// that was echoed back as sent (or found in place) written in.
    pub fn pkey_tables(&self) -> BTreeMap<PortKey, Vec<u16>> {
        let mut tables = self.pkeys.held.clone();
        for set in self.pkey_writes.verified() {
            let (Some(port), TableBlock::PKey(block), TableModifier::PKey(m)) =
                (set.ports.first(), set.block, set.modifier)
            else {
                continue;
            };
            let start = usize::from(m.block) * BLOCK;
            if let Some(slot) = tables
                .get_mut(port)
                .and_then(|t| t.get_mut(start..start + BLOCK))
            {
                slot.copy_from_slice(&block.p_keys);
            }
        }
        tables
    }

    /// Which P_Keys count as one entry (`allow_both_pkeys`).
    pub fn pkey_rule(&self) -> KeyRule {
        KeyRule {
            allow_both_pkeys: self.config.partitions.options.allow_both_pkeys,
        }
    }

    /// The partitions this sweep resolved on the subnet.
    pub fn partitions(&self) -> &SubnetPartitions {
        &self.pkeys.partitions
    }

    /// The partition enforcement bits a port's PortInfo Set carries: those the partition
    /// manager decided for a switch port facing an end port, off on a link between switches.
    pub(super) fn enforcement(&self, key: PortKey, info: &mut PortInfoRepr, peer_is_switch: bool) {
        let enforce = match self.pkeys.enforce.get(&key) {
            Some(enforce) => *enforce,
            None if peer_is_switch => PartEnforce::Off,
            None => return,
        };
        (
            info.partition_enforcement_inbound,
            info.partition_enforcement_outbound,
        ) = enforce.bits();
    }
}

/// A write per block of `table`: verified at once where the port holds it already (OpenSM sends
/// only the blocks that differ).
fn block_writes(key: PortKey, target: Target, held: &[u16], table: &[u16], writes: &mut Writes) {
    for (block, entries) in table.chunks(BLOCK).enumerate() {
        let Ok(p_keys) = <[u16; BLOCK]>::try_from(entries) else {
            continue;
        };
        let block = block as u16;
        let write = TableWrite {
            node: Guid(key.node),
            via: target.via,
            block: TableBlock::PKey(PKeyTableRepr { p_keys }),
            modifier: TableModifier::PKey(target.modifier(block)),
            ports: Ports::One(key),
        };
        let start = usize::from(block) * BLOCK;
        if held.get(start..start + BLOCK) == Some(entries) {
            writes.push_held(write);
        } else {
            writes.push(write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::sweep::{Learned, SweepMode};
    use crate::testing::{Fabric, config, partitioned, sweep};
    use ibqos_mad::Method;

    fn holds(fabric: &Fabric, node: &str, port: u8, pkey: u16) -> bool {
        let port = fabric.port_of(node, port);
        fabric.emulator.p_keys(port).unwrap().contains(&pkey)
    }

    #[test]
    fn members_and_the_switch_ports_facing_them_get_the_partition_and_no_one_else() {
        let dir = tempfile::tempdir().unwrap();
        let mut fabric = Fabric::two_switch();
        let settings = partitioned(&fabric, &dir);
        let forced = sweep(
            &mut fabric,
            config(&settings, SweepMode::Forced),
            Learned::default(),
        );
        assert_eq!(*forced.phase(), Phase::SubnetUp);
        // (node, port, holds hosts in full)
        let cases = [
            ("H2", 1, true),
            ("H3", 1, true),
            ("H1", 1, false),
            ("H4", 1, false),
            ("S1", 2, true),
            ("S2", 1, true),
            ("S2", 2, false),
        ];
        for (node, port, member) in cases {
            assert_eq!(holds(&fabric, node, port, 0x8101), member, "{node}[{port}]");
            assert!(
                !holds(&fabric, node, port, 0x0101),
                "{node}[{port}] limited"
            );
        }
        // What the sweep says the ports hold is what they hold.
        for (key, table) in forced.pkey_tables() {
            let node = forced.subnet().nodes.get(&key.node).unwrap();
            let name = fabric
                .emulator
                .topology()
                .nodes()
                .find(|(_, n)| n.guid == node.info.node_guid);
            let (id, _) = name.unwrap();
            let held = fabric
                .emulator
                .p_keys(ibqos_fabric::PortRef::new(id, key.port))
                .unwrap();
            assert_eq!(&table[..held.len()], held, "{key:?}");
        }
        // Another sweep, forced or diff, reads them all again and finds every block in place:
        // a forced sweep too Sets only the blocks that differ, as OpenSM does.
        for mode in [SweepMode::Forced, SweepMode::Diff] {
            let before = fabric.sent.len();
            let again = sweep(
                &mut fabric,
                config(&settings, mode),
                forced.learned().clone(),
            );
            let smps = fabric.smps_sent_since(before);
            let pkey_sets = smps.iter().filter(|smp| {
                smp.method == Method::Set && smp.attribute_id == AttributeId::PKeyTable
            });
            assert_eq!(pkey_sets.count(), 0, "{mode:?}");
            assert_eq!(again.pkey_counts(), forced.pkey_counts(), "{mode:?}");
        }
    }
}
