//! The output-port VL arbiter of IBA 7.6.9, with the points the specification leaves open (or
//! that hardware does differently) as named options.
//!
//! The sources disagree: OpenSM's `doc/QoS_management_in_OpenSM.txt` §7 quotes IBA 7.6.9 on
//! entries and the high limit, Shanley's *InfiniBand Network Architecture* (ch. 25) has an entry
//! need weight for the whole packet, and NVIDIA Switch-IB 2 and Quantum-2 firmware release notes
//! (known issues 955641, 1249608) report VLHighLimit and weight 0 behaving otherwise. Mellanox's
//! flit-level model `ib_flit_sim` (`src/vlarb.cc`) makes the choices that are the non-default
//! options here. The defaults are the specification's reading:
//! - a packet may start while its entry has weight left, and the overshoot is forgiven
//!   ([`Overshoot::Forgive`]);
//! - an entry of weight 0 is skipped ([`ZeroWeight::Skip`]);
//! - the high limit counts the bytes of high-priority packets since the low table last had an
//!   opportunity, 0 meaning one high packet and 255 unbounded ([`HighLimitMode::Spec`]).
//!
//! VL15 is not arbitrated here: it outranks every data VL, and the engine serves it first.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use ibqos_qos::{Priority, VlArbEntry};

/// Bytes per credit (a 64-byte block), the unit of VLArb weights.
pub const BLOCK_BYTES: u32 = 64;

/// What happens when the packet at the head of an entry's VL is longer than the weight the entry
/// has left. A 4 KB packet is 65 blocks, so with weights that are multiples of 64 (as the OpenSM
/// documentation advises) this decides whether such a VL is served at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Overshoot {
    /// The specification's reading (IBA 1.2.1 §7.6.9.2, from memory of the text): a
    /// packet may start while the entry has any weight left; the overshoot is forgiven.
    #[default]
    Forgive,
    /// Shanley's wording: the entry needs weight left for the whole packet. An entry whose
    /// weight is below one packet never sends.
    MustFit,
    /// `ib_flit_sim` (`vlarb.cc` l.405): a packet may start while `used <= weight`, so an entry
    /// whose weight is used up exactly still sends one more packet.
    FlitModel,
}

/// What a weight-0 entry means. NVIDIA documents "unexpected behavior" for weight 0 (Known
/// Issue 1249608), so the alternative is there to reproduce a port that does not skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZeroWeight {
    /// The specification: "A weight of 0 indicates that this entry should be skipped."
    #[default]
    Skip,
    /// The entry sends one packet per turn, as a `used <= weight` test without the explicit
    /// zero check would.
    OnePacket,
}

/// How VLHighLimit is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HighLimitMode {
    /// The specification: high-priority packets may start while fewer than `limit` x 4096 bytes
    /// (counted on the wire, in whole blocks) were sent since the low table last had an
    /// opportunity, and always at least one. Then the low table may send one packet (if it has
    /// none ready, the opportunity passes), and the count starts again. 255 is unbounded: the
    /// low table is served only when the high table has nothing to send.
    #[default]
    Spec,
    /// `ib_flit_sim` (`vlarb.cc` l.150, 622-641): a counter of `limit` x 64 flits, decremented
    /// by the continuation flits (blocks - 1) of each high packet; at or below 0 the low table
    /// goes first, and the counter reloads only when it is exactly 0 as a low packet ends. So 0
    /// means "low first for ever", 255 is not special, and a counter that overshoots below 0
    /// never reloads.
    FlitModel,
}

/// The arbiter's named options; the defaults are the specification's reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArbiterOptions {
    pub overshoot: Overshoot,
    pub zero_weight: ZeroWeight,
    pub high_limit: HighLimitMode,
}

/// Where an arbiter is in one of its priority tables, 12 bytes: the table, one of an
/// [`ArbiterTables`]'s, the entry whose turn it is and the weight that entry has used.
#[derive(Debug, Clone, Copy)]
struct Table {
    id: u32,
    /// The entry whose turn it is: a VLArb table has at most 64 entries (255 in a dump).
    cursor: u32,
    /// Blocks sent from the current entry since its turn began.
    used: u32,
}

impl Table {
    /// The VL of the first entry, from the current one on, that may send its head packet now,
    /// and that packet's size in blocks, charged to the entry. `ready(vl)` is the head packet's
    /// size in blocks when the VL has a packet and credits for all of it. Asked only when an
    /// entry's VL is among `ready_vls`, so the table has entries.
    ///
    /// The scan visits every entry once and then the starting entry again with a fresh weight,
    /// as `ib_flit_sim` does (`vlarb.cc` l.399-402): an entry that used up its weight gets a new
    /// turn when no other entry can send.
    fn pick(
        &mut self,
        entries: &[VlArbEntry],
        options: &ArbiterOptions,
        ready_vls: u16,
        ready: &impl Fn(u8) -> Option<u32>,
    ) -> Option<(u8, u32)> {
        let n = entries.len();
        for step in 0..=n {
            if step > 0 {
                // A wrap by comparison: a division per step would cost more than the rest.
                self.cursor += 1;
                if self.cursor as usize == n {
                    self.cursor = 0;
                }
                self.used = 0;
            }
            let entry = entries[self.cursor as usize];
            // Entries for VL15 (or beyond) are skipped: a port may skip them (IBA 7.6.9).
            if entry.vl >= 15 {
                continue;
            }
            let weight = u32::from(entry.weight);
            if (weight == 0 && options.zero_weight == ZeroWeight::Skip)
                || ready_vls & 1 << entry.vl == 0
            {
                continue;
            }
            let Some(blocks) = ready(entry.vl) else {
                continue;
            };
            let allowed = if weight == 0 {
                self.used == 0
            } else {
                match options.overshoot {
                    Overshoot::Forgive => self.used < weight,
                    Overshoot::MustFit => self.used + blocks <= weight,
                    Overshoot::FlitModel => self.used <= weight,
                }
            };
            if allowed {
                self.used += blocks;
                return Some((entry.vl, blocks));
            }
        }
        None
    }
}

/// The arbitration tables of a run, one copy of each (a fabric has few distinct ones, and
/// ports that share one read the same memory), and the options every arbiter follows: what an
/// [`Arbiter`] reads besides its own state.
#[derive(Debug, Default)]
pub struct ArbiterTables {
    options: ArbiterOptions,
    tables: Vec<Box<[VlArbEntry]>>,
    ids: HashMap<Vec<VlArbEntry>, u32>,
}

impl ArbiterTables {
    pub fn new(options: ArbiterOptions) -> ArbiterTables {
        ArbiterTables {
            options,
            ..ArbiterTables::default()
        }
    }

    /// An arbiter over the programmed tables (as many entries as the port's caps) and
    /// PortInfo.VLHighLimit.
    pub fn arbiter(&mut self, high: &[VlArbEntry], low: &[VlArbEntry], high_limit: u8) -> Arbiter {
        let (high, low) = (self.table(high), self.table(low));
        Arbiter {
            senders: [self.senders(&high), self.senders(&low)],
            high,
            low,
            high_limit,
            high_bytes: 0,
            flits_left: Arbiter::flit_reload(high_limit),
        }
    }

    /// A place at the start of `entries`, the one copy of them.
    fn table(&mut self, entries: &[VlArbEntry]) -> Table {
        let id = match self.ids.get(entries) {
            Some(&id) => id,
            None => {
                // At most two per port of a fabric: far below 2^32.
                let id = self.tables.len() as u32;
                self.tables.push(entries.into());
                self.ids.insert(entries.to_vec(), id);
                id
            }
        };
        Table {
            id,
            cursor: 0,
            used: 0,
        }
    }

    fn entries(&self, table: &Table) -> &[VlArbEntry] {
        &self.tables[table.id as usize]
    }

    /// A bit per VL that some entry of `table` may send: below VL15 and with a weight (or
    /// weight 0 sends one packet, [`ZeroWeight::OnePacket`]).
    fn senders(&self, table: &Table) -> u16 {
        let one_packet = self.options.zero_weight == ZeroWeight::OnePacket;
        self.entries(table)
            .iter()
            .filter(|e| e.vl < 15 && (e.weight > 0 || one_packet))
            .fold(0u16, |mask, e| mask | 1 << e.vl)
    }
}

/// The IBA 7.6.9 arbiter of one output port over its data VLs: where it is in its tables and
/// the high limit's count, 40 bytes (the tables and options are an [`ArbiterTables`]'s, one
/// copy for every port that holds them).
#[derive(Debug, Clone, Copy)]
pub struct Arbiter {
    high: Table,
    low: Table,
    /// [`ArbiterTables::senders`] of `high` and `low`.
    senders: [u16; 2],
    high_limit: u8,
    /// [`HighLimitMode::Spec`]: high-priority bytes since the low table's last opportunity.
    high_bytes: u32,
    /// [`HighLimitMode::FlitModel`]: the flit counter. It saturates: below 0 it never reloads,
    /// however far below, so only whether it is 0 or below matters there.
    flits_left: i32,
}

const _: () = assert!(std::mem::size_of::<Arbiter>() == 40);

impl Arbiter {
    fn flit_reload(high_limit: u8) -> i32 {
        i32::from(high_limit) * 4096 / BLOCK_BYTES as i32
    }

    /// Chooses the data VL that sends next and charges its packet to the tables, or `None` when
    /// no entry of either table may send. `ready(vl)` is the head packet's size in blocks when
    /// VL `vl` has a packet and the receiver has credits for all of it, else `None`.
    pub fn next(
        &mut self,
        tables: &ArbiterTables,
        ready: impl Fn(u8) -> Option<u32>,
    ) -> Option<(u8, Priority)> {
        self.next_among(tables, u16::MAX, ready)
    }

    /// [`Self::next`] knowing that only the VLs of bit set `ready_vls` may be ready: a table
    /// none of whose entries is among them is passed over without a scan.
    pub fn next_among(
        &mut self,
        tables: &ArbiterTables,
        ready_vls: u16,
        ready: impl Fn(u8) -> Option<u32>,
    ) -> Option<(u8, Priority)> {
        let options = &tables.options;
        let low_first = match options.high_limit {
            HighLimitMode::Spec => {
                self.high_limit != 255
                    && self.high_bytes > 0
                    && self.high_bytes >= u32::from(self.high_limit) * 4096
            }
            HighLimitMode::FlitModel => self.flits_left <= 0,
        };
        let order = if low_first {
            [Priority::Low, Priority::High]
        } else {
            [Priority::High, Priority::Low]
        };
        for priority in order {
            let (table, senders) = match priority {
                Priority::High => (&mut self.high, self.senders[0]),
                Priority::Low => (&mut self.low, self.senders[1]),
            };
            let picked = if senders & ready_vls == 0 {
                // What a scan ends with when no entry sends: every entry visited, the cursor
                // back where it started, a fresh weight. (A table with an entry that may send
                // has entries to scan.)
                table.used = 0;
                None
            } else {
                table.pick(tables.entries(table), options, ready_vls, &ready)
            };
            match picked {
                Some((vl, blocks)) => {
                    self.charge(options.high_limit, priority, blocks);
                    return Some((vl, priority));
                }
                // The low table had its opportunity and nothing to send: the count of high
                // bytes starts again (the flit model has no such event).
                None if priority == Priority::Low
                    && low_first
                    && options.high_limit == HighLimitMode::Spec =>
                {
                    self.high_bytes = 0;
                }
                None => {}
            }
        }
        None
    }

    fn charge(&mut self, mode: HighLimitMode, priority: Priority, blocks: u32) {
        match (mode, priority) {
            (HighLimitMode::Spec, Priority::High) => self.high_bytes += blocks * BLOCK_BYTES,
            // A low packet sent (whether the limit was reached or the high table was idle) is
            // the low table's opportunity: the count starts again.
            (HighLimitMode::Spec, Priority::Low) => self.high_bytes = 0,
            (HighLimitMode::FlitModel, Priority::High) => {
                let flits = i32::try_from(blocks.saturating_sub(1)).unwrap_or(i32::MAX);
                self.flits_left = self.flits_left.saturating_sub(flits);
            }
            (HighLimitMode::FlitModel, Priority::Low) => {
                if self.flits_left == 0 {
                    self.flits_left = Self::flit_reload(self.high_limit);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(u8, u8)]) -> Vec<VlArbEntry> {
        list.iter().map(|&(vl, w)| VlArbEntry::new(vl, w)).collect()
    }

    /// An arbiter and tables of its own.
    struct Standalone {
        tables: ArbiterTables,
        arbiter: Arbiter,
    }

    impl Standalone {
        fn new(
            high: &[VlArbEntry],
            low: &[VlArbEntry],
            limit: u8,
            options: ArbiterOptions,
        ) -> Standalone {
            let mut tables = ArbiterTables::new(options);
            let arbiter = tables.arbiter(high, low, limit);
            Standalone { tables, arbiter }
        }

        fn next(&mut self, ready: impl Fn(u8) -> Option<u32>) -> Option<(u8, Priority)> {
            self.arbiter.next(&self.tables, ready)
        }

        fn next_among(
            &mut self,
            ready_vls: u16,
            ready: impl Fn(u8) -> Option<u32>,
        ) -> Option<(u8, Priority)> {
            self.arbiter.next_among(&self.tables, ready_vls, ready)
        }
    }

    /// Runs `n` grants with every VL in `saturated` always ready with `blocks`-block packets.
    fn grants(arbiter: &mut Standalone, saturated: &[u8], blocks: u32, n: usize) -> Vec<u8> {
        (0..n)
            .map_while(|_| {
                arbiter
                    .next(|vl| saturated.contains(&vl).then_some(blocks))
                    .map(|(vl, _)| vl)
            })
            .collect()
    }

    struct Case {
        name: &'static str,
        high: &'static [(u8, u8)],
        low: &'static [(u8, u8)],
        limit: u8,
        options: ArbiterOptions,
        saturated: &'static [u8],
        blocks: u32,
        /// The first grants, worked out by hand from the rules.
        expected: &'static [u8],
    }

    const SPEC: ArbiterOptions = ArbiterOptions {
        overshoot: Overshoot::Forgive,
        zero_weight: ZeroWeight::Skip,
        high_limit: HighLimitMode::Spec,
    };

    fn with(overshoot: Overshoot, zero: ZeroWeight, high: HighLimitMode) -> ArbiterOptions {
        ArbiterOptions {
            overshoot,
            zero_weight: zero,
            high_limit: high,
        }
    }

    #[test]
    fn arbiter_cases() {
        let cases = [
            Case {
                // Weights 2 and 6 blocks, 1-block packets: 2 from VL0, 6 from VL1, repeat.
                name: "weights in blocks",
                high: &[],
                low: &[(0, 2), (1, 6)],
                limit: 0,
                options: SPEC,
                saturated: &[0, 1],
                blocks: 1,
                expected: &[0, 0, 1, 1, 1, 1, 1, 1, 0, 0],
            },
            Case {
                // Weight 64, 65-block packets: the overshoot is forgiven, one packet per turn.
                name: "forgive: weight below one packet still sends one",
                high: &[],
                low: &[(0, 64), (1, 128)],
                limit: 0,
                options: SPEC,
                saturated: &[0, 1],
                blocks: 65,
                expected: &[0, 1, 1, 0, 1, 1],
            },
            Case {
                // Must fit: VL0's entry (64) can never carry a 65-block packet; VL1's 130 can
                // carry two.
                name: "must-fit starves an entry below one packet",
                high: &[],
                low: &[(0, 64), (1, 130)],
                limit: 0,
                options: with(Overshoot::MustFit, ZeroWeight::Skip, HighLimitMode::Spec),
                saturated: &[0, 1],
                blocks: 65,
                expected: &[1, 1, 1, 1, 1, 1],
            },
            Case {
                // Flit model: used 0, 65, 130 <= 130, so three packets from VL1 per turn.
                name: "flit model sends while used <= weight",
                high: &[],
                low: &[(0, 64), (1, 130)],
                limit: 0,
                options: with(Overshoot::FlitModel, ZeroWeight::Skip, HighLimitMode::Spec),
                saturated: &[0, 1],
                blocks: 65,
                expected: &[0, 1, 1, 1, 0, 1, 1, 1],
            },
            Case {
                name: "weight 0 is skipped",
                high: &[],
                low: &[(0, 0), (1, 4)],
                limit: 0,
                options: SPEC,
                saturated: &[0, 1],
                blocks: 1,
                expected: &[1, 1, 1, 1, 1, 1],
            },
            Case {
                name: "weight 0 sends one packet when configured to",
                high: &[],
                low: &[(0, 0), (1, 2)],
                limit: 0,
                options: with(
                    Overshoot::Forgive,
                    ZeroWeight::OnePacket,
                    HighLimitMode::Spec,
                ),
                saturated: &[0, 1],
                blocks: 1,
                expected: &[0, 1, 1, 0, 1, 1],
            },
            Case {
                // An empty VL's entry is skipped; the table is work-conserving.
                name: "empty VL skipped",
                high: &[],
                low: &[(0, 4), (1, 4), (2, 4)],
                limit: 0,
                options: SPEC,
                saturated: &[2],
                blocks: 1,
                expected: &[2, 2, 2, 2, 2, 2],
            },
            Case {
                // High limit 0: one high packet, then the low table's packet, alternating.
                name: "high limit 0 alternates",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 0,
                options: SPEC,
                saturated: &[0, 1],
                blocks: 65,
                expected: &[0, 1, 0, 1, 0, 1],
            },
            Case {
                // Limit 2 = 8192 B; 4160-B packets: 0 < 8192, 4160 < 8192, 8320 reached, so two
                // high packets then one low.
                name: "high limit 2 bounds the burst",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 2,
                options: SPEC,
                saturated: &[0, 1],
                blocks: 65,
                expected: &[0, 0, 1, 0, 0, 1],
            },
            Case {
                name: "high limit 255 starves the low table",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 255,
                options: SPEC,
                saturated: &[0, 1],
                blocks: 65,
                expected: &[0, 0, 0, 0, 0, 0, 0, 0],
            },
            Case {
                // The high table idle: low is served (work-conserving).
                name: "low served when high is idle",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 255,
                options: SPEC,
                saturated: &[1],
                blocks: 65,
                expected: &[1, 1, 1],
            },
            Case {
                // Flit model, limit 0: the counter starts at 0, so low first for ever.
                name: "flit model: high limit 0 means low first",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 0,
                options: with(
                    Overshoot::Forgive,
                    ZeroWeight::Skip,
                    HighLimitMode::FlitModel,
                ),
                saturated: &[0, 1],
                blocks: 65,
                expected: &[1, 1, 1, 1, 1, 1],
            },
            Case {
                // Flit model, limit 1 = 64 flits; each 65-block high packet takes 64: one high
                // packet brings it to 0, a low packet reloads it.
                name: "flit model: limit 1 alternates",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 1,
                options: with(
                    Overshoot::Forgive,
                    ZeroWeight::Skip,
                    HighLimitMode::FlitModel,
                ),
                saturated: &[0, 1],
                blocks: 65,
                expected: &[0, 1, 0, 1, 0, 1],
            },
            Case {
                // Flit model, limit 1 with 66-block packets: the counter goes to -1 and never
                // reloads, so high is served only when low is idle (here: never).
                name: "flit model: overshoot below 0 never reloads",
                high: &[(0, 255)],
                low: &[(1, 255)],
                limit: 1,
                options: with(
                    Overshoot::Forgive,
                    ZeroWeight::Skip,
                    HighLimitMode::FlitModel,
                ),
                saturated: &[0, 1],
                blocks: 66,
                expected: &[0, 1, 1, 1, 1, 1],
            },
            Case {
                name: "VL15 entries are skipped",
                high: &[],
                low: &[(15, 8), (3, 8)],
                limit: 0,
                options: SPEC,
                saturated: &[3, 15],
                blocks: 1,
                expected: &[3, 3, 3],
            },
        ];
        for case in cases {
            let mut arbiter = Standalone::new(
                &entries(case.high),
                &entries(case.low),
                case.limit,
                case.options,
            );
            let got = grants(
                &mut arbiter,
                case.saturated,
                case.blocks,
                case.expected.len(),
            );
            assert_eq!(got, case.expected, "{}", case.name);
        }
    }

    #[test]
    fn nothing_ready_grants_nothing() {
        let mut arbiter = Standalone::new(&entries(&[(0, 4)]), &entries(&[(1, 4)]), 0, SPEC);
        assert_eq!(arbiter.next(|_| None), None);
        let mut empty = Standalone::new(&[], &[], 0, SPEC);
        assert_eq!(empty.next(|_| Some(1)), None);
    }

    /// A VL without credits is skipped like an empty one, and its turn resumes when they come.
    #[test]
    fn creditless_vl_skipped() {
        let mut arbiter = Standalone::new(&[], &entries(&[(0, 4), (1, 4)]), 0, SPEC);
        let got: Vec<_> = (0..3)
            .map(|_| arbiter.next(|vl| (vl == 1).then_some(1)).map(|g| g.0))
            .collect();
        assert_eq!(got, vec![Some(1), Some(1), Some(1)]);
    }

    /// When the limit is reached and the low table has nothing, the opportunity passes and the
    /// count restarts.
    #[test]
    fn low_passed_restarts_the_count() {
        let mut arbiter = Standalone::new(&entries(&[(0, 255)]), &entries(&[(1, 255)]), 0, SPEC);
        assert_eq!(
            arbiter.next(|vl| (vl == 0).then_some(65)),
            Some((0, Priority::High))
        );
        // Limit reached; low has nothing, so the count restarts and high sends again.
        assert_eq!(
            arbiter.next(|vl| (vl == 0).then_some(65)),
            Some((0, Priority::High))
        );
        assert_eq!(arbiter.arbiter.high_bytes, 65 * 64);
        // Now low has a packet and gets its opportunity.
        assert_eq!(arbiter.next(|_| Some(65)), Some((1, Priority::Low)));
    }

    proptest::proptest! {
        /// Telling the arbiter which VLs may be ready changes none of its grants: the same
        /// tables, options and readiness give the same sequence with and without the mask.
        #[test]
        fn the_ready_mask_changes_no_grant(
            high in proptest::collection::vec((0u8..16, 0u8..4), 0..6),
            low in proptest::collection::vec((0u8..16, 0u8..4), 0..6),
            limit in 0u8..3,
            option in 0usize..8,
            rounds in proptest::collection::vec((proptest::prelude::any::<u16>(), 1u32..4), 1..40),
        ) {
            let options = with(
                [Overshoot::Forgive, Overshoot::MustFit][option & 1],
                [ZeroWeight::Skip, ZeroWeight::OnePacket][option >> 1 & 1],
                [HighLimitMode::Spec, HighLimitMode::FlitModel][option >> 2 & 1],
            );
            let (high, low) = (entries(&high[..]), entries(&low[..]));
            let mut plain = Standalone::new(&high, &low, limit, options);
            let mut masked = Standalone::new(&high, &low, limit, options);
            for (ready, blocks) in rounds {
                let is_ready = |vl: u8| (ready & 1 << vl != 0).then_some(blocks);
                proptest::prop_assert_eq!(plain.next(is_ready), masked.next_among(ready, is_ready));
            }
        }
    }
}
