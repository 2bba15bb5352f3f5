//! The subnet management agent of one node: the attributes it holds and how it answers a Get or
//! a Set of each, as IBA chapter 14 specifies and ibsim 0.12 (`sim_mad.c`) behaves where the
//! specification leaves room.

use ibqos_mad::{
    Attribute, AttributeId, CapabilityMask, CapabilityMask2, GuidInfoModifier, GuidInfoRepr,
    LftModifier, LinearForwardingTableRepr, MftModifier, MulticastForwardingTableRepr,
    NodeDescriptionRepr, NodeInfoRepr, PKeyTableModifier, PKeyTableRepr, PhysPortState,
    PortInfoModifier, PortInfoRepr, PortState, Priority, SlToVlMappingTableRepr, SlToVlModifier,
    Status, SwitchInfoRepr, VlArbBlock, VlArbEntry, VlArbModifier, VlArbitrationTableRepr,
};

use std::collections::BTreeMap;

use ibqos_fabric::{Node, NodeKind, Port};
use ibqos_qos::VlArbTable;

/// SwitchInfo.LinearFDBCap: ibsim 0.12's `MAXLINEARCAP`, every unicast LID (0xC000).
pub const LINEAR_FDB_CAP: u16 = 0xc000;
/// SwitchInfo.MulticastFDBCap: ibsim's default (`-M`), MLIDs 0xC000-0xC3FF, which are also the
/// only MFT blocks ibsim keeps (0-31, `sim_mad.c`'s `LASTBLOCK32`).
pub const MULTICAST_FDB_CAP: u16 = 1024;
/// NodeInfo.PartitionCap of a CA, router or switch port 0 and SwitchInfo.PartitionEnforcementCap
/// (the P_Key table size of switch external ports), as ibsim presents them.
const CA_PARTITION_CAP: u16 = 64;
const SWITCH_PARTITION_CAP: u16 = 8;
const PARTITION_ENFORCEMENT_CAP: u16 = 64;
/// The full-member default partition, ibsim's P_Key entry 0.
const DEFAULT_PKEY: u16 = 0xffff;
/// ibsim's NodeInfo.Revision.
const REVISION: u32 = 0xa1;
/// ibsim's default SL2VL table `01 23 45 67 89 ab cd e7`: SL n to VL n, SL 15 to VL 7.
const DEFAULT_SL2VL: SlToVlMappingTableRepr = SlToVlMappingTableRepr {
    vls: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 7],
};
/// Entries per VLArbitrationTable block.
const VLARB_BLOCK: usize = 32;
/// PortInfo capabilities ibsim presents on every port: all widths (1x, 4x, 8x, 12x, 2x) and
/// SDR/DDR/QDR.
const WIDTH_SUPPORTED: u8 = 0x1f;
const SPEED_SUPPORTED: u8 = 7;
/// FDR, EDR, HDR, NDR, for ports whose net file line enables an extended speed (ibsim 0.12).
const SPEED_EXT_SUPPORTED: u8 = 0xf;
/// ibsim 0.12's CapabilityMask templates: CA ports and switch port 0 (IsTrap, IsSLMapping,
/// IsSystemImageGUID, IsCapabilityMask2, IsCommunicationManagement, ... as `sim_net.c` lists
/// them; 0.12 dropped 0.10's IsVendorClass); switch external ports have none (IBA leaves it
/// reserved there).
const CA_CAPABILITY_MASK: u32 = 0x0040_c048;
const SWITCH_PORT0_CAPABILITY_MASK: u32 = 0x0000_c048;
/// ibsim 0.12's CapabilityMask2 on CA ports and switch port 0.
const CAPABILITY_MASK2: u16 = 0x0430;
/// GUIDCap: a CA port has 32 GUIDs (alias GUIDs possible), switch port 0 one.
const CA_GUID_CAP: u8 = 32;
/// PortInfo.LinkDownDefaultState Polling.
const LINK_DOWN_DEFAULT_POLLING: u8 = 2;
/// LinkWidth/LinkSpeed/LinkSpeedExt Enabled values that mean "set to Supported" (IBA 14.2.5.6).
const WIDTH_ENABLE_SUPPORTED: u8 = 255;
const SPEED_ENABLE_SUPPORTED: u8 = 15;
const SPEED_EXT_ENABLE_SUPPORTED: u8 = 31;
const SPEED_EXT_DISABLE: u8 = 30;
/// VLStallCount ibsim shows on external ports (port 0 shows 0).
const VL_STALL_COUNT: u8 = 7;
/// The active width (4x) and speed (SDR) ibsim gives every port it builds (`sim_net.c`,
/// `init_ports`). A port shows them until its link trains; an unlinked port and a switch's port 0
/// keep them. diags print 0 as an undefined width, and an SA rates a path from or to a switch by
/// its port 0.
const UNTRAINED_WIDTH_ACTIVE: u8 = 2;
const UNTRAINED_SPEED_ACTIVE: u8 = 1;
/// M_KeyLeasePeriod (s) and SubnetTimeout in ibsim's templates for CA ports and switch port 0
/// (`hcaport`, `hcaport_down`, `smaport`); its switch external ports have 0.
const END_PORT_M_KEY_LEASE_PERIOD: u16 = 0x0ff9;
const END_PORT_SUBNET_TIMEOUT: u8 = 0x1f;
/// RespTimeValue in ibsim's switch port 0 template (`smaport`).
const PORT0_RESP_TIME_VALUE: u8 = 8;
/// LocalPhyErrors in ibsim's template for an unlinked switch port (`swport_down`).
const UNLINKED_SWITCH_PORT_LOCAL_PHY_ERRORS: u8 = 4;

/// One port's agent state: its PortInfo (every field, as last Set) and its tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PortSma {
    pub(crate) info: PortInfoRepr,
    pub(crate) p_keys: Vec<u16>,
    /// GUIDInfo: `GUIDCap` entries, entry 0 the port GUID.
    pub(crate) guids: Vec<u64>,
    /// SLtoVLMappingTable. On a switch, the tables of this port as input port, indexed by
    /// output port (ibsim keeps them on the input port too); on a CA, one table.
    pub(crate) sl2vl: Vec<SlToVlMappingTableRepr>,
    /// VLArbitrationTable, `VLArbitrationLowCap` and `HighCap` entries.
    pub(crate) vlarb_low: Vec<VlArbEntry>,
    pub(crate) vlarb_high: Vec<VlArbEntry>,
    /// PortInfo Sets with ClientReregister: the bit asks the port's clients to register with
    /// the SA again, an action rather than a setting, so it is counted here, not kept.
    pub(crate) client_reregistrations: u32,
    /// MlnxExtendedPortInfo (vendor attribute 0xFF90) as ibsim keeps it: 64 raw bytes, zero on
    /// a port without FDR10 (which the emulator does not model), whatever a Set carried after.
    pub(crate) mlnx_ext_port_info: [u8; 64],
}

/// One node's agent state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeSma {
    pub(crate) info: NodeInfoRepr,
    pub(crate) description: NodeDescriptionRepr,
    /// Indexed by port number like [`Node::ports`].
    pub(crate) ports: Vec<Option<PortSma>>,
    pub(crate) switch: Option<SwitchSma>,
}

/// A switch's SwitchInfo and forwarding tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SwitchSma {
    pub(crate) info: SwitchInfoRepr,
    /// The linear forwarding table, grown on Set; a LID past its end has no route (0xFF).
    pub(crate) lft: Vec<u8>,
    /// The multicast forwarding table blocks Set so far, by (block, position); a block never
    /// Set holds empty masks.
    pub(crate) mft: BTreeMap<MftModifier, MulticastForwardingTableRepr>,
}

/// The port whose attribute a request names: on a switch the modifier's port, on a CA or
/// router the port the SMP arrived at (IBA 14.2.5: CA attributes are per receiving port).
fn target_port(node: &NodeSma, arrival: u8, modifier_port: u32) -> Result<u8, Status> {
    if node.switch.is_none() {
        return Ok(arrival);
    }
    u8::try_from(modifier_port)
        .ok()
        .filter(|&p| p <= node.info.num_ports)
        .ok_or(Status::INVALID_VALUE)
}

/// The port a MlnxExtendedPortInfo names, as ibsim's `do_extportinfo` takes it: the modifier,
/// where 0 on a CA means the port the SMP arrived at.
fn mlnx_ext_port_target(node: &NodeSma, arrival: u8, modifier: u32) -> Result<u8, Status> {
    let port = u8::try_from(modifier)
        .ok()
        .filter(|&p| p <= node.info.num_ports)
        .ok_or(Status::INVALID_VALUE)?;
    Ok(if port == 0 && node.switch.is_none() {
        arrival
    } else {
        port
    })
}

fn widest_width(mask: u8) -> u8 {
    // IBA LinkWidth bits by lane count: 12x, 8x, 4x, 2x, 1x.
    [8, 4, 2, 16, 1]
        .into_iter()
        .find(|bit| mask & bit != 0)
        .unwrap_or(0)
}

fn highest_bit(mask: u8) -> u8 {
    if mask == 0 {
        0
    } else {
        1 << (7 - mask.leading_zeros())
    }
}

impl PortSma {
    /// A port as ibsim 0.10 starts it (the PortInfo templates of `ibsim/sim_net.c:76-129`, set
    /// by `link_ports` :1325-1326 and `connect_ports` :1372-1383): linked
    /// ports Init/LinkUp, unlinked ones Down/Polling, switch port 0 Active/LinkUp; OperVLs =
    /// VLCap, LIDs as the topology presets them, default tables.
    pub(crate) fn new(node: &Node, number: u8, port: &Port) -> PortSma {
        let caps = port.link;
        let is_switch = node.is_switch();
        let port0 = is_switch && number == 0;
        let (port_state, phys) = if port0 {
            (PortState::Active, PhysPortState::LinkUp)
        } else if port.peer.is_some() {
            (PortState::Init, PhysPortState::LinkUp)
        } else {
            (PortState::Down, PhysPortState::Polling)
        };
        let mut capability_mask = match (is_switch, port0) {
            (false, _) => CA_CAPABILITY_MASK,
            (true, true) => SWITCH_PORT0_CAPABILITY_MASK,
            (true, false) => 0,
        } & !CapabilityMask::IS_SL_MAPPING_SUPPORTED.0;
        if caps.sl_mapping_supported {
            capability_mask |= CapabilityMask::IS_SL_MAPPING_SUPPORTED.0;
        }
        let speed_ext_supported = if caps.speed_ext_enabled != 0 {
            SPEED_EXT_SUPPORTED
        } else {
            0
        };
        if speed_ext_supported != 0 {
            capability_mask |= CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED.0;
        }
        let end_port = !is_switch || port0;
        let guid_cap = match (is_switch, port0) {
            (false, _) => CA_GUID_CAP,
            (true, true) => 1,
            (true, false) => 0,
        };
        let info = PortInfoRepr {
            m_key: 0,
            gid_prefix: 0,
            lid: port.lid,
            master_sm_lid: 0,
            capability_mask: CapabilityMask(capability_mask),
            diag_code: 0,
            m_key_lease_period: if end_port {
                END_PORT_M_KEY_LEASE_PERIOD
            } else {
                0
            },
            local_port_num: number,
            link_width_enabled: caps.width_enabled,
            link_width_supported: WIDTH_SUPPORTED,
            link_width_active: UNTRAINED_WIDTH_ACTIVE,
            link_speed_supported: SPEED_SUPPORTED,
            port_state,
            port_phys_state: phys,
            link_down_default_state: LINK_DOWN_DEFAULT_POLLING,
            m_key_protect_bits: 0,
            lmc: port.lmc,
            link_speed_active: UNTRAINED_SPEED_ACTIVE,
            link_speed_enabled: caps.speed_enabled,
            // ibsim: 2048 on ports, 256 on switch port 0.
            neighbor_mtu: if port0 { 1 } else { caps.mtu_cap },
            master_sm_sl: 0,
            vl_cap: caps.vl_cap.encoding(),
            init_type: 0,
            vl_high_limit: 0,
            vl_arbitration_high_cap: caps.vlarb_high_cap,
            vl_arbitration_low_cap: caps.vlarb_low_cap,
            init_type_reply: 0,
            mtu_cap: caps.mtu_cap,
            vl_stall_count: if port0 { 0 } else { VL_STALL_COUNT },
            hoq_life: 0,
            operational_vls: caps.vl_cap.encoding(),
            partition_enforcement_inbound: false,
            partition_enforcement_outbound: false,
            filter_raw_inbound: false,
            filter_raw_outbound: false,
            m_key_violations: 0,
            p_key_violations: 0,
            q_key_violations: 0,
            guid_cap,
            client_reregister: false,
            multicast_pkey_trap_suppression_enabled: 0,
            subnet_timeout: if end_port { END_PORT_SUBNET_TIMEOUT } else { 0 },
            resp_time_value: if port0 { PORT0_RESP_TIME_VALUE } else { 0 },
            local_phy_errors: if is_switch && !port0 && port.peer.is_none() {
                UNLINKED_SWITCH_PORT_LOCAL_PHY_ERRORS
            } else {
                0
            },
            overrun_errors: 0,
            max_credit_hint: 0,
            link_speed_ext_active2: 0,
            link_speed_ext_supported2: 0,
            link_speed_ext_enabled2: 0,
            link_round_trip_latency: 0,
            capability_mask2: CapabilityMask2(if end_port { CAPABILITY_MASK2 } else { 0 }),
            link_speed_ext_active: 0,
            link_speed_ext_supported: speed_ext_supported,
            link_speed_ext_enabled: caps.speed_ext_enabled,
        };
        let p_key_slots = match (node.kind, port0) {
            (NodeKind::Switch, true) => SWITCH_PARTITION_CAP,
            (NodeKind::Switch, false) => PARTITION_ENFORCEMENT_CAP,
            _ => CA_PARTITION_CAP,
        };
        let mut p_keys = vec![0; usize::from(p_key_slots)];
        p_keys[0] = DEFAULT_PKEY;
        let mut guids = vec![0; usize::from(guid_cap)];
        if let Some(first) = guids.first_mut() {
            *first = port.guid;
        }
        let sl2vl_tables = if is_switch {
            usize::from(node.num_ports()) + 1
        } else {
            1
        };
        PortSma {
            info,
            p_keys,
            guids,
            sl2vl: vec![DEFAULT_SL2VL; sl2vl_tables],
            vlarb_low: default_vlarb(caps.vlarb_low_cap, Priority::Low),
            vlarb_high: default_vlarb(caps.vlarb_high_cap, Priority::High),
            client_reregistrations: 0,
            mlnx_ext_port_info: [0; 64],
        }
    }

    /// Whether the port's physical link is up (PortPhysicalState LinkUp).
    pub(crate) fn is_up(&self) -> bool {
        self.info.port_phys_state == PhysPortState::LinkUp
    }

    /// The port's high- or low-priority VL arbitration table: exactly its cap's entries.
    pub(crate) fn vlarb(&self, priority: Priority) -> &[VlArbEntry] {
        match priority {
            Priority::High => &self.vlarb_high,
            Priority::Low => &self.vlarb_low,
        }
    }

    fn vlarb_mut(&mut self, priority: Priority) -> &mut [VlArbEntry] {
        match priority {
            Priority::High => &mut self.vlarb_high,
            Priority::Low => &mut self.vlarb_low,
        }
    }

    /// Holds `table` as its `priority` table, cut to the port's cap: what a Set of every block
    /// by another agent leaves.
    pub(crate) fn hold_vlarb(&mut self, priority: Priority, table: &VlArbTable) {
        let entries = self.vlarb_mut(priority);
        let len = entries.len();
        entries.copy_from_slice(&table.0[..len]);
    }

    /// The entries of `block`, or `None` if the port's cap does not reach it.
    fn vlarb_range(&self, block: VlArbBlock) -> Option<std::ops::Range<usize>> {
        let len = self.vlarb(block.priority()).len();
        let start = if matches!(block, VlArbBlock::Low32To63 | VlArbBlock::High32To63) {
            VLARB_BLOCK
        } else {
            0
        };
        (len > start).then(|| start..len.min(start + VLARB_BLOCK))
    }
}

/// ibsim's default arbitration tables (`sim_net.c`): high {VL0 weight 4, VL1-14 weight 0}, low
/// {VL0 weight 0, VL1-14 weight 4}, cut to the port's cap.
fn default_vlarb(cap: u8, priority: Priority) -> Vec<VlArbEntry> {
    (0..cap)
        .map(|i| match (i, priority) {
            (15.., _) => VlArbEntry::default(),
            (0, Priority::High) | (1.., Priority::Low) => VlArbEntry::new(i, 4),
            _ => VlArbEntry::new(i, 0),
        })
        .collect()
}

impl NodeSma {
    pub(crate) fn new(node: &Node) -> NodeSma {
        let info = NodeInfoRepr {
            base_version: 1,
            class_version: 1,
            node_type: node.kind.into(),
            num_ports: node.num_ports(),
            system_image_guid: node.system_image_guid,
            node_guid: node.guid,
            port_guid: node.guid,
            partition_cap: if node.is_switch() {
                SWITCH_PARTITION_CAP
            } else {
                CA_PARTITION_CAP
            },
            device_id: node.device_id,
            revision: REVISION,
            local_port_num: 0,
            vendor_id: node.vendor_id,
        };
        let description = NodeDescriptionRepr::new(truncate(&node.description, 64))
            .unwrap_or(NodeDescriptionRepr { bytes: [0; 64] });
        let switch = node.is_switch().then(|| SwitchSma {
            info: SwitchInfoRepr {
                linear_fdb_cap: LINEAR_FDB_CAP,
                random_fdb_cap: 0,
                multicast_fdb_cap: MULTICAST_FDB_CAP,
                linear_fdb_top: 0,
                default_port: 0,
                default_multicast_primary_port: 0,
                default_multicast_not_primary_port: 0,
                life_time_value: 0,
                port_state_change: false,
                optimized_sl_to_vl_mapping_programming: u8::from(node.optimized_sl_to_vl),
                lids_per_port: 0,
                partition_enforcement_cap: PARTITION_ENFORCEMENT_CAP,
                inbound_enforcement_cap: false,
                outbound_enforcement_cap: false,
                filter_raw_inbound_cap: true,
                filter_raw_outbound_cap: true,
                enhanced_port0: node.enhanced_port0,
                multicast_fdb_top: 0,
            },
            lft: Vec::new(),
            mft: BTreeMap::new(),
        });
        NodeSma {
            info,
            description,
            ports: node
                .ports
                .iter()
                .enumerate()
                .map(|(n, p)| Some(PortSma::new(node, u8::try_from(n).ok()?, p.as_ref()?)))
                .collect(),
            switch,
        }
    }

    pub(crate) fn port(&self, number: u8) -> Option<&PortSma> {
        self.ports.get(usize::from(number))?.as_ref()
    }

    pub(crate) fn port_mut(&mut self, number: u8) -> Option<&mut PortSma> {
        self.ports.get_mut(usize::from(number))?.as_mut()
    }

    fn existing_port(&self, number: u8) -> Result<&PortSma, Status> {
        self.port(number).ok_or(Status::INVALID_VALUE)
    }

    /// The port whose CapabilityMask says whether the node maps SLs to VLs: a CA's receiving
    /// port, a switch's port 0 (OpenSM checks the same ports before programming SL2VL).
    fn maps_sl_to_vl(&self, arrival: u8) -> bool {
        let port = if self.switch.is_some() { 0 } else { arrival };
        self.port(port).is_some_and(|p| {
            p.info
                .capability_mask
                .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED)
        })
    }

    /// A Get of `id` with `modifier`, arriving at port `arrival`.
    pub(crate) fn get(
        &self,
        arrival: u8,
        id: AttributeId,
        modifier: u32,
    ) -> Result<Attribute, Status> {
        Ok(match id {
            AttributeId::NodeInfo => {
                let mut info = self.info;
                info.local_port_num = arrival;
                info.port_guid = self
                    .existing_port(arrival)?
                    .guids
                    .first()
                    .copied()
                    .unwrap_or(info.node_guid);
                Attribute::NodeInfo(info)
            }
            AttributeId::NodeDescription => Attribute::NodeDescription(self.description),
            AttributeId::SwitchInfo => Attribute::SwitchInfo(
                self.switch
                    .as_ref()
                    .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?
                    .info,
            ),
            AttributeId::GuidInfo => {
                let block =
                    GuidInfoModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
                let port = self.existing_port(if self.switch.is_some() { 0 } else { arrival })?;
                let range = block_range(port.guids.len(), usize::from(block.block), 8)?;
                let mut guids = [0; 8];
                guids[..range.len()].copy_from_slice(&port.guids[range]);
                Attribute::GuidInfo(GuidInfoRepr { guids })
            }
            AttributeId::PortInfo => {
                let m = PortInfoModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
                let number = target_port(self, arrival, m.port.into())?;
                let mut info = self.existing_port(number)?.info;
                // IBA 14.2.5.6: LocalPortNum is the port the SMP arrived at.
                info.local_port_num = arrival;
                Attribute::PortInfo(info)
            }
            AttributeId::PKeyTable => {
                let m = PKeyTableModifier::from(modifier);
                let number = target_port(self, arrival, m.port.into())?;
                let port = self.existing_port(number)?;
                let range = block_range(port.p_keys.len(), usize::from(m.block), 32)?;
                let mut p_keys = [0; 32];
                p_keys[..range.len()].copy_from_slice(&port.p_keys[range]);
                Attribute::PKeyTable(PKeyTableRepr { p_keys })
            }
            AttributeId::SlToVlMappingTable => {
                let (input, output) = self.sl2vl_pair(arrival, modifier)?;
                let table = self.existing_port(input)?.sl2vl.get(usize::from(output));
                Attribute::SlToVlMappingTable(*table.ok_or(Status::INVALID_VALUE)?)
            }
            AttributeId::VlArbitrationTable => {
                let (number, block) = self.vlarb_target(arrival, modifier)?;
                let port = self.existing_port(number)?;
                let range = port.vlarb_range(block).ok_or(Status::INVALID_VALUE)?;
                let mut entries = [VlArbEntry::default(); VLARB_BLOCK];
                entries[..range.len()].copy_from_slice(&port.vlarb(block.priority())[range]);
                Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries })
            }
            AttributeId::LinearForwardingTable => {
                let switch = self
                    .switch
                    .as_ref()
                    .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?;
                let start = lft_block_start(modifier)?;
                let mut ports = [LinearForwardingTableRepr::NO_ROUTE; 64];
                for (slot, lid) in ports.iter_mut().zip(start..) {
                    if let Some(&port) = switch.lft.get(lid) {
                        *slot = port;
                    }
                }
                Attribute::LinearForwardingTable(LinearForwardingTableRepr { ports })
            }
            AttributeId::MulticastForwardingTable => {
                let block = self.mft_block(modifier)?;
                let held = block.and_then(|b| self.switch.as_ref()?.mft.get(&b));
                Attribute::MulticastForwardingTable(held.copied().unwrap_or_default())
            }
            AttributeId::MlnxExtendedPortInfo => {
                let number = mlnx_ext_port_target(self, arrival, modifier)?;
                Attribute::Other {
                    id,
                    data: self.existing_port(number)?.mlnx_ext_port_info,
                }
            }
            _ => return Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED),
        })
    }

    /// The (input, output) pair of an SL2VL Get or per-pair Set; a CA's single table is pair
    /// (arrival, 0).
    fn sl2vl_pair(&self, arrival: u8, modifier: u32) -> Result<(u8, u8), Status> {
        if !self.maps_sl_to_vl(arrival) {
            return Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED);
        }
        if self.switch.is_none() {
            return Ok((arrival, 0));
        }
        match SlToVlModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)? {
            SlToVlModifier::Pair { input, output } => Ok((input, self.sl2vl_output(output)?)),
            _ => Err(Status::INVALID_VALUE),
        }
    }

    /// An output port of SL2VL: any external port, and port 0 only where it is enhanced (a base
    /// port 0 has no VLs of its own, IBA 18.2.4.3).
    fn sl2vl_output(&self, output: u8) -> Result<u8, Status> {
        let enhanced = self.switch.as_ref().is_some_and(|s| s.info.enhanced_port0);
        if output > self.info.num_ports || (output == 0 && !enhanced) {
            return Err(Status::INVALID_VALUE);
        }
        Ok(output)
    }

    /// The MFT block a MulticastForwardingTable modifier names, `None` for a block the switch
    /// does not keep: as in ibsim, a block past MulticastFDBCap or a position past the
    /// switch's ports (⌈(NumPorts + 1) / 16⌉ positions, port 0 included) reads as empty masks
    /// and a Set of it is lost, both with status 0.
    fn mft_block(&self, modifier: u32) -> Result<Option<MftModifier>, Status> {
        let switch = self
            .switch
            .as_ref()
            .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?;
        let m = MftModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
        let blocks = switch.info.multicast_fdb_cap / MftModifier::MLIDS_PER_BLOCK;
        let positions = (u16::from(self.info.num_ports) + 1)
            .div_ceil(u16::from(MftModifier::PORTS_PER_POSITION));
        let kept = m.block() < blocks && u16::from(m.position()) < positions;
        Ok(kept.then_some(m))
    }

    fn vlarb_target(&self, arrival: u8, modifier: u32) -> Result<(u8, VlArbBlock), Status> {
        let m = VlArbModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
        Ok((target_port(self, arrival, m.port.into())?, m.block))
    }

    /// A Set of `attribute` with `modifier` arriving at `arrival`: the value now held, or why
    /// nothing changed. A Set is all or nothing: every check passes before anything is stored.
    /// PortInfo is not handled here: its checks need the link ([`check_port_info`]).
    pub(crate) fn set(
        &mut self,
        arrival: u8,
        modifier: u32,
        attribute: Attribute,
    ) -> Result<Attribute, Status> {
        match attribute {
            Attribute::NodeInfo(_) | Attribute::NodeDescription(_) => {
                Err(Status::METHOD_UNSUPPORTED)
            }
            Attribute::SwitchInfo(new) => {
                let switch = self
                    .switch
                    .as_mut()
                    .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?;
                if new.linear_fdb_top >= switch.info.linear_fdb_cap {
                    return Err(Status::INVALID_VALUE);
                }
                let held = &mut switch.info;
                // The writable fields of IBA table 145; the rest are capabilities.
                held.linear_fdb_top = new.linear_fdb_top;
                held.default_port = new.default_port;
                held.default_multicast_primary_port = new.default_multicast_primary_port;
                held.default_multicast_not_primary_port = new.default_multicast_not_primary_port;
                held.life_time_value = new.life_time_value;
                held.multicast_fdb_top = new.multicast_fdb_top;
                // PortStateChange is write-1-to-clear.
                held.port_state_change &= !new.port_state_change;
                Ok(Attribute::SwitchInfo(*held))
            }
            Attribute::GuidInfo(new) => {
                let block =
                    GuidInfoModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
                let number = if self.switch.is_some() { 0 } else { arrival };
                let port = self.port_mut(number).ok_or(Status::INVALID_VALUE)?;
                let range = block_range(port.guids.len(), usize::from(block.block), 8)?;
                for (i, guid) in range.zip(new.guids) {
                    // Entry 0 is the port GUID itself, read-only (IBA 14.2.5.5).
                    if i != 0 {
                        port.guids[i] = guid;
                    }
                }
                self.get(arrival, AttributeId::GuidInfo, modifier)
            }
            Attribute::PKeyTable(new) => {
                let m = PKeyTableModifier::from(modifier);
                let number = target_port(self, arrival, m.port.into())?;
                let port = self.port_mut(number).ok_or(Status::INVALID_VALUE)?;
                let range = block_range(port.p_keys.len(), usize::from(m.block), 32)?;
                let len = range.len();
                port.p_keys[range].copy_from_slice(&new.p_keys[..len]);
                self.get(arrival, AttributeId::PKeyTable, modifier)
            }
            Attribute::SlToVlMappingTable(table) => {
                self.set_sl2vl(arrival, modifier, table)?;
                Ok(Attribute::SlToVlMappingTable(table))
            }
            Attribute::VlArbitrationTable(table) => {
                let (number, block) = self.vlarb_target(arrival, modifier)?;
                let port = self.port_mut(number).ok_or(Status::INVALID_VALUE)?;
                let range = port.vlarb_range(block).ok_or(Status::INVALID_VALUE)?;
                let len = range.len();
                let entries = port.vlarb_mut(block.priority());
                // Only the cap's entries exist; the rest of the block reads back zero (ibsim).
                entries[range].copy_from_slice(&table.entries[..len]);
                self.get(arrival, AttributeId::VlArbitrationTable, modifier)
            }
            Attribute::LinearForwardingTable(table) => {
                let switch = self
                    .switch
                    .as_mut()
                    .ok_or(Status::METHOD_ATTRIBUTE_UNSUPPORTED)?;
                let start = lft_block_start(modifier)?;
                let end = start + table.ports.len();
                if switch.lft.len() < end {
                    switch.lft.resize(end, LinearForwardingTableRepr::NO_ROUTE);
                }
                switch.lft[start..end].copy_from_slice(&table.ports);
                Ok(Attribute::LinearForwardingTable(table))
            }
            Attribute::MulticastForwardingTable(table) => {
                let block = self.mft_block(modifier)?;
                if let (Some(switch), Some(block)) = (self.switch.as_mut(), block) {
                    switch.mft.insert(block, table);
                }
                self.get(arrival, AttributeId::MulticastForwardingTable, modifier)
            }
            Attribute::Other {
                id: AttributeId::MlnxExtendedPortInfo,
                data,
            } => {
                let number = mlnx_ext_port_target(self, arrival, modifier)?;
                let port = self.port_mut(number).ok_or(Status::INVALID_VALUE)?;
                port.mlnx_ext_port_info = data;
                Ok(Attribute::Other {
                    id: AttributeId::MlnxExtendedPortInfo,
                    data,
                })
            }
            _ => Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED),
        }
    }

    /// SL2VL Set: one (input, output) pair, or on a switch that advertises
    /// OptimizedSLtoVLMappingProgramming, every input (bit 17) and/or every output (bit 16) at
    /// once (IBA 14.2.5.8); elsewhere those bits are an invalid modifier.
    fn set_sl2vl(
        &mut self,
        arrival: u8,
        modifier: u32,
        table: SlToVlMappingTableRepr,
    ) -> Result<(), Status> {
        let Some(switch) = &self.switch else {
            let (input, output) = self.sl2vl_pair(arrival, modifier)?;
            return self.store_sl2vl(input, output, table);
        };
        if !self.maps_sl_to_vl(arrival) {
            return Err(Status::METHOD_ATTRIBUTE_UNSUPPORTED);
        }
        let m = SlToVlModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
        let optimized = switch.info.optimized_sl_to_vl_mapping_programming & 1 != 0;
        if !optimized && !matches!(m, SlToVlModifier::Pair { .. }) {
            return Err(Status::INVALID_VALUE);
        }
        if let SlToVlModifier::Pair { output, .. } | SlToVlModifier::AllInputs { output } = m {
            self.sl2vl_output(output)?;
        }
        let every_output = (0..=self.info.num_ports).filter(|&o| self.sl2vl_output(o).is_ok());
        let pairs: Vec<(u8, u8)> = m.pairs(0..=self.info.num_ports, every_output).collect();
        if pairs.iter().any(|&(input, _)| self.port(input).is_none()) {
            return Err(Status::INVALID_VALUE);
        }
        pairs
            .into_iter()
            .try_for_each(|(input, output)| self.store_sl2vl(input, output, table))
    }

    fn store_sl2vl(
        &mut self,
        input: u8,
        output: u8,
        table: SlToVlMappingTableRepr,
    ) -> Result<(), Status> {
        let slot = self
            .port_mut(input)
            .and_then(|p| p.sl2vl.get_mut(usize::from(output)))
            .ok_or(Status::INVALID_VALUE)?;
        *slot = table;
        Ok(())
    }
}

/// The indexes of block `block` of `size`-entry blocks in a table of `len` entries; a block
/// past the table is an invalid modifier.
fn block_range(len: usize, block: usize, size: usize) -> Result<std::ops::Range<usize>, Status> {
    let start = block * size;
    if start >= len {
        return Err(Status::INVALID_VALUE);
    }
    Ok(start..len.min(start + size))
}

/// The first LID of LFT block `modifier`; blocks past LinearFDBCap are invalid.
fn lft_block_start(modifier: u32) -> Result<usize, Status> {
    let m = LftModifier::try_from(modifier).map_err(|_| Status::INVALID_VALUE)?;
    let start = usize::from(m.block) * usize::from(LftModifier::LIDS_PER_BLOCK);
    if start >= usize::from(LINEAR_FDB_CAP) {
        return Err(Status::INVALID_VALUE);
    }
    Ok(start)
}

/// The longest prefix of `text` that fits in `max` bytes, cut at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// PortInfo Set: validate everything against the port and its link, then store.
///
/// `peer` is the state of the port at the other end of a physically up link, `None` for switch
/// port 0 or an unlinked port.
pub(crate) fn check_port_info(
    held: &PortInfoRepr,
    new: &PortInfoRepr,
    peer: Option<PortState>,
) -> Result<PortInfoRepr, Status> {
    let invalid = |bad: bool| {
        if bad {
            Err(Status::INVALID_VALUE)
        } else {
            Ok(())
        }
    };
    // OperVLs may not exceed VLCap (IBA 14.2.5.6; ibsim checks the VLCap in the request, but
    // the port's own is the one that matters), nor NeighborMTU MTUCap.
    invalid(new.operational_vls > held.vl_cap)?;
    invalid(new.neighbor_mtu == 0 || new.neighbor_mtu > held.mtu_cap)?;
    invalid(new.link_down_default_state > LINK_DOWN_DEFAULT_POLLING)?;
    invalid(!enable_ok(
        new.link_width_enabled,
        held.link_width_supported,
        WIDTH_ENABLE_SUPPORTED,
    ))?;
    invalid(!enable_ok(
        new.link_speed_enabled,
        held.link_speed_supported,
        SPEED_ENABLE_SUPPORTED,
    ))?;
    invalid(
        new.link_speed_ext_enabled != SPEED_EXT_DISABLE
            && !enable_ok(
                new.link_speed_ext_enabled,
                held.link_speed_ext_supported,
                SPEED_EXT_ENABLE_SUPPORTED,
            ),
    )?;
    // An SM may Set only Polling or Disabled (IBA 14.2.5.6); the state held, as a
    // read-modify-write sends it back, changes nothing.
    invalid(
        !matches!(
            new.port_phys_state,
            PhysPortState::NoChange | PhysPortState::Polling | PhysPortState::Disabled
        ) && new.port_phys_state != held.port_phys_state,
    )?;
    let port_state = next_port_state(held.port_state, new.port_state, peer)?;

    // Every writable field as sent; the read-only ones (capabilities, counters the port keeps,
    // LocalPortNum) as held, and the "0 = no change" fields as held when 0.
    let mut stored = PortInfoRepr {
        capability_mask: held.capability_mask,
        diag_code: held.diag_code,
        local_port_num: held.local_port_num,
        link_width_supported: held.link_width_supported,
        link_width_active: held.link_width_active,
        link_speed_supported: held.link_speed_supported,
        link_speed_active: held.link_speed_active,
        vl_cap: held.vl_cap,
        init_type: held.init_type,
        vl_arbitration_high_cap: held.vl_arbitration_high_cap,
        vl_arbitration_low_cap: held.vl_arbitration_low_cap,
        mtu_cap: held.mtu_cap,
        guid_cap: held.guid_cap,
        resp_time_value: held.resp_time_value,
        max_credit_hint: held.max_credit_hint,
        link_speed_ext_active2: held.link_speed_ext_active2,
        link_speed_ext_supported2: held.link_speed_ext_supported2,
        link_round_trip_latency: held.link_round_trip_latency,
        capability_mask2: held.capability_mask2,
        link_speed_ext_active: held.link_speed_ext_active,
        link_speed_ext_supported: held.link_speed_ext_supported,
        port_state,
        port_phys_state: held.port_phys_state,
        // An action (the clients reregister), not a setting: it reads 0, as on ibsim.
        client_reregister: false,
        ..*new
    };
    stored.link_down_default_state =
        or_held(new.link_down_default_state, held.link_down_default_state);
    stored.operational_vls = or_held(new.operational_vls, held.operational_vls);
    stored.link_width_enabled = match new.link_width_enabled {
        WIDTH_ENABLE_SUPPORTED => held.link_width_supported,
        v => or_held(v, held.link_width_enabled),
    };
    stored.link_speed_enabled = match new.link_speed_enabled {
        SPEED_ENABLE_SUPPORTED => held.link_speed_supported,
        v => or_held(v, held.link_speed_enabled),
    };
    stored.link_speed_ext_enabled = match new.link_speed_ext_enabled {
        SPEED_EXT_ENABLE_SUPPORTED => held.link_speed_ext_supported,
        SPEED_EXT_DISABLE => 0,
        v => or_held(v, held.link_speed_ext_enabled),
    };
    Ok(stored)
}

fn or_held(value: u8, held: u8) -> u8 {
    if value == 0 { held } else { value }
}

/// A LinkWidth/Speed Enabled value: 0 (no change), the "set to Supported" value, or a non-empty
/// subset of what the port supports.
fn enable_ok(value: u8, supported: u8, all: u8) -> bool {
    value == 0 || value == all || value & !supported == 0
}

/// The PortState a Set asks for, by the IBA 7.2 port state machine: Down restarts the link
/// (the port comes back in Init), Armed only from Init, Active only from Armed and only when the
/// neighbour is Armed or Active. Asking for the state held is a no-op, so a retried Set or a
/// read-modify-write succeeds. Init is not a state an SM can ask for, and switch port 0 and
/// unlinked ports have no link state to change (ibsim: 0x001C).
fn next_port_state(
    held: PortState,
    asked: PortState,
    peer: Option<PortState>,
) -> Result<PortState, Status> {
    use PortState::{Active, Armed, Down, Init, NoChange};
    if asked == NoChange || asked == held {
        return Ok(held);
    }
    let Some(peer) = peer else {
        return Err(Status::INVALID_VALUE);
    };
    match (held, asked) {
        (_, Down) => Ok(Init),
        (Init, Armed) => Ok(Armed),
        (Armed, Active) if matches!(peer, Armed | Active) => Ok(Active),
        _ => Err(Status::INVALID_VALUE),
    }
}

/// The active width, speed and extended speed of a link between ports enabled for `a` and `b`:
/// the best both ends enable (what link training negotiates, and what ibsim computes).
pub(crate) fn negotiate(a: &PortInfoRepr, b: &PortInfoRepr) -> (u8, u8, u8) {
    (
        widest_width(a.link_width_enabled & b.link_width_enabled),
        highest_bit(a.link_speed_enabled & b.link_speed_enabled),
        highest_bit(a.link_speed_ext_enabled & b.link_speed_ext_enabled),
    )
}
