//! The emulator's models: latency as a delivery time, seeded loss, damage and jitter, link
//! flaps on a schedule, dead nodes, the schedule file's errors, and the JSON dump.

mod support;

use ibqos_emu::{
    Emulator, FaultSchedule, Faults, Flap, Latency, Models, Reply, ScheduleProblem, dump,
};
use ibqos_fabric::PortRef;
use ibqos_fabric::dump::FabricDump;
use ibqos_mad::{
    Attribute, AttributeId, DrPath, PhysPortState, PortState, Priority, Routing, Smp, SmpRepr,
    VlArbEntry, VlArbitrationTableRepr,
};
use proptest::prelude::*;
use support::{emulator, node, sm_exchange, sm_exchange_at, two_switch};

/// A directed-route Get of NodeInfo along `path`.
fn node_info(path: &[u8]) -> Vec<u8> {
    let smp = SmpRepr::get(
        AttributeId::NodeInfo,
        0,
        1,
        Routing::Directed(DrPath::request(path).unwrap()),
    );
    let mut out = vec![0; 256];
    smp.emit(&mut Smp::new_unchecked(&mut out[..]));
    out
}

fn with_faults(faults: Faults, seed: u64) -> Emulator {
    let mut emu = emulator();
    emu.set_models(Models {
        faults,
        seed,
        ..Models::default()
    });
    emu
}

#[test]
fn a_response_arrives_after_the_wire_and_the_sma() {
    let mut emu = emulator();
    let l = Latency::default();
    // H1 itself: no link crossed, a CA's SMA.
    let here = sm_exchange_at(&mut emu, 1_000, &node_info(&[]), None).unwrap();
    assert_eq!(here.at_ns, 1_000 + l.ca_sma_ns);
    // S1, one hop: the link there and back, a switch's SMA (the slower one).
    let s1 = sm_exchange_at(&mut emu, 1_000, &node_info(&[1]), None).unwrap();
    assert_eq!(s1.at_ns, 1_000 + 2 * l.wire_ns + l.switch_sma_ns);
    // H3 behind S1 and S2: three links each way.
    let h3 = sm_exchange_at(&mut emu, 1_000, &node_info(&[1, 3, 1]), None).unwrap();
    assert_eq!(h3.at_ns, 1_000 + 6 * l.wire_ns + l.ca_sma_ns);
    assert!(l.switch_sma_ns > l.ca_sma_ns);
    // The same answer as the timeless exchange.
    assert_eq!(
        Some(h3.mad),
        sm_exchange(&mut emu, &node_info(&[1, 3, 1]), None)
    );
}

#[test]
fn jitter_stays_within_its_bound_and_the_seed_replays_it() {
    let faults = Faults {
        jitter_ns: 5_000,
        ..Faults::default()
    };
    let run = |seed| -> Vec<Reply> {
        let mut emu = with_faults(faults, seed);
        (0..200)
            .filter_map(|_| sm_exchange_at(&mut emu, 0, &node_info(&[1]), None))
            .collect()
    };
    let base = 2 * Latency::default().wire_ns + Latency::default().switch_sma_ns;
    let first = run(7);
    assert_eq!(first.len(), 200);
    assert!(
        first
            .iter()
            .all(|d| (base..=base + 5_000).contains(&d.at_ns))
    );
    assert!(first.iter().any(|d| d.at_ns != first[0].at_ns), "no jitter");
    assert_eq!(first, run(7));
    assert_ne!(first, run(8));
}

#[test]
fn loss_drops_requests_or_responses_at_about_the_rate_and_replays() {
    let faults = Faults {
        loss: 0.05,
        ..Faults::default()
    };
    let answered = |seed| -> Vec<bool> {
        let mut emu = with_faults(faults, seed);
        (0..4000)
            .map(|_| sm_exchange_at(&mut emu, 0, &node_info(&[1]), None).is_some())
            .collect()
    };
    let first = answered(1);
    let lost = first.iter().filter(|a| !**a).count();
    // Two draws of 5%: about 9.75% of round trips fail.
    assert!((300..=500).contains(&lost), "{lost} of 4000 lost");
    assert_eq!(first, answered(1));
}

#[test]
fn damaged_responses_are_truncated_or_have_a_bad_header() {
    let mut emu = with_faults(
        Faults {
            corrupt: 1.0,
            ..Faults::default()
        },
        3,
    );
    let good = sm_exchange(&mut emulator(), &node_info(&[1]), None).unwrap();
    for _ in 0..100 {
        let bad = sm_exchange_at(&mut emu, 0, &node_info(&[1]), None)
            .unwrap()
            .mad;
        assert!(
            bad.len() < good.len() || bad[..24] != good[..24],
            "undamaged"
        );
        // Past the header the bytes are the true ones, as far as they go.
        assert_eq!(bad.get(24..), good.get(24..bad.len()));
    }
}

proptest! {
    /// Whatever the bytes and the faults, the emulator answers or drops: it never panics.
    #[test]
    fn faulty_fabric_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..300),
        seed in any::<u64>(),
        dlid in proptest::option::of(any::<u16>()),
    ) {
        let mut emu = with_faults(Faults { loss: 0.2, corrupt: 0.5, jitter_ns: 1_000 }, seed);
        sm_exchange_at(&mut emu, u64::MAX, &bytes, dlid);
        sm_exchange_at(&mut emu, 0, &node_info(&[1, 3]), None);
    }
}

#[test]
fn a_flap_takes_the_link_down_then_trains_it_to_init_with_port_state_change() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let (s1, s2) = (node(&t, "S1"), node(&t, "S2"));
    let flap = Flap {
        port: PortRef::new(s1, 3),
        down_ns: 5_000_000,
        up_ns: Some(50_000_000),
    };
    emu.schedule(&FaultSchedule {
        flaps: vec![flap],
        ..FaultSchedule::default()
    });
    let state = |emu: &Emulator, n, p| {
        let info = emu.port_info(PortRef::new(n, p)).unwrap();
        (info.port_state, info.port_phys_state)
    };
    emu.advance_to(4_999_999);
    assert_eq!(state(&emu, s1, 3).0, PortState::Init);
    emu.advance_to(5_000_000);
    for (n, p) in [(s1, 3), (s2, 3)] {
        assert_eq!(state(&emu, n, p), (PortState::Down, PhysPortState::Polling));
    }
    // The SM reads the change: clearing PortStateChange is its job, done here by hand.
    assert!(emu.switch_info(s1).unwrap().port_state_change);
    assert!(emu.switch_info(s2).unwrap().port_state_change);
    // A directed route across the downed link is lost; the parallel link still carries one.
    assert!(sm_exchange_at(&mut emu, 6_000_000, &node_info(&[1, 3]), None).is_none());
    assert!(sm_exchange_at(&mut emu, 6_000_000, &node_info(&[1, 4]), None).is_some());
    assert_eq!(emu.next_event_ns(), Some(50_000_000));
    sm_exchange_at(&mut emu, 50_000_000, &node_info(&[1]), None);
    for (n, p) in [(s1, 3), (s2, 3)] {
        assert_eq!(state(&emu, n, p), (PortState::Init, PhysPortState::LinkUp));
    }
    assert_eq!(emu.next_event_ns(), None);
}

#[test]
fn a_dead_node_answers_nothing_and_forwards_no_directed_route() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    emu.schedule(&FaultSchedule {
        dead: vec![node(&t, "H3"), node(&t, "S2")],
        ..FaultSchedule::default()
    });
    assert!(sm_exchange(&mut emu, &node_info(&[1, 3]), None).is_none());
    assert!(sm_exchange(&mut emu, &node_info(&[1, 3, 1]), None).is_none());
    assert!(
        sm_exchange(&mut emu, &node_info(&[1, 2]), None).is_some(),
        "H2 lives"
    );
    // Its links still train: it is the SMA that is dead, not the port.
    let h3 = emu.port_info(PortRef::new(node(&t, "H3"), 1)).unwrap();
    assert_eq!(h3.port_phys_state, PhysPortState::LinkUp);
}

/// A VLArb rewrite: at its time the port holds the tables given, cut to its caps, as if another
/// agent had Set them; the table left out stays; other ports keep theirs.
#[test]
fn a_vlarb_rewrite_replaces_the_port_tables_at_its_time() {
    let mut emu = emulator();
    let t = emu.topology().clone();
    let text = "[[vlarb]]\nnode = \"S1\"\nport = 3\nat_ms = 20\n\
                low = [{ vl = 0, weight = 32 }, { vl = 1, weight = 96 }]\n";
    emu.schedule(&FaultSchedule::parse("s.toml", text, &t).unwrap());
    let (port3, port4) = (
        PortRef::new(node(&t, "S1"), 3),
        PortRef::new(node(&t, "S1"), 4),
    );
    let low = |emu: &Emulator, port| emu.vlarb(port, Priority::Low).unwrap().to_vec();
    let high = |emu: &Emulator, port| emu.vlarb(port, Priority::High).unwrap().to_vec();
    let (low_before, high_before) = (low(&emu, port3), high(&emu, port3));
    assert_eq!(emu.next_event_ns(), Some(20_000_000));
    emu.advance_to(19_999_999);
    assert_eq!(low(&emu, port3), low_before);
    emu.advance_to(20_000_000);
    let mut expected = vec![VlArbEntry::default(); low_before.len()];
    expected[..2].copy_from_slice(&[VlArbEntry::new(0, 32), VlArbEntry::new(1, 96)]);
    assert_eq!(low(&emu, port3), expected);
    assert_eq!(high(&emu, port3), high_before, "no high table given");
    assert_eq!(low(&emu, port4), low_before, "another port");
}

#[test]
fn a_schedule_file_resolves_names_and_says_precisely_what_is_wrong() {
    let t = two_switch();
    let good = "[[flap]]\nnode = \"S1\"\nport = 3\ndown_ms = 5\nup_ms = 50\n\n\
                [[flap]]\nnode = \"sw-two\"\nport = 1\ndown_ms = 1\n\n[[dead]]\nnode = \"H3\"\n";
    let schedule = FaultSchedule::parse("s.toml", good, &t).unwrap();
    assert_eq!(
        schedule.flaps,
        vec![
            Flap {
                port: PortRef::new(node(&t, "S1"), 3),
                down_ns: 5_000_000,
                up_ns: Some(50_000_000),
            },
            Flap {
                port: PortRef::new(node(&t, "S2"), 1),
                down_ns: 1_000_000,
                up_ns: None,
            },
        ]
    );
    assert_eq!(schedule.dead, vec![node(&t, "H3")]);

    let entries: String = (0..65).map(|_| "{ vl = 0, weight = 1 },").collect();
    let too_many = format!("[[vlarb]]\nnode = \"S1\"\nport = 3\nat_ms = 1\nhigh = [{entries}]\n");
    let cases: [(&str, &str); 10] = [
        (
            "[[vlarb]]\nnode = \"S1\"\nport = 3\nat_ms = 1\nlow = [{ vl = 16, weight = 1 }]\n",
            "5:8: VL 16 is not a VL: 0-15",
        ),
        (&too_many, "5:8: 65 entries: a VLArb table has at most 64"),
        (
            "[[vlarb]]\nnode = \"S1\"\nport = 3\nat_ms = 1\n",
            "2:8: a [[vlarb]] rewrite names no table: give low, high or both",
        ),
        (
            "[[vlarb]]\nnode = \"S1\"\nport = 9\nat_ms = 1\nlow = []\n",
            "3:8: `S1` has no port 9",
        ),
        ("[[dead]]\nnode = \"H9\"\n", "2:8: no node named `H9`"),
        (
            "[[flap]]\nnode = \"S1\"\nport = 9\ndown_ms = 1\n",
            "3:8: `S1` has no port 9",
        ),
        (
            "[[flap]]\nnode = \"S1\"\nport = 6\ndown_ms = 1\n",
            "3:8: port 6 of `S1` has no link to flap",
        ),
        (
            "[[flap]]\nnode = \"S1\"\nport = 3\ndown_ms = 9\nup_ms = 9\n",
            "5:9: up_ms 9 is not after down_ms 9",
        ),
        (
            "[[flap]]\nnode = \"S1\"\nport = 3\ndown_ms = 99999999999999\n",
            "4:11: 99999999999999 ms is more time than the emulator counts",
        ),
        ("[[flop]]\nnode = \"S1\"\n", "1:3: unknown field `flop`"),
    ];
    for (text, expected) in cases {
        let error = FaultSchedule::parse("s.toml", text, &t)
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!("s.toml:{expected}")),
            "{text:?}: {error}"
        );
    }
    assert!(matches!(
        FaultSchedule::parse("s.toml", "[[flap]]\nnode = \"S1\"\n", &t)
            .unwrap_err()
            .what,
        ScheduleProblem::Syntax(_)
    ));
}

#[test]
fn the_dump_is_stable_reads_back_and_shows_a_changed_table() {
    let emu = emulator();
    let text = dump(&emu).to_json();
    assert_eq!(text, dump(&emulator()).to_json());
    let back = FabricDump::from_json(&text).unwrap();
    assert_eq!(back, dump(&emu));
    // Nodes by GUID, fixed width; ports by number; a switch's port 0 included.
    let s1 = &back.nodes["0x0002c90000001000"];
    assert_eq!((s1.name.as_str(), s1.kind.as_str()), ("sw-one", "switch"));
    assert_eq!(
        s1.ports.keys().copied().collect::<Vec<_>>(),
        (0..=8).collect::<Vec<u8>>()
    );
    // A switch port: one SL2VL table per input port; a CA port: its own.
    assert_eq!(s1.ports[&3].sl2vl.len(), 9);
    let h1 = back
        .nodes
        .values()
        .find(|n| n.name == "host-one HCA-1")
        .unwrap();
    assert_eq!(
        h1.ports[&1].sl2vl.keys().copied().collect::<Vec<_>>(),
        vec![1]
    );
    assert_eq!(h1.ports[&1].port_state, "Init");

    // One VLArb entry changed on H1's port: the dump differs there and only there.
    let mut changed = emulator();
    let table = VlArbitrationTableRepr {
        entries: [VlArbEntry { vl: 1, weight: 9 }; 32],
    };
    let smp = SmpRepr::set(
        &Attribute::VlArbitrationTable(table),
        0x1_0000,
        2,
        Routing::Directed(DrPath::request(&[]).unwrap()),
    );
    let mut bytes = vec![0; 256];
    smp.emit(&mut Smp::new_unchecked(&mut bytes[..]));
    sm_exchange(&mut changed, &bytes, None).unwrap();
    let after = dump(&changed);
    assert_ne!(after.to_json(), text);
    let differing: Vec<&String> = after
        .nodes
        .iter()
        .filter(|(guid, n)| back.nodes[*guid] != **n)
        .map(|(guid, _)| guid)
        .collect();
    assert_eq!(differing.len(), 1);
    assert_ne!(
        after.nodes[differing[0]].ports[&1].vlarb_low,
        h1.ports[&1].vlarb_low
    );
}
