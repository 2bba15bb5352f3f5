//! The subnet manager on an emulated fabric, driven as `ibqos sm` drives it, for tests that
//! watch its events one by one, and scratch files. Each test crate uses a part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ibqos_emu::{Emulator, attach_port, load_topology};
use ibqos_exchange::{Address, OutgoingMad, Peer};
use ibqos_mad::sa::{SA_CLASS_VERSION, SaAttributeId, SaMad};
use ibqos_mad::{AttributeId, Guid, Method, MgmtClass, Status};
use ibqos_opensm::Settings;
use ibqos_sm::manager::{Event, Manager, Outcome, Run, SweepReason};
use ibqos_sm::summary::SweepSummary;
use ibqos_transport::Transport;
use ibqos_transport::driver::drive;
use ibqos_transport::emulated::EmulatedTransport;
use tempfile::TempDir;

pub mod daemon;
pub mod dateline;
pub mod sysfs;

/// The settings an opensm.conf (or ibqos.toml) in the repository gives.
pub fn settings(path: &str) -> Settings {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path);
    ibqos_opensm::load(&path).unwrap().settings
}

/// A manager with an empty LID cache and the emulated fabric it runs on.
#[derive(Debug)]
pub struct EmulatedSm {
    pub transport: EmulatedTransport,
    pub manager: Manager,
}

impl EmulatedSm {
    pub fn new(transport: EmulatedTransport, run: Run, settings: &Settings) -> Self {
        let port_guid = transport.local_port().port_guid;
        let manager = Manager::new(run, settings, BTreeMap::new(), Guid(port_guid));
        EmulatedSm { transport, manager }
    }

    /// The manager's next event.
    pub fn next_event(&mut self) -> Event {
        drive(
            &mut self.transport,
            &mut self.manager,
            Manager::poll_event,
            &|| false,
        )
        .unwrap()
        .expect("nothing interrupts")
    }

    /// Drives the manager until `pick` takes an event; panics if the run ends first.
    pub fn until<T>(&mut self, pick: impl Fn(&Event) -> Option<T>) -> T {
        loop {
            let event = self.next_event();
            if let Some(picked) = pick(&event) {
                return picked;
            }
            assert!(!matches!(event, Event::Finished(_)), "ended: {event:?}");
        }
    }

    /// The summary of the next sweep that ends.
    pub fn sweep_done(&mut self) -> SweepSummary {
        self.until(|event| match event {
            Event::SweepDone(summary) => Some(summary.as_ref().clone()),
            _ => None,
        })
    }

    /// The next update of the multicast forwarding tables after joins or leaves: the blocks it
    /// left in place and the switches that failed.
    pub fn multicast_updated(&mut self) -> (usize, usize) {
        self.until(|event| match event {
            Event::MulticastUpdated {
                blocks,
                failed_switches,
            } => Some((*blocks, *failed_switches)),
            _ => None,
        })
    }

    /// Why the next sweep starts, and when (emulated ns).
    pub fn sweep_started(&mut self) -> (SweepReason, u64) {
        let reason = self.until(|event| match event {
            Event::SweepStarted { reason, .. } => Some(*reason),
            _ => None,
        });
        (reason, self.transport.now_ns())
    }

    /// Drives the manager to its end: the summaries it reported and how it ended.
    pub fn finish(&mut self) -> (Vec<SweepSummary>, Outcome) {
        let mut summaries = Vec::new();
        loop {
            match self.next_event() {
                Event::SweepDone(summary) => summaries.push(*summary),
                Event::Finished(outcome) => return (summaries, outcome),
                Event::SweepStarted { .. }
                | Event::StateChanged(_)
                | Event::SaveLids(_)
                | Event::SaveMkeys { .. }
                | Event::MulticastUpdated { .. } => {}
            }
        }
    }
}

/// The built-in two-switch fabric in virtual time, the client where `ibqos sm` attaches it.
pub fn two_switch() -> EmulatedTransport {
    let topology = load_topology("two-switch").unwrap().topology;
    let attach = attach_port(&topology, None).unwrap();
    EmulatedTransport::virtual_time(Emulator::new(topology).unwrap(), attach)
}

/// Writes `contents` to the file `name` in the test's scratch directory and returns its path.
pub fn scratch_file(dir: &TempDir, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, contents).expect("write scratch file");
    path
}

/// The port GUID of `node`'s `port` on the built-in two-switch fabric.
pub fn two_switch_port_guid(node: &str, port: u8) -> u64 {
    let topology = load_topology("two-switch").unwrap().topology;
    let id = topology.node_by_name(node).unwrap();
    topology
        .port(ibqos_fabric::PortRef::new(id, port))
        .unwrap()
        .guid
}

/// The settings of an opensm.conf whose partitions.conf, written to `dir`, partitions the
/// built-in two-switch fabric: the Default partition limited for every port but the SM's (H1),
/// H2 and H3 full members of `hosts` (0x0101), H4 a full member of `storage` (0x0002) at index
/// 0.
pub fn partitioned(dir: &TempDir) -> Settings {
    let guid = |node, port| format!("{:#018x}", two_switch_port_guid(node, port));
    let partitions = format!(
        "Default=0x7fff : ALL, SELF=full ;\n\
         hosts=0x0101 : {}=full, {}=full ;\n\
         storage=0x0002,indx0 : {}=full ;\n",
        guid("H2", 1),
        guid("H3", 1),
        guid("H4", 1)
    );
    let file = scratch_file(dir, "partitions.conf", partitions);
    let conf = scratch_file(
        dir,
        "opensm.conf",
        format!("partition_config_file {}\n", file.display()),
    );
    ibqos_opensm::load(&conf).unwrap().settings
}

/// A small three-level fat tree whose every port has a different mix of QoS capabilities:
/// VLCap 1, 2, 4, 8 and 15, VLArb caps 0 to 64 (one block or two), and, with
/// `vary_sl_mapping`, SL mapping on and off.
pub fn mixed_capability_fat_tree(vary_sl_mapping: bool) -> ibqos_fabric::Topology {
    use ibqos_fabric::{LinkCaps, PortRef, generate};
    use ibqos_qos::VlCount;
    let mut topology = generate::fat_tree(3, 2, 3, 8).unwrap();
    let vls = VlCount::ALL;
    let arb = [0u8, 1, 8, 16, 32, 33, 64];
    let ports: Vec<PortRef> = topology
        .nodes()
        .flat_map(|(id, n)| n.existing_ports().map(move |(p, _)| PortRef::new(id, p)))
        .collect();
    for (i, port) in ports.iter().enumerate() {
        let link = &mut topology.port_mut(*port).unwrap().link;
        *link = LinkCaps {
            vl_cap: vls[i % vls.len()],
            vlarb_low_cap: arb[i % arb.len()],
            vlarb_high_cap: arb[(i + 3) % arb.len()],
            sl_mapping_supported: !vary_sl_mapping || i % 4 != 1,
            ..*link
        };
    }
    topology
}

/// An SA request of `attribute` with `method`, `mask` and a template written by `template`.
pub fn request(
    method: Method,
    attribute: SaAttributeId,
    mask: u64,
    sm_key: u64,
    template: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    let mut mad = vec![0u8; 256];
    let mut view = SaMad::new_unchecked(&mut mad[..]);
    let mut header = view.header_mut();
    header.set_base_version(1);
    header.set_mgmt_class(MgmtClass::SubnAdm);
    header.set_class_version(SA_CLASS_VERSION);
    header.set_method(method);
    header.set_transaction_id(0x0001_0000_0000_4242);
    header.set_attribute_id(AttributeId::from(u16::from(attribute)));
    view.set_sm_key(sm_key);
    view.set_component_mask(mask);
    template(view.data_mut());
    mad
}

/// What the manager sends back to `from` for `mad`, if anything. The sweep's own SMPs, polled
/// on the way, go on to the fabric; nothing else may be sent.
pub fn ask(sm: &mut EmulatedSm, mad: &[u8], from: Peer) -> Option<OutgoingMad> {
    let (answer, reports) = ask_with_reports(sm, mad, from);
    assert!(reports.is_empty(), "unexpected Reports: {reports:?}");
    answer
}

/// What the manager sends back to `from` for `mad`, and what it sends other SA clients on the
/// way (Reports to subscribers). The sweep's own SMPs go on to the fabric.
pub fn ask_with_reports(
    sm: &mut EmulatedSm,
    mad: &[u8],
    from: Peer,
) -> (Option<OutgoingMad>, Vec<OutgoingMad>) {
    let now = sm.transport.now();
    sm.manager.on_mad(now, mad, from);
    let mut answer = None;
    let mut reports = Vec::new();
    while let Some(out) = sm.manager.poll_transmit(now) {
        match out.address {
            Address::Peer(to) if to == from => {
                assert!(answer.is_none(), "two answers to one request");
                answer = Some(out);
            }
            Address::Peer(_) => reports.push(out),
            _ => sm.transport.send(&out).unwrap(),
        }
    }
    (answer, reports)
}

/// A host's LID after the SM's first sweep, and its peer address on QP1.
pub fn host(sm: &EmulatedSm, name: &str) -> Peer {
    let sweep = sm.manager.last_sweep().expect("a sweep ended");
    let lid = sweep
        .subnet()
        .nodes
        .values()
        .find(|n| n.description.starts_with(name_prefix(name)))
        .and_then(|n| n.ports.values().next())
        .map(|p| p.lid)
        .expect("host found");
    Peer {
        lid,
        qp: 1,
        pkey_index: 0,
    }
}

fn name_prefix(name: &str) -> &str {
    match name {
        "H1" => "host-one",
        "H2" => "host-two",
        "H3" => "host-three",
        "H4" => "host-four",
        "H5" => "host-five",
        other => other,
    }
}

/// The status of an SA answer.
pub fn status(answer: &OutgoingMad) -> Status {
    SaMad::new_checked(&answer.mad[..])
        .unwrap()
        .header()
        .status()
}

/// Runs this build's `ibqos` with `args`.
pub fn ibqos(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(args)
        .output()
        .expect("ibqos runs")
}

/// A ring of `switches` switches with `hosts` hosts on each, written by `ibqos fabric gen` as
/// `ring.net` in `dir`.
pub fn ring_net(dir: &TempDir, switches: usize, hosts: usize) -> PathBuf {
    let (switches, hosts) = (switches.to_string(), hosts.to_string());
    generated_net(
        dir,
        "ring.net",
        &["ring", "--switches", &switches, "--hosts", &hosts],
    )
}

/// The net file `ibqos fabric gen` writes from `shape` (its subcommand and flags) into `dir`.
pub fn generated_net(dir: &TempDir, name: &str, shape: &[&str]) -> PathBuf {
    let net = dir.path().join(name);
    let mut args = vec!["fabric", "gen", "-o", net.to_str().unwrap()];
    args.extend(shape);
    let output = ibqos(&args);
    assert!(output.status.success(), "{output:?}");
    net
}

/// A 4x4 torus with `hosts` hosts on each switch, written by `ibqos fabric gen` as `torus.net`
/// in `dir`, and its torus-2QoS.conf as `torus-2QoS.conf` beside it.
pub fn torus_4x4_net(dir: &TempDir, hosts: usize) -> (PathBuf, PathBuf) {
    let hosts = hosts.to_string();
    let net = generated_net(
        dir,
        "torus.net",
        &["torus", "--x", "4", "--y", "4", "--hosts", &hosts],
    );
    let topo = ibqos_fabric::netfile::parse_net_file(&net)
        .unwrap()
        .topology;
    let conf = scratch_file(dir, "torus-2QoS.conf", torus_4x4_conf(&topo));
    (net, conf)
}

/// The 4x4 torus's torus-2QoS.conf, seeded at S0_0: both directions of both rings, which a
/// radix of 4 needs.
fn torus_4x4_conf(topo: &ibqos_fabric::Topology) -> String {
    let guid = |name: &str| topo.node(topo.node_by_name(name).unwrap()).unwrap().guid;
    let mut conf = String::from("torus 4 4 1\n");
    for (dim, plus, minus) in [("x", "S1_0", "S3_0"), ("y", "S0_1", "S0_3")] {
        let seed = guid("S0_0");
        conf += &format!("{dim}p_link {seed:#x} {:#x}\n", guid(plus));
        conf += &format!("{dim}m_link {seed:#x} {:#x}\n", guid(minus));
    }
    conf
}

/// The JSON report of an `ibqos ... --json` run that must succeed.
pub fn json_report(output: std::process::Output) -> serde_json::Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("one JSON object")
}

/// The simulator tests' fabric: one switch, S1, with four hosts H1-H4 on its ports 1-4 (node
/// descriptions host-one to host-four).
pub const STAR_NET: &str = r#"
switchguid=0x0002c90000001000
Switch	8 "S1"	# "leaf"
[1]	"H1"[1]
[2]	"H2"[1]
[3]	"H3"[1]
[4]	"H4"[1]

hcaguids=0x0002c90000100000
Hca	1 "H1"	# "host-one"
[1]	"S1"[1]

Hca	1 "H2"	# "host-two"
[1]	"S1"[2]

Hca	1 "H3"	# "host-three"
[1]	"S1"[3]

Hca	1 "H4"	# "host-four"
[1]	"S1"[4]
"#;

/// The flow named `name` of a simulator report.
pub fn flow_of<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flow {name}"))
}

/// A report's number.
pub fn num(value: &serde_json::Value) -> f64 {
    value.as_f64().unwrap()
}

/// `got` is `expected` within `tolerance`, or the test fails naming `what`.
pub fn assert_near(got: f64, expected: f64, tolerance: f64, what: &str) {
    assert!(
        (got - expected).abs() <= tolerance,
        "{what}: got {got}, expected {expected} +- {tolerance}"
    );
}

/// Waits up to `limit` for the file at `path` to hold `wanted`; its text.
pub fn wait_for_text(path: &Path, wanted: &str, limit: std::time::Duration) -> String {
    let end = std::time::Instant::now() + limit;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(wanted) {
            return text;
        }
        assert!(
            std::time::Instant::now() < end,
            "no {wanted:?} in {}:\n{text}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// One diagnostic of `ibqos check --json`: code, file name, line, column and message.
pub type Found = (String, String, u64, u64, String);

/// `ibqos check --json FILE`: whether it passed, and its diagnostics.
pub fn check(file: &std::path::Path) -> (bool, Vec<Found>) {
    let output = ibqos(&["check", "--json", file.to_str().unwrap()]);
    let found = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("JSON"))
        .map(|d| {
            let file = d["file"].as_str().unwrap_or_default();
            let name = file.rsplit('/').next().unwrap_or_default().to_owned();
            (
                d["code"].as_str().unwrap().to_owned(),
                name,
                d["line"].as_u64().unwrap_or(0),
                d["col"].as_u64().unwrap_or(0),
                d["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (output.status.success(), found)
}

/// The code, file, line and column of each diagnostic.
pub fn places(found: &[Found]) -> Vec<(&str, &str, u64, u64)> {
    found
        .iter()
        .map(|(code, file, line, col, _)| (code.as_str(), file.as_str(), *line, *col))
        .collect()
}
