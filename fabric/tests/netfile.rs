//! Net-file reader and writer against the shared topologies and ibsim's observed behaviour.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use ibqos_fabric::generate;
use ibqos_fabric::netfile::{NetErrorKind, NetNote, parse_net_str, parse_net_with, to_net_file};
use ibqos_fabric::{NodeKind, PortRef, Topology};
use proptest::prelude::*;

const TWO_SWITCH: &str = include_str!("../data/two-switch.net");
const FAT_TREE_16: &str = include_str!("../data/fat-tree-16.net");
const FAT_TREE_648: &str = include_str!("../data/fat-tree-648.net");

fn parse(text: &str) -> Topology {
    parse_net_str(text).unwrap().topology
}

fn port(t: &Topology, name: &str, port: u8) -> PortRef {
    PortRef::new(t.node_by_name(name).unwrap(), port)
}

/// GUIDs ibsim 0.10 reported for two-switch.net: `ibsim -s two-switch.net` with its console fed
/// from a FIFO, then the console command `Dump` (Switch lines print nodeguid, Ca port lines the
/// port GUID).
#[test]
fn two_switch_guids_match_ibsim() {
    let t = parse(TWO_SWITCH);
    let observed: [(&str, u64, &[u64]); 7] = [
        ("S1", 0x2c90000001000, &[0x2c90000001000]),
        ("S2", 0x2c90000002000, &[0x2c90000002000]),
        ("H1", 0x2c90000100000, &[0x2c90000100001]),
        ("H2", 0x2c90000100002, &[0x2c90000100003]),
        ("H3", 0x2c90000100004, &[0x2c90000100005]),
        ("H4", 0x2c90000100006, &[0x2c90000100007]),
        ("H5", 0x2c90000100008, &[0x2c90000100009, 0x2c9000010000a]),
    ];
    assert_eq!(t.len(), 7);
    for (name, guid, port_guids) in observed {
        let id = t.node_by_name(name).unwrap();
        let node = t.node(id).unwrap();
        assert_eq!(node.guid, guid, "{name}");
        assert_eq!(node.system_image_guid, guid, "{name}");
        let guids: Vec<u64> = node.existing_ports().map(|(_, p)| p.guid).collect();
        if node.kind == NodeKind::Switch {
            assert_eq!(node.num_ports(), 8);
            assert!(guids.iter().all(|g| g == &port_guids[0]));
        } else {
            assert_eq!(guids, port_guids, "{name}");
        }
    }
    let s1 = t.node(t.node_by_name("S1").unwrap()).unwrap();
    assert!(s1.enhanced_port0);
    assert_eq!(s1.description, "sw-one");
    assert!(
        !t.node(t.node_by_name("S2").unwrap())
            .unwrap()
            .enhanced_port0
    );
    // The Dump's links.
    assert_eq!(t.peer(port(&t, "S1", 3)), Some(port(&t, "S2", 3)));
    assert_eq!(t.peer(port(&t, "S2", 5)), Some(port(&t, "H5", 2)));
    assert_eq!(t.peer(port(&t, "S1", 6)), None);
    assert_eq!(t.links().count(), 8);
}

#[test]
fn default_guid_bases_and_fat_trees_equal_the_generator() {
    let t = parse(FAT_TREE_16);
    let l0 = t.node(t.node_by_name("L0").unwrap()).unwrap();
    assert_eq!(l0.guid, 0x200000);
    assert_eq!(
        t.node(t.node_by_name("S1").unwrap()).unwrap().guid,
        0x200005
    );
    assert_eq!(
        t.node(t.node_by_name("H0_1").unwrap()).unwrap().guid,
        0x100002
    );
    assert_eq!(t, generate::fat_tree(4, 2, 4, 8).unwrap());
    assert_eq!(
        parse(FAT_TREE_648),
        generate::fat_tree(36, 18, 18, 36).unwrap()
    );
}

#[test]
fn directives_follow_ibsim() {
    let text = "\
vendid=0x2c9
devid=0xcafe
sysimgguid=0x77
switchguid=0x1000
width=3
Switch\t4 \"A\"\t# \"desc a\" base port 0 lid 7 lmc 1
[1]\t\"B\"[2]\tw=1 s=7 e=1
[2]\t\"H\"[1]

Switch\t2 \"B\"
[2]\t\"A\"[1]

caguid=0x500
Ca\t2 \"H\"
[1](abc)\t\"A\"[2]\t\t# lid 9 lmc 2 \"A\" lid 7 4xQDR

do Dump
";
    let f = parse_net_str(text).unwrap();
    let t = &f.topology;
    let a = t.node(t.node_by_name("A").unwrap()).unwrap();
    let b = t.node(t.node_by_name("B").unwrap()).unwrap();
    let h = t.node(t.node_by_name("H").unwrap()).unwrap();
    assert_eq!(
        (a.vendor_id, a.device_id, a.system_image_guid),
        (0x2c9, 0xcafe, 0x77)
    );
    // vendid and sysimgguid apply to the next node only, devid sticks.
    assert_eq!(
        (b.vendor_id, b.device_id, b.system_image_guid),
        (0, 0xcafe, 0x1001)
    );
    assert_eq!(b.guid, 0x1001);
    assert_eq!((h.guid, h.port(2).unwrap().guid), (0x500, 0x502));
    assert!(!a.enhanced_port0);
    assert_eq!((a.port(0).unwrap().lid, a.port(0).unwrap().lmc), (7, 1));
    let a1 = a.port(1).unwrap().link;
    assert_eq!(
        (a1.width_enabled, a1.speed_enabled, a1.speed_ext_enabled),
        (1, 7, 1)
    );
    assert_eq!(a.port(3).unwrap().link.width_enabled, 3);
    let h1 = h.port(1).unwrap();
    assert_eq!(
        (h1.lid, h1.lmc, h1.link.width_enabled, h1.link.speed_enabled),
        (9, 2, 3, 7)
    );
    assert_eq!(f.notes.len(), 1);
    assert_eq!(f.notes[0].what, NetNote::IgnoredCommand("Dump".into()));
    assert_eq!(f.notes[0].location.line, 17);
}

#[test]
fn a_line_right_after_a_record_is_consumed() {
    let text = "Switch 2 \"A\"\n[1] \"H\"[1]\nswitchguid=0x9000\nSwitch 1 \"B\"\n\nCa 1 \"H\"\n[1] \"A\"[1]\n";
    let f = parse_net_str(text).unwrap();
    let b = f.topology.node_by_name("B").unwrap();
    assert_eq!(f.topology.node(b).unwrap().guid, 0x200001);
    assert!(matches!(&f.notes[0].what, NetNote::EatenLine(l) if l == "switchguid=0x9000"));
}

#[test]
fn links_must_agree_on_both_ends() {
    let text = "Switch 2 \"A\"\n[1] \"B\"[2]\n\nSwitch 2 \"B\"\n[1] \"A\"[1]\n";
    let e = parse_net_str(text).unwrap_err();
    assert_eq!(e.location.line, 2);
    let NetErrorKind::Inconsistent { port, remote, .. } = &e.what else {
        panic!("{e}")
    };
    assert_eq!((port.as_str(), remote.as_str()), ("\"A\"[1]", "\"B\"[2]"));
    assert!(
        e.to_string()
            .starts_with("<string>:2:1: \"A\"[1] is connected to \"B\"[2]")
    );

    let unknown = parse_net_str("Ca 1 \"H\"\n[1] \"Z\"[1]\n").unwrap_err();
    assert!(matches!(unknown.what, NetErrorKind::UnknownRemote { .. }));
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    for (text, line) in [
        ("Switch 0 \"A\"\n", 1),
        ("Switch 4 A\n", 1),
        ("Switch 4 \"A#B\"\n", 1),
        ("Ca 1 \"A\"\n[0] \"B\"[1]\n", 2),
        ("Ca 1 \"A\"\n[1] \"B\"[0]\n", 2),
        ("Ca 1 \"A\"\n[1] \"B\"[1] w=40\n", 2),
        ("width=0\n", 1),
        ("vendid 5\n", 1),
        ("include nothing\n", 1),
        ("include \"x.net\"\n", 1),
        ("Ca 1 \"A\"\n\nCa 1 \"A\"\n", 3),
        (
            "switchguid=5\nSwitch 1 \"A\"\n\nswitchguid=5\nSwitch 1 \"B\"\n",
            5,
        ),
    ] {
        let e = parse_net_str(text).unwrap_err();
        assert_eq!(e.location.line, line, "{text:?}: {e}");
    }
    let long = format!("# {}\n", "x".repeat(300));
    assert_eq!(
        parse_net_str(&long).unwrap_err().what,
        NetErrorKind::LineTooLong
    );
    let mismatch = "Ca 1 \"A\"\n[1] \"B\"[1] w=1\n\nCa 1 \"B\"\n[1] \"A\"[1] w=2\n";
    assert!(matches!(
        parse_net_str(mismatch).unwrap_err().what,
        NetErrorKind::NoCommonRate { what: "width", .. }
    ));
}

#[test]
fn includes_modules_and_aliases() {
    let files: HashMap<PathBuf, &str> = HashMap::from([
        (
            PathBuf::from("top/main.net"),
            "include \"sub/a.net\"\nCa 1 \"H\"\n[1] \"m@up\"\n",
        ),
        (
            PathBuf::from("top/sub/a.net"),
            "module=\"m\"\nSwitch 2 \"S\"\n@[2] \"up\"\n[1] \"T\"[1]\n\nSwitch 1 \"T\"\n[1] \"S\"[1]\n\nmodule=\"\"\n",
        ),
    ]);
    let mut read = |p: &Path| {
        files
            .get(p)
            .map(|s| s.to_string())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    };
    let t = parse_net_with(Path::new("top/main.net"), &mut read)
        .unwrap()
        .topology;
    assert_eq!(t.peer(port(&t, "H", 1)), Some(port(&t, "m#S", 2)));
    assert_eq!(t.peer(port(&t, "m#S", 1)), Some(port(&t, "m#T", 1)));

    let mut deep = |p: &Path| Ok::<_, io::Error>(format!("include \"{}\"\n", p.display()));
    let e = parse_net_with(Path::new("x"), &mut deep).unwrap_err();
    assert_eq!(e.what, NetErrorKind::IncludeDepth);
}

#[test]
fn shared_topologies_round_trip() {
    for text in [TWO_SWITCH, FAT_TREE_16, FAT_TREE_648] {
        let t = parse(text);
        assert_eq!(parse(&to_net_file(&t).unwrap()), t);
    }
}

/// A three-level fat tree reads back the same from the written file, and from that file with its
/// GUID lines removed: its GUIDs are the ones ibsim gives by default.
#[test]
fn three_level_fat_trees_round_trip_with_ibsims_default_guids() {
    for (k, pods, hosts) in [(4, 4, 2), (8, 8, 4), (6, 3, 1)] {
        let t = generate::fat_tree3(k, pods, hosts).unwrap();
        let text = to_net_file(&t).unwrap();
        assert_eq!(parse(&text), t, "({k}, {pods}, {hosts})");
        let without_guids: String = text
            .lines()
            .filter(|l| !l.starts_with("switchguid=") && !l.starts_with("caguid="))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(parse(&without_guids), t, "({k}, {pods}, {hosts})");
    }
}

#[test]
fn writer_rejects_what_ibsim_cannot_read() {
    let mut t = generate::ring(2, 0).unwrap();
    let s0 = t.node_by_name("S0").unwrap();
    t.node_mut(s0).unwrap().description = "a \"quoted\" word".into();
    assert!(to_net_file(&t).is_err());
}

/// Random fabrics with everything a net file can carry.
fn arb_topology() -> impl Strategy<Value = Topology> {
    (
        2usize..6,
        0usize..3,
        proptest::collection::vec((1u8..=31, 1u8..=7, 0u8..=7, any::<u16>(), 0u8..3), 16),
        any::<bool>(),
    )
        .prop_map(|(switches, hosts, caps, esp0)| {
            let mut t = generate::ring(switches, hosts).unwrap();
            let links: Vec<_> = t.links().collect();
            let ids: Vec<_> = t.nodes().map(|(id, _)| id).collect();
            for (i, id) in ids.into_iter().enumerate() {
                let (w, s, e, dev, lmc) = caps[i % caps.len()];
                let node = t.node_mut(id).unwrap();
                node.device_id = dev;
                node.vendor_id = u32::from(dev) << 4;
                node.system_image_guid ^= u64::from(dev & 1) << 40;
                node.enhanced_port0 = esp0 && node.is_switch();
                node.description = format!("node {i} {dev}");
                let first = usize::from(!node.is_switch());
                if let Some(Some(p)) = node.ports.get_mut(first) {
                    p.lid = 1 + 8 * i as u16;
                    p.lmc = lmc;
                }
                let _ = (w, s, e);
            }
            for (n, (a, b)) in links.into_iter().enumerate() {
                let (w, s, e, _, _) = caps[n % caps.len()];
                for p in [a, b] {
                    let link = &mut t.port_mut(p).unwrap().link;
                    (
                        link.width_enabled,
                        link.speed_enabled,
                        link.speed_ext_enabled,
                    ) = (w, s, e);
                }
            }
            t
        })
}

proptest! {
    #[test]
    fn written_files_read_back_the_same(t in arb_topology()) {
        let text = to_net_file(&t).unwrap();
        let back = parse_net_str(&text).unwrap();
        prop_assert_eq!(back.notes, vec![]);
        prop_assert_eq!(back.topology, t);
    }
}
