//! OpenSM as the oracle for `ibqos plan`.
//!
//! For each opensm.conf below, start a fresh ibsim on the two-switch fabric. Run the real OpenSM
//! 3.3.23 once (`opensm -o`: one heavy sweep, then exit). Read back with smpquery the SL2VL and
//! VLArb tables it programmed on every port. Check each equals what `ibqos plan` prints for that
//! port's class and capabilities with the same opensm.conf.
//!
//! Why a fresh ibsim per config: ibsim keeps everything an SM wrote after the SM exits, and
//! OpenSM never reads tables back (it compares against its own cache, empty at start), so a
//! second run on the same instance could leave the first run's tables wherever it skips a port.
//!
//! Reads use directed routes from the querying client's port, computed from the net file, so
//! they depend only on the links being physically up, not on the LIDs and forwarding tables the
//! SM set up: a table mismatch never hides behind a routing failure.
//!
//! The fabric (fabric/data/two-switch.net): S1 (8 ports, enhanced port 0) and S2 (8 ports, base
//! port 0) joined by two links; H1, H2 on S1; H3, H4 on S2; H5 with a port on each. Every ibsim
//! port has VLCap 8 VLs, VLArb caps 8/8 and starts with OperVLs 8 VLs.
//!
//! Not compared: VLHighLimit. OpenSM sets it (qos_*_high_limit) in the link manager's PortInfo
//! Set, but ibsim does not store that field; it always reads back 0.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::path::{Path, PathBuf};

use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::{self, Plan, PlanCaps, PortClass};
use ibqos_tests::smpquery::{
    IBSIM_DEFAULT_SL2VL, PortInfo, SmpQuery, Target, VlArbEntry, VlArbTables,
};
use ibqos_tests::{Ibsim, Node, NodeKind, SimTools, TestDir, Topology};

const NET_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fabric/data/two-switch.net");

/// OpenSM attaches here; its port is programmed like every other CA port.
const SM_NODE: &str = "H1";
/// smpquery attaches here; directed routes start at its port 1.
const QUERY_NODE: &str = "H2";

/// OpenSM's default `head_of_queue_lifetime` (switch ports facing a switch) and
/// `leaf_head_of_queue_lifetime` (switch ports facing a CA).
const DEFAULT_HOQ_SWITCH: u8 = 0x12;
const DEFAULT_HOQ_LEAF: u8 = 0x10;

/// One opensm.conf and what it should do beyond the QoS tables.
struct Case {
    name: &'static str,
    /// opensm.conf lines (the harness adds the file paths).
    options: &'static str,
    /// HOQLife OpenSM programs on switch ports facing a switch, and facing a CA.
    hoq_switch: u8,
    hoq_leaf: u8,
    /// `max_op_vls` as a number of VLs (OpenSM's default 5 encodes 15 VLs).
    max_op_vls: u8,
}

/// Only `qos TRUE`: every table from OpenSM's compiled-in defaults.
#[test]
fn defaults_only() {
    run_case(&Case {
        name: "defaults",
        options: "qos TRUE\n",
        hoq_switch: DEFAULT_HOQ_SWITCH,
        hoq_leaf: DEFAULT_HOQ_LEAF,
        max_op_vls: 15,
    });
}

/// Generic `qos_*` values, the same for every class.
#[test]
fn generic_tables() {
    run_case(&Case {
        name: "generic",
        options: "\
qos TRUE
qos_max_vls 4
qos_high_limit 9
qos_vlarb_high 0:8,1:16
qos_vlarb_low 0:32,1:32,2:32,3:32
qos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,15
",
        hoq_switch: DEFAULT_HOQ_SWITCH,
        hoq_leaf: DEFAULT_HOQ_LEAF,
        max_op_vls: 15,
    });
}

/// Different tables per class, each field falling back to the generic value on its own, and
/// non-default head-of-queue lifetimes.
#[test]
fn per_class_tables() {
    run_case(&Case {
        name: "per-class",
        options: "\
qos TRUE
# Generic values: the fallback for every field a class leaves unset.
qos_vlarb_high 0:5,1:5
qos_vlarb_low 0:1,1:1,2:1,3:1
qos_sl2vl 0,0,0,0,1,1,1,1,2,2,2,2,3,3,3,3
# CA ports: their own SL2VL and low table; the high table falls back.
qos_ca_sl2vl 0,1,2,3,4,5,6,7,7,6,5,4,3,2,1,0
qos_ca_vlarb_low 0:10,1:20,2:30,3:40,4:50,5:60,6:70,7:80
# Switch external ports: all three of their own.
qos_swe_sl2vl 7,6,5,4,3,2,1,0,7,6,5,4,3,2,1,15
qos_swe_vlarb_low 7:100,6:101,5:102,4:103,3:104,2:105,1:106,0:107
qos_swe_vlarb_high 2:64,3:32
# Enhanced switch port 0 (S1 only): its own SL2VL and high table; the low table falls back.
qos_sw0_sl2vl 1,1,1,1,2,2,2,2,3,3,3,3,4,4,4,4
qos_sw0_vlarb_high 6:9,7:9
# Routers: there are none, so these must not show up anywhere.
qos_rtr_sl2vl 5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5
qos_rtr_vlarb_low 5:255
qos_rtr_vlarb_high 5:255
head_of_queue_lifetime 0x0c
leaf_head_of_queue_lifetime 0x0a
",
        hoq_switch: 0x0c,
        hoq_leaf: 0x0a,
        max_op_vls: 15,
    });
}

/// Spellings OpenSM accepts and silently mangles: its value parser reads `strtoul(base 0)` and
/// skips one character whatever it is (`osm_qos.c:569-597`), and out-of-range VLs are masked with
/// the OperVLs (`sl2vl_update_table`, `osm_qos.c:257-299`).
#[test]
fn lossy_spellings() {
    run_case(&Case {
        name: "lossy",
        options: "\
qos TRUE
# VLs at or above the 8 operational VLs are masked, not clamped: 9 -> 1, 12 -> 4, 13 -> 5,
# 14 -> 6, 8 -> 0; values are cut to 4 bits (16 -> 0, 17 -> 1); VL15 (drop) is kept.
qos_ca_sl2vl 0,9,12,3,4,5,6,7,8,13,14,15,16,17,1,2
# VLArb VLs are taken mod 15 (15 -> 0, 16 -> 1, -1 = ULONG_MAX -> 0); hex is read; weights
# are cut to a byte (256 -> 0, 300 -> 44).
qos_ca_vlarb_high 15:10,16:3,-1:5,0x1:0x40,2:256,3:300
# Any single character separates two numbers.
qos_ca_vlarb_low 0 4 1 5;2 6
# A blank before a separator shifts every later value: 9:4 ,1:5 reads as 9:4,0:1,5:...
qos_swe_vlarb_low 9:4 ,1:5,10:300
# A leading 0 is octal (010 = 8, 011 = 9); in 08 the 8 is eaten as a separator.
qos_swe_sl2vl 010,011,08,3,4,5,6,7,0x8,0x9,10,11,12,13,14,15
# Too few values: the remaining SLs map to VL0, the remaining entries are 0:0.
qos_swe_vlarb_high 1:1
qos_sw0_sl2vl 0 1 2
# One pair of quotes is stripped; a # ends the value even inside quotes, leaving a lone quote.
qos_sw0_vlarb_low \"4:4,5:5\"
qos_sw0_vlarb_high \"0:1,1#:2\"
# 5-bit fields: 0x33 -> 0x13, 0x2b -> 0x0b.
head_of_queue_lifetime 0x33
leaf_head_of_queue_lifetime 0x2b
",
        hoq_switch: 0x13,
        hoq_leaf: 0x0b,
        max_op_vls: 15,
    });
}

/// `max_op_vls 3` (4 VLs) below the ports' 8: OpenSM lowers OperVLs to 4 VLs everywhere, and
/// masks each table with the OperVLs it knew when it built the table (see `mask_vls`).
#[test]
fn max_op_vls_below_vl_cap() {
    run_case(&Case {
        name: "max-op-vls",
        options: "\
qos TRUE
max_op_vls 3
qos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7
qos_vlarb_low 0:1,1:2,2:3,3:4,4:5,5:6,6:7,7:8
qos_vlarb_high 4:16,5:16
",
        hoq_switch: DEFAULT_HOQ_SWITCH,
        hoq_leaf: DEFAULT_HOQ_LEAF,
        max_op_vls: 4,
    });
}

fn run_case(case: &Case) {
    let tools = SimTools::require();
    let ibqos = planner::ibqos_binary().unwrap();
    let topology = Topology::load(Path::new(NET_FILE)).unwrap();
    let dir = TestDir::new(case.name);
    let sim = Ibsim::start(&tools, Path::new(NET_FILE), dir.path()).unwrap();
    let opensm = run_opensm_once(&tools, &sim, SM_NODE, case.options, &dir.subdir("opensm"))
        .unwrap_or_else(|e| panic!("case {}: {e}", case.name));
    let errors = opensm.error_lines();
    assert!(
        errors.is_empty(),
        "case {}: OpenSM logged errors:\n{}",
        case.name,
        errors.join("\n")
    );

    let query = SmpQuery::new(&tools, &sim, QUERY_NODE);
    let mut run = Run {
        case,
        topology: &topology,
        ports: read_all_portinfo(&topology, &query),
        query,
        oracle: Oracle {
            ibqos,
            config: opensm.config_file.clone(),
            plans: HashMap::new(),
        },
        check: Check::new(case.name),
    };
    for node in topology.nodes() {
        match node.kind {
            NodeKind::Ca => run.check_ca(node),
            NodeKind::Switch => run.check_switch(node),
            NodeKind::Router => panic!("the test fabric has no routers"),
        }
    }
    run.check.finish();
}

/// (node id, port number)
type PortKey = (String, u8);

/// One case after OpenSM ran: the fabric, how to read it, what to compare with.
struct Run<'a> {
    case: &'a Case,
    topology: &'a Topology,
    query: SmpQuery<'a>,
    /// PortInfo of every port, read once up front: checks of one port need its peer's too.
    ports: BTreeMap<PortKey, PortInfo>,
    oracle: Oracle,
    check: Check,
}

impl Run<'_> {
    fn port(&self, id: &str, port: u8) -> &PortInfo {
        &self.ports[&(id.to_owned(), port)]
    }

    fn check_ca(&mut self, node: &Node) {
        for (&port, (peer, peer_port)) in &node.links {
            let info = self.port(&node.id, port).clone();
            let target = ca_port(self.topology, &node.id, port);
            let plan = self
                .oracle
                .plan(PortClass::Ca, plan_caps(&info, info.oper_vls))
                .clone();
            let at = format!("{} port {port} (ca)", node.id);

            let rows = self.query.sl2vl(&target, None).unwrap();
            self.check
                .eq(format!("{at}: SL2VL row count"), rows.len(), 1, None);
            self.check.eq(
                format!("{at}: SL2VL"),
                rows[0].vls,
                plan.sl2vl,
                Some(IBSIM_DEFAULT_SL2VL),
            );
            let vlarb = self.query.vlarb(&target, None).unwrap();
            self.check.vlarb(&at, vlarb, &plan);

            let expected = link_oper_vls(&info, self.port(peer, *peer_port), self.case);
            self.check
                .eq(format!("{at}: OperVLs"), info.oper_vls, expected, None);
            // OpenSM programs HOQLife on switch ports only; ibsim starts every port at 0.
            self.check
                .eq(format!("{at}: HOQLife"), info.hoq_life, 0, None);
        }
    }

    fn check_switch(&mut self, node: &Node) {
        let target = switch(self.topology, &node.id);
        for port in 0..=node.num_ports {
            let info = self.port(&node.id, port).clone();
            // Both classes planned with this port's capabilities; which applies where is below.
            let caps = plan_caps(&info, info.vl_cap);
            let swe = self.oracle.plan(PortClass::Swe, caps).clone();
            let sw0 = self.oracle.plan(PortClass::Sw0, caps).clone();
            let at = format!("{} port {port}", node.id);
            self.check_switch_sl2vl(node, &target, port, &swe, &sw0);
            if port == 0 {
                self.check_switch_port0(node, &target, &info, &sw0);
            } else if let Some((peer, peer_port)) = node.peer(port) {
                let vlarb = self.query.vlarb(&target, Some(port)).unwrap();
                self.check.vlarb(&format!("{at} (swe)"), vlarb, &swe);
                let expected = link_oper_vls(&info, self.port(peer, peer_port), self.case);
                self.check
                    .eq(format!("{at}: OperVLs"), info.oper_vls, expected, None);
                let peer_is_switch = self.topology.node(peer).unwrap().kind == NodeKind::Switch;
                let (hoq, facing) = match peer_is_switch {
                    true => (self.case.hoq_switch, "a switch"),
                    false => (self.case.hoq_leaf, "a CA"),
                };
                self.check.eq(
                    format!("{at}: HOQLife (facing {facing})"),
                    info.hoq_life,
                    hoq,
                    None,
                );
            } else {
                // OpenSM skips down ports entirely: ibsim's power-on values remain.
                let vlarb = self.query.vlarb(&target, Some(port)).unwrap();
                let power_on = ibsim_power_on_vlarb(info.vlarb_low_cap, info.vlarb_high_cap);
                self.check
                    .eq(format!("{at} (down): VLArb"), vlarb, Some(power_on), None);
                self.check.eq(
                    format!("{at} (down): OperVLs"),
                    info.oper_vls,
                    info.vl_cap,
                    None,
                );
                self.check
                    .eq(format!("{at} (down): HOQLife"), info.hoq_life, 0, None);
            }
        }
    }

    /// The SL2VL tables for output port `out`: one per input port 0..=NumPorts.
    fn check_switch_sl2vl(
        &mut self,
        node: &Node,
        target: &Target,
        out: u8,
        swe: &Plan,
        sw0: &Plan,
    ) {
        let rows = self.query.sl2vl(target, Some(out)).unwrap();
        let at = format!("{} port {out}", node.id);
        self.check.eq(
            format!("{at}: SL2VL row count (one per input port)"),
            rows.len(),
            usize::from(node.num_ports) + 1,
            None,
        );
        for row in &rows {
            let (class, expected) = match (out, node.enhanced_port0, node.peer(out)) {
                // Enhanced port 0: the (0, 0) table is written twice, with swe in the loop over
                // output ports and then with sw0 as an end port (`qos_extports_setup` then
                // `qos_endport_setup`, `osm_qos.c:391-449`); sw0 wins.
                (0, true, _) if row.in_port == 0 => ("sw0", sw0.sl2vl),
                // That loop covers output 0 with the swe table for every other input port.
                (0, true, _) => ("swe", swe.sl2vl),
                // Base port 0 gets no QoS at all, and down output ports are skipped.
                (0, false, _) | (_, _, None) => ("untouched", IBSIM_DEFAULT_SL2VL),
                // Every input port, including down ones and the output port itself.
                (_, _, Some(_)) => ("swe", swe.sl2vl),
            };
            self.check.eq(
                format!(
                    "{at} ({class}): SL2VL in {} -> out {}",
                    row.in_port, row.out_port
                ),
                row.vls,
                expected,
                Some(IBSIM_DEFAULT_SL2VL),
            );
        }
    }

    fn check_switch_port0(&mut self, node: &Node, target: &Target, info: &PortInfo, sw0: &Plan) {
        let at = format!("{} port 0", node.id);
        let vlarb = self.query.vlarb(target, Some(0)).unwrap();
        // Port 0 has no link, so OpenSM keeps its current OperVLs (ibsim's VLCap), capped by
        // max_op_vls on an enhanced port 0 only: it does not set the OperVLs of a base port 0.
        let oper_vls = if node.enhanced_port0 {
            self.check.vlarb(&format!("{at} (sw0)"), vlarb, sw0);
            info.vl_cap.min(self.case.max_op_vls)
        } else {
            // smpquery itself declines: "# No VLArbitration tables (BSP0)".
            self.check
                .eq(format!("{at}: VLArb on base port 0"), vlarb, None, None);
            info.vl_cap
        };
        self.check
            .eq(format!("{at}: OperVLs"), info.oper_vls, oper_vls, None);
        // OpenSM never sets HOQLife on port 0.
        self.check
            .eq(format!("{at}: HOQLife"), info.hoq_life, 0, None);
    }
}

/// PortInfo of every linked CA port and every port of every switch (0 to NumPorts).
fn read_all_portinfo(topology: &Topology, query: &SmpQuery) -> BTreeMap<PortKey, PortInfo> {
    let mut ports = BTreeMap::new();
    for node in topology.nodes() {
        if node.kind == NodeKind::Switch {
            let target = switch(topology, &node.id);
            for port in 0..=node.num_ports {
                let info = query.portinfo(&target, Some(port)).unwrap();
                ports.insert((node.id.clone(), port), info);
            }
        } else {
            for &port in node.links.keys() {
                let info = query
                    .portinfo(&ca_port(topology, &node.id, port), None)
                    .unwrap();
                // On a CA, port 0 means the port the SMP came in by: make sure it is `port`.
                assert_eq!(
                    info.local_port, port,
                    "{} port {port}: wrong route",
                    node.id
                );
                ports.insert((node.id.clone(), port), info);
            }
        }
    }
    ports
}

/// A switch, by directed route from the querying port.
fn switch(topology: &Topology, id: &str) -> Target {
    let path = topology.dr_path(QUERY_NODE, id);
    Target::Dr(path.unwrap_or_else(|| panic!("no route from {QUERY_NODE} to {id}")))
}

/// One port of a CA, by directed route from the querying port.
fn ca_port(topology: &Topology, id: &str, port: u8) -> Target {
    let path = topology.dr_path_to_port(QUERY_NODE, id, port);
    Target::Dr(path.unwrap_or_else(|| panic!("no route from {QUERY_NODE} to {id}[{port}]")))
}

/// Plans from `ibqos plan`, one process per distinct (class, capabilities).
struct Oracle {
    ibqos: PathBuf,
    config: PathBuf,
    plans: HashMap<(PortClass, PlanCaps), Plan>,
}

impl Oracle {
    fn plan(&mut self, class: PortClass, caps: PlanCaps) -> &Plan {
        let (ibqos, config) = (&self.ibqos, &self.config);
        self.plans
            .entry((class, caps))
            .or_insert_with(|| planner::plan(ibqos, config, class, caps).unwrap())
    }
}

/// The capabilities to plan a port with: its own, with `mask_vls` as OperVLs.
///
/// `mask_vls` is what OpenSM had cached as the port's OperVLs when it built the tables
/// (`osm_qos.c:165,269` mask with the cached PortInfo; `osm_state_mgr.c:1590` runs QoS before
/// the link manager at `:1627`). For CA ports, that is the value its LID manager has already
/// programmed: the final one. For switch ports, it is the value the port had before the sweep,
/// because the link manager programs switch OperVLs only after QoS; ibsim starts every port
/// with OperVLs = VLCap, so that is the VLCap. The two differ only when `max_op_vls` is below
/// the VLCap (case `max_op_vls_below_vl_cap`). ibqos masks with the OperVLs it is about to
/// program instead (a deliberate fix), so its own SM tests pass the final OperVLs.
fn plan_caps(info: &PortInfo, mask_vls: u8) -> PlanCaps {
    PlanCaps {
        vls: info.vl_cap,
        oper_vls: mask_vls,
        low_cap: info.vlarb_low_cap,
        high_cap: info.vlarb_high_cap,
    }
}

/// What OpenSM's link manager programs as OperVLs on a linked port: the smaller VLCap of the two
/// ends, capped by `max_op_vls` (`osm_physp_calc_link_op_vls`).
fn link_oper_vls(port: &PortInfo, peer: &PortInfo, case: &Case) -> u8 {
    port.vl_cap.min(peer.vl_cap).min(case.max_op_vls)
}

/// ibsim's power-on VLArb tables, as many entries as the caps: low {VL0 weight 0, VL1-14 weight
/// 4}, high {VL0 weight 4, VL1-14 weight 0}.
fn ibsim_power_on_vlarb(low_cap: u8, high_cap: u8) -> VlArbTables {
    let table = |cap: u8, vl0_weight: u8, other_weight: u8| {
        (0..cap)
            .map(|vl| VlArbEntry {
                vl,
                weight: if vl == 0 { vl0_weight } else { other_weight },
            })
            .collect()
    };
    VlArbTables {
        low_cap,
        high_cap,
        low: table(low_cap, 0, 4),
        high: table(high_cap, 4, 0),
    }
}

/// Collects every mismatch of a case, so one run reports all of them.
struct Check {
    case: &'static str,
    failures: Vec<String>,
    compared: usize,
    /// Comparisons whose expected value differs from the port's power-on value: these are the
    /// ones that prove OpenSM wrote something.
    distinguishing: usize,
}

impl Check {
    fn new(case: &'static str) -> Check {
        Check {
            case,
            failures: Vec::new(),
            compared: 0,
            distinguishing: 0,
        }
    }

    /// Records whether `got == expected` for `what`. `power_on` is the value before OpenSM ran,
    /// where known.
    fn eq<T: PartialEq + Debug>(&mut self, what: String, got: T, expected: T, power_on: Option<T>) {
        self.compared += 1;
        if power_on.is_some_and(|p| p != expected) {
            self.distinguishing += 1;
        }
        if got != expected {
            self.failures
                .push(format!("{what}: read {got:?}, expected {expected:?}"));
        }
    }

    /// Both VLArb tables of a port against a plan.
    fn vlarb(&mut self, at: &str, got: Option<VlArbTables>, plan: &Plan) {
        let Some(tables) = got else {
            self.failures
                .push(format!("{at}: VLArb: smpquery found no tables"));
            return;
        };
        let power_on = ibsim_power_on_vlarb(tables.low_cap, tables.high_cap);
        let low = format!("{at}: VLArb low");
        self.eq(low, tables.low, plan.vlarb_low.clone(), Some(power_on.low));
        let high = format!("{at}: VLArb high");
        self.eq(
            high,
            tables.high,
            plan.vlarb_high.clone(),
            Some(power_on.high),
        );
    }

    fn finish(self) {
        const SHOWN: usize = 40;
        let more = match self.failures.len().saturating_sub(SHOWN) {
            0 => String::new(),
            n => format!("\n... and {n} more"),
        };
        assert!(
            self.failures.is_empty(),
            "case {}: {} of {} checks failed:\n{}{more}",
            self.case,
            self.failures.len(),
            self.compared,
            self.failures[..self.failures.len().min(SHOWN)].join("\n")
        );
        // At least one per SL2VL row: 6 CA ports, 2 switches x 9 output ports x 9 input ports.
        assert!(
            self.compared > 6 + 2 * 9 * 9,
            "case {}: only {} checks",
            self.case,
            self.compared
        );
        assert!(
            self.distinguishing > 0,
            "case {}: every expected table equals ibsim's power-on table, so this case cannot \
             tell a programmed fabric from an untouched one",
            self.case
        );
    }
}
