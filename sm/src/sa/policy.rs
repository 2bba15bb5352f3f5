//! qos-policy.conf applied to the fabric the SA answers for: the policy's port groups resolved
//! against the last sweep's snapshot, as OpenSM re-reads its policy against the subnet at every
//! heavy sweep (groups are snapshots), and the QoS level of a path.

use ibqos_mad::NodeType;
use ibqos_qos::policy::{
    self, NodePort, PartitionMembers, PathQuery, PortDirectory, PortRef, QosLevel, QosPolicy,
    ResolvedPolicy,
};
use tracing::{info, warn};

use super::db::SaDb;
use crate::engine::subnet::PortKey;

/// The default partition's P_Key without its membership bit, and its name in partitions.conf.
const DEFAULT_PARTITION: u16 = 0x7fff;
const DEFAULT_PARTITION_NAME: &str = "Default";

/// The policy for this snapshot, or `None` when it does not apply to it: OpenSM then drops the
/// whole policy and answers as without one (`osm_qos_parser_y.y` load lifecycle).
pub(super) fn resolve(policy: &QosPolicy, db: &SaDb) -> Option<ResolvedPolicy> {
    match policy.resolve(db) {
        Ok((resolved, warnings)) => {
            for warning in warnings {
                warn!(%warning, "qos-policy.conf");
            }
            info!(
                levels = resolved.levels.len(),
                rules = resolved.rules.len(),
                "QoS policy applied to the fabric"
            );
            Some(resolved)
        }
        Err(error) => {
            warn!(%error, "qos-policy.conf does not apply to this fabric; no policy");
            None
        }
    }
}

/// The QoS level OpenSM's `osm_qos_policy_get_qos_level_by_pr` gives the path from `source`
/// to `destination` (for a switch, its port 0).
pub(super) fn level_for<'p>(
    policy: &'p ResolvedPolicy,
    db: &SaDb,
    source: PortKey,
    destination: PortKey,
    service_id: Option<u64>,
    qos_class: Option<u16>,
    pkey: Option<u16>,
) -> Option<&'p QosLevel> {
    let end = |key: PortKey| -> Option<PortRef> {
        let node = db.node(key.node)?;
        let port = db.port(db.endport(key))?;
        Some(PortRef {
            guid: port.guid,
            node_type: match node.info.node_type {
                NodeType::Switch => policy::NodeType::Switch,
                NodeType::Router => policy::NodeType::Router,
                _ => policy::NodeType::Ca,
            },
        })
    };
    policy.level_for(&PathQuery {
        source: end(source)?,
        destination: end(destination)?,
        service_id,
        qos_class,
        pkey,
    })
}

/// The fabric as the policy's port groups see it. Every endport is a full member of the
/// default partition until partitions are managed.
impl PortDirectory for SaDb {
    fn port_guids(&self) -> Vec<u64> {
        self.endport_guids().into_iter().collect()
    }

    fn has_port(&self, guid: u64) -> bool {
        self.endport_of_guid(guid).is_some()
    }

    fn node_port(&self, node: &str, port: u32) -> NodePort {
        let Some(found) = self.nodes().find(|n| n.description == node) else {
            return NodePort::NoNode;
        };
        match u8::try_from(port).ok().and_then(|p| found.ports.get(&p)) {
            Some(p) => NodePort::Port(p.guid),
            None => NodePort::NoPort,
        }
    }

    fn partition_by_pkey(&self, pkey: u16) -> Option<PartitionMembers> {
        (pkey & 0x7fff == DEFAULT_PARTITION).then(|| self.default_partition())
    }

    fn partition_by_name(&self, name: &str) -> Option<PartitionMembers> {
        (name == DEFAULT_PARTITION_NAME).then(|| self.default_partition())
    }

    fn sm_port(&self) -> Option<u64> {
        self.port(self.sm_port?).map(|p| p.guid)
    }
}

impl SaDb {
    fn default_partition(&self) -> PartitionMembers {
        PartitionMembers {
            full: self.port_guids(),
            limited: Vec::new(),
        }
    }
}
