//! Where `ibqos sm` writes when nobody said where. A run on an emulated fabric (the README's
//! set-up command) writes no system path: run in a mount namespace whose /var/log and
//! /var/cache are empty tmpfs, with HOME and the working directory a temporary directory,
//! it leaves nothing in any of them. On umad, OpenSM's defaults stay: the caches are read from
//! /var/cache/ibqos. A cache that cannot be read or written costs a warning, not the run.
//!
//! The namespace is made by util-linux's unshare(1) (`--map-root-user`, so that mounting needs
//! no privilege where user namespaces are allowed).

use std::path::Path;
use std::process::{Command, Output};

const IBQOS: &str = env!("CARGO_BIN_EXE_ibqos");

/// `ibqos ARGS` in a mount namespace of its own whose /var/log and /var/cache are empty tmpfs,
/// after the shell commands `setup` ran there, with HOME and the working directory `home`
/// and no `$OSM_CACHE_DIR`. Its output, and every path it left in /var/log and /var/cache
/// (those `setup` made included), one a line.
fn in_empty_var(home: &Path, setup: &str, args: &[&str]) -> (Output, String) {
    let left = tempfile::NamedTempFile::new().unwrap();
    let script = format!(
        "mount -t tmpfs none /var/log && mount -t tmpfs none /var/cache || exit 99\n\
         {setup}\n\
         \"$@\"; status=$?\n\
         find /var/log /var/cache -mindepth 1 | sort > \"$LEFT\"\n\
         exit $status"
    );
    let output = Command::new("unshare")
        .args([
            "--mount",
            "--map-root-user",
            "sh",
            "-c",
            &script,
            "sh",
            IBQOS,
        ])
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("LEFT", left.path())
        .env("NO_COLOR", "1")
        .env_remove("OSM_CACHE_DIR")
        .output()
        .expect("unshare (util-linux) must be installed");
    assert_ne!(
        output.status.code(),
        Some(99),
        "cannot mount a tmpfs in a new mount namespace: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (output, std::fs::read_to_string(left.path()).unwrap())
}

fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
        .display()
        .to_string()
}

/// The entries of `dir`, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The README's set-up command, daemon-free: nothing in /var/log (OpenSM's opensm-subnet.lst
/// above all, which a real OpenSM's would be), /var/cache, HOME or the working directory.
#[test]
fn a_run_on_an_emulated_fabric_writes_no_system_path() {
    let home = tempfile::tempdir().unwrap();
    let conf = example("opensm-qos.conf");
    let (output, left) = in_empty_var(home.path(), "", &["sm", "--once", "-F", &conf]);
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert_eq!(left, "", "left in /var/log and /var/cache");
    assert_eq!(entries(home.path()), Vec::<String>::new(), "left in HOME");
}

/// Asked for (`--cache-dir`, a `dump_files_dir` of its own), the files are written there.
#[test]
fn asked_for_the_caches_and_dumps_are_written_where_asked() {
    let home = tempfile::tempdir().unwrap();
    let conf = home.path().join("opensm.conf");
    std::fs::write(&conf, "dump_files_dir dumps\n").unwrap();
    let conf = conf.display().to_string();
    let args = ["sm", "--once", "-F", &conf, "--cache-dir", "cache"];
    let (output, left) = in_empty_var(home.path(), "", &args);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(left, "");
    assert_eq!(
        entries(&home.path().join("cache")),
        ["guid2lid", "guid2mkey", "neighbors"]
    );
    assert_eq!(entries(&home.path().join("dumps")), ["opensm-subnet.lst"]);
}

/// A cache file that cannot be read (here a directory in its place) and a cache directory that
/// cannot be written (a file in its place): warnings, and the subnet comes up.
#[test]
fn a_cache_it_cannot_read_or_write_is_a_warning() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("unreadable/guid2mkey")).unwrap();
    std::fs::write(home.path().join("unwritable"), "").unwrap();
    for (dir, warning) in [
        (
            "unreadable",
            "cannot read the cache file; starting without it",
        ),
        ("unwritable", "cannot save the cache file"),
    ] {
        let args = ["sm", "--once", "--cache-dir", dir];
        let (output, _) = in_empty_var(home.path(), "", &args);
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{said}");
        assert!(said.contains(warning), "{said}");
    }
}

/// On umad the caches are OpenSM's way: /var/cache/ibqos unless `--cache-dir` or
/// `$OSM_CACHE_DIR` says otherwise. A damaged line there is read (and reported) before the SM
/// waits for its port, which this host lacks: the 10 s `--once` waits, then gives up.
#[test]
fn on_umad_the_caches_are_in_var_cache_ibqos() {
    let home = tempfile::tempdir().unwrap();
    let setup = "mkdir /var/cache/ibqos && echo damaged > /var/cache/ibqos/guid2lid";
    let (output, left) = in_empty_var(
        home.path(),
        &format!("{setup}\nexport IBQOS_SYSFS_ROOT=\"$HOME/no-sys\""),
        &["sm", "--once", "--fabric", "umad"],
    );
    let said = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{said}");
    assert!(
        said.contains("guid2lid line skipped cache=/var/cache/ibqos/guid2lid"),
        "{said}"
    );
    assert_eq!(left, "/var/cache/ibqos\n/var/cache/ibqos/guid2lid\n");
}
