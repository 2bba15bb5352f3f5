//! The fabric model of ibqos.
//!
//! - [`Topology`]: nodes, ports, links and port capabilities, built by the SM from discovery or
//!   read from a net file;
//! - [`netfile`]: ibsim / ibnetdiscover net files, read exactly as ibsim 0.10 reads them, and
//!   written so that ibsim loads them;
//! - [`generate`]: generated fabrics (ring, two- and three-level fat trees, 2-D torus) for tests
//!   and the simulator;
//! - [`routing`]: the routing engines (minhop, up*/down*) as pure, deterministic functions from a
//!   topology with LIDs to every switch's linear forwarding table, and a path tracer.
//!
//! - [`emu`]: the emulated fabric, one subnet management agent per node of a [`Topology`],
//!   answering SMPs like real switches and HCAs, and one performance management agent answering
//!   PerfMgt GMPs as ibsim's do (sans-IO, deterministic).
//! - [`serve`]: that emulated fabric behind ibsim's socket protocol, for OpenSM, infiniband-diags
//!   and any other ibsim client.

pub mod emu;
pub mod generate;
pub mod netfile;
pub mod routing;
pub mod serve;
mod topology;

pub use topology::{
    LINK_SPEED_SDR, LINK_WIDTH_4X, LidError, LinkCaps, MAX_UNICAST_LID, Node, NodeId, NodeKind,
    Port, PortRef, Topology, TopologyError,
};
