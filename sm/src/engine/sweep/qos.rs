//! QoS orchestration: every SL2VL and VLArb Set the QoS manager plans, through the
//! reconciler, each echo checked by the table writes.

use ibqos_mad::SlToVlModifier;
use tracing::info;

use super::feed::Feed;
use super::writes::{TableKind, Writes};
use super::{Phase, Sweep};
use crate::engine::qos::qos_sets;
use crate::engine::subnet::Subnet;
use crate::engine::write::{TableModifier, TableWrite};

/// The Gets that read what a QoS Set would overwrite: the Set's own modifier, except that an
/// SL2VL Set for several pairs is read pair by pair (a Get cannot use the all-ports bits).
pub(super) fn read_modifiers(subnet: &Subnet, set: &TableWrite) -> Vec<u32> {
    let TableModifier::SlToVl(scope) = set.modifier else {
        return vec![set.modifier.into()];
    };
    let inputs = 0..=subnet
        .nodes
        .get(&set.node.0)
        .map_or(0, |n| n.info.num_ports);
    let outputs = set.ports.iter().map(|k| k.port);
    scope
        .pairs(inputs, outputs)
        .map(|(input, output)| u32::from(SlToVlModifier::Pair { input, output }))
        .collect()
}

impl Sweep {
    /// Every SL2VL and VLArb Set the configuration calls for, masked with the OperVLs the ports
    /// now run; nothing when qos is off.
    pub(super) fn program_qos(&mut self) {
        self.phase = Phase::ProgrammingQos;
        if !self.config.qos.enabled {
            return;
        }
        self.qos_writes = Writes::new(qos_sets(
            &self.subnet,
            &self.config.qos,
            &self.setup,
            &*self.layering,
            self.config.use_optimized_slvl,
        ));
        self.feed = Feed::new(self.qos_writes.pending_jobs(TableKind::Qos));
        info!(
            sets = self.qos_writes.len(),
            "{} QoS tables",
            self.logged("programming", "would program")
        );
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use ibqos_mad::{
        Guid, NodeInfo, NodeInfoRepr, SlToVlMappingTableRepr, VlArbModifier, VlArbitrationTableRepr,
    };

    use crate::engine::subnet::{DiscoveredNode, PortKey, PortMap};
    use crate::engine::write::TableBlock;

    fn set(block: TableBlock, modifier: TableModifier, outputs: &[u8]) -> TableWrite {
        TableWrite {
            node: Guid(1),
            via: PortKey::new(1, 0),
            block,
            modifier,
            ports: outputs.iter().map(|&p| PortKey::new(1, p)).collect(),
        }
    }

    fn sl2vl() -> TableBlock {
        TableBlock::SlToVl(SlToVlMappingTableRepr { vls: [0; 16] })
    }

    /// A subnet of one switch with ports 0..=2.
    fn subnet() -> Subnet {
        let mut info = NodeInfoRepr::parse(&NodeInfo::new_unchecked([0u8; 40])).unwrap();
        info.num_ports = 2;
        let node = DiscoveredNode {
            info,
            description: String::new(),
            switch: None,
            path: Vec::new(),
            ports: PortMap::default(),
        };
        Subnet {
            nodes: BTreeMap::from([(1, node)]),
            ..Subnet::default()
        }
    }

    #[test]
    fn an_all_ports_sl2vl_set_is_read_pair_by_pair() {
        let subnet = subnet();
        let pair = |input, output| u32::from(SlToVlModifier::Pair { input, output });
        let all = set(sl2vl(), TableModifier::SlToVl(SlToVlModifier::All), &[1, 2]);
        let expected: Vec<u32> = [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]
            .map(|(i, o)| pair(i, o))
            .to_vec();
        assert_eq!(read_modifiers(&subnet, &all), expected);
        let inputs = set(
            sl2vl(),
            TableModifier::SlToVl(SlToVlModifier::AllInputs { output: 2 }),
            &[2],
        );
        assert_eq!(
            read_modifiers(&subnet, &inputs),
            [pair(0, 2), pair(1, 2), pair(2, 2)]
        );
        let one = SlToVlModifier::Pair {
            input: 1,
            output: 2,
        };
        let one = set(sl2vl(), TableModifier::SlToVl(one), &[2]);
        assert_eq!(read_modifiers(&subnet, &one), [pair(1, 2)]);
        let vlarb = TableBlock::VlArb(VlArbitrationTableRepr {
            entries: Default::default(),
        });
        let block = TableModifier::VlArb(VlArbModifier::try_from(0x1_0002).unwrap());
        assert_eq!(
            read_modifiers(&subnet, &set(vlarb, block, &[2])),
            [0x1_0002]
        );
    }
}
