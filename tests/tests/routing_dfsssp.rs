//! DFSSSP and SSSP against OpenSM 3.3.23's `dfsssp` and `sssp`:
//! - every switch's forwarding table, compared by switch and destination GUID (see
//!   `ibqos_tests::lfts`), each SM on its own ibsim of the fabric with the same opensm.conf;
//! - DFSSSP's layers: the engine in-process on OpenSM's LIDs gives every pair of LIDs an SL in
//!   the layer group OpenSM's debug log gives it;
//! - PathRecord SLs through both SAs (`ibqos_tests::path_sls`): ibqos's, and OpenSM's random
//!   draws, in that group for every pair of endports.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;

use ibqos_fabric::Topology;
use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::{Dfsssp, Engine, RoutingOptions};
use ibqos_qos::VlCount;
use ibqos_tests::TestDir;
use ibqos_tests::lfts::{
    Tables, compare_tables, destinations, lfts_match_opensm_logs, opensm_tables, tables_of,
    with_opensm_lids,
};
use ibqos_tests::path_sls::{Pair, path_sls_within};
use ibqos_tests::readback::Failures;
use ibqos_tests::readback::PortKey;
use ibqos_tests::sa::SmSetup;
use ibqos_tests::scenario::Fabric;
use ibqos_tests::trees::{layered, tree};

/// OpenSM routed with `engine` itself, not with a fallback.
fn routed_by(log: &str, engine: &str) -> bool {
    log.contains(&format!("{engine} tables configured"))
}

/// `engine` through both SMs on `fabric`; both must have routed with it, not a fallback.
fn both_route(engine: &str, fabric: &Fabric, dir: &TestDir) {
    let logs = lfts_match_opensm_logs(fabric, &format!("routing_engine {engine}\n"), dir);
    assert!(routed_by(&logs.opensm, engine), "{}", logs.opensm);
    assert!(!logs.ibqos.contains("fell back"), "{}", logs.ibqos);
}

/// `engine` on the tree `name` of `scripts/routing-trees`.
fn on_tree(engine: &str, name: &str) {
    let dir = TestDir::new(&format!("routing-{engine}-{name}"));
    let fabric = tree(name, &dir).unwrap();
    both_route(engine, &fabric, &dir);
}

/// `engine` on the fabric `name` of `scripts/routing-layered`.
fn on_layered(engine: &str, name: &str) {
    let dir = TestDir::new(&format!("routing-{engine}-{name}"));
    let fabric = layered(name, &dir).unwrap();
    both_route(engine, &fabric, &dir);
}

#[test]
fn dfsssp_on_fat_tree_16() {
    on_tree("dfsssp", "fat-tree-16");
}

#[test]
fn sssp_on_fat_tree_16() {
    on_tree("sssp", "fat-tree-16");
}

/// DFSSSP's weights balance the routes to switch LIDs too: 1,477 of its entries differ from
/// minhop's here.
#[test]
fn dfsssp_on_fat_tree_648() {
    on_tree("dfsssp", "fat-tree-648");
}

#[test]
fn sssp_on_fat_tree_648() {
    on_tree("sssp", "fat-tree-648");
}

#[test]
fn dfsssp_on_a_4x4_torus() {
    on_layered("dfsssp", "torus-4x4");
}

#[test]
fn dfsssp_on_a_3x3_mesh() {
    on_layered("dfsssp", "mesh-3x3");
}

#[test]
fn dfsssp_on_a_dragonfly() {
    on_layered("dfsssp", "dragonfly");
}

#[test]
fn sssp_on_a_4x4_torus() {
    on_layered("sssp", "torus-4x4");
}

#[test]
fn sssp_on_a_3x3_mesh() {
    on_layered("sssp", "mesh-3x3");
}

#[test]
fn sssp_on_a_dragonfly() {
    on_layered("sssp", "dragonfly");
}

/// OpenSM's DFSSSP layer of every pair of LIDs, from its debug log ("route from src_lid=S to
/// dest_lid=D on vl=V", printed after balancing), and the VLs it saw.
struct OpenSmLayers {
    layer: BTreeMap<(u16, u16), u8>,
    available: u8,
    /// The LID OpenSM gave each port, by net-file name.
    lids: BTreeMap<PortKey, u16>,
    /// The net file's fabric with OpenSM's LIDs.
    topology: Topology,
    /// OpenSM's forwarding tables.
    tables: Tables,
}

impl OpenSmLayers {
    /// Runs `opensm -o` with `conf` and debug logging on a fresh ibsim of `fabric`.
    fn of(fabric: &Fabric, conf: &str, dir: &TestDir) -> OpenSmLayers {
        let (tables, log) = opensm_tables(fabric, &format!("{conf}log_flags 0x0F\n"), dir).unwrap();
        let number = |line: &str, key: &str| -> u16 {
            let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len();
            let digits: String = line[at..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            digits.parse().unwrap()
        };
        let layer = log
            .lines()
            .filter(|l| l.contains("route from src_lid="))
            .map(|l| {
                let pair = (number(l, "src_lid="), number(l, "dest_lid="));
                (pair, u8::try_from(number(l, "on vl=")).unwrap())
            })
            .collect();
        let available = log
            .lines()
            .find(|l| l.contains("Virtual Lanes available: "))
            .map(|l| u8::try_from(number(l, "Virtual Lanes available: ")).unwrap())
            .unwrap_or_else(|| panic!("no VL count in OpenSM's log"));
        let owners = destinations(&dir.subdir("opensm").join("cache/guid2lid")).unwrap();
        let topo = parse_net_file(&fabric.netfile).unwrap().topology;
        let names: BTreeMap<u64, PortKey> = topo
            .endports()
            .filter_map(|ep| {
                let node = topo.node(ep.node)?;
                Some((topo.port(ep)?.guid, (node.name.clone(), ep.port)))
            })
            .collect();
        let lids = owners
            .iter()
            .filter(|(_, (_, offset))| *offset == 0)
            .map(|(&lid, (guid, _))| (names[guid].clone(), lid))
            .collect();
        OpenSmLayers {
            layer,
            available,
            lids,
            topology: with_opensm_lids(fabric, &owners),
            tables,
        }
    }

    /// The SLs OpenSM may answer for `pair`: its layer's group, from the layer's first SL to
    /// the next group's (or the last VL). A port with itself is on layer 0, the table's
    /// default. When a group holds no pair, the group below seems to span it: the range is
    /// then wider than OpenSM's, never narrower.
    fn range(&self, pair: &Pair) -> Option<RangeInclusive<u8>> {
        self.lid_range(self.lids[&pair.0], self.lids[&pair.1])
    }

    /// [`OpenSmLayers::range`] of a pair of LIDs.
    fn lid_range(&self, slid: u16, dlid: u16) -> Option<RangeInclusive<u8>> {
        let first = if slid == dlid {
            0
        } else {
            *self.layer.get(&(slid, dlid))?
        };
        let starts: BTreeSet<u8> = self.layer.values().copied().chain([0]).collect();
        let next = starts.range(first + 1..).next().copied();
        Some(first..=next.unwrap_or(self.available) - 1)
    }
}

/// DFSSSP's PathRecord SL for every pair of endports lies in the SLs OpenSM's layering gives
/// that pair, on both SMs (OpenSM asked several times, as it draws at random).
///
/// `max_op_vls 4` gives both SMs the 8 VLs: OpenSM routes the first sweep on the OperVLs
/// ibsim's ports start with (8), before its link manager sets them; ibqos on the VLs
/// `max_op_vls` allows.
fn dfsssp_sls_on(fabric: &Fabric, dir: &TestDir) {
    let conf = "routing_engine dfsssp\nmax_op_vls 4\n";
    let opensm = OpenSmLayers::of(fabric, conf, dir);
    assert!(
        opensm.layer.values().any(|&l| l > 0),
        "OpenSM used one layer"
    );
    let setup = SmSetup {
        options: conf,
        ..SmSetup::default()
    };
    let sls = path_sls_within(fabric, &setup, dir, |pair| opensm.range(pair));
    let used: BTreeSet<u8> = sls.values().flatten().flatten().copied().collect();
    assert!(used.len() > 1, "ibqos answered SLs {used:?}");
}

#[test]
fn dfsssp_path_sls_on_a_4x4_torus() {
    let dir = TestDir::new("routing-dfsssp-sls-torus");
    let fabric = layered("torus-4x4", &dir).unwrap();
    dfsssp_sls_on(&fabric, &dir);
}

/// DFSSSP in-process on OpenSM's LIDs and VL count gives OpenSM's tables, and for every pair
/// of LIDs OpenSM layered an SL of the same layer group: the layers themselves, without SAs.
fn dfsssp_layers_on(fabric: &Fabric, dir: &TestDir) {
    let opensm = OpenSmLayers::of(fabric, "routing_engine dfsssp\n", dir);
    let what = format!("{} with dfsssp", fabric.name);
    let vls = VlCount::ALL
        .into_iter()
        .find(|c| c.count() == opensm.available)
        .unwrap_or_else(|| panic!("OpenSM saw {} VLs", opensm.available));
    let routing = Dfsssp
        .unicast(&opensm.topology, &RoutingOptions::default(), vls)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut f = Failures::new(what);
    let ours = tables_of(&opensm.topology, &routing.routes);
    compare_tables(&mut f, &ours, &opensm.tables);
    for &(slid, dlid) in opensm.layer.keys() {
        let sl = routing.layering.path_sl(15, slid, dlid);
        let range = opensm.lid_range(slid, dlid).unwrap();
        f.check(range.contains(&sl), || {
            format!("LID {slid} -> {dlid}: SL {sl}, OpenSM's group {range:?}")
        });
    }
    f.assert_none();
}

#[test]
fn dfsssp_layers_on_a_4x4_torus() {
    let dir = TestDir::new("routing-dfsssp-layers-torus");
    dfsssp_layers_on(&layered("torus-4x4", &dir).unwrap(), &dir);
}

#[test]
fn dfsssp_layers_on_a_3x3_mesh() {
    let dir = TestDir::new("routing-dfsssp-layers-mesh");
    dfsssp_layers_on(&layered("mesh-3x3", &dir).unwrap(), &dir);
}

#[test]
fn dfsssp_layers_on_a_dragonfly() {
    let dir = TestDir::new("routing-dfsssp-layers-dragonfly");
    dfsssp_layers_on(&layered("dragonfly", &dir).unwrap(), &dir);
}
