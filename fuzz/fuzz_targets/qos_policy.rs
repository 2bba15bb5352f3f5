//! Any bytes read as qos-policy.conf: the reader must answer with a policy or OpenSM's error,
//! never panic or hang; a policy it read must write and read back unchanged (or say why not);
//! and resolving it against a small fabric must not walk a huge GUID range.
#![no_main]

use ibqos_opensm::qos_policy;
use ibqos_qos::policy::{NodePort, PartitionMembers, PortDirectory};
use libfuzzer_sys::fuzz_target;

/// Three ports, every one a full member of the default partition.
struct Fabric;

impl PortDirectory for Fabric {
    fn port_guids(&self) -> Vec<u64> {
        vec![1, 2, u64::MAX]
    }
    fn has_port(&self, guid: u64) -> bool {
        self.port_guids().contains(&guid)
    }
    fn node_port(&self, node: &str, port: u32) -> NodePort {
        match (node, port) {
            ("h1", 1) => NodePort::Port(1),
            ("h1", _) => NodePort::NoPort,
            _ => NodePort::NoNode,
        }
    }
    fn partition_by_pkey(&self, pkey: u16) -> Option<PartitionMembers> {
        (pkey == 0x7fff).then(|| PartitionMembers {
            full: self.port_guids(),
            limited: Vec::new(),
        })
    }
    fn partition_by_name(&self, _name: &str) -> Option<PartitionMembers> {
        None
    }
    fn sm_port(&self) -> Option<u64> {
        Some(1)
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(read) = qos_policy::read("fuzz.conf", bytes) else { return };
    let (written, losses) = qos_policy::to_policy_conf(&read.policy);
    if losses.is_empty() {
        let back = qos_policy::read("written.conf", written.as_bytes())
            .expect("our own output reads back");
        assert_eq!(back.policy, read.policy, "write then read changed the policy");
    }
    let _ = read.policy.resolve(&Fabric);
});
