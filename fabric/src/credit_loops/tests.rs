use std::collections::HashSet;

use ibqos_qos::{Sl, Sl2VlTable, Vl, VlCount};

use super::*;
use crate::generate::{assign_missing_lids, fat_tree, ring, torus_2d};
use crate::routing::{NO_ROUTE, Routes, RoutingOptions, Unlayered, ftree, minhop, trace, updn};

/// SL i on VL i (SL15 on VL15), as ibsim's switches hold it.
fn identity() -> Sl2VlTable {
    Sl2VlTable(std::array::from_fn(|sl| Vl::from_nibble(sl as u8)))
}

fn routed(
    mut topology: Topology,
    engine: fn(&Topology, &RoutingOptions) -> Result<Routes, crate::routing::RoutingError>,
) -> (Topology, Routes) {
    assign_missing_lids(&mut topology).unwrap();
    let routes = engine(&topology, &RoutingOptions::default()).unwrap();
    (topology, routes)
}

fn check_sl0(topology: &Topology, routes: &Routes, vls: &VlTables) -> CreditReport {
    let tables = FabricTables {
        topology,
        routes,
        vls,
    };
    let hints = [Sl::ALL[0]].into_iter().collect();
    check(
        tables,
        PathSls::Routed {
            layering: &Unlayered,
            hints,
        },
    )
}

fn eight_vls() -> VlTables {
    VlTables::new(identity(), VlCount::Eight)
}

/// The route's source port, then the egress ports it leaves switches by, in order.
fn egresses(topology: &Topology, routes: &Routes, route: Route) -> Vec<PortRef> {
    let from = topology.lid_owner(route.slid).unwrap();
    trace(topology, routes, from, route.dlid).unwrap()
}

/// Every loop's closing routes pass from each channel's port to the next channel's.
fn assert_witnessed(topology: &Topology, routes: &Routes, report: &CreditReport) {
    for found in &report.loops {
        for (k, channel) in found.channels.iter().enumerate() {
            let next = found.channels[(k + 1) % found.channels.len()];
            let path = egresses(topology, routes, found.closing[k]);
            let at = path.iter().position(|&p| p == channel.from);
            assert!(
                at.is_some_and(|at| path.get(at + 1) == Some(&next.from)),
                "{} does not lead from {} to {}",
                describe::route(found.closing[k], topology),
                channel.display(topology),
                next.display(topology)
            );
        }
    }
}

fn ports_of(found: &CreditLoop, topology: &Topology) -> Vec<String> {
    found
        .channels
        .iter()
        .map(|c| c.display(topology).to_string())
        .collect()
}

#[test]
fn minhop_on_a_ring_makes_a_loop_each_way_named_by_its_ports() {
    let (topology, routes) = routed(ring(6, 1).unwrap(), minhop);
    let report = check_sl0(&topology, &routes, &eight_vls());
    assert_eq!(report.loops.len(), 2, "{}", report.describe(&topology));
    let backward: Vec<String> = [0, 5, 4, 3, 2, 1]
        .map(|s| format!("\"S{s}\"/P1 VL0"))
        .to_vec();
    let forward: Vec<String> = (0..6).map(|s| format!("\"S{s}\"/P2 VL0")).collect();
    assert_eq!(ports_of(&report.loops[0], &topology), backward);
    assert_eq!(ports_of(&report.loops[1], &topology), forward);
    assert_witnessed(&topology, &routes, &report);
    assert_eq!(report.misforward_count + report.discard_count, 0);
    let text = report.describe(&topology);
    assert!(
        text.starts_with("2 credit loops: 12 channels between switches,"),
        "{text}"
    );
    assert!(
        text.contains(
            "\"S0\"/P2 VL0 -> \"S1\"/P2 VL0 -> \"S2\"/P2 VL0 -> \"S3\"/P2 VL0 -> \
             \"S4\"/P2 VL0 -> \"S5\"/P2 VL0 -> \"S0\"/P2 VL0"
        ),
        "{text}"
    );
}

#[test]
fn minhop_on_a_4x4_torus_makes_loops_and_updn_none() {
    let (topology, routes) = routed(torus_2d(4, 4, 1).unwrap(), minhop);
    let report = check_sl0(&topology, &routes, &eight_vls());
    assert!(!report.is_free());
    assert_witnessed(&topology, &routes, &report);
    // A torus is too even for updn to find roots; S0_0 is one.
    let mut topology = torus_2d(4, 4, 1).unwrap();
    assign_missing_lids(&mut topology).unwrap();
    let root = topology.node_by_name("S0_0").unwrap();
    let options = RoutingOptions {
        root_guids: Some(vec![topology.node(root).unwrap().guid]),
        ..RoutingOptions::default()
    };
    let routes = updn(&topology, &options).unwrap();
    let report = check_sl0(&topology, &routes, &eight_vls());
    assert!(report.is_free(), "{}", report.describe(&topology));
    assert!(report.dependencies > 0);
    assert_eq!(report.misforward_count + report.discard_count, 0);
}

#[test]
fn no_engine_makes_a_loop_on_a_fat_tree() {
    for engine in [minhop, updn, ftree] {
        let (topology, routes) = routed(fat_tree(4, 2, 2, 8).unwrap(), engine);
        let report = check_sl0(&topology, &routes, &eight_vls());
        assert!(report.is_free(), "{}", report.describe(&topology));
        assert!(report.channels > 0);
    }
}

#[test]
fn every_sl_on_one_vl_makes_the_same_loops_as_sl0() {
    let (topology, routes) = routed(ring(4, 1).unwrap(), minhop);
    let vls = VlTables::new(Sl2VlTable::ALL_VL0, VlCount::One);
    let tables = FabricTables {
        topology: &topology,
        routes: &routes,
        vls: &vls,
    };
    let every = check(tables, PathSls::Every);
    let sl0 = check_sl0(&topology, &routes, &vls);
    assert_eq!(every.loops.len(), sl0.loops.len());
    assert_eq!(every.dependencies, sl0.dependencies);
}

/// Paths that cross the link between S5 and S0 of a 6-ring take SL1: a dateline, as torus-2QoS
/// draws one.
#[derive(Debug)]
struct Dateline {
    crossing: HashSet<(u16, u16)>,
}

impl Dateline {
    fn new(topology: &Topology, routes: &Routes) -> Dateline {
        let s0 = topology.node_by_name("S0").unwrap();
        let s5 = topology.node_by_name("S5").unwrap();
        let wrap = [PortRef::new(s5, 2), PortRef::new(s0, 1)];
        let mut crossing = HashSet::new();
        for from in topology.endports() {
            for to in topology.endports() {
                let (Some(slid), Some(dlid)) = (
                    topology.port(from).map(|p| p.lid),
                    topology.port(to).map(|p| p.lid),
                ) else {
                    continue;
                };
                let Ok(path) = trace(topology, routes, from, dlid) else {
                    continue;
                };
                if path.iter().any(|p| wrap.contains(p)) {
                    crossing.insert((slid, dlid));
                }
            }
        }
        Dateline { crossing }
    }
}

impl crate::routing::Layering for Dateline {
    fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        if self.crossing.contains(&(slid, dlid)) {
            1
        } else {
            hint
        }
    }
}

/// SL1 on VL1 once past the dateline (S0 to S2 going up, S3 to S5 going down), else VL0.
fn dateline_tables(topology: &Topology) -> VlTables {
    let mut vls = VlTables::new(Sl2VlTable::ALL_VL0, VlCount::Two);
    for k in 0..6u8 {
        let switch = topology.node_by_name(&format!("S{k}")).unwrap();
        for (output, past) in [(2, k <= 2), (1, k >= 3)] {
            let mut table = Sl2VlTable::ALL_VL0;
            if past {
                table.0[1] = Vl::new(1).unwrap();
            }
            for input in 0..=3 {
                vls.set_sl2vl(switch, input, output, table);
            }
        }
    }
    vls
}

#[test]
fn a_dateline_frees_the_ring_until_a_switch_maps_both_sls_to_one_vl() {
    let (topology, routes) = routed(ring(6, 1).unwrap(), minhop);
    let layering = Dateline::new(&topology, &routes);
    let mut vls = dateline_tables(&topology);
    let run = |vls: &VlTables| {
        let tables = FabricTables {
            topology: &topology,
            routes: &routes,
            vls,
        };
        let hints = [Sl::ALL[0]].into_iter().collect();
        check(
            tables,
            PathSls::Routed {
                layering: &layering,
                hints,
            },
        )
    };
    let report = run(&vls);
    assert!(report.is_free(), "{}", report.describe(&topology));
    assert_eq!(report.discard_count, 0);

    // Behind the SM's back, S0 now sends everything on VL0.
    let s0 = topology.node_by_name("S0").unwrap();
    for input in 0..=3 {
        for output in 0..=3 {
            vls.set_sl2vl(s0, input, output, Sl2VlTable::ALL_VL0);
        }
    }
    let report = run(&vls);
    assert!(!report.is_free());
    let forward: Vec<String> = (0..6).map(|s| format!("\"S{s}\"/P2 VL0")).collect();
    assert!(
        report
            .loops
            .iter()
            .any(|found| ports_of(found, &topology) == forward),
        "{}",
        report.describe(&topology)
    );
    assert_witnessed(&topology, &routes, &report);
    let sl1 = report
        .loops
        .iter()
        .flat_map(|found| &found.closing)
        .any(|route| route.sl == Sl::ALL[1]);
    assert!(sl1, "the loop closes through the dateline's SL1 paths");
}

#[test]
fn a_vl_above_oper_vls_or_vl15_is_a_drop_not_a_dependency() {
    let (topology, routes) = routed(ring(4, 1).unwrap(), minhop);
    let mut table = Sl2VlTable::ALL_VL0;
    table.0[0] = Vl::new(2).unwrap();
    let report = check_sl0(&topology, &routes, &VlTables::new(table, VlCount::Two));
    assert_eq!(report.dependencies, 0);
    assert!(report.is_free());
    // Each CA port and each switch port some route leaves by.
    assert_eq!(report.discard_count, 4 + 4 * 3);
    table.0[0] = Vl::VL15;
    let report = check_sl0(&topology, &routes, &VlTables::new(table, VlCount::Eight));
    assert_eq!(report.discard_count, 4 + 4 * 3);
    let text = report.describe(&topology);
    assert!(text.contains("16 channels drop packets"), "{text}");
}

#[test]
fn forwarding_that_cannot_deliver_is_named() {
    let (topology, routes) = routed(ring(4, 1).unwrap(), minhop);
    let s1 = topology.node_by_name("S1").unwrap();
    let s2 = topology.node_by_name("S2").unwrap();
    let h3 = topology.node_by_name("H3_0").unwrap();
    let dlid = topology.port(PortRef::new(h3, 1)).unwrap().lid;
    let mut lfts: std::collections::BTreeMap<NodeId, Vec<u8>> =
        routes.iter().map(|(id, lft)| (id, lft.to_vec())).collect();
    // S1 and S2 send H3_0's LID to each other; S1 has no route to S2's own LID.
    lfts.get_mut(&s1).unwrap()[usize::from(dlid)] = 2;
    lfts.get_mut(&s2).unwrap()[usize::from(dlid)] = 1;
    let s2_lid = topology.port(PortRef::new(s2, 0)).unwrap().lid;
    lfts.get_mut(&s1).unwrap()[usize::from(s2_lid)] = NO_ROUTE;
    let broken = Routes::from_tables(lfts);
    let report = check_sl0(&topology, &broken, &eight_vls());
    assert!(report.misforwards.contains(&Misforward::NoRoute {
        switch: s1,
        dlid: s2_lid
    }));
    let loops: Vec<&Misforward> = report
        .misforwards
        .iter()
        .filter(|m| matches!(m, Misforward::Loop { .. }))
        .collect();
    assert_eq!(loops.len(), 1, "{:?}", report.misforwards);
    let text = report.describe(&topology);
    assert!(
        text.contains(&format!("\"S1\" has no route to LID {s2_lid}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("is on a forwarding loop for LID {dlid}")),
        "{text}"
    );
}

/// Keeps the hint, as [`Unlayered`] does, without saying so: the checker then asks path by path.
#[derive(Debug)]
struct Unannounced;

impl crate::routing::Layering for Unannounced {}

#[test]
fn asking_path_by_path_finds_what_the_shared_sources_find() {
    let (topology, routes) = routed(torus_2d(4, 4, 2).unwrap(), minhop);
    let mut table = identity();
    // SL 2 is dropped on every port, so both ways record drops too.
    table.0[2] = Vl::VL15;
    let vls = VlTables::new(table, VlCount::Four);
    let tables = FabricTables {
        topology: &topology,
        routes: &routes,
        vls: &vls,
    };
    let hints: SlSet = [0, 1, 2].map(|sl| Sl::ALL[sl]).into_iter().collect();
    let shared = check(
        tables,
        PathSls::Routed {
            layering: &Unlayered,
            hints,
        },
    );
    let asked = check(
        tables,
        PathSls::Routed {
            layering: &Unannounced,
            hints,
        },
    );
    assert!(!shared.is_free());
    assert!(shared.discard_count > 0);
    assert_eq!(shared.channels, asked.channels);
    assert_eq!(shared.dependencies, asked.dependencies);
    assert_eq!(shared.discard_count, asked.discard_count);
    let cycles = |report: &CreditReport| -> Vec<Vec<Channel>> {
        report.loops.iter().map(|l| l.channels.clone()).collect()
    };
    assert_eq!(cycles(&shared), cycles(&asked));
    assert_witnessed(&topology, &routes, &shared);
}

/// A switch's table for every input and a pair's own table: the later Set is what it holds.
#[test]
fn the_later_of_a_pairs_table_and_its_outputs_is_held() {
    let node = NodeId(3);
    let table = |vl: u8| Sl2VlTable([Vl::from_nibble(vl); 16]);
    let mut vls = VlTables::new(table(0), VlCount::Eight);
    vls.set_sl2vl_every_input(node, 2, table(1));
    vls.set_sl2vl(node, 5, 2, table(2));
    assert_eq!(vls.sl2vl(node, 5, 2), table(2), "the pair's, set later");
    assert_eq!(
        vls.sl2vl(node, 4, 2),
        table(1),
        "the output's, for the other inputs"
    );
    vls.set_sl2vl_every_input(node, 2, table(3));
    assert_eq!(vls.sl2vl(node, 5, 2), table(3), "the output's, set later");
    assert_eq!(
        vls.sl2vl(node, 5, 1),
        table(0),
        "another output: the default"
    );
}
