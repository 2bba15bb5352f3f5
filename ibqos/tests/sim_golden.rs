//! The simulator's reports against those recorded from the engine before each rewrite of it
//! (scripts/record-sim-golden.sh, from the commit named in the commit that recorded them). A faster
//! engine must give the same bytes, every figure and every tie broken the same way. The scenarios
//! are in ibqos/tests/data/sim-golden/scenarios.txt. They cover greedy, rate-limited and management
//! flows, flows that start and stop mid-run, and patterns on a fat tree. They cover an SL dropped
//! on VL15, the non-default arbiter options, small buffers, qos-setup tables and 15 VLs. They cover
//! the tables of a fabric dump with ports running 1, 2, 4 or 8 VLs (`--tables`). And one run
//! delivers more packets than the engine logs before it records their latencies. Each runs on one,
//! two and three threads (`--threads`): a run split over threads gives the same bytes.

use std::path::Path;
use std::process::Command;

#[test]
fn reports_are_the_recorded_ones_byte_for_byte() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let data = root.join("ibqos/tests/data/sim-golden");
    let scenarios = std::fs::read_to_string(data.join("scenarios.txt")).unwrap();
    let mut compared = 0;
    for line in scenarios.lines().filter(|l| !l.trim().is_empty()) {
        let [name, net, flag, config, traffic, seed] = line.split('|').collect::<Vec<_>>()[..]
        else {
            panic!("scenarios.txt: `{line}` is not name|net|flag|config|traffic|seed");
        };
        let recorded = std::fs::read(data.join(format!("{name}.json"))).unwrap();
        for threads in ["1", "2", "3"] {
            let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
                .current_dir(&root)
                .args(["sim", "--topology", net, flag, config, "--traffic", traffic])
                .args(["--seed", seed, "--json", "--threads", threads])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name} on {threads} threads: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                out.stdout == recorded,
                "{name} on {threads} threads: the report differs from the recorded one (first \
                 difference at byte {})",
                out.stdout
                    .iter()
                    .zip(&recorded)
                    .position(|(a, b)| a != b)
                    .unwrap_or(out.stdout.len().min(recorded.len()))
            );
            compared += 1;
        }
    }
    assert_eq!(compared, 7 * 3);
}
