//! Setting up a run: the network and flows checked, every port's lanes and link kind, each
//! flow's source, and the schedule of the flows' starts and stops.

use std::collections::{BTreeMap, HashMap};

use super::{
    Buffer, Clock, Counts, DELIVERY_BATCH, Event, Fabric, FlowHot, FlowState, Lane, LinkKind,
    NO_LANES, NO_PORT, PortState, Rotation, Shape, SimOptions, Simulation, Sources, Tally,
    UNLINKED, VL15, VLS, Watch, ethernet,
};
use crate::ethernet::frame::{CNP_PAYLOAD_BYTES, ethernet_wire_ps, frame_bytes};
use crate::infiniband::arbiter::ArbiterTables;
use crate::infiniband::link::{LinkParams, wire_blocks};
use crate::network::{Flow, Network, NetworkError, NodeKind, PortAddr, PortSlot};
use crate::queue::Queue;
use crate::random::mix;

/// What set-up works out once: the run reads it and never changes it.
#[derive(Debug)]
pub(crate) struct Layout<'n> {
    pub(crate) network: &'n Network,
    pub(crate) options: SimOptions,
    /// The flows as the caller describes them, by index: read for what the run does not
    /// keep in [`FlowState`] (names, rates, sizes), at set-up, for rate flows and in the report.
    pub(crate) specs: &'n [Flow],
    /// Every port of every node, node by node.
    pub(crate) ports: Vec<PortSlot>,
    /// Each node's first port in `ports`.
    pub(crate) node_base: Vec<u32>,
    /// Per kind of link ([`PortState::kind`]), its delays and wire times.
    pub(super) kinds: Vec<LinkKind>,
    /// The arbitration tables the ports' arbiters read, and the arbiter options.
    pub(super) arbiter_tables: ArbiterTables,
}

impl<'n> Simulation<'n> {
    /// Checks the network and flows and sets up the run at time 0.
    pub fn new(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
    ) -> Result<Simulation<'n>, NetworkError> {
        Self::with_lanes_of(network, flows, options, &|_| true)
    }

    /// [`Simulation::new`] with lanes (and their rotations, waits and buffers) only for the
    /// ports of the nodes `kept` says: a partition of a [`Parallel`] run, which never touches
    /// another partition's.
    pub(super) fn with_lanes_of(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        kept: &dyn Fn(usize) -> bool,
    ) -> Result<Simulation<'n>, NetworkError> {
        let mut node_base = Vec::with_capacity(network.nodes.len());
        let mut ports = Vec::new();
        for (i, node) in network.nodes.iter().enumerate() {
            let n = usize::from(node.num_ports) + 1;
            if node.lids.len() != n || node.arbitration.len() != n {
                return Err(NetworkError::BadTables {
                    name: node.name.clone(),
                    num_ports: node.num_ports,
                });
            }
            node_base.push(ports.len() as u32);
            ports.extend((0..=node.num_ports).map(|num| PortSlot {
                node: i as u32,
                num,
                peer: None,
                link: UNLINKED,
                vls: node.arbitration[usize::from(num)].oper_vls.count(),
            }));
        }
        let index = |addr: PortAddr, link: usize| -> Result<u32, NetworkError> {
            let node = network
                .nodes
                .get(addr.node)
                .ok_or(NetworkError::NoSuchNode {
                    index: link,
                    node: addr.node,
                    nodes: network.nodes.len(),
                })?;
            if addr.port > node.num_ports || (addr.port == 0 && node.kind == NodeKind::Switch) {
                return Err(NetworkError::NoSuchPort {
                    index: link,
                    name: node.name.clone(),
                    port: addr.port,
                    num_ports: node.num_ports,
                });
            }
            Ok(node_base[addr.node] + u32::from(addr.port))
        };
        for (i, link) in network.links.iter().enumerate() {
            let (a, b) = (index(link.a, i)?, index(link.b, i)?);
            for (from, to) in [(a, b), (b, a)] {
                let port = &mut ports[from as usize];
                if port.peer.is_some() {
                    return Err(NetworkError::LinkedTwice {
                        name: network.nodes[port.node as usize].name.clone(),
                        port: port.num,
                    });
                }
                port.peer = Some(to);
                port.link = link.params;
            }
            let vls = ports[a as usize].vls.min(ports[b as usize].vls);
            ports[a as usize].vls = vls;
            ports[b as usize].vls = vls;
        }
        let ethernet = network.ethernet.as_ref();
        if ethernet.is_some() {
            // An Ethernet port's lanes are its eight traffic classes.
            for port in &mut ports {
                port.vls = ethernet::TRAFFIC_CLASSES;
            }
        }
        let units = |payload| match ethernet {
            Some(_) => frame_bytes(payload),
            None => wire_blocks(payload),
        };
        // Each distinct link's time on the wire for every packet size a flow sends, worked out
        // once: a fabric has few kinds of links, and a division per packet-hop is dear.
        let largest = flows.iter().map(|f| units(f.payload)).max().unwrap_or(0);
        // An Ethernet run may send DCQCN's CNPs.
        let largest = match ethernet {
            Some(_) => largest.max(frame_bytes(CNP_PAYLOAD_BYTES)),
            None => largest,
        };
        let mut kind_of: HashMap<LinkParams, u16> = HashMap::new();
        let mut kinds = Vec::new();
        let mut arbiter_tables = ArbiterTables::new(options.arbiter);
        let mut arbiters = Vec::with_capacity(ports.len());
        let mut states = Vec::with_capacity(ports.len());
        // Each port's first lane, the hosts' ports' lanes first: only a flow's source, a host's
        // port, has greedy flows taking turns, so the rotations are kept for those lanes alone.
        let is_host = |port: &PortSlot| network.nodes[port.node as usize].kind == NodeKind::Host;
        let mut bases = vec![NO_LANES; ports.len()];
        let (mut lane_count, mut source_lanes) = (0u32, 0u32);
        for hosts in [true, false] {
            for (base, port) in bases.iter_mut().zip(&ports) {
                if is_host(port) == hosts && kept(port.node as usize) {
                    *base = lane_count;
                    lane_count += u32::from(port.vls) + 1;
                }
            }
            if hosts {
                source_lanes = lane_count;
            }
        }
        let mut lanes = vec![Lane::default(); lane_count as usize];
        for (port, &base) in ports.iter().zip(&bases) {
            let link = port.link;
            let kind = match kind_of.get(&link) {
                Some(&kind) => kind,
                None => {
                    let kind =
                        u16::try_from(kinds.len()).map_err(|_| NetworkError::TooManyLinkKinds)?;
                    kind_of.insert(link, kind);
                    kinds.push(LinkKind {
                        propagation_ps: link.propagation_ps,
                        credit_return_ps: link.credit_latency_ps + link.propagation_ps,
                        wire_ps: (0..=largest)
                            .map(|units| match ethernet {
                                Some(eth) => ethernet_wire_ps(units, eth.link_bps),
                                None => link.serialization_ps(units),
                            })
                            .collect(),
                    });
                    kind
                }
            };
            if base != NO_LANES {
                // Ethernet has no credits: an allowance that never runs out (what a frame
                // takes is given back when it has left).
                let credits = match ethernet {
                    Some(_) => u32::MAX,
                    None => port.link.vl_buffer_blocks,
                };
                let first = base as usize;
                for lane in &mut lanes[first..=first + usize::from(port.vls)] {
                    lane.credits = credits;
                }
            }
            let arb = &network.nodes[port.node as usize].arbitration[usize::from(port.num)];
            arbiters.push(arbiter_tables.arbiter(&arb.high, &arb.low, arb.high_limit));
            states.push(PortState {
                peer: port.peer.unwrap_or(NO_PORT),
                node: port.node,
                num: port.num,
                kind,
                base,
                vls: port.vls,
                busy: false,
                queued: 0,
                starved: 0,
                waiting: 0,
                refused: false,
                far: false,
            });
        }
        let counts = Counts {
            waits: vec![0; lanes.len()],
            buffers: vec![Buffer::default(); lanes.len()],
            carried: BTreeMap::new(),
            dropped: BTreeMap::new(),
            tallies: (0..flows.len()).map(|_| Tally::default()).collect(),
            deliveries: Vec::new(),
            delivery_batch: flows
                .len()
                .clamp(*DELIVERY_BATCH.start(), *DELIVERY_BATCH.end()),
            flow_drops: vec![0; flows.len()],
            packet_hops: 0,
            timeline: Vec::new(),
        };
        let mut sim = Simulation {
            layout: Layout {
                network,
                options,
                specs: flows,
                ports,
                node_base,
                kinds,
                arbiter_tables,
            },
            fabric: Fabric {
                states,
                lanes,
                arbiters,
                rotations: vec![Rotation::default(); source_lanes as usize],
                packets: Vec::new(),
                free: Vec::new(),
            },
            sources: Sources {
                flows: Vec::with_capacity(flows.len()),
                hot: Vec::with_capacity(flows.len()),
            },
            clock: Clock {
                queue: Queue::default(),
                schedule: Vec::new(),
                scheduled: 0,
                now: 0,
                events: 0,
            },
            counts,
            eth: None,
            split: None,
            watch: None,
            sampler: None,
            cc: None,
        };
        if let Some(config) = ethernet {
            let state = ethernet::EthernetState::new(
                network,
                &sim.layout.ports,
                &sim.layout.node_base,
                config,
            )?;
            sim.eth = Some(Box::new(state));
            sim.start_storms();
        } else {
            sim.watch = Some(Watch::new(sim.fabric.lanes.len()));
        }
        // The greedy flows that will join each lane's rotation, to size it once: growing
        // every rotation as its flows start was a tenth of the flows' start events.
        let mut joining = vec![0usize; sim.fabric.rotations.len()];
        for (i, spec) in flows.iter().enumerate() {
            let state = sim.flow_state(spec, i as u64)?;
            if spec.start_ps < state.stop_ps {
                let flow = i as u32;
                if state.greedy && state.vl != VL15 {
                    let (port, vl) = (state.port, state.vl);
                    sim.clock
                        .schedule
                        .push((spec.start_ps, Event::Join { flow, port, vl }));
                    sim.clock
                        .schedule
                        .push((state.stop_ps, Event::Stop { flow, port, vl }));
                    if sim.fabric.states[port as usize].base != NO_LANES {
                        joining[sim.lane(port, vl)] += 1;
                    }
                } else {
                    sim.clock
                        .schedule
                        .push((spec.start_ps, Event::Start { flow }));
                }
            }
            sim.sources.hot.push(FlowHot {
                sent: 0,
                shape: Shape {
                    dlid: spec.dlid,
                    blocks: state.blocks as u16,
                    sl: spec.sl.get(),
                    management: spec.management,
                },
                stopped: false,
            });
            sim.sources.flows.push(state);
        }
        for (rotation, &flows) in sim.fabric.rotations.iter_mut().zip(&joining) {
            rotation.turns.reserve_exact(flows);
        }
        if sim.eth.is_some() {
            if network.congestion_control.is_some() {
                return Err(NetworkError::CongestionControlOnEthernet);
            }
            sim.start_dcqcn();
            sim.schedule_samples();
        } else {
            sim.start_congestion_control();
        }
        // Stable: equal times keep the order they were listed in.
        sim.clock.schedule.sort_by_key(|(time, _)| *time);
        if options.timeline_intervals > 0 {
            sim.counts.timeline =
                vec![0; sim.layout.ports.len() * options.timeline_intervals * VLS];
        }
        Ok(sim)
    }

    fn flow_state(&self, flow: &Flow, index: u64) -> Result<FlowState, NetworkError> {
        let bad_source = || NetworkError::BadSource {
            flow: flow.name.to_string(),
            port: format!("node {} port {}", flow.src.node, flow.src.port),
        };
        let node = self
            .layout
            .network
            .nodes
            .get(flow.src.node)
            .ok_or_else(bad_source)?;
        if node.kind != NodeKind::Host || flow.src.port == 0 || flow.src.port > node.num_ports {
            return Err(bad_source());
        }
        let port = self.layout.node_base[flow.src.node] + u32::from(flow.src.port);
        let info = self.layout.ports[port as usize];
        if info.peer.is_none() {
            return Err(bad_source());
        }
        if let Some(eth) = &self.eth {
            if flow.management {
                return Err(NetworkError::ManagementOnEthernet {
                    flow: flow.name.to_string(),
                });
            }
            return Ok(
                self.source_state(flow, index, port, frame_bytes(flow.payload), {
                    eth.traffic_class(flow.sl.get())
                }),
            );
        }
        let blocks = wire_blocks(flow.payload);
        if !flow.management && blocks > info.link.vl_buffer_blocks {
            return Err(NetworkError::BufferTooSmall {
                flow: flow.name.to_string(),
                payload: flow.payload,
                needed: blocks,
                buffer: info.link.vl_buffer_blocks,
            });
        }
        let vl = match node.sl2vl(0, flow.src.port).vl(flow.sl).get() {
            _ if flow.management => VL15,
            // No VL the link runs: the source drops it, as one mapped to VL15.
            vl if vl >= info.vls => VL15,
            vl => vl,
        };
        Ok(self.source_state(flow, index, port, blocks, vl))
    }

    /// A flow leaving from `port` on lane `vl` with packets of `blocks` units, at its start.
    fn source_state(&self, flow: &Flow, index: u64, port: u32, blocks: u32, vl: u8) -> FlowState {
        let stop = flow.stop_ps.min(self.layout.options.duration_ps);
        let greedy = flow.rate_bps == 0;
        let phase = if greedy {
            0
        } else {
            // Uniform in one inter-packet gap, so that rate flows do not all fire together.
            let gap = self.gap_ps(flow, 1).max(1);
            mix(self.layout.options.seed, index) % gap
        };
        FlowState {
            blocks,
            port,
            vl,
            greedy,
            stop_ps: stop,
            origin: flow.start_ps + phase,
            generated: 0,
        }
    }

    /// The time a rate flow takes to offer `packets` packets.
    pub(super) fn gap_ps(&self, flow: &Flow, packets: u64) -> u64 {
        let bits = u128::from(packets) * u128::from(flow.payload) * 8;
        (bits * 1_000_000_000_000 / u128::from(flow.rate_bps.max(1))) as u64
    }
}
