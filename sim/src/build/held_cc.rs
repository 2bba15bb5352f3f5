//! The congestion control a fabric's agents held (a dump's `congestion`, `ibqos dump
//! --congestion`), as a run's settings: for a run over a dump's tables whose traffic file sets
//! none of its own.
//!
//! The simulator takes one setting for every switch and one for every CA port, as OpenSM
//! programs them. A fabric whose agents hold different ones is refused, naming two that
//! differ, rather than run with one of them.

use ibqos_fabric::dump::{CaCongestionDump, CongestionDump, FabricDump, SwitchCongestionDump};

use crate::cc::{CcConfig, CcConfigError, CcParams};

/// Why the agents' settings cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeldCcError {
    #[error(
        "congestion control: {first} and {second} hold different {what}; the simulator runs one \
         setting for every {kind} (set [congestion_control] in the traffic file to choose)"
    )]
    Differ {
        first: String,
        second: String,
        what: &'static str,
        kind: &'static str,
    },
    #[error("congestion control held by {agent}: {error}")]
    Invalid { agent: String, error: CcConfigError },
}

/// The settings the agents of `dump` hold, when any has congestion control on (a switch with a
/// Threshold, or a CA port with a Control_Map bit); `None` otherwise. Agents that answered
/// nothing (no `congestion`) are left out.
pub fn held_congestion(dump: &FabricDump) -> Result<Option<CcParams>, HeldCcError> {
    let mut switch: Option<(String, &SwitchCongestionDump)> = None;
    let mut ca: Option<(String, &CaCongestionDump)> = None;
    for (guid, node) in &dump.nodes {
        for (num, port) in &node.ports {
            let agent = || format!("{} ({guid}) port {num}", node.name);
            match &port.congestion {
                Some(CongestionDump::Switch(held)) => {
                    same(&mut switch, agent, held, switch_differs, "switch")?;
                }
                Some(CongestionDump::Ca(held)) => same(&mut ca, agent, held, ca_differs, "CA")?,
                None => {}
            }
        }
    }
    let on = switch.as_ref().is_some_and(|(_, s)| s.threshold > 0)
        || ca.as_ref().is_some_and(|(_, c)| c.control_map != 0);
    if !on {
        return Ok(None);
    }
    let (switch, switch_agent) = switch.map_or((None, None), |(agent, s)| (Some(s), Some(agent)));
    let (ca, ca_agent) = ca.map_or((None, None), |(agent, c)| (Some(c), Some(agent)));
    config(switch, ca)
        .and_then(|config| config.params())
        .map(Some)
        .map_err(|error| {
            // A switch setting's keys are `cc_sw_*`, a CA's `cc_ca_*` and `cc_cct`.
            let held_by = if error.key().starts_with("cc_sw_") {
                switch_agent
            } else {
                ca_agent
            };
            let agent = held_by.unwrap_or_default();
            HeldCcError::Invalid { agent, error }
        })
}

/// Keeps the first agent's setting in `first`, and refuses a later one that `differs` from it.
fn same<'d, T>(
    first: &mut Option<(String, &'d T)>,
    agent: impl Fn() -> String,
    held: &'d T,
    differs: fn(&T, &T) -> Option<&'static str>,
    kind: &'static str,
) -> Result<(), HeldCcError> {
    match first {
        None => *first = Some((agent(), held)),
        Some((name, kept)) => {
            if let Some(what) = differs(kept, held) {
                return Err(HeldCcError::Differ {
                    first: name.clone(),
                    second: agent(),
                    what,
                    kind,
                });
            }
        }
    }
    Ok(())
}

/// The first field of SwitchCongestionSetting the simulator reads in which `a` and `b` differ.
fn switch_differs(a: &SwitchCongestionDump, b: &SwitchCongestionDump) -> Option<&'static str> {
    [
        (a.threshold != b.threshold, "Thresholds"),
        (a.marking_rate != b.marking_rate, "Marking_Rates"),
        (a.packet_size != b.packet_size, "Packet_Sizes"),
        (a.victim_mask != b.victim_mask, "Victim_Masks"),
    ]
    .into_iter()
    .find_map(|(differ, what)| differ.then_some(what))
}

/// The first part of CACongestionSetting or the table in which `a` and `b` differ.
fn ca_differs(a: &CaCongestionDump, b: &CaCongestionDump) -> Option<&'static str> {
    [
        (a.port_control != b.port_control, "Port_Controls"),
        (a.control_map != b.control_map, "Control_Maps"),
        (a.sls != b.sls, "per-SL settings"),
        (a.table != b.table, "congestion control tables"),
    ]
    .into_iter()
    .find_map(|(differ, what)| differ.then_some(what))
}

/// The settings under OpenSM's option names, so that [`CcConfig::params`] checks them as it
/// checks a traffic file's; what no agent held is 0, as OpenSM leaves it.
fn config(
    switch: Option<&SwitchCongestionDump>,
    ca: Option<&CaCongestionDump>,
) -> Result<CcConfig, CcConfigError> {
    let sls = ca.map_or(&[][..], |ca| &ca.sls[..]);
    let by_sl = |field: usize| sls.iter().map(move |sl| sl[field]);
    // CCTI_Increase and CCTI_Min are 8 bits on the wire; a dump file may hold anything.
    let bytes = |field: usize, key: &'static str| {
        by_sl(field)
            .map(|value| {
                u8::try_from(value).map_err(|_| CcConfigError::OutOfRange {
                    key,
                    value: value.into(),
                    allowed: "0 to 255 (8 bits)",
                })
            })
            .collect::<Result<Vec<u8>, _>>()
    };
    let table = ca.map_or(&[0][..], |ca| &ca.table[..]);
    let cct = table
        .iter()
        .map(|entry| format!("{}:{}", entry >> 14, entry & 0x3fff))
        .collect::<Vec<_>>()
        .join(",");
    Ok(CcConfig {
        cc_sw_cong_setting_threshold: switch.map_or(0, |s| s.threshold),
        cc_sw_cong_setting_marking_rate: switch.map_or(0, |s| s.marking_rate),
        cc_sw_cong_setting_packet_size: switch.map_or(0, |s| s.packet_size),
        cc_sw_cong_setting_victim_mask: switch.map(|s| s.victim_mask.clone()),
        cc_ca_cong_setting_port_control: ca.map_or(0, |c| c.port_control),
        cc_ca_cong_setting_control_map: ca.map_or(0, |c| c.control_map),
        cc_ca_cong_setting_ccti_timer: by_sl(0).collect(),
        cc_ca_cong_setting_ccti_increase: bytes(1, "cc_ca_cong_setting_ccti_increase")?,
        cc_ca_cong_setting_ccti_min: bytes(3, "cc_ca_cong_setting_ccti_min")?,
        cc_cct: cct,
    })
}
