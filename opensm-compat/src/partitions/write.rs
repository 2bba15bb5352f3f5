//! [`Partitions`] as a partitions.conf OpenSM reads back to the same definitions.
//!
//! One definition per block: the header on its own line, one member per line, then one mgid
//! item per line (an mgid item takes the rest of its line, `osm_prtn_config.c:750-754`), each
//! with at least one flag so that OpenSM does not read its flags past the line's end; the `;` alone
//! on the last line.

use std::fmt::Write as _;
use std::net::Ipv6Addr;

use ibqos_qos::partitions::{GroupFlags, McGroup, Members, Membership, Partition, Partitions};

/// The memberships by their names in partitions.conf (and ibqos.toml's `[partitions]`).
pub(crate) const MEMBERSHIPS: [(Membership, &str); 3] = [
    (Membership::Limited, "limited"),
    (Membership::Full, "full"),
    (Membership::Both, "both"),
];

/// The port sets a member item names by a word (every other item is a GUID).
pub(crate) const GROUPS: [(Members, &str); 5] = [
    (Members::All, "ALL"),
    (Members::AllCas, "ALL_CAS"),
    (Members::AllSwitches, "ALL_SWITCHES"),
    (Members::AllRouters, "ALL_ROUTERS"),
    (Members::SmPort, "SELF"),
];

/// The name of `m` in [`MEMBERSHIPS`].
pub(crate) fn membership(m: Membership) -> &'static str {
    MEMBERSHIPS
        .iter()
        .find(|(known, _)| *known == m)
        .map_or("limited", |(_, name)| name)
}

/// The name of `m` in [`GROUPS`]; `None` for a single port.
pub(crate) fn group(m: Members) -> Option<&'static str> {
    GROUPS
        .iter()
        .find(|(known, _)| *known == m)
        .map(|(_, name)| *name)
}

fn ports(m: Members) -> String {
    match m {
        Members::Port(guid) => format!("0x{:016x}", guid.0),
        words => group(words).unwrap_or_default().to_string(),
    }
}

/// The flags of `flags` that differ from `base`, each as `,name=value`.
fn group_flags(out: &mut String, flags: &GroupFlags, base: &GroupFlags) {
    if flags.mtu != base.mtu {
        let _ = write!(out, ",mtu={}", flags.mtu);
    }
    if flags.rate != base.rate {
        let _ = write!(out, ",rate={}", flags.rate);
    }
    for scope in 1..16 {
        let bit = 1u16 << scope;
        if flags.scope_mask & bit != 0 && base.scope_mask & bit == 0 {
            let _ = write!(out, ",scope={scope}");
        }
    }
    if flags.q_key != base.q_key {
        let _ = write!(out, ",Q_Key=0x{:08x}", flags.q_key);
    }
    if flags.tclass != base.tclass {
        let _ = write!(out, ",TClass={}", flags.tclass);
    }
    if flags.flow_label != base.flow_label {
        let _ = write!(out, ",FlowLabel=0x{:05x}", flags.flow_label);
    }
}

/// One mgid line; `last` ends the definition there.
fn mcgroup(out: &mut String, group: &McGroup, header: &GroupFlags, last: bool) {
    let mgid = Ipv6Addr::from(group.mgid.to_bytes());
    // sl always: the item needs one flag, and any SL 0-15 reads back without a warning.
    let _ = write!(out, "\tmgid={mgid},sl={}", group.flags.sl);
    // An mgid group inherits the header's flags but its TClass (`osm_prtn_config.c:613-619`).
    let inherited = GroupFlags {
        tclass: 0,
        sl: group.flags.sl,
        ..*header
    };
    group_flags(out, &group.flags, &inherited);
    out.push_str(if last { " ;\n" } else { "\n" });
}

fn partition(out: &mut String, p: &Partition) {
    out.push_str(&p.name);
    if let Some(pkey) = p.pkey {
        let _ = write!(out, "=0x{pkey:04x}");
    }
    if p.ipoib {
        out.push_str(",ipoib");
    }
    if p.indx0 {
        out.push_str(",indx0");
    }
    if p.default_membership != Membership::Limited {
        let _ = write!(out, ",defmember={}", membership(p.default_membership));
    }
    if p.flags.sl != 0 {
        let _ = write!(out, ",sl={}", p.flags.sl);
    }
    group_flags(out, &p.flags, &GroupFlags::default());
    // The `;` ends the last line that holds an item, never a line of its own: after a lone
    // `;` OpenSM's count of what it parsed runs past the line's end into what the earlier
    // lines left in its buffer, and it drops the file. An mgid item takes the rest of its
    // line, so each has its own, before the members.
    if p.members.is_empty() && p.mcgroups.is_empty() {
        out.push_str(" : ;\n");
        return;
    }
    out.push_str(" :\n");
    for (i, group) in p.mcgroups.iter().enumerate() {
        let last = p.members.is_empty() && i + 1 == p.mcgroups.len();
        mcgroup(out, group, &p.flags, last);
    }
    for (i, m) in p.members.iter().enumerate() {
        let end = if i + 1 < p.members.len() { "," } else { " ;" };
        let _ = writeln!(
            out,
            "\t{}={}{end}",
            ports(m.ports),
            membership(m.membership)
        );
    }
}

/// `partitions` as partitions.conf text.
pub fn write(partitions: &Partitions) -> String {
    let mut out = String::from("# partitions.conf written by ibqos\n");
    for p in &partitions.partitions {
        partition(&mut out, p);
    }
    out
}
