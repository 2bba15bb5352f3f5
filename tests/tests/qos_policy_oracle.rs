//! OpenSM as the oracle for the qos-policy.conf reader's messages.
//!
//! Every rejected policy in `opensm-compat/tests/data/qos-policy/rejected/` is given to the
//! real OpenSM 3.3.23 (`opensm -o` on ibsim, `qos TRUE`): the `Error in QoS Policy File
//! (line L:C): MSG.` line it prints on stderr must equal both the `.expected` file beside the
//! policy (which `opensm-compat`'s own tests compare the reader with) and what the reader
//! renders. Every accepted policy must make OpenSM print no such line.
//!
//! One ibsim serves every run: parsing the policy does not depend on what earlier runs
//! programmed.

use std::path::Path;

use ibqos_opensm::qos_policy;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::scenario::conf_data;
use ibqos_tests::{Ibsim, SimTools, TestDir};

const NET_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fabric/data/two-switch.net");
const SM_NODE: &str = "H1";
const POLICY_ERROR: &str = "Error in QoS Policy File";

/// OpenSM's stderr lines about the policy file, for `policy`.
fn opensm_says(tools: &SimTools, sim: &Ibsim, dir: &TestDir, policy: &Path) -> Vec<String> {
    let name = policy.file_stem().expect("a file name").to_string_lossy();
    let options = format!("qos TRUE\nqos_policy_file {}\n", policy.display());
    let run = run_opensm_once(tools, sim, SM_NODE, &options, &dir.subdir(&name))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    run.stderr
        .lines()
        .filter(|l| l.starts_with(POLICY_ERROR))
        .map(str::to_string)
        .collect()
}

#[test]
fn opensm_rejects_each_policy_with_the_message_the_reader_gives() {
    let tools = SimTools::require();
    let dir = TestDir::new("qos-policy-oracle");
    let sim = Ibsim::start(&tools, Path::new(NET_FILE), dir.path()).unwrap();
    let mut wrong = Vec::new();
    for policy in conf_data("qos-policy", "rejected") {
        let opensm = opensm_says(&tools, &sim, &dir, &policy);
        let expected = std::fs::read_to_string(policy.with_extension("expected"))
            .unwrap_or_else(|e| panic!("{}: {e}", policy.display()));
        let bytes = std::fs::read(&policy).expect("readable");
        let ours = match qos_policy::read("p.conf", &bytes) {
            Ok(_) => "accepted".to_string(),
            Err(e) => e.opensm_line(),
        };
        if opensm != [expected.trim_end()] || opensm != [ours.as_str()] {
            wrong.push(format!(
                "{}:\n  OpenSM:   {opensm:?}\n  expected: {}\n  ours:     {ours}",
                policy.display(),
                expected.trim_end()
            ));
        }
    }
    for policy in conf_data("qos-policy", "accepted") {
        let opensm = opensm_says(&tools, &sim, &dir, &policy);
        if !opensm.is_empty() {
            wrong.push(format!(
                "{}: OpenSM rejects it: {opensm:?}",
                policy.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
