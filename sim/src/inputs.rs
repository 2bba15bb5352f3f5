//! A run from its inputs: a traffic file, a topology and the tables the fabric runs with.

use ibqos_fabric::Topology;
use ibqos_fabric::routing::Attempt;
use ibqos_qos::policy::setup::SetupTables;
use ibqos_qos::{QosConfig, Sl};

use crate::build::{BuildError, Forwarding, Tables, TopologyHosts, build_routed_network};
use crate::engine::{Run, SimOptions};
use crate::network::{Flow, Network, NetworkError};
use crate::traffic::{self, TrafficError};

/// Everything a run needs, made from its inputs by [`sim`].
#[derive(Debug)]
pub struct Setup {
    pub network: Network,
    pub flows: Vec<Flow>,
    pub options: SimOptions,
    /// The routing engines passed over before the one that routed, for the user to read.
    pub passed_over: Vec<Attempt>,
}

impl Setup {
    /// The run of this set-up on `threads` cores.
    pub fn run(&self, threads: usize) -> Result<Run<'_>, NetworkError> {
        Run::new(&self.network, &self.flows, self.options, threads)
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::star;
    use ibqos_fabric::routing::EngineList;

    const FLOW: &str = "[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H4\"\npayload = 1024\n";
    /// A greedy flow from H1 to H4 for 10 us, over InfiniBand.
    fn greedy() -> String {
        format!("duration_us = 10\n{FLOW}")
    }

    /// Forwarding by the first engine of `engines` that routes.
    fn by(engines: &EngineList) -> Forwarding<'_> {
        Forwarding::Engines(engines)
    }

    /// An InfiniBand traffic file without tables is refused; with a lossless-Ethernet link it
    /// runs, with no InfiniBand tables to read.
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
