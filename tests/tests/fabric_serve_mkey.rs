//! M_Key protection on the served fabric (`ibqos fabric serve`), with the real tools as the
//! oracle: OpenSM (under libumad2sim.so) gives every port its M_Key at protection level 2, then
//! smpquery, also under the shim and attached at the same port, reads PortInfo with and without
//! the key.
//!
//! At level 2 an SMA drops every SMP without the key (IBA 14.2.4.1): smpquery gets no answer
//! (the served fabric, like ibsim, hands the drop back at once as a timeout) and the port's
//! M_KeyViolations counts each SMP. With the key, PortInfo reads back what OpenSM set. The
//! lease period is 0, so the protection never lapses.
//!
//! A missing tool (libumad2sim.so, opensm, smpquery) fails the test.

use ibqos_tests::opensm::run_opensm_once;
use ibqos_tests::planner::ibqos_binary;
use ibqos_tests::scenario::testdata;
use ibqos_tests::smpquery::{PortInfo, SmpQuery, Target};
use ibqos_tests::{Ibsim, SimTools, TestDir, Topology};

/// The node every client attaches at.
const ATTACH: &str = "H1";

const M_KEY: u64 = 0x0123_4567_89ab_cdef;

/// How many smpquery runs without the key each port gets.
const FAILED_QUERIES: u32 = 3;

fn field<'a>(info: &'a PortInfo, name: &str) -> &'a str {
    info.fields
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", info.fields))
}

fn violations(info: &PortInfo) -> u32 {
    field(info, "MkeyViolations").parse().unwrap()
}

#[test]
fn opensm_protects_the_served_fabric_with_its_m_key() {
    let tools = SimTools::require();
    let ibqos = ibqos_binary().unwrap();
    let dir = TestDir::new("fabric-serve-mkey");
    let netfile = testdata("two-switch.net");
    let topology = Topology::load(&netfile).unwrap();
    let served = Ibsim::serve(&tools, &ibqos, &netfile, ATTACH, dir.path()).unwrap();
    let options = format!("m_key {M_KEY:#x}\nm_key_protection_level 2\nm_key_lease_period 0\n");
    let run = run_opensm_once(&tools, &served, ATTACH, &options, &dir.subdir("opensm")).unwrap();
    assert_eq!(run.error_lines(), Vec::<&str>::new(), "{}", run.log);

    let without_key = SmpQuery::new(&tools, &served, ATTACH);
    let with_key = SmpQuery::new(&tools, &served, ATTACH).with_m_key(M_KEY);
    // The SM's own port, a switch next to it, one behind that, and a CA behind both: port 0 of
    // a switch holds its key, a CA's port its own.
    for node in [ATTACH, "S1", "S2", "H3"] {
        let target = Target::Dr(topology.dr_path(ATTACH, node).unwrap());
        let held = with_key.portinfo(&target, None).unwrap();
        assert_eq!(field(&held, "Mkey"), format!("{M_KEY:#018x}"), "{node}");
        assert_eq!(field(&held, "ProtectBits"), "2", "{node}");
        assert_eq!(field(&held, "MkeyLeasePeriod"), "0", "{node}");
        assert_eq!(held.link_state, "Active", "{node}");
        // OpenSM sent every SMP with the key.
        assert_eq!(violations(&held), 0, "{node}");

        // libibmad sends a query's SMP again each time it times out (3 tries in all with
        // infiniband-diags 44, rdma-core's MAD_DEF_RETRIES), so one failed query is several
        // violations. However many, every failed query adds the same, and reads with the key
        // add none.
        let mut per_query = None;
        for attempt in 1..=FAILED_QUERIES {
            let err = without_key.portinfo(&target, None).unwrap_err().to_string();
            assert!(err.contains("port info query failed"), "{node}: {err}");
            let counted = violations(&with_key.portinfo(&target, None).unwrap());
            let per_query = *per_query.get_or_insert(counted);
            assert!(per_query > 0, "{node}: no violation counted");
            assert_eq!(counted, attempt * per_query, "{node}, query {attempt}");
        }
    }
}
