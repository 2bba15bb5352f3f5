//! The QoS configuration: a generic set and one set per port class, each field falling back on
//! its own, exactly as OpenSM's `qos_build_config` does (`osm_qos.c:599-668`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use ibqos_mad::VlArbEntry;

use crate::tables::{Sl2VlTable, VlArbTable};
use crate::types::Vl;

/// The four kinds of port that get their own QoS settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PortClass {
    /// A channel adapter (HCA) port: OpenSM's `qos_ca_*`.
    Ca,
    /// An enhanced switch port 0: `qos_sw0_*`. A base port 0 gets no QoS programming.
    Sw0,
    /// A switch external port, 1..N: `qos_swe_*`.
    Swe,
    /// A router port: `qos_rtr_*`.
    Rtr,
}

impl PortClass {
    pub const ALL: [PortClass; 4] = [
        PortClass::Ca,
        PortClass::Sw0,
        PortClass::Swe,
        PortClass::Rtr,
    ];

    /// The short name used in OpenSM's option keys (`qos_<name>_sl2vl`) and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            PortClass::Ca => "ca",
            PortClass::Sw0 => "sw0",
            PortClass::Swe => "swe",
            PortClass::Rtr => "rtr",
        }
    }
}

impl fmt::Display for PortClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PortClass {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PortClass::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| format!("unknown port class `{s}`: expected ca, sw0, swe or rtr"))
    }
}

/// One set of QoS options (OpenSM's `qos_`, `qos_ca_`, ... prefixes). `None` means "not set here",
/// so the value falls back to the generic set and then to OpenSM's compiled default.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosSet {
    /// `qos_*_max_vls`: validated by OpenSM (1..=15) but never used to program anything.
    pub max_vls: Option<u8>,
    /// `qos_*_high_limit`: PortInfo.VLHighLimit, in 4 KB units; 255 is unbounded.
    pub high_limit: Option<u8>,
    pub vlarb_high: Option<VlArbTable>,
    pub vlarb_low: Option<VlArbTable>,
    pub sl2vl: Option<Sl2VlTable>,
}

impl QosSet {
    pub fn is_empty(&self) -> bool {
        *self == QosSet::default()
    }
}

/// The whole QoS configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QosConfig {
    /// OpenSM's `qos`: nothing is programmed unless it is on.
    pub enabled: bool,
    /// The generic set, `qos_*`.
    pub generic: QosSet,
    pub ca: QosSet,
    pub sw0: QosSet,
    pub swe: QosSet,
    pub rtr: QosSet,
}

impl QosConfig {
    pub fn set(&self, class: PortClass) -> &QosSet {
        match class {
            PortClass::Ca => &self.ca,
            PortClass::Sw0 => &self.sw0,
            PortClass::Swe => &self.swe,
            PortClass::Rtr => &self.rtr,
        }
    }

    pub fn set_mut(&mut self, class: PortClass) -> &mut QosSet {
        match class {
            PortClass::Ca => &mut self.ca,
            PortClass::Sw0 => &mut self.sw0,
            PortClass::Swe => &mut self.swe,
            PortClass::Rtr => &mut self.rtr,
        }
    }

    /// The settings a port of `class` gets: each field from the class set if set there, else
    /// from the generic set, else OpenSM's compiled default.
    pub fn effective(&self, class: PortClass) -> EffectiveQos {
        let own = self.set(class);
        let generic = &self.generic;
        EffectiveQos {
            max_vls: own.max_vls.or(generic.max_vls).unwrap_or(defaults::MAX_VLS),
            high_limit: own
                .high_limit
                .or(generic.high_limit)
                .unwrap_or(defaults::HIGH_LIMIT),
            vlarb_high: own
                .vlarb_high
                .or(generic.vlarb_high)
                .unwrap_or_else(defaults::vlarb_high),
            vlarb_low: own
                .vlarb_low
                .or(generic.vlarb_low)
                .unwrap_or_else(defaults::vlarb_low),
            sl2vl: own.sl2vl.or(generic.sl2vl).unwrap_or_else(defaults::sl2vl),
        }
    }
}

/// The settings in force for one port class after fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EffectiveQos {
    pub max_vls: u8,
    pub high_limit: u8,
    pub vlarb_high: VlArbTable,
    pub vlarb_low: VlArbTable,
    pub sl2vl: Sl2VlTable,
}

/// OpenSM 3.3.23's compiled defaults (`osm_base.h:638-660`).
pub mod defaults {
    use super::*;

    /// What an unset `qos_max_vls` means.
    pub const MAX_VLS: u8 = 15;
    /// What an unset `qos_high_limit` means.
    pub const HIGH_LIMIT: u8 = 0;

    /// `OSM_DEFAULT_QOS_VLARB_HIGH` = `0:4,1:0,2:0,...,14:0`.
    pub fn vlarb_high() -> VlArbTable {
        let entries: Vec<VlArbEntry> = (0..15)
            .map(|vl| VlArbEntry::new(vl, if vl == 0 { 4 } else { 0 }))
            .collect();
        VlArbTable::from_entries(&entries)
    }

    /// `OSM_DEFAULT_QOS_VLARB_LOW` = `0:0,1:4,2:4,...,14:4`.
    pub fn vlarb_low() -> VlArbTable {
        let entries: Vec<VlArbEntry> = (0..15)
            .map(|vl| VlArbEntry::new(vl, if vl == 0 { 0 } else { 4 }))
            .collect();
        VlArbTable::from_entries(&entries)
    }

    /// `OSM_DEFAULT_QOS_SL2VL` = `0,1,2,...,14,7`: SL n on VL n, SL15 on VL7.
    pub fn sl2vl() -> Sl2VlTable {
        Sl2VlTable(std::array::from_fn(|sl| {
            Vl::from_nibble(if sl == 15 { 7 } else { sl as u8 })
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each field falls back on its own (`qos_build_config`, `osm_qos.c:599-668`):
    /// `qos_high_limit 6`, `qos_swe_high_limit 0`.
    #[test]
    fn high_limit_falls_back_per_class() {
        let mut config = QosConfig::default();
        config.generic.high_limit = Some(6);
        config.swe.high_limit = Some(0);
        let limits: Vec<u8> = PortClass::ALL
            .iter()
            .map(|c| config.effective(*c).high_limit)
            .collect();
        assert_eq!(limits, vec![6, 6, 0, 6]);
    }

    /// Vector 25: `qos_ca_vlarb_high 0:8` only; the CA low table stays the compiled default.
    #[test]
    fn fields_fall_back_independently() {
        let mut config = QosConfig::default();
        config.ca.vlarb_high = Some(VlArbTable::from_entries(&[VlArbEntry::new(0, 8)]));
        let ca = config.effective(PortClass::Ca);
        assert_eq!(
            ca.vlarb_high.significant_entries(),
            &[VlArbEntry::new(0, 8)]
        );
        assert_eq!(ca.vlarb_low, defaults::vlarb_low());
        assert_eq!(
            config.effective(PortClass::Swe).vlarb_high,
            defaults::vlarb_high()
        );
    }

    #[test]
    fn default_sl2vl_payload() {
        assert_eq!(
            defaults::sl2vl().to_wire(),
            [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xe7]
        );
    }

    #[test]
    fn port_class_names_parse_back() {
        for class in PortClass::ALL {
            assert_eq!(class.name().parse::<PortClass>(), Ok(class));
        }
        assert!("switch".parse::<PortClass>().is_err());
    }
}
