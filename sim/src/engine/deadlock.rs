//! The deadlock watch: a credit loop that stopped an InfiniBand fabric, found, proved and
//! named.
//!
//! - **Cheap.** Every [`LOOK_INTERVAL_PS`] of simulated time, between two events, the watch
//!   reads each switch lane: one pass over the lanes, and the event loop does no more work
//!   than without it. A lane is *stuck so far* when its head lacks credits, it sent nothing
//!   and its far buffer did not change since the last look, and its link has nothing on the
//!   wire on its VL, no packet out and no credit back (its credits and the far buffer add up
//!   to the buffer's size, the far buffer not empty).
//! - **Exact.** Stuck so far is not stuck for good: a congested lane may wait that long and go
//!   on. So the watch proves it, reading only the stuck lanes' queues. It keeps the largest
//!   set of them in which every block of each lane's far buffer is held by packets queued in
//!   lanes of the set (so none is leaving now). No lane of such a set can ever send: it needs credits, so one of its
//!   far buffer's packets leaving first, from a lane of the set. A run that is only slow keeps
//!   no such set: some lane at the end of every chain of waits can still send (a host takes
//!   whatever reaches it), and a PFC pause is Ethernet's, where the watch does not run.
//! - **Named.** Each lane of the set waits on lanes of the set, so following its waits from
//!   any lane closes a cycle: the credit loop, channel by channel in the order packets go.
//!
//! The watch runs on one core, on InfiniBand (no credits, no credit loop on Ethernet here).
//! A [`super::Parallel`] run is not watched: its lanes are in its partitions, read together
//! only when the run ends.

use ibqos_fabric::credit_loops::Channel;
use ibqos_fabric::{NodeId, PortRef};
use ibqos_qos::Vl;

use super::{NO_LANES, NO_PACKET, NO_PORT, Simulation};
use crate::infiniband::link::{PS_PER_NS, PS_PER_US};
use crate::network::NodeKind;
use crate::report::Deadlock;

/// Simulated time between two looks of the watch: how soon a credit loop is seen after it
/// closes (at most two looks later), and how often the lanes are read (one pass; the proof,
/// a pass over the stuck lanes' queues, only when some lane is stuck so far).
pub(crate) const LOOK_INTERVAL_PS: u64 = 10 * PS_PER_US;

/// Not a lane of the proof's set.
const OUTSIDE: u32 = u32::MAX;

/// What the watch keeps between its looks.
#[derive(Debug)]
pub(crate) struct Watch {
    /// The time of the next look.
    next_ps: u64,
    /// Per lane, what it was at the last look.
    then: Vec<Mark>,
    /// The credit loop found, which stops the run.
    pub(super) found: Option<Deadlock>,
}

impl Watch {
    /// The watch of a run of `lanes` lanes, before its first look.
    pub(super) fn new(lanes: usize) -> Watch {
        Watch {
            next_ps: LOOK_INTERVAL_PS,
            then: vec![Mark::default(); lanes],
            found: None,
        }
    }
}

/// What a look notes of a lane, to tell at the next whether it moved: its packets sent, and
/// its far buffer's occupancy integral ([`super::Buffer`]), which any packet arriving there
/// or leaving changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Mark {
    sent: u64,
    far: u64,
}

/// A lane of a switch port, as the proof reads it.
#[derive(Debug, Clone, Copy)]
struct SwitchLane {
    port: u32,
    vl: u8,
    lane: usize,
}

impl Simulation<'_> {
    /// The time of the watch's next look, if the run is watched, not stopped, and the look is
    /// due by `until`.
    pub(super) fn look_due(&self, until: u64) -> Option<u64> {
        let until = until.min(self.layout.options.duration_ps);
        self.watch
            .as_ref()
            .filter(|watch| watch.found.is_none() && watch.next_ps <= until)
            .map(|watch| watch.next_ps)
    }

    /// Whether a credit loop stopped the run.
    pub(super) fn deadlocked(&self) -> bool {
        self.watch
            .as_ref()
            .is_some_and(|watch| watch.found.is_some())
    }

    /// The watch's look, now: the lanes stuck so far, and if any, the proof of a loop.
    pub(super) fn look_for_deadlock(&mut self) {
        let stuck = self.stuck_so_far();
        let found = if stuck.is_empty() {
            None
        } else {
            self.credit_loop(&stuck)
        };
        if let Some(watch) = &mut self.watch {
            watch.next_ps += LOOK_INTERVAL_PS;
            watch.found = found;
        }
    }

    /// Every data VL's lane of every switch port this run has lanes for, in lane order.
    fn switch_lanes(&self) -> impl Iterator<Item = SwitchLane> + '_ {
        let nodes = &self.layout.network.nodes;
        (0u32..)
            .zip(&self.fabric.states)
            .filter(move |(_, state)| {
                state.base != NO_LANES && nodes[state.node as usize].kind == NodeKind::Switch
            })
            .flat_map(|(port, state)| {
                (0..state.vls).map(move |vl| SwitchLane {
                    port,
                    vl,
                    lane: state.lane(vl),
                })
            })
    }

    /// The switch lanes whose head lacks credits, that neither sent nor saw their far buffer
    /// change since the last look, and whose link is quiet on their VL with the far buffer
    /// not empty (what the proof asks of a lane by itself); notes each lane for the next look.
    /// A lane of a credit loop is all that from one look after the loop closed. A live lane
    /// rarely is (its far buffer untouched for a whole interval), and then the proof clears
    /// it: the marks only spare the proof, they prove nothing.
    fn stuck_so_far(&mut self) -> Vec<SwitchLane> {
        let lanes: Vec<SwitchLane> = self.switch_lanes().collect();
        let mut stuck = Vec::new();
        for lane in lanes {
            let now = Mark {
                sent: self.fabric.lanes[lane.lane].sent.packets,
                far: self.far_buffer(lane).map_or(0, |buffer| buffer.to_end),
            };
            let Some(watch) = &mut self.watch else {
                break;
            };
            let unmoved = now == std::mem::replace(&mut watch.then[lane.lane], now);
            let starved = self.fabric.states[lane.port as usize].starved & 1 << lane.vl != 0;
            if unmoved && starved && self.quiet_and_full(lane) {
                stuck.push(lane);
            }
        }
        stuck
    }

    /// Whether the lane has a link, nothing is on the wire on its VL of it, no packet out and
    /// no credit back (its credits and the far end's buffer add up to the buffer's size), and
    /// the far buffer holds something. (A packet routed out of an unlinked port waits there
    /// for good, but on no loop.)
    fn quiet_and_full(&self, lane: SwitchLane) -> bool {
        let Some(far) = self.far_buffer(lane).map(|buffer| buffer.occupancy) else {
            return false;
        };
        let credits = self.fabric.lanes[lane.lane].credits;
        let size = self.layout.ports[lane.port as usize].link.vl_buffer_blocks;
        far > 0 && credits + far == size
    }

    /// The receive buffer at the far end of the lane's link, if it has a link.
    fn far_buffer(&self, lane: SwitchLane) -> Option<&super::Buffer> {
        let peer = self.fabric.states[lane.port as usize].peer;
        (peer != NO_PORT).then(|| &self.counts.buffers[self.lane(peer, lane.vl)])
    }

    /// The proof over `stuck` (the module's docs): the lanes that can never send again, and
    /// one credit loop among them; `None` if every one of them can still send.
    fn credit_loop(&self, stuck: &[SwitchLane]) -> Option<Deadlock> {
        // Each stuck lane's index in `stuck`, by lane.
        let mut index = vec![OUTSIDE; self.fabric.lanes.len()];
        for (i, lane) in (0u32..).zip(stuck) {
            index[lane.lane] = i;
        }
        // Per stuck lane, the blocks of its far buffer that packets queued in stuck lanes
        // hold, and those lanes (by index in `stuck`). Only the stuck lanes' queues are read:
        // a lane whose far buffer holds more than they do has a packet in a lane that can
        // still send, or one leaving now.
        let mut held = vec![0u32; stuck.len()];
        let mut waits: Vec<Vec<usize>> = vec![Vec::new(); stuck.len()];
        for (queue, lane) in stuck.iter().enumerate() {
            let mut packet = self.fabric.lanes[lane.lane].first;
            while packet != NO_PACKET {
                let p = &self.fabric.packets[packet as usize];
                // A packet queued at a switch came in by one of its ports, which has a peer.
                let sender = self.fabric.states.get(p.in_port as usize).map(|s| s.peer);
                let i = sender.map_or(OUTSIDE, |sender| index[self.lane(sender, p.in_vl)]);
                if i != OUTSIDE {
                    held[i as usize] += u32::from(p.blocks);
                    waits[i as usize].push(queue);
                }
                packet = p.next;
            }
        }
        for lanes in &mut waits {
            lanes.sort_unstable();
            lanes.dedup();
        }
        // Which stuck lanes can still send, then every lane that waits on one of them, until
        // none is left to take out.
        let mut inside: Vec<bool> = (0..)
            .zip(stuck)
            .map(|(i, &lane)| {
                self.far_buffer(lane)
                    .is_some_and(|buffer| buffer.occupancy == held[i])
            })
            .collect();
        let mut waited_on_by: Vec<Vec<usize>> = vec![Vec::new(); stuck.len()];
        for (i, queues) in waits.iter().enumerate() {
            for &queue in queues {
                waited_on_by[queue].push(i);
            }
        }
        let mut out: Vec<usize> = (0..stuck.len()).filter(|&i| !inside[i]).collect();
        while let Some(j) = out.pop() {
            for &i in &waited_on_by[j] {
                if inside[i] {
                    inside[i] = false;
                    out.push(i);
                }
            }
        }
        let first = inside.iter().position(|&i| i)?;
        // From the first lane of the set, each lane's lowest wait, until a lane comes again.
        let mut path = vec![first];
        let mut seen = vec![false; stuck.len()];
        seen[first] = true;
        loop {
            let last = *path.last().expect("the path starts with a lane");
            let next = waits[last][0];
            if seen[next] {
                let start = path
                    .iter()
                    .position(|&i| i == next)
                    .expect("seen on the path");
                let mut channels: Vec<(Channel, &str)> = path[start..]
                    .iter()
                    .map(|&i| self.channel(stuck[i]))
                    .collect();
                // From its smallest channel, as the checker gives a cycle.
                let smallest = (0..channels.len()).min_by_key(|&k| channels[k].0);
                channels.rotate_left(smallest.unwrap_or(0));
                return Some(Deadlock {
                    at_ns: self.clock.now / PS_PER_NS,
                    stuck_channels: inside.iter().filter(|&&i| i).count(),
                    cycle_names: channels.iter().map(|(c, node)| c.named(node)).collect(),
                    cycle: channels.into_iter().map(|(c, _)| c).collect(),
                });
            }
            seen[next] = true;
            path.push(next);
        }
    }

    /// The channel a switch lane sends on, and its node's name.
    fn channel(&self, lane: SwitchLane) -> (Channel, &str) {
        let state = self.fabric.states[lane.port as usize];
        let port = PortRef::new(NodeId(state.node), state.num);
        let vl = Vl::from_nibble(lane.vl);
        let name = &self.layout.network.nodes[state.node as usize].name;
        (Channel::new(port, vl), name)
    }
}

#[cfg(test)]
mod tests {
    use ibqos_fabric::Topology;
    use ibqos_fabric::credit_loops::{FabricTables, PathSls, VlTables, check};
    use ibqos_fabric::generate::{ring, torus_2d};
    use ibqos_fabric::routing::{EngineList, RoutingOptions};
    use ibqos_qos::policy::setup::SetupTables;
    use ibqos_qos::{QosConfig, Sl2VlTable, VlCount};

    use super::LOOK_INTERVAL_PS;
    use crate::build::{Forwarding, Tables};
    use crate::inputs::{Setup, sim};
    use crate::report::{Deadlock, Report};

    /// Every host sends to every other, as fast as it can.
    const ALL_TO_ALL: &str =
        "duration_us = 300\n[[pattern]]\nkind = \"all-to-all\"\npayload = 2048\n";

    /// Up*/down* finds no root on a torus or a ring by itself: it is given switch S0_0 or S0
    /// (as `root_guid_file` would).
    fn engines(topo: &Topology, names: &str) -> EngineList {
        let root = topo
            .nodes()
            .find(|(_, node)| node.name == "S0_0" || node.name == "S0");
        let options = RoutingOptions {
            root_guids: root.map(|(_, node)| vec![node.guid]),
            ..RoutingOptions::default()
        };
        EngineList::parse(Some(names)).with_options(options)
    }

    /// The run of `traffic` on `topo` routed by `engine`, with the default QoS tables (every
    /// SL on VL 0); `topo` gets its LIDs.
    fn run_on(topo: &mut Topology, engine: &str, traffic: &str) -> Setup {
        let engines = engines(topo, engine);
        let (qos, setup) = (QosConfig::default(), SetupTables::default());
        let tables = Tables::Planned {
            qos: &qos,
            setup: &setup,
            max_op_vls: None,
        };
        let made = sim(
            "t.toml",
            traffic.as_bytes(),
            topo,
            Some(tables),
            Forwarding::Engines(&engines),
            0,
            0,
        );
        let made = made.unwrap();
        assert!(made.passed_over.is_empty(), "{:?}", made.passed_over);
        made
    }

    /// A 4x4 torus with 4 hosts on each switch (with one, all-to-all leaves its links half
    /// idle and nothing fills).
    fn torus() -> Topology {
        torus_2d(4, 4, 4).unwrap()
    }

    fn report(setup: &Setup) -> Report {
        setup.run(1).unwrap().finish()
    }

    /// The deadlock's cycle is one: each channel leads to the switch the next one leaves, the
    /// last to the first's; it starts at its smallest channel, and its names are its channels'.
    fn assert_a_cycle(topo: &Topology, deadlock: &Deadlock) {
        let cycle = &deadlock.cycle;
        assert!(cycle.len() >= 2, "{deadlock:?}");
        assert!(deadlock.stuck_channels >= cycle.len(), "{deadlock:?}");
        for (k, channel) in cycle.iter().enumerate() {
            let next = cycle[(k + 1) % cycle.len()];
            let far = topo.peer(channel.from).expect("a linked port");
            assert_eq!(far.node, next.from.node, "{deadlock:?}");
            assert!(topo.node(far.node).unwrap().is_switch(), "{deadlock:?}");
        }
        assert!(cycle.iter().all(|c| *c >= cycle[0]), "{deadlock:?}");
        let names: Vec<String> = cycle.iter().map(|c| c.display(topo).to_string()).collect();
        assert_eq!(names, deadlock.cycle_names);
    }

    /// Minhop closes credit loops around the torus's rings: the run stops where one closed
    /// and names it.
    #[test]
    fn minhop_on_a_torus_deadlocks_and_names_the_loop() {
        let mut topo = torus();
        let report = report(&run_on(&mut topo, "minhop", ALL_TO_ALL));
        let deadlock = report.deadlock.expect("a credit loop");
        assert!(deadlock.at_ns < report.duration_ns, "{deadlock:?}");
        assert_a_cycle(&topo, &deadlock);
    }

    /// The simulator and the credit-loop checker, each on its own, find the same loop: on a
    /// ring, minhop's loops are the ring each way, and the run stops on one of them.
    #[test]
    fn the_loop_that_stops_a_ring_is_one_the_checker_names() {
        let mut topo = ring(6, 4).unwrap();
        let report = report(&run_on(&mut topo, "minhop", ALL_TO_ALL));
        let deadlock = report.deadlock.expect("a credit loop");
        assert_a_cycle(&topo, &deadlock);
        let routes = engines(&topo, "minhop")
            .route(&topo, VlCount::Fifteen)
            .unwrap()
            .routes;
        let vls = VlTables::new(Sl2VlTable::ALL_VL0, VlCount::One);
        let tables = FabricTables {
            topology: &topo,
            routes: &routes,
            vls: &vls,
        };
        let checked = check(tables, PathSls::Every);
        let loops: Vec<_> = checked.loops.iter().map(|l| &l.channels).collect();
        assert!(
            loops.contains(&&deadlock.cycle),
            "{deadlock:?} not in {loops:?}"
        );
    }

    /// Up*/down* breaks every loop: the same torus and traffic run to the end.
    #[test]
    fn updn_on_the_same_torus_runs_to_the_end() {
        let report = report(&run_on(&mut torus(), "updn", ALL_TO_ALL));
        assert_eq!(report.deadlock, None);
        let delivered: u64 = report.flows.iter().map(|f| f.delivered_packets).sum();
        assert!(delivered > 0);
    }

    /// Steps `setup`'s run a look at a time and, after each look, puts every lane that waits
    /// for credits with its link quiet to the proof, which must clear them all; returns how
    /// many looks found such lanes.
    fn proofs_that_clear(setup: &Setup) -> usize {
        let crate::engine::Run::One(mut sim) = setup.run(1).unwrap() else {
            panic!("a run on one core");
        };
        let mut proved = 0;
        let mut at = 0;
        while at < setup.options.duration_ps {
            at += LOOK_INTERVAL_PS;
            sim.run_until(at);
            // Right after the watch's own look: every lane unmoved since, so all that wait.
            let waiting = sim.stuck_so_far();
            if !waiting.is_empty() {
                proved += 1;
                assert_eq!(sim.credit_loop(&waiting), None, "at {at} ps");
            }
        }
        assert_eq!(sim.finish().deadlock, None);
        proved
    }

    /// Under the same load, up*/down*'s lanes wait for credits with full far buffers (a
    /// congested fabric), and the proof clears them: its chains of waits end at lanes that
    /// can send.
    #[test]
    fn lanes_that_only_wait_are_cleared_by_the_proof() {
        let proved = proofs_that_clear(&run_on(&mut torus(), "updn", ALL_TO_ALL));
        assert!(proved > 10, "{proved} looks found lanes waiting");
    }

    /// With two hosts a switch, minhop's torus is congested and its routes have loops, but
    /// none closes in the run: every look's waiting lanes are cleared.
    #[test]
    fn a_congested_ring_of_waits_that_still_drains_is_cleared() {
        let setup = run_on(&mut torus_2d(4, 4, 2).unwrap(), "minhop", ALL_TO_ALL);
        let proved = proofs_that_clear(&setup);
        assert!(proved > 10, "{proved} looks found lanes waiting");
    }

    /// Minhop's traffic that stops before a loop closes drains, however congested it was:
    /// the run goes to its end and every packet arrives.
    #[test]
    fn a_torus_that_drains_is_no_deadlock() {
        let stopping = ALL_TO_ALL.replace("payload", "stop_us = 20\npayload");
        let report = report(&run_on(&mut torus(), "minhop", &stopping));
        assert_eq!(report.deadlock, None);
        assert!(report.flows.iter().all(|f| f.in_flight_packets == 0));
        assert!(
            report
                .links
                .iter()
                .any(|l| l.vls.iter().any(|v| v.blocked_ns > 0))
        );
    }

    /// A PFC pause storm holds an Ethernet port's traffic for most of the run: the watch,
    /// which looks for credit loops, has none to find there and never stops the run.
    #[test]
    fn a_pause_storm_is_no_deadlock() {
        let text = "duration_us = 100\n[link]\nflow_control = \"pfc\"\n[pfc]\npriorities = [3]\n\
                    [[storm]]\nhost = \"H4\"\npriorities = [3]\nquanta = 100\n\
                    interval_quanta = 50\nstart_us = 5\nstop_us = 95\n\
                    [[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H4\"\npriority = 3\n\
                    payload = 1024\n";
        let minhop = EngineList::default();
        let made = sim(
            "t.toml",
            text.as_bytes(),
            &mut crate::star(),
            None,
            Forwarding::Engines(&minhop),
            0,
            0,
        );
        let report = report(&made.unwrap());
        assert_eq!(report.deadlock, None);
        assert_eq!(report.duration_ns, 100_000);
        let paused = report.links.iter().filter_map(|l| l.ethernet.as_ref());
        let pauses: u64 = paused
            .flat_map(|e| &e.priorities)
            .map(|p| p.pause_frames_received)
            .sum();
        assert!(pauses > 0);
    }
}
