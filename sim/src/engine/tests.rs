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
