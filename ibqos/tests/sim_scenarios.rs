//! `ibqos sim` against results worked out by hand from the arbitration and credit rules.
//!
//! Every scenario runs on one 8-port switch S1 with hosts H1-H4 (H4 the destination), links
//! 4x QDR = 32 Gb/s. A 4096-byte payload is 4096 + 26 header bytes = 65 blocks = 4160 bytes on
//! the wire, 1040 ns; a 2048-byte payload is 33 blocks, 2112 bytes, 528 ns; 256 bytes is 5
//! blocks, 320 bytes, 80 ns. Each expectation states its tolerance and why.

mod common;

use std::process::Output;

use common::{STAR_NET, assert_near, flow_of, ibqos, json_report, num, scratch_file};
use ibqos_fabric::dump::FabricDump;
use ibqos_qos::VlCount;
use serde_json::Value;

const LINK: &str = r#"
duration_us = 200
[link]
speed = "QDR"
width = 4
propagation_ns = 5
vl_buffer_bytes = 65536
credit_latency_ns = 100
"#;

/// Runs the star with opensm.conf `conf` and `traffic`, returns the JSON report.
fn simulate(name: &str, conf: &str, traffic: &str, extra: &[&str]) -> Value {
    json_report(run(name, conf, traffic, extra))
}

fn run(name: &str, conf: &str, traffic: &str, extra: &[&str]) -> Output {
    run_with(name, "opensm.conf", conf, traffic, extra)
}

/// Runs the star with the configuration `conf` written as `file` (an ibqos.toml by its name).
fn run_with(name: &str, file: &str, conf: &str, traffic: &str, extra: &[&str]) -> Output {
    let dir = tempfile::Builder::new().prefix(name).tempdir().unwrap();
    let net = scratch_file(&dir, "star.net", STAR_NET);
    let conf = scratch_file(&dir, file, conf);
    let traffic = scratch_file(&dir, "traffic.toml", traffic);
    let flag = if file.ends_with(".toml") { "-c" } else { "-F" };
    let mut args = vec![
        "sim",
        "--topology",
        net.to_str().unwrap(),
        flag,
        conf.to_str().unwrap(),
        "--traffic",
        traffic.to_str().unwrap(),
        "--json",
    ];
    args.extend(extra);
    ibqos(&args)
}

fn flow(name: &str, src: &str, sl: u8, payload: u32, rest: &str) -> String {
    format!(
        "[[flow]]\nname = \"{name}\"\nsrc = \"{src}\"\ndst = \"H4\"\nsl = {sl}\npayload = {payload}\n{rest}\n"
    )
}

/// Bytes of `vl` on the link `from` -> `to` (0 if the VL carried nothing).
fn vl_field(report: &Value, from: &str, to: &str, vl: u64, field: &str) -> f64 {
    let link = report["links"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["from"] == from && l["to"] == to)
        .unwrap_or_else(|| panic!("no link {from} -> {to}"));
    link["vls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["vl"] == vl)
        .map_or(0.0, |v| v[field].as_f64().unwrap())
}

fn share(report: &Value, vl: u64) -> f64 {
    vl_field(report, "S1[4]", "H4[1]", vl, "share")
}

/// Only the low table: every SL n on VL n, the high table empty.
fn low_only(low: &str) -> String {
    format!(
        "qos TRUE\nqos_vlarb_high 0:0\nqos_vlarb_low {low}\nqos_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
    )
}

/// Two saturated VLs into S1[4] share it in proportion to what their weights let them send
/// per turn (overshoot forgiven: an entry sends while it has weight left):
/// - 4 KB packets (65 blocks), weights 64:192: VL0 sends 1 packet per turn (64 < 65), VL1
///   sends at used = 0, 65, 130 < 192, i.e. 3: shares 1/4 and 3/4.
/// - 256-byte packets (5 blocks), weights 20:60: 4 and 12 packets: 1/4 and 3/4 again.
///
/// Tolerance 0.01: only the first turn and the last packet at the cut-off can differ.
#[test]
fn saturated_vls_share_in_proportion_to_their_weights() {
    for (weights, payload) in [("0:64,1:192", 4096), ("0:20,1:60", 256)] {
        let traffic = format!(
            "{LINK}{}{}",
            flow("a", "H1", 0, payload, ""),
            flow("b", "H2", 1, payload, "")
        );
        let report = simulate("weights", &low_only(weights), &traffic, &[]);
        assert_near(share(&report, 0), 0.25, 0.01, weights);
        assert_near(share(&report, 1), 0.75, 0.01, weights);
        // The link is saturated.
        let utilization = vl_field(&report, "S1[4]", "H4[1]", 0, "utilization")
            + vl_field(&report, "S1[4]", "H4[1]", 1, "utilization");
        assert_near(utilization, 1.0, 0.01, "utilization");
    }
}

/// H1 sends 4 KB packets back to back for 200 us: 32 Gb/s x 200 us = 800,000 bytes, 192.3
/// packets of 4160 bytes. The packet still leaving H1 at the end counts only the 64-byte blocks
/// sent by then, so the link reports at most its rate, within a block of it (the first packet
/// leaves at 0, and the link is never idle).
#[test]
fn a_saturated_link_carries_no_more_than_its_rate() {
    let report = simulate(
        "saturated",
        &low_only("0:255"),
        &format!("{LINK}{}", flow("f", "H1", 0, 4096, "")),
        &[],
    );
    let bytes = vl_field(&report, "H1[1]", "S1[1]", 0, "bytes");
    assert!(
        (800_000.0 - 64.0..=800_000.0).contains(&bytes),
        "{bytes} bytes"
    );
    let utilization = vl_field(&report, "H1[1]", "S1[1]", 0, "utilization");
    assert!((0.9999..=1.0).contains(&utilization), "{utilization}");
    // The flow's own figure counts packets delivered: whole ones.
    let delivered = num(&flow_of(&report, "f")["delivered_bytes"]);
    assert_eq!(delivered % 4096.0, 0.0);
}

/// VL0 in the high table (0:255), VL1 in the low table (1:255), both saturated with 4 KB
/// packets (4160 bytes on the wire). With high limit L, high packets start while fewer than
/// L x 4096 bytes were sent since the low table's last opportunity, and at least one:
/// - L = 2: 0 and 4160 < 8192, 8320 is not: 2 high packets, then 1 low: VL0 share 2/3;
/// - L = 0: one high packet, then one low: 1/2 (alternating);
/// - L = 255: unbounded: the low table starves: VL1 share 0.
///
/// Tolerance 0.01 (the start and the cut-off).
#[test]
fn high_limit_bounds_high_priority_bursts() {
    let traffic = format!(
        "{LINK}{}{}",
        flow("high", "H1", 0, 4096, ""),
        flow("low", "H2", 1, 4096, "")
    );
    for (limit, expected) in [(2, 2.0 / 3.0), (0, 0.5), (255, 1.0)] {
        let conf = format!(
            "qos TRUE\nqos_high_limit {limit}\nqos_vlarb_high 0:255\nqos_vlarb_low 1:255\nqos_sl2vl 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
        );
        let report = simulate("highlimit", &conf, &traffic, &[]);
        let what = format!("high limit {limit}");
        assert_near(share(&report, 0), expected, 0.01, &what);
        assert_near(share(&report, 1), 1.0 - expected, 0.01, &what);
    }
}

/// The switches map SL2 to VL15, the hosts map SL3 to VL15.
/// - SL2 from H1: every packet reaches S1 and is dropped there; S1 frees its buffer at once,
///   so H1 sends at line rate: nothing delivered, every packet sent is dropped except the one
///   or two still on the wire at the end.
/// - SL3 from H3: H3 drops every packet itself, one per 1040 ns (line rate) from t = 0:
///   t = 0, 1040, ..., 199,680 < 200,000: exactly 193 packets.
/// - SL0 from H2, alone on S1[4], gets the whole link: 32 x 4096/4160 = 31.51 Gb/s of
///   payload, within 1 %.
#[test]
fn an_sl_mapped_to_vl15_delivers_nothing() {
    let conf = "qos TRUE\nqos_ca_sl2vl 0,1,2,15,4,5,6,7,8,9,10,11,12,13,14,15\n\
                qos_swe_sl2vl 0,1,15,3,4,5,6,7,8,9,10,11,12,13,14,15\n";
    let traffic = format!(
        "{LINK}{}{}{}",
        flow("to-vl15-at-switch", "H1", 2, 4096, ""),
        flow("to-vl15-at-host", "H3", 3, 4096, ""),
        flow("fine", "H2", 0, 4096, "")
    );
    let report = simulate("vl15", conf, &traffic, &[]);
    assert_drops(&report, "to-vl15-at-switch", "to-vl15-at-host", 15);
    assert_alone_on_the_link(&report, "fine");
}

/// Flow `at_switch` is dropped at S1 on `vl` out of port 4 (every packet it sent but the one
/// or two on the wire, counted there), flow `at_host` by its source, one packet per 1040 ns
/// from t = 0 (193 in 200 us); neither delivers anything.
fn assert_drops(report: &Value, at_switch: &str, at_host: &str, vl: u64) {
    let switch = flow_of(report, at_switch);
    assert_eq!(switch["delivered_bytes"], 0);
    let (sent, dropped) = (
        num(&switch["sent_packets"]),
        num(&switch["dropped_packets"]),
    );
    assert!(sent > 190.0 && dropped >= sent - 2.0, "{switch}");
    assert_eq!(
        vl_field(report, "S1[4]", "H4[1]", vl, "dropped_packets"),
        dropped
    );
    let host = flow_of(report, at_host);
    assert_eq!(host["delivered_bytes"], 0);
    assert_eq!(host["dropped_packets"], 193);
}

/// Flow `name`, alone on S1[4] -> H4[1], gets the whole link: 32 x 4096/4160 Gb/s of
/// payload, within 1 %.
fn assert_alone_on_the_link(report: &Value, name: &str) {
    assert_near(
        num(&flow_of(report, name)["throughput_gbps"]),
        32.0 * 4096.0 / 4160.0,
        0.01 * 31.5,
        name,
    );
}

/// `--tables`: the simulator runs a dump's tables as they are, OperVLs included. The star as
/// powered on (`ibqos fabric dump`: SL n on VL n everywhere, every port running 8 VLs), with
/// two ports edited to run fewer VLs: S1's port 4 runs VL0-1, so the S1[4]-H4[1] link does;
/// H3's port runs VL0 only.
/// - SL5 from H1: S1 maps it to VL5 out of port 4, which the link does not run: dropped there,
///   counted on VL5 of S1[4] -> H4[1], nothing delivered (but the one or two on the wire).
/// - SL1 from H3: VL1 at its source, which its link does not run: H3 drops every packet, one per
///   1040 ns from t = 0: exactly 193 packets, as for VL15 above.
/// - SL1 from H2: VL1, which S1[4] runs: the whole link, 31.51 Gb/s of payload, within 1 %.
#[test]
fn held_tables_drop_what_maps_to_a_vl_the_link_does_not_run() {
    let dir = tempfile::Builder::new().prefix("held").tempdir().unwrap();
    let net = scratch_file(&dir, "star.net", STAR_NET);
    let power_on = ibqos(&["fabric", "dump", net.to_str().unwrap()]);
    assert!(power_on.status.success());
    let mut dump = FabricDump::from_json(&String::from_utf8(power_on.stdout).unwrap()).unwrap();
    let mut oper_vls = |node: &str, port: u8, encoding: u8| {
        let held = dump.nodes.values_mut().find(|n| n.name == node).unwrap();
        held.ports.get_mut(&port).unwrap().oper_vls = encoding;
    };
    oper_vls("leaf", 4, VlCount::Two.encoding());
    oper_vls("host-three", 1, VlCount::One.encoding());
    let tables = scratch_file(&dir, "held.json", dump.to_json());
    let traffic = scratch_file(
        &dir,
        "traffic.toml",
        format!(
            "{LINK}{}{}{}",
            flow("beyond-the-link", "H1", 5, 4096, ""),
            flow("at-host", "H3", 1, 4096, ""),
            flow("fine", "H2", 1, 4096, "")
        ),
    );
    let report = json_report(ibqos(&[
        "sim",
        "--topology",
        net.to_str().unwrap(),
        "--tables",
        tables.to_str().unwrap(),
        "--traffic",
        traffic.to_str().unwrap(),
        "--json",
    ]));
    assert_drops(&report, "beyond-the-link", "at-host", 5);
    assert_alone_on_the_link(&report, "fine");
}

/// `--tables` refuses what it cannot run exactly, saying why and where: a dump without a node
/// of the topology, a file that is no dump, and a configuration besides (its tables would be
/// ignored).
#[test]
fn held_tables_that_do_not_fit_are_refused_with_the_reason() {
    let dir = tempfile::Builder::new().prefix("unfit").tempdir().unwrap();
    let net = scratch_file(&dir, "star.net", STAR_NET);
    let power_on = ibqos(&["fabric", "dump", net.to_str().unwrap()]);
    let mut dump = FabricDump::from_json(&String::from_utf8(power_on.stdout).unwrap()).unwrap();
    dump.nodes.retain(|_, node| node.name != "host-four");
    let without_h4 = scratch_file(&dir, "without-h4.json", dump.to_json());
    let not_a_dump = scratch_file(&dir, "not-a-dump.json", "{\"nodes\": 3}\n");
    let conf = scratch_file(&dir, "opensm.conf", "qos TRUE\n");
    let traffic = scratch_file(
        &dir,
        "traffic.toml",
        format!("{LINK}{}", flow("f", "H1", 0, 256, "")),
    );
    // clap's usage errors exit 2, ibqos's own 1.
    let sim = |extra: &[&str], status: i32| {
        let mut args = vec![
            "sim",
            "--topology",
            net.to_str().unwrap(),
            "--traffic",
            traffic.to_str().unwrap(),
        ];
        args.extend(extra);
        let out = ibqos(&args);
        assert_eq!(out.status.code(), Some(status));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let error = sim(&["--tables", without_h4.to_str().unwrap()], 1);
    let expected = format!(
        "without-h4.json does not fit {}: \"H4\" (0x0002c90000100006): the dump has no node \
         with this NodeGUID",
        net.display()
    );
    assert!(error.contains(&expected), "{error}");
    let error = sim(&["--tables", not_a_dump.to_str().unwrap()], 1);
    assert!(
        error.contains("not-a-dump.json is no fabric dump"),
        "{error}"
    );
    let both = [
        "--tables",
        without_h4.to_str().unwrap(),
        "-F",
        conf.to_str().unwrap(),
    ];
    let error = sim(&both, 2);
    assert!(error.contains("cannot be used with"), "{error}");
}

/// Buffers of 4224 bytes (66 credits: two 2048-byte packets of 33), propagation 100 ns,
/// credit latency 1000 ns. A packet H1 starts at t reaches S1 at t + 528 + 100, leaves it at
/// once and is out at t + 1156, when S1 frees its blocks; the credits reach H1 at
/// t + 1156 + 1000 + 100 = t + 2256. So H1 sends two packets per 2256 ns:
/// 2 x 2048 x 8 / 2256 ns = 14.52 Gb/s, well below the 31.03 Gb/s of payload the link carries
/// (the bandwidth-delay product, 2256 ns x 32 Gb/s = 9 KB, exceeds the buffer). With 64 KB
/// buffers the same flow runs at 31.03 Gb/s. Tolerance 2 % (the first round trip and the
/// cut-off).
#[test]
fn small_buffers_cap_throughput_at_buffer_over_round_trip() {
    let link = |buffer: u32| {
        format!(
            "duration_us = 200\n[link]\nspeed = \"QDR\"\nwidth = 4\npropagation_ns = 100\nvl_buffer_bytes = {buffer}\ncredit_latency_ns = 1000\n{}",
            flow("f", "H1", 0, 2048, "")
        )
    };
    let conf = low_only("0:255");
    let capped = simulate("buffer-small", &conf, &link(4224), &[]);
    let expected = 2.0 * 2048.0 * 8.0 / 2256.0;
    let got = num(&flow_of(&capped, "f")["throughput_gbps"]);
    assert_near(got, expected, 0.02 * expected, "4224-byte buffers");
    // H1 waits for credits most of the time: (2256 - 2 x 528) / 2256 = 53 % of the run.
    let blocked = vl_field(&capped, "H1[1]", "S1[1]", 0, "blocked_ns");
    assert_near(
        blocked / 200_000.0,
        1200.0 / 2256.0,
        0.02,
        "blocked fraction",
    );

    let free = simulate("buffer-large", &conf, &link(65536), &[]);
    let line = 32.0 * 2048.0 / 2112.0;
    let got = num(&flow_of(&free, "f")["throughput_gbps"]);
    assert_near(got, line, 0.02 * line, "64 KB buffers");
}

/// H1 and H2 saturate S1[4] on SL0 (twice what it carries: queues and credit stalls build up)
/// while H3 sends 1 Gb/s of 256-byte management packets on VL15 to H4. VL15 outranks the data
/// VLs and needs no credits, so a management packet waits at most for the data packet being
/// sent at S1[4]: latency <= (80 + 5) + 1040 + (80 + 5) = 1210 ns, against tens of
/// microseconds for the data. It gets all of its 1 Gb/s through (tolerance 3 %: one packet of
/// ~98 at either end of the run), and the same as without the congestion (give or take the
/// one packet the congestion may hold past the end of the run).
#[test]
fn vl15_is_unaffected_by_data_congestion() {
    let conf = low_only("0:64");
    let smp = flow("smp", "H3", 0, 256, "rate_gbps = 1\nmanagement = true");
    // The management flow first, so that it is flow 0 (the same seeded phase) in both runs.
    let congested = format!(
        "{LINK}{smp}{}{}",
        flow("bulk1", "H1", 0, 4096, ""),
        flow("bulk2", "H2", 0, 4096, "")
    );
    let report = simulate("vl15-congested", &conf, &congested, &[]);
    let m = flow_of(&report, "smp");
    assert_near(
        num(&m["throughput_gbps"]),
        1.0,
        0.03,
        "management throughput",
    );
    assert_eq!(m["dropped_packets"], 0);
    assert!(num(&m["latency_ns"]["max"]) <= 1210.0, "{m}");
    let data_p50 = num(&flow_of(&report, "bulk1")["latency_ns"]["p50"]);
    assert!(data_p50 > 10_000.0, "data p50 {data_p50}");
    // Each bulk sender gets half of S1[4], so once S1's buffer for it is full (about 16
    // packets, 16 us) it waits for credits half the time: about 92 us of the 200.
    let blocked = vl_field(&report, "H1[1]", "S1[1]", 0, "blocked_ns");
    assert_near(blocked, 92_000.0, 8_000.0, "bulk sender blocked");

    let quiet = simulate("vl15-quiet", &conf, &format!("{LINK}{smp}"), &[]);
    let quiet_bytes = num(&flow_of(&quiet, "smp")["delivered_bytes"]);
    assert_near(
        num(&m["delivered_bytes"]),
        quiet_bytes,
        256.0,
        "same as quiet",
    );
}

const SEEDED: &str = r#"
duration_us = 50
[[pattern]]
kind = "permutation"
nodes = ["H1", "H2", "H3", "H4"]
sl = 1
payload = 1024
rate_gbps = 7
[[pattern]]
kind = "incast"
dst = "H4"
payload = 2048
"#;

/// The same seed gives the same JSON, byte for byte; the seed does change the run.
#[test]
fn the_same_seed_gives_the_same_json() {
    let conf = low_only("0:32,1:32");
    let a = run("seed-a", &conf, SEEDED, &["--seed", "5"]);
    let b = run("seed-b", &conf, SEEDED, &["--seed", "5"]);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    assert_eq!(a.stdout, b.stdout);
    let c = run("seed-c", &conf, SEEDED, &["--seed", "6"]);
    assert_ne!(a.stdout, c.stdout);
}

/// Bad traffic files fail with one located message and no panic.
#[test]
fn bad_traffic_is_reported_with_its_place() {
    let conf = low_only("0:32");
    let cases = [
        (
            flow("x", "H9", 0, 256, ""),
            "error[unknown-node]: unknown node `H9`",
            "traffic.toml:11:7\n",
        ),
        (
            flow("x", "S1", 0, 256, ""),
            "`S1` is a switch",
            "traffic.toml:11:7\n",
        ),
        (
            flow("x", "H1", 16, 256, ""),
            "error[sl-out-of-range]: SL 16 is out of range",
            "traffic.toml:13:6\n",
        ),
        (
            flow("x", "H1", 0, 5000, ""),
            "error[payload-out-of-range]: payload 5000 is out of range",
            "traffic.toml:14:11\n",
        ),
    ];
    for (traffic, expected, place) in cases {
        let output = run("bad", &conf, &format!("{LINK}{traffic}"), &[]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
        assert!(stderr.contains(place), "{place}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// qos-setup in the simulator: the port classes give VL0 and VL1 weights 64:192 (shares 1/4
/// and 3/4 into H4, as above); a vlarb-scope `across` a group holding H4 gives the switch port
/// facing it 192:64, so with `program_policy_setup` the shares there turn to 3/4 and 1/4, and
/// without it they stay the classes'. Tolerance 0.01, as above.
#[test]
fn the_simulator_runs_the_qos_setup_tables_the_sm_would_program() {
    let traffic = format!(
        "{LINK}{}{}",
        flow("a", "H1", 0, 4096, ""),
        flow("b", "H2", 1, 4096, "")
    );
    let toml = |program: bool| {
        format!(
            "[qos]\nenabled = true\nprogram_policy_setup = {program}\n\
             [qos.default]\nvlarb_high = []\n\
             vlarb_low = [{{ vl = 0, weight = 64 }}, {{ vl = 1, weight = 192 }}]\n\
             sl2vl = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\n\
             [[qos_policy.port_groups]]\nname = \"Sink\"\nport_names = [\"host-four/P1\"]\n\
             [[qos_policy.qos_levels]]\nname = \"DEFAULT\"\nsl = 0\n\
             [[qos_policy.vlarb_scopes]]\nacross = [\"Sink\"]\nvlarb_low = [\"0:192\", \"1:64\"]\n"
        )
    };
    for (program, vl0) in [(true, 0.75), (false, 0.25)] {
        let out = run_with("setup", "ibqos.toml", &toml(program), &traffic, &[]);
        let report = json_report(out);
        let what = format!("program_policy_setup = {program}");
        assert_near(share(&report, 0), vl0, 0.01, &what);
        assert_near(share(&report, 1), 1.0 - vl0, 0.01, &what);
    }
}

/// `ibqos sim` on the README's star example: its net file, opensm.conf and traffic file.
fn star_example() -> Vec<String> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    vec![
        "sim".to_string(),
        "--topology".into(),
        format!("{root}/examples/sim/star.net"),
        "-F".into(),
        format!("{root}/examples/sim/opensm.conf"),
        "--traffic".into(),
        format!("{root}/examples/sim/traffic.toml"),
    ]
}

/// The human report's totals per VL are the sums of the JSON report's per-link figures.
#[test]
fn the_vl_totals_of_the_text_report_sum_the_links() {
    let args = |json: bool| {
        let mut a = star_example();
        if json {
            a.push("--json".into());
        }
        a
    };
    let run = |json| {
        let args = args(json);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = ibqos(&refs);
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let json: Value = serde_json::from_str(&run(true)).unwrap();
    let text = run(false);
    let rows: Vec<Vec<u64>> = text
        .lines()
        .skip_while(|l| !l.starts_with("VL "))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| {
            l.split_whitespace()
                .map(|w| w.replace('.', "").parse::<u64>().unwrap())
                .collect()
        })
        .collect();
    assert!(!rows.is_empty(), "{text}");
    for row in rows {
        let vls: Vec<&Value> = json["links"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["vls"].as_array().unwrap())
            .filter(|v| v["vl"].as_u64() == Some(row[0]))
            .collect();
        let sum = |field: &str| vls.iter().map(|v| v[field].as_u64().unwrap()).sum::<u64>();
        // links, packets, bytes, blocked (ns, printed as us with three decimals), dropped
        assert_eq!(
            row[1..],
            [
                vls.len() as u64,
                sum("packets"),
                sum("bytes"),
                sum("blocked_ns"),
                sum("dropped_packets")
            ],
            "VL {}",
            row[0]
        );
    }
}

/// The text report says over which time each rate is (a flow's active time, the run for SLs
/// and links) and marks the latency percentiles that are histogram bucket bounds. The star
/// example's rpc-sl2 runs from 100 to 250 us of 300: its 16.166 Gb/s over its active time is
/// 8.083 Gb/s over the run.
#[test]
fn the_text_report_labels_each_rate_and_each_latency_bound() {
    let star = star_example();
    let args: Vec<&str> = star.iter().map(String::as_str).collect();
    let out = ibqos(&args);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let json = json_report(ibqos(&[&args[..], &["--json"]].concat()));
    // The caption above each table, then its header.
    let captions = [
        ("Flows: Gb/s over each flow's active time", "flow "),
        ("SLs: Gb/s over the whole run (300 us)", "SL "),
        (
            "Links: Gb/s and util over the whole run",
            "link (busiest first)",
        ),
    ];
    for (caption, header) in captions {
        let at = text
            .find(caption)
            .unwrap_or_else(|| panic!("no `{caption}`:\n{text}"));
        let next = text[at..].lines().nth(1).unwrap();
        assert!(next.starts_with(header), "`{caption}` then `{next}`");
    }
    let row = |first: &str| -> Vec<String> {
        let line = text.lines().find(|l| l.starts_with(first)).unwrap();
        line.split_whitespace().map(str::to_owned).collect()
    };
    let flow = flow_of(&json, "rpc-sl2");
    let (p50, p99, max) = (
        num(&flow["latency_ns"]["p50"]),
        num(&flow["latency_ns"]["p99"]),
        num(&flow["latency_ns"]["max"]),
    );
    // name, SL, sent, delivered, Gb/s, p50, p99, max, dropped: p50 and p99 are bucket bounds
    // (2687 in 2560-2687, 3206 the largest value in 3200-3327), max is exact.
    assert_eq!(
        row("rpc-sl2")[4..8],
        [
            "16.166".to_owned(),
            format!("<={p50}"),
            format!("<={p99}"),
            max.to_string()
        ]
    );
    assert_eq!(row("2 ")[3], "8.083");
    assert!(text.contains("(<=: a latency histogram bucket's upper bound"));
}

/// The latency CDF's x axis as a reader sees it, on the star example: each tick label drawn
/// once, and one at or below the lowest SL median (SL 2, between 2 and 3 us, sat left of the
/// first label, 10k, and each power of ten was labelled twice).
#[test]
fn the_latency_cdf_labels_its_whole_x_axis_once() {
    let dir = tempfile::Builder::new().prefix("cdf").tempdir().unwrap();
    let plots = dir.path().join("plots");
    let star = star_example();
    let args: Vec<&str> = star.iter().map(String::as_str).chain(["--json"]).collect();
    let json = json_report(ibqos(
        &[&args[..], &["--plot", plots.to_str().unwrap()]].concat(),
    ));
    let svg = std::fs::read_to_string(plots.join("latency_cdf.svg")).unwrap();
    // The x axis's labels are the centred texts that read as latencies: 500, 2k, 1.5M.
    let latency = |label: &str| -> Option<f64> {
        let (number, unit) = match label.strip_suffix('k') {
            Some(n) => (n, 1e3),
            None => label.strip_suffix('M').map_or((label, 1.0), |n| (n, 1e6)),
        };
        Some(number.parse::<f64>().ok()? * unit)
    };
    let labels: Vec<(&str, f64)> = svg
        .split("<text")
        .filter(|t| t.contains("text-anchor=\"middle\""))
        .filter_map(|t| {
            let label = t.split_once('>')?.1.split("</text>").next()?.trim();
            Some((label, latency(label)?))
        })
        .collect();
    assert!(labels.len() >= 5, "{labels:?}");
    for (i, (label, _)) in labels.iter().enumerate() {
        assert!(
            !labels[..i].iter().any(|(l, _)| l == label),
            "{label} twice: {labels:?}"
        );
    }
    let lowest_median = json["sls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|sl| num(&sl["latency_ns"]["p50"]))
        .fold(f64::INFINITY, f64::min);
    let lowest_label = labels.iter().map(|l| l.1).fold(f64::INFINITY, f64::min);
    assert!(
        lowest_label <= lowest_median,
        "{labels:?} against {lowest_median} ns"
    );
}
