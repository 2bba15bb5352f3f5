//! OpenSM's torus-2QoS engine (`osm_torus.c`): dimension-order routing on a 2D or 3D torus or
//! mesh, free of credit loops by the SL bits of the datelines a path crosses, with two QoS
//! levels.
//!
//! The torus comes from torus-2QoS.conf (`torus_config`): its radix per dimension and a seed,
//! the switches that fix the origin and the directions ([`build`]). The LFTs go x, then y,
//! then z, each ring the short way round ([`route`]). The SL of a path and the SL2VL tables
//! that keep it off credit loops are the engine's, whatever the QoS policy chose: only the
//! QoS level, SL bit 3, survives ([`layering`]).
//!
//! ibqos routes a complete torus: OpenSM's routing around failed switches and links is not
//! here yet, and such a fabric is refused, so the next engine of the list routes. So is a
//! torus without `qos`, as OpenSM refuses it (`ERR 4E44`). The order of destination switches
//! after the seed's is OpenSM's coordinate order, where OpenSM keeps the order its search met
//! them in; it decides only which of several parallel links a route takes.

mod build;
mod layering;
mod route;
mod setup;
mod stree;

use std::sync::Arc;

use ibqos_opensm::torus_config::DEFAULT_TORUS_CONFIG;
use ibqos_qos::{Priority, Sl2VlTable, VlArbTable, VlCount};

use super::engine::{Engine, Layering, Routing, VlShortfall};
use super::policy_sl::{TORUS_ENDPORT_FEATURE, TORUS_FEATURES};
use super::{MasterTree, Routes, RoutingError, RoutingOptions, SwitchGraph};
use crate::topology::Topology;
use build::{Physical, Torus};
use layering::TorusLayering;
use setup::DataVls;

/// OpenSM's `torus-2QoS` engine behind the [`Engine`] seam.
#[derive(Debug, Clone, Copy)]
pub struct Torus2QoS;

impl Engine for Torus2QoS {
    fn name(&self) -> &'static str {
        "torus-2QoS"
    }

    /// The data VLs come from each port's VLCap under `max_op_vls`, as OpenSM counts them for
    /// torus-2QoS, not from the OperVLs the ports run now (`_vls`).
    fn unicast(
        &self,
        topo: &Topology,
        options: &RoutingOptions,
        _vls: VlCount,
    ) -> Result<Routing, RoutingError> {
        topo.validate()?;
        if !options.qos {
            return Err(RoutingError::Refused(
                "ERR 4E44: Routing engine list contains torus-2QoS. Enable QoS for correct \
                 operation (-Q or 'qos TRUE' in opensm.conf)."
                    .to_string(),
            ));
        }
        let config = options.torus_config.as_ref().ok_or_else(|| {
            RoutingError::Refused(format!(
                "ERR 4E11: Opening {DEFAULT_TORUS_CONFIG}: the file was not read"
            ))
        })?;
        if let Some(failure) = &config.failure {
            return Err(RoutingError::Refused(failure.clone()));
        }
        let data_vls = DataVls::of(topo, options.max_op_vls);
        let seed = setup::verify(config, topo, data_vls).map_err(RoutingError::Refused)?;
        let torus =
            Torus::build(config, seed, topo, &physical(topo)).map_err(RoutingError::Refused)?;
        let dests = route::destinations(&torus, config, topo)
            .map_err(|port| RoutingError::MissingLid(topo.describe(port)))?;
        let (lfts, max_lid) = route::lfts(&torus, &dests).map_err(RoutingError::Refused)?;
        let decided = Decided {
            layering: TorusLayering::new(&torus, &dests, data_vls),
            master: master_tree(&torus),
        };
        Ok(Routing {
            routes: Routes { lfts, max_lid },
            layering: Arc::new(decided),
        })
    }
}

/// The master spanning tree of `torus` (`torus_master_stree`), by NodeGUID: each switch's
/// branches with the ports of the group that leads to each child.
fn master_tree(torus: &Torus) -> MasterTree {
    let stree = stree::master_tree(torus);
    let branches = stree
        .children
        .iter()
        .enumerate()
        .map(|(s, children)| {
            let sw = &torus.switches[s];
            let branches = children
                .iter()
                .map(|&(group, child)| (sw.groups[group].clone(), torus.switches[child].guid))
                .collect();
            (sw.guid, branches)
        })
        .collect();
    MasterTree {
        root: torus.switches[stree.root].guid,
        branches,
    }
}

/// The switches of `topo` and their neighbours, for the torus to be placed on. The modules of
/// the engine take what they need of the routing seam from here, so that none of them depends
/// on the seam that lists the engine.
fn physical(topo: &Topology) -> Physical {
    let graph = SwitchGraph::new(topo);
    let neighbours = graph
        .adj
        .iter()
        .enumerate()
        .map(|(s, links)| links.iter().map(|&(_, n)| n).filter(|&n| n != s).collect())
        .collect();
    Physical {
        ids: graph.ids,
        guid: graph.guid,
        neighbours,
    }
}

/// What the routing decided beside the LFTs: the answers of its layering, and the master
/// tree of its multicast.
#[derive(Debug)]
struct Decided {
    layering: TorusLayering,
    master: MasterTree,
}

impl Layering for Decided {
    fn path_sl(&self, hint: u8, slid: u16, dlid: u16) -> u8 {
        self.layering.sl(hint, slid, dlid)
    }

    fn vls_used(&self) -> VlCount {
        self.layering.vls()
    }

    fn update_sl2vl(&self, node: u64, input: u8, output: u8, table: &mut Sl2VlTable) {
        self.layering.sl2vl(node, input, output, table);
    }

    /// Both priorities alike.
    fn update_vlarb(&self, node: u64, port: u8, _priority: Priority, table: &mut VlArbTable) {
        self.layering.vlarb(node, port, table);
    }

    fn multicast_master(&self) -> Option<&MasterTree> {
        Some(&self.master)
    }

    /// OpenSM's warnings of `verify_setup` (`osm_torus.c:7030-7045`): the features the switch
    /// ports linked to switches, and the end ports, run too few data VLs for.
    fn vl_shortfalls(&self) -> Vec<VlShortfall> {
        let vls = self.layering.data_vls();
        let between_switches = TORUS_FEATURES.iter().map(|&(needed, without)| VlShortfall {
            ports: "switch ports linked to a switch",
            have: vls.switchport,
            needed,
            without,
        });
        let (needed, without) = TORUS_ENDPORT_FEATURE;
        let to_endports = VlShortfall {
            ports: "CA and router ports",
            have: vls.endport,
            needed,
            without,
        };
        between_switches
            .chain([to_endports])
            .filter(|shortfall| shortfall.have < shortfall.needed)
            .collect()
    }
}

#[cfg(test)]
mod tests;
