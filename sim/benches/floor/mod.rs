//! The floor: the least work of an exact packet-level credit engine, on the bench's workload, to
//! say how far the engine is from it and how far the fastest engine of this kind could be from
//! a target.
//!
//! It keeps what decides where and when packets go: the same network, flows, link times,
//! events (a transmission's end, an arrival, a credit return), queue discipline (one FIFO per
//! delay, earliest (time, push number) first), credits, store and forward, routing, SL to VL per
//! hop, the low-priority VLArb table walked as [`ibqos_sim::Arbiter`] does with the default
//! options, and greedy flows taking turns on their lane. It leaves out everything the engine
//! keeps only to report: latency histograms, waits for credits, buffer occupancy integrals and
//! peaks, counts per VL, drops, timelines; and what the bench's workload never uses: VL15,
//! rate-limited flows, start and stop times (every flow is already in its rotation at time 0),
//! the high-priority table (the bench's gives no VL a weight), the high limit, Ethernet. The
//! engine does all of this and more, so the floor's packet-hops per second are what the engine
//! could reach by shedding everything but the model. Its figures are close to the engine's but
//! not the same (the order in which ports start sending at time 0 differs, and so do later
//! ties). It also runs on more than one core with the same results (`parallel.rs`), to measure
//! what exact parallelism costs and what it gives.
use std::collections::VecDeque;
use std::time::Instant;

use ibqos_sim::window::PROVISIONAL;
use ibqos_sim::{Flow, LinkParams, Network, NodeKind, wire_blocks};

mod parallel;

/// No packet, no port.
const NONE: u32 = u32::MAX;
/// Lanes per port: every data VL a port could run (VL15 carries nothing here).
const VLS: usize = 16;

#[derive(Clone, Copy)]
enum Event {
    TxDone {
        port: u32,
        release: u32,
        vl: u8,
        blocks: u16,
    },
    Arrive {
        port: u32,
        packet: u32,
    },
    Credit {
        port: u32,
        vl: u8,
        blocks: u16,
    },
}

/// The delay classes, one FIFO each: a packet's serialization (its transmission's end), that
/// plus propagation (its arrival), and the credit return.
const TX_DONE: usize = 0;
const ARRIVE: usize = 1;
const CREDIT: usize = 2;

#[derive(Clone)]
struct Queue {
    delays: [u64; 3],
    fifos: [VecDeque<(u128, Event)>; 3],
    /// Pushes so far: the whole run's, or (partitioned) the current window's.
    pushed: u64,
}

impl Queue {
    /// The earliest event and its rank, if it is at or before `until`. Inlined into the run's
    /// one loop, as before partitions (without the attribute, a call per event).
    #[inline(always)]
    fn pop_until(&mut self, until: u64) -> Option<(u128, Event)> {
        let (class, rank) = (0..3)
            .filter_map(|class| self.fifos[class].front().map(|(rank, _)| (class, *rank)))
            .min_by_key(|(_, rank)| *rank)?;
        if (rank >> 64) as u64 > until {
            return None;
        }
        self.fifos[class].pop_front()
    }
}

#[derive(Clone, Copy)]
struct Packet {
    created: u64,
    in_port: u32,
    next: u32,
    next_blocks: u16,
    dlid: u16,
    blocks: u16,
    in_vl: u8,
    vl: u8,
    sl: u8,
}

#[derive(Clone, Copy)]
struct Lane {
    credits: u32,
    occupancy: u32,
    first: u32,
    last: u32,
    first_blocks: u16,
    /// Blocks of a packet of the greedy flow whose turn it is (0: no greedy flow).
    greedy: u16,
}

impl Lane {
    fn head(&self) -> u16 {
        if self.first_blocks > 0 {
            self.first_blocks
        } else {
            self.greedy
        }
    }
}

#[derive(Clone, Copy)]
struct Port {
    peer: u32,
    node: u32,
    num: u8,
    busy: bool,
    /// VLs whose head packet has credits for all of it.
    ready: u16,
}

/// A port's place in its low-priority VLArb table (VL, weight in blocks).
#[derive(Clone)]
struct Arbiter {
    entries: Vec<(u8, u32)>,
    senders: u16,
    cursor: usize,
    used: u32,
}

/// A greedy flow's turn: its destination and SL.
#[derive(Clone, Copy)]
struct Turn {
    dlid: u16,
    sl: u8,
}

/// The floor of a whole run (`PARTITIONED` false: every push is local and numbered for the
/// whole run, as before partitions existed), or of one partition of a run.
struct Floor<'n, const PARTITIONED: bool> {
    network: &'n Network,
    /// The partition of each port (all 0 in a run of one), and this floor's.
    owner: &'n [u8],
    me: u8,
    /// Partitioned: each event this window took that pushed any, its rank and the pushes
    /// before it.
    log: Vec<(u128, u32)>,
    /// Partitioned: this window's pushes to other partitions' ports, by partition.
    outbox: Vec<Vec<parallel::Crossing>>,
    node_base: Vec<u32>,
    ports: Vec<Port>,
    lanes: Vec<Lane>,
    rotations: Vec<(Vec<Turn>, usize)>,
    arbiters: Vec<Arbiter>,
    packets: Vec<Packet>,
    free: Vec<u32>,
    queue: Queue,
    blocks: u16,
    now: u64,
    events: u64,
    packet_hops: u64,
    delivered: u64,
    /// The delivered packets' latencies, summed (the engine records each in its flow's
    /// histogram).
    latency_ps: u64,
    /// The delivered packets' (arrival time, port), hashed and summed: two runs that agree
    /// here delivered the same packets at the same times (sums are the same in any order).
    fingerprint: u64,
}

/// Where lane `vl` of `port` is in the lanes.
fn lane(port: u32, vl: u8) -> usize {
    port as usize * VLS + usize::from(vl)
}

impl<const PARTITIONED: bool> Floor<'_, PARTITIONED> {
    fn refresh(&mut self, port: u32, vl: u8) {
        let lane = &self.lanes[lane(port, vl)];
        let head = lane.head();
        let bit = 1u16 << vl;
        let port = &mut self.ports[port as usize];
        if head > 0 && lane.credits >= u32::from(head) {
            port.ready |= bit;
        } else {
            port.ready &= !bit;
        }
    }

    /// The VL the arbiter grants, as `Table::pick` with the default options.
    fn grant(&mut self, port: u32) -> Option<u8> {
        let ready = self.ports[port as usize].ready;
        let arbiter = &mut self.arbiters[port as usize];
        if arbiter.senders & ready == 0 {
            arbiter.used = 0;
            return None;
        }
        let n = arbiter.entries.len();
        for step in 0..=n {
            if step > 0 {
                arbiter.cursor = if arbiter.cursor + 1 == n {
                    0
                } else {
                    arbiter.cursor + 1
                };
                arbiter.used = 0;
            }
            let (vl, weight) = arbiter.entries[arbiter.cursor];
            if weight > 0 && ready & 1 << vl != 0 && arbiter.used < weight {
                arbiter.used += u32::from(self.lanes[lane(port, vl)].head());
                return Some(vl);
            }
        }
        None
    }

    fn try_send(&mut self, port: u32) {
        if !self.ports[port as usize].busy
            && let Some(vl) = self.grant(port)
        {
            self.transmit(port, vl);
        }
    }

    fn store(&mut self, packet: Packet) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.packets[id as usize] = packet;
                id
            }
            None => {
                self.packets.push(packet);
                (self.packets.len() - 1) as u32
            }
        }
    }

    fn enqueue(&mut self, lane: usize, packet: u32) {
        let p = &mut self.packets[packet as usize];
        (p.next, p.next_blocks) = (NONE, 0);
        let blocks = p.blocks;
        let l = &mut self.lanes[lane];
        if l.last == NONE {
            (l.first, l.first_blocks) = (packet, blocks);
        } else {
            let last = &mut self.packets[l.last as usize];
            (last.next, last.next_blocks) = (packet, blocks);
        }
        l.last = packet;
    }

    /// The queue's first packet, else a new one of the greedy flow whose turn it is.
    fn take(&mut self, lane: usize, vl: u8) -> u32 {
        let l = &mut self.lanes[lane];
        if l.first != NONE {
            let packet = l.first;
            let p = &self.packets[packet as usize];
            (l.first, l.first_blocks) = (p.next, p.next_blocks);
            if l.first == NONE {
                l.last = NONE;
            }
            return packet;
        }
        let (turns, next) = &mut self.rotations[lane];
        let turn = turns[*next];
        *next = (*next + 1) % turns.len();
        self.store(Packet {
            created: self.now,
            in_port: NONE,
            next: NONE,
            next_blocks: 0,
            dlid: turn.dlid,
            blocks: self.blocks,
            in_vl: 0,
            vl,
            sl: turn.sl,
        })
    }

    fn transmit(&mut self, port: u32, vl: u8) {
        let lane = lane(port, vl);
        let packet = self.take(lane, vl);
        let p = &mut self.packets[packet as usize];
        p.vl = vl;
        let p = *p;
        self.lanes[lane].credits -= u32::from(p.blocks);
        self.ports[port as usize].busy = true;
        self.refresh(port, vl);
        self.packet_hops += 1;
        let release = Event::TxDone {
            port,
            release: p.in_port,
            vl: p.in_vl,
            blocks: p.blocks,
        };
        self.schedule(TX_DONE, port, release);
        let peer = self.ports[port as usize].peer;
        self.schedule(ARRIVE, peer, Event::Arrive { port: peer, packet });
    }

    /// Pushes `event` for `port` at the delay of `class`: into this floor's queue, or for a
    /// port of another partition into the outbox, an arrival with its packet.
    fn schedule(&mut self, class: usize, port: u32, event: Event) {
        let number = if PARTITIONED {
            PROVISIONAL | self.queue.pushed
        } else {
            self.queue.pushed
        };
        self.queue.pushed += 1;
        let rank = u128::from(self.now + self.queue.delays[class]) << 64 | u128::from(number);
        if !PARTITIONED || self.owner[port as usize] == self.me {
            self.queue.fifos[class].push_back((rank, event));
            return;
        }
        let packet = match event {
            Event::Arrive { packet, .. } => {
                self.free.push(packet);
                Some(self.packets[packet as usize])
            }
            _ => None,
        };
        self.outbox[usize::from(self.owner[port as usize])].push(parallel::Crossing {
            class,
            rank,
            event,
            packet,
        });
    }

    fn release(&mut self, port: u32, vl: u8, blocks: u16) {
        self.lanes[lane(port, vl)].occupancy -= u32::from(blocks);
        let sender = self.ports[port as usize].peer;
        let credit = Event::Credit {
            port: sender,
            vl,
            blocks,
        };
        self.schedule(CREDIT, sender, credit);
    }

    fn arrive(&mut self, port: u32, packet: u32) {
        let info = self.ports[port as usize];
        let p = self.packets[packet as usize];
        self.lanes[lane(port, p.vl)].occupancy += u32::from(p.blocks);
        let node = &self.network.nodes[info.node as usize];
        let out = match node.kind {
            NodeKind::Host => None,
            NodeKind::Switch => node.route(p.dlid),
        };
        let Some(out) = out else {
            self.release(port, p.vl, p.blocks);
            self.delivered += 1;
            self.latency_ps += self.now - p.created;
            let at = (self.now << 20 | u64::from(port)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            self.fingerprint = self.fingerprint.wrapping_add(at.rotate_left(29));
            self.free.push(packet);
            return;
        };
        let out_port = self.node_base[info.node as usize] + u32::from(out);
        let vl = node.sl2vl(info.num, out).0[usize::from(p.sl)].get();
        let pk = &mut self.packets[packet as usize];
        (pk.in_port, pk.in_vl) = (port, pk.vl);
        self.enqueue(lane(out_port, vl), packet);
        self.refresh(out_port, vl);
        self.try_send(out_port);
    }

    /// Time 0: each port of this floor notes which VLs can send, and sends, in port order as
    /// the one-core run starts them; partitioned, each port's start is an event of its own
    /// (ranked by port number), as pushes are numbered by the event that made them.
    fn start(&mut self) {
        for port in 0..self.ports.len() as u32 {
            if self.owner[port as usize] != self.me {
                continue;
            }
            let pushed = self.queue.pushed;
            for vl in 0..VLS as u8 {
                self.refresh(port, vl);
            }
            self.try_send(port);
            self.log_pushes(u128::from(port), pushed);
        }
    }

    /// Partitioned, logs an event of rank `rank` that pushed any event (the others leave the
    /// numbering as it is), from the window's push `pushed` on.
    fn log_pushes(&mut self, rank: u128, pushed: u64) {
        if PARTITIONED && self.queue.pushed != pushed {
            self.log.push((rank, pushed as u32));
        }
    }

    fn run(&mut self, until: u64) {
        while let Some((rank, event)) = self.queue.pop_until(until) {
            self.now = (rank >> 64) as u64;
            self.events += 1;
            let pushed = self.queue.pushed;
            match event {
                Event::TxDone {
                    port,
                    release,
                    vl,
                    blocks,
                } => {
                    if release != NONE {
                        self.release(release, vl, blocks);
                    }
                    self.ports[port as usize].busy = false;
                    self.try_send(port);
                }
                Event::Arrive { port, packet } => self.arrive(port, packet),
                Event::Credit { port, vl, blocks } => {
                    self.lanes[lane(port, vl)].credits += u32::from(blocks);
                    self.refresh(port, vl);
                    self.try_send(port);
                }
            }
            self.log_pushes(rank, pushed);
        }
    }
}

/// Runs the floor for `duration_ps` in `partitions` partitions, a thread each (see
/// [`parallel`]), and prints what the bench prints of a run.
pub fn run(network: &Network, flows: &[Flow], duration_ps: u64, partitions: usize) {
    let link: LinkParams = network.links[0].params;
    assert!(
        network.links.iter().all(|l| l.params == link),
        "the floor takes one kind of link"
    );
    let payload = flows[0].payload;
    assert!(
        flows
            .iter()
            .all(|f| f.payload == payload && f.rate_bps == 0 && f.start_ps == 0 && !f.management),
        "the floor takes greedy data flows of one size, all started at 0"
    );
    let blocks = wire_blocks(payload) as u16;
    let mut node_base = Vec::new();
    let mut ports = Vec::new();
    let mut arbiters = Vec::new();
    for (n, node) in network.nodes.iter().enumerate() {
        node_base.push(ports.len() as u32);
        for num in 0..=node.num_ports {
            ports.push(Port {
                peer: NONE,
                node: n as u32,
                num,
                busy: false,
                ready: 0,
            });
            let arbitration = &node.arbitration[usize::from(num)];
            assert!(
                arbitration.high.iter().all(|e| e.weight == 0),
                "the floor takes no high-priority table"
            );
            let entries: Vec<(u8, u32)> = arbitration
                .low
                .iter()
                .filter(|e| e.vl < 15)
                .map(|e| (e.vl, u32::from(e.weight)))
                .collect();
            let senders = entries
                .iter()
                .filter(|(_, weight)| *weight > 0)
                .fold(0, |mask, (vl, _)| mask | 1 << vl);
            arbiters.push(Arbiter {
                entries,
                senders,
                cursor: 0,
                used: 0,
            });
        }
    }
    for l in &network.links {
        let a = node_base[l.a.node] + u32::from(l.a.port);
        let b = node_base[l.b.node] + u32::from(l.b.port);
        ports[a as usize].peer = b;
        ports[b as usize].peer = a;
    }
    let empty = Lane {
        credits: link.vl_buffer_blocks,
        occupancy: 0,
        first: NONE,
        last: NONE,
        first_blocks: 0,
        greedy: 0,
    };
    let mut lanes = vec![empty; ports.len() * VLS];
    let mut rotations = vec![(Vec::new(), 0); lanes.len()];
    for f in flows {
        let port = node_base[f.src.node] + u32::from(f.src.port);
        let node = &network.nodes[f.src.node];
        let vl = node.sl2vl(0, f.src.port).0[usize::from(f.sl.get())].get();
        let lane = lane(port, vl);
        rotations[lane].0.push(Turn {
            dlid: f.dlid,
            sl: f.sl.get(),
        });
        lanes[lane].greedy = blocks;
    }
    let serialization = link.serialization_ps(u32::from(blocks));
    let queue = Queue {
        delays: [
            serialization,
            serialization + link.propagation_ps,
            link.credit_latency_ps + link.propagation_ps,
        ],
        fifos: Default::default(),
        pushed: 0,
    };
    let owner = parallel::partition(network, &node_base, ports.len(), partitions);
    let start = Start {
        network,
        owner: &owner,
        node_base,
        ports,
        lanes,
        rotations,
        arbiters,
        queue,
        blocks,
    };
    let started = Instant::now();
    let totals = if partitions == 1 {
        let mut floor = Floor::<false>::new(start, 0, 1);
        floor.start();
        floor.run(duration_ps);
        Totals::of(&[floor])
    } else {
        Totals::of(&parallel::run(&start, partitions, duration_ps))
    };
    let run_s = started.elapsed().as_secs_f64();
    let Totals {
        events,
        packet_hops,
        delivered,
        latency_ps,
        fingerprint,
    } = totals;
    println!(
        "floor run: {run_s:.3} s, {events} events ({:.2} M events/s), {packet_hops} packet-hops ({:.2} M packet-hops/s), {delivered} delivered, mean latency {} ns, fingerprint {fingerprint:016x}, threads {partitions}",
        events as f64 / run_s / 1e6,
        packet_hops as f64 / run_s / 1e6,
        latency_ps / delivered.max(1) / 1000,
    );
}

/// The fabric at time 0, before any port starts: what every floor of a run starts from.
#[derive(Clone)]
struct Start<'n> {
    network: &'n Network,
    owner: &'n [u8],
    node_base: Vec<u32>,
    ports: Vec<Port>,
    lanes: Vec<Lane>,
    rotations: Vec<(Vec<Turn>, usize)>,
    arbiters: Vec<Arbiter>,
    queue: Queue,
    blocks: u16,
}

impl<'n, const PARTITIONED: bool> Floor<'n, PARTITIONED> {
    /// The floor of partition `me` of `partitions` (the whole run's, unpartitioned).
    fn new(start: Start<'n>, me: u8, partitions: usize) -> Self {
        let Start {
            network,
            owner,
            node_base,
            ports,
            lanes,
            rotations,
            arbiters,
            queue,
            blocks,
        } = start;
        Floor {
            network,
            owner,
            me,
            log: Vec::new(),
            outbox: vec![Vec::new(); if PARTITIONED { partitions } else { 0 }],
            node_base,
            ports,
            lanes,
            rotations,
            arbiters,
            packets: Vec::new(),
            free: Vec::new(),
            queue,
            blocks,
            now: 0,
            events: 0,
            packet_hops: 0,
            delivered: 0,
            latency_ps: 0,
            fingerprint: 0,
        }
    }
}

/// What the floors of a run counted, together.
struct Totals {
    events: u64,
    packet_hops: u64,
    delivered: u64,
    latency_ps: u64,
    fingerprint: u64,
}

impl Totals {
    fn of<const PARTITIONED: bool>(floors: &[Floor<PARTITIONED>]) -> Totals {
        let total = |count: &dyn Fn(&Floor<PARTITIONED>) -> u64| {
            floors.iter().map(count).fold(0u64, u64::wrapping_add)
        };
        Totals {
            events: total(&|f| f.events),
            packet_hops: total(&|f| f.packet_hops),
            delivered: total(&|f| f.delivered),
            latency_ps: total(&|f| f.latency_ps),
            fingerprint: total(&|f| f.fingerprint),
        }
    }
}
