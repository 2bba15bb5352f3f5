//! OpenSM as the oracle for the partitions.conf reader's verdicts.
//!
//! Every file in `opensm-compat/tests/data/partitions/rejected/` is given to the real OpenSM
//! 3.3.23 (`opensm -o` on ibsim, `partition_config_file` naming it): its log must hold the
//! message of the `.expected` file beside it, the one `opensm-compat`'s own tests hold the
//! reader to; the file that makes OpenSM crash must make it crash. Every accepted file must
//! leave OpenSM's log without a parse error, and so must the partitions.conf ibqos writes of
//! it (what `ibqos migrate` writes).
//!
//! One ibsim serves every run: reading the file does not depend on what earlier runs programmed.
//!
//! One accepted file is known to part ways with OpenSM ([`DIVERGENT_PARTITIONS`]): OpenSM drops it, the
//! reader does not. Its first line ends a definition with an `mgid`, after which OpenSM's
//! parser moves past the end of the text it parses, into what its line buffer held before the
//! file was read: uninitialised memory, which the reader takes as zeros. The test holds OpenSM
//! to dropping it with a parse error on that line, so the list stays true; the error's words
//! depend on the memory and are not compared.

use std::path::Path;

use ibqos_opensm::partitions;
use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::scenario::{DIVERGENT_PARTITIONS, conf_data};
use ibqos_tests::{Ibsim, SimTools, TestDir};

const NET_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../fabric/data/two-switch.net");
const SM_NODE: &str = "H1";
/// What OpenSM logs when it drops a partitions.conf, whatever the reason.
const DROPPED: &str = "Partition configuration in error";
/// The file whose `mgid` has no value: OpenSM hands NULL to inet_pton.
const CRASHES: &str = "mgid-without-value";

fn name(file: &Path) -> String {
    file.file_stem()
        .expect("a file name")
        .to_string_lossy()
        .into_owned()
}

/// OpenSM's log after one run with `file` as its partitions.conf, or why the run failed.
fn opensm_log(tools: &SimTools, sim: &Ibsim, dir: &TestDir, file: &Path) -> Result<String, String> {
    let options = format!("partition_config_file {}\n", file.display());
    run_opensm_once(tools, sim, SM_NODE, &options, &dir.subdir(&name(file)))
        .map(|run| run.log)
        .map_err(|e| e.to_string())
}

#[test]
fn opensm_gives_each_file_its_recorded_verdict() {
    let tools = SimTools::require();
    let dir = TestDir::new("partitions-oracle");
    let sim = Ibsim::start(&tools, Path::new(NET_FILE), dir.path()).unwrap();
    let mut wrong = Vec::new();
    for file in conf_data("partitions", "rejected") {
        let expected = std::fs::read_to_string(file.with_extension("expected"))
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let expected = expected.trim_end();
        let bytes = std::fs::read(&file).expect("readable");
        let ours = match partitions::read("partitions.conf", &bytes) {
            Ok(_) => "accepted".to_string(),
            Err(e) => e.message,
        };
        if ours != expected {
            wrong.push(format!(
                "{}: ours {ours:?}, expected {expected:?}",
                file.display()
            ));
        }
        match (name(&file).as_str(), opensm_log(&tools, &sim, &dir, &file)) {
            (CRASHES, Err(failure)) if failure.contains("SIGSEGV") => {}
            (CRASHES, outcome) => wrong.push(format!(
                "{}: OpenSM was expected to crash: {outcome:?}",
                file.display()
            )),
            (_, Ok(log)) if log.contains(expected) && log.contains(DROPPED) => {}
            (_, outcome) => wrong.push(format!(
                "{}: OpenSM's log lacks {expected:?}: {outcome:?}",
                file.display()
            )),
        }
    }
    let clean = |outcome: &Result<String, String>| {
        outcome
            .as_ref()
            .is_ok_and(|log| !log.contains("PARSE ERROR") && !log.contains(DROPPED))
    };
    for file in conf_data("partitions", "accepted") {
        let divergent = DIVERGENT_PARTITIONS.iter().find(|(n, _)| *n == name(&file));
        let outcome = opensm_log(&tools, &sim, &dir, &file);
        match (divergent, &outcome) {
            (None, _) if clean(&outcome) => {}
            (Some((_, says)), Ok(log)) if log.contains(says) && log.contains(DROPPED) => {}
            _ => wrong.push(format!(
                "{}: OpenSM's verdict is not the one expected: {outcome:?}",
                file.display()
            )),
        }
        let bytes = std::fs::read(&file).expect("readable");
        let read = partitions::read("partitions.conf", &bytes).expect("accepted");
        let (text, _) = partitions::to_partitions_conf(&read.partitions);
        let written = dir.path().join(format!("written-{}.conf", name(&file)));
        std::fs::write(&written, &text).expect("writable");
        let outcome = opensm_log(&tools, &sim, &dir, &written);
        if !clean(&outcome) {
            wrong.push(format!(
                "{}: OpenSM does not take what ibqos writes of it:\n{text}{outcome:?}",
                file.display()
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
