//! Forwarding tables against OpenSM's: the oracle of the routing engines.
//!
//! One fabric, one opensm.conf, two fresh ibsims: `ibqos sm --once` configures one, `opensm -o`
//! the other. ibroute reads every switch's LFT back from each, and each SM's guid2lid cache says
//! which port GUID holds which LIDs. The tables are compared by switch (its net-file name) and
//! destination (port GUID and LID offset), so the two SMs need not hand out the same LIDs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use ibqos_fabric::generate::assign_lids;
use ibqos_fabric::netfile::parse_net_file;
use ibqos_fabric::routing::{NO_ROUTE, Routes};
use ibqos_fabric::{PortRef, Topology};

use crate::opensm::run_opensm_once;
use crate::readback::{Failures, read_lfts};
use crate::scenario::Fabric;
use crate::sm::{SmFabric, SmInvocation, write_opensm_conf};
use crate::{Error, Ibsim, Result, SimTools, TestDir};

/// A destination as both SMs name it: the port's GUID and the offset of the LID in its LMC range.
pub type Destination = (u64, u16);

/// Every switch's table, by switch name and destination: the output port.
pub type Tables = BTreeMap<String, BTreeMap<Destination, u8>>;

/// The port GUID and LMC offset of every LID a guid2lid file gives (`0xGUID 0xFIRST 0xLAST`).
pub fn destinations(guid2lid: &Path) -> Result<BTreeMap<u16, Destination>> {
    let text = std::fs::read_to_string(guid2lid)
        .map_err(|e| Error::new(format!("cannot read {}: {e}", guid2lid.display())))?;
    let mut by_lid = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<Option<u64>> = line
            .split_whitespace()
            .map(|f| u64::from_str_radix(f.trim_start_matches("0x"), 16).ok())
            .collect();
        let [Some(guid), Some(first), Some(last)] = fields[..] else {
            return Err(Error::new(format!(
                "{}: `{line}` is not `GUID FIRST LAST`",
                guid2lid.display()
            )));
        };
        let (first, last) = (lid(first, line)?, lid(last, line)?);
        for lid in first..=last {
            by_lid.insert(lid, (guid, lid - first));
        }
    }
    Ok(by_lid)
}

fn lid(value: u64, line: &str) -> Result<u16> {
    u16::try_from(value).map_err(|_| Error::new(format!("`{line}`: LID out of range")))
}

/// The tables `sim` holds, keyed by destination through `guid2lid`. A LID no port holds is an
/// error: an SM that routes to it routes to nothing.
pub fn read_tables(
    tools: &SimTools,
    sim: &Ibsim,
    fabric: &Fabric,
    guid2lid: &Path,
) -> Result<Tables> {
    let owners = destinations(guid2lid)?;
    let lfts = read_lfts(tools, sim, &fabric.topology, &fabric.query_node)?;
    let mut tables = Tables::new();
    for (switch, lft) in lfts {
        let mut table = BTreeMap::new();
        for (lid, port) in lft {
            let owner = owners.get(&lid).ok_or_else(|| {
                Error::new(format!("{switch} routes LID {lid}, which no port holds"))
            })?;
            table.insert(*owner, port);
        }
        tables.insert(switch, table);
    }
    Ok(tables)
}

/// `routes`, computed in-process on `topology`, keyed as [`read_tables`] keys what ibroute reads:
/// by switch name and destination (port GUID, LID offset).
pub fn tables_of(topology: &Topology, routes: &Routes) -> Tables {
    let mut tables = Tables::new();
    for (switch, lft) in routes.iter() {
        let mut table = BTreeMap::new();
        for (lid, &port) in lft.iter().enumerate().filter(|(_, p)| **p != NO_ROUTE) {
            let lid = u16::try_from(lid).expect("an LFT has at most 49,152 unicast entries");
            let owner = topology
                .lid_owner(lid)
                .and_then(|owner| topology.port(owner))
                .unwrap_or_else(|| panic!("LID {lid} is routed but no port holds it"));
            table.insert((owner.guid, lid - owner.lid), port);
        }
        let name = topology.node(switch).map(|n| n.name.clone());
        tables.insert(name.expect("a routed switch is in the topology"), table);
    }
    tables
}

/// `fabric`'s net file with LIDs as an SM with `lmc` gives them: 2^lmc to each CA port, one to
/// each switch's port 0 (the values differ from OpenSM's; the tables are keyed by GUID).
pub fn addressed(fabric: &Fabric, lmc: u8) -> Topology {
    let mut topology = parse_net_file(&fabric.netfile)
        .unwrap_or_else(|e| panic!("{}: {e}", fabric.netfile.display()))
        .topology;
    assign_lids(&mut topology, lmc).expect("the routing trees have room for their LIDs");
    let switches: Vec<PortRef> = topology
        .switches()
        .map(|(id, _)| PortRef::new(id, 0))
        .collect();
    for port in switches {
        if let Some(port) = topology.port_mut(port) {
            port.lmc = 0;
        }
    }
    topology
}

/// The tables `ibqos sm --once` leaves on a fresh ibsim of `fabric` with `options` as
/// opensm.conf, and its log.
pub fn ibqos_tables(fabric: &Fabric, options: &str, dir: &TestDir) -> Result<(Tables, String)> {
    let tools = SimTools::require();
    let ibqos = crate::planner::ibqos_binary()?;
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("ibqos-ibsim"))?;
    let conf = write_opensm_conf(&dir.subdir("ibqos"), options)?;
    let cache = dir.subdir("ibqos-cache");
    let (run, _) = SmInvocation::new(SmFabric::Native, &fabric.sm_node, &cache)
        .opensm_conf(&conf)
        .run_up(&ibqos, &sim)?;
    let tables = read_tables(&tools, &sim, fabric, &cache.join("guid2lid"))?;
    Ok((tables, run.stderr))
}

/// The tables `opensm -o` leaves on a fresh ibsim of `fabric` with `options`, and its log.
pub fn opensm_tables(fabric: &Fabric, options: &str, dir: &TestDir) -> Result<(Tables, String)> {
    let tools = SimTools::require();
    let sim = Ibsim::start(&tools, &fabric.netfile, &dir.subdir("opensm-ibsim"))?;
    let run_dir = dir.subdir("opensm");
    let run = run_opensm_once(&tools, &sim, &fabric.sm_node, options, &run_dir)?;
    let tables = read_tables(&tools, &sim, fabric, &run_dir.join("cache/guid2lid"))?;
    Ok((tables, run.log))
}

/// Requires `ours` to equal `oracle` entry for entry: the same switches, and on each the same
/// port toward every destination, including which destinations have no entry at all.
pub fn compare_tables(f: &mut Failures, ours: &Tables, oracle: &Tables) {
    f.check(ours.keys().eq(oracle.keys()), || {
        "the two fabrics have different switches".to_string()
    });
    let mut differing = 0;
    let mut shown = String::new();
    for (switch, theirs) in oracle {
        let Some(mine) = ours.get(switch) else {
            continue;
        };
        let keys: std::collections::BTreeSet<&Destination> =
            mine.keys().chain(theirs.keys()).collect();
        for key in keys {
            let (a, b) = (mine.get(key), theirs.get(key));
            if a != b {
                differing += 1;
                if differing <= 20 {
                    let _ = writeln!(
                        shown,
                        "  {switch} -> {:#018x}+{}: ibqos {a:?}, OpenSM {b:?}",
                        key.0, key.1
                    );
                }
            }
        }
    }
    let total: usize = oracle.values().map(BTreeMap::len).sum();
    f.check(differing == 0, || {
        format!("{differing} entries differ (OpenSM has {total}); the first:\n{shown}")
    });
}

/// `ibqos sm` and OpenSM, each on a fresh ibsim of `fabric` with `options`, leave the same
/// forwarding tables. Returns OpenSM's log, for tests that check which engine it used.
pub fn lfts_match_opensm(fabric: &Fabric, options: &str, dir: &TestDir) -> String {
    lfts_match_opensm_logs(fabric, options, dir).opensm
}

/// What the two SMs logged while configuring the fabric.
#[derive(Debug)]
pub struct Logs {
    pub ibqos: String,
    pub opensm: String,
}

impl Logs {
    /// Requires both SMs to have routed with `engine`: OpenSM's "`<engine>` tables configured on
    /// all switches", and no engine passed over in ibqos's log.
    pub fn assert_routed_by(&self, engine: &str) {
        let opensm = format!("{engine} tables configured on all switches");
        assert!(
            self.opensm.contains(&opensm),
            "OpenSM did not route with {engine}:\n{}",
            self.opensm
        );
        assert!(
            !self.ibqos.contains("fell back"),
            "ibqos fell back:\n{}",
            self.ibqos
        );
    }
}

/// [`lfts_match_opensm`], returning both SMs' logs, for tests that check why an engine did not
/// route.
pub fn lfts_match_opensm_logs(fabric: &Fabric, options: &str, dir: &TestDir) -> Logs {
    let what = format!("{} with {options:?}", fabric.name);
    let (ours, ibqos) =
        ibqos_tables(fabric, options, dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let (oracle, opensm) =
        opensm_tables(fabric, options, dir).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut f = Failures::new(what);
    compare_tables(&mut f, &ours, &oracle);
    f.assert_none();
    Logs { ibqos, opensm }
}

/// The port GUID and LMC of every LID range a guid2lid file gives.
fn lid_ranges(owners: &BTreeMap<u16, Destination>) -> BTreeMap<u64, (u16, u8)> {
    let mut ranges: BTreeMap<u64, (u16, u16)> = BTreeMap::new();
    for (&lid, &(guid, offset)) in owners {
        let range = ranges.entry(guid).or_insert((lid - offset, 0));
        range.1 = range.1.max(offset);
    }
    ranges
        .into_iter()
        .map(|(guid, (base, last))| (guid, (base, (last + 1).trailing_zeros() as u8)))
        .collect()
}

/// The fabric of `fabric`'s net file with the LIDs of `owners` (an SM's guid2lid file, read by
/// [`destinations`]): OpenSM's, to route in-process as OpenSM routed.
pub fn with_opensm_lids(fabric: &Fabric, owners: &BTreeMap<u16, Destination>) -> Topology {
    let mut topo = parse_net_file(&fabric.netfile)
        .unwrap_or_else(|e| panic!("{}: {e}", fabric.netfile.display()))
        .topology;
    let ranges = lid_ranges(owners);
    let ends: Vec<PortRef> = topo.endports().collect();
    for end in ends {
        let port = topo.port_mut(end).unwrap();
        if let Some(&(lid, lmc)) = ranges.get(&port.guid) {
            port.lid = lid;
            port.lmc = lmc;
        }
    }
    topo
}
