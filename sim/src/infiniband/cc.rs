//! InfiniBand congestion control (IBA annex A10), as a simulator needs it: the switch port's
//! FECN marking ([`Marker`]) and the source's reaction to BECN ([`ReactionPoint`]).
//!
//! The settings, [`CcConfig`], take OpenSM's option names (`cc_sw_cong_setting_*`,
//! `cc_ca_cong_setting_*`, `cc_cct`) and their units, so that a site's opensm.conf values can be
//! tried here before they are turned on. Where the annex leaves a point to the vendor, the choice
//! made here:
//! - **Threshold.** A port's VL queue is congested while it holds more than
//!   `capacity x (16 - Threshold) / 16` blocks, `capacity` being the VL buffer of the link in
//!   blocks: Threshold 15 marks above 1/16 of a buffer, 1 above 15/16; 0 never marks.
//! - **Root or victim.** A congested queue whose head packet has its credits is the root of the
//!   congestion (it is the bottleneck); one whose head waits for credits is a victim, and
//!   marks only where its port's `Victim_Mask` bit is set.
//! - **Marking rate.** `Marking_Rate` eligible packets pass unmarked between two marked ones
//!   (the annex's mean, made deterministic): 0 marks every eligible packet.
//! - **Timer.** `CCTI_Timer` 0 never lowers the index (the annex gives 0 no meaning).
//! - **Index limit.** `CCTI_Limit` is the last entry of `cc_cct`, as OpenSM derives it.

use serde::Deserialize;

use crate::infiniband::link::PS_PER_NS;

/// Service levels a CA setting has an entry for.
pub const SLS: usize = 16;

/// Entries `cc_cct` may have: the two blocks of 64 that OpenSM sends at most.
pub const CCT_MAX_ENTRIES: usize = 128;

/// The congestion control settings of a run, under OpenSM's option names. Absent keys are 0 (as
/// in OpenSM), but for `cc_cct`, which is required: without a table no source ever slows.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CcConfig {
    /// 0 never marks; 1 (loose) to 15 (aggressive), see the module docs.
    #[serde(default)]
    pub cc_sw_cong_setting_threshold: u8,
    /// Eligible packets left unmarked between two marked ones.
    #[serde(default)]
    pub cc_sw_cong_setting_marking_rate: u16,
    /// Packets shorter than this many 64-byte credits are never marked.
    #[serde(default)]
    pub cc_sw_cong_setting_packet_size: u8,
    /// Ports whose queues mark also as victims: a hex number up to 256 bits, bit n for port n,
    /// as OpenSM reads it.
    #[serde(default)]
    pub cc_sw_cong_setting_victim_mask: Option<String>,
    /// Bit 0 set: one reaction point per source port and SL; clear: one per flow (a QP).
    #[serde(default)]
    pub cc_ca_cong_setting_port_control: u16,
    /// Bit n set: SL n is controlled; the sources of the others never slow.
    #[serde(default)]
    pub cc_ca_cong_setting_control_map: u16,
    /// By SL, in 1.024 us units.
    #[serde(default)]
    pub cc_ca_cong_setting_ccti_timer: Vec<u16>,
    /// By SL.
    #[serde(default)]
    pub cc_ca_cong_setting_ccti_increase: Vec<u8>,
    /// By SL.
    #[serde(default)]
    pub cc_ca_cong_setting_ccti_min: Vec<u8>,
    /// The congestion control table, `"shift:multiplier,..."` as OpenSM reads it: entry k is
    /// the inter-packet delay at index k.
    pub cc_cct: String,
}

/// A congestion control setting that cannot be used, named by its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CcConfigError {
    #[error("{key} = {value} is out of range: {allowed}")]
    OutOfRange {
        key: &'static str,
        value: u64,
        allowed: &'static str,
    },
    #[error("{key} has {given} values: give at most one per SL (16)")]
    TooManySls { key: &'static str, given: usize },
    #[error("cc_sw_cong_setting_victim_mask = {0:?} is not a hex number of at most 256 bits")]
    VictimMask(String),
    #[error(
        "cc_cct entry {index} ({entry:?}) is not shift:multiplier with shift 0-3 and \
         multiplier 0-16383"
    )]
    CctEntry { index: usize, entry: String },
    #[error("cc_cct has {0} entries: give 1 to 128 (OpenSM sends two blocks of 64 at most)")]
    CctLength(usize),
    #[error(
        "cc_ca_cong_setting_ccti_min of SL {sl} is {min}, past the table's last index \
         {limit}: the index could never fall to it"
    )]
    MinPastLimit { sl: usize, min: u8, limit: usize },
}

impl CcConfigError {
    /// The key the problem is at.
    pub fn key(&self) -> &'static str {
        match self {
            CcConfigError::OutOfRange { key, .. } | CcConfigError::TooManySls { key, .. } => key,
            CcConfigError::VictimMask(_) => "cc_sw_cong_setting_victim_mask",
            CcConfigError::CctEntry { .. } | CcConfigError::CctLength(_) => "cc_cct",
            CcConfigError::MinPastLimit { .. } => "cc_ca_cong_setting_ccti_min",
        }
    }
}

/// One entry of the congestion control table: the delay between a flow's packets is its
/// packet's transmit time shifted right by `shift`, times `multiplier`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CctEntry {
    pub shift: u8,
    pub multiplier: u16,
}

impl CctEntry {
    /// The gap to leave after a packet that took `packet_ps` to send.
    pub fn delay_ps(self, packet_ps: u64) -> u64 {
        (packet_ps >> self.shift) * u64::from(self.multiplier)
    }
}

/// The settings of a validated [`CcConfig`], in the simulator's units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CcParams {
    pub threshold: u8,
    pub marking_rate: u16,
    pub packet_size_blocks: u16,
    /// Bit n of word n / 64: port n marks as a victim too.
    pub victim_mask: [u64; 4],
    pub per_sl: bool,
    pub control_map: u16,
    pub sls: [SlParams; SLS],
    pub cct: Vec<CctEntry>,
}

/// What a CA setting gives one SL's reaction points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SlParams {
    /// Between two decreases of the index; 0 never decreases it.
    pub timer_ps: u64,
    pub increase: u8,
    pub min: u8,
}

impl CcConfig {
    /// Checks every value and converts the settings.
    pub fn params(&self) -> Result<CcParams, CcConfigError> {
        let threshold = self.cc_sw_cong_setting_threshold;
        if threshold > 15 {
            return Err(CcConfigError::OutOfRange {
                key: "cc_sw_cong_setting_threshold",
                value: threshold.into(),
                allowed: "0 (never mark) to 15 (aggressive)",
            });
        }
        let victim_mask = match &self.cc_sw_cong_setting_victim_mask {
            None => [0; 4],
            Some(text) => {
                parse_mask(text).ok_or_else(|| CcConfigError::VictimMask(text.clone()))?
            }
        };
        let cct = parse_cct(&self.cc_cct)?;
        let timers = by_sl(
            "cc_ca_cong_setting_ccti_timer",
            &self.cc_ca_cong_setting_ccti_timer,
        )?;
        let increases = by_sl(
            "cc_ca_cong_setting_ccti_increase",
            &self.cc_ca_cong_setting_ccti_increase,
        )?;
        let mins = by_sl(
            "cc_ca_cong_setting_ccti_min",
            &self.cc_ca_cong_setting_ccti_min,
        )?;
        let limit = cct.len() - 1;
        let mut sls = [SlParams::default(); SLS];
        for (sl, params) in sls.iter_mut().enumerate() {
            if usize::from(mins[sl]) > limit {
                return Err(CcConfigError::MinPastLimit {
                    sl,
                    min: mins[sl],
                    limit,
                });
            }
            *params = SlParams {
                // 1.024 us = 1024 ns.
                timer_ps: u64::from(timers[sl]) * 1024 * PS_PER_NS,
                increase: increases[sl],
                min: mins[sl],
            };
        }
        Ok(CcParams {
            threshold,
            marking_rate: self.cc_sw_cong_setting_marking_rate,
            packet_size_blocks: self.cc_sw_cong_setting_packet_size.into(),
            victim_mask,
            per_sl: self.cc_ca_cong_setting_port_control & 1 == 1,
            control_map: self.cc_ca_cong_setting_control_map,
            sls,
            cct,
        })
    }
}

/// A per-SL list widened to every SL, the missing ones 0 (as OpenSM leaves them).
fn by_sl<T: Copy + Default>(key: &'static str, values: &[T]) -> Result<[T; SLS], CcConfigError> {
    if values.len() > SLS {
        return Err(CcConfigError::TooManySls {
            key,
            given: values.len(),
        });
    }
    let mut all = [T::default(); SLS];
    all[..values.len()].copy_from_slice(values);
    Ok(all)
}

/// A hex number of at most 256 bits (`0x` optional), as four words, the lowest first.
fn parse_mask(text: &str) -> Option<[u64; 4]> {
    let digits = text.trim();
    let digits = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
        .unwrap_or(digits);
    if digits.is_empty() || digits.len() > 64 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut words = [0u64; 4];
    let bytes = digits.as_bytes();
    for (word, chunk) in words.iter_mut().zip(bytes.rchunks(16)) {
        // Hex digits only, checked above: ASCII and a valid number.
        *word = u64::from_str_radix(std::str::from_utf8(chunk).ok()?, 16).ok()?;
    }
    Some(words)
}

/// `cc_cct` as OpenSM reads it: comma-separated `shift:multiplier` entries.
fn parse_cct(text: &str) -> Result<Vec<CctEntry>, CcConfigError> {
    let entries = text
        .split(',')
        .enumerate()
        .map(|(index, entry)| {
            let parsed = entry
                .trim()
                .split_once(':')
                .and_then(|(shift, multiplier)| {
                    let shift = shift.trim().parse::<u8>().ok().filter(|s| *s <= 3)?;
                    let multiplier = multiplier
                        .trim()
                        .parse::<u16>()
                        .ok()
                        .filter(|m| *m < 1 << 14)?;
                    Some(CctEntry { shift, multiplier })
                });
            parsed.ok_or_else(|| CcConfigError::CctEntry {
                index,
                entry: entry.to_owned(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if entries.len() > CCT_MAX_ENTRIES {
        return Err(CcConfigError::CctLength(entries.len()));
    }
    Ok(entries)
}

impl CcParams {
    /// The queue depth, in blocks, above which a VL queue whose link buffers `capacity` blocks
    /// is congested; `None` when nothing is ever marked.
    pub fn congested_above(&self, capacity: u32) -> Option<u32> {
        (self.threshold > 0).then(|| capacity * u32::from(16 - self.threshold) / 16)
    }

    /// The marker of a switch port's VL queue.
    pub fn marker(&self, port: u8, capacity: u32) -> Marker {
        let victim = self.victim_mask[usize::from(port / 64)] >> (port % 64) & 1 == 1;
        Marker {
            congested_above: self.congested_above(capacity),
            packet_size_blocks: self.packet_size_blocks,
            marking_rate: self.marking_rate,
            victim,
            passed: 0,
        }
    }

    /// Whether sources of `sl` react to BECN.
    pub fn controls(&self, sl: u8) -> bool {
        sl < 16 && self.control_map >> sl & 1 == 1
    }
}

/// The FECN marking of one switch output port and VL, with its count of eligible packets
/// passed unmarked since the last mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    congested_above: Option<u32>,
    packet_size_blocks: u16,
    marking_rate: u16,
    victim: bool,
    passed: u16,
}

impl Marker {
    /// Whether a packet of `blocks` leaving a queue with `queue_blocks` behind it is marked
    /// FECN; `starved` says the queue's head waits for credits (a victim queue).
    pub fn mark(&mut self, queue_blocks: u32, blocks: u16, starved: bool) -> bool {
        let congested = self
            .congested_above
            .is_some_and(|above| queue_blocks > above);
        let eligible = congested && blocks >= self.packet_size_blocks && (!starved || self.victim);
        if !eligible {
            return false;
        }
        if self.passed < self.marking_rate {
            self.passed += 1;
            return false;
        }
        self.passed = 0;
        true
    }
}

/// A source's reaction to BECN: its congestion control table index (CCTI), raised by each
/// BECN and lowered by one every timer period. The timer is kept as the time of its last
/// expiry, so nothing happens between BECNs and packets: the index is brought up to date when
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReactionPoint {
    ccti: u16,
    /// The timer's last expiry (or start); meaningful while `ccti` is above the SL's minimum.
    timer_origin_ps: u64,
}

impl ReactionPoint {
    /// The index at `now_ps`, after the timer expiries up to then.
    pub fn ccti(&mut self, sl: &SlParams, now_ps: u64) -> u16 {
        let min = u16::from(sl.min);
        if self.ccti > min && sl.timer_ps > 0 {
            let expiries = (now_ps.saturating_sub(self.timer_origin_ps)) / sl.timer_ps;
            let fall = expiries.min(u64::from(self.ccti - min));
            self.ccti -= fall as u16;
            self.timer_origin_ps += fall * sl.timer_ps;
        }
        self.ccti
    }

    /// A BECN reached the source at `now_ps`: the index rises by the SL's increase, to the
    /// table's last index at most. A timer that had stopped (the index at its minimum) starts.
    pub fn on_becn(&mut self, sl: &SlParams, limit: u16, now_ps: u64) {
        let before = self.ccti(sl, now_ps);
        if before <= u16::from(sl.min) {
            self.timer_origin_ps = now_ps;
        }
        self.ccti = (before + u16::from(sl.increase)).min(limit);
    }

    /// The gap to leave after a packet that took `packet_ps` to send, at `now_ps`.
    pub fn delay_ps(
        &mut self,
        sl: &SlParams,
        cct: &[CctEntry],
        packet_ps: u64,
        now_ps: u64,
    ) -> u64 {
        let ccti = usize::from(self.ccti(sl, now_ps));
        cct.get(ccti).map_or(0, |entry| entry.delay_ps(packet_ps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infiniband::link::PS_PER_US;

    fn config(toml_text: &str) -> Result<CcParams, CcConfigError> {
        toml::from_str::<CcConfig>(toml_text).unwrap().params()
    }

    fn sl(timer_ps: u64, increase: u8, min: u8) -> SlParams {
        SlParams {
            timer_ps,
            increase,
            min,
        }
    }

    #[test]
    fn settings_convert_in_opensm_units() {
        let params = config(
            r#"
            cc_sw_cong_setting_threshold = 15
            cc_sw_cong_setting_marking_rate = 2
            cc_sw_cong_setting_packet_size = 8
            cc_sw_cong_setting_victim_mask = "0x0000000000000000000000000000000000000000000000000000000000000106"
            cc_ca_cong_setting_port_control = 1
            cc_ca_cong_setting_control_map = 0x0003
            cc_ca_cong_setting_ccti_timer = [100, 200]
            cc_ca_cong_setting_ccti_increase = [1, 2]
            cc_ca_cong_setting_ccti_min = [0, 1]
            cc_cct = "0:0, 1:3,2:16383"
            "#,
        )
        .unwrap();
        assert_eq!(params.victim_mask, [0x106, 0, 0, 0]);
        assert!(params.per_sl);
        assert!(params.controls(1) && !params.controls(2));
        assert_eq!(params.sls[0], sl(100 * 1024 * PS_PER_NS, 1, 0));
        assert_eq!(params.sls[1], sl(200 * 1024 * PS_PER_NS, 2, 1));
        assert_eq!(params.sls[2], SlParams::default());
        assert_eq!(
            params.cct,
            [(0, 0), (1, 3), (2, 16383)].map(|(shift, multiplier)| CctEntry { shift, multiplier })
        );
        // Threshold 15: above 1/16 of a 128-block buffer.
        assert_eq!(params.congested_above(128), Some(8));
    }

    #[test]
    fn bad_settings_name_their_key() {
        let cases = [
            (
                "cc_sw_cong_setting_threshold = 16\ncc_cct = \"0:0\"",
                "cc_sw_cong_setting_threshold = 16",
            ),
            ("cc_cct = \"0:0,4:1\"", "cc_cct entry 1 (\"4:1\")"),
            ("cc_cct = \"0:16384\"", "cc_cct entry 0"),
            ("cc_cct = \"\"", "cc_cct entry 0"),
            (
                "cc_sw_cong_setting_victim_mask = \"0xg\"\ncc_cct = \"0:0\"",
                "victim_mask",
            ),
            (
                "cc_ca_cong_setting_ccti_min = [2]\ncc_cct = \"0:0,0:1\"",
                "cc_ca_cong_setting_ccti_min of SL 0 is 2, past the table's last index 1",
            ),
            (
                "cc_ca_cong_setting_ccti_increase = [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]\ncc_cct = \"0:0\"",
                "cc_ca_cong_setting_ccti_increase has 17 values",
            ),
        ];
        for (text, expected) in cases {
            let message = config(text).unwrap_err().to_string();
            assert!(message.contains(expected), "{text}: {message}");
        }
        let long = vec!["0:1"; 129].join(",");
        assert_eq!(
            config(&format!("cc_cct = \"{long}\"")),
            Err(CcConfigError::CctLength(129))
        );
    }

    fn marker(threshold: u8, marking_rate: u16, victim: bool) -> Marker {
        let params = CcParams {
            threshold,
            marking_rate,
            packet_size_blocks: 4,
            victim_mask: [u64::from(victim) << 3, 0, 0, 0],
            per_sl: false,
            control_map: 0,
            sls: [SlParams::default(); SLS],
            cct: vec![CctEntry::default()],
        };
        params.marker(3, 160)
    }

    #[test]
    fn a_root_queue_marks_above_its_threshold_packets_of_the_size() {
        // Threshold 8: congested above 160 x 8 / 16 = 80 blocks.
        let mut m = marker(8, 0, false);
        assert!(!m.mark(80, 65, false), "at the threshold, not above it");
        assert!(m.mark(81, 65, false));
        assert!(m.mark(81, 4, false), "packet_size is the least marked");
        assert!(!m.mark(81, 3, false));
        assert!(
            !marker(0, 0, false).mark(160, 65, false),
            "threshold 0 never marks"
        );
    }

    #[test]
    fn a_victim_queue_marks_only_with_its_mask_bit() {
        assert!(!marker(15, 0, false).mark(100, 65, true));
        assert!(marker(15, 0, true).mark(100, 65, true));
    }

    #[test]
    fn marking_rate_packets_pass_between_two_marks() {
        let mut m = marker(15, 2, false);
        let marks: Vec<bool> = (0..7).map(|_| m.mark(100, 65, false)).collect();
        assert_eq!(marks, [false, false, true, false, false, true, false]);
        // Ineligible packets do not count.
        let mut m = marker(15, 1, false);
        assert!(!m.mark(100, 65, false));
        assert!(!m.mark(1, 65, false));
        assert!(m.mark(100, 65, false));
    }

    #[test]
    fn becn_raises_the_index_to_the_limit_and_the_timer_lowers_it_to_the_minimum() {
        let us = PS_PER_US;
        let params = sl(10 * us, 3, 1);
        let mut rp = ReactionPoint::default();
        rp.on_becn(&params, 7, 0);
        assert_eq!(rp.ccti(&params, 0), 3);
        rp.on_becn(&params, 7, 5 * us);
        assert_eq!(rp.ccti(&params, 5 * us), 6);
        rp.on_becn(&params, 7, 6 * us);
        assert_eq!(rp.ccti(&params, 6 * us), 7, "capped at the limit");
        // The timer started at 0: expiries at 10, 20, ... us.
        assert_eq!(rp.ccti(&params, 10 * us - 1), 7);
        assert_eq!(rp.ccti(&params, 10 * us), 6);
        assert_eq!(rp.ccti(&params, 35 * us), 4);
        assert_eq!(rp.ccti(&params, 1000 * us), 1, "no lower than the minimum");
        // Stopped at the minimum, the timer restarts with the next BECN.
        rp.on_becn(&params, 7, 2000 * us);
        assert_eq!(rp.ccti(&params, 2009 * us), 4);
        assert_eq!(rp.ccti(&params, 2010 * us), 3);
        // Timer 0: the index stays.
        let mut rp = ReactionPoint::default();
        rp.on_becn(&sl(0, 2, 0), 7, 0);
        assert_eq!(rp.ccti(&sl(0, 2, 0), u64::MAX), 2);
    }

    #[test]
    fn the_delay_is_the_packet_time_shifted_times_the_multiplier() {
        let cct = [
            CctEntry::default(),
            CctEntry {
                shift: 1,
                multiplier: 3,
            },
        ];
        let params = sl(PS_PER_US, 1, 0);
        let mut rp = ReactionPoint::default();
        assert_eq!(rp.delay_ps(&params, &cct, 1001, 0), 0);
        rp.on_becn(&params, 1, 0);
        assert_eq!(rp.delay_ps(&params, &cct, 1001, 0), 500 * 3);
        assert_eq!(rp.delay_ps(&params, &cct, 1001, PS_PER_US), 0);
    }
}
