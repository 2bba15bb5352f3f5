//! What an output port's VL arbitration promises: the share of the data it transmits that each
//! data VL should get over a window, given what each VL offered (IBA 7.6.9).
//!
//! The model, and what it assumes:
//! - Only the share of the data VLs (0-14) is judged; VL15 outranks them and is left out.
//! - A VL that was not backlogged (it did not have more to send than it sent: see
//!   [`backlogged`]) was not held back, so it keeps what it sent. The rest of the window's data went to
//!   the backlogged VLs, shared as the tables say: water-filling.
//! - Backlogged VLs stay backlogged for the whole window (a VL that was backlogged for half of
//!   it is judged as if it were all along).
//! - Within a table, the backlogged VLs share by their entries' weights. An entry may start a
//!   packet while it has weight left, so an entry of weight `w` blocks serves `ceil(w / p)`
//!   packets of `p` blocks per turn (the simulator's default arbiter, `Overshoot::Forgive`).
//!   Without packet counts, the weights alone (a fluid of 64-byte units) decide.
//! - When both tables have backlogged VLs, the window is a run of cycles: the high table sends
//!   packets up to VLHighLimit x 4096 bytes (at least one), then the low table one packet. A
//!   limit of 255 starves the low table. The packets of VLs that were not backlogged take their
//!   place in these cycles (a VL with entries in both tables counts as high); the backlogged
//!   VLs have the rest. Packet sizes are each VL's mean, 4096 bytes when packets were not
//!   counted.
//! - Credits never run out downstream: a VL whose receiver holds it back is backlogged too, and
//!   the model cannot tell it from one that lost arbitration.
//!
//! Against the simulator's arbiter (sim/tests/arbiter_promise.rs), on seeded random tables
//! whose VLs each have entries in one table, the model is within 1.5 percentage points of
//! every share; [`DEFAULT_TOLERANCE_POINTS`] is 2. With VLs in both tables it can be 15 points off.
//! A VL that is not held back may still wait long behind other VLs' long turns and be judged
//! backlogged (about one in ten of those VLs there): it is then promised its weights' share.
//!
//! The SL-to-VL table is not needed here: the model works on what each VL sent. A caller that
//! measures per SL maps SLs to VLs first.

use ibqos_mad::VlArbEntry;

/// How far (in percentage points of the port's data) a measured share may be from the promise
/// and still conform, by default: the largest gap between the model and the simulator's
/// arbiter over seeded random tables (sim/tests/arbiter_promise.rs), 1.5 points, rounded up.
pub const DEFAULT_TOLERANCE_POINTS: u8 = 2;

/// The part of the time a port spent sending other VLs' data that a VL must have waited to
/// count as backlogged.
const BACKLOG_WAIT: f64 = 0.9;

/// The data VLs a port arbitrates among.
pub const DATA_VLS: usize = 15;

/// Bytes in one unit of a VLArb weight (a 64-byte credit block).
const WEIGHT_UNIT_BYTES: f64 = 64.0;

/// Bytes of high-priority data per unit of VLHighLimit.
const HIGH_LIMIT_UNIT_BYTES: f64 = 4096.0;

/// The packet size taken when packets were not counted.
const FLUID_PACKET_BYTES: f64 = 4096.0;

/// VLHighLimit's value that never lets the low table in while the high table has data.
const UNBOUNDED_HIGH_LIMIT: u8 = 255;

/// The arbitration an output port runs: its two VLArb tables (the entries it uses) and its
/// VLHighLimit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arbitration<'a> {
    pub high: &'a [VlArbEntry],
    pub low: &'a [VlArbEntry],
    pub high_limit: u8,
}

/// What one data VL did at an output port over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LaneOffer {
    /// Data sent, in bytes (any unit will do, the same for every VL).
    pub bytes: f64,
    /// Packets sent; 0 when unknown, and the weights are then taken as a fluid.
    pub packets: f64,
    /// The VL had more to send than it sent.
    pub backlogged: bool,
}

impl LaneOffer {
    /// The mean packet's size in whole 64-byte blocks, when packets were counted.
    fn packet_blocks(&self) -> Option<f64> {
        (self.packets > 0.0 && self.bytes > 0.0).then(|| {
            (self.bytes / self.packets / WEIGHT_UNIT_BYTES)
                .ceil()
                .max(1.0)
        })
    }

    /// The mean packet's size in bytes, when packets were counted.
    fn packet_bytes(&self) -> Option<f64> {
        (self.packets > 0.0 && self.bytes > 0.0).then(|| self.bytes / self.packets)
    }

    /// Packets sent; without a count, as many as packets of [`FLUID_PACKET_BYTES`].
    fn packet_count(&self) -> f64 {
        if self.packets > 0.0 {
            self.packets
        } else {
            self.bytes / FLUID_PACKET_BYTES
        }
    }
}

/// Whether a VL was backlogged over a window: its XmitWait grew by at least 90% of the time the
/// port spent sending other VLs' data. A VL that had more to send than it got waits whenever
/// another VL sends; one that is merely busy waits now and then, behind a packet or two.
/// `wait_ticks` is in ticks of one 64-byte block's time on the link (as the emulated fabric
/// counts), `own_blocks` and `port_blocks` the VL's and the port's data in 64-byte blocks.
pub fn backlogged(wait_ticks: f64, own_blocks: f64, port_blocks: f64) -> bool {
    wait_ticks > 0.0 && wait_ticks >= BACKLOG_WAIT * (port_blocks - own_blocks)
}

/// The share (0 to 1) of the window's data VL by VL that `arbitration` promises to the traffic
/// `offered`, or `None` when the port sent no data on a data VL.
pub fn promised_shares(
    arbitration: &Arbitration<'_>,
    offered: &[LaneOffer; DATA_VLS],
) -> Option<[f64; DATA_VLS]> {
    let total: f64 = offered.iter().map(|lane| lane.bytes).sum();
    if total <= 0.0 {
        return None;
    }
    let mut shares = [0.0; DATA_VLS];
    let high_vls = served_vls(arbitration.high);
    // What the VLs that were not backlogged sent through each table: [high, low].
    let mut kept = [Sent::default(); 2];
    for (vl, lane) in offered.iter().enumerate() {
        if !lane.backlogged {
            shares[vl] = lane.bytes / total;
            let table = &mut kept[usize::from(high_vls & 1 << vl == 0)];
            table.bytes += lane.bytes;
            table.packets += lane.packet_count();
        }
    }
    let turns = [
        turn(arbitration.high, offered),
        turn(arbitration.low, offered),
    ];
    let left = (total - kept[0].bytes - kept[1].bytes).max(0.0);
    let parts = match (turns[0].bytes > 0.0, turns[1].bytes > 0.0) {
        (true, true) => split(arbitration.high_limit, &turns, &kept, left),
        (true, false) => [left, 0.0],
        (false, _) => [0.0, left],
    };
    let sum = parts[0] + parts[1];
    for (part, table_turn) in parts.iter().zip(&turns) {
        if sum <= 0.0 || table_turn.bytes <= 0.0 {
            continue;
        }
        let table_bytes = left * part / sum;
        for (share, vl_bytes) in shares.iter_mut().zip(&table_turn.per_vl) {
            *share += table_bytes * vl_bytes / table_turn.bytes / total;
        }
    }
    Some(shares)
}

/// A bit per VL that some entry of `entries` serves: a data VL with a weight.
fn served_vls(entries: &[VlArbEntry]) -> u16 {
    entries
        .iter()
        .filter(|entry| usize::from(entry.vl) < DATA_VLS && entry.weight > 0)
        .fold(0, |mask, entry| mask | 1 << entry.vl)
}

/// Data and packets sent.
#[derive(Debug, Clone, Copy, Default)]
struct Sent {
    bytes: f64,
    packets: f64,
}

/// One pass of a table over its backlogged VLs: the bytes each sends, and its packets in order.
#[derive(Debug, Default)]
struct Turn {
    per_vl: [f64; DATA_VLS],
    bytes: f64,
    /// Each packet's bytes and whole 64-byte blocks, in the order the table sends them.
    packets: Vec<(f64, f64)>,
}

fn turn(entries: &[VlArbEntry], offered: &[LaneOffer; DATA_VLS]) -> Turn {
    let mut turn = Turn::default();
    for entry in entries {
        let vl = usize::from(entry.vl);
        let Some(lane) = offered.get(vl).filter(|lane| lane.backlogged) else {
            continue;
        };
        if entry.weight == 0 {
            continue;
        }
        let weight = f64::from(entry.weight);
        // Without packet counts, the entry's weight is one packet.
        let (count, size, blocks) = match (lane.packet_blocks(), lane.packet_bytes()) {
            (Some(blocks), Some(size)) => ((weight / blocks).ceil(), size, blocks),
            _ => (1.0, weight * WEIGHT_UNIT_BYTES, weight),
        };
        turn.per_vl[vl] += count * size;
        turn.bytes += count * size;
        // At most 255 packets an entry (weight 255, one-block packets).
        turn.packets
            .extend(std::iter::repeat_n((size, blocks), count as usize));
    }
    turn
}

/// Packets of the high table walked through to find its run between two low packets.
const HIGH_RUN_WALK: usize = 4096;

/// The bytes the backlogged VLs of each table send, `[high, low]`, when both tables have some:
/// the window is a run of cycles, each the high table's packets up to the high limit and then
/// one packet of the low table (whoever sends it, backlogged or not). The packets of VLs that
/// were not backlogged take the place of backlogged ones in their table.
fn split(high_limit: u8, turns: &[Turn; 2], kept: &[Sent; 2], left: f64) -> [f64; 2] {
    if high_limit == UNBOUNDED_HIGH_LIMIT {
        return [left, 0.0];
    }
    // The high table starts packets while it sent less than the limit since the low table's
    // last packet (counted in whole blocks), and always at least one: walk its turns.
    let limit = f64::from(high_limit) * HIGH_LIMIT_UNIT_BYTES;
    let (mut high_bytes, mut cycles, mut run) = (0.0, 0.0f64, 0.0);
    let walk = HIGH_RUN_WALK.max(turns[0].packets.len());
    for &(bytes, blocks) in turns[0].packets.iter().cycle().take(walk) {
        high_bytes += bytes;
        run += blocks * WEIGHT_UNIT_BYTES;
        if run >= limit {
            cycles += 1.0;
            run = 0.0;
        }
    }
    // The high bytes of one cycle, and the low table's packet.
    let high_run = high_bytes / cycles.max(1.0);
    let low_packet = turns[1].bytes / turns[1].packets.len() as f64;
    // The cycles the kept high packets end: a kept packet ends one when it alone makes the
    // limit, and its part of one otherwise.
    let kept_high = &kept[0];
    let kept_cycles = if kept_high.packets > 0.0 {
        let blocks = (kept_high.bytes / kept_high.packets / WEIGHT_UNIT_BYTES).ceil();
        let part = if limit > 0.0 {
            (blocks * WEIGHT_UNIT_BYTES / limit).min(1.0)
        } else {
            1.0
        };
        kept_high.packets * part
    } else {
        0.0
    };
    // Cycles such that the packets of both tables, the kept ones among them, make the window.
    let cycles =
        (left + kept_cycles * high_run + kept[1].packets * low_packet) / (high_run + low_packet);
    [
        (cycles - kept_cycles).max(0.0) * high_run,
        (cycles - kept[1].packets).max(0.0) * low_packet,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(list: &[(u8, u8)]) -> Vec<VlArbEntry> {
        list.iter().map(|&(vl, w)| VlArbEntry::new(vl, w)).collect()
    }

    /// Offers: (vl, bytes, packets, backlogged).
    fn offers(list: &[(usize, f64, f64, bool)]) -> [LaneOffer; DATA_VLS] {
        let mut offered = [LaneOffer::default(); DATA_VLS];
        for &(vl, bytes, packets, backlogged) in list {
            offered[vl] = LaneOffer {
                bytes,
                packets,
                backlogged,
            };
        }
        offered
    }

    fn shares(
        high: &[(u8, u8)],
        low: &[(u8, u8)],
        limit: u8,
        offered: &[(usize, f64, f64, bool)],
    ) -> Vec<f64> {
        let (high, low) = (entries(high), entries(low));
        let arbitration = Arbitration {
            high: &high,
            low: &low,
            high_limit: limit,
        };
        promised_shares(&arbitration, &offers(offered))
            .unwrap()
            .iter()
            .map(|share| (share * 1e6).round() / 1e6)
            .collect()
    }

    fn close(actual: &[f64], expected: &[(usize, f64)]) {
        let mut want = [0.0; DATA_VLS];
        for &(vl, share) in expected {
            want[vl] = share;
        }
        for (vl, (a, w)) in actual.iter().zip(want).enumerate() {
            assert!(
                (a - w).abs() < 1e-6,
                "VL {vl}: {a} against {w}, all {actual:?}"
            );
        }
    }

    #[test]
    fn saturated_low_vls_share_by_weight() {
        // Weights 3:1 in 64-byte units, fluid: VL 0 gets 3/4.
        let got = shares(
            &[],
            &[(0, 3), (1, 1)],
            0,
            &[(0, 10.0, 0.0, true), (1, 10.0, 0.0, true)],
        );
        close(&got, &[(0, 0.75), (1, 0.25)]);
    }

    #[test]
    fn an_entry_serves_whole_packets() {
        // 2048-byte packets are 32 blocks. Weight 64 serves two, weight 16 one: 2:1, not 4:1.
        let got = shares(
            &[],
            &[(0, 64), (1, 16)],
            0,
            &[(0, 2048.0 * 8.0, 8.0, true), (1, 2048.0 * 8.0, 8.0, true)],
        );
        close(&got, &[(0, 2.0 / 3.0), (1, 1.0 / 3.0)]);
    }

    #[test]
    fn a_vl_that_was_not_backlogged_keeps_what_it_sent() {
        // VL 2 sent 10% and never waited; VLs 0 and 1 share the other 90% 1:2.
        let got = shares(
            &[],
            &[(0, 1), (1, 2), (2, 8)],
            0,
            &[
                (0, 45.0, 0.0, true),
                (1, 45.0, 0.0, true),
                (2, 10.0, 0.0, false),
            ],
        );
        close(&got, &[(0, 0.3), (1, 0.6), (2, 0.1)]);
    }

    #[test]
    fn the_high_limit_lets_one_low_packet_through() {
        // Limit 1: 4096 high bytes (two 2048-byte packets), then one 2048-byte low packet.
        let offered = [(0, 2048.0, 1.0, true), (1, 2048.0, 1.0, true)];
        let got = shares(&[(0, 32)], &[(1, 32)], 1, &offered);
        close(&got, &[(0, 2.0 / 3.0), (1, 1.0 / 3.0)]);
        // Limit 0: one high packet, then one low packet.
        let got = shares(&[(0, 32)], &[(1, 32)], 0, &offered);
        close(&got, &[(0, 0.5), (1, 0.5)]);
        // Limit 255: the low table starves.
        let got = shares(&[(0, 32)], &[(1, 32)], 255, &offered);
        close(&got, &[(0, 1.0), (1, 0.0)]);
    }

    #[test]
    fn the_high_table_keeps_the_link_when_the_low_one_is_idle() {
        // VL 1 (low) sent a little without waiting: the high VL takes the rest whatever the limit.
        let got = shares(
            &[(0, 32)],
            &[(1, 32)],
            0,
            &[(0, 80.0, 0.0, true), (1, 20.0, 0.0, false)],
        );
        close(&got, &[(0, 0.8), (1, 0.2)]);
    }

    #[test]
    fn a_backlogged_vl_without_an_entry_is_promised_nothing() {
        let got = shares(
            &[],
            &[(0, 1)],
            0,
            &[(0, 50.0, 0.0, true), (3, 50.0, 0.0, true)],
        );
        close(&got, &[(0, 1.0), (3, 0.0)]);
    }

    #[test]
    fn weight_zero_entries_and_vl15_are_skipped() {
        let got = shares(
            &[],
            &[(0, 0), (15, 9), (0, 1), (1, 1)],
            0,
            &[(0, 1.0, 0.0, true), (1, 1.0, 0.0, true)],
        );
        close(&got, &[(0, 0.5), (1, 0.5)]);
    }

    #[test]
    fn a_vl_is_backlogged_when_it_waits_while_others_send() {
        // The port sent 1000 blocks, 200 of them on this VL.
        assert!(backlogged(720.0, 200.0, 1000.0));
        assert!(!backlogged(719.0, 200.0, 1000.0));
        // Alone on the port, any wait is for credits.
        assert!(backlogged(1.0, 50.0, 50.0));
        assert!(!backlogged(0.0, 50.0, 50.0));
    }

    #[test]
    fn no_data_promises_nothing() {
        let arbitration = Arbitration {
            high: &[],
            low: &[],
            high_limit: 0,
        };
        assert_eq!(promised_shares(&arbitration, &offers(&[])), None);
    }
}
