//! What differs between what the fabric holds and what a Set would write.

use ibqos_mad::{Attribute, PortInfoRepr, PortState};

/// How a compared PortInfo field is shown.
pub(super) type ShowField = fn(&PortInfoRepr) -> String;

/// The PortInfo fields the sweep programs and compares (besides PortState, which counts only
/// when a Set asks for a change), each with how it is shown.
pub(super) const PORT_INFO_FIELDS: [(&str, ShowField); 11] = [
    ("LID", |p| p.lid.to_string()),
    ("LMC", |p| p.lmc.to_string()),
    ("MasterSMLID", |p| p.master_sm_lid.to_string()),
    ("SubnetPrefix", |p| format!("{:#x}", p.gid_prefix)),
    ("MasterSMSL", |p| p.master_sm_sl.to_string()),
    ("SubnetTimeOut", |p| p.subnet_timeout.to_string()),
    ("OperVLs", |p| p.operational_vls.to_string()),
    ("NeighborMTU", |p| p.neighbor_mtu.to_string()),
    ("HOQLife", |p| p.hoq_life.to_string()),
    ("VLStallCount", |p| p.vl_stall_count.to_string()),
    ("VLHighLimit", |p| p.vl_high_limit.to_string()),
];

/// What differs between what the fabric holds and what a Set would write, one line each. Only
/// what the SM programs is compared: for PortInfo, the fields the LID and link managers and QoS
/// set; a state change counts only when one is asked for.
pub(super) fn differences(held: &Attribute, planned: &Attribute, label: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = |name: &str, held: String, planned: String| {
        if held != planned {
            out.push(format!("{label}{name}: {held} -> {planned}"));
        }
    };
    match (held, planned) {
        (Attribute::PortInfo(h), Attribute::PortInfo(p)) => {
            for (name, show) in PORT_INFO_FIELDS {
                field(name, show(h), show(p));
            }
            if p.port_state != PortState::NoChange {
                field(
                    "PortState",
                    format!("{:?}", h.port_state),
                    format!("{:?}", p.port_state),
                );
            }
        }
        (Attribute::SwitchInfo(h), Attribute::SwitchInfo(p)) => {
            field(
                "LinearFDBTop",
                h.linear_fdb_top.to_string(),
                p.linear_fdb_top.to_string(),
            );
            if h.port_state_change {
                out.push(format!("{label}PortStateChange: set -> cleared"));
            }
        }
        (Attribute::LinearForwardingTable(h), Attribute::LinearForwardingTable(p)) => {
            let differing = h.ports.iter().zip(&p.ports).filter(|(a, b)| a != b).count();
            if differing > 0 {
                out.push(format!(
                    "{label}{differing} of 64 LIDs forwarded differently"
                ));
            }
        }
        (Attribute::SlToVlMappingTable(h), Attribute::SlToVlMappingTable(p)) => {
            field("SL2VL", format!("{:?}", h.vls), format!("{:?}", p.vls));
        }
        (Attribute::VlArbitrationTable(h), Attribute::VlArbitrationTable(p)) => {
            let show = |t: &ibqos_mad::VlArbitrationTableRepr| {
                let last = t
                    .entries
                    .iter()
                    .rposition(|e| e.weight != 0 || e.vl != 0)
                    .map_or(0, |i| i + 1);
                t.entries[..last]
                    .iter()
                    .map(|e| format!("{}:{}", e.vl, e.weight))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            field("VLArb", show(h), show(p));
        }
        (held, planned) => out.push(format!(
            "{label}read {:?}, planned {:?}",
            held.id(),
            planned.id()
        )),
    }
    out
}
