use ibqos_opensm::torus_config::{self, TorusConfig};
use ibqos_qos::{Priority, Sl2VlTable, Vl, VlArbTable};

use super::*;
use crate::generate::{assign_lids, torus_2d};
use crate::routing::{Layering, trace};
use crate::topology::{NodeId, PortRef};

/// A 4x4 torus of `torus_2d`, one host per switch: port 1 leads to +x, 2 to -x, 3 to +y, 4 to
/// -y, and host `H{i}_{j}_0` hangs off port 5 of `S{i}_{j}`.
fn four_by_four() -> Topology {
    let mut topo = torus_2d(4, 4, 1).unwrap();
    assign_lids(&mut topo, 0).unwrap();
    topo
}

fn guid(topo: &Topology, name: &str) -> u64 {
    let id = topo.node_by_name(name).unwrap();
    topo.node(id).unwrap().guid
}

/// The torus-2QoS.conf of [`four_by_four`], seeded at `S0_0`, with `extra` lines.
fn config(topo: &Topology, extra: &str) -> TorusConfig {
    let g = |name| guid(topo, name);
    let text = format!(
        "torus 4 4 1\nxp_link {:#x} {:#x}\nxm_link {:#x} {:#x}\nyp_link {:#x} {:#x}\n\
         ym_link {:#x} {:#x}\n{extra}",
        g("S0_0"),
        g("S1_0"),
        g("S0_0"),
        g("S3_0"),
        g("S0_0"),
        g("S0_1"),
        g("S0_0"),
        g("S0_3"),
    );
    torus_config::parse("torus-2QoS.conf", text.as_bytes()).config
}

fn options(config: TorusConfig) -> RoutingOptions {
    RoutingOptions {
        qos: true,
        torus_config: Some(config),
        ..RoutingOptions::default()
    }
}

fn route(topo: &Topology, options: &RoutingOptions) -> Result<Routing, RoutingError> {
    Torus2QoS.unicast(topo, options, VlCount::Eight)
}

fn refusal(topo: &Topology, options: &RoutingOptions) -> String {
    match route(topo, options) {
        Err(RoutingError::Refused(reason)) => reason,
        other => panic!("torus-2QoS did not refuse: {other:?}"),
    }
}

fn lid(topo: &Topology, name: &str, port: u8) -> u16 {
    let id = topo.node_by_name(name).unwrap();
    topo.port(PortRef::new(id, port)).unwrap().lid
}

fn host(topo: &Topology, i: usize, j: usize) -> NodeId {
    topo.node_by_name(&format!("H{i}_{j}_0")).unwrap()
}

/// The hops of the shorter way round a ring of 4.
fn ring(a: usize, b: usize) -> usize {
    let d = a.abs_diff(b);
    d.min(4 - d)
}

/// Every host reaches every host along a shortest path, x first, then y.
#[test]
fn routes_are_dimension_ordered_and_shortest() {
    let topo = four_by_four();
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    for (i, j, k, l) in every_pair_of_coordinates().filter(|&(i, j, k, l)| (i, j) != (k, l)) {
        let from = host(&topo, i, j);
        let dlid = lid(&topo, &format!("H{k}_{l}_0"), 1);
        let path = trace(&topo, &routing.routes, PortRef::new(from, 1), dlid).unwrap();
        // The host, each switch's egress, the destination host.
        assert_eq!(
            path.len(),
            2 + ring(i, k) + ring(j, l) + 1,
            "{i},{j} -> {k},{l}"
        );
        // Once the path leaves the x ports (1, 2), it never takes them again.
        let ports: Vec<u8> = path[1..path.len() - 1].iter().map(|p| p.port).collect();
        let y_from = ports
            .iter()
            .position(|&p| p != 1 && p != 2)
            .unwrap_or(ports.len());
        assert!(
            ports[y_from..].iter().all(|&p| p != 1 && p != 2),
            "{ports:?}"
        );
    }
}

fn every_pair_of_coordinates() -> impl Iterator<Item = (usize, usize, usize, usize)> {
    (0..4).flat_map(|i| {
        (0..4).flat_map(move |j| (0..4).flat_map(move |k| (0..4).map(move |l| (i, j, k, l))))
    })
}

/// A tie on a ring of 4 (two hops either way) goes the direct way, without the dateline; the
/// SL says which rings a path crosses the dateline of, and keeps the hint's QoS bit.
#[test]
fn path_sls_carry_the_datelines_and_the_qos_level() {
    let topo = four_by_four();
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    let s00 = topo.node_by_name("S0_0").unwrap();
    let lft = routing.routes.lft(s00).unwrap();
    assert_eq!(
        lft[usize::from(lid(&topo, "H2_0_0", 1))],
        1,
        "the tie goes +x"
    );
    assert_eq!(lft[usize::from(lid(&topo, "H3_0_0", 1))], 2, "one hop -x");
    let layering = &routing.layering;
    let (h00, h30, h33, h11) = (
        lid(&topo, "H0_0_0", 1),
        lid(&topo, "H3_0_0", 1),
        lid(&topo, "H3_3_0", 1),
        lid(&topo, "H1_1_0", 1),
    );
    assert_eq!(layering.path_sl(0, h00, h30), 0b001);
    assert_eq!(layering.path_sl(0, h00, h33), 0b011);
    assert_eq!(layering.path_sl(0xf, h00, h33), 0b1011);
    assert_eq!(layering.path_sl(7, h00, h11), 0);
    assert_eq!(layering.path_sl(8, h30, h00), 0b1001);
    assert_eq!(
        layering.path_sl(8, h00, 0xbfff),
        0,
        "a LID outside the torus"
    );
}

fn sl2vl(layering: &dyn Layering, node: u64, input: u8, output: u8) -> [u8; 16] {
    let mut table = Sl2VlTable([Vl::from_nibble(0); 16]);
    layering.update_sl2vl(node, input, output, &mut table);
    table.0.map(Vl::get)
}

/// Between switches: the dateline bit of the output's dimension, the turn bit from y to x, the
/// QoS bit; toward a host, the QoS bit alone, and at a host the same.
#[test]
fn sl2vl_tables_follow_the_datelines_turns_and_qos_level() {
    let topo = four_by_four();
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    let layering = routing.layering.as_ref();
    let s00 = guid(&topo, "S0_0");
    let expect = |f: &dyn Fn(u8) -> u8| std::array::from_fn::<u8, 16, _>(|sl| f(sl as u8));
    // Host in (port 5), out +x (port 1): SL bit 0, QoS to VL bit 2.
    assert_eq!(
        sl2vl(layering, s00, 5, 1),
        expect(&|sl| (sl & 1) | ((sl >> 3) << 2))
    );
    // In from y (port 4), out x (port 2): a turn down the dimensions.
    assert_eq!(
        sl2vl(layering, s00, 4, 2),
        expect(&|sl| (sl & 1) | 2 | ((sl >> 3) << 2))
    );
    // In from x, out y: no turn bit; SL bit 1 is the y dateline.
    assert_eq!(
        sl2vl(layering, s00, 1, 3),
        expect(&|sl| ((sl >> 1) & 1) | ((sl >> 3) << 2))
    );
    assert_eq!(sl2vl(layering, s00, 1, 5), expect(&|sl| sl >> 3));
    let host = guid(&topo, "H0_0_0");
    assert_eq!(sl2vl(layering, host, 0, 0), expect(&|sl| sl >> 3));
}

/// With 4 data VLs the QoS bit goes; with 2 the turn bit too. The VLs are the ports' VLCap
/// under `max_op_vls`, whatever OperVLs the switch ports run when the engine routes.
#[test]
fn fewer_vls_drop_the_qos_bit_then_the_turn_bit() {
    let topo = four_by_four();
    let capped = |max_op_vls| RoutingOptions {
        max_op_vls: Some(max_op_vls),
        ..options(config(&topo, ""))
    };
    let s00 = guid(&topo, "S0_0");
    let four = Torus2QoS
        .unicast(&topo, &capped(VlCount::Four), VlCount::Eight)
        .unwrap();
    assert_eq!(four.layering.vls_used(), VlCount::Four);
    assert_eq!(sl2vl(four.layering.as_ref(), s00, 4, 2)[9], 0b11);
    let two = Torus2QoS
        .unicast(&topo, &capped(VlCount::Two), VlCount::Eight)
        .unwrap();
    assert_eq!(sl2vl(two.layering.as_ref(), s00, 4, 2)[9], 0b01);
    assert_eq!(
        refusal(&topo, &capped(VlCount::One)),
        "ERR 4E48: Too few data VLs to support torus routing without credit loops (have \
         switchport 1 need 2)"
    );
    let uncapped = Torus2QoS
        .unicast(&topo, &options(config(&topo, "")), VlCount::Two)
        .unwrap();
    assert_eq!(uncapped.layering.vls_used(), VlCount::Eight, "VLCap 8");
}

/// OpenSM's warnings: below 8 data VLs between switches one QoS level, below 4 no route
/// around a failed switch either; below 2 on a host's link its QoS levels share a VL.
#[test]
fn too_few_vls_for_a_feature_are_said() {
    let mut topo = four_by_four();
    let shortfalls = |topo: &Topology, max_op_vls| {
        let options = RoutingOptions {
            max_op_vls,
            ..options(config(topo, ""))
        };
        let routing = route(topo, &options).unwrap();
        let found = routing.layering.vl_shortfalls();
        found
            .iter()
            .map(|s| (s.ports, s.have, s.needed))
            .collect::<Vec<_>>()
    };
    let between_switches = "switch ports linked to a switch";
    assert_eq!(shortfalls(&topo, None), []);
    assert_eq!(
        shortfalls(&topo, Some(VlCount::Four)),
        [(between_switches, 4, 8)]
    );
    assert_eq!(
        shortfalls(&topo, Some(VlCount::Two)),
        [(between_switches, 2, 4), (between_switches, 2, 8)]
    );
    let host = host(&topo, 2, 1);
    topo.port_mut(PortRef::new(host, 1)).unwrap().link.vl_cap = VlCount::One;
    assert_eq!(shortfalls(&topo, None), [("CA and router ports", 1, 2)]);
}

/// A host's VLCap counts for the links to hosts alone (`min_data_vls`), a switch's toward
/// switches for the links between switches (`min_sw_data_vls`): a host of 2 VLs leaves the
/// switches their 8, and its links one QoS level per VL.
#[test]
fn a_hosts_vlcap_counts_for_the_links_to_hosts_alone() {
    let mut topo = four_by_four();
    let host = host(&topo, 0, 0);
    topo.port_mut(PortRef::new(host, 1)).unwrap().link.vl_cap = VlCount::Two;
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    assert_eq!(routing.layering.vls_used(), VlCount::Eight);
    let s00 = guid(&topo, "S0_0");
    assert_eq!(sl2vl(routing.layering.as_ref(), s00, 4, 2)[9], 0b111);
    let h00 = guid(&topo, "H0_0_0");
    assert_eq!(sl2vl(routing.layering.as_ref(), h00, 0, 0)[9], 1);
    topo.port_mut(PortRef::new(host, 1)).unwrap().link.vl_cap = VlCount::One;
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    assert_eq!(sl2vl(routing.layering.as_ref(), h00, 0, 0)[9], 0);
}

/// Toward a host, VL0 stays, VL4 becomes VL1 and the rest goes, compacted.
#[test]
fn vlarb_toward_hosts_keeps_the_two_qos_levels() {
    use ibqos_qos::VlArbEntry;
    let topo = four_by_four();
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    let entries: Vec<VlArbEntry> = (0..8).map(|vl| VlArbEntry::new(vl, 10 + vl)).collect();
    let configured = VlArbTable::from_entries(&entries);
    let s00 = guid(&topo, "S0_0");
    let mut table = configured;
    routing
        .layering
        .update_vlarb(s00, 5, Priority::Low, &mut table);
    assert_eq!(
        table.0[..3],
        [
            VlArbEntry::new(0, 10),
            VlArbEntry::new(1, 14),
            VlArbEntry::new(0, 0)
        ]
    );
    assert!(table.0[2..].iter().all(|e| *e == VlArbEntry::new(0, 0)));
    let mut between_switches = configured;
    routing
        .layering
        .update_vlarb(s00, 1, Priority::Low, &mut between_switches);
    assert_eq!(between_switches, configured);
}

/// OpenSM's refusals, in its words: the list falls back to the next engine.
#[test]
fn what_torus_2qos_refuses() {
    let topo = four_by_four();
    let no_qos = RoutingOptions {
        qos: false,
        ..options(config(&topo, ""))
    };
    assert!(refusal(&topo, &no_qos).starts_with("ERR 4E44: Routing engine list contains"));
    let unread = RoutingOptions {
        torus_config: None,
        ..options(config(&topo, ""))
    };
    assert!(refusal(&topo, &unread).starts_with("ERR 4E11: Opening /etc/opensm/torus-2QoS.conf"));
    let rejected = options(config(&topo, "frobnicate\n"));
    assert_eq!(
        refusal(&topo, &rejected),
        "ERR 4E12: no keyword found: line 6"
    );
    let text = format!(
        "torus 4 4 1\nxp_link {:#x} {:#x}\n",
        guid(&topo, "S0_0"),
        guid(&topo, "S1_0")
    );
    let one_way = options(torus_config::parse("t", text.as_bytes()).config);
    assert_eq!(
        refusal(&topo, &one_way),
        "ERR 4E23: Negative x direction link required for topology seed configuration since \
         radix == 4! See torus-2QoS.conf(5)."
    );
    let port_order = options(config(&topo, "port_order 9\n"));
    assert!(
        refusal(&topo, &port_order)
            .starts_with("ERR 4E21: port_order configured using port 9, but only 5 ports")
    );
    let mut broken = topo.clone();
    let s00 = broken.node_by_name("S0_0").unwrap();
    broken.disconnect(PortRef::new(s00, 1));
    assert!(refusal(&broken, &options(config(&topo, ""))).starts_with("ERR 4E57"));
}

/// A 3x3 torus needs one seed link per dimension; the dateline moves the origin, and with it
/// the SLs.
#[test]
fn a_dateline_moves_the_sls() {
    let mut topo = torus_2d(3, 3, 1).unwrap();
    assign_lids(&mut topo, 0).unwrap();
    let g = |name| guid(&topo, name);
    let conf = |extra: &str| {
        let text = format!(
            "torus 3 3 1\nxp_link {:#x} {:#x}\nyp_link {:#x} {:#x}\n{extra}",
            g("S0_0"),
            g("S1_0"),
            g("S0_0"),
            g("S0_1")
        );
        options(torus_config::parse("t", text.as_bytes()).config)
    };
    let (h00, h20) = (lid(&topo, "H0_0_0", 1), lid(&topo, "H2_0_0", 1));
    let plain = route(&topo, &conf("")).unwrap();
    assert_eq!(plain.layering.path_sl(0, h00, h20), 1, "0 -> 2 wraps round");
    let moved = route(&topo, &conf("x_dateline 1\n")).unwrap();
    // S0_0 is now x = 2, S2_0 is x = 1: one step down, no wrap.
    assert_eq!(moved.layering.path_sl(0, h00, h20), 0);
    assert_eq!(
        plain.routes, moved.routes,
        "the LFTs do not depend on the dateline"
    );
}

/// The entries of `tree` as (switch name, ports), by name.
fn entries(topo: &Topology, tree: &crate::routing::MulticastTree) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = tree
        .masks
        .iter()
        .map(|(&s, mask)| (topo.node(s).unwrap().name.clone(), mask.ports().collect()))
        .collect();
    entries.sort();
    entries
}

/// An MLID's tree is the part of the master tree, rooted at S2_2 and grown along x, then y,
/// without crossing a dateline, that leads to its members: each switch on the way forwards
/// toward them and back toward the root. One member is enough, where OpenSM's generic tree
/// needs two.
#[test]
fn multicast_trees_are_parts_of_the_master_tree() {
    let topo = four_by_four();
    let routing = route(&topo, &options(config(&topo, ""))).unwrap();
    let multicast = Torus2QoS
        .multicast(&topo, routing.layering.as_ref(), &|_| true)
        .unwrap();
    let member = |i, j| PortRef::new(host(&topo, i, j), 1);
    let tree = multicast
        .tree_for(0xc000, &[member(0, 0), member(3, 1)])
        .unwrap();
    assert_eq!(tree.root, topo.node_by_name("S2_2"));
    let expected: Vec<(String, Vec<u8>)> = [
        ("S0_0", vec![3, 5]),
        ("S0_1", vec![3, 4]),
        ("S0_2", vec![1, 4]),
        ("S1_2", vec![1, 2]),
        ("S2_2", vec![1, 2]),
        ("S3_1", vec![3, 5]),
        ("S3_2", vec![2, 4]),
    ]
    .into_iter()
    .map(|(name, ports)| (name.to_string(), ports))
    .collect();
    assert_eq!(entries(&topo, &tree), expected);
    let generic = multicast
        .within(None)
        .tree_for(0xc000, &[member(0, 0), member(3, 1)])
        .unwrap();
    assert_ne!(
        entries(&topo, &generic),
        expected,
        "the generic tree differs"
    );
    let alone = Torus2QoS
        .multicast(&topo, routing.layering.as_ref(), &|_| true)
        .unwrap()
        .tree_for(0xc000, &[member(2, 3)])
        .unwrap();
    assert_eq!(
        entries(&topo, &alone),
        [
            ("S2_2".to_string(), vec![3]),
            ("S2_3".to_string(), vec![4, 5])
        ]
    );
}
