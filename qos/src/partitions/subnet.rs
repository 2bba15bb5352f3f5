//! The partitions of one subnet: the definitions applied to the ports the SM found, as
//! `osm_prtn_make_partitions` (`osm_prtn.c:386-449`) applies them at each heavy sweep. The
//! result is what the partition manager programs into P_Key tables and what the SA answers
//! partition questions from.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use ibqos_mad::{Gid, NodeType};

use super::{
    DEFAULT_PKEY, GroupFlags, IPOIB_QKEY, IPV4_BROADCAST, McGroup, Member, Members, Membership,
    Partition, Partitions,
};

/// The options of opensm.conf that change how partitions apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PartitionOptions {
    /// `allow_both_pkeys`: a port may be a full and a limited member of one partition.
    pub allow_both_pkeys: bool,
    /// `qos`: without it a partition's `sl=` is forced to 0 (`partition_create`,
    /// `osm_prtn_config.c:234-241`).
    pub qos: bool,
}

/// A port the partitions can name: an end port (a CA or router port, a switch's port 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndPort {
    pub guid: u64,
    pub node_type: NodeType,
}

/// One partition as it stands on the subnet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubnetPartition {
    /// The first definition's name (OpenSM names an unnamed one by its P_Key, `%04x`).
    pub name: String,
    /// The low 15 bits.
    pub pkey: u16,
    /// The last definition's `sl=`, 0 without QoS.
    pub sl: u8,
    /// Port GUIDs of the full members.
    pub full: BTreeSet<u64>,
    /// Port GUIDs of the limited members.
    pub limited: BTreeSet<u64>,
}

/// A multicast group a partition's definition creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionGroup {
    /// The low 15 bits of the partition's P_Key.
    pub pkey: u16,
    pub group: McGroup,
}

impl SubnetPartition {
    fn new(name: &str, pkey: u16) -> SubnetPartition {
        let name = if name.is_empty() {
            format!("{pkey:04x}")
        } else {
            name.to_string()
        };
        SubnetPartition {
            name,
            pkey,
            sl: 0,
            full: BTreeSet::new(),
            limited: BTreeSet::new(),
        }
    }

    /// The P_Keys `port` holds for this partition, limited first (OpenSM queues a partition's
    /// limited members before its full ones, `osm_pkey_mgr_process`).
    pub fn pkeys_of(&self, port: u64) -> impl Iterator<Item = u16> + '_ {
        let limited = self.limited.contains(&port).then_some(self.pkey);
        let full = self.full.contains(&port).then_some(self.pkey | 0x8000);
        limited.into_iter().chain(full)
    }
}

/// Every partition of a subnet, in OpenSM's table order, and the P_Keys its ports hold at
/// index 0 by `indx0`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SubnetPartitions {
    /// In the order of OpenSM's `prtn_pkey_tbl`: a `cl_qmap` keyed by the P_Key as it is on the
    /// wire, compared as a little-endian integer, so by the byte-swapped P_Key.
    pub partitions: Vec<SubnetPartition>,
    /// Per port GUID, the P_Key (membership bit included) an `indx0` definition puts at index 0.
    pub indx0: BTreeMap<u64, u16>,
    /// The multicast groups the definitions create, in the order OpenSM creates them, which is
    /// the order their MLIDs are given in: definitions in file order, each its IPv4 broadcast
    /// group (`ipoib`), then its `mgid=` groups. OpenSM creates them while it reads the file,
    /// so a group of a partition later dropped for having no member is here too: it takes an
    /// MLID until the partition is dropped. A partition's group created twice (the same MGID)
    /// is listed once.
    pub groups: Vec<PartitionGroup>,
}

impl SubnetPartitions {
    /// The P_Keys `port` is to hold, in the order OpenSM queues them for its table.
    pub fn pkeys_of(&self, port: u64) -> Vec<u16> {
        self.partitions
            .iter()
            .flat_map(|p| p.pkeys_of(port))
            .collect()
    }

    /// The partition with this P_Key (its low 15 bits).
    pub fn get(&self, pkey: u16) -> Option<&SubnetPartition> {
        self.partitions.iter().find(|p| p.pkey == pkey & 0x7fff)
    }

    /// The multicast groups of the partition with this P_Key (its low 15 bits), in the order
    /// they are created.
    pub fn groups_of(&self, pkey: u16) -> impl Iterator<Item = &McGroup> {
        let pkey = pkey & 0x7fff;
        self.groups
            .iter()
            .filter(move |g| g.pkey == pkey)
            .map(|g| &g.group)
    }
}

/// The IPv4 broadcast group of partition `pkey` with a definition's flags (`partition_create`,
/// `osm_prtn_config.c:243-263`): the MGID carries the full P_Key, the Q_Key defaults to
/// IPoIB's, and the header's scopes do not apply to it (OpenSM builds its flags afresh).
pub fn broadcast_group(pkey: u16, flags: &GroupFlags) -> McGroup {
    let pkey_bits = u128::from(pkey | 0x8000) << 80;
    let mgid = (IPV4_BROADCAST & !(0xffff << 80)) | pkey_bits;
    McGroup {
        mgid: Gid(mgid),
        flags: GroupFlags {
            scope_mask: 0,
            q_key: if flags.q_key == 0 {
                IPOIB_QKEY
            } else {
                flags.q_key
            },
            ..*flags
        },
    }
}

/// Builds a subnet's partitions as OpenSM does: the Default partition first (every port a
/// full member with its broadcast group when there are no definitions; otherwise every port
/// limited and the SM's port full), then each definition in order, then partitions without a
/// member dropped. `definitions` is `None` when OpenSM has no usable partitions.conf.
pub fn resolve(
    definitions: Option<&Partitions>,
    ports: &[EndPort],
    sm_port: Option<u64>,
    options: PartitionOptions,
) -> SubnetPartitions {
    let mut builder = Builder {
        ports,
        known: ports.iter().map(|p| p.guid).collect(),
        sm_port,
        options,
        partitions: Vec::new(),
        indx0: BTreeMap::new(),
        groups: Vec::new(),
        generated: 0,
    };
    let default = match definitions {
        None => Partition::opensm_default(),
        Some(_) => Partition::implicit_default(),
    };
    builder.define(&default);
    for definition in definitions.iter().flat_map(|d| &d.partitions) {
        builder.define(definition);
    }
    let mut partitions = builder.partitions;
    partitions.retain(|p| !p.full.is_empty() || !p.limited.is_empty());
    partitions.sort_by_key(|p| p.pkey.swap_bytes());
    SubnetPartitions {
        partitions,
        indx0: builder.indx0,
        groups: builder.groups,
    }
}

struct Builder<'a> {
    ports: &'a [EndPort],
    /// The GUIDs of `ports`: a member is looked up once per definition that names it.
    known: HashSet<u64>,
    sm_port: Option<u64>,
    options: PartitionOptions,
    partitions: Vec<SubnetPartition>,
    indx0: BTreeMap<u64, u16>,
    groups: Vec<PartitionGroup>,
    /// `global_pkey_counter`: the last P_Key generated for a definition without one.
    generated: u16,
}

impl Builder<'_> {
    /// One definition (`partition_create`, then `partition_add_port` per member).
    fn define(&mut self, definition: &Partition) {
        let Some(index) = self.make_new(&definition.name, definition.pkey.unwrap_or(0)) else {
            return;
        };
        let sl = if self.options.qos {
            definition.flags.sl
        } else {
            0
        };
        let partition = &mut self.partitions[index];
        partition.sl = sl;
        let pkey = partition.pkey;
        if definition.ipoib {
            let flags = GroupFlags {
                sl,
                ..definition.flags
            };
            self.add_group(pkey, broadcast_group(pkey, &flags));
        }
        for group in &definition.mcgroups {
            self.add_group(pkey, *group);
        }
        for member in &definition.members {
            self.add_member(index, member, definition.indx0);
        }
    }

    /// A group of partition `pkey`, unless that partition has it already.
    fn add_group(&mut self, pkey: u16, group: McGroup) {
        let created = PartitionGroup { pkey, group };
        let same = |g: &PartitionGroup| g.pkey == pkey && g.group.mgid == group.mgid;
        if !self.groups.iter().any(same) {
            self.groups.push(created);
        }
    }

    /// `osm_prtn_make_new` (`osm_prtn.c:324-356`): the partition with this P_Key (its low 15
    /// bits), or without one the partition of that name, or a new one with a generated P_Key.
    fn make_new(&mut self, name: &str, pkey: u16) -> Option<usize> {
        let mut pkey = pkey & 0x7fff;
        if pkey == 0 {
            if !name.is_empty()
                && let Some(index) = self.partitions.iter().position(|p| p.name == name)
            {
                return Some(index);
            }
            pkey = self.generate()?;
        }
        if let Some(index) = self.partitions.iter().position(|p| p.pkey == pkey) {
            return Some(index);
        }
        self.partitions.push(SubnetPartition::new(name, pkey));
        Some(self.partitions.len() - 1)
    }

    /// `generate_pkey` (`osm_prtn.c:294-306`): the next unused P_Key from 0x0001, below 0x7ffe.
    fn generate(&mut self) -> Option<u16> {
        while self.generated < DEFAULT_PKEY - 1 {
            self.generated += 1;
            let candidate = self.generated;
            if !self.partitions.iter().any(|p| p.pkey == candidate) {
                return Some(candidate);
            }
        }
        None
    }

    /// `partition_add_port` / `partition_add_all` (`osm_prtn_config.c:446-518`).
    fn add_member(&mut self, index: usize, member: &Member, indx0: bool) {
        let guids: Vec<u64> = match member.ports {
            Members::All => self.ports.iter().map(|p| p.guid).collect(),
            Members::AllCas => self.of_type(NodeType::Ca),
            Members::AllSwitches => self.of_type(NodeType::Switch),
            Members::AllRouters => self.of_type(NodeType::Router),
            Members::SmPort => self.sm_port.into_iter().collect(),
            Members::Port(guid) => vec![guid.0],
        };
        let both = self.options.allow_both_pkeys;
        let membership = member.membership;
        if both && membership != Membership::Both {
            // `manage_membership_change`: the other membership an earlier item gave these
            // ports goes.
            let partition = &mut self.partitions[index];
            let other = match membership {
                Membership::Limited => &mut partition.full,
                _ => &mut partition.limited,
            };
            for guid in &guids {
                other.remove(guid);
            }
        }
        let full = membership != Membership::Limited;
        let limited = membership == Membership::Limited || (membership == Membership::Both && both);
        for guid in guids {
            if full {
                self.add_port(index, guid, true, indx0);
            }
            if limited {
                self.add_port(index, guid, false, indx0);
            }
        }
    }

    fn of_type(&self, node_type: NodeType) -> Vec<u64> {
        self.ports
            .iter()
            .filter(|p| p.node_type == node_type)
            .map(|p| p.guid)
            .collect()
    }

    /// `osm_prtn_add_port` (`osm_prtn.c:123-176`): a port the subnet does not have is ignored;
    /// without `allow_both_pkeys` a port is in one of the two lists only, the last one given.
    fn add_port(&mut self, index: usize, guid: u64, full: bool, indx0: bool) {
        if !self.known.contains(&guid) {
            return;
        }
        let partition = &mut self.partitions[index];
        let pkey = partition.pkey;
        if indx0 {
            self.indx0
                .insert(guid, if full { pkey | 0x8000 } else { pkey });
        } else if self.indx0.get(&guid).is_some_and(|k| k & 0x7fff == pkey) {
            self.indx0.remove(&guid);
        }
        if !self.options.allow_both_pkeys {
            partition.limited.remove(&guid);
            partition.full.remove(&guid);
        }
        if full {
            partition.full.insert(guid);
        } else {
            partition.limited.insert(guid);
        }
    }
}

#[cfg(test)]
mod tests;
