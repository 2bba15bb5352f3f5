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
//! rate_gbps = 0               # 0 = as fast as the fabric allows, else 1e-9 (1 b/s) up
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
//!
//! `[congestion_control]` (credit runs only): [`crate::cc::CcConfig`] under OpenSM's option
//! names (`cc_sw_cong_setting_threshold`, `_marking_rate`, `_packet_size`, `_victim_mask`,
//! `cc_ca_cong_setting_port_control`, `_control_map`, `_ccti_timer`, `_ccti_increase` and
//! `_ccti_min` as lists by SL, `cc_cct`), each problem at its key.
//!
//! # Lossless Ethernet
//! `[link] flow_control = "pfc"` makes every link lossless Ethernet (the engine's module docs
//! give the model): `[link] gbps` is the rate (100 by default), `propagation_ns` as above, and
//! `speed`, `width`, `vl_buffer_bytes` and `credit_latency_ns` are errors. A flow or pattern
//! gives `priority` (0-7, its PCP) or `dscp` (0-63), or neither (RDMA without a priority, sent
//! with `DscpForGlobalFlowControl`); the `[host]` settings turn that into its priority. `sl` and
//! `management` are errors. Five sections, each read into its model's configuration and
//! checked, every problem located at the key it is about (and each an error on a credit run):
//! - `[pfc]`: [`crate::pfc::PfcConfig`] (`mode`, `priorities`, `pause_quanta`,
//!   `refresh_quanta`, `pfc_delay`, `response_quanta`, `processing_delay_ns`), every port;
//! - `[buffer]`: [`crate::shared_buffer::BufferConfig`] in Onyx's terms (`shared_buffer_bytes`,
//!   `pool`, `priority_pg`, `priority_tc`, `pg`, `tc`, `iport`, `eport`), every switch;
//! - `[ets]`: [`crate::ets::EtsConfig`] in ExtremeXOS's terms (`qosscheduler`, `wdrr-method`,
//!   `dot1p`, `rate-burst-bytes`, `[ets.qpN]` with `weight`, `use-strict-priority`, `minbw`,
//!   `maxbw`, `committed_rate`, `peak_rate`), every port;
//! - `[host]`: [`crate::host_qos::HostQos`] under the ConnectX registry names
//!   (`RxTrustedState`, `DefaultUntaggedPriority`, `DscpBasedEtsEnabled`,
//!   `DscpToPriorityMappingTable_N`, `PriorityToDscpMappingTable_N`,
//!   `DscpForGlobalFlowControl`), every host;
//! - `[[storm]]`: a host (`host`) that keeps priorities paused, [`crate::pfc::PauseStormConfig`]
//!   (`priorities`, `quanta`, `interval_quanta`, `start_us`, `stop_us`);
//! - `[ecn]`: [`crate::dcqcn::EcnConfig`] (`kmin_bytes`, `kmax_bytes`, `pmax`), ECN marking at
//!   every switch egress queue (no defaults: the ConnectX document has no switch thresholds);
//! - `[dcqcn]`: [`crate::dcqcn::DcqcnConfig`] under the ConnectX registry names
//!   (`DcqcnRpgTimeReset`, `DcqcnRpgByteReset`, `DcqcnRpgThreshold`, `DcqcnRpgAiRate`,
//!   `DcqcnRpgHaiRate`, `DcqcnAlphaToRateShift`, `DcqcnRpgMinDecFac`, `DcqcnRpgMinRate`,
//!   `DcqcnRateToSetOnFirstCnp`, `DcqcnDceTcpG`, `DcqcnDceTcpRtt`,
//!   `DcqcnRateReduceMonitorPeriod`, `DcqcnInitialAlphaValue`, `DcqcnClampTgtRate`,
//!   `DcqcnClampTgtRateAfterTimeInc`, `DcqcnRPEnablePrioN`, `DcqcnNPEnablePrioN`,
//!   `DcqcnCnpDscp`, `DcqcnCnp802pPrio`, `DcqcnCnpPrioMode`, `min_time_between_cnps`), every
//!   host: its notification point answers marked frames with CNPs and its reaction point paces
//!   its greedy flows. It needs `[ecn]` (without marks it would never act).
//!
//! A complete example (examples/sim/roce-traffic.toml):
//!

#![doc = concat!("```toml\n", include_str!("../../../examples/sim/roce-traffic.toml"), "```")]

use std::ops::Range;
use std::sync::Arc;

use serde::Deserialize;
use toml::Spanned;

use ibqos_qos::Sl;
use ibqos_text::{Code, Coded, Located, Location, Severity};

use crate::ethernet::dcqcn::{DcqcnConfig, DcqcnConfigError, EcnConfig, EcnConfigError};
use crate::ethernet::ets::{EtsConfig, EtsError};
use crate::ethernet::host_qos::{HostQos, HostQosError};
use crate::ethernet::pfc::{PauseStormConfig, PfcConfig, PfcError};
use crate::ethernet::shared_buffer::{BufferConfig, BufferError};
use crate::infiniband::arbiter::{ArbiterOptions, BLOCK_BYTES};
use crate::infiniband::cc::{CcConfig, CcConfigError, CcParams};
use crate::infiniband::link::{
    LinkParams, MAX_PAYLOAD, PS_PER_NS, PS_PER_US, Speed, Width, wire_blocks,
};
use crate::network::{Ethernet, Flow, PortAddr, Storm};
use crate::random::mix;

mod ethernet;

use ethernet::Step;

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
    #[error(
        "rate_gbps = {0} is below 1 b/s, which rounds to 0, and 0 means as fast as the fabric \
         allows: give 1e-9 or more, or 0 for no limit"
    )]
    RateRoundsToZero(f64),
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
    #[error("`{key}` is {owner}")]
    WrongFlowControl {
        key: &'static str,
        /// Whose key it is, and what to give instead.
        owner: &'static str,
    },
    #[error("gbps = {0} is not a link rate: give Gb/s above 0, up to 1e6")]
    BadGbps(f64),
    #[error("priority {0} is out of range: an Ethernet priority is 0-7")]
    BadPriority(i64),
    #[error("dscp {0} is out of range: a DSCP is 0-63")]
    BadDscp(i64),
    #[error("give a flow `priority` or `dscp`, not both")]
    PriorityAndDscp,
    #[error("{0}")]
    Ethernet(EthernetError),
    #[error("[congestion_control]: {0}")]
    CongestionControl(CcConfigError),
}

/// An impossible lossless-Ethernet setting, as the module that checks it words it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EthernetError {
    #[error("[pfc]: {0}")]
    Pfc(PfcError),
    #[error("[[storm]]: {0}")]
    Storm(PfcError),
    #[error("[buffer]: {0}")]
    Buffer(BufferError),
    #[error("[ets]: {0}")]
    Ets(EtsError),
    #[error("[host]: {0}")]
    Host(HostQosError),
    #[error("[dcqcn]: {0}")]
    Dcqcn(DcqcnConfigError),
    #[error("[ecn]: {0}")]
    Ecn(EcnConfigError),
    #[error(
        "[dcqcn] needs [ecn] (kmin_bytes, kmax_bytes, pmax): without ECN marks DCQCN never acts"
    )]
    DcqcnWithoutEcn,
}

impl Coded for TrafficErrorKind {
    fn code(&self) -> Code {
        match self {
            TrafficErrorKind::NotUtf8 => Code::NotUtf8,
            TrafficErrorKind::Toml(_) => Code::InvalidToml,
            TrafficErrorKind::ZeroDuration => Code::ZeroDuration,
            TrafficErrorKind::BadTime { .. } => Code::BadTime,
            TrafficErrorKind::BadRate(_) | TrafficErrorKind::RateRoundsToZero(_) => Code::BadRate,
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
            TrafficErrorKind::WrongFlowControl { .. } => Code::WrongFlowControl,
            TrafficErrorKind::BadGbps(_) => Code::BadRate,
            TrafficErrorKind::BadPriority(_) => Code::PriorityOutOfRange,
            TrafficErrorKind::BadDscp(_) => Code::DscpOutOfRange,
            TrafficErrorKind::PriorityAndDscp => Code::PriorityAndDscp,
            TrafficErrorKind::Ethernet(_) => Code::InvalidEthernetSetting,
            TrafficErrorKind::CongestionControl(_) => Code::InvalidCongestionControlSetting,
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

/// How every link of a run is flow-controlled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowControl {
    /// InfiniBand credits.
    #[default]
    Credit,
    /// Lossless Ethernet: IEEE 802.1Qbb priority flow control.
    Pfc,
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
    pfc: Option<Spanned<PfcConfig>>,
    buffer: Option<Spanned<BufferConfig>>,
    ets: Option<Spanned<EtsConfig>>,
    host: Option<Spanned<HostQos>>,
    #[serde(default)]
    storm: Vec<Spanned<RawStorm>>,
    dcqcn: Option<Spanned<DcqcnConfig>>,
    ecn: Option<Spanned<EcnConfig>>,
    congestion_control: Option<Spanned<CcConfig>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLink {
    flow_control: Option<Spanned<FlowControl>>,
    gbps: Option<Spanned<f64>>,
    speed: Option<Spanned<Speed>>,
    width: Option<Spanned<Width>>,
    propagation_ns: Option<Spanned<f64>>,
    vl_buffer_bytes: Option<Spanned<i64>>,
    credit_latency_ns: Option<Spanned<f64>>,
}

/// A `[[storm]]`: the host that sends it, and the storm's own settings, read into
/// [`PauseStormConfig`] apart (which refuses unknown keys: flattened, it could not).
#[derive(Debug, Deserialize)]
struct RawStorm {
    host: Spanned<String>,
    #[serde(flatten)]
    pause: toml::Table,
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
    management: Option<Spanned<bool>>,
    priority: Option<Spanned<i64>>,
    dscp: Option<Spanned<i64>>,
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
    management: Option<Spanned<bool>>,
    priority: Option<Spanned<i64>>,
    dscp: Option<Spanned<i64>>,
}

/// What a flow and a pattern say about their packets, as written.
struct RawPackets<'r> {
    sl: &'r Option<Spanned<i64>>,
    payload: &'r Spanned<i64>,
    rate: &'r Option<Spanned<f64>>,
    start: &'r Option<Spanned<f64>>,
    stop: &'r Option<Spanned<f64>>,
    management: &'r Option<Spanned<bool>>,
    priority: &'r Option<Spanned<i64>>,
    dscp: &'r Option<Spanned<i64>>,
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
    /// Ethernet: the priority (PCP) the flow is sent with, or its DSCP; neither, an RDMA
    /// flow without a priority (sent with `DscpForGlobalFlowControl`).
    pub priority: Option<u8>,
    pub dscp: Option<u8>,
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
    /// `flow_control = "pfc"`: the Ethernet settings, each section checked.
    pub ethernet: Option<EthernetSettings>,
    /// `[congestion_control]`: InfiniBand congestion control, checked; `None` when not given.
    pub congestion_control: Option<CcParams>,
}

/// A `pfc` run's settings, storm hosts not yet resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct EthernetSettings {
    pub link_bps: u64,
    pub pfc: PfcConfig,
    pub buffer: BufferConfig,
    pub ets: EtsConfig,
    pub host: HostQos,
    pub storms: Vec<(NodeName, PauseStormConfig)>,
    /// DCQCN at every host, and ECN marking at every switch; `None` when not given.
    pub dcqcn: Option<DcqcnConfig>,
    pub ecn: Option<EcnConfig>,
}

/// A host as the topology names it (the name shared by every flow to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRef {
    pub name: Arc<str>,
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
        let pfc = raw
            .link
            .flow_control
            .as_ref()
            .is_some_and(|f| *f.get_ref() == FlowControl::Pfc);
        let link = self.link(&raw.link, pfc)?;
        let ethernet = if pfc {
            Some(self.ethernet(&raw)?)
        } else {
            self.no_ethernet_sections(&raw)?;
            None
        };
        let congestion_control = self.congestion_control(&raw, pfc)?;
        let mut requests = Vec::new();
        for flow in &raw.flow {
            let packets = self.packets(
                RawPackets {
                    sl: &flow.sl,
                    payload: &flow.payload,
                    rate: &flow.rate_gbps,
                    start: &flow.start_us,
                    stop: &flow.stop_us,
                    management: &flow.management,
                    priority: &flow.priority,
                    dscp: &flow.dscp,
                },
                pfc,
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
                RawPackets {
                    sl: &pattern.sl,
                    payload: &pattern.payload,
                    rate: &pattern.rate_gbps,
                    start: &pattern.start_us,
                    stop: &pattern.stop_us,
                    management: &pattern.management,
                    priority: &pattern.priority,
                    dscp: &pattern.dscp,
                },
                pfc,
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
            ethernet,
            congestion_control,
        };
        if !pfc {
            self.check_buffer(&traffic, &raw.link)?;
        }
        Ok(traffic)
    }

    /// `[congestion_control]` checked, each problem at its key; refused on an Ethernet run.
    fn congestion_control(
        &self,
        raw: &RawTraffic,
        pfc: bool,
    ) -> Result<Option<CcParams>, TrafficError> {
        let Some(section) = &raw.congestion_control else {
            return Ok(None);
        };
        if pfc {
            return Err(self.wrong_key(section.span(), "[congestion_control]", true));
        }
        let params = section.get_ref().params().map_err(|e| {
            let path = [Step::Key("congestion_control"), Step::Key(e.key())];
            self.error(self.locate(&path), TrafficErrorKind::CongestionControl(e))
        })?;
        Ok(Some(params))
    }

    /// A key given that the run's flow control does not have.
    fn wrong_key(&self, span: Range<usize>, key: &'static str, pfc: bool) -> TrafficError {
        let owner = if pfc {
            "an InfiniBand (flow_control = \"credit\") setting: an Ethernet run has none (a link's rate is `gbps`, a flow's class its `priority` or `dscp`)"
        } else {
            "for lossless Ethernet: give [link] flow_control = \"pfc\" to use it"
        };
        self.error(span, TrafficErrorKind::WrongFlowControl { key, owner })
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

    fn link(&self, raw: &RawLink, pfc: bool) -> Result<LinkParams, TrafficError> {
        let spans = [
            ("speed", raw.speed.as_ref().map(Spanned::span)),
            ("width", raw.width.as_ref().map(Spanned::span)),
            (
                "vl_buffer_bytes",
                raw.vl_buffer_bytes.as_ref().map(Spanned::span),
            ),
            (
                "credit_latency_ns",
                raw.credit_latency_ns.as_ref().map(Spanned::span),
            ),
        ];
        if let Some((key, span)) = spans
            .into_iter()
            .find_map(|(key, span)| Some((key, span?)))
            .filter(|_| pfc)
        {
            return Err(self.wrong_key(span, key, true));
        }
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
            speed: raw.speed.as_ref().map_or(Speed::Qdr, |s| *s.get_ref()),
            width: raw.width.as_ref().map_or(Width::X4, |w| *w.get_ref()),
            propagation_ps: optional_time(&raw.propagation_ns, "propagation_ns", 5)?,
            vl_buffer_blocks,
            credit_latency_ps: optional_time(&raw.credit_latency_ns, "credit_latency_ns", 100)?,
        })
    }

    fn packets(&self, raw: RawPackets<'_>, pfc: bool) -> Result<Packets, TrafficError> {
        let RawPackets {
            sl,
            payload,
            rate,
            start,
            stop,
            management,
            priority,
            dscp,
        } = raw;
        let spans = [
            ("sl", sl.as_ref().map(Spanned::span)),
            ("management", management.as_ref().map(Spanned::span)),
            ("priority", priority.as_ref().map(Spanned::span)),
            ("dscp", dscp.as_ref().map(Spanned::span)),
        ];
        // sl and management are InfiniBand's, priority and dscp Ethernet's.
        let wrong = spans
            .into_iter()
            .enumerate()
            .find_map(|(i, (key, span))| Some((key, span.filter(|_| (i >= 2) != pfc)?)));
        if let Some((key, span)) = wrong {
            return Err(self.wrong_key(span, key, pfc));
        }
        if let (Some(_), Some(d)) = (priority, dscp) {
            return Err(self.error(d.span(), TrafficErrorKind::PriorityAndDscp));
        }
        let ranged =
            |value: &Option<Spanned<i64>>, highest: i64, kind: fn(i64) -> TrafficErrorKind| {
                value
                    .as_ref()
                    .map(|v| {
                        let n = *v.get_ref();
                        u8::try_from(n)
                            .ok()
                            .filter(|_| (0..=highest).contains(&n))
                            .ok_or_else(|| self.error(v.span(), kind(n)))
                    })
                    .transpose()
            };
        let priority = ranged(priority, 7, TrafficErrorKind::BadPriority)?;
        let dscp = ranged(dscp, 63, TrafficErrorKind::BadDscp)?;
        let management = management.as_ref().is_some_and(|m| *m.get_ref());
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
                let bps = (g * 1e9).round() as u64;
                // A rate is paced in whole bits per second, and 0 is "no limit".
                if bps == 0 && g > 0.0 {
                    return Err(self.error(r.span(), TrafficErrorKind::RateRoundsToZero(g)));
                }
                bps
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
            priority,
            dscp,
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
                            TrafficErrorKind::SelfFlow(d.name.to_string()),
                        ));
                    }
                    let name = name
                        .clone()
                        .unwrap_or_else(|| format!("{}->{}", s.name, d.name));
                    flows.push(self.flow(name.into(), &s, &d, packets));
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
                    // One buffer for every name, each flow's shared name made from it:
                    // `format!` grew a new string piece by piece for each, which was half of
                    // making an all-to-all's flows.
                    let mut name = String::new();
                    let mut add = |s: &HostRef, d: &HostRef| {
                        name.clear();
                        for part in [prefix, ":", &s.name, "->", &d.name] {
                            name.push_str(part);
                        }
                        flows.push(self.flow(name.as_str().into(), s, d, packets));
                    };
                    match (kind, dst) {
                        (PatternKind::Incast, Some(dst)) => {
                            let d = self.host(hosts, dst)?;
                            for s in members.iter().filter(|s| s.port != d.port) {
                                add(s, &d);
                            }
                        }
                        _ if members.len() < 2 => {
                            return Err(Located::new(
                                at.clone(),
                                TrafficErrorKind::TooFewNodes(kind.name()),
                            ));
                        }
                        (PatternKind::Permutation, _) => {
                            let order = cyclic_permutation(members.len(), seed);
                            for (s, d) in members.iter().zip(order) {
                                add(s, &members[d]);
                            }
                        }
                        _ => {
                            for s in &members {
                                for d in members.iter().filter(|d| d.port != s.port) {
                                    add(s, d);
                                }
                            }
                        }
                    }
                }
            }
        }
        Ok(flows)
    }

    /// The Ethernet settings with each storm's host resolved to its port; `None` on a credit
    /// run.
    pub fn ethernet(&self, hosts: &dyn HostDirectory) -> Result<Option<Ethernet>, TrafficError> {
        let Some(settings) = &self.ethernet else {
            return Ok(None);
        };
        let storms = settings
            .storms
            .iter()
            .map(|(host, config)| {
                Ok(Storm {
                    port: self.host(hosts, host)?.port,
                    config: config.clone(),
                })
            })
            .collect::<Result<_, TrafficError>>()?;
        Ok(Some(Ethernet {
            link_bps: settings.link_bps,
            pfc: settings.pfc.clone(),
            buffer: settings.buffer.clone(),
            ets: settings.ets.clone(),
            host: settings.host,
            storms,
            dcqcn: settings.dcqcn,
            ecn: settings.ecn,
        }))
    }

    fn flow(&self, name: Arc<str>, src: &HostRef, dst: &HostRef, packets: &Packets) -> Flow {
        // On Ethernet the class is the priority the source host's QoS settings give: a tagged
        // flow's PCP (sent with its DSCP), or an untagged one's DSCP.
        let sl = match &self.ethernet {
            Some(eth) => {
                let host = &eth.host;
                let dscp = packets
                    .dscp
                    .unwrap_or_else(|| host.tx_dscp(packets.priority));
                let priority = host.rx_priority(packets.priority, dscp);
                Sl::new(priority).unwrap_or(Sl::ALL[0])
            }
            None => packets.sl,
        };
        Flow {
            name,
            src: src.port,
            dlid: dst.lid,
            dst_name: Arc::clone(&dst.name),
            sl,
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

    /// Hosts H1-H`.0` at nodes 1-`.0`, each on port 1 with LID its number: three for most
    /// tests, the star's four for the Ethernet ones.
    struct Hosts(usize);
    impl HostDirectory for Hosts {
        fn find(&self, name: &str) -> Result<HostRef, String> {
            self.all()
                .into_iter()
                .find(|h| &*h.name == name)
                .ok_or_else(|| "not a host in the topology".to_owned())
        }
        fn all(&self) -> Vec<HostRef> {
            (1..=self.0)
                .map(|i| HostRef {
                    name: format!("H{i}").into(),
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
        let flows = traffic.flows(&Hosts(3), 0).unwrap();
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
                "rate_gbps = 0",
                "rate_gbps = 1e-12",
                "t.toml:15:13: rate_gbps = 0.000000000001 is below 1 b/s, which rounds to 0",
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
            .flows(&Hosts(3), 0)
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

    const ETHERNET: &str = r#"
duration_us = 10
[link]
flow_control = "pfc"
gbps = 40
[pfc]
priorities = [3]
refresh_quanta = 1000
[host]
RxTrustedState = 2
[buffer]
priority_pg = [0, 0, 0, 1, 0, 0, 0, 0]
pool = [{ name = "iPool0", size = 1000000, type = "dynamic" }, { name = "ePool0", size = 1000000, type = "dynamic" }]
pg = [
    { pg = 0, pool = "iPool0", type = "lossy", shared = { alpha = "8" } },
    { pg = 1, pool = "iPool0", type = "lossless", reserved = 8000, xoff = 4000, xon = 2000, shared = { alpha = "1" } },
]
tc = [{ tc = 0, pool = "ePool0", shared = { alpha = "8" } }, { tc = 1, pool = "ePool0", shared = { alpha = "8" } }, { tc = 2, pool = "ePool0", shared = { alpha = "8" } }, { tc = 3, pool = "ePool0", shared = { alpha = "8" } }, { tc = 4, pool = "ePool0", shared = { alpha = "8" } }, { tc = 5, pool = "ePool0", shared = { alpha = "8" } }, { tc = 6, pool = "ePool0", shared = { alpha = "8" } }, { tc = 7, pool = "ePool0", shared = { alpha = "8" } }]
iport = [{ pool = "iPool0", shared = { alpha = "8" } }]
eport = [{ pool = "ePool0", shared = { alpha = "8" } }]
[ets]
qosscheduler = "weighted-round-robin"
[ets.qp1]
weight = 1
[[storm]]
host = "H3"
priorities = [3]
start_us = 1
stop_us = 5
[[flow]]
src = "H1"
dst = "H2"
dscp = 24
payload = 1024
"#;

    #[test]
    fn reads_the_ethernet_example_and_gives_flows_their_priorities() {
        let example = include_str!("../../../examples/sim/roce-traffic.toml");
        let traffic = parse("roce.toml", example.as_bytes()).unwrap();
        let eth = traffic.ethernet.as_ref().unwrap();
        assert_eq!(eth.link_bps, 100_000_000_000);
        assert_eq!(eth.pfc.priorities, vec![3]);
        assert_eq!(eth.storms.len(), 1);
        let flows = traffic.flows(&Hosts(4), 0).unwrap();
        let priorities: Vec<u8> = flows.iter().map(|f| f.sl.get()).collect();
        // rdma-1: no class, DSCP 26 (DscpForGlobalFlowControl), table entry 26 -> 3; rdma-2:
        // DSCP 26 -> 3; tcp: PCP 0, sent with DSCP 0 -> 0; lossy-1: DSCP 8 -> 1.
        assert_eq!(priorities, vec![3, 3, 0, 1]);
        let resolved = traffic.ethernet(&Hosts(4)).unwrap().unwrap();
        assert_eq!(resolved.storms[0].port, PortAddr { node: 4, port: 1 });
        // DSCP 24 with the DSCP trusted and the static map: 24 >> 3 = priority 3.
        let small = parse("e.toml", ETHERNET.as_bytes()).unwrap();
        assert_eq!(small.flows(&Hosts(4), 0).unwrap()[0].sl.get(), 3);
    }

    /// Each kind of bad Ethernet input: one message, at the key it is about.
    #[test]
    fn bad_ethernet_input_is_located() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "gbps = 40",
                "speed = \"QDR\"",
                "e.toml:5:9: `speed` is an InfiniBand",
            ),
            (
                "gbps = 40",
                "gbps = 0",
                "e.toml:5:8: gbps = 0 is not a link rate",
            ),
            ("dscp = 24", "sl = 1", "e.toml:33:6: `sl` is an InfiniBand"),
            (
                "dscp = 24",
                "dscp = 64",
                "e.toml:33:8: dscp 64 is out of range",
            ),
            (
                "dscp = 24",
                "priority = 8",
                "e.toml:33:12: priority 8 is out of range",
            ),
            (
                "dscp = 24",
                "dscp = 24\npriority = 1",
                "e.toml:33:8: give a flow `priority` or `dscp`",
            ),
            (
                "refresh_quanta = 1000",
                "refresh_quanta = 0",
                "e.toml:8:1: [pfc]: refresh_quanta = 0 must be",
            ),
            (
                "priorities = [3]\nrefresh",
                "priorities = [9]\nrefresh",
                "e.toml:7:1: [pfc]: priority 9",
            ),
            (
                "RxTrustedState = 2",
                "DscpToPriorityMappingTable_5 = 9",
                "e.toml:10:1: [host]: DscpToPriorityMappingTable_5 = 9 is out of range",
            ),
            (
                "reserved = 8000, xoff = 4000",
                "reserved = 3000, xoff = 4000",
                "e.toml:16:5: [buffer]: iPort.pg1 has xon 2000, xoff 4000, reserved (headroom) 3000",
            ),
            (
                "weight = 1",
                "weight = 0",
                "e.toml:24:1: [ets]: qp1 weight 0 is out of range",
            ),
            (
                "stop_us = 5",
                "stop_us = 0.5",
                "e.toml:29:1: [[storm]]: stop_us (0.5) is before",
            ),
            (
                "stop_us = 5",
                "stop_us = 5\ncolour = 1",
                "e.toml:30:1: [[storm]]: unknown field `colour`",
            ),
            (
                // A wrong type names no key in its message: it is located at the entry.
                "start_us = 1",
                "start_us = \"soon\"",
                "e.toml:25:1: [[storm]]: invalid type: string \"soon\", expected f64",
            ),
        ];
        for (from, to, expected) in cases {
            assert!(ETHERNET.contains(from), "{from}");
            let err = parse("e.toml", ETHERNET.replacen(from, to, 1).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(expected), "{to}: {err}");
        }
        // Ethernet keys on a credit run.
        let credit = |from: &str, to: &str| error_of(&GOOD.replacen(from, to, 1)).to_string();
        assert!(
            credit("sl = 1", "priority = 1")
                .starts_with("t.toml:13:12: `priority` is for lossless Ethernet"),
            "{}",
            credit("sl = 1", "priority = 1")
        );
        assert!(
            credit(
                "credit_latency_ns = 100",
                "credit_latency_ns = 100\n[pfc]\npriorities = [3]"
            )
            .starts_with("t.toml:9:1: `[pfc]` is for lossless Ethernet"),
            "{}",
            credit(
                "credit_latency_ns = 100",
                "credit_latency_ns = 100\n[pfc]\npriorities = [3]"
            )
        );
    }

    /// `[ecn]` and `[dcqcn]`: read under their names, every problem at its key.
    #[test]
    fn dcqcn_and_ecn_are_read_and_bad_values_located() {
        const ECN: &str = "[ecn]\nkmin_bytes = 5000\nkmax_bytes = 200000\npmax = 0.01\n";
        let with = |extra: &str| format!("{ETHERNET}{extra}");
        let good = parse(
            "e.toml",
            with(&format!("{ECN}[dcqcn]\nDcqcnRpgByteReset = 32767\n")).as_bytes(),
        )
        .unwrap();
        let eth = good.ethernet.unwrap();
        assert_eq!(eth.dcqcn.unwrap().rpg_byte_reset, 32_767);
        assert_eq!(eth.dcqcn.unwrap().rpg_time_reset, 100);
        assert_eq!(eth.ecn.unwrap().kmax_bytes, 200_000);
        // ETHERNET ends on line 34: the appended sections start on line 35.
        let cases: &[(String, &str)] = &[
            (
                ECN.replace("5000", "300000"),
                "e.toml:36:1: [ecn]: kmin_bytes = 300000 is above kmax_bytes = 200000",
            ),
            (
                ECN.replace("0.01", "1.5"),
                "e.toml:38:1: [ecn]: pmax = 1.5 is not a probability",
            ),
            (
                format!("{ECN}[dcqcn]\nDcqcnRpgThreshold = 40\n"),
                "e.toml:40:1: [dcqcn]: DcqcnRpgThreshold = 40 is out of range",
            ),
            (
                format!("{ECN}[dcqcn]\nDcqcnRpgByteReset = 0\nDcqcnRpgTimeReset = 0\n"),
                "e.toml:41:1: [dcqcn]: DcqcnRpgTimeReset and DcqcnRpgByteReset are both 0",
            ),
            (
                format!("{ECN}[dcqcn]\nDcqcnRpgColour = 1\n"),
                "e.toml:40:1: unknown field `DcqcnRpgColour`",
            ),
            (
                "[dcqcn]\nDcqcnRpgThreshold = 4\n".to_owned(),
                "e.toml:35:2: [dcqcn] needs [ecn]",
            ),
        ];
        for (extra, expected) in cases {
            let err = parse("e.toml", with(extra).as_bytes())
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(expected), "{extra}: {err}");
        }
        // Both are Ethernet sections: an error on a credit run.
        let credit = error_of(&format!("{GOOD}[dcqcn]\nDcqcnRpgThreshold = 4\n")).to_string();
        assert!(
            credit.contains("`[dcqcn]` is for lossless Ethernet"),
            "{credit}"
        );
        let credit = error_of(&format!("{GOOD}{ECN}")).to_string();
        assert!(
            credit.contains("`[ecn]` is for lossless Ethernet"),
            "{credit}"
        );
    }

    /// `[congestion_control]` is read on a credit run, each bad value at its key, the key
    /// named in the message; an Ethernet run refuses it.
    #[test]
    fn congestion_control_is_read_and_bad_values_located() {
        // The section's header is the line after GOOD's last; its keys follow.
        let lines = GOOD.lines().count();
        let with = |extra: &str| format!("{GOOD}[congestion_control]\n{extra}");
        let good = parse(
            "t.toml",
            with("cc_sw_cong_setting_threshold = 15\ncc_cct = \"0:0,1:4\"\n").as_bytes(),
        )
        .unwrap();
        let cc = good.congestion_control.unwrap();
        assert_eq!((cc.threshold, cc.cct.len()), (15, 2));
        assert!(
            parse("t.toml", GOOD.as_bytes())
                .unwrap()
                .congestion_control
                .is_none()
        );
        let cases = [
            (
                "cc_cct = \"0:0\"\ncc_sw_cong_setting_threshold = 16\n",
                lines + 3,
                "[congestion_control]: cc_sw_cong_setting_threshold = 16 is out of range",
            ),
            (
                "cc_cct = \"0:0,5:1\"\n",
                lines + 2,
                "[congestion_control]: cc_cct entry 1 (\"5:1\")",
            ),
            (
                "cc_cct = \"0:0\"\ncc_ca_cong_setting_ccti_min = [1]\n",
                lines + 3,
                "[congestion_control]: cc_ca_cong_setting_ccti_min of SL 0 is 1",
            ),
        ];
        for (extra, line, expected) in cases {
            let err = error_of(&with(extra));
            let text = err.to_string();
            assert!(
                text.starts_with(&format!("t.toml:{line}:1: {expected}")),
                "{text}"
            );
            assert_eq!(err.what.code(), Code::InvalidCongestionControlSetting);
        }
        let missing = error_of(&with("cc_sw_cong_setting_threshold = 1\n")).to_string();
        assert!(missing.contains("missing field `cc_cct`"), "{missing}");
        let ethernet = parse(
            "e.toml",
            format!("{ETHERNET}[congestion_control]\ncc_cct = \"0:0\"\n").as_bytes(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            ethernet.contains("`[congestion_control]` is an InfiniBand"),
            "{ethernet}"
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
        let flows = traffic.flows(&Hosts(3), 7).unwrap();
        let names: Vec<&str> = flows.iter().map(|f| &*f.name).collect();
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
