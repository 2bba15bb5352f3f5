//! The PerfMgr with `perfmgr_lanes` on ibsim, which answers the per-VL attributes and
//! PortXmitDiscardDetails with zeros and hands the per-SL ones back undelivered ("no one to
//! handle pkt"), except at the SM's own port, which answers them with zeros. Each port that
//! lacks a per-SL attribute must be logged once and never asked for it again (no ERR 5402 sweep
//! after sweep); the per-VL series must be there, at 0, and per-SL ones only for the SM's port.
//!
//! A missing tool (ibsim) fails the test.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use ibqos_tests::daemon::Daemon;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// How long the PerfMgr has to read every port: two sweeps a second apart, and slack.
const READ_WITHIN: Duration = Duration::from_secs(30);

/// H1's node GUID (two-switch.net's first CA), where the SM runs.
const SM_NODE_GUID: &str = "0x0002c90000100000";

/// The per-SL attributes, as the PerfMgr names them in its log.
const PER_SL: [&str; 4] = [
    "PortXmitDataSl",
    "PortRcvDataSl",
    "PortSlRcvFecn",
    "PortSlRcvBecn",
];

#[test]
fn on_ibsim_the_per_sl_attributes_are_given_up_once_and_the_per_vl_ones_read_as_zeros() {
    let dir = TestDir::new("perfmgr-lanes-ibsim");
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let sim = Ibsim::start(&tools, &testdata("two-switch.net"), &dir.subdir("ibsim")).unwrap();
    let toml = dir.path().join("ibqos.toml");
    std::fs::write(
        &toml,
        "[sm]\nperfmgr_lanes = true\n[opensm]\nperfmgr = true\nperfmgr_sweep_time_s = 1\n",
    )
    .unwrap();
    let textfile = dir.subdir("textfile").join("ibqos.prom");
    let log_file = dir.path().join("ibqos.log");
    let invocation = SmInvocation::new(SmFabric::Native, "H1", &dir.subdir("cache")).args(&[
        "-c".to_owned(),
        toml.display().to_string(),
        "--metrics-textfile".to_owned(),
        textfile.display().to_string(),
        "--log-file".to_owned(),
        log_file.display().to_string(),
    ]);
    let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
    let deadline = Instant::now() + READ_WITHIN;
    let vl_series = |text: &str| {
        text.lines()
            .filter(|line| line.starts_with("ibqos_perfmgr_xmit_wait_vl_ticks{"))
            .count()
    };
    while vl_series(&std::fs::read_to_string(&textfile).unwrap_or_default()) == 0 {
        assert!(
            Instant::now() < deadline,
            "no per-VL series in time:\n{}",
            daemon.output()
        );
        thread::sleep(Duration::from_millis(200));
    }
    // Three more sweeps, none of which may ask for a per-SL attribute again.
    thread::sleep(Duration::from_secs(3));
    let text = std::fs::read_to_string(&textfile).unwrap();
    let status = daemon.stop(Duration::from_secs(10)).unwrap();
    assert!(status.success(), "daemon exited with {status}");
    let log = std::fs::read_to_string(&log_file).unwrap();

    assert!(!log.contains("ERR 5402"), "a query failed:\n{log}");
    let mut given_up: BTreeMap<String, usize> = BTreeMap::new();
    for line in log.lines().filter(|line| line.contains(" does not keep ")) {
        let (_, what) = line.split_once("PerfMgr: ").expect("the PerfMgr's words");
        let what = what.split(" (handed back").next().unwrap_or(what);
        assert!(
            PER_SL.iter().any(|attribute| what.ends_with(attribute)),
            "{line}"
        );
        *given_up.entry(what.to_owned()).or_default() += 1;
    }
    // Every CA port but the SM's lacks all four; each port and attribute is logged once.
    assert!(given_up.len() >= 4 * 5, "{given_up:?}");
    assert!(given_up.values().all(|&n| n == 1), "{given_up:?}");

    let lanes: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("ibqos_perfmgr_") && line.contains('{'))
        .collect();
    // Only the SM's own port (H1) answers the per-SL attributes, with zeros.
    let per_sl = lanes.iter().filter(|line| line.contains(",sl=\""));
    assert!(
        per_sl
            .clone()
            .all(|line| line.contains(&format!("node_guid=\"{SM_NODE_GUID}\""))),
        "a per-SL series of another port:\n{text}"
    );
    assert!(vl_series(&text) > 0);
    let per_vl = lanes.iter().filter(|line| line.contains(",vl=\""));
    for line in per_vl.chain(per_sl) {
        assert!(line.ends_with(" 0") || line.ends_with(" 0.0"), "{line}");
    }
}
