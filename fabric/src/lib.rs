//! The fabric model of ibqos.
//!
//! - [`Topology`]: nodes, ports, links and port capabilities, built by the SM from discovery or
//!   read from a net file;
//! - [`netfile`]: ibsim / ibnetdiscover net files, read exactly as ibsim 0.10 reads them, and
//!   written so that ibsim loads them;
//! - [`builtin`]: the fabrics built in by name (`two-switch`), and a loader that takes a name or
//!   a net file's path;
//! - [`generate`]: generated fabrics (ring, two- and three-level fat trees, 2-D torus) for tests
//!   and the simulator;
//! - [`credit_loops`]: the channel dependency graph of a fabric's forwarding and SL-to-VL tables,
//!   and the credit loops (cycles) in it;
//! - [`dump`]: a fabric's QoS state as JSON (every port's PortInfo fields and tables as its SMA
//!   answers them), and the one rule for which SubnGets read it;
//! - [`routing`]: the routing engines (minhop, up*/down*) as pure, deterministic functions from a
//!   topology with LIDs to every switch's linear forwarding table, and a path tracer; OpenSM's
//!   multicast spanning tree of an MLID's members and the MFT blocks of many such trees.
//!
//! Pure data and functions: no I/O beyond reading a net file, no clock. The emulated fabric that
//! answers SMPs for these topologies is the `ibqos-emu` crate.

pub mod builtin;
pub mod credit_loops;
pub mod dump;
pub mod generate;
pub mod groups;
pub mod netfile;
pub mod routing;
mod topology;

pub use topology::{
    LINK_SPEED_SDR, LINK_WIDTH_4X, LidError, LinkCaps, MAX_UNICAST_LID, Node, NodeId, NodeKind,
    Port, PortRef, Topology, TopologyError,
};
