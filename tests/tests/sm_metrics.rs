//! `ibqos sm`'s Prometheus metrics, as monitoring reads them. The daemon runs on the emulated
//! fabric (`ibqos fabric serve` on two-switch.net) with `--metrics-listen` and
//! `--metrics-textfile`. curl scrapes the endpoint, and promtool (Debian package prometheus) checks
//! every exposition. The counters must follow the fabric: tables rewritten behind the SM's back by
//! another SM show up as drift found and then repaired. The textfile must always be whole: it is
//! replaced by a rename, never rewritten in place. With `perfmgr_lanes`, the PerfMgr's per-VL
//! and per-SL series must hold what the emulated PMAs count.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use ibqos_tests::daemon::Daemon;
use ibqos_tests::perfquery::{counter_preset, serve_with_presets};
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::{Fabric, testdata};
use ibqos_tests::sm::{DAEMON_CONF, SmFabric, SmInvocation, write_opensm_conf};
use ibqos_tests::tool::Tool;
use ibqos_tests::{Ibsim, SimTools, TestDir};
use serde_json::Value;

const SUMMARY_TIMEOUT: Duration = Duration::from_secs(30);
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// The other SM's CA tables, unlike the daemon's in SL2VL, both VLArb tables and VLHighLimit.
const INTRUDER_CONF: &str = "qos TRUE\nqos_ca_sl2vl 1,1,1,1,1,1,1,1,2,2,2,2,2,2,2,2\n\
                             qos_ca_vlarb_low 0:99,1:98,2:97\nqos_ca_vlarb_high 3:33\n\
                             qos_ca_high_limit 9\n";

/// The samples of an exposition, by series (name and labels as written).
type Samples = BTreeMap<String, f64>;

struct Tools {
    curl: Tool,
    promtool: Tool,
}

impl Tools {
    fn require() -> Tools {
        Tools {
            curl: Tool::require("curl", "curl"),
            promtool: Tool::require("promtool", "prometheus"),
        }
    }

    /// GET `url` with curl; the body and the Content-Type.
    fn get(&self, url: &str, accept: Option<&str>) -> (String, String) {
        let mut cmd = Command::new(&self.curl.path);
        cmd.args(["--silent", "--show-error", "--fail", "--max-time", "10"]);
        if let Some(accept) = accept {
            cmd.args(["--header", &format!("Accept: {accept}")]);
        }
        // The Content-Type after the body, on a line of its own.
        cmd.args(["--write-out", "\n%{content_type}", url]);
        let out = cmd.output().expect("cannot run curl");
        assert!(
            out.status.success(),
            "curl {url}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("the metrics are not UTF-8");
        let (body, content_type) = text.rsplit_once('\n').expect("no Content-Type line");
        (body.to_owned(), content_type.to_owned())
    }

    /// `promtool check metrics` on `text`: it must pass with nothing to say.
    fn check(&self, text: &str, what: &str) {
        let mut child = Command::new(&self.promtool.path)
            .args(["check", "metrics"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot run promtool");
        child
            .stdin
            .take()
            .expect("promtool's stdin")
            .write_all(text.as_bytes())
            .expect("cannot write to promtool");
        let out = child.wait_with_output().expect("promtool");
        assert!(
            out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
            "promtool check metrics rejects {what} ({}):\n{}{}\n--- the exposition ---\n{text}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
    }
}

/// The sample lines of an exposition (any comment or blank line skipped).
fn samples(text: &str) -> Samples {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("sample line without a value: {line:?}"));
            let value = value
                .parse()
                .unwrap_or_else(|_| panic!("sample value is no number: {line:?}"));
            (series.to_owned(), value)
        })
        .collect()
}

/// The value of `series`, which must be there.
fn value(samples: &Samples, series: &str) -> f64 {
    *samples.get(series).unwrap_or_else(|| {
        panic!(
            "no series {series} in:\n{}",
            samples.keys().cloned().collect::<Vec<_>>().join("\n")
        )
    })
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("cannot bind a free port");
    listener.local_addr().expect("local address").port()
}

/// The textfile, read whole, with the inode it had: a new inode after each sweep shows that it
/// was replaced by a rename rather than rewritten.
fn read_textfile(path: &Path) -> (String, u64) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read the textfile {}: {e}", path.display()));
    let inode = std::fs::metadata(path).map(|m| m.ino()).unwrap_or(0);
    (text, inode)
}

/// The first and last lines every whole exposition has: the first metric registered and the
/// last.
fn is_whole(text: &str) -> bool {
    text.starts_with("# HELP ibqos_build_info ")
        && text
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("ibqos_start_time_seconds "))
}

/// The daemon on the served two-switch fabric with both kinds of metrics; another SM at H4
/// rewrites the CAs' SL2VL and VLArb tables between two of its sweeps. Every exposition passes
/// promtool, and the counters show the drift found and repaired, table by table.
#[test]
fn metrics_follow_drift_and_its_repair() {
    let dir = TestDir::new("sm-metrics");
    let tools = Tools::require();
    let sim_tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let sim = Ibsim::serve(
        &sim_tools,
        &ibqos,
        &fabric.netfile,
        &fabric.sm_node,
        &dir.subdir("serve"),
    )
    .unwrap();
    let conf = write_opensm_conf(dir.path(), DAEMON_CONF).unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/metrics");
    let textfile = dir.subdir("textfile").join("ibqos.prom");
    let invocation = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .opensm_conf(&conf)
        .args(&[
            "--metrics-listen".to_owned(),
            port.to_string(),
            "--metrics-textfile".to_owned(),
            textfile.display().to_string(),
        ]);
    let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
    let first: Value = daemon.next_summary(SUMMARY_TIMEOUT).unwrap();
    assert!(
        first["subnet_up"] == true && first["mode"] == "forced",
        "the first sweep is not a forced sweep to SUBNET UP: {first}\n{}",
        daemon.output()
    );

    // The endpoint, in both formats.
    let (text, content_type) = tools.get(&url, None);
    assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
    tools.check(&text, "the HTTP exposition");
    let up = samples(&text);
    assert_eq!(value(&up, r#"ibqos_sm_state{state="master"}"#), 1.0);
    assert_eq!(value(&up, r#"ibqos_sm_state{state="standby"}"#), 0.0);
    assert_eq!(value(&up, "ibqos_subnet_up"), 1.0);
    assert!(value(&up, r#"ibqos_sweeps_total{kind="forced"}"#) == 1.0);
    // The routing was checked for credit loops, and two switches can close none.
    assert!(value(&up, "ibqos_credit_loop_checks_total") >= 1.0);
    assert_eq!(value(&up, "ibqos_credit_loops"), 0.0);
    let count = |field: &str| first[field].as_f64().unwrap();
    assert_eq!(
        value(&up, r#"ibqos_fabric_nodes{type="switch"}"#),
        count("switches")
    );
    assert_eq!(
        value(&up, r#"ibqos_fabric_nodes{type="ca"}"#),
        count("nodes") - count("switches")
    );
    assert_eq!(value(&up, "ibqos_lids_assigned"), count("lids"));
    assert!(value(&up, r#"ibqos_table_sets_total{table="sl2vl",result="ok"}"#) > 0.0);
    assert!(value(&up, r#"ibqos_qos_ports_configured{port_class="ca"}"#) > 0.0);
    assert_eq!(
        value(&up, r#"ibqos_qos_ports_pending{port_class="ca"}"#),
        0.0
    );
    // The daemon keeps sweeping, and a sweep of a new kind adds series: the two formats are
    // compared within a window no sweep added series to, an OpenMetrics scrape between two
    // text scrapes with the same series (series are only ever added).
    let series = |s: &Samples| s.keys().cloned().collect::<Vec<_>>();
    let mut window = None;
    for _ in 0..5 {
        let before = series(&samples(&tools.get(&url, None).0));
        let (om, content_type) = tools.get(&url, Some("application/openmetrics-text"));
        let after = series(&samples(&tools.get(&url, None).0));
        if before == after {
            window = Some((om, content_type, after));
            break;
        }
    }
    let (om, content_type, text_series) =
        window.expect("no two text scrapes in five tries held the same series");
    assert_eq!(
        content_type,
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    assert!(om.ends_with("# EOF\n"), "OpenMetrics without # EOF:\n{om}");
    assert_eq!(
        series(&samples(&om)),
        text_series,
        "the two formats hold different series"
    );

    // A reader that reads the textfile over and over while the daemon replaces it.
    let reading = Arc::new(AtomicBool::new(true));
    let reader = {
        let (path, reading) = (textfile.clone(), Arc::clone(&reading));
        thread::spawn(move || {
            let (mut reads, mut torn) = (0u64, Vec::new());
            while reading.load(Ordering::Relaxed) {
                if let Ok(text) = std::fs::read_to_string(&path) {
                    reads += 1;
                    if !is_whole(&text) && torn.len() < 3 {
                        torn.push(text);
                    }
                }
                thread::sleep(Duration::from_millis(1));
            }
            (reads, torn)
        })
    };

    // Stopped right after a sweep: the textfile holds that sweep's counters.
    daemon.pause_after_next_sweep(SUMMARY_TIMEOUT).unwrap();
    let (before_text, before_inode) = read_textfile(&textfile);
    tools.check(&before_text, "the textfile");
    let before = samples(&before_text);
    let intruder_dir = dir.subdir("intruder");
    let intruder_conf = intruder_dir.join("opensm.conf");
    std::fs::write(&intruder_conf, INTRUDER_CONF).unwrap();
    SmInvocation::new(SmFabric::Native, "H4", &intruder_dir.join("cache"))
        .opensm_conf(&intruder_conf)
        .run_up(&ibqos, &sim)
        .unwrap_or_else(|e| panic!("the intruder: {e}"));
    daemon.signal("CONT").unwrap();
    let sweeps = [
        daemon.next_summary(SUMMARY_TIMEOUT).unwrap(),
        daemon.next_summary(SUMMARY_TIMEOUT).unwrap(),
    ];

    let (after_text, _) = tools.get(&url, None);
    tools.check(&after_text, "the HTTP exposition after the repair");
    let after = samples(&after_text);
    let delta = |series: &str| value(&after, series) - value(&before, series);
    for table in ["sl2vl", "vlarb_low", "vlarb_high", "vl_high_limit"] {
        let found = delta(&format!(
            r#"ibqos_table_drift_found_total{{table="{table}"}}"#
        ));
        let repaired = delta(&format!(
            r#"ibqos_table_drift_repaired_total{{table="{table}"}}"#
        ));
        assert!(
            found > 0.0 && repaired == found,
            "{table}: drift found {found}, repaired {repaired} over the two sweeps after the \
             intruder, whose summaries list {} and {} changes",
            sweeps[0]["changes"].as_array().map_or(0, Vec::len),
            sweeps[1]["changes"].as_array().map_or(0, Vec::len),
        );
    }
    assert_eq!(
        delta(r#"ibqos_table_drift_found_total{table="pkey"}"#),
        0.0,
        "the intruder changed no P_Key table"
    );
    assert!(delta(r#"ibqos_sweeps_total{kind="diff"}"#) >= 2.0);
    assert!(delta(r#"ibqos_table_sets_skipped_total{table="sl2vl"}"#) > 0.0);
    assert!(delta(r#"ibqos_smps_sent_total{attribute="SlToVlMappingTable",method="Set"}"#) > 0.0);
    assert_eq!(
        value(&after, r#"ibqos_qos_ports_pending{port_class="ca"}"#),
        0.0
    );

    // The textfile: replaced (a new inode), valid, and never seen half written.
    let (after_file, after_inode) = read_textfile(&textfile);
    tools.check(&after_file, "the textfile after the repair");
    assert_ne!(
        before_inode, after_inode,
        "the textfile was rewritten in place, not replaced"
    );
    let leftovers: Vec<_> = std::fs::read_dir(textfile.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|name| name != "ibqos.prom")
        .collect();
    assert!(
        leftovers.is_empty(),
        "files left beside the textfile: {leftovers:?}"
    );
    reading.store(false, Ordering::Relaxed);
    let (reads, torn) = reader.join().unwrap();
    assert!(reads > 0, "the reader never read the textfile");
    assert!(
        torn.is_empty(),
        "{} of {reads} reads saw a partial textfile: {torn:?}",
        torn.len()
    );

    let status = daemon.stop(STOP_TIMEOUT).unwrap();
    assert!(status.success(), "daemon exited with {status}");
}

/// One counter `ibqos fabric serve --preset-counters` sets, and the series that must show it:
/// off SL 0, VL 0 and VL 15, which MADs move, and below 75% of its range, which the PerfMgr
/// would clear.
struct LanePreset {
    node: &'static str,
    port: u8,
    attribute: &'static str,
    counter: &'static str,
    value: u64,
    metric: &'static str,
    lane: &'static str,
}

const LANE_PRESETS: [LanePreset; 6] = [
    LanePreset {
        node: "H1",
        port: 1,
        attribute: "PortXmitDataSL",
        counter: "XmtDataSL3",
        value: 123_456,
        metric: "xmit_data_sl_words",
        lane: "sl=\"3\"",
    },
    LanePreset {
        node: "S1",
        port: 3,
        attribute: "PortRcvDataSL",
        counter: "RcvDataSL7",
        value: 1_000_000,
        metric: "rcv_data_sl_words",
        lane: "sl=\"7\"",
    },
    LanePreset {
        node: "S2",
        port: 3,
        attribute: "PortVLXmitWaitCounters",
        counter: "PortVLXmitWait2",
        value: 4_000,
        metric: "xmit_wait_vl_ticks",
        lane: "vl=\"2\"",
    },
    LanePreset {
        node: "S1",
        port: 1,
        attribute: "PortVLOpPackets",
        counter: "PortVLOpPackets4",
        value: 555,
        metric: "vl_op_packets",
        lane: "vl=\"4\"",
    },
    LanePreset {
        node: "S1",
        port: 2,
        attribute: "PortSLRcvFECN",
        counter: "PortSLRcvFECN1",
        value: 11,
        metric: "rcv_fecn_sl_packets",
        lane: "sl=\"1\"",
    },
    LanePreset {
        node: "S1",
        port: 3,
        attribute: "PortXmitDiscardDetails",
        counter: "PortSwHOQLifetimeLimitDiscards",
        value: 9,
        metric: "xmit_discards_packets",
        lane: "cause=\"sw_hoq_lifetime_limit\"",
    },
];

/// The daemon with QoS, the PerfMgr and `perfmgr_lanes` on the served two-switch fabric whose
/// PMAs start with preset per-VL and per-SL counters: the textfile holds each preset as the
/// series of its port and lane, and rates once two sweeps have read them, and the QoS
/// conformance report's verdicts, and passes promtool.
#[test]
fn lane_series_hold_the_emulated_pmas_counters() {
    let dir = TestDir::new("sm-metrics-lanes");
    let tools = Tools::require();
    let sim_tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let presets: String = LANE_PRESETS
        .iter()
        .map(|p| counter_preset(p.node, p.port, p.attribute, p.counter, p.value))
        .collect();
    let sim = serve_with_presets(
        &sim_tools,
        &ibqos,
        &fabric.netfile,
        &fabric.sm_node,
        &dir.subdir("serve"),
        &presets,
    )
    .unwrap();
    let toml = dir.path().join("ibqos.toml");
    std::fs::write(
        &toml,
        "[qos]\nenabled = true\n[sm]\nperfmgr_lanes = true\n[opensm]\nperfmgr = true\n\
         perfmgr_sweep_time_s = 1\n",
    )
    .unwrap();
    let textfile = dir.subdir("textfile").join("ibqos.prom");
    let invocation = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &dir.subdir("cache"))
        .args(&[
            "-c".to_owned(),
            toml.display().to_string(),
            "--metrics-textfile".to_owned(),
            textfile.display().to_string(),
        ]);
    let mut daemon = Daemon::start(&invocation, &ibqos, &sim).unwrap();
    // The served fabric's GUIDs: two-switch.net is the built-in fabric.
    let topology = ibqos_emu::load_topology("two-switch").unwrap().topology;
    let guid = |node: &str| {
        let id = topology.node_by_name(node).unwrap();
        format!("{:#018x}", topology.node(id).unwrap().guid)
    };
    // The SM's own port sends every MAD on SL 0: its rate there grows once read twice.
    let sm_port_rate = format!(
        "ibqos_perfmgr_xmit_data_sl_words_per_second{{node_guid=\"{}\",port=\"1\",sl=\"0\"}}",
        guid(&fabric.sm_node)
    );
    let deadline = std::time::Instant::now() + SUMMARY_TIMEOUT;
    let read = loop {
        let text = std::fs::read_to_string(&textfile).unwrap_or_default();
        if samples(&text)
            .get(&sm_port_rate)
            .is_some_and(|&rate| rate > 0.0)
        {
            break text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no rate of {sm_port_rate} in the textfile:\n{text}\n{}",
            daemon.output()
        );
        thread::sleep(Duration::from_millis(200));
    };
    tools.check(&read, "the textfile with lane series");
    let read = samples(&read);
    for preset in &LANE_PRESETS {
        let labels = format!(
            "{{node_guid=\"{}\",port=\"{}\",{}}}",
            guid(preset.node),
            preset.port,
            preset.lane
        );
        let metric = format!("ibqos_perfmgr_{}{labels}", preset.metric);
        assert_eq!(value(&read, &metric), preset.value as f64, "{metric}");
        let rate = format!("ibqos_perfmgr_{}_per_second{labels}", preset.metric);
        assert_eq!(value(&read, &rate), 0.0, "{rate}: a preset does not grow");
    }
    assert_eq!(value(&read, "ibqos_perfmgr_lane_series_left_out"), 0.0);
    // The QoS conformance report: every port the SM programmed VL arbitration on (the 16
    // linked ones and S1's enhanced port 0) has a verdict; MADs and presets make no VL
    // backlogged, so none is judged.
    let verdict = |name: &str| {
        value(
            &read,
            &format!("ibqos_qos_report_ports{{verdict=\"{name}\"}}"),
        )
    };
    let verdicts = ["conforms", "outside", "idle", "unread"].map(verdict);
    assert_eq!(verdicts.iter().sum::<f64>(), 17.0, "{verdicts:?}");
    assert_eq!(verdicts[..2], [0.0, 0.0]);
    assert_eq!(value(&read, "ibqos_qos_report_series_left_out"), 0.0);

    let status = daemon.stop(STOP_TIMEOUT).unwrap();
    assert!(status.success(), "daemon exited with {status}");
}
