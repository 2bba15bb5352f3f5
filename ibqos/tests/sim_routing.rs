//! `ibqos sim` routes with the configured routing engines: on the wheel of fabric/data (a hub
//! switch C and a ring of four leaves around it), minhop sends H0_0's traffic to H2_0 round the
//! ring through L3, while up*/down* refuses that path (it turns down, then up) and goes through
//! the root, C. On a three-level fat tree ftree and minhop pick different cores. The links the
//! report loads are the path the engine's own tables give.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ibqos_fabric::generate::assign_lids;
use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::{Engine, FatTree, MinHop, RoutingOptions, UpDown, trace};
use ibqos_fabric::{PortRef, Topology};
use ibqos_qos::VlCount;
use tempfile::TempDir;

mod common;
use common::{generated_net, ibqos, json_report, scratch_file};

/// One flow across the wheel, from H0_0 to H2_0.
const TRAFFIC: &str = r#"
duration_us = 20

[link]
speed = "QDR"
width = 4
propagation_ns = 5
vl_buffer_bytes = 65536
credit_latency_ns = 100

[[flow]]
name = "across"
src = "H0_0"
dst = "H2_0"
sl = 0
payload = 4096
"#;

/// The wheel: five switches, one host on each of the four leaves.
fn wheel() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/data/wheel.net")
}

/// The links a report carries bytes on, as `from -> to`.
fn loaded_links(net: &Path, traffic: &Path, args: &[&str]) -> BTreeSet<String> {
    let mut all = vec!["sim", "--topology", net.to_str().unwrap()];
    all.extend(args);
    all.extend(["--traffic", traffic.to_str().unwrap(), "--json"]);
    let report = json_report(ibqos(&all));
    report["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|link| link["bytes"].as_u64().unwrap() > 0)
        .map(|link| format!("{} -> {}", link["from"], link["to"]).replace('"', ""))
        .collect()
}

/// The links from `src` to `dst` on the tables `engine` computes, named as a report names them.
fn path_of(net: &Path, engine: &dyn Engine, src: &str, dst: &str) -> BTreeSet<String> {
    let mut topo = parse_net_file(net).unwrap().topology;
    // The simulator's LIDs: a net file without them gets them in endport order.
    assign_lids(&mut topo, 0).unwrap();
    let routes = engine
        .unicast(&topo, &RoutingOptions::default(), VlCount::Fifteen)
        .unwrap()
        .routes;
    let end = |name: &str| PortRef::new(topo.node_by_name(name).unwrap(), 1);
    let dlid = topo.port(end(dst)).unwrap().lid;
    let hops = trace(&topo, &routes, end(src), dlid).unwrap();
    let name =
        |topo: &Topology, p: PortRef| format!("{}[{}]", topo.node(p.node).unwrap().name, p.port);
    hops[..hops.len() - 1]
        .iter()
        .map(|&out| {
            format!(
                "{} -> {}",
                name(&topo, out),
                name(&topo, topo.peer(out).unwrap())
            )
        })
        .collect()
}

#[test]
fn sim_routes_with_the_configured_engine() {
    let dir = TempDir::new().unwrap();
    let net = wheel();
    let traffic = scratch_file(&dir, "traffic.toml", TRAFFIC);
    let conf = |name: &str, text: &str| scratch_file(&dir, name, text);
    let minhop_conf = conf("minhop.conf", "qos TRUE\n");
    let updn_conf = conf("updn.conf", "qos TRUE\nrouting_engine updn\n");
    let listed_conf = conf("listed.conf", "qos TRUE\nrouting_engine file,foo,updn\n");
    let run = |args: &[&str]| loaded_links(&net, &traffic, args);
    let path = |engine: &dyn Engine| path_of(&net, engine, "H0_0", "H2_0");
    let (minhop, updn) = (path(&MinHop), path(&UpDown));
    assert_ne!(minhop, updn, "the engines route this flow apart");
    assert!(minhop.contains("L0[2] -> L3[1]"), "{minhop:?}");
    assert!(updn.contains("L0[3] -> C[1]"), "{updn:?}");

    assert_eq!(run(&["-F", minhop_conf.to_str().unwrap()]), minhop);
    assert_eq!(run(&["-F", updn_conf.to_str().unwrap()]), updn);
    assert_eq!(run(&["-F", listed_conf.to_str().unwrap()]), updn);
    let option = [
        "-F",
        minhop_conf.to_str().unwrap(),
        "--routing-engine",
        "updn",
    ];
    assert_eq!(
        run(&option),
        updn,
        "--routing-engine in place of the file's"
    );
}

/// On a three-level fat tree (k = 4), minhop sends H0_0_0's traffic to H1_1_0 through core C0
/// and ftree through C1: minhop balances each switch's ports in destination order, where ftree
/// lays each destination's routes top down from its place in the tree. With `routing_engine
/// ftree` the report loads ftree's path.
#[test]
fn sim_routes_a_fat_tree_with_ftree() {
    let dir = TempDir::new().unwrap();
    let net = generated_net(&dir, "k4.net", &["fat-tree3", "--radix", "4"]);
    let flow = TRAFFIC.replace("H0_0", "H0_0_0").replace("H2_0", "H1_1_0");
    let traffic = scratch_file(&dir, "traffic.toml", &flow);
    let minhop_conf = scratch_file(&dir, "minhop.conf", "qos TRUE\n");
    let ftree_conf = scratch_file(&dir, "ftree.conf", "qos TRUE\nrouting_engine ftree\n");
    let path = |engine: &dyn Engine| path_of(&net, engine, "H0_0_0", "H1_1_0");
    let (minhop, ftree) = (path(&MinHop), path(&FatTree));
    assert!(minhop.contains("A0_0[3] -> C0[1]"), "{minhop:?}");
    assert!(ftree.contains("A0_0[4] -> C1[1]"), "{ftree:?}");

    let run = |conf: &Path| loaded_links(&net, &traffic, &["-F", conf.to_str().unwrap()]);
    assert_eq!(run(&minhop_conf), minhop);
    assert_eq!(run(&ftree_conf), ftree);
}

#[test]
fn sim_names_each_engine_passed_over_and_fails_when_none_routes() {
    let dir = TempDir::new().unwrap();
    let net = wheel();
    let traffic = scratch_file(&dir, "traffic.toml", TRAFFIC);
    let conf = scratch_file(&dir, "opensm.conf", "qos TRUE\n");
    let sim = |engines: &str| {
        ibqos(&[
            "sim",
            "--topology",
            net.to_str().unwrap(),
            "-F",
            conf.to_str().unwrap(),
            "--routing-engine",
            engines,
            "--traffic",
            traffic.to_str().unwrap(),
        ])
    };
    let output = sim("file,updn");
    assert!(output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr,
        "note: routing engine `file` passed over: OpenSM has this routing engine, ibqos does \
         not yet\n"
    );

    let output = sim("file,no_fallback");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no routing engine could route the fabric: file: OpenSM has"),
        "{stderr}"
    );
}

/// A fabric dump carries the LFTs the SM left: with `--tables`, the switches forward by them
/// (here up*/down*'s, though no configuration names an engine), and `--routing-engine` routes
/// in their place.
#[test]
fn sim_with_tables_forwards_by_the_dumps_lfts() {
    let dir = TempDir::new().unwrap();
    let net = wheel();
    let traffic = scratch_file(&dir, "traffic.toml", TRAFFIC);
    let conf = scratch_file(&dir, "opensm.conf", "qos TRUE\nrouting_engine updn\n");
    let dump = dir.path().join("after.json");
    let cache = dir.path().join("cache");
    let fabric = format!("sim:{}", net.display());
    let sm = ibqos(&[
        "sm",
        "--once",
        "--cache-dir",
        cache.to_str().unwrap(),
        "--fabric",
        &fabric,
        "-F",
        conf.to_str().unwrap(),
        "--dump-fabric",
        dump.to_str().unwrap(),
    ]);
    assert!(
        sm.status.success(),
        "{}",
        String::from_utf8_lossy(&sm.stderr)
    );
    let text = std::fs::read_to_string(&dump).unwrap();
    let held = ibqos_fabric::dump::FabricDump::from_json(&text).unwrap();
    let switches = held.nodes.values().filter(|n| n.kind == "switch");
    // Five switches, each routing the nine LIDs of the wheel (four hosts, five switches).
    let routed: Vec<usize> = switches.map(|n| n.lft.len()).collect();
    assert_eq!(routed, [9; 5]);

    let run = |args: &[&str]| loaded_links(&net, &traffic, args);
    let tables = ["--tables", dump.to_str().unwrap()];
    assert_eq!(run(&tables), path_of(&net, &UpDown, "H0_0", "H2_0"));
    let minhop = [&tables[..], &["--routing-engine", "minhop"]].concat();
    assert_eq!(run(&minhop), path_of(&net, &MinHop, "H0_0", "H2_0"));
}
