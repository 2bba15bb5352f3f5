//! ibqos.toml's `[qos_policy]`: a qos-policy.conf as tables, every value of [`QosPolicy`]
//! kept. Number ranges are strings (`"0x10-0x1f"`, `"7"`) because GUIDs and service IDs do not
//! fit TOML's signed integers.
//!
//! ```toml
//! [[qos_policy.port_groups]]
//! name = "Storage"
//! port_guids = ["0x2c90000001000-0x2c90000001fff"]
//! node_types = ["ca"]
//! [[qos_policy.qos_levels]]
//! name = "DEFAULT"
//! sl = 0
//! [[qos_policy.ulps]]
//! ulp = "any-service-id"
//! ranges = ["0x10000-0x1ffff"]
//! sl = 2
//! ```

use std::collections::BTreeMap;
use std::ops::Range;

use ibqos_qos::policy::setup::ScopeId;
use ibqos_qos::policy::{
    MatchRule, NodeTypes, PortGroup, PortName, QosLevel, QosPolicy, QosSetup, RangeSet, Sl2vlScope,
    Ulp, UlpKind, VlarbScope,
};
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NativePolicy {
    #[serde(default)]
    port_groups: Vec<NativeGroup>,
    #[serde(default)]
    qos_levels: Vec<NativeLevel>,
    #[serde(default)]
    match_rules: Vec<NativeRule>,
    #[serde(default)]
    ulps: Vec<NativeUlp>,
    #[serde(default)]
    vlarb_scopes: Vec<Spanned<NativeVlarbScope>>,
    #[serde(default)]
    sl2vl_scopes: Vec<Spanned<NativeSl2vlScope>>,
}

/// Where each qos-setup scope is in the file, as byte ranges.
pub(crate) type ScopeSpans = BTreeMap<ScopeId, Range<usize>>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeGroup {
    name: String,
    #[serde(rename = "use")]
    usage: Option<String>,
    #[serde(default)]
    port_guids: Vec<String>,
    /// `node description/Pn`.
    #[serde(default)]
    port_names: Vec<String>,
    #[serde(default)]
    pkeys: Vec<String>,
    #[serde(default)]
    partitions: Vec<String>,
    /// `ca`, `switch`, `router`, `self`.
    #[serde(default)]
    node_types: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeLevel {
    name: String,
    #[serde(rename = "use")]
    usage: Option<String>,
    sl: u8,
    mtu_limit: Option<u8>,
    rate_limit: Option<u8>,
    packet_life: Option<u8>,
    #[serde(default)]
    path_bits: Vec<String>,
    #[serde(default)]
    pkeys: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeRule {
    #[serde(rename = "use")]
    usage: Option<String>,
    #[serde(default)]
    qos_classes: Vec<String>,
    #[serde(default)]
    sources: Vec<String>,
    #[serde(default)]
    destinations: Vec<String>,
    #[serde(default)]
    service_ids: Vec<String>,
    #[serde(default)]
    pkeys: Vec<String>,
    level: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeUlp {
    ulp: String,
    #[serde(default)]
    ranges: Vec<String>,
    sl: u8,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeVlarbScope {
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    across: Vec<String>,
    /// `"vl:weight"`.
    #[serde(default)]
    vlarb_high: Vec<String>,
    #[serde(default)]
    vlarb_low: Vec<String>,
    vl_high_limit: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeSl2vlScope {
    #[serde(default)]
    groups: Vec<String>,
    #[serde(default)]
    across_from: Vec<String>,
    #[serde(default)]
    across_to: Vec<String>,
    #[serde(default)]
    from: Vec<String>,
    #[serde(default)]
    to: Vec<String>,
    sl2vl_table: [u8; 16],
}

/// The ULP names of `[[qos_policy.ulps]]`; those with `ranges` end in the range's kind.
const ULPS: [&str; 15] = [
    "default",
    "sdp",
    "sdp-port-num",
    "rds",
    "rds-port-num",
    "iser",
    "iser-port-num",
    "srp-target-port-guid",
    "ipoib",
    "ipoib-pkey",
    "any-service-id",
    "any-pkey",
    "any-target-port-guid",
    "any-source-port-guid",
    "any-source-target-port-guid",
];

/// A number as ibqos.toml's strings write one: decimal, or hex with `0x`.
pub(crate) fn number(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("`{s}` is not a number (decimal, or hex with 0x)"))
}

fn pairs_of(items: &[String], sep: char) -> Result<Vec<(u64, u64)>, String> {
    items
        .iter()
        .map(|item| match item.split_once(sep) {
            Some((a, b)) => Ok((number(a)?, number(b)?)),
            None if sep == '-' => number(item).map(|n| (n, n)),
            None => Err(format!("`{item}` is not `vl{sep}weight`")),
        })
        .collect()
}

fn ranges(items: &[String]) -> Result<RangeSet, String> {
    Ok(RangeSet::new(pairs_of(items, '-')?))
}

fn pkeys(items: &[String]) -> Result<RangeSet, String> {
    Ok(RangeSet::pkeys(pairs_of(items, '-')?))
}

fn ports(items: &[String]) -> Result<u128, String> {
    let mut bits = 0u128;
    for (a, b) in pairs_of(items, '-')? {
        if a.max(b) >= 128 {
            return Err(format!("port {} is above 127", a.max(b)));
        }
        for p in a.min(b)..=a.max(b) {
            bits |= 1 << p;
        }
    }
    Ok(bits)
}

fn port_name(s: &str) -> Result<PortName, String> {
    let bad = || format!("`{s}` is not `node description/Pn` with n from 1");
    let (node, port) = s.rsplit_once('/').ok_or_else(bad)?;
    let port = port
        .strip_prefix(['P', 'p'])
        .and_then(|p| number(p).ok())
        .and_then(|p| u32::try_from(p).ok())
        .filter(|p| *p != 0)
        .ok_or_else(bad)?;
    Ok(PortName {
        node: node.to_string(),
        port,
    })
}

fn node_types(names: &[String]) -> Result<NodeTypes, String> {
    let mut t = NodeTypes::default();
    for name in names {
        match name.as_str() {
            "ca" => t.ca = true,
            "switch" => t.switch = true,
            "router" => t.router = true,
            "self" => t.self_port = true,
            other => return Err(format!("node type `{other}`: ca, switch, router or self")),
        }
    }
    Ok(t)
}

fn ulp(n: &NativeUlp) -> Result<Ulp, String> {
    if n.sl > 15 {
        return Err(format!("qos-ulps SL {} is above 15", n.sl));
    }
    let r = || ranges(&n.ranges);
    let port_nums = || {
        let set = r()?;
        if set.ranges().iter().any(|&(_, end)| end > 0xFFFF) {
            return Err("a ULP port number is at most 0xffff".to_string());
        }
        Ok(set)
    };
    let kind = match n.ulp.as_str() {
        "default" => UlpKind::Default,
        "sdp" => UlpKind::Sdp,
        "sdp-port-num" => UlpKind::SdpPorts(port_nums()?),
        "rds" => UlpKind::Rds,
        "rds-port-num" => UlpKind::RdsPorts(port_nums()?),
        "iser" => UlpKind::Iser,
        "iser-port-num" => UlpKind::IserPorts(port_nums()?),
        "srp-target-port-guid" => UlpKind::SrpTargets(r()?),
        "ipoib" => UlpKind::Ipoib,
        "ipoib-pkey" => UlpKind::IpoibPkeys(pkeys(&n.ranges)?),
        "any-service-id" => UlpKind::AnyServiceIds(r()?),
        "any-pkey" => UlpKind::AnyPkeys(pkeys(&n.ranges)?),
        "any-target-port-guid" => UlpKind::AnyTargets(r()?),
        "any-source-port-guid" => UlpKind::AnySources(r()?),
        "any-source-target-port-guid" => UlpKind::AnySourcesTargets(r()?),
        other => return Err(format!("ulp `{other}` is not one of {}", ULPS.join(", "))),
    };
    let needs_ranges = !matches!(
        kind,
        UlpKind::Default | UlpKind::Sdp | UlpKind::Rds | UlpKind::Iser | UlpKind::Ipoib
    );
    if needs_ranges == n.ranges.is_empty() {
        return Err(format!(
            "ulp `{}` {} ranges",
            n.ulp,
            if needs_ranges { "needs" } else { "takes no" }
        ));
    }
    Ok(Ulp { kind, sl: n.sl })
}

impl NativePolicy {
    /// The policy and where its qos-setup scopes are, or what is wrong with the tables.
    pub(crate) fn into_policy(self) -> Result<(QosPolicy, ScopeSpans), String> {
        let mut spans = ScopeSpans::new();
        for (i, scope) in self.vlarb_scopes.iter().enumerate() {
            spans.insert(ScopeId::Vlarb(i + 1), scope.span());
        }
        for (i, scope) in self.sl2vl_scopes.iter().enumerate() {
            spans.insert(ScopeId::Sl2vl(i + 1), scope.span());
        }
        let port_groups = self
            .port_groups
            .into_iter()
            .map(|g| {
                Ok(PortGroup {
                    port_guids: ranges(&g.port_guids)?,
                    port_names: g
                        .port_names
                        .iter()
                        .map(|p| port_name(p))
                        .collect::<Result<_, String>>()?,
                    pkeys: pkeys(&g.pkeys)?,
                    node_types: node_types(&g.node_types)?,
                    name: g.name,
                    usage: g.usage,
                    partitions: g.partitions,
                })
            })
            .collect::<Result<_, String>>()?;
        let qos_levels = self
            .qos_levels
            .into_iter()
            .map(|l| {
                if let Some(m) = l.mtu_limit.filter(|m| !(1..=5).contains(m)) {
                    return Err(format!("mtu_limit {m} is not an MTU encoding 1-5"));
                }
                if let Some(r) = l.rate_limit.filter(|r| !(2..=22).contains(r)) {
                    return Err(format!("rate_limit {r} is not a rate encoding 2-22"));
                }
                Ok(QosLevel {
                    path_bits: ranges(&l.path_bits)?,
                    pkeys: pkeys(&l.pkeys)?,
                    name: l.name,
                    usage: l.usage,
                    sl: l.sl,
                    mtu_limit: l.mtu_limit,
                    rate_limit: l.rate_limit,
                    packet_life: l.packet_life,
                })
            })
            .collect::<Result<_, String>>()?;
        let match_rules = self
            .match_rules
            .into_iter()
            .map(|r| {
                Ok(MatchRule {
                    qos_classes: ranges(&r.qos_classes)?,
                    service_ids: ranges(&r.service_ids)?,
                    pkeys: pkeys(&r.pkeys)?,
                    usage: r.usage,
                    sources: r.sources,
                    destinations: r.destinations,
                    level: r.level,
                })
            })
            .collect::<Result<_, String>>()?;
        let ulps = self.ulps.iter().map(ulp).collect::<Result<_, String>>()?;
        let vlarb_scopes = self
            .vlarb_scopes
            .into_iter()
            .map(Spanned::into_inner)
            .map(|s| {
                if s.groups.is_empty() && s.across.is_empty() {
                    return Err("a vlarb scope needs groups or across".to_string());
                }
                Ok(VlarbScope {
                    vlarb_high: pairs_of(&s.vlarb_high, ':')?,
                    vlarb_low: pairs_of(&s.vlarb_low, ':')?,
                    groups: s.groups,
                    across: s.across,
                    vl_high_limit: s.vl_high_limit,
                })
            })
            .collect::<Result<_, String>>()?;
        let sl2vl_scopes = self
            .sl2vl_scopes
            .into_iter()
            .map(Spanned::into_inner)
            .map(|s| {
                if s.groups.is_empty() && s.across_from.is_empty() && s.across_to.is_empty() {
                    return Err("an sl2vl scope needs groups, across_from or across_to".into());
                }
                if let Some(vl) = s.sl2vl_table.iter().find(|vl| **vl > 15) {
                    return Err(format!("sl2vl_table VL {vl} is above 15"));
                }
                Ok(Sl2vlScope {
                    from: ports(&s.from)?,
                    to: ports(&s.to)?,
                    groups: s.groups,
                    across_from: s.across_from,
                    across_to: s.across_to,
                    sl2vl_table: s.sl2vl_table,
                })
            })
            .collect::<Result<_, String>>()?;
        let policy = QosPolicy {
            port_groups,
            qos_levels,
            match_rules,
            ulps,
            setup: QosSetup {
                vlarb_scopes,
                sl2vl_scopes,
            },
        };
        Ok((policy, spans))
    }
}

/// The TOML spelling of a string.
pub(crate) fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn strings(items: impl IntoIterator<Item = String>) -> String {
    let items: Vec<String> = items.into_iter().map(|s| toml_str(&s)).collect();
    format!("[{}]", items.join(", "))
}

fn range_strings(set: &RangeSet) -> String {
    strings(set.ranges().iter().map(|&(a, b)| {
        if a == b {
            format!("0x{a:x}")
        } else {
            format!("0x{a:x}-0x{b:x}")
        }
    }))
}

fn port_strings(bits: u128) -> String {
    strings(
        (0..128u32)
            .filter(|p| bits & (1 << p) != 0)
            .map(|p| p.to_string()),
    )
}

/// Writes `key = value` lines, leaving out empty lists and absent values.
pub(crate) struct Table<'a>(pub(crate) &'a mut String);

impl Table<'_> {
    pub(crate) fn kv(&mut self, key: &str, value: String) {
        if value != "[]" {
            self.0.push_str(&format!("{key} = {value}\n"));
        }
    }

    pub(crate) fn opt(&mut self, key: &str, value: Option<String>) {
        if let Some(v) = value {
            self.kv(key, v);
        }
    }
}

/// The `[qos_policy]` tables for `p`.
pub(crate) fn write(p: &QosPolicy) -> String {
    let mut out = String::from("\n[qos_policy]\n");
    for g in &p.port_groups {
        out.push_str("\n[[qos_policy.port_groups]]\n");
        let mut t = Table(&mut out);
        t.kv("name", toml_str(&g.name));
        t.opt("use", g.usage.as_deref().map(toml_str));
        t.kv("port_guids", range_strings(&g.port_guids));
        t.kv(
            "port_names",
            strings(g.port_names.iter().map(ToString::to_string)),
        );
        t.kv("pkeys", range_strings(&g.pkeys));
        t.kv("partitions", strings(g.partitions.iter().cloned()));
        let n = g.node_types;
        let types = [
            (n.ca, "ca"),
            (n.switch, "switch"),
            (n.router, "router"),
            (n.self_port, "self"),
        ];
        t.kv(
            "node_types",
            strings(
                types
                    .iter()
                    .filter(|(on, _)| *on)
                    .map(|(_, s)| s.to_string()),
            ),
        );
    }
    for l in &p.qos_levels {
        out.push_str("\n[[qos_policy.qos_levels]]\n");
        let mut t = Table(&mut out);
        t.kv("name", toml_str(&l.name));
        t.opt("use", l.usage.as_deref().map(toml_str));
        t.kv("sl", l.sl.to_string());
        t.opt("mtu_limit", l.mtu_limit.map(|v| v.to_string()));
        t.opt("rate_limit", l.rate_limit.map(|v| v.to_string()));
        t.opt("packet_life", l.packet_life.map(|v| v.to_string()));
        t.kv("path_bits", range_strings(&l.path_bits));
        t.kv("pkeys", range_strings(&l.pkeys));
    }
    for r in &p.match_rules {
        out.push_str("\n[[qos_policy.match_rules]]\n");
        let mut t = Table(&mut out);
        t.opt("use", r.usage.as_deref().map(toml_str));
        t.kv("qos_classes", range_strings(&r.qos_classes));
        t.kv("sources", strings(r.sources.iter().cloned()));
        t.kv("destinations", strings(r.destinations.iter().cloned()));
        t.kv("service_ids", range_strings(&r.service_ids));
        t.kv("pkeys", range_strings(&r.pkeys));
        t.kv("level", toml_str(&r.level));
    }
    for u in &p.ulps {
        out.push_str("\n[[qos_policy.ulps]]\n");
        let (name, set) = match &u.kind {
            UlpKind::Default => (ULPS[0], None),
            UlpKind::Sdp => (ULPS[1], None),
            UlpKind::SdpPorts(s) => (ULPS[2], Some(s)),
            UlpKind::Rds => (ULPS[3], None),
            UlpKind::RdsPorts(s) => (ULPS[4], Some(s)),
            UlpKind::Iser => (ULPS[5], None),
            UlpKind::IserPorts(s) => (ULPS[6], Some(s)),
            UlpKind::SrpTargets(s) => (ULPS[7], Some(s)),
            UlpKind::Ipoib => (ULPS[8], None),
            UlpKind::IpoibPkeys(s) => (ULPS[9], Some(s)),
            UlpKind::AnyServiceIds(s) => (ULPS[10], Some(s)),
            UlpKind::AnyPkeys(s) => (ULPS[11], Some(s)),
            UlpKind::AnyTargets(s) => (ULPS[12], Some(s)),
            UlpKind::AnySources(s) => (ULPS[13], Some(s)),
            UlpKind::AnySourcesTargets(s) => (ULPS[14], Some(s)),
        };
        let mut t = Table(&mut out);
        t.kv("ulp", toml_str(name));
        t.opt("ranges", set.map(range_strings));
        t.kv("sl", u.sl.to_string());
    }
    for s in &p.setup.vlarb_scopes {
        out.push_str("\n[[qos_policy.vlarb_scopes]]\n");
        let pairs = |p: &[(u64, u64)]| strings(p.iter().map(|(vl, w)| format!("{vl}:{w}")));
        let mut t = Table(&mut out);
        t.kv("groups", strings(s.groups.iter().cloned()));
        t.kv("across", strings(s.across.iter().cloned()));
        t.kv("vlarb_high", pairs(&s.vlarb_high));
        t.kv("vlarb_low", pairs(&s.vlarb_low));
        t.opt("vl_high_limit", s.vl_high_limit.map(|v| v.to_string()));
    }
    for s in &p.setup.sl2vl_scopes {
        out.push_str("\n[[qos_policy.sl2vl_scopes]]\n");
        let mut t = Table(&mut out);
        t.kv("groups", strings(s.groups.iter().cloned()));
        t.kv("across_from", strings(s.across_from.iter().cloned()));
        t.kv("across_to", strings(s.across_to.iter().cloned()));
        t.kv("from", port_strings(s.from));
        t.kv("to", port_strings(s.to));
        let vls: Vec<String> = s.sl2vl_table.iter().map(u8::to_string).collect();
        t.kv("sl2vl_table", format!("[{}]", vls.join(", ")));
    }
    out
}
