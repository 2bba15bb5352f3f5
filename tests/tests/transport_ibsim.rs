//! The native ibsim transport, end to end: `ibqos query --fabric ibsim:SOCK@NODE` against a
//! fresh ibsim on fabric/data/two-switch.net, and the library API for what the command does
//! not show (the SM role, a request ibsim never answers).

use std::time::{Duration, Instant};

use ibqos_exchange::Transmit;
use ibqos_mad::{AttributeId, CapabilityMask, DrPath, Routing, SmpRepr};
use ibqos_tests::process::{Finished, run_bounded};
use ibqos_tests::query::{self, field};
use ibqos_tests::scenario::fresh_ibsim;
use ibqos_tests::{Ibsim, SimTools};
use ibqos_transport::{Incoming, OpenOptions, Outgoing, Role, Transport, ibsim::IbsimTransport};

/// `ibqos query --fabric ibsim:SOCK@H1 ARGS`.
fn query(sim: &Ibsim, args: &[&str]) -> Finished {
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    query::native(&ibqos, sim, "H1", args).unwrap()
}

#[test]
fn nodeinfo_at_hop_0_is_the_attach_node() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    let out = query::stdout(query(&sim, &["nodeinfo", "--dr", "0"]));
    assert_eq!(field(&out, "NodeType"), "Ca");
    // hcaguids=0x0002c90000100000: H1 is the first CA, its port 1 GUID is NodeGUID + 1.
    assert_eq!(field(&out, "NodeGUID"), "0x0002c90000100000");
    assert_eq!(field(&out, "PortGUID"), "0x0002c90000100001");
    assert_eq!(field(&out, "LocalPortNum"), "1");
}

#[test]
fn nodeinfo_one_hop_out_is_switch_s1() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    let out = query::stdout(query(&sim, &["nodeinfo", "--dr", "0,1"]));
    assert_eq!(field(&out, "NodeType"), "Switch");
    assert_eq!(field(&out, "NumPorts"), "8");
    assert_eq!(field(&out, "NodeGUID"), "0x0002c90000001000");
    // The SMP entered S1 through its port 1, the one H1 is cabled to.
    assert_eq!(field(&out, "LocalPortNum"), "1");
    let desc = query::stdout(query(&sim, &["nodedesc", "--dr", "0,1"]));
    assert_eq!(field(&desc, "NodeDescription"), "sw-one");
}

#[test]
fn portinfo_of_a_linked_switch_port_is_link_up() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    let out = query::stdout(query(&sim, &["portinfo", "--dr", "0,1", "--port", "3"]));
    assert_eq!(field(&out, "PortPhysicalState"), "LinkUp");
    // No SM has run: linked ports wait in Init.
    assert_eq!(field(&out, "PortState"), "Init");
    // LocalPortNum is the port the SMP came in by (S1 port 1), not the port read.
    assert_eq!(field(&out, "LocalPortNum"), "1");
    let json = query::stdout(query(
        &sim,
        &["portinfo", "--dr", "0,1", "--port", "3", "--json"],
    ));
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["PortPhysicalState"], "LinkUp");
    assert_eq!(value["VLCap"], 4);
}

#[test]
fn a_path_into_an_unlinked_port_is_dropped_not_hung() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    let started = Instant::now();
    // S1 port 6 has no cable.
    let out = query(&sim, &["nodeinfo", "--dr", "0,1,6", "--timeout-ms", "5000"]);
    assert!(!out.status.success());
    let stderr = &out.stderr;
    assert!(stderr.contains("dropped by the fabric"), "{stderr}");
    // ibsim hands the request back at once: three tries take far less than one timeout.
    assert!(started.elapsed() < Duration::from_secs(5), "{stderr}");
}

#[test]
fn a_missing_node_or_ibsim_is_a_clear_error() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    let ibqos = ibqos_tests::planner::ibqos_binary().unwrap();
    let out = query::native(&ibqos, &sim, "NOPE", &["nodeinfo"]).unwrap();
    assert!(!out.status.success());
    let stderr = &out.stderr;
    assert!(stderr.contains("no node `NOPE`"), "{stderr}");

    let fabric = format!("ibsim:{}-gone@H1", sim.sockname());
    let mut gone = std::process::Command::new(&ibqos);
    let out = run_bounded(
        gone.args(["query", "--fabric", &fabric, "nodeinfo"]),
        Duration::from_secs(30),
    )
    .unwrap();
    let stderr = &out.stderr;
    assert!(stderr.contains("is ibsim running"), "{stderr}");
    assert!(stderr.contains("Connection refused"), "{stderr}");
}

/// A DR NodeInfo Get from `t`'s port along `hops`.
fn node_info_request(tid: u64, hops: &[u8]) -> Outgoing {
    let request = SmpRepr::get(
        AttributeId::PortInfo,
        0,
        tid,
        Routing::Directed(DrPath::request(hops).unwrap()),
    );
    Outgoing::from(&Transmit {
        mad: request,
        dlid: None,
    })
}

/// The CapabilityMask of H2's port, read by a client attached at H2.
fn h2_capability_mask(sim: &Ibsim) -> CapabilityMask {
    let mut client = IbsimTransport::connect(sim.sockname(), "H2", Role::Client).unwrap();
    client.send(&node_info_request(0x1234_5678, &[])).unwrap();
    let Some(Incoming::Mad { mad, from }) = client.recv(Duration::from_secs(5)).unwrap() else {
        panic!("no PortInfo answer")
    };
    assert_eq!(from.lid, 0xffff);
    let (smp, attribute) = ibqos_mad::parse_any(&mad).unwrap();
    assert_eq!(smp.transaction_id as u32, 0x1234_5678);
    let ibqos_mad::Attribute::PortInfo(p) = attribute else {
        panic!("{attribute:?}")
    };
    p.capability_mask
}

#[test]
fn the_sm_role_sets_is_sm_until_dropped() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    assert!(!h2_capability_mask(&sim).contains(CapabilityMask::IS_SM));
    let sm = IbsimTransport::connect(sim.sockname(), "H2", Role::Sm).unwrap();
    assert_eq!(sm.attached_node(), "H2");
    let local = sm.local_port();
    assert_eq!(local.port_num, 1);
    assert_eq!(local.node_guid, 0x0002_c900_0010_0002);
    assert_eq!(local.port_guid, 0x0002_c900_0010_0003);
    assert!(h2_capability_mask(&sim).contains(CapabilityMask::IS_SM));
    // ibsim allows one SM per node.
    let second = IbsimTransport::connect(sim.sockname(), "H2", Role::Sm).unwrap_err();
    assert!(second.to_string().contains("CONNECT refused"), "{second}");
    drop(sm);
    assert!(!h2_capability_mask(&sim).contains(CapabilityMask::IS_SM));
    let _ = ibqos_transport::open(
        &format!("ibsim:{}@H2", sim.sockname()).parse().unwrap(),
        &OpenOptions {
            role: Role::Sm,
            response_timeout: Duration::from_secs(1),
        },
    )
    .expect("the SM slot is free again after drop");
}

#[test]
fn a_request_ibsim_never_answers_times_out() {
    let (sim, _dir) =
        fresh_ibsim(&SimTools::require(), "two-switch.net", "transport-ibsim").unwrap();
    let mut t = IbsimTransport::connect(sim.sockname(), "H1", Role::Client).unwrap();
    let mut out = node_info_request(0x4242, &[1]);
    // DrSLID other than 0xFFFF: ibsim logs "dr[ds]lids are used" and sends nothing back.
    out.mad[32..34].copy_from_slice(&[0x00, 0x01]);
    t.send(&out).unwrap();
    let started = Instant::now();
    assert_eq!(t.recv(Duration::from_millis(200)).unwrap(), None);
    assert!(started.elapsed() >= Duration::from_millis(200));
    // A zero timeout polls.
    assert_eq!(t.recv(Duration::ZERO).unwrap(), None);
    assert_eq!(t.malformed_count(), 0);
}
