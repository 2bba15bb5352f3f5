//! `ibqos sim` shows a credit loop: minhop on a 4x4 torus (four hosts on each switch) under
//! all-to-all traffic closes one round a ring, the run stops, names it and exits with status
//! 3; up*/down* on the same torus and traffic runs to the end, and so do the engines that
//! break the torus's credit loops with SLs and VLs (LASH, DFSSSP, Nue, torus-2QoS), each flow on
//! the SL the routing chose for its pair and the switches' tables as the routing left them.

use std::path::{Path, PathBuf};

use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::{PortRef, Topology};
use serde_json::Value;
use tempfile::TempDir;

mod common;
use common::{ibqos, json_report, scratch_file, torus_4x4_net};

/// Every host sends to every other as fast as it can, on SL 0.
const ALL_TO_ALL: &str = "duration_us = 300\n[[pattern]]\nkind = \"all-to-all\"\npayload = 2048\n";

/// The torus, its traffic, an opensm.conf whose root file names S0_0 (up*/down* finds no
/// root on a torus by itself), and its torus-2QoS.conf.
struct Torus {
    dir: TempDir,
    net: PathBuf,
    traffic: PathBuf,
    conf: PathBuf,
    torus_conf: PathBuf,
}

fn torus() -> Torus {
    let dir = tempfile::tempdir().unwrap();
    let (net, torus_conf) = torus_4x4_net(&dir, 4);
    let topo = parse_net_file(&net).unwrap().topology;
    let root = topo.node(topo.node_by_name("S0_0").unwrap()).unwrap().guid;
    let roots = scratch_file(&dir, "roots", format!("{root:#018x}\n"));
    let conf = format!("root_guid_file {}\n", roots.display());
    Torus {
        traffic: scratch_file(&dir, "traffic.toml", ALL_TO_ALL),
        conf: scratch_file(&dir, "opensm.conf", conf),
        torus_conf,
        net,
        dir,
    }
}

/// An opensm.conf routing with `engine` alone, with QoS and VLs for its layers.
fn layered_conf(torus: &Torus, engine: &str) -> PathBuf {
    let conf = format!(
        "routing_engine {engine},no_fallback\n{LAYERED}torus_config {}\n",
        torus.torus_conf.display()
    );
    scratch_file(&torus.dir, &format!("opensm-{engine}.conf"), conf)
}

/// QoS on, SL i on VL i at every port, and eight data VLs on every link (the generated
/// ports' VLCap): each layer the engines make gets a VL of its own. torus-2QoS routes only
/// with QoS on; Nue takes as many layers as the ports run, and routes the switches on them too.
const LAYERED: &str = "qos TRUE\nmax_op_vls 4\nqos_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7\n\
                       nue_max_num_vls 0\nnue_include_switches TRUE\n";

/// `ibqos sim` on the torus, routed by `engine`, with `extra` arguments.
fn sim(torus: &Torus, engine: &str, extra: &[&str]) -> std::process::Output {
    sim_with(torus, &torus.conf, Some(engine), extra)
}

/// `ibqos sim` on the torus with the configuration `conf`, routed by `engine` if given, else
/// by the configuration's engines.
fn sim_with(
    torus: &Torus,
    conf: &Path,
    engine: Option<&str>,
    extra: &[&str],
) -> std::process::Output {
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (net, conf, traffic) = (path(&torus.net), path(conf), path(&torus.traffic));
    let mut args = vec![
        "sim",
        "--topology",
        &net,
        "-F",
        &conf,
        "--traffic",
        &traffic,
    ];
    if let Some(engine) = engine {
        args.extend(["--routing-engine", engine]);
    }
    args.extend(extra);
    ibqos(&args)
}

/// The cycle's channels as the checker prints them, `"S0_1"/P2 VL0`.
fn cycle(deadlock: &Value) -> Vec<String> {
    let channels = deadlock["cycle"].as_array().unwrap();
    channels
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect()
}

/// The port a channel's name leaves by.
fn port_of(topo: &Topology, channel: &str) -> PortRef {
    let (node, rest) = channel.trim_start_matches('"').split_once("\"/P").unwrap();
    let port = rest.split(' ').next().unwrap().parse().unwrap();
    PortRef::new(topo.node_by_name(node).unwrap(), port)
}

#[test]
fn minhop_deadlocks_the_torus_and_the_run_names_the_loop() {
    let torus = torus();
    let output = sim(&torus, "minhop", &["--json"]);
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: the fabric deadlocked at"),
        "{stderr}"
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let deadlock = &report["deadlock"];
    let channels = cycle(deadlock);
    assert!(channels.len() >= 2, "{deadlock}");
    // A cycle: each channel's far end is on the switch the next one leaves.
    let topo = parse_net_file(&torus.net).unwrap().topology;
    for (k, channel) in channels.iter().enumerate() {
        let next = &channels[(k + 1) % channels.len()];
        let far = topo.peer(port_of(&topo, channel)).unwrap();
        assert_eq!(far.node, port_of(&topo, next).node, "{deadlock}");
    }
    // Stopped: nothing was simulated past the loop's discovery.
    let at_ns = deadlock["at_ns"].as_u64().unwrap();
    assert!(
        at_ns < report["duration_ns"].as_u64().unwrap(),
        "{deadlock}"
    );
    // The text names the same channels, in the same order.
    let text = sim(&torus, "minhop", &[]);
    assert_eq!(text.status.code(), Some(3));
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("DEADLOCK at "), "{text}");
    let listed: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.starts_with("The cycle"))
        .skip(1)
        .take_while(|line| !line.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(listed, channels);
}

#[test]
fn updn_on_the_same_torus_and_traffic_runs_to_the_end() {
    let torus = torus();
    let report = json_report(sim(&torus, "updn,no_fallback", &["--json"]));
    assert!(report.get("deadlock").is_none(), "{}", report["deadlock"]);
    assert_eq!(report["duration_ns"], 300_000);
}

/// The VLs that carried packets between two switches.
fn switch_link_vls(report: &Value) -> Vec<u64> {
    let switch = |end: &Value| {
        end.as_str()
            .unwrap()
            .trim_start_matches('"')
            .starts_with('S')
    };
    let mut vls: Vec<u64> = report["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|link| switch(&link["from"]) && switch(&link["to"]))
        .flat_map(|link| link["vls"].as_array().unwrap())
        .filter(|vl| vl["packets"].as_u64().unwrap() > 0)
        .map(|vl| vl["vl"].as_u64().unwrap())
        .collect();
    vls.sort_unstable();
    vls.dedup();
    vls
}

/// The engines that break the torus's credit loops with SLs and VLs run the traffic that
/// deadlocks minhop to its end, their layers on several VLs; minhop, with the same
/// configuration, still deadlocks: the VLs alone do not free it.
#[test]
fn layered_engines_on_the_same_torus_and_traffic_run_to_the_end() {
    let torus = torus();
    for engine in ["lash", "dfsssp", "torus-2QoS", "nue"] {
        let conf = layered_conf(&torus, engine);
        let output = sim_with(&torus, &conf, None, &["--json"]);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{engine}: {stderr}");
        let report = json_report(output);
        assert!(
            report.get("deadlock").is_none(),
            "{engine}: {}",
            report["deadlock"]
        );
        assert_eq!(report["duration_ns"], 300_000, "{engine}");
        let vls = switch_link_vls(&report);
        assert!(vls.len() > 1, "{engine} used VLs {vls:?}");
        let sls = report["sls"].as_array().unwrap();
        assert!(sls.len() > 1, "{engine} used SLs {sls:?}");
    }
    let minhop = sim_with(&torus, &layered_conf(&torus, "minhop"), None, &["--json"]);
    assert_eq!(minhop.status.code(), Some(3), "{minhop:?}");
}

/// The checker, the simulator's independent witness, agrees: with that same configuration
/// `ibqos credit-loops` finds minhop's loop on the torus and none where LASH, torus-2QoS or
/// Nue route (their path SLs through the layering, their tables as planned). DFSSSP's routes
/// between hosts are free, but it never checks paths that start at a switch (OpenSM's
/// `dfsssp_remove_deadlocks` adds no channel for them), and those close loops on VL0: every
/// loop the checker names there has a closing route from a switch's port 0.
#[test]
fn the_checker_agrees_with_the_simulator_on_the_layered_engines() {
    let torus = torus();
    let net = torus.net.to_str().unwrap();
    let engines = [
        ("minhop", 1),
        ("lash", 0),
        ("torus-2QoS", 0),
        ("nue", 0),
        ("dfsssp", 1),
    ];
    for (engine, status) in engines {
        let conf = layered_conf(&torus, engine);
        let output = ibqos(&[
            "credit-loops",
            "--topology",
            net,
            "-F",
            conf.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(
            output.status.code(),
            Some(status),
            "{engine}: {text}{stderr}"
        );
        assert!(
            text.contains(&format!("(routed by {engine})")),
            "{engine}: {text}"
        );
        if status == 0 {
            assert!(text.contains("No credit loop"), "{engine}: {text}");
        }
        if engine == "dfsssp" {
            let loops: Vec<&str> = text.split("\nLoop ").skip(1).collect();
            assert!(!loops.is_empty(), "{text}");
            for found in loops {
                assert!(
                    found.lines().any(starts_at_a_switch),
                    "a loop without a switch's path: {found}"
                );
            }
        }
    }
}

/// Whether a closing route of the checker's report, `... : LID 1 "S0_0"[0] to LID ...`, starts
/// at a switch's port 0 (the torus's switches are named S, its hosts H).
fn starts_at_a_switch(line: &str) -> bool {
    let Some((_, route)) = line.split_once(": LID ") else {
        return false;
    };
    let source = route.split(" to ").next().unwrap_or_default();
    source.contains(" \"S") && source.ends_with("[0]")
}

/// A run on two threads does not watch: it says so, and runs the frozen fabric to its end.
#[test]
fn a_run_on_two_threads_says_it_does_not_watch() {
    let torus = torus();
    let output = sim(&torus, "minhop", &["--json", "--threads", "2"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("only a run on one thread watches for credit loops"),
        "{stderr}"
    );
    let report = json_report(output);
    assert!(report.get("deadlock").is_none());
}
