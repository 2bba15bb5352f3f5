//! The partitions of a subnet as OpenSM 3.3.23's partitions.conf declares them: each definition
//! with its P_Key, flags, members and multicast groups, in file order. No I/O; the reader and
//! writer of the file are `ibqos-opensm`'s.
//!
//! The model keeps what OpenSM's parser (`osm_prtn_config.c:216-768`) makes of each line:
//! memberships resolved (a member without `=...` has the `defmember` of its definition), an mgid
//! group with its inherited and own flags, an IP group with its P_Key bytes and Q_Key filled in.
//! Definitions that OpenSM merges (a repeated P_Key, a repeated name without a P_Key) stay
//! apart, as written; OpenSM merges them again when it reads them back.

use ibqos_mad::{Gid, Guid};

mod subnet;

pub use subnet::{
    EndPort, PartitionGroup, PartitionOptions, SubnetPartition, SubnetPartitions, broadcast_group,
    resolve,
};

/// The default partition's P_Key (`IB_DEFAULT_PARTIAL_PKEY`, `ib_types.h:403`).
pub const DEFAULT_PKEY: u16 = 0x7fff;

/// The Q_Key of IPoIB groups that do not give one (`OSM_IPOIB_BROADCAST_MGRP_QKEY`,
/// `osm_base.h:1047`).
pub const IPOIB_QKEY: u32 = 0x0b1b;

/// The IPv4 broadcast MGID, P_Key bytes 0xffff (`osm_ipoib_broadcast_mgid`,
/// `osm_prtn_config.c:65-74`).
pub const IPV4_BROADCAST: u128 = 0xff12_401b_ffff_0000_0000_0000_ffff_ffff;

/// What a port may do in a partition (`membership_t`, `osm_prtn_config.c:59-63`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Membership {
    /// The default of every definition (`new_part_conf`, `osm_prtn_config.c:664`).
    #[default]
    Limited,
    Full,
    /// Full and limited at once; OpenSM treats it as full unless `allow_both_pkeys` is on
    /// (`partition_add_all`, `osm_prtn_config.c:448-461`).
    Both,
}

/// Which ports a member item names (`partition_add_port`, `osm_prtn_config.c:463-518`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Members {
    All,
    AllCas,
    AllSwitches,
    AllRouters,
    /// `SELF`: the SM's own port.
    SmPort,
    /// One port by its GUID (never 0); OpenSM ignores a GUID the fabric does not have.
    Port(Guid),
}

/// A member item: the ports and how they belong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Member {
    pub ports: Members,
    pub membership: Membership,
}

/// A multicast group's parameters (`struct group_flags`, `osm_prtn_config.c:76-81`), with
/// OpenSM's C widths: `mtu` and `rate` are `unsigned` and cut to 8 bits only when the group is
/// created.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GroupFlags {
    /// MTU code (IBA 15.2.5.16 encoding; 4 = 2048).
    pub mtu: u32,
    /// Rate code (3 = 10 Gb/s).
    pub rate: u32,
    /// 0-15.
    pub sl: u8,
    /// Bit n set: one group of scope n (1-15). None set: one group of link-local scope (2):
    /// OpenSM writes that scope into the MGID whatever it held (`osm_prtn_add_mcgroup`).
    pub scope_mask: u16,
    pub q_key: u32,
    pub tclass: u8,
    /// 20 bits.
    pub flow_label: u32,
}

impl Default for GroupFlags {
    /// `new_part_conf` (`osm_prtn_config.c:661-663`): SL 0, rate 3, MTU 4, the rest 0.
    fn default() -> GroupFlags {
        GroupFlags {
            mtu: 4,
            rate: 3,
            sl: 0,
            scope_mask: 0,
            q_key: 0,
            tclass: 0,
            flow_label: 0,
        }
    }
}

/// A multicast group an `mgid=` item creates (`mgroup_create`, `osm_prtn_config.c:598-649`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct McGroup {
    /// As created: an IP group (signature 0x401b or 0x601b) has its P_Key bytes set to the
    /// partition's full P_Key.
    pub mgid: Gid,
    /// The definition's flags, overridden by the item's own; an IP group's Q_Key 0 is
    /// [`IPOIB_QKEY`]. The TClass is not inherited.
    pub flags: GroupFlags,
}

/// One definition, `name[=pkey][,flag...] : members ;`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Partition {
    /// As written; empty when none is given (OpenSM then names it by its P_Key, `%04x`).
    pub name: String,
    /// As written, cut to 16 bits as OpenSM's `(uint16_t)strtoul` cuts it; OpenSM keeps the low
    /// 15 bits. `None` (or 0): OpenSM reuses the partition of the same name, or generates a
    /// P_Key from 0x0001 up (`osm_prtn_make_new`, `osm_prtn.c:324-356`).
    pub pkey: Option<u16>,
    /// `ipoib`: the definition creates the IPv4 broadcast group with its flags.
    pub ipoib: bool,
    /// `indx0`: the P_Key goes to index 0 of the P_Key tables.
    pub indx0: bool,
    /// `defmember`: the membership of members written without one.
    pub default_membership: Membership,
    /// The header's group flags (for the broadcast group, inherited by the mgid groups).
    pub flags: GroupFlags,
    pub members: Vec<Member>,
    pub mcgroups: Vec<McGroup>,
}

impl Partition {
    /// The default partition OpenSM creates without a readable partitions.conf, or when it
    /// drops one (`prtn_make_default`, `osm_prtn.c:358-384`): every port a full member, with
    /// the IPv4 broadcast group.
    pub fn opensm_default() -> Partition {
        Partition {
            name: "Default".to_string(),
            pkey: Some(DEFAULT_PKEY),
            ipoib: true,
            members: vec![Member {
                ports: Members::All,
                membership: Membership::Full,
            }],
            ..Partition::default()
        }
    }

    /// The default partition OpenSM creates before reading a partitions.conf: every port a
    /// limited member, the SM's port full, no broadcast group (`prtn_make_default` with
    /// `no_config` false). The file's own `Default` line adds to it.
    pub fn implicit_default() -> Partition {
        Partition {
            name: "Default".to_string(),
            pkey: Some(DEFAULT_PKEY),
            members: vec![
                Member {
                    ports: Members::All,
                    membership: Membership::Limited,
                },
                Member {
                    ports: Members::SmPort,
                    membership: Membership::Full,
                },
            ],
            ..Partition::default()
        }
    }
}

/// A partitions.conf's definitions, in file order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Partitions {
    pub partitions: Vec<Partition>,
}

impl Partitions {
    /// What OpenSM runs with when it has no usable partitions.conf.
    pub fn opensm_default() -> Partitions {
        Partitions {
            partitions: vec![Partition::opensm_default()],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_file_every_port_is_a_full_member_of_the_default_partition_with_ipoib() {
        let default = Partitions::opensm_default();
        let [only] = default.partitions.as_slice() else {
            panic!("one partition expected, got {default:?}");
        };
        assert_eq!(only.pkey, Some(DEFAULT_PKEY));
        assert!(only.ipoib);
        assert_eq!(
            only.members,
            [Member {
                ports: Members::All,
                membership: Membership::Full
            }]
        );
        assert_eq!((only.flags.mtu, only.flags.rate), (4, 3));
    }

    #[test]
    fn with_a_file_the_implicit_default_is_limited_but_for_the_sm() {
        let implicit = Partition::implicit_default();
        assert!(!implicit.ipoib);
        assert_eq!(implicit.members[0].membership, Membership::Limited);
        assert_eq!(implicit.members[1].ports, Members::SmPort);
    }
}
