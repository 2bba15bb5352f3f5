//! OpenSM itself as the oracle: `opensm -F in.conf -c out.conf` writes the values OpenSM read,
//! and prints its own warnings. Every vector of tests/data/vectors.toml and a sample of written
//! settings must read the same in ibqos and in OpenSM 3.3.23.
//!
//! Needs the Debian `opensm` package (`apt-get install opensm`); without /usr/sbin/opensm these
//! tests fail rather than pass unchecked.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::{conf_pairs, is_per_sl, load_conf, strategy, vectors};
use ibqos_opensm::{Loaded, Settings, to_opensm_conf};
use proptest::prelude::*;

const OPENSM: &str = "/usr/sbin/opensm";

/// What OpenSM read from `conf`: the options `opensm -c` wrote, and what it printed.
fn opensm(conf: &[u8]) -> (BTreeMap<String, String>, String) {
    assert!(
        Path::new(OPENSM).exists(),
        "{OPENSM} is missing: install the Debian opensm package (apt-get install opensm)"
    );
    let dir = tempfile::tempdir().expect("scratch dir");
    let (input, output) = (dir.path().join("in.conf"), dir.path().join("out.conf"));
    std::fs::write(&input, conf).expect("write in.conf");
    let run = Command::new(OPENSM)
        .arg("-F")
        .arg(&input)
        .arg("-c")
        .arg(&output)
        .output()
        .expect("run opensm");
    assert!(run.status.success(), "opensm failed: {run:?}");
    let written = std::fs::read(&output).expect("opensm wrote out.conf");
    (
        conf_pairs(&String::from_utf8_lossy(&written)),
        String::from_utf8_lossy(&run.stdout).into_owned(),
    )
}

/// A C number (`strtoul` base 0), to compare `0x12` with `18`.
fn c_number(s: &str) -> Option<i128> {
    let (negative, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let value = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i128::from_str_radix(hex, 16).ok()?
    } else if digits.len() > 1 && digits.starts_with('0') {
        i128::from_str_radix(&digits[1..], 8).ok()?
    } else {
        digits.parse().ok()?
    };
    Some(if negative { -value } else { value })
}

/// What `clean_val` makes of a value ibqos wrote (ibqos quotes values it must protect).
fn unquote(s: &str) -> &str {
    let t = s.trim_matches([' ', '\t', '\r', '\x0b', '\x0c']);
    let b = t.as_bytes();
    match (b.first(), b.last()) {
        (Some(q @ (b'"' | b'\'')), Some(l)) if q == l && b.len() >= 2 => &t[1..t.len() - 1],
        _ => t,
    }
}

fn same_value(ours: &str, theirs: &str) -> bool {
    let ours = unquote(ours);
    ours == theirs || (c_number(ours).is_some() && c_number(ours) == c_number(theirs))
}

/// Compares what ibqos read (`ours`) with what OpenSM read from the same `conf`.
fn agree(conf: &[u8], ours: &Loaded, defaults: &BTreeMap<String, String>) -> Result<(), String> {
    let (theirs, stdout) = opensm(conf);
    let written = conf_pairs(&to_opensm_conf(&ours.settings).0);
    let mut problems = Vec::new();
    for (key, their) in &theirs {
        // QoS sets are compared as tables below: OpenSM writes back the raw strings.
        if key.starts_with("qos_") && key != "qos_policy_file" {
            continue;
        }
        let default = if is_per_sl(key) {
            Some("0")
        } else {
            defaults.get(key).map(String::as_str)
        };
        let Some(our) = written.get(key).map(String::as_str).or(default) else {
            problems.push(format!("{key}: OpenSM has {their:?}, ibqos has nothing"));
            continue;
        };
        if !same_value(our, their) {
            problems.push(format!("{key}: ibqos {our:?}, OpenSM {their:?}"));
        }
    }
    for (key, our) in written.iter().filter(|(k, _)| !theirs.contains_key(*k)) {
        // `opensm -c` leaves out an SL whose four per-SL values are all 0.
        if !(is_per_sl(key) && c_number(our) == Some(0)) {
            problems.push(format!("{key}: ibqos has {our:?}, OpenSM nothing"));
        }
    }
    let out_conf: String = theirs.iter().map(|(k, v)| format!("{k} {v}\n")).collect();
    let reread = load_conf(out_conf.as_bytes()).settings;
    if reread.qos != ours.settings.qos {
        problems.push(format!(
            "QoS differs:\n ibqos  {:?}\n OpenSM {:?}",
            ours.settings.qos, reread.qos
        ));
    }
    let mut said: Vec<String> = stdout
        .lines()
        .flat_map(|l| l.split(" Warning: Cached Option ").skip(1))
        .map(|m| format!("Warning: Cached Option {}", m.trim_end()))
        .collect();
    let mut ours_said: Vec<String> = ours
        .diagnostics
        .iter()
        .filter_map(|d| d.message.strip_prefix("OpenSM prints: "))
        .map(str::to_string)
        .collect();
    said.sort();
    ours_said.sort();
    if said != ours_said {
        problems.push(format!(
            "OpenSM printed {said:?}\nibqos says it prints {ours_said:?}"
        ));
    }
    let count = |codes: &[&str]| {
        ours.diagnostics
            .iter()
            .filter(|d| codes.contains(&d.code.as_str()))
            .count()
    };
    for (needle, codes) in [
        ("Unrecognized token", &["unknown-key"][..]),
        ("-E- Parsing error", &["not-numeric", "out-of-range"][..]),
        (" Invalid Cached Option", &["reset-to-default"][..]),
    ] {
        let theirs = stdout.matches(needle).count();
        if theirs != count(codes) {
            problems.push(format!(
                "OpenSM printed {needle:?} {theirs} times, ibqos reports {codes:?} {} times",
                count(codes)
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

fn defaults() -> BTreeMap<String, String> {
    opensm(b"").0
}

#[test]
fn opensm_defaults_are_ibqos_defaults() {
    let defaults = defaults();
    assert_eq!(defaults.len(), 160, "opensm -c writes every option once");
    let ours = load_conf(b"");
    agree(b"", &ours, &defaults).unwrap();
    assert_eq!(ours.settings, Settings::default());
}

#[test]
fn every_vector_reads_as_in_opensm() {
    let defaults = defaults();
    let failures: Vec<String> = vectors()
        .iter()
        .filter(|v| v.oracle)
        .filter_map(|v| {
            agree(v.conf.as_bytes(), &load_conf(v.conf.as_bytes()), &defaults)
                .err()
                .map(|e| format!("vector {}:\n{e}", v.id))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// What ibqos writes, OpenSM reads back to the values ibqos holds.
    #[test]
    fn opensm_reads_what_ibqos_writes(s in strategy::expressible()) {
        let (text, _) = to_opensm_conf(&s);
        let ours = load_conf(text.as_bytes());
        prop_assert_eq!(&ours.settings, &s);
        if let Err(e) = agree(text.as_bytes(), &ours, &defaults()) {
            return Err(TestCaseError::fail(format!("{e}\n--- written:\n{text}")));
        }
    }
}
