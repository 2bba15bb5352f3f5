//! qos-policy.conf reader against OpenSM's verdicts, kept as data: every file under
//! `data/qos-policy/rejected/` has beside it the stderr line OpenSM 3.3.23 prints for it (the
//! oracle test `tests/tests/qos_policy_oracle.rs` checks them against the real OpenSM); every
//! file under `accepted/` is one OpenSM parses.

use std::path::{Path, PathBuf};

use ibqos_opensm::qos_policy;

fn data(kind: &str, ext: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/qos-policy")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .{ext} files in {}", dir.display());
    files
}

#[test]
fn rejected_files_fail_with_opensms_message_and_position() {
    let mut wrong = Vec::new();
    for conf in data("rejected", "conf") {
        let expected = std::fs::read_to_string(conf.with_extension("expected"))
            .unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        let bytes = std::fs::read(&conf).expect("readable");
        match qos_policy::read("p.conf", &bytes) {
            Ok(_) => wrong.push(format!("{}: accepted", conf.display())),
            Err(e) if e.opensm_line() != expected.trim_end() => wrong.push(format!(
                "{}:\n  ours:   {}\n  OpenSM: {}",
                conf.display(),
                e.opensm_line(),
                expected.trim_end()
            )),
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn accepted_files_parse_and_write_back_to_the_same_policy() {
    for conf in data("accepted", "conf") {
        let bytes = std::fs::read(&conf).expect("readable");
        let read = qos_policy::read("p.conf", &bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        let text = qos_policy::write(&read.policy);
        let back = qos_policy::read("back.conf", text.as_bytes())
            .unwrap_or_else(|e| panic!("{} written back: {e}\n{text}", conf.display()));
        assert_eq!(back.policy, read.policy, "{}:\n{text}", conf.display());
    }
}
