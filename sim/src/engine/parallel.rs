//! A run in partitions, a thread each, with the report of one core (see [`crate::window`]).

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::network::{Flow, Network, NetworkError};
use crate::ranks::{self, Handed, Ranks};
use crate::report::{Histogram, Report};
use crate::window::{self, PROVISIONAL, Slot, Spent, Windows};

use super::{Buffer, Event, FlowHot, Lane, NO_PORT, Packet, SimOptions, Simulation};

/// What makes a [`Simulation`] one partition of a run.
#[derive(Debug)]
pub(super) struct Split {
    me: u8,
    /// The partition of each port.
    owner: Vec<u8>,
    /// Each event taken in this window that pushed any (the others leave the numbering as it
    /// is): its rank and the pushes before it.
    log: Vec<(u128, u32)>,
    /// This window's pushes for other partitions' ports, by partition.
    outboxes: Vec<Vec<Crossing>>,
    /// The whole run's push number of each of this partition's scheduled events (a flow's
    /// start or stop): its place in the whole schedule, which comes before every push.
    schedule_numbers: Vec<u32>,
    /// Events pushed for other partitions' ports so far.
    crossings: u64,
}

impl Split {
    /// The push number of this partition's scheduled event `index`.
    pub(super) fn scheduled_number(&self, index: usize) -> u64 {
        u64::from(self.schedule_numbers[index])
    }

    /// Logs an event of rank `rank` taken when the queue's next number was `next`.
    pub(super) fn log(&mut self, rank: u128, next: u64) {
        self.log.push((rank, (next - PROVISIONAL) as u32));
    }
}

/// An event pushed for another partition's port, `delay` before its time, with the packet of
/// an arrival (it leaves this partition's packets).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Crossing {
    delay: u64,
    rank: u128,
    event: Event,
    packet: Option<Packet>,
}

impl Simulation<'_> {
    /// Pushes `event`, due at `time`, for `peer`, another partition's port: numbered as if
    /// queued here, into that partition's outbox.
    pub(super) fn cross(&mut self, peer: u32, time: u64, event: Event) {
        let number = self.clock.queue.take_number();
        let packet = match event {
            Event::Arrive { packet, .. } => {
                self.fabric.free.push(packet);
                Some(self.fabric.packets[packet as usize])
            }
            _ => None,
        };
        let split = self.split.as_mut().expect("only a partition has far peers");
        split.crossings += 1;
        split.outboxes[usize::from(split.owner[peer as usize])].push(Crossing {
            delay: time - self.clock.now,
            rank: u128::from(time) << 64 | u128::from(number),
            event,
            packet,
        });
    }
}

impl window::Partition for Simulation<'_> {
    type Crossing = Crossing;

    fn run(&mut self, until: u64) {
        self.run_until(until);
    }

    fn hand_over(&mut self, slot: &mut Slot<Crossing>) {
        let pushes = (self.clock.queue.next_number() - PROVISIONAL) as u32;
        self.clock.queue.number_from(PROVISIONAL);
        let split = self.split.as_mut().expect("a partition");
        slot.take_window(pushes, &mut split.log, &mut split.outboxes);
    }

    fn take_back(&mut self, me: usize, slots: &[&Slot<Crossing>], numbers: &[Vec<u64>]) {
        let mut taken = Vec::new();
        for (slot, numbers) in slots.iter().zip(numbers) {
            for crossing in &slot.outboxes[me] {
                let event = match (crossing.event, crossing.packet) {
                    (Event::Arrive { port, .. }, Some(packet)) => Event::Arrive {
                        port,
                        packet: self.store_packet(packet),
                    },
                    (event, _) => event,
                };
                let rank = window::resolve(crossing.rank, numbers);
                taken.push((crossing.delay, rank, event));
            }
        }
        let mine = &numbers[me];
        let number = |pushed: u64| mine[(pushed - PROVISIONAL) as usize];
        self.clock.queue.end_window(PROVISIONAL, number, taken);
    }
}

/// A run of an InfiniBand fabric in partitions of its nodes, a thread each, whose report is
/// the one [`Simulation`] gives, byte for byte. What it costs: at each window's end every
/// partition merges every partition's events that pushed something, and each holds its own
/// copy of the flows' state and of what a port's events read besides its lanes (its own
/// ports' lanes only, but the first, in which the report is put together).
#[derive(Debug)]
pub struct Parallel<'n> {
    /// This process's partitions.
    parts: Vec<Simulation<'n>>,
    windows: Windows<Crossing>,
}

/// What every process of a run across processes must agree on before it starts: made of the
/// inputs, so that a process started with other files or options is refused, not merged.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Fingerprint {
    version: String,
    nodes: usize,
    links: usize,
    flows: usize,
    duration_ps: u64,
    seed: u64,
    timeline_intervals: usize,
    per_rank: usize,
    scheduled: usize,
    lookahead: u64,
}

impl<'n> Parallel<'n> {
    /// Sets up the run in `threads` partitions (at most 255). Refused for an Ethernet run (its
    /// pause frames and DCQCN are not split), for one with congestion control (its BECNs are
    /// not), and for links whose arrivals or credit returns
    /// take no time (a window would be as short).
    pub fn new(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        threads: usize,
    ) -> Result<Self, NetworkError> {
        Self::set_up(network, flows, options, threads, None)
    }

    /// Sets up the partitions of `ranks`' processes (`threads` each, 255 in all at most) that
    /// are this one's. Every process makes the same calls, with the same inputs.
    fn set_up(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        threads: usize,
        mut ranks: Option<Box<dyn Ranks>>,
    ) -> Result<Self, NetworkError> {
        if network.ethernet.is_some() {
            return Err(NetworkError::SplitEthernet);
        }
        if network.congestion_control.is_some() {
            return Err(NetworkError::SplitCongestionControl);
        }
        let (rank, size) = ranks.as_ref().map_or((0, 1), |r| (r.rank(), r.size()));
        let per_rank = threads.max(1);
        let k = per_rank.saturating_mul(size);
        if k > 255 {
            return Err(NetworkError::TooManyPartitions { partitions: k });
        }
        let node_owner = window::partition_nodes(network, k);
        // Each partition set up on its own thread: a run of many flows takes a while.
        let node_owner = &node_owner;
        let mine = (rank * per_rank) as u8..((rank + 1) * per_rank) as u8;
        let built = std::thread::scope(|scope| {
            let threads: Vec<_> = mine
                .map(|me| {
                    scope.spawn(move || {
                        // The first partition has every port's lanes, as the report is put
                        // together in it; the others their own ports' only.
                        let kept = |node: usize| me == 0 || node_owner[node] == me;
                        let sim = Simulation::with_lanes_of(network, flows, options, &kept)?;
                        // The whole schedule's events, numbered before the first push.
                        let scheduled = sim.clock.schedule.len();
                        Ok((sim.into_partition(me, k, node_owner), scheduled))
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("a partition's set-up"))
                .collect::<Result<Vec<_>, NetworkError>>()
        })?;
        let scheduled = built[0].1;
        let parts: Vec<Simulation> = built.into_iter().map(|(part, _)| part).collect();
        let lookahead = lookahead(&parts[0]).ok_or(NetworkError::NoLookahead)?;
        if let Some(ranks) = ranks.as_deref_mut() {
            let fingerprint = Fingerprint {
                version: env!("CARGO_PKG_VERSION").to_string(),
                nodes: network.nodes.len(),
                links: network.links.len(),
                flows: flows.len(),
                duration_ps: options.duration_ps,
                seed: options.seed,
                timeline_intervals: options.timeline_intervals,
                per_rank,
                scheduled,
                lookahead,
            };
            ranks::check_agreement(ranks, &fingerprint)
                .map_err(|rank| NetworkError::RanksDisagree { rank })?;
        }
        Ok(Parallel {
            parts,
            windows: Windows::new(per_rank, ranks, lookahead, scheduled as u64),
        })
    }

    /// Processes every event up to `until` (at most the run's duration).
    pub fn run_until(&mut self, until: u64) {
        let until = until.min(self.parts[0].layout.options.duration_ps);
        self.windows.run(&mut self.parts, until);
    }

    /// The current simulated time.
    pub fn now_ps(&self) -> u64 {
        self.parts[0].now_ps()
    }

    /// The events this process's partitions handled so far.
    pub fn events(&self) -> u64 {
        self.parts.iter().map(Simulation::events).sum()
    }

    /// Times where the threads' time goes on `clock` from now on ([`WindowCost::spent`]).
    pub fn time_with(&mut self, clock: fn() -> Instant) {
        self.windows.time_with(clock);
    }

    /// What cutting the run into windows cost this process so far.
    pub fn window_cost(&self) -> WindowCost {
        let (windows, window_ps) = self.windows.ended();
        let crossings = self.parts.iter().filter_map(|part| part.split.as_ref());
        let (process, processes) = self.windows.process();
        WindowCost {
            process,
            processes,
            windows,
            window_ps,
            partitions: self.parts.len(),
            events: self.events(),
            crossings: crossings.map(|split| split.crossings).sum(),
            spent: self.windows.spent(),
            handed: self.windows.handed(),
        }
    }

    /// Runs to the end (if not there yet) and reports.
    pub fn finish(self) -> Report {
        self.gather()
            .expect("a run in one process reports in that process")
    }

    /// Runs to the end (if not there yet); the first process puts every partition's counts
    /// together in the first partition and reports, the others hand theirs over.
    fn gather(mut self) -> Option<Report> {
        self.run_until(u64::MAX);
        for part in &mut self.parts {
            part.close();
        }
        let mut parts = self.parts.into_iter().peekable();
        let whole = parts.next_if(|part| part.partition() == 0);
        let mut owned: Vec<Owned> = parts.map(Simulation::owned).collect();
        if let Some(ranks) = self.windows.ranks() {
            // The first process keeps its own partitions' counts as they are.
            let mine = (ranks.rank() > 0).then(|| ranks::encode(&owned));
            let all = ranks.gather(mine.as_deref().unwrap_or_default())?;
            let others = all[1..].iter();
            owned.extend(others.flat_map(|bytes| ranks::decode::<Vec<Owned>>(bytes)));
        }
        let mut whole = whole.expect("the first process holds the first partition");
        for owned in owned {
            whole.take_owned(owned);
        }
        whole.split = None;
        Some(whole.report())
    }
}

/// A run of an InfiniBand fabric across processes (MPI's ranks, say) and, in each, across
/// threads: [`Parallel`]'s partitions, some in each process. The first process writes the
/// report, byte for byte the one [`Simulation`] gives.
#[derive(Debug)]
pub struct Ranked<'n>(Parallel<'n>);

impl<'n> Ranked<'n> {
    /// Sets up this process's `threads` partitions of a run across `ranks`' processes, each of
    /// which makes the same calls with the same inputs. Refused as [`Parallel::new`] refuses,
    /// and when a process was started on other inputs ([`NetworkError::RanksDisagree`]).
    pub fn new(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        threads: usize,
        ranks: Box<dyn Ranks>,
    ) -> Result<Self, NetworkError> {
        Parallel::set_up(network, flows, options, threads, Some(ranks)).map(Ranked)
    }

    /// Processes every event up to `until` (at most the run's duration).
    pub fn run_until(&mut self, until: u64) {
        self.0.run_until(until);
    }

    /// The current simulated time.
    pub fn now_ps(&self) -> u64 {
        self.0.now_ps()
    }

    /// The events this process's partitions handled so far.
    pub fn events(&self) -> u64 {
        self.0.events()
    }

    /// Times where the threads' time goes on `clock` from now on ([`WindowCost::spent`]).
    pub fn time_with(&mut self, clock: fn() -> Instant) {
        self.0.time_with(clock);
    }

    /// What cutting the run into windows cost this process so far.
    pub fn window_cost(&self) -> WindowCost {
        self.0.window_cost()
    }

    /// Runs to the end (if not there yet); the report on the first process, `None` on the
    /// others.
    pub fn finish(self) -> Option<Report> {
        self.0.gather()
    }
}

/// What cutting a run into windows cost one process: the figures to judge a partition and a
/// window length by, apart from the report (which is the one-core report).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowCost {
    /// Which process of how many.
    pub process: usize,
    pub processes: usize,
    /// Windows ended, and their length in picoseconds.
    pub windows: usize,
    pub window_ps: u64,
    /// This process's partitions (a thread each), their events, and the events they pushed for
    /// another partition's port.
    pub partitions: usize,
    pub events: u64,
    pub crossings: u64,
    /// Where the threads' time went, summed over them: all zero unless the caller gave a
    /// clock (`time_with`).
    pub spent: Spent,
    /// What this process handed the other processes of the run (none on threads alone).
    pub handed: Handed,
}

/// A run on one core ([`Simulation`]) or on several ([`Parallel`]), as asked.
#[derive(Debug)]
pub enum Run<'n> {
    /// Boxed, as a simulation's state is five times a [`Parallel`]'s.
    One(Box<Simulation<'n>>),
    Split(Parallel<'n>),
}

impl<'n> Run<'n> {
    /// A run on `threads` cores: one partition each, or a plain [`Simulation`] for one.
    pub fn new(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        threads: usize,
    ) -> Result<Self, NetworkError> {
        Ok(if threads > 1 {
            Run::Split(Parallel::new(network, flows, options, threads)?)
        } else {
            Run::One(Box::new(Simulation::new(network, flows, options)?))
        })
    }

    /// Processes every event up to `until` (at most the run's duration).
    pub fn run_until(&mut self, until: u64) {
        match self {
            Run::One(sim) => sim.run_until(until),
            Run::Split(sim) => sim.run_until(until),
        }
    }

    /// The current simulated time.
    pub fn now_ps(&self) -> u64 {
        match self {
            Run::One(sim) => sim.now_ps(),
            Run::Split(sim) => sim.now_ps(),
        }
    }

    /// The events handled so far.
    pub fn events(&self) -> u64 {
        match self {
            Run::One(sim) => sim.events(),
            Run::Split(sim) => sim.events(),
        }
    }

    /// Times where the threads' time goes on `clock` from now on, when the run is split.
    pub fn time_with(&mut self, clock: fn() -> Instant) {
        if let Run::Split(sim) = self {
            sim.time_with(clock);
        }
    }

    /// What cutting the run into windows cost so far; `None` on one core.
    pub fn window_cost(&self) -> Option<WindowCost> {
        match self {
            Run::One(_) => None,
            Run::Split(sim) => Some(sim.window_cost()),
        }
    }

    /// Runs to the end (if not there yet) and reports.
    pub fn finish(self) -> Report {
        match self {
            Run::One(sim) => sim.finish(),
            Run::Split(sim) => sim.finish(),
        }
    }
}

impl<'n> Simulation<'n> {
    /// This run (not started) as partition `me` of `k`, whose nodes' partitions are
    /// `node_owner`: its ports note which peers are another's, and it keeps the schedule's
    /// events of its own ports, each with its place in the whole schedule.
    fn into_partition(mut self, me: u8, k: usize, node_owner: &[u8]) -> Simulation<'n> {
        let owner: Vec<u8> = self
            .fabric
            .states
            .iter()
            .map(|s| node_owner[s.node as usize])
            .collect();
        for (port, state) in self.fabric.states.iter_mut().enumerate() {
            state.far =
                owner[port] == me && owner.get(state.peer as usize).is_some_and(|&o| o != me);
        }
        let source = |event: &Event| match *event {
            Event::Join { port, .. } | Event::Stop { port, .. } => port,
            Event::Start { flow } => self.sources.flows[flow as usize].port,
            _ => unreachable!("an InfiniBand run schedules only flows' starts and stops"),
        };
        let (schedule, schedule_numbers): (Vec<(u64, Event)>, Vec<u32>) = (0u32..)
            .zip(&self.clock.schedule)
            .filter(|(_, (_, event))| owner[source(event) as usize] == me)
            .map(|(number, &entry)| (entry, number))
            .unzip();
        self.clock.schedule = schedule;
        self.clock.queue.number_from(PROVISIONAL);
        self.watch = None;
        self.split = Some(Box::new(Split {
            me,
            owner,
            log: Vec::new(),
            outboxes: (0..k).map(|_| Vec::new()).collect(),
            schedule_numbers,
            crossings: 0,
        }));
        self
    }

    /// Which partition this is (0 for a run in one piece).
    fn partition(&self) -> u8 {
        self.split.as_ref().map_or(0, |split| split.me)
    }

    /// What this closed partition owns of the report's counts: its ports' lanes, waits and
    /// buffers, its flows' packets sent, and every count that adds up.
    fn owned(self) -> Owned {
        let split = self.split.as_ref().expect("a partition");
        let lanes = (0u32..)
            .zip(&self.fabric.states)
            .filter(|(port, _)| split.owner[*port as usize] == split.me)
            .map(|(port, state)| {
                let lanes = state.lanes().map(|lane| OwnedLane {
                    lane: self.fabric.lanes[lane],
                    wait: self.counts.waits[lane],
                    buffer: self.counts.buffers[lane],
                    carried: self.counts.carried.get(&lane).copied(),
                });
                (port, lanes.collect())
            })
            .collect();
        let hot = (0u32..)
            .zip(&self.sources.flows)
            .filter(|(_, flow)| split.owner[flow.port as usize] == split.me)
            .map(|(f, _)| (f, self.sources.hot[f as usize]))
            .collect();
        let latency = (0u32..)
            .zip(&self.counts.tallies)
            .filter(|(_, tally)| tally.latency.count() > 0)
            .map(|(f, tally)| (f, tally.latency.clone()))
            .collect();
        let flow_drops = (0u32..)
            .zip(&self.counts.flow_drops)
            .filter(|(_, drops)| **drops > 0)
            .map(|(f, &drops)| (f, drops))
            .collect();
        Owned {
            lanes,
            hot,
            latency,
            flow_drops,
            timeline: self.counts.timeline,
            dropped: self.counts.dropped,
            events: self.clock.events,
            packet_hops: self.counts.packet_hops,
        }
    }

    /// Takes in what another closed partition of the run owns ([`Simulation::owned`]).
    fn take_owned(&mut self, owned: Owned) {
        for (port, lanes) in owned.lanes {
            for (lane, theirs) in self.fabric.states[port as usize].lanes().zip(lanes) {
                self.fabric.lanes[lane] = theirs.lane;
                self.counts.waits[lane] = theirs.wait;
                self.counts.buffers[lane] = theirs.buffer;
                if let Some(carried) = theirs.carried {
                    self.counts.carried.insert(lane, carried);
                }
            }
        }
        for (f, hot) in owned.hot {
            self.sources.hot[f as usize] = hot;
        }
        for (f, latency) in owned.latency {
            self.counts.tallies[f as usize].latency.merge(&latency);
        }
        for (f, drops) in owned.flow_drops {
            self.counts.flow_drops[f as usize] += drops;
        }
        for (mine, theirs) in self.counts.timeline.iter_mut().zip(&owned.timeline) {
            *mine += theirs;
        }
        self.counts.dropped.extend(owned.dropped);
        self.clock.events += owned.events;
        self.counts.packet_hops += owned.packet_hops;
    }
}

/// What a closed partition owns of the report's counts, to be put together in the first
/// partition (across processes as bytes). Counts that stayed 0 are left out.
#[derive(Debug, Serialize, Deserialize)]
struct Owned {
    /// Per port it owns, each lane's state and counts.
    lanes: Vec<(u32, Vec<OwnedLane>)>,
    /// Per flow it sources, the flow's packets sent.
    hot: Vec<(u32, FlowHot)>,
    /// Per flow it delivered to, the latencies.
    latency: Vec<(u32, Histogram)>,
    flow_drops: Vec<(u32, u64)>,
    timeline: Vec<u64>,
    dropped: BTreeMap<(u32, u8), u64>,
    events: u64,
    packet_hops: u64,
}

/// One lane a partition owns, as [`Owned`] carries it.
#[derive(Debug, Serialize, Deserialize)]
struct OwnedLane {
    lane: Lane,
    wait: u64,
    buffer: Buffer,
    carried: Option<i64>,
}

/// The shortest time from an event at a port to an event it pushes for a peer in another
/// partition: an arrival (the smallest packet's wire time plus propagation) or a credit return,
/// over the links between partitions (`sim` is a partition of the run). `None` if that is no
/// time: the run cannot be cut into windows.
fn lookahead(sim: &Simulation) -> Option<u64> {
    let owner = &sim.split.as_ref().expect("a partition").owner;
    let smallest = sim
        .sources
        .flows
        .iter()
        .map(|f| f.blocks)
        .min()
        .unwrap_or(1) as usize;
    let shortest = sim
        .fabric
        .states
        .iter()
        .zip(owner)
        .filter(|&(state, &mine)| state.peer != NO_PORT && owner[state.peer as usize] != mine)
        .map(|(state, _)| {
            let kind = &sim.layout.kinds[usize::from(state.kind)];
            let wire = kind.wire_ps[smallest.min(kind.wire_ps.len() - 1)];
            (wire + kind.propagation_ps).min(kind.credit_return_ps)
        })
        .min()
        .unwrap_or(u64::MAX);
    (shortest > 0).then_some(shortest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::{Tables, TopologyHosts, build_network};
    use crate::engine::simulate;
    use crate::traffic;
    use ibqos_fabric::Topology;
    use ibqos_fabric::generate;
    use ibqos_fabric::netfile::parse_net_file;
    use ibqos_qos::policy::setup::SetupTables;
    use proptest::prelude::*;

    /// Four VLs with a high-priority table and a high limit.
    const CONF: &str = "qos TRUE\nqos_max_vls 4\nqos_high_limit 2\nqos_vlarb_high 2:32,3:0\n\
        qos_vlarb_low 0:64,1:192,3:1\nqos_sl2vl 0,1,2,3,0,1,2,3,0,1,2,3,0,1,2,3\n";

    /// Every kind of source: greedy permutations (one starting and stopping mid-run),
    /// rate-limited incast, greedy all-to-all among five hosts, a management flow; small
    /// buffers, so that credits run out.
    const TRAFFIC: &str = r#"
duration_us = 60
[link]
speed = "EDR"
propagation_ns = 7
vl_buffer_bytes = 16384
credit_latency_ns = 60
[[pattern]]
kind = "permutation"
sl = 0
payload = 4096
[[pattern]]
kind = "permutation"
sl = 1
payload = 2048
start_us = 10
stop_us = 40
[[pattern]]
kind = "incast"
dst = "H0_1"
sl = 2
payload = 256
rate_gbps = 2
[[pattern]]
kind = "all-to-all"
nodes = ["H0_0", "H0_1", "H1_0", "H1_1", "H2_0"]
sl = 3
payload = 512
[[flow]]
name = "smp"
src = "H1_1"
dst = "H0_2"
payload = 256
management = true
rate_gbps = 1
"#;

    /// The network of fat-tree-16 (6 switches, 16 hosts) and the flows of [`TRAFFIC`].
    fn fat_tree_16(seed: u64) -> (Network, Vec<Flow>, SimOptions) {
        let net = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fabric/data/fat-tree-16.net"
        );
        let topo = parse_net_file(std::path::Path::new(net))
            .expect("fat-tree-16.net")
            .topology;
        run_on(topo, TRAFFIC, seed)
    }

    /// Greedy permutation and all-to-all among every host, with small buffers.
    const EVERY_HOST: &str = r#"
duration_us = 30
[link]
speed = "EDR"
propagation_ns = 7
vl_buffer_bytes = 16384
credit_latency_ns = 60
[[pattern]]
kind = "permutation"
sl = 0
payload = 4096
[[pattern]]
kind = "all-to-all"
sl = 1
payload = 512
"#;

    /// The network of `topo` with the tables of [`CONF`], and the flows of `traffic`.
    fn run_on(mut topo: Topology, traffic: &str, seed: u64) -> (Network, Vec<Flow>, SimOptions) {
        let loaded =
            ibqos_opensm::load_bytes("t.conf", CONF.as_bytes(), ibqos_opensm::Format::OpenSmConf)
                .expect("configuration");
        let traffic = traffic::parse("t.toml", traffic.as_bytes()).expect("traffic");
        let tables = Tables::Planned {
            qos: &loaded.settings.qos,
            setup: &SetupTables::default(),
            max_op_vls: None,
        };
        let network = build_network(&mut topo, tables, &traffic).expect("network");
        let flows = traffic.flows(&TopologyHosts(&topo), seed).expect("flows");
        let options = SimOptions {
            duration_ps: traffic.duration_ps,
            seed,
            arbiter: traffic.arbiter,
            timeline_intervals: 7,
        };
        (network, flows, options)
    }

    /// A three-level fat tree of 4 pods of 4 switches and 4 hosts, under 4 cores, with the
    /// flows of [`EVERY_HOST`].
    fn fat_tree3(seed: u64) -> (Network, Vec<Flow>, SimOptions) {
        let topo = generate::fat_tree3(4, 4, 2).expect("a fat tree");
        run_on(topo, EVERY_HOST, seed)
    }

    /// On a three-level fat tree, pods go whole to a partition, as many hosts in each: only
    /// the links to the cores cross partitions.
    #[test]
    fn pods_stay_whole_and_only_links_to_cores_cross() {
        let (network, _, _) = fat_tree3(0);
        let owner = window::partition_nodes(&network, 2);
        let name = |n: usize| network.nodes[n].name.as_str();
        for link in &network.links {
            let (a, b) = (link.a.node, link.b.node);
            let to_core = name(a).starts_with('C') || name(b).starts_with('C');
            assert!(
                to_core || owner[a] == owner[b],
                "{} and {} are in partitions {} and {}",
                name(a),
                name(b),
                owner[a],
                owner[b]
            );
        }
        let hosts = |p: u8| {
            (0..network.nodes.len())
                .filter(|&n| name(n).starts_with('H') && owner[n] == p)
                .count()
        };
        assert_eq!((hosts(0), hosts(1)), (8, 8));
    }

    /// A window is as long as the links that cross partitions allow: links inside one may take
    /// no time at all.
    #[test]
    fn windows_are_as_long_as_the_links_between_partitions_allow() {
        let (mut network, flows, options) = fat_tree3(0);
        let owner = window::partition_nodes(&network, 2);
        for link in &mut network.links {
            if owner[link.a.node] == owner[link.b.node] {
                (link.params.propagation_ps, link.params.credit_latency_ps) = (0, 0);
            }
        }
        let one = simulate(&network, &flows, options).expect("simulation");
        let run = Parallel::new(&network, &flows, options, 2).expect("cut links take time");
        assert_eq!(run.finish(), one);
    }

    /// Every partition has its own ports' events to take, and ports whose peer is another's:
    /// a run in partitions that left everything to one would prove nothing.
    #[test]
    fn every_partition_takes_events_and_sends_across() {
        let (network, flows, options) = fat_tree_16(1);
        let mut run = Parallel::new(&network, &flows, options, 3).expect("parallel");
        run.run_until(options.duration_ps);
        for part in &run.parts {
            let split = part.split.as_ref().expect("a partition");
            assert!(
                part.clock.events > 0,
                "partition {} took no event",
                split.me
            );
            let far = (0..)
                .zip(&part.fabric.states)
                .filter(|(port, state)| split.owner[*port as usize] == split.me && state.far);
            assert!(far.count() > 0, "partition {} has no far peer", split.me);
        }
        let mut one = Simulation::new(&network, &flows, options).expect("simulation");
        one.run_until(options.duration_ps);
        assert_eq!(run.events(), one.events());
        // One call: a window end before each window of the run and one after the last.
        let cost = run.window_cost();
        let windows = (options.duration_ps + 1).div_ceil(cost.window_ps) as usize + 1;
        assert_eq!((cost.windows, cost.partitions), (windows, 3));
        assert!(
            0 < cost.crossings && cost.crossings < cost.events,
            "{} crossings of {} events",
            cost.crossings,
            cost.events
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(12))]

        /// The report of a run in 2 to 5 partitions is the report of one core, for any seed
        /// (which draws the permutations and the rate flows' phases), and for a run taken in
        /// steps of any length (as the progress bar takes it).
        #[test]
        fn partitions_report_what_one_core_reports(
            seed in 0u64..1_000,
            threads in 2usize..=5,
            steps in 1u64..=9,
        ) {
            let (network, flows, options) = fat_tree_16(seed);
            let one = simulate(&network, &flows, options).expect("simulation");
            let mut run = Parallel::new(&network, &flows, options, threads).expect("parallel");
            for step in 1..steps {
                run.run_until(options.duration_ps / steps * step);
            }
            prop_assert_eq!(run.finish(), one);
        }
    }

    /// What a rank of [`on_ranks`] ended with: its report (the first rank's alone) and what its
    /// windows cost.
    type RankEnd = (Option<Report>, WindowCost);

    /// Runs `fat_tree_16(seeds[r])` on `seeds.len()` ranks that are threads of this process,
    /// `threads` partitions each, in `steps` calls: what each rank's set-up or finish gave.
    fn on_ranks(seeds: &[u64], threads: usize, steps: u64) -> Vec<Result<RankEnd, NetworkError>> {
        let ranks = crate::ranks::in_process::ranks(seeds.len());
        std::thread::scope(|scope| {
            let handles: Vec<_> = ranks
                .into_iter()
                .zip(seeds)
                .map(|(rank, &seed)| {
                    scope.spawn(move || {
                        let (network, flows, options) = fat_tree_16(seed);
                        let mut run =
                            Ranked::new(&network, &flows, options, threads, Box::new(rank))?;
                        for step in 1..steps {
                            run.run_until(options.duration_ps / steps * step);
                        }
                        run.run_until(options.duration_ps);
                        let cost = run.window_cost();
                        Ok((run.finish(), cost))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a rank"))
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]

        /// The report of a run across 2 or 3 processes of 1 or 2 partitions each is the report
        /// of one core, on the first process alone.
        #[test]
        fn processes_report_what_one_core_reports(
            seed in 0u64..1_000,
            processes in 2usize..=3,
            threads in 1usize..=2,
            steps in 1u64..=5,
        ) {
            let (network, flows, options) = fat_tree_16(seed);
            let one = simulate(&network, &flows, options).expect("simulation");
            let reports: Vec<_> = on_ranks(&vec![seed; processes], threads, steps)
                .into_iter()
                .map(|end| end.map(|(report, _)| report))
                .collect();
            prop_assert_eq!(&reports[0], &Ok(Some(one)));
            for report in &reports[1..] {
                prop_assert_eq!(report, &Ok(None));
            }
        }
    }

    /// Each process hands the others its logs and its crossings, tens of bytes a crossing
    /// (postcard writes its numbers as varints).
    #[test]
    fn each_process_says_what_it_handed_the_others() {
        for end in on_ranks(&[1, 1], 1, 1) {
            let (_, cost) = end.expect("a run");
            let per_crossing = cost.handed.crossing_bytes / cost.crossings.max(1);
            assert!(
                cost.handed.log_bytes > 0 && (8..=64).contains(&per_crossing),
                "{cost:?}"
            );
        }
    }

    #[test]
    fn a_process_started_on_other_inputs_is_refused_by_every_process() {
        for end in on_ranks(&[1, 1, 2], 1, 1) {
            assert_eq!(end.err(), Some(NetworkError::RanksDisagree { rank: 2 }));
        }
    }

    #[test]
    fn links_that_take_no_time_cannot_be_cut_into_windows() {
        let (mut network, flows, options) = fat_tree_16(0);
        for link in &mut network.links {
            (link.params.propagation_ps, link.params.credit_latency_ps) = (0, 0);
        }
        assert_eq!(
            Parallel::new(&network, &flows, options, 2).err(),
            Some(NetworkError::NoLookahead)
        );
    }
}
