//! Simulator throughput: events and packet-hops per second on one core, on the 648-host fat
//! tree (fabric/data/fat-tree-648.net) with all-to-all traffic spread over 8 VLs.
//!
//! `cargo bench -p ibqos-sim --bench sim [-- DURATION_US [PAYLOAD [ib|pfc|dcqcn [THREADS]]]]`
//! (defaults 100 us, 2048 B, InfiniBand, one thread).
//!
//! Every host sends to every other host as fast as the fabric allows (419,256 greedy flows).
//! Flow i is on SL i mod 8, with the SL n -> VL n tables of an 8-VL configuration.
//! - `pfc`: the same over lossless Ethernet at 100 Gb/s. Flow i is on priority i mod 8; every
//!   priority is lossless, in one PG with 100 KB of headroom and Xoff at 40 KB; the pools and
//!   ETS are the defaults.
//! - `dcqcn`: the `pfc` run with ECN marking at every switch egress queue (Kmin 5 KB, Kmax
//!   200 KB, Pmax 1%) and DCQCN at every host. Its parameters are the document's defaults but
//!   `DcqcnRpgByteReset` 32767, the ones that converge.
//! - `ib` with THREADS: the engine runs on THREADS cores ([`ibqos_sim::Parallel`]).
//!
//! It prints the figures and the peak resident memory; a timing belongs here, never in a test.
//! `SIM_BENCH_NET=FILE` and `SIM_BENCH_PATTERN=KIND` (a traffic pattern, e.g. `permutation`)
//! run another fabric and pattern. `run` times `run_until`. The engine records the last batch
//! of delivered packets' latencies in `finish`, so compare engines on run + report: a short run
//! may leave every record to the report.
//!
//! There was once a floor here: a hand copy of the engine without the report's bookkeeping, to
//! say how far the engine was from the least work of its kind. It had to be kept in step with
//! the engine by hand, so it went. Its last figures are in BENCHMARKS.md. What replaces it:
//! the engine against an older commit of itself (scripts/bench-sim-engines.sh), on one thread
//! and on several (scripts/bench-threads.sh), and a profiler on this bench for where the time
//! goes.

use std::path::Path;
use std::time::Instant;

use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::EngineList;
use ibqos_opensm::load_bytes;
use ibqos_qos::Sl;
use ibqos_qos::policy::setup::SetupTables;
use ibqos_sim::{Forwarding, Tables, sim};

/// The lossless-Ethernet settings of the `pfc` run.
const PFC: &str = r#"
[link]
flow_control = "pfc"
gbps = 100
[pfc]
priorities = [0, 1, 2, 3, 4, 5, 6, 7]
[buffer]
pg = [{ pg = 0, pool = "iPool0", type = "lossless", reserved = 102400, xoff = 40960, xon = 20480, shared = { alpha = "1" } }]
"#;

/// Added to [`PFC`] for the `dcqcn` run.
const DCQCN: &str = r#"
[ecn]
kmin_bytes = 5000
kmax_bytes = 200000
pmax = 0.01
[dcqcn]
DcqcnRpgByteReset = 32767
"#;

const CONF: &str = "qos TRUE\nqos_max_vls 8\nqos_high_limit 0\nqos_vlarb_high 0:0\n\
    qos_vlarb_low 0:64,1:64,2:64,3:64,4:64,5:64,6:64,7:64\nqos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7\n";

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let duration_us: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let payload: u32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(2048);
    let mode = args.get(2).map(String::as_str);
    let dcqcn = mode == Some("dcqcn");
    let pfc = dcqcn || mode == Some("pfc");
    let threads: usize = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(1);
    let net = std::env::var_os("SIM_BENCH_NET").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../fabric/data/fat-tree-648.net"),
        std::path::PathBuf::from,
    );
    let pattern = std::env::var("SIM_BENCH_PATTERN").unwrap_or_else(|_| "all-to-all".into());
    let fabric = net
        .file_stem()
        .map_or(String::new(), |s| s.to_string_lossy().into_owned());
    let mut topo = parse_net_file(&net).expect("the net file").topology;
    let loaded = load_bytes(
        "bench.conf",
        CONF.as_bytes(),
        ibqos_opensm::Format::OpenSmConf,
    )
    .expect("configuration");
    let text = format!(
        "duration_us = {duration_us}\n{}{}\n[[pattern]]\nkind = \"{pattern}\"\npayload = {payload}\n",
        if pfc { PFC } else { "" },
        if dcqcn { DCQCN } else { "" }
    );
    let started = Instant::now();
    let tables = Tables::Planned {
        qos: &loaded.settings.qos,
        setup: &SetupTables::default(),
        max_op_vls: None,
    };
    let minhop = EngineList::default();
    let forwarding = Forwarding::Engines(&minhop);
    let made = sim(
        "bench.toml",
        text.as_bytes(),
        &mut topo,
        Some(tables),
        forwarding,
        0,
        0,
    );
    let mut setup = made.expect("set-up");
    for (i, flow) in setup.flows.iter_mut().enumerate() {
        flow.sl = Sl::ALL[i % 8];
    }
    let setup_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let mut run = setup.run(threads).expect("simulation");
    let new_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    run.run_until(setup.options.duration_ps);
    let run_s = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let report = run.finish();
    let finish_s = started.elapsed().as_secs_f64();
    let vls: std::collections::BTreeSet<u8> = report
        .links
        .iter()
        .flat_map(|l| {
            let vls = l.vls.iter().map(|v| v.vl);
            // On Ethernet, the traffic classes.
            let tcs = l
                .ethernet
                .iter()
                .flat_map(|e| e.traffic_classes.iter().map(|t| t.tc));
            vls.chain(tcs)
        })
        .collect();
    println!(
        "{fabric} {pattern}{}: {} flows, payload {payload} B, {duration_us} us simulated, VLs (TCs) used {vls:?}",
        match (pfc, dcqcn) {
            (_, true) => " over lossless Ethernet with DCQCN",
            (true, false) => " over lossless Ethernet",
            _ => "",
        },
        setup.flows.len()
    );
    println!(
        "setup: routes, tables, flows {setup_s:.2} s; Run::new {new_s:.2} s (threads: {threads}); report {finish_s:.2} s"
    );
    println!(
        "run: {run_s:.3} s, {} events ({:.2} M events/s), {} packet-hops ({:.2} M packet-hops/s)",
        report.events,
        report.events as f64 / run_s / 1e6,
        report.packet_hops,
        report.packet_hops as f64 / run_s / 1e6
    );
    println!("peak resident memory: {} MB", peak_rss_kb() / 1024);
}
