//! A run from its inputs: a traffic file, a topology and the tables the fabric runs with.

use ibqos_fabric::Topology;
use ibqos_fabric::routing::Attempt;
use ibqos_qos::policy::setup::SetupTables;
use ibqos_qos::{QosConfig, Sl};

use crate::build::{BuildError, Forwarding, Tables, TopologyHosts, build_routed_network};
use crate::engine::{PortSample, Run, SimOptions, Simulation};
use crate::network::{Flow, Network, NetworkError};
use crate::report::Report;
use crate::traffic::{self, TrafficError};

/// Everything a run needs, made from its inputs by [`sim`].
#[derive(Debug)]
pub struct Setup {
    pub network: Network,
    pub flows: Vec<Flow>,
    pub options: SimOptions,
    /// The routing engines passed over before the one that routed, for the user to read.
    pub passed_over: Vec<Attempt>,
    /// The run has the congestion control a dump's agents held, as the traffic file set none.
    pub congestion_from_agents: bool,
}

impl Setup {
    /// The run of this set-up on `threads` cores.
    pub fn run(&self, threads: usize) -> Result<Run<'_>, NetworkError> {
        Run::new(&self.network, &self.flows, self.options, threads)
    }
}

self_cell::self_cell!(
    /// A set-up and its sampled run, which borrows it.
    struct SetupAndRun {
        owner: Setup,
        #[covariant]
        dependent: Simulation,
    }
    impl {Debug}
);

/// A run on one core that owns its set-up and counts per port as it goes
/// ([`Simulation::sampled`]): for a caller that keeps it beyond the set-up's scope, as an
/// emulated fabric steps it with its clock.
#[derive(Debug)]
pub struct SampledRun(SetupAndRun);

impl SampledRun {
    pub fn new(setup: Setup) -> Result<SampledRun, NetworkError> {
        let run = SetupAndRun::try_new(setup, |setup| {
            Simulation::sampled(&setup.network, &setup.flows, setup.options)
        });
        run.map(SampledRun)
    }

    pub fn setup(&self) -> &Setup {
        self.0.borrow_owner()
    }

    /// The simulated time reached.
    pub fn now_ps(&self) -> u64 {
        self.0.borrow_dependent().now_ps()
    }

    /// Processes every event up to `until_ps` ([`Simulation::run_until`]).
    pub fn run_until(&mut self, until_ps: u64) {
        self.0.with_dependent_mut(|_, sim| sim.run_until(until_ps));
    }

    /// What every port counted since the last call ([`Simulation::take_port_samples`]).
    pub fn take_port_samples(&mut self) -> Vec<PortSample> {
        self.0.with_dependent_mut(|_, sim| sim.take_port_samples())
    }

    /// Runs to the end and reports.
    pub fn finish(mut self) -> Report {
        self.0.with_dependent_mut(|_, sim| sim.finish_in_place())
    }
}

/// Why a run could not be made from its inputs.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The traffic file, at its place in the file.
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    /// The topology and the tables do not make a network.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// An InfiniBand run was given no tables.
    #[error(
        "an InfiniBand run needs its QoS tables (a lossless-Ethernet run, [link] flow_control = \
         \"pfc\", needs none)"
    )]
    NoTables,
}

/// Makes a run from the traffic file named `traffic_file` (its bytes `traffic`), `topology`,
/// the `tables` of its ports and the switches forwarding as `forwarding` says. `None` is for a
/// lossless-Ethernet run, which has no InfiniBand tables. The run is seeded with `seed` and
/// records a timeline of `timeline_intervals` intervals (0: none).
///
/// This assigns the topology's LIDs where it has none, as building the network does.
pub fn sim(
    traffic_file: &str,
    traffic: &[u8],
    topology: &mut Topology,
    tables: Option<Tables<'_>>,
    forwarding: Forwarding<'_>,
    seed: u64,
    timeline_intervals: usize,
) -> Result<Setup, SimError> {
    let traffic = traffic::parse(traffic_file, traffic)?;
    let (default_qos, default_setup) = (QosConfig::default(), SetupTables::default());
    let tables = match tables {
        Some(tables) => tables,
        None if traffic.ethernet.is_none() => return Err(SimError::NoTables),
        None => Tables::Planned {
            qos: &default_qos,
            setup: &default_setup,
            max_op_vls: None,
        },
    };
    let built = build_routed_network(topology, tables, forwarding, &traffic)?;
    let (mut network, passed_over) = (built.network, built.passed_over);
    let congestion_from_agents =
        traffic.congestion_control.is_none() && network.congestion_control.is_some();
    let hosts = TopologyHosts(topology);
    let mut flows = traffic.flows(&hosts, seed)?;
    network.ethernet = traffic.ethernet(&hosts)?;
    if network.ethernet.is_none() {
        // A host sends on the SL the SA's PathRecord gives it: the one the routing chose for
        // the pair, the traffic file's SL its hint. An Ethernet flow's class is a priority the
        // routing does not choose; SMPs go on VL15 whatever their SL.
        for flow in flows.iter_mut().filter(|f| !f.management) {
            let slid = network.nodes[flow.src.node].lids[usize::from(flow.src.port)];
            let sl = built.layering.path_sl(flow.sl.get(), slid, flow.dlid);
            flow.sl = Sl::new(sl).unwrap_or(flow.sl);
        }
    }
    Ok(Setup {
        network,
        flows,
        options: SimOptions {
            duration_ps: traffic.duration_ps,
            seed,
            arbiter: traffic.arbiter,
            timeline_intervals,
        },
        passed_over,
        congestion_from_agents,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::star;
    use ibqos_fabric::routing::EngineList;
    use std::collections::BTreeMap;

    const FLOW: &str = "[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H4\"\npayload = 1024\n";
    /// A greedy flow from H1 to H4 for 10 us, over InfiniBand.
    fn greedy() -> String {
        format!("duration_us = 10\n{FLOW}")
    }

    /// Forwarding by the first engine of `engines` that routes.
    fn by(engines: &EngineList) -> Forwarding<'_> {
        Forwarding::Engines(engines)
    }

    /// examples/sim/traffic.toml with examples/sim/opensm.conf's tables (SL n on VL n, VL2
    /// high priority), as a sampled run: two bulk flows share H4's link, so the switch's port
    /// to H4 has data waiting on both VLs.
    fn sampled_example() -> SampledRun {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sim/");
        let read = |name: &str| std::fs::read(format!("{dir}{name}")).expect(name);
        let format = ibqos_opensm::Format::OpenSmConf;
        let conf = ibqos_opensm::load_bytes("opensm.conf", &read("opensm.conf"), format);
        let conf = conf.expect("opensm.conf");
        let setup_tables = SetupTables::default();
        let tables = Tables::Planned {
            qos: &conf.settings.qos,
            setup: &setup_tables,
            max_op_vls: None,
        };
        let minhop = EngineList::default();
        let traffic = read("traffic.toml");
        let setup = sim(
            "t.toml",
            &traffic,
            &mut star(),
            Some(tables),
            by(&minhop),
            3,
            0,
        );
        SampledRun::new(setup.expect("set-up")).expect("run")
    }

    /// Over a whole run taken in steps, the samples add up to the report's figures of each
    /// link and data VL (packets and bytes), and to its drops. The wait of the VLs sharing a congested
    /// port is counted in ticks, and a sample taken with nothing new is empty.
    #[test]
    fn the_samples_of_a_run_add_up_to_its_report() {
        let mut run = sampled_example();
        let end = run.setup().options.duration_ps;
        let names: Vec<String> = run
            .setup()
            .network
            .nodes
            .iter()
            .map(|n| n.name.clone())
            .collect();
        // (port name, VL) -> (packets, words); port name -> ticks waited per VL.
        let mut sent: BTreeMap<(String, u8), (u64, u64)> = BTreeMap::new();
        let mut waits: BTreeMap<String, [u64; 16]> = BTreeMap::new();
        let mut relay_errors = 0;
        let mut received_words = 0;
        for step in 1..=37 {
            run.run_until(end / 37 * step);
            for sample in run.take_port_samples() {
                let name = format!("{}[{}]", names[sample.node], sample.port);
                for lane in &sample.sent {
                    let total = sent.entry((name.clone(), lane.vl)).or_default();
                    total.0 += lane.packets;
                    total.1 += lane.words;
                }
                received_words += sample.received.iter().map(|l| l.words).sum::<u64>();
                let w = waits.entry(name.clone()).or_default();
                for (total, ticks) in w.iter_mut().zip(sample.xmit_wait) {
                    *total += ticks;
                }
                relay_errors += sample.relay_errors;
            }
        }
        assert_eq!(
            run.take_port_samples(),
            Vec::new(),
            "nothing new at the end"
        );
        let report = run.finish();
        let mut from_report = BTreeMap::new();
        for link in &report.links {
            for vl in link.vls.iter().filter(|v| v.vl != 15 && v.packets > 0) {
                from_report.insert((link.from.clone(), vl.vl), (vl.packets, vl.bytes / 4));
            }
        }
        assert_eq!(sent, from_report);
        let dropped: u64 = report.flows.iter().map(|f| f.dropped_packets).sum();
        assert_eq!(relay_errors, dropped);
        let sent_words: u64 = sent.values().map(|(_, words)| words).sum();
        assert!(received_words > 0 && received_words <= sent_words);
        // S1's port to H4 (port 4) carries SL0 on VL0 and SL1 on VL1 at 64:192: each waits
        // while the other sends. A 64-byte block takes 16 ns at 4x QDR (32 Gb/s).
        let to_h4 = waits["S1[4]"];
        assert!(to_h4[0] > 0 && to_h4[1] > 0, "{to_h4:?}");
        let ticks_in_run = end / 16_000;
        assert!(to_h4[0] + to_h4[1] < 2 * ticks_in_run, "{to_h4:?}");
    }

    /// An InfiniBand traffic file without tables is refused; with a lossless-Ethernet link it
    /// runs, with no InfiniBand tables to read, but not sampled.
    #[test]
    fn only_an_ethernet_run_goes_without_tables() {
        let minhop = EngineList::default();
        let refused = sim(
            "t.toml",
            greedy().as_bytes(),
            &mut star(),
            None,
            by(&minhop),
            0,
            0,
        );
        assert!(matches!(refused, Err(SimError::NoTables)), "{refused:?}");
        let ethernet = format!("duration_us = 10\n[link]\nflow_control = \"pfc\"\n{FLOW}");
        let setup = sim(
            "t.toml",
            ethernet.as_bytes(),
            &mut star(),
            None,
            by(&minhop),
            0,
            0,
        );
        let setup = setup.unwrap();
        assert!(setup.network.ethernet.is_some());
        let report = setup.run(1).unwrap().finish();
        assert!(
            report.flows[0].delivered_packets > 0,
            "{:?}",
            report.flows[0]
        );
        // Its ports have no PMA to sample.
        let sampled = SampledRun::new(setup);
        assert!(
            matches!(sampled, Err(NetworkError::SampledEthernet)),
            "{sampled:?}"
        );
    }

    /// The set-up carries the traffic file's duration and arbiter, the seed and the timeline
    /// asked for, and the flows found on the topology; an error in the file is located in it.
    #[test]
    fn a_setup_is_what_its_inputs_say() {
        let (qos, setup) = (QosConfig::default(), SetupTables::default());
        let minhop = EngineList::default();
        let tables = || Tables::Planned {
            qos: &qos,
            setup: &setup,
            max_op_vls: None,
        };
        let made = sim(
            "t.toml",
            greedy().as_bytes(),
            &mut star(),
            Some(tables()),
            by(&minhop),
            7,
            3,
        )
        .unwrap();
        assert_eq!(made.options.duration_ps, 10_000_000);
        assert_eq!((made.options.seed, made.options.timeline_intervals), (7, 3));
        assert_eq!(made.flows.len(), 1);
        assert_eq!(&*made.flows[0].dst_name, "H4");
        let bad = greedy().replace("H4", "H9");
        let error = sim(
            "t.toml",
            bad.as_bytes(),
            &mut star(),
            Some(tables()),
            by(&minhop),
            0,
            0,
        );
        let error = error.unwrap_err();
        assert!(matches!(error, SimError::Traffic(_)), "{error:?}");
        assert!(error.to_string().contains("H9"), "{error}");
    }
}
