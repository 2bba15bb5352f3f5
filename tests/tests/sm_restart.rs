//! `ibqos sm` restarted on a fabric it already configured: LIDs must not move.
//!
//! ibsim keeps every LID an SM wrote after the SM exits, like real ports do. A second run with
//! the same LID cache (--cache-dir) must keep every LID, and so must a run with an empty cache:
//! a valid LID a port already holds is kept. Separately, a run on a fresh fabric (every LID 0)
//! must take its LIDs from the cache.

use std::collections::BTreeMap;
use std::path::Path;

use ibqos_tests::readback::{Failures, PortKey, Readback, lid_map, port_name};
use ibqos_tests::scenario::{Fabric, check_configured, testdata};
use ibqos_tests::sm::{SmFabric, SmInvocation};
use ibqos_tests::{Ibsim, SimTools, TestDir};

/// Runs the SM once on `sim` with `cache_dir`, requires SUBNET UP, and reads the LIDs back.
fn run_and_read_lids(
    tools: &SimTools,
    sim: &Ibsim,
    fabric: &Fabric,
    cache_dir: &Path,
) -> (Readback, BTreeMap<PortKey, u16>) {
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    SmInvocation::new(SmFabric::Native, &fabric.sm_node, cache_dir)
        .run_up(&ibqos, sim)
        .unwrap();
    let rb = Readback::read(tools, sim, &fabric.topology, &fabric.query_node).unwrap();
    let lids = lid_map(&fabric.topology, &rb);
    (rb, lids)
}

/// Every endport's LID in `after` equals the one in `before`.
fn check_same_lids(
    f: &mut Failures,
    what: &str,
    before: &BTreeMap<PortKey, u16>,
    after: &BTreeMap<PortKey, u16>,
) {
    for (key, lid) in before {
        let now = after.get(key);
        f.check(now == Some(lid), || {
            format!("{what}: {} had LID {lid}, now {now:?}", port_name(key))
        });
    }
}

#[test]
fn lids_survive_a_restart_with_and_without_the_cache() {
    let tools = SimTools::require();
    let dir = TestDir::new("sm-restart");
    let fabric = Fabric::load("fat-tree-16", &testdata("fat-tree-16.net")).unwrap();
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim")).unwrap();
    let cache = dir.subdir("cache");

    let (_, first) = run_and_read_lids(&tools, &sim, &fabric, &cache);
    let (_, second) = run_and_read_lids(&tools, &sim, &fabric, &cache);
    let (rb, third) = run_and_read_lids(&tools, &sim, &fabric, &dir.subdir("fresh-cache"));

    let mut f = Failures::new("restart on fat-tree-16");
    check_same_lids(&mut f, "second run, same cache", &first, &second);
    check_same_lids(&mut f, "third run, empty cache", &first, &third);
    check_configured(&mut f, &fabric, &rb, &[]);
    f.assert_none();
}

/// Rewrites a guid2lid file (`GUID BASE TOP` per line, hex) with every LID moved up by `shift`.
fn shift_cache(cache_dir: &Path, shift: u16) {
    let path = cache_dir.join("guid2lid");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("the SM wrote no LID cache {}: {e}", path.display()));
    let hex = |s: &str| u16::from_str_radix(s.trim_start_matches("0x"), 16).unwrap();
    let shifted: String = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(w.len(), 3, "unexpected guid2lid line {l:?}");
            let (base, top) = (hex(w[1]) + shift, hex(w[2]) + shift);
            format!("{} {base:#06x} {top:#06x}\n", w[0])
        })
        .collect();
    assert!(!shifted.is_empty(), "empty LID cache {}", path.display());
    std::fs::write(&path, shifted).unwrap();
}

/// On a fresh fabric no port holds a LID, so the only source of the old ones is the cache. The
/// cache is shifted first, so the test cannot pass by the SM assigning the same LIDs afresh.
#[test]
fn a_fresh_fabric_gets_its_lids_from_the_cache() {
    const SHIFT: u16 = 100;
    let tools = SimTools::require();
    let dir = TestDir::new("sm-cache");
    let fabric = Fabric::load("two-switch", &testdata("two-switch.net")).unwrap();
    let cache = dir.subdir("cache");
    let first = {
        let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim-1")).unwrap();
        run_and_read_lids(&tools, &sim, &fabric, &cache).1
    };
    shift_cache(&cache, SHIFT);
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibsim-2")).unwrap();
    let (rb, second) = run_and_read_lids(&tools, &sim, &fabric, &cache);

    let mut f = Failures::new("LIDs from the cache on two-switch");
    let expected: BTreeMap<PortKey, u16> = first
        .iter()
        .map(|(k, &lid)| (k.clone(), lid + SHIFT))
        .collect();
    check_same_lids(&mut f, "fresh fabric, shifted cache", &expected, &second);
    check_configured(&mut f, &fabric, &rb, &[]);
    f.assert_none();
}
