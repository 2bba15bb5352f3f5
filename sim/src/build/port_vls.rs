//! The built nodes' SL-to-VL tables and OperVLs, as the credit-loop checker reads them: the
//! tables a configuration programs or a dump holds, by the same rules the simulator runs with.

use ibqos_fabric::credit_loops::PortVls;
use ibqos_fabric::{NodeId, PortRef};
use ibqos_qos::{Sl2VlTable, VlCount};

use crate::network::Node;

/// Nodes from [`super::build_nodes`], indexed as the topology they were built of.
#[derive(Debug, Clone, Copy)]
pub struct NodeVls<'a>(pub &'a [Node]);

impl PortVls for NodeVls<'_> {
    /// A host sends with the table of input 0, as the simulator does.
    fn sl2vl(&self, node: NodeId, input: u8, output: u8) -> Sl2VlTable {
        match self.0.get(node.index()) {
            Some(built) if output <= built.num_ports && input <= built.num_ports => {
                *built.sl2vl(input, output)
            }
            _ => Sl2VlTable::ALL_VL0,
        }
    }

    fn oper_vls(&self, port: PortRef) -> VlCount {
        self.0
            .get(port.node.index())
            .and_then(|built| built.arbitration.get(usize::from(port.port)))
            .map_or(VlCount::One, |arbitration| arbitration.oper_vls)
    }
}
