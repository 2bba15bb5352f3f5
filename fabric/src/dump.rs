//! A fabric's QoS state as JSON: of every port, the PortInfo fields QoS depends on and the SL2VL
//! and VLArb tables, and of every switch its LFT, exactly as the SMAs answer SubnGets for them.
//!
//! Written from an emulated fabric (`ibqos fabric dump`, `ibqos sm --dump-fabric`) and from a
//! live one (`ibqos dump`), and read by `ibqos sim --tables`. Both writers hold what a SubnGet
//! reads and nothing else, by one rule ([`TableRead::of_port`]), so the files of a fabric read
//! two ways compare equal.
//!
//! Stable: nodes are keyed by GUID as fixed-width hex (so text order is numeric order), ports
//! and SL2VL input ports by number, all in `BTreeMap`s, so the same state always gives the same
//! bytes. [`FabricDump::from_json`] reads a dump back.

use std::collections::BTreeMap;

use ibqos_mad::{
    Attribute, AttributeId, CaCongestionSettingRepr, CapabilityMask, CctEntry, Guid,
    LinearForwardingTableRepr, NodeType, PortInfoRepr, Priority, SlToVlModifier,
    SwitchCongestionSettingRepr, VlArbBlock, VlArbModifier,
};
use serde::{Deserialize, Serialize};

/// Every node of the fabric by GUID (`0x` and 16 hex digits).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FabricDump {
    pub nodes: BTreeMap<String, NodeDump>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeDump {
    /// The NodeDescription, as the node answers it (a net file's node id is not on the wire).
    pub name: String,
    /// `ca`, `switch` or `router` (see [`NodeDump::kind_name`]).
    pub kind: String,
    /// Every port read (a switch's port 0 included), by number.
    pub ports: BTreeMap<u8, PortDump>,
    /// A switch's linear forwarding table up to its LinearFDBTop: the egress port of each LID
    /// it routes (entries of no route left out). Empty for a CA or router, and in dumps
    /// written before dumps held LFTs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub lft: BTreeMap<u16, u8>,
}

/// One port's state. Encodings are the IBA's raw values, as PortInfo carries them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortDump {
    pub lid: u16,
    /// PortState by name (`Down`, `Init`, `Armed`, `Active`).
    pub port_state: String,
    /// PortPhysicalState by name (`LinkUp`, `Polling`, `Disabled`, ...).
    pub phys_state: String,
    pub oper_vls: u8,
    pub neighbor_mtu: u8,
    pub vl_high_limit: u8,
    pub hoq_life: u8,
    pub vl_stall_count: u8,
    /// SL2VL tables by input port, each the VL of SL 0..15: on a switch the table of traffic
    /// entering each input port and leaving by this one; on a CA its one table, under its own
    /// number. Empty where the port has none (see [`TableRead::of_port`]).
    pub sl2vl: BTreeMap<u8, [u8; 16]>,
    /// The VLArbitration tables, exactly the port's VLArbitrationLowCap / HighCap entries, each
    /// `[vl, weight]`.
    pub vlarb_low: Vec<[u8; 2]>,
    pub vlarb_high: Vec<[u8; 2]>,
    /// What the port's congestion control agent holds (a switch's at its port 0). Absent where
    /// none was read, and in dumps written before dumps held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<CongestionDump>,
}

/// A congestion control agent's settings, as its Gets answer them (IBA A10.4.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CongestionDump {
    Switch(SwitchCongestionDump),
    Ca(CaCongestionDump),
}

/// SwitchCongestionSetting, every field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchCongestionDump {
    pub control_map: u32,
    /// The 256-bit port masks as 64 hex digits, port 0 last.
    pub victim_mask: String,
    pub credit_mask: String,
    pub threshold: u8,
    pub packet_size: u8,
    pub cs_threshold: u8,
    /// CS_ReturnDelay as its 16-bit CCT entry (shift in bits 15-14).
    pub cs_return_delay: u16,
    pub marking_rate: u16,
}

/// CACongestionSetting, every field, and the congestion control table up to its CCTI_Limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaCongestionDump {
    pub port_control: u16,
    pub control_map: u16,
    /// By SL: `[ccti_timer, ccti_increase, trigger_threshold, ccti_min]`.
    pub sls: Vec<[u16; 4]>,
    pub ccti_limit: u16,
    /// Entries 0 to CCTI_Limit, each 16 bits (shift in bits 15-14).
    pub table: Vec<u16>,
}

impl SwitchCongestionDump {
    /// The dump of a SwitchCongestionSetting.
    pub fn new(setting: &SwitchCongestionSettingRepr) -> SwitchCongestionDump {
        let hex = |mask: &[u8; 32]| mask.iter().map(|b| format!("{b:02x}")).collect();
        SwitchCongestionDump {
            control_map: setting.control_map.0,
            victim_mask: hex(&setting.victim_mask),
            credit_mask: hex(&setting.credit_mask),
            threshold: setting.threshold,
            packet_size: setting.packet_size,
            cs_threshold: setting.cs_threshold,
            cs_return_delay: setting.cs_return_delay.0,
            marking_rate: setting.marking_rate,
        }
    }
}

impl CaCongestionDump {
    /// The dump of a CACongestionSetting and a congestion control table whose entries start
    /// at `table` (only entries 0 to `ccti_limit` are kept).
    pub fn new(
        setting: &CaCongestionSettingRepr,
        ccti_limit: u16,
        table: &[CctEntry],
    ) -> CaCongestionDump {
        CaCongestionDump {
            port_control: setting.port_control,
            control_map: setting.control_map,
            sls: setting
                .entries
                .iter()
                .map(|e| {
                    [
                        e.ccti_timer,
                        e.ccti_increase.into(),
                        e.trigger_threshold.into(),
                        e.ccti_min.into(),
                    ]
                })
                .collect(),
            ccti_limit,
            table: table
                .iter()
                .take(usize::from(ccti_limit) + 1)
                .map(|e| e.0)
                .collect(),
        }
    }
}

impl FabricDump {
    /// Pretty JSON ending in a newline: the form every writer writes.
    pub fn to_json(&self) -> String {
        // Maps with string and integer keys and plain values: serialising cannot fail.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads what [`FabricDump::to_json`] wrote.
    pub fn from_json(text: &str) -> Result<FabricDump, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// How a dump keys the node whose NodeGUID is `guid`: `0x` and 16 hex digits.
    pub fn node_key(guid: u64) -> String {
        Guid(guid).to_string()
    }

    /// Whether any switch's LFT was read (dumps written before LFTs were dumped have none).
    pub fn has_lfts(&self) -> bool {
        self.nodes.values().any(|node| !node.lft.is_empty())
    }

    /// The node whose NodeGUID is `guid`.
    pub fn node(&self, guid: u64) -> Option<&NodeDump> {
        self.nodes.get(&FabricDump::node_key(guid))
    }
}

impl NodeDump {
    /// The LinearForwardingTable blocks (attribute modifiers) that read a switch's LFT up to
    /// its LinearFDBTop `top`. None for a top of 0: LID 0 is no unicast LID, so that switch
    /// routes nothing.
    pub fn lft_blocks(top: u16) -> std::ops::Range<u32> {
        if top == 0 {
            0..0
        } else {
            0..u32::from(top / 64) + 1
        }
    }

    /// The routes LFT block `block` holds up to LinearFDBTop `top`, as [`NodeDump::lft`] keeps
    /// them.
    pub fn lft_routes(
        block: u32,
        table: &LinearForwardingTableRepr,
        top: u16,
    ) -> impl Iterator<Item = (u16, u8)> {
        (block * 64..)
            .zip(table.ports)
            .filter_map(move |(lid, port)| {
                let lid = u16::try_from(lid)
                    .ok()
                    .filter(|&lid| lid != 0 && lid <= top)?;
                (port != LinearForwardingTableRepr::NO_ROUTE).then_some((lid, port))
            })
    }

    /// How a dump names a NodeType.
    pub fn kind_name(node_type: NodeType) -> String {
        match node_type {
            NodeType::Ca => "ca".to_owned(),
            NodeType::Switch => "switch".to_owned(),
            NodeType::Router => "router".to_owned(),
            other => format!("{other:?}"),
        }
    }
}

impl PortDump {
    /// The PortInfo fields of a port, with no tables yet: [`PortDump::record`] adds them.
    pub fn new(info: &PortInfoRepr) -> PortDump {
        PortDump {
            lid: info.lid,
            port_state: format!("{:?}", info.port_state),
            phys_state: format!("{:?}", info.port_phys_state),
            oper_vls: info.operational_vls,
            neighbor_mtu: info.neighbor_mtu,
            vl_high_limit: info.vl_high_limit,
            hoq_life: info.hoq_life,
            vl_stall_count: info.vl_stall_count,
            sl2vl: BTreeMap::new(),
            vlarb_low: Vec::new(),
            vlarb_high: Vec::new(),
            congestion: None,
        }
    }

    /// Adds the answer to `read` (answers may come in any order). Returns false, changing
    /// nothing, when the answer is another attribute than the one read.
    pub fn record(&mut self, read: &TableRead, answer: &Attribute) -> bool {
        match (read.table, answer) {
            (Table::Sl2Vl { input }, Attribute::SlToVlMappingTable(table)) => {
                self.sl2vl.insert(input, table.vls);
            }
            (Table::VlArb { block, entries }, Attribute::VlArbitrationTable(table)) => {
                let start = match block {
                    VlArbBlock::Low0To31 | VlArbBlock::High0To31 => 0,
                    VlArbBlock::Low32To63 | VlArbBlock::High32To63 => VlArbBlock::ENTRIES,
                };
                let held = match block.priority() {
                    Priority::Low => &mut self.vlarb_low,
                    Priority::High => &mut self.vlarb_high,
                };
                if held.len() < start + entries {
                    held.resize(start + entries, [0, 0]);
                }
                for (slot, entry) in held[start..].iter_mut().zip(&table.entries[..entries]) {
                    *slot = [entry.vl, entry.weight];
                }
            }
            _ => return false,
        }
        true
    }
}

/// Which of a port's tables one SubnGet reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Table {
    /// SLtoVLMappingTable: on a switch, of traffic entering `input` and leaving by the port
    /// read; on a CA or router, the port's one table (`input` is the port itself).
    Sl2Vl { input: u8 },
    /// A VLArbitrationTable block, of which the port's cap uses the first `entries`.
    VlArb { block: VlArbBlock, entries: usize },
}

/// One SubnGet of a port's tables: the attribute, its modifier and the table it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRead {
    pub attribute: AttributeId,
    pub modifier: u32,
    pub table: Table,
}

/// What of a switch decides which tables its ports have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchShape {
    pub num_ports: u8,
    /// SwitchInfo.EnhancedPort0.
    pub enhanced_port0: bool,
    /// Port 0's CapabilityMask.IsSLMappingSupported, which speaks for every port of a switch.
    pub sl_mapping: bool,
}

impl TableRead {
    /// Every read of port `number`'s tables (`switch`: the node's shape if it is a switch;
    /// `info`: the port's PortInfo), in the order a dump lists them.
    ///
    /// A port maps SLs to VLs where IsSLMappingSupported says so (a switch's port 0 for the
    /// whole switch); a switch has a table per (input, output) pair, inputs 0..=NumPorts. Its
    /// VLArb tables have VLArbitrationLowCap and HighCap entries, in blocks of 32 (IBA
    /// 14.2.5.9). A base switch port 0 has no VLs of its own (IBA 18.2.4.3), so no tables.
    ///
    /// The modifier names the port (and input) on a switch; a CA answers for the port a Get
    /// arrives at, and is sent 0 there, as the SM's own Sets send it.
    pub fn of_port(switch: Option<SwitchShape>, number: u8, info: &PortInfoRepr) -> Vec<TableRead> {
        let mut reads = Vec::new();
        if switch.is_some_and(|s| number == 0 && !s.enhanced_port0) {
            return reads;
        }
        let sl_mapping = match switch {
            Some(shape) => shape.sl_mapping,
            None => info
                .capability_mask
                .contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED),
        };
        let port_field = if switch.is_some() { number } else { 0 };
        if sl_mapping {
            let inputs = match switch {
                Some(shape) => 0..=shape.num_ports,
                None => number..=number,
            };
            reads.extend(inputs.map(|input| {
                let pair = match switch {
                    Some(_) => SlToVlModifier::Pair {
                        input,
                        output: number,
                    },
                    None => SlToVlModifier::Pair {
                        input: 0,
                        output: 0,
                    },
                };
                TableRead {
                    attribute: AttributeId::SlToVlMappingTable,
                    modifier: u32::from(pair),
                    table: Table::Sl2Vl { input },
                }
            }));
        }
        for (priority, cap) in [
            (Priority::Low, info.vl_arbitration_low_cap),
            (Priority::High, info.vl_arbitration_high_cap),
        ] {
            for block in VlArbBlock::of(priority) {
                let entries = block.entries_within(cap);
                if entries > 0 {
                    let modifier = VlArbModifier {
                        block,
                        port: port_field,
                    };
                    reads.push(TableRead {
                        attribute: AttributeId::VlArbitrationTable,
                        modifier: u32::from(modifier),
                        table: Table::VlArb { block, entries },
                    });
                }
            }
        }
        reads
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::{
        PortInfo, PortState, SlToVlMappingTableRepr, VlArbEntry, VlArbitrationTableRepr,
    };

    fn port_info(low_cap: u8, high_cap: u8, sl_mapping: bool) -> PortInfoRepr {
        let mut info =
            PortInfoRepr::parse(&PortInfo::new_unchecked([0u8; PortInfo::<&[u8]>::LEN])).unwrap();
        info.vl_arbitration_low_cap = low_cap;
        info.vl_arbitration_high_cap = high_cap;
        if sl_mapping {
            info.capability_mask = CapabilityMask::IS_SL_MAPPING_SUPPORTED;
        }
        info
    }

    const SWITCH: SwitchShape = SwitchShape {
        num_ports: 2,
        enhanced_port0: false,
        sl_mapping: true,
    };

    fn tables(reads: &[TableRead]) -> Vec<Table> {
        reads.iter().map(|r| r.table).collect()
    }

    #[test]
    fn a_switch_port_reads_every_input_and_the_blocks_its_caps_use() {
        // Port 2's own PortInfo says nothing of SL mapping: port 0's does, for the switch.
        let reads = TableRead::of_port(Some(SWITCH), 2, &port_info(40, 8, false));
        let vlarb = |block, entries| Table::VlArb { block, entries };
        assert_eq!(
            tables(&reads),
            [
                Table::Sl2Vl { input: 0 },
                Table::Sl2Vl { input: 1 },
                Table::Sl2Vl { input: 2 },
                vlarb(VlArbBlock::Low0To31, 32),
                vlarb(VlArbBlock::Low32To63, 8),
                vlarb(VlArbBlock::High0To31, 8),
            ]
        );
        assert_eq!(reads[1].modifier, 0x0102, "input 1, output 2");
        assert_eq!(reads[4].modifier, 0x2_0002, "block 2 of port 2");
    }

    #[test]
    fn a_base_port_0_has_no_tables_and_an_enhanced_one_has() {
        let info = port_info(8, 8, true);
        assert!(TableRead::of_port(Some(SWITCH), 0, &info).is_empty());
        let enhanced = SwitchShape {
            enhanced_port0: true,
            ..SWITCH
        };
        assert_eq!(TableRead::of_port(Some(enhanced), 0, &info).len(), 3 + 2);
    }

    #[test]
    fn a_ca_port_reads_its_one_table_with_modifiers_of_0() {
        let reads = TableRead::of_port(None, 2, &port_info(8, 0, true));
        assert_eq!(tables(&reads)[0], Table::Sl2Vl { input: 2 });
        assert_eq!(
            reads.iter().map(|r| r.modifier).collect::<Vec<_>>(),
            [0, 0x1_0000]
        );
        let without_mapping = TableRead::of_port(None, 1, &port_info(8, 0, false));
        assert_eq!(tables(&without_mapping).len(), 1, "VLArb only");
    }

    #[test]
    fn answers_in_any_order_give_the_tables_in_entry_order() {
        let info = PortInfoRepr {
            port_state: PortState::Active,
            operational_vls: 4,
            ..port_info(34, 0, true)
        };
        let reads = TableRead::of_port(None, 1, &info);
        let block = |first: u8| {
            let mut entries = [VlArbEntry::default(); 32];
            for (i, entry) in entries.iter_mut().enumerate() {
                *entry = VlArbEntry::new((first + i as u8) % 15, i as u8);
            }
            Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries })
        };
        let mut dump = PortDump::new(&info);
        assert!(dump.record(&reads[2], &block(1)));
        assert!(dump.record(&reads[1], &block(0)));
        let sl2vl = SlToVlMappingTableRepr { vls: [3; 16] };
        assert!(!dump.record(&reads[1], &Attribute::SlToVlMappingTable(sl2vl)));
        assert!(dump.record(&reads[0], &Attribute::SlToVlMappingTable(sl2vl)));
        assert_eq!(dump.vlarb_low.len(), 34);
        assert_eq!(dump.vlarb_low[31], [1, 31]);
        assert_eq!(dump.vlarb_low[32..], [[1, 0], [2, 1]]);
        assert_eq!(dump.sl2vl, BTreeMap::from([(1, [3; 16])]));
        assert_eq!((dump.port_state.as_str(), dump.oper_vls), ("Active", 4));
    }
}
