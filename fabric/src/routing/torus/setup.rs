//! What torus-2QoS checks before it looks for the torus (`verify_setup`): the radix, the data
//! VLs, the port order, and the seeds, of which it takes the first whose switches are all in
//! the fabric. Each refusal is OpenSM's error line.

use ibqos_mad::Guid;
use ibqos_opensm::torus_config::{TorusConfig, TorusSeed};
use ibqos_qos::VlCount;

use super::build::{Refusal, dimension};
use crate::topology::Topology;

/// The fewest data VLs the ports may run, as OpenSM counts them while it reads each PortInfo
/// (`osm_port_info_rcv.c:119-129,425-437`): a port's VLCap under the cap of `max_op_vls`, at
/// most 15, whatever OperVLs the port runs when the engine routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DataVls {
    /// Over the linked CA and router ports (`min_data_vls`).
    pub endport: u8,
    /// Over the switch ports linked to a switch, port 0 aside (`min_sw_data_vls`).
    pub switchport: u8,
}

impl DataVls {
    pub fn of(topo: &Topology, max_op_vls: Option<VlCount>) -> DataVls {
        let mut vls = DataVls {
            endport: VlCount::Fifteen.count(),
            switchport: VlCount::Fifteen.count(),
        };
        for (_, node) in topo.nodes() {
            for (p, port) in node.existing_ports() {
                let Some(peer) = port.peer.filter(|_| p != 0) else {
                    continue;
                };
                let cap = port.link.vl_cap;
                let data = max_op_vls.map_or(cap, |max| cap.min(max)).count();
                if !node.is_switch() {
                    vls.endport = vls.endport.min(data);
                } else if topo.node(peer.node).is_some_and(|n| n.is_switch()) {
                    vls.switchport = vls.switchport.min(data);
                }
            }
        }
        vls
    }
}

const LINK_REQUIRED_RADIX_4: &str = " direction link required for topology seed configuration \
                                     since radix == 4! See torus-2QoS.conf(5).";
const LINK_REQUIRED: &str =
    " direction link required for topology seed configuration! See torus-2QoS.conf(5).";
const NO_COMMON_SWITCH: &str = " direction links for topology seed do not share a common \
                                switch! See torus-2QoS.conf(5).";

/// The seed torus-2QoS builds from, after OpenSM's checks in its order.
pub(super) fn verify<'c>(
    config: &'c TorusConfig,
    topo: &Topology,
    vls: DataVls,
) -> Result<&'c TorusSeed, Refusal> {
    let refuse = |line: String| Err(line);
    if config.radix.contains(&0) {
        return refuse("ERR 4E20: missing required torus size specification!".to_string());
    }
    if vls.switchport < 2 {
        return refuse(format!(
            "ERR 4E48: Too few data VLs to support torus routing without credit loops (have \
             switchport {} need 2)",
            vls.switchport
        ));
    }
    let mut switches: Vec<(u64, u64, u32)> = topo
        .switches()
        .map(|(_, n)| {
            (
                Guid(n.guid).opensm_order(),
                n.guid,
                u32::from(n.num_ports()) + 1,
            )
        })
        .collect();
    switches.sort();
    for (_, guid, ports) in switches {
        let beyond = config
            .port_order
            .iter()
            .take(ports as usize)
            .find(|&&p| p >= ports);
        if let Some(port) = beyond {
            return refuse(format!(
                "ERR 4E21: port_order configured using port {port}, but only {} ports in switch \
                 w/ GUID {}",
                ports - 1,
                Guid(guid)
            ));
        }
    }
    let present = |guid: u64| {
        topo.node_by_guid(guid)
            .and_then(|id| topo.node(id))
            .is_some_and(|n| n.is_switch())
    };
    let seeds: Vec<&'c TorusSeed> = if config.seeds.is_empty() {
        vec![&EMPTY_SEED]
    } else {
        config.seeds.iter().collect()
    };
    let mut chosen = None;
    for (n, seed) in seeds.iter().enumerate() {
        check_seed(config, seed)?;
        let all_present = seed
            .links
            .iter()
            .enumerate()
            .filter(|(d, _)| config.radix[*d] > 1)
            .flat_map(|(_, pair)| pair.iter().flatten())
            .all(|&(from, to)| present(from) && present(to));
        if all_present && chosen.is_none() {
            chosen = Some(n);
        }
    }
    match chosen {
        Some(n) => Ok(seeds[n]),
        None => refuse(
            "ERR 4E30: Every configured torus seed has at least one switch missing in fabric! \
             See torus-2QoS.conf(5) and TORUS TOPOLOGY DISCOVERY in torus-2QoS(8)"
                .to_string(),
        ),
    }
}

/// The seed of a file that gives none.
static EMPTY_SEED: TorusSeed = TorusSeed {
    links: [[None; 2]; 3],
    dateline: [0; 3],
};

/// One seed's links, as `verify_setup` checks them: both directions of a radix-4 ring from one
/// switch, at least one direction per dimension, and one common switch.
fn check_seed(config: &TorusConfig, seed: &TorusSeed) -> Result<(), Refusal> {
    let refuse = |code: &str, what: String, why: &str| Err(format!("ERR {code}: {what}{why}"));
    let [minus, plus] = [0, 1];
    let codes = [
        ["4E22", "4E23", "4E24"],
        ["4E25", "4E26", "4E27"],
        ["4E28", "4E29", "4E2A"],
    ];
    for (d, [no_plus, no_minus, apart]) in codes.into_iter().enumerate() {
        if config.radix[d] != 4 || config.mesh[d] {
            continue;
        }
        let name = dimension(d);
        let links = seed.links[d];
        if links[plus].is_none() {
            return refuse(no_plus, format!("Positive {name}"), LINK_REQUIRED_RADIX_4);
        }
        if links[minus].is_none() {
            return refuse(no_minus, format!("Negative {name}"), LINK_REQUIRED_RADIX_4);
        }
        if links[plus].map(|l| l.0) != links[minus].map(|l| l.0) {
            return refuse(apart, format!("Positive/negative {name}"), NO_COMMON_SWITCH);
        }
    }
    // OpenSM checks x, then z, then y; z and y each against x.
    for (d, code, common) in [(0, "4E2B", ""), (2, "4E2C", "4E2D"), (1, "4E2E", "4E2F")] {
        if config.radix[d] <= 1 {
            continue;
        }
        let name = dimension(d);
        if seed.links[d].iter().all(Option::is_none) {
            return refuse(code, format!("Positive or negative {name}"), LINK_REQUIRED);
        }
        let differs = seed.links[0]
            .iter()
            .flatten()
            .any(|x| seed.links[d].iter().flatten().any(|other| other.0 != x.0));
        if d != 0 && differs {
            return refuse(common, format!("x and {name}"), NO_COMMON_SWITCH);
        }
    }
    Ok(())
}
