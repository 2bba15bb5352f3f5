//! Traffic inside the emulated fabric: the packet simulator runs a traffic file over the tables
//! the SMAs hold, in step with the fabric's clock, and each port's PMA counts what the
//! simulator says the port did ([`Emulator::set_traffic`]).
//!
//! - **When it starts.** At the plan's start time or later: at the first moment the fabric
//!   carries every flow, each flow's source having a LID and the switches' LFTs leading it to
//!   its destination's. A fabric with no LIDs or routes yet cannot carry data. Until then the
//!   fabric looks again every [`RETRY_NS`].
//! - **Its tables.** Those the SMAs hold at that moment ([`crate::dump`]): every port's SL2VL
//!   and VLArb tables, VLHighLimit and OperVLs, the LIDs and the LFTs, as the SM programmed
//!   them. Its congestion control is the traffic file's `[congestion_control]`, else what the
//!   congestion control agents hold (one setting for every switch and one for every CA).
//! - **A table changed while it runs** (a Set that changes an SL2VL, VLArb or LFT block, a
//!   port's LID, OperVLs or VLHighLimit, or a congestion control agent's settings): at its
//!   next step the simulation is rebuilt from the tables held then. The new one starts with
//!   empty queues at that moment of the run's timeline (each flow keeps its start and stop
//!   times), and the counters go on from where they were. The report is the last simulation's. Tables that cannot carry the traffic (an
//!   SM part way through its Sets) leave it on the tables it had until the next change.
//! - **Links.** The simulation runs on the topology's links: a flap or a dead node does not
//!   reach it.
//! - **Sampling.** The simulation is stepped to each multiple of [`SAMPLE_NS`] of its time, and
//!   to its end, once the fabric's clock is there; then each port's counts go into its PMA. So
//!   the counters lag the clock by less than one sampling interval.
//! - **Pace.** A plan run [`TrafficPlan::in_steps_of`] simulates at most that much per advance
//!   of the clock: a fabric served in real time keeps answering MADs while a slow simulation
//!   falls behind, and catches up as it can ([`TrafficOutcome::counted_ns`] says how far).

use std::collections::BTreeMap;

use ibqos_fabric::generate::assign_missing_lids;
use ibqos_fabric::{NodeId, PortRef, Topology};
use ibqos_qos::{Sl, Vl};
use ibqos_sim::traffic::{self, TrafficError};
use ibqos_sim::{
    Flow, Forwarding, LaneCount, Network, NodeKind, PortSample, Report, SampledRun, SimError,
    Tables, TopologyHosts, sim,
};
use serde::Serialize;

use crate::perf::{LaneTraffic, PortTraffic};
use crate::{Emulator, dump};

/// The simulated time between two samplings of the counters, in ns.
pub const SAMPLE_NS: u64 = 10_000;

/// How long a fabric that cannot carry the traffic yet waits before it looks again, in ns.
pub const RETRY_NS: u64 = 1_000_000;

const PS_PER_NS: u64 = 1_000;

/// The most links a packet crosses before the route is taken for a loop.
const MAX_HOPS: usize = 64;

/// A traffic file to run inside the fabric, checked against its topology.
#[derive(Debug, Clone)]
pub struct TrafficPlan {
    file: String,
    bytes: Vec<u8>,
    seed: u64,
    start_ns: u64,
    max_step_ns: Option<u64>,
}

/// Why a traffic file cannot run inside the fabric.
#[derive(Debug, thiserror::Error)]
pub enum TrafficPlanError {
    /// The file, at its place in the file.
    #[error(transparent)]
    File(#[from] TrafficError),
    #[error(
        "{file}: [link] flow_control = \"pfc\" is lossless Ethernet; an InfiniBand fabric \
         carries InfiniBand traffic only"
    )]
    Ethernet { file: String },
}

impl TrafficPlan {
    /// The traffic file named `file` (its bytes `bytes`), with its flows found on `topology`
    /// and seeded with `seed`, starting as soon as the fabric carries it.
    pub fn new(
        file: &str,
        bytes: Vec<u8>,
        topology: &Topology,
        seed: u64,
    ) -> Result<TrafficPlan, TrafficPlanError> {
        let parsed = traffic::parse(file, &bytes)?;
        if parsed.ethernet.is_some() {
            return Err(TrafficPlanError::Ethernet {
                file: file.to_owned(),
            });
        }
        // The hosts as they will be once the SM gave them LIDs: a flow's ends need one.
        let mut with_lids = topology.clone();
        if assign_missing_lids(&mut with_lids).is_ok() {
            parsed.flows(&TopologyHosts(&with_lids), seed)?;
        }
        Ok(TrafficPlan {
            file: file.to_owned(),
            bytes,
            seed,
            start_ns: 0,
            max_step_ns: None,
        })
    }

    /// The plan starting no earlier than `start_ns` of emulated time.
    pub fn starting_at(self, start_ns: u64) -> TrafficPlan {
        TrafficPlan { start_ns, ..self }
    }

    /// The plan simulating at most `max_step_ns` per advance of the fabric's clock.
    pub fn in_steps_of(self, max_step_ns: u64) -> TrafficPlan {
        TrafficPlan {
            max_step_ns: Some(max_step_ns.max(1)),
            ..self
        }
    }
}

/// What happened to the traffic, for a log.
#[derive(Debug)]
pub enum TrafficEvent {
    /// The fabric cannot carry it yet (reported once for each new reason).
    Waiting {
        at_ns: u64,
        why: String,
    },
    Started {
        at_ns: u64,
    },
    /// A table changed: the simulation was rebuilt.
    Rebuilt {
        at_ns: u64,
    },
    /// A table changed, but the tables held then cannot carry the traffic: it goes on over the
    /// tables it had until the next change.
    NotRebuilt {
        at_ns: u64,
        why: String,
    },
    Finished(Box<TrafficOutcome>),
}

/// A finished run: the simulator's report and what the ports' counters were given.
#[derive(Debug, Clone, Serialize)]
pub struct TrafficOutcome {
    /// The emulated time the traffic started and the one its simulated time ended at, in ns.
    pub started_ns: u64,
    pub ended_ns: u64,
    /// The emulated time the counters had it all, in ns: after `ended_ns` by the lag of a
    /// simulation slower than the clock.
    pub counted_ns: u64,
    /// The times the simulation was rebuilt for a changed table.
    pub rebuilt: u32,
    /// What each port's counters were given, summed over the samples: the ports that counted
    /// anything, in topology order.
    pub ports: Vec<PortTotal>,
    /// The last simulation's report: the whole run's when no table changed.
    pub report: Report,
}

/// What one port's counters were given over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PortTotal {
    /// The node's name in the topology.
    pub node: String,
    pub port: u8,
    pub sent: Vec<LaneCount>,
    pub received: Vec<LaneCount>,
    pub xmit_wait: [u64; 16],
    pub relay_errors: u64,
    /// Under congestion control, by SL: data packets received marked FECN, and BECNs received.
    pub rcv_fecn: [u64; 16],
    pub rcv_becn: [u64; 16],
}

impl PortTotal {
    fn add(&mut self, sample: &PortSample) {
        add_lanes(&mut self.sent, &sample.sent);
        add_lanes(&mut self.received, &sample.received);
        for (totals, counts) in [
            (&mut self.xmit_wait, &sample.xmit_wait),
            (&mut self.rcv_fecn, &sample.rcv_fecn),
            (&mut self.rcv_becn, &sample.rcv_becn),
        ] {
            for (total, count) in totals.iter_mut().zip(counts) {
                *total += count;
            }
        }
        self.relay_errors += sample.relay_errors;
    }
}

/// Adds `more` to `lanes`, one entry per SL and VL, in SL then VL order.
fn add_lanes(lanes: &mut Vec<LaneCount>, more: &[LaneCount]) {
    for lane in more {
        match lanes.binary_search_by_key(&(lane.sl, lane.vl), |l| (l.sl, l.vl)) {
            Ok(i) => {
                lanes[i].words += lane.words;
                lanes[i].packets += lane.packets;
            }
            Err(i) => lanes.insert(i, *lane),
        }
    }
}

/// The traffic of a fabric, from its plan to its outcome.
#[derive(Debug)]
pub(crate) struct Traffic {
    plan: TrafficPlan,
    stage: Stage,
    events: Vec<TrafficEvent>,
    /// Why the fabric last could not carry it.
    waiting_for: Option<String>,
}

#[derive(Debug)]
enum Stage {
    Waiting { next_try_ns: u64 },
    Running(Box<Running>),
    Done,
}

/// A traffic running: its simulation and what its ports were given so far.
#[derive(Debug)]
struct Running {
    run: SampledRun,
    /// The emulated time the traffic started, and the one the current simulation's time 0 is.
    started_ns: u64,
    segment_ns: u64,
    /// The whole run's simulated length, in ns.
    duration_ns: u64,
    /// The fabric's count of table changes the simulation was built with.
    tables: u64,
    /// The topology's nodes, by index: what the simulation's node indices name.
    nodes: Vec<NodeId>,
    rebuilt: u32,
    totals: BTreeMap<PortRef, PortTotal>,
}

impl Running {
    /// The emulated time the simulation has reached.
    fn reached_ns(&self) -> u64 {
        self.segment_ns + self.run.now_ps() / PS_PER_NS
    }

    /// The emulated time of its next step: the next multiple of [`SAMPLE_NS`] of the run's
    /// time, or its end.
    fn next_step_ns(&self) -> u64 {
        let done = self.reached_ns() - self.started_ns;
        let next = (done / SAMPLE_NS + 1) * SAMPLE_NS;
        self.started_ns + next.min(self.duration_ns)
    }

    fn ended_ns(&self) -> u64 {
        self.started_ns + self.duration_ns
    }
}

impl Traffic {
    pub(crate) fn new(plan: TrafficPlan) -> Traffic {
        let next_try_ns = plan.start_ns;
        Traffic {
            plan,
            stage: Stage::Waiting { next_try_ns },
            events: Vec::new(),
            waiting_for: None,
        }
    }

    /// When the traffic next has something to do: look at the fabric again, or step.
    pub(crate) fn next_ns(&self) -> Option<u64> {
        match &self.stage {
            Stage::Waiting { next_try_ns } => Some(*next_try_ns),
            Stage::Running(running) => Some(running.next_step_ns()),
            Stage::Done => None,
        }
    }

    pub(crate) fn take_events(&mut self) -> Vec<TrafficEvent> {
        std::mem::take(&mut self.events)
    }
}

impl Emulator {
    /// Runs `plan`'s traffic inside the fabric from now on (see the `traffic` module): the
    /// simulator's packets move the PMA counters as the clock advances.
    pub fn set_traffic(&mut self, plan: TrafficPlan) {
        self.traffic = Some(Box::new(Traffic::new(plan)));
    }

    /// The emulated time at which the traffic next has something to do, if it has.
    pub fn next_traffic_ns(&self) -> Option<u64> {
        self.traffic.as_ref()?.next_ns()
    }

    /// What happened to the traffic since the last call.
    pub fn take_traffic_events(&mut self) -> Vec<TrafficEvent> {
        self.traffic
            .as_mut()
            .map_or_else(Vec::new, |t| t.take_events())
    }

    /// Moves the traffic on to `now_ns`: starts it when the fabric can carry it, rebuilds it
    /// when a table changed, steps it and counts.
    pub(crate) fn run_traffic(&mut self, now_ns: u64) {
        let Some(mut traffic) = self.traffic.take() else {
            return;
        };
        // A plan run in steps simulates at most one step's worth per advance.
        let until_ns = match (&traffic.stage, traffic.plan.max_step_ns) {
            (Stage::Running(running), Some(step)) => {
                now_ns.min(running.reached_ns().saturating_add(step))
            }
            _ => now_ns,
        };
        loop {
            let due = traffic.next_ns().is_some_and(|at| at <= until_ns);
            if !due || !self.traffic_step(&mut traffic, now_ns) {
                break;
            }
        }
        self.traffic = Some(traffic);
    }

    /// One step of the traffic due by `now_ns`; false when it is to wait for the clock.
    fn traffic_step(&mut self, traffic: &mut Traffic, now_ns: u64) -> bool {
        match std::mem::replace(&mut traffic.stage, Stage::Done) {
            Stage::Waiting { .. } => {
                traffic.stage = match self.start_traffic(&traffic.plan, now_ns, now_ns) {
                    Ok(run) => {
                        traffic.events.push(TrafficEvent::Started { at_ns: now_ns });
                        Stage::Running(Box::new(Running {
                            run,
                            started_ns: now_ns,
                            segment_ns: now_ns,
                            duration_ns: 0,
                            tables: self.tables_changed,
                            nodes: self.topology.nodes().map(|(id, _)| id).collect(),
                            rebuilt: 0,
                            totals: BTreeMap::new(),
                        }))
                    }
                    Err(why) => {
                        if traffic.waiting_for.as_ref() != Some(&why) {
                            let at_ns = now_ns;
                            traffic.events.push(TrafficEvent::Waiting {
                                at_ns,
                                why: why.clone(),
                            });
                            traffic.waiting_for = Some(why);
                        }
                        Stage::Waiting {
                            next_try_ns: now_ns.saturating_add(RETRY_NS),
                        }
                    }
                };
                if let Stage::Running(running) = &mut traffic.stage {
                    running.duration_ns = running.run.setup().options.duration_ps / PS_PER_NS;
                }
                true
            }
            Stage::Running(mut running) => {
                if !self.step_running(traffic, &mut running) {
                    traffic.stage = Stage::Running(running);
                    return true;
                }
                let Running {
                    run,
                    started_ns,
                    duration_ns,
                    rebuilt,
                    totals,
                    ..
                } = *running;
                let outcome = TrafficOutcome {
                    started_ns,
                    ended_ns: started_ns + duration_ns,
                    counted_ns: now_ns,
                    rebuilt,
                    ports: totals.into_values().collect(),
                    report: run.finish(),
                };
                traffic
                    .events
                    .push(TrafficEvent::Finished(Box::new(outcome)));
                false
            }
            Stage::Done => false,
        }
    }

    /// Steps a running traffic to its next sampling: whether that was its end.
    fn step_running(&mut self, traffic: &mut Traffic, running: &mut Running) -> bool {
        if running.tables != self.tables_changed {
            running.tables = self.tables_changed;
            let at = running.reached_ns();
            match self.start_traffic(&traffic.plan, running.started_ns, at) {
                Ok(run) => {
                    running.run = run;
                    running.segment_ns = at;
                    running.rebuilt += 1;
                    traffic.events.push(TrafficEvent::Rebuilt { at_ns: at });
                }
                Err(why) => traffic
                    .events
                    .push(TrafficEvent::NotRebuilt { at_ns: at, why }),
            }
        }
        let until = running.next_step_ns();
        let ps = (until - running.segment_ns).saturating_mul(PS_PER_NS);
        running.run.run_until(ps);
        self.count_samples(running);
        running.reached_ns() >= running.ended_ns()
    }

    /// Gives each port the counts its sample holds.
    fn count_samples(&mut self, running: &mut Running) {
        for sample in running.run.take_port_samples() {
            let Some(&node) = running.nodes.get(sample.node) else {
                continue;
            };
            let port = PortRef::new(node, sample.port);
            self.pmas.add_traffic(port, &port_traffic(&sample));
            let total = running.totals.entry(port).or_insert_with(|| PortTotal {
                node: self
                    .topology
                    .node(node)
                    .map_or_else(String::new, |n| n.name.clone()),
                port: sample.port,
                ..PortTotal::default()
            });
            total.add(&sample);
        }
    }

    /// A sampled simulation of `plan` over the tables the SMAs hold, as from emulated time
    /// `at_ns` of a traffic started at `started_ns`; why not where the fabric cannot carry it.
    fn start_traffic(
        &self,
        plan: &TrafficPlan,
        started_ns: u64,
        at_ns: u64,
    ) -> Result<SampledRun, String> {
        let held = dump(self);
        let mut topology = self.topology.clone();
        let made = sim(
            &plan.file,
            &plan.bytes,
            &mut topology,
            Some(Tables::Held(&held)),
            Forwarding::Held(&held),
            plan.seed,
            0,
        );
        let mut setup = made.map_err(|error| match error {
            SimError::Build(error) => format!("the tables the fabric holds: {error}"),
            // The plan's flows were found on the fabric with LIDs: only a missing one fails.
            SimError::Traffic(error) => format!("an end of a flow has no LID yet ({error})"),
            SimError::NoTables => error.to_string(),
        })?;
        carries_every_flow(&setup.network, &setup.flows)?;
        // A rebuilt simulation goes on with the run's timeline.
        let elapsed_ps = (at_ns - started_ns).saturating_mul(PS_PER_NS);
        setup.options.duration_ps = setup.options.duration_ps.saturating_sub(elapsed_ps);
        for flow in &mut setup.flows {
            flow.start_ps = flow.start_ps.saturating_sub(elapsed_ps);
            flow.stop_ps = flow.stop_ps.saturating_sub(elapsed_ps);
        }
        SampledRun::new(setup).map_err(|error| error.to_string())
    }
}

/// What a port's sample adds to its PMA counters.
fn port_traffic(sample: &PortSample) -> PortTraffic {
    let lanes = |counts: &[LaneCount]| {
        counts
            .iter()
            .filter_map(|c| {
                Some(LaneTraffic {
                    sl: Sl::new(c.sl)?,
                    vl: Vl::new(c.vl)?,
                    words: c.words,
                    packets: c.packets,
                })
            })
            .collect()
    };
    PortTraffic {
        sent: lanes(&sample.sent),
        received: lanes(&sample.received),
        xmit_wait: sample.xmit_wait,
        fecn: sample.rcv_fecn,
        becn: sample.rcv_becn,
        relay_errors: sample.relay_errors,
        ..PortTraffic::default()
    }
}

/// Whether `network` carries each of `flows` from its source to its destination: `Err` names
/// the first that it does not, and why.
fn carries_every_flow(network: &Network, flows: &[Flow]) -> Result<(), String> {
    let mut peers = BTreeMap::new();
    for link in &network.links {
        let (a, b) = ((link.a.node, link.a.port), (link.b.node, link.b.port));
        peers.insert(a, b);
        peers.insert(b, a);
    }
    for flow in flows {
        let source = &network.nodes[flow.src.node];
        if source.lids[usize::from(flow.src.port)] == 0 || flow.dlid == 0 {
            return Err(format!("flow {}: an end has no LID yet", flow.name));
        }
        let mut at = (flow.src.node, flow.src.port);
        let mut delivered = false;
        for _ in 0..MAX_HOPS {
            let Some(&(node, port)) = peers.get(&at) else {
                break;
            };
            let reached = &network.nodes[node];
            match reached.kind {
                NodeKind::Host => {
                    delivered = reached.lids[usize::from(port)] == flow.dlid;
                    break;
                }
                NodeKind::Switch => match reached.route(flow.dlid) {
                    Some(out) => at = (node, out),
                    None => break,
                },
            }
        }
        if !delivered {
            return Err(format!(
                "flow {}: the LFTs do not lead LID {} to {} yet",
                flow.name, flow.dlid, flow.dst_name
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ibqos_fabric::builtin::builtin_topology;
    use ibqos_fabric::netfile::parse_net_str;

    const FLOW: &str =
        "duration_us = 10\n[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H3\"\npayload = 64\n";

    fn two_switch() -> Topology {
        parse_net_str(builtin_topology("two-switch").unwrap())
            .unwrap()
            .topology
    }

    /// A fabric no SM has programmed has no LIDs: the traffic waits from its start time, says
    /// why once, and looks again every millisecond.
    #[test]
    fn traffic_waits_for_a_fabric_that_carries_it() {
        let topology = two_switch();
        let plan = TrafficPlan::new("t.toml", FLOW.into(), &topology, 0).unwrap();
        let mut emulator = Emulator::new(topology).unwrap();
        emulator.set_traffic(plan.starting_at(5_000));
        emulator.advance_to(4_999);
        assert!(emulator.take_traffic_events().is_empty());
        assert_eq!(emulator.next_traffic_ns(), Some(5_000));
        emulator.advance_to(5_000);
        let events = emulator.take_traffic_events();
        let [TrafficEvent::Waiting { at_ns: 5_000, why }] = &events[..] else {
            panic!("{events:?}");
        };
        assert!(why.contains("no LID"), "{why}");
        emulator.advance_to(5_000 + 3 * RETRY_NS);
        assert!(emulator.take_traffic_events().is_empty(), "the same reason");
        assert_eq!(emulator.next_traffic_ns(), Some(5_000 + 4 * RETRY_NS));
    }

    /// The file is read before anything runs: a lossless-Ethernet file, or a flow naming no
    /// host of the fabric, is refused, the latter at its place.
    #[test]
    fn a_plan_is_checked_against_its_fabric() {
        let topology = two_switch();
        let ethernet = FLOW.replace("[[flow]]", "[link]\nflow_control = \"pfc\"\n[[flow]]");
        let refused = TrafficPlan::new("e.toml", ethernet.into(), &topology, 0).unwrap_err();
        assert!(
            matches!(refused, TrafficPlanError::Ethernet { .. }),
            "{refused}"
        );
        let unknown = FLOW.replace("H3", "H9");
        let refused = TrafficPlan::new("u.toml", unknown.into(), &topology, 0).unwrap_err();
        let TrafficPlanError::File(located) = refused else {
            panic!("{refused}");
        };
        assert_eq!(located.location.line, 5, "{located:?}");
    }
}
