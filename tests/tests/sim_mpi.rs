//! `ibqos sim` across MPI processes (`mpirun`, MPICH's Hydra as scripts/test installs it) writes
//! the one-core report byte for byte, from the first process alone: on the golden scenarios
//! (their recorded reports) and on random small fabrics and traffic files. Built with the
//! `mpi` feature of this crate and of ibqos (scripts/test turns both on).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::process::run_bounded;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// A small run takes under a second on one core; mpirun starts its processes in a few tenths.
const TIMEOUT: Duration = Duration::from_secs(120);

/// How each scenario runs besides one core: processes and threads per process (3 x 2
/// oversubscribes a 2-core machine, which must change nothing but the time).
const SPLITS: [(&str, &str); 2] = [("2", "1"), ("3", "2")];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `ibqos sim ARGS --json` on `processes` MPI processes of `threads` threads each (none: the
/// plain command, one process): its standard output.
fn sim(args: &[&str], processes: Option<(&str, &str)>) -> Vec<u8> {
    let ibqos = ibqos_binary().expect("the ibqos binary");
    let mut cmd = match processes {
        None => Command::new(&ibqos),
        Some((np, _)) => {
            let mut cmd = Command::new("mpirun");
            cmd.args(["-np", np]).arg(&ibqos);
            cmd
        }
    };
    cmd.current_dir(root()).arg("sim").args(args).arg("--json");
    if let Some((_, threads)) = processes {
        cmd.args(["--threads", threads]);
    }
    let what = ibqos_tests::process::command_line(&cmd);
    let finished = run_bounded(&mut cmd, TIMEOUT)
        .and_then(|f| f.success(&what))
        .unwrap_or_else(|error| panic!("{error}"));
    finished.stdout.into_bytes()
}

/// Where two reports first differ, for a failure message.
fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()))
}

#[test]
fn golden_scenarios_across_processes_are_the_recorded_reports() {
    let data = root().join("ibqos/tests/data/sim-golden");
    let scenarios = std::fs::read_to_string(data.join("scenarios.txt")).expect("scenarios");
    let mut compared = 0;
    for line in scenarios.lines().filter(|l| !l.trim().is_empty()) {
        let [name, net, flag, config, traffic, seed] = line.split('|').collect::<Vec<_>>()[..]
        else {
            panic!("scenarios.txt: `{line}` is not name|net|flag|config|traffic|seed");
        };
        let recorded = std::fs::read(data.join(format!("{name}.json"))).expect("recorded");
        let args = [
            "--topology",
            net,
            flag,
            config,
            "--traffic",
            traffic,
            "--seed",
            seed,
        ];
        for split in SPLITS {
            let report = sim(&args, Some(split));
            assert!(
                report == recorded,
                "{name} on {} processes of {} threads: the report differs from the recorded \
                 one at byte {}",
                split.0,
                split.1,
                first_difference(&report, &recorded)
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 7 * SPLITS.len());
}

/// A traffic file of a random mix of the simulator's patterns over every host: greedy or
/// rate-limited, some starting or stopping mid-run, on links of random speed, delays and
/// buffers (small ones run out of credits).
fn traffic_file() -> impl Strategy<Value = String> {
    let pattern = (
        prop_oneof![Just("permutation"), Just("all-to-all")],
        0u8..4,
        prop_oneof![Just(256u32), Just(1024), Just(4096)],
        prop::option::of(1u32..20),
        prop::option::of((0u32..5, 5u32..10)),
    )
        .prop_map(|(kind, sl, payload, rate, window)| {
            let rate = rate.map_or(String::new(), |r| format!("rate_gbps = {r}\n"));
            let window = window.map_or(String::new(), |(start, stop)| {
                format!("start_us = {start}\nstop_us = {stop}\n")
            });
            format!(
                "[[pattern]]\nkind = \"{kind}\"\nsl = {sl}\npayload = {payload}\n{rate}{window}"
            )
        });
    (
        10u32..30,
        prop_oneof![Just("QDR"), Just("EDR")],
        (1u32..20, 20u32..200),
        prop_oneof![Just(8192u32), Just(32768)],
        prop::collection::vec(pattern, 1..=3),
    )
        .prop_map(
            |(duration, speed, (propagation, credit), buffer, patterns)| {
                format!(
                    "duration_us = {duration}\n[link]\nspeed = \"{speed}\"\n\
                 propagation_ns = {propagation}\ncredit_latency_ns = {credit}\n\
                 vl_buffer_bytes = {buffer}\n{}",
                    patterns.concat()
                )
            },
        )
}

#[test]
fn random_runs_across_processes_report_what_one_process_reports() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut runner = TestRunner::new(Config {
        cases: 6,
        ..Config::default()
    });
    let nets = ["fabric/data/fat-tree-16.net", "fabric/data/two-switch.net"];
    let case = (traffic_file(), 0usize..nets.len(), 0u64..1000);
    runner
        .run(&case, |(traffic, net, seed)| {
            let path = dir.path().join("traffic.toml");
            std::fs::write(&path, &traffic).expect("the traffic file");
            let seed = seed.to_string();
            let args = [
                "--topology",
                nets[net],
                "-F",
                "examples/opensm-qos.conf",
                "--traffic",
                path.to_str().expect("a UTF-8 path"),
                "--seed",
                &seed,
            ];
            let one = sim(&args, None);
            for split in SPLITS {
                let report = sim(&args, Some(split));
                prop_assert!(
                    report == one,
                    "on {} processes of {} threads the report differs from one process's at \
                     byte {}; the traffic file:\n{traffic}",
                    split.0,
                    split.1,
                    first_difference(&report, &one)
                );
            }
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}
