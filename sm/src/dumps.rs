//! OpenSM's dump files, byte for byte where OpenSM has them, from what a sweep found: text
//! only, written into what the caller gives (a file under `dump_files_dir`, as it is made: a
//! large fabric's dump is tens of megabytes).

use std::fmt::{self, Write};

use ibqos_mad::{
    CapabilityMask, CapabilityMask2, Guid, NodeType, PortState, SlToVlMappingTableRepr, VlArbEntry,
    VlArbitrationTableRepr,
};

use crate::engine::routing::Lfts;
use crate::engine::subnet::{DiscoveredNode, Port, PortKey, Subnet};
use crate::sa::SaDb;

/// `opensm-subnet.lst` (`dump_topology_node`, osm_dump.c:368-500): one line per linked port of
/// every node, in OpenSM's node table order, the port's end then its neighbour's, then the
/// link's width, state and speed. Kept as OpenSM writes it: the local VenID has 6 hex digits and
/// the neighbour's 8, the neighbour's DevID is its 16-bit value shifted up 16 bits (OpenSM
/// byte-swaps it as a 32-bit value), and the speed reads the neighbour's capability mask.
pub fn subnet_lst(subnet: &Subnet, out: &mut dyn Write) -> fmt::Result {
    let mut nodes: Vec<(&u64, &DiscoveredNode)> = subnet.nodes.iter().collect();
    nodes.sort_by_key(|(guid, _)| Guid(**guid).opensm_order());
    for (&guid, node) in nodes {
        for port in 1..=node.info.num_ports {
            let key = PortKey::new(guid, port);
            let (Some(local), Some(peer_key)) = (node.ports.get(&port), subnet.peer(key)) else {
                continue;
            };
            let (Some(peer_node), Some(peer)) =
                (subnet.nodes.get(&peer_key.node), subnet.port(peer_key))
            else {
                continue;
            };
            let Some(local_default) = default_port(node, local) else {
                continue;
            };
            let Some(peer_default) = default_port(peer_node, peer) else {
                continue;
            };
            end(out, node, local, local_default, port, End::Local)?;
            end(
                out,
                peer_node,
                peer,
                peer_default,
                peer_key.port,
                End::Neighbour,
            )?;
            let speed = speed(local, peer_default);
            writeln!(
                out,
                "PHY={} LOG={} SPD={speed}",
                width(local, peer_default),
                state(local.info.port_state)
            )?;
        }
    }
    Ok(())
}

/// `opensm-lfts.dump` (`dump_ucast_lfts`, osm_dump.c:331-366), which OpenSM writes when its log
/// flags have ROUTING (0x40): every switch in OpenSM's switch table order, its routes for LIDs
/// 0 to the subnet's highest, each with the node that owns the LID.
pub fn lfts_dump(subnet: &Subnet, lfts: &Lfts, out: &mut dyn Write) -> fmt::Result {
    let max_lid = lfts.max_lid();
    let mut owners = std::collections::BTreeMap::new();
    for (guid, number, port) in subnet.endports() {
        let count = 1u32 << port.info.lmc.min(7);
        for lid in (u32::from(port.lid)..u32::from(port.lid) + count).filter(|_| port.lid != 0) {
            owners.insert(lid as u16, (guid, number));
        }
    }
    let mut switches: Vec<(&u64, &Vec<u8>)> = lfts.tables.iter().collect();
    switches.sort_by_key(|(guid, _)| Guid(**guid).opensm_order());
    for (&guid, lft) in switches {
        let Some(node) = subnet.nodes.get(&guid) else {
            continue;
        };
        let lid = node.ports.get(&0).map_or(0, |p| p.lid);
        writeln!(
            out,
            "Unicast lids [0-{max_lid}] of switch Lid {lid} guid 0x{guid:016x} ('{}'):",
            node.description
        )?;
        for lid in 0..=max_lid {
            let port = lft.get(usize::from(lid)).copied().unwrap_or(u8::MAX);
            // OpenSM skips a LID whose port is past the switch's: no route (0xFF).
            if port > node.info.num_ports {
                continue;
            }
            write!(out, "0x{lid:04x} {port:03} # ")?;
            let owner = owners.get(&lid).and_then(|(g, n)| {
                Some((subnet.nodes.get(g)?, subnet.port(PortKey::new(*g, *n))?))
            });
            match owner {
                Some((owner, owner_port)) => {
                    write!(
                        out,
                        "{} portguid 0x{:016x}: '{}'",
                        node_type_name(owner.info.node_type),
                        owner_port.guid,
                        owner.description
                    )?;
                }
                None => out.write_str("unknown node and type")?,
            }
            out.write_char('\n')?;
        }
        writeln!(out, "{max_lid} lids dumped")?;
    }
    Ok(())
}

/// `opensm-sl2vl.dump` (`dump_sl2vl_tbl`, osm_dump.c:502-552), which OpenSM writes with the
/// routing dumps when QoS is on: every end port in OpenSM's port table order, a switch's table
/// for every input to each linked output port (port 0 has no link, so never), a CA's one
/// table; zeros where the SM programmed none, as OpenSM's cache holds them.
pub fn sl2vl_dump(db: &SaDb, out: &mut dyn Write) -> fmt::Result {
    const HEADER: &str = "#in out : 0  1  2  3  4  5  6  7  8  9  10 11 12 13 14 15";
    const SEPARATOR: &str = "#--------------------------------------------------------";
    let unprogrammed = SlToVlMappingTableRepr { vls: [0; 16] };
    let row = |out: &mut dyn Write, input: u8, output: u8, table: &SlToVlMappingTableRepr| {
        let vls: String = table.vls.iter().map(|vl| format!(" {vl:<2}")).collect();
        writeln!(out, "{input:<3} {output:<3} :{vls}")
    };
    for key in db.endports_by_guid() {
        let (Some(node), Some(port)) = (db.node(key.node), db.port(key)) else {
            continue;
        };
        let num_ports = node.info.num_ports;
        if num_ports == 0 {
            continue;
        }
        writeln!(out, "{}\n{HEADER}\n{SEPARATOR}", port_title(node, port))?;
        if node.is_switch() {
            for output in 0..=num_ports {
                if db.peer(PortKey::new(key.node, output)).is_none() {
                    continue;
                }
                for input in 0..=num_ports {
                    let table = db.sl2vl_table(key.node, input, output);
                    row(out, input, output, table.unwrap_or(&unprogrammed))?;
                }
            }
        } else {
            let table = db.sl2vl_table(key.node, 0, key.port);
            row(out, 0, 0, table.unwrap_or(&unprogrammed))?;
        }
        writeln!(out, "{SEPARATOR}\n")?;
    }
    Ok(())
}

/// `ibqos-vlarb.dump`, which OpenSM lacks, in the style of its SL2VL dump. It lists every end port
/// in OpenSM's port table order, and each of its ports (every port of a switch) with a
/// VLArbitration table the sweep programmed. For each port it gives the VLHighLimit the port
/// answered, and the high and low tables as `vl:weight` up to their last entry in use.
pub fn vlarb_dump(db: &SaDb, out: &mut dyn Write) -> fmt::Result {
    const HEADER: &str = "#port VLHighLimit : high (vl:weight) | low (vl:weight)";
    for key in db.endports_by_guid() {
        let (Some(node), Some(port)) = (db.node(key.node), db.port(key)) else {
            continue;
        };
        let ports: Vec<u8> = if node.is_switch() {
            node.ports.keys().copied().collect()
        } else {
            vec![key.port]
        };
        let mut rows = String::new();
        for number in ports {
            let table = |blocks: [u8; 2]| -> Option<Vec<VlArbEntry>> {
                let found: Vec<&VlArbitrationTableRepr> = blocks
                    .iter()
                    .filter_map(|&b| db.vlarb_table(key.node, number, b))
                    .collect();
                (!found.is_empty()).then(|| found.iter().flat_map(|t| t.entries).collect())
            };
            let (high, low) = (table([3, 4]), table([1, 2]));
            if high.is_none() && low.is_none() {
                continue;
            }
            let limit = node.ports.get(&number).map_or(0, |p| p.info.vl_high_limit);
            writeln!(
                rows,
                "{number:<5} {limit:<11} : {} | {}",
                entries(high.as_deref()),
                entries(low.as_deref())
            )?;
        }
        if rows.is_empty() {
            continue;
        }
        writeln!(out, "{}\n{HEADER}\n{rows}", port_title(node, port))?;
    }
    Ok(())
}

/// A VLArb table's entries up to its last in use, as `vl:weight` separated by blanks.
fn entries(table: Option<&[VlArbEntry]>) -> String {
    let table = table.unwrap_or_default();
    let used = table
        .iter()
        .rposition(|e| e.vl != 0 || e.weight != 0)
        .map_or(0, |last| last + 1);
    let shown: Vec<String> = table[..used]
        .iter()
        .map(|e| format!("{}:{}", e.vl, e.weight))
        .collect();
    shown.join(" ")
}

/// The line that opens an end port's section of the SL2VL dump (`dump_sl2vl_tbl`) and of the
/// VLArb dump made in its style: node type, port GUID, base LID and node description.
fn port_title(node: &DiscoveredNode, port: &Port) -> String {
    format!(
        "{} 0x{:016x}, base LID {}, \"{}\"",
        node_type_name(node.info.node_type),
        port.guid,
        port.lid,
        node.description
    )
}

/// `ib_get_node_type_str`.
fn node_type_name(node_type: NodeType) -> &'static str {
    match node_type {
        NodeType::Ca => "Channel Adapter",
        NodeType::Switch => "Switch",
        NodeType::Router => "Router",
        _ => "UNKNOWN",
    }
}

/// Which end of a link a record is, for OpenSM's two formats.
#[derive(PartialEq)]
enum End {
    Local,
    Neighbour,
}

/// A switch's port 0, a CA's or router's own port: where OpenSM reads the LID and SM flag.
fn default_port<'a>(node: &'a DiscoveredNode, port: &'a Port) -> Option<&'a Port> {
    if node.is_switch() {
        node.ports.get(&0)
    } else {
        Some(port)
    }
}

fn end(
    out: &mut dyn Write,
    node: &DiscoveredNode,
    port: &Port,
    default: &Port,
    number: u8,
    end: End,
) -> fmt::Result {
    let kind = match node.info.node_type {
        NodeType::Switch => "SW",
        NodeType::Ca => "CA",
        NodeType::Router => "Rt",
        _ => "**",
    };
    let sm = if default.lid == default.info.master_sm_lid {
        "-SM"
    } else {
        ""
    };
    let info = &node.info;
    let (vendor, device) = match end {
        End::Local => (
            format!("{:06X}", info.vendor_id),
            format!("{:04X}", info.device_id),
        ),
        End::Neighbour => (
            format!("{:08X}", info.vendor_id),
            format!("{:04X}", u32::from(info.device_id) << 16),
        ),
    };
    write!(
        out,
        "{{ {kind}{sm} Ports:{:02X} SystemGUID:{:016x} NodeGUID:{:016x} PortGUID:{:016x} \
         VenID:{vendor} DevID:{device} Rev:{:08X} {{{}}} LID:{:04X} PN:{number:02X} }} ",
        info.num_ports,
        info.system_image_guid,
        info.node_guid,
        port.guid,
        info.revision,
        node.description,
        default.lid,
    )
}

/// `PHY=`: the local port's active width; 2x only where the neighbour's default port says it
/// supports it.
fn width(local: &Port, peer_default: &Port) -> &'static str {
    match local.info.link_width_active {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 if peer_default
            .info
            .capability_mask2
            .contains(CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED) =>
        {
            "2x"
        }
        _ => "??",
    }
}

/// `SPD=`: the local port's active speed, its extended speed where the neighbour's default
/// port has IsExtendedSpeedsSupported.
fn speed(local: &Port, peer_default: &Port) -> &'static str {
    let mut speed = match local.info.link_speed_active {
        1 => "2.5",
        2 => "5",
        4 => "10",
        _ => "??",
    };
    if peer_default
        .info
        .capability_mask
        .contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED)
    {
        speed = match local.info.link_speed_ext_active {
            0 => speed,
            1 => "14",
            2 => "25",
            4 => "50",
            _ => "??",
        };
    }
    speed
}

fn state(state: PortState) -> &'static str {
    match state {
        PortState::Active => "ACT",
        PortState::Armed => "ARM",
        PortState::Init => "INI",
        _ => "DWN",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use ibqos_mad::{NodeInfo, NodeInfoRepr, PortInfo, PortInfoRepr};

    use super::*;

    fn node(
        node_type: NodeType,
        guid: u64,
        ports: &[(u8, u16)],
        description: &str,
    ) -> DiscoveredNode {
        let mut info = NodeInfoRepr::parse(&NodeInfo::new_unchecked([0u8; 40])).unwrap();
        info.node_type = node_type;
        info.node_guid = guid;
        info.system_image_guid = guid;
        info.num_ports = 1;
        info.vendor_id = 0x02c9;
        info.device_id = 0xcafe;
        info.revision = 0xa1;
        let port = |lid: u16| {
            let mut info =
                PortInfoRepr::parse(&PortInfo::new_unchecked([0u8; PortInfo::<&[u8]>::LEN]))
                    .unwrap();
            info.master_sm_lid = 1;
            info.port_state = PortState::Active;
            info.link_width_active = 2;
            info.link_speed_active = 4;
            Port {
                info,
                guid: guid + 1,
                path: Vec::new(),
                lid,
            }
        };
        DiscoveredNode {
            info,
            description: description.to_string(),
            switch: None,
            path: Vec::new(),
            ports: ports.iter().map(|&(n, lid)| (n, port(lid))).collect(),
        }
    }

    #[test]
    fn a_link_as_opensm_lists_it_with_its_format_quirks() {
        let mut subnet = Subnet {
            nodes: BTreeMap::from([
                (0x10, node(NodeType::Ca, 0x10, &[(1, 1)], "sm host")),
                (0x20, node(NodeType::Ca, 0x20, &[(1, 2)], "other host")),
            ]),
            ..Subnet::default()
        };
        subnet.link(PortKey::new(0x10, 1), PortKey::new(0x20, 1));
        let mut text = String::new();
        subnet_lst(&subnet, &mut text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // 0x10 before 0x20 in OpenSM's order (byte-swapped GUIDs: 0x10.. < 0x20..). The SM's
        // port (its LID is the master SM's) is CA-SM; the local VenID has 6 digits, the
        // neighbour's 8, and the neighbour's DevID is shifted up 16 bits.
        assert_eq!(
            lines[0],
            "{ CA-SM Ports:01 SystemGUID:0000000000000010 NodeGUID:0000000000000010 \
             PortGUID:0000000000000011 VenID:0002C9 DevID:CAFE Rev:000000A1 {sm host} \
             LID:0001 PN:01 } { CA Ports:01 SystemGUID:0000000000000020 \
             NodeGUID:0000000000000020 PortGUID:0000000000000021 VenID:000002C9 \
             DevID:CAFE0000 Rev:000000A1 {other host} LID:0002 PN:01 } PHY=4x LOG=ACT SPD=10"
        );
        assert_eq!(lines.len(), 2, "one line from each end");
    }
}
