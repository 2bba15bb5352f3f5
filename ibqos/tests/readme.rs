//! README.md's examples, run, so that the README cannot drift from the program.
//!
//! Every `console` block is a trycmd script: each `$ ibqos ...` line runs and what it prints
//! (standard output and error together) must be the lines under it, where `[..]` stands for
//! any text within a line and `...` for any lines (timestamps, timings). A `? N` line under a
//! command is its exit status. `sh` blocks are not run: they need hardware, a daemon or root,
//! which the README says beside them. After a change of output,
//! `TRYCMD=overwrite cargo test -p ibqos --test readme` writes what the commands print into the
//! README, keeping the elisions that still match.

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
