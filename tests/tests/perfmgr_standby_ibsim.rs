//! A STANDBY ibqos runs its performance manager as OpenSM's standby does, beside OpenSM 3.3.23
//! as master on ibsim: it never sweeps the subnet for the SM, so each PerfMgr sweep discovers
//! the subnet first, then reads every port's counters at the LIDs OpenSM gave.
//!
//! OpenSM (priority 10, with its own PerfMgr) runs at H1 and ibqos (priority 1) at H2 of
//! two-switch.net, both PerfMgrs sweeping every second. ibqos must stay STANDBY, and its dump
//! must name the same ports of the same nodes as the master's, under the same headers, with the
//! same (zero) error counters.
//!
//! A missing tool (ibsim, libumad2sim.so, opensm) fails the test.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ibqos_tests::daemon::Daemon;
use ibqos_tests::opensm::OpenSmDaemon;
use ibqos_tests::perfmgr::{
    MachineDump, TWO_SWITCH_PORTS, assert_same_ports_and_errors, dump_when,
};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// How long the standby, or a PerfMgr, has to do its part.
const WITHIN: Duration = Duration::from_secs(30);

/// Asks for a dump with `ask` until `path` holds a row for every port.
fn full_dump(path: &Path, mut ask: impl FnMut()) -> MachineDump {
    dump_when(path, TWO_SWITCH_PORTS, WITHIN, &mut ask, |_| true)
}

#[test]
fn a_standby_ibqos_reads_every_port_beside_an_opensm_master() {
    let tools = SimTools::require();
    let dir = TestDir::new("perfmgr-standby");
    let sim = Ibsim::start(&tools, &testdata("two-switch.net"), dir.path()).unwrap();
    let options = "perfmgr TRUE\nperfmgr_sweep_time_s 1\n";

    let opensm_dir = dir.path().join("opensm");
    std::fs::create_dir_all(&opensm_dir).unwrap();
    let opensm_dump = opensm_dir.join("counters.log");
    let conf = format!(
        "{options}sm_priority 10\nevent_db_dump_file {}\n",
        opensm_dump.display()
    );
    let mut opensm =
        OpenSmDaemon::start_with_console(&tools, &sim, "H1", &conf, &opensm_dir).unwrap();

    let ibqos = ibqos_binary().unwrap();
    let ibqos_dir = dir.path().join("ibqos");
    std::fs::create_dir_all(&ibqos_dir).unwrap();
    let ibqos_dump = ibqos_dir.join("counters.log");
    let conf_path = ibqos_dir.join("opensm.conf");
    let conf = format!(
        "{options}sm_priority 1\nevent_db_dump_file {}\n",
        ibqos_dump.display()
    );
    std::fs::write(&conf_path, conf).unwrap();
    let socket = ibqos_dir.join("ctl.sock");
    let invocation = SmInvocation::new(SmFabric::Native, "H2", &ibqos_dir.join("cache"))
        .opensm_conf(&conf_path)
        .args(&["--control-socket", socket.to_str().unwrap()]);
    let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
    let first = daemon.next_summary(WITHIN).unwrap();
    assert_eq!(first["sm_state"], "STANDBY", "{first}");

    let ctl = |args: &[&str]| {
        let out = Command::new(&ibqos)
            .args(["ctl", "--socket"])
            .arg(&socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let ours = full_dump(&ibqos_dump, || {
        ctl(&["perf", "dump", "mach"]);
    });
    let theirs = full_dump(&opensm_dump, || {
        opensm.console("perfmgr dump_counters mach").unwrap()
    });
    // The console sweeps on a standby too, each sweep after a discovery.
    assert_eq!(ctl(&["perf", "sweep"]), "sweep initiated...\n");
    assert_eq!(ctl(&["perf", "sweep-time", "2"]), "");
    let status = ctl(&["status"]);
    assert!(
        status.contains("SM State             : STANDBY"),
        "{status}\n{}",
        daemon.output()
    );
    let log = daemon.output();
    assert!(
        log.contains("Entering STANDBY state") && !log.contains("Entering MASTER state"),
        "{log}"
    );
    daemon.stop(Duration::from_secs(10)).unwrap();
    opensm.kill().unwrap();

    assert_same_ports_and_errors(&ours, &theirs);
}
