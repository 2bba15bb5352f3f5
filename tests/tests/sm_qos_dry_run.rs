//! `ibqos sm --dry-run`: one sweep that reads the fabric back and lists every change it would
//! make, sending no Set.
//!
//! On a fresh ibsim of the two-switch fabric, `ibqos sm --once` programs config A. Then `--dry-run`
//! with config B must send no Set: its summary's smps list no Set method, and every change says
//! sent=false. It must leave every table and PortInfo field smpquery reads unchanged. It must list
//! exactly the tables where B's plan differs from what the fabric holds. The expected list is
//! computed here, independently of the SM. The fabric is read back with smpquery and compared per
//! port with `ibqos plan -F B` for that port's class: ca, swe on up switch ports, sw0 on an
//! enhanced port 0, nothing on a base port 0 or a down port. The comparison is table by table: each
//! SL2VL input/output pair, VLArb low, VLArb high.
//!
//! PortInfo changes are accounted for field by field. ibsim does not store VLHighLimit (reads
//! 0) or SubnetTimeOut (reads 31), so every dry run lists VLHighLimit where the plan's high
//! limit is not 0 and SubnetTimeOut where the SM programs it (every endport: CA ports and
//! switch port 0, to OpenSM's default 18), nor the partition enforcement bits, so every dry run
//! lists PartitionEnforcement on the switch ports facing a CA, where the partition manager turns
//! it on. NeighborMTU and VLStallCount are not stored either,
//! but ibsim's fixed values (2048, 7) equal what the SM programs on this fabric, so they must
//! not be listed. Any other PortInfo difference fails the test.
//!
//! Finally `--dry-run` with config A again: no SL2VL or VLArb change, only those PortInfo
//! fields.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use ibqos_tests::planner::{self, Plan, PlanCaps, PortClass, ibqos_binary};
use ibqos_tests::qos::{PortQos, QosReadback, compare_fabrics, differences, parse_target};
use ibqos_tests::readback::{Failures, PortKey, port_name};
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::sm::{SmFabric, SmInvocation, SmRun};
use ibqos_tests::{Ibsim, NodeKind, SimTools, TestDir};
use serde_json::Value;

/// What the SM programs as SubnetTimeOut (OpenSM's `subnet_timeout` default).
const SM_SUBNET_TIMEOUT: &str = "18";

const CONFIG_A: &str = "\
qos TRUE
qos_high_limit 2
qos_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0
qos_vlarb_low 0:16,1:16,2:16,3:16,4:8,5:8,6:8,7:8
qos_vlarb_high 0:4,1:4
";

/// B differs from A in the CA low table and high limit, the swe SL2VL (but only for some SLs),
/// and the sw0 high table; the swe VLArb tables and the CA SL2VL are the same.
const CONFIG_B: &str = "\
qos TRUE
qos_high_limit 2
qos_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0
qos_vlarb_low 0:16,1:16,2:16,3:16,4:8,5:8,6:8,7:8
qos_vlarb_high 0:4,1:4
qos_ca_vlarb_low 0:1,1:2,2:3,3:4
qos_ca_high_limit 5
qos_swe_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,15
qos_sw0_vlarb_high 7:7
";

/// One table or PortInfo field of one port, as the dry run names it and as this test expects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Item {
    /// An SL2VL table (input, output port); (0, 0) on a CA port.
    Sl2Vl(u8, u8),
    VlArbLow,
    VlArbHigh,
    /// A PortInfo field by the name the SM prints.
    PortInfo(String),
}

type Expected = BTreeSet<(PortKey, Item)>;

#[test]
fn dry_run_lists_exactly_the_differences_and_sends_nothing() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("qos-dry-run");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    let conf_a = write(dir.path(), "a.conf", CONFIG_A);
    let conf_b = write(dir.path(), "b.conf", CONFIG_B);
    let cache = dir.subdir("cache");
    let sm = |conf: &Path| {
        SmInvocation::new(SmFabric::Native, &fabric.sm_node, &cache).opensm_conf(conf)
    };
    sm(&conf_a)
        .run_up(&ibqos, &sim)
        .unwrap_or_else(|e| panic!("the forced sweep with config A: {e}"));
    let before = QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node).unwrap();

    for (name, conf) in [("B", &conf_b), ("A again", &conf_a)] {
        let what = format!("--dry-run with config {name} after a sweep with config A");
        let run = sm(conf)
            .args(&["--dry-run"])
            .run(&ibqos, &sim)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        let summary = run.summary().unwrap_or_else(|e| panic!("{what}: {e}"));
        let after = QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node).unwrap();
        let expected = expected_changes(&ibqos, conf, &fabric, &before);
        let mut f = Failures::new(&what);
        f.check(run.status.success(), || {
            format!("exit status {}\n{}", run.status, run.output())
        });
        f.check(summary.raw["mode"] == "dryrun", || {
            format!("summary mode is {}, not \"dryrun\"", summary.raw["mode"])
        });
        check_no_set(&mut f, &summary.raw);
        // Nothing changed: every table and field as before, compared port by port.
        compare_fabrics(
            &mut f,
            &after,
            &before,
            "fabric after the dry run",
            "fabric before",
        );
        let changed = differences(&before, &after);
        f.check(changed.is_empty(), || {
            format!("the dry run changed the fabric: {changed:?}")
        });
        let listed = listed_changes(&mut f, &summary.raw, &before, &run);
        for missing in expected.difference(&listed) {
            f.check(false, || {
                format!(
                    "{} {:?}: differs from the plan but the dry run does not list it",
                    port_name(&missing.0),
                    missing.1
                )
            });
        }
        for extra in listed.difference(&expected) {
            f.check(false, || {
                format!(
                    "{} {:?}: listed by the dry run but the fabric already holds the plan",
                    port_name(&extra.0),
                    extra.1
                )
            });
        }
        let tables = expected
            .iter()
            .filter(|(_, i)| !matches!(i, Item::PortInfo(_)))
            .count();
        if name == "B" {
            f.check(tables > 0, || {
                "config B changes no table: the test proves nothing".into()
            });
        } else {
            f.check(tables == 0, || {
                format!("config A again should change no table, expected {tables}")
            });
        }
        f.assert_none();
    }
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// The summary's smps list Gets only, and every change says it was not sent.
fn check_no_set(f: &mut Failures, summary: &Value) {
    let smps = summary["smps"].as_array().cloned().unwrap_or_default();
    f.check(!smps.is_empty(), || {
        format!("no smps in the summary: {summary}")
    });
    for entry in &smps {
        f.check(entry["method"] == "Get", || {
            format!(
                "the dry run sent {} {} SMPs: {entry}",
                entry["method"], entry["attribute"]
            )
        });
    }
    for change in summary["changes"].as_array().into_iter().flatten() {
        f.check(change["sent"] == false, || {
            format!("a dry-run change says it was sent: {change}")
        });
    }
}

/// The dry run's "changes" as items, each port named by node id.
fn listed_changes(f: &mut Failures, summary: &Value, rb: &QosReadback, run: &SmRun) -> Expected {
    let mut out = Expected::new();
    let Some(changes) = summary["changes"].as_array() else {
        f.check(false, || format!("no \"changes\" array\n{}", run.output()));
        return out;
    };
    for c in changes {
        let target = c["target"].as_str().unwrap_or_default();
        let Some((node, port)) =
            parse_target(target).and_then(|(g, p)| Some((rb.node_of(g)?.to_owned(), p)))
        else {
            f.check(false, || format!("change names no port of the fabric: {c}"));
            continue;
        };
        let modifier = c["modifier"]
            .as_str()
            .and_then(|m| u32::from_str_radix(m.trim_start_matches("0x"), 16).ok())
            .unwrap_or(u32::MAX);
        let is_switch = rb.ports.contains_key(&(node.clone(), 0));
        let key = (node, port);
        match c["attribute"].as_str().unwrap_or_default() {
            "SlToVlMappingTable" => {
                let (input, output) = if is_switch {
                    (((modifier >> 8) & 0xff) as u8, (modifier & 0xff) as u8)
                } else {
                    (0, 0)
                };
                f.check(!is_switch || output == port, || {
                    format!("SL2VL change of output {output} names port {port}: {c}")
                });
                out.insert((key, Item::Sl2Vl(input, output)))
            }
            "VlArbitrationTable" => match modifier >> 16 {
                1 | 2 => out.insert((key, Item::VlArbLow)),
                3 | 4 => out.insert((key, Item::VlArbHigh)),
                _ => {
                    f.check(false, || format!("VLArb change of an unknown block: {c}"));
                    false
                }
            },
            "PortInfo" => {
                for d in c["differences"].as_array().into_iter().flatten() {
                    let text = d.as_str().unwrap_or_default();
                    let field = text.split(':').next().unwrap_or_default().trim();
                    out.insert((key.clone(), Item::PortInfo(field.to_owned())));
                }
                false
            }
            other => {
                f.check(false, || {
                    format!("unexpected {other} change in a dry run: {c}")
                });
                false
            }
        };
    }
    out
}

/// Every table and PortInfo field where `conf`'s plan differs from what `rb` holds.
fn expected_changes(ibqos: &Path, conf: &Path, fabric: &Fabric, rb: &QosReadback) -> Expected {
    let mut out = Expected::new();
    // One `ibqos plan` per (class, capabilities), not per table.
    let plans = std::cell::RefCell::new(HashMap::new());
    let plan = |class: PortClass, port: &PortQos| -> Plan {
        let tables = port.vlarb.as_ref();
        let caps = PlanCaps {
            vls: port.info.vl_cap,
            oper_vls: port.info.oper_vls,
            low_cap: tables.map_or(0, |t| t.low_cap),
            high_cap: tables.map_or(0, |t| t.high_cap),
        };
        plans
            .borrow_mut()
            .entry((class.name(), caps))
            .or_insert_with(|| planner::plan(ibqos, conf, class, caps).unwrap())
            .clone()
    };
    for (key, port) in &rb.ports {
        let node = fabric.topology.node(&key.0).unwrap();
        let (out_port, linked) = (key.1, node.peer(key.1).is_some());
        let mut add = |item: Item| out.insert((key.clone(), item));
        // The class of each (input, output) SL2VL pair and of the port's VLArb tables.
        let (sl2vl_class, vlarb_class): (Box<dyn Fn(u8) -> Option<PortClass>>, _) =
            match (node.kind, out_port, node.enhanced_port0) {
                (NodeKind::Ca, ..) => (Box::new(|_| Some(PortClass::Ca)), Some(PortClass::Ca)),
                (NodeKind::Switch, 0, true) => (
                    Box::new(|input| {
                        Some(if input == 0 {
                            PortClass::Sw0
                        } else {
                            PortClass::Swe
                        })
                    }),
                    Some(PortClass::Sw0),
                ),
                (NodeKind::Switch, 0, false) => (Box::new(|_| None), None),
                (NodeKind::Switch, _, _) if linked => {
                    (Box::new(|_| Some(PortClass::Swe)), Some(PortClass::Swe))
                }
                _ => (Box::new(|_| None), None),
            };
        for row in &port.sl2vl {
            if let Some(class) = sl2vl_class(row.in_port)
                && plan(class, port).sl2vl != row.vls
            {
                add(Item::Sl2Vl(row.in_port, row.out_port));
            }
        }
        if let (Some(class), Some(tables)) = (vlarb_class, &port.vlarb) {
            let p = plan(class, port);
            if p.vlarb_low != tables.low {
                add(Item::VlArbLow);
            }
            if p.vlarb_high != tables.high {
                add(Item::VlArbHigh);
            }
            // VLHighLimit is programmed with the tables; ibsim reads it back as 0.
            if p.vl_high_limit != port.info.vl_high_limit {
                add(Item::PortInfo("VLHighLimit".into()));
            }
        }
        // A switch port facing a CA enforces partitions; ibsim keeps no enforcement bits.
        let faces_ca = node
            .peer(out_port)
            .and_then(|(peer, _)| fabric.topology.node(peer))
            .is_some_and(|peer| peer.kind != NodeKind::Switch);
        if node.kind == NodeKind::Switch && out_port != 0 && faces_ca {
            add(Item::PortInfo("PartitionEnforcement".into()));
        }
        // SubnetTimeOut is programmed on endports; ibsim reads it back as 31.
        let endport = node.kind != NodeKind::Switch || out_port == 0;
        let held = port.info.fields.get("SubnetTimeout").map(String::as_str);
        if endport && held != Some(SM_SUBNET_TIMEOUT) {
            add(Item::PortInfo("SubnetTimeOut".into()));
        }
    }
    out
}
