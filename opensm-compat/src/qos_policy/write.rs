//! A [`QosPolicy`] as a qos-policy.conf that OpenSM parses back to the same policy: every
//! string quoted (so blanks and keywords inside it survive), one section of each kind.

use std::fmt::Write as _;

use ibqos_qos::policy::{NodeTypes, QosPolicy, RangeSet, UlpKind};

/// The scanner has no escape for a double quote inside quotes: it is left out (and
/// [`super::to_policy_conf`] reports the difference).
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('"', ""))
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| quoted(s))
        .collect::<Vec<_>>()
        .join(", ")
}

fn ranges(set: &RangeSet, hex: bool) -> String {
    let one = |n: u64| {
        if hex {
            format!("0x{n:x}")
        } else {
            n.to_string()
        }
    };
    set.ranges()
        .iter()
        .map(|&(a, b)| {
            if a == b {
                one(a)
            } else {
                format!("{}-{}", one(a), one(b))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn port_ranges(bits: u128) -> RangeSet {
    RangeSet::new((0..128u64).filter(|p| bits & (1 << p) != 0).map(|p| (p, p)))
}

fn node_types(t: NodeTypes) -> String {
    let names = [
        (t.ca, "CA"),
        (t.switch, "SWITCH"),
        (t.router, "ROUTER"),
        (t.self_port, "SELF"),
    ];
    names
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes `field: value` when `value` is not empty.
fn field(out: &mut String, indent: &str, name: &str, value: &str) {
    if !value.is_empty() {
        writeln!(out, "{indent}{name}: {value}").expect("writing to a String");
    }
}

/// The policy as a qos-policy.conf.
pub fn write(policy: &QosPolicy) -> String {
    let mut out = String::from("# Written by ibqos.\n");
    let i2 = "        ";
    if !policy.port_groups.is_empty() {
        out.push_str("\nport-groups\n");
        for g in &policy.port_groups {
            out.push_str("    port-group\n");
            field(&mut out, i2, "name", &quoted(&g.name));
            if let Some(u) = &g.usage {
                field(&mut out, i2, "use", &quoted(u));
            }
            field(&mut out, i2, "port-guid", &ranges(&g.port_guids, true));
            let names: Vec<String> = g.port_names.iter().map(ToString::to_string).collect();
            field(&mut out, i2, "port-name", &list(&names));
            field(&mut out, i2, "pkey", &ranges(&g.pkeys, true));
            field(&mut out, i2, "partition", &list(&g.partitions));
            field(&mut out, i2, "node-type", &node_types(g.node_types));
            out.push_str("    end-port-group\n");
        }
        out.push_str("end-port-groups\n");
    }
    if !policy.setup.is_empty() {
        write_setup(&mut out, policy);
    }
    out.push_str("\nqos-levels\n");
    for l in &policy.qos_levels {
        out.push_str("    qos-level\n");
        field(&mut out, i2, "name", &quoted(&l.name));
        if let Some(u) = &l.usage {
            field(&mut out, i2, "use", &quoted(u));
        }
        field(&mut out, i2, "sl", &l.sl.to_string());
        let opt = |v: Option<u8>| v.map(|v| v.to_string()).unwrap_or_default();
        field(&mut out, i2, "mtu-limit", &opt(l.mtu_limit));
        field(&mut out, i2, "rate-limit", &opt(l.rate_limit));
        field(&mut out, i2, "packet-life", &opt(l.packet_life));
        field(&mut out, i2, "path-bits", &ranges(&l.path_bits, false));
        field(&mut out, i2, "pkey", &ranges(&l.pkeys, true));
        out.push_str("    end-qos-level\n");
    }
    out.push_str("end-qos-levels\n");
    out.push_str("\nqos-match-rules\n");
    for r in &policy.match_rules {
        out.push_str("    qos-match-rule\n");
        if let Some(u) = &r.usage {
            field(&mut out, i2, "use", &quoted(u));
        }
        field(&mut out, i2, "qos-class", &ranges(&r.qos_classes, false));
        field(&mut out, i2, "source", &list(&r.sources));
        field(&mut out, i2, "destination", &list(&r.destinations));
        field(&mut out, i2, "service-id", &ranges(&r.service_ids, true));
        field(&mut out, i2, "pkey", &ranges(&r.pkeys, true));
        field(&mut out, i2, "qos-level-name", &quoted(&r.level));
        out.push_str("    end-qos-match-rule\n");
    }
    out.push_str("end-qos-match-rules\n");
    if !policy.ulps.is_empty() {
        out.push_str("\nqos-ulps\n");
        for u in &policy.ulps {
            let head = match &u.kind {
                UlpKind::Default => "default".to_string(),
                UlpKind::Sdp => "sdp".to_string(),
                UlpKind::Rds => "rds".to_string(),
                UlpKind::Iser => "iser".to_string(),
                UlpKind::Ipoib => "ipoib".to_string(),
                UlpKind::SdpPorts(p) => format!("sdp, port-num {}", ranges(p, false)),
                UlpKind::RdsPorts(p) => format!("rds, port-num {}", ranges(p, false)),
                UlpKind::IserPorts(p) => format!("iser, port-num {}", ranges(p, false)),
                UlpKind::SrpTargets(g) => format!("srp, target-port-guid {}", ranges(g, true)),
                UlpKind::IpoibPkeys(k) => format!("ipoib, pkey {}", ranges(k, true)),
                UlpKind::AnyServiceIds(s) => format!("any, service-id {}", ranges(s, true)),
                UlpKind::AnyPkeys(k) => format!("any, pkey {}", ranges(k, true)),
                UlpKind::AnyTargets(g) => format!("any, target-port-guid {}", ranges(g, true)),
                UlpKind::AnySources(g) => format!("any, source-port-guid {}", ranges(g, true)),
                UlpKind::AnySourcesTargets(g) => {
                    format!("any, source-target-port-guid {}", ranges(g, true))
                }
            };
            writeln!(out, "    {head} : {}", u.sl).expect("writing to a String");
        }
        out.push_str("end-qos-ulps\n");
    }
    out
}

fn write_setup(out: &mut String, policy: &QosPolicy) {
    let i3 = "            ";
    let pairs = |p: &[(u64, u64)]| {
        p.iter()
            .map(|(vl, w)| format!("{vl}:{w}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str("\nqos-setup\n");
    if !policy.setup.vlarb_scopes.is_empty() {
        out.push_str("    vlarb-tables\n");
        for s in &policy.setup.vlarb_scopes {
            out.push_str("        vlarb-scope\n");
            field(out, i3, "group", &list(&s.groups));
            field(out, i3, "across", &list(&s.across));
            field(out, i3, "vlarb-high", &pairs(&s.vlarb_high));
            field(out, i3, "vlarb-low", &pairs(&s.vlarb_low));
            if let Some(limit) = s.vl_high_limit {
                field(out, i3, "vl-high-limit", &limit.to_string());
            }
            out.push_str("        end-vlarb-scope\n");
        }
        out.push_str("    end-vlarb-tables\n");
    }
    if !policy.setup.sl2vl_scopes.is_empty() {
        out.push_str("    sl2vl-tables\n");
        for s in &policy.setup.sl2vl_scopes {
            out.push_str("        sl2vl-scope\n");
            field(out, i3, "group", &list(&s.groups));
            field(out, i3, "across-from", &list(&s.across_from));
            field(out, i3, "across-to", &list(&s.across_to));
            field(out, i3, "from", &ranges(&port_ranges(s.from), false));
            field(out, i3, "to", &ranges(&port_ranges(s.to), false));
            let table: Vec<String> = s.sl2vl_table.iter().map(u8::to_string).collect();
            field(out, i3, "sl2vl-table", &table.join(", "));
            out.push_str("        end-sl2vl-scope\n");
        }
        out.push_str("    end-sl2vl-tables\n");
    }
    out.push_str("end-qos-setup\n");
}
