//! The channel: the unit of buffering on a lossless fabric, named the same way by the credit-loop
//! checker and the simulator so that both reports point at the same ports.

use std::fmt;

use ibqos_qos::Vl;

use crate::{PortRef, Topology};

/// One output port and the VL it sends on: the sender's side of a (link, VL) buffer.
///
/// A packet holds a channel while it waits for credits on the next one, so a channel is what a
/// credit dependency joins. Channels order by node, port and VL, which keeps reports stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Channel {
    /// The output port: a switch port or a CA's port.
    pub from: PortRef,
    /// The VL the packets leave on.
    pub vl: Vl,
}

impl Channel {
    pub const fn new(from: PortRef, vl: Vl) -> Channel {
        Channel { from, vl }
    }

    /// The channel as reports print it, `"S1"/P3 VL0`: the node's name as the net file and the
    /// dumps name it, quoted because names may hold spaces.
    pub fn display<'a>(&self, topology: &'a Topology) -> ChannelDisplay<'a> {
        ChannelDisplay {
            channel: *self,
            topology,
        }
    }

    /// The channel as [`Channel::display`] prints it, its node named `node`: for a reader that
    /// holds the node names but not the topology (the simulator's network).
    pub fn named(&self, node: &str) -> String {
        format!("\"{node}\"/P{} {}", self.from.port, self.vl)
    }
}

/// A [`Channel`] printed with its node's name; see [`Channel::display`].
#[derive(Debug, Clone, Copy)]
pub struct ChannelDisplay<'a> {
    channel: Channel,
    topology: &'a Topology,
}

impl fmt::Display for ChannelDisplay<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Channel { from, vl } = self.channel;
        match self.topology.node(from.node) {
            Some(node) => f.write_str(&self.channel.named(&node.name)),
            // A channel from another topology: the id still says which node it was.
            None => write!(f, "{}/P{} {vl}", from.node, from.port),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate;

    #[test]
    fn a_channel_prints_its_node_name_port_and_vl() {
        let topology = generate::ring(3, 1).unwrap();
        let switch = topology.node_by_name("S1").unwrap();
        let channel = Channel::new(PortRef::new(switch, 3), Vl::new(2).unwrap());
        assert_eq!(channel.display(&topology).to_string(), "\"S1\"/P3 VL2");
    }

    #[test]
    fn a_channel_from_another_topology_prints_its_node_id() {
        let topology = generate::ring(3, 1).unwrap();
        let channel = Channel::new(PortRef::new(crate::NodeId(999), 1), Vl::new(0).unwrap());
        assert_eq!(channel.display(&topology).to_string(), "node#999/P1 VL0");
    }
}
