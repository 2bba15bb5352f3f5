//! Any bytes read as qos-policy.conf. The reader must answer with a policy or OpenSM's error, never
//! panic or hang. A policy it read must write and read back unchanged (or say why not). Resolving
//! it against a small fabric must not walk a huge GUID range. Its qos-setup, checked and applied to
//! that fabric, must give tables or errors, never a panic.
#![no_main]

use ibqos_mad::NodeType;
use ibqos_opensm::qos_policy;
use ibqos_qos::policy::setup::SetupPort;
use ibqos_qos::policy::{DirectoryNode, NodeDirectory, EndPort};
use libfuzzer_sys::fuzz_target;

/// A switch (GUID 0x100, ports 0-2) with CA `h1` on port 1 and CA `h2` on port 2; `h2`'s port
/// has the largest GUID there is. The SM runs on `h1`.
fn fabric() -> (NodeDirectory, Vec<SetupPort>) {
    let switch = EndPort {
        guid: 0x100,
        node_type: NodeType::Switch,
    };
    let cas = [(0x10, 0x11, "h1"), (0x20, u64::MAX, "h2")];
    let mut nodes = vec![DirectoryNode {
        guid: 0x100,
        node_type: NodeType::Switch,
        description: "sw".to_string(),
        ports: (0..=2).map(|p| (p, 0x100)).collect(),
    }];
    let mut ports: Vec<SetupPort> = (0..=2u8)
        .map(|port| SetupPort {
            node: 0x100,
            port,
            member: switch,
            peer: (port > 0).then(|| EndPort {
                guid: cas[usize::from(port) - 1].1,
                node_type: NodeType::Ca,
            }),
            switch: true,
            output: port > 0,
            name: format!("sw/P{port}"),
        })
        .collect();
    for (node, guid, name) in cas {
        nodes.push(DirectoryNode {
            guid: node,
            node_type: NodeType::Ca,
            description: name.to_string(),
            ports: vec![(1, guid)],
        });
        ports.push(SetupPort {
            node,
            port: 1,
            member: EndPort {
                guid,
                node_type: NodeType::Ca,
            },
            peer: Some(switch),
            switch: false,
            output: true,
            name: format!("{name}/P1"),
        });
    }
    (NodeDirectory::new(nodes, Some(0x11)), ports)
}

fuzz_target!(|bytes: &[u8]| {
    let Ok(read) = qos_policy::read("fuzz.conf", bytes) else {
        return;
    };
    let (written, losses) = qos_policy::to_policy_conf(&read.policy);
    if losses.is_empty() {
        let back = qos_policy::read("written.conf", written.as_bytes())
            .expect("our own output reads back");
        assert_eq!(
            back.policy, read.policy,
            "write then read changed the policy"
        );
    }
    let (directory, ports) = fabric();
    let _ = read.policy.resolve(&directory);
    if let (Ok(scopes), Ok((groups, _))) = (
        read.policy.check_setup(),
        read.policy.resolve_groups(&directory),
    ) {
        let _ = scopes.apply(&groups, &ports);
    }
});
