//! Multicast groups (IBA 15.2.5.17 and o15-0.1/0.2) as OpenSM 3.3.23 keeps them
//! (osm_sa_mcmember_record.c, osm_multicast.c, osm_prtn.c): the groups the SA holds across
//! sweeps, the MCMemberRecord requests that create, join, leave and list them, the groups the
//! partitions pre-create, and traps 66 and 67 as a group's first full member joins and its last
//! one leaves.
//!
//! The OpenSM options behind these rules are at their defaults: `mcgroup_join_validation` and
//! `ipoib_mcgroup_creation_validation` on, `consolidate_ipv6_snm_req` and
//! `use_original_extended_sa_rates_only` off.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};

use ibqos_mad::sa::{
    JoinState, McMemberRecordMask as M, McMemberRecordRepr, Mtu, Rate, Record, Selector,
};
use ibqos_mad::{Gid, Guid, Method, PortInfoRepr, Status};
use ibqos_qos::partitions::McGroup;
use tracing::{debug, warn};

use super::db::{SaDb, match_pkey};
use super::inform::{TRAP_MGID_CREATED, TRAP_MGID_DELETED};
use super::path::active_rate;
use super::{Query, Records, SaConfig};
use crate::engine::subnet::PortKey;
use crate::engine::sweep::MulticastMembers;

/// What a Set or Delete must name: the group, the port, and how it joins or leaves
/// (`JOIN_MC_COMP_MASK`).
const JOIN_MASK: u64 = M::MGID.0 | M::PORT_GID.0 | M::JOIN_STATE.0;
/// What a join must name to create the group it names (`REQUIRED_MC_CREATE_COMP_MASK`).
const CREATE_MASK: u64 =
    JOIN_MASK | M::Q_KEY.0 | M::TCLASS.0 | M::P_KEY.0 | M::FLOW_LABEL.0 | M::SL.0;
/// What a partition's group is created with (`osm_prtn_add_mcgroup`): its MTU and rate, which
/// the SA is not to choose.
const PARTITION_GROUP_MASK: u64 = M::MTU_SELECTOR.0 | M::MTU.0 | M::RATE_SELECTOR.0 | M::RATE.0;
/// The first multicast LID (IBA 4.1.2).
const FIRST_MLID: u16 = 0xc000;
/// The link-local multicast scope (IBA 4.1.1), OpenSM's for the groups it names itself.
const LINK_LOCAL: u8 = 2;
/// MGID signatures (bytes 2-3): IPv4 and IPv6 over IB (RFC 4391), and SA-assigned.
const IPV4_SIGNATURE: u16 = 0x401b;
const IPV6_SIGNATURE: u16 = 0x601b;
const SA_SIGNATURE: u16 = 0xa01b;
/// How many MGIDs `build_new_mgid` tries before giving up.
const MGID_ATTEMPTS: u32 = 1000;
/// A byte of MTU, rate or packet lifetime with the selector "exactly" in its top bits.
const EXACTLY: u8 = 2 << 6;

/// A trap about a group for the subscribers: 66 (created) or 67 (deleted), the group's MGID,
/// and its P_Key, which a subscriber must hold to hear of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct GroupNotice {
    pub trap: u16,
    pub mgid: Gid,
    pub p_key: u16,
}

/// One port's membership of a group (OpenSM's `osm_mcm_alias_guid_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
    /// The PortGID it joined with.
    port_gid: Gid,
    join_state: JoinState,
    /// Another port of the partition joined it (the requester was not the port).
    proxy_join: bool,
}

/// One group (OpenSM's `osm_mgrp_t`).
#[derive(Debug, Clone)]
struct Group {
    /// The group's record (`mcmember_rec`): the request that created it, with the MGID, MLID,
    /// MTU and rate settled and the MTU, rate and lifetime selectors "exactly". Its PortGID,
    /// JoinState and ProxyJoin are the creator's; only a query of the group itself shows the
    /// JoinState (and only to a trusted requester).
    record: McMemberRecordRepr,
    /// The partition (P_Key base) that pre-created it: a well-known group, which outlives its
    /// last member and goes with its partition.
    partition: Option<u16>,
    /// By port GUID.
    members: BTreeMap<u64, Member>,
}

impl Group {
    /// OpenSM's `full_members`: the members with FullMember or SendOnlyFullMember.
    fn full_members(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.join_state.is_full())
            .count()
    }

    fn well_known(&self) -> bool {
        self.partition.is_some()
    }
}

/// The SA's multicast groups.
#[derive(Debug, Default)]
pub(super) struct Groups {
    /// By MGID, in OpenSM's order (a map compared by `memcmp`: the GIDs' numeric order).
    groups: BTreeMap<u128, Group>,
    /// `build_new_mgid`'s counter: a `static` in OpenSM, so never reset while it runs.
    mgid_counter: u32,
    /// Some MLID's members changed since the last [`take_changed`](Groups::take_changed).
    changed: bool,
    /// Traps to report.
    notices: Vec<GroupNotice>,
}

impl Groups {
    /// An MCMemberRecord request (`osm_mcmr_rcv_process`): Set joins (creating the group if it
    /// must), Delete leaves, Get and GetTable list.
    pub fn answer(
        &mut self,
        db: &SaDb,
        config: &SaConfig,
        query: &Query<'_>,
    ) -> Result<Records, Status> {
        let mask = query.component_mask;
        let change = matches!(query.method, Method::Set | Method::Delete);
        if !change && !matches!(query.method, Method::Get | Method::GetTable) {
            return Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED);
        }
        let request =
            McMemberRecordRepr::parse_bytes(query.template).map_err(|_| Status::SA_REQ_INVALID)?;
        if change && mask & JOIN_MASK != JOIN_MASK {
            debug!(
                mask,
                "MCMemberRecord Set/Delete without MGID, PortGID and JoinState (OpenSM ERR 1B18/1B20)"
            );
            return Err(Status::SA_REQ_INSUFFICIENT_COMPONENTS);
        }
        if !rate_and_mtu_valid(mask, &request) {
            return Err(Status::SA_REQ_INVALID);
        }
        let mut records = Records::new(McMemberRecordRepr::SIZE);
        match query.method {
            Method::Set => records.push(&self.join(db, config, query.requester, mask, request)?),
            Method::Delete => records.push(&self.leave(db, config, query.requester, request)?),
            _ => self.query(db, query, &request, &mut records),
        }
        Ok(records)
    }

    /// A join, creating the group when it does not exist (`mcmr_rcv_join_mgrp`); the answer
    /// is the request with the group's parameters and the port's JoinState after the join.
    fn join(
        &mut self,
        db: &SaDb,
        config: &SaConfig,
        requester: PortKey,
        mask: u64,
        request: McMemberRecordRepr,
    ) -> Result<McMemberRecordRepr, Status> {
        check_prefix(config, request.port_gid)?;
        let guid = request.port_gid.interface_id();
        let Some((port, info)) = db
            .endport_of_guid(guid)
            .and_then(|key| Some((key, &db.port(key)?.info)))
        else {
            debug!(guid = %Guid(guid), "join of an unknown port");
            return Err(Status::SA_REQ_INVALID);
        };
        let proxy = port != requester;
        if proxy && !db.share_pkey(port, requester) {
            debug!(guid = %Guid(guid), "proxy join by a port sharing no partition with it");
            return Err(Status::SA_REQ_INVALID);
        }
        if mask & M::P_KEY.0 != 0 && request.p_key & 0x7fff == 0 {
            return Err(Status::SA_REQ_INVALID);
        }
        let join_state = request.join_state;
        let mut mgid = request.mgid.0;
        let created = match self.groups.get(&mgid) {
            None if !join_state.is_full() => {
                debug!(mgid = %request.mgid, "create without a full JoinState (OpenSM ERR 1B10)");
                return Err(Status::SA_REQ_INVALID);
            }
            None if mask & CREATE_MASK != CREATE_MASK => {
                debug!(mgid = %request.mgid, mask, "too few components to create (OpenSM ERR 1B11)");
                return Err(Status::SA_REQ_INSUFFICIENT_COMPONENTS);
            }
            None => {
                mgid = self.create(db, config, mask, &request, Some(info))?;
                true
            }
            Some(group) if !other_fields_match(mask, &request, &group.record) => {
                debug!(mgid = %request.mgid, "join with components the group lacks (OpenSM ERR 1B1A)");
                return Err(Status::SA_REQ_INVALID);
            }
            Some(_) => false,
        };
        let group = &self.groups[&mgid];
        let refusal = if !more_fields_match(mask, &request, &group.record)
            || !port_fits(info, &group.record)
            || join_state == JoinState::NONE
        {
            Some("MTU, rate or JoinState (OpenSM ERR 1B12)")
        } else if !db.has_pkey(port, group.record.p_key) {
            Some("port outside the group's partition (OpenSM ERR 1B14)")
        } else if !created && !may_modify(db, group, guid, requester) {
            Some("modification of another port's membership (OpenSM ERR 1B13)")
        } else {
            None
        };
        if let Some(reason) = refusal {
            debug!(mgid = %group.record.mgid, guid = %Guid(guid), reason, "join refused");
            if created {
                self.cleanup(mgid);
            }
            return Err(Status::SA_REQ_INVALID);
        }
        let group_record = group.record;
        let state = self.add_member(mgid, guid, request.port_gid, join_state, proxy);
        Ok(McMemberRecordRepr {
            mgid: group_record.mgid,
            join_state: state,
            ..answer_of(&request, &group_record)
        })
    }

    /// A leave (`mcmr_rcv_leave_mgrp`, `validate_delete`): the port must be a member, hold
    /// every state it leaves and at least one, and be allowed to change the membership. The
    /// answer is the request with the port's JoinState after the leave.
    fn leave(
        &mut self,
        db: &SaDb,
        config: &SaConfig,
        requester: PortKey,
        request: McMemberRecordRepr,
    ) -> Result<McMemberRecordRepr, Status> {
        check_prefix(config, request.port_gid)?;
        let mgid = request.mgid.0;
        let guid = request.port_gid.interface_id();
        let leaving = request.join_state;
        let Some(group) = self.groups.get(&mgid) else {
            debug!(mgid = %request.mgid, "leave of a group that does not exist");
            return Err(Status::SA_REQ_INVALID);
        };
        let held = group.members.get(&guid).map(|m| m.join_state);
        let valid = held.is_some_and(|held| {
            held.0 & leaving.0 != 0 && leaving.without(held) == JoinState::NONE
        }) && may_modify(db, group, guid, requester);
        if !valid {
            debug!(mgid = %request.mgid, guid = %Guid(guid), "invalid leave (OpenSM ERR 1B25)");
            return Err(Status::SA_REQ_INVALID);
        }
        let scope = group.record.scope;
        let state = self.remove_member(mgid, guid, leaving);
        Ok(McMemberRecordRepr {
            scope,
            join_state: state,
            ..exactly(request)
        })
    }

    /// The records a query matches (`mcmr_query_mgrp`, `mcmr_by_comp_mask`), group by group in
    /// MGID order, among the groups whose partition the requester is in: with PortGID in the
    /// mask, that member's record; for a trusted requester without it, one per member whose
    /// scope and JoinState match; otherwise the group's own record. An untrusted requester
    /// sees no PortGID, JoinState or ProxyJoin.
    fn query(
        &self,
        db: &SaDb,
        query: &Query<'_>,
        request: &McMemberRecordRepr,
        records: &mut Records,
    ) {
        let mask = query.component_mask;
        let named = |bits: M| mask & bits.0 != 0;
        let state_mask =
            if named(M::SCOPE) { 0xf0 } else { 0 } | if named(M::JOIN_STATE) { 0x0f } else { 0 };
        let scope_state = |r: &McMemberRecordRepr| (r.scope << 4 | r.join_state.0) & state_mask;
        let wanted = scope_state(request);
        for group in self.groups.values() {
            let g = &group.record;
            if (named(M::MGID) && request.mgid != g.mgid)
                || (named(M::MLID) && request.mlid != g.mlid)
                || !db.has_pkey(query.requester, g.p_key)
                || !other_fields_match(mask, request, g)
                || (named(M::PROXY_JOIN) && request.proxy_join != g.proxy_join)
                || !more_fields_match(mask, request, g)
            {
                continue;
            }
            let as_member = |m: &Member| McMemberRecordRepr {
                port_gid: m.port_gid,
                join_state: m.join_state,
                proxy_join: m.proxy_join,
                ..*g
            };
            let found: Vec<McMemberRecordRepr> = if named(M::PORT_GID) {
                let guid = request.port_gid.interface_id();
                group
                    .members
                    .get(&guid)
                    .map(as_member)
                    .into_iter()
                    .collect()
            } else if query.trusted {
                // The members' map is keyed by GUID as OpenSM's `cl_qmap` is.
                let mut members: Vec<(&u64, &Member)> = group.members.iter().collect();
                members.sort_by_key(|(guid, _)| Guid(**guid).opensm_order());
                members.into_iter().map(|(_, m)| as_member(m)).collect()
            } else {
                vec![McMemberRecordRepr {
                    port_gid: Gid(0),
                    proxy_join: false,
                    ..*g
                }]
            };
            for mut record in found.into_iter().filter(|r| scope_state(r) == wanted) {
                if !query.trusted {
                    record.port_gid = Gid(0);
                    record.join_state = JoinState::NONE;
                    record.proxy_join = false;
                }
                records.push(&record);
            }
        }
    }

    /// Creates a group (`mcmr_rcv_create_new_mgrp`) for `request`, on behalf of the joining
    /// port (`None` for a partition's group): an MGID of the SA's if it names none (else a
    /// valid one), the MTU and rate the port can take, and a free MLID. Returns its MGID.
    fn create(
        &mut self,
        db: &SaDb,
        config: &SaConfig,
        mask: u64,
        request: &McMemberRecordRepr,
        port: Option<&PortInfoRepr>,
    ) -> Result<u128, Status> {
        let mut record = *request;
        if request.mgid == Gid(0) {
            record.mgid = self
                .new_mgid(mask, request, config.subnet_prefix)
                .ok_or_else(|| {
                    warn!("no free MGID after {MGID_ATTEMPTS} tries (OpenSM ERR 1B23)");
                    Status::SA_NO_RESOURCES
                })?;
        } else {
            self.check_requested_mgid(mask, request)?;
        }
        if !realize(mask, &mut record, port, db.min_port_mtu_cap()) {
            debug!(mgid = %record.mgid, "MTU or rate not realizable (OpenSM ERR 1B26)");
            return Err(Status::SA_REQ_INVALID);
        }
        record.mlid = self
            .free_mlid(request.mlid, db.max_mcast_lid())
            .ok_or_else(|| {
                warn!(mgid = %record.mgid, "no free MLID (OpenSM ERR 1B19)");
                Status::SA_NO_RESOURCES
            })?;
        let record = exactly(record);
        debug!(mgid = %record.mgid, mlid = record.mlid, "multicast group created");
        self.groups.insert(
            record.mgid.0,
            Group {
                record,
                partition: None,
                members: BTreeMap::new(),
            },
        );
        Ok(record.mgid.0)
    }

    /// An MGID of the SA's own (`build_new_mgid`): `ff1S:a01b` with the requested scope (else
    /// link-local), then the subnet prefix with its last two bytes and the next two overwritten
    /// by a counter, in the x86 byte order OpenSM copies it in; the first free of 1000 tries.
    fn new_mgid(&mut self, mask: u64, request: &McMemberRecordRepr, prefix: u64) -> Option<Gid> {
        let scope = if mask & M::SCOPE.0 != 0 {
            request.scope
        } else {
            LINK_LOCAL
        };
        let mut bytes = request.mgid.to_bytes();
        bytes[..4].copy_from_slice(&[0xff, 0x10 | scope, 0xa0, 0x1b]);
        bytes[4..12].copy_from_slice(&prefix.to_be_bytes());
        for _ in 0..MGID_ATTEMPTS {
            bytes[10..14].copy_from_slice(&self.mgid_counter.to_le_bytes());
            self.mgid_counter = self.mgid_counter.wrapping_add(1);
            let mgid = Gid::from_bytes(bytes);
            if !self.groups.contains_key(&mgid.0) {
                return Some(mgid);
            }
        }
        None
    }

    /// A requested MGID must be valid (`validate_requested_mgid`), and an IPoIB one other than
    /// the IPv4 broadcast group needs its partition's broadcast group, whose components it
    /// must match (osm_sa_mcmember_record.c:856-900).
    fn check_requested_mgid(&self, mask: u64, request: &McMemberRecordRepr) -> Result<(), Status> {
        let mgid = request.mgid;
        if !valid_requested_mgid(mgid) {
            debug!(%mgid, "invalid MGID (OpenSM ERR 1B01/1B28/1B24)");
            return Err(Status::SA_REQ_INVALID);
        }
        let signature = signature(mgid);
        let broadcast = ipv4_broadcast_of(mgid);
        if !matches!(signature, IPV4_SIGNATURE | IPV6_SIGNATURE) || mgid == broadcast {
            return Ok(());
        }
        match self.groups.get(&broadcast.0) {
            None => {
                debug!(%mgid, %broadcast, "IPoIB group without its broadcast group (OpenSM ERR 1B1B)");
                Err(Status::SA_REQ_INVALID)
            }
            Some(group) if !other_fields_match(mask, request, &group.record) => {
                debug!(%mgid, "IPoIB group unlike its broadcast group (OpenSM ERR 1B1C)");
                Err(Status::SA_REQ_INVALID)
            }
            Some(_) => Ok(()),
        }
    }

    /// The MLID for a new group (`get_new_mlid`): the requested one if it is a multicast LID
    /// the switches have room for and no group has, else the lowest free one.
    fn free_mlid(&self, requested: u16, max_mlid: u16) -> Option<u16> {
        let used: BTreeSet<u16> = self.groups.values().map(|g| g.record.mlid).collect();
        let free = |mlid: &u16| !used.contains(mlid);
        Some(requested)
            .filter(|mlid| (FIRST_MLID..=max_mlid).contains(mlid) && free(mlid))
            .or_else(|| (FIRST_MLID..=max_mlid).find(free))
    }

    /// Adds `state` to a port's membership, or makes it a member (`osm_mgrp_add_port`), and
    /// returns its JoinState after. The first full member announces the group (trap 66).
    fn add_member(
        &mut self,
        mgid: u128,
        guid: u64,
        port_gid: Gid,
        state: JoinState,
        proxy_join: bool,
    ) -> JoinState {
        let Some(group) = self.groups.get_mut(&mgid) else {
            return JoinState::NONE;
        };
        let (before, after) = match group.members.entry(guid) {
            Entry::Occupied(mut member) => {
                let before = member.get().join_state;
                member.get_mut().join_state |= state;
                (before, member.get().join_state)
            }
            Entry::Vacant(slot) => {
                slot.insert(Member {
                    port_gid,
                    join_state: state,
                    proxy_join,
                });
                self.changed = true;
                (JoinState::NONE, state)
            }
        };
        if state.is_full() && !before.is_full() && group.full_members() == 1 {
            self.notices.push(GroupNotice {
                trap: TRAP_MGID_CREATED,
                mgid: group.record.mgid,
                p_key: group.record.p_key,
            });
        }
        after
    }

    /// Takes `leaving` from a port's membership (`osm_mgrp_remove_port`) and returns its
    /// JoinState after: kept while it is still full, or still something with another full
    /// member in the group; otherwise the port is no member. The last full member to go
    /// announces the group's end (trap 67) and empties it, and a group no partition keeps is
    /// deleted.
    fn remove_member(&mut self, mgid: u128, guid: u64, leaving: JoinState) -> JoinState {
        let Some(group) = self.groups.get_mut(&mgid) else {
            return JoinState::NONE;
        };
        let Some(before) = group.members.get(&guid).map(|m| m.join_state) else {
            return JoinState::NONE;
        };
        let after = before.without(leaving);
        let full_members = group.full_members();
        // OpenSM compares the count with the FullMember bit alone, not SendOnlyFullMember.
        let others_full = full_members > usize::from(before.0 & JoinState::FULL.0);
        let kept = after.contains(JoinState::FULL) || (after != JoinState::NONE && others_full);
        let state = if kept {
            if let Some(member) = group.members.get_mut(&guid) {
                member.join_state = after;
            }
            after
        } else {
            group.members.remove(&guid);
            self.changed = true;
            JoinState::NONE
        };
        if before.is_full() && !after.is_full() && full_members == 1 {
            self.notices.push(GroupNotice {
                trap: TRAP_MGID_DELETED,
                mgid: group.record.mgid,
                p_key: group.record.p_key,
            });
            self.cleanup(mgid);
        }
        state
    }

    /// A group without full members loses its members, and unless it is well-known, itself
    /// (`osm_mgrp_cleanup`).
    fn cleanup(&mut self, mgid: u128) {
        let Some(group) = self.groups.get_mut(&mgid) else {
            return;
        };
        if group.full_members() > 0 {
            return;
        }
        if !group.members.is_empty() {
            group.members.clear();
            self.changed = true;
        }
        if !group.well_known() {
            self.groups.remove(&mgid);
        }
    }

    /// A new snapshot, as OpenSM's partition manager takes it. Members whose port left the fabric
    /// leave every group (the drop manager's `osm_mgrp_delete_port`, JoinState 0xF). Every group
    /// the definitions create is found or created and well-known, in the order they create them
    /// (`osm_prtn_add_mcgroup`, through `__create_mgrp`: one per scope of the group, or
    /// link-local). That is the order in which a new group takes the lowest free MLID. Then the
    /// groups of partitions that are gone, or dropped for having no member, are no longer
    /// well-known (`osm_prtn_delete`, after the file is read). They leave with their MLIDs unless a
    /// port joined them.
    pub fn on_snapshot(&mut self, db: &SaDb, config: &SaConfig) {
        let departed: Vec<(u128, u64)> = self
            .groups
            .iter()
            .flat_map(|(&mgid, group)| group.members.keys().map(move |&guid| (mgid, guid)))
            .filter(|&(_, guid)| db.endport_of_guid(guid).is_none())
            .collect();
        for (mgid, guid) in departed {
            self.remove_member(mgid, guid, JoinState::ALL);
        }
        for created in &db.subnet_partitions().groups {
            for scope in scopes(created.group.flags.scope_mask) {
                self.add_partition_group(db, config, created.pkey, &created.group, scope);
            }
        }
        let orphans: Vec<u128> = self
            .groups
            .iter()
            .filter(|(_, g)| g.partition.is_some_and(|pkey| db.partition(pkey).is_none()))
            .map(|(&mgid, _)| mgid)
            .collect();
        for mgid in orphans {
            if let Some(group) = self.groups.get_mut(&mgid) {
                group.partition = None;
            }
            self.cleanup(mgid);
        }
    }

    /// One group of partition `pkey` at `scope` (0: link-local), found by its MGID or created
    /// with the record `osm_prtn_add_mcgroup` fills, then well-known. A group that cannot be
    /// created (an invalid MGID, an MTU or rate out of range, no MLID left) is logged and left
    /// out, as OpenSM logs it.
    fn add_partition_group(
        &mut self,
        db: &SaDb,
        config: &SaConfig,
        pkey: u16,
        group: &McGroup,
        scope: u8,
    ) {
        let scope = if scope == 0 { LINK_LOCAL } else { scope };
        let flags = &group.flags;
        let mut mgid = group.mgid.to_bytes();
        mgid[1] = (mgid[1] & 0xf0) | (scope & 0x0f);
        // OpenSM cuts the configured MTU and rate to a byte and ORs "exactly" into it.
        let (mtu_selector, mtu) = split_selector(flags.mtu as u8 | EXACTLY);
        let (rate_selector, rate) = split_selector(flags.rate as u8 | EXACTLY);
        let (packet_life_selector, packet_life) = split_selector(config.subnet_timeout);
        let record = McMemberRecordRepr {
            mgid: Gid::from_bytes(mgid),
            port_gid: Gid(0),
            q_key: flags.q_key,
            mlid: 0,
            mtu_selector,
            mtu: Mtu::from(mtu),
            tclass: flags.tclass,
            p_key: pkey | 0x8000,
            rate_selector,
            rate: Rate::from(rate),
            packet_life_selector,
            packet_life,
            sl: flags.sl & 0xf,
            flow_label: flags.flow_label & 0xf_ffff,
            hop_limit: if scope == LINK_LOCAL { 0 } else { 0xff },
            scope,
            join_state: JoinState::FULL,
            proxy_join: false,
        };
        let key = record.mgid.0;
        if !self.groups.contains_key(&key)
            && let Err(status) = self.create(db, config, PARTITION_GROUP_MASK, &record, None)
        {
            warn!(mgid = %record.mgid, pkey, ?status, "partition's multicast group not created");
            return;
        }
        if let Some(group) = self.groups.get_mut(&key) {
            group.partition.get_or_insert(pkey & 0x7fff);
        }
    }

    /// Per MLID, the port GUIDs of the members of every group on it, whatever their
    /// JoinState; an MLID whose groups have no member has an empty set.
    pub fn members_by_mlid(&self) -> MulticastMembers {
        let mut mlids = MulticastMembers::new();
        for group in self.groups.values() {
            mlids
                .entry(group.record.mlid)
                .or_default()
                .extend(group.members.keys().copied().map(Guid));
        }
        mlids
    }

    /// Whether some MLID's members changed since the last call.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The traps to report since the last call.
    pub fn take_notices(&mut self) -> Vec<GroupNotice> {
        std::mem::take(&mut self.notices)
    }
}

/// A PortGID must be on this subnet (OpenSM ERR 1B40/1B41).
fn check_prefix(config: &SaConfig, port_gid: Gid) -> Result<(), Status> {
    if port_gid.subnet_prefix() == config.subnet_prefix {
        Ok(())
    } else {
        debug!(%port_gid, "PortGID of another subnet");
        Err(Status::SA_REQ_INVALID_GID)
    }
}

/// A rate or MTU given with its selector must be a known code (`rate_is_valid`,
/// `mtu_is_valid`).
fn rate_and_mtu_valid(mask: u64, request: &McMemberRecordRepr) -> bool {
    let both = |a: M, b: M| mask & (a.0 | b.0) == a.0 | b.0;
    (!both(M::RATE_SELECTOR, M::RATE) || request.rate.speed_rank() != 0)
        && (!both(M::MTU_SELECTOR, M::MTU) || request.mtu.bytes().is_some())
}

/// The components a request names that must equal the group's (`validate_other_comp_fields`):
/// Q_Key, P_Key (same base, not both limited), TClass, SL, FlowLabel and HopLimit.
fn other_fields_match(mask: u64, request: &McMemberRecordRepr, group: &McMemberRecordRepr) -> bool {
    let named = |bits: M| mask & bits.0 != 0;
    (!named(M::Q_KEY) || request.q_key == group.q_key)
        && (!named(M::P_KEY) || match_pkey(request.p_key, group.p_key))
        && (!named(M::TCLASS) || request.tclass == group.tclass)
        && (!named(M::SL) || request.sl == group.sl)
        && (!named(M::FLOW_LABEL) || request.flow_label == group.flow_label)
        && (!named(M::HOP_LIMIT) || request.hop_limit == group.hop_limit)
}

/// The group's MTU and rate against the request's selectors (`validate_more_comp_fields`):
/// only the selector bit need be in the mask; "largest" accepts any, and the packet lifetime is
/// not compared.
fn more_fields_match(mask: u64, request: &McMemberRecordRepr, group: &McMemberRecordRepr) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let accepts = |selector: Selector, group_vs_request| match selector {
        Selector::GreaterThan => group_vs_request == Greater,
        Selector::LessThan => group_vs_request == Less,
        Selector::Exactly => group_vs_request == Equal,
        _ => true,
    };
    let mtu = u8::from(group.mtu).cmp(&u8::from(request.mtu));
    let rate = group.rate.cmp_speed(request.rate);
    (mask & M::MTU_SELECTOR.0 == 0 || accepts(request.mtu_selector, mtu))
        && (mask & M::RATE_SELECTOR.0 == 0 || accepts(request.rate_selector, rate))
}

/// Whether a port can take the group's traffic (`validate_port_caps`): its NeighborMTU and
/// active rate at least the group's.
fn port_fits(port: &PortInfoRepr, group: &McMemberRecordRepr) -> bool {
    port.neighbor_mtu >= u8::from(group.mtu)
        && active_rate(port).cmp_speed(group.rate) != std::cmp::Ordering::Less
}

/// Whether `requester` may change `guid`'s membership (`validate_modify`, o15-0.2.1): anyone
/// may add a new member; a member joined by itself only by itself, one joined by proxy by any
/// port of the group's partition.
fn may_modify(db: &SaDb, group: &Group, guid: u64, requester: PortKey) -> bool {
    match group.members.get(&guid) {
        None => true,
        Some(member) if !member.proxy_join => db.port(requester).is_some_and(|p| p.guid == guid),
        Some(_) => db.has_pkey(requester, group.record.p_key),
    }
}

/// Settles a new group's MTU and rate (`mgrp_request_is_realizable`): without a selector and
/// value, or with "largest", the port's (NeighborMTU, else the subnet's smallest MTUCap;
/// active rate); "greater than" needs the port above it and takes the port's; "less than" one
/// step below the value, or the port's if that is lower; "exactly" the value. The result must
/// be a valid code. Without a port (a partition's group) the MTU and rate are always given
/// "exactly".
fn realize(
    mask: u64,
    record: &mut McMemberRecordRepr,
    port: Option<&PortInfoRepr>,
    min_mtu: u8,
) -> bool {
    use std::cmp::Ordering::{Greater, Less};
    let both = |a: M, b: M| mask & (a.0 | b.0) == a.0 | b.0;
    let port_mtu = port.map_or(0, |p| p.neighbor_mtu);
    let default_mtu = if port_mtu != 0 { port_mtu } else { min_mtu };
    let mtu = if !both(M::MTU_SELECTOR, M::MTU) || record.mtu_selector == Selector::Largest {
        default_mtu
    } else {
        let wanted = u8::from(record.mtu);
        let mtu = match record.mtu_selector {
            Selector::GreaterThan if port_mtu != 0 && wanted >= port_mtu => return false,
            Selector::GreaterThan if port_mtu != 0 => port_mtu,
            Selector::GreaterThan if wanted < min_mtu => min_mtu,
            Selector::GreaterThan => wanted + 1,
            Selector::LessThan if port_mtu != 0 && wanted > port_mtu => port_mtu,
            Selector::LessThan => wanted.wrapping_sub(1),
            _ => wanted,
        };
        if Mtu::from(mtu).bytes().is_none() {
            return false;
        }
        mtu
    };
    // A port's rate is never 0, so OpenSM's fallbacks to `min_ca_rate` for a port without one
    // are never taken.
    let port_rate = port.map_or(Rate::from(0), active_rate);
    let rate = if !both(M::RATE_SELECTOR, M::RATE) || record.rate_selector == Selector::Largest {
        port_rate
    } else {
        let wanted = record.rate;
        let rate = match record.rate_selector {
            Selector::GreaterThan if wanted.cmp_speed(port_rate) != Less => return false,
            Selector::GreaterThan => port_rate,
            Selector::LessThan if wanted.cmp_speed(port_rate) == Greater => port_rate,
            Selector::LessThan => wanted.slower().unwrap_or(Rate::from(0)),
            _ => wanted,
        };
        if rate.speed_rank() == 0 {
            return false;
        }
        rate
    };
    record.mtu = Mtu::from(mtu);
    record.rate = rate;
    true
}

/// The answer to a join or leave (`mcmr_rcv_respond`): the record with the MTU, rate and
/// packet lifetime selectors "exactly".
fn exactly(record: McMemberRecordRepr) -> McMemberRecordRepr {
    McMemberRecordRepr {
        mtu_selector: Selector::Exactly,
        rate_selector: Selector::Exactly,
        packet_life_selector: Selector::Exactly,
        ..record
    }
}

/// The answer to a join: the request with the group's Q_Key, MLID, TClass, P_Key, SL,
/// FlowLabel, HopLimit, scope, MTU, rate and packet lifetime (`copy_from_create_mc_rec`).
fn answer_of(request: &McMemberRecordRepr, group: &McMemberRecordRepr) -> McMemberRecordRepr {
    exactly(McMemberRecordRepr {
        q_key: group.q_key,
        mlid: group.mlid,
        tclass: group.tclass,
        p_key: group.p_key,
        sl: group.sl,
        flow_label: group.flow_label,
        hop_limit: group.hop_limit,
        scope: group.scope,
        mtu: group.mtu,
        rate: group.rate,
        packet_life: group.packet_life,
        ..*request
    })
}

/// The selector (top two bits) and value (low six) of an MTU, rate or lifetime byte.
fn split_selector(byte: u8) -> (Selector, u8) {
    (Selector::from(byte >> 6), byte & 0x3f)
}

/// An MGID's signature: bytes 2 and 3.
fn signature(mgid: Gid) -> u16 {
    let bytes = mgid.to_bytes();
    u16::from_be_bytes([bytes[2], bytes[3]])
}

/// Whether a requested MGID is valid (`validate_requested_mgid`, o15-0.1.5): multicast
/// (0xFF); an IPoIB one is taken as it is; otherwise no reserved flag (byte 1 bits 7:5), and
/// not the SA's own signature at link-local scope, which only the SA hands out.
fn valid_requested_mgid(mgid: Gid) -> bool {
    let bytes = mgid.to_bytes();
    let signature = signature(mgid);
    bytes[0] == 0xff
        && (matches!(signature, IPV4_SIGNATURE | IPV6_SIGNATURE)
            || (bytes[1] & 0xe0 == 0
                && !(signature == SA_SIGNATURE && bytes[1] & 0x0f == LINK_LOCAL)))
}

/// The IPv4 broadcast group of an IPoIB MGID's partition and scope:
/// `ff1S:401b:PPPP::ffff:ffff`.
fn ipv4_broadcast_of(mgid: Gid) -> Gid {
    let bytes = mgid.to_bytes();
    let mut broadcast = [0u8; 16];
    broadcast[..6].copy_from_slice(&[
        0xff,
        0x10 | (bytes[1] & 0x0f),
        0x40,
        0x1b,
        bytes[4],
        bytes[5],
    ]);
    broadcast[12..].fill(0xff);
    Gid::from_bytes(broadcast)
}

/// The scopes a partition group is created at (`__create_mgrp`): each one of the mask, or the
/// default (0, link-local) without any.
fn scopes(scope_mask: u16) -> Vec<u8> {
    if scope_mask == 0 {
        vec![0]
    } else {
        (0..16)
            .filter(|scope| scope_mask & (1 << scope) != 0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank() -> McMemberRecordRepr {
        McMemberRecordRepr::parse_bytes(&[0u8; 56]).unwrap()
    }

    /// An active 4x QDR port (40 Gb/s) with NeighborMTU 2048.
    fn qdr_port() -> PortInfoRepr {
        let mut info = PortInfoRepr::parse(&ibqos_mad::PortInfo::new_unchecked([0u8; 64])).unwrap();
        info.link_width_active = 2;
        info.link_speed_active = 4;
        info.neighbor_mtu = 4;
        info
    }

    /// `realize` with the MTU and rate asked with `selector`.
    fn realized(selector: Selector, mtu: u8, rate: Rate) -> Option<(u8, Rate)> {
        let mask = M::MTU_SELECTOR.0 | M::MTU.0 | M::RATE_SELECTOR.0 | M::RATE.0;
        let mut record = McMemberRecordRepr {
            mtu_selector: selector,
            mtu: Mtu::from(mtu),
            rate_selector: selector,
            rate,
            ..blank()
        };
        let port = qdr_port();
        realize(mask, &mut record, Some(&port), 5).then(|| (u8::from(record.mtu), record.rate))
    }

    /// mgrp_request_is_realizable against a 2048-byte, 40 Gb/s port.
    #[test]
    fn a_new_groups_mtu_and_rate_follow_the_selectors_and_the_port() {
        use Selector::*;
        // "Greater than" 1024 and 20 Gb/s: the port's own, 2048 and 40 Gb/s.
        assert_eq!(
            realized(GreaterThan, 3, Rate::Gbps20),
            Some((4, Rate::Gbps40))
        );
        // "Greater than" what the port has: impossible.
        assert_eq!(realized(GreaterThan, 4, Rate::Gbps20), None);
        assert_eq!(realized(GreaterThan, 3, Rate::Gbps40), None);
        // "Less than" 4096 and 56 Gb/s: above the port, so the port's.
        assert_eq!(realized(LessThan, 5, Rate::Gbps56), Some((4, Rate::Gbps40)));
        // "Less than" 2048 and 40: one step below, 1024 and (by speed, not code) 28 Gb/s.
        assert_eq!(realized(LessThan, 4, Rate::Gbps40), Some((3, Rate::Gbps28)));
        // "Less than" the smallest: nothing below.
        assert_eq!(realized(LessThan, 1, Rate::Gbps20), None);
        assert_eq!(realized(LessThan, 3, Rate::Gbps2_5), None);
        // "Exactly" takes the value even above the port: the join checks the port after.
        assert_eq!(realized(Exactly, 5, Rate::Gbps56), Some((5, Rate::Gbps56)));
        // "Largest", or no selector in the mask: the port's.
        assert_eq!(realized(Largest, 1, Rate::Gbps2_5), Some((4, Rate::Gbps40)));
        let mut record = blank();
        assert!(realize(
            M::MTU.0 | M::RATE.0,
            &mut record,
            Some(&qdr_port()),
            5
        ));
        assert_eq!((u8::from(record.mtu), record.rate), (4, Rate::Gbps40));
        // A port with NeighborMTU 0 falls back to the subnet's smallest MTUCap.
        let mut port = qdr_port();
        port.neighbor_mtu = 0;
        assert!(realize(0, &mut record, Some(&port), 3));
        assert_eq!(u8::from(record.mtu), 3);
    }

    #[test]
    fn sa_mgids_count_in_x86_byte_order_and_skip_taken_ones() {
        let mut groups = Groups::default();
        let prefix = 0xfe80_0000_0000_0000;
        let first = groups.new_mgid(0, &blank(), prefix).unwrap();
        // ff12:a01b, then fe80 and six zero bytes, the counter 0 over bytes 10-13.
        assert_eq!(first.to_string(), "ff12:a01b:fe80::");
        let second = groups.new_mgid(0, &blank(), prefix).unwrap();
        // Counter 1 little-endian: byte 10 is 1.
        assert_eq!(second.to_bytes()[10..14], [1, 0, 0, 0]);
        // A scope in the mask is used; counter 2 is taken, so 3 follows.
        let taken = {
            let mut bytes = second.to_bytes();
            bytes[1] = 0x15;
            bytes[10] = 2;
            Gid::from_bytes(bytes)
        };
        groups.groups.insert(
            taken.0,
            Group {
                record: blank(),
                partition: None,
                members: BTreeMap::new(),
            },
        );
        let scoped = McMemberRecordRepr {
            scope: 5,
            ..blank()
        };
        let third = groups.new_mgid(M::SCOPE.0, &scoped, prefix).unwrap();
        assert_eq!(third.to_bytes()[..4], [0xff, 0x15, 0xa0, 0x1b]);
        assert_eq!(third.to_bytes()[10], 3);
    }

    #[test]
    fn requested_mgids_are_checked_as_opensm_checks_them() {
        let gid = |text: &str| {
            assert_eq!(text.len(), 32, "{text}");
            Gid(u128::from_str_radix(text, 16).unwrap())
        };
        // IPoIB signatures pass whatever their flags.
        assert!(valid_requested_mgid(gid(
            "ff72401bffff0000000000000000ffff"
        )));
        assert!(valid_requested_mgid(gid(
            "ff12601bffff00000000000000000001"
        )));
        // Not multicast.
        assert!(!valid_requested_mgid(gid(
            "fe80000000000000000000000000abcd"
        )));
        // A reserved flag (bits 7:5 of byte 1).
        assert!(!valid_requested_mgid(gid(
            "ff32123400000000000000000000abcd"
        )));
        // The SA's signature at link-local scope, but not at site-local.
        assert!(!valid_requested_mgid(gid(
            "ff12a01bfe800000000000000000abcd"
        )));
        assert!(valid_requested_mgid(gid(
            "ff15a01bfe800000000000000000abcd"
        )));
        // ibacm's site-local groups (signature 0x4001).
        assert!(valid_requested_mgid(gid(
            "ff154001ffff0a040000000000000000"
        )));
        assert_eq!(
            ipv4_broadcast_of(gid("ff15601b800100000000000000000001")).to_string(),
            "ff15:401b:8001::ffff:ffff"
        );
    }

    fn group_with(members: &[(u64, u8)], partition: Option<u16>) -> Group {
        let record = McMemberRecordRepr {
            mgid: Gid(0xff12_a01b << 96),
            mlid: FIRST_MLID,
            p_key: 0xffff,
            ..blank()
        };
        let members = members
            .iter()
            .map(|&(guid, state)| {
                let member = Member {
                    port_gid: Gid::new(Gid::DEFAULT_SUBNET_PREFIX, guid),
                    join_state: JoinState(state),
                    proxy_join: false,
                };
                (guid, member)
            })
            .collect();
        Group {
            record,
            partition,
            members,
        }
    }

    fn groups_of(group: Group) -> (Groups, u128) {
        let mgid = group.record.mgid.0;
        let mut groups = Groups::default();
        groups.groups.insert(mgid, group);
        (groups, mgid)
    }

    /// osm_mgrp_remove_port: a member stays while still full, or while still something with
    /// another full member (counted against its FullMember bit alone).
    #[test]
    fn leaving_keeps_or_removes_the_member_as_opensm_does() {
        // Port 1 full+non, port 2 full: port 1 leaves full, keeps non (another full member).
        let (mut groups, mgid) = groups_of(group_with(&[(1, 0x3), (2, 0x1)], None));
        assert_eq!(
            groups.remove_member(mgid, 1, JoinState::FULL),
            JoinState::NON_MEMBER
        );
        assert!(groups.take_notices().is_empty());
        // Port 2, the last full member, leaves: trap 67, and the group goes with port 1.
        assert_eq!(
            groups.remove_member(mgid, 2, JoinState::FULL),
            JoinState::NONE
        );
        let notices = groups.take_notices();
        assert_eq!(notices.len(), 1);
        assert_eq!(notices[0].trap, TRAP_MGID_DELETED);
        assert!(groups.groups.is_empty());
        assert!(groups.take_changed());
        // Alone, full+non leaving full: no other full member, so no membership is left.
        let (mut groups, mgid) = groups_of(group_with(&[(1, 0x3)], Some(0x7fff)));
        assert_eq!(
            groups.remove_member(mgid, 1, JoinState::FULL),
            JoinState::NONE
        );
        // Well-known: the group stays, empty.
        assert!(groups.groups[&mgid].members.is_empty());
        // A send-only full member leaving beside a full one: gone, and no trap.
        let (mut groups, mgid) = groups_of(group_with(&[(1, 0x8), (2, 0x1)], None));
        assert_eq!(
            groups.remove_member(mgid, 1, JoinState::SEND_ONLY_FULL),
            JoinState::NONE
        );
        assert!(groups.take_notices().is_empty());
        assert_eq!(groups.groups[&mgid].full_members(), 1);
    }

    /// osm_mgrp_add_port: JoinStates are OR-ed; the first full member is announced once.
    #[test]
    fn joining_ors_the_join_state_and_announces_the_first_full_member() {
        let (mut groups, mgid) = groups_of(group_with(&[], Some(0x7fff)));
        let gid = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 1);
        assert_eq!(
            groups.add_member(mgid, 1, gid, JoinState::NON_MEMBER, false),
            JoinState::NON_MEMBER
        );
        assert!(groups.take_notices().is_empty());
        assert_eq!(
            groups.add_member(mgid, 1, gid, JoinState::FULL, false),
            JoinState(0x3)
        );
        assert_eq!(groups.take_notices()[0].trap, TRAP_MGID_CREATED);
        let gid2 = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 2);
        groups.add_member(mgid, 2, gid2, JoinState::SEND_ONLY_FULL, true);
        assert!(groups.take_notices().is_empty());
        let members = groups.members_by_mlid();
        assert_eq!(members[&FIRST_MLID], BTreeSet::from([Guid(1), Guid(2)]));
    }

    #[test]
    fn mlids_are_the_requested_free_one_or_the_lowest_free() {
        let (groups, _) = groups_of(group_with(&[], None));
        assert_eq!(groups.free_mlid(0, 0xc3ff), Some(0xc001));
        assert_eq!(groups.free_mlid(0xc123, 0xc3ff), Some(0xc123));
        // Taken, or past what the switches hold, or unicast: the lowest free.
        assert_eq!(groups.free_mlid(0xc000, 0xc3ff), Some(0xc001));
        assert_eq!(groups.free_mlid(0xc400, 0xc3ff), Some(0xc001));
        assert_eq!(groups.free_mlid(0x0042, 0xc3ff), Some(0xc001));
        assert_eq!(groups.free_mlid(0, 0xc000), None);
    }

    #[test]
    fn group_components_compare_as_opensm_compares_them() {
        let group = McMemberRecordRepr {
            p_key: 0xffff,
            q_key: 0x0b1b,
            mtu: Mtu::Mtu2048,
            rate: Rate::Gbps10,
            ..blank()
        };
        // A limited P_Key of the same partition matches the full one; two limited do not.
        let limited = McMemberRecordRepr {
            p_key: 0x7fff,
            ..group
        };
        assert!(other_fields_match(M::P_KEY.0, &limited, &group));
        let both_limited = McMemberRecordRepr {
            p_key: 0x7fff,
            ..blank()
        };
        assert!(!other_fields_match(M::P_KEY.0, &limited, &both_limited));
        let other_qkey = McMemberRecordRepr { q_key: 1, ..group };
        assert!(!other_fields_match(M::Q_KEY.0, &other_qkey, &group));
        assert!(other_fields_match(M::P_KEY.0, &other_qkey, &group));
        // The selector alone decides: "greater than 1024" holds for 2048, without the MTU bit.
        let above = McMemberRecordRepr {
            mtu_selector: Selector::GreaterThan,
            mtu: Mtu::Mtu1024,
            rate_selector: Selector::LessThan,
            rate: Rate::Gbps20,
            ..blank()
        };
        let selectors = M::MTU_SELECTOR.0 | M::RATE_SELECTOR.0;
        assert!(more_fields_match(selectors, &above, &group));
        // 10 Gb/s is not less than 5 Gb/s, though code 3 is less than code 5.
        let below_5 = McMemberRecordRepr {
            rate: Rate::Gbps5,
            ..above
        };
        assert!(!more_fields_match(selectors, &below_5, &group));
    }

    #[test]
    fn partition_groups_get_each_scope_or_link_local() {
        assert_eq!(scopes(0), [0]);
        assert_eq!(scopes(1 << 2 | 1 << 5 | 1 << 14), [2, 5, 14]);
    }
}
