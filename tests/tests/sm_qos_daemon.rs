//! `ibqos sm` as a daemon (`sweep_interval 1`) keeping the QoS tables it programmed.
//!
//! Each test starts the daemon with its native ibsim client at H1 of the two-switch fabric,
//! reads its per-sweep JSON summaries from stdout, acts on the fabric (or the config) between
//! sweeps, and reads the fabric back with smpquery. Every wait is bounded; the daemon is stopped
//! with SIGTERM by its PID at the end and must exit by itself (the guard SIGKILLs it on any
//! failure).
//!
//! Where a test must change the fabric between two sweeps without racing the daemon, it stops
//! the daemon with SIGSTOP right after a summary line (the daemon is then asleep until its next
//! sweep) and resumes it with SIGCONT once the change is made and verified.

use std::time::Duration;

use ibqos_tests::daemon::Daemon;
use ibqos_tests::planner::{self, PlanCaps, PortClass, ibqos_binary};
use ibqos_tests::qos::{QosReadback, Setting, compare_fabrics, compare_ports, parse_target};
use ibqos_tests::readback::{Failures, PortKey, port_name};
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::sm::{DAEMON_CONF, SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::{Ibsim, NodeKind, SimTools, TestDir};
use serde_json::Value;

/// A sweep of the two-switch fabric takes milliseconds and the interval is 1 s; this only
/// bounds a hang.
const SUMMARY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the daemon may take to exit after SIGTERM (it checks every 50 ms while asleep).
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

struct Setup {
    tools: SimTools,
    ibqos: std::path::PathBuf,
    fabric: Fabric,
    sim: Ibsim,
    daemon: Daemon,
    /// The fabric right after the daemon's first sweep.
    programmed: QosReadback,
}

/// ibsim (with a console if asked) on two-switch.net and the daemon at H1 with `DAEMON_CONF`,
/// up after its first sweep.
fn start(dir: &TestDir, console: bool) -> Setup {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let sim_dir = dir.subdir("ibsim");
    let sim = if console {
        Ibsim::start_with_console(&tools, &fabric.netfile, &sim_dir)
    } else {
        Ibsim::start(&tools, &fabric.netfile, &sim_dir)
    }
    .unwrap();
    let conf = write_opensm_conf(dir.path(), DAEMON_CONF).unwrap();
    let invocation = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf);
    let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
    let first = daemon.next_summary(SUMMARY_TIMEOUT).unwrap();
    assert!(
        first["subnet_up"] == true && first["mode"] == "forced",
        "the daemon's first sweep is not a forced sweep to SUBNET UP: {first}\n{}",
        daemon.output()
    );
    let programmed = QosReadback::read(&tools, &sim, &fabric.topology, &fabric.query_node)
        .unwrap_or_else(|e| panic!("reading back the daemon's fabric: {e}\n{}", daemon.output()));
    Setup {
        tools,
        ibqos,
        fabric,
        sim,
        daemon,
        programmed,
    }
}

impl Setup {
    fn read(&self, when: &str) -> QosReadback {
        QosReadback::read(
            &self.tools,
            &self.sim,
            &self.fabric.topology,
            &self.fabric.query_node,
        )
        .unwrap_or_else(|e| {
            panic!(
                "reading back the fabric {when}: {e}\n{}",
                self.daemon.output()
            )
        })
    }

    fn summary(&mut self) -> Value {
        self.daemon.next_summary(SUMMARY_TIMEOUT).unwrap()
    }

    /// Stops the daemon with SIGSTOP right after its next sweep ends (see
    /// [`Daemon::pause_after_next_sweep`]).
    fn pause(&mut self) -> ibqos_tests::Result<Value> {
        self.daemon.pause_after_next_sweep(SUMMARY_TIMEOUT)
    }

    fn stop(mut self) {
        let status = self.daemon.stop(STOP_TIMEOUT).unwrap();
        assert!(status.success(), "daemon exited with {status}");
    }
}

/// The "changes" of a summary, as (node id, port, attribute, sent), with node ids from the
/// NodeGUIDs in `rb`. Panics on a target that names no node of the fabric.
fn changes(summary: &Value, rb: &QosReadback) -> Vec<(PortKey, String, bool, String)> {
    summary["changes"]
        .as_array()
        .unwrap_or_else(|| panic!("no \"changes\" array in {summary}"))
        .iter()
        .map(|c| {
            let target = c["target"].as_str().unwrap_or_default();
            let (guid, port) = parse_target(target)
                .unwrap_or_else(|| panic!("change target {target:?} is not GUID[port]: {c}"));
            let node = rb
                .node_of(guid)
                .unwrap_or_else(|| panic!("change target {target:?}: no node has that GUID"));
            (
                (node.to_owned(), port),
                c["attribute"].as_str().unwrap_or_default().to_owned(),
                c["sent"] == true,
                c.to_string(),
            )
        })
        .collect()
}

/// An intruder (a second `ibqos sm --once` at H4 with other CA tables) rewrites every CA's SL2VL
/// and VLArb behind the daemon's back; within two sweeps the daemon has put back its own
/// tables, and its summaries name the port.
#[test]
fn restores_tables_changed_behind_its_back() {
    let dir = TestDir::new("qos-daemon-intruder");
    let mut s = start(&dir, false);
    let victim: PortKey = ("H3".to_owned(), 1);

    s.pause().unwrap();
    let intruder_dir = dir.subdir("intruder");
    let conf = intruder_dir.join("opensm.conf");
    std::fs::write(
        &conf,
        "qos TRUE\nqos_ca_sl2vl 1,1,1,1,1,1,1,1,2,2,2,2,2,2,2,2\n\
         qos_ca_vlarb_low 0:99,1:98,2:97\nqos_ca_vlarb_high 3:33\n",
    )
    .unwrap();
    SmInvocation::new(SmFabric::Native, "H4", &intruder_dir.join("cache"))
        .opensm_conf(&conf)
        .run_up(&s.ibqos, &s.sim)
        .unwrap_or_else(|e| panic!("the intruder: {e}"));
    let intruded = s.read("after the intruder");
    let changed = ibqos_tests::qos::differences(&s.programmed, &intruded);
    for setting in [Setting::Sl2Vl, Setting::VlArb] {
        assert!(
            changed
                .iter()
                .any(|(k, st, _)| *k == victim && *st == setting),
            "the intruder did not change {setting:?} of {}: the test changed nothing behind \
             the daemon's back. Differences: {changed:?}",
            port_name(&victim)
        );
    }
    s.daemon.signal("CONT").unwrap();

    let sweeps = [s.summary(), s.summary()];
    let restored = s.read("two sweeps after the intruder");
    let mut f = Failures::new("daemon after an intruder changed the CA tables");
    compare_fabrics(
        &mut f,
        &restored,
        &s.programmed,
        "fabric two sweeps after the intruder",
        "fabric after the daemon's first sweep",
    );
    let named: Vec<_> = sweeps
        .iter()
        .flat_map(|sw| changes(sw, &s.programmed))
        .filter(|(k, _, sent, _)| *k == victim && *sent)
        .collect();
    for attribute in ["VlArbitrationTable", "SlToVlMappingTable"] {
        f.check(named.iter().any(|(_, a, _, _)| a == attribute), || {
            format!(
                "the two sweeps after the intruder list no sent {attribute} change of {} \
                 (its changes: {named:?}); summaries:\n{}\n{}",
                port_name(&victim),
                sweeps[0],
                sweeps[1]
            )
        });
    }
    for sweep in &sweeps {
        f.check(
            sweep["mode"] == "diff" && sweep["subnet_up"] == true,
            || format!("a sweep after the intruder is not a diff sweep to SUBNET UP: {sweep}"),
        );
    }
    f.assert_none();
    s.stop();
}

/// `Unlink "S2"[1]` takes H3 off the fabric; `ReLink "S2"[1]` brings it back in INIT. Within two
/// sweeps the daemon has made it ACTIVE again, with the tables it had before the unlink.
#[test]
fn relinked_port_comes_back_active_with_its_tables() {
    let dir = TestDir::new("qos-daemon-relink");
    let mut s = start(&dir, true);
    let (nodes, _, _) = s.fabric.expected_counts();

    s.pause().unwrap();
    s.sim.console(r#"Unlink "S2"[1]"#).unwrap();
    s.daemon.signal("CONT").unwrap();
    let unlinked = s.summary();
    assert_eq!(
        unlinked["nodes"].as_u64(),
        Some(nodes - 1),
        "a full sweep after `Unlink \"S2\"[1]` should find every node but H3: {unlinked}"
    );

    s.pause().unwrap();
    s.sim.console(r#"ReLink "S2"[1]"#).unwrap();
    let relinked = s.read("right after ReLink");
    let h3 = ("H3".to_owned(), 1);
    let state = relinked.port(&h3).map(|p| p.info.link_state.clone());
    assert_ne!(
        state.as_deref(),
        Some("Active"),
        "H3[1] is Active right after ReLink, before the daemon swept: the test proves nothing"
    );
    s.daemon.signal("CONT").unwrap();

    let sweeps = [s.summary(), s.summary()];
    let after = s.read("two sweeps after ReLink");
    let mut f = Failures::new("daemon after Unlink/ReLink of S2[1]");
    compare_fabrics(
        &mut f,
        &after,
        &s.programmed,
        "fabric two sweeps after ReLink",
        "fabric before the unlink",
    );
    f.check(
        sweeps[1]["subnet_up"] == true && sweeps[1]["nodes"].as_u64() == Some(nodes),
        || {
            format!(
                "second sweep after ReLink is not SUBNET UP with all {nodes} nodes: {}",
                sweeps[1]
            )
        },
    );
    f.assert_none();
    s.stop();
}

/// SIGHUP after an edit that changes only `qos_ca_vlarb_low`: the next sweep sends VLArb to CA
/// ports and nothing else; switch tables stay as they were; the sweep after sends nothing.
#[test]
fn sighup_applies_only_the_changed_class() {
    let dir = TestDir::new("qos-daemon-sighup");
    let mut s = start(&dir, false);
    let new_conf = DAEMON_CONF.replace(
        "qos_ca_vlarb_low 0:10,1:20,2:30,3:40,4:50,5:60,6:70,7:80",
        "qos_ca_vlarb_low 0:80,1:70,2:60,3:50,4:40,5:30,6:20,7:10",
    );
    assert_ne!(new_conf, DAEMON_CONF);
    // Between two sweeps (paused), so the summary after SIGCONT is of the sweep the SIGHUP
    // starts at once.
    s.pause().unwrap();
    let conf = write_opensm_conf(dir.path(), &new_conf).unwrap();
    s.daemon.signal("HUP").unwrap();
    s.daemon.signal("CONT").unwrap();
    let reloaded = s.summary();
    let quiet = s.summary();
    let after = s.read("after SIGHUP");

    let mut f = Failures::new("daemon after SIGHUP with a new qos_ca_vlarb_low");
    let sent: Vec<_> = changes(&reloaded, &s.programmed)
        .into_iter()
        .filter(|c| c.2)
        .collect();
    let is_ca = |key: &PortKey| {
        s.fabric
            .topology
            .node(&key.0)
            .is_some_and(|n| n.kind == NodeKind::Ca)
    };
    f.check(!sent.is_empty(), || {
        format!("the sweep after SIGHUP sent no change: {reloaded}")
    });
    for (key, attribute, _, raw) in &sent {
        f.check(
            is_ca(key)
                && ["VlArbitrationTable", "SlToVlMappingTable"].contains(&attribute.as_str()),
            || {
                format!(
                    "the sweep after SIGHUP sent a change that is not a CA QoS table: {} \
                     {attribute}: {raw}",
                    port_name(key)
                )
            },
        );
    }
    let ca_ports: Vec<PortKey> = s
        .programmed
        .ports
        .keys()
        .filter(|k| is_ca(k))
        .cloned()
        .collect();
    for key in &ca_ports {
        f.check(
            sent.iter()
                .any(|(k, a, _, _)| k == key && a == "VlArbitrationTable"),
            || {
                format!(
                    "{}: no VLArb change sent after SIGHUP: {reloaded}",
                    port_name(key)
                )
            },
        );
    }
    // The CA ports now hold the new plan; everything else is as the first sweep left it.
    for key in &ca_ports {
        let port = &after.ports[key];
        let Some(tables) = &port.vlarb else {
            f.check(false, || {
                format!("{}: no VLArb tables read back", port_name(key))
            });
            continue;
        };
        let caps = PlanCaps {
            vls: port.info.vl_cap,
            oper_vls: port.info.oper_vls,
            low_cap: tables.low_cap,
            high_cap: tables.high_cap,
        };
        let plan = planner::plan(&s.ibqos, &conf, PortClass::Ca, caps).unwrap();
        f.check(tables.low == plan.vlarb_low, || {
            format!(
                "{}: VLArb low after SIGHUP is {:?}, `ibqos plan` with the new config gives {:?}",
                port_name(key),
                tables.low,
                plan.vlarb_low
            )
        });
    }
    compare_ports(
        &mut f,
        &after,
        &s.programmed,
        "fabric after SIGHUP",
        "fabric before SIGHUP",
        &|k| !is_ca(k),
    );
    f.check(
        quiet["changes"].as_array().is_some_and(Vec::is_empty) && quiet["subnet_up"] == true,
        || format!("the sweep after the SIGHUP sweep should change nothing: {quiet}"),
    );
    f.assert_none();
    s.stop();
}
