//! A run in partitions, a thread each, with the report of one core (see [`crate::window`]).

use crate::network::{Flow, Network, NetworkError};
use crate::report::Report;
use crate::window::{self, PROVISIONAL, Slot, Windows};

use super::{Event, NO_PORT, Packet, SimOptions, Simulation};

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
#[derive(Debug, Clone, Copy)]
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
    parts: Vec<Simulation<'n>>,
    windows: Windows<Crossing>,
}

impl<'n> Parallel<'n> {
    /// Sets up the run in `threads` partitions (1 to 255). Refused for an Ethernet run (its
    /// pause frames and DCQCN are not split), for one with congestion control (its BECNs are
    /// not), and for links whose arrivals or credit returns
    /// take no time (a window would be as short).
    pub fn new(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        threads: usize,
    ) -> Result<Self, NetworkError> {
        if network.ethernet.is_some() {
            return Err(NetworkError::SplitEthernet);
        }
        if network.congestion_control.is_some() {
            return Err(NetworkError::SplitCongestionControl);
        }
        let k = threads.clamp(1, 255);
        let node_owner = window::partition_nodes(network, k);
        // Each partition set up on its own thread: a run of many flows takes a while.
        let node_owner = &node_owner;
        let parts = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..k as u8)
                .map(|me| {
                    scope.spawn(move || {
                        // The first partition has every port's lanes, as the report is put
                        // together in it; the others their own ports' only.
                        let kept = |node: usize| me == 0 || node_owner[node] == me;
                        let sim = Simulation::with_lanes_of(network, flows, options, &kept)?;
                        Ok(sim.into_partition(me, k, node_owner))
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("a partition's set-up"))
                .collect::<Result<Vec<_>, NetworkError>>()
        })?;
        // The whole schedule's events, numbered before the first push.
        let scheduled: usize = parts
            .iter()
            .filter_map(|p| p.split.as_ref())
            .map(|split| split.schedule_numbers.len())
            .sum();
        let lookahead = lookahead(&parts[0]).ok_or(NetworkError::NoLookahead)?;
        Ok(Parallel {
            parts,
            windows: Windows::new(k, lookahead, scheduled as u64),
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

    /// The events handled so far.
    pub fn events(&self) -> u64 {
        self.parts.iter().map(Simulation::events).sum()
    }

    /// Runs to the end (if not there yet) and reports.
    pub fn finish(mut self) -> Report {
        self.run_until(u64::MAX);
        for part in &mut self.parts {
            part.close();
        }
        let mut parts = self.parts.into_iter();
        let mut whole = parts.next().expect("a partition at least");
        for part in parts {
            whole.take_owned(part);
        }
        whole.split = None;
        whole.report()
    }
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
        }));
        self
    }

    /// Takes from `part`, another closed partition of the run, what it owns: its ports'
    /// lanes, waits and buffers (where it has them, in its own order), its flows' packets
    /// sent, and every count that adds up.
    fn take_owned(&mut self, part: Simulation) {
        let split = part.split.as_ref().expect("a partition");
        for (port, state) in part.fabric.states.iter().enumerate() {
            if split.owner[port] != split.me {
                continue;
            }
            for (lane, theirs) in self.fabric.states[port].lanes().zip(state.lanes()) {
                self.fabric.lanes[lane] = part.fabric.lanes[theirs];
                self.counts.waits[lane] = part.counts.waits[theirs];
                self.counts.buffers[lane] = part.counts.buffers[theirs];
                if let Some(&carried) = part.counts.carried.get(&theirs) {
                    self.counts.carried.insert(lane, carried);
                }
            }
        }
        for (f, flow) in self.sources.flows.iter().enumerate() {
            if split.owner[flow.port as usize] == split.me {
                self.sources.hot[f] = part.sources.hot[f];
            }
        }
        for (mine, theirs) in self.counts.tallies.iter_mut().zip(&part.counts.tallies) {
            mine.latency.merge(&theirs.latency);
        }
        for (mine, theirs) in self
            .counts
            .flow_drops
            .iter_mut()
            .zip(&part.counts.flow_drops)
        {
            *mine += theirs;
        }
        for (mine, theirs) in self.counts.timeline.iter_mut().zip(&part.counts.timeline) {
            *mine += theirs;
        }
        self.counts.dropped.extend(part.counts.dropped);
        self.clock.events += part.clock.events;
        self.counts.packet_hops += part.counts.packet_hops;
    }
}

/// The shortest time from an event at a port to an event it pushes for its peer: an arrival
/// (the smallest packet's wire time plus propagation) or a credit return. `None` if that is no
/// time: the run cannot be cut into windows.
fn lookahead(sim: &Simulation) -> Option<u64> {
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
        .filter(|state| state.peer != NO_PORT)
        .map(|state| {
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
        let mut topo = parse_net_file(std::path::Path::new(net))
            .expect("fat-tree-16.net")
            .topology;
        let loaded =
            ibqos_opensm::load_bytes("t.conf", CONF.as_bytes(), ibqos_opensm::Format::OpenSmConf)
                .expect("configuration");
        let traffic = traffic::parse("t.toml", TRAFFIC.as_bytes()).expect("traffic");
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
