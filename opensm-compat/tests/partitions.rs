//! partitions.conf reader against OpenSM's verdicts, kept as data: every file under
//! `data/partitions/rejected/` has beside it the message OpenSM 3.3.23 logs when it drops it
//! (the oracle test `tests/tests/partitions_oracle.rs` checks them against the real OpenSM);
//! every file under `accepted/` has beside it the diagnostics ibqos gives, one per line.
//! `IBQOS_BLESS=1` rewrites the `.expected` files from what the reader says.

use std::path::{Path, PathBuf};

use ibqos_opensm::{Format, Settings, load_bytes, partitions, to_native_toml};
use ibqos_qos::partitions::Partitions;
use proptest::prelude::*;

fn data(kind: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/partitions")
        .join(kind);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no .conf files in {}", dir.display());
    files
}

/// Compares `ours` with the file's `.expected`, or writes it when blessing.
fn expect(conf: &Path, ours: &str, wrong: &mut Vec<String>) {
    let path = conf.with_extension("expected");
    if std::env::var_os("IBQOS_BLESS").is_some() {
        std::fs::write(&path, ours).expect("writable");
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if expected != ours {
        wrong.push(format!(
            "{}:\n--- expected\n{expected}--- ours\n{ours}",
            conf.display()
        ));
    }
}

#[test]
fn rejected_files_fail_with_opensms_message() {
    let mut wrong = Vec::new();
    for conf in data("rejected") {
        let bytes = std::fs::read(&conf).expect("readable");
        match partitions::read("partitions.conf", &bytes) {
            Ok(_) => wrong.push(format!("{}: accepted", conf.display())),
            Err(e) => expect(&conf, &format!("{}\n", e.message), &mut wrong),
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn accepted_files_give_their_diagnostics_and_write_back_to_the_same_partitions() {
    let mut wrong = Vec::new();
    for conf in data("accepted") {
        let bytes = std::fs::read(&conf).expect("readable");
        let read = partitions::read("partitions.conf", &bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        let ours: String = read.diagnostics.iter().map(|d| format!("{d}\n")).collect();
        expect(&conf, &ours, &mut wrong);
        let (text, losses) = partitions::to_partitions_conf(&read.partitions);
        assert!(losses.is_empty(), "{}: {losses:?}\n{text}", conf.display());
        let back = partitions::read("back.conf", text.as_bytes())
            .unwrap_or_else(|e| panic!("{} written back: {e}\n{text}", conf.display()));
        assert_eq!(
            back.partitions,
            read.partitions,
            "{}:\n{text}",
            conf.display()
        );
        // The writer adds no trap of its own: only what the partitions themselves say (a
        // merge, an empty partition) comes back.
        let new_codes: Vec<_> = back
            .diagnostics
            .iter()
            .filter(|b| !read.diagnostics.iter().any(|d| d.code == b.code))
            .collect();
        assert!(
            new_codes.is_empty(),
            "{}: {new_codes:?}\n{text}",
            conf.display()
        );
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `p` written into ibqos.toml's `[partitions]` and read back, with what the writer reported.
fn through_ibqos_toml(p: &Partitions) -> (Option<Partitions>, String, usize) {
    let settings = Settings {
        partitions: Some(p.clone()),
        ..Settings::default()
    };
    let (text, losses) = to_native_toml(&settings);
    let back = load_bytes("ibqos.toml", text.as_bytes(), Format::NativeToml)
        .ok()
        .and_then(|l| l.settings.partitions);
    (back, text, losses.len())
}

#[test]
fn accepted_files_read_back_the_same_from_ibqos_toml() {
    for conf in data("accepted") {
        let bytes = std::fs::read(&conf).expect("readable");
        let read = partitions::read("partitions.conf", &bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", conf.display()));
        let (back, text, losses) = through_ibqos_toml(&read.partitions);
        assert_eq!(losses, 0, "{}:\n{text}", conf.display());
        assert_eq!(
            back.as_ref(),
            Some(&read.partitions),
            "{}:\n{text}",
            conf.display()
        );
    }
}

proptest! {
    /// Any bytes: an answer, never a panic; what is accepted writes back to itself, as
    /// partitions.conf when it reports no loss, and as ibqos.toml always.
    #[test]
    fn any_bytes_read_and_write_back(bytes in proptest::collection::vec(
        prop_oneof![
            Just(b':'), Just(b','), Just(b';'), Just(b'='), Just(b'\n'), Just(b'#'), Just(b' '),
            Just(b'\0'), Just(b'0'), Just(b'x'), Just(b'A'), Just(b'f'), Just(b'm'), Just(b's'),
            any::<u8>(),
        ],
        0..200,
    )) {
        if let Ok(read) = partitions::read("p.conf", &bytes) {
            let (text, losses) = partitions::to_partitions_conf(&read.partitions);
            if losses.is_empty() {
                let back = partitions::read("back.conf", text.as_bytes());
                prop_assert_eq!(back.map(|b| b.partitions).ok(), Some(read.partitions.clone()));
            }
            // ibqos.toml says every partition exactly, whatever its name holds.
            let (back, text, losses) = through_ibqos_toml(&read.partitions);
            prop_assert_eq!(losses, 0, "{}", text);
            prop_assert_eq!(back, Some(read.partitions));
        }
    }
}

/// Writes `files` (name, text) into a fresh directory and loads the first, as `ibqos check`
/// and `ibqos sm` load a configuration.
fn load_files(files: &[(&str, String)]) -> Result<ibqos_opensm::Loaded, ibqos_opensm::LoadError> {
    let dir = tempfile::TempDir::new().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    ibqos_opensm::load(&dir.path().join(files[0].0))
}

/// The codes and lines of the partitions.conf diagnostics of a load.
fn partition_notes(loaded: &ibqos_opensm::Loaded) -> Vec<(String, usize)> {
    let load = loaded
        .partitions
        .as_ref()
        .expect("a partitions.conf was read");
    load.diagnostics()
        .iter()
        .map(|d| {
            (
                d.code.to_string(),
                d.location.as_ref().map_or(0, |l| l.line),
            )
        })
        .collect()
}

#[test]
fn an_sl_without_qos_and_both_without_allow_both_pkeys_are_reported_where_written() {
    let partitions = "Default=0x7fff : ALL=full ;\n\
                      storage=0x10,sl=3 : ALL_CAS ;\n\
                      shared=0x11 : ALL_CAS=both ;\n"
        .to_string();
    let conf =
        |options: &str, dir_file: &str| format!("{options}partition_config_file {dir_file}\n");
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("partitions.conf");
    std::fs::write(&file, &partitions).unwrap();
    let path = file.display().to_string();
    let plain = load_files(&[("opensm.conf", conf("", &path))]).unwrap();
    assert_eq!(
        partition_notes(&plain),
        [
            ("partitions-overridden".to_string(), 2),
            ("partitions-overridden".to_string(), 3)
        ]
    );
    let allowed = load_files(&[(
        "opensm.conf",
        conf("qos TRUE\nallow_both_pkeys TRUE\n", &path),
    )])
    .unwrap();
    assert_eq!(partition_notes(&allowed), []);
}

#[test]
fn ibqos_toml_without_partitions_loads_the_file_it_names_and_fails_on_one_that_does_not_load() {
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("partitions.conf");
    std::fs::write(&file, "hosts=0x10 : ALL_CAS=full ;\n").unwrap();
    let toml = |path: &Path| format!("[opensm]\npartition_config_file = \"{}\"\n", path.display());
    let loaded = load_files(&[("ibqos.toml", toml(&file))]).unwrap();
    let partitions = loaded
        .settings
        .partitions
        .expect("the named file's partitions");
    assert_eq!(partitions.partitions[0].pkey, Some(0x10));
    let missing = dir.path().join("missing.conf");
    let error = load_files(&[("ibqos.toml", toml(&missing))]).unwrap_err();
    assert!(error.to_string().contains("not accessible"), "{error}");
    // Without a name, no file: OpenSM's Default partition.
    let unnamed = load_files(&[("ibqos.toml", "[qos]\nenabled = false\n".to_string())]).unwrap();
    assert_eq!(unnamed.settings.partitions, None);
}
