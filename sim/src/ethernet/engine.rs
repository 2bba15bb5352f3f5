//! The engine's lossless-Ethernet link mode (`flow_control = "pfc"`): the sender's pause and ETS
//! scheduling, the switch's buffer admission, pause frames and storms, and their counters. It
//! works on the engine's own lanes, queue and packets; this state is kept apart from what an
//! InfiniBand hop reads ([`Simulation::eth`]), per port or per node.

use crate::engine::{Event, NO_PACKET, NO_PORT, Packet, Simulation};
use crate::ethernet::dcqcn::{NotificationPoint, NpParams, ReactionPoint, RpParams};
use crate::ethernet::ets::Grant;
use crate::ethernet::frame::{CNP_PAYLOAD_BYTES, ethernet_wire_ps, frame_bytes};
use crate::ethernet::pfc::{PRIORITIES, PauseFrame, Transition};
use crate::ethernet::shared_buffer::{
    Admission, Direction, PgFlowControl, Place, PoolId, Region, Stored,
};
use crate::ethernet::state::{
    Dcqcn, ECN_STREAM, EthernetState, FlowDcqcn, OccupancyKey, Sampled, TRAFFIC_CLASSES, mask_bits,
    place_code, place_of,
};
use crate::infiniband::link::PS_PER_NS;
use crate::network::NodeKind;
use crate::random::mix;
use crate::report::{
    BufferOccupancy, DcqcnRates, EthernetLinkReport, FlowDcqcnReport, OccupancySeries, PoolReport,
    PriorityReport, SwitchReport, TrafficClassReport, round,
};

impl Simulation<'_> {
    fn eth_mut(&mut self) -> &mut EthernetState {
        self.eth
            .as_deref_mut()
            .expect("only an Ethernet run handles Ethernet events")
    }

    fn eth_ref(&self) -> &EthernetState {
        self.eth
            .as_deref()
            .expect("only an Ethernet run handles Ethernet events")
    }

    /// Queues each pause storm's first frame.
    pub(crate) fn start_storms(&mut self) {
        let firsts: Vec<(u32, u64)> = (0..)
            .zip(&self.eth_ref().storms)
            .filter_map(|(i, (_, storm))| Some((i, storm.next_ps()?)))
            .collect();
        for (storm, at) in firsts {
            self.clock
                .queue
                .push(self.clock.now, at, Event::Storm { storm });
        }
    }

    /// The peer and traffic class `port` sends on next: among the classes with a head packet
    /// and no paused priority, the ETS scheduler's choice. When none may send yet, the port
    /// asks to be woken when the first may (a pause's end, a rate bucket's refill).
    pub(crate) fn ethernet_grant(&mut self, port: u32) -> Option<(u32, u8)> {
        let p = port as usize;
        let peer = self.layout.ports[p].peer?;
        let now = self.clock.now;
        let bits = self.fabric.states[p];
        let eth = self.eth.as_deref_mut()?;
        let (paused_priorities, paused) = eth.paused_classes(p, now);
        // A port's lanes are its eight classes (the ninth, VL15's, is never used).
        let queued = (bits.queued & 0xff) as u8;
        let lanes = &self.fabric.lanes[bits.lanes()];
        let grant = eth.schedulers[p].next(now, queued & !paused, |tc| {
            u32::from(lanes[usize::from(tc)].head())
        });
        let mut wake = match grant {
            Grant::Send { tc } => return Some((peer, tc)),
            Grant::WaitUntil { ps } => ps,
            Grant::Idle => u64::MAX,
        };
        for priority in mask_bits(paused_priorities) {
            if queued & paused & 1 << eth.tc_of[usize::from(priority)] != 0 {
                wake = wake.min(eth.responders[p].paused_until(usize::from(priority)));
            }
        }
        if wake != u64::MAX && (eth.wake_at[p] <= now || wake < eth.wake_at[p]) {
            eth.wake_at[p] = wake;
            self.clock.queue.push(now, wake, Event::Wake { port });
        }
        None
    }

    /// A frame of `units` bytes and the priority and place coded in `code` finished leaving
    /// `port`: counted, its allowance given back, and freed from the buffer of `release` (the
    /// switch port it arrived by, [`NO_PORT`] at its source).
    pub(crate) fn ethernet_sent(&mut self, port: u32, release: u32, code: u8, units: u16) {
        let priority = code & 7;
        let (out, ingress) = (
            self.layout.ports[port as usize],
            self.layout.ports.get(release as usize).copied(),
        );
        let lane = self.fabric.states[port as usize].lane(self.eth_ref().traffic_class(priority));
        self.fabric.lanes[lane].credits += u32::from(units);
        let eth = self.eth_mut();
        let sent = &mut eth.sent[port as usize][usize::from(priority)];
        sent.packets += 1;
        sent.blocks += u64::from(units);
        let Some(ingress) = ingress.filter(|_| release != NO_PORT) else {
            return;
        };
        let tc = eth.traffic_class(priority);
        eth.egress_bytes[port as usize][usize::from(tc)] -= u64::from(units);
        let stored = Stored {
            in_port: u16::from(ingress.num),
            out_port: u16::from(out.num),
            priority,
            place: place_of(code >> 3),
            bytes: u32::from(units),
        };
        if let Some(control) = eth.buffers[ingress.node as usize].release(stored) {
            self.flow_control(release, control);
        }
    }

    /// A data frame's last bit reached `port`: delivered at a host; at a switch admitted to
    /// its buffer (or dropped) and queued on the output port's class of its priority.
    pub(crate) fn ethernet_arrive(&mut self, port: u32, packet: u32) {
        let info = self.layout.ports[port as usize];
        let p = self.fabric.packets[packet as usize];
        let network = self.layout.network;
        let node = &network.nodes[info.node as usize];
        let out = match node.kind {
            NodeKind::Host => None,
            NodeKind::Switch => node.route(p.dlid),
        };
        let Some(out) = out else {
            let delivered =
                node.kind == NodeKind::Host && node.lids[usize::from(info.num)] == p.dlid;
            if p.cnp {
                self.fabric.free.push(packet);
                if delivered {
                    self.cnp_arrive(p.flow);
                }
                return;
            }
            // The notification point: the receiving NIC answers a marked frame.
            if delivered && p.ce {
                self.notify(port, &p);
            }
            self.retire(packet, &p, delivered);
            return;
        };
        let out_port = self.layout.node_base[info.node as usize] + u32::from(out);
        let priority = p.sl;
        let seed = self.layout.options.seed ^ ECN_STREAM;
        let eth = self.eth_mut();
        let tc = eth.traffic_class(priority);
        let buffer = &mut eth.buffers[info.node as usize];
        let admission = buffer.admit(
            u16::from(info.num),
            u16::from(out),
            priority,
            u32::from(p.blocks),
        );
        let (stored, control) = match admission {
            // A CNP lost is no flow's packet lost.
            Admission::Dropped(_) if p.cnp => {
                self.fabric.free.push(packet);
                return;
            }
            Admission::Dropped(_) => {
                self.retire(packet, &p, false);
                return;
            }
            Admission::Stored {
                stored,
                flow_control,
            } => (stored, flow_control),
        };
        if stored.place == Place::Shared {
            let (ipool, epool) = eth.pools_of[usize::from(priority)];
            let ingress = buffer.pool_used(PoolId::ingress(ipool));
            let egress = buffer.pool_used(PoolId::egress(epool));
            let peaks = &mut eth.pool_peaks[info.node as usize];
            peaks[0][usize::from(ipool)] = peaks[0][usize::from(ipool)].max(ingress);
            peaks[1][usize::from(epool)] = peaks[1][usize::from(epool)].max(egress);
        }
        // The egress enqueue: ECN marks by the bytes of the class's queue, this frame included
        // (a CNP is not ECN-capable).
        let queued = &mut eth.egress_bytes[out_port as usize][usize::from(tc)];
        *queued += u64::from(p.blocks);
        let queued = *queued;
        let mut ce = p.ce;
        if let Some(marker) = eth.marker.filter(|_| !p.cnp) {
            eth.draws += 1;
            if marker.mark(queued, mix(seed, eth.draws)) {
                ce = true;
                eth.marks[out_port as usize][usize::from(priority)] += 1;
            }
        }
        let pk = &mut self.fabric.packets[packet as usize];
        pk.in_port = port;
        pk.in_vl = priority | place_code(stored.place) << 3;
        pk.vl = tc;
        pk.ce = ce;
        self.enqueue(out_port, tc, packet);
        if let Some(control) = control {
            self.flow_control(port, control);
        }
        self.try_send(out_port);
    }

    /// A lossless PG of ingress port `port` crossed Xoff or fell to Xon: its pause generator
    /// sends the frame (and, in Xoff, is due to refresh it).
    fn flow_control(&mut self, port: u32, control: PgFlowControl) {
        let now = self.clock.now;
        let generator = &mut self.eth_mut().generators[port as usize];
        let Some(frame) = generator.request(control.priorities, control.transition, now) else {
            return;
        };
        let refresh = generator.next_refresh_ps();
        self.send_pause(port, frame);
        if let Some(at) = refresh.filter(|_| control.transition == Transition::Xoff) {
            self.clock.queue.push(now, at, Event::Refresh { port });
        }
    }

    /// `port` sends a pause frame to its peer: out of band (it neither waits for the data
    /// frame being sent the other way nor delays the next), arriving after its own wire time
    /// and the cable.
    fn send_pause(&mut self, port: u32, frame: PauseFrame) {
        let info = self.layout.ports[port as usize];
        let Some(peer) = info.peer else {
            return;
        };
        let now = self.clock.now;
        let eth = self.eth_mut();
        let at = now + eth.pause_wire_ps + info.link.propagation_ps;
        let frame = eth.store(frame);
        self.clock
            .queue
            .push(now, at, Event::PauseArrive { port: peer, frame });
    }

    /// A pause frame reached `port`: counted; it takes hold after the response delay.
    pub(crate) fn pause_arrive(&mut self, port: u32, frame: u32) {
        let now = self.clock.now;
        let eth = self.eth_mut();
        let at = eth.responders[port as usize].receive(&eth.frames[frame as usize], now);
        self.clock
            .queue
            .push(now, at, Event::PauseApply { port, frame });
    }

    /// A pause frame takes hold at `port`; a port that may send again does.
    pub(crate) fn pause_apply(&mut self, port: u32, frame: u32) {
        let now = self.clock.now;
        let eth = self.eth_mut();
        let pause = eth.frames[frame as usize];
        eth.responders[port as usize].apply(&pause, now);
        eth.free_frames.push(frame);
        self.try_send(port);
    }

    /// The refresh of `port`'s pause, if still due, and the next.
    pub(crate) fn pause_refresh(&mut self, port: u32) {
        let now = self.clock.now;
        let generator = &mut self.eth_mut().generators[port as usize];
        let Some(frame) = generator.refresh(now) else {
            return;
        };
        let next = generator.next_refresh_ps();
        self.send_pause(port, frame);
        if let Some(at) = next {
            self.clock.queue.push(now, at, Event::Refresh { port });
        }
    }

    /// Pause storm `storm` sends its frame, and is due again.
    pub(crate) fn storm(&mut self, storm: u32) {
        let now = self.clock.now;
        let (port, running) = &mut self.eth_mut().storms[storm as usize];
        let port = *port;
        let frame = running.poll(now);
        let next = running.next_ps();
        if let Some(frame) = frame {
            self.send_pause(port, frame);
        }
        if let Some(at) = next {
            self.clock.queue.push(now, at, Event::Storm { storm });
        }
    }

    /// The Ethernet counters of the link direction from `port` to `peer`.
    pub(crate) fn ethernet_link(
        &self,
        port: u32,
        peer: u32,
        capacity_bits: f64,
    ) -> EthernetLinkReport {
        let eth = self.eth_ref();
        let duration = self.layout.options.duration_ps;
        let end = self.clock.now;
        let fraction = |part: f64, of: f64| if of > 0.0 { round(part / of) } else { 0.0 };
        let near = self.fabric.states[port as usize];
        let lanes = &self.fabric.lanes[near.lanes()];
        let total: u64 = lanes.iter().map(|l| l.sent.blocks).sum();
        let traffic_classes = (0..TRAFFIC_CLASSES)
            .map(|tc| (tc, lanes[usize::from(tc)].sent))
            .filter(|(_, s)| s.packets > 0)
            .map(|(tc, s)| TrafficClassReport {
                tc,
                frames: s.packets,
                bytes: s.blocks,
                throughput_gbps: Self::gbps(s.blocks, duration),
                share: fraction(s.blocks as f64, total as f64),
                utilization: fraction(s.blocks as f64 * 8.0, capacity_bits),
            })
            .collect();
        let (p, q) = (port as usize, peer as usize);
        let far = self.layout.ports[q];
        let far_switch = self.layout.network.nodes[far.node as usize].kind == NodeKind::Switch;
        let buffer = &eth.buffers[far.node as usize];
        let priorities = (0..PRIORITIES as u8)
            .map(|priority| {
                let i = usize::from(priority);
                let sent = eth.sent[p][i];
                let storm_frames: u64 = eth
                    .storms
                    .iter()
                    .filter(|(at, _)| *at == peer)
                    .map(|(_, s)| s.generator().frames_sent(i))
                    .sum();
                let num = u16::from(far.num);
                let (dropped, headroom) = if far_switch {
                    (
                        buffer.drops(num, priority),
                        buffer.headroom_peak(num, buffer.pg_of(priority)),
                    )
                } else {
                    (0, 0)
                };
                PriorityReport {
                    priority,
                    frames: sent.packets,
                    bytes: sent.blocks,
                    throughput_gbps: Self::gbps(sent.blocks, duration),
                    paused_ns: eth.responders[p].paused_ps(i, end) / PS_PER_NS,
                    pause_frames_sent: eth.generators[q].frames_sent(i) + storm_frames,
                    pause_frames_received: eth.responders[p].frames_received(i),
                    dropped_packets: dropped,
                    headroom_peak_bytes: headroom,
                    ecn_marks: eth.marks[p][i],
                }
            })
            .filter(|r| {
                r.ecn_marks > 0
                    || r.frames > 0
                    || r.paused_ns > 0
                    || r.pause_frames_sent > 0
                    || r.pause_frames_received > 0
                    || r.dropped_packets > 0
            })
            .collect();
        EthernetLinkReport {
            traffic_classes,
            priorities,
        }
    }

    /// Every switch's pool peaks, in node order.
    pub(crate) fn switch_reports(&self) -> Vec<SwitchReport> {
        let Some(eth) = self.eth.as_deref() else {
            return Vec::new();
        };
        self.layout
            .network
            .nodes
            .iter()
            .zip(&eth.pool_peaks)
            .filter(|(node, _)| node.kind == NodeKind::Switch)
            .map(|(node, peaks)| SwitchReport {
                name: node.name.clone(),
                pools: eth
                    .pools
                    .iter()
                    .map(|pool| PoolReport {
                        pool: pool.to_string(),
                        peak_bytes: peaks[pool.direction as usize][usize::from(pool.index)],
                    })
                    .collect(),
            })
            .collect()
    }
}

/// Buffer occupancy over time: a sample of every switch buffer at each timeline interval's end.
impl Simulation<'_> {
    /// Queues a sample at the end of each timeline interval: the first time that falls in the
    /// next one ([`Simulation::interval_of`]), the run's end for the last.
    pub(crate) fn schedule_samples(&mut self) {
        let intervals = self.layout.options.timeline_intervals as u128;
        let duration = u128::from(self.layout.options.duration_ps);
        for interval in 0..intervals {
            let end = ((interval + 1) * duration).div_ceil(intervals) as u64;
            let interval = interval as u32;
            self.clock.schedule.push((end, Event::Sample { interval }));
        }
    }

    /// Records every switch's pools, and each port's iPort.PG and ePort.TC regions that hold
    /// anything, as their bytes at the end of `interval`.
    pub(crate) fn sample_buffers(&mut self, interval: usize) {
        let intervals = self.layout.options.timeline_intervals;
        let network = self.layout.network;
        let Some(eth) = self.eth.as_deref_mut() else {
            return;
        };
        let mut record = |key: OccupancyKey, bytes: u64, always: bool| {
            if bytes > 0 || always {
                eth.occupancy
                    .entry(key)
                    .or_insert_with(|| vec![0; intervals])[interval] = bytes;
            }
        };
        for (node, (info, buffer)) in (0..).zip(network.nodes.iter().zip(&eth.buffers)) {
            if info.kind != NodeKind::Switch {
                continue;
            }
            for pool in &eth.pools {
                let what = match pool.direction {
                    Direction::Ingress => Sampled::IngressPool,
                    Direction::Egress => Sampled::EgressPool,
                };
                let key = OccupancyKey {
                    node,
                    port: 0,
                    what,
                    index: pool.index,
                };
                record(key, buffer.pool_used(*pool), true);
            }
            for port in 1..=info.num_ports {
                for index in 0..8 {
                    let pg = buffer.region_usage(Region::IPortPg, port.into(), index);
                    let headroom = buffer.headroom_used(port.into(), index);
                    let key = OccupancyKey {
                        node,
                        port,
                        what: Sampled::PortPg,
                        index,
                    };
                    record(key, pg.reserved + pg.shared + headroom, false);
                    let tc = buffer.region_usage(Region::EPortTc, port.into(), index);
                    let key = OccupancyKey {
                        node,
                        port,
                        what: Sampled::PortTc,
                        index,
                    };
                    record(key, tc.reserved + tc.shared, false);
                }
            }
        }
    }

    /// The occupancy series recorded, for the report.
    pub(crate) fn buffer_occupancy(&self, interval_ns: u64) -> Option<BufferOccupancy> {
        let eth = self.eth.as_deref()?;
        let series = eth
            .occupancy
            .iter()
            .map(|(key, bytes)| {
                let region = key.what.name(key.index);
                OccupancySeries {
                    switch: self.layout.network.nodes[key.node as usize].name.clone(),
                    port: (key.port > 0).then_some(key.port),
                    region,
                    bytes: bytes.clone(),
                }
            })
            .collect();
        Some(BufferOccupancy {
            interval_ns,
            series,
        })
    }
}

/// DCQCN: the notification point at delivery, CNPs through the fabric, the reaction point's
/// rate at the source.
impl Simulation<'_> {
    /// Gives every flow its notification point, and each greedy flow of a priority with a
    /// reaction point its reaction point, once the flows are known.
    pub(crate) fn start_dcqcn(&mut self) {
        let network = self.layout.network;
        let intervals = self.layout.options.timeline_intervals;
        let eth = self.eth_mut();
        let Some(config) = eth.dcqcn_config else {
            return;
        };
        let rp = RpParams::new(&config, eth.link_bps);
        let rp_mask = config.rp_enabled_mask();
        let flows = self
            .sources
            .flows
            .iter()
            .zip(self.layout.specs)
            .map(|(f, spec)| {
                let src = &network.nodes[spec.src.node];
                let reacts = f.greedy && rp_mask & 1 << (spec.sl.get() & 7) != 0;
                FlowDcqcn {
                    rp: reacts.then(|| ReactionPoint::new(&rp)),
                    np: NotificationPoint::default(),
                    source_lid: src.lids[usize::from(spec.src.port)],
                    cnps_sent: 0,
                    cnps_received: 0,
                    cuts: 0,
                    min_rate_bps: rp.line_rate_bps,
                    timer_at: 0,
                    paced: false,
                    pacing: false,
                    rates: if reacts {
                        vec![0; intervals]
                    } else {
                        Vec::new()
                    },
                    sampled: 0,
                    rate_bps: rp.line_rate_bps,
                }
            })
            .collect();
        let eth = self.eth_mut();
        eth.dcqcn = Some(Dcqcn {
            rp,
            np: NpParams::new(&config),
            flows,
        });
    }

    /// A frame of `p`'s flow arrived marked at host port `port`: its notification point may
    /// answer with a CNP, a frame of its own sent back to the flow's source like any other.
    fn notify(&mut self, port: u32, p: &Packet) {
        let now = self.clock.now;
        let eth = self.eth_mut();
        let host = eth.host;
        let Some(dcqcn) = eth.dcqcn.as_mut() else {
            return;
        };
        let flow = &mut dcqcn.flows[p.flow as usize];
        let Some(cnp) = flow.np.on_marked_packet(&dcqcn.np, p.sl, now) else {
            return;
        };
        flow.cnps_sent += 1;
        let dlid = flow.source_lid;
        // The fabric's priority of the CNP, as of any frame: by the host's trust mode.
        let priority = host.rx_priority(Some(cnp.pcp), cnp.dscp);
        let tc = eth.traffic_class(priority);
        // A frame of the flow's, but its own size and priority, to the flow's source.
        let packet = self.store_packet(Packet {
            dlid,
            blocks: frame_bytes(CNP_PAYLOAD_BYTES) as u16,
            in_vl: priority,
            sl: priority,
            cnp: true,
            ..self.new_packet(p.flow, tc)
        });
        self.enqueue(port, tc, packet);
        self.try_send(port);
    }

    /// A CNP for `flow` reached its source: the reaction point, if it has one, reacts.
    fn cnp_arrive(&mut self, flow: u32) {
        let now = self.clock.now;
        let Some(dcqcn) = self.eth_mut().dcqcn.as_mut() else {
            return;
        };
        let params = dcqcn.rp;
        let state = &mut dcqcn.flows[flow as usize];
        state.cnps_received += 1;
        if let Some(rp) = state.rp.as_mut() {
            rp.on_cnp(&params, now);
            self.rp_changed(flow);
        }
    }

    /// A timer of `flow`'s reaction point is due.
    #[inline(never)]
    pub(crate) fn rp_timer(&mut self, flow: u32) {
        let now = self.clock.now;
        let Some(dcqcn) = self.eth_mut().dcqcn.as_mut() else {
            return;
        };
        let params = dcqcn.rp;
        if let Some(rp) = dcqcn.flows[flow as usize].rp.as_mut() {
            rp.on_timer(&params, now);
            self.rp_changed(flow);
        }
    }

    /// After the reaction point of `flow` acted: counts a cut, samples the rate, queues its
    /// next timer (only while it has one: no polling), and moves the flow between its lane's
    /// rotation (greedy) and pacing (limited).
    fn rp_changed(&mut self, flow: u32) {
        let now = self.clock.now;
        let interval = (!self.counts.timeline.is_empty()).then(|| self.interval_of(now));
        let Some(dcqcn) = self.eth.as_deref_mut().and_then(|e| e.dcqcn.as_mut()) else {
            return;
        };
        let params = dcqcn.rp;
        let state = &mut dcqcn.flows[flow as usize];
        let Some(rp) = state.rp else {
            return;
        };
        let rate = rp.rate_bps();
        if rate < state.rate_bps {
            state.cuts += 1;
        }
        if let Some(interval) = interval {
            state.sample(interval);
        }
        state.rate_bps = rate;
        state.min_rate_bps = state.min_rate_bps.min(rate);
        if let Some(at) = rp.next_timer_ps(&params)
            && (state.timer_at <= now || at < state.timer_at)
        {
            state.timer_at = at;
            self.clock.queue.push(now, at, Event::RpTimer { flow });
        }
        match (rp.is_limited(), state.paced) {
            (true, false) => {
                state.paced = true;
                let start = !state.pacing;
                state.pacing = true;
                self.leave_rotation(flow);
                if start {
                    self.clock.queue.push(now, now, Event::Pace { flow });
                }
            }
            (false, true) => {
                state.paced = false;
                self.rejoin_rotation(flow);
            }
            _ => {}
        }
    }

    /// A limited flow's next frame: sent into its source queue unless its last one is still
    /// there (a rate limiter does not make up for a slot its port was too busy for), and
    /// the next one frame time at the reaction point's rate later.
    #[inline(never)]
    pub(crate) fn pace(&mut self, flow: u32) {
        let now = self.clock.now;
        let state = &self.sources.flows[flow as usize];
        let (port, vl, units, stop) = (state.port, state.vl, state.blocks, state.stop_ps);
        let lane = self.lane(port, vl);
        let waiting = self.queued_frame_of(lane, flow);
        let Some(dcqcn) = self.eth_mut().dcqcn.as_mut() else {
            return;
        };
        let params = dcqcn.rp;
        let state = &mut dcqcn.flows[flow as usize];
        if !state.paced || now >= stop {
            state.pacing = false;
            return;
        }
        let Some(rp) = state.rp.as_mut() else {
            return;
        };
        if !waiting {
            rp.on_bytes_sent(&params, u64::from(units), now);
            self.sources.hot[flow as usize].sent += 1;
            let packet = self.alloc(flow, vl);
            self.enqueue(port, vl, packet);
            self.try_send(port);
            self.rp_changed(flow);
        }
        let rate = self
            .eth_ref()
            .dcqcn
            .as_ref()
            .and_then(|d| d.flows[flow as usize].rp);
        // One frame time at the rate: the frame's wire time on a link of that rate.
        let rate = rate.map_or(params.line_rate_bps, |rp| rp.rate_bps());
        let gap = ethernet_wire_ps(units, rate);
        self.clock.queue.push(now, now + gap, Event::Pace { flow });
    }

    /// Whether a data frame of `flow` waits in the queue of `lane` (a source port's).
    pub(crate) fn queued_frame_of(&self, lane: usize, flow: u32) -> bool {
        let mut packet = self.fabric.lanes[lane].first;
        while packet != NO_PACKET {
            let p = &self.fabric.packets[packet as usize];
            if p.flow == flow && !p.cnp {
                return true;
            }
            packet = p.next;
        }
        false
    }

    /// A greedy flow becomes limited: it leaves its lane's rotation.
    pub(crate) fn leave_rotation(&mut self, flow: u32) {
        let state = &self.sources.flows[flow as usize];
        let (port, vl) = (state.port, state.vl);
        let lane = self.lane(port, vl);
        let rotation = &mut self.fabric.rotations[lane].turns;
        let front = rotation.front().is_some_and(|turn| turn.flow == flow);
        let at = rotation.iter().position(|turn| turn.flow == flow);
        if let Some(turn) = at.and_then(|at| rotation.remove(at)) {
            self.sources.hot[flow as usize].sent += u64::from(turn.sent);
        }
        if front {
            self.skip_stopped(lane);
            self.refresh_lane(port, vl);
        }
    }

    /// A limited flow is released (back at the line rate): greedy again, unless stopped.
    pub(crate) fn rejoin_rotation(&mut self, flow: u32) {
        let hot = self.sources.hot[flow as usize];
        let state = &self.sources.flows[flow as usize];
        if hot.stopped || self.clock.now >= state.stop_ps {
            return;
        }
        let (port, vl) = (state.port, state.vl);
        let lane = self.lane(port, vl);
        let rotation = &mut self.fabric.rotations[lane].turns;
        rotation.push_back(hot.turn(flow));
        if rotation.len() == 1 {
            self.greedy_turn(lane);
            self.refresh_lane(port, vl);
        }
        self.try_send(port);
    }

    /// Samples every reaction point's rate up to the end of the run.
    pub(crate) fn finish_dcqcn(&mut self) {
        let intervals = self.layout.options.timeline_intervals;
        if let Some(dcqcn) = self.eth.as_deref_mut().and_then(|e| e.dcqcn.as_mut()) {
            for state in dcqcn.flows.iter_mut().filter(|s| s.rp.is_some()) {
                state.sample(intervals);
            }
        }
    }

    /// Flow `flow`'s DCQCN counters, on a run with DCQCN.
    pub(crate) fn flow_dcqcn(&self, flow: usize) -> Option<Box<FlowDcqcnReport>> {
        let dcqcn = self.eth.as_deref()?.dcqcn.as_ref()?;
        let state = &dcqcn.flows[flow];
        Some(Box::new(FlowDcqcnReport {
            cnps_sent: state.cnps_sent,
            cnps_received: state.cnps_received,
            rate_cuts: state.cuts,
            final_rate_gbps: round(state.rate_bps as f64 / 1e9),
            min_rate_gbps: round(state.min_rate_bps as f64 / 1e9),
        }))
    }

    /// Each flow with a reaction point and its rate at the end of each timeline interval (of
    /// `interval_ns`), on a run with DCQCN.
    pub(crate) fn dcqcn_rates(&self, interval_ns: u64) -> Option<DcqcnRates> {
        let dcqcn = self.eth.as_deref()?.dcqcn.as_ref()?;
        let flows = self
            .layout
            .specs
            .iter()
            .zip(&dcqcn.flows)
            .filter(|(_, state)| state.rp.is_some())
            .map(|(f, state)| {
                let rates = state.rates.iter().map(|&bps| round(bps as f64 / 1e9));
                (f.name.to_string(), rates.collect())
            })
            .collect();
        Some(DcqcnRates { interval_ns, flows })
    }
}

#[cfg(test)]
mod tests {
    use ibqos_fabric::routing::EngineList;

    use crate::build::Forwarding;
    use crate::ethernet::frame::{ethernet_wire_ps, frame_bytes};
    use crate::infiniband::link::PS_PER_US;
    use crate::report::{PriorityReport, Report};

    /// 100 Gb/s links; priority 3 lossless in PG 1 (Xoff at 20 KB of headroom), the others
    /// lossy in PG 0. The pools are small (60 KB lossy, 600 KB lossless), so that an incast
    /// fills them within the run.
    const LINK: &str = r#"
duration_us = 40
[link]
flow_control = "pfc"
gbps = 100
propagation_ns = 100
[pfc]
priorities = [3]
[buffer]
shared_buffer_bytes = 13680063
priority_pg = [0, 0, 0, 1, 0, 0, 0, 0]
pool = [
    { name = "iPool0", size = 60000, type = "dynamic" },
    { name = "iPool1", size = 600000, type = "dynamic" },
    { name = "ePool0", size = 13680063, type = "dynamic" },
]
pg = [
    { pg = 0, pool = "iPool0", type = "lossy", shared = { alpha = "1" } },
    { pg = 1, pool = "iPool1", type = "lossless", reserved = 87040, xoff = 20480, xon = 20480, shared = { alpha = "1/8" } },
]
iport = [
    { pool = "iPool0", shared = { alpha = "1" } },
    { pool = "iPool1", shared = { alpha = "infinity" } },
]
eport = [{ pool = "ePool0", reserved = 10240, shared = { alpha = "8" } }]
"#;

    const PAYLOAD: u32 = 4096;
    const DURATION_US: u64 = 40;

    /// The run of [`LINK`], `extra` sections and a greedy flow to H4 from each of `sources`
    /// (host, priority), on star.net (H1 to H4 on one switch).
    fn run(extra: &str, sources: &[(&str, u8)]) -> Report {
        let mut text = format!("{LINK}{extra}");
        for (i, (src, priority)) in sources.iter().enumerate() {
            text += &format!(
                "[[flow]]\nname = \"f{i}\"\nsrc = \"{src}\"\ndst = \"H4\"\n\
                 priority = {priority}\npayload = {PAYLOAD}\n"
            );
        }
        let mut topology = crate::star();
        let minhop = EngineList::default();
        let forwarding = Forwarding::Engines(&minhop);
        let made = crate::sim(
            "t.toml",
            text.as_bytes(),
            &mut topology,
            None,
            forwarding,
            1,
            0,
        );
        let setup = made.unwrap();
        setup.run(1).unwrap().finish()
    }

    /// The frames a 100 Gb/s link carries in the run.
    fn line_rate_frames() -> u64 {
        DURATION_US * PS_PER_US / ethernet_wire_ps(frame_bytes(PAYLOAD), 100_000_000_000)
    }

    /// Every priority's counters on every link direction.
    fn priorities(report: &Report) -> impl Iterator<Item = &PriorityReport> {
        let ethernet = report.links.iter().filter_map(|l| l.ethernet.as_ref());
        ethernet.flat_map(|e| &e.priorities)
    }

    /// What a run did: computed from the report, to hold against what a case expects.
    #[derive(Debug, PartialEq)]
    struct Seen {
        paused: bool,
        dropped: bool,
        marked: bool,
        cnps: bool,
    }

    fn seen(report: &Report) -> Seen {
        let sum = |count: fn(&PriorityReport) -> u64| priorities(report).map(count).sum::<u64>();
        let dcqcn = report.flows.iter().filter_map(|f| f.dcqcn.as_ref());
        Seen {
            paused: sum(|p| p.pause_frames_received) > 0 && sum(|p| p.paused_ns) > 0,
            dropped: sum(|p| p.dropped_packets) > 0,
            marked: sum(|p| p.ecn_marks) > 0,
            cnps: dcqcn.map(|d| d.cnps_received).sum::<u64>() > 0,
        }
    }

    /// A congestion case: the run's extra sections and sources, and what it should do.
    struct Case<'a> {
        name: &'a str,
        extra: &'a str,
        sources: &'a [(&'a str, u8)],
        expected: Seen,
        /// The share of H4's line rate delivered.
        share: std::ops::RangeInclusive<f64>,
    }

    /// Congestion and what the Ethernet mode does about it, case by case: whether pauses
    /// were sent and obeyed, frames dropped, marked, answered by CNPs, and the share of H4's
    /// line rate delivered. DCQCN's cuts leave part of the line idle in a run this short.
    #[test]
    fn congestion_is_paused_dropped_or_marked_by_the_configuration() {
        const ECN: &str = "[ecn]\nkmin_bytes = 5000\nkmax_bytes = 200000\npmax = 0.1\n\
                           [dcqcn]\nDcqcnRpgByteReset = 32767\n";
        let lossless_incast: &[(&str, u8)] = &[("H1", 3), ("H2", 3), ("H3", 3)];
        let lossy_incast: &[(&str, u8)] = &[("H1", 0), ("H2", 0), ("H3", 0)];
        let seen_as = |paused, dropped, marked, cnps| Seen {
            paused,
            dropped,
            marked,
            cnps,
        };
        #[rustfmt::skip]
        let cases = [
            Case { name: "a lone flow", extra: "", sources: &[("H1", 3)],
                   expected: seen_as(false, false, false, false), share: 0.95..=1.0 },
            Case { name: "a lossless incast", extra: "", sources: lossless_incast,
                   expected: seen_as(true, false, false, false), share: 0.95..=1.0 },
            Case { name: "a lossy incast", extra: "", sources: lossy_incast,
                   expected: seen_as(false, true, false, false), share: 0.95..=1.0 },
            Case { name: "a lossless incast with ECN and DCQCN", extra: ECN,
                   sources: lossless_incast,
                   expected: seen_as(true, false, true, true), share: 0.5..=0.95 },
        ];
        for Case {
            name,
            extra,
            sources,
            expected,
            share,
        } in cases
        {
            let report = run(extra, sources);
            assert_eq!(seen(&report), expected, "{name}");
            let delivered: u64 = report.flows.iter().map(|f| f.delivered_packets).sum();
            let fraction = delivered as f64 / line_rate_frames() as f64;
            assert!(
                share.contains(&fraction),
                "{name}: {fraction} of line rate delivered"
            );
            // Lossless traffic is never lost: what was sent was delivered or is on its way.
            if !expected.dropped {
                assert!(
                    report.flows.iter().all(|f| f.dropped_packets == 0),
                    "{name}"
                );
            }
        }
    }

    /// A pause storm from H4 on priority 3 stops the switch port toward H4 on that priority
    /// for its 20 us, while H1 sends on priorities 3 and 0. The pause stops the whole traffic
    /// class. With the default dot1p map both priorities share class 0, so priority 0 waits
    /// too, and the link carries no more than in the 20 us without the storm. In a class of its
    /// own (weighted round robin, so that neither class starves the other), priority 0 goes on
    /// through the storm.
    #[test]
    fn a_pause_storm_stops_the_traffic_class_of_its_priority() {
        // Each frame pauses for 100 quanta (0.512 us at 100 Gb/s) and is sent every 50.
        let storm = "[[storm]]\nhost = \"H4\"\npriorities = [3]\nquanta = 100\n\
                     interval_quanta = 50\nstart_us = 10\nstop_us = 30\n";
        let own_class = "[ets]\nqosscheduler = \"weighted-round-robin\"\n\
                         dot1p = [\"qp1\", \"qp1\", \"qp1\", \"qp4\", \"qp1\", \"qp1\", \"qp1\", \"qp8\"]\n\
                         [ets.qp4]\n";
        // What the link carries in the 20 us outside the storm, and a frame or two in flight.
        let outside_storm = line_rate_frames() / 2 + 2;
        for (ets, priority_0_goes_on) in [("", false), (own_class, true)] {
            let report = run(&format!("{storm}{ets}"), &[("H1", 3), ("H1", 0)]);
            let to_h4 = (report.links.iter())
                .find(|l| l.from == "S1[4]")
                .and_then(|l| l.ethernet.as_ref())
                .expect("S1[4] to H4");
            let paused = |p: u8| {
                let report = to_h4.priorities.iter().find(|r| r.priority == p);
                report.map_or(0, |r| r.paused_ns)
            };
            // Paused for the storm's 20 us, give or take the frames' delays.
            assert!((19_000..=21_000).contains(&paused(3)), "{} ns", paused(3));
            assert_eq!(paused(0), 0, "a pause names its priorities only");
            let [f3, f0] = &report.flows[..] else {
                panic!("two flows");
            };
            let both = f3.delivered_packets + f0.delivered_packets;
            assert_eq!(both > outside_storm, priority_0_goes_on, "{f3:?} {f0:?}");
            if priority_0_goes_on {
                assert!(f3.delivered_packets < f0.delivered_packets, "{f3:?} {f0:?}");
            }
        }
    }
}
