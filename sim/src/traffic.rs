//! The traffic file: a TOML description of an experiment (duration, link defaults, arbiter
//! options, flows and generated patterns), read strictly.
//!
//! ```toml
//! duration_us = 200
//! [link]                      # every link
//! speed = "QDR"               # SDR DDR QDR FDR EDR HDR NDR
//! width = 4                   # 1 2 4 8 12
//! propagation_ns = 5
//! vl_buffer_bytes = 65536     # per VL, per receive port
//! credit_latency_ns = 100
//! [arbiter]                   # the IBA 7.6.9 open points; these are the defaults
//! overshoot = "forgive"       # forgive | must-fit | flit-model
//! zero_weight = "skip"        # skip | one-packet
//! high_limit = "spec"         # spec | flit-model
//! [[flow]]
//! name = "storage"
//! src = "H1"                  # a host, by its topology name or NodeDescription
//! dst = "H3"
//! sl = 1
//! payload = 4096              # bytes per packet, 1-4096
//! rate_gbps = 0               # 0 = as fast as the fabric allows
//! start_us = 0                # optional
//! stop_us = 200               # optional
//! management = false          # true: SMP-like traffic on VL15, payload <= 256
//! [[pattern]]
//! kind = "all-to-all"         # all-to-all | incast | permutation
//! nodes = ["H1", "H2", "H3"]  # optional: every host
//! dst = "H3"                  # incast only
//! sl = 0
//! payload = 2048
//! ```
//!
//! Every problem is reported once, precisely, with file:line:col: unknown keys, SL above 15, a
//! zero duration, a payload of 0 or above 4096, an unknown speed, an unknown node. Reading
//! never panics, whatever the bytes ([`parse`] is the fuzzing entry point).

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use ibqos_qos::Sl;
use ibqos_text::{Code, Coded, Located, Location, Severity};

use crate::arbiter::{ArbiterOptions, BLOCK_BYTES};
use crate::engine::mix;
use crate::link::{LinkParams, MAX_PAYLOAD, PS_PER_NS, PS_PER_US, Speed, Width, wire_blocks};
use crate::network::{Flow, PortAddr};

/// The largest payload of a management (VL15) packet: a MAD.
pub const MAX_MANAGEMENT_PAYLOAD: u32 = 256;
/// The longest run or start/stop time accepted: 1000 s (far beyond any useful run, and far
/// below overflowing picoseconds).
const MAX_US: f64 = 1e9;

/// A traffic file problem, with its place in the file.
pub type TrafficError = Located<TrafficErrorKind>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TrafficErrorKind {
    #[error("the file is not UTF-8 text")]
    NotUtf8,
    /// TOML syntax, an unknown key, a wrong type, an unknown speed or width (the reader's own
    /// message).
    #[error("{0}")]
    Toml(String),
    #[error("duration_us must be above 0")]
    ZeroDuration,
    #[error("{field} = {value} is not a time: give a number of {unit} from 0 to 1e9 us")]
    BadTime {
        field: &'static str,
        value: f64,
        unit: &'static str,
    },
    #[error("rate_gbps = {0} is not a rate: give Gb/s >= 0 (0 = as fast as the fabric allows)")]
    BadRate(f64),
    #[error("SL {0} is out of range: an SL is 0-15")]
    BadSl(i64),
    #[error("payload {0} is out of range: a packet carries 1-4096 bytes")]
    BadPayload(i64),
    #[error("payload {0} is too large for management (VL15) traffic: a MAD is at most 256 bytes")]
    BadManagementPayload(u32),
    #[error("vl_buffer_bytes = {0} is out of range: give 64 B to 1 GB")]
    BadBuffer(i64),
    #[error(
        "vl_buffer_bytes = {bytes} holds {blocks} credits, but a {payload}-byte packet needs {needed}: it could never be sent"
    )]
    BufferTooSmall {
        bytes: u64,
        blocks: u32,
        payload: u32,
        needed: u32,
    },
    #[error("stop_us ({stop}) is before start_us ({start})")]
    StopBeforeStart { start: f64, stop: f64 },
    #[error("unknown node `{name}`: {reason}")]
    UnknownNode { name: String, reason: String },
    #[error("`{0}` is both source and destination")]
    SelfFlow(String),
    #[error("an incast pattern needs `dst`")]
    IncastWithoutDst,
    #[error("`dst` is only for incast patterns")]
    DstWithoutIncast,
    #[error("a {0} pattern needs at least 2 nodes")]
    TooFewNodes(&'static str),
    #[error("no [[flow]] and no [[pattern]]: nothing to simulate")]
    NoTraffic,
}

impl Coded for TrafficErrorKind {
    fn code(&self) -> Code {
        match self {
            TrafficErrorKind::NotUtf8 => Code::NotUtf8,
            TrafficErrorKind::Toml(_) => Code::InvalidToml,
            TrafficErrorKind::ZeroDuration => Code::ZeroDuration,
            TrafficErrorKind::BadTime { .. } => Code::BadTime,
            TrafficErrorKind::BadRate(_) => Code::BadRate,
            TrafficErrorKind::BadSl(_) => Code::SlOutOfRange,
            TrafficErrorKind::BadPayload(_) => Code::PayloadOutOfRange,
            TrafficErrorKind::BadManagementPayload(_) => Code::ManagementPayloadTooLarge,
            TrafficErrorKind::BadBuffer(_) => Code::BufferOutOfRange,
            TrafficErrorKind::BufferTooSmall { .. } => Code::BufferTooSmall,
            TrafficErrorKind::StopBeforeStart { .. } => Code::StopBeforeStart,
            TrafficErrorKind::UnknownNode { .. } => Code::UnknownNode,
            TrafficErrorKind::SelfFlow(_) => Code::SelfFlow,
            TrafficErrorKind::IncastWithoutDst => Code::IncastWithoutDst,
            TrafficErrorKind::DstWithoutIncast => Code::DstWithoutIncast,
            TrafficErrorKind::TooFewNodes(_) => Code::TooFewNodes,
            TrafficErrorKind::NoTraffic => Code::NoTraffic,
        }
    }

    fn severity(&self) -> Severity {
        Severity::Error
    }
}

/// The generated patterns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PatternKind {
    /// Every node to every other node.
    AllToAll,
    /// Every node but `dst` to `dst`.
    Incast,
    /// Every node to one other, a random cyclic permutation (seeded).
    Permutation,
}

impl PatternKind {
    fn name(self) -> &'static str {
        match self {
            PatternKind::AllToAll => "all-to-all",
            PatternKind::Incast => "incast",
            PatternKind::Permutation => "permutation",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTraffic {
    duration_us: Spanned<f64>,
    #[serde(default)]
    link: RawLink,
    #[serde(default)]
    arbiter: ArbiterOptions,
    #[serde(default)]
    flow: Vec<RawFlow>,
    #[serde(default)]
    pattern: Vec<RawPattern>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    speed: Option<Speed>,
    width: Option<Width>,
    propagation_ns: Option<Spanned<f64>>,
    vl_buffer_bytes: Option<Spanned<i64>>,
    credit_latency_ns: Option<Spanned<f64>>,
}

/// What a flow and a pattern both say about their packets.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFlow {
    name: Option<String>,
    src: Spanned<String>,
    dst: Spanned<String>,
    sl: Option<Spanned<i64>>,
    payload: Spanned<i64>,
    rate_gbps: Option<Spanned<f64>>,
    start_us: Option<Spanned<f64>>,
    stop_us: Option<Spanned<f64>>,
    #[serde(default)]
    management: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    kind: PatternKind,
    name: Option<String>,
    nodes: Option<Spanned<Vec<Spanned<String>>>>,
    dst: Option<Spanned<String>>,
    sl: Option<Spanned<i64>>,
    payload: Spanned<i64>,
    rate_gbps: Option<Spanned<f64>>,
    start_us: Option<Spanned<f64>>,
    stop_us: Option<Spanned<f64>>,
    #[serde(default)]
    management: bool,
}

/// A node name as written, with where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeName {
    pub name: String,
    pub at: Location,
}

/// The packets of a flow or pattern, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Packets {
    pub sl: Sl,
    pub payload: u32,
    pub rate_bps: u64,
    pub start_ps: u64,
    /// `None`: until the end of the run.
    pub stop_ps: Option<u64>,
    pub management: bool,
}

/// What a `[[flow]]` or `[[pattern]]` asks for, node names not yet resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    Flow {
        name: Option<String>,
        src: NodeName,
        dst: NodeName,
        packets: Packets,
    },
    Pattern {
        kind: PatternKind,
        name: Option<String>,
        /// `None`: every host.
        nodes: Option<Vec<NodeName>>,
        dst: Option<NodeName>,
        packets: Packets,
        at: Location,
    },
}

/// A parsed traffic file.
#[derive(Debug, Clone, PartialEq)]
pub struct Traffic {
    pub duration_ps: u64,
    pub link: LinkParams,
    pub arbiter: ArbiterOptions,
    pub requests: Vec<Request>,
}

/// A host as the topology names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRef {
    pub name: String,
    pub port: PortAddr,
    pub lid: u16,
}

/// How node names in a traffic file become hosts: the caller knows the topology.
pub trait HostDirectory {
    /// The host called `name`, or why there is none (not in the topology, a switch, ...).
    fn find(&self, name: &str) -> Result<HostRef, String>;
    /// Every host, in topology order.
    fn all(&self) -> Vec<HostRef>;
}

/// Reads a traffic file from bytes; `file` names it in messages. The fuzzing entry point.
pub fn parse(file: &str, bytes: &[u8]) -> Result<Traffic, TrafficError> {
    let error = |span: Range<usize>, kind| {
        Located::new(Location::in_source(file, bytes, span.start, span.end), kind)
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let at = e.valid_up_to();
        error(at..at + 1, TrafficErrorKind::NotUtf8)
    })?;
    let raw: RawTraffic = toml::from_str(text).map_err(|e| {
        error(
            e.span().unwrap_or(0..0),
            TrafficErrorKind::Toml(e.message().trim().to_owned()),
        )
    })?;
    Reader { file, text }.traffic(raw)
}

struct Reader<'a> {
    file: &'a str,
    text: &'a str,
}

impl Reader<'_> {
    fn error(&self, span: Range<usize>, kind: TrafficErrorKind) -> TrafficError {
        Located::new(self.at(span), kind)
    }

    fn at(&self, span: Range<usize>) -> Location {
        Location::in_source(self.file, self.text.as_bytes(), span.start, span.end)
    }

    fn traffic(&self, raw: RawTraffic) -> Result<Traffic, TrafficError> {
        let duration = &raw.duration_us;
        let duration_ps = self.time(duration, "duration_us", PS_PER_US)?;
        if duration_ps == 0 {
            return Err(self.error(duration.span(), TrafficErrorKind::ZeroDuration));
        }
        let link = self.link(&raw.link)?;
        let mut requests = Vec::new();
        for flow in &raw.flow {
            let packets = self.packets(
                &flow.sl,
                &flow.payload,
                &flow.rate_gbps,
                &flow.start_us,
                &flow.stop_us,
                flow.management,
            )?;
            requests.push(Request::Flow {
                name: flow.name.clone(),
                src: self.name(&flow.src),
                dst: self.name(&flow.dst),
                packets,
            });
        }
        for pattern in &raw.pattern {
            let packets = self.packets(
                &pattern.sl,
                &pattern.payload,
                &pattern.rate_gbps,
                &pattern.start_us,
                &pattern.stop_us,
                pattern.management,
            )?;
            let at = self.at(pattern.payload.span());
            match (pattern.kind, &pattern.dst) {
                (PatternKind::Incast, None) => {
                    return Err(
                        self.error(pattern.payload.span(), TrafficErrorKind::IncastWithoutDst)
                    );
                }
                (PatternKind::AllToAll | PatternKind::Permutation, Some(dst)) => {
                    return Err(self.error(dst.span(), TrafficErrorKind::DstWithoutIncast));
                }
                _ => {}
            }
            requests.push(Request::Pattern {
                kind: pattern.kind,
                name: pattern.name.clone(),
                nodes: pattern
                    .nodes
                    .as_ref()
                    .map(|n| n.get_ref().iter().map(|s| self.name(s)).collect()),
                dst: pattern.dst.as_ref().map(|d| self.name(d)),
                packets,
                at,
            });
        }
        if requests.is_empty() {
            return Err(self.error(0..0, TrafficErrorKind::NoTraffic));
        }
        let traffic = Traffic {
            duration_ps,
            link,
            arbiter: raw.arbiter,
            requests,
        };
        self.check_buffer(&traffic, &raw.link)?;
        Ok(traffic)
    }

    fn name(&self, name: &Spanned<String>) -> NodeName {
        NodeName {
            name: name.get_ref().clone(),
            at: self.at(name.span()),
        }
    }

    /// A time field in `unit`s (ps per unit given) as picoseconds.
    fn time(
        &self,
        value: &Spanned<f64>,
        field: &'static str,
        ps_per_unit: u64,
    ) -> Result<u64, TrafficError> {
        let v = *value.get_ref();
        let limit = MAX_US * (PS_PER_US / ps_per_unit) as f64;
        if !v.is_finite() || !(0.0..=limit).contains(&v) {
            let unit = if ps_per_unit == PS_PER_US { "us" } else { "ns" };
            return Err(self.error(
                value.span(),
                TrafficErrorKind::BadTime {
                    field,
                    value: v,
                    unit,
                },
            ));
        }
        Ok((v * ps_per_unit as f64).round() as u64)
    }

    fn link(&self, raw: &RawLink) -> Result<LinkParams, TrafficError> {
        let optional_time = |value: &Option<Spanned<f64>>, field, default_ns: u64| {
            value.as_ref().map_or(Ok(default_ns * PS_PER_NS), |v| {
                self.time(v, field, PS_PER_NS)
            })
        };
        let vl_buffer_blocks = match &raw.vl_buffer_bytes {
            None => 65_536 / BLOCK_BYTES,
            Some(bytes) => {
                let b = *bytes.get_ref();
                if !(i64::from(BLOCK_BYTES)..=1 << 30).contains(&b) {
                    return Err(self.error(bytes.span(), TrafficErrorKind::BadBuffer(b)));
                }
                (b / i64::from(BLOCK_BYTES)) as u32
            }
        };
        Ok(LinkParams {
            speed: raw.speed.unwrap_or(Speed::Qdr),
            width: raw.width.unwrap_or(Width::X4),
            propagation_ps: optional_time(&raw.propagation_ns, "propagation_ns", 5)?,
            vl_buffer_blocks,
            credit_latency_ps: optional_time(&raw.credit_latency_ns, "credit_latency_ns", 100)?,
        })
    }

    fn packets(
        &self,
        sl: &Option<Spanned<i64>>,
        payload: &Spanned<i64>,
        rate: &Option<Spanned<f64>>,
        start: &Option<Spanned<f64>>,
        stop: &Option<Spanned<f64>>,
        management: bool,
    ) -> Result<Packets, TrafficError> {
        let sl = match sl {
            None => Sl::ALL[0],
            Some(s) => u8::try_from(*s.get_ref())
                .ok()
                .and_then(Sl::new)
                .ok_or_else(|| self.error(s.span(), TrafficErrorKind::BadSl(*s.get_ref())))?,
        };
        let p = *payload.get_ref();
        let payload_bytes = u32::try_from(p)
            .ok()
            .filter(|b| (1..=MAX_PAYLOAD).contains(b))
            .ok_or_else(|| self.error(payload.span(), TrafficErrorKind::BadPayload(p)))?;
        if management && payload_bytes > MAX_MANAGEMENT_PAYLOAD {
            return Err(self.error(
                payload.span(),
                TrafficErrorKind::BadManagementPayload(payload_bytes),
            ));
        }
        let rate_bps = match rate {
            None => 0,
            Some(r) => {
                let g = *r.get_ref();
                if !g.is_finite() || !(0.0..=1e6).contains(&g) {
                    return Err(self.error(r.span(), TrafficErrorKind::BadRate(g)));
                }
                (g * 1e9).round() as u64
            }
        };
        let start_ps = match start {
            None => 0,
            Some(s) => self.time(s, "start_us", PS_PER_US)?,
        };
        let stop_ps = match stop {
            None => None,
            Some(s) => {
                let ps = self.time(s, "stop_us", PS_PER_US)?;
                if ps < start_ps {
                    return Err(self.error(
                        s.span(),
                        TrafficErrorKind::StopBeforeStart {
                            start: start_ps as f64 / PS_PER_US as f64,
                            stop: *s.get_ref(),
                        },
                    ));
                }
                Some(ps)
            }
        };
        Ok(Packets {
            sl,
            payload: payload_bytes,
            rate_bps,
            start_ps,
            stop_ps,
            management,
        })
    }

    /// Every data packet must fit a receive buffer, or its flow could never send.
    fn check_buffer(&self, traffic: &Traffic, raw: &RawLink) -> Result<(), TrafficError> {
        let largest = traffic
            .requests
            .iter()
            .map(Request::packets)
            .filter(|p| !p.management)
            .map(|p| p.payload)
            .max();
        let blocks = traffic.link.vl_buffer_blocks;
        match largest {
            Some(payload) if wire_blocks(payload) > blocks => {
                let span = raw.vl_buffer_bytes.as_ref().map_or(0..0, Spanned::span);
                Err(self.error(
                    span,
                    TrafficErrorKind::BufferTooSmall {
                        bytes: u64::from(blocks) * u64::from(BLOCK_BYTES),
                        blocks,
                        payload,
                        needed: wire_blocks(payload),
                    },
                ))
            }
            _ => Ok(()),
        }
    }
}

impl Request {
    fn packets(&self) -> &Packets {
        match self {
            Request::Flow { packets, .. } | Request::Pattern { packets, .. } => packets,
        }
    }
}

impl Traffic {
    fn host(&self, hosts: &dyn HostDirectory, name: &NodeName) -> Result<HostRef, TrafficError> {
        hosts.find(&name.name).map_err(|reason| {
            Located::new(
                name.at.clone(),
                TrafficErrorKind::UnknownNode {
                    name: name.name.clone(),
                    reason,
                },
            )
        })
    }

    /// The flows the file asks for, in file order (flows, then patterns), with node names
    /// resolved; `seed` draws the permutations.
    pub fn flows(&self, hosts: &dyn HostDirectory, seed: u64) -> Result<Vec<Flow>, TrafficError> {
        let mut flows = Vec::new();
        for request in &self.requests {
            match request {
                Request::Flow {
                    name,
                    src,
                    dst,
                    packets,
                } => {
                    let (s, d) = (self.host(hosts, src)?, self.host(hosts, dst)?);
                    if s.port == d.port {
                        return Err(Located::new(
                            dst.at.clone(),
                            TrafficErrorKind::SelfFlow(d.name),
                        ));
                    }
                    let name = name
                        .clone()
                        .unwrap_or_else(|| format!("{}->{}", s.name, d.name));
                    flows.push(self.flow(name, &s, &d, packets));
                }
                Request::Pattern {
                    kind,
                    name,
                    nodes,
                    dst,
                    packets,
                    at,
                } => {
                    let members = match nodes {
                        Some(names) => names.iter().map(|n| self.host(hosts, n)).collect::<Result<
                            Vec<_>,
                            _,
                        >>(
                        )?,
                        None => hosts.all(),
                    };
                    let prefix = name.as_deref().unwrap_or(kind.name());
                    let pairs = match (kind, dst) {
                        (PatternKind::Incast, Some(dst)) => {
                            let d = self.host(hosts, dst)?;
                            members
                                .iter()
                                .filter(|s| s.port != d.port)
                                .map(|s| (s.clone(), d.clone()))
                                .collect()
                        }
                        _ if members.len() < 2 => {
                            return Err(Located::new(
                                at.clone(),
                                TrafficErrorKind::TooFewNodes(kind.name()),
                            ));
                        }
                        (PatternKind::Permutation, _) => {
                            let order = cyclic_permutation(members.len(), seed);
                            members
                                .iter()
                                .zip(order)
                                .map(|(s, d)| (s.clone(), members[d].clone()))
                                .collect()
                        }
                        _ => members
                            .iter()
                            .flat_map(|s| {
                                members
                                    .iter()
                                    .filter(move |d| d.port != s.port)
                                    .map(move |d| (s.clone(), d.clone()))
                            })
                            .collect::<Vec<_>>(),
                    };
                    for (s, d) in pairs {
                        let name = format!("{prefix}:{}->{}", s.name, d.name);
                        flows.push(self.flow(name, &s, &d, packets));
                    }
                }
            }
        }
        Ok(flows)
    }

    fn flow(&self, name: String, src: &HostRef, dst: &HostRef, packets: &Packets) -> Flow {
        Flow {
            name,
            src: src.port,
            dlid: dst.lid,
            dst_name: dst.name.clone(),
            sl: packets.sl,
            payload: packets.payload,
            rate_bps: packets.rate_bps,
            start_ps: packets.start_ps,
            stop_ps: packets.stop_ps.unwrap_or(self.duration_ps),
            management: packets.management,
        }
    }
}

/// A random permutation of `0..n` that is one cycle (Sattolo's algorithm), so nobody sends to
/// itself; drawn from `seed`.
fn cyclic_permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (mix(seed, i as u64) % i as u64) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
duration_us = 200
[link]
speed = "QDR"
width = 4
propagation_ns = 5
vl_buffer_bytes = 65536
credit_latency_ns = 100
[[flow]]
name = "storage"
src = "H1"
dst = "H3"
sl = 1
payload = 4096
rate_gbps = 0
start_us = 0
stop_us = 200
"#;

    struct Three;
    impl HostDirectory for Three {
        fn find(&self, name: &str) -> Result<HostRef, String> {
            self.all()
                .into_iter()
                .find(|h| h.name == name)
                .ok_or_else(|| "not a host in the topology".to_owned())
        }
        fn all(&self) -> Vec<HostRef> {
            (1..=3)
                .map(|i| HostRef {
                    name: format!("H{i}"),
                    port: PortAddr { node: i, port: 1 },
                    lid: i as u16,
                })
                .collect()
        }
    }

    fn error_of(text: &str) -> TrafficError {
        parse("t.toml", text.as_bytes()).unwrap_err()
    }

    #[test]
    fn reads_the_documented_example() {
        let traffic = parse("t.toml", GOOD.as_bytes()).unwrap();
        assert_eq!(traffic.duration_ps, 200 * PS_PER_US);
        assert_eq!(traffic.link.vl_buffer_blocks, 1024);
        let flows = traffic.flows(&Three, 0).unwrap();
        assert_eq!(flows.len(), 1);
        assert_eq!((flows[0].dlid, flows[0].payload), (3, 4096));
    }

    /// Each kind of bad input: one message, at the right place.
    #[test]
    fn bad_input_is_located() {
        let cases: &[(&str, &str, &str)] = &[
            ("sl = 1", "sl = 16", "t.toml:13:6: SL 16 is out of range"),
            (
                "payload = 4096",
                "payload = 0",
                "t.toml:14:11: payload 0 is out",
            ),
            (
                "payload = 4096",
                "payload = 4097",
                "t.toml:14:11: payload 4097",
            ),
            (
                "duration_us = 200",
                "duration_us = 0",
                "t.toml:2:15: duration_us must be",
            ),
            ("\"QDR\"", "\"XDR\"", "t.toml:4:9: unknown variant `XDR`"),
            (
                "width = 4",
                "width = 3",
                "t.toml:5:9: link width 3 does not exist",
            ),
            (
                "stop_us = 200",
                "stop_us = 200\ncolour = 1",
                "t.toml:18:1: unknown field `colour`",
            ),
            (
                "rate_gbps = 0",
                "rate_gbps = -1",
                "t.toml:15:13: rate_gbps = -1",
            ),
            (
                "vl_buffer_bytes = 65536",
                "vl_buffer_bytes = 4096",
                "t.toml:7:19: vl_buffer_bytes = 4096 holds 64 credits, but a 4096-byte packet needs 65",
            ),
            (
                "start_us = 0",
                "start_us = 300",
                "t.toml:17:11: stop_us (200) is before start_us (300)",
            ),
        ];
        for (from, to, expected) in cases {
            let err = error_of(&GOOD.replacen(from, to, 1)).to_string();
            assert!(err.starts_with(expected), "{to}: {err}");
        }
        let unknown = parse("t.toml", GOOD.replace("\"H3\"", "\"H9\"").as_bytes())
            .unwrap()
            .flows(&Three, 0)
            .unwrap_err()
            .to_string();
        assert_eq!(
            unknown,
            "t.toml:12:7: unknown node `H9`: not a host in the topology"
        );
        assert!(
            error_of("duration_us = 1")
                .to_string()
                .contains("nothing to simulate")
        );
        assert_eq!(
            parse("t.toml", b"\xff").unwrap_err().what,
            TrafficErrorKind::NotUtf8
        );
    }

    #[test]
    fn patterns_expand() {
        let text = r#"
duration_us = 10
[[pattern]]
kind = "all-to-all"
payload = 256
[[pattern]]
kind = "incast"
dst = "H1"
payload = 256
[[pattern]]
kind = "permutation"
payload = 256
"#;
        let traffic = parse("p.toml", text.as_bytes()).unwrap();
        let flows = traffic.flows(&Three, 7).unwrap();
        let names: Vec<&str> = flows.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            &names[..6],
            &[
                "all-to-all:H1->H2",
                "all-to-all:H1->H3",
                "all-to-all:H2->H1",
                "all-to-all:H2->H3",
                "all-to-all:H3->H1",
                "all-to-all:H3->H2",
            ]
        );
        assert_eq!(&names[6..8], &["incast:H2->H1", "incast:H3->H1"]);
        // A permutation: everyone sends once, receives once, never to itself.
        let perm = &flows[8..];
        assert_eq!(perm.len(), 3);
        let mut dsts: Vec<u16> = perm.iter().map(|f| f.dlid).collect();
        assert!(perm.iter().all(|f| f.src.node != usize::from(f.dlid)));
        dsts.sort();
        assert_eq!(dsts, vec![1, 2, 3]);
        let bad = parse(
            "p.toml",
            text.replace("kind = \"incast\"\ndst = \"H1\"", "kind = \"incast\"")
                .as_bytes(),
        );
        assert_eq!(bad.unwrap_err().what, TrafficErrorKind::IncastWithoutDst);
    }

    #[test]
    fn cyclic_permutations_have_no_fixed_points() {
        for seed in 0..20 {
            let p = cyclic_permutation(7, seed);
            assert!(p.iter().enumerate().all(|(i, &d)| i != d), "{p:?}");
        }
    }
}
