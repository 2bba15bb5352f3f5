//! perfquery's per-VL, per-SL and congestion counters (`--xmtsl`, `--rcvsl`, `--vlopdata`,
//! `--vlxmitcounters`, ... every optional attribute this perfquery offers) read from `ibqos
//! fabric serve`. ibsim keeps none of them (zeros, or no answer at all), so it cannot be the
//! oracle: the served fabric starts with counters set by `--preset-counters`, and perfquery must
//! print each preset value where IBA and libibmad place it, and 0 beside it.
//!
//! MADs count too: an SMP on VL 15, any other MAD on the VL that SL 0 maps to (VL 0 in the
//! default tables), and all of them at SL 0. Presets stay off those lanes, and the counters of
//! those lanes are checked against the MAD arithmetic instead.
//!
//! A missing tool (libumad2sim.so, smpquery, perfquery) fails the test.

use ibqos_tests::perfquery::{PerfQuery, counter_preset, serve_with_presets};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{SimTools, TestDir};

/// Where the SM runs, and where perfquery runs: another CA, so that its queries cross links.
const SM_NODE: &str = "H1";
const QUERY_NODE: &str = "H2";

/// Nodes perfquery addresses, by directed route from [`QUERY_NODE`] on two-switch.net.
const TARGETS: [(&str, &[u8]); 3] = [("S1", &[1]), ("S2", &[1, 3]), ("H1", &[1, 1])];

/// One counter set at start, and the perfquery flag that reads its attribute.
struct Preset {
    flag: &'static str,
    attribute: &'static str,
    counter: &'static str,
    node: &'static str,
    port: u8,
    value: u64,
}

const fn preset(
    flag: &'static str,
    attribute: &'static str,
    counter: &'static str,
    (node, port): (&'static str, u8),
    value: u64,
) -> Preset {
    Preset {
        flag,
        attribute,
        counter,
        node,
        port,
        value,
    }
}

/// A counter of every optional attribute, each at its own port, off the lanes MADs use; widths'
/// maxima among them (PortVLXmitWait 16 bits, PortVLXmitFlowCtlUpdateErrors 2).
const PRESETS: [Preset; 16] = [
    preset(
        "--xmtsl",
        "PortXmitDataSL",
        "XmtDataSL3",
        ("H1", 1),
        123_456,
    ),
    preset(
        "--rcvsl",
        "PortRcvDataSL",
        "RcvDataSL7",
        ("S1", 3),
        4_000_000_000,
    ),
    preset(
        "--vlxmitcounters",
        "PortVLXmitWaitCounters",
        "PortVLXmitWait2",
        ("S2", 3),
        65_535,
    ),
    preset(
        "--vlopdata",
        "PortVLOpData",
        "PortVLOpData5",
        ("H1", 1),
        99_999,
    ),
    preset(
        "--vloppackets",
        "PortVLOpPackets",
        "PortVLOpPackets4",
        ("S1", 1),
        555,
    ),
    preset(
        "--swportvlcong",
        "SwPortVLCongestion",
        "SWPortVLCongestion3",
        ("S2", 1),
        77,
    ),
    preset(
        "--rcvcc",
        "PortRcvConCtrl",
        "PortPktRcvBECN",
        ("H1", 1),
        4242,
    ),
    preset(
        "--slrcvfecn",
        "PortSLRcvFECN",
        "PortSLRcvFECN1",
        ("S1", 2),
        11,
    ),
    preset(
        "--slrcvbecn",
        "PortSLRcvBECN",
        "PortSLRcvBECN9",
        ("S1", 2),
        22,
    ),
    preset(
        "--xmitcc",
        "PortXmitConCtrl",
        "PortXmitTimeCong",
        ("S2", 2),
        44,
    ),
    preset(
        "--vlxmittimecc",
        "PortVLXmitTimeCong",
        "PortVLXmitTimeCong14",
        ("H1", 1),
        66,
    ),
    preset(
        "-D",
        "PortXmitDiscardDetails",
        "PortSwHOQLifetimeLimitDiscards",
        ("S1", 3),
        9,
    ),
    preset(
        "-E",
        "PortRcvErrorDetails",
        "PortLoopingErrors",
        ("S2", 3),
        3,
    ),
    preset(
        "--oprcvcounters",
        "PortOpRcvCounters",
        "PortOpRcvData",
        ("H1", 1),
        31_337,
    ),
    preset(
        "--flowctlcounters",
        "PortFlowCtlCounters",
        "PortRcvFlowPkts",
        ("S1", 1),
        8,
    ),
    preset(
        "--vlxmitflowctlerrors",
        "PortVLXmitFlowCtlUpdateErrors",
        "PortVLXmitFlowCtlUpdateErrors6",
        ("S2", 3),
        3,
    ),
];

/// Two ports of S1 whose XmtDataSL5 PortSelect 0xFF sums.
const SUMMED: [(u8, u64); 2] = [(1, 1000), (2, 2000)];

/// The counters MADs move, on SL 0 and on the VLs MADs travel: not preset, not checked as 0.
const MAD_LANES: [&str; 6] = [
    "XmtDataSL0",
    "RcvDataSL0",
    "PortVLOpPackets0",
    "PortVLOpPackets15",
    "PortVLOpData0",
    "PortVLOpData15",
];

/// The presets file `ibqos fabric serve --preset-counters` reads.
fn presets_file() -> String {
    let summed = SUMMED.iter().map(|&(port, value)| {
        preset(
            "--xmtsl",
            "PortXmitDataSL",
            "XmtDataSL5",
            ("S1", port),
            value,
        )
    });
    PRESETS
        .into_iter()
        .chain(summed)
        .map(|p| counter_preset(p.node, p.port, p.attribute, p.counter, p.value))
        .collect()
}

/// The counters perfquery printed, by name: every `Name:....value` line but PortSelect and
/// CounterSelect.
fn counters(output: &str) -> Vec<(String, u64)> {
    output
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            let value = value.trim_start_matches('.').parse().ok()?;
            (!matches!(name, "PortSelect" | "CounterSelect")).then(|| (name.to_owned(), value))
        })
        .collect()
}

/// The value perfquery printed for `name`.
fn counter(output: &str, name: &str) -> u64 {
    counters(output)
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no {name} in:\n{output}"))
        .1
}

#[test]
fn perfquery_reads_every_preset_per_vl_and_per_sl_counter_of_the_served_fabric() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-perfquery-lanes");
    let netfile = testdata("two-switch.net");
    let served_dir = dir.subdir("served");
    let served = serve_with_presets(
        &tools,
        &ibqos,
        &netfile,
        SM_NODE,
        &served_dir,
        &presets_file(),
    )
    .unwrap();
    let sm = SmInvocation::new(SmFabric::Native, SM_NODE, &served_dir.join("cache"));
    sm.run_up(&ibqos, &served).unwrap();
    let query = PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS);

    for p in &PRESETS {
        let port = p.port.to_string();
        let out = query.run(&[p.flag, p.node, &port]);
        assert!(out.starts_with("exit status: 0\n"), "{}: {out}", p.flag);
        let printed = counters(&out);
        assert!(!printed.is_empty(), "{}: {out}", p.flag);
        for (name, value) in printed {
            if MAD_LANES.contains(&name.as_str()) {
                continue;
            }
            let expected = if name == p.counter { p.value } else { 0 };
            assert_eq!(value, expected, "{name} of {}[{}]: {out}", p.node, p.port);
        }
    }

    // PortSelect 0xFF: S1's ports summed.
    let all = query.run(&["--xmtsl", "S1", "255"]);
    let sum: u64 = SUMMED.iter().map(|&(_, value)| value).sum();
    assert_eq!(counter(&all, "XmtDataSL5"), sum, "{all}");

    // A reset of RcvDataSL7 alone (CounterSelect bit 7), then a read.
    let reset = query.run(&["--rcvsl", "-R", "S1", "3", "0x80"]);
    assert!(reset.starts_with("exit status: 0\n"), "{reset}");
    let after = query.run(&["--rcvsl", "S1", "3"]);
    assert_eq!(counter(&after, "RcvDataSL7"), 0, "{after}");

    // Every MAD H1 sent went on SL 0: XmtDataSL0 is PortXmitData, plus the two responses H1
    // sent between the reads (to the PortCounters Get, and to the second run's ClassPortInfo).
    let total = counter(&query.run(&["H1", "1"]), "PortXmitData");
    let sl0 = counter(&query.run(&["--xmtsl", "H1", "1"]), "XmtDataSL0");
    assert_eq!(sl0, total + 2 * 72);
    // SMPs arrive on VL 15: S1 port 1 received the SM's.
    let vl15 = counter(
        &query.run(&["--vloppackets", "S1", "1"]),
        "PortVLOpPackets15",
    );
    assert!(vl15 > 0, "the SM's SMPs into S1 port 1");

    // SwPortVLCongestion is a switch's alone: a CA's PMA answers 0x000C, perfquery fails.
    let ca = query.run(&["--swportvlcong", "H1", "1"]);
    assert!(!ca.starts_with("exit status: 0\n"), "{ca}");
}

#[test]
fn counters_are_read_from_perfquerys_lines_whatever_the_dots() {
    let out = "# PortXmitDataSL counters: Lid 2 port 255\nPortSelect:......................255\n\
               CounterSelect:...................0x0000\nXmtDataSL0:......................12456\n\
               XmtDataSL10:.....................0\n";
    assert_eq!(
        counters(out),
        [
            ("XmtDataSL0".to_owned(), 12456),
            ("XmtDataSL10".to_owned(), 0)
        ]
    );
}
