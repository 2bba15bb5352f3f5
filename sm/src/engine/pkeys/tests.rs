use super::*;

/// A CA port as ibsim (and the emulator) start it: 64 entries (two blocks), the default
/// P_Key full at index 0.
fn fresh() -> Vec<u16> {
    let mut held = vec![0; 64];
    held[0] = 0xffff;
    held
}

fn port<'a>(wanted: &'a [u16], held: &'a [u16]) -> PortPkeys<'a> {
    PortPkeys {
        wanted,
        held,
        indx0: None,
        capacity: 64,
        rule: KeyRule::default(),
    }
}

fn first(table: &[u16], n: usize) -> &[u16] {
    &table[..n]
}

#[test]
fn a_fresh_port_keeps_the_default_at_index_0_and_appends_the_rest_in_queue_order() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let placed = place(port(&[0x8001, 0x0002, 0xffff], &held), &mut indexes);
    assert_eq!(first(&placed.table, 4), [0xffff, 0x8001, 0x0002, 0]);
    assert!(placed.table[4..].iter().all(|&k| k == 0));
    assert!(placed.left_out.is_empty());
}

#[test]
fn a_limited_default_takes_the_place_of_the_full_one() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let placed = place(port(&[0x8001, 0x7fff], &held), &mut indexes);
    assert_eq!(first(&placed.table, 3), [0x7fff, 0x8001, 0]);
}

#[test]
fn the_next_sweep_leaves_the_table_as_it_is() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let wanted = [0x8001, 0x0002, 0xffff];
    let once = place(port(&wanted, &held), &mut indexes).table;
    let twice = place(port(&wanted, &once), &mut indexes).table;
    assert_eq!(once, twice);
}

#[test]
fn a_removed_pkey_leaves_a_hole_and_its_index_stays_taken() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let one = place(port(&[0x8001, 0x8002, 0xffff], &held), &mut indexes).table;
    assert_eq!(first(&one, 3), [0xffff, 0x8001, 0x8002]);
    let two = place(port(&[0x8002, 0xffff], &one), &mut indexes).table;
    assert_eq!(
        first(&two, 4),
        [0xffff, 0, 0x8002, 0],
        "0x8002 keeps index 2"
    );
    // 0x8001 is still remembered at 1, so a new P_Key goes after the last index used.
    let three = place(port(&[0x8002, 0x8003, 0xffff], &two), &mut indexes).table;
    assert_eq!(first(&three, 4), [0xffff, 0, 0x8002, 0x8003]);
    // 0x8001 comes back to its old index.
    let four = place(
        port(&[0x8001, 0x8002, 0x8003, 0xffff], &three),
        &mut indexes,
    )
    .table;
    assert_eq!(first(&four, 4), [0xffff, 0x8001, 0x8002, 0x8003]);
}

#[test]
fn indx0_moves_the_default_away_from_index_0() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let placed = place(
        PortPkeys {
            indx0: Some(0x8009),
            ..port(&[0x8009, 0xffff], &held)
        },
        &mut indexes,
    );
    assert_eq!(first(&placed.table, 3), [0x8009, 0xffff, 0]);
}

#[test]
fn a_key_at_index_0_that_is_not_the_default_moves() {
    let mut indexes = PkeyIndexes::default();
    let mut held = vec![0; 32];
    held[0] = 0x8005;
    held[1] = 0xffff;
    let placed = place(port(&[0x8005, 0xffff], &held), &mut indexes);
    // The default is held at 1, which is not its place: both are new, the default goes to 0
    // and 0x8005 after the last index used.
    assert_eq!(first(&placed.table, 3), [0xffff, 0x8005, 0]);
}

#[test]
fn past_the_capacity_a_new_key_takes_the_first_free_entry_or_is_left_out() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let small = |wanted| PortPkeys {
        capacity: 3,
        ..port(wanted, &held)
    };
    let one = place(small(&[0x8001, 0x8002, 0xffff]), &mut indexes).table;
    assert_eq!(first(&one, 3), [0xffff, 0x8001, 0x8002]);
    let mut indexes_after_removal = indexes.clone();
    let two = place(
        PortPkeys {
            capacity: 3,
            ..port(&[0x8002, 0xffff], &one)
        },
        &mut indexes_after_removal,
    )
    .table;
    // 0x8004 would go to index 3, past the table: index 1 is free again.
    let three = place(
        PortPkeys {
            capacity: 3,
            ..port(&[0x8002, 0x8004, 0xffff], &two)
        },
        &mut indexes_after_removal,
    );
    assert_eq!(first(&three.table, 3), [0xffff, 0x8004, 0x8002]);
    // Full: 0x8003 does not fit.
    let full = place(small(&[0x8001, 0x8002, 0x8003, 0xffff]), &mut indexes);
    assert_eq!(full.left_out, [0x8003]);
}

#[test]
fn with_allow_both_pkeys_full_and_limited_are_two_entries() {
    let mut indexes = PkeyIndexes::default();
    let held = fresh();
    let placed = place(
        PortPkeys {
            rule: KeyRule {
                allow_both_pkeys: true,
            },
            ..port(&[0x0007, 0x8007, 0xffff], &held)
        },
        &mut indexes,
    );
    assert_eq!(first(&placed.table, 4), [0xffff, 0x0007, 0x8007, 0]);
}

#[test]
fn the_facing_switch_port_gets_the_keys_packed_without_a_limited_twin_of_a_full_key() {
    let mut table = vec![0; 64];
    table[..5].copy_from_slice(&[0x7fff, 0x8001, 0, 0x0001, 0x0002]);
    let plan = peer_plan(&table, 64, PartEnforce::Both).expect("the switch enforces");
    let mut block = [0; BLOCK];
    block[..3].copy_from_slice(&[0x7fff, 0x8001, 0x0002]);
    assert_eq!(plan.blocks, [(0, block)]);
    assert_eq!(plan.enforce, PartEnforce::Both);
}

#[test]
fn a_switch_port_that_cannot_hold_the_keys_does_not_enforce() {
    let table: Vec<u16> = (1..=40).map(|k| 0x8000 | k).collect();
    let plan = peer_plan(&table, 32, PartEnforce::Both).unwrap();
    assert_eq!(plan.enforce, PartEnforce::Off);
    assert_eq!(plan.blocks.len(), 1, "the block that fitted is written");
    let exactly: Vec<u16> = (1..=32).map(|k| 0x8000 | k).collect();
    let plan = peer_plan(&exactly, 32, PartEnforce::In).unwrap();
    assert_eq!(
        plan.enforce,
        PartEnforce::Off,
        "OpenSM counts a full port as overflowing"
    );
    let fits = peer_plan(&exactly[..31], 32, PartEnforce::In).unwrap();
    assert_eq!(fits.enforce, PartEnforce::In);
}

#[test]
fn a_switch_without_enforcement_is_left_alone_and_off_writes_no_table() {
    assert_eq!(peer_plan(&fresh(), 0, PartEnforce::Both), None);
    let off = peer_plan(&fresh(), 64, PartEnforce::Off).unwrap();
    assert!(off.blocks.is_empty());
    assert_eq!(off.enforce.bits(), (false, false));
    assert_eq!(PartEnforce::parse("out"), PartEnforce::Out);
    assert_eq!(PartEnforce::parse("sideways"), PartEnforce::Both);
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever a port holds (its table is read from the fabric) and whatever the
        /// partitions give it: no panic, a table as long as the one read, every wanted P_Key
        /// placed or reported left out, nothing else placed, and a facing switch port that
        /// holds at most its capacity.
        #[test]
        fn any_held_table_and_wanted_keys(
            held in prop::collection::vec(any::<u16>(), 0..96),
            wanted in prop::collection::btree_set(1u16..=0xffff, 0..40),
            indx0 in prop::option::of(1u16..=0xffff),
            capacity in 0u16..100,
            allow_both_pkeys in any::<bool>(),
            enforcement_cap in 0u16..70,
        ) {
            let rule = KeyRule { allow_both_pkeys };
            let wanted: Vec<u16> = wanted.into_iter().filter(|k| k & 0x7fff != 0).collect();
            let mut indexes = PkeyIndexes::default();
            let port = PortPkeys { wanted: &wanted, held: &held, indx0, capacity, rule };
            let placed = place(port, &mut indexes);
            prop_assert_eq!(placed.table.len(), held.len());
            for &pkey in placed.table.iter().filter(|&&k| k != 0) {
                prop_assert!(wanted.contains(&pkey), "{:#06x} was not wanted", pkey);
            }
            for pkey in &wanted {
                prop_assert!(
                    placed.table.contains(pkey) || placed.left_out.contains(pkey)
                        || wanted.iter().any(|w| w != pkey && rule.same(*w, *pkey)),
                    "{:#06x} neither placed nor left out", pkey
                );
            }
            if let Some(plan) = peer_plan(&placed.table, enforcement_cap, PartEnforce::Both) {
                let entries = plan.blocks.len() * BLOCK;
                prop_assert!(entries <= usize::from(enforcement_cap).div_ceil(BLOCK) * BLOCK);
            }
        }
    }
}
