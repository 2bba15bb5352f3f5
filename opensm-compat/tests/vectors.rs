//! The table-driven opensm.conf vectors of tests/data/vectors.toml.

mod common;

use common::{Vector, conf_pairs, load_conf, vectors};

fn check(v: &Vector) -> Result<(), String> {
    let loaded = load_conf(v.conf.as_bytes());
    let diags = &loaded.diagnostics;
    let mut got: Vec<&str> = diags.iter().map(|d| d.code.as_str()).collect();
    let mut want: Vec<&str> = v.codes.iter().map(String::as_str).collect();
    got.sort_unstable();
    want.sort_unstable();
    if got != want {
        let all: Vec<String> = diags.iter().map(ToString::to_string).collect();
        return Err(format!(
            "codes {got:?}, expected {want:?}\n{}",
            all.join("\n")
        ));
    }
    for place in &v.at {
        let (code, pos) = place.split_once('@').ok_or("bad `at`")?;
        let found = diags.iter().any(|d| {
            d.code.as_str() == code
                && d.location
                    .as_ref()
                    .is_some_and(|l| format!("{}:{}", l.line, l.col) == pos)
        });
        if !found {
            let all: Vec<String> = diags.iter().map(ToString::to_string).collect();
            return Err(format!("no {code} at {pos}\n{}", all.join("\n")));
        }
    }
    let mut says: Vec<&str> = diags
        .iter()
        .filter(|d| d.code.as_str() == "opensm-says")
        .filter_map(|d| d.message.strip_prefix("OpenSM prints: "))
        .collect();
    let mut want_says: Vec<&str> = v.opensm_says.iter().map(String::as_str).collect();
    says.sort_unstable();
    want_says.sort_unstable();
    if !v.opensm_says.is_empty() && says != want_says {
        return Err(format!("OpenSM messages {says:?}, expected {want_says:?}"));
    }
    let (written, lost) = ibqos_opensm::to_opensm_conf(&loaded.settings);
    if !lost.is_empty() {
        return Err(format!("writing back loses {lost:?}"));
    }
    let pairs = conf_pairs(&written);
    for (key, want) in &v.expect {
        let got = pairs.get(key).map(String::as_str);
        if got != Some(want.as_str()) {
            return Err(format!("{key} = {got:?}, expected {want:?}"));
        }
    }
    Ok(())
}

#[test]
fn opensm_conf_vectors() {
    let failures: Vec<String> = vectors()
        .iter()
        .filter_map(|v| check(v).err().map(|e| format!("vector {}: {e}", v.id)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
