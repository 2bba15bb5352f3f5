//! torus-2QoS against OpenSM 3.3.23's: a torus with its torus-2QoS.conf, configured by
//! `ibqos sm --once` and by `opensm -o` on two fresh ibsims with the same opensm.conf. Every
//! switch's forwarding table (read with ibroute, compared by switch and destination GUID, see
//! `ibqos_tests::lfts`), every SL-to-VL table the engine writes (read with smpquery: every
//! switch input and output pair, every CA port), the PathRecord SL of every pair of end ports
//! (`ibqos_tests::path_sls`), and the multicast forwarding tables of the IPoIB broadcast group
//! once hosts joined it (read with `ibroute -M`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ibqos_fabric::generate::torus_2d;
use ibqos_mad::Status;
use ibqos_tests::lfts::lfts_match_opensm_logs;
use ibqos_tests::multicast::{McClient, settled_mfts};
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::path_sls::{path_sls_match_opensm, two_level_policy};
use ibqos_tests::readback::Failures;
use ibqos_tests::sa::{SaTools, Session, SmKind, SmSetup};
use ibqos_tests::scenario::Fabric;
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::smpquery::{SmpQuery, Target};
use ibqos_tests::{Ibsim, NodeKind, SimTools, TestDir};

/// An x by y torus of `torus_2d` (one host per switch) as a net file, and its torus-2QoS.conf
/// seeded at `S0_0`: both directions of every ring of radix 4, which needs them, else +x, +y.
fn torus(x: usize, y: usize, dir: &TestDir) -> (Fabric, PathBuf) {
    let topology = torus_2d(x, y, 1).unwrap();
    let name = format!("torus-{x}x{y}");
    let fabric = Fabric::generated(&name, &topology, dir.path()).unwrap();
    let guid = |name: &str| {
        let id = topology.node_by_name(name).unwrap();
        topology.node(id).unwrap().guid
    };
    let mut conf = format!("torus {x} {y} 1\n");
    for (dim, radix, plus, minus) in [
        ("x", x, "S1_0".to_string(), format!("S{}_0", x - 1)),
        ("y", y, "S0_1".to_string(), format!("S0_{}", y - 1)),
    ] {
        conf += &format!("{dim}p_link {:#x} {:#x}\n", guid("S0_0"), guid(&plus));
        if radix == 4 {
            conf += &format!("{dim}m_link {:#x} {:#x}\n", guid("S0_0"), guid(&minus));
        }
    }
    let path = dir.path().join("torus-2QoS.conf");
    std::fs::write(&path, conf).unwrap();
    (fabric, path)
}

fn options(conf: &std::path::Path, qos: bool) -> String {
    let qos = if qos { "TRUE" } else { "FALSE" };
    format!(
        "routing_engine torus-2QoS\nqos {qos}\ntorus_config {}\n",
        conf.display()
    )
}

/// Both SMs leave the same LFTs on the x by y torus, routed by torus-2QoS.
fn lfts_match_on_torus(x: usize, y: usize) {
    let dir = TestDir::new(&format!("routing-torus-{x}x{y}"));
    let (fabric, conf) = torus(x, y, &dir);
    lfts_match_opensm_logs(&fabric, &options(&conf, true), &dir).assert_routed_by("torus-2QoS");
}

#[test]
fn lfts_match_opensm_on_a_4x4_torus() {
    lfts_match_on_torus(4, 4);
}

#[test]
fn lfts_match_opensm_on_a_3x5_torus() {
    lfts_match_on_torus(3, 5);
}

/// Without `qos` both refuse with OpenSM's ERR 4E44 and route with minhop.
#[test]
fn without_qos_both_fall_back_to_minhop() {
    let dir = TestDir::new("routing-torus-noqos");
    let (fabric, conf) = torus(4, 4, &dir);
    let logs = lfts_match_opensm_logs(&fabric, &options(&conf, false), &dir);
    assert!(logs.opensm.contains("ERR 4E44"), "{}", logs.opensm);
    assert!(
        logs.opensm
            .contains("minhop tables configured on all switches")
    );
    let ibqos = logs
        .ibqos
        .lines()
        .find(|l| l.contains("fell back") && l.contains("torus-2QoS"))
        .unwrap_or_else(|| panic!("ibqos did not say torus-2QoS failed:\n{}", logs.ibqos));
    assert!(ibqos.contains("ERR 4E44"), "{ibqos}");
}

/// One SM's fabric: the ibsim it configured, kept running while its tables are read.
struct Configured {
    sim: Ibsim,
    _dir: TestDir,
}

fn configure(fabric: &Fabric, options: &str, opensm: bool, label: &str) -> Configured {
    let tools = SimTools::require();
    let dir = TestDir::new(label);
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    if opensm {
        run_opensm_once(
            &tools,
            &sim,
            &fabric.sm_node,
            options,
            &dir.subdir("opensm"),
        )
        .unwrap();
    } else {
        let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
        let conf = write_opensm_conf(&dir.subdir("ibqos"), options).unwrap();
        SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
            .opensm_conf(&conf)
            .run_up(&ibqos, &sim)
            .unwrap();
    }
    Configured { sim, _dir: dir }
}

/// One table a port holds, by node id, ports and kind, as smpquery prints it.
type Held = (String, u8, u8, String);

/// Every SL-to-VL table of the fabric (each switch's, output by output with a row per input,
/// and each CA port's) and every VL arbitration table (each switch port's and CA port's).
fn port_tables(fabric: &Fabric, sim: &Ibsim) -> Vec<Held> {
    let tools = SimTools::require();
    let query = SmpQuery::new(&tools, sim, &fabric.query_node);
    let mut tables = Vec::new();
    for node in fabric.topology.nodes() {
        let dr = |port: Option<u8>| {
            let path = match port {
                Some(port) => fabric
                    .topology
                    .dr_path_to_port(&fabric.query_node, &node.id, port),
                None => fabric.topology.dr_path(&fabric.query_node, &node.id),
            };
            Target::Dr(path.unwrap())
        };
        let mut held = |input: u8, output: u8, table: String| {
            tables.push((node.id.clone(), input, output, table));
        };
        if node.kind == NodeKind::Switch {
            for out in 0..=node.num_ports {
                for row in query.sl2vl(&dr(None), Some(out)).unwrap() {
                    held(row.in_port, row.out_port, format!("sl2vl {:?}", row.vls));
                }
                let vlarb = query.vlarb(&dr(None), Some(out)).unwrap();
                held(out, out, format!("vlarb {vlarb:?}"));
            }
        } else {
            for &port in node.links.keys() {
                for row in query.sl2vl(&dr(Some(port)), None).unwrap() {
                    held(port, 0, format!("sl2vl {:?}", row.vls));
                }
                let vlarb = query.vlarb(&dr(Some(port)), None).unwrap();
                held(port, port, format!("vlarb {vlarb:?}"));
            }
        }
    }
    tables
}

/// The tables of the `kinds` given (`sl2vl`, `vlarb`) both SMs leave on `fabric` with
/// `options`: none differs, and OpenSM's hold `engine_bits` somewhere (the engine wrote them).
fn port_tables_match(
    fabric: &Fabric,
    options: &str,
    kinds: &[&str],
    engine_bits: &str,
    label: &str,
) {
    let ours = configure(fabric, options, false, &format!("{label}-ibqos"));
    let theirs = configure(fabric, options, true, &format!("{label}-opensm"));
    let of_kinds = |tables: Vec<Held>| -> Vec<Held> {
        tables
            .into_iter()
            .filter(|t| kinds.iter().any(|kind| t.3.starts_with(kind)))
            .collect()
    };
    let (ours, theirs) = (
        of_kinds(port_tables(fabric, &ours.sim)),
        of_kinds(port_tables(fabric, &theirs.sim)),
    );
    let mut f = Failures::new(format!("{kinds:?} tables of torus-2QoS with {options:?}"));
    f.check(ours.len() == theirs.len(), || {
        format!("{} tables, OpenSM {}", ours.len(), theirs.len())
    });
    let differing: Vec<String> = ours
        .iter()
        .zip(&theirs)
        .filter(|(a, b)| a != b)
        .take(10)
        .map(|(a, b)| format!("  ibqos {a:?}\n  OpenSM {b:?}"))
        .collect();
    f.check(differing.is_empty(), || differing.join("\n"));
    f.check(theirs.iter().any(|t| t.3 == engine_bits), || {
        format!("OpenSM wrote no {engine_bits}")
    });
    f.assert_none();
}

/// The SL-to-VL tables torus-2QoS writes are OpenSM's, switch pair by pair and CA port by CA
/// port (the dateline, turn and QoS bits), and so are the VL arbitration tables, those of the
/// switch ports to hosts rewritten for the two QoS levels.
#[test]
fn port_tables_match_opensm_on_a_4x4_torus() {
    let dir = TestDir::new("routing-torus-tables");
    let (fabric, conf) = torus(4, 4, &dir);
    // Not the default table: the dateline and QoS bits are there.
    let engine_bits = "sl2vl [0, 1, 0, 1, 0, 1, 0, 1, 4, 5, 4, 5, 4, 5, 4, 5]";
    let options = options(&conf, true);
    let kinds = ["sl2vl", "vlarb"];
    port_tables_match(
        &fabric,
        &options,
        &kinds,
        engine_bits,
        "routing-torus-tables",
    );
}

/// With `max_op_vls 2` OpenSM's torus-2QoS counts 2 data VLs from the ports' VLCap of 8 (the
/// ports still run 8 when it routes): it warns that it has neither the turn bit nor the QoS
/// bit, and keeps the dateline bit alone. ibqos routes the same LFTs, says the same two things
/// and writes the same SL-to-VL tables. (The VLArb tables between switches differ: OpenSM's
/// QoS manager runs before its link manager and masks them to the 8 VLs the ports ran then.)
#[test]
fn on_two_data_vls_both_warn_and_keep_the_dateline_bit_alone() {
    let dir = TestDir::new("routing-torus-two-vls");
    let (fabric, conf) = torus(4, 4, &dir);
    let options = format!("{}max_op_vls 2\n", options(&conf, true));
    let logs = lfts_match_opensm_logs(&fabric, &options, &dir);
    logs.assert_routed_by("torus-2QoS");
    for needed in [4, 8] {
        let opensm = format!("(have switchport 2 need {needed})");
        assert!(logs.opensm.contains(&opensm), "{}", logs.opensm);
        let ibqos = format!("have=2 needed={needed}");
        assert!(logs.ibqos.contains(&ibqos), "{}", logs.ibqos);
    }
    let dateline_bit = "sl2vl [0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1]";
    let label = "routing-torus-two-vls-tables";
    port_tables_match(&fabric, &options, &["sl2vl"], dateline_bit, label);
}

/// The PathRecord SL of every ordered pair of end ports, switches' port 0 included, is
/// OpenSM's: the datelines the pair's path crosses, and only the QoS level of the policy's SL.
#[test]
fn path_sls_match_opensm_on_a_4x4_torus() {
    let dir = TestDir::new("routing-torus-path-sl");
    let (fabric, conf) = torus(4, 4, &dir);
    let options = options(&conf, true);
    // SLs that differ in bit 3, the QoS level torus-2QoS keeps: 9 between CAs, 2 toward
    // switches.
    let policy = two_level_policy(9, 2);
    let setup = SmSetup {
        options: &options,
        policy: Some(&policy),
        ..SmSetup::default()
    };
    let sls = path_sls_match_opensm(&fabric, &setup, &dir);
    let answered: Vec<u8> = sls.values().flatten().flatten().copied().collect();
    // Both QoS levels and dateline bits of both rings show, not the policy's SLs as they are.
    for sl in [0b0011, 0b1011, 0b0001, 0b1010] {
        assert!(answered.contains(&sl), "no pair has SL {sl}: {answered:?}");
    }
}

/// The Default partition, with its IPoIB broadcast group.
const PARTITIONS: &str = "Default=0x7fff,ipoib : ALL=full ;\n";

const PREFIX: u64 = 0xfe80_0000_0000_0000;

/// The multicast forwarding tables an SM of `kind` leaves on `fabric` once `hosts` joined the
/// IPoIB broadcast group, one after the other.
fn broadcast_mfts(
    kind: SmKind,
    fabric: &Fabric,
    options: &str,
    hosts: &[&str],
    dir: &TestDir,
) -> BTreeMap<(String, u16), Vec<u8>> {
    let tools = SaTools::require();
    let setup = SmSetup {
        options,
        partitions: Some(PARTITIONS),
        ..SmSetup::default()
    };
    let session = Session::start(kind, &tools, fabric, &setup, &dir.subdir(&kind.to_string()))
        .unwrap_or_else(|e| panic!("{kind}: {e}"));
    let sm_lid = session.lids[&(fabric.sm_node.clone(), 1)];
    for host in hosts {
        let answer = McClient::connect(session.sim(), host, sm_lid)
            .and_then(|mut client| client.join_ipoib_broadcast(PREFIX))
            .unwrap_or_else(|e| panic!("{kind}: {host} joins: {e}\n{}", session.sm_output()));
        assert_eq!(answer.status, Status::OK, "{kind}: {host} joins");
    }
    settled_mfts(&session, fabric, &tools)
        .unwrap_or_else(|e| panic!("{kind}: {e}\n{}", session.sm_output()))
}

/// torus-2QoS builds each multicast group's tree from its master spanning tree, rooted at the
/// middle of the torus, not OpenSM's generic tree: every switch's entry for the broadcast group
/// is OpenSM's once hosts all over the torus joined it.
#[test]
fn broadcast_mfts_match_opensm_on_a_4x4_torus() {
    let dir = TestDir::new("routing-torus-mfts");
    let (fabric, conf) = torus(4, 4, &dir);
    let options = options(&conf, true);
    let hosts: Vec<&str> = ["H1_0_0", "H3_1_0", "H0_2_0", "H2_3_0"]
        .into_iter()
        .filter(|&h| h != fabric.sm_node && h != fabric.query_node)
        .collect();
    assert_eq!(hosts.len(), 4, "the SM and the reader sit elsewhere");
    let theirs = broadcast_mfts(SmKind::OpenSm, &fabric, &options, &hosts, &dir);
    let ours = broadcast_mfts(SmKind::Ibqos, &fabric, &options, &hosts, &dir);
    assert!(
        theirs.len() > hosts.len(),
        "OpenSM's tree passes through more switches than the members': {theirs:?}"
    );
    let differing: Vec<String> = theirs
        .keys()
        .chain(ours.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|key| theirs.get(key) != ours.get(key))
        .map(|key| {
            format!(
                "  {key:?}: ibqos {:?}, OpenSM {:?}",
                ours.get(key),
                theirs.get(key)
            )
        })
        .collect();
    assert!(
        differing.is_empty(),
        "multicast forwarding tables of torus-2QoS on a 4x4 torus:\n{}",
        differing.join("\n")
    );
}
