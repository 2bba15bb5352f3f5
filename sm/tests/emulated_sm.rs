//! `ibqos sm` on the emulated fabric: the default run with nothing installed, a net file, and a
//! fabric of mixed port capabilities read back from the emulator after the SM programmed it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use ibqos_fabric::emu::Emulator;
use ibqos_fabric::{LinkCaps, PortRef, generate};
use ibqos_mad::PortState;
use ibqos_qos::VlCount;
use ibqos_sm::commands::sm::sweep_config;
use ibqos_sm::engine::qos::qos_sets;
use ibqos_sm::engine::sweep::{Phase, SweepConfig};
use ibqos_sm::run::{SmIdentity, run_sweep};
use ibqos_sm::transport::Transport;
use ibqos_sm::transport::emulated::EmulatedTransport;
use serde_json::Value;

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs `ibqos sm --once --json` with `args` and a scratch LID cache; its exit status and
/// summary.
fn sm_once(args: &[&str]) -> (bool, Value) {
    let cache = std::env::temp_dir().join(format!(
        "ibqos-emulated-{}-{}",
        std::process::id(),
        args.len()
    ));
    std::fs::create_dir_all(&cache).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["sm", "--once", "--json", "--cache-dir"])
        .arg(&cache)
        .args(args)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&cache).unwrap();
    let summary = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.success(), summary)
}

#[test]
fn sm_with_no_fabric_runs_on_the_builtin_emulated_fabric() {
    let (ok, summary) = sm_once(&[]);
    assert!(ok, "{summary}");
    assert_eq!(summary["subnet_up"], true);
    assert_eq!(summary["nodes"], 7);
    assert_eq!(summary["ports_not_active"], 0);
}

#[test]
fn sm_on_an_emulated_net_file() {
    let dir = std::env::temp_dir().join(format!("ibqos-emulated-net-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let net = dir.join("fat-tree-16.net");
    std::fs::copy(repo("tests/testdata/fat-tree-16.net"), &net).unwrap();
    let spec = format!("sim:{}", net.display());
    let config = repo("examples/opensm-qos.conf");
    let (ok, summary) = sm_once(&["--fabric", &spec, "-F", config.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(ok, "{summary}");
    assert_eq!(summary["subnet_up"], true);
    assert_eq!(summary["nodes"], 22);
    assert_eq!(summary["qos_ports_failed"], 0);
}

/// The sweep configuration `ibqos sm` builds from an opensm.conf.
fn config_from(opensm_conf: &Path) -> SweepConfig {
    let settings = ibqos_opensm::load(opensm_conf).unwrap().settings;
    sweep_config(&settings, BTreeMap::new())
}

#[test]
fn sm_converges_on_ports_of_mixed_qos_capabilities() {
    let mut topology = generate::fat_tree(3, 2, 3, 8).unwrap();
    // Every port a different mix: VLCap 1, 2, 4, 8, 15 and VLArb caps 0 to 64.
    let vls = VlCount::ALL;
    let arb = [0u8, 1, 8, 16, 32, 33, 64];
    let ports: Vec<PortRef> = topology
        .nodes()
        .flat_map(|(id, n)| n.existing_ports().map(move |(p, _)| PortRef::new(id, p)))
        .collect();
    for (i, port) in ports.iter().enumerate() {
        let link = &mut topology.port_mut(*port).unwrap().link;
        *link = LinkCaps {
            vl_cap: vls[i % vls.len()],
            vlarb_low_cap: arb[i % arb.len()],
            vlarb_high_cap: arb[(i + 3) % arb.len()],
            ..*link
        };
    }
    let first_switch = topology.switches().next().unwrap().0;
    topology.node_mut(first_switch).unwrap().enhanced_port0 = true;
    let attach = topology
        .cas()
        .next()
        .map(|(id, _)| PortRef::new(id, 1))
        .unwrap();
    let emulator = Emulator::new(topology, attach).unwrap();
    let mut transport = EmulatedTransport::new(emulator);
    let config = config_from(&repo("examples/opensm-qos.conf"));
    let identity = SmIdentity {
        port_guid: transport.local_port().port_guid,
        priority: 0,
    };
    let (sweep, _) = run_sweep(&mut transport, config.clone(), identity).unwrap();
    assert_eq!(*sweep.phase(), Phase::SubnetUp, "{:?}", sweep.counts());
    let emu = transport.emulator();
    let t = emu.topology();

    // Every linked port ACTIVE, running the OperVLs both ends can.
    for (a, b) in t.links() {
        let (pa, pb) = (emu.port_info(a).unwrap(), emu.port_info(b).unwrap());
        assert_eq!(
            (pa.port_state, pb.port_state),
            (PortState::Active, PortState::Active)
        );
        let common = pa.vl_cap.min(pb.vl_cap).min(config.max_op_vls.encoding());
        assert_eq!(
            (pa.operational_vls, pb.operational_vls),
            (common, common),
            "{a} {b}"
        );
    }
    // Every QoS table the planner calls for, as the fabric now holds it.
    let sets = qos_sets(sweep.subnet(), &config.qos, config.use_optimized_slvl);
    assert!(!sets.is_empty());
    for set in &sets {
        let node = t.node_by_guid(set.node).unwrap();
        let held = emu.get(
            PortRef::new(node, set.via.1),
            set.attribute.id(),
            set.modifier,
        );
        assert_eq!(
            held,
            Ok(set.attribute),
            "{:#x} modifier {:#x}",
            set.node,
            set.modifier
        );
    }
}
