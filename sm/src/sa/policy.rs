//! qos-policy.conf applied to the fabric the SA answers for: the policy's port groups resolved
//! against the last sweep's snapshot, as OpenSM re-reads its policy against the subnet at every
//! heavy sweep (groups are snapshots), and the QoS level of a path.

use ibqos_qos::policy::{PathQuery, QosLevel, QosPolicy, ResolvedPolicy};
use tracing::{info, warn};

use super::db::SaDb;
use crate::engine::groups::{directory, member};
use crate::engine::subnet::PortKey;

/// The policy for this snapshot, or `None` when it does not apply to it: OpenSM then drops the
/// whole policy and answers as without one (`osm_qos_parser_y.y` load lifecycle).
pub(super) fn resolve(policy: &QosPolicy, db: &SaDb) -> Option<ResolvedPolicy> {
    match policy.resolve(&directory(&db.subnet, db.subnet_partitions())) {
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
    policy.level_for(&PathQuery {
        source: member(&db.subnet, source)?,
        destination: member(&db.subnet, destination)?,
        service_id,
        qos_class,
        pkey,
    })
}
