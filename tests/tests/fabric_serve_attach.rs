//! `ibqos fabric serve` beyond one attach point. Clients attach at the node `SIM_HOST` names, as
//! under ibsim (checked against ibsim itself with smpquery). Ports read as under ibsim before an SM
//! has touched them, and OpenSM runs from any CA. The served fabric sends trap 128 when a scheduled
//! flap changes a link. That wakes an `ibqos sm` daemon long before its sweep interval would.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm, smpquery) fails the test.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use ibqos_tests::daemon::Daemon;
use ibqos_tests::netfile::DrPath;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::readback::check_up;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::smpquery::{SmpQuery, Target};
use ibqos_tests::{Ibsim, SimTools, TestDir, Topology};

#[test]
fn clients_attach_where_sim_host_says_as_under_ibsim() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-attach");
    let netfile = testdata("two-switch.net");
    let topology = Topology::load(&netfile).unwrap();
    let ((served, served_dir), (ibsim, _)) =
        Ibsim::served_and_real(&tools, &ibqos, &netfile, "H1", &dir).unwrap();

    // From each node: the node at hop 0 (the client's own) and one hop out of port 1.
    let mut own = BTreeSet::new();
    for node in ["H1", "H2", "H3", "H5", "S1", "S2"] {
        for path in [vec![], vec![1]] {
            let target = Target::Dr(DrPath(path.clone()));
            let ours = SmpQuery::new(&tools, &served, node).node_guid(&target);
            let theirs = SmpQuery::new(&tools, &ibsim, node).node_guid(&target);
            let ours = ours.unwrap_or_else(|e| panic!("served, from {node} {target}: {e}"));
            assert_eq!(
                Some(ours),
                theirs.ok(),
                "from {node}, {target}: served vs ibsim"
            );
            if path.is_empty() {
                own.insert(ours);
            }
        }
    }
    assert_eq!(own.len(), 6, "each client is at its own node: {own:x?}");

    // OpenSM from H3, far from the default attach point, brings the served fabric up.
    let run = run_opensm_once(&tools, &served, "H3", "", &served_dir.join("opensm")).unwrap();
    assert_eq!(run.error_lines(), Vec::<&str>::new(), "{}", run.log);
    check_up("opensm from H3", &tools, &served, &topology, "H3");
}

/// PortInfo fields where the served fabric follows ibsim 0.12 and Debian's ibsim is 0.10:
/// 0.12 dropped IsVendorClassSupported from CapabilityMask and added IsLinkSpeedNDRSupported
/// to CapabilityMask2.
const CAPABILITY_FIELDS: [&str; 2] = ["CapMask", "CapabilityMask2"];

#[test]
fn ports_read_as_under_ibsim_before_an_sm() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-power-on");
    let netfile = testdata("two-switch.net");
    let ((served, _), (ibsim, _)) =
        Ibsim::served_and_real(&tools, &ibqos, &netfile, "H2", &dir).unwrap();
    // From H2: its own CA port, and S1's port 0, a port linked to S2 and an unlinked port,
    // each a template of its own in ibsim.
    let ports: [(&[u8], u8); 4] = [(&[], 1), (&[1], 0), (&[1], 3), (&[1], 6)];
    // With Mellanox's extended PortInfo, which ibsim keeps per port (zero, without FDR10).
    let reads = [
        ("portinfo", "LinkWidthActive"),
        ("mlnxextportinfo", "LinkSpeedActive"),
    ];
    for ((path, port), (op, field)) in ports.into_iter().flat_map(|p| reads.map(|r| (p, r))) {
        let target = Target::Dr(DrPath(path.to_vec()));
        let read = |sim| {
            let mut fields = SmpQuery::new(&tools, sim, "H2")
                .fields(op, &target, Some(port))
                .unwrap_or_else(|e| panic!("{op} {target} {port}: {e}"));
            fields.retain(|name, _| !CAPABILITY_FIELDS.contains(&name.as_str()));
            fields
        };
        let (ours, theirs) = (read(&served), read(&ibsim));
        assert!(theirs.contains_key(field), "{theirs:?}");
        assert_eq!(ours, theirs, "{op} {target} {port}: served vs ibsim");
    }
}

#[test]
fn a_scheduled_flap_sends_trap_128_and_wakes_the_ibqos_sm_daemon() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-trap");
    let netfile = testdata("two-switch.net");
    let topology = Topology::load(&netfile).unwrap();
    // One of the two inter-switch links goes down 3 s after the fabric starts and comes back
    // 200 ms later: well after the daemon's first sweep, and far from any sweep its own
    // interval would bring.
    let schedule = dir.path().join("flaps.toml");
    std::fs::write(
        &schedule,
        "[[flap]]\nnode = \"S1\"\nport = 3\ndown_ms = 3000\nup_ms = 3200\n",
    )
    .unwrap();
    let schedule = schedule.display().to_string();
    let served_at = Instant::now();
    let served = Ibsim::serve_with(
        &tools,
        &ibqos,
        &netfile,
        "H1",
        dir.path(),
        &["--fault-schedule", &schedule],
    )
    .unwrap();
    // Its own interval would sweep again only 20 s after the first sweep.
    let conf = write_opensm_conf(dir.path(), "sweep_interval 20\n").unwrap();
    let sm =
        SmInvocation::new(SmFabric::Native, "H1", &dir.path().join("cache")).opensm_conf(&conf);
    let mut daemon = Daemon::start(&sm, &ibqos, &served).unwrap();
    let first = daemon.next_summary(Duration::from_secs(20)).unwrap();
    assert_eq!(first["subnet_up"], true, "{first}");
    assert!(
        served_at.elapsed() < Duration::from_secs(3),
        "the first sweep must end before the flap; took until {:?}",
        served_at.elapsed()
    );

    // The flap: trap 128 wakes the daemon within a moment of the link going down (3 s), long
    // before its interval.
    let woken = daemon.next_summary(Duration::from_secs(15)).unwrap();
    let woken_at = served_at.elapsed();
    assert!(
        woken_at < Duration::from_secs(6),
        "no sweep soon after the flap at 3 s; the next came at {woken_at:?}: {woken}"
    );
    assert!(woken["link_change_traps"].as_u64().unwrap() >= 1, "{woken}");
    // The link is back at 3.2 s and the daemon sweeps again (on the switches' next trap 128;
    // should the link come back while a sweep is between reading S1's ports and clearing its
    // PortStateChange, no trap tells of it, as on a real fabric, and the interval brings the
    // sweep that finds it). Until then S1[3] trains only to Init.
    let s1_port3 = SmpQuery::new(&tools, &served, "H1");
    let active = || {
        s1_port3
            .portinfo(&Target::Dr(DrPath(vec![1])), Some(3))
            .is_ok_and(|p| p.link_state == "Active")
    };
    while !active() {
        assert!(
            served_at.elapsed() < Duration::from_secs(30),
            "S1[3] is not Active again 30 s after the fabric started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    daemon.stop(Duration::from_secs(10)).unwrap();
    check_up("after the flap", &tools, &served, &topology, "H1");
}
