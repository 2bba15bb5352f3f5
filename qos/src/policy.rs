//! OpenSM's QoS policy (qos-policy.conf) as data, and the rule that picks a path's QoS level.
//!
//! [`QosPolicy`] is the file as OpenSM 3.3.23 holds it once parsed: port groups, QoS levels,
//! match rules, the qos-ulps shortcuts and the qos-setup section, every number range sorted and
//! merged as OpenSM's parser does (`osm_qos_parser_y.y:2831-2989`). Nothing here reads a file.
//!
//! Group membership needs the fabric: [`QosPolicy::resolve`] asks a [`PortDirectory`] (the SM's
//! model) and gives a [`ResolvedPolicy`], with OpenSM's validation (`osm_qos_policy_validate`,
//! `osm_qos_policy.c:866-986`) as typed errors. [`ResolvedPolicy::level_for`] is OpenSM's
//! first-rule-wins match (`osm_qos_policy.c:574-744`) with the default level as fallback.

use std::collections::BTreeSet;
use std::fmt;

pub use ibqos_mad::NodeType;

/// A PathRecord's P_Key is matched without its membership bit (`osm_qos_policy.c:705`).
pub const PKEY_MASK: u64 = 0x7fff;

/// Service IDs the qos-ulps shortcuts stand for (`include/opensm/osm_qos_policy.h:57-63`).
pub const SDP_SERVICE_ID: u64 = 0x0000_0000_0001_0000;
/// RDS and iSER service IDs are this base plus a port number.
pub const RDS_ISER_SERVICE_ID: u64 = 0x0000_0000_0106_0000;
/// RDS's default port.
pub const RDS_PORT: u64 = 0x48CA;
/// iSER's default port.
pub const ISER_PORT: u64 = 0x0CBC;
/// The partition the `ipoib` shortcut stands for.
pub const IPOIB_PKEY: u64 = 0x7fff;
/// The name OpenSM looks up, case-insensitively, for the default QoS level.
pub const DEFAULT_LEVEL_NAME: &str = "default";
/// `qos-setup` port numbers are below this (`OSM_QOS_POLICY_MAX_PORTS_ON_SWITCH`).
pub const MAX_PORTS_ON_SWITCH: u64 = 128;

/// Inclusive ranges of numbers, sorted and merged (overlapping or adjacent ranges joined) as
/// OpenSM's `__sort_reduce_rangearr` leaves them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RangeSet(Vec<(u64, u64)>);

impl RangeSet {
    /// The ranges as written (`a-b` with `a > b` is swapped), sorted and merged.
    pub fn new(ranges: impl IntoIterator<Item = (u64, u64)>) -> RangeSet {
        let mut all: Vec<(u64, u64)> = ranges
            .into_iter()
            .map(|(a, b)| (a.min(b), a.max(b)))
            .collect();
        all.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(all.len());
        for (start, end) in all {
            match merged.last_mut() {
                Some(last) if start <= last.1 || start.wrapping_sub(1) == last.1 => {
                    last.1 = last.1.max(end);
                }
                _ => merged.push((start, end)),
            }
        }
        RangeSet(merged)
    }

    /// P_Key ranges: each bound masked to 15 bits before sorting (`__pkey_rangelist2rangearr`).
    pub fn pkeys(ranges: impl IntoIterator<Item = (u64, u64)>) -> RangeSet {
        RangeSet::new(
            ranges
                .into_iter()
                .map(|(a, b)| (a & PKEY_MASK, b & PKEY_MASK)),
        )
    }

    /// The union of two sets, as a repeated field merges them (`__merge_rangearr`).
    pub fn union(&self, other: &RangeSet) -> RangeSet {
        RangeSet::new(self.0.iter().chain(&other.0).copied())
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, n: u64) -> bool {
        self.0.iter().any(|&(a, b)| (a..=b).contains(&n))
    }

    /// How many numbers the ranges hold, saturating.
    pub fn count(&self) -> u128 {
        self.0.iter().map(|&(a, b)| u128::from(b - a) + 1).sum()
    }

    /// Every range shifted up by `offset` (the ULP port numbers to service IDs); `None` if one
    /// overflows.
    fn offset(&self, offset: u64) -> Option<RangeSet> {
        self.0
            .iter()
            .map(|&(a, b)| Some((a.checked_add(offset)?, b.checked_add(offset)?)))
            .collect::<Option<Vec<_>>>()
            .map(RangeSet)
    }
}

/// The three node types of a group's `node-type`, and `SELF` (the SM's own port).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct NodeTypes {
    pub ca: bool,
    pub switch: bool,
    pub router: bool,
    /// `SELF`: the SM's port joins the group's ports when the policy is resolved.
    pub self_port: bool,
}

impl NodeTypes {
    /// `ALL`.
    pub const ALL: NodeTypes = NodeTypes {
        ca: true,
        switch: true,
        router: true,
        self_port: false,
    };

    pub fn union(self, other: NodeTypes) -> NodeTypes {
        NodeTypes {
            ca: self.ca || other.ca,
            switch: self.switch || other.switch,
            router: self.router || other.router,
            self_port: self.self_port || other.self_port,
        }
    }

    /// Whether a node of this type is in the group; a type NodeInfo does not define is in
    /// none (`__qos_policy_is_port_in_group` compares the type with each of the three).
    pub fn contains(self, node: NodeType) -> bool {
        match node {
            NodeType::Ca => self.ca,
            NodeType::Switch => self.switch,
            NodeType::Router => self.router,
            _ => false,
        }
    }
}

/// One `port-name` entry, `node description/Pn`, as OpenSM splits it at the last `/`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortName {
    /// The node's description (or its node-name-map name).
    pub node: String,
    /// The port number, as `strtoul` read it and cut to 32 bits; never 0.
    pub port: u32,
}

impl fmt::Display for PortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/P{}", self.node, self.port)
    }
}

/// A `port-group`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortGroup {
    pub name: String,
    /// `use:`, a description.
    pub usage: Option<String>,
    pub port_guids: RangeSet,
    pub port_names: Vec<PortName>,
    /// Members of these partitions (P_Keys masked to 15 bits).
    pub pkeys: RangeSet,
    /// Members of these partitions, by name.
    pub partitions: Vec<String>,
    pub node_types: NodeTypes,
}

/// A `qos-level`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosLevel {
    pub name: String,
    pub usage: Option<String>,
    /// OpenSM keeps the low 8 bits and never checks the range: above 15, every path that
    /// matches the level gets no record (`osm_sa_path_record.c:460-466`).
    pub sl: u8,
    /// An MTU encoding, 1-5.
    pub mtu_limit: Option<u8>,
    /// A rate encoding, 2-22.
    pub rate_limit: Option<u8>,
    /// The low 8 bits of what was written.
    pub packet_life: Option<u8>,
    /// Parsed and kept, used by nothing in OpenSM.
    pub path_bits: RangeSet,
    pub pkeys: RangeSet,
}

/// A `qos-match-rule`. Every criterion present must match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MatchRule {
    pub usage: Option<String>,
    pub qos_classes: RangeSet,
    pub sources: Vec<String>,
    pub destinations: Vec<String>,
    pub service_ids: RangeSet,
    pub pkeys: RangeSet,
    pub level: String,
}

/// One line of `qos-ulps`: a shortcut for a match rule with a level of just an SL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ulp {
    pub kind: UlpKind,
    /// 0-15 (the parser rejects more).
    pub sl: u8,
}

/// What a qos-ulps line matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UlpKind {
    /// `default : SL`: the default level when no qos-level is named `default`.
    Default,
    /// `sdp : SL`: service IDs 0x10000-0x1FFFF.
    Sdp,
    /// `sdp, port-num P : SL`: 0x10000 + P (P at most 0xFFFF).
    SdpPorts(RangeSet),
    /// `rds : SL`.
    Rds,
    /// `rds, port-num P : SL`: 0x1060000 + P.
    RdsPorts(RangeSet),
    /// `iser : SL`.
    Iser,
    /// `iser, port-num P : SL`: 0x1060000 + P.
    IserPorts(RangeSet),
    /// `srp, target-port-guid G : SL`: destinations.
    SrpTargets(RangeSet),
    /// `ipoib : SL`: P_Key 0x7fff, which must have at least two full members.
    Ipoib,
    /// `ipoib, pkey K : SL`: each partition must have at least two full members.
    IpoibPkeys(RangeSet),
    /// `any, service-id S : SL`.
    AnyServiceIds(RangeSet),
    /// `any, pkey K : SL`.
    AnyPkeys(RangeSet),
    /// `any, target-port-guid G : SL`: destinations.
    AnyTargets(RangeSet),
    /// `any, source-port-guid G : SL`: sources.
    AnySources(RangeSet),
    /// `any, source-target-port-guid G : SL`: the same GUIDs as sources and destinations (both
    /// ends must be in the list, `osm_qos_policy.c:631-648`).
    AnySourcesTargets(RangeSet),
}

/// A `vlarb-scope` of `qos-setup`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VlarbScope {
    pub groups: Vec<String>,
    pub across: Vec<String>,
    /// `vl:weight` pairs as written, in order.
    pub vlarb_high: Vec<(u64, u64)>,
    pub vlarb_low: Vec<(u64, u64)>,
    /// The low 32 bits of the last `vl-high-limit`.
    pub vl_high_limit: Option<u32>,
}

/// An `sl2vl-scope` of `qos-setup`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sl2vlScope {
    pub groups: Vec<String>,
    /// `across-from`, and every `across`.
    pub across_from: Vec<String>,
    /// `across-to`, and every `across`.
    pub across_to: Vec<String>,
    /// Bit n: input port n (`from`; `*` is every port below 128).
    pub from: u128,
    /// Bit n: output port n (`to`).
    pub to: u128,
    /// The SL2VL table, 16 VLs 0-15.
    pub sl2vl_table: [u8; 16],
}

/// The `qos-setup` section: OpenSM parses and checks it, then programs nothing from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosSetup {
    pub vlarb_scopes: Vec<VlarbScope>,
    pub sl2vl_scopes: Vec<Sl2vlScope>,
}

impl QosSetup {
    pub fn is_empty(&self) -> bool {
        self.vlarb_scopes.is_empty() && self.sl2vl_scopes.is_empty()
    }
}

/// A qos-policy.conf as OpenSM holds it after parsing. Sections may repeat in the file; their
/// entries are kept here in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QosPolicy {
    pub port_groups: Vec<PortGroup>,
    pub qos_levels: Vec<QosLevel>,
    pub match_rules: Vec<MatchRule>,
    /// Turned into match rules after every `qos-match-rule`, wherever the section is.
    pub ulps: Vec<Ulp>,
    pub setup: QosSetup,
}

/// What the SM knows of the fabric, for group membership.
pub trait PortDirectory {
    /// Every port GUID of the fabric (CA and router ports, one per switch).
    fn port_guids(&self) -> Vec<u64>;
    /// Whether a port has this GUID.
    fn has_port(&self, guid: u64) -> bool;
    /// Port `port` of the first node whose description (or node-name-map name) is `node`.
    fn node_port(&self, node: &str, port: u32) -> NodePort;
    /// The partition with this P_Key (15 bits).
    fn partition_by_pkey(&self, pkey: u16) -> Option<PartitionMembers>;
    /// The partition with this name.
    fn partition_by_name(&self, name: &str) -> Option<PartitionMembers>;
    /// The port GUID the SM runs on.
    fn sm_port(&self) -> Option<u64>;
}

/// What [`PortDirectory::node_port`] finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodePort {
    /// No node has that description: OpenSM ignores the name.
    NoNode,
    /// The node has no such port: OpenSM rejects the policy.
    NoPort,
    /// The port's GUID.
    Port(u64),
}

/// The port GUIDs of one partition.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PartitionMembers {
    pub full: Vec<u64>,
    pub limited: Vec<u64>,
}

/// Why OpenSM drops the whole policy for this fabric.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// OpenSM's parser says this (`osm_qos_parser_y.y:1210`) at the `port-name` entry.
    #[error("'{node}' - port number out of range in port name")]
    PortNameOutOfRange { group: String, node: String },
    /// OpenSM's parser says this (`osm_qos_parser_y.y:3144-3162`) at the `ipoib` line.
    #[error("IPoIB partition, pkey 0x{pkey:04X} - {}", if *.exists {
        "partition has less than two full members"
    } else {
        "partition doesn't exist"
    })]
    IpoibPartition { pkey: u16, exists: bool },
    #[error("ERR AC10: Default qos-level ({DEFAULT_LEVEL_NAME}) not defined.")]
    NoDefaultLevel,
    /// `rule` counts from 1 over the match rules, then the qos-ulps rules.
    #[error("ERR AC11: qos-match-rule num {rule}: qos-level '{level}' not found")]
    UnknownLevel { rule: usize, level: String },
    #[error("ERR AC12: qos-match-rule num {rule}: source port-group '{group}' not found")]
    UnknownSource { rule: usize, group: String },
    #[error("ERR AC13: qos-match-rule num {rule}: destination port-group '{group}' not found")]
    UnknownDestination { rule: usize, group: String },
}

/// What OpenSM accepts silently, or only logs, when it applies a policy to a fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveWarning {
    /// A `port-guid` range holds no port of the fabric.
    NoSuchGuids { group: String, start: u64, end: u64 },
    /// No node has the description of a `port-name` entry.
    NoSuchNode { group: String, name: PortName },
    /// A `pkey` or `partition` names a partition that does not exist.
    NoSuchPartition { group: String, partition: String },
    /// `ERR AC14`: a match rule's P_Key has no partition (OpenSM logs it and goes on).
    RulePkeyWithoutPartition { rule: usize, pkey: u16 },
}

impl fmt::Display for ResolveWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResolveWarning::NoSuchGuids { group, start, end } if start == end => {
                write!(f, "port-group '{group}': no port has GUID 0x{start:016x}")
            }
            ResolveWarning::NoSuchGuids { group, start, end } => write!(
                f,
                "port-group '{group}': no port has a GUID in 0x{start:016x}-0x{end:016x}"
            ),
            ResolveWarning::NoSuchNode { group, name } => {
                write!(f, "port-group '{group}': no node is called '{}'", name.node)
            }
            ResolveWarning::NoSuchPartition { group, partition } => {
                write!(f, "port-group '{group}': no partition {partition}")
            }
            ResolveWarning::RulePkeyWithoutPartition { pkey, .. } => write!(
                f,
                "ERR AC14: pkey 0x{pkey:04X} in match rule - partition doesn't exist"
            ),
        }
    }
}

/// A group's ports for one fabric.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolvedGroup {
    pub name: String,
    pub guids: BTreeSet<u64>,
    pub node_types: NodeTypes,
}

impl ResolvedGroup {
    /// OpenSM's `__qos_policy_is_port_in_group` (`osm_qos_policy.c:530-550`).
    pub fn contains(&self, port: EndPort) -> bool {
        self.node_types.contains(port.node_type) || self.guids.contains(&port.guid)
    }
}

/// A match rule with its groups and level found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedRule {
    /// Indexes into [`ResolvedPolicy::groups`].
    pub sources: Vec<usize>,
    pub destinations: Vec<usize>,
    pub qos_classes: RangeSet,
    pub service_ids: RangeSet,
    pub pkeys: RangeSet,
    /// Index into [`ResolvedPolicy::levels`].
    pub level: usize,
}

/// One end of a path is an end port: its port GUID and its node's type. For a switch
/// destination that is the switch's port 0 (`osm_sa_path_record.c:264-283`).
pub use crate::partitions::EndPort;

/// What a PathRecord or MultiPathRecord query brings to the match; `None` is a component mask
/// without the field's bit (for the service ID, without both of its bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathQuery {
    pub source: EndPort,
    pub destination: EndPort,
    pub service_id: Option<u64>,
    /// 12 bits.
    pub qos_class: Option<u16>,
    pub pkey: Option<u16>,
}

/// A policy applied to one fabric: ready to answer [`ResolvedPolicy::level_for`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPolicy {
    /// The file's groups, then one per qos-ulps GUID list.
    pub groups: Vec<ResolvedGroup>,
    /// The file's levels, then OpenSM's `SimpleQoSLevel_SL<n>` and `SimpleQoSLevel_DEFAULT`
    /// levels the qos-ulps lines use.
    pub levels: Vec<QosLevel>,
    /// The match rules, then the qos-ulps rules.
    pub rules: Vec<ResolvedRule>,
    /// Index into `levels`.
    pub default_level: usize,
}

impl ResolvedPolicy {
    /// The level OpenSM applies to a path: the first rule all of whose criteria match, else
    /// the default level. Always `Some` (the `Option` is OpenSM's "no policy" at the caller).
    pub fn level_for(&self, query: &PathQuery) -> Option<&QosLevel> {
        let in_any =
            |groups: &[usize], port: EndPort| groups.iter().any(|&g| self.groups[g].contains(port));
        let in_ranges = |ranges: &RangeSet, value: Option<u64>| {
            ranges.is_empty() || value.is_some_and(|v| ranges.contains(v))
        };
        let rule = self.rules.iter().find(|rule| {
            (rule.sources.is_empty() || in_any(&rule.sources, query.source))
                && (rule.destinations.is_empty() || in_any(&rule.destinations, query.destination))
                && in_ranges(&rule.qos_classes, query.qos_class.map(u64::from))
                && in_ranges(&rule.service_ids, query.service_id)
                && in_ranges(&rule.pkeys, query.pkey.map(|p| u64::from(p) & PKEY_MASK))
        });
        self.levels
            .get(rule.map_or(self.default_level, |r| r.level))
    }

    /// A level by name, case-insensitively, the first of that name.
    pub fn level(&self, name: &str) -> Option<&QosLevel> {
        find_level(&self.levels, name).map(|i| &self.levels[i])
    }
}

/// The first of `names` that is `name`, case-insensitively: how OpenSM finds a level or a
/// port group by name (`osm_qos_policy.c:790,840-858`).
fn find_name<'a>(mut names: impl Iterator<Item = &'a str>, name: &str) -> Option<usize> {
    names.position(|n| n.eq_ignore_ascii_case(name))
}

fn find_level(levels: &[QosLevel], name: &str) -> Option<usize> {
    find_name(levels.iter().map(|l| l.name.as_str()), name)
}

fn find_group(groups: &[ResolvedGroup], name: &str) -> Option<usize> {
    find_name(groups.iter().map(|g| g.name.as_str()), name)
}

/// The name of the level a `qos-ulps` line with this SL uses.
pub fn simple_level_name(sl: u8) -> String {
    format!("SimpleQoSLevel_SL{sl}")
}

/// A match rule a qos-ulps line stands for, before its groups are found.
struct UlpRule {
    sources: Option<RangeSet>,
    destinations: Option<RangeSet>,
    service_ids: RangeSet,
    pkeys: RangeSet,
}

impl UlpKind {
    /// The match rule OpenSM builds (`osm_qos_parser_y.y:760-1024`); `None` for `default`.
    fn rule(&self) -> Option<UlpRule> {
        let service_ids = |ids: RangeSet| UlpRule {
            sources: None,
            destinations: None,
            service_ids: ids,
            pkeys: RangeSet::default(),
        };
        let pkeys = |pkeys: RangeSet| UlpRule {
            pkeys,
            ..service_ids(RangeSet::default())
        };
        let single = |id| RangeSet(vec![(id, id)]);
        // Port numbers above 0xFFFF are rejected by the parser, so the offsets never overflow.
        let ports = |ports: &RangeSet, base| service_ids(ports.offset(base).unwrap_or_default());
        Some(match self {
            UlpKind::Default => return None,
            UlpKind::Sdp => service_ids(RangeSet(vec![(SDP_SERVICE_ID, SDP_SERVICE_ID + 0xFFFF)])),
            UlpKind::SdpPorts(p) => ports(p, SDP_SERVICE_ID),
            UlpKind::Rds => service_ids(single(RDS_ISER_SERVICE_ID + RDS_PORT)),
            UlpKind::RdsPorts(p) | UlpKind::IserPorts(p) => ports(p, RDS_ISER_SERVICE_ID),
            UlpKind::Iser => service_ids(single(RDS_ISER_SERVICE_ID + ISER_PORT)),
            UlpKind::Ipoib => pkeys(single(IPOIB_PKEY)),
            UlpKind::IpoibPkeys(k) | UlpKind::AnyPkeys(k) => pkeys(k.clone()),
            UlpKind::AnyServiceIds(s) => service_ids(s.clone()),
            UlpKind::SrpTargets(g) | UlpKind::AnyTargets(g) => UlpRule {
                destinations: Some(g.clone()),
                ..pkeys(RangeSet::default())
            },
            UlpKind::AnySources(g) => UlpRule {
                sources: Some(g.clone()),
                ..pkeys(RangeSet::default())
            },
            UlpKind::AnySourcesTargets(g) => UlpRule {
                sources: Some(g.clone()),
                destinations: Some(g.clone()),
                ..pkeys(RangeSet::default())
            },
        })
    }

    /// The P_Keys whose partitions must have two full members, for `ipoib` lines.
    fn ipoib_pkeys(&self) -> Option<RangeSet> {
        match self {
            UlpKind::Ipoib => Some(RangeSet(vec![(IPOIB_PKEY, IPOIB_PKEY)])),
            UlpKind::IpoibPkeys(k) => Some(k.clone()),
            _ => None,
        }
    }
}

impl QosPolicy {
    /// The default level OpenSM uses: the first qos-level named `default` (any case), else the
    /// last qos-ulps `default` line's SL.
    pub fn default_level(&self) -> Option<QosLevel> {
        if let Some(i) = find_level(&self.qos_levels, DEFAULT_LEVEL_NAME) {
            return Some(self.qos_levels[i].clone());
        }
        self.ulps
            .iter()
            .rev()
            .find(|u| u.kind == UlpKind::Default)
            .map(|u| QosLevel {
                name: "SimpleQoSLevel_DEFAULT".to_string(),
                sl: u.sl,
                ..QosLevel::default()
            })
    }

    /// The port groups' ports on a fabric, in file order, with what OpenSM ignores in them.
    pub fn resolve_groups(
        &self,
        dir: &dyn PortDirectory,
    ) -> Result<(Vec<ResolvedGroup>, Vec<ResolveWarning>), ResolveError> {
        let mut warnings = Vec::new();
        let known = dir.port_guids();
        let groups = self
            .port_groups
            .iter()
            .map(|group| resolve_group(group, dir, &known, &mut warnings))
            .collect::<Result<_, _>>()?;
        Ok((groups, warnings))
    }

    /// Applies the policy to a fabric as OpenSM does when it loads the file: the groups' ports
    /// found, the ipoib partitions checked, then `osm_qos_policy_validate`.
    pub fn resolve(
        &self,
        dir: &dyn PortDirectory,
    ) -> Result<(ResolvedPolicy, Vec<ResolveWarning>), ResolveError> {
        let (mut groups, mut warnings) = self.resolve_groups(dir)?;
        let known = dir.port_guids();
        for ulp in &self.ulps {
            check_ipoib(&ulp.kind, dir)?;
        }
        let mut levels = self.qos_levels.clone();
        let default_level = match find_level(&levels, DEFAULT_LEVEL_NAME) {
            Some(i) => i,
            None => {
                levels.push(self.default_level().ok_or(ResolveError::NoDefaultLevel)?);
                levels.len() - 1
            }
        };
        let mut rules = Vec::new();
        for (i, rule) in self.match_rules.iter().enumerate() {
            // Only the file's levels: a rule cannot name the levels qos-ulps lines make.
            rules.push(resolve_rule(
                rule,
                i + 1,
                &groups,
                &self.qos_levels,
                &mut warnings,
                dir,
            )?);
        }
        for ulp in &self.ulps {
            let Some(rule) = ulp.kind.rule() else {
                continue;
            };
            let mut guid_group = |guids: Option<RangeSet>, what: &str| -> Vec<usize> {
                let Some(guids) = guids else {
                    return Vec::new();
                };
                let group = PortGroup {
                    name: format!("_ULP_{what}_"),
                    port_guids: guids,
                    ..PortGroup::default()
                };
                let mut ignored = Vec::new();
                // A GUID list of a qos-ulps line has no name to report unknown GUIDs under,
                // and it cannot fail: it has no port-name.
                if let Ok(resolved) = resolve_group(&group, dir, &known, &mut ignored) {
                    groups.push(resolved);
                }
                vec![groups.len() - 1]
            };
            let shared = rule.sources.is_some() && rule.destinations.is_some();
            let sources = guid_group(
                rule.sources,
                if shared { "Sources_Targets" } else { "Sources" },
            );
            let destinations = if shared {
                sources.clone()
            } else {
                guid_group(rule.destinations, "Targets")
            };
            let name = simple_level_name(ulp.sl);
            let level = find_simple(&mut levels, &self.qos_levels, &name, ulp.sl);
            rules.push(ResolvedRule {
                sources,
                destinations,
                qos_classes: RangeSet::default(),
                service_ids: rule.service_ids,
                pkeys: rule.pkeys,
                level,
            });
        }
        Ok((
            ResolvedPolicy {
                groups,
                levels,
                rules,
                default_level,
            },
            warnings,
        ))
    }
}

/// The index of the simple level of `sl`, added after the file's levels on first use (never
/// found by a file's level name: OpenSM keeps them outside the policy's list).
fn find_simple(levels: &mut Vec<QosLevel>, file_levels: &[QosLevel], name: &str, sl: u8) -> usize {
    if let Some(i) = levels
        .iter()
        .skip(file_levels.len())
        .position(|l| l.name == name)
    {
        return file_levels.len() + i;
    }
    levels.push(QosLevel {
        name: name.to_string(),
        sl,
        ..QosLevel::default()
    });
    levels.len() - 1
}

fn resolve_group(
    group: &PortGroup,
    dir: &dyn PortDirectory,
    known: &[u64],
    warnings: &mut Vec<ResolveWarning>,
) -> Result<ResolvedGroup, ResolveError> {
    let mut guids = BTreeSet::new();
    for &(start, end) in group.port_guids.ranges() {
        // OpenSM walks every GUID of the range (a full 64-bit range never ends); walking the
        // fabric's ports instead finds the same ones.
        let before = guids.len();
        if u128::from(end - start) < known.len() as u128 {
            guids.extend((start..=end).filter(|g| dir.has_port(*g)));
        } else {
            guids.extend(known.iter().filter(|g| (start..=end).contains(*g)));
        }
        if guids.len() == before {
            warnings.push(ResolveWarning::NoSuchGuids {
                group: group.name.clone(),
                start,
                end,
            });
        }
    }
    for name in &group.port_names {
        match dir.node_port(&name.node, name.port) {
            NodePort::Port(guid) => {
                guids.insert(guid);
            }
            NodePort::NoNode => warnings.push(ResolveWarning::NoSuchNode {
                group: group.name.clone(),
                name: name.clone(),
            }),
            NodePort::NoPort => {
                return Err(ResolveError::PortNameOutOfRange {
                    group: group.name.clone(),
                    node: name.node.clone(),
                });
            }
        }
    }
    let mut add_partition = |members: Option<PartitionMembers>, partition: String| match members {
        Some(m) => guids.extend(m.full.iter().chain(&m.limited)),
        None => warnings.push(ResolveWarning::NoSuchPartition {
            group: group.name.clone(),
            partition,
        }),
    };
    for &(start, end) in group.pkeys.ranges() {
        for pkey in start..=end {
            let pkey = (pkey & PKEY_MASK) as u16;
            add_partition(dir.partition_by_pkey(pkey), format!("0x{pkey:04x}"));
        }
    }
    for name in &group.partitions {
        add_partition(dir.partition_by_name(name), name.clone());
    }
    if group.node_types.self_port {
        guids.extend(dir.sm_port());
    }
    Ok(ResolvedGroup {
        name: group.name.clone(),
        guids,
        node_types: group.node_types,
    })
}

fn check_ipoib(kind: &UlpKind, dir: &dyn PortDirectory) -> Result<(), ResolveError> {
    let Some(pkeys) = kind.ipoib_pkeys() else {
        return Ok(());
    };
    for &(start, end) in pkeys.ranges() {
        for pkey in start..=end {
            let pkey = (pkey & PKEY_MASK) as u16;
            match dir.partition_by_pkey(pkey) {
                Some(m) if m.full.len() >= 2 => {}
                found => {
                    return Err(ResolveError::IpoibPartition {
                        pkey,
                        exists: found.is_some(),
                    });
                }
            }
        }
    }
    Ok(())
}

fn resolve_rule(
    rule: &MatchRule,
    number: usize,
    groups: &[ResolvedGroup],
    file_levels: &[QosLevel],
    warnings: &mut Vec<ResolveWarning>,
    dir: &dyn PortDirectory,
) -> Result<ResolvedRule, ResolveError> {
    let level = find_level(file_levels, &rule.level).ok_or_else(|| ResolveError::UnknownLevel {
        rule: number,
        level: rule.level.clone(),
    })?;
    let find = |names: &[String], error: fn(usize, String) -> ResolveError| {
        names
            .iter()
            .map(|n| find_group(groups, n).ok_or_else(|| error(number, n.clone())))
            .collect::<Result<Vec<_>, _>>()
    };
    let sources = find(&rule.sources, |rule, group| ResolveError::UnknownSource {
        rule,
        group,
    })?;
    let destinations = find(&rule.destinations, |rule, group| {
        ResolveError::UnknownDestination { rule, group }
    })?;
    for &(start, end) in rule.pkeys.ranges() {
        for pkey in start..=end {
            let pkey = (pkey & PKEY_MASK) as u16;
            if dir.partition_by_pkey(pkey).is_none() {
                warnings.push(ResolveWarning::RulePkeyWithoutPartition { rule: number, pkey });
            }
        }
    }
    Ok(ResolvedRule {
        sources,
        destinations,
        qos_classes: rule.qos_classes.clone(),
        service_ids: rule.service_ids.clone(),
        pkeys: rule.pkeys.clone(),
        level,
    })
}

mod directory;
pub mod setup;

pub use directory::{DirectoryNode, NodeDirectory};

#[cfg(test)]
mod tests;
