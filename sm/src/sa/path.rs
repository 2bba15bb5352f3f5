//! PathRecord (IBA 15.2.5.16) as OpenSM 3.3.23 computes it (osm_sa_path_record.c): which
//! (source, destination) pairs a query names, and per pair of LIDs the path's MTU and rate
//! (the minimum over every port the LFTs lead through), its packet lifetime, P_Key and SL.
//!
//! The SL is the one traffic reaches the QoS tables with: a requested SL, else the QoS level's
//! (qos-policy.conf), else the partition's (0 in the default partition); with QoS on, an SL
//! that any hop maps to VL15 gives no path.

use std::cmp::Ordering;

use ibqos_mad::sa::{Mtu, MultiPathRecordRepr, PathRecord, PathRecordRepr, Rate, Selector};
use ibqos_mad::{CapabilityMask, Gid, Method, PortInfoRepr, SlToVlMappingTableRepr, Status};
use tracing::debug;

use super::db::SaDb;
use ibqos_fabric::routing::Layering;
use ibqos_qos::policy::ResolvedPolicy;

use super::{Query, Records, SaConfig, policy};
use crate::engine::subnet::PortKey;

/// ComponentMask bits of a PathRecord (IB_PR_COMPMASK_*).
mod bit {
    pub const SERVICE_ID_MSB: u64 = 1 << 0;
    pub const SERVICE_ID_LSB: u64 = 1 << 1;
    pub const DGID: u64 = 1 << 2;
    pub const SGID: u64 = 1 << 3;
    pub const DLID: u64 = 1 << 4;
    pub const SLID: u64 = 1 << 5;
    pub const RAW_TRAFFIC: u64 = 1 << 6;
    pub const REVERSIBLE: u64 = 1 << 11;
    pub const NUMB_PATH: u64 = 1 << 12;
    pub const P_KEY: u64 = 1 << 13;
    pub const QOS_CLASS: u64 = 1 << 14;
    pub const SL: u64 = 1 << 15;
    pub const MTU_SELECTOR: u64 = 1 << 16;
    pub const MTU: u64 = 1 << 17;
    pub const RATE_SELECTOR: u64 = 1 << 18;
    pub const RATE: u64 = 1 << 19;
    pub const PACKET_LIFE_SELECTOR: u64 = 1 << 20;
    pub const PACKET_LIFE: u64 = 1 << 21;
}

/// OpenSM's MAX_HOPS: a longer path is taken for a routing loop.
const MAX_HOPS: u32 = 64;
/// The VL an SL2VL table maps an SL to for "drop".
const DROP_VL: u8 = 15;
/// The default partition's SL (OpenSM's OSM_DEFAULT_SL).
const DEFAULT_SL: u8 = 0;

/// The PathRecords a query asks for (OpenSM `osm_pr_rcv_process`, 1738-2001).
pub(super) fn path_records(
    db: &SaDb,
    config: &SaConfig,
    policy: Option<&ResolvedPolicy>,
    query: &Query<'_>,
) -> Result<Records, Status> {
    let mask = query.component_mask;
    let mut records = Records::new(PathRecordRepr::SIZE);
    let request = PathRecordRepr::parse(&PathRecord::new_unchecked(query.template))
        .map_err(|_| Status::SA_REQ_INVALID)?;
    if (mask & bit::RATE_SELECTOR != 0 && mask & bit::RATE != 0 && request.rate.speed_rank() == 0)
        || (mask & bit::MTU_SELECTOR != 0 && mask & bit::MTU != 0 && request.mtu.bytes().is_none())
    {
        return Err(Status::SA_REQ_INVALID);
    }
    let service_id = mask & (bit::SERVICE_ID_MSB | bit::SERVICE_ID_LSB);
    if service_id != 0 && service_id != bit::SERVICE_ID_MSB | bit::SERVICE_ID_LSB {
        return Err(Status::SA_REQ_INSUFFICIENT_COMPONENTS);
    }
    if mask & bit::DGID != 0 && request.dgid.is_multicast() {
        // Multicast groups are the multicast issue's: no group exists, so no record.
        debug!("PathRecord to a multicast GID; no group, no record");
        return Ok(records);
    }
    // An endpoint that names nothing known gives an empty answer: OpenSM computes an error
    // status there and then discards it (osm_sa_path_record.c:1831-1835).
    let Some(sources) = endpoint(
        db,
        config,
        mask,
        bit::SGID,
        request.sgid,
        bit::SLID,
        request.slid,
    ) else {
        return Ok(records);
    };
    let Some(destinations) = endpoint(
        db,
        config,
        mask,
        bit::DGID,
        request.dgid,
        bit::DLID,
        request.dlid,
    ) else {
        return Ok(records);
    };
    let ask = Ask {
        db,
        config,
        policy,
        requester: query.requester,
        mask,
        path_sl: db.layering.as_deref(),
        request: &request,
        wanted: if query.method == Method::Get {
            1
        } else if mask & bit::NUMB_PATH != 0 {
            usize::from(request.numb_path)
        } else {
            usize::MAX
        },
    };
    let sgid = (mask & bit::SGID != 0).then_some(request.sgid);
    let dgid = (mask & bit::DGID != 0).then_some(request.dgid);
    // Destination first: OpenSM's world query walks destinations outside, sources inside
    // (osm_sa_path_record.c `pr_process_world`).
    let sources = sources.ports(db);
    for destination in destinations.ports(db) {
        for &source in &sources {
            ask.pair_paths((source, sgid), (destination, dgid), &mut records);
        }
        // Past the bound the answer is an error: computing more paths would only cost time.
        if records.bytes.len() > config.max_answer_bytes {
            break;
        }
    }
    Ok(records)
}

/// MultiPathRecord bits (IB_MPR_COMPMASK_*) and the PathRecord bit each stands for: the path
/// fields from RawTraffic to PacketLifeTime keep their order, 6 places lower.
mod multi {
    pub const FIRST_PATH_FIELD: u32 = 0;
    pub const LAST_PATH_FIELD: u32 = 15;
    pub const PATH_FIELD_SHIFT: u32 = 6;
    pub const SERVICE_ID_MSB: u64 = 1 << 16;
    pub const SGID_COUNT: u64 = 1 << 19;
    pub const DGID_COUNT: u64 = 1 << 20;
    pub const SERVICE_ID_LSB: u64 = 1 << 21;
}

/// The PathRecords a MultiPathRecord GetMulti asks for (osm_sa_multipath_record.c): one path
/// for each (SGID, DGID) pair, at most NumbPath in all, computed as a PathRecord query of that
/// pair with the same requirements would be.
pub(super) fn multi_path_records(
    db: &SaDb,
    config: &SaConfig,
    policy: Option<&ResolvedPolicy>,
    query: &Query<'_>,
) -> Result<Records, Status> {
    let mask = query.component_mask;
    if !query.rmpp_active {
        return Err(Status::SA_REQ_INVALID);
    }
    let counts = multi::SGID_COUNT | multi::DGID_COUNT;
    if mask & counts != counts {
        return Err(Status::SA_REQ_INSUFFICIENT_COMPONENTS);
    }
    let mpr =
        MultiPathRecordRepr::parse_bytes(query.template).map_err(|_| Status::SA_REQ_INVALID)?;
    if mpr.sgids.is_empty() || mpr.dgids.is_empty() {
        return Err(Status::SA_REQ_INVALID);
    }
    let mut path_mask = bit::SGID | bit::DGID;
    for b in multi::FIRST_PATH_FIELD..=multi::LAST_PATH_FIELD {
        if mask & (1 << b) != 0 {
            path_mask |= 1 << (b + multi::PATH_FIELD_SHIFT);
        }
    }
    if mask & multi::SERVICE_ID_MSB != 0 {
        path_mask |= bit::SERVICE_ID_MSB;
    }
    if mask & multi::SERVICE_ID_LSB != 0 {
        path_mask |= bit::SERVICE_ID_LSB;
    }
    let ends = |gids: &[Gid]| -> Result<Vec<(PortKey, Gid)>, Status> {
        gids.iter()
            .map(|&gid| {
                let known = !gid.is_multicast()
                    && (gid.is_link_local() || gid.subnet_prefix() == config.subnet_prefix);
                let key = db.endport_of_guid(gid.interface_id()).filter(|_| known);
                key.map(|key| (key, gid)).ok_or(Status::SA_REQ_INVALID_GID)
            })
            .collect()
    };
    let (sources, destinations) = (ends(&mpr.sgids)?, ends(&mpr.dgids)?);
    let template = PathRecordRepr {
        service_id: mpr.service_id,
        dgid: Gid::default(),
        sgid: Gid::default(),
        dlid: 0,
        slid: 0,
        raw_traffic: mpr.raw_traffic,
        flow_label: mpr.flow_label,
        hop_limit: mpr.hop_limit,
        tclass: mpr.tclass,
        reversible: mpr.reversible,
        numb_path: mpr.numb_path,
        p_key: mpr.p_key,
        qos_class: mpr.qos_class,
        sl: mpr.sl,
        mtu_selector: mpr.mtu_selector,
        mtu: mpr.mtu,
        rate_selector: mpr.rate_selector,
        rate: mpr.rate,
        packet_life_selector: mpr.packet_life_selector,
        packet_life: mpr.packet_life,
        preference: 0,
    };
    let ask = Ask {
        db,
        config,
        policy,
        requester: query.requester,
        mask: path_mask,
        request: &template,
        wanted: 1,
        path_sl: None,
    };
    let mut records = Records::new(PathRecordRepr::SIZE);
    for &(source, sgid) in &sources {
        for &(destination, dgid) in &destinations {
            ask.pair_paths(
                (source, Some(sgid)),
                (destination, Some(dgid)),
                &mut records,
            );
        }
    }
    if mask & (1 << 6) != 0 {
        let most = usize::from(mpr.numb_path) * PathRecordRepr::SIZE;
        records.bytes.truncate(most);
    }
    Ok(records)
}

/// One end of the paths asked for: a port the GID or LID named, or every port.
enum Endpoint {
    One(PortKey),
    Every,
}

impl Endpoint {
    /// The endports, in port GUID order as OpenSM walks its port table.
    fn ports(&self, db: &SaDb) -> Vec<PortKey> {
        match self {
            Endpoint::One(key) => vec![*key],
            Endpoint::Every => db.endports_by_guid().collect(),
        }
    }
}

/// The end a GID or LID names (`osm_pr_get_end_points`, 1306-1442); `None` when it names
/// nothing known. With both, the GID decides (a GID's port other than the LID's is an invalid
/// request in OpenSM, answered here with no record).
fn endpoint(
    db: &SaDb,
    config: &SaConfig,
    mask: u64,
    gid_bit: u64,
    gid: Gid,
    lid_bit: u64,
    lid: u16,
) -> Option<Endpoint> {
    let by_gid = if mask & gid_bit != 0 {
        if !gid.is_link_local() && gid.subnet_prefix() != config.subnet_prefix {
            return None;
        }
        Some(db.endport_of_guid(gid.interface_id())?)
    } else {
        None
    };
    let by_lid = if mask & lid_bit != 0 {
        Some(db.endport_of_lid(lid)?)
    } else {
        None
    };
    match (by_gid, by_lid) {
        (Some(g), Some(l)) if g != l => None,
        (Some(key), _) | (None, Some(key)) => Some(Endpoint::One(key)),
        (None, None) => Some(Endpoint::Every),
    }
}

/// The two ends of one path.
struct Ends {
    source: PortKey,
    destination: PortKey,
    slid: u16,
    dlid: u16,
    sgid: Option<Gid>,
    dgid: Option<Gid>,
}

/// One PathRecord query, checked: what every pair of ends is computed with.
struct Ask<'a> {
    db: &'a SaDb,
    config: &'a SaConfig,
    policy: Option<&'a ResolvedPolicy>,
    /// The port that asked.
    requester: PortKey,
    mask: u64,
    request: &'a PathRecordRepr,
    /// Paths per pair of ports: 1 for a Get (IBA 1.2 erratum), else NumbPath if given.
    wanted: usize,
    /// What the routing decided, whose SL replaces the one chosen: a PathRecord's; OpenSM asks
    /// its engine for no MultiPathRecord.
    path_sl: Option<&'a dyn Layering>,
}

impl Ask<'_> {
    /// The paths between two ports (`pr_rcv_get_port_pair_paths`): the LIDs asked for, or
    /// every LID of each port, the diagonal pairs first with preference 0, then the rest
    /// with 2.
    fn pair_paths(
        &self,
        (source, sgid): (PortKey, Option<Gid>),
        (destination, dgid): (PortKey, Option<Gid>),
        records: &mut Records,
    ) {
        // The requester and both ends share partitions pairwise, or no path between them is
        // told (`pr_rcv_get_port_pair_paths`, osm_sa_path_record.c:1073-1086).
        let db = self.db;
        if !db.share_pkey(self.requester, source)
            || !db.share_pkey(self.requester, destination)
            || !db.share_pkey(source, destination)
        {
            return;
        }
        let lids = |key: PortKey, lid_bit: u64, lid: u16| {
            if self.mask & lid_bit != 0 {
                Some(lid..=lid)
            } else {
                self.db.lids_of(key)
            }
        };
        let (Some(sources), Some(destinations)) = (
            lids(source, bit::SLID, self.request.slid),
            lids(destination, bit::DLID, self.request.dlid),
        ) else {
            return;
        };
        if *sources.start() == 0 || *destinations.start() == 0 {
            return;
        }
        let mut found = 0;
        let mut emit = |slid: u16, dlid: u16, preference: u8, found: &mut usize| {
            let ends = Ends {
                source,
                destination,
                slid,
                dlid,
                sgid,
                dgid,
            };
            if let Some(record) = self.lid_pair_path(&ends, preference) {
                records.push(&record);
                *found += 1;
            }
        };
        let (s0, d0) = (*sources.start(), *destinations.start());
        let diagonal = (sources.end() - s0).min(destinations.end() - d0);
        for i in 0..=diagonal {
            if found >= self.wanted {
                return;
            }
            emit(s0 + i, d0 + i, 0, &mut found);
        }
        for slid in sources.clone() {
            for dlid in destinations.clone() {
                if found >= self.wanted {
                    return;
                }
                if slid - s0 != dlid - d0 {
                    emit(slid, dlid, 2, &mut found);
                }
            }
        }
    }
    /// One path's record (`pr_rcv_get_lid_pair_path`), or `None` when there is no path, or when a
    /// reversible path was asked for and the way back has none.
    fn lid_pair_path(&self, ends: &Ends, preference: u8) -> Option<PathRecordRepr> {
        let there = self.path_parameters(ends.source, ends.destination, ends.slid, ends.dlid)?;
        let back = self.path_parameters(ends.destination, ends.source, ends.dlid, ends.slid);
        if self.mask & bit::REVERSIBLE != 0 && self.request.reversible && back.is_none() {
            return None;
        }
        let gid_of = |key: PortKey| {
            let guid = self.db.port(key).map_or(0, |p| p.guid);
            Gid::new(self.config.subnet_prefix, guid)
        };
        let loopback = ends.source == ends.destination;
        // What `pr_rcv_build_pr` (osm_sa_path_record.c:875-972) writes: no ServiceID, FlowLabel,
        // HopLimit, TClass or QoSClass; NumbPath 0; every selector "exactly".
        Some(PathRecordRepr {
            service_id: 0,
            dgid: ends.dgid.unwrap_or_else(|| gid_of(ends.destination)),
            sgid: ends.sgid.unwrap_or_else(|| gid_of(ends.source)),
            dlid: ends.dlid,
            slid: ends.slid,
            raw_traffic: false,
            flow_label: 0,
            hop_limit: 0,
            tclass: 0,
            reversible: back.is_some(),
            numb_path: 0,
            p_key: there.p_key,
            qos_class: 0,
            sl: there.sl,
            mtu_selector: Selector::Exactly,
            mtu: Mtu::from(there.mtu),
            rate_selector: Selector::Exactly,
            rate: there.rate,
            packet_life_selector: Selector::Exactly,
            packet_life: if loopback { 0 } else { there.packet_life },
            preference,
        })
    }

    /// The path from `source` to `destination` over the LFTs towards `dlid`
    /// (`pr_rcv_get_path_parms`, 145-849), or `None` when there is none or it does not meet the
    /// request.
    fn path_parameters(
        &self,
        source: PortKey,
        destination: PortKey,
        slid: u16,
        dlid: u16,
    ) -> Option<PathParameters> {
        let (db, config, mask, request) = (self.db, self.config, self.mask, self.request);
        let start = db.port(source)?;
        let mut mtu = start.info.mtu_cap;
        let mut rate = active_rate(&start.info);
        let route = |node: u64| -> Option<PortKey> {
            let port = *db.lfts.get(&node)?.get(usize::from(dlid))?;
            (port != 0xff).then_some(PortKey::new(node, port))
        };
        let mut valid_sls: u16 = 0xffff;
        let mut port = if db.is_switch(source) {
            route(source.node)?
        } else {
            source
        };
        if config.qos {
            valid_sls &= sls_not_dropped(db.sl2vl.get(port.node, 0, port.port));
        }
        let target = if db.is_switch(destination) {
            route(destination.node)?
        } else {
            destination
        };
        let mut hops = 0;
        while port != target {
            port = db.peer(port)?;
            if port == target {
                break;
            }
            if !db.is_switch(port) {
                return None;
            }
            let switch0 = db.port(PortKey::new(port.node, 0))?;
            let ingress = db.port(port)?;
            mtu = mtu.min(ingress.info.mtu_cap);
            rate = slower(rate, port_rate(&ingress.info, extended(&switch0.info)));
            let input = port.port;
            port = route(port.node)?;
            let egress = db.port(port)?;
            mtu = mtu.min(egress.info.mtu_cap);
            rate = slower(rate, port_rate(&egress.info, extended(&switch0.info)));
            if config.qos {
                valid_sls &= sls_not_dropped(db.sl2vl.get(port.node, input, port.port));
            }
            hops += 1;
            if hops > MAX_HOPS || valid_sls == 0 {
                return None;
            }
        }
        let end = db.port(port)?;
        mtu = mtu.min(end.info.mtu_cap);
        rate = slower(rate, active_rate(&end.info));
        // The QoS level (qos-policy.conf), with QoS on and a policy that fits the fabric.
        let both_service_id_bits = bit::SERVICE_ID_MSB | bit::SERVICE_ID_LSB;
        let level = self.policy.and_then(|policy| {
            policy::level_for(
                policy,
                db,
                source,
                destination,
                (mask & both_service_id_bits == both_service_id_bits).then_some(request.service_id),
                (mask & bit::QOS_CLASS != 0).then_some(request.qos_class),
                (mask & bit::P_KEY != 0).then_some(request.p_key),
            )
        });
        if let Some(level) = level {
            if let Some(limit) = level.mtu_limit {
                mtu = mtu.min(limit);
            }
            if let Some(limit) = level.rate_limit {
                rate = slower(rate, Rate::from(limit));
            }
            // A level SL above 15 (OpenSM reads it unchecked) or one a hop maps to VL15: no
            // path, and OpenSM logs nothing (osm_sa_path_record.c:460-466).
            if !sl_valid(valid_sls, level.sl) {
                return None;
            }
        }
        let loopback = db.endport(source) == db.endport(destination);
        let packet_life = match level.and_then(|l| l.packet_life) {
            _ if loopback => 0,
            Some(life) => life,
            None => config.subnet_timeout,
        };
        let mtu = select(
            mask,
            bit::MTU_SELECTOR | bit::MTU,
            request.mtu_selector,
            u8::from(request.mtu),
            mtu,
        )?;
        let rate = select_rate(mask, request.rate_selector, request.rate, rate)?;
        let packet_life = select(
            mask,
            bit::PACKET_LIFE_SELECTOR | bit::PACKET_LIFE,
            request.packet_life_selector,
            request.packet_life,
            packet_life,
        )?;
        let raw = mask & bit::RAW_TRAFFIC != 0 && request.raw_traffic;
        let level_pkeys = level.map(|l| &l.pkeys).filter(|pkeys| !pkeys.is_empty());
        let shared = |pkey: u16| db.share_this_pkey(source, destination, pkey);
        let p_key = if raw {
            db.common_pkey(source, destination)
        } else if mask & bit::P_KEY != 0 {
            let in_level =
                level_pkeys.is_none_or(|pkeys| pkeys.contains(u64::from(request.p_key & 0x7fff)));
            if !shared(request.p_key) || !in_level {
                debug!(
                    p_key = request.p_key,
                    "P_Key not shared or not the level's; no path"
                );
                return None;
            }
            request.p_key
        } else if let Some(pkeys) = level_pkeys {
            // The level's first key the ends share, as the level lists it
            // (`osm_qos_level_get_shared_pkey`): without the membership bit.
            let first = pkeys
                .ranges()
                .iter()
                .flat_map(|&(low, high)| low..=high)
                .map(|pkey| pkey as u16)
                .find(|&pkey| shared(pkey));
            let Some(pkey) = first else {
                debug!("the level's P_Keys are not shared; no path (OpenSM ERR 1F1E)");
                return None;
            };
            pkey
        } else {
            let common = db.common_pkey(source, destination);
            if common == 0 {
                debug!("the ends share no partition; no path (OpenSM ERR 1F1B)");
                return None;
            }
            common
        };
        // The partition's `sl=`, where neither the request nor a level gives the SL.
        let partition_sl = (p_key != 0).then(|| db.partition(p_key).map_or(DEFAULT_SL, |p| p.sl));
        let sl = if mask & bit::SL != 0 {
            if level.is_some_and(|l| l.sl != request.sl) {
                debug!(
                    sl = request.sl,
                    "requested SL is not the level's; no path (ERR 1F1F)"
                );
                return None;
            }
            request.sl
        } else if let Some(level) = level {
            level.sl
        } else if let Some(sl) = partition_sl {
            sl
        } else if !config.qos || sl_valid(valid_sls, DEFAULT_SL) {
            DEFAULT_SL
        } else {
            valid_sls.trailing_zeros() as u8
        };
        if config.qos && !sl_valid(valid_sls, sl) {
            debug!(sl, "selected SL leads to VL15; no path (OpenSM ERR 1F24)");
            return None;
        }
        // The routing engine's SL replaces it, unchecked for VL15, as OpenSM's path_sl does
        // (osm_sa_path_record.c:810-831).
        let sl = self
            .path_sl
            .map_or(sl, |layering| layering.path_sl(sl, slid, dlid));
        if mask & bit::SL != 0 && sl != request.sl {
            debug!(
                sl,
                "the routing engine's SL is not the one requested; no path (ERR 1F2A)"
            );
            return None;
        }
        // A raw path carries no P_Key (osm_sa_path_record.c:832-835).
        let p_key = if raw { 0 } else { p_key };
        Some(PathParameters {
            mtu,
            rate,
            packet_life,
            p_key,
            sl,
        })
    }
}

/// What one direction of a path comes to.
#[derive(Debug, Clone, Copy)]
struct PathParameters {
    mtu: u8,
    rate: Rate,
    packet_life: u8,
    p_key: u16,
    sl: u8,
}

/// Whether `sl` is an SL (0-15) left in `valid_sls`.
fn sl_valid(valid_sls: u16, sl: u8) -> bool {
    sl < 16 && valid_sls & (1 << sl) != 0
}

/// The SLs a table does not map to VL15; every SL where no table is known.
fn sls_not_dropped(table: Option<&SlToVlMappingTableRepr>) -> u16 {
    table.map_or(0xffff, |t| {
        (0..16)
            .filter(|&sl| t.vls[sl] != DROP_VL)
            .map(|sl| 1u16 << sl)
            .sum()
    })
}

/// Whether the port runs extended speeds (CapabilityMask.IsExtendedSpeedsSupported).
fn extended(info: &PortInfoRepr) -> bool {
    info.capability_mask
        .contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
}

/// A selector on MTU or packet lifetime applied to what the path offers; `None` when the path
/// cannot meet it. Only with both the selector and the value in the mask
/// (osm_sa_path_record.c:482-611).
fn select(mask: u64, bits: u64, selector: Selector, wanted: u8, offered: u8) -> Option<u8> {
    if mask & bits != bits {
        return Some(offered);
    }
    match selector {
        Selector::GreaterThan => (offered > wanted).then_some(offered),
        Selector::LessThan if offered >= wanted => (wanted > 1).then(|| wanted - 1),
        Selector::Exactly => (offered >= wanted).then_some(wanted),
        _ => Some(offered),
    }
}

/// The rate selector, comparing rates by speed, not by code (`ib_path_compare_rates`).
fn select_rate(mask: u64, selector: Selector, wanted: Rate, offered: Rate) -> Option<Rate> {
    let bits = bit::RATE_SELECTOR | bit::RATE;
    if mask & bits != bits {
        return Some(offered);
    }
    match (selector, offered.cmp_speed(wanted)) {
        (Selector::GreaterThan, order) => (order == Ordering::Greater).then_some(offered),
        (Selector::LessThan, Ordering::Less) => Some(offered),
        (Selector::LessThan, _) => wanted.slower(),
        (Selector::Exactly, order) => (order == Ordering::Equal).then_some(wanted),
        _ => Some(offered),
    }
}

/// The slower of two rates.
fn slower(a: Rate, b: Rate) -> Rate {
    if b.cmp_speed(a) == Ordering::Less {
        b
    } else {
        a
    }
}

/// The rate a port runs at, with the extended speeds where its CapabilityMask says it has
/// them (`ib_port_info_compute_rate` as OpenSM calls it for an endport).
pub(super) fn active_rate(info: &PortInfoRepr) -> Rate {
    port_rate(info, extended(info))
}

/// A port's rate code from its active width and speed (`ib_port_info_compute_rate`), with the
/// extended speeds (FDR, EDR) where the port runs them.
fn port_rate(info: &PortInfoRepr, extended: bool) -> Rate {
    // Per width: 1x, 4x, 8x, 12x, 2x.
    let by_width = |rates: [u8; 5]| {
        Rate::from(match info.link_width_active {
            2 => rates[1],
            4 => rates[2],
            8 => rates[3],
            16 => rates[4],
            _ => rates[0],
        })
    };
    if extended {
        match info.link_speed_ext_active {
            1 => return by_width([11, 12, 13, 14, 19]),
            2 => return by_width([15, 16, 17, 18, 20]),
            _ => {}
        }
    }
    match info.link_speed_active {
        2 => by_width([5, 6, 7, 8, 3]),
        4 => by_width([3, 7, 9, 10, 6]),
        _ => by_width([2, 3, 6, 4, 5]),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::sa::tests::{Outcome, ask, serving_changed};
    use crate::sa::{Sa, SaConfig};
    use crate::testing::{Fabric, sa_request};
    use ibqos_exchange::Peer;
    use ibqos_fabric::routing::Unlayered;
    use ibqos_mad::sa::{PathRecordMask, SaAttributeId, SaRecord};
    use ibqos_qos::policy::{QosLevel, QosPolicy};

    /// A routing that spends SLs, as LASH's lanes: each path's SL comes from its LIDs, whatever
    /// the hint, and is never the default SL 0.
    #[derive(Debug)]
    struct Lanes;

    impl Layering for Lanes {
        fn path_sl(&self, _hint: u8, slid: u16, dlid: u16) -> u8 {
            ((slid + dlid) % 15 + 1) as u8
        }
    }

    /// The SL `Lanes` gives every path from H1 to H2 of the two-switch fabric, once swept.
    fn lane(fabric: &Fabric) -> u8 {
        let (slid, dlid) = h1_to_h2(fabric);
        Lanes.path_sl(0, slid, dlid)
    }

    fn h1_to_h2(fabric: &Fabric) -> (u16, u16) {
        let lid = |name| fabric.lid_of(fabric.port_of(name, 1));
        (lid("H1"), lid("H2"))
    }

    /// The SA of a sweep of the two-switch fabric with `config`, its paths' SLs from `layering`
    /// and the SL2VL table of H1's port `h1_sl2vl` when given.
    fn sa_with(
        config: SaConfig,
        layering: Arc<dyn Layering>,
        h1_sl2vl: Option<[u8; 16]>,
    ) -> (Fabric, Sa) {
        let two_switch = Fabric::two_switch();
        let h1 = two_switch.port_of("H1", 1);
        let guid = two_switch.emulator.topology().node(h1.node).unwrap().guid;
        serving_changed(config, |db| {
            db.layering = Some(layering);
            if let Some(vls) = h1_sl2vl {
                let table = SlToVlMappingTableRepr { vls };
                db.sl2vl.insert(guid, 2, [(0, 1)], table);
            }
        })
    }

    /// The SLs of the PathRecords a GetTable from H1 to H2 answers, requesting `sl` if given.
    fn path_sls(sa: &mut Sa, fabric: &Fabric, sl: Option<u8>) -> Vec<u8> {
        let (slid, dlid) = h1_to_h2(fabric);
        let mut mask = PathRecordMask::SLID.0 | PathRecordMask::DLID.0;
        if sl.is_some() {
            mask |= PathRecordMask::SL.0;
        }
        let mad = sa_request(
            Method::GetTable,
            SaAttributeId::PathRecord,
            mask,
            0,
            |data| {
                let mut record = PathRecord::new_unchecked(data);
                record.set_slid(slid);
                record.set_dlid(dlid);
                record.set_sl(sl.unwrap_or(0));
            },
        );
        let Outcome::Answered(_, Status::OK, records) = ask(sa, fabric, &mad, Peer::lid(slid))
        else {
            panic!("no answer");
        };
        records
            .into_iter()
            .map(|record| match record {
                SaRecord::PathRecord(path) => path.sl,
                other => panic!("not a PathRecord: {other:?}"),
            })
            .collect()
    }

    /// A policy whose only level, the default, has SL 3.
    fn level_sl_3() -> QosPolicy {
        QosPolicy {
            qos_levels: vec![QosLevel {
                name: "DEFAULT".into(),
                sl: 3,
                ..QosLevel::default()
            }],
            ..QosPolicy::default()
        }
    }

    #[test]
    fn the_routings_sl_replaces_the_policys_and_an_explicit_other_sl_gets_no_path() {
        let config = SaConfig {
            qos: true,
            policy: Some(level_sl_3()),
            ..SaConfig::default()
        };
        let (fabric, mut sa) = sa_with(config.clone(), Arc::new(Lanes), None);
        let lane = lane(&fabric);
        assert_ne!(lane, 3, "the test needs a lane other than the level's SL");
        assert_eq!(path_sls(&mut sa, &fabric, None), [lane]);
        // The level's SL passes ERR 1F1F, then the routing's differs: ERR 1F2A, no record.
        assert_eq!(path_sls(&mut sa, &fabric, Some(3)), [0u8; 0]);
        // The lane is not the level's: ERR 1F1F comes first.
        assert_eq!(path_sls(&mut sa, &fabric, Some(lane)), [0u8; 0]);
        // Without a routing that spends SLs, the level's SL stands, and only it may be asked.
        let (fabric, mut sa) = sa_with(config, Arc::new(Unlayered), None);
        assert_eq!(path_sls(&mut sa, &fabric, None), [3]);
        assert_eq!(path_sls(&mut sa, &fabric, Some(3)), [3]);
        assert_eq!(path_sls(&mut sa, &fabric, Some(lane)), [0u8; 0]);
    }

    #[test]
    fn an_explicit_sl_the_routing_gives_is_answered() {
        let (fabric, mut sa) = sa_with(SaConfig::default(), Arc::new(Lanes), None);
        let lane = lane(&fabric);
        assert_eq!(path_sls(&mut sa, &fabric, Some(lane)), [lane]);
        assert_eq!(path_sls(&mut sa, &fabric, Some((lane + 1) % 16)), [0u8; 0]);
    }

    #[test]
    fn the_routings_sl_is_not_checked_for_vl15() {
        let lane = lane(&sa_with(SaConfig::default(), Arc::new(Lanes), None).0);
        // H1's port drops the lane's SL (VL15), and keeps SL 0 on VL 0.
        let mut vls = [0; 16];
        vls[usize::from(lane)] = DROP_VL;
        let config = SaConfig {
            qos: true,
            ..SaConfig::default()
        };
        let (fabric, mut sa) = sa_with(config.clone(), Arc::new(Lanes), Some(vls));
        // SL 0 passes the VL15 check; the routing then gives the lane, unchecked.
        assert_eq!(path_sls(&mut sa, &fabric, None), [lane]);
        // Asked for explicitly, the lane fails the check that comes first (ERR 1F24).
        assert_eq!(path_sls(&mut sa, &fabric, Some(lane)), [0u8; 0]);
        let (fabric, mut sa) = sa_with(config, Arc::new(Unlayered), Some(vls));
        assert_eq!(path_sls(&mut sa, &fabric, None), [0]);
    }

    #[test]
    fn rates_compare_by_speed_not_code() {
        // 5 Gb/s (code 5) is slower than 10 Gb/s (code 3).
        assert_eq!(slower(Rate::Gbps5, Rate::Gbps10), Rate::Gbps5);
        assert_eq!(slower(Rate::Gbps10, Rate::Gbps5), Rate::Gbps5);
        let both = bit::RATE_SELECTOR | bit::RATE;
        let less = |wanted| select_rate(both, Selector::LessThan, wanted, Rate::Gbps40);
        // OpenSM ranks 28 Gb/s (FDR 2x, 64b/66b) just below 40: "less than 40" is 28.
        assert_eq!(less(Rate::Gbps40), Some(Rate::Gbps28));
        assert_eq!(less(Rate::Gbps2_5), None);
        assert_eq!(less(Rate::Gbps56), Some(Rate::Gbps40));
    }

    #[test]
    fn selectors_apply_as_opensm_applies_them() {
        use Selector::{Exactly, GreaterThan, Largest, LessThan};
        let both = bit::MTU_SELECTOR | bit::MTU;
        // Path offers 4 (2048).
        assert_eq!(select(both, both, GreaterThan, 3, 4), Some(4));
        assert_eq!(select(both, both, GreaterThan, 4, 4), None);
        assert_eq!(select(both, both, LessThan, 4, 4), Some(3));
        assert_eq!(select(both, both, LessThan, 1, 4), None);
        assert_eq!(select(both, both, Exactly, 3, 4), Some(3));
        assert_eq!(select(both, both, Exactly, 5, 4), None);
        assert_eq!(select(both, both, Largest, 5, 4), Some(4));
        // The selector alone is ignored.
        assert_eq!(select(bit::MTU_SELECTOR, both, GreaterThan, 5, 4), Some(4));
    }

    #[test]
    fn qdr_4x_is_40_gbps_and_sdr_1x_is_2_5() {
        let mut info = PortInfoRepr::parse(&ibqos_mad::PortInfo::new_unchecked([0u8; 64])).unwrap();
        info.link_width_active = 2;
        info.link_speed_active = 4;
        assert_eq!(port_rate(&info, false), Rate::Gbps40);
        info.link_width_active = 1;
        info.link_speed_active = 1;
        assert_eq!(port_rate(&info, false), Rate::Gbps2_5);
        info.link_width_active = 2;
        info.link_speed_ext_active = 2;
        assert_eq!(port_rate(&info, true), Rate::Gbps100);
    }
}
