//! infiniband-diags' check_lft_balance, the oracle of `ibqos lft-balance`.
//!
//! check_lft_balance is a Perl script over two files: ibnetdiscover's cache and dump_lfts'
//! output. It runs iblinkinfo on the cache for each switch, and iblinkinfo opens a umad port
//! even then, so all three run under ibsim's shim. With -v it prints every switch:
//!
//! ```text
//! Unbalanced Switch Port Usage: L0, 0x0000000000200000
//! Port 005: 6
//! Switch Port Usage: S0, 0x0000000000200004
//! Port 001: 4
//! ```
//!
//! It lists ports 1-36 that are up or carry routes, less those it takes for a host's own port.
//!
//! It counts the LIDs dump_lfts shows as a CA's or router's, and every `path #N` line, the
//! further LIDs of an LMC range. Those follow a switch's base LID too when an SM aligns switch
//! LIDs to the LMC, and ibsim answers them: check_lft_balance counts them, ibqos counts no
//! switch LID. [`switch_paths`] reads them from dump_lfts' output, so that the comparison takes
//! them out of check_lft_balance's figures.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::process::{command_line, run_bounded};
use crate::readback::Failures;
use crate::{Error, Ibsim, Result, Tool};

/// Reading the LFTs of a fabric of some hundred hosts takes a while under the shim; the limit
/// only bounds a hang.
const DIAG_TIMEOUT: Duration = Duration::from_secs(600);

/// One switch as check_lft_balance reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchUsage {
    pub name: String,
    pub unbalanced: bool,
    /// The routes of each port it counts.
    pub ports: BTreeMap<u8, u32>,
}

/// Every switch check_lft_balance reports, by switch GUID.
pub type Usage = BTreeMap<u64, SwitchUsage>;

/// check_lft_balance's `-v` output. Blank lines are skipped; any other line that is neither a
/// switch heading nor a port line is an error quoting it, so a change of format cannot pass
/// unseen.
pub fn parse_usage(text: &str) -> Result<Usage> {
    let mut usage = Usage::new();
    let mut current: Option<u64> = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim_end();
        let unexpected = || Error::new(format!("check_lft_balance line {}: `{line}`", number + 1));
        if line.is_empty() {
            continue;
        }
        let heading = line
            .strip_prefix("Unbalanced Switch Port Usage: ")
            .map(|rest| (true, rest))
            .or_else(|| {
                line.strip_prefix("Switch Port Usage: ")
                    .map(|rest| (false, rest))
            });
        if let Some((unbalanced, rest)) = heading {
            let (name, guid) = rest.rsplit_once(", ").ok_or_else(unexpected)?;
            let guid = hex(guid).ok_or_else(unexpected)?;
            let switch = SwitchUsage {
                name: name.to_owned(),
                unbalanced,
                ports: BTreeMap::new(),
            };
            if usage.insert(guid, switch).is_some() {
                return Err(Error::new(format!(
                    "check_lft_balance reports switch {guid:#018x} twice"
                )));
            }
            current = Some(guid);
            continue;
        }
        let (port, routes) = line
            .strip_prefix("Port ")
            .and_then(|rest| rest.split_once(": "))
            .ok_or_else(unexpected)?;
        let (Ok(port), Ok(routes)) = (port.parse::<u8>(), routes.parse::<u32>()) else {
            return Err(unexpected());
        };
        let switch = current
            .and_then(|guid| usage.get_mut(&guid))
            .ok_or_else(unexpected)?;
        switch.ports.insert(port, routes);
    }
    Ok(usage)
}

/// Per switch GUID and port, the `path #N` lines of dump_lfts' output that follow a switch's
/// base LID: the routes check_lft_balance counts toward switches.
pub type SwitchPaths = BTreeMap<u64, BTreeMap<u8, u32>>;

/// The switch LMC paths of dump_lfts' output (`Unicast lids ... guid 0x... (name):` headings,
/// then `0xLID PORT : (Switch portguid ...)`, `(Channel Adapter ...)`, `(path #2 out of 4: ...)`
/// lines). Headings and destination lines that do not read are errors quoting them.
pub fn switch_paths(dump_lfts: &str) -> Result<SwitchPaths> {
    let mut paths = SwitchPaths::new();
    let mut switch = None;
    let mut after_switch = false;
    for (number, line) in dump_lfts.lines().enumerate() {
        let unexpected = || Error::new(format!("dump_lfts line {}: `{line}`", number + 1));
        if line.starts_with("Unicast lids ") {
            let guid = line
                .split_once(" guid ")
                .and_then(|(_, rest)| hex(rest.split_once(' ')?.0))
                .ok_or_else(unexpected)?;
            switch = Some(guid);
            after_switch = false;
            continue;
        }
        let Some((entry, destination)) = line.split_once(" : (") else {
            continue;
        };
        let port = entry
            .split_whitespace()
            .nth(1)
            .and_then(|port| port.parse::<u8>().ok())
            .ok_or_else(unexpected)?;
        if destination.starts_with("path #") {
            if after_switch {
                let guid = switch.ok_or_else(unexpected)?;
                *paths.entry(guid).or_default().entry(port).or_default() += 1;
            }
        } else {
            after_switch = destination.starts_with("Switch ");
        }
    }
    Ok(paths)
}

fn hex(text: &str) -> Option<u64> {
    u64::from_str_radix(text.strip_prefix("0x")?, 16).ok()
}

/// The programs the oracle runs, all from infiniband-diags.
#[derive(Debug, Clone)]
pub struct DiagTools {
    pub check_lft_balance: Tool,
    pub ibnetdiscover: Tool,
    pub dump_lfts: Tool,
    /// check_lft_balance runs it by name, so its directory goes first in PATH.
    pub iblinkinfo: Tool,
}

impl DiagTools {
    pub fn require() -> DiagTools {
        DiagTools {
            check_lft_balance: Tool::require("check_lft_balance", "infiniband-diags"),
            ibnetdiscover: Tool::require("ibnetdiscover", "infiniband-diags"),
            dump_lfts: Tool::require("dump_lfts", "infiniband-diags"),
            iblinkinfo: Tool::require("iblinkinfo", "infiniband-diags"),
        }
    }
}

/// check_lft_balance's report of the fabric `sim` runs, read from `node`, and the switch LMC
/// paths it counted; its input files are written into `dir`.
pub fn check_lft_balance(
    tools: &DiagTools,
    sim: &Ibsim,
    node: &str,
    dir: &Path,
) -> Result<(Usage, SwitchPaths)> {
    let cache = dir.join("ibnetdiscover.cache");
    let lfts = dir.join("dump_lfts.out");
    let run = |program: &Tool, args: &[&std::ffi::OsStr]| {
        let mut cmd = sim.client(&program.path, node);
        cmd.args(args);
        if let Some(bin) = tools.iblinkinfo.path.parent() {
            let path = std::env::var_os("PATH").unwrap_or_default();
            let dirs = std::iter::once(bin.to_owned()).chain(std::env::split_paths(&path));
            cmd.env(
                "PATH",
                std::env::join_paths(dirs).map_err(|e| Error::new(e.to_string()))?,
            );
        }
        let line = command_line(&cmd);
        run_bounded(&mut cmd, DIAG_TIMEOUT)?.success(&line)
    };
    run(
        &tools.ibnetdiscover,
        &["--cache".as_ref(), cache.as_os_str()],
    )?;
    let dumped = run(&tools.dump_lfts, &[])?;
    std::fs::write(&lfts, &dumped.stdout)
        .map_err(|e| Error::new(format!("cannot write {}: {e}", lfts.display())))?;
    let args = [
        "-v".as_ref(),
        "-l".as_ref(),
        lfts.as_os_str(),
        "-i".as_ref(),
        cache.as_os_str(),
    ];
    let report = run(&tools.check_lft_balance, &args)?;
    Ok((parse_usage(&report.stdout)?, switch_paths(&dumped.stdout)?))
}

/// `ibqos lft-balance --fabric ibsim:SOCK@NODE --json` of the fabric `sim` runs.
pub fn ibqos_report(ibqos: &Path, sim: &Ibsim, node: &str) -> Result<Value> {
    let fabric = format!("ibsim:{}@{node}", sim.sockname());
    let mut cmd = std::process::Command::new(ibqos);
    cmd.args(["lft-balance", "--fabric", &fabric, "--json"]);
    let line = command_line(&cmd);
    let out = run_bounded(&mut cmd, DIAG_TIMEOUT)?.success(&line)?;
    serde_json::from_str(&out.stdout)
        .map_err(|e| Error::new(format!("`{line}` printed no JSON object: {e}")))
}

/// Requires `ours` (an `ibqos lft-balance --json` report) to agree with `oracle` wherever both
/// apply: the same switches, and on every port 1-36 the same routes once the switch LMC paths
/// `paths` are taken out of check_lft_balance's figures. The verdicts must agree too: with
/// check_lft_balance's own on a switch it counted no switch path on, else with its rule (at
/// most one route apart) applied to the figures without them.
///
/// Two of check_lft_balance's rules are not ibqos's, and the ports they touch are skipped. It
/// looks at ports 1-36 only. And it drops any port that carries `lids_per_port` routes (one
/// node's LIDs) as a host's own port, even one toward a switch.
pub fn compare_usage(
    f: &mut Failures,
    ours: &Value,
    oracle: &Usage,
    paths: &SwitchPaths,
    lids_per_port: u32,
) {
    let switches = ours["switches"].as_array().cloned().unwrap_or_default();
    let by_guid: BTreeMap<u64, &Value> = switches
        .iter()
        .filter_map(|s| Some((hex(s["guid"].as_str()?)?, s)))
        .collect();
    f.check(by_guid.len() == switches.len(), || {
        format!("ibqos's report has switches without a GUID: {ours}")
    });
    let names = |guids: Vec<&u64>| {
        guids.iter().fold(String::new(), |mut text, guid| {
            let _ = write!(text, " {guid:#018x}");
            text
        })
    };
    f.check(by_guid.keys().eq(oracle.keys()), || {
        format!(
            "the switches differ: ibqos{}; check_lft_balance{}",
            names(by_guid.keys().collect()),
            names(oracle.keys().collect())
        )
    });
    let none = BTreeMap::new();
    for (guid, theirs) in oracle {
        let Some(mine) = by_guid.get(guid) else {
            continue;
        };
        let at = format!("switch {} ({guid:#018x})", theirs.name);
        let switch_paths = paths.get(guid).unwrap_or(&none);
        let adjusted: BTreeMap<u8, u32> = theirs
            .ports
            .iter()
            .map(|(&port, &routes)| {
                let to_switches = switch_paths.get(&port).copied().unwrap_or(0);
                (port, routes.saturating_sub(to_switches))
            })
            .collect();
        let unbalanced = if switch_paths.is_empty() {
            theirs.unbalanced
        } else {
            let (min, max) = (adjusted.values().min(), adjusted.values().max());
            max.zip(min).is_some_and(|(max, min)| max - min > 1)
        };
        f.check(mine["balanced"] == Value::Bool(!unbalanced), || {
            format!(
                "{at}: ibqos says balanced {}, check_lft_balance says unbalanced {unbalanced}",
                mine["balanced"]
            )
        });
        let counted: BTreeMap<u8, u32> = mine["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["toward"] != "end_node")
            .filter_map(|p| {
                let port = u8::try_from(p["port"].as_u64()?).ok()?;
                Some((port, u32::try_from(p["routes"].as_u64()?).ok()?))
            })
            .filter(|&(port, routes)| port <= 36 && routes != lids_per_port)
            .collect();
        let mut ports: Vec<&u8> = counted.keys().chain(adjusted.keys()).collect();
        ports.sort();
        ports.dedup();
        for port in ports {
            let (a, b) = (counted.get(port), adjusted.get(port));
            let skipped = b == Some(&lids_per_port) && a.is_none();
            f.check(a == b || skipped, || {
                format!("{at} port {port}: ibqos {a:?} routes, check_lft_balance {b:?}")
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_switch_and_port() {
        let text = "Unbalanced Switch Port Usage: leaf, one, 0x0000000000200000\n\
                    Port 005: 6\nPort 036: 0\n\n\
                    Switch Port Usage: S0, 0x0000000000200004\nPort 001: 4\n";
        let usage = parse_usage(text).unwrap();
        assert_eq!(usage.len(), 2);
        let leaf = &usage[&0x20_0000];
        assert_eq!((leaf.name.as_str(), leaf.unbalanced), ("leaf, one", true));
        assert_eq!(leaf.ports, BTreeMap::from([(5, 6), (36, 0)]));
        assert_eq!(usage[&0x20_0004].ports, BTreeMap::from([(1, 4)]));
    }

    #[test]
    fn an_unknown_line_or_a_port_before_any_switch_is_an_error() {
        for text in [
            "Port 001: 4\n",
            "Switch Port Usage: S0, 0x1\nPort 1: four\n",
            "Switch Port Usage: S0 0x1\n",
            "ibwarn: something\n",
        ] {
            let error = parse_usage(text).unwrap_err().to_string();
            assert!(
                error.contains("check_lft_balance line"),
                "{text:?}: {error}"
            );
        }
    }

    fn report(ports: Value, balanced: bool) -> Value {
        serde_json::json!({"switches": [
            {"guid": "0x0000000000000001", "balanced": balanced, "ports": ports}
        ]})
    }

    fn oracle(ports: &[(u8, u32)], unbalanced: bool) -> Usage {
        let switch = SwitchUsage {
            name: "S".into(),
            unbalanced,
            ports: ports.iter().copied().collect(),
        };
        Usage::from([(1, switch)])
    }

    fn failures(ours: &Value, theirs: &Usage) -> Vec<String> {
        let mut f = Failures::new("test");
        compare_usage(&mut f, ours, theirs, &SwitchPaths::new(), 1);
        f.failures().to_vec()
    }

    #[test]
    fn a_difference_names_the_switch_and_port() {
        let ours = report(
            serde_json::json!([
                {"port": 1, "toward": "end_node", "routes": 1},
                {"port": 2, "toward": "switch", "routes": 3},
                {"port": 3, "toward": "switch", "routes": 4},
            ]),
            true,
        );
        assert_eq!(failures(&ours, &oracle(&[(2, 3), (3, 4)], false)), [""; 0]);
        let found = failures(&ours, &oracle(&[(2, 3), (3, 5)], true));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].contains("switch S (0x0000000000000001)"),
            "{found:?}"
        );
        assert!(
            found[1].contains("port 3: ibqos Some(4) routes, check_lft_balance Some(5)"),
            "{found:?}"
        );
    }

    #[test]
    fn the_paths_of_switch_lids_are_counted_per_switch_and_port() {
        let text = "\
Unicast lids [0x0-0x8] of switch DR path slid 0; dlid 0; 0,1 guid 0x0000000000200004 (S0):
  Lid  Out   Destination
       Port     Info
0x0004 001 : (Channel Adapter portguid 0x0000000000100001: 'H0_0')
0x0005 001 : (path #2 out of 2: portguid 0x0000000000100001)
0x0006 002 : (Switch portguid 0x0000000000200000: 'L0')
0x0007 003 : (path #2 out of 2: portguid 0x0000000000200000)
0x0008 000 : (Switch portguid 0x0000000000200004: 'S0')
0x0009 000 : (path #2 out of 2: portguid 0x0000000000200004)
5 valid lids dumped
";
        let paths = switch_paths(text).unwrap();
        assert_eq!(
            paths,
            SwitchPaths::from([(0x20_0004, BTreeMap::from([(3, 1), (0, 1)]))])
        );
        // With them out, a port of 3 that were 2 paths to a switch is one of 1.
        let ours = report(
            serde_json::json!([
                {"port": 2, "toward": "switch", "routes": 1},
                {"port": 3, "toward": "switch", "routes": 2},
            ]),
            true,
        );
        let mut f = Failures::new("test");
        let paths = SwitchPaths::from([(1, BTreeMap::from([(3, 2)]))]);
        compare_usage(&mut f, &ours, &oracle(&[(2, 1), (3, 4)], true), &paths, 4);
        assert_eq!(f.failures(), [""; 0]);
        for (text, line) in [
            (
                "0x1 001 : (Switch portguid 0x1: 'S')\n0x2 001 : (path #2 out of 2: x)\n",
                2,
            ),
            ("0x0004 x : (Channel Adapter portguid 0x1: 'H')\n", 1),
            ("Unicast lids [0x0-0x8] of switch Lid 1 guid S0\n", 1),
        ] {
            let error = switch_paths(text).unwrap_err().to_string();
            assert!(
                error.contains(&format!("dump_lfts line {line}:")),
                "{error}"
            );
        }
    }

    #[test]
    fn ports_check_lft_balance_cannot_see_are_skipped() {
        // Port 37 is beyond its 36; port 3 carries one node's LIDs, which it takes for a host.
        let ours = report(
            serde_json::json!([
                {"port": 2, "toward": "switch", "routes": 3},
                {"port": 3, "toward": "switch", "routes": 1},
                {"port": 37, "toward": "switch", "routes": 9},
            ]),
            true,
        );
        assert!(failures(&ours, &oracle(&[(2, 3)], false)).is_empty());
        assert!(failures(&ours, &oracle(&[(2, 3), (3, 1)], false)).is_empty());
    }
}
