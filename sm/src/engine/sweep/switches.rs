//! Switch programming: the routes as LinearFDBTop and the LFT blocks of every switch.

use ibqos_mad::{Attribute, Guid, LinearForwardingTableRepr, SwitchInfoRepr};
use ibqos_qos::VlCount;
use tracing::info;

use super::feed::{Feed, Job};
use super::reconcile::{Held, Planned, SetTarget};
use super::{Op, Phase, Sweep};
use std::panic::resume_unwind;
use std::thread::JoinHandle;

use crate::engine::routing::{RouteError, SweepRoutes, route, route_topology, topology};

/// OpenSM's `packet_life_time` default (0x12): 4.096 us x 2^18, about a second.
const SWITCH_PACKET_LIFE_TIME: u8 = 0x12;

/// Entries in one LFT block.
const LFT_BLOCK: usize = 64;

/// The sweep's routing, from the time its LIDs are known until the switches are programmed.
#[derive(Debug)]
pub(super) enum RoutingJob {
    Done(Result<SweepRoutes, RouteError>),
    /// Under way on a thread of its own. An unlayered routing leaves the link and QoS managers
    /// nothing to wait for ([`is_unlayered`]), so their SMPs go out meanwhile.
    ///
    /// [`is_unlayered`]: ibqos_fabric::routing::EngineList::is_unlayered
    Running(JoinHandle<Result<SweepRoutes, RouteError>>),
}

impl Sweep {
    /// Starts routing the subnet as its LIDs now stand: beside the sweep when the routing
    /// cannot change what the sweep plans before the LFTs, at once otherwise.
    pub(super) fn start_routing(&mut self) -> RoutingJob {
        if self.config.routing.is_unlayered() {
            let topology = topology(&self.subnet, Some(self.config.lmc));
            let engines = self.config.routing.clone();
            let vls = self.routing_vls();
            let thread = std::thread::Builder::new().name("routing".to_string());
            if let Ok(handle) = thread.spawn(move || route_topology(topology, &engines, vls)) {
                return RoutingJob::Running(handle);
            }
        }
        let routing = self.route();
        self.take_layering(&routing);
        RoutingJob::Done(routing)
    }

    /// The routing started earlier, waited for if it is still under way; a new one if none was.
    fn finish_routing(&mut self) -> Result<SweepRoutes, RouteError> {
        match self.routing.take() {
            Some(RoutingJob::Done(routing)) => routing,
            Some(RoutingJob::Running(handle)) => {
                let routing = handle.join().unwrap_or_else(|panic| resume_unwind(panic));
                self.take_layering(&routing);
                routing
            }
            None => self.route(),
        }
    }

    /// Routes the subnet as its LIDs now stand, with the configured LMC.
    pub(super) fn route(&self) -> Result<SweepRoutes, RouteError> {
        route(
            &self.subnet,
            &self.config.routing,
            self.routing_vls(),
            self.config.lmc,
        )
    }

    /// The data VLs the engines that spend VLs size their layers from, as OpenSM's DFSSSP and
    /// LASH find them (`get_avail_vl_in_subn`, `osm_ucast_dfsssp.c:1724`): the fewest OperVLs
    /// any linked switch port (port 0 aside) holds now. Routing comes before the link manager,
    /// so on a first sweep that is what the ports ran before, not `max_op_vls`; `max_op_vls`
    /// when no switch port has a link.
    pub(super) fn routing_vls(&self) -> VlCount {
        self.subnet
            .ports()
            .filter(|(key, port)| {
                key.port != 0
                    && port.info.operational_vls != 0
                    && self.subnet.peer(*key).is_some()
                    && self
                        .subnet
                        .nodes
                        .get(&key.node)
                        .is_some_and(|n| n.is_switch())
            })
            // An encoding above 5 is more than 15 VLs, which OpenSM caps at 15.
            .map(|(_, port)| {
                VlCount::from_encoding(port.info.operational_vls).unwrap_or(VlCount::Fifteen)
            })
            .min()
            .unwrap_or(self.config.max_op_vls)
    }

    /// SwitchInfo.LinearFDBTop and the LFT blocks up to it, on every switch.
    pub(super) fn program_switches(&mut self) {
        self.phase = Phase::ProgrammingSwitches;
        let routed = match self.finish_routing() {
            Ok(routed) => routed,
            Err(error) => {
                self.fail(error);
                return;
            }
        };
        let lfts = routed.lfts;
        let mut jobs = Vec::new();
        for (&switch, lft) in &lfts.tables {
            let Some(node) = self.subnet.nodes.get(&switch) else {
                continue;
            };
            if node.switch.is_some() {
                jobs.push((switch, Job::SwitchInfo { switch }));
            }
            let blocks = lft.len().div_ceil(LFT_BLOCK) as u16;
            jobs.extend((0..blocks).map(|block| (switch, Job::LftBlock { switch, block })));
        }
        self.feed = Feed::new(jobs);
        info!(
            switches = lfts.tables.len(),
            max_lid = lfts.max_lid(),
            "switches {}",
            self.logged("configured", "planned")
        );
        self.lfts = lfts;
        self.routed_by = routed.engine;
        self.layering = routed.layering;
    }

    /// The Set of `switch`'s SwitchInfo with the LinearFDBTop of the sweep's LFTs.
    pub(super) fn set_linear_fdb_top(&mut self, switch: u64) {
        let Some(held) = self.subnet.nodes.get(&switch).and_then(|node| node.switch) else {
            return;
        };
        let mut info = held;
        info.linear_fdb_top = self.lfts.max_lid();
        // Writing 1 clears PortStateChange: the SM has seen this topology.
        info.port_state_change = true;
        // How long a packet may wait in the switch, as OpenSM's `packet_life_time`
        // (osm_ucast_mgr.c `ucast_mgr_set_fwd_top`).
        info.life_time_value = SWITCH_PACKET_LIFE_TIME;
        self.set_switch_info(switch, held, info);
    }

    /// A Set of `switch`'s SwitchInfo to `info`, compared with `held`, what it holds.
    pub(super) fn set_switch_info(
        &mut self,
        switch: u64,
        held: SwitchInfoRepr,
        info: SwitchInfoRepr,
    ) {
        let Some(node) = self.subnet.nodes.get(&switch) else {
            return;
        };
        let planned = Planned {
            node: switch,
            path: node.path.clone(),
            attribute: Attribute::SwitchInfo(info),
            modifier: 0,
            op: Op::SetSwitchInfo { guid: switch },
            timeout: None,
            target: SetTarget::SwitchInfo {
                switch: Guid(switch),
            },
        };
        self.plan_set(planned, Held::Known(Attribute::SwitchInfo(held)));
    }

    /// The Set of block `block` of `switch`'s LFT.
    pub(super) fn set_lft_block(&mut self, switch: u64, block: u16) {
        let (Some(node), Some(lft)) = (
            self.subnet.nodes.get(&switch),
            self.lfts.tables.get(&switch),
        ) else {
            return;
        };
        let Some(ports) = lft.chunks(LFT_BLOCK).nth(usize::from(block)) else {
            return;
        };
        let mut table = LinearForwardingTableRepr {
            ports: [LinearForwardingTableRepr::NO_ROUTE; LFT_BLOCK],
        };
        table.ports[..ports.len()].copy_from_slice(ports);
        let planned = Planned {
            node: switch,
            path: node.path.clone(),
            attribute: Attribute::LinearForwardingTable(table),
            modifier: u32::from(block),
            op: Op::SetLft { guid: switch },
            timeout: None,
            target: SetTarget::LftBlock {
                switch: Guid(switch),
                block: usize::from(block),
            },
        };
        self.plan_set(planned, Held::Read(vec![u32::from(block)]));
    }
}
