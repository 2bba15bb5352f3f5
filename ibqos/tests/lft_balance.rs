//! `ibqos lft-balance`: the routes per switch port of a net file routed as the SM would, of a
//! dump, and of a live fabric, as text and JSON. The figures are checked by hand: on the
//! 16-host fat tree (4 leaves of 4 hosts, 2 spines) each leaf sends the 12 hosts of the other
//! leaves up its 2 uplinks, 6 on each, and each spine sends each leaf's 4 hosts down its port.
//! On a ring of 4 switches with 2 hosts each, minhop sends both hosts of the opposite switch
//! (2 hops either way) out of port 1 on S0 and S3: 4 routes against 2.

use std::path::{Path, PathBuf};

use serde_json::json;
use tempfile::TempDir;

mod common;
use common::{ibqos, json_report, ring_net};

fn fat_tree_16() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/data/fat-tree-16.net")
}

/// A generated ring of four switches, two hosts on each.
fn ring(dir: &TempDir) -> PathBuf {
    ring_net(dir, 4, 2)
}

fn stdout(args: &[&str]) -> String {
    let output = ibqos(args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn a_balanced_fat_tree_lists_every_switch_with_all() {
    let net = fat_tree_16();
    let net = net.to_str().unwrap();
    let headline =
        format!("LFT balance of {net} (routed by minhop): 6 switches, 16 CA and router LIDs\n");
    let verdict = "All 6 switches are balanced: on each, the ports toward other switches differ by at most \
         one route.\n";
    assert_eq!(
        stdout(&["lft-balance", "--topology", net]),
        format!("{headline}\n{verdict}")
    );
    let table = "\
switch  guid                ports  routes  min  max  spread  worst port  share  unrouted
L0      0x0000000000200000      2      12    6    6       0           5  50.0%         0
L1      0x0000000000200001      2      12    6    6       0           5  50.0%         0
L2      0x0000000000200002      2      12    6    6       0           5  50.0%         0
L3      0x0000000000200003      2      12    6    6       0           5  50.0%         0
S0      0x0000000000200004      4      16    4    4       0           1  25.0%         0
S1      0x0000000000200005      4      16    4    4       0           1  25.0%         0
";
    assert_eq!(
        stdout(&["lft-balance", "--topology", net, "--all"]),
        format!("{headline}\n{table}\n{verdict}")
    );
}

#[test]
fn a_fat_tree_as_json_has_every_port() {
    let net = fat_tree_16();
    let report = json_report(ibqos(&[
        "lft-balance",
        "--topology",
        net.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(report["routed_by"], "minhop");
    assert_eq!(report["unbalanced"], 0);
    assert_eq!(report["end_lids"], 16);
    let switches = report["switches"].as_array().unwrap();
    assert_eq!(switches.len(), 6);
    let leaf = &switches[0];
    assert_eq!(leaf["name"], "L0");
    let end_port = json!({"port": 1, "toward": "end_node", "routes": 1});
    assert_eq!(leaf["ports"][0], end_port);
    assert_eq!(
        leaf["ports"][5],
        json!({"port": 6, "toward": "switch", "routes": 6})
    );
    assert_eq!(leaf["worst"], json!({"port": 5, "routes": 6, "share": 0.5}));
    let spine = &switches[5];
    assert_eq!(
        (&spine["name"], &spine["routes"], &spine["spread"]),
        (&json!("S1"), &json!(16), &json!(0))
    );
}

#[test]
fn an_unbalanced_ring_shows_its_switches_and_their_ports() {
    let dir = TempDir::new().unwrap();
    let net = ring(&dir);
    let net = net.to_str().unwrap();
    let ports = |switch: &str| {
        format!(
            "{switch}
  port  toward    routes
     1  switch         4
     2  switch         2
     3  end node       1  not counted
     4  end node       1  not counted
"
        )
    };
    let expected = format!(
        "LFT balance of {net} (routed by minhop): 4 switches, 8 CA and router LIDs

switch  guid                ports  routes  min  max  spread  worst port  share  unrouted
S0      0x0000000000200000      2       6    2    4       2           1  66.7%         0
S3      0x0000000000200003      2       6    2    4       2           1  66.7%         0

{}
{}
2 of 4 switches are unbalanced: on each, the ports toward other switches differ by more than \
one route.
Worst: S0, port 1 carries 4 of its 6 routes (66.7%), spread 2.
",
        ports("S0 0x0000000000200000"),
        ports("S3 0x0000000000200003")
    );
    assert_eq!(
        stdout(&["lft-balance", "--topology", net, "--ports"]),
        expected
    );
    let report = json_report(ibqos(&["lft-balance", "--topology", net, "--json"]));
    assert_eq!(report["unbalanced"], 2);
    let spreads: Vec<&serde_json::Value> = report["switches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["spread"])
        .collect();
    assert_eq!(spreads, [&json!(2), &json!(0), &json!(0), &json!(2)]);
}

#[test]
fn the_routing_engine_decides_the_routes_counted() {
    let dir = TempDir::new().unwrap();
    // The wheel: a hub and a ring of four leaves. On a plain ring updn finds no root and
    // minhop routes in its place.
    let net = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/data/wheel.net");
    let report = |engine: &str| {
        json_report(ibqos(&[
            "lft-balance",
            "--topology",
            net.to_str().unwrap(),
            "--routing-engine",
            engine,
            "--json",
        ]))
    };
    let (minhop, updn) = (report("minhop"), report("updn"));
    assert_eq!(minhop["routed_by"], "minhop");
    assert_eq!(updn["routed_by"], "updn");
    // Up*/down* turns no path from down to up: L0 sends the far leaf's host through the hub
    // where minhop sends it round the ring, and L0's ports come out balanced.
    assert_eq!(
        (&minhop["unbalanced"], &updn["unbalanced"]),
        (&json!(3), &json!(2))
    );
    let conf = dir.path().join("opensm.conf");
    std::fs::write(&conf, "routing_engine updn\n").unwrap();
    let configured = json_report(ibqos(&[
        "lft-balance",
        "--topology",
        net.to_str().unwrap(),
        "-F",
        conf.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(configured["switches"], updn["switches"]);
}

/// What the emulated SM programmed, read back from its dump and from the live fabric, is
/// what the net file routed offline gives.
#[test]
fn a_dump_and_a_live_fabric_give_the_figures_of_their_lfts() {
    let dir = TempDir::new().unwrap();
    let net = ring(&dir);
    let net = net.to_str().unwrap();
    let held = dir.path().join("held.json");
    let fabric = format!("sim:{net}");
    let sm = ibqos(&[
        "sm",
        "--once",
        "--fabric",
        &fabric,
        "--dump-fabric",
        held.to_str().unwrap(),
    ]);
    assert!(sm.status.success(), "{sm:?}");
    let offline = json_report(ibqos(&["lft-balance", "--topology", net, "--json"]));
    let dumped = json_report(ibqos(&[
        "lft-balance",
        "--topology",
        net,
        "--dump",
        held.to_str().unwrap(),
        "--json",
    ]));
    assert_eq!(dumped["switches"], offline["switches"]);
    assert_eq!(
        (&dumped["source"], &dumped["routed_by"]),
        (&json!(held.to_str().unwrap()), &json!(null))
    );
    // A fabric emulated in its power-on state: no SM gave LIDs, so nothing is counted.
    let output = ibqos(&["lft-balance", "--fabric", &fabric, "--json"]);
    let live = json_report(output.clone());
    assert_eq!(
        (&live["end_lids"], &live["unbalanced"]),
        (&json!(0), &json!(0))
    );
    assert_eq!(live["switches"][0]["worst"], json!(null));
    let note = String::from_utf8_lossy(&output.stderr);
    assert!(note.contains("no SM has configured it"), "{note}");
}

#[test]
fn a_dump_of_another_fabric_or_without_lfts_is_an_error() {
    let dir = TempDir::new().unwrap();
    let net = ring(&dir);
    let failure = |topology: &Path, dump: &Path| {
        let output = ibqos(&[
            "lft-balance",
            "--topology",
            topology.to_str().unwrap(),
            "--dump",
            dump.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{output:?}");
        String::from_utf8(output.stderr).unwrap()
    };
    let power_on = dir.path().join("power-on.json");
    let written = ibqos(&[
        "fabric",
        "dump",
        net.to_str().unwrap(),
        "-o",
        power_on.to_str().unwrap(),
    ]);
    assert!(written.status.success(), "{written:?}");
    let error = failure(&net, &power_on);
    assert!(error.contains("power-on.json holds no LFT"), "{error}");
    let held = dir.path().join("held.json");
    let fabric = format!("sim:{}", net.to_str().unwrap());
    let sm = ibqos(
        &["sm", "--once", "--fabric", &fabric, "--dump-fabric"]
            .into_iter()
            .chain([held.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert!(sm.status.success(), "{sm:?}");
    let error = failure(&fat_tree_16(), &held);
    assert!(
        error.contains("held.json does not fit") && error.contains(r#""S0" (0x0000000000200004)"#),
        "{error}"
    );
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{\"nodes\": 3}").unwrap();
    let error = failure(&net, &garbage);
    assert!(error.contains("garbage.json is no fabric dump"), "{error}");
}

#[test]
fn the_sources_exclude_each_other() {
    for args in [
        &["lft-balance"][..],
        &["lft-balance", "--dump", "d.json"],
        &["lft-balance", "--topology", "a.net", "--fabric", "umad"],
        &[
            "lft-balance",
            "--fabric",
            "umad",
            "--routing-engine",
            "updn",
        ],
        &["lft-balance", "--topology", "a.net", "--retries", "3"],
        &[
            "lft-balance",
            "--topology",
            "a.net",
            "--dump",
            "d",
            "-F",
            "c",
        ],
    ] {
        let output = ibqos(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    }
}
