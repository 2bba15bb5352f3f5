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

use ibqos_fabric::dump::{FabricDump, NodeDump};
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
    let key = FabricDump::node_key(fnode.guid);
    let fail = |port: Option<u8>, mismatch: Mismatch| BuildError::Held {
        place: match port {
            Some(p) => format!("{} ({key})", topo.describe(PortRef::new(id, p))),
            None => format!("{:?} ({key})", fnode.name),
        },
        mismatch,
    };
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
    use crate::build::{Tables, build_network};
    use crate::network::Network;
    use crate::traffic;

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
                        };
                        (number, port)
                    })
                    .collect();
                let dump = NodeDump {
                    name: node.description.clone(),
                    kind: NodeDump::kind_name(node.kind.into()),
                    ports,
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
}
