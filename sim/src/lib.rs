//! The credit-based link simulator: what a QoS configuration does to traffic.
//!
//! A packet-level discrete-event model of an InfiniBand fabric with integer time (picoseconds),
//! deterministic for a seed. It sees only what [`Network`] describes: nodes with ports, links
//! (speed, width, propagation, per-VL receive buffers in 64-byte credits, credit latency), each
//! port's VL arbitration tables and VLHighLimit, each node's SL-to-VL tables per (input, output)
//! pair and each switch's forwarding table. The engine never sees a topology file or a routing
//! engine: [`build_routed_network`] builds the [`Network`] from a fabric topology, the planner
//! (or the tables a fabric held, from a dump) and the configured routing engines
//! ([`build_network`]: minhop), so the tables and routes are those the SM would program (or did).
//!
//! - [`arbiter`]: the IBA 7.6.9 VL arbiter, its open points as named options;
//! - [`traffic`]: the traffic file (TOML) and the patterns it can generate;
//! - [`pfc`] and [`shared_buffer`]: priority flow control (pause quanta, headroom, the end that
//!   pauses and the end that obeys) and a switch buffer after NVIDIA Onyx (pools, the four
//!   regions, static and dynamic thresholds, headroom). The engine's lossless-Ethernet mode
//!   (`flow_control = "pfc"`, [`Network::ethernet`]) calls them, as it calls [`ets`] and
//!   [`host_qos`]. [`sweep_pfc_delay`] runs the SONiC PFC pause response-time test plan;
//! - [`ets`]: the Ethernet egress schedulers (strict priority, WRR, the three WDRR methods of
//!   ExtremeXOS, minbw/maxbw and rates) and the dot1p map;
//! - [`dcqcn`] and [`host_qos`]: the RoCE host side after NVIDIA's ConnectX documentation (ECN
//!   marking, CNPs, the DCQCN reaction point; trust and the DSCP/priority maps);
//! - [`Simulation`]: the engine ([`engine`](self) module docs give the model and its choices);
//!   [`Simulation::sampled`] and [`SampledRun`] also count per port what its PMA would, as the
//!   run goes (the `engine::sample` module gives the choices);
//! - [`Report`]: per flow, per SL and per VL on every link; [`describe`] prints it as tables,
//!   and the `plot` module (feature `plot`) draws it as SVG charts.

mod build;
mod describe;
mod engine;
mod ethernet;
mod infiniband;
mod inputs;
mod network;
#[cfg(feature = "plot")]
pub mod plot;
mod queue;
mod random;
pub mod ranks;
mod report;
pub mod traffic;
pub mod window;

pub use ethernet::{dcqcn, ets, host_qos, pfc, shared_buffer};
pub use infiniband::{arbiter, cc};

pub use arbiter::{Arbiter, ArbiterOptions, HighLimitMode, Overshoot, ZeroWeight};
pub use build::held::{Mismatch, held_forwarding};
pub use build::port_vls::NodeVls;
pub use build::{
    BuildError, Built, BuiltNodes, Forwarding, Tables, TopologyHosts, build_network, build_nodes,
    build_routed_network,
};
pub use dcqcn::{
    Cnp, DcqcnConfig, DcqcnConfigError, EcnConfig, EcnConfigError, EcnMarker, NotificationPoint,
    NpParams, ReactionPoint, RpParams,
};
pub use describe::describe;
pub use engine::{
    LaneCount, Parallel, PortSample, Ranked, Run, SimOptions, Simulation, WindowCost, simulate,
};
pub use ethernet::frame::{
    CNP_PAYLOAD_BYTES, ETHERNET_HEADER_BYTES, FCS_BYTES, IPV4_HEADER_BYTES, ROCE_HEADER_BYTES,
    UDP_HEADER_BYTES, ethernet_wire_ps, frame_bytes,
};
pub use ethernet::sonic::{PfcDelayCheck, pfc_delay_table, sweep_pfc_delay};
pub use ets::{EtsConfig, EtsError, Grant, Scheduler};
pub use host_qos::{HostQos, HostQosError, Trust};
pub use infiniband::link::{
    BTH_BYTES, HEADER_BYTES, ICRC_BYTES, LRH_BYTES, LinkParams, MAX_PAYLOAD, PS_PER_NS, PS_PER_US,
    Speed, VCRC_BYTES, Width, wire_blocks,
};
pub use inputs::{SampledRun, Setup, SimError, sim};
pub use network::{
    Ethernet, Flow, Link, Network, NetworkError, Node, NodeKind, PortAddr, PortArbitration, Storm,
};
pub use pfc::{
    PauseFrame, PauseGenerator, PauseResponder, PauseStorm, PauseStormConfig, PfcConfig,
};
pub use report::{
    BufferOccupancy, CctiTimeline, DcqcnRates, Deadlock, EthernetLinkReport, FlowCcReport,
    FlowDcqcnReport, FlowReport, Histogram, Latency, LinkReport, OccupancySeries, PoolReport,
    PriorityReport, Report, SlReport, SwitchReport, Timeline, TrafficClassReport, VlReport,
};
pub use shared_buffer::{Admission, BufferConfig, SwitchBuffer};

/// The fabric unit tests run on: one switch, S1, and four hosts, H1 to H4
/// (examples/sim/star.net).
#[cfg(test)]
fn star() -> ibqos_fabric::Topology {
    let net = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sim/star.net");
    let parsed = ibqos_fabric::netfile::parse_net_file(std::path::Path::new(net));
    parsed.expect("star.net").topology
}
