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

/// An opensm.conf naming `policy` (a path), loaded from a temporary directory.
fn load_with_policy(policy: &str) -> ibqos_opensm::Loaded {
    let dir = tempfile::tempdir().expect("temporary directory");
    let conf = dir.path().join("opensm.conf");
    std::fs::write(&conf, format!("qos TRUE\nqos_policy_file {policy}\n")).expect("writable");
    ibqos_opensm::load(&conf).expect("an opensm.conf always loads")
}

#[test]
fn the_policy_loads_as_opensm_loads_it() {
    use ibqos_opensm::{DEFAULT_POLICY_FILE, PolicyLoad, load_policy};
    if !Path::new(DEFAULT_POLICY_FILE).exists() {
        assert!(matches!(
            load_policy(Some(DEFAULT_POLICY_FILE)),
            PolicyLoad::DefaultMissing
        ));
    }
    assert!(matches!(load_policy(None), PolicyLoad::NoFileName));

    let missing = load_with_policy("/nonexistent/qos-policy.conf");
    assert_eq!(missing.settings.qos_policy, None);
    let diagnostics = missing.policy.expect("an outcome").diagnostics();
    assert_eq!(
        diagnostics[0].message,
        "ERR AC01: Failed opening QoS policy file /nonexistent/qos-policy.conf - No such file or \
         directory"
    );

    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/qos-policy");
    let rejected = load_with_policy(&data.join("rejected/two-sl.conf").display().to_string());
    assert_eq!(
        rejected.settings.qos_policy, None,
        "a failure drops the whole policy"
    );
    assert!(matches!(rejected.policy, Some(PolicyLoad::Rejected { .. })));

    let accepted = load_with_policy(&data.join("accepted/full.conf").display().to_string());
    let policy = accepted.settings.qos_policy.expect("loaded");
    assert_eq!(policy.port_groups[1].name, "VirtualServers");
    let warnings = accepted.policy.expect("an outcome").diagnostics();
    assert!(
        !warnings.is_empty(),
        "full.conf has sl 16, path-bits, qos-setup..."
    );
}
