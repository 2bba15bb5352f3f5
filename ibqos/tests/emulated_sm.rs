//! `ibqos sm` on the emulated fabric: the default run with nothing installed, a net file, and a
//! fabric of mixed port capabilities read back from the emulator after the SM programmed it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use ibqos_emu::{Emulator, attach_port};
use ibqos_fabric::PortRef;
use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::generate::fat_tree;
use ibqos_fabric::routing::Layering;
use ibqos_mad::{
    Attribute, AttributeId, Guid, Method, PortState, SlToVlModifier, VlArbBlock, VlArbModifier,
};
use ibqos_opensm::Settings;
use ibqos_qos::{Priority, Sl2VlTable, Vl, VlArbEntry, VlArbTable, VlCount, oper_vls};
use ibqos_sm::config::sweep_config;
use ibqos_sm::engine::qos::qos_sets;
use ibqos_sm::engine::sweep::{Phase, SweepMode};
use ibqos_sm::engine::write::TableModifier;
use ibqos_sm::manager::{Outcome, Run};
use ibqos_transport::emulated::EmulatedTransport;
use serde_json::Value;

mod common;
use common::daemon::{Daemon, ibqos_sm, notified_until, notify_socket, signal};
use common::{EmulatedSm, mixed_capability_fat_tree, settings, wait_for_text};

/// How long a daemon's log may take to say what a test waits for.
const LOG_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

fn repo(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs `ibqos sm --once --json` with `args` and a scratch LID cache; its exit status and
/// summary.
fn sm_once(args: &[&str]) -> (bool, Value) {
    let (ok, summary, _) = sm_once_logged(args);
    (ok, summary)
}

/// [`sm_once`], with what the SM logged.
fn sm_once_logged(args: &[&str]) -> (bool, Value, String) {
    // One cache per run: tests run in parallel, and two sharing a cache would remove it under
    // each other.
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["sm", "--once", "--json", "--cache-dir"])
        .arg(cache.path())
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    let summary = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {log}"));
    (out.status.success(), summary, log)
}

/// Runs `ibqos` with `args`, which must succeed.
fn ibqos_ok(args: &[&str]) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ibqos {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let dir = tempfile::tempdir().unwrap();
    let net = dir.path().join("fat-tree-16.net");
    std::fs::copy(repo("fabric/data/fat-tree-16.net"), &net).unwrap();
    let spec = format!("sim:{}", net.display());
    let config = repo("examples/opensm-qos.conf");
    let (ok, summary) = sm_once(&["--fabric", &spec, "-F", config.to_str().unwrap()]);
    assert!(ok, "{summary}");
    assert_eq!(summary["subnet_up"], true);
    assert_eq!(summary["nodes"], 22);
    assert_eq!(summary["qos_ports_failed"], 0);
}

/// `ibqos fabric gen fat-tree3 --radix 4` written to a file, then `ibqos sm --once` on it: the
/// SM finds all 36 nodes and brings up the subnet, and the fabric's own dump shows both ends of
/// all 48 links ACTIVE.
#[test]
fn sm_brings_up_a_generated_three_level_fat_tree() {
    let dir = tempfile::tempdir().unwrap();
    let (net, after) = (dir.path().join("ft3-k4.net"), dir.path().join("after.json"));
    ibqos_ok(&[
        "fabric",
        "gen",
        "fat-tree3",
        "--radix",
        "4",
        "-o",
        net.to_str().unwrap(),
    ]);
    let spec = format!("sim:{}", net.display());
    let (up, summary) = sm_once(&["--fabric", &spec, "--dump-fabric", after.to_str().unwrap()]);
    let dump = FabricDump::from_json(&std::fs::read_to_string(&after).unwrap()).unwrap();
    assert!(up, "{summary}");
    assert_eq!(summary["subnet_up"], true);
    assert_eq!(summary["nodes"], 36);
    assert_eq!(summary["ports_not_active"], 0);
    let states = linked_port_states(&dump);
    assert_eq!(states.len(), 2 * 48);
    assert!(states.iter().all(|s| s == "Active"), "{states:?}");
}

/// `routing_engine` is OpenSM's ordered list: a name ibqos has no engine for (`file`) or no
/// engine has (`foo`) passes to the next, here up*/down*, whose tables on a two-level tree
/// differ from minhop's (it leaves each spine's LID unset on the other spine).
#[test]
fn the_sm_routes_with_the_first_engine_of_the_list_it_has() {
    let routed = |engines: Option<&str>| {
        let topology = fat_tree(4, 2, 4, 8).unwrap();
        let attach = attach_port(&topology, None).unwrap();
        let mut settings = Settings::default();
        settings.sm.routing_engine = engines.map(String::from);
        let emulator = Emulator::new(topology).unwrap();
        let transport = EmulatedTransport::new(emulator, attach);
        let mut sm = EmulatedSm::new(transport, Run::Once, &settings);
        sm.finish();
        let sweep = sm.manager.last_sweep().unwrap();
        assert_eq!(*sweep.phase(), Phase::SubnetUp, "{engines:?}");
        (sweep.routed_by().name(), sweep.lfts().clone())
    };
    let (engine, fell_back) = routed(Some("file,foo,updn"));
    assert_eq!(engine, "updn");
    assert_eq!(fell_back, routed(Some("updn")).1);
    let (default, minhop) = routed(None);
    assert_eq!(default, "minhop");
    assert_ne!(fell_back, minhop);
    assert_eq!(routed(Some("file")), (default, minhop));
}

/// A routing that writes tables of its own, as torus-2QoS does: all SLs on VL 1 from S1's
/// input 2 to its output 3 and at H1's port, and a low VLArb table of VL 1 alone at H1's port.
#[derive(Debug)]
struct OwnTables {
    s1: u64,
    h1: u64,
}

impl Layering for OwnTables {
    fn update_sl2vl(&self, node: u64, input: u8, output: u8, table: &mut Sl2VlTable) {
        if [(self.s1, 2, 3), (self.h1, 0, 0)].contains(&(node, input, output)) {
            *table = Sl2VlTable([Vl::new(1).unwrap(); 16]);
        }
    }

    fn update_vlarb(&self, node: u64, _port: u8, priority: Priority, table: &mut VlArbTable) {
        if (node, priority) == (self.h1, Priority::Low) {
            *table = VlArbTable::EMPTY;
            table.0[0] = VlArbEntry::new(1, 200);
        }
    }
}

/// The QoS manager writes the tables the routing engine rewrites (OpenSM's update_sl2vl and
/// update_vlarb), masked as the configured ones, and leaves every other table as planned.
#[test]
fn the_qos_manager_writes_the_tables_the_routing_engine_rewrites() {
    let settings = settings("examples/opensm-qos.conf");
    let config = sweep_config(&settings, BTreeMap::new());
    let mut sm = EmulatedSm::new(common::two_switch(), Run::Once, &settings);
    sm.finish();
    let sweep = sm.manager.last_sweep().unwrap();
    let topology = ibqos_fabric::builtin::load_topology("two-switch")
        .unwrap()
        .topology;
    let guid = |name: &str| {
        topology
            .node(topology.node_by_name(name).unwrap())
            .unwrap()
            .guid
    };
    let engine = OwnTables {
        s1: guid("S1"),
        h1: guid("H1"),
    };
    let sets_with = |layering: &dyn Layering| {
        let (subnet, setup) = (sweep.subnet(), sweep.qos_setup());
        qos_sets(
            subnet,
            &config.qos,
            setup,
            layering,
            config.use_optimized_slvl,
        )
    };
    let (planned, rewritten) = (sets_with(&**sweep.layering()), sets_with(&engine));
    let all_vl1 = [1; 16];
    let sl2vl = |node: u64, scope: SlToVlModifier| {
        rewritten
            .iter()
            .find_map(|set| match set.block.attribute() {
                Attribute::SlToVlMappingTable(table)
                    if set.node == Guid(node) && u32::from(set.modifier) == u32::from(scope) =>
                {
                    Some(table.vls)
                }
                _ => None,
            })
    };
    let pair = |input, output| SlToVlModifier::Pair { input, output };
    assert_eq!(sl2vl(engine.s1, pair(2, 3)), Some(all_vl1));
    assert_eq!(sl2vl(engine.h1, pair(0, 0)), Some(all_vl1));
    assert_ne!(sl2vl(engine.s1, pair(3, 2)), Some(all_vl1));
    let h1_low = rewritten
        .iter()
        .find_map(|set| match set.block.attribute() {
            Attribute::VlArbitrationTable(table) if set.node == Guid(engine.h1) => {
                Some(table.entries[0])
            }
            _ => None,
        });
    assert_eq!(h1_low, Some(VlArbEntry::new(1, 200)));
    // Only those differ: S1's (2, 3) pair, H1's SL2VL and H1's low VLArb blocks.
    let differ: Vec<(u64, AttributeId, u32)> = planned
        .iter()
        .filter(|set| !rewritten.contains(set))
        .map(|set| {
            (
                set.node.0,
                set.block.attribute().id(),
                u32::from(set.modifier),
            )
        })
        .collect();
    let low_block = VlArbModifier {
        block: VlArbBlock::Low0To31,
        port: 0,
    };
    assert_eq!(
        differ,
        [
            (
                engine.s1,
                AttributeId::SlToVlMappingTable,
                u32::from(pair(2, 3))
            ),
            (engine.h1, AttributeId::SlToVlMappingTable, 0),
            (
                engine.h1,
                AttributeId::VlArbitrationTable,
                u32::from(low_block)
            ),
        ]
    );
    assert_eq!(
        rewritten.len(),
        planned.len(),
        "each pair has its Set already"
    );
}

#[test]
fn sm_converges_on_ports_of_mixed_qos_capabilities() {
    let mut topology = mixed_capability_fat_tree(false);
    let switches: Vec<_> = topology.switches().map(|(id, _)| id).collect();
    topology.node_mut(switches[0]).unwrap().enhanced_port0 = true;
    // Two switches advertise optimized SL2VL programming, one with an enhanced port 0 too.
    for &id in &switches[1..3] {
        topology.node_mut(id).unwrap().optimized_sl_to_vl = true;
    }
    topology.node_mut(switches[2]).unwrap().enhanced_port0 = true;
    // Where `ibqos sm` attaches: port 1 of the first CA.
    let attach = attach_port(&topology, None).unwrap();
    let emulator = Emulator::new(topology).unwrap();
    let mut settings = settings("examples/opensm-qos.conf");
    settings.links.use_optimized_slvl = true;
    // The configuration the SM's sweeps run with, for what they should have programmed.
    let config = sweep_config(&settings, BTreeMap::new());
    let mut sm = EmulatedSm::new(
        EmulatedTransport::new(emulator, attach),
        Run::Once,
        &settings,
    );
    let (summaries, _) = sm.finish();
    let sweep = sm.manager.last_sweep().unwrap();
    assert_eq!(*sweep.phase(), Phase::SubnetUp, "{:?}", sweep.counts());
    assert_eq!(summaries[0].sweep, 1, "up in one sweep");
    let emu = sm.transport.emulator();
    let t = emu.topology();

    // Every linked port ACTIVE, running the OperVLs both ends can.
    for (a, b) in t.links() {
        let (pa, pb) = (emu.port_info(a).unwrap(), emu.port_info(b).unwrap());
        assert_eq!(
            (pa.port_state, pb.port_state),
            (PortState::Active, PortState::Active)
        );
        let vl_cap = |encoding| VlCount::from_encoding(encoding).unwrap();
        let common = oper_vls(
            vl_cap(pa.vl_cap),
            vl_cap(pb.vl_cap),
            Some(config.max_op_vls),
        );
        let common = common.encoding();
        assert_eq!(
            (pa.operational_vls, pb.operational_vls),
            (common, common),
            "{a} {b}"
        );
    }
    // Every QoS table the planner calls for, as the fabric now holds it.
    let sets = qos_sets(
        sweep.subnet(),
        &config.qos,
        sweep.qos_setup(),
        &**sweep.layering(),
        config.use_optimized_slvl,
    );
    assert!(!sets.is_empty());
    let all_pairs = TableModifier::SlToVl(SlToVlModifier::All);
    assert!(
        sets.iter().any(|set| set.modifier == all_pairs),
        "the optimized switches get one all-pairs SL2VL Set"
    );
    // SL2VL: what each (input, output) pair should hold once every Set has landed, later Sets
    // overriding earlier ones (an all-pairs Set, then all-inputs Sets for ports running other
    // OperVLs); a Get cannot use the all-ports bits, so each pair is read on its own.
    let mut pairs = BTreeMap::new();
    for set in &sets {
        let node = t.node_by_guid(set.node.0).unwrap();
        let modifier = u32::from(set.modifier);
        let (Attribute::SlToVlMappingTable(table), TableModifier::SlToVl(scope)) =
            (set.block.attribute(), set.modifier)
        else {
            let held = emu.get(
                PortRef::new(node, set.via.port),
                set.block.attribute().id(),
                modifier,
            );
            assert_eq!(
                held,
                Ok(set.block.attribute()),
                "{:#x} modifier {modifier:#x}",
                set.node.0,
            );
            continue;
        };
        let inputs = 0..=t.node(node).unwrap().num_ports();
        let outputs = set.ports.iter().map(|k| k.port);
        for (input, output) in scope.pairs(inputs, outputs) {
            // A CA has one table, under input 0 here and its own port in the emulator.
            let input = if t.node(node).unwrap().is_switch() {
                input
            } else {
                set.via.port
            };
            pairs.insert((node, input, output), table);
        }
    }
    for ((node, input, output), table) in &pairs {
        let held = emu.sl2vl(PortRef::new(*node, *input), *output);
        assert_eq!(held, Some(table), "{node:?} pair {input}->{output}");
    }
}

/// The Sets the fabric itself has handled so far, counted by the emulator.
fn sets_handled(emulator: &Emulator) -> u64 {
    emulator
        .handled_all()
        .filter(|(_, method, _)| *method == Method::Set)
        .map(|(_, _, count)| count)
        .sum()
}

/// `--dry-run`: after a forced sweep with one configuration, a dry run with another reads the
/// fabric, sends no Set (counted where the SMPs arrive), and lists exactly what differs: here
/// only the CA ports' low-priority VLArb block, which is all the second configuration changes.
#[test]
fn a_dry_run_sends_no_set_and_lists_exactly_what_differs() {
    let transport = EmulatedTransport::open("two-switch", None).unwrap();
    let example = repo("examples/opensm-qos.conf");
    let mut forced = EmulatedSm::new(transport, Run::Once, &settings("examples/opensm-qos.conf"));
    let (summaries, outcome) = forced.finish();
    assert_eq!(outcome, Outcome::SubnetUp);
    assert_eq!(summaries[0].mode, SweepMode::Forced);
    let forced_sweep = forced.manager.last_sweep().unwrap();
    assert_eq!(*forced_sweep.phase(), Phase::SubnetUp);
    let sets_before = sets_handled(forced.transport.emulator());
    assert!(sets_before > 0);

    let dir = tempfile::tempdir().unwrap();
    let changed = dir.path().join("opensm.conf");
    let mut text = std::fs::read_to_string(&example).unwrap();
    text.push_str("qos_ca_vlarb_low 0:8,1:200,3:16\n");
    std::fs::write(&changed, text).unwrap();
    let changed = ibqos_opensm::load(&changed).unwrap().settings;
    let mut dry_run = EmulatedSm::new(forced.transport, Run::DryRun, &changed);
    let (summaries, outcome) = dry_run.finish();
    assert_eq!(outcome, Outcome::DryRunDone);
    assert_eq!(summaries[0].mode, SweepMode::DryRun);
    let transport = &dry_run.transport;
    let dry = dry_run.manager.last_sweep().unwrap();

    assert_eq!(
        sets_handled(transport.emulator()),
        sets_before,
        "a dry run sent a Set"
    );
    let ca_ports: Vec<String> = transport
        .emulator()
        .topology()
        .cas()
        .flat_map(|(_, node)| {
            node.existing_ports()
                .filter(|(_, port)| port.peer.is_some())
                .map(|(number, _)| format!("{}[{number}]", Guid(node.guid)))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut listed: Vec<(String, u16, u32)> = dry
        .changes()
        .iter()
        .map(|c| (c.target.to_string(), u16::from(c.attribute), c.modifier))
        .collect();
    listed.sort();
    let mut expected: Vec<(String, u16, u32)> = ca_ports
        .into_iter()
        .map(|target| (target, u16::from(AttributeId::VlArbitrationTable), 0x1_0000))
        .collect();
    expected.sort();
    assert!(dry.changes().iter().all(|c| !c.sent));
    // Ports already holding their planned tables count as verified; those with a change left
    // unsent are neither verified nor failed.
    let qos = dry.qos_counts();
    assert_eq!(
        (qos.failed, qos.configured - qos.verified),
        (0, expected.len()),
        "{qos:?}"
    );
    assert_eq!(listed, expected, "{:#?}", dry.changes());
}

/// `ibqos fabric dump` (the fabric as loaded) and `ibqos sm --dump-fabric` (as the SM left it)
/// write the same format: before, no linked port is ACTIVE; after, every one is.
#[test]
fn fabric_dump_before_and_after_the_sm() {
    let dir = tempfile::tempdir().unwrap();
    let (before, after) = (
        dir.path().join("before.json"),
        dir.path().join("after.json"),
    );
    ibqos_ok(&[
        "fabric",
        "dump",
        "two-switch",
        "-o",
        before.to_str().unwrap(),
    ]);
    let (up, summary) = sm_once(&["--dump-fabric", after.to_str().unwrap()]);
    assert!(up, "{summary}");
    let read =
        |path: &Path| FabricDump::from_json(&std::fs::read_to_string(path).unwrap()).unwrap();
    let (before, after) = (read(&before), read(&after));
    let (was, now) = (linked_port_states(&before), linked_port_states(&after));
    assert_eq!(was.len(), 16, "both ends of the 8 links of two-switch");
    assert!(was.iter().all(|s| s != "Active"), "{was:?}");
    assert!(now.iter().all(|s| s == "Active"), "{now:?}");
    assert_eq!(
        before.nodes.keys().collect::<Vec<_>>(),
        after.nodes.keys().collect::<Vec<_>>()
    );
}

/// An SM at a managed switch (S1's port 0, as sites run it on a switch) brings the built-in
/// fabric up with no request failing, and leaves every port as an SM at H1 does: the same
/// states and QoS tables (only where the LIDs start differs: the SM's own port gets LID 1).
#[test]
fn an_sm_at_a_switch_programs_what_an_sm_at_a_ca_does() {
    let config = repo("examples/opensm-qos.conf");
    let after = |node: &str| {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("after.json");
        let fabric = format!("sim:two-switch@{node}");
        let (up, summary, log) = sm_once_logged(&[
            "--fabric",
            &fabric,
            "-F",
            config.to_str().unwrap(),
            "--dump-fabric",
            dump.to_str().unwrap(),
        ]);
        assert!(up, "at {node}: {summary}\n{log}");
        assert_eq!(summary["failed_requests"], 0, "at {node}: {summary}");
        assert_eq!(summary["qos_ports_failed"], 0, "at {node}: {summary}");
        let mut dump = FabricDump::from_json(&std::fs::read_to_string(&dump).unwrap()).unwrap();
        // The LIDs differ, and so do the LFTs they index.
        for node in dump.nodes.values_mut() {
            node.lft.clear();
            for port in node.ports.values_mut() {
                port.lid = 0;
            }
        }
        dump
    };
    let (from_switch, from_ca) = (after("S1"), after("H1"));
    assert!(
        linked_port_states(&from_switch)
            .iter()
            .all(|s| s == "Active"),
        "{from_switch:?}"
    );
    assert_eq!(from_switch, from_ca);
}

/// The PortState of every linked port in a dump (a switch's port 0 is no link's end).
fn linked_port_states(dump: &FabricDump) -> Vec<String> {
    dump.nodes
        .values()
        .flat_map(|n| n.ports.iter().filter(|(p, _)| n.kind == "ca" || **p != 0))
        .filter(|(_, p)| p.phys_state == "LinkUp")
        .map(|(_, p)| p.port_state.clone())
        .collect()
}

/// The built-in fabric after `ibqos sm -c CONFIG`, as the emulator holds it, and the SM's log.
fn programmed_with(config: &Path) -> (FabricDump, String) {
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("after.json");
    let (up, summary, log) = sm_once_logged(&[
        "-c",
        config.to_str().unwrap(),
        "--dump-fabric",
        dump.to_str().unwrap(),
    ]);
    assert!(up, "{summary}\n{log}");
    let text = std::fs::read_to_string(&dump).unwrap();
    (FabricDump::from_json(&text).unwrap(), log)
}

/// `config` with `program_policy_setup` turned off: the tables of the port classes only.
fn without_setup(dir: &Path, config: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(config).unwrap();
    let off = text.replace(
        "program_policy_setup = true",
        "program_policy_setup = false",
    );
    assert_ne!(off, text, "the configuration turns the setup on");
    let path = dir.join("off.toml");
    std::fs::write(&path, off).unwrap();
    path
}

/// With `program_policy_setup`, the qos-setup scopes' tables are on exactly the ports they choose,
/// read back from the emulator. Storage's ports and the switch ports facing them get the
/// vlarb-scope's high table and VLHighLimit. The switch ports towards storage get the across-to
/// SL-to-VL table from every input, and switch one's port 1 to port 2 entry gets its own. Every
/// other port and entry is what the port classes program without the section.
#[test]
fn qos_setup_tables_land_on_the_ports_their_groups_choose() {
    let dir = tempfile::tempdir().unwrap();
    let config = repo("ibqos/tests/data/qos-setup.toml");
    let (with, log) = programmed_with(&config);
    assert!(log.contains("qos-setup applied to the fabric"), "{log}");
    let (without, _) = programmed_with(&without_setup(dir.path(), &config));
    let h5 = "host-five HCA-1";
    let storage = [(h5, 1), (h5, 2), ("sw-one", 5), ("sw-two", 5)];
    let across_to: [u8; 16] = std::array::from_fn(|sl| (sl % 4) as u8);
    let mut compared = 0;
    for (guid, node) in &with.nodes {
        for (number, port) in &node.ports {
            let class = &without.nodes[guid].ports[number];
            let mut expected = class.clone();
            if storage.contains(&(node.name.as_str(), *number)) {
                expected.vl_high_limit = 9;
                expected.vlarb_high[..2].copy_from_slice(&[[1, 200], [2, 100]]);
                expected.vlarb_high[2..].fill([0, 0]);
                if node.kind == "switch" {
                    expected.sl2vl.values_mut().for_each(|t| *t = across_to);
                }
            }
            if (node.name.as_str(), *number) == ("sw-one", 2) {
                expected.sl2vl.insert(1, [3; 16]);
            }
            assert_eq!(port, &expected, "{}/P{number}", node.name);
            compared += 1;
        }
    }
    assert_eq!(
        compared, 24,
        "every port of two-switch: 2 x 9 switch ports, 6 HCA ports"
    );
}

/// Two scopes giving one port different tables: the SM says where, programs the port classes'
/// tables everywhere instead, and still brings the subnet up.
#[test]
fn conflicting_qos_setup_scopes_are_logged_at_their_place_and_not_programmed() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo("ibqos/tests/data/qos-setup.toml")).unwrap();
    let conflicting = format!(
        "{text}\n[[qos_policy.vlarb_scopes]]\ngroups = [\"Storage\"]\nvlarb_high = [\"1:1\"]\n"
    );
    let config = dir.path().join("conflict.toml");
    std::fs::write(&config, &conflicting).unwrap();
    let lines: Vec<&str> = conflicting.lines().collect();
    let line = lines
        .iter()
        .rposition(|l| *l == "[[qos_policy.vlarb_scopes]]")
        .unwrap()
        + 1;
    let (with, log) = programmed_with(&config);
    let place = format!("conflict.toml:{line}:1");
    let conflict = log
        .lines()
        .find(|l| l.contains("vlarb-scope 1 and vlarb-scope 2 both set vlarb-high"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(conflict.contains(&place), "{conflict}");
    assert!(conflict.contains("host-five HCA-1/P1"), "{conflict}");
    assert!(log.contains("qos-setup not programmed"), "{log}");
    let (without, _) = programmed_with(&without_setup(dir.path(), &config));
    assert_eq!(with, without);
}

/// `ibqos plan --topology` works from the net file, the SM from what it discovers: on every port
/// the plan lists, each value it shows is what the emulator holds after `ibqos sm`.
#[test]
fn plan_topology_shows_what_the_sm_programs_from_qos_setup() {
    let config = repo("ibqos/tests/data/qos-setup.toml");
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["plan", "-c", config.to_str().unwrap()])
        .args(["--topology", "two-switch", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (held, _) = programmed_with(&config);
    let ports = plan["ports"].as_array().unwrap();
    let listed: Vec<&str> = ports.iter().map(|p| p["port"].as_str().unwrap()).collect();
    assert_eq!(
        listed,
        [
            "sw-one/P2",
            "sw-one/P5",
            "sw-two/P5",
            "host-five HCA-1/P1",
            "host-five HCA-1/P2"
        ]
    );
    let pairs = |v: &Value| -> Vec<[u8; 2]> {
        serde_json::from_value(v.clone()).expect("[vl, weight] pairs")
    };
    let mut checked = 0;
    for port in ports {
        // Both key nodes by GUID as 0x and 16 hex digits.
        let node = &held.nodes[port["node_guid"].as_str().unwrap()];
        let number = port["number"].as_u64().unwrap() as u8;
        let holds = &node.ports[&number];
        if !port["vlarb_high"].is_null() {
            assert_eq!(
                pairs(&port["vlarb_high"]["value"]),
                holds.vlarb_high,
                "{port}"
            );
            assert_eq!(
                port["vl_high_limit"]["value"], holds.vl_high_limit,
                "{port}"
            );
            checked += 1;
        }
        for entry in port["sl2vl"].as_array().unwrap() {
            let vls: [u8; 16] = serde_json::from_value(entry["vls"].clone()).unwrap();
            for input in entry["inputs"].as_array().unwrap() {
                // A CA's one table is dumped under its own port number.
                let input = match node.kind.as_str() {
                    "switch" => input.as_u64().unwrap() as u8,
                    _ => number,
                };
                assert_eq!(holds.sl2vl[&input], vls, "{port} from {input}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 4 + 19, "4 ports' arbitration, 19 SL-to-VL entries");
}

/// `ibqos-vlarb.dump`, which OpenSM lacks: every port's VLHighLimit and VLArb tables as the
/// emulated switches and CAs hold them after the SM (`--dump-fabric`, read with the SMA's own
/// Gets), port by port.
#[test]
fn the_vlarb_dump_lists_every_ports_tables_as_the_fabric_holds_them() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    let conf = dir.path().join("opensm.conf");
    std::fs::write(
        &conf,
        format!(
            "qos TRUE\nlog_flags 0x43\ndump_files_dir {}/\n",
            dumps.display()
        ),
    )
    .unwrap();
    let fabric = dir.path().join("fabric.json");
    let (up, summary) = sm_once(&[
        "-F",
        conf.to_str().unwrap(),
        "--dump-fabric",
        fabric.to_str().unwrap(),
    ]);
    assert!(up, "{summary}");
    let held = FabricDump::from_json(&std::fs::read_to_string(&fabric).unwrap()).unwrap();
    let text = std::fs::read_to_string(dumps.join("ibqos-vlarb.dump")).unwrap();
    // Each port block starts with `<type> 0x<guid>, base LID n, "<description>"`; its rows are
    // `port limit : high | low`.
    let mut node = String::new();
    let mut rows = 0;
    for line in text.lines() {
        if let Some((_, description)) = line.split_once(", \"") {
            node = description.trim_end_matches('"').to_string();
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (head, tables) = line.split_once(" : ").unwrap();
        let mut head = head.split_whitespace();
        let port: u8 = head.next().unwrap().parse().unwrap();
        let limit: u8 = head.next().unwrap().parse().unwrap();
        let (high, low) = tables.split_once(" | ").unwrap();
        let port_held = held
            .nodes
            .values()
            .find(|n| n.name == node)
            .and_then(|n| n.ports.get(&port))
            .unwrap_or_else(|| panic!("{node}[{port}] in the fabric"));
        let shown = |entries: &[[u8; 2]]| {
            let used = entries
                .iter()
                .rposition(|e| *e != [0, 0])
                .map_or(0, |i| i + 1);
            entries[..used]
                .iter()
                .map(|[vl, weight]| format!("{vl}:{weight}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(limit, port_held.vl_high_limit, "{node}[{port}] VLHighLimit");
        assert_eq!(
            high.trim(),
            shown(&port_held.vlarb_high),
            "{node}[{port}] high"
        );
        assert_eq!(
            low.trim(),
            shown(&port_held.vlarb_low),
            "{node}[{port}] low"
        );
        rows += 1;
    }
    // Two-switch: 6 CA ports, 10 linked switch ports and S1's enhanced port 0.
    assert_eq!(rows, 17, "{text}");
}

/// A log that is no terminal (here a pipe, as under systemd or `2> file`) has no escape codes.
#[test]
fn a_log_to_a_pipe_is_plain_text() {
    let cache = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["sm", "--once", "--cache-dir"])
        .arg(cache.path())
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(log.contains("SUBNET UP"), "{log}");
    assert!(!log.contains('\x1b'), "escape codes in {log:?}");
}

/// `--log-file`: the daemon appends its log there, without colour; moved away and given
/// SIGUSR1 (what logrotate does), it writes the lines after the signal to a new file at the
/// path, and the moved file keeps the lines before.
#[test]
fn the_log_file_is_opened_again_on_sigusr1_without_losing_a_line() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ibqos.log");
    let moved = dir.path().join("ibqos.log.1");
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .arg("--log-file")
            .arg(&log)
            .env_remove("NO_COLOR")
            .spawn()
            .unwrap(),
    );
    let pid = daemon.0.id();
    // The summary's last line: the first sweep's lines are all written before the move.
    wait_for_text(&log, "time to SUBNET UP", LOG_WAIT);
    std::fs::rename(&log, &moved).unwrap();
    signal(pid, "USR1");
    // A reload logs a line and sweeps: all of it must land in the new file.
    signal(pid, "HUP");
    wait_for_text(&log, "configuration re-read", LOG_WAIT);
    wait_for_text(&log, "SUBNET UP", LOG_WAIT);
    signal(pid, "TERM");
    assert!(daemon.0.wait().unwrap().success());
    let before = std::fs::read_to_string(&moved).unwrap();
    let after = std::fs::read_to_string(&log).unwrap();
    assert!(
        before.contains("SUBNET UP") && !before.contains("re-read"),
        "{before}"
    );
    // The reload's lines, each after the one before.
    let mut from = 0;
    for line in [
        "configuration re-read",
        "discovering the fabric",
        "SUBNET UP",
    ] {
        let at = after[from..]
            .find(line)
            .unwrap_or_else(|| panic!("{line:?} after byte {from} of {after}"));
        from += at + line.len();
    }
    assert!(
        !before.contains('\x1b') && !after.contains('\x1b'),
        "escape codes"
    );
}

/// systemd's Type=notify, on a socket the test makes as systemd would (`NOTIFY_SOCKET`):
/// READY=1 once the port is open, a STATUS= after each sweep, RELOADING=1 with MONOTONIC_USEC=
/// on SIGHUP then READY=1 again, STOPPING=1 on SIGTERM.
#[test]
fn the_daemon_tells_systemd_it_is_ready_what_it_does_and_when_it_reloads_and_stops() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, path) = notify_socket(dir.path());
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .env("NOTIFY_SOCKET", &path)
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = daemon.0.id();
    let started = notified_until(&socket, "SUBNET UP");
    assert!(started[0].contains("READY=1"), "{started:?}");
    assert_eq!(
        started.last().unwrap().trim_end(),
        "STATUS=MASTER, SUBNET UP, 24 ports",
        "the two-switch fabric's 24 ports"
    );
    signal(pid, "HUP");
    let reload = notified_until(&socket, "READY=1");
    assert!(
        reload[0].contains("RELOADING=1") && reload[0].contains("MONOTONIC_USEC="),
        "{reload:?}"
    );
    signal(pid, "TERM");
    notified_until(&socket, "STOPPING=1");
    assert!(daemon.0.wait().unwrap().success());
}

/// SIGHUP reads opensm.conf again and says, option by option, what became of each change:
/// applied from the reload's sweep, waiting for a restart, or not used by ibqos; a key's value
/// is never shown. The new `log_flags` apply at once: the daemon started with errors only
/// (0x01) logs no milestone until the reload turns info (0x02) on.
#[test]
fn a_reload_reports_what_became_of_each_changed_option() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("opensm.conf");
    let log = dir.path().join("ibqos.log");
    std::fs::write(
        &conf,
        "log_flags 0x01\nsm_priority 1\nevent_plugin_name (null)\nsm_key 0x0000000000000001\n",
    )
    .unwrap();
    let (socket, notify) = notify_socket(dir.path());
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .arg("-F")
            .arg(&conf)
            .arg("--log-file")
            .arg(&log)
            .env("NOTIFY_SOCKET", &notify)
            .env_remove("RUST_LOG")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let pid = daemon.0.id();
    notified_until(&socket, "SUBNET UP");
    let quiet = std::fs::read_to_string(&log).unwrap();
    assert!(!quiet.contains("SUBNET UP"), "log_flags 0x01: {quiet}");
    std::fs::write(
        &conf,
        "log_flags 0x03\nsm_priority 5\nguid 0x0002c90000001234\nevent_plugin_name osmeventplugin\n\
         sm_key 0x00000000deadbeef\n",
    )
    .unwrap();
    signal(pid, "HUP");
    let reloaded = wait_for_text(&log, "configuration re-read", LOG_WAIT);
    wait_for_text(&log, "SUBNET UP", LOG_WAIT);
    signal(pid, "TERM");
    assert!(daemon.0.wait().unwrap().success());
    for line in [
        "option changed: applied from this sweep option=log_flags from=\"0x01\" to=\"0x03\"",
        "option changed: applied from this sweep option=sm_priority from=1 to=5",
        "option changed: takes effect only after a restart option=guid \
         from=0x0000000000000000 to=0x0002c90000001234",
        "option changed: ibqos does not use it option=event_plugin_name from=\"(null)\" \
         to=\"osmeventplugin\"",
        "option changed: applied from this sweep option=sm_key from=(secret) \
         to=(secret, changed)",
        "configuration re-read applied=3 need_restart=1 unused=1",
    ] {
        assert!(reloaded.contains(line), "{line:?} in {reloaded}");
    }
    assert!(!reloaded.to_lowercase().contains("deadbeef"), "{reloaded}");
}

/// `log_max_size` (megabytes): a log file that reaches it is moved to FILE.old and a new one
/// started, where OpenSM truncates it and loses it all; every record is whole on one side.
#[test]
fn a_log_file_at_log_max_size_is_moved_aside_not_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("opensm.conf");
    let log = dir.path().join("ibqos.log");
    std::fs::write(&conf, "log_max_size 1\n").unwrap();
    // Every MAD logged (0x20) on 54 switches and 648 hosts: about 6 MB of log.
    ibqos_ok(&[
        "sm",
        "--once",
        "--fabric",
        &format!("sim:{}", repo("fabric/data/fat-tree-648.net").display()),
        "-D",
        "0x23",
        "-F",
        conf.to_str().unwrap(),
        "--cache-dir",
        dir.path().to_str().unwrap(),
        "--log-file",
        log.to_str().unwrap(),
    ]);
    const MIB: usize = 1 << 20;
    let old = std::fs::read_to_string(dir.path().join("ibqos.log.old")).unwrap();
    let new = std::fs::read_to_string(&log).unwrap();
    let longest = old.lines().map(str::len).max().unwrap() + 1;
    assert!(
        (MIB..MIB + longest).contains(&old.len()),
        "the moved file holds one limit's worth: {} bytes",
        old.len()
    );
    assert!(
        new.len() < MIB,
        "the new file is under the limit: {}",
        new.len()
    );
    for text in [&old, &new] {
        assert!(text.ends_with('\n'));
        assert!(
            text.lines().all(|line| line.starts_with("20")),
            "every line a whole record"
        );
    }
    assert!(
        new.contains("SUBNET UP"),
        "the last records are in the new file"
    );
}

/// `ibqos ctl` run with `args`: whether it succeeded, and what it printed on standard output
/// and standard error.
fn ctl(socket: &Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["ctl", "--socket"])
        .arg(socket)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// [`ctl`], which must succeed; what it printed.
fn ctl_ok(socket: &Path, args: &[&str]) -> String {
    let (ok, out, err) = ctl(socket, args);
    assert!(ok, "ibqos ctl {args:?}: {err}");
    out
}

/// The control socket: `status` (text and JSON), `sweep`, `reload`, `dump` and `loglevel`
/// against a running daemon; the socket is mode 0600, another daemon cannot take it, and
/// `ibqos ctl` refuses what is not a socket and says why another user may not use it.
#[test]
fn ibqos_ctl_asks_a_running_daemon_and_refuses_what_it_may_not_use() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("opensm.conf");
    let dumps = dir.path().join("dumps");
    std::fs::write(&conf, format!("dump_files_dir {}\n", dumps.display())).unwrap();
    let socket = dir.path().join("run").join("ctl.sock");
    let (notified, notify) = notify_socket(dir.path());
    let mut daemon = Daemon(
        ibqos_sm(dir.path())
            .arg("-F")
            .arg(&conf)
            .arg("--control-socket")
            .arg(&socket)
            .env("NOTIFY_SOCKET", &notify)
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    notified_until(&notified, "SUBNET UP");
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the socket's mode");

    let status = ctl_ok(&socket, &["status"]);
    for line in [
        "SM State             : MASTER (no master and no higher SM found)",
        "SA State             : Ready",
        "Sweeps done                    : 1",
        "Last sweep                     : SUBNET UP, 7 nodes (2 switches), 24 ports, 8 LIDs",
        "0x0002c90000100001 MASTER      0        SELF",
    ] {
        assert!(status.contains(line), "{line:?} in\n{status}");
    }
    let json: Value = serde_json::from_str(&ctl_ok(&socket, &["status", "--json"])).unwrap();
    assert_eq!(json["sm_state"], "MASTER");
    assert_eq!(json["last_sweep"]["ports"], 24);

    assert_eq!(ctl_ok(&socket, &["sweep"]), "sweeping now\n");
    notified_until(&notified, "SUBNET UP");
    let json: Value = serde_json::from_str(&ctl_ok(&socket, &["status", "--json"])).unwrap();
    assert_eq!(json["sweeps"], 2, "the requested sweep ended");

    std::fs::write(
        &conf,
        format!("dump_files_dir {}\nsm_priority 3\n", dumps.display()),
    )
    .unwrap();
    assert_eq!(
        ctl_ok(&socket, &["reload"]),
        "sm_priority: 0 -> 3: applied from this sweep\n"
    );
    notified_until(&notified, "SUBNET UP");
    let listed = ctl_ok(&socket, &["dump"]);
    let lst = dumps.join("opensm-subnet.lst");
    assert_eq!(listed, format!("{}\n", lst.display()));
    assert!(
        std::fs::read_to_string(&lst)
            .unwrap()
            .contains("PortGUID:0002c90000100001")
    );
    assert!(ctl_ok(&socket, &["loglevel", "0x07"]).starts_with("log flags 0x07 (debug)"));

    // A second daemon may not take the socket of a live one.
    let other = tempfile::tempdir().unwrap();
    let refused = ibqos_sm(other.path())
        .arg("--control-socket")
        .arg(&socket)
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("another daemon answers on the control socket"),
        "{said}"
    );

    // Not a socket, and a user who may not reach it.
    let (ok, _, err) = ctl(&conf, &["status"]);
    assert!(!ok && err.contains("is not a socket"), "{err}");
    let (ok, _, err) = {
        let out = Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_ibqos"))
            .args(["ctl", "--socket"])
            .arg(&socket)
            .arg("status")
            .output()
            .unwrap();
        (
            out.status.success(),
            (),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(!ok && err.contains("permission denied on"), "{err}");

    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
    assert!(
        !socket.exists(),
        "the daemon removes its socket when it stops"
    );
}

/// Under systemd, with standard error the journal's stream (`JOURNAL_STREAM` names its device
/// and inode), each record is one line with its priority as `<N>` and no timestamp; a standard
/// error that is not that stream gets the usual lines.
#[test]
fn records_to_the_journal_carry_their_priority_and_no_timestamp() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let run = |journal_stream: &dyn Fn(&std::fs::Metadata) -> String| {
        let path = dir.path().join("stderr");
        let file = std::fs::File::create(&path).unwrap();
        let stream = journal_stream(&file.metadata().unwrap());
        let status = Command::new(env!("CARGO_BIN_EXE_ibqos"))
            .args(["sm", "--once", "--cache-dir"])
            .arg(dir.path())
            .env("JOURNAL_STREAM", stream)
            .env_remove("RUST_LOG")
            .stderr(file)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read_to_string(&path).unwrap()
    };
    let journal = run(&|m| format!("{}:{}", m.dev(), m.ino()));
    assert!(
        journal
            .lines()
            .any(|line| line == "<6>ibqos_sm::engine::sweep: SUBNET UP"),
        "{journal}"
    );
    assert!(
        !journal.contains("INFO"),
        "the priority says the level: {journal}"
    );
    let elsewhere = run(&|m| format!("{}:{}", m.dev(), m.ino() + 1));
    assert!(!elsewhere.contains("<6>"), "{elsewhere}");
    assert!(
        elsewhere.lines().any(|line| line.starts_with("20")
            && line.ends_with("INFO ibqos_sm::engine::sweep: SUBNET UP")),
        "{elsewhere}"
    );
}

/// A run that ends prints its summary on standard output, its result (so `sm --dry-run >
/// changes.txt` holds the changes), and only its log on standard error; a dry run's log and
/// summary say what it would program, never that it programmed or brought the subnet up.
#[test]
fn a_run_prints_its_summary_on_stdout_and_a_dry_run_says_what_it_would_do() {
    let cache = tempfile::tempdir().unwrap();
    let example = repo("examples/opensm-qos.conf");
    let run = |mode: &str| {
        let out = ibqos_sm(cache.path())
            .arg(mode)
            .arg("-F")
            .arg(&example)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        let (stdout, stderr) = (text(out.stdout), text(out.stderr));
        assert!(out.status.success(), "{stderr}");
        assert!(
            !stderr.contains("SMPs sent"),
            "a summary in the log: {stderr}"
        );
        assert!(stdout.contains("\nSMPs sent: "), "no summary: {stdout}");
        (stdout, stderr)
    };
    let (summary, log) = run("--once");
    assert!(summary.starts_with("subnet up: "), "{summary}");
    assert!(log.contains("programming QoS tables") && log.contains("SUBNET UP"));

    let (summary, log) = run("--dry-run");
    assert!(
        summary.starts_with("dry run: the subnet would come up: "),
        "{summary}"
    );
    assert!(summary.contains(" values would change:\n"), "{summary}");
    assert!(summary.contains("\nQoS: 17 ports planned\n"), "{summary}");
    assert!(!summary.contains("SUBNET UP"), "{summary}");
    for said in [
        "would program P_Key tables",
        "LIDs planned",
        "would program QoS tables",
        "switches planned",
        "dry run done: the subnet would come up",
    ] {
        assert!(log.contains(said), "no {said:?} in {log}");
    }
    for claim in ["programming", "SUBNET UP", "configured", "assigned"] {
        assert!(!log.contains(claim), "a dry run says {claim:?}: {log}");
    }
}

/// A daemon under the journal, sweeping every second on a fabric that stays as it is, with a
/// `dump_files_dir` it cannot write. Its first sweep's summary is logged, and the next sweeps' are
/// not (nothing changed). The dump file's warning comes once. Every line of its standard error
/// carries its priority, and its standard output stays empty.
#[test]
fn a_daemon_logs_a_summary_when_it_is_news_and_a_repeated_warning_once() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let blocked = dir.path().join("not-a-directory");
    std::fs::write(&blocked, "").unwrap();
    let conf = dir.path().join("opensm.conf");
    std::fs::write(
        &conf,
        format!("sweep_interval 1\ndump_files_dir {}\n", blocked.display()),
    )
    .unwrap();
    let (socket, notify) = notify_socket(dir.path());
    let (stdout, stderr) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let stderr_file = std::fs::File::create(&stderr).unwrap();
    let meta = stderr_file.metadata().unwrap();
    let mut daemon = Daemon(
        ibqos_sm(&dir.path().join("cache"))
            .arg("-F")
            .arg(&conf)
            .env("JOURNAL_STREAM", format!("{}:{}", meta.dev(), meta.ino()))
            .env("NOTIFY_SOCKET", &notify)
            .env_remove("RUST_LOG")
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(stderr_file)
            .spawn()
            .unwrap(),
    );
    for _ in 0..4 {
        notified_until(&socket, "STATUS=MASTER, SUBNET UP");
    }
    signal(daemon.0.id(), "TERM");
    assert!(daemon.0.wait().unwrap().success());
    let log = std::fs::read_to_string(&stderr).unwrap();
    assert_eq!(std::fs::read_to_string(&stdout).unwrap(), "");
    let unprefixed: Vec<&str> = log
        .lines()
        .filter(|line| {
            let digit = line
                .strip_prefix('<')
                .and_then(|rest| rest.strip_prefix(|c| ('0'..='7').contains(&c)));
            !digit.is_some_and(|rest| rest.starts_with('>'))
        })
        .collect();
    assert_eq!(unprefixed, Vec::<&str>::new(), "{log}");
    assert_eq!(
        log.matches("<6>ibqos::summary: subnet up: ").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("ibqos::summary: SMPs sent: ").count(),
        1,
        "{log}"
    );
    let warning = format!(
        "<4>ibqos::logging: cannot write the dump file {}/opensm-subnet.lst",
        blocked.display()
    );
    assert_eq!(log.matches(&warning).count(), 1, "{log}");
}
