//! A dateline on the ring of six switches (`ibqos_fabric::generate::ring(6, _)`): the SLs and
//! the SL-to-VL tables that free minhop's routes there of credit loops, as a layered engine
//! (torus-2QoS) would choose them. The credit-loop tests read them back from a fabric that holds
//! them: on the emulated fabric (ibqos/tests/credit_loops.rs) and on ibsim
//! (tests/tests/credit_loops_ibsim.rs), which both include this one file.

use std::collections::HashSet;

use ibqos_fabric::credit_loops::{CreditReport, FabricTables, PathSls, SlSet, check};
use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::routing::{Layering, Routes, trace};
use ibqos_fabric::{PortRef, Topology};
use ibqos_sim::{Forwarding, NodeVls, Tables, build_nodes};

/// What goes wrong: said in words, for a test to panic with.
type Result<T> = std::result::Result<T, String>;

/// Paths over the link between S5 and S0 take SL1; the others keep the SL asked for.
#[derive(Debug)]
pub struct Dateline {
    crossing: HashSet<(u16, u16)>,
}

impl Dateline {
    /// The pairs whose route, as `routes` forward on `topology`, crosses the dateline.
    pub fn new(topology: &Topology, routes: &Routes) -> Result<Dateline> {
        let switch = |name| {
            topology
                .node_by_name(name)
                .ok_or_else(|| format!("no switch {name}: not the ring of six"))
        };
        let wrap = [
            PortRef::new(switch("S5")?, 2),
            PortRef::new(switch("S0")?, 1),
        ];
        let lid = |port| topology.port(port).map_or(0, |p| p.lid);
        let mut crossing = HashSet::new();
        for from in topology.endports() {
            for to in topology.endports() {
                let path = trace(topology, routes, from, lid(to));
                if path.is_ok_and(|path| path.iter().any(|p| wrap.contains(p))) {
                    crossing.insert((lid(from), lid(to)));
                }
            }
        }
        Ok(Dateline { crossing })
    }
}

impl Layering for Dateline {
    fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        if self.crossing.contains(&(slid, dlid)) {
            1
        } else {
            hint
        }
    }
}

/// The dateline's SL2VL tables as (switch, input, output, VL of each SL): SL1 on VL1 once past
/// the dateline (S0 to S2 going up, S3 to S5 going down), everything else on VL0.
pub fn dateline_tables() -> Vec<(String, u8, u8, [u8; 16])> {
    let mut tables = Vec::new();
    for k in 0..6u8 {
        for (output, past) in [(2, k <= 2), (1, k >= 3)] {
            let mut vls = [0; 16];
            vls[1] = u8::from(past);
            for input in 0..=3 {
                tables.push((format!("S{k}"), input, output, vls));
            }
        }
    }
    tables
}

/// What `dump` holds of `topology`'s fabric (its LIDs, LFTs and tables), checked with the
/// dateline's SLs; and that topology, with the dump's LIDs.
pub fn check_with_dateline(
    topology: &Topology,
    dump: &FabricDump,
) -> Result<(Topology, CreditReport)> {
    let mut topology = topology.clone();
    let nodes = build_nodes(&mut topology, Tables::Held(dump), Forwarding::Held(dump))
        .map_err(|e| format!("the dump does not fit: {e}"))?
        .nodes;
    let lfts = topology
        .switches()
        .map(|(id, _)| (id, nodes[id.index()].lft.clone()))
        .collect();
    let routes = Routes::from_tables(lfts);
    let layering = Dateline::new(&topology, &routes)?;
    let vls = NodeVls(&nodes);
    let tables = FabricTables {
        topology: &topology,
        routes: &routes,
        vls: &vls,
    };
    let sls = PathSls::Routed {
        layering: &layering,
        hints: SlSet::SL0,
    };
    let report = check(tables, sls);
    Ok((topology, report))
}

/// Whether `report` names the loop on VL0 going up the ring, "S0"/P2 VL0 to "S5"/P2 VL0.
pub fn names_the_loop_up_the_ring(report: &CreditReport, topology: &Topology) -> bool {
    let up: Vec<String> = (0..6).map(|s| format!("\"S{s}\"/P2 VL0")).collect();
    report.loops.iter().any(|found| {
        let named: Vec<String> = found
            .channels
            .iter()
            .map(|c| c.display(topology).to_string())
            .collect();
        named == up
    })
}
