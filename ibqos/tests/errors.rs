//! What `ibqos` says when something is wrong, and where it says it: each cause once, every
//! diagnostic of `check` on standard output (as JSON with `--json`), every error of an
//! ibqos.toml in file order and in the file's words, and shapes nobody can address refused.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use common::{ibqos, scratch_file};
use tempfile::TempDir;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Exits 1 with `cause` said exactly once on standard error.
fn fails_saying_once(output: &Output, cause: &str) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert_eq!(
        text.matches(cause).count(),
        1,
        "{cause:?} not once in: {text}"
    );
}

#[test]
fn an_os_error_is_said_once() {
    let dir = TempDir::new().unwrap();
    let missing = dir.path().join("missing.conf");
    let output = ibqos(&["migrate", missing.to_str().unwrap(), "-o", "-"]);
    fails_saying_once(&output, "No such file or directory");

    let empty = scratch_file(&dir, "empty.net", "");
    let output = ibqos(&["fabric", "serve", empty.to_str().unwrap()]);
    fails_saying_once(&output, "the fabric has no node to attach to");

    // A second fabric on the first one's sockets cannot bind them.
    let sockname = format!("ibqos-errors-{}", std::process::id());
    let mut first = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["fabric", "serve", "--sockname", &sockname, "two-switch"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("ibqos fabric serve starts");
    let mut ready = String::new();
    BufReader::new(first.stderr.take().unwrap())
        .read_line(&mut ready)
        .expect("its first line");
    assert!(ready.contains("serving"), "{ready}");
    let second = ibqos(&["fabric", "serve", "--sockname", &sockname, "two-switch"]);
    first.kill().expect("the first fabric stops");
    first.wait().expect("and is reaped");
    fails_saying_once(&second, "Address already in use");
}

#[test]
fn fabric_gen_refuses_shapes_beyond_the_unicast_lid_space() {
    for (x, y) in [("100000", "100000"), ("250", "250")] {
        let output = ibqos(&["fabric", "gen", "torus", "--x", x, "--y", y]);
        fails_saying_once(&output, "the unicast LID space holds 49151");
        assert_eq!(stdout(&output), "");
        assert!(!stderr(&output).contains("panicked"), "{}", stderr(&output));
    }
}
