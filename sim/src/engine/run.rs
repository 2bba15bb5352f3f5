//! The event loop: events taken in time order and handled port by port (sources, arbitration,
//! credits, store and forward).

use super::{
    Event, FlowHot, FlowState, Lane, NO_PACKET, NO_PORT, Packet, PortState, Rotation, Shape,
    Simulation, VL15,
};
use crate::infiniband::arbiter::Arbiter;
use crate::infiniband::link::PS_PER_NS;
use crate::network::NodeKind;
use crate::queue::Queue;

/// The ports, their lanes and the packets: what the events change.
#[derive(Debug)]
pub(crate) struct Fabric {
    /// Per port, what its events read: where its lanes are, what arbitration and the wait
    /// timing read of them, its peer and kind of link.
    pub(crate) states: Vec<PortState>,
    pub(crate) lanes: Vec<Lane>,
    /// Per port, its arbiter.
    pub(super) arbiters: Vec<Arbiter>,
    /// Per lane of a host's port (the first lanes, [`Simulation::with_lanes_of`]), the greedy
    /// flows taking turns on it: only a flow's source has any.
    pub(crate) rotations: Vec<Rotation>,
    pub(crate) packets: Vec<Packet>,
    /// The free slots of `packets`.
    pub(crate) free: Vec<u32>,
}

/// What the run keeps of each flow besides its description, by flow.
#[derive(Debug)]
pub(crate) struct Sources {
    pub(crate) flows: Vec<FlowState>,
    /// The part every packet a flow sends touches.
    pub(crate) hot: Vec<FlowHot>,
}

/// The run's time and where its events come from.
#[derive(Debug)]
pub(crate) struct Clock {
    pub(crate) queue: Queue<Event>,
    /// The flows' Start and Stop events, by time (in flow order among equal times), apart from
    /// the queue: they are known before the run and would otherwise fill it. They come before
    /// any queued event of the same time, as the events pushed first.
    pub(crate) schedule: Vec<(u64, Event)>,
    /// The next of `schedule` to handle.
    pub(super) scheduled: usize,
    pub(crate) now: u64,
    /// The events handled so far.
    pub(super) events: u64,
}

impl<'n> Simulation<'n> {
    /// The current simulated time.
    pub fn now_ps(&self) -> u64 {
        self.clock.now
    }

    /// The events handled so far.
    pub fn events(&self) -> u64 {
        self.clock.events
    }

    /// Processes every event up to `until` (at most the run's duration), unless a credit
    /// loop stopped the run: then none. The deadlock watch looks between events, at its
    /// times, and takes no part in them, so the events and the report are the same as
    /// without it until it finds a loop.
    pub fn run_until(&mut self, until: u64) {
        if self.split.is_some() {
            self.take_events::<true>(until);
            return;
        }
        while let Some(look) = self.look_due(until) {
            self.take_events::<false>(look);
            self.look_for_deadlock();
        }
        if !self.deadlocked() {
            self.take_events::<false>(until);
        }
    }

    /// [`Simulation::run_until`]; as a partition (`LOG`), noting each event that pushed any
    /// event, its rank and the pushes before it, in the window's log. One loop for both, made
    /// twice, so that a run on one core does not ask at each event whether to log it.
    fn take_events<const LOG: bool>(&mut self, until: u64) {
        let until = until.min(self.layout.options.duration_ps);
        let after = until.saturating_add(1);
        // The time of the next scheduled event (the schedule does not change during the run).
        let next_scheduled = |sim: &Self| {
            sim.clock
                .schedule
                .get(sim.clock.scheduled)
                .map_or(u64::MAX, |(time, _)| *time)
        };
        let mut scheduled = next_scheduled(self);
        loop {
            // A scheduled event goes before queued events of its time.
            let (rank, event) = match self.clock.queue.pop_before(scheduled.min(after)) {
                Some(next) => next,
                None if scheduled <= until => {
                    self.clock.scheduled += 1;
                    scheduled = next_scheduled(self);
                    let (time, event) = self.clock.schedule[self.clock.scheduled - 1];
                    let number = match &self.split {
                        Some(split) if LOG => split.scheduled_number(self.clock.scheduled - 1),
                        _ => 0,
                    };
                    (u128::from(time) << 64 | u128::from(number), event)
                }
                None => break,
            };
            let pushed = self.clock.queue.next_number();
            self.clock.now = (rank >> 64) as u64;
            self.clock.events += 1;
            self.load_next_event_ports();
            self.handle(event);
            // Only the order of events that pushed something matters to the numbering.
            if LOG
                && self.clock.queue.next_number() != pushed
                && let Some(split) = &mut self.split
            {
                split.log(rank, pushed);
            }
        }
        self.clock.now = self.clock.now.max(until);
    }

    /// Loads what the next event will read first of its ports and packet, so that the loads
    /// that miss the cache overlap the current event's work instead of waiting for it. At the
    /// scale of the 10,416-node fat tree a packet-hop's time is mostly such misses (the ports'
    /// states are a random line each in megabytes), and this made the whole permutation run
    /// 1.10 times as fast; on fat-tree-648, whose states fit the cache, it changes nothing
    /// measurable. A plain load kept by `black_box`: the prefetch instruction needs `unsafe`.
    /// Loads whose index depends on another load (a lane, a buffer) waited for it and made
    /// the run slower, as did loading the arbiter too.
    #[inline(always)]
    fn load_next_event_ports(&self) {
        match self.clock.queue.peek() {
            Some(&Event::Arrive { port, packet }) => {
                std::hint::black_box(self.fabric.states[port as usize].base);
                std::hint::black_box(self.fabric.packets[packet as usize].dlid);
            }
            Some(&Event::Credit { port, .. }) => {
                std::hint::black_box(self.fabric.states[port as usize].base);
            }
            Some(&Event::TxDone { port, release, .. }) => {
                std::hint::black_box(self.fabric.states[port as usize].base);
                if release != NO_PORT {
                    std::hint::black_box(self.fabric.states[release as usize].base);
                }
            }
            _ => {}
        }
    }

    // Inlined into the run loop, as it was before the DCQCN events made it larger: called
    // apart, it cost the InfiniBand run 7.8% more instructions (callgrind).
    #[inline(always)]
    fn handle(&mut self, event: Event) {
        match event {
            Event::Start { flow } | Event::Inject { flow } => self.inject(flow),
            Event::Join { flow, port, vl } => {
                let lane = self.lane(port, vl);
                let rotation = &mut self.fabric.rotations[lane].turns;
                rotation.push_back(self.sources.hot[flow as usize].turn(flow));
                // Joining behind other flows changes neither the lane's head nor what it
                // waits for: only the first flow of a rotation makes a new head.
                if rotation.len() == 1 {
                    self.greedy_turn(lane);
                    self.refresh_lane(port, vl);
                }
                self.try_send(port);
            }
            Event::Stop { flow, port, vl } => {
                self.sources.hot[flow as usize].stopped = true;
                let lane = self.lane(port, vl);
                let rotation = &mut self.fabric.rotations[lane];
                rotation.stopping += 1;
                // A flow behind the front leaves when its turn comes (skip_stopped): until
                // then the lane's head is the front's, unchanged.
                if rotation.turns.front().is_some_and(|turn| turn.flow == flow) {
                    self.skip_stopped(lane);
                    self.refresh_lane(port, vl);
                }
            }
            Event::TxDone {
                port,
                release,
                vl,
                blocks,
            } => {
                let next = if self.eth.is_some() {
                    self.ethernet_sent(port, release, vl, blocks);
                    self.ethernet_grant(port)
                } else {
                    if release != NO_PORT {
                        self.release(release, vl, blocks);
                    }
                    self.credit_grant(port)
                };
                // The port stays busy when it sends again at once: marking it idle first would
                // start, and end at the same instant, the wait of each of its starved lanes.
                match next {
                    Some((peer, vl)) => self.transmit(port, peer, vl),
                    None => self.set_idle(port),
                }
            }
            Event::Arrive { port, packet } => self.arrive(port, packet),
            Event::Wake { port } => self.try_send(port),
            Event::PauseArrive { port, frame } => self.pause_arrive(port, frame),
            Event::PauseApply { port, frame } => self.pause_apply(port, frame),
            Event::Refresh { port } => self.pause_refresh(port),
            Event::Storm { storm } => self.storm(storm),
            Event::RpTimer { flow } => self.rp_timer(flow),
            Event::Pace { flow } => self.pace(flow),
            Event::Becn { flow } => self.becn_arrive(flow),
            Event::CcPace { flow } => self.cc_pace(flow),
            Event::Sample { interval } => self.sample_buffers(interval as usize),
            Event::Credit { port, vl, blocks } => {
                let lane = self.lane(port, vl);
                let l = &mut self.fabric.lanes[lane];
                l.credits += u32::from(blocks);
                let bits = &mut self.fabric.states[port as usize];
                if bits.busy {
                    // All refresh_lane and try_send would do: a busy port times no wait for
                    // credits and does not arbitrate.
                    bits.note_head(vl, l);
                    self.note_waits(port);
                } else {
                    self.refresh_lane(port, vl);
                    self.try_send(port);
                }
            }
        }
    }

    /// The time `port` takes to send a packet of `blocks`.
    pub(super) fn serialization(&self, port: u32, blocks: u32) -> u64 {
        let kind = self.fabric.states[port as usize].kind;
        self.layout.kinds[usize::from(kind)].wire_ps[blocks as usize]
    }

    /// The index of the lane of `vl` at `port`, which has one: VL15, or a data VL its link runs.
    pub(crate) fn lane(&self, port: u32, vl: u8) -> usize {
        self.fabric.states[port as usize].lane(vl)
    }

    /// Drops the stopped flows at the front of a lane's rotation. A stopped flow leaves the
    /// rotation only when it comes to the front, which keeps the others' order as removing it
    /// at once would, without searching the rotation for it. [`Rotation::stopping`] spares
    /// the look at the flow table (a random line per greedy packet) while none of the lane's
    /// flows has stopped.
    pub(crate) fn skip_stopped(&mut self, lane: usize) {
        let rotation = &mut self.fabric.rotations[lane];
        while rotation.stopping > 0 {
            let Some(turn) = rotation.turns.front().copied() else {
                break;
            };
            let hot = &mut self.sources.hot[turn.flow as usize];
            if !hot.stopped {
                break;
            }
            hot.sent += u64::from(turn.sent);
            rotation.stopping -= 1;
            rotation.turns.pop_front();
        }
        self.greedy_turn(lane);
    }

    /// Notes in the lane's head the size of the packet of the greedy flow whose turn it is.
    pub(crate) fn greedy_turn(&mut self, lane: usize) {
        self.fabric.lanes[lane].greedy = self.fabric.rotations[lane]
            .turns
            .front()
            .map_or(0, |turn| turn.shape.blocks);
    }

    /// Adds the packets the turns of every rotation hold to their flows' counts.
    pub(super) fn settle_turns(&mut self) {
        for rotation in &mut self.fabric.rotations {
            for turn in &mut rotation.turns {
                self.sources.hot[turn.flow as usize].sent += u64::from(turn.sent);
                turn.sent = 0;
            }
        }
    }

    /// A generated packet: queued at its source, or dropped there if its SL maps to VL15 or to a
    /// VL its link does not run.
    fn inject(&mut self, flow: u32) {
        let now = self.clock.now;
        let state = &self.sources.flows[flow as usize];
        if now >= state.stop_ps {
            return;
        }
        let (port, vl) = (state.port, state.vl);
        let next = if state.greedy {
            // Dropped at its source: the host offers it as fast as its link would carry it.
            now + self.serialization(port, state.blocks)
        } else {
            state.origin + self.gap_ps(&self.layout.specs[flow as usize], state.generated + 1)
        };
        self.sources.hot[flow as usize].sent += 1;
        let state = &mut self.sources.flows[flow as usize];
        state.generated += 1;
        if vl == VL15 && !self.layout.specs[flow as usize].management {
            self.counts.flow_drops[flow as usize] += 1;
        } else {
            let packet = self.alloc(flow, vl);
            self.enqueue(port, vl, packet);
            self.try_send(port);
        }
        if next < self.sources.flows[flow as usize].stop_ps {
            self.clock.queue.push(now, next, Event::Inject { flow });
        }
    }

    pub(crate) fn alloc(&mut self, flow: u32, vl: u8) -> u32 {
        self.store_packet(self.new_packet(flow, vl))
    }

    /// A packet of `flow` leaving its source now on lane `vl`.
    pub(crate) fn new_packet(&self, flow: u32, vl: u8) -> Packet {
        self.packet_of(flow, self.sources.hot[flow as usize].shape, vl)
    }

    /// A packet of `flow`, of `f`'s shape, leaving its source now on lane `vl`.
    fn packet_of(&self, flow: u32, f: Shape, vl: u8) -> Packet {
        Packet {
            created: self.clock.now,
            flow,
            in_port: NO_PORT,
            next: NO_PACKET,
            next_blocks: 0,
            dlid: f.dlid,
            blocks: f.blocks,
            // Read only once the packet is in a switch (which sets it), but for Ethernet's
            // sender counters: the packet's priority.
            in_vl: f.sl,
            vl,
            sl: f.sl,
            management: f.management,
            ce: false,
            cnp: false,
        }
    }

    /// Puts `packet` in a free slot.
    pub(crate) fn store_packet(&mut self, packet: Packet) -> u32 {
        match self.fabric.free.pop() {
            Some(id) => {
                self.fabric.packets[id as usize] = packet;
                id
            }
            None => {
                self.fabric.packets.push(packet);
                (self.fabric.packets.len() - 1) as u32
            }
        }
    }

    /// Queues `packet` to leave `port` by the lane of `vl`. Only a packet that finds the
    /// queue empty changes the lane's head, and so the port's bits: the head of a queue that
    /// had packets, its credits and the port's business stay what the bits already say.
    pub(crate) fn enqueue(&mut self, port: u32, vl: u8, packet: u32) {
        if self.append(self.lane(port, vl), packet) {
            self.refresh_lane(port, vl);
        }
    }

    /// Appends `packet` to a lane's queue; true if the queue was empty.
    fn append(&mut self, lane: usize, packet: u32) -> bool {
        let p = &mut self.fabric.packets[packet as usize];
        // The last of its queue: what follows it, nothing, 0 blocks (a packet queued here
        // after it sets them). A packet is queued once per hop, so these hold the last hop's.
        (p.next, p.next_blocks) = (NO_PACKET, 0);
        let blocks = p.blocks;
        let l = &mut self.fabric.lanes[lane];
        let was_empty = l.last == NO_PACKET;
        if was_empty {
            l.first = packet;
            l.first_blocks = blocks;
        } else {
            let last = &mut self.fabric.packets[l.last as usize];
            last.next = packet;
            last.next_blocks = blocks;
        }
        l.last = packet;
        was_empty
    }

    /// Takes the first packet of a lane's queue.
    fn dequeue(&mut self, lane: usize) -> Option<u32> {
        let l = &mut self.fabric.lanes[lane];
        let packet = l.first;
        if packet == NO_PACKET {
            return None;
        }
        let p = &self.fabric.packets[packet as usize];
        (l.first, l.first_blocks) = (p.next, p.next_blocks);
        if l.first == NO_PACKET {
            l.last = NO_PACKET;
        }
        Some(packet)
    }

    /// Updates a port's bits after a lane's head or credits changed: whether the lane has a
    /// head, whether the head lacks credits, and its wait for credits.
    pub(crate) fn refresh_lane(&mut self, port: u32, vl: u8) {
        let bits = &mut self.fabric.states[port as usize];
        let lane = bits.lane(vl);
        let starved = bits.note_head(vl, &self.fabric.lanes[lane]);
        let bit = 1u16 << vl;
        let blocked = starved && !bits.busy;
        if blocked != (bits.waiting & bit != 0) {
            bits.waiting ^= bit;
            self.account_blocked(lane, blocked);
        }
        self.note_waits(port);
    }

    /// Starts or ends a lane's wait for credits. A lane is blocked while its port is idle and
    /// its head packet lacks credits: while the port sends something else, it waits for the
    /// wire, not for credits. Called only when that changes (the port's `waiting` bits).
    fn account_blocked(&mut self, lane: usize, blocked: bool) {
        let left = self.left_ps();
        let wait = &mut self.counts.waits[lane];
        if blocked {
            *wait += left;
        } else {
            *wait -= left;
        }
    }

    /// Marks `port` idle, which starts the wait of each of its starved lanes. (A port becomes
    /// busy only in [`Simulation::transmit`], which ends every wait.)
    fn set_idle(&mut self, port: u32) {
        let bits = &mut self.fabric.states[port as usize];
        bits.busy = false;
        let mut started = bits.starved & !bits.waiting;
        bits.waiting = bits.starved;
        let state = *bits;
        while started != 0 {
            let vl = started.trailing_zeros() as u8;
            started &= started - 1;
            self.account_blocked(state.lane(vl), true);
        }
        self.sample_sending(port, None);
    }

    /// The run's time left: what a change now weighs in the integrals kept as at the run's end
    /// (the waits, [`Simulation::waits`], and the buffers', [`Buffer`]).
    pub(super) fn left_ps(&self) -> u64 {
        self.layout.options.duration_ps - self.clock.now
    }

    /// `port`'s receive buffer takes in (`fill`) or frees `blocks` on `vl`, now. Inlined: a
    /// call costs as much as the change, twice a packet-hop.
    #[inline(always)]
    fn change_buffer(&mut self, port: u32, vl: u8, blocks: u32, fill: bool) {
        let (lane, left) = (self.lane(port, vl), self.left_ps());
        let carry = self.counts.buffers[lane].change(blocks, left, fill);
        if carry != 0 {
            self.carry(lane, carry);
        }
    }

    /// Notes what carried out of a lane's [`Buffer::to_end`]: never, but on a run of 2^64
    /// block-picoseconds or more. Apart, so that the map's code stays out of the inlined path.
    #[cold]
    #[inline(never)]
    pub(super) fn carry(&mut self, lane: usize, carry: i64) {
        *self.counts.carried.entry(lane).or_default() += carry;
    }

    /// `port`'s receive buffer frees `blocks` on `vl`; the credits go back to the sender.
    pub(super) fn release(&mut self, port: u32, vl: u8, blocks: u16) {
        self.change_buffer(port, vl, u32::from(blocks), false);
        let state = self.fabric.states[port as usize];
        // A packet only arrives over a link, so a port that releases one has a peer.
        let sender = state.peer;
        if vl != VL15 {
            let at = self.clock.now + self.layout.kinds[usize::from(state.kind)].credit_return_ps;
            let credit = Event::Credit {
                port: sender,
                vl,
                blocks,
            };
            self.push_to_peer(state.far, sender, at, credit);
        }
    }

    pub(super) fn arrive(&mut self, port: u32, packet: u32) {
        if self.eth.is_some() {
            self.ethernet_arrive(port, packet);
            return;
        }
        let info = self.fabric.states[port as usize];
        let p = self.fabric.packets[packet as usize];
        let (blocks, dlid, management) = (u32::from(p.blocks), p.dlid, p.management);
        self.sample_arrival(port, p.sl, p.vl, blocks);
        self.change_buffer(port, p.vl, blocks, true);
        let network = self.layout.network;
        let node = &network.nodes[info.node as usize];
        let out = match node.kind {
            NodeKind::Host => None,
            NodeKind::Switch => node.route(dlid),
        };
        let Some(out) = out else {
            // Delivered at a host (if it owns the LID), or no route at a switch.
            if node.kind == NodeKind::Switch {
                self.sample_relay_error(port);
            }
            self.release(port, p.vl, p.blocks);
            let delivered = node.kind == NodeKind::Host && node.lids[usize::from(info.num)] == dlid;
            if delivered && p.ce {
                self.sample_notification(port, p.sl, false);
                self.return_becn(p.flow);
            }
            self.retire(packet, &p, delivered);
            return;
        };
        let out_port = self.layout.node_base[info.node as usize] + u32::from(out);
        let vl = if management {
            VL15
        } else {
            node.sl2vl(info.num, out).0[usize::from(p.sl)].get()
        };
        if !management && (vl == VL15 || vl >= self.fabric.states[out_port as usize].vls) {
            self.sample_relay_error(port);
            self.release(port, p.vl, p.blocks);
            self.counts.flow_drops[p.flow as usize] += 1;
            *self.counts.dropped.entry((out_port, vl)).or_default() += 1;
            self.fabric.free.push(packet);
            return;
        }
        let pk = &mut self.fabric.packets[packet as usize];
        pk.in_port = port;
        pk.in_vl = pk.vl;
        pk.vl = vl;
        self.enqueue(out_port, vl, packet);
        self.try_send(out_port);
    }

    /// A packet leaves the fabric: delivered (its latency recorded) or dropped.
    pub(crate) fn retire(&mut self, packet: u32, p: &Packet, delivered: bool) {
        let latency = (self.clock.now - p.created) / PS_PER_NS;
        if delivered {
            match u32::try_from(latency) {
                Ok(ns) => {
                    self.counts
                        .deliveries
                        .push(u64::from(p.flow) << 32 | u64::from(ns));
                    if self.counts.deliveries.len() == self.counts.delivery_batch {
                        self.record_deliveries();
                    }
                }
                Err(_) => self.counts.tallies[p.flow as usize].latency.record(latency),
            }
        } else {
            self.counts.flow_drops[p.flow as usize] += 1;
        }
        self.fabric.free.push(packet);
    }

    /// Records the deliveries logged so far in their flows' latency histograms, in flow order.
    /// Why not at each delivery: a flow's tally and its buckets are two random lines in
    /// tables of every flow (27 MB of tallies for the 648-host all-to-all). Recorded at each
    /// delivery, they took a third of the run's time. A sorted batch of about one delivery per
    /// flow reads them nearly as a stream. It also lays the buckets out in flow order, which
    /// the report reads faster too. A histogram is the same whatever order its values
    /// came in, so the report is too.
    pub(super) fn record_deliveries(&mut self) {
        self.counts.deliveries.sort_unstable();
        for &delivery in &self.counts.deliveries {
            let (flow, ns) = (delivery >> 32, delivery & u64::from(u32::MAX));
            self.counts.tallies[flow as usize].latency.record(ns);
        }
        self.counts.deliveries.clear();
    }

    /// If `port` is idle, sends what VL15 or the arbiter gives it.
    pub(crate) fn try_send(&mut self, port: u32) {
        if self.fabric.states[port as usize].busy {
            return;
        }
        if let Some((peer, vl)) = self.grant(port) {
            self.transmit(port, peer, vl);
        }
    }

    /// The peer and the lane `port` sends on next, whether or not the port is busy: by
    /// credits and the VL arbiter, or on Ethernet by pauses and the ETS scheduler.
    pub(super) fn grant(&mut self, port: u32) -> Option<(u32, u8)> {
        if self.eth.is_some() {
            self.ethernet_grant(port)
        } else {
            self.credit_grant(port)
        }
    }

    /// The peer and the VL `port` sends on next, if it is linked and VL15 or the arbiter
    /// grants one, whether or not the port is busy.
    fn credit_grant(&mut self, port: u32) -> Option<(u32, u8)> {
        let p = port as usize;
        let bits = self.fabric.states[p];
        let peer = bits.peer;
        if peer == NO_PORT {
            return None;
        }
        // VL15 never has greedy flows, so its head is queued exactly when its queue is not
        // empty.
        let vl = if bits.queued & 1 << VL15 != 0 {
            VL15
        } else {
            let ready_vls = bits.queued & !bits.starved;
            // A refusal leaves the arbiter where the next refusal would: asking again with
            // nothing ready changes nothing, and is skipped.
            if ready_vls == 0 && bits.refused {
                return None;
            }
            let lanes = &self.fabric.lanes[bits.lanes()];
            let grant =
                self.fabric.arbiters[p].next_among(&self.layout.arbiter_tables, ready_vls, |vl| {
                    let lane = &lanes[usize::from(vl)];
                    let head = u32::from(lane.head());
                    (head > 0 && lane.credits >= head).then_some(head)
                });
            self.fabric.states[p].refused = grant.is_none();
            grant?.0
        };
        Some((peer, vl))
    }

    fn transmit(&mut self, port: u32, peer: u32, vl: u8) {
        let now = self.clock.now;
        // What the port's state says of its lanes and link does not change below: one read.
        let state = self.fabric.states[port as usize];
        let lane = state.lane(vl);
        let packet = match self.dequeue(lane) {
            Some(packet) => packet,
            None => {
                // Only a host's port has a rotation: a switch's lane sends what is queued.
                let Some(rotation) = self.fabric.rotations.get_mut(lane) else {
                    return;
                };
                let turns = &mut rotation.turns;
                let Some(mut turn) = turns.pop_front() else {
                    return;
                };
                turn.sent += 1;
                if turn.sent == u32::MAX {
                    self.sources.hot[turn.flow as usize].sent += u64::from(turn.sent);
                    turn.sent = 0;
                }
                turns.push_back(turn);
                self.skip_stopped(lane);
                self.store_packet(self.packet_of(turn.flow, turn.shape, vl))
            }
        };
        let p = self.fabric.packets[packet as usize];
        let blocks = u32::from(p.blocks);
        let kind = &self.layout.kinds[usize::from(state.kind)];
        let (serialization, propagation) = (kind.wire_ps[blocks as usize], kind.propagation_ps);
        // A packet still leaving when the run ends counts only the units that left by then:
        // a link's bytes over the run never exceed what its rate carries in it.
        let left_ps = self.layout.options.duration_ps.saturating_sub(now);
        let counted = units_sent_by(blocks, serialization, left_ps);
        let l = &mut self.fabric.lanes[lane];
        if vl != VL15 {
            l.credits -= blocks;
        }
        l.sent.packets += 1;
        l.sent.blocks += counted;
        // The lane's new head, as refresh_lane would note it on a busy port: a busy port times
        // no wait for credits, so every wait it timed ends now.
        let bits = &mut self.fabric.states[port as usize];
        bits.busy = true;
        let starved = bits.note_head(vl, l);
        let mut ended = std::mem::take(&mut bits.waiting);
        while ended != 0 {
            let waited = ended.trailing_zeros() as u8;
            ended &= ended - 1;
            self.account_blocked(state.lane(waited), false);
        }
        if self.cc.is_some() && p.in_port != NO_PORT && !p.management {
            self.mark_fecn(port, lane, packet, starved);
        }
        self.sample_sending(port, Some((p.sl, vl, counted, p.management)));
        if !self.counts.timeline.is_empty() {
            self.count_in_timeline(port, vl, blocks, serialization, counted);
        }
        self.counts.packet_hops += 1;
        self.clock.queue.push(
            now,
            now + serialization,
            Event::TxDone {
                port,
                release: p.in_port,
                vl: p.in_vl,
                blocks: p.blocks,
            },
        );
        self.fabric.packets[packet as usize].vl = vl;
        let arrive = Event::Arrive { port: peer, packet };
        self.push_to_peer(state.far, peer, now + serialization + propagation, arrive);
    }

    /// Pushes `event`, due at `time`, for `peer`, a port linked to one of this run's: into the
    /// queue, or when the peer is another partition's (`far`) into that partition's outbox.
    #[inline(always)]
    fn push_to_peer(&mut self, far: bool, peer: u32, time: u64, event: Event) {
        if far {
            self.cross(peer, time, event);
        } else {
            self.clock.queue.push(self.clock.now, time, event);
        }
    }
}

/// The whole units of a packet of `units`, on the wire for `serialization_ps`, that have left
/// its port `elapsed_ps` after it started.
pub(super) fn units_sent_by(units: u32, serialization_ps: u64, elapsed_ps: u64) -> u64 {
    if elapsed_ps >= serialization_ps {
        return u64::from(units);
    }
    (u128::from(units) * u128::from(elapsed_ps) / u128::from(serialization_ps)) as u64
}
