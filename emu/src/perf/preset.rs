//! Counters set to chosen values when the fabric starts, read from a small TOML file, so that
//! a performance manager can be tested at a counter's limits (OpenSM clears a counter past
//! three quarters of its range):
//!
//! ```toml
//! [[counter]]
//! node = "S1"                    # as in the net file, or its NodeDescription
//! port = 3
//! attribute = "PortCounters"     # the attribute, as IBA and perfquery's headings name it
//! counter = "PortXmitData"       # the counter, as perfquery prints it
//! value = 3221225472
//!
//! [[counter]]
//! node = "H1"
//! port = 1
//! attribute = "PortXmitDataSL"
//! counter = "XmtDataSL3"         # an entry of a per-SL or per-VL row: its index appended
//! value = 1000
//! ```
//!
//! Every counter the PMAs keep can be set: those of PortCounters and PortCountersExtended
//! that the fabric counts, and every counter of the optional attributes.

use serde::Deserialize;
use toml::Spanned;

use ibqos_fabric::{PortRef, Topology};
use ibqos_text::{Code, Coded, Located, Severity};

use super::optional::Optional;
use super::{Counter, Extended, PortCounters};
use crate::input::{self, InputError};

/// A counter the emulated PMAs keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterId(Kept);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kept {
    Basic(Counter),
    Extended(Extended),
    Optional(Optional, u8),
}

/// The names of the attributes whose counters the PMAs keep.
const BASIC: &str = "PortCounters";
const EXTENDED: &str = "PortCountersExtended";

impl CounterId {
    /// The counter named `counter` (as perfquery prints it) of the attribute named `attribute`
    /// (as IBA names it), if the PMAs keep it.
    pub fn named(attribute: &str, counter: &str) -> Result<CounterId, PresetProblem> {
        let kept = match attribute {
            BASIC => Counter::ALL
                .into_iter()
                .find(|c| c.name() == counter)
                .map(Kept::Basic),
            EXTENDED => Extended::ALL
                .into_iter()
                .find(|c| c.name() == counter)
                .map(Kept::Extended),
            _ => {
                let optional =
                    Optional::named(attribute).ok_or_else(|| PresetProblem::UnknownAttribute {
                        attribute: attribute.to_owned(),
                    })?;
                optional
                    .counter_named(counter)
                    .map(|index| Kept::Optional(optional, index))
            }
        };
        kept.map(CounterId)
            .ok_or_else(|| PresetProblem::UnknownCounter {
                attribute: attribute.to_owned(),
                counter: counter.to_owned(),
                kept: counter_names(attribute).join(", "),
            })
    }

    /// The largest value it holds.
    pub fn max(self) -> u64 {
        match self.0 {
            Kept::Basic(counter) => counter.select_and_max().1.into(),
            Kept::Extended(_) => u64::MAX,
            Kept::Optional(optional, _) => optional.max().into(),
        }
    }

    /// Sets it in `counters` to `value`, at most [`CounterId::max`].
    pub(super) fn set(self, counters: &mut PortCounters, value: u64) {
        match self.0 {
            Kept::Basic(counter) => {
                counters.counts[counter as usize] = 0;
                counters.add(counter, value);
            }
            Kept::Extended(counter) => counters.extended[counter as usize] = value,
            Kept::Optional(optional, index) => {
                let value = u32::try_from(value).unwrap_or(u32::MAX).min(optional.max());
                counters.optional.set(optional, index, value);
            }
        }
    }
}

/// The counters of `attribute` the PMAs keep, by name.
fn counter_names(attribute: &str) -> Vec<String> {
    match attribute {
        BASIC => Counter::ALL.map(|c| c.name().to_owned()).to_vec(),
        EXTENDED => Extended::ALL.map(|c| c.name().to_owned()).to_vec(),
        _ => Optional::named(attribute).map_or_else(Vec::new, |o| {
            (0..o.len()).map(|i| o.counter_name(i)).collect()
        }),
    }
}

/// Counter values to set at start, resolved against a topology.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterPresets {
    /// Each port, counter and value, in the file's order.
    pub presets: Vec<(PortRef, CounterId, u64)>,
}

/// What is wrong with a presets file (its place is the [`Located`] around it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PresetProblem {
    #[error("{0}")]
    Syntax(String),
    #[error("no node named `{node}`")]
    UnknownNode { node: String },
    #[error("`{node}` has no port {port}")]
    NoSuchPort { node: String, port: u8 },
    #[error(
        "the emulated PMAs keep no attribute `{attribute}`: they keep {BASIC}, {EXTENDED} and {}",
        Optional::ALL.map(Optional::name).join(", ")
    )]
    UnknownAttribute { attribute: String },
    #[error("{attribute} has no counter `{counter}` the emulated PMAs keep: {kept}")]
    UnknownCounter {
        attribute: String,
        counter: String,
        kept: String,
    },
    #[error("{counter} holds at most {max}, not {value}")]
    TooLarge {
        counter: String,
        value: u64,
        max: u64,
    },
}

impl Coded for PresetProblem {
    fn code(&self) -> Code {
        match self {
            PresetProblem::Syntax(_) => Code::InvalidToml,
            PresetProblem::UnknownNode { .. } => Code::UnknownNode,
            PresetProblem::NoSuchPort { .. } => Code::NoSuchPort,
            PresetProblem::UnknownAttribute { .. } | PresetProblem::UnknownCounter { .. } => {
                Code::UnknownCounter
            }
            PresetProblem::TooLarge { .. } => Code::CounterTooLarge,
        }
    }

    fn severity(&self) -> Severity {
        Severity::Error
    }
}

/// Why a presets file cannot be used.
pub type PresetError = InputError<PresetProblem>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    counter: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    node: Spanned<String>,
    port: Spanned<u8>,
    attribute: Spanned<String>,
    counter: Spanned<String>,
    value: Spanned<u64>,
}

impl CounterPresets {
    /// Reads a presets file; errors name the file, line and column.
    pub fn load(
        path: &std::path::Path,
        topology: &Topology,
    ) -> Result<CounterPresets, PresetError> {
        input::load("counter presets", path, |file, text| {
            CounterPresets::parse(file, text, topology)
        })
    }

    /// Parses a presets file's text (`file` names it in errors) and resolves its nodes, ports
    /// and counters.
    pub fn parse(
        file: &str,
        text: &str,
        topology: &Topology,
    ) -> Result<CounterPresets, Located<PresetProblem>> {
        let source = input::Source { file, text };
        let at = |span, problem| source.at(span, problem);
        let parsed: File = source.toml(PresetProblem::Syntax)?;
        let mut presets = CounterPresets::default();
        for entry in &parsed.counter {
            let name = entry.node.get_ref();
            let node = source.node(topology, &entry.node, |node| PresetProblem::UnknownNode {
                node,
            })?;
            let port = PortRef::new(node, *entry.port.get_ref());
            if !has_counters(topology, port) {
                let problem = PresetProblem::NoSuchPort {
                    node: name.clone(),
                    port: port.port,
                };
                return Err(at(entry.port.span(), problem));
            }
            let counter = CounterId::named(entry.attribute.get_ref(), entry.counter.get_ref())
                .map_err(|problem| {
                    let span = match problem {
                        PresetProblem::UnknownAttribute { .. } => entry.attribute.span(),
                        _ => entry.counter.span(),
                    };
                    at(span, problem)
                })?;
            let value = *entry.value.get_ref();
            if value > counter.max() {
                let problem = PresetProblem::TooLarge {
                    counter: entry.counter.get_ref().clone(),
                    value,
                    max: counter.max(),
                };
                return Err(at(entry.value.span(), problem));
            }
            presets.presets.push((port, counter, value));
        }
        Ok(presets)
    }
}

/// Whether a PMA keeps counters for `port`: a port the node has, linked or not, or a
/// switch's port 0.
fn has_counters(topology: &Topology, port: PortRef) -> bool {
    topology
        .node(port.node)
        .is_some_and(|n| port.port <= n.num_ports() && (port.port != 0 || n.is_switch()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_topology;

    fn topology() -> Topology {
        ibqos_fabric::netfile::parse_net_str(builtin_topology("two-switch").unwrap())
            .unwrap()
            .topology
    }

    fn entry(node: &str, port: u8, attribute: &str, counter: &str, value: u64) -> String {
        format!(
            "[[counter]]\nnode = \"{node}\"\nport = {port}\nattribute = \"{attribute}\"\n\
             counter = \"{counter}\"\nvalue = {value}\n"
        )
    }

    fn parse(text: &str) -> Result<CounterPresets, Located<PresetProblem>> {
        CounterPresets::parse("presets.toml", text, &topology())
    }

    #[test]
    fn counters_are_named_by_attribute_and_perfquerys_name() {
        let t = topology();
        let text = [
            entry("S1", 3, "PortCounters", "PortXmitData", 3_221_225_472),
            entry("S1", 0, "PortCountersExtended", "PortRcvPkts", u64::MAX),
            entry(
                "H1",
                1,
                "PortVLXmitWaitCounters",
                "PortVLXmitWait15",
                0xffff,
            ),
        ]
        .concat();
        let presets = parse(&text).unwrap();
        let s1 = t.node_by_name("S1").unwrap();
        let h1 = t.node_by_name("H1").unwrap();
        assert_eq!(
            presets.presets,
            [
                (
                    PortRef::new(s1, 3),
                    CounterId(Kept::Basic(Counter::XmitData)),
                    3_221_225_472
                ),
                (
                    PortRef::new(s1, 0),
                    CounterId(Kept::Extended(Extended::RcvPkts)),
                    u64::MAX
                ),
                (
                    PortRef::new(h1, 1),
                    CounterId(Kept::Optional(Optional::VlXmitWait, 15)),
                    0xffff
                ),
            ]
        );
    }

    proptest::proptest! {
        /// Any text is a set of presets or a located problem, never a panic.
        #[test]
        fn any_text_never_panics(text in ".{0,200}", entry_value: u64, port: u8) {
            let _ = parse(&text);
            let entry = entry("S1", port, "PortXmitDataSL", "XmtDataSL1", entry_value);
            let _ = parse(&format!("{entry}{text}"));
        }
    }

    #[test]
    fn the_example_file_reads() {
        let text = include_str!("../../../examples/counter-presets.toml");
        assert_eq!(parse(text).unwrap().presets.len(), 3);
    }

    #[test]
    fn every_mistake_is_located_and_says_what_would_do() {
        let problem = |text: &str| {
            let e = parse(text).unwrap_err();
            (e.location.to_string(), e.what.to_string())
        };
        let (at, what) = problem(&entry("S9", 3, "PortCounters", "PortXmitData", 1));
        assert_eq!(
            (at.as_str(), what.as_str()),
            ("presets.toml:2:8", "no node named `S9`")
        );
        let (at, what) = problem(&entry("H1", 2, "PortCounters", "PortXmitData", 1));
        assert_eq!(
            (at.as_str(), what.as_str()),
            ("presets.toml:3:8", "`H1` has no port 2")
        );
        let (at, what) = problem(&entry("H1", 1, "PortCounter", "PortXmitData", 1));
        assert_eq!(at, "presets.toml:4:13");
        assert!(
            what.starts_with(
                "the emulated PMAs keep no attribute `PortCounter`: they keep PortCounters, \
                 PortCountersExtended and PortRcvErrorDetails, "
            ),
            "{what}"
        );
        let (at, what) = problem(&entry("H1", 1, "PortCounters", "SymbolErrorCounter", 1));
        assert_eq!(at, "presets.toml:5:11");
        assert_eq!(
            what,
            "PortCounters has no counter `SymbolErrorCounter` the emulated PMAs keep: \
             LinkDownedCounter, PortRcvErrors, PortRcvSwitchRelayErrors, PortXmitDiscards, \
             PortXmitData, PortRcvData, PortXmitPkts, PortRcvPkts, PortXmitWait"
        );
        let (at, what) = problem(&entry("H1", 1, "PortCounters", "PortRcvErrors", 65536));
        assert_eq!(
            (at.as_str(), what.as_str()),
            (
                "presets.toml:6:9",
                "PortRcvErrors holds at most 65535, not 65536"
            )
        );
        let (_, what) = problem(&entry("H1", 1, "PortXmitDataSL", "XmtDataSL16", 1));
        assert!(what.contains("no counter `XmtDataSL16`"), "{what}");
        let (_, what) = problem("[[counter]]\nnode = \"H1\"\n");
        assert!(what.starts_with("missing field"), "{what}");
        let negative = entry("H1", 1, "PortCounters", "PortXmitData", 1);
        let (at, _) = problem(&negative.replace("value = 1", "value = -1"));
        assert_eq!(at, "presets.toml:6:9");
    }
}
