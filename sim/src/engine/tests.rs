use std::collections::BTreeMap;
use std::path::Path;

use super::*;
use crate::build::{Tables, TopologyHosts, build_network};
use crate::network::{Link, Node, NodeKind, PortAddr, PortArbitration};
use crate::traffic;
use ibqos_qos::policy::setup::SetupTables;
use ibqos_qos::{QosConfig, Sl2VlTable};

/// Each interval of the timeline holds what left the port during it, to a block. H1 sends
/// 4 KB packets (4160 bytes, 1.04 us at 32 Gb/s) back to back to H4 for 200 us, in 30
/// intervals of 6.667 us, 6.4 packets' time each: counted where they started, some
/// intervals held 7 packets, 1.09 times what the link carries in one.
#[test]
fn no_interval_of_the_timeline_holds_more_than_the_link_carries() {
    let mut topo = crate::star();
    let text = "duration_us = 200\n[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H4\"\n\
                payload = 4096\n";
    let traffic = traffic::parse("t.toml", text.as_bytes()).unwrap();
    let tables = Tables::Planned {
        qos: &QosConfig::default(),
        setup: &SetupTables::default(),
        max_op_vls: None,
    };
    let network = build_network(&mut topo, tables, &traffic).unwrap();
    let flows = traffic.flows(&TopologyHosts(&topo), 0).unwrap();
    let options = SimOptions {
        duration_ps: traffic.duration_ps,
        seed: 0,
        arbiter: traffic.arbiter,
        timeline_intervals: 30,
    };
    let report = simulate(&network, &flows, options).unwrap();
    let timeline = report.timeline.unwrap();
    let [(0, bytes)] = &timeline.vls[..] else {
        panic!("{timeline:?}");
    };
    // 32 Gb/s x 200 us / 30 = 26,666.7 bytes per interval, 416.7 blocks: an interval
    // counts the blocks that ended in it, 416 or 417.
    let capacity = 32e9 / 8.0 * 200e-6 / 30.0 + 64.0;
    assert!(bytes.iter().all(|&b| b as f64 <= capacity), "{bytes:?}");
    // The link is saturated: every interval but the first holds more than 6 packets.
    assert!(bytes[1..].iter().all(|&b| b > 6 * 4160), "{bytes:?}");
    let link = (report.links.iter())
        .find(|l| l.from == timeline.from && l.to == timeline.to)
        .unwrap();
    assert_eq!(bytes.iter().sum::<u64>(), link.bytes);
}

/// A port's state names its kind of link in 16 bits: a fabric whose links come in more
/// kinds than that is refused at once, never simulated with a wrapped index. The kinds are
/// counted with the unlinked ports' (port 0 of every host here), which are one more.
#[test]
fn more_than_65536_kinds_of_link_are_refused() {
    let link = |i: usize| Link {
        a: PortAddr {
            node: 2 * i,
            port: 1,
        },
        b: PortAddr {
            node: 2 * i + 1,
            port: 1,
        },
        params: LinkParams {
            speed: Speed::Qdr,
            width: Width::X4,
            propagation_ps: i as u64,
            vl_buffer_blocks: 1024,
            credit_latency_ps: 0,
        },
    };
    let links = usize::from(u16::MAX);
    let host = |i: usize| {
        let arbitration = PortArbitration::default();
        Node::new(
            format!("H{i}"),
            NodeKind::Host,
            1,
            arbitration,
            Sl2VlTable::ALL_VL0,
        )
    };
    let mut network = Network {
        nodes: (0..2 * (links + 1)).map(host).collect(),
        links: (0..links).map(link).collect(),
        ethernet: None,
        congestion_control: None,
    };
    // 65,535 kinds of link and the unlinked ports': 65,536, the most.
    assert!(Simulation::new(&network, &[], SimOptions::default()).is_ok());
    network.links.push(link(links));
    let refused = Simulation::new(&network, &[], SimOptions::default());
    assert!(
        matches!(refused, Err(NetworkError::TooManyLinkKinds)),
        "{:?}",
        refused.err()
    );
}

proptest::proptest! {
    /// A receive buffer's integral, kept as it will be at the run's end with what carries
    /// out of its 64 bits, is the occupancy integrated step by step, on runs long enough
    /// to carry (blocks x picoseconds past 2^64) and on short ones; so is its peak.
    #[test]
    fn a_buffer_integral_kept_to_the_end_is_the_one_integrated_step_by_step(
        end in proptest::prop_oneof![0u64..1_000_000, (u64::MAX / 4)..=u64::MAX],
        steps in proptest::collection::vec(
            (proptest::num::u64::ANY, 1u32..(1 << 24), proptest::bool::ANY),
            0..40,
        ),
    ) {
        let mut times: Vec<u64> = steps.iter().map(|s| s.0 % end.saturating_add(1)).collect();
        times.sort_unstable();
        let mut buffer = Buffer::default();
        let mut carried = 0i64;
        let (mut occupancy, mut peak, mut integral, mut last) = (0u32, 0u32, 0u128, 0u64);
        for (t, &(_, blocks, fill)) in times.into_iter().zip(&steps) {
            integral += u128::from(occupancy) * u128::from(t - last);
            last = t;
            let fill = fill || occupancy == 0;
            let blocks = if fill { blocks } else { blocks.min(occupancy) };
            if fill {
                occupancy += blocks;
                peak = peak.max(occupancy);
            } else {
                occupancy -= blocks;
            }
            carried += buffer.change(blocks, end - t, fill);
        }
        integral += u128::from(occupancy) * u128::from(end - last);
        proptest::prop_assert_eq!(buffer.integral(carried), integral);
        proptest::prop_assert_eq!((buffer.occupancy, buffer.peak), (occupancy, peak));
    }
}

/// The hot spot of examples/sim/hot-spot.toml on hot-spot.net, with its
/// `[congestion_control]` section (`cc`) or without it.
fn hot_spot_run(cc: bool) -> (Network, Vec<Flow>, SimOptions) {
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sim/");
    let parsed = ibqos_fabric::netfile::parse_net_file(&Path::new(examples).join("hot-spot.net"));
    let mut topo = parsed.expect("hot-spot.net").topology;
    let mut text = std::fs::read_to_string(Path::new(examples).join("hot-spot.toml")).unwrap();
    if !cc {
        // The section (its header on a line of its own, unlike the comment naming it) runs up
        // to the first flow.
        let start = text.find("\n[congestion_control]\n").unwrap();
        let end = text.find("\n[[flow]]\n").unwrap();
        text.replace_range(start..end, "");
    }
    let traffic = traffic::parse("t.toml", text.as_bytes()).unwrap();
    let tables = Tables::Planned {
        qos: &QosConfig::default(),
        setup: &SetupTables::default(),
        max_op_vls: None,
    };
    let network = build_network(&mut topo, tables, &traffic).unwrap();
    let flows = traffic.flows(&TopologyHosts(&topo), 7).unwrap();
    let options = SimOptions {
        duration_ps: traffic.duration_ps,
        seed: 7,
        arbiter: traffic.arbiter,
        timeline_intervals: 0,
    };
    (network, flows, options)
}

/// [`hot_spot_run`]'s report, and each flow's throughput in Gb/s by name.
fn hot_spot(cc: bool) -> (BTreeMap<String, f64>, Report) {
    let (network, flows, options) = hot_spot_run(cc);
    let report = simulate(&network, &flows, options).unwrap();
    let rates = (report.flows.iter())
        .map(|f| (f.name.to_string(), f.throughput_gbps))
        .collect();
    (rates, report)
}

/// A hot spot after Gran et al., "First experiences with congestion control in InfiniBand
/// hardware" (IPDPS 2010): H1-H4 send greedily to D, and the victim V to W; H1 and V share
/// the link S1 -> S2, and only D's link is oversubscribed. R is a link's payload rate: 4x QDR
/// carries 32 Gb/s of 2074-byte packets (2048 of payload, 26 of headers and CRCs), 31.6 Gb/s.
///
/// Without congestion control, D's link gives each of S2's four inputs toward it about R/4,
/// so H1's packets leave S1 at R/4. V's packets wait in the same FIFO at S1 behind H1's, and
/// the credits S2 returns go to both in turn: V gets about R/4 too (the run: 6.7 Gb/s). It
/// must stay below R/3.
///
/// With it (threshold 15: mark above 1/16 of a VL buffer; SL0 controlled; index up by 1 per
/// BECN and down every 20 x 1.024 us; a linear 16-entry table, entry i a delay of i packet
/// times, a rate of 1 / (i + 1)), the queue at D's port marks the hot flows' packets, their sources slow to about
/// R/4 each, S2 stops backing up into S1, and V gets what H1 leaves of the shared link: about
/// 3R/4 (the run: 25.0 Gb/s). It must keep more than 0.6 R, and the hot spot must still carry
/// more than R/2 (the sources slow down, they do not stop).
#[test]
fn congestion_control_keeps_a_hot_spot_victim_at_most_of_its_rate() {
    let r = 32.0 * 2048.0 / 2074.0;
    let hot = |rates: &BTreeMap<String, f64>| {
        ["H1", "H2", "H3", "H4"]
            .map(|h| rates[h])
            .iter()
            .sum::<f64>()
    };
    let (off, report) = hot_spot(false);
    assert!(off["V"] < r / 3.0, "{off:?}");
    assert!(report.flows.iter().all(|f| f.congestion_control.is_none()));
    assert!(report.links.iter().all(|l| l.fecn_marked.is_none()));
    let (on, report) = hot_spot(true);
    assert!(on["V"] > 0.6 * r, "{on:?}");
    // The hot spot's root, D's switch port, marks; W's, carrying the victim alone, does not.
    let marked = |from: &str| {
        let link = report.links.iter().find(|l| l.from == from).unwrap();
        link.fecn_marked.unwrap()
    };
    assert!(
        marked("S2[4]") > 0 && marked("S2[5]") == 0,
        "{:?}",
        report.links
    );
    assert!(hot(&on) > r / 2.0 && hot(&on) <= r, "{on:?}");
    for f in &report.flows {
        let cc = f.congestion_control.as_deref().unwrap();
        if f.name.starts_with('H') {
            assert!(
                cc.becns_received > 0 && cc.max_ccti > 0,
                "{}: {cc:?}",
                f.name
            );
        }
    }
}

/// A sampled run hands out each BECN at its source's port and each FECN-marked packet at its
/// destination's, by SL: the BECNs add up to the flows' own counts, the destinations received
/// at least one marked packet per BECN (D most of them), and a run without congestion control
/// counts none.
#[test]
fn samples_count_fecn_at_the_destination_and_becn_at_the_source() {
    let totals = |cc: bool| {
        let (network, flows, options) = hot_spot_run(cc);
        let mut sim = Simulation::sampled(&network, &flows, options).unwrap();
        let (mut fecn, mut becn) = (BTreeMap::<String, u64>::new(), 0);
        let mut step = 0;
        while sim.now_ps() < options.duration_ps {
            step += options.duration_ps / 4;
            sim.run_until(step);
            for sample in sim.take_port_samples() {
                let name = &network.nodes[sample.node].name;
                let marked = sample.rcv_fecn.iter().sum::<u64>();
                if marked > 0 {
                    *fecn.entry(name.clone()).or_default() += marked;
                }
                becn += sample.rcv_becn[0];
                assert!(sample.rcv_becn[1..].iter().all(|&b| b == 0), "SL0 only");
            }
        }
        let report = sim.finish();
        let flow_becns = (report.flows.iter())
            .filter_map(|f| f.congestion_control.as_deref())
            .map(|cc| cc.becns_received)
            .sum::<u64>();
        (fecn, becn, flow_becns)
    };
    let (fecn, becn, flow_becns) = totals(true);
    assert!(becn > 0 && becn == flow_becns, "{becn} {flow_becns}");
    assert!(
        fecn.values().sum::<u64>() >= becn && fecn["D"] > 0,
        "{fecn:?} {becn}"
    );
    assert_eq!(totals(false), (BTreeMap::new(), 0, 0));
}

/// With a timeline, the report gives each controlled flow's CCTI at each interval's end: the
/// hot flows' rise above 0, the last equals the flow's final index, and none passes the
/// highest index the flow reached. The plots draw it as ccti.svg.
#[test]
fn the_timeline_gives_each_flows_ccti_over_time() {
    let (network, flows, mut options) = hot_spot_run(true);
    options.timeline_intervals = 20;
    let report = simulate(&network, &flows, options).unwrap();
    let ccti = report.ccti.as_ref().expect("a CCTI timeline");
    assert_eq!(ccti.interval_ns, 100_000);
    assert_eq!(ccti.flows.len(), 5);
    for (name, series) in &ccti.flows {
        let flow = report.flows.iter().find(|f| &*f.name == name).unwrap();
        let cc = flow.congestion_control.as_deref().unwrap();
        assert_eq!(series.len(), 20);
        assert_eq!(*series.last().unwrap(), cc.final_ccti, "{name}");
        assert!(
            series.iter().all(|&c| c <= cc.max_ccti),
            "{name}: {series:?}"
        );
        if name.starts_with('H') {
            assert!(series.iter().any(|&c| c > 0), "{name}: {series:?}");
        }
    }
    #[cfg(feature = "plot")]
    {
        let dir = std::env::temp_dir().join(format!("ibqos-sim-ccti-{}", std::process::id()));
        let written = crate::plot::write_plots(&dir, &report).unwrap();
        let svg = std::fs::read_to_string(dir.join("ccti.svg"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(written.contains(&dir.join("ccti.svg")), "{written:?}");
        assert!(
            svg.unwrap()
                .contains("Congestion control table index per flow")
        );
    }
    let (network, flows, mut options) = hot_spot_run(false);
    options.timeline_intervals = 20;
    assert!(simulate(&network, &flows, options).unwrap().ccti.is_none());
}

/// A BECN takes the flow's path back: per hop, the link's propagation (100 ns) and a one-block
/// packet's wire time (64 bytes at 32 Gb/s: 16 ns). On the hot spot H2 -> D crosses two links
/// (H2 -> S2, S2 -> D), H1 -> D and V -> W three (through S1 and S2).
#[test]
fn a_becn_returns_after_the_flows_path_back() {
    let (network, flows, options) = hot_spot_run(true);
    let sim = Simulation::new(&network, &flows, options).unwrap();
    let link = network.links[0].params;
    let hop = link.propagation_ps + link.serialization_ps(1);
    let back = |name: &str| {
        let i = flows.iter().position(|f| &*f.name == name).unwrap();
        sim.path_back_ps(sim.sources.flows[i].port, flows[i].dlid)
    };
    assert_eq!(
        (back("H2"), back("H1"), back("V")),
        (2 * hop, 3 * hop, 3 * hop)
    );
    assert_eq!(hop, 100_000 + 16_000);
}
