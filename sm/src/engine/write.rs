//! A table the sweep writes with a Set and verifies by its echo: the QoS manager's SL2VL and
//! VLArb Sets, the partition manager's P_Key blocks.

use ibqos_mad::Attribute;

use super::subnet::PortKey;

/// One Set: which node, with what modifier, and the ports whose tables it writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableWrite {
    pub node: u64,
    /// The port whose directed route reaches the node (a CA answers for its arrival port).
    pub via: PortKey,
    pub attribute: Attribute,
    pub modifier: u32,
    /// The ports this Set programs, for the per-port summary.
    pub ports: Vec<PortKey>,
    /// An all-ports SL2VL Set, which OpenSM gives its long transaction timeout.
    pub long: bool,
}
