//! The `qos-setup` section applied to a fabric: per port group VL arbitration tables,
//! VLHighLimit and SL-to-VL tables. OpenSM 3.3.23 parses the section, checks its syntax and
//! programs nothing from it; its grammar names the fields, and no OpenSM release ever gave them
//! a meaning. ibqos programs them when the configuration asks for it, with these meanings:
//!
//! - A switch is in a group by its GUID or as a SWITCH node, and then all its ports are; a CA or
//!   router port is in a group by its own port GUID or its node type.
//! - A `vlarb-scope` applies to every port in one of its `group`s and to every port whose link
//!   peer is in one of its `across` groups (the switch ports facing that group). Each of
//!   `vlarb-high`, `vlarb-low` and `vl-high-limit` it gives replaces the port class's value;
//!   what it leaves out stays the class's.
//! - An `sl2vl-scope` applies to SL-to-VL entries: one per (input port, output port) of a switch,
//!   and one per CA or router port. It applies to every entry of a node in one of its `group`s. On
//!   a switch, it also applies to the entries whose input's peer is in an `across-from` group and
//!   whose output's peer is in an `across-to` group. `across` is both, and a side with no groups is
//!   any port. `from` and `to` then keep only those input and output port numbers; without them,
//!   every port. A CA port's entry has no input: `across-from` and `from` do not apply to it. It is
//!   chosen by `across-to` only in a scope without `across-from`.
//! - Two scopes that give one port, or one SL-to-VL entry, different values are an error: the
//!   file does not say which one the administrator meant.

use std::collections::BTreeMap;
use std::fmt;

use ibqos_mad::VlArbEntry;

use super::{EndPort, QosPolicy, ResolvedGroup, find_name};
use crate::config::{EffectiveQos, PortClass, QosConfig};
use crate::tables::{Sl2VlTable, VLARB_TABLE_ENTRIES, VlArbTable};
use crate::types::Vl;

/// One scope of the section: the n-th `vlarb-scope` or `sl2vl-scope`, from 1, in file order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScopeId {
    Vlarb(usize),
    Sl2vl(usize),
}

impl fmt::Display for ScopeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeId::Vlarb(n) => write!(f, "vlarb-scope {n}"),
            ScopeId::Sl2vl(n) => write!(f, "sl2vl-scope {n}"),
        }
    }
}

/// What a scope sets on a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetupField {
    VlarbHigh,
    VlarbLow,
    VlHighLimit,
    Sl2vl,
}

impl SetupField {
    /// The field's keyword in qos-policy.conf.
    pub const fn name(self) -> &'static str {
        match self {
            SetupField::VlarbHigh => "vlarb-high",
            SetupField::VlarbLow => "vlarb-low",
            SetupField::VlHighLimit => "vl-high-limit",
            SetupField::Sl2vl => "sl2vl-table",
        }
    }
}

impl fmt::Display for SetupField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a qos-setup cannot be programmed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    #[error("{scope}: port-group '{group}' not found")]
    UnknownGroup { scope: ScopeId, group: String },
    #[error(
        "{scope}: {field} entry {index} is {vl}:{weight}; a VL arbitration entry is a VL 0-14 \
         and a weight 0-255"
    )]
    BadEntry {
        scope: ScopeId,
        field: SetupField,
        /// From 1.
        index: usize,
        vl: u64,
        weight: u64,
    },
    #[error("{scope}: {field} has {count} entries; a VL arbitration table holds at most 64")]
    TooManyEntries {
        scope: ScopeId,
        field: SetupField,
        count: usize,
    },
    #[error("{scope}: vl-high-limit {value} does not fit PortInfo.VLHighLimit (0-255)")]
    HighLimit { scope: ScopeId, value: u32 },
    #[error(
        "{first} and {second} both set {field} on {port}{}, to different values",
        if *ports > 1 { format!(" (and on {} more)", ports - 1) } else { String::new() }
    )]
    Conflict {
        field: SetupField,
        /// The first port (or SL-to-VL entry) where they meet.
        port: String,
        /// How many ports or entries they both set, differently.
        ports: usize,
        first: ScopeId,
        second: ScopeId,
    },
}

impl SetupError {
    /// The scope the error is about: for a conflict, the later one.
    pub fn scope(&self) -> ScopeId {
        match self {
            SetupError::UnknownGroup { scope, .. }
            | SetupError::BadEntry { scope, .. }
            | SetupError::TooManyEntries { scope, .. }
            | SetupError::HighLimit { scope, .. } => *scope,
            SetupError::Conflict { second, .. } => *second,
        }
    }
}

/// A value and the scope that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scoped<T> {
    pub value: T,
    pub scope: ScopeId,
}

/// What the scopes set on one port's VL arbitration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortSetup {
    pub vlarb_high: Option<Scoped<VlArbTable>>,
    pub vlarb_low: Option<Scoped<VlArbTable>>,
    pub vl_high_limit: Option<Scoped<u8>>,
}

// Beside `PortSetup` rather than in `config`, so that the configuration does not import
// the policy that reads it.
impl EffectiveQos {
    /// These settings with what `qos-setup` gives one port in place of its class's.
    pub fn with_setup(mut self, setup: Option<&PortSetup>) -> EffectiveQos {
        let Some(setup) = setup else {
            return self;
        };
        if let Some(table) = setup.vlarb_high {
            self.vlarb_high = table.value;
        }
        if let Some(table) = setup.vlarb_low {
            self.vlarb_low = table.value;
        }
        if let Some(limit) = setup.vl_high_limit {
            self.high_limit = limit.value;
        }
        self
    }
}

/// One `vlarb-scope`, checked: groups found (indexes into the policy's port groups), values
/// that fit a port.
#[derive(Debug, Clone, PartialEq, Eq)]
struct VlarbRule {
    id: ScopeId,
    groups: Vec<usize>,
    across: Vec<usize>,
    vlarb_high: Option<VlArbTable>,
    vlarb_low: Option<VlArbTable>,
    vl_high_limit: Option<u8>,
}

/// One `sl2vl-scope`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sl2vlRule {
    id: ScopeId,
    groups: Vec<usize>,
    across_from: Vec<usize>,
    across_to: Vec<usize>,
    /// Port bit sets; 0 is every port.
    from: u128,
    to: u128,
    table: Sl2VlTable,
}

/// A qos-setup whose groups exist and whose values fit the tables: ready for [`Self::apply`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckedSetup {
    vlarb: Vec<VlarbRule>,
    sl2vl: Vec<Sl2vlRule>,
}

impl QosPolicy {
    /// The qos-setup section checked without a fabric: every group it names is a port group,
    /// every value fits the table it goes to. All problems are reported, in scope order.
    pub fn check_setup(&self) -> Result<CheckedSetup, Vec<SetupError>> {
        let mut errors = Vec::new();
        let mut groups = |scope: ScopeId, names: &[String]| -> Vec<usize> {
            names
                .iter()
                .filter_map(|name| {
                    let found = find_name(self.port_groups.iter().map(|g| g.name.as_str()), name);
                    if found.is_none() {
                        errors.push(SetupError::UnknownGroup {
                            scope,
                            group: name.clone(),
                        });
                    }
                    found
                })
                .collect()
        };
        let mut vlarb = Vec::new();
        for (i, scope) in self.setup.vlarb_scopes.iter().enumerate() {
            let id = ScopeId::Vlarb(i + 1);
            vlarb.push(VlarbRule {
                id,
                groups: groups(id, &scope.groups),
                across: groups(id, &scope.across),
                vlarb_high: None,
                vlarb_low: None,
                vl_high_limit: None,
            });
        }
        let mut sl2vl = Vec::new();
        for (i, scope) in self.setup.sl2vl_scopes.iter().enumerate() {
            let id = ScopeId::Sl2vl(i + 1);
            let across_from = groups(id, &scope.across_from);
            let across_to = groups(id, &scope.across_to);
            sl2vl.push(Sl2vlRule {
                id,
                groups: groups(id, &scope.groups),
                across_from,
                across_to,
                from: scope.from,
                to: scope.to,
                // The parser keeps each VL below 16; VL15 is "drop".
                table: Sl2VlTable(scope.sl2vl_table.map(Vl::from_nibble)),
            });
        }
        for (rule, scope) in vlarb.iter_mut().zip(&self.setup.vlarb_scopes) {
            let id = rule.id;
            let mut table = |field, pairs: &[(u64, u64)]| {
                vlarb_table(id, field, pairs)
                    .map_err(|e| errors.extend(e))
                    .ok()
            };
            rule.vlarb_high = Some(&scope.vlarb_high)
                .filter(|p| !p.is_empty())
                .and_then(|p| table(SetupField::VlarbHigh, p));
            rule.vlarb_low = Some(&scope.vlarb_low)
                .filter(|p| !p.is_empty())
                .and_then(|p| table(SetupField::VlarbLow, p));
            rule.vl_high_limit = scope.vl_high_limit.and_then(|value| {
                let limit = u8::try_from(value).ok();
                if limit.is_none() {
                    errors.push(SetupError::HighLimit { scope: id, value });
                }
                limit
            });
        }
        errors.sort_by_key(SetupError::scope);
        if errors.is_empty() {
            Ok(CheckedSetup { vlarb, sl2vl })
        } else {
            Err(errors)
        }
    }
}

/// `vl:weight` pairs as a table, or every entry that cannot be one.
fn vlarb_table(
    scope: ScopeId,
    field: SetupField,
    pairs: &[(u64, u64)],
) -> Result<VlArbTable, Vec<SetupError>> {
    let mut errors = Vec::new();
    if pairs.len() > VLARB_TABLE_ENTRIES {
        errors.push(SetupError::TooManyEntries {
            scope,
            field,
            count: pairs.len(),
        });
    }
    let mut entries = Vec::with_capacity(pairs.len());
    for (i, &(vl, weight)) in pairs.iter().enumerate() {
        match (u8::try_from(vl), u8::try_from(weight)) {
            (Ok(v), Ok(w)) if v <= 14 => entries.push(VlArbEntry::new(v, w)),
            _ => errors.push(SetupError::BadEntry {
                scope,
                field,
                index: i + 1,
                vl,
                weight,
            }),
        }
    }
    if errors.is_empty() {
        Ok(VlArbTable::from_entries(&entries))
    } else {
        Err(errors)
    }
}

/// One port of the fabric, as the scopes see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupPort {
    /// The node's GUID.
    pub node: u64,
    pub port: u8,
    /// What group membership is decided on: the port's own GUID and node type (a switch port
    /// has its switch's GUID).
    pub member: EndPort,
    /// The far end of the port's link, the same way; `None` for switch port 0 or no link.
    pub peer: Option<EndPort>,
    /// A switch port: its SL-to-VL tables are per input port.
    pub switch: bool,
    /// QoS programs the port's output tables (VLArb, SL2VL as an output): false for a switch's
    /// down ports and base port 0, which are SL-to-VL inputs only.
    pub output: bool,
    /// How messages name the port.
    pub name: String,
}

/// What the scopes program on a fabric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetupTables {
    /// By (node GUID, port).
    pub ports: BTreeMap<(u64, u8), PortSetup>,
    /// By (node GUID, input port, output port); a CA or router port's entry has input 0.
    pub sl2vl: BTreeMap<(u64, u8, u8), Scoped<Sl2VlTable>>,
}

impl SetupTables {
    /// The VL arbitration a port gets from the scopes, if any.
    pub fn port(&self, node: u64, port: u8) -> Option<&PortSetup> {
        self.ports.get(&(node, port))
    }

    /// The settings of port `port` of node `node`, of `class`: the class's, with what the
    /// scopes give the port. A CA or router port's SL-to-VL table is among them; a switch's
    /// are per input port, in [`Self::switch_entries`].
    pub fn settings(
        &self,
        config: &QosConfig,
        class: PortClass,
        node: u64,
        port: u8,
    ) -> EffectiveQos {
        let mut settings = config.effective(class).with_setup(self.port(node, port));
        if matches!(class, PortClass::Ca | PortClass::Rtr)
            && let Some(table) = self.sl2vl.get(&(node, 0, port))
        {
            settings.sl2vl = table.value;
        }
        settings
    }

    /// The SL-to-VL entries the scopes give switch `node`: (input, output, table), unmasked.
    pub fn switch_entries(&self, node: u64) -> impl Iterator<Item = (u8, u8, Sl2VlTable)> + '_ {
        self.sl2vl
            .range((node, 0, 0)..=(node, u8::MAX, u8::MAX))
            .map(|(&(_, input, output), table)| (input, output, table.value))
    }
}

/// Conflicts found so far, one per (field, scope pair): the first place and how many.
#[derive(Default)]
struct Conflicts(BTreeMap<(SetupField, ScopeId, ScopeId), (String, usize)>);

impl Conflicts {
    /// Sets `slot` to `value` from `scope`, or records a conflict with the scope already there.
    fn set<T: PartialEq>(
        &mut self,
        slot: &mut Option<Scoped<T>>,
        value: T,
        scope: ScopeId,
        field: SetupField,
        place: impl FnOnce() -> String,
    ) {
        match slot {
            Some(held) if held.value != value => {
                let entry = self
                    .0
                    .entry((field, held.scope, scope))
                    .or_insert_with(|| (place(), 0));
                entry.1 += 1;
            }
            Some(_) => {}
            None => *slot = Some(Scoped { value, scope }),
        }
    }

    fn into_errors(self) -> Vec<SetupError> {
        self.0
            .into_iter()
            .map(
                |((field, first, second), (port, ports))| SetupError::Conflict {
                    field,
                    port,
                    ports,
                    first,
                    second,
                },
            )
            .collect()
    }
}

impl CheckedSetup {
    /// Whether the section has no scope at all.
    pub fn is_empty(&self) -> bool {
        self.vlarb.is_empty() && self.sl2vl.is_empty()
    }

    /// The tables the scopes give the ports of a fabric, `groups` being the policy's port
    /// groups resolved on it ([`QosPolicy::resolve_groups`]); every conflict between scopes if
    /// any.
    pub fn apply(
        &self,
        groups: &[ResolvedGroup],
        ports: &[SetupPort],
    ) -> Result<SetupTables, Vec<SetupError>> {
        let in_any = |indexes: &[usize], port: Option<EndPort>| {
            port.is_some_and(|p| {
                indexes
                    .iter()
                    .any(|&g| groups.get(g).is_some_and(|g| g.contains(p)))
            })
        };
        let mut tables = SetupTables::default();
        let mut conflicts = Conflicts::default();
        for rule in &self.vlarb {
            for port in ports.iter().filter(|p| p.output) {
                if !in_any(&rule.groups, Some(port.member)) && !in_any(&rule.across, port.peer) {
                    continue;
                }
                let slot = tables.ports.entry((port.node, port.port)).or_default();
                let fields = [
                    (SetupField::VlarbHigh, rule.vlarb_high, &mut slot.vlarb_high),
                    (SetupField::VlarbLow, rule.vlarb_low, &mut slot.vlarb_low),
                ];
                for (field, value, slot) in fields {
                    if let Some(value) = value {
                        conflicts.set(slot, value, rule.id, field, || port.name.clone());
                    }
                }
                if let Some(limit) = rule.vl_high_limit {
                    conflicts.set(
                        &mut slot.vl_high_limit,
                        limit,
                        rule.id,
                        SetupField::VlHighLimit,
                        || port.name.clone(),
                    );
                }
            }
        }
        tables.ports.retain(|_, s| *s != PortSetup::default());
        let mut by_node: BTreeMap<u64, Vec<&SetupPort>> = BTreeMap::new();
        for port in ports {
            by_node.entry(port.node).or_default().push(port);
        }
        let numbered = |bits: u128, n: u8| bits == 0 || (n < 128 && bits & (1 << n) != 0);
        for rule in &self.sl2vl {
            for node_ports in by_node.values() {
                for output in node_ports
                    .iter()
                    .filter(|p| p.output && numbered(rule.to, p.port))
                {
                    let grouped = in_any(&rule.groups, Some(output.member));
                    let to_side = rule.across_to.is_empty() || in_any(&rule.across_to, output.peer);
                    let across = !rule.across_from.is_empty() || !rule.across_to.is_empty();
                    let inputs: Vec<&SetupPort> = if output.switch {
                        node_ports
                            .iter()
                            .copied()
                            .filter(|input| numbered(rule.from, input.port))
                            .filter(|input| {
                                grouped
                                    || (across
                                        && to_side
                                        && (rule.across_from.is_empty()
                                            || in_any(&rule.across_from, input.peer)))
                            })
                            .collect()
                    } else {
                        let chosen = grouped || (across && rule.across_from.is_empty() && to_side);
                        if chosen { vec![*output] } else { Vec::new() }
                    };
                    for input in inputs {
                        let input_port = if output.switch { input.port } else { 0 };
                        let slot = tables
                            .sl2vl
                            .entry((output.node, input_port, output.port))
                            .or_insert(Scoped {
                                value: rule.table,
                                scope: rule.id,
                            });
                        let mut held = Some(*slot);
                        conflicts.set(&mut held, rule.table, rule.id, SetupField::Sl2vl, || {
                            if output.switch {
                                format!("{} from port {}", output.name, input.port)
                            } else {
                                output.name.clone()
                            }
                        });
                    }
                }
            }
        }
        let errors = conflicts.into_errors();
        if errors.is_empty() {
            Ok(tables)
        } else {
            Err(errors)
        }
    }
}

#[cfg(test)]
mod tests;
