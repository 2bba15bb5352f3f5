//! perfquery (infiniband-diags) against `ibqos fabric serve --traffic`: an SM programs QoS, the
//! packet simulator runs the traffic over the tables the served fabric holds, and perfquery
//! reads the counters it moved. ibsim keeps no per-SL or per-VL counters, so the oracle is the
//! simulator itself: `--traffic-report` writes its report and what each port was given.
//!
//! The traffic goes on SL 1 and SL 2, which the SM maps to VL 1 and VL 2. MADs go on SL 0 (on
//! VL 15 and VL 0) and never wait, so perfquery's XmtDataSL1-2, RcvDataSL1-2 and every
//! PortVLXmitWait are the traffic's alone. The extended data counters (`-x`) hold the traffic
//! and whole MADs of 72 dwords beside it. The traffic has ended before perfquery reads: the
//! counters then hold all of it, with no sampling interval left to lag.
//!
//! A missing tool (libumad2sim.so, smpquery, perfquery) fails the test.

use std::path::Path;
use std::time::{Duration, Instant};

use ibqos_tests::perfquery::PerfQuery;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};
use serde_json::Value;

/// Where the SM runs, and where perfquery runs.
const SM_NODE: &str = "H1";
const QUERY_NODE: &str = "H2";

/// The nodes perfquery reads, by directed route from [`QUERY_NODE`] on two-switch.net: the
/// traffic's source H1, both switches on its way and its destination H3.
const TARGETS: [(&str, &[u8]); 4] = [
    ("S1", &[1]),
    ("S2", &[1, 3]),
    ("H1", &[1, 1]),
    ("H3", &[1, 3, 1]),
];

/// Two greedy flows into H3 for 100 us at 4x QDR, on SL 1 and SL 2: XmitWait ticks of 16 ns
/// stay within the 16 bits of PortVLXmitWait.
const TRAFFIC: &str = "examples/sim/two-switch-traffic.toml";

/// The SLs the traffic goes on, each on the VL of its number.
const TRAFFIC_SLS: [u8; 2] = [1, 2];

/// How long the traffic may take to start and end once the SM brought the subnet up.
const TRAFFIC_WAIT: Duration = Duration::from_secs(60);

/// The value perfquery printed for `name`.
fn counter(output: &str, name: &str) -> u64 {
    output
        .lines()
        .find_map(|line| {
            let (field, value) = line.split_once(':')?;
            (field == name).then(|| value.trim_start_matches('.').parse().ok())?
        })
        .unwrap_or_else(|| panic!("no {name} in:\n{output}"))
}

/// The report `--traffic-report` writes, once the traffic ended.
fn wait_for_report(path: &Path) -> Value {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < TRAFFIC_WAIT,
            "no traffic report after {TRAFFIC_WAIT:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The words (or packets) of `lanes` (a port's `sent` or `received`) on `sl`, or on every SL.
fn sum(lanes: &Value, sl: Option<u8>, field: &str) -> u64 {
    lanes
        .as_array()
        .unwrap()
        .iter()
        .filter(|lane| sl.is_none_or(|sl| lane["sl"] == sl))
        .map(|lane| lane[field].as_u64().unwrap())
        .sum()
}

#[test]
fn perfquery_reads_the_simulated_traffic_per_sl_and_per_vl_from_the_served_fabric() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-traffic");
    let served_dir = dir.subdir("served");
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let traffic = repository.join(TRAFFIC);
    let report = served_dir.join("traffic-report.json");
    let (traffic_arg, report_arg) = (traffic.to_string_lossy(), report.to_string_lossy());
    let served = Ibsim::serve_with(
        &tools,
        &ibqos,
        &testdata("two-switch.net"),
        SM_NODE,
        &served_dir,
        &["--traffic", &traffic_arg, "--traffic-report", &report_arg],
    )
    .unwrap();
    let qos = repository.join("examples/sim/opensm.conf");
    let sm =
        SmInvocation::new(SmFabric::Native, SM_NODE, &served_dir.join("cache")).opensm_conf(&qos);
    sm.run_up(&ibqos, &served).unwrap();
    let outcome = wait_for_report(&report);
    assert_eq!(outcome["rebuilt"], 0, "no table changed while it ran");
    let query = PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS);

    let mut checked_waits = 0;
    for port in outcome["ports"].as_array().unwrap() {
        let node = port["node"].as_str().unwrap();
        if !TARGETS.iter().any(|(name, _)| *name == node) {
            continue;
        }
        let number = port["port"].to_string();
        let at = format!("{node}[{number}]");
        let xmtsl = query.run(&["--xmtsl", node, &number]);
        let rcvsl = query.run(&["--rcvsl", node, &number]);
        let waits = query.run(&["--vlxmitcounters", node, &number]);
        for sl in TRAFFIC_SLS {
            let sent = sum(&port["sent"], Some(sl), "words");
            let received = sum(&port["received"], Some(sl), "words");
            assert_eq!(
                counter(&xmtsl, &format!("XmtDataSL{sl}")),
                sent,
                "{at}: {xmtsl}"
            );
            assert_eq!(
                counter(&rcvsl, &format!("RcvDataSL{sl}")),
                received,
                "{at}: {rcvsl}"
            );
        }
        for vl in 0..16 {
            let ticks = port["xmit_wait"][vl].as_u64().unwrap().min(0xffff);
            let read = counter(&waits, &format!("PortVLXmitWait{vl}"));
            assert_eq!(read, ticks, "{at} VL{vl}: {waits}");
            checked_waits += ticks;
        }
        // The extended counters: the traffic, and whole MADs beside it.
        let extended = query.run(&["-x", node, &number]);
        for (way, data, packets) in [
            ("sent", "PortXmitData", "PortXmitPkts"),
            ("received", "PortRcvData", "PortRcvPkts"),
        ] {
            let mad_words = counter(&extended, data) - sum(&port[way], None, "words");
            let mad_packets = counter(&extended, packets) - sum(&port[way], None, "packets");
            assert_eq!(mad_words, 72 * mad_packets, "{at} {way}: {extended}");
        }
        // The simulator's report of the link the port sends on: its bytes per VL.
        for link in outcome["report"]["links"].as_array().unwrap() {
            if link["from"] != at.as_str() {
                continue;
            }
            for vl in link["vls"].as_array().unwrap() {
                let number = vl["vl"].as_u64().unwrap();
                if !TRAFFIC_SLS.iter().any(|&sl| u64::from(sl) == number) {
                    continue;
                }
                let bytes = vl["bytes"].as_u64().unwrap();
                let read = counter(&xmtsl, &format!("XmtDataSL{number}"));
                assert_eq!(read * 4, bytes, "{at} VL{number}: {xmtsl}");
            }
        }
    }
    assert!(checked_waits > 0, "a VL waited somewhere: {outcome}");
}
