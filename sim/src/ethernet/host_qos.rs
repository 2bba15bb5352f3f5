//! A RoCE host's QoS classification, as NVIDIA's ConnectX documentation (WinOF-2, "DSCP Based
//! QoS" and "Receive Trust State") gives it: which priority a received packet is on, and which
//! DSCP an RDMA packet is sent with.
//!
//! - `RxTrustedState` 1 trusts the 802.1p priority (PCP) of the VLAN tag, and an untagged frame
//!   is on `DefaultUntaggedPriority`; 2 trusts the DSCP of the IP header.
//! - Trusting the DSCP, the priority is the DSCP's three most significant bits (the document's
//!   static table: 0-7 to 0, ..., 56-63 to 7), unless `DscpBasedEtsEnabled` is 1: then it is
//!   `DscpToPriorityMappingTable_<DSCP>`, whose defaults are the same but for DSCP 3 and 4, on
//!   priorities 3 and 4.
//! - An RDMA packet with a priority is sent with `PriorityToDscpMappingTable_<priority>`
//!   (default: the priority itself); one without is sent with `DscpForGlobalFlowControl`
//!   (default 26, so priority 3 through the table).
//!
//! The registry keys are the configuration's keys, the tables one key per entry as in the
//! registry (`DscpToPriorityMappingTable_26 = 5`).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// What a received packet's priority is taken from (`RxTrustedState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(try_from = "u8")]
pub enum Trust {
    /// 1: the VLAN tag's priority (PCP).
    #[default]
    Pcp,
    /// 2: the IP header's DSCP.
    Dscp,
}

impl TryFrom<u8> for Trust {
    type Error = String;
    fn try_from(value: u8) -> Result<Trust, String> {
        match value {
            1 => Ok(Trust::Pcp),
            2 => Ok(Trust::Dscp),
            _ => Err(format!(
                "RxTrustedState {value} does not exist: 1 trusts the PCP, 2 the DSCP"
            )),
        }
    }
}

const DSCPS: usize = 64;
const PRIORITIES: usize = 8;
const DSCP_TABLE: &str = "DscpToPriorityMappingTable_";
const PRIORITY_TABLE: &str = "PriorityToDscpMappingTable_";
const KEYS: &[&str] = &[
    "RxTrustedState",
    "DefaultUntaggedPriority",
    "DscpBasedEtsEnabled",
    "DscpForGlobalFlowControl",
    "DscpToPriorityMappingTable_0 to _63",
    "PriorityToDscpMappingTable_0 to _7",
];

/// The document's default `DscpToPriorityMappingTable`: the three most significant bits, but
/// DSCP 3 and 4 on priorities 3 and 4.
const fn default_dscp_table() -> [u8; DSCPS] {
    let mut table = [0; DSCPS];
    let mut dscp = 0;
    while dscp < DSCPS {
        table[dscp] = match dscp {
            3 | 4 => dscp as u8,
            _ => (dscp >> 3) as u8,
        };
        dscp += 1;
    }
    table
}

/// One host's QoS keys, `Default` being the document's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostQos {
    /// `RxTrustedState`.
    pub trust: Trust,
    /// `DefaultUntaggedPriority`, 0-7.
    pub default_untagged_priority: u8,
    /// `DscpBasedEtsEnabled`, 0 or 1: 1 classifies by the table rather than the static map.
    pub dscp_based_ets_enabled: u8,
    /// `DscpToPriorityMappingTable_0` to `_63`.
    pub dscp_to_priority: [u8; DSCPS],
    /// `PriorityToDscpMappingTable_0` to `_7`.
    pub priority_to_dscp: [u8; PRIORITIES],
    /// `DscpForGlobalFlowControl`, 0-63.
    pub dscp_for_global_flow_control: u8,
}

impl Default for HostQos {
    fn default() -> HostQos {
        HostQos {
            trust: Trust::Pcp,
            default_untagged_priority: 0,
            dscp_based_ets_enabled: 0,
            dscp_to_priority: default_dscp_table(),
            priority_to_dscp: [0, 1, 2, 3, 4, 5, 6, 7],
            dscp_for_global_flow_control: 26,
        }
    }
}

/// A host QoS value the document does not allow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key} = {value} is out of range: {allowed}")]
pub struct HostQosError {
    pub key: String,
    pub value: u8,
    pub allowed: &'static str,
}

impl HostQos {
    /// Checks every priority (0-7), DSCP (0-63) and flag (0 or 1).
    pub fn validate(&self) -> Result<(), HostQosError> {
        const PRIORITY: &str = "a priority is 0 to 7";
        const DSCP: &str = "a DSCP is 0 to 63";
        let check = |key: String, value: u8, highest: u8, allowed| {
            if value > highest {
                Err(HostQosError {
                    key,
                    value,
                    allowed,
                })
            } else {
                Ok(())
            }
        };
        check(
            "DefaultUntaggedPriority".into(),
            self.default_untagged_priority,
            7,
            PRIORITY,
        )?;
        check(
            "DscpBasedEtsEnabled".into(),
            self.dscp_based_ets_enabled,
            1,
            "0 or 1",
        )?;
        check(
            "DscpForGlobalFlowControl".into(),
            self.dscp_for_global_flow_control,
            63,
            DSCP,
        )?;
        for (dscp, &priority) in self.dscp_to_priority.iter().enumerate() {
            check(format!("{DSCP_TABLE}{dscp}"), priority, 7, PRIORITY)?;
        }
        for (priority, &dscp) in self.priority_to_dscp.iter().enumerate() {
            check(format!("{PRIORITY_TABLE}{priority}"), dscp, 63, DSCP)?;
        }
        Ok(())
    }

    /// The priority of a received packet with the VLAN tag's `pcp` (`None` when untagged) and
    /// the IP header's `dscp` (0-63).
    pub fn rx_priority(&self, pcp: Option<u8>, dscp: u8) -> u8 {
        match self.trust {
            Trust::Pcp => pcp.unwrap_or(self.default_untagged_priority),
            Trust::Dscp if self.dscp_based_ets_enabled == 1 => {
                self.dscp_to_priority[usize::from(dscp)]
            }
            Trust::Dscp => dscp >> 3,
        }
    }

    /// The DSCP an RDMA packet is sent with: its priority's, or the default DSCP when the
    /// application gave none.
    pub fn tx_dscp(&self, priority: Option<u8>) -> u8 {
        match priority {
            Some(priority) => self.priority_to_dscp[usize::from(priority)],
            None => self.dscp_for_global_flow_control,
        }
    }
}

impl<'de> Deserialize<'de> for HostQos {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<HostQos, D::Error> {
        deserializer.deserialize_map(HostQosVisitor)
    }
}

struct HostQosVisitor;

impl<'de> Visitor<'de> for HostQosVisitor {
    type Value = HostQos;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a table of host QoS registry keys")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<HostQos, A::Error> {
        let mut qos = HostQos::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "RxTrustedState" => qos.trust = map.next_value()?,
                "DefaultUntaggedPriority" => qos.default_untagged_priority = map.next_value()?,
                "DscpBasedEtsEnabled" => qos.dscp_based_ets_enabled = map.next_value()?,
                "DscpForGlobalFlowControl" => {
                    qos.dscp_for_global_flow_control = map.next_value()?
                }
                _ => {
                    let entry = if let Some(dscp) = key.strip_prefix(DSCP_TABLE) {
                        table_entry(&mut qos.dscp_to_priority, &key, dscp)
                    } else if let Some(priority) = key.strip_prefix(PRIORITY_TABLE) {
                        table_entry(&mut qos.priority_to_dscp, &key, priority)
                    } else {
                        return Err(de::Error::unknown_field(&key, KEYS));
                    };
                    *entry.map_err(de::Error::custom)? = map.next_value()?;
                }
            }
        }
        Ok(qos)
    }
}

/// The entry of `table` that `key` (with its `index` after the table's name) names.
fn table_entry<'t>(table: &'t mut [u8], key: &str, index: &str) -> Result<&'t mut u8, String> {
    let last = table.len() - 1;
    index
        .parse::<usize>()
        .ok()
        .and_then(|index| table.get_mut(index))
        .ok_or_else(|| format!("{key} does not exist: the table has entries _0 to _{last}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<HostQos, String> {
        toml::from_str(text).map_err(|e| e.message().to_string())
    }

    #[test]
    fn dscp_trust_takes_the_three_most_significant_bits() {
        let qos = HostQos {
            trust: Trust::Dscp,
            ..HostQos::default()
        };
        // (DSCP, priority = DSCP >> 3): 26 = 0b011_010 -> 3 (the document's own example),
        // 46 (EF) = 0b101_110 -> 5, 20 -> 2, 0 -> 0, 7 -> 0, 8 -> 1, 63 -> 7; 3 and 4 -> 0, the
        // static map having no exceptions.
        for (dscp, priority) in [
            (26, 3),
            (46, 5),
            (20, 2),
            (0, 0),
            (7, 0),
            (8, 1),
            (63, 7),
            (3, 0),
            (4, 0),
        ] {
            assert_eq!(qos.rx_priority(Some(6), dscp), priority, "DSCP {dscp}");
        }
    }

    #[test]
    fn dscp_based_ets_uses_the_table_with_its_two_exceptions() {
        let qos = HostQos {
            trust: Trust::Dscp,
            dscp_based_ets_enabled: 1,
            ..HostQos::default()
        };
        // The document's DSCP Based QoS table: 3 -> 3, 4 -> 4, the rest of 0-7 -> 0, then the
        // three most significant bits (26 -> 3, 46 -> 5).
        for (dscp, priority) in [(3, 3), (4, 4), (5, 0), (2, 0), (26, 3), (46, 5), (63, 7)] {
            assert_eq!(qos.rx_priority(None, dscp), priority, "DSCP {dscp}");
        }
    }

    #[test]
    fn pcp_trust_takes_the_tag_or_the_default_untagged_priority() {
        let qos = HostQos {
            default_untagged_priority: 3,
            ..HostQos::default()
        };
        // The DSCP (46, priority 5 by DSCP) is ignored when trusting the PCP.
        assert_eq!(qos.rx_priority(Some(5), 0), 5);
        assert_eq!(qos.rx_priority(None, 46), 3);
        assert_eq!(HostQos::default().rx_priority(None, 46), 0);
    }

    #[test]
    fn rdma_without_a_priority_goes_out_on_dscp_26_and_priority_3() {
        // The document: "the driver will insert the default DSCP value (26 today) ... lookup of
        // DSCP 26 in the DscpToPriorityMappingTable ... send it out on priority 3"; with a
        // priority, "priority 3 ... will insert a DSCP value of 3".
        let qos = HostQos {
            trust: Trust::Dscp,
            dscp_based_ets_enabled: 1,
            ..HostQos::default()
        };
        assert_eq!(qos.tx_dscp(None), 26);
        assert_eq!(qos.rx_priority(None, qos.tx_dscp(None)), 3);
        assert_eq!(qos.tx_dscp(Some(3)), 3);
        assert_eq!(qos.rx_priority(None, qos.tx_dscp(Some(4))), 4);
    }

    #[test]
    fn registry_keys_parse_over_the_defaults() {
        let qos = parse(
            "RxTrustedState = 2\nDscpBasedEtsEnabled = 1\nDscpToPriorityMappingTable_26 = 5\n\
             PriorityToDscpMappingTable_3 = 24\nDefaultUntaggedPriority = 3\n",
        )
        .unwrap();
        let mut expected = HostQos {
            trust: Trust::Dscp,
            dscp_based_ets_enabled: 1,
            default_untagged_priority: 3,
            ..HostQos::default()
        };
        expected.dscp_to_priority[26] = 5;
        expected.priority_to_dscp[3] = 24;
        assert_eq!(qos, expected);
        assert_eq!(qos.rx_priority(None, 26), 5);
        assert_eq!(qos.tx_dscp(Some(3)), 24);
        assert_eq!(parse("").unwrap(), HostQos::default());
    }

    #[test]
    fn bad_keys_and_values_are_refused_with_their_names() {
        for (text, message) in [
            ("RxTrustedState = 3", "RxTrustedState 3 does not exist"),
            (
                "DscpToPriorityMappingTable_64 = 1",
                "DscpToPriorityMappingTable_64 does not exist: the table has entries _0 to _63",
            ),
            (
                "PriorityToDscpMappingTable_x = 1",
                "PriorityToDscpMappingTable_x does not exist: the table has entries _0 to _7",
            ),
            ("RxTrustState = 1", "unknown field `RxTrustState`"),
            (
                "DefaultUntaggedPriority = 300",
                "invalid value: integer `300`",
            ),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(message), "{text}: {error}");
        }
        for (text, message) in [
            (
                "DscpToPriorityMappingTable_26 = 8",
                "DscpToPriorityMappingTable_26 = 8 is out of range: a priority is 0 to 7",
            ),
            (
                "PriorityToDscpMappingTable_7 = 64",
                "PriorityToDscpMappingTable_7 = 64 is out of range: a DSCP is 0 to 63",
            ),
            (
                "DefaultUntaggedPriority = 8",
                "DefaultUntaggedPriority = 8 is out of range: a priority is 0 to 7",
            ),
            (
                "DscpBasedEtsEnabled = 2",
                "DscpBasedEtsEnabled = 2 is out of range: 0 or 1",
            ),
            (
                "DscpForGlobalFlowControl = 64",
                "DscpForGlobalFlowControl = 64 is out of range: a DSCP is 0 to 63",
            ),
        ] {
            let error = parse(text).unwrap().validate().unwrap_err();
            assert_eq!(error.to_string(), message);
        }
        assert_eq!(HostQos::default().validate(), Ok(()));
    }
}
