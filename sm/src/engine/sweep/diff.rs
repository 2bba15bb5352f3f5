//! What differs between what the fabric holds and what a Set would write, as typed values that
//! display as one line each.

use std::fmt;

use ibqos_mad::{Attribute, AttributeId, PortInfoRepr, PortState, VlArbitrationTableRepr};

/// The PortInfo fields the sweep programs and compares. PortState is not among them: it counts
/// only when a Set asks for a change, and a refused transition is a failure, not a field the
/// port does not keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortInfoField {
    Lid,
    Lmc,
    MasterSmLid,
    SubnetPrefix,
    MasterSmSl,
    SubnetTimeOut,
    OperVls,
    NeighborMtu,
    HoqLife,
    VlStallCount,
    VlHighLimit,
    /// PartitionEnforcementInbound and Outbound.
    PartitionEnforcement,
    /// M_Key, shown only as whether there is one: a key is a secret.
    MKey,
    MKeyProtectBits,
    MKeyLeasePeriod,
}

impl PortInfoField {
    /// Every field, in the order differences are listed.
    pub const ALL: [PortInfoField; 15] = [
        PortInfoField::Lid,
        PortInfoField::Lmc,
        PortInfoField::MasterSmLid,
        PortInfoField::SubnetPrefix,
        PortInfoField::MasterSmSl,
        PortInfoField::SubnetTimeOut,
        PortInfoField::OperVls,
        PortInfoField::NeighborMtu,
        PortInfoField::HoqLife,
        PortInfoField::VlStallCount,
        PortInfoField::VlHighLimit,
        PortInfoField::PartitionEnforcement,
        PortInfoField::MKey,
        PortInfoField::MKeyProtectBits,
        PortInfoField::MKeyLeasePeriod,
    ];

    /// The field's label in a difference.
    pub const fn name(self) -> &'static str {
        match self {
            PortInfoField::Lid => "LID",
            PortInfoField::Lmc => "LMC",
            PortInfoField::MasterSmLid => "MasterSMLID",
            PortInfoField::SubnetPrefix => "SubnetPrefix",
            PortInfoField::MasterSmSl => "MasterSMSL",
            PortInfoField::SubnetTimeOut => "SubnetTimeOut",
            PortInfoField::OperVls => "OperVLs",
            PortInfoField::NeighborMtu => "NeighborMTU",
            PortInfoField::HoqLife => "HOQLife",
            PortInfoField::VlStallCount => "VLStallCount",
            PortInfoField::VlHighLimit => "VLHighLimit",
            PortInfoField::PartitionEnforcement => "PartitionEnforcement",
            PortInfoField::MKey => "M_Key",
            PortInfoField::MKeyProtectBits => "M_KeyProtectBits",
            PortInfoField::MKeyLeasePeriod => "M_KeyLeasePeriod",
        }
    }

    /// The field's value in `info`, to compare: two values are equal exactly when they show
    /// alike (but for M_Key, which shows only whether there is one).
    fn value(self, info: &PortInfoRepr) -> u64 {
        match self {
            PortInfoField::Lid => info.lid.into(),
            PortInfoField::Lmc => info.lmc.into(),
            PortInfoField::MasterSmLid => info.master_sm_lid.into(),
            PortInfoField::SubnetPrefix => info.gid_prefix,
            PortInfoField::MasterSmSl => info.master_sm_sl.into(),
            PortInfoField::SubnetTimeOut => info.subnet_timeout.into(),
            PortInfoField::OperVls => info.operational_vls.into(),
            PortInfoField::NeighborMtu => info.neighbor_mtu.into(),
            PortInfoField::HoqLife => info.hoq_life.into(),
            PortInfoField::VlStallCount => info.vl_stall_count.into(),
            PortInfoField::VlHighLimit => info.vl_high_limit.into(),
            PortInfoField::PartitionEnforcement => {
                u64::from(info.partition_enforcement_inbound) << 1
                    | u64::from(info.partition_enforcement_outbound)
            }
            PortInfoField::MKey => info.m_key,
            PortInfoField::MKeyProtectBits => info.m_key_protect_bits.into(),
            PortInfoField::MKeyLeasePeriod => info.m_key_lease_period.into(),
        }
    }

    /// The field's value in `info`, as a difference shows it.
    fn show(self, info: &PortInfoRepr) -> String {
        match self {
            PortInfoField::Lid => info.lid.to_string(),
            PortInfoField::Lmc => info.lmc.to_string(),
            PortInfoField::MasterSmLid => info.master_sm_lid.to_string(),
            PortInfoField::SubnetPrefix => format!("{:#x}", info.gid_prefix),
            PortInfoField::MasterSmSl => info.master_sm_sl.to_string(),
            PortInfoField::SubnetTimeOut => info.subnet_timeout.to_string(),
            PortInfoField::OperVls => info.operational_vls.to_string(),
            PortInfoField::NeighborMtu => info.neighbor_mtu.to_string(),
            PortInfoField::HoqLife => info.hoq_life.to_string(),
            PortInfoField::VlStallCount => info.vl_stall_count.to_string(),
            PortInfoField::VlHighLimit => info.vl_high_limit.to_string(),
            PortInfoField::PartitionEnforcement => match (
                info.partition_enforcement_inbound,
                info.partition_enforcement_outbound,
            ) {
                (true, true) => "in+out",
                (true, false) => "in",
                (false, true) => "out",
                (false, false) => "off",
            }
            .to_string(),
            PortInfoField::MKey => crate::mkey::shown(info.m_key).to_string(),
            PortInfoField::MKeyProtectBits => info.m_key_protect_bits.to_string(),
            PortInfoField::MKeyLeasePeriod => info.m_key_lease_period.to_string(),
        }
    }
}

impl fmt::Display for PortInfoField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A value the sweep compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    PortInfo(PortInfoField),
    /// PortInfo.PortState, compared when a Set asks for a transition.
    PortState,
    /// PortInfo.ClientReregister, which a Set asks for.
    ClientReregister,
    /// SwitchInfo.LinearFDBTop.
    LinearFdbTop,
    /// SwitchInfo.PortStateChange, which the SM clears.
    PortStateChange,
    /// SwitchInfo.MulticastFDBTop.
    MulticastFdbTop,
    /// A whole SLtoVLMappingTable.
    Sl2Vl,
    /// A VLArbitrationTable block, up to its last entry in use.
    VlArb,
    /// A P_KeyTable block's entries in use.
    PKeys,
    /// A MulticastForwardingTable block's entries in use.
    Mft,
}

impl Field {
    pub const fn name(self) -> &'static str {
        match self {
            Field::PortInfo(field) => field.name(),
            Field::PortState => "PortState",
            Field::ClientReregister => "ClientReregister",
            Field::LinearFdbTop => "LinearFDBTop",
            Field::PortStateChange => "PortStateChange",
            Field::MulticastFdbTop => "MulticastFDBTop",
            Field::Sl2Vl => "SL2VL",
            Field::VlArb => "VLArb",
            Field::PKeys => "P_Keys",
            Field::Mft => "MFT",
        }
    }
}

/// What was found to differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A value the fabric holds, and the one the Set would write.
    Value {
        field: Field,
        held: String,
        planned: String,
    },
    /// LFT block entries (of 64) that forward differently.
    Forwarding { entries: usize },
    /// The read of what the fabric holds failed.
    Unreadable,
    /// The read answered another attribute than the one planned.
    OtherAttribute {
        held: AttributeId,
        planned: AttributeId,
    },
}

/// One difference between what the fabric holds and what a Set would write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The planned Set's modifier, shown where the difference came from one of several reads
    /// or from an SL2VL table.
    pub modifier: Option<u32>,
    pub found: Found,
}

impl Difference {
    /// A value held and planned, as it is shown.
    pub fn value(field: Field, held: String, planned: String) -> Difference {
        Difference {
            modifier: None,
            found: Found::Value {
                field,
                held,
                planned,
            },
        }
    }

    /// The PortInfo field this difference is in, if it is one.
    pub fn port_info_field(&self) -> Option<PortInfoField> {
        match self.found {
            Found::Value {
                field: Field::PortInfo(field),
                ..
            } => Some(field),
            _ => None,
        }
    }
}

/// `field: held -> planned`, after the modifier where there is one.
impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(modifier) = self.modifier {
            write!(f, "{modifier:#x} ")?;
        }
        match &self.found {
            Found::Value {
                field,
                held,
                planned,
            } => write!(f, "{}: {held} -> {planned}", field.name()),
            Found::Forwarding { entries } => {
                write!(f, "{entries} of 64 LIDs forwarded differently")
            }
            Found::Unreadable => f.write_str("could not be read"),
            Found::OtherAttribute { held, planned } => {
                write!(f, "read {held:?}, planned {planned:?}")
            }
        }
    }
}

/// What differs between what the fabric holds and what a Set would write. Only what the SM
/// programs is compared: for PortInfo, the fields the LID and link managers and QoS set; a state
/// change counts only when one is asked for.
pub fn differences(held: &Attribute, planned: &Attribute) -> Vec<Difference> {
    let mut out = Vec::new();
    match (held, planned) {
        (Attribute::PortInfo(h), Attribute::PortInfo(p)) => {
            for name in PortInfoField::ALL {
                if name.value(h) == name.value(p) {
                    continue;
                }
                // Two keys show alike; they differ all the same.
                let held = if name == PortInfoField::MKey {
                    "another key".to_string()
                } else {
                    name.show(h)
                };
                out.push(Difference::value(Field::PortInfo(name), held, name.show(p)));
            }
            if p.port_state != PortState::NoChange {
                let show = |state: &PortState| format!("{state:?}");
                compare(&mut out, Field::PortState, h.port_state, p.port_state, show);
            }
            // An action, not a setting: a Set that asks for it is always sent.
            if p.client_reregister {
                out.push(Difference::value(
                    Field::ClientReregister,
                    "-".into(),
                    "asked".into(),
                ));
            }
        }
        (Attribute::SwitchInfo(h), Attribute::SwitchInfo(p)) => {
            let (held_top, planned_top) = (h.linear_fdb_top, p.linear_fdb_top);
            compare(
                &mut out,
                Field::LinearFdbTop,
                held_top,
                planned_top,
                |top| top.to_string(),
            );
            let (held_top, planned_top) = (h.multicast_fdb_top, p.multicast_fdb_top);
            compare(
                &mut out,
                Field::MulticastFdbTop,
                held_top,
                planned_top,
                |top| format!("{top:#06x}"),
            );
            // Set is how the SM clears it, so a planned Set that clears it carries it set.
            if h.port_state_change && p.port_state_change {
                out.push(Difference::value(
                    Field::PortStateChange,
                    "set".into(),
                    "cleared".into(),
                ));
            }
        }
        (Attribute::LinearForwardingTable(h), Attribute::LinearForwardingTable(p)) => {
            let entries = h.ports.iter().zip(&p.ports).filter(|(a, b)| a != b).count();
            if entries > 0 {
                out.push(Difference {
                    modifier: None,
                    found: Found::Forwarding { entries },
                });
            }
        }
        (Attribute::SlToVlMappingTable(h), Attribute::SlToVlMappingTable(p)) => {
            compare(&mut out, Field::Sl2Vl, h.vls, p.vls, |vls| {
                format!("{vls:?}")
            });
        }
        (Attribute::VlArbitrationTable(h), Attribute::VlArbitrationTable(p)) => {
            compare(&mut out, Field::VlArb, h, p, |table| show_vlarb(table));
        }
        (Attribute::MulticastForwardingTable(h), Attribute::MulticastForwardingTable(p)) => {
            let (held, planned) = (&h.port_masks, &p.port_masks);
            compare(&mut out, Field::Mft, held, planned, |masks| {
                show_entries(*masks)
            });
        }
        (Attribute::PKeyTable(h), Attribute::PKeyTable(p)) => {
            let (held, planned) = (&h.p_keys, &p.p_keys);
            compare(&mut out, Field::PKeys, held, planned, |keys| {
                show_entries(*keys)
            });
        }
        (held, planned) => out.push(Difference {
            modifier: None,
            found: Found::OtherAttribute {
                held: held.id(),
                planned: planned.id(),
            },
        }),
    }
    out
}

/// Records a difference in `field` when `held` and `planned` differ. The values are compared as
/// they are and shown only when they differ: a sweep compares every port's fields, and almost
/// all of them agree.
fn compare<T: PartialEq>(
    out: &mut Vec<Difference>,
    field: Field,
    held: T,
    planned: T,
    show: impl Fn(&T) -> String,
) {
    if held != planned {
        out.push(Difference::value(field, show(&held), show(&planned)));
    }
}

/// The non-zero entries of a P_Key or MFT block as `index:value,...` (index within the block),
/// or `empty`.
fn show_entries(entries: &[u16]) -> String {
    let used: Vec<String> = entries
        .iter()
        .enumerate()
        .filter(|(_, value)| **value != 0)
        .map(|(index, value)| format!("{index}:{value:#06x}"))
        .collect();
    if used.is_empty() {
        "empty".to_string()
    } else {
        used.join(",")
    }
}

/// A VLArb block as `vl:weight,...` up to its last entry in use.
fn show_vlarb(table: &VlArbitrationTableRepr) -> String {
    let last = table
        .entries
        .iter()
        .rposition(|e| e.weight != 0 || e.vl != 0)
        .map_or(0, |i| i + 1);
    table.entries[..last]
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_mad::{
        LinearForwardingTableRepr, PortInfo, SlToVlMappingTableRepr, SwitchInfo, SwitchInfoRepr,
        VlArbEntry,
    };

    /// A PortInfo of zeros, to set fields on.
    fn port_info() -> PortInfoRepr {
        PortInfoRepr::parse(&PortInfo::new_unchecked([0u8; PortInfo::<&[u8]>::LEN])).unwrap()
    }

    fn switch_info() -> SwitchInfoRepr {
        SwitchInfoRepr::parse(&SwitchInfo::new_unchecked([0u8; SwitchInfo::<&[u8]>::LEN])).unwrap()
    }

    fn lines(held: &Attribute, planned: &Attribute) -> Vec<String> {
        differences(held, planned)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn port_info_fields_in_order_and_state_only_when_asked() {
        let held = PortInfoRepr {
            lid: 1,
            gid_prefix: 0xfe80_0000_0000_0000,
            vl_high_limit: 4,
            port_state: PortState::Armed,
            ..port_info()
        };
        let mut planned = PortInfoRepr {
            lid: 2,
            gid_prefix: 0xfe80_0000_0000_0001,
            port_state: PortState::NoChange,
            ..held
        };
        let (h, p) = (Attribute::PortInfo(held), Attribute::PortInfo(planned));
        assert_eq!(
            lines(&h, &p),
            [
                "LID: 1 -> 2",
                "SubnetPrefix: 0xfe80000000000000 -> 0xfe80000000000001"
            ]
        );
        planned.port_state = PortState::Active;
        let found = differences(&h, &Attribute::PortInfo(planned));
        assert_eq!(found[2].to_string(), "PortState: Armed -> Active");
        let fields: Vec<_> = found.iter().map(Difference::port_info_field).collect();
        let (lid, prefix) = (PortInfoField::Lid, PortInfoField::SubnetPrefix);
        assert_eq!(fields, [Some(lid), Some(prefix), None]);
    }

    #[test]
    fn every_port_info_field_is_compared_under_its_name() {
        let names: Vec<&str> = PortInfoField::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(
            names.join(","),
            "LID,LMC,MasterSMLID,SubnetPrefix,MasterSMSL,SubnetTimeOut,OperVLs,NeighborMTU,\
             HOQLife,VLStallCount,VLHighLimit,PartitionEnforcement,M_Key,M_KeyProtectBits,\
             M_KeyLeasePeriod"
        );
        let planned = PortInfoRepr {
            lid: 1,
            lmc: 1,
            master_sm_lid: 1,
            gid_prefix: 1,
            master_sm_sl: 1,
            subnet_timeout: 1,
            operational_vls: 1,
            neighbor_mtu: 1,
            hoq_life: 1,
            vl_stall_count: 1,
            vl_high_limit: 1,
            partition_enforcement_inbound: true,
            m_key: 0x5ec2e7,
            m_key_protect_bits: 1,
            m_key_lease_period: 1,
            ..port_info()
        };
        let held = Attribute::PortInfo(port_info());
        let found = differences(&held, &Attribute::PortInfo(planned));
        let fields: Vec<_> = found
            .iter()
            .filter_map(Difference::port_info_field)
            .collect();
        assert_eq!(fields, PortInfoField::ALL);
    }

    #[test]
    fn switch_tables_and_reads() {
        let held = SwitchInfoRepr {
            linear_fdb_top: 3,
            port_state_change: true,
            ..switch_info()
        };
        let planned = SwitchInfoRepr {
            linear_fdb_top: 7,
            ..held
        };
        assert_eq!(
            lines(
                &Attribute::SwitchInfo(held),
                &Attribute::SwitchInfo(planned)
            ),
            ["LinearFDBTop: 3 -> 7", "PortStateChange: set -> cleared"]
        );
        let none = LinearForwardingTableRepr {
            ports: [LinearForwardingTableRepr::NO_ROUTE; 64],
        };
        let mut routed = none;
        routed.ports[..3].copy_from_slice(&[1, 2, 3]);
        let lft = |t| Attribute::LinearForwardingTable(t);
        assert_eq!(
            lines(&lft(none), &lft(routed)),
            ["3 of 64 LIDs forwarded differently"]
        );
        assert!(lines(&lft(routed), &lft(routed)).is_empty());
        assert_eq!(
            lines(&lft(none), &Attribute::SwitchInfo(held)),
            ["read LinearForwardingTable, planned SwitchInfo"]
        );
    }

    #[test]
    fn qos_tables_and_the_modifier_label() {
        let sl2vl = |vl| Attribute::SlToVlMappingTable(SlToVlMappingTableRepr { vls: [vl; 16] });
        let mut found = differences(&sl2vl(0), &sl2vl(1));
        found[0].modifier = Some(0x3_0000);
        assert_eq!(
            found[0].to_string(),
            format!("0x30000 SL2VL: {:?} -> {:?}", [0u8; 16], [1u8; 16])
        );
        let vlarb = |weights: &[(u8, u8)]| {
            let mut entries = [VlArbEntry::default(); 32];
            for (entry, &(vl, weight)) in entries.iter_mut().zip(weights) {
                *entry = VlArbEntry { vl, weight };
            }
            Attribute::VlArbitrationTable(VlArbitrationTableRepr { entries })
        };
        assert_eq!(
            lines(&vlarb(&[]), &vlarb(&[(0, 16), (1, 128), (0, 0), (3, 32)])),
            ["VLArb:  -> 0:16,1:128,0:0,3:32"]
        );
        let unread = Difference {
            modifier: Some(0x105),
            found: Found::Unreadable,
        };
        assert_eq!(unread.to_string(), "0x105 could not be read");
    }

    #[test]
    fn a_key_difference_is_found_and_never_shown() {
        const KEY: u64 = 0x5ec2_e7ab_cdef_0123;
        let keyed = |m_key| {
            Attribute::PortInfo(PortInfoRepr {
                m_key,
                ..port_info()
            })
        };
        // Another non-zero key differs though both show alike.
        for (held, planned, line) in [
            (KEY, KEY + 1, "M_Key: another key -> <hidden>"),
            (0, KEY, "M_Key: another key -> <hidden>"),
            (KEY, 0, "M_Key: another key -> none"),
        ] {
            assert_eq!(lines(&keyed(held), &keyed(planned)), [line]);
        }
        assert!(lines(&keyed(KEY), &keyed(KEY)).is_empty());
    }
}
