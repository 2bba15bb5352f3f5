//! The records the SA answers, each as OpenSM 3.3.23 selects them: which records exist, which
//! ComponentMask bits it compares (bits it does not implement are ignored, never an error), and
//! which methods each attribute takes.
//!
//! Partitions: the P_Key tables are those the last sweep read and programmed. As OpenSM, every
//! record of a port (a switch's: of the port the record names) is hidden from a requester that
//! shares no partition with it (`osm_physp_share_pkey` in each osm_sa_*_record.c).

use ibqos_mad::sa::{
    GuidInfoRecordRepr, LftRecord, LftRecordRepr, LinkRecord, LinkRecordRepr, MftRecordRepr,
    NodeRecord, NodeRecordRepr, PKeyTableRecordRepr, PortInfoRecord, PortInfoRecordRepr, Record,
    SA_CLASS_VERSION, SaAttributeId, SaCapabilityMask, SaCapabilityMask2, SlToVlTableRecord,
    SlToVlTableRecordRepr, SmInfoRecord, SmInfoRecordRepr, SwitchInfoRecord, SwitchInfoRecordRepr,
    VlArbTableRecord, VlArbTableRecordRepr,
};
use ibqos_mad::{
    ClassPortInfoRepr, GuidInfoRepr, LinearForwardingTableRepr, Method,
    MulticastForwardingTableRepr, NodeDescriptionRepr, PKeyTableRepr, PerfCapabilityMask,
    SlToVlMappingTableRepr, SmInfoRepr, SmState, Status, VlArbBlock, VlArbitrationTable,
    VlArbitrationTableRepr,
};

use ibqos_qos::policy::ResolvedPolicy;

use super::db::SaDb;
use super::{Query, Records, SaConfig, path};
use crate::engine::subnet::PortKey;

/// Whether a record passes ComponentMask bit `bit`: the bit is clear, or the values are equal.
fn component<T: PartialEq>(mask: u64, bit: u32, template: T, value: T) -> bool {
    mask & (1 << bit) == 0 || template == value
}

/// The answer to a query for `attribute`: records or an error status; `None` for an attribute
/// the SA does not serve (dropped, as OpenSM drops it: ERR 1A01). `act_count` is the SM's
/// SMInfo ActCount, for its own SMInfoRecord.
pub(super) fn answer(
    db: &SaDb,
    config: &SaConfig,
    policy: Option<&ResolvedPolicy>,
    act_count: u32,
    attribute: SaAttributeId,
    query: &Query<'_>,
) -> Option<Result<Records, Status>> {
    use SaAttributeId as A;
    let get_or_table = matches!(query.method, Method::Get | Method::GetTable);
    let unsupported = Some(Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED));
    Some(match attribute {
        A::ClassPortInfo if query.method != Method::Get => Err(Status::SA_REQ_INVALID),
        A::ClassPortInfo => Ok(class_port_info(config)),
        A::NodeRecord
        | A::PortInfoRecord
        | A::SlToVlMappingTableRecord
        | A::SwitchInfoRecord
        | A::LinearForwardingTableRecord
        | A::MulticastForwardingTableRecord
        | A::SmInfoRecord
        | A::LinkRecord
        | A::VlArbitrationTableRecord
        | A::PathRecord
            if !get_or_table =>
        {
            return unsupported;
        }
        A::NodeRecord => Ok(node_records(db, query)),
        A::PortInfoRecord => Ok(port_info_records(db, query)),
        A::SlToVlMappingTableRecord => Ok(sl2vl_records(db, query)),
        A::VlArbitrationTableRecord => Ok(vlarb_records(db, query)),
        A::SwitchInfoRecord => Ok(switch_info_records(db, query)),
        A::LinearForwardingTableRecord => Ok(lft_records(db, query)),
        A::SmInfoRecord => Ok(sm_info_records(db, config, act_count, query)),
        A::LinkRecord => Ok(link_records(db, query)),
        A::PathRecord => path::path_records(db, config, policy, query),
        A::MulticastForwardingTableRecord => Ok(mft_records(db, query)),
        A::MultiPathRecord if query.method != Method::GetMulti => return unsupported,
        A::MultiPathRecord => path::multi_path_records(db, config, policy, query),
        A::GuidInfoRecord if get_or_table => Ok(guid_info_records(db, query)),
        A::PKeyTableRecord if !get_or_table => return unsupported,
        // P_KeyTableRecords go only to a requester with the SA's key (osm_sa_pkey_record.c).
        A::PKeyTableRecord if query.sm_key != config.sa_key => Err(Status::SA_REQ_INVALID),
        A::PKeyTableRecord => Ok(p_key_table_records(db, query)),
        _ => return None,
    })
}

/// The SA's ClassPortInfo as OpenSM 3.3.23 fills it (osm_sa_class_port_info.c:73-190):
/// CapabilityMask 0x2602 (GetSetNotice, UD multicast, MultiPath, PortInfo CapabilityMask
/// match), CapabilityMask2 0xB5E8 without QoS and with the QoS bit when on, RespTimeValue 16,
/// redirect QP 1, the well-known Q_Key for redirect and traps, and trap QP 0.
fn class_port_info(config: &SaConfig) -> Records {
    use SaCapabilityMask as C;
    use SaCapabilityMask2 as C2;
    const RESP_TIME_VALUE: u8 = 16;
    const QP1_QKEY: u32 = 0x8001_0000;
    let capabilities = C::IS_NOTICE_SUPPORTED
        | C::IS_UD_MULTICAST_SUPPORTED
        | C::IS_MULTI_PATH_SUPPORTED
        | C::IS_PORT_INFO_CAP_MASK_MATCH_SUPPORTED;
    let mut capabilities2 = C2::IS_MCAST_TOP_SUPPORTED
        | C2::IS_ALIAS_GUIDS_SUPPORTED
        | C2::IS_FULL_PORT_INFO_RECORD_SUPPORTED
        | C2::IS_EXTENDED_SPEEDS_SUPPORTED
        | C2::IS_MULTICAST_SERVICE_RECORDS_SUPPORTED
        | C2::IS_PORT_INFO_CAP_MASK2_MATCH_SUPPORTED
        | C2::IS_SEND_ONLY_FULL_MEMBER_SUPPORTED
        | C2::IS_LINK_WIDTH_2X_SUPPORTED
        | C2::IS_LINK_SPEED_HDR_SUPPORTED;
    if config.qos {
        capabilities2 |= C2::IS_QOS_SUPPORTED;
    }
    let mut info = ClassPortInfoRepr::parse_bytes(&[0u8; 72]).expect("72 bytes");
    info.base_version = 1;
    info.class_version = SA_CLASS_VERSION;
    info.capability_mask = PerfCapabilityMask(capabilities.0);
    info.capability_mask2 = capabilities2.0;
    info.resp_time_value = RESP_TIME_VALUE;
    info.redirect_qp = 1;
    info.redirect_q_key = QP1_QKEY;
    info.trap_q_key = QP1_QKEY;
    let mut records = Records::new(ClassPortInfoRepr::SIZE);
    records.push(&info);
    records
}

/// NodeRecords (osm_sa_node_record.c:70-352): a switch by its port 0, a CA or router by each
/// port with a LID, the NodeInfo's PortGUID and LocalPortNum those of the port.
fn node_records(db: &SaDb, query: &Query<'_>) -> Records {
    let mask = query.component_mask;
    let template = NodeRecordRepr::parse(&NodeRecord::new_unchecked(query.template)).ok();
    let mut records = Records::new(NodeRecordRepr::SIZE);
    let Some(t) = template else {
        return records;
    };
    for (key, port) in db.endports() {
        let Some(node) = db.node(key.node) else {
            continue;
        };
        if mask & 1 != 0 && !db.has_lid(key, t.lid) {
            continue;
        }
        if !db.share_pkey(query.requester, key) {
            continue;
        }
        let mut info = node.info;
        info.port_guid = port.guid;
        info.local_port_num = key.port;
        let ti = &t.node_info;
        let matches = component(mask, 2, ti.base_version, info.base_version)
            && component(mask, 3, ti.class_version, info.class_version)
            && component(mask, 4, ti.node_type, info.node_type)
            && component(mask, 5, ti.num_ports, info.num_ports)
            && component(mask, 6, ti.system_image_guid, info.system_image_guid)
            && component(mask, 7, ti.node_guid, info.node_guid)
            && component(mask, 8, ti.port_guid, info.port_guid)
            && component(mask, 9, ti.partition_cap, info.partition_cap)
            && component(mask, 10, ti.device_id, info.device_id)
            && component(mask, 11, ti.revision, info.revision)
            && component(mask, 12, ti.local_port_num, info.local_port_num)
            && component(mask, 13, ti.vendor_id, info.vendor_id);
        let description = description_of(&node.description);
        if !matches || !component(mask, 14, t.description.bytes, description.bytes) {
            continue;
        }
        let record = NodeRecordRepr {
            lid: port.lid,
            node_info: info,
            description,
        };
        records.push(&record);
    }
    records
}

/// A NodeDescription from the text discovery kept.
fn description_of(text: &str) -> NodeDescriptionRepr {
    let mut bytes = [0u8; 64];
    let len = text.len().min(64);
    bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
    NodeDescriptionRepr { bytes }
}

/// PortInfoRecords (osm_sa_portinfo_record.c:74-608): by LID, the ports of that LID's node
/// whose LID range holds it (every port of a switch, which all answer by port 0's LID); else
/// every port. The M_Key is zeroed for an untrusted requester.
fn port_info_records(db: &SaDb, query: &Query<'_>) -> Records {
    const LID: u64 = 1 << 0;
    const PORT_NUM: u64 = 1 << 1;
    let mask = query.component_mask;
    let mut records = Records::new(PortInfoRecordRepr::SIZE);
    let Ok(t) = PortInfoRecordRepr::parse(&PortInfoRecord::new_unchecked(query.template)) else {
        return records;
    };
    let nodes: Vec<u64> = if mask & LID != 0 {
        db.endport_of_lid(t.lid)
            .map(|k| k.node)
            .into_iter()
            .collect()
    } else {
        db.nodes().map(|node| node.info.node_guid).collect()
    };
    let enhanced = query.attribute_modifier & (1 << 31) != 0;
    for guid in nodes {
        let Some(node) = db.node(guid) else { continue };
        for (&number, port) in &node.ports {
            if mask & PORT_NUM != 0 && number != t.port_num {
                continue;
            }
            let key = PortKey::new(guid, number);
            if mask & LID != 0 && !db.has_lid(key, t.lid) {
                continue;
            }
            if !db.share_pkey(query.requester, key) {
                continue;
            }
            if !port_info_matches(mask, enhanced, &t.port_info, &port.info) {
                continue;
            }
            let mut info = port.info;
            if !query.trusted {
                info.m_key = 0;
            }
            let record = PortInfoRecordRepr {
                lid: db.base_lid(key),
                port_num: number,
                options: 0,
                port_info: info,
            };
            records.push(&record);
        }
    }
    records
}

/// The PortInfo components OpenSM compares (osm_sa_portinfo_record.c `check_physp`); bit
/// numbers from bit 3 follow PortInfo's fields (IB_PIR_COMPMASK_*).
fn port_info_matches(
    mask: u64,
    enhanced: bool,
    t: &ibqos_mad::PortInfoRepr,
    p: &ibqos_mad::PortInfoRepr,
) -> bool {
    let capability = if enhanced {
        p.capability_mask.contains(t.capability_mask)
    } else {
        t.capability_mask == p.capability_mask
    };
    component(mask, 3, t.m_key, p.m_key)
        && component(mask, 4, t.gid_prefix, p.gid_prefix)
        && component(mask, 5, t.lid, p.lid)
        && component(mask, 6, t.master_sm_lid, p.master_sm_lid)
        && (mask & (1 << 7) == 0 || capability)
        && component(mask, 8, t.diag_code, p.diag_code)
        && component(mask, 9, t.m_key_lease_period, p.m_key_lease_period)
        && component(mask, 10, t.local_port_num, p.local_port_num)
        && component(mask, 11, t.link_width_enabled, p.link_width_enabled)
        && component(mask, 12, t.link_width_supported, p.link_width_supported)
        && component(mask, 13, t.link_width_active, p.link_width_active)
        && component(mask, 14, t.link_speed_supported, p.link_speed_supported)
        && component(mask, 15, t.port_state, p.port_state)
        && component(mask, 16, t.port_phys_state, p.port_phys_state)
        && component(
            mask,
            17,
            t.link_down_default_state,
            p.link_down_default_state,
        )
        && component(mask, 18, t.m_key_protect_bits, p.m_key_protect_bits)
        && component(mask, 20, t.lmc, p.lmc)
        && component(mask, 21, t.link_speed_active, p.link_speed_active)
        && component(mask, 22, t.link_speed_enabled, p.link_speed_enabled)
        && component(mask, 23, t.neighbor_mtu, p.neighbor_mtu)
        && component(mask, 24, t.master_sm_sl, p.master_sm_sl)
        && component(mask, 25, t.vl_cap, p.vl_cap)
        && component(mask, 26, t.init_type, p.init_type)
        && component(mask, 27, t.vl_high_limit, p.vl_high_limit)
        && component(
            mask,
            28,
            t.vl_arbitration_high_cap,
            p.vl_arbitration_high_cap,
        )
        && component(mask, 29, t.vl_arbitration_low_cap, p.vl_arbitration_low_cap)
        && component(mask, 31, t.mtu_cap, p.mtu_cap)
        && component(mask, 32, t.vl_stall_count, p.vl_stall_count)
        && component(mask, 33, t.hoq_life, p.hoq_life)
        && component(mask, 34, t.operational_vls, p.operational_vls)
        && component(
            mask,
            35,
            t.partition_enforcement_inbound,
            p.partition_enforcement_inbound,
        )
        && component(
            mask,
            36,
            t.partition_enforcement_outbound,
            p.partition_enforcement_outbound,
        )
        && component(mask, 37, t.filter_raw_inbound, p.filter_raw_inbound)
        && component(mask, 38, t.filter_raw_outbound, p.filter_raw_outbound)
        && component(mask, 39, t.m_key_violations, p.m_key_violations)
        && component(mask, 40, t.p_key_violations, p.p_key_violations)
        && component(mask, 41, t.q_key_violations, p.q_key_violations)
        && component(mask, 42, t.guid_cap, p.guid_cap)
        && component(mask, 44, t.subnet_timeout, p.subnet_timeout)
        && component(mask, 45, t.resp_time_value, p.resp_time_value)
        && component(mask, 46, t.local_phy_errors, p.local_phy_errors)
        && component(mask, 47, t.overrun_errors, p.overrun_errors)
}

/// The (node, port numbers) SL2VL and VLArb records walk, in OpenSM's port table order: every
/// port of a switch, a CA's own port; only the LID's node when the mask has the LID.
fn table_ports(db: &SaDb, lid: Option<u16>) -> Vec<(u64, Vec<u8>)> {
    let endports: Vec<PortKey> = match lid {
        Some(lid) => db.endport_of_lid(lid).into_iter().collect(),
        None => db.endports_by_guid().collect(),
    };
    endports
        .into_iter()
        .filter_map(|endport| {
            let node = db.node(endport.node)?;
            let ports = if node.is_switch() {
                node.ports.keys().copied().collect()
            } else {
                vec![endport.port]
            };
            Some((endport.node, ports))
        })
        .collect()
}

/// SL2VL table records (osm_sa_slvl_record.c:138-180): a switch's every (input, output) pair,
/// output by output; a CA's one table whatever ports the template names, reported with input
/// and output port 0 as OpenSM leaves them. OpenSM answers from its cache, which holds zeros for
/// a table it never programmed (QoS off, a base switch port 0); so does this.
fn sl2vl_records(db: &SaDb, query: &Query<'_>) -> Records {
    let mask = query.component_mask;
    let mut records = Records::new(SlToVlTableRecordRepr::SIZE);
    let Ok(t) = SlToVlTableRecordRepr::parse(&SlToVlTableRecord::new_unchecked(query.template))
    else {
        return records;
    };
    let unprogrammed = SlToVlMappingTableRepr { vls: [0; 16] };
    for (node, ports) in table_ports(db, (mask & 1 != 0).then_some(t.lid)) {
        let switch = db.is_switch(PortKey::new(node, 0));
        for &output in &ports {
            if !db.share_pkey(query.requester, PortKey::new(node, output)) {
                continue;
            }
            let inputs = if switch { ports.clone() } else { vec![0] };
            for input in inputs {
                let named =
                    component(mask, 1, t.in_port, input) && component(mask, 2, t.out_port, output);
                if switch && !named {
                    continue;
                }
                let table = db.sl2vl.get(node, input, output).unwrap_or(&unprogrammed);
                let (in_port, out_port) = if switch { (input, output) } else { (0, 0) };
                let record = SlToVlTableRecordRepr {
                    lid: db.base_lid(PortKey::new(node, output)),
                    in_port,
                    out_port,
                    table: *table,
                };
                records.push(&record);
            }
        }
    }
    records
}

/// VLArb table records (osm_sa_vlarb_record.c:121-127): blocks 1 to 4 of every port, zeros
/// where nothing was programmed, as OpenSM's cache holds them; a CA's own port whatever port
/// the template names.
fn vlarb_records(db: &SaDb, query: &Query<'_>) -> Records {
    let mask = query.component_mask;
    let mut records = Records::new(VlArbTableRecordRepr::SIZE);
    let Ok(t) = VlArbTableRecordRepr::parse(&VlArbTableRecord::new_unchecked(query.template))
    else {
        return records;
    };
    let unprogrammed = VlArbitrationTableRepr::parse(&VlArbitrationTable::new_unchecked([0u8; 64]))
        .expect("64 bytes");
    for (node, ports) in table_ports(db, (mask & 1 != 0).then_some(t.lid)) {
        for port in ports {
            if !db.share_pkey(query.requester, PortKey::new(node, port)) {
                continue;
            }
            for block in VlArbBlock::ALL.map(VlArbBlock::number) {
                let switch = db.is_switch(PortKey::new(node, 0));
                if (switch && !component(mask, 1, t.out_port, port))
                    || !component(mask, 2, t.block, block)
                {
                    continue;
                }
                let table = db.vlarb.get(node, port, block).unwrap_or(&unprogrammed);
                let record = VlArbTableRecordRepr {
                    lid: db.base_lid(PortKey::new(node, port)),
                    out_port: port,
                    block,
                    table: *table,
                };
                records.push(&record);
            }
        }
    }
    records
}

/// SwitchInfoRecords (osm_sa_sw_info_record.c): every switch, or the one whose port 0 has the
/// LID.
fn switch_info_records(db: &SaDb, query: &Query<'_>) -> Records {
    let mut records = Records::new(SwitchInfoRecordRepr::SIZE);
    let Ok(t) = SwitchInfoRecordRepr::parse(&SwitchInfoRecord::new_unchecked(query.template))
    else {
        return records;
    };
    for node in db.nodes().filter(|node| node.is_switch()) {
        let key = PortKey::new(node.info.node_guid, 0);
        let Some(info) = node.switch else { continue };
        if query.component_mask & 1 != 0 && !db.has_lid(key, t.lid) {
            continue;
        }
        if !db.share_pkey(query.requester, key) {
            continue;
        }
        let record = SwitchInfoRecordRepr {
            lid: db.base_lid(key),
            switch_info: info,
        };
        records.push(&record);
    }
    records
}

/// LFT records (osm_sa_lft_record.c:161-172): each switch's blocks up to the last one in use.
fn lft_records(db: &SaDb, query: &Query<'_>) -> Records {
    let mask = query.component_mask;
    let mut records = Records::new(LftRecordRepr::SIZE);
    let Ok(t) = LftRecordRepr::parse(&LftRecord::new_unchecked(query.template)) else {
        return records;
    };
    let switches = db.nodes().filter(|node| node.is_switch());
    let tables = switches.filter_map(|n| Some((n.info.node_guid, db.lfts.get(&n.info.node_guid)?)));
    for (guid, lft) in tables {
        let key = PortKey::new(guid, 0);
        if mask & 1 != 0 && !db.has_lid(key, t.lid) {
            continue;
        }
        if !db.share_pkey(query.requester, key) {
            continue;
        }
        for (block, ports) in lft.chunks(64).enumerate() {
            let block = block as u16;
            if !component(mask, 1, t.block, block) {
                continue;
            }
            let mut table = LinearForwardingTableRepr {
                ports: [LinearForwardingTableRepr::NO_ROUTE; 64],
            };
            table.ports[..ports.len()].copy_from_slice(ports);
            let record = LftRecordRepr {
                lid: db.base_lid(key),
                block,
                table,
            };
            records.push(&record);
        }
    }
    records
}

/// MFT records (osm_sa_mft_record.c:112-217), switch by switch in OpenSM's table order. Only
/// switches sharing a partition with the requester and with multicast (MulticastFDBCap not 0)
/// answer. Each gives every block up to the highest one programmed (none programmed: no record),
/// and every position of the switch's ports 0..=N. Or it gives the one block and position the mask
/// names, if the switch has them. A block or position the sweep did not program reads as empty
/// masks.
fn mft_records(db: &SaDb, query: &Query<'_>) -> Records {
    const LID: u64 = 1 << 0;
    const POSITION: u64 = 1 << 1;
    const BLOCK: u64 = 1 << 3;
    const PORTS_PER_POSITION: u16 = 16;
    let mask = query.component_mask;
    let mut records = Records::new(MftRecordRepr::SIZE);
    let Ok(t) = MftRecordRepr::parse_bytes(query.template) else {
        return records;
    };
    for node in db.nodes().filter(|node| node.is_switch()) {
        let guid = node.info.node_guid;
        let key = PortKey::new(guid, 0);
        if !db.share_pkey(query.requester, key)
            || (mask & LID != 0 && !db.has_lid(key, t.lid))
            || node.switch.is_none_or(|info| info.multicast_fdb_cap == 0)
        {
            continue;
        }
        let in_use = db.mfts.range((guid, 0, 0)..=(guid, u16::MAX, u8::MAX));
        let Some(max_block) = in_use.map(|(&(_, block, _), _)| block).max() else {
            continue;
        };
        let max_position =
            ((u16::from(node.info.num_ports) + 1).div_ceil(PORTS_PER_POSITION) - 1) as u8;
        let blocks = match mask & BLOCK {
            0 => 0..=max_block,
            _ if t.block > max_block => continue,
            _ => t.block..=t.block,
        };
        let positions = match mask & POSITION {
            0 => 0..=max_position,
            _ if t.position > max_position => continue,
            _ => t.position..=t.position,
        };
        for block in blocks {
            for position in positions.clone() {
                let port_masks = db
                    .mfts
                    .get(&(guid, block, position))
                    .copied()
                    .unwrap_or_default();
                records.push(&MftRecordRepr {
                    lid: db.base_lid(key),
                    position,
                    block,
                    table: MulticastForwardingTableRepr { port_masks },
                });
            }
        }
    }
    records
}

/// SMInfoRecords (osm_sa_sminfo_record.c `osm_smir_rcv_process`): this SM, the master, then
/// every other SM known, by port GUID, as it last answered. Mask bits honoured: 0 LID, 2 GUID,
/// 5 priority, 6 state. This SM's ActCount is `act_count`, the SMPs it sent so far (OpenSM's
/// `qp0_mads_sent`); another SM's is the one its SMInfo last gave.
fn sm_info_records(db: &SaDb, config: &SaConfig, act_count: u32, query: &Query<'_>) -> Records {
    let mask = query.component_mask;
    let mut records = Records::new(SmInfoRecordRepr::SIZE);
    let (Ok(t), Some(sm)) = (
        SmInfoRecordRepr::parse(&SmInfoRecord::new_unchecked(query.template)),
        db.sm_port,
    ) else {
        return records;
    };
    let Some(port) = db.port(sm) else {
        return records;
    };
    let own = SmInfoRepr {
        guid: port.guid,
        sm_key: 0,
        act_count,
        priority: config.sm_priority,
        sm_state: SmState::Master,
    };
    let mut remotes = db.remote_sms.clone();
    remotes.sort_by_key(|sm| sm.guid);
    let sms = std::iter::once((sm, own)).chain(remotes.into_iter().filter_map(|info| {
        let key = db.endport_of_guid(info.guid)?;
        Some((key, SmInfoRepr { sm_key: 0, ..info }))
    }));
    for (key, sm_info) in sms {
        let Some(lid) = db.port(key).map(|p| p.lid) else {
            continue;
        };
        let record = SmInfoRecordRepr { lid, sm_info };
        let ts = &t.sm_info;
        let rs = &record.sm_info;
        if (mask & 1 == 0 || db.has_lid(key, t.lid))
            && component(mask, 2, ts.guid, rs.guid)
            && component(mask, 5, ts.priority, rs.priority)
            && component(mask, 6, ts.sm_state, rs.sm_state)
        {
            records.push(&record);
        }
    }
    records
}

/// LinkRecords (osm_sa_link_record.c `lr_rcv_get_port_links`): one per direction of a link,
/// from the ports of the node the FromLID names, else into those of the node the ToLID names,
/// else from every port of every node in OpenSM's node table order; a LID nobody has gives no
/// record.
fn link_records(db: &SaDb, query: &Query<'_>) -> Records {
    const FROM_LID: u64 = 1 << 0;
    const TO_LID: u64 = 1 << 3;
    let mask = query.component_mask;
    let mut records = Records::new(LinkRecordRepr::SIZE);
    let Ok(t) = LinkRecordRepr::parse(&LinkRecord::new_unchecked(query.template)) else {
        return records;
    };
    let node_of = |bit: u64, lid: u16| -> Result<Option<u64>, ()> {
        if mask & bit == 0 {
            return Ok(None);
        }
        db.endport_of_lid(lid).map(|key| Some(key.node)).ok_or(())
    };
    let (Ok(from_node), Ok(to_node)) = (node_of(FROM_LID, t.from_lid), node_of(TO_LID, t.to_lid))
    else {
        return records;
    };
    // A node's ports with links, 1 and up.
    let linked = |guid: u64| -> Vec<PortKey> {
        db.node(guid).map_or_else(Vec::new, |node| {
            node.ports
                .keys()
                .filter(|&&n| n != 0)
                .map(|&n| PortKey::new(guid, n))
                .collect()
        })
    };
    let links: Vec<(PortKey, PortKey)> = match (from_node, to_node) {
        (Some(node), _) => linked(node)
            .into_iter()
            .filter_map(|from| Some((from, db.peer(from)?)))
            .collect(),
        (None, Some(node)) => linked(node)
            .into_iter()
            .filter_map(|to| Some((db.peer(to)?, to)))
            .collect(),
        (None, None) => db
            .nodes()
            .flat_map(|node| linked(node.info.node_guid))
            .filter_map(|from| Some((from, db.peer(from)?)))
            .collect(),
    };
    for (from, to) in links {
        let (from_lid, to_lid) = (db.base_lid(from), db.base_lid(to));
        if from_lid == 0
            || to_lid == 0
            || from_node.is_some_and(|node| node != from.node)
            || to_node.is_some_and(|node| node != to.node)
            || !component(mask, 1, t.from_port, from.port)
            || !component(mask, 2, t.to_port, to.port)
            // The link's ends share a partition, and its source shares one with the
            // requester (osm_sa_link_record.c:138-151).
            || !db.share_pkey(from, to)
            || !db.share_pkey(from, query.requester)
        {
            continue;
        }
        let record = LinkRecordRepr {
            from_lid,
            from_port: from.port,
            to_port: to.port,
            to_lid,
        };
        records.push(&record);
    }
    records
}

/// GUIDInfoRecords (osm_sa_guidinfo_record.c `sa_gir_create_gir`): node by node, a switch's
/// port 0 and a CA's ports, each with a GUIDCap, one record per block of 8; block 0 starts with
/// the port GUID and no alias GUIDs are assigned. A mask on GUID0 (block 0) asks for the
/// requester's own port; on the others, for empty entries.
fn guid_info_records(db: &SaDb, query: &Query<'_>) -> Records {
    let mask = query.component_mask;
    let mut records = Records::new(GuidInfoRecordRepr::SIZE);
    let Ok(t) = GuidInfoRecordRepr::parse_bytes(query.template) else {
        return records;
    };
    let requester_guid = db.port(query.requester).map_or(0, |p| p.guid);
    let wanted_guid = if mask & (1 << 4) != 0 {
        let wanted = if t.block == 0 { requester_guid } else { 0 };
        if t.guids.guids[0] != wanted {
            return records;
        }
        Some(wanted).filter(|guid| *guid != 0)
    } else {
        None
    };
    if (1..8).any(|i| mask & (1 << (4 + i)) != 0 && t.guids.guids[i] != 0) {
        return records;
    }
    for node in db.nodes() {
        let guid = node.info.node_guid;
        let ports = node
            .ports
            .iter()
            .filter(|(n, _)| !node.is_switch() || **n == 0);
        for (&number, port) in ports {
            let key = PortKey::new(guid, number);
            if port.info.guid_cap == 0
                || wanted_guid.is_some_and(|wanted| wanted != port.guid)
                || (mask & 1 != 0 && t.lid != 0 && !db.has_lid(key, t.lid))
                || !db.share_pkey(key, query.requester)
            {
                continue;
            }
            let blocks = port.info.guid_cap.div_ceil(8);
            for block in 0..blocks {
                if mask & (1 << 1) != 0 && block != t.block {
                    continue;
                }
                let mut guids = [0u64; 8];
                if block == 0 {
                    guids[0] = port.guid;
                }
                let record = GuidInfoRecordRepr {
                    lid: db.base_lid(key),
                    block,
                    guids: GuidInfoRepr { guids },
                };
                records.push(&record);
            }
        }
    }
    records
}

/// P_KeyTableRecords (osm_sa_pkey_record.c): port by port in OpenSM's port table order (every
/// port of a switch, a CA's own port), each block the sweep read of that port, as the port
/// holds it after the partition manager's Sets.
fn p_key_table_records(db: &SaDb, query: &Query<'_>) -> Records {
    const LID: u64 = 1 << 0;
    const BLOCK: u64 = 1 << 1;
    const PORT: u64 = 1 << 2;
    let mask = query.component_mask;
    let mut records = Records::new(PKeyTableRecordRepr::SIZE);
    let Ok(t) = PKeyTableRecordRepr::parse_bytes(query.template) else {
        return records;
    };
    let endports: Vec<PortKey> = if mask & LID != 0 {
        db.endport_of_lid(t.lid).into_iter().collect()
    } else {
        db.endports_by_guid().collect()
    };
    for endport in endports {
        let Some(node) = db.node(endport.node) else {
            continue;
        };
        let ports: Vec<u8> = if !node.is_switch() {
            vec![endport.port]
        } else if mask & PORT != 0 {
            vec![t.port_num]
        } else {
            node.ports.keys().copied().collect()
        };
        for number in ports {
            let key = PortKey::new(endport.node, number);
            let Some(table) = db.pkeys.get(&key) else {
                continue;
            };
            if !db.share_pkey(query.requester, key) {
                continue;
            }
            for (block, p_keys) in table.chunks_exact(32).enumerate() {
                let block = block as u16;
                if mask & BLOCK != 0 && block != t.block {
                    continue;
                }
                let Ok(p_keys) = <[u16; 32]>::try_from(p_keys) else {
                    continue;
                };
                let record = PKeyTableRecordRepr {
                    lid: db.base_lid(key),
                    // OpenSM writes BlockNum in host (little-endian) byte order
                    // (osm_sa_pkey_record.c:98 `block_num = block` into an ib_net16_t), and
                    // saquery prints it as such: answered the same, so clients see the block
                    // numbers they see from OpenSM.
                    block: block.swap_bytes(),
                    port_num: number,
                    table: PKeyTableRepr { p_keys },
                };
                records.push(&record);
            }
        }
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::tests::{Outcome, ask, serving, serving_changed};
    use crate::sa::{DEFAULT_SA_KEY, Sa};
    use crate::testing::sa_request;
    use ibqos_exchange::Peer;
    use ibqos_fabric::NodeKind;
    use ibqos_mad::sa::SaRecord;

    #[test]
    fn each_table_holds_one_record_per_thing_the_fabric_has() {
        let (fabric, mut sa) = serving(SaConfig::default());
        let sm = Peer::lid(fabric.lid_of(fabric.port));
        let topology = fabric.emulator.topology();
        let switches = topology
            .nodes()
            .filter(|(_, n)| n.kind == NodeKind::Switch)
            .count();
        let ca_ports: usize = topology
            .nodes()
            .filter(|(_, n)| n.kind != NodeKind::Switch)
            .map(|(_, n)| n.existing_ports().count())
            .sum();
        let max_lid = topology
            .nodes()
            .flat_map(|(id, n)| {
                let ports: Vec<u8> = n.existing_ports().map(|(p, _)| p).chain([0]).collect();
                ports
                    .into_iter()
                    .map(move |p| ibqos_fabric::PortRef::new(id, p))
            })
            .filter_map(|port| fabric.emulator.port_info(port))
            .map(|info| info.lid)
            .max()
            .unwrap();
        let links = topology.links().count();
        let key = DEFAULT_SA_KEY;
        use SaAttributeId as A;
        // (attribute, method, SM_Key, the answer's status, records)
        let cases = [
            (
                A::NodeRecord,
                Method::GetTable,
                0,
                Status::OK,
                switches + ca_ports,
            ),
            (
                A::NodeRecord,
                Method::GetMulti,
                0,
                Status::METHOD_ATTRIBUTE_UNSUPPORTED,
                0,
            ),
            (
                A::SwitchInfoRecord,
                Method::GetTable,
                0,
                Status::OK,
                switches,
            ),
            // Both directions of every link.
            (A::LinkRecord, Method::GetTable, 0, Status::OK, 2 * links),
            // Every switch's LFT, 64 LIDs a block, up to the highest LID.
            (
                A::LinearForwardingTableRecord,
                Method::GetTable,
                0,
                Status::OK,
                switches * (usize::from(max_lid) / 64 + 1),
            ),
            // The SM itself, alone on the fabric.
            (A::SmInfoRecord, Method::GetTable, 0, Status::OK, 1),
            (A::ClassPortInfo, Method::Get, 0, Status::OK, 1),
            (
                A::ClassPortInfo,
                Method::GetTable,
                0,
                Status::SA_REQ_INVALID,
                0,
            ),
            // P_KeyTableRecords only to a requester with the SA's key.
            (
                A::PKeyTableRecord,
                Method::GetTable,
                0,
                Status::SA_REQ_INVALID,
                0,
            ),
        ];
        for (attribute, method, sm_key, status, count) in cases {
            let request = sa_request(method, attribute, 0, sm_key, |_| {});
            let outcome = ask(&mut sa, &fabric, &request, sm);
            let Outcome::Answered(answered, got, records) = outcome else {
                panic!("{attribute} {method}: dropped")
            };
            assert_eq!(answered, method.response(), "{attribute} {method}");
            assert_eq!(got, status, "{attribute} {method}");
            let n = if got == Status::OK { records.len() } else { 0 };
            assert_eq!(n, count, "{attribute} {method}");
        }
        let request = sa_request(Method::GetTable, A::PKeyTableRecord, 0, key, |_| {});
        let Outcome::Answered(_, Status::OK, records) = ask(&mut sa, &fabric, &request, sm) else {
            panic!("P_KeyTableRecords with the SA's key")
        };
        assert!(
            records
                .iter()
                .all(|r| matches!(r, SaRecord::PKeyTableRecord(_)))
        );
        assert!(!records.is_empty());
    }

    #[test]
    fn a_port_info_records_m_key_shows_only_to_a_trusted_requester() {
        // Every port as holding an M_Key of its own.
        let keyed = |db: &mut SaDb| {
            for (guid, node) in &mut std::sync::Arc::make_mut(&mut db.subnet).nodes {
                for (number, port) in &mut node.ports {
                    port.info.m_key = guid ^ u64::from(*number);
                }
            }
        };
        let (fabric, mut sa) = serving_changed(SaConfig::default(), keyed);
        let sm = Peer::lid(fabric.lid_of(fabric.port));
        let held = |sa: &mut Sa, sm_key: u64| -> Vec<u64> {
            let request = sa_request(
                Method::GetTable,
                SaAttributeId::PortInfoRecord,
                0,
                sm_key,
                |_| {},
            );
            let Outcome::Answered(_, Status::OK, records) = ask(sa, &fabric, &request, sm) else {
                panic!("dropped")
            };
            records
                .iter()
                .filter_map(|r| match r {
                    SaRecord::PortInfoRecord(r) => Some(r.port_info.m_key),
                    _ => None,
                })
                .collect()
        };
        let trusted = held(&mut sa, DEFAULT_SA_KEY);
        let untrusted = held(&mut sa, 0);
        assert_eq!(trusted.len(), untrusted.len());
        assert!(untrusted.iter().all(|key| *key == 0));
        // Every port's own key, to a trusted requester.
        assert!(trusted.iter().all(|key| *key != 0));
        let distinct: std::collections::BTreeSet<_> = trusted.iter().collect();
        assert_eq!(distinct.len(), trusted.len());
    }
}
