//! `perfquery` (infiniband-diags, under libumad2sim.so) against `ibqos fabric serve` and against
//! ibsim itself. The same SM brings up the same net file on both. Then the same perfquery runs from
//! the same CA print the same thing on both. ibsim counts every MAD on every link it crosses, so
//! the counters hold what the SM and the queries before sent. The served fabric must count exactly
//! as it does.
//!
//! Outputs are compared whole, stdout, stderr and exit status, with two exceptions where they
//! must differ: the process ID in perfquery's own `ibwarn: [PID]` lines, and PortRcvPkts after
//! a PortCountersExtended reset, which ibsim leaves (its Set clears PortXmitPkts for that bit)
//! and the served fabric clears as IBA says.
//!
//! The counters of a link hold every SMP the SM sent across it, so the SM must take the same
//! directed routes on both fabrics. ibqos does; OpenSM reaches a node by whichever route its
//! threads process an answer from first, and across two-switch.net's two parallel links that
//! was S1 port 4 instead of port 3 in 2 of 30 runs on a served fabric (0 of 30 under ibsim).
//! OpenSM's comparison therefore runs on [`TREE_NET`], where every node has one route.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm, smpquery, ibroute, perfquery) fails the test.

use std::path::Path;

use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::perfquery::PerfQuery;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::readback::write_net_file;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Where the SM runs, and where perfquery and smpquery run: another CA, so that their queries
/// cross links.
const SM_NODE: &str = "H1";
const QUERY_NODE: &str = "H2";

/// The PortRcvPkts line of PortCountersExtended, which ibsim's reset leaves.
const EXT_RCV_PKTS: &str = "PortRcvPkts:";

/// two-switch.net without its second link between the switches and without H5's second port:
/// the same nodes at the same ports, each with a single directed route from any other.
const TREE_NET: &str = "\
switchguid=0x0002c90000001000
Switch	8 \"S1\"	# \"sw-one\" enhanced port 0
[1]	\"H1\"[1]
[2]	\"H2\"[1]
[3]	\"S2\"[3]
[5]	\"H5\"[1]

switchguid=0x0002c90000002000
Switch	8 \"S2\"	# \"sw-two\"
[1]	\"H3\"[1]
[2]	\"H4\"[1]
[3]	\"S1\"[3]

hcaguids=0x0002c90000100000
Hca	1 \"H1\"	# \"host-one HCA-1\"
[1]	\"S1\"[1]

Hca	1 \"H2\"	# \"host-two HCA-1\"
[1]	\"S1\"[2]

Hca	1 \"H3\"	# \"host-three HCA-1\"
[1]	\"S2\"[1]

Hca	1 \"H4\"	# \"host-four HCA-1\"
[1]	\"S2\"[2]

Hca	1 \"H5\"	# \"host-five HCA-1\"
[1]	\"S1\"[5]
";

/// Nodes perfquery addresses, found by directed route from [`QUERY_NODE`]: S1, the switch it
/// hangs off; S2 behind it; H1, the SM's CA.
const TARGETS: [(&str, &[u8]); 3] = [("S1", &[1]), ("S2", &[1, 3]), ("H1", &[1, 1])];

/// One perfquery run: its arguments, with node names where their LIDs go.
type Step = &'static [&'static str];

/// What perfquery is run with, in order. First the querying CA's own port; then a CA port and a
/// switch port elsewhere, with and without -x. Then all ports of a switch (AllPortSelect) and of a
/// CA (perfquery loops over the ports itself), and the optional counters. Last, a port that does
/// not exist, a PortCounters reset and a read after it.
const STEPS: [Step; 14] = [
    &[],
    &["-x"],
    &["H1", "1"],
    &["-x", "H1", "1"],
    &["S1", "3"],
    &["-x", "S1", "3"],
    &["-a", "S2"],
    &["-x", "-a", "S2"],
    &["-a", "H1"],
    &["-E", "S1", "1"],
    &["--vlxmitcounters", "S2", "255"],
    &["S1", "9"],
    &["-R", "S1", "3"],
    &["S1", "3"],
];

/// A PortCountersExtended reset of a CA port, and the read after it (see the module doc).
const EXT_RESET: [Step; 2] = [&["-x", "-R", "H1", "1"], &["-x", "H1", "1"]];

#[test]
fn perfquery_reads_the_served_fabric_as_ibsim_after_ibqos_sm() {
    compare("fabric-serve-perfquery-ibqos", None, |_, sim, dir| {
        let ibqos = ibqos_binary().unwrap();
        let sm = SmInvocation::new(SmFabric::Native, SM_NODE, &dir.join("cache"));
        let (_, summary) = sm.run_up(&ibqos, sim).unwrap();
        // A retry would be one more SMP counted on one fabric and not on the other.
        assert_eq!(
            (summary.retries, summary.timeouts),
            (0, 0),
            "{}",
            summary.raw
        );
    });
}

#[test]
fn perfquery_reads_the_served_fabric_as_ibsim_after_opensm() {
    compare(
        "fabric-serve-perfquery-opensm",
        Some(TREE_NET),
        |tools, sim, dir| {
            let run = run_opensm_once(tools, sim, SM_NODE, "", &dir.join("opensm")).unwrap();
            assert_eq!(run.error_lines(), Vec::<&str>::new(), "{}", run.log);
        },
    );
}

/// Brings a served fabric and an ibsim of `net` (two-switch.net if none) up with `bring_up`,
/// runs the same smpquery and perfquery steps on both, and compares what perfquery printed.
fn compare(name: &str, net: Option<&str>, bring_up: impl Fn(&SimTools, &Ibsim, &Path)) {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new(name);
    let netfile = match net {
        Some(text) => write_net_file(dir.path(), "fabric.net", text).unwrap(),
        None => testdata("two-switch.net"),
    };
    let ((served, served_dir), (ibsim, ibsim_dir)) =
        Ibsim::served_and_real(&tools, &ibqos, &netfile, SM_NODE, &dir).unwrap();
    bring_up(&tools, &served, &served_dir);
    bring_up(&tools, &ibsim, &ibsim_dir);

    let ours = PerfQuery::new(&tools, &served, QUERY_NODE, &TARGETS);
    let theirs = PerfQuery::new(&tools, &ibsim, QUERY_NODE, &TARGETS);
    assert_eq!(
        ours.lids, theirs.lids,
        "the SM gave both fabrics the same LIDs"
    );
    let mut last = String::new();
    for step in STEPS {
        let (a, b) = (ours.run(step), theirs.run(step));
        assert_eq!(a, b, "perfquery {step:?}: served (left) vs ibsim (right)");
        last = a;
    }
    // S1 port 3 leads to S2, where no query went since its reset.
    for counter in ["PortXmitPkts:", "PortRcvPkts:", "PortXmitData:"] {
        assert!(
            last.lines()
                .any(|l| l.starts_with(counter) && l.ends_with(".0")),
            "{counter} after the reset: {last}"
        );
    }

    let (reset, read) = (EXT_RESET[0], EXT_RESET[1]);
    assert_eq!(ours.run(reset), theirs.run(reset));
    let (a, b) = (ours.run(read), theirs.run(read));
    let without = |out: &str| {
        out.lines()
            .filter(|l| !l.starts_with(EXT_RCV_PKTS))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without(&a),
        without(&b),
        "perfquery {read:?}: served vs ibsim"
    );
    let rcv_pkts = |out: &str| -> u64 {
        let line = out.lines().find(|l| l.starts_with(EXT_RCV_PKTS)).unwrap();
        line.trim_start_matches(|c: char| !c.is_ascii_digit())
            .parse()
            .unwrap()
    };
    // Two received since the reset (ClassPortInfo, then the read itself); ibsim kept its count.
    assert_eq!(rcv_pkts(&a), 2, "{a}");
    assert!(rcv_pkts(&b) > 2, "{b}");
}
