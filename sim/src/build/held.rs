//! A node's tables as a fabric held them: a [`FabricDump`] (what `ibqos dump` read, or an
//! emulated fabric's own dump) matched to the topology by NodeGUID and port number.
//!
//! The topology decides what is simulated (its nodes, links and capabilities); the dump gives
//! every linked port's SL2VL tables, VLArb tables, VLHighLimit and OperVLs, exactly. A dump that
//! does not fit is an error at the node or port, never a guess: a node or linked port missing,
//! a kind, an OperVLs or a VLArb table size the topology's capabilities deny, a VL out of range,
//! an SL2VL table missing where the topology says the port maps SLs to VLs. Nodes of the dump
//! the topology lacks are not simulated. A port that maps no SLs to VLs (no SL2VL table in the
//! dump, none expected) sends everything on VL0, as with planned tables.
//!
//! A dump that carries LFTs gives the routes too ([`held_forwarding`]): every switch forwards by
//! the dump's LFT, and every end port has the dump's LID, which that LFT routes.

use std::collections::BTreeMap;

use ibqos_fabric::dump::{FabricDump, NodeDump};
use ibqos_fabric::routing::NO_ROUTE;
use ibqos_fabric::{NodeId, Port, PortRef, Topology};
use ibqos_qos::{Sl2VlTable, Vl, VlArbEntry, VlCount};

use crate::build::BuildError;
use crate::network::{Node, PortArbitration};

/// How a dump does not fit the topology it is simulated on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Mismatch {
    #[error("the dump has no node with this NodeGUID")]
    NoNode,
    #[error("the dump has it as a {held}, the topology as a {topology}")]
    Kind { held: String, topology: String },
    #[error("linked in the topology, but the dump has no such port")]
    NoPort,
    #[error("OperVLs {0} is no PortInfo encoding (1 = 1 VL, 2 = 2, 3 = 4, 4 = 8, 5 = 15)")]
    OperVls(u8),
    #[error("it runs {oper} VLs, more than the VLCap of {cap} the topology gives it")]
    OperAboveCap { oper: u8, cap: u8 },
    #[error(
        "its VLArb {table} table has {entries} entries, but the topology gives it a cap of {cap} \
         (a dump holds exactly the cap's entries; the net file's `# ibqos: vlarb=LOW/HIGH` sets \
         the caps)"
    )]
    VlArbSize {
        table: &'static str,
        entries: usize,
        cap: u8,
    },
    #[error("VLArb {table} entry {index} names VL {vl}; a VL is 0-15")]
    VlArbVl {
        table: &'static str,
        index: usize,
        vl: u8,
    },
    #[error(
        "the dump has no SL2VL table for input port {input}, but the topology says the port maps \
         SLs to VLs"
    )]
    NoSl2Vl { input: u8 },
    #[error("the SL2VL table for input port {input} maps SL {sl} to VL {vl}; a VL is 0-15")]
    Sl2VlVl { input: u8, sl: usize, vl: u8 },
    #[error("an end port in the topology, but the dump has no such port to give its LID")]
    NoLid,
    #[error("its LFT forwards LID {lid} out of port {port}, which the switch does not have")]
    LftPort { lid: u16, port: u8 },
    #[error(
        "the dump has an SL2VL table for input port {input}, which is none: a switch's inputs are \
         0 to its port count, a CA port's one table is under its own number"
    )]
    NoSuchInput { input: u8 },
}

/// Sets the tables of `node` (being built for `fnode`, node `id` of `topo`) to what `dump`
/// holds for it.
pub(crate) fn held_tables(
    node: &mut Node,
    topo: &Topology,
    id: NodeId,
    fnode: &ibqos_fabric::Node,
    dump: &FabricDump,
) -> Result<(), BuildError> {
    let fail = |port, mismatch| mismatch_at(topo, id, port, mismatch);
    let held = dump
        .node(fnode.guid)
        .ok_or_else(|| fail(None, Mismatch::NoNode))?;
    let kind = NodeDump::kind_name(fnode.kind.into());
    if held.kind != kind {
        let (held, topology) = (held.kind.clone(), kind);
        return Err(fail(None, Mismatch::Kind { held, topology }));
    }
    let linked: Vec<(u8, &Port)> = fnode
        .existing_ports()
        .filter(|(_, port)| port.peer.is_some())
        .collect();
    // A switch maps SLs to VLs on all its ports or none, as its port 0 says.
    let switch_maps = fnode
        .port(0)
        .filter(|_| fnode.is_switch())
        .map(|port0| port0.link.sl_mapping_supported);
    for &(number, port) in &linked {
        let at = |mismatch| fail(Some(number), mismatch);
        let held_port = held
            .ports
            .get(&number)
            .ok_or_else(|| at(Mismatch::NoPort))?;
        let oper_vls = VlCount::from_encoding(held_port.oper_vls)
            .map_err(|_| at(Mismatch::OperVls(held_port.oper_vls)))?;
        if oper_vls > port.link.vl_cap {
            let (oper, cap) = (oper_vls.count(), port.link.vl_cap.count());
            return Err(at(Mismatch::OperAboveCap { oper, cap }));
        }
        node.arbitration[usize::from(number)] = PortArbitration {
            high: vlarb("high", &held_port.vlarb_high, port.link.vlarb_high_cap).map_err(at)?,
            low: vlarb("low", &held_port.vlarb_low, port.link.vlarb_low_cap).map_err(at)?,
            high_limit: held_port.vl_high_limit,
            oper_vls,
        };
        // A switch's tables are per (input, output) pair, inputs 0..=N; a CA's one table is
        // under its own number and is what it sends with.
        for (&input, vls) in &held_port.sl2vl {
            let table = sl2vl(input, vls).map_err(at)?;
            match switch_maps {
                Some(_) if input <= fnode.num_ports() => node.set_sl2vl(input, number, table),
                None if input == number => node.set_sl2vl(0, number, table),
                _ => return Err(at(Mismatch::NoSuchInput { input })),
            }
        }
        let inputs: Vec<u8> = match switch_maps {
            Some(true) => linked.iter().map(|&(input, _)| input).collect(),
            None if port.link.sl_mapping_supported => vec![number],
            _ => Vec::new(),
        };
        if let Some(&input) = inputs.iter().find(|i| !held_port.sl2vl.contains_key(i)) {
            return Err(at(Mismatch::NoSl2Vl { input }));
        }
    }
    Ok(())
}

/// `mismatch` at node `id` of `topo`, or at its port `port`.
fn mismatch_at(topo: &Topology, id: NodeId, port: Option<u8>, mismatch: Mismatch) -> BuildError {
    let (name, guid) = topo
        .node(id)
        .map_or_else(Default::default, |n| (n.name.clone(), n.guid));
    let key = FabricDump::node_key(guid);
    let place = match port {
        Some(p) => format!("{} ({key})", topo.describe(PortRef::new(id, p))),
        None => format!("{name:?} ({key})"),
    };
    BuildError::Held { place, mismatch }
}

/// Gives every end port of `topo` (a CA's or router's linked ports, a switch's port 0) the LID
/// `dump` holds for it, and returns each switch's LFT as the dump holds it, indexed by LID.
pub fn held_forwarding(
    topo: &mut Topology,
    dump: &FabricDump,
) -> Result<BTreeMap<NodeId, Vec<u8>>, BuildError> {
    let ids: Vec<NodeId> = topo.nodes().map(|(id, _)| id).collect();
    let mut lfts = BTreeMap::new();
    for id in ids {
        let Some(fnode) = topo.node(id) else { continue };
        let held = dump
            .node(fnode.guid)
            .ok_or_else(|| mismatch_at(topo, id, None, Mismatch::NoNode))?;
        let (is_switch, num_ports) = (fnode.is_switch(), fnode.num_ports());
        let ends: Vec<u8> = fnode
            .existing_ports()
            .filter(|&(number, port)| {
                if is_switch {
                    number == 0
                } else {
                    port.peer.is_some()
                }
            })
            .map(|(number, _)| number)
            .collect();
        for number in ends {
            let lid = match held.ports.get(&number) {
                Some(port) => port.lid,
                None => return Err(mismatch_at(topo, id, Some(number), Mismatch::NoLid)),
            };
            if let Some(port) = topo.port_mut(PortRef::new(id, number)) {
                port.lid = lid;
            }
        }
        if is_switch {
            let top = held.lft.keys().max().map_or(0, |&lid| usize::from(lid));
            let mut lft = vec![NO_ROUTE; top + 1];
            for (&lid, &port) in &held.lft {
                if port > num_ports {
                    let mismatch = Mismatch::LftPort { lid, port };
                    return Err(mismatch_at(topo, id, None, mismatch));
                }
                lft[usize::from(lid)] = port;
            }
            lfts.insert(id, lft);
        }
    }
    Ok(lfts)
}

/// A VLArb table as the dump holds it: exactly `cap` entries, each a VL 0-15 and a weight.
fn vlarb(table: &'static str, entries: &[[u8; 2]], cap: u8) -> Result<Vec<VlArbEntry>, Mismatch> {
    if entries.len() != usize::from(cap) {
        let entries = entries.len();
        return Err(Mismatch::VlArbSize {
            table,
            entries,
            cap,
        });
    }
    entries
        .iter()
        .enumerate()
        .map(|(index, &[vl, weight])| match Vl::new(vl) {
            Some(_) => Ok(VlArbEntry::new(vl, weight)),
            None => Err(Mismatch::VlArbVl { table, index, vl }),
        })
        .collect()
}

/// An SL2VL table as the dump holds it: the VL (0-15) of SL 0..15.
fn sl2vl(input: u8, vls: &[u8; 16]) -> Result<Sl2VlTable, Mismatch> {
    let mut table = Sl2VlTable::ALL_VL0;
    for (sl, (slot, &vl)) in table.0.iter_mut().zip(vls).enumerate() {
        *slot = Vl::new(vl).ok_or(Mismatch::Sl2VlVl { input, sl, vl })?;
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ibqos_fabric::builtin::load_topology;
    use ibqos_fabric::dump::PortDump;

    use super::*;
    use crate::build::held_cc::HeldCcError;
    use crate::build::{BuildError, Forwarding, Tables, build_network, build_routed_network};
    use crate::cc::CcConfig;
    use crate::network::Network;
    use crate::traffic;
    use ibqos_fabric::dump::{CaCongestionDump, CongestionDump, SwitchCongestionDump};

    fn two_switch() -> Topology {
        load_topology("two-switch").unwrap().topology
    }

    /// A dump that fits `topo`: every linked port running 8 VLs, its VLArb tables of 8 entries
    /// (VL `port`, weight `port`), a switch's SL2VL table of input `i` all on VL `i % 8`, a CA's
    /// all on VL `port`.
    fn fitting(topo: &Topology) -> FabricDump {
        let nodes = topo
            .nodes()
            .map(|(_, node)| {
                let ports = node
                    .existing_ports()
                    .filter(|(_, port)| port.peer.is_some())
                    .map(|(number, _)| {
                        let sl2vl: BTreeMap<u8, [u8; 16]> = if node.is_switch() {
                            (0..=node.num_ports()).map(|i| (i, [i % 8; 16])).collect()
                        } else {
                            BTreeMap::from([(number, [number; 16])])
                        };
                        let port = PortDump {
                            lid: 0,
                            port_state: "Active".into(),
                            phys_state: "LinkUp".into(),
                            oper_vls: VlCount::Eight.encoding(),
                            neighbor_mtu: 4,
                            vl_high_limit: number,
                            hoq_life: 0,
                            vl_stall_count: 0,
                            sl2vl,
                            vlarb_low: vec![[number, number]; 8],
                            vlarb_high: vec![[0, 1]; 8],
                            congestion: None,
                        };
                        (number, port)
                    })
                    .collect();
                let dump = NodeDump {
                    name: node.description.clone(),
                    kind: NodeDump::kind_name(node.kind.into()),
                    ports,
                    lft: BTreeMap::new(),
                };
                (FabricDump::node_key(node.guid), dump)
            })
            .collect();
        FabricDump { nodes }
    }

    /// Traffic the network is built for (only its link parameters matter here).
    fn traffic() -> traffic::Traffic {
        let text = "duration_us = 1\n[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H3\"\nsl = 0\npayload = 256\n";
        traffic::parse("t.toml", text.as_bytes()).unwrap()
    }

    fn build(dump: &FabricDump) -> Result<Network, BuildError> {
        build_network(&mut two_switch(), Tables::Held(dump), &traffic())
    }

    fn node<'n>(network: &'n Network, name: &str) -> &'n Node {
        network.nodes.iter().find(|n| n.name == name).unwrap()
    }

    #[test]
    fn every_linked_port_runs_the_dumps_tables() {
        let network = build(&fitting(&two_switch())).unwrap();
        let s1 = node(&network, "S1");
        assert_eq!(s1.sl2vl(3, 1).0, [Vl::new(3).unwrap(); 16]);
        assert_eq!(s1.sl2vl(5, 4).0, [Vl::new(5).unwrap(); 16]);
        let h5 = node(&network, "H5");
        assert_eq!(
            h5.sl2vl(0, 2).0,
            [Vl::new(2).unwrap(); 16],
            "what port 2 sends with"
        );
        let port2 = &h5.arbitration[2];
        assert_eq!(port2.low, [VlArbEntry::new(2, 2); 8]);
        assert_eq!((port2.high_limit, port2.oper_vls), (2, VlCount::Eight));
    }

    /// A change that makes a dump stop fitting the topology.
    type Spoil = fn(&mut FabricDump);

    /// Two nodes of two-switch, as a dump keys them.
    const S1: &str = "0x0002c90000001000";
    const H3: &str = "0x0002c90000100004";

    #[test]
    fn a_dump_that_does_not_fit_is_an_error_at_its_node_and_port() {
        let topo = two_switch();
        let cases: Vec<(Spoil, String)> = vec![
            (
                (|d| {
                    d.nodes.remove(H3);
                }),
                format!("\"H3\" ({H3}): the dump has no node with this NodeGUID"),
            ),
            (
                (|d| d.nodes.get_mut(H3).unwrap().kind = "switch".into()),
                format!("\"H3\" ({H3}): the dump has it as a switch, the topology as a ca"),
            ),
            (
                (|d| {
                    d.nodes.get_mut(S1).unwrap().ports.remove(&5);
                }),
                format!("\"S1\"[5] ({S1}): linked in the topology, but the dump has no such port"),
            ),
            (
                (|d| port(d, S1, 3).oper_vls = 6),
                format!("\"S1\"[3] ({S1}): OperVLs 6 is no PortInfo encoding"),
            ),
            (
                (|d| port(d, S1, 3).oper_vls = 5),
                format!("\"S1\"[3] ({S1}): it runs 15 VLs, more than the VLCap of 8"),
            ),
            (
                (|d| {
                    port(d, H3, 1).vlarb_low.pop();
                }),
                format!(
                    "\"H3\"[1] ({H3}): its VLArb low table has 7 entries, but the topology gives it a cap of 8"
                ),
            ),
            (
                (|d| port(d, H3, 1).vlarb_high[5] = [16, 1]),
                format!("\"H3\"[1] ({H3}): VLArb high entry 5 names VL 16; a VL is 0-15"),
            ),
            (
                (|d| {
                    port(d, S1, 3).sl2vl.remove(&4);
                }),
                format!(
                    "\"S1\"[3] ({S1}): the dump has no SL2VL table for input port 4, but the \
                     topology says the port maps SLs to VLs"
                ),
            ),
            (
                (|d| port(d, H3, 1).sl2vl.get_mut(&1).unwrap()[7] = 16),
                format!("\"H3\"[1] ({H3}): the SL2VL table for input port 1 maps SL 7 to VL 16"),
            ),
            (
                (|d| {
                    port(d, S1, 3).sl2vl.insert(9, [0; 16]);
                }),
                format!(
                    "\"S1\"[3] ({S1}): the dump has an SL2VL table for input port 9, which is \
                     none"
                ),
            ),
        ];
        for (spoil, expected) in cases {
            let mut dump = fitting(&topo);
            spoil(&mut dump);
            let error = build(&dump).unwrap_err().to_string();
            assert!(error.starts_with(&expected), "{error}\nexpected {expected}");
        }
    }

    /// [`fitting`] with LIDs and LFTs: every end port (switch port 0 included) gets LID 100
    /// and up in node order, and S1 forwards H3's LID out of port 3.
    fn routed(topo: &Topology) -> (FabricDump, u16) {
        let mut dump = fitting(topo);
        let mut next = 100;
        for (_, node) in topo.nodes() {
            let held = dump
                .nodes
                .get_mut(&FabricDump::node_key(node.guid))
                .unwrap();
            if node.is_switch() {
                let port0 = held.ports.values().next().unwrap().clone();
                held.ports.insert(0, port0);
            }
            for (&number, port) in held.ports.iter_mut() {
                if !node.is_switch() || number == 0 {
                    port.lid = next;
                    next += 1;
                }
            }
        }
        let h3 = port(&mut dump, H3, 1).lid;
        dump.nodes.get_mut(S1).unwrap().lft.insert(h3, 3);
        (dump, h3)
    }

    fn build_forwarding(dump: &FabricDump) -> Result<(Topology, Network), BuildError> {
        let mut topo = two_switch();
        let held = Forwarding::Held(dump);
        let network =
            build_routed_network(&mut topo, Tables::Held(dump), held, &traffic())?.network;
        Ok((topo, network))
    }

    #[test]
    fn a_dump_with_lfts_gives_the_lids_and_the_routes() {
        let (dump, h3_lid) = routed(&two_switch());
        let (topo, network) = build_forwarding(&dump).unwrap();
        let h3 = topo.node_by_name("H3").unwrap();
        assert_eq!(topo.port(PortRef::new(h3, 1)).unwrap().lid, h3_lid);
        assert_eq!(node(&network, "H3").lids[1], h3_lid);
        let s1 = node(&network, "S1");
        assert_eq!(s1.route(h3_lid), Some(3));
        assert_eq!(s1.lft.len(), usize::from(h3_lid) + 1);
        assert_eq!(
            node(&network, "S2").route(h3_lid),
            None,
            "S2's dump routes nothing"
        );
    }

    #[test]
    fn lfts_and_lids_that_do_not_fit_are_errors_at_their_node_and_port() {
        let (dump, h3_lid) = routed(&two_switch());
        let mut bad_port = dump.clone();
        bad_port.nodes.get_mut(S1).unwrap().lft.insert(h3_lid, 99);
        let mut no_port0 = dump;
        no_port0.nodes.get_mut(S1).unwrap().ports.remove(&0);
        let expected = [
            (
                bad_port,
                format!(
                    "\"S1\" ({S1}): its LFT forwards LID {h3_lid} out of port 99, which the \
                     switch does not have"
                ),
            ),
            (
                no_port0,
                format!(
                    "\"S1\"[0] ({S1}): an end port in the topology, but the dump has no such \
                     port to give its LID"
                ),
            ),
        ];
        for (dump, message) in expected {
            let error = build_forwarding(&dump).unwrap_err().to_string();
            assert_eq!(error, message);
        }
    }

    fn port<'d>(dump: &'d mut FabricDump, node: &str, number: u8) -> &'d mut PortDump {
        dump.nodes
            .get_mut(node)
            .unwrap()
            .ports
            .get_mut(&number)
            .unwrap()
    }

    #[test]
    fn a_port_without_sl_mapping_needs_no_table_and_sends_on_vl0() {
        let mut topo = two_switch();
        let h3 = topo.node_by_name("H3").unwrap();
        topo.port_mut(PortRef::new(h3, 1))
            .unwrap()
            .link
            .sl_mapping_supported = false;
        let mut dump = fitting(&topo);
        dump.nodes
            .get_mut(&FabricDump::node_key(topo.node(h3).unwrap().guid))
            .unwrap()
            .ports
            .get_mut(&1)
            .unwrap()
            .sl2vl
            .clear();
        let network = build_network(&mut topo, Tables::Held(&dump), &traffic()).unwrap();
        assert_eq!(node(&network, "H3").sl2vl(0, 1), &Sl2VlTable::ALL_VL0);
    }

    /// `dump` with every switch holding `switch` and every CA port `ca` (S1, S2 and H1-H3 on
    /// the two-switch fabric).
    fn with_congestion(
        mut dump: FabricDump,
        switch: &SwitchCongestionDump,
        ca: &CaCongestionDump,
    ) -> FabricDump {
        for node in dump.nodes.values_mut() {
            let switch_node = node.kind == "switch";
            for (number, port) in &mut node.ports {
                port.congestion = match (switch_node, number) {
                    (true, 0) => Some(CongestionDump::Switch(switch.clone())),
                    (false, _) => Some(CongestionDump::Ca(ca.clone())),
                    (true, _) => None,
                };
            }
            if switch_node {
                let mut port0 = node.ports.values().next().expect("a port").clone();
                port0.congestion = Some(CongestionDump::Switch(switch.clone()));
                node.ports.insert(0, port0);
            }
        }
        dump
    }

    fn switch_setting(threshold: u8) -> SwitchCongestionDump {
        SwitchCongestionDump {
            control_map: 0x1f,
            victim_mask: "0".repeat(63) + "4",
            credit_mask: "0".repeat(64),
            threshold,
            packet_size: 8,
            cs_threshold: 0,
            cs_return_delay: 0,
            marking_rate: 2,
        }
    }

    fn ca_setting(increase: u16) -> CaCongestionDump {
        CaCongestionDump {
            port_control: 0,
            control_map: 0x0006,
            sls: vec![[20, increase, 0, 1]; 16],
            ccti_limit: 3,
            table: vec![0, 1, 0x4002, 0xc003],
        }
    }

    #[test]
    fn a_dumps_agents_give_a_run_without_its_own_settings_their_congestion_control() {
        let dump = with_congestion(fitting(&two_switch()), &switch_setting(15), &ca_setting(1));
        let network = build(&dump).unwrap();
        let text = format!(
            "cc_sw_cong_setting_threshold = 15\ncc_sw_cong_setting_marking_rate = 2\n\
             cc_sw_cong_setting_packet_size = 8\ncc_sw_cong_setting_victim_mask = \"0x4\"\n\
             cc_ca_cong_setting_control_map = 6\ncc_ca_cong_setting_ccti_timer = {:?}\n\
             cc_ca_cong_setting_ccti_increase = {:?}\ncc_ca_cong_setting_ccti_min = {:?}\n\
             cc_cct = \"0:0,0:1,1:2,3:3\"\n",
            [20; 16], [1; 16], [1; 16]
        );
        let expected: CcConfig = toml::from_str(&text).unwrap();
        assert_eq!(network.congestion_control, Some(expected.params().unwrap()));
        // Agents with nothing on, or none read, give none.
        let off = with_congestion(
            fitting(&two_switch()),
            &switch_setting(0),
            &CaCongestionDump {
                control_map: 0,
                ..ca_setting(1)
            },
        );
        assert_eq!(build(&off).unwrap().congestion_control, None);
        assert_eq!(
            build(&fitting(&two_switch())).unwrap().congestion_control,
            None
        );
    }

    #[test]
    fn agents_that_hold_different_settings_are_named_not_run() {
        let mut dump = with_congestion(fitting(&two_switch()), &switch_setting(15), &ca_setting(1));
        let last_switch = dump.nodes.values_mut().rfind(|n| n.kind == "switch");
        last_switch.unwrap().ports.get_mut(&0).unwrap().congestion =
            Some(CongestionDump::Switch(switch_setting(7)));
        let Err(BuildError::HeldCongestion(HeldCcError::Differ {
            first,
            second,
            what,
            ..
        })) = build(&dump)
        else {
            panic!("two switches with other thresholds were run");
        };
        assert!(
            first != second && first.ends_with(" port 0") && second.ends_with(" port 0"),
            "{first} / {second}"
        );
        assert_eq!(what, "Thresholds");
        let wide = with_congestion(
            fitting(&two_switch()),
            &switch_setting(15),
            &ca_setting(300),
        );
        assert!(matches!(
            build(&wide),
            Err(BuildError::HeldCongestion(HeldCcError::Invalid { .. }))
        ));

        // A switch's setting out of range is the switch's: the agent at its port 0.
        let steep = with_congestion(fitting(&two_switch()), &switch_setting(16), &ca_setting(1));
        let Err(BuildError::HeldCongestion(HeldCcError::Invalid { agent, .. })) = build(&steep)
        else {
            panic!("a Threshold of 16 was run");
        };
        assert!(agent.ends_with(" port 0"), "{agent}");
    }
}
