//! The planner: from a configuration and one port's capabilities to exactly the SL2VL table, the
//! VL arbitration blocks and the VLHighLimit to program on that port.
//!
//! It reproduces OpenSM 3.3.23 (`osm_qos_setup` and what it calls, `osm_qos.c:150-668`) with two
//! deliberate fixes:
//! 1. A VLArb cap above 32 programs entries 33..=cap in the second block. OpenSM computes that
//!    block's length as `cap % 32`, so a cap of 64 gets an empty second block and entries 33-64 are
//!    never programmed.
//! 2. VLs are masked with the OperVLs about to be programmed (the caller passes them in
//!    [`PortCaps::oper_vls`]). OpenSM masks with the port's cached OperVLs, which on a first sweep
//!    can still be the value the port had before the SM touched it.

use ibqos_mad::{Priority, VlArbBlock, VlArbEntry};

use crate::config::{EffectiveQos, PortClass, QosConfig};
use crate::tables::{Sl2VlTable, VLARB_TABLE_ENTRIES, VlArbTable};
use crate::types::VlCount;

/// What the planner needs to know about a port, as its PortInfo reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortCaps {
    /// PortInfo.VLCap.
    pub vl_cap: VlCount,
    /// The OperationalVLs the port will run: what the link manager programs.
    pub oper_vls: VlCount,
    /// PortInfo.VLArbitrationLowCap, 0..=64.
    pub vlarb_low_cap: u8,
    /// PortInfo.VLArbitrationHighCap, 0..=64.
    pub vlarb_high_cap: u8,
    /// PortInfo.CapabilityMask.IsSLMappingSupported (for a switch: that of port 0).
    pub sl_mapping_supported: bool,
}

/// One VLArbitrationTable Set: a 32-entry block whose first `len` entries are meaningful; the
/// rest are sent as `0:0`, as OpenSM sends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlArbSet {
    pub block: VlArbBlock,
    pub len: u8,
    pub entries: [VlArbEntry; VlArbBlock::ENTRIES],
}

impl VlArbSet {
    /// The meaningful entries of this block.
    pub fn programmed(&self) -> &[VlArbEntry] {
        &self.entries[..usize::from(self.len)]
    }
}

/// Everything QoS programs on one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    pub class: PortClass,
    /// The SL-to-VL table, already masked; `None` when the port does not support SL mapping.
    pub sl2vl: Option<Sl2VlTable>,
    /// The VLArbitrationTable blocks to send, in block order; empty when VLCap is 1.
    pub vlarb: Vec<VlArbSet>,
    /// PortInfo.VLHighLimit, set by the link manager's PortInfo Set.
    pub vl_high_limit: u8,
}

impl PortPlan {
    /// The low-priority table as programmed: exactly VLArbitrationLowCap entries, or none.
    pub fn vlarb_low(&self) -> Vec<VlArbEntry> {
        self.entries(Priority::Low)
    }

    /// The high-priority table as programmed: exactly VLArbitrationHighCap entries, or none.
    pub fn vlarb_high(&self) -> Vec<VlArbEntry> {
        self.entries(Priority::High)
    }

    fn entries(&self, priority: Priority) -> Vec<VlArbEntry> {
        self.vlarb
            .iter()
            .filter(|b| b.block.priority() == priority)
            .flat_map(|b| b.programmed().iter().copied())
            .collect()
    }
}

/// Capabilities no port can have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "VLArbitration{}Cap {value} is out of range: a table has at most 64 entries",
        priority.name()
    )]
    CapOutOfRange { priority: Priority, value: u8 },
    #[error("OperVLs {oper} exceeds VLCap {cap}: a port cannot run more VLs than it has")]
    OperVlsAboveCap { oper: VlCount, cap: VlCount },
}

/// The tables OpenSM 3.3.23 programs on a port of `class` with `caps`, with the two fixes listed
/// in the module documentation.
pub fn plan(config: &QosConfig, class: PortClass, caps: &PortCaps) -> Result<PortPlan, PlanError> {
    plan_settings(&config.effective(class), class, caps)
}

/// The tables for a port of `class` with `caps` under `settings`: its class's, or those with
/// what a `qos-setup` scope gives the port ([`EffectiveQos::with_setup`]).
pub fn plan_settings(
    settings: &EffectiveQos,
    class: PortClass,
    caps: &PortCaps,
) -> Result<PortPlan, PlanError> {
    let caps_of = [
        (Priority::Low, caps.vlarb_low_cap),
        (Priority::High, caps.vlarb_high_cap),
    ];
    for (priority, value) in caps_of {
        if usize::from(value) > VLARB_TABLE_ENTRIES {
            return Err(PlanError::CapOutOfRange { priority, value });
        }
    }
    if caps.oper_vls > caps.vl_cap {
        return Err(PlanError::OperVlsAboveCap {
            oper: caps.oper_vls,
            cap: caps.vl_cap,
        });
    }
    let mask = caps.oper_vls.vl_mask();
    let sl2vl = caps
        .sl_mapping_supported
        .then(|| settings.sl2vl.masked(mask));

    // A port with a single VL has nothing to arbitrate: OpenSM sends no VLArb and forces the high
    // limit to 0 (commit 78f262a4).
    if caps.vl_cap == VlCount::One {
        return Ok(PortPlan {
            class,
            sl2vl,
            vlarb: Vec::new(),
            vl_high_limit: 0,
        });
    }
    let mut vlarb = Vec::new();
    vlarb.extend(blocks(
        &settings.vlarb_low,
        caps.vlarb_low_cap,
        Priority::Low,
        mask,
    ));
    vlarb.extend(blocks(
        &settings.vlarb_high,
        caps.vlarb_high_cap,
        Priority::High,
        mask,
    ));
    Ok(PortPlan {
        class,
        sl2vl,
        vlarb,
        vl_high_limit: settings.high_limit,
    })
}

/// The blocks of the `priority` table on a port with `cap` entries in it.
fn blocks(table: &VlArbTable, cap: u8, priority: Priority, mask: u8) -> Vec<VlArbSet> {
    VlArbBlock::of(priority)
        .into_iter()
        .zip(table.0.chunks_exact(VlArbBlock::ENTRIES))
        .filter_map(|(block, source)| {
            let len = block.entries_within(cap);
            (len > 0).then(|| {
                let mut entries = [VlArbEntry::default(); VlArbBlock::ENTRIES];
                for (slot, entry) in entries.iter_mut().zip(&source[..len]) {
                    *slot = VlArbEntry::new(entry.vl & mask, entry.weight);
                }
                VlArbSet {
                    block,
                    len: len as u8,
                    entries,
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vl_count() -> impl Strategy<Value = VlCount> {
        proptest::sample::select(VlCount::ALL.to_vec())
    }

    fn caps(vl_cap: VlCount, oper_vls: VlCount, low: u8, high: u8) -> PortCaps {
        PortCaps {
            vl_cap,
            oper_vls,
            vlarb_low_cap: low,
            vlarb_high_cap: high,
            sl_mapping_supported: true,
        }
    }

    proptest! {
        /// Whatever the port, the tables have exactly cap entries, every VL fits the OperVLs
        /// mask, and the blocks sent are the ones the caps call for.
        #[test]
        fn plan_shape_follows_the_caps(
            cap in vl_count(), oper in vl_count(), low in 0u8..=64, high in 0u8..=64,
            entries in proptest::collection::vec((0u8..15, any::<u8>()), 0..=64),
        ) {
            prop_assume!(oper <= cap);
            let mut config = QosConfig::default();
            let table = VlArbTable::from_entries(
                &entries.iter().map(|&(vl, w)| VlArbEntry::new(vl, w)).collect::<Vec<_>>());
            config.generic.vlarb_low = Some(table);
            config.generic.vlarb_high = Some(table);
            let port = plan(&config, PortClass::Swe, &caps(cap, oper, low, high)).unwrap();
            if cap == VlCount::One {
                prop_assert!(port.vlarb.is_empty());
                prop_assert_eq!(port.vl_high_limit, 0);
            } else {
                prop_assert_eq!(port.vlarb_low().len(), usize::from(low));
                prop_assert_eq!(port.vlarb_high().len(), usize::from(high));
                let blocks = |c: u8| usize::from(c > 0) + usize::from(c > 32);
                prop_assert_eq!(port.vlarb.len(), blocks(low) + blocks(high));
                for (i, e) in port.vlarb_low().iter().enumerate() {
                    prop_assert_eq!(*e, VlArbEntry::new(table.0[i].vl & oper.vl_mask(), table.0[i].weight));
                }
            }
            let sl2vl = port.sl2vl.unwrap();
            prop_assert!(sl2vl.0.iter().all(|vl| vl.is_management() || vl.get() <= oper.vl_mask()));
        }
    }

    #[test]
    fn impossible_ports_are_refused() {
        let config = QosConfig::default();
        let too_big = caps(VlCount::Eight, VlCount::Eight, 65, 8);
        assert_eq!(
            plan(&config, PortClass::Ca, &too_big),
            Err(PlanError::CapOutOfRange {
                priority: Priority::Low,
                value: 65
            })
        );
        assert_eq!(
            plan(
                &config,
                PortClass::Ca,
                &caps(VlCount::Eight, VlCount::Eight, 8, 65)
            )
            .unwrap_err()
            .to_string(),
            "VLArbitrationHighCap 65 is out of range: a table has at most 64 entries"
        );
        let oper_above = caps(VlCount::Four, VlCount::Eight, 8, 8);
        assert!(matches!(
            plan(&config, PortClass::Ca, &oper_above),
            Err(PlanError::OperVlsAboveCap { .. })
        ));
    }

    #[test]
    fn no_sl_mapping_means_no_sl2vl_but_vlarb_still() {
        let mut no_map = caps(VlCount::Eight, VlCount::Eight, 8, 8);
        no_map.sl_mapping_supported = false;
        let port = plan(&QosConfig::default(), PortClass::Ca, &no_map).unwrap();
        assert_eq!(port.sl2vl, None);
        assert_eq!(port.vlarb.len(), 2);
    }
}
