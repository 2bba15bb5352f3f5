//! README.md's examples, run, so that the README cannot drift from the program; and its test
//! command, scripts/test, with stand-ins for what it installs and runs.
//!
//! Every `console` block is a trycmd script: each `$ ibqos ...` line runs and what it prints
//! (standard output and error together) must be the lines under it, where `[..]` stands for
//! any text within a line and `...` for any lines (timestamps, timings). A `? N` line under a
//! command is its exit status. `sh` blocks are not run: they need hardware, a daemon or root,
//! which the README says beside them; their `ibqos` command lines must parse. After a change
//! of output, `TRYCMD=overwrite cargo test -p ibqos --test readme` writes what the commands
//! print into the README, keeping the elisions that still match.

use std::path::{Path, PathBuf};
use std::process::Command;

const REPOSITORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

fn readme() -> PathBuf {
    Path::new(REPOSITORY).join("README.md")
}

#[test]
fn the_readme_console_examples_print_what_the_readme_shows() {
    let scratch = tempfile::tempdir().unwrap();
    // The examples name the repository's files by relative paths (examples/opensm-qos.conf):
    // each top-level entry is linked into a scratch directory they run in, so that what they
    // write (ft.net, sim-plots/) lands there and not in the source tree.
    for entry in std::fs::read_dir(REPOSITORY).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "target" {
            std::os::unix::fs::symlink(entry.path(), scratch.path().join(entry.file_name()))
                .unwrap();
        }
    }
    // trycmd runs each command in the test's working directory when the case names none.
    std::env::set_current_dir(scratch.path()).unwrap();
    trycmd::TestCases::new()
        .register_bin("ibqos", Path::new(env!("CARGO_BIN_EXE_ibqos")))
        // A fresh LID cache, as on a machine that never ran ibqos: a cache left by another run
        // would give the SM's own port another LID.
        .env(
            "OSM_CACHE_DIR",
            scratch.path().join("cache").to_string_lossy(),
        )
        .timeout(std::time::Duration::from_secs(120))
        .case(readme());
}

/// Every TOML block the README shows is an ibqos.toml that `ibqos check` passes.
#[test]
fn the_readme_toml_examples_pass_ibqos_check() {
    let readme = std::fs::read_to_string(readme()).unwrap();
    let blocks = fenced_blocks(&readme, "toml");
    assert!(blocks.len() >= 2, "the README's TOML examples: {blocks:?}");
    let scratch = tempfile::tempdir().unwrap();
    for (index, block) in blocks.iter().enumerate() {
        let file = scratch.path().join(format!("example-{index}.toml"));
        std::fs::write(&file, block).unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_ibqos"))
            .arg("check")
            .arg(&file)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && said.contains("no problems found"),
            "the README's TOML example {index} does not pass `ibqos check`:\n{said}{}\n{block}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The `ibqos` commands of the `sh` blocks, which need hardware, a daemon or root to run, are
/// still command lines ibqos accepts: each is given with `--help` after it, which clap answers
/// only once every flag and value before it has parsed.
#[test]
fn the_readme_sh_examples_are_command_lines_ibqos_accepts() {
    let readme = std::fs::read_to_string(readme()).unwrap();
    let mut commands = Vec::new();
    for block in fenced_blocks(&readme, "sh") {
        for line in block.lines() {
            // What the shell would run as ibqos: before a comment, a redirection or a pipe,
            // after any VAR=value.
            let line = line.split(" #").next().unwrap();
            let line = line.split(['>', '|']).next().unwrap();
            let mut words = line
                .split_whitespace()
                .skip_while(|word| word.contains('='));
            if words
                .next()
                .is_some_and(|program| program == "ibqos" || program.ends_with("/ibqos"))
            {
                commands.push(words.map(str::to_string).collect::<Vec<_>>());
            }
        }
    }
    assert!(
        commands.len() >= 20,
        "the README's sh examples: {commands:?}"
    );
    for args in commands {
        let output = Command::new(env!("CARGO_BIN_EXE_ibqos"))
            .args(&args)
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "`ibqos {}` is not a command line ibqos accepts:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// The text of every fenced block of `language` in `markdown`.
fn fenced_blocks(markdown: &str, language: &str) -> Vec<String> {
    let opening = format!("```{language}");
    let mut blocks = Vec::new();
    let mut lines = markdown.lines();
    while let Some(line) = lines.next() {
        if line.trim_end() == opening {
            let body: Vec<&str> = lines
                .by_ref()
                .take_while(|l| !l.starts_with("```"))
                .collect();
            blocks.push(body.join("\n") + "\n");
        }
    }
    blocks
}

/// A directory of stand-ins for `dpkg-query` (every package missing), `apt-get` and `cargo`
/// that each print what they were asked, first on a `PATH` otherwise the system's, readable by
/// every user.
fn stand_ins() -> (tempfile::TempDir, String) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let stand_in = |name: &str, script: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{script}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    stand_in("dpkg-query", "exit 1");
    stand_in("apt-get", "echo \"apt-get $*\"");
    stand_in("cargo", "echo \"cargo $*\"");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/bin:/bin", dir.path().display());
    (dir, path)
}

/// The oracles, then what `ibqos sim` across MPI processes builds and runs with.
const PACKAGES: &str = "opensm ibsim-utils infiniband-diags prometheus curl systemd man-db \
                        mpich libmpich-dev libclang-dev";

/// The README's test command, as root on a machine without the oracles: it installs them (and
/// MPICH) with apt-get, then runs the whole workspace's tests, MPI's included.
#[test]
fn scripts_test_as_root_installs_the_missing_oracles_then_runs_the_tests() {
    let (_dir, path) = stand_ins();
    let output = Command::new(Path::new(REPOSITORY).join("scripts/test"))
        .arg("--no-fail-fast")
        .env("PATH", path)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{said}");
    assert_eq!(
        said,
        format!(
            "apt-get update\napt-get install -y {PACKAGES}\n\
             cargo test --workspace --features ibqos/mpi,ibqos-tests/mpi --no-fail-fast\n"
        )
    );
}

/// As another user, who cannot install: it says the command that installs what is missing
/// and stops, running no test.
#[test]
fn scripts_test_as_a_user_names_the_install_command_and_runs_nothing() {
    let (_dir, path) = stand_ins();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(Path::new(REPOSITORY).join("scripts/test"))
        .env("PATH", path)
        .output()
        .unwrap();
    let (said, complained) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(!output.status.success(), "{said}{complained}");
    assert_eq!(said, "", "nothing installed, no test run");
    assert!(
        complained.contains(&format!(
            "sudo apt-get update && sudo apt-get install -y {PACKAGES}"
        )),
        "{complained}"
    );
}
