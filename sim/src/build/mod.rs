//! The simulator's view of a fabric, built the way the SM would program it: LIDs in endport
//! order (as a simple LID manager assigns them) unless the net file gives them, the forwarding
//! tables of the configured routing engines, and per port the planner's tables for its class, capabilities and OperVLs
//! (the lower VLCap of the two ends, capped by `max_op_vls`), or the tables a fabric held (a
//! dump, see the `held` module). Link speed and width come from the traffic file, not the net
//! file: net files carry ibsim's defaults (4x SDR), not the hardware's.

use std::collections::BTreeMap;
use std::sync::Arc;

use ibqos_fabric::dump::FabricDump;
use ibqos_fabric::generate::{GenError, assign_missing_lids};
use ibqos_fabric::routing::{
    Attempt, EngineList, Layering, Routes, Unlayered, Unrouted, update_port_tables,
};
use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_qos::policy::setup::SetupTables;
use ibqos_qos::{
    PlanError, PortClass, QosConfig, Sl2VlProgramming, Sl2VlTable, SwitchSl2VlView, VlCount,
    plan_settings, setup_sl2vl, switch_sl2vl,
};

pub(crate) mod held;
pub(crate) mod held_cc;
pub(crate) mod port_vls;

use crate::network::{Link, Network, Node, NodeKind, PortAddr, PortArbitration};
use crate::traffic::{HostDirectory, HostRef, Traffic};
use held::{Mismatch, held_forwarding, held_tables};
use held_cc::{HeldCcError, held_congestion};

/// Why a network could not be built from a topology.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("cannot assign LIDs: {0}")]
    Lids(GenError),
    #[error(transparent)]
    Routing(#[from] Unrouted),
    #[error("planning {port}: {error}")]
    Plan { port: String, error: PlanError },
    /// The dump given for the tables does not fit the topology, at `place` (a node or port).
    #[error("{place}: {mismatch}")]
    Held { place: String, mismatch: Mismatch },
    #[error(transparent)]
    HeldCongestion(#[from] HeldCcError),
}

/// The hosts of a topology, by name or NodeDescription.
#[derive(Debug, Clone, Copy)]
pub struct TopologyHosts<'t>(pub &'t Topology);

impl TopologyHosts<'_> {
    fn host(&self, id: NodeId) -> Result<HostRef, String> {
        let node = self.0.node(id).ok_or("not in the topology")?;
        if node.is_switch() {
            return Err(format!(
                "`{}` is a switch: traffic runs between hosts",
                node.name
            ));
        }
        let (port, lid) = node
            .existing_ports()
            .find(|(_, p)| p.peer.is_some() && p.lid != 0)
            .map(|(n, p)| (n, p.lid))
            .ok_or_else(|| format!("host `{}` has no linked port", node.name))?;
        Ok(HostRef {
            name: node.name.as_str().into(),
            port: PortAddr {
                node: id.index(),
                port,
            },
            lid,
        })
    }
}

impl HostDirectory for TopologyHosts<'_> {
    fn find(&self, name: &str) -> Result<HostRef, String> {
        if let Some(id) = self.0.node_by_name(name) {
            return self.host(id);
        }
        let mut by_description = self.0.nodes().filter(|(_, n)| n.description == name);
        match (by_description.next(), by_description.next()) {
            (Some((id, _)), None) => self.host(id),
            (Some(_), Some(_)) => Err("several nodes have this NodeDescription".into()),
            (None, _) => Err("no node has this name or NodeDescription".into()),
        }
    }

    fn all(&self) -> Vec<HostRef> {
        self.0
            .nodes()
            .filter_map(|(id, _)| self.host(id).ok())
            .collect()
    }
}

/// Where each port's QoS tables come from.
#[derive(Debug, Clone, Copy)]
pub enum Tables<'a> {
    /// What the SM would program from a configuration: the planner's tables for each port's
    /// class, capabilities and OperVLs (the lower VLCap of the two ends, capped by
    /// `max_op_vls`), with what `setup` (the qos-setup scopes' tables on this fabric) gives.
    Planned {
        qos: &'a QosConfig,
        setup: &'a SetupTables,
        max_op_vls: Option<VlCount>,
    },
    /// What a fabric held, read back (`ibqos dump`, `ibqos fabric dump`): every port's SL2VL,
    /// VLArb, VLHighLimit and OperVLs exactly as the dump has them, matched to the topology by
    /// NodeGUID and port number.
    Held(&'a FabricDump),
}

/// Where the switches' forwarding tables come from.
#[derive(Debug, Clone, Copy)]
pub enum Forwarding<'a> {
    /// The first engine of the list that routes the topology, as the SM routes it.
    Engines(&'a EngineList),
    /// What a fabric held (a dump that carries LFTs): every switch's LFT and every end port's
    /// LID exactly as the dump has them, matched to the topology by NodeGUID and port number.
    Held(&'a FabricDump),
    /// LFTs routed already, for the LIDs the topology holds, and what that routing decided
    /// beside them.
    Routed {
        routes: &'a Routes,
        layering: &'a Arc<dyn Layering>,
    },
}

/// The simulator's view of `topo` with `tables` on its ports and minhop routes.
pub fn build_network(
    topo: &mut Topology,
    tables: Tables<'_>,
    traffic: &Traffic,
) -> Result<Network, BuildError> {
    let minhop = Forwarding::Engines(&EngineList::default());
    Ok(build_routed_network(topo, tables, minhop, traffic)?.network)
}

/// A network built, with what its routing decided beside the LFTs.
#[derive(Debug)]
pub struct Built {
    pub network: Network,
    /// The routing engines passed over before the one that routed.
    pub passed_over: Vec<Attempt>,
    /// The SLs and VLs the routing spends on its layers ([`Unlayered`] for a dump's LFTs):
    /// the flows' SLs go through its `path_sl`, as the SA's PathRecords do.
    pub layering: Arc<dyn Layering>,
}

/// The simulator's view of `topo` with `tables` on its ports and the switches forwarding as
/// `forwarding` says. Planned tables are what the routing's layering makes of the
/// configuration's, as the SM's QoS manager programs them; held tables stay as held.
pub fn build_routed_network(
    topo: &mut Topology,
    tables: Tables<'_>,
    forwarding: Forwarding<'_>,
    traffic: &Traffic,
) -> Result<Built, BuildError> {
    let BuiltNodes {
        nodes,
        passed_over,
        layering,
    } = build_nodes(topo, tables, forwarding)?;
    let links = topo
        .links()
        .map(|(a, b)| Link {
            a: PortAddr {
                node: a.node.index(),
                port: a.port,
            },
            b: PortAddr {
                node: b.node.index(),
                port: b.port,
            },
            params: traffic.link,
        })
        .collect();
    // A traffic file's own settings, else those a dump's agents held (on credit links: a
    // lossless-Ethernet run has DCQCN instead).
    let congestion_control = match (&traffic.congestion_control, tables) {
        (Some(settings), _) => Some(settings.clone()),
        (None, Tables::Held(dump)) if traffic.ethernet.is_none() => held_congestion(dump)?,
        (None, _) => None,
    };
    let network = Network {
        nodes,
        links,
        ethernet: None,
        congestion_control,
    };
    Ok(Built {
        network,
        passed_over,
        layering,
    })
}

/// A network's nodes built, without its links, with what their routing decided.
#[derive(Debug)]
pub struct BuiltNodes {
    /// By node index of the topology.
    pub nodes: Vec<Node>,
    pub passed_over: Vec<Attempt>,
    pub layering: Arc<dyn Layering>,
}

/// Every node of `topo` with `tables` on its ports and, on a switch, the LFT `forwarding`
/// gives.
pub fn build_nodes(
    topo: &mut Topology,
    tables: Tables<'_>,
    forwarding: Forwarding<'_>,
) -> Result<BuiltNodes, BuildError> {
    let (mut lfts, passed_over, layering): (BTreeMap<NodeId, Vec<u8>>, _, _) = match forwarding {
        Forwarding::Engines(engines) => {
            assign_missing_lids(topo).map_err(BuildError::Lids)?;
            let max_op_vls = match tables {
                Tables::Planned { max_op_vls, .. } => max_op_vls,
                Tables::Held(_) => None,
            };
            let routed = engines.route(topo, max_op_vls.unwrap_or(VlCount::Fifteen))?;
            let lfts = routed.routes.iter().map(|(id, lft)| (id, lft.to_vec()));
            (lfts.collect(), routed.attempts, routed.layering)
        }
        Forwarding::Held(dump) => {
            let layering: Arc<dyn Layering> = Arc::new(Unlayered);
            (held_forwarding(topo, dump)?, Vec::new(), layering)
        }
        Forwarding::Routed { routes, layering } => {
            let lfts = routes.iter().map(|(id, lft)| (id, lft.to_vec()));
            (lfts.collect(), Vec::new(), Arc::clone(layering))
        }
    };
    let mut nodes = Vec::with_capacity(topo.len());
    for (id, fnode) in topo.nodes() {
        let kind = if fnode.is_switch() {
            NodeKind::Switch
        } else {
            NodeKind::Host
        };
        let mut node = Node::new(
            fnode.name.clone(),
            kind,
            fnode.num_ports(),
            PortArbitration::default(),
            Sl2VlTable::ALL_VL0,
        );
        for (p, port) in fnode.existing_ports() {
            node.lids[usize::from(p)] = port.lid;
        }
        match tables {
            Tables::Planned {
                qos,
                setup,
                max_op_vls,
            } => {
                let planned = Planned {
                    qos,
                    setup,
                    max_op_vls,
                    layering: &*layering,
                };
                planned.tables(&mut node, topo, id, fnode)?;
            }
            Tables::Held(dump) => held_tables(&mut node, topo, id, fnode, dump)?,
        }
        if fnode.is_switch() {
            node.lft = lfts.remove(&id).unwrap_or_default();
        }
        nodes.push(node);
    }
    Ok(BuiltNodes {
        nodes,
        passed_over,
        layering,
    })
}

/// What a port's tables are planned from: the configuration, and the routing's layering.
struct Planned<'a> {
    qos: &'a QosConfig,
    setup: &'a SetupTables,
    max_op_vls: Option<VlCount>,
    layering: &'a dyn Layering,
}

impl Planned<'_> {
    /// Sets the tables of `node` (being built for `fnode`, node `id` of `topo`) to what the SM
    /// programs on it: the planner's, after the layering rewrote the configured ones.
    fn tables(
        &self,
        node: &mut Node,
        topo: &Topology,
        id: NodeId,
        fnode: &ibqos_fabric::Node,
    ) -> Result<(), BuildError> {
        let Planned {
            qos,
            setup,
            max_op_vls,
            layering,
        } = *self;
        let mut up = vec![None; usize::from(fnode.num_ports())];
        for (p, port) in fnode.existing_ports() {
            let Some(oper) = topo.link_oper_vls(PortRef::new(id, p), max_op_vls) else {
                continue;
            };
            let Some(class) = fnode.port_class(p) else {
                continue;
            };
            let caps = port.link.planner_caps(oper);
            let mut settings = setup.settings(qos, class, fnode.guid, p);
            // The routing may rewrite the configured tables (a CA's SL2VL, every port's
            // VLArb); the planner masks what it leaves, as the SM's QoS manager does.
            update_port_tables(layering, &mut settings, class, fnode.guid, p);
            let planned =
                plan_settings(&settings, class, &caps).map_err(|error| BuildError::Plan {
                    port: topo.describe(PortRef::new(id, p)),
                    error,
                })?;
            node.arbitration[usize::from(p)] = PortArbitration {
                high: planned.vlarb_high(),
                low: planned.vlarb_low(),
                high_limit: planned.vl_high_limit,
                oper_vls: oper,
            };
            if fnode.is_switch() {
                up[usize::from(p) - 1] = Some(oper);
            } else if let Some(table) = planned.sl2vl {
                node.set_sl2vl(0, p, table);
            }
        }
        if fnode.is_switch() {
            let port0 = fnode.port(0);
            let view = SwitchSl2VlView {
                sl_mapping_supported: port0.is_some_and(|p| p.link.sl_mapping_supported),
                enhanced_port0: fnode.enhanced_port0,
                optimized_supported: false,
                port0_oper_vls: port0.map_or(VlCount::One, |p| p.link.vl_cap),
                ports: up,
            };
            let all = 0..=fnode.num_ports();
            for set in switch_sl2vl(qos, &view, Sl2VlProgramming::PerPair) {
                for (input, output) in set.scope.pairs(all.clone(), all.clone()) {
                    node.set_sl2vl(input, output, set.table);
                }
            }
            for set in setup_sl2vl(&view, setup.switch_entries(fnode.guid)) {
                for (input, output) in set.scope.pairs(all.clone(), all.clone()) {
                    node.set_sl2vl(input, output, set.table);
                }
            }
            if view.sl_mapping_supported {
                self.layered_sl2vl(node, fnode, &view);
            }
        }
        Ok(())
    }

    /// The switch pairs whose configured SL2VL table the layering rewrites, each rewritten
    /// table masked with its output's OperVLs and set over what the configuration gave the
    /// pair, as the SM's QoS manager writes them.
    fn layered_sl2vl(&self, node: &mut Node, fnode: &ibqos_fabric::Node, view: &SwitchSl2VlView) {
        let linked = |n: u8| {
            n == 0
                || view
                    .ports
                    .get(usize::from(n) - 1)
                    .is_some_and(Option::is_some)
        };
        let inputs: Vec<u8> = (0..=fnode.num_ports()).filter(|&n| linked(n)).collect();
        let outputs = inputs.iter().filter(|&&n| n != 0 || view.enhanced_port0);
        for &output in outputs {
            let (class, oper) = match output {
                0 => (PortClass::Sw0, Some(view.port0_oper_vls)),
                n => (PortClass::Swe, view.ports[usize::from(n) - 1]),
            };
            let configured = self.qos.effective(class).sl2vl;
            let mask = oper.unwrap_or(VlCount::One).vl_mask();
            for &input in &inputs {
                let mut table = configured;
                self.layering
                    .update_sl2vl(fnode.guid, input, output, &mut table);
                if table != configured {
                    node.set_sl2vl(input, output, table.masked(mask));
                }
            }
        }
    }
}
