//! M_Key protection on the emulated fabric, with protection level 2 and a lease. SMPs from another
//! port without the key change nothing and count violations in the fabric's own counters. Meanwhile
//! the SM keeps working: after a restart that reads its guid2mkey cache, and after losing that
//! cache (it takes the ports back as their leases run out). With per-port keys, a key taken from
//! one port opens no other. And no key ever reaches the SM's output.

use std::collections::BTreeMap;
use std::process::Command;

use ibqos_fabric::PortRef;
use ibqos_mad::{
    Attribute, AttributeId, DrPath, Guid, Method, PortInfoRepr, Routing, Smp, SmpRepr,
};
use ibqos_opensm::{Format, Settings};
use ibqos_sm::manager::{Event, Manager, Run};
use ibqos_sm::mkey::{read_guid2mkey, read_neighbors};
use ibqos_sm::summary::SweepSummary;

mod common;
use common::{EmulatedSm, two_switch};

const KEY: u64 = 0x5ec2_e7ab_cdef_0123;
const NEW_KEY: u64 = 0x0dd_ba11_cafe_f00d;
const LEASE_S: u64 = 60;
const SECRET: &str = "the per-port secret of this fabric";

/// ibqos.toml with protection level 2, a 60 s lease, sweeps every 10 s, `key`, and `sm` added
/// to its [sm] section.
fn protected(key: u64, sm: &str) -> Settings {
    let text = format!(
        "[sm]\nsweep_interval = 10\n{sm}\n[opensm]\nm_key = \"{key:#x}\"\n\
         m_key_protection_level = 2\nm_key_lease_period = {LEASE_S}\n"
    );
    let loaded = ibqos_opensm::load_bytes("ibqos.toml", text.as_bytes(), Format::NativeToml);
    loaded.unwrap().settings
}

/// The ports whose key governs their node: every linked CA port, and each switch's port 0.
fn keyed_ports(sm: &EmulatedSm) -> Vec<PortRef> {
    let topology = sm.transport.emulator().topology();
    topology
        .nodes()
        .flat_map(|(id, node)| {
            let numbers: Vec<u8> = if node.is_switch() {
                vec![0]
            } else {
                node.existing_ports()
                    .map(|(n, _)| n)
                    .filter(|&n| topology.peer(PortRef::new(id, n)).is_some())
                    .collect()
            };
            numbers.into_iter().map(move |n| PortRef::new(id, n))
        })
        .collect()
}

fn port_info(sm: &EmulatedSm, port: PortRef) -> PortInfoRepr {
    *sm.transport.emulator().port_info(port).unwrap()
}

fn violations(sm: &EmulatedSm) -> u64 {
    keyed_ports(sm)
        .into_iter()
        .map(|p| u64::from(port_info(sm, p).m_key_violations))
        .sum()
}

fn node_port(sm: &EmulatedSm, name: &str, port: u8) -> PortRef {
    PortRef::new(
        sm.transport
            .emulator()
            .topology()
            .node_by_name(name)
            .unwrap(),
        port,
    )
}

/// The guid2mkey and neighbors files the SM handed out.
type Caches = (String, String);

/// Drives the SM to the end of its next sweep: the summary, and the cache files it handed out
/// on the way (if any).
fn sweep(sm: &mut EmulatedSm) -> (SweepSummary, Option<Caches>) {
    let mut caches = None;
    loop {
        match sm.next_event() {
            Event::SweepDone(summary) => return (*summary, caches),
            Event::SaveMkeys {
                guid2mkey,
                neighbors,
            } => caches = Some((guid2mkey, neighbors)),
            Event::Finished(outcome) => panic!("ended: {outcome:?}"),
            _ => {}
        }
    }
}

/// An SMP from a host that is not the SM: `smp` sent from `origin` now, straight into the
/// fabric. The response, if any.
fn rogue(sm: &mut EmulatedSm, origin: PortRef, smp: SmpRepr) -> Option<SmpRepr> {
    let mut mad = vec![0; 256];
    smp.emit(&mut Smp::new_unchecked(&mut mad[..]));
    let at_ns = sm.transport.now_ns();
    let reply = sm.transport.emulator_mut().exchange(ibqos_emu::Request {
        origin,
        at_ns,
        dlid: None,
        mad: &mad,
    })?;
    Some(SmpRepr::parse_bytes(&reply.mad).unwrap())
}

fn dr(path: &[u8]) -> Routing {
    Routing::Directed(DrPath::request(path).unwrap())
}

fn get_port_info(path: &[u8], m_key: u64) -> SmpRepr {
    SmpRepr {
        m_key,
        ..SmpRepr::get(AttributeId::PortInfo, 0, 0x77, dr(path))
    }
}

/// A Set that would take the port at `path` out of the subnet: LID 0x99, key 0.
fn hijack(held: PortInfoRepr, path: &[u8], m_key: u64) -> SmpRepr {
    let info = PortInfoRepr {
        lid: 0x99,
        m_key: 0,
        m_key_protect_bits: 0,
        ..held
    };
    SmpRepr {
        m_key,
        ..SmpRepr::set(&Attribute::PortInfo(info), 0, 0x78, dr(path))
    }
}

/// The SM on the built-in two-switch fabric, run until a sweep brings the subnet up; the
/// cache files it handed out.
fn protected_subnet(settings: &Settings) -> (EmulatedSm, Caches) {
    let mut sm = EmulatedSm::new(two_switch(), Run::Daemon, settings);
    let (summary, caches) = sweep(&mut sm);
    assert!(summary.subnet_up, "{summary}");
    (sm, caches.expect("the keys it programmed"))
}

/// The SM restarted on the same port of the same fabric with `settings` and, if given, the
/// cache files of its earlier run.
fn restart(sm: &mut EmulatedSm, settings: &Settings, caches: Option<&Caches>) {
    let own = ibqos_transport::Transport::local_port(&sm.transport).port_guid;
    let manager = Manager::new(Run::Daemon, settings, BTreeMap::new(), Guid(own));
    sm.manager = match caches {
        Some((guid2mkey, neighbors)) => {
            manager.with_key_caches(read_guid2mkey(guid2mkey).0, read_neighbors(neighbors).0)
        }
        None => manager,
    };
}

#[test]
fn level_2_locks_out_everyone_else_and_the_sm_works_on() {
    let (mut sm, (guid2mkey, _)) = protected_subnet(&protected(KEY, ""));
    // Every port whose key governs its node holds the key, the protect bits and the lease,
    // and the cache says so.
    let keyed = keyed_ports(&sm);
    assert_eq!(keyed.len(), 8, "{keyed:?}");
    for &port in &keyed {
        let info = port_info(&sm, port);
        let fields = (info.m_key, info.m_key_protect_bits, info.m_key_lease_period);
        assert_eq!(fields, (KEY, 2, LEASE_S as u16), "{port:?}");
    }
    let (cached, problems) = read_guid2mkey(&guid2mkey);
    assert!(problems.is_empty());
    assert_eq!(cached.len(), keyed.len());
    assert!(cached.values().all(|&k| k == KEY), "{cached:x?}");
    assert_eq!(violations(&sm), 0, "the SM itself never failed a check");

    // H3 tries S2 (one hop) and itself, with a wrong key and with none: no answer, nothing
    // changed, one violation each in the fabric's counters.
    let h3 = node_port(&sm, "H3", 1);
    let s2 = node_port(&sm, "S2", 0);
    let before = (port_info(&sm, s2), port_info(&sm, h3));
    for (path, target) in [(&[1][..], s2), (&[][..], h3)] {
        for m_key in [0xbad, 0] {
            let held = port_info(&sm, target);
            assert_eq!(rogue(&mut sm, h3, get_port_info(path, m_key)), None);
            assert_eq!(rogue(&mut sm, h3, hijack(held, path, m_key)), None);
        }
    }
    let after = (port_info(&sm, s2), port_info(&sm, h3));
    assert_eq!(after.0.m_key_violations - before.0.m_key_violations, 4);
    assert_eq!(after.1.m_key_violations - before.1.m_key_violations, 4);
    for (b, a) in [(before.0, after.0), (before.1, after.1)] {
        assert_eq!(
            (a.lid, a.m_key, a.m_key_protect_bits),
            (b.lid, b.m_key, b.m_key_protect_bits)
        );
    }
    // With the key, the same Get is answered: the check is the key, not the origin.
    let read = rogue(&mut sm, h3, get_port_info(&[1], KEY)).expect("answered");
    assert_eq!(read.method, Method::GetResp);

    // The SM sweeps on: its diff sweep finds nothing to change, fails nothing, and counts
    // the traps 256 the violations sent it.
    let (summary, _) = sweep(&mut sm);
    assert!(summary.subnet_up, "{summary}");
    assert_eq!(
        (summary.failed_requests, summary.changes.len()),
        (0, 0),
        "{summary}"
    );
    assert_eq!(summary.bad_m_key_traps, 8, "{summary}");
    assert_eq!(sm.transport.emulator().unrepressed_traps(), 0);
    // The SM's own SMPs (the represses among them) failed no check.
    let total = violations(&sm);
    assert_eq!(total, 8);
}

#[test]
fn a_restart_reaches_the_ports_with_its_caches() {
    let per_port = format!("m_key_per_port_secret = \"{SECRET}\"");
    // The SM restarts with a new key in its configuration, or with per-port keys: only the
    // caches know the keys the ports hold, and which port each route reaches.
    for (first, then) in [("", ""), ("", per_port.as_str()), (per_port.as_str(), "")] {
        let (mut sm, caches) = protected_subnet(&protected(KEY, first));
        restart(&mut sm, &protected(NEW_KEY, then), Some(&caches));
        assert_eq!(sm.manager.m_keys(), &read_guid2mkey(&caches.0).0);
        let (summary, saved) = sweep(&mut sm);
        assert!(summary.subnet_up, "{first:?} -> {then:?}: {summary}");
        assert_eq!(summary.failed_requests, 0, "{summary}");
        assert_eq!(
            violations(&sm),
            0,
            "every SMP carried the key the port held"
        );
        let (saved, _) = read_guid2mkey(&saved.expect("the keys changed").0);
        for port in keyed_ports(&sm) {
            let info = port_info(&sm, port);
            assert!(saved.values().any(|&k| k == info.m_key), "{port:?}");
            if then.is_empty() {
                assert_eq!(info.m_key, NEW_KEY, "{port:?}");
            } else {
                assert!(![0, KEY, NEW_KEY].contains(&info.m_key), "{port:?}");
            }
        }
    }
}

#[test]
fn without_its_cache_the_sm_takes_the_ports_back_as_leases_run_out() {
    let (mut sm, _) = protected_subnet(&protected(KEY, ""));
    let start_ns = sm.transport.now_ns();
    // The caches are lost and the configuration has another key: no SMP can carry the old one.
    restart(&mut sm, &protected(NEW_KEY, ""), None);
    let mut sweeps = 0;
    let summary = loop {
        let (summary, _) = sweep(&mut sm);
        sweeps += 1;
        if summary.subnet_up {
            break summary;
        }
        assert!(sweeps < 60, "not back after {sweeps} sweeps: {summary}");
    };
    // It had to wait for leases: at least one, at most one per hop level (H1; S1; S2 and H2,
    // H5; H3, H4) and a sweep interval each.
    let waited_s = (sm.transport.now_ns() - start_ns) / 1_000_000_000;
    assert!(
        (LEASE_S..=4 * (LEASE_S + 10) + 10).contains(&waited_s),
        "{waited_s} s"
    );
    assert!(violations(&sm) > 0, "the old keys refused the SM at first");
    assert_eq!(summary.failed_requests, 0, "{summary}");
    for port in keyed_ports(&sm) {
        let info = port_info(&sm, port);
        assert_eq!(
            (info.m_key, info.m_key_protect_bits),
            (NEW_KEY, 2),
            "{port:?}"
        );
    }
    // Back in control: the next sweep fails no check.
    let before = violations(&sm);
    let (summary, _) = sweep(&mut sm);
    assert!(
        summary.subnet_up && summary.failed_requests == 0,
        "{summary}"
    );
    assert_eq!(violations(&sm), before);
}

#[test]
fn a_per_port_key_opens_its_own_port_and_no_other() {
    let settings = protected(KEY, &format!("m_key_per_port_secret = \"{SECRET}\""));
    let (mut sm, (guid2mkey, _)) = protected_subnet(&settings);
    let keyed = keyed_ports(&sm);
    let keys: Vec<u64> = keyed.iter().map(|&p| port_info(&sm, p).m_key).collect();
    let mut distinct = keys.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), keyed.len(), "one key per port: {keyed:?}");
    assert!(!keys.contains(&KEY) && !keys.contains(&0));
    let (cached, _) = read_guid2mkey(&guid2mkey);
    assert_eq!(cached.len(), keyed.len());

    // H3's key, taken from H3, opens H3 and neither its switch nor its neighbour H4.
    let h3 = node_port(&sm, "H3", 1);
    let h3_key = port_info(&sm, h3).m_key;
    let before = violations(&sm);
    assert!(rogue(&mut sm, h3, get_port_info(&[], h3_key)).is_some());
    assert_eq!(rogue(&mut sm, h3, get_port_info(&[1], h3_key)), None);
    assert_eq!(rogue(&mut sm, h3, get_port_info(&[1, 2], h3_key)), None);
    let s2 = port_info(&sm, node_port(&sm, "S2", 0));
    assert_eq!(rogue(&mut sm, h3, hijack(s2, &[1], h3_key)), None);
    assert_eq!(violations(&sm), before + 3);
    assert_eq!(port_info(&sm, node_port(&sm, "S2", 0)).lid, s2.lid);

    // The SM, which knows every key, sweeps on without a failed check of its own.
    let (summary, _) = sweep(&mut sm);
    assert!(
        summary.subnet_up && summary.failed_requests == 0,
        "{summary}"
    );
    assert_eq!(violations(&sm), before + 3);
}

/// Every way a key could be written in a text.
fn spellings(key: u64) -> [String; 4] {
    [
        format!("{key:x}"),
        format!("{key:X}"),
        key.to_string(),
        format!("{:x}", key.swap_bytes()),
    ]
}

#[test]
fn no_key_in_the_logs_the_json_or_the_dumps() {
    let dir = tempfile::tempdir().unwrap();
    let dumps = dir.path().join("dumps");
    let cache = dir.path().join("cache");
    let config = common::scratch_file(
        &dir,
        "ibqos.toml",
        format!(
            "[sm]\nsweep_interval = 10\ndump_files_dir = \"{}\"\n[opensm]\nm_key = \"{KEY:#x}\"\n\
             m_key_protection_level = 1\nlog_flags = \"0xff\"\n",
            dumps.display()
        ),
    );
    let fabric_dump = dir.path().join("fabric.json");
    let out = Command::new(env!("CARGO_BIN_EXE_ibqos"))
        .args(["sm", "--once", "--json", "--fabric", "sim:two-switch", "-c"])
        .arg(&config)
        .arg("--cache-dir")
        .arg(&cache)
        .arg("--dump-fabric")
        .arg(&fabric_dump)
        .env("RUST_LOG", "trace")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    let mut outputs = vec![
        (
            "stdout".to_string(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        ),
        ("stderr".to_string(), log.into_owned()),
        (
            "fabric dump".to_string(),
            std::fs::read_to_string(&fabric_dump).unwrap(),
        ),
    ];
    for entry in std::fs::read_dir(&dumps).unwrap() {
        let path = entry.unwrap().path();
        outputs.push((
            path.display().to_string(),
            std::fs::read_to_string(&path).unwrap(),
        ));
    }
    assert!(outputs.len() >= 5, "the dump files were written");
    assert!(outputs[1].1.contains("SUBNET UP"), "trace logging ran");
    for (name, text) in &outputs {
        for spelling in spellings(KEY) {
            assert!(
                !text.contains(&spelling),
                "{name} shows the key as {spelling}"
            );
        }
    }
    // The key is where it belongs: in the cache, readable by the SM alone.
    let path = cache.join("guid2mkey");
    let (cached, _) = read_guid2mkey(&std::fs::read_to_string(&path).unwrap());
    assert!(!cached.is_empty() && cached.values().all(|&k| k == KEY));
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}
