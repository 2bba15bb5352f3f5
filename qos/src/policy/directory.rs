//! A [`PortDirectory`] over a plain list of nodes: what the SM's discovered subnet and a net
//! file's fabric both turn into, so that group membership is decided one way for both.

use std::collections::BTreeSet;

use ibqos_mad::Guid;

use super::{NodePort, NodeType, PartitionMembers, PortDirectory};
use crate::partitions::{SubnetPartition, SubnetPartitions};

/// The default partition's P_Key without its membership bit, and its name in partitions.conf.
const DEFAULT_PARTITION: u16 = 0x7fff;
const DEFAULT_PARTITION_NAME: &str = "Default";

/// One node as the policy's port groups see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryNode {
    pub guid: u64,
    pub node_type: NodeType,
    /// NodeDescription.
    pub description: String,
    /// Port GUIDs by port number (a switch's ports all have its port 0's GUID).
    pub ports: Vec<(u8, u64)>,
}

/// The fabric's nodes, in OpenSM's node table order, and its partitions: those the SM built
/// on it, or without them every endport a full member of the default partition, as under
/// OpenSM without a partitions.conf.
#[derive(Debug, Clone, Default)]
pub struct NodeDirectory {
    nodes: Vec<DirectoryNode>,
    /// Every endport's GUID: CA and router ports, switch port 0.
    endports: BTreeSet<u64>,
    sm_port: Option<u64>,
    partitions: Option<SubnetPartitions>,
}

impl NodeDirectory {
    /// The directory of `nodes`, with the SM on the port of GUID `sm_port`.
    pub fn new(nodes: impl IntoIterator<Item = DirectoryNode>, sm_port: Option<u64>) -> Self {
        let mut nodes: Vec<DirectoryNode> = nodes.into_iter().collect();
        // The first node of a description in OpenSM's node table order is the one a port-name
        // finds.
        nodes.sort_by_key(|n| Guid(n.guid).opensm_order());
        let endports = nodes
            .iter()
            .flat_map(|n| {
                let switch = n.node_type == NodeType::Switch;
                n.ports
                    .iter()
                    .filter(move |(number, _)| !switch || *number == 0)
                    .map(|(_, guid)| *guid)
            })
            .collect();
        NodeDirectory {
            nodes,
            endports,
            sm_port,
            partitions: None,
        }
    }

    /// The same directory with the partitions the SM built on the fabric.
    pub fn with_partitions(self, partitions: &SubnetPartitions) -> Self {
        NodeDirectory {
            partitions: Some(partitions.clone()),
            ..self
        }
    }

    fn default_partition(&self) -> PartitionMembers {
        PartitionMembers {
            full: self.port_guids(),
            limited: Vec::new(),
        }
    }
}

impl PortDirectory for NodeDirectory {
    fn port_guids(&self) -> Vec<u64> {
        self.endports.iter().copied().collect()
    }

    fn has_port(&self, guid: u64) -> bool {
        self.endports.contains(&guid)
    }

    fn node_port(&self, node: &str, port: u32) -> NodePort {
        let Some(found) = self.nodes.iter().find(|n| n.description == node) else {
            return NodePort::NoNode;
        };
        let port = u8::try_from(port)
            .ok()
            .and_then(|p| found.ports.iter().find(|(number, _)| *number == p));
        match port {
            Some((_, guid)) => NodePort::Port(*guid),
            None => NodePort::NoPort,
        }
    }

    fn partition_by_pkey(&self, pkey: u16) -> Option<PartitionMembers> {
        match &self.partitions {
            Some(partitions) => partitions.get(pkey).map(members),
            None => (pkey & 0x7fff == DEFAULT_PARTITION).then(|| self.default_partition()),
        }
    }

    /// The first partition of that name in OpenSM's table order (`osm_prtn_find_by_name`).
    fn partition_by_name(&self, name: &str) -> Option<PartitionMembers> {
        match &self.partitions {
            Some(partitions) => partitions
                .partitions
                .iter()
                .find(|p| p.name == name)
                .map(members),
            None => (name == DEFAULT_PARTITION_NAME).then(|| self.default_partition()),
        }
    }

    fn sm_port(&self) -> Option<u64> {
        self.sm_port
    }
}

/// A partition's members as the policy's groups take them.
fn members(partition: &SubnetPartition) -> PartitionMembers {
    PartitionMembers {
        full: partition.full.iter().copied().collect(),
        limited: partition.limited.iter().copied().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(
        guid: u64,
        node_type: NodeType,
        description: &str,
        ports: &[(u8, u64)],
    ) -> DirectoryNode {
        DirectoryNode {
            guid,
            node_type,
            description: description.to_string(),
            ports: ports.to_vec(),
        }
    }

    #[test]
    fn endports_port_names_and_the_default_partition() {
        let dir = NodeDirectory::new(
            [
                node(0x100, NodeType::Switch, "sw", &[(0, 0x100), (1, 0x100)]),
                // Two nodes with one description: 0x0200.. comes first byte-swapped.
                node(0x0300, NodeType::Ca, "host", &[(1, 0x0301)]),
                node(0x0200, NodeType::Ca, "host", &[(1, 0x0201), (2, 0x0202)]),
            ],
            Some(0x0201),
        );
        assert_eq!(dir.port_guids(), [0x100, 0x0201, 0x0202, 0x0301]);
        assert!(dir.has_port(0x100) && !dir.has_port(0x101));
        assert_eq!(dir.node_port("host", 2), NodePort::Port(0x0202));
        assert_eq!(dir.node_port("host", 3), NodePort::NoPort);
        assert_eq!(dir.node_port("nobody", 1), NodePort::NoNode);
        assert_eq!(dir.partition_by_pkey(0xffff).unwrap().full.len(), 4);
        assert_eq!(
            dir.partition_by_name("Default"),
            dir.partition_by_pkey(0x7fff)
        );
        assert_eq!(dir.partition_by_pkey(0x0001), None);
        assert_eq!(dir.sm_port(), Some(0x0201));
    }

    #[test]
    fn with_partitions_the_groups_take_the_partitions_members() {
        use crate::partitions::{EndPort, Member, Members, Membership, Partition, Partitions};
        use ibqos_mad::Guid;
        let ports = [
            EndPort {
                guid: 0x0201,
                node_type: NodeType::Ca,
            },
            EndPort {
                guid: 0x0301,
                node_type: NodeType::Ca,
            },
        ];
        let file = Partitions {
            partitions: vec![Partition {
                name: "storage".to_string(),
                pkey: Some(0x0101),
                members: vec![Member {
                    ports: Members::Port(Guid(0x0301)),
                    membership: Membership::Full,
                }],
                ..Partition::default()
            }],
        };
        let subnet =
            crate::partitions::resolve(Some(&file), &ports, Some(0x0201), Default::default());
        let dir = NodeDirectory::new(
            [node(0x0300, NodeType::Ca, "host", &[(1, 0x0301)])],
            Some(0x0201),
        )
        .with_partitions(&subnet);
        let storage = dir
            .partition_by_name("storage")
            .expect("the file's partition");
        assert_eq!((storage.full, storage.limited), (vec![0x0301], vec![]));
        assert_eq!(
            dir.partition_by_pkey(0x8101),
            dir.partition_by_name("storage")
        );
        // The Default partition as the file leaves it: limited but for the SM's port.
        let default = dir.partition_by_pkey(0x7fff).unwrap();
        assert_eq!(
            (default.full, default.limited),
            (vec![0x0201], vec![0x0301])
        );
        assert_eq!(dir.partition_by_name("nobody"), None);
    }
}
