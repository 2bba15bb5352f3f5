//! The egress-port schedulers of an Ethernet switch port, after the ExtremeXOS description of
//! Enhanced Transmission Selection (IEEE 802.1Qaz). They are strict priority, weighted round
//! robin, and weighted deficit round robin in each of the three platform methods that document
//! gives. A QoS profile adds per-port minbw/maxbw and committed/peak rates, and the dot1p map
//! sends an 802.1p priority (PCP) to a QoS profile.
//!
//! # Names and numbering
//! A port has up to eight QoS profiles, QP1 to QP8. "To determine which QoS profile serves a TC
//! or PG, add the number 1 to the TC or PG number", so traffic class `tc` (0 to 7, the bit `tc`
//! of the masks below) is served by QP`tc + 1`. QP1 and QP8 always exist ("All Extreme Networks
//! DCB-capable switches are configured with qp1 and qp8 by default"); QP2 to QP7 exist when the
//! configuration creates them (a table `[qp5]` is `create qosprofile qp5`). The dot1p map sends
//! each PCP to a QoS profile; its default is ExtremeXOS's (PCP 0 to 6 to QP1, PCP 7 to QP8), and a
//! PCP may only map to a profile that exists ("You must create the QoS profile first").
//!
//! # The order of service
//! A call to [`Scheduler::next`] picks among the ready classes in three tiers:
//! 1. **minbw**: a class below its guaranteed minimum (minbw percent of the link, or its
//!    committed_rate) is served first: it has "priority over other classes (including strict
//!    priority classes) until the minbw is met". The minimum is a token bucket filled at that
//!    rate; a class is below its minimum while the bucket holds its head packet (or is full,
//!    for a packet larger than the bucket). Among several, the highest class goes first.
//! 2. **strict priority**: the highest ready strict-priority class ("packets from strict
//!    priority classes always preempt packets from ETS classes"). Under `strict-priority` (the
//!    default scheduler) every class is strict; under the weighted schedulers a profile is strict
//!    with `use-strict-priority`, or with weight 0 in the ten-KB method ("Weight 0 = Strict
//!    Priority").
//! 3. **weighted (ETS)**: the round of the configured scheduler over the other classes.
//!
//! Whatever the tier, a class above its maximum (maxbw percent of the link, or its peak_rate) is
//! not eligible: its token bucket, filled at that rate, must hold the head packet. When every ready
//! class is held back this way, `next` answers [`Grant::WaitUntil`] with the exact picosecond at
//! which the first of them will conform (the engine wakes the port then, or earlier when another
//! class becomes ready).
//!
//! Every packet a weighted class sends is charged to its weighted credit, in whichever tier it
//! was sent. So a minbw is a guarantee, not an addition. A class whose weighted share is above its
//! minbw gets its weighted share; one whose share is below gets its minbw. The seed's example
//! reports this: weights 1 and 2 give 33% and 67%, and "with the addition of this minimum
//! bandwidth configuration" (minbw 40 on the weight-1 class) "the reported bandwidth would change
//! to 40% for class 0 (qp1) and 60% for class 4 (qp5)". The price is memory: the bytes a class sent under
//! its minimum beyond its weighted share are owed to the weighted round, and that class is served
//! in the weighted tier only once they are repaid. The power-of-two-K method is the exception
//! its own rule makes. K is chosen to make every counter positive, so each replenishment wipes
//! such a debt, and a class held up by its minbw also keeps part of its weighted share. In the
//! seed's example with 1500-byte packets the tests measure 46.8% rather than 40%: still at least
//! its minbw.
//!
//! # The weighted schedulers
//! All follow the seed's three steps:
//! 1. set the credit counters;
//! 2. serve the classes in round-robin order, each "until it is either empty or its credit
//!    counter is negative" (the class at the cursor is served again while it has credit, then
//!    the cursor moves on);
//! 3. "when all queues are either empty or their credit counter is less than 0, replenish".
//!
//! Here "empty" is "not eligible now": not ready (the engine leaves out a PFC-paused class) or
//! held back by its maximum. A replenishment that still leaves every eligible class below its
//! threshold is repeated at once (steps two and three repeat), computed in one step. After a
//! replenishment the round goes on from the class after the one served last.
//!
//! - **Weighted round robin** ([`QosScheduler::WeightedRoundRobin`]): "packet based": the credit
//!   counts packets, `weight` per round, and a class is served while its count is above 0, so
//!   weights 1 and 2 send "two TC/PG 4 packets ... for each single TC/PG 0 packet". Weights 1 to
//!   127, as for the weighted deficit scheduler (the seed gives no other range).
//! - **Weighted deficit round robin**, [`WdrrMethod`]:
//!   - [`WdrrMethod::MtuQuantum`] (Summit X480, X460, X440; BlackDiamond 8900-c/-xl): "A weight
//!     of 1 equals a unit of 128 bytes", "MTU Quantum Value — 2 Kbytes". Choice: the credit
//!     counter counts 128-byte units, and a packet costs its size rounded up to whole units
//!     (1500 bytes cost 12 units, 1536 bytes' worth; 9000 bytes cost 71). The counters start at
//!     the quantum, 2 KB (16 units), for every class whatever its weight. Each replenishment
//!     adds "MTU quantum value x weight" = 16 x weight units, and "no queue's credit can ever
//!     be more than quantum value x weight". (The other reading, weight x 128 bytes per round, would make
//!     the 2 KB quantum a mere starting value and contradict step 3's formula.)
//!   - [`WdrrMethod::PowerOfTwoK`] (Summit X670, X460-G2, X670-G2, X770; BlackDiamond
//!     8900-40G6X-xm, X8): the counters (bytes) start at each class's weight. Each replenishment
//!     adds 2^K x weight: "K is calculated so that it is the minimum value required to make all
//!     credit counters positive". K is recalculated at each replenishment, over all the weighted
//!     classes (those empty with a negative counter too, as the wording says "all"). No counter
//!     is ever above 2^K x weight.
//!   - [`WdrrMethod::TenKbDoubling`] (BlackDiamond 8800 G48Te ... S-10G2Xc): weights 1 to 15,
//!     "Credit is replenished by 2^(weight – 1) x 10KB" (KB = 1024 bytes, as the seed's table
//!     makes weight 11 "10 MB"); weight 0 is strict priority. The seed gives neither the start
//!     nor a cap; choice: as the MTU-quantum method, the counter starts at one round's credit and
//!     never exceeds it ("the number of bytes that can be transmitted in a single round").
//!
//! # Rates
//! minbw and maxbw are percent of `link_bps`; committed_rate and peak_rate are "Kbps or Mbps"
//! (`"500K"`, `"40M"`). A profile takes a minimum in one form or the other, and a maximum in one
//! form or the other, not both. Both buckets hold at most [`EtsConfig::rate_burst_bytes`] (the
//! seed names no burst; the default, two 9216-byte jumbo frames, lets a shaped class send
//! back to back at its rate) and start full. A packet conforms when the bucket holds its size, or
//! a full bucket for a packet larger than the bucket (which then goes below zero, and the wait
//! that follows repays it). So over any interval of `t` picoseconds, a class with a maximum and
//! packets no larger than the bucket sends at most `rate_burst_bytes + rate x t` bytes. Tokens
//! are whole bytes with the remainder of the division carried, so no byte is lost to rounding
//! and the wake time is exact.
//!
//! The minimum's bucket follows the same rule, with one difference: what a class sends beyond
//! its minimum, in the strict or weighted tier, is not owed. A send takes its bucket down to
//! zero at most, or after a frame larger than the bucket to what that frame took beyond a full
//! bucket, and never forgives a debt already owed. So over any interval a class sends at most
//! `rate_burst_bytes + rate x t` bytes in the minbw tier, plus its last frame's excess over the
//! bucket, and a class with frames larger than the bucket gets no more than its minimum there.
//!
//! A bucket about one frame deep is kept as configured, and what it guarantees is this: the
//! port chooses between frames, so a class below its minimum waits for the frame on the wire,
//! and tokens earned beyond the bucket's depth meanwhile are lost. A bucket deeper than the
//! class's frame by the minimum's share of the port's largest frame loses nothing, and the
//! class gets its minimum. With equal frames, a bucket one frame deep or shallower rounds the
//! minimum down to one frame in every `n`, `n` the link rate over the minimum rounded up:
//! minbw 30 gives one frame in 4, 25%, and minbw 40 one in 3. The default depth, two
//! 9216-byte frames, is deep enough for any frame up to 9216 bytes.

use std::fmt;

use serde::Deserialize;

/// Traffic classes (and QoS profiles) per port.
pub const TRAFFIC_CLASSES: usize = 8;

/// The unit of the MTU-quantum method's credit counter: "A weight of 1 equals a unit of 128
/// bytes".
const QUANTUM_UNIT_BYTES: u32 = 128;
/// "MTU Quantum Value — 2 Kbytes", in 128-byte units.
const MTU_QUANTUM_UNITS: i64 = 2048 / QUANTUM_UNIT_BYTES as i64;
/// The ten-KB method's credit for weight 1: "Weight 1 = 10 KB".
const TEN_KB: i64 = 10 * 1024;
/// Bits per byte times picoseconds per second: `rate_bps x ps` in these units is bytes.
const BIT_PS_PER_BYTE: u128 = 8 * 1_000_000_000_000;

/// `configure qosscheduler [strict-priority | weighted-round-robin |
/// weighted-deficit-round-robin]`; "By default, the scheduling is set to strict-priority".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QosScheduler {
    #[default]
    StrictPriority,
    WeightedRoundRobin,
    WeightedDeficitRoundRobin,
}

/// The platform methods of weighted deficit round robin (the module docs give each one's steps
/// and the readings chosen).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WdrrMethod {
    /// Quantum x weight: 128-byte units, a 2 KB MTU quantum, weights 1 to 127.
    #[default]
    MtuQuantum,
    /// 2^K x weight with K recomputed at each replenishment, weights 1 to 127.
    PowerOfTwoK,
    /// 2^(weight - 1) x 10 KB, weights 1 to 15 (0 is strict priority).
    TenKbDoubling,
}

/// A QoS profile, QP1 to QP8, written `"qp1"` to `"qp8"` (or `"QP1"`...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct QosProfileId(u8);

impl QosProfileId {
    /// QP`number`, 1 to 8.
    pub const fn new(number: u8) -> Option<QosProfileId> {
        match number {
            1..=8 => Some(QosProfileId(number - 1)),
            _ => None,
        }
    }

    /// The traffic class this profile serves: its number minus one.
    pub const fn traffic_class(self) -> u8 {
        self.0
    }
}

impl TryFrom<String> for QosProfileId {
    type Error = String;
    fn try_from(name: String) -> Result<QosProfileId, String> {
        name.strip_prefix("qp")
            .or_else(|| name.strip_prefix("QP"))
            .and_then(|number| number.parse().ok())
            .and_then(QosProfileId::new)
            .ok_or_else(|| format!("`{name}` is not a QoS profile: qp1 to qp8"))
    }
}

impl fmt::Display for QosProfileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "qp{}", self.0 + 1)
    }
}

/// A committed_rate or peak_rate, "in Kbps or Mbps": `"500K"`, `"40M"` (a space before the unit
/// is allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(try_from = "String")]
pub struct Rate {
    kbps: u64,
}

impl Rate {
    /// A rate of `kbps` kilobits per second.
    pub const fn from_kbps(kbps: u64) -> Rate {
        Rate { kbps }
    }

    /// The rate in bits per second.
    pub const fn bps(self) -> u64 {
        self.kbps.saturating_mul(1000)
    }
}

impl TryFrom<String> for Rate {
    type Error = String;
    fn try_from(text: String) -> Result<Rate, String> {
        let bad =
            || format!("`{text}` is not a rate: a whole number of Kbps or Mbps, as 500K or 40M");
        let trimmed = text.trim();
        let (number, per_kbps) = if let Some(number) = trimmed.strip_suffix(['K', 'k']) {
            (number, 1)
        } else if let Some(number) = trimmed.strip_suffix(['M', 'm']) {
            (number, 1000)
        } else {
            return Err(bad());
        };
        let number = number.trim_end();
        if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        number
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(per_kbps))
            .map(Rate::from_kbps)
            .ok_or_else(|| format!("`{text}` is too large a rate"))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.kbps.is_multiple_of(1000) {
            write!(f, "{}M", self.kbps / 1000)
        } else {
            write!(f, "{}K", self.kbps)
        }
    }
}

/// One QoS profile's settings on the port (`configure qosprofile qpN ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QosProfile {
    /// The weight of the weighted schedulers, 1 (the default) to 127; 0 to 15 in the ten-KB
    /// method, where 0 is strict priority.
    pub weight: u8,
    /// Served by strict priority whatever the scheduler.
    #[serde(rename = "use-strict-priority")]
    pub use_strict_priority: bool,
    /// "a minimum guaranteed bandwidth in percent", 0 (none, the default) to 100.
    pub minbw: u8,
    /// "a maximum guaranteed bandwidth in percent", 1 to 100 (the default: no limit).
    pub maxbw: u8,
    /// "a minimum guaranteed bandwidth in Kbps or Mbps", instead of minbw.
    pub committed_rate: Option<Rate>,
    /// "a maximum guaranteed bandwidth in Kbps or Mbps", instead of maxbw.
    pub peak_rate: Option<Rate>,
}

impl Default for QosProfile {
    fn default() -> QosProfile {
        QosProfile {
            weight: 1,
            use_strict_priority: false,
            minbw: 0,
            maxbw: 100,
            committed_rate: None,
            peak_rate: None,
        }
    }
}

impl QosProfile {
    /// The guaranteed minimum in bits per second on a link of `link_bps`, 0 for none.
    fn min_bps(&self, link_bps: u64) -> u64 {
        match self.committed_rate {
            Some(rate) => rate.bps(),
            None => percent_of(link_bps, self.minbw),
        }
    }

    /// The maximum in bits per second on a link of `link_bps`, `None` for no limit.
    fn max_bps(&self, link_bps: u64) -> Option<u64> {
        match self.peak_rate {
            Some(rate) => Some(rate.bps()),
            None => (self.maxbw < 100).then(|| percent_of(link_bps, self.maxbw)),
        }
    }
}

fn percent_of(link_bps: u64, percent: u8) -> u64 {
    (u128::from(link_bps) * u128::from(percent) / 100) as u64
}

/// One egress port's ETS configuration: the scheduler, its QoS profiles and the dot1p map.
///
/// ```toml
/// # strict-priority (default) | weighted-round-robin | weighted-deficit-round-robin
/// qosscheduler = "weighted-deficit-round-robin"
/// wdrr-method = "mtu-quantum"    # mtu-quantum (default) | power-of-two-k | ten-kb-doubling
/// dot1p = ["qp1", "qp1", "qp1", "qp1", "qp5", "qp1", "qp1", "qp8"]   # PCP 0..7
/// rate-burst-bytes = 18432       # token bucket depth of minbw/maxbw and the rates
/// [qp1]                          # qp1 and qp8 always exist; qp2..qp7 when given
/// weight = 1
/// minbw = 40
/// [qp5]
/// weight = 2
/// [qp8]
/// use-strict-priority = true
/// maxbw = 20
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct EtsConfig {
    pub qosscheduler: QosScheduler,
    /// The weighted deficit round robin of which platform (used only by that scheduler).
    pub wdrr_method: WdrrMethod,
    /// The QoS profile of each 802.1p priority, PCP 0 first.
    pub dot1p: [QosProfileId; 8],
    /// The depth in bytes of every minbw/maxbw/committed/peak token bucket.
    pub rate_burst_bytes: u32,
    pub qp1: QosProfile,
    pub qp2: Option<QosProfile>,
    pub qp3: Option<QosProfile>,
    pub qp4: Option<QosProfile>,
    pub qp5: Option<QosProfile>,
    pub qp6: Option<QosProfile>,
    pub qp7: Option<QosProfile>,
    pub qp8: QosProfile,
}

impl Default for EtsConfig {
    fn default() -> EtsConfig {
        let (qp1, qp8) = (QosProfileId(0), QosProfileId(7));
        EtsConfig {
            qosscheduler: QosScheduler::default(),
            wdrr_method: WdrrMethod::default(),
            dot1p: [qp1, qp1, qp1, qp1, qp1, qp1, qp1, qp8],
            rate_burst_bytes: 2 * 9216,
            qp1: QosProfile::default(),
            qp2: None,
            qp3: None,
            qp4: None,
            qp5: None,
            qp6: None,
            qp7: None,
            qp8: QosProfile::default(),
        }
    }
}

/// An ETS configuration that cannot work, found by [`EtsConfig::validate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EtsError {
    #[error("{qp} weight {weight} is out of range: {scheduler} takes weights {min} to {max}")]
    WeightOutOfRange {
        qp: QosProfileId,
        weight: u8,
        scheduler: &'static str,
        min: u8,
        max: u8,
    },
    #[error("{qp} {field} {value} is not a percentage of the port's bandwidth (0 to 100)")]
    NotAPercentage {
        qp: QosProfileId,
        field: &'static str,
        value: u8,
    },
    #[error("{qp} maxbw 0 would never let it send")]
    ZeroMaxbw { qp: QosProfileId },
    #[error("{qp} peak_rate 0 would never let it send")]
    ZeroPeakRate { qp: QosProfileId },
    #[error("{qp} maxbw {maxbw} is below its minbw {minbw}")]
    MaxbwBelowMinbw {
        qp: QosProfileId,
        minbw: u8,
        maxbw: u8,
    },
    #[error("{qp} peak_rate {peak} is below its committed_rate {committed}")]
    PeakBelowCommitted {
        qp: QosProfileId,
        committed: Rate,
        peak: Rate,
    },
    #[error(
        "{qp} has both minbw and committed_rate: a minimum is in percent or in Kbps/Mbps, not both"
    )]
    MinimumTwice { qp: QosProfileId },
    #[error("{qp} has both maxbw and peak_rate: a maximum is in percent or in Kbps/Mbps, not both")]
    MaximumTwice { qp: QosProfileId },
    #[error("the minbw of the QoS profiles add up to {sum}%, more than the port's 100%")]
    MinbwOver100 { sum: u32 },
    #[error("dot1p {pcp} maps to {qp}, which does not exist: create it (a [{qp}] table) first")]
    MissingProfile { pcp: u8, qp: QosProfileId },
    #[error("rate-burst-bytes 0 would never let a rate-limited class send")]
    ZeroBurst,
}

impl EtsConfig {
    /// The QoS profile serving traffic class `tc` (0 to 7), if it exists.
    pub fn profile(&self, tc: u8) -> Option<&QosProfile> {
        match tc {
            0 => Some(&self.qp1),
            1 => self.qp2.as_ref(),
            2 => self.qp3.as_ref(),
            3 => self.qp4.as_ref(),
            4 => self.qp5.as_ref(),
            5 => self.qp6.as_ref(),
            6 => self.qp7.as_ref(),
            7 => Some(&self.qp8),
            _ => None,
        }
    }

    /// The traffic class of 802.1p priority `pcp` (0 to 7) through the dot1p map.
    pub fn traffic_class(&self, pcp: u8) -> u8 {
        self.dot1p[usize::from(pcp)].traffic_class()
    }

    /// The existing profiles with their traffic class.
    fn profiles(&self) -> impl Iterator<Item = (u8, &QosProfile)> {
        (0..TRAFFIC_CLASSES as u8).filter_map(|tc| Some((tc, self.profile(tc)?)))
    }

    /// The weights the scheduler accepts, and its name for messages.
    fn weight_range(&self) -> (&'static str, u8, u8) {
        match (self.qosscheduler, self.wdrr_method) {
            (QosScheduler::WeightedDeficitRoundRobin, WdrrMethod::TenKbDoubling) => {
                ("the ten-kb-doubling weighted-deficit-round-robin", 0, 15)
            }
            _ => ("ExtremeXOS", 1, 127),
        }
    }

    /// The first thing that makes this configuration impossible, if any.
    pub fn validate(&self) -> Result<(), EtsError> {
        let (scheduler, min, max) = self.weight_range();
        let mut minbw_sum = 0u32;
        for (tc, profile) in self.profiles() {
            let qp = QosProfileId(tc);
            if !(min..=max).contains(&profile.weight) {
                return Err(EtsError::WeightOutOfRange {
                    qp,
                    weight: profile.weight,
                    scheduler,
                    min,
                    max,
                });
            }
            for (field, value) in [("minbw", profile.minbw), ("maxbw", profile.maxbw)] {
                if value > 100 {
                    return Err(EtsError::NotAPercentage { qp, field, value });
                }
            }
            if profile.maxbw == 0 {
                return Err(EtsError::ZeroMaxbw { qp });
            }
            if profile.maxbw < profile.minbw {
                return Err(EtsError::MaxbwBelowMinbw {
                    qp,
                    minbw: profile.minbw,
                    maxbw: profile.maxbw,
                });
            }
            if profile.minbw > 0 && profile.committed_rate.is_some() {
                return Err(EtsError::MinimumTwice { qp });
            }
            if profile.maxbw < 100 && profile.peak_rate.is_some() {
                return Err(EtsError::MaximumTwice { qp });
            }
            if let Some(peak) = profile.peak_rate {
                if peak.kbps == 0 {
                    return Err(EtsError::ZeroPeakRate { qp });
                }
                if let Some(committed) = profile.committed_rate.filter(|&c| c > peak) {
                    return Err(EtsError::PeakBelowCommitted {
                        qp,
                        committed,
                        peak,
                    });
                }
            }
            minbw_sum += u32::from(profile.minbw);
        }
        if minbw_sum > 100 {
            return Err(EtsError::MinbwOver100 { sum: minbw_sum });
        }
        for (pcp, &qp) in (0u8..).zip(&self.dot1p) {
            if self.profile(qp.traffic_class()).is_none() {
                return Err(EtsError::MissingProfile { pcp, qp });
            }
        }
        if self.rate_burst_bytes == 0 {
            return Err(EtsError::ZeroBurst);
        }
        Ok(())
    }
}

/// What a port may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// Send the head packet of traffic class `tc` now; the scheduler has charged it.
    Send { tc: u8 },
    /// Every ready class is above its maximum; the first conforms at picosecond `ps` (later than
    /// `now_ps`; `u64::MAX` if its rate rounds to 0 bits per second).
    WaitUntil { ps: u64 },
    /// No class with a QoS profile is ready.
    Idle,
}

/// How the weighted classes are counted, by scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Weighting {
    /// Strict priority only: no weighted class.
    StrictOnly,
    /// Weighted round robin: packets.
    Packets,
    /// Weighted deficit round robin: bytes (or 128-byte units).
    Deficit(WdrrMethod),
}

/// A token bucket of whole bytes, with the remainder of the refill carried.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    rate_bps: u64,
    /// Bytes in the bucket: at most the burst; below 0 only after a packet larger than the burst.
    tokens: i64,
    /// The part of a byte earned but not yet whole, in bit-picoseconds (below
    /// [`BIT_PS_PER_BYTE`]).
    fraction: u64,
    /// When `tokens` was last brought up to date.
    last_ps: u64,
}

impl Bucket {
    fn full(rate_bps: u64, burst: i64) -> Bucket {
        Bucket {
            rate_bps,
            tokens: burst,
            ..Bucket::default()
        }
    }

    /// Adds what the rate earned since the last update, up to `burst`. A time before the last
    /// update changes nothing.
    fn refill(&mut self, now_ps: u64, burst: i64) {
        if now_ps <= self.last_ps {
            return;
        }
        if self.tokens < burst {
            let earned = u128::from(self.rate_bps) * u128::from(now_ps - self.last_ps)
                + u128::from(self.fraction);
            let bytes = earned / BIT_PS_PER_BYTE;
            if bytes >= (burst - self.tokens) as u128 {
                self.tokens = burst;
                self.fraction = 0;
            } else {
                self.tokens += bytes as i64;
                self.fraction = (earned % BIT_PS_PER_BYTE) as u64;
            }
        }
        self.last_ps = now_ps;
    }

    /// When the bucket, as of its last update, will hold `need` bytes.
    fn time_for(&self, need: i64) -> u64 {
        if self.tokens >= need {
            return self.last_ps;
        }
        if self.rate_bps == 0 {
            return u64::MAX;
        }
        let missing = (need - self.tokens) as u128 * BIT_PS_PER_BYTE - u128::from(self.fraction);
        let wait = missing.div_ceil(u128::from(self.rate_bps));
        u64::try_from(u128::from(self.last_ps) + wait).unwrap_or(u64::MAX)
    }
}

/// The scheduler of one egress port: which traffic class sends next.
#[derive(Debug, Clone)]
pub struct Scheduler {
    weighting: Weighting,
    /// Bit `tc` for each class with a QoS profile.
    exists: u8,
    /// The strict-priority classes, and the weighted (ETS) ones: together `exists`.
    strict: u8,
    weighted: u8,
    /// Classes with a minimum, and with a maximum.
    has_min: u8,
    has_max: u8,
    weights: [u8; TRAFFIC_CLASSES],
    /// The weighted credit counters, in the round's unit (packets, 128-byte units or bytes).
    credit: [i64; TRAFFIC_CLASSES],
    /// The weighted class served last (where the round-robin scan starts).
    cursor: u8,
    burst: i64,
    min: [Bucket; TRAFFIC_CLASSES],
    max: [Bucket; TRAFFIC_CLASSES],
}

impl Scheduler {
    /// The scheduler of a port running at `link_bps`, at time 0 with every bucket full. The
    /// configuration must have passed [`EtsConfig::validate`].
    pub fn new(config: &EtsConfig, link_bps: u64) -> Scheduler {
        let burst = i64::from(config.rate_burst_bytes);
        let weighting = match config.qosscheduler {
            QosScheduler::StrictPriority => Weighting::StrictOnly,
            QosScheduler::WeightedRoundRobin => Weighting::Packets,
            QosScheduler::WeightedDeficitRoundRobin => Weighting::Deficit(config.wdrr_method),
        };
        let mut scheduler = Scheduler {
            weighting,
            exists: 0,
            strict: 0,
            weighted: 0,
            has_min: 0,
            has_max: 0,
            weights: [0; TRAFFIC_CLASSES],
            credit: [0; TRAFFIC_CLASSES],
            cursor: 0,
            burst,
            min: [Bucket::default(); TRAFFIC_CLASSES],
            max: [Bucket::default(); TRAFFIC_CLASSES],
        };
        for (tc, profile) in config.profiles() {
            let bit = 1u8 << tc;
            let t = usize::from(tc);
            scheduler.exists |= bit;
            let strict = weighting == Weighting::StrictOnly
                || profile.use_strict_priority
                || (weighting == Weighting::Deficit(WdrrMethod::TenKbDoubling)
                    && profile.weight == 0);
            if strict {
                scheduler.strict |= bit;
            } else {
                scheduler.weighted |= bit;
                // validate() rejects other weights; clamped so that an unchecked configuration
                // can neither divide by a zero quantum nor shift out of range.
                let (_, min, max) = config.weight_range();
                scheduler.weights[t] = profile.weight.clamp(min.max(1), max);
                scheduler.credit[t] = scheduler.initial_credit(tc);
            }
            let min_bps = profile.min_bps(link_bps);
            if min_bps > 0 {
                scheduler.has_min |= bit;
                scheduler.min[t] = Bucket::full(min_bps, burst);
            }
            if let Some(max_bps) = profile.max_bps(link_bps) {
                scheduler.has_max |= bit;
                scheduler.max[t] = Bucket::full(max_bps, burst);
            }
        }
        scheduler
    }

    /// The traffic class that sends now, among those of bit set `ready` (bits of classes without
    /// a QoS profile are ignored); `head_bytes(tc)` is the size of class `tc`'s head packet,
    /// asked only of ready classes. A [`Grant::Send`] is a commitment: the packet is charged to
    /// the class's weighted credit and token buckets at `now_ps`. `now_ps` never goes back.
    pub fn next(&mut self, now_ps: u64, ready: u8, head_bytes: impl Fn(u8) -> u32) -> Grant {
        let ready = ready & self.exists;
        if ready == 0 {
            return Grant::Idle;
        }
        let mut heads = [0u32; TRAFFIC_CLASSES];
        for tc in bits(ready) {
            heads[usize::from(tc)] = head_bytes(tc);
        }
        let mut eligible = ready;
        let mut wake = u64::MAX;
        for tc in bits(ready & self.has_max) {
            let need = self.need(heads[usize::from(tc)]);
            let bucket = &mut self.max[usize::from(tc)];
            bucket.refill(now_ps, self.burst);
            if bucket.tokens < need {
                eligible &= !(1 << tc);
                wake = wake.min(bucket.time_for(need));
            }
        }
        if eligible == 0 {
            return Grant::WaitUntil { ps: wake };
        }
        let tc = self.pick(now_ps, eligible, &heads);
        self.charge(tc, heads[usize::from(tc)]);
        Grant::Send { tc }
    }

    /// The bytes a bucket must hold for a packet of `bytes`: all of them, or a full bucket.
    fn need(&self, bytes: u32) -> i64 {
        i64::from(bytes).min(self.burst)
    }

    /// The class to serve among `eligible` (not empty), tier by tier.
    fn pick(&mut self, now_ps: u64, eligible: u8, heads: &[u32; TRAFFIC_CLASSES]) -> u8 {
        let mut below_minimum = 0u8;
        for tc in bits(eligible & self.has_min) {
            let need = self.need(heads[usize::from(tc)]);
            let bucket = &mut self.min[usize::from(tc)];
            bucket.refill(now_ps, self.burst);
            if bucket.tokens >= need {
                below_minimum |= 1 << tc;
            }
        }
        if below_minimum != 0 {
            return highest(below_minimum);
        }
        if eligible & self.strict != 0 {
            return highest(eligible & self.strict);
        }
        self.weighted_pick(eligible & self.weighted)
    }

    /// The round of the weighted scheduler over `eligible` (not empty, all weighted).
    fn weighted_pick(&mut self, eligible: u8) -> u8 {
        if let Some(tc) = self.in_turn(eligible) {
            return tc;
        }
        self.replenish(eligible);
        self.cursor = (self.cursor + 1) % TRAFFIC_CLASSES as u8;
        self.in_turn(eligible)
            .expect("a replenishment leaves an eligible class with credit")
    }

    /// The first class of `eligible` from the cursor on whose credit allows a packet; it becomes
    /// the cursor.
    fn in_turn(&mut self, eligible: u8) -> Option<u8> {
        let threshold = self.threshold();
        let rotated = eligible.rotate_right(u32::from(self.cursor));
        let tc = bits(rotated)
            .map(|bit| (bit + self.cursor) % TRAFFIC_CLASSES as u8)
            .find(|&tc| self.credit[usize::from(tc)] >= threshold)?;
        self.cursor = tc;
        Some(tc)
    }

    /// The credit a class needs to be served: above 0 packets for round robin ("weight" packets
    /// per round), not negative for the deficit methods ("until ... its credit counter is
    /// negative").
    fn threshold(&self) -> i64 {
        match self.weighting {
            Weighting::Packets => 1,
            Weighting::StrictOnly | Weighting::Deficit(_) => 0,
        }
    }

    /// The credit counter of weighted class `tc` at the start.
    fn initial_credit(&self, tc: u8) -> i64 {
        match self.weighting {
            Weighting::Deficit(WdrrMethod::MtuQuantum) => MTU_QUANTUM_UNITS,
            Weighting::Deficit(WdrrMethod::PowerOfTwoK) => i64::from(self.weights[usize::from(tc)]),
            Weighting::StrictOnly
            | Weighting::Packets
            | Weighting::Deficit(WdrrMethod::TenKbDoubling) => self.quantum(tc),
        }
    }

    /// One replenishment of class `tc`, and the most its credit may hold, for the rounds with a
    /// fixed replenishment.
    fn quantum(&self, tc: u8) -> i64 {
        let weight = i64::from(self.weights[usize::from(tc)]);
        match self.weighting {
            Weighting::Deficit(WdrrMethod::MtuQuantum) => MTU_QUANTUM_UNITS * weight,
            Weighting::Deficit(WdrrMethod::TenKbDoubling) => TEN_KB << (weight - 1),
            Weighting::Deficit(WdrrMethod::PowerOfTwoK)
            | Weighting::StrictOnly
            | Weighting::Packets => weight,
        }
    }

    /// What a packet of `bytes` costs the weighted credit.
    fn cost(&self, bytes: u32) -> i64 {
        match self.weighting {
            Weighting::Packets => 1,
            Weighting::Deficit(WdrrMethod::MtuQuantum) => {
                i64::from(bytes.div_ceil(QUANTUM_UNIT_BYTES))
            }
            Weighting::StrictOnly | Weighting::Deficit(_) => i64::from(bytes),
        }
    }

    /// Step 3, as many times as it takes to give one class of `eligible` (every one of them
    /// below its threshold) the credit to send: every weighted class gains its replenishment,
    /// up to the cap.
    fn replenish(&mut self, eligible: u8) {
        if self.weighting == Weighting::Deficit(WdrrMethod::PowerOfTwoK) {
            // K: the least making every counter positive, 2^K x weight > -credit.
            let k = bits(self.weighted)
                .map(|tc| {
                    let t = usize::from(tc);
                    let owed = (-self.credit[t]).max(0) as u64;
                    let multiple = owed / u64::from(self.weights[t]) + 1;
                    multiple.next_power_of_two().trailing_zeros()
                })
                .max()
                .unwrap_or(0);
            for tc in bits(self.weighted) {
                let t = usize::from(tc);
                let gain = i64::try_from(i128::from(self.weights[t]) << k).unwrap_or(i64::MAX);
                self.credit[t] = self.credit[t].saturating_add(gain).min(gain);
            }
            return;
        }
        let threshold = self.threshold();
        let rounds = bits(eligible)
            .map(|tc| {
                // Below the threshold, so the shortfall is positive.
                let short = threshold.saturating_sub(self.credit[usize::from(tc)]) as u64;
                short.div_ceil(self.quantum(tc) as u64) as i64
            })
            .min()
            .unwrap_or(1);
        for tc in bits(self.weighted) {
            let quantum = self.quantum(tc);
            let credit = &mut self.credit[usize::from(tc)];
            *credit = credit
                .saturating_add(quantum.saturating_mul(rounds))
                .min(quantum);
        }
    }

    /// Charges class `tc`'s packet of `bytes` (its buckets were brought up to date by `next`).
    fn charge(&mut self, tc: u8, bytes: u32) {
        let t = usize::from(tc);
        let bit = 1 << tc;
        if self.weighted & bit != 0 {
            self.credit[t] = self.credit[t].saturating_sub(self.cost(bytes));
        }
        if self.has_max & bit != 0 {
            self.max[t].tokens -= i64::from(bytes);
        }
        if self.has_min & bit != 0 {
            // What a frame larger than the bucket takes beyond a full bucket is owed, and the
            // wait that follows repays it, as for the maximum; without that debt such a frame
            // would cost no more than the bucket, and the class would count as below its
            // minimum far too often. Anything else sent beyond the minimum (in the strict or
            // weighted tier) is not owed: the bucket measures only whether the class is below
            // its minimum now. A debt already owed stays: a send never adds tokens.
            let (bytes, need) = (i64::from(bytes), self.need(bytes));
            let min = &mut self.min[t];
            let floor = min.tokens.min(need - bytes);
            min.tokens = (min.tokens - bytes).max(floor);
        }
    }
}

/// The set bits of `mask`, lowest first.
fn bits(mut mask: u8) -> impl Iterator<Item = u8> {
    std::iter::from_fn(move || {
        let bit = mask.trailing_zeros() as u8;
        mask &= mask.checked_sub(1)?;
        Some(bit)
    })
}

/// The highest class of `mask` (not empty).
fn highest(mask: u8) -> u8 {
    7 - mask.leading_zeros() as u8
}

#[cfg(test)]
mod tests {
    use proptest::prelude::any;

    use super::*;

    const GBPS: u64 = 1_000_000_000;
    /// The link of the share tests: 10 Gb/s, where 1500 bytes take 1.2 us exactly.
    const LINK: u64 = 10 * GBPS;
    const PS_PER_MS: u64 = 1_000_000_000;

    /// The picoseconds `bytes` take on a link of `link_bps`, rounded up.
    fn wire_ps(bytes: u32, link_bps: u64) -> u64 {
        (u128::from(bytes) * BIT_PS_PER_BYTE).div_ceil(u128::from(link_bps)) as u64
    }

    /// Bytes and packets sent per class.
    #[derive(Debug, Default)]
    struct Sent {
        bytes: [u64; TRAFFIC_CLASSES],
        packets: [u64; TRAFFIC_CLASSES],
        order: Vec<u8>,
    }

    impl Sent {
        fn share(&self, tc: u8) -> f64 {
            self.bytes[usize::from(tc)] as f64 / self.bytes.iter().sum::<u64>() as f64
        }
    }

    /// A port at `link_bps` whose classes of `ready` always have a packet of `sizes[tc]` bytes:
    /// sends back to back, sleeps when told to wait, until `grants` packets are sent or the clock
    /// passes `until_ps`.
    fn drive(
        scheduler: &mut Scheduler,
        link_bps: u64,
        ready: u8,
        sizes: [u32; TRAFFIC_CLASSES],
        grants: usize,
        until_ps: u64,
    ) -> Sent {
        let mut sent = Sent::default();
        let mut now = 0;
        while sent.order.len() < grants && now < until_ps {
            match scheduler.next(now, ready, |tc| sizes[usize::from(tc)]) {
                Grant::Send { tc } => {
                    let bytes = sizes[usize::from(tc)];
                    sent.bytes[usize::from(tc)] += u64::from(bytes);
                    sent.packets[usize::from(tc)] += 1;
                    sent.order.push(tc);
                    now += wire_ps(bytes, link_bps);
                }
                Grant::WaitUntil { ps } => now = ps,
                Grant::Idle => break,
            }
        }
        sent
    }

    /// The seed's example: "create qosprofile qp5", "configure dot1p type 4 qosprofile qp5",
    /// "configure qosprofile qp1 weight 1", "configure qosprofile qp5 weight 2", "configure
    /// qosprofile qp8 use-strict-priority", under `scheduler`.
    fn seed_example(qosscheduler: QosScheduler, wdrr_method: WdrrMethod) -> EtsConfig {
        let mut config = EtsConfig {
            qosscheduler,
            wdrr_method,
            qp5: Some(QosProfile {
                weight: 2,
                ..QosProfile::default()
            }),
            ..EtsConfig::default()
        };
        config.dot1p[4] = QosProfileId::new(5).unwrap();
        config.qp1.weight = 1;
        config.qp8.use_strict_priority = true;
        config.validate().unwrap();
        config
    }

    const TC0_TC4: u8 = 1 << 0 | 1 << 4;
    /// Class 0 sends 1500-byte packets, class 4 9000-byte jumbo frames (class 7 1500).
    const MIXED: [u32; 8] = [1500, 0, 0, 0, 9000, 0, 0, 1500];
    const EQUAL: [u32; 8] = [1500; 8];

    #[test]
    fn strict_priority_sends_the_highest_ready_class() {
        let config = EtsConfig {
            qp5: Some(QosProfile::default()),
            ..EtsConfig::default()
        };
        let mut scheduler = Scheduler::new(&config, LINK);
        let sizes = |_| 1500;
        // Classes 0, 4 and 7 exist (qp1, qp5, qp8); the highest ready one goes, every time.
        for (ready, expected) in [
            (0b1001_0001, Grant::Send { tc: 7 }),
            (0b1001_0001, Grant::Send { tc: 7 }),
            (0b0001_0001, Grant::Send { tc: 4 }),
            (0b0000_0001, Grant::Send { tc: 0 }),
            // Class 6 has no QoS profile: its bit is ignored.
            (0b0100_0001, Grant::Send { tc: 0 }),
            (0b0100_0000, Grant::Idle),
            (0, Grant::Idle),
        ] {
            assert_eq!(
                scheduler.next(0, ready, sizes),
                expected,
                "ready {ready:#010b}"
            );
        }
    }

    #[test]
    fn the_dot1p_map_defaults_to_qp1_and_qp8_and_follows_configure_dot1p() {
        let default = EtsConfig::default();
        // ExtremeXOS's default: 802.1p 0 to 6 to QP1 (class 0), 7 to QP8 (class 7).
        let classes: Vec<u8> = (0..8).map(|pcp| default.traffic_class(pcp)).collect();
        assert_eq!(classes, [0, 0, 0, 0, 0, 0, 0, 7]);
        // "configure dot1p type 4 qosprofile qp5": PCP 4 to QP5, class 4 ("add the number 1").
        let example = seed_example(QosScheduler::WeightedRoundRobin, WdrrMethod::MtuQuantum);
        let classes: Vec<u8> = (0..8).map(|pcp| example.traffic_class(pcp)).collect();
        assert_eq!(classes, [0, 0, 0, 0, 4, 0, 0, 7]);
    }

    #[test]
    fn wrr_weights_1_and_2_send_two_class_4_packets_per_class_0_packet() {
        let config = seed_example(QosScheduler::WeightedRoundRobin, WdrrMethod::MtuQuantum);
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(&mut scheduler, LINK, TC0_TC4, EQUAL, 3000, u64::MAX);
        // Packet based: per round 1 packet of class 0 and 2 of class 4, in that order (the round
        // starts at class 0); 3000 grants are 1000 whole rounds. Exact, tolerance 0.
        assert_eq!(sent.order[..6], [0, 4, 4, 0, 4, 4]);
        assert_eq!(sent.packets[0], 1000);
        assert_eq!(sent.packets[4], 2000);
        // Equal sizes: the seed's 33% and 67% hold for bytes too.
        assert!((sent.share(0) - 1.0 / 3.0).abs() < 1e-12);

        // With 1500 against 9000 bytes the packets stay 1:2 and the bytes do not: "the exact
        // percentages are realized only when the average packet sizes ... are the same".
        // Class 0: 1500 / (1500 + 2 x 9000) = 1500 / 19500 = 7.692%; exact after whole rounds.
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(&mut scheduler, LINK, TC0_TC4, MIXED, 3000, u64::MAX);
        assert_eq!((sent.packets[0], sent.packets[4]), (1000, 2000));
        assert!((sent.share(0) - 1500.0 / 19500.0).abs() < 1e-12);
    }

    /// The byte share of class 0 when classes 0 (1500-byte packets) and 4 (9000-byte packets)
    /// with weights `w0` and `w4` are always ready, over 200,000 grants.
    fn wdrr_share(method: WdrrMethod, w0: u8, w4: u8) -> f64 {
        let mut config = seed_example(QosScheduler::WeightedDeficitRoundRobin, method);
        config.qp1.weight = w0;
        config.qp5.as_mut().unwrap().weight = w4;
        config.validate().unwrap();
        let mut scheduler = Scheduler::new(&config, LINK);
        drive(&mut scheduler, LINK, TC0_TC4, MIXED, 200_000, u64::MAX).share(0)
    }

    // Tolerance of the WDRR shares: 0.0003. What a class sent differs from the credit it was
    // given by less than one replenishment plus one packet (at most 40,960 + 9000 bytes here),
    // against at least 2.7e8 bytes sent in 200,000 grants: under 2e-4.
    const SHARE_TOLERANCE: f64 = 3e-4;

    #[test]
    fn wdrr_mtu_quantum_shares_credit_in_128_byte_units() {
        // Weights 1 and 2 (the seed's): per replenishment 16 and 32 units of 128 bytes, so the
        // units sent are 1:2. A 1500-byte packet costs 12 units (1536 bytes' worth), a 9000-byte
        // one 71 (9088). Bytes per unit: class 0 1500/12 = 125, class 4 9000/71 = 126.761.
        // Class 0: 1 x 125 / (1 x 125 + 2 x 126.761) = 125 / 378.521 = 0.330232,
        // not the 1/3 of whole bytes: the rounding to units is visible.
        let share = wdrr_share(WdrrMethod::MtuQuantum, 1, 2);
        let expected = 125.0 / (125.0 + 2.0 * 9000.0 / 71.0);
        assert!(
            (share - expected).abs() < SHARE_TOLERANCE,
            "{share} vs {expected}"
        );
        assert!(
            (share - 1.0 / 3.0).abs() > 2e-3,
            "{share} has no rounding to units"
        );
    }

    #[test]
    fn wdrr_power_of_two_k_shares_bytes_by_weight() {
        // Every replenishment gives each class 2^K x weight bytes with the same K, so the bytes
        // are 1:2 whatever the packets: class 0 gets 1/3.
        let share = wdrr_share(WdrrMethod::PowerOfTwoK, 1, 2);
        assert!((share - 1.0 / 3.0).abs() < SHARE_TOLERANCE, "{share}");
        // Weights 1 and 3: 1/4.
        let share = wdrr_share(WdrrMethod::PowerOfTwoK, 1, 3);
        assert!((share - 0.25).abs() < SHARE_TOLERANCE, "{share}");
    }

    #[test]
    fn wdrr_ten_kb_doubling_shares_bytes_by_two_to_the_weight() {
        // Weights 1 and 2: 10 KB and 20 KB per round, class 0 gets 10/30 = 1/3.
        let share = wdrr_share(WdrrMethod::TenKbDoubling, 1, 2);
        assert!((share - 1.0 / 3.0).abs() < SHARE_TOLERANCE, "{share}");
        // Weights 1 and 3: 10 KB and 40 KB ("Weight 3 = 40 KB"), class 0 gets 10/50 = 0.2
        // (where the power-of-two-K method gives 1/4).
        let share = wdrr_share(WdrrMethod::TenKbDoubling, 1, 3);
        assert!((share - 0.2).abs() < SHARE_TOLERANCE, "{share}");
    }

    /// The first `n` grants and the credit counters after them, classes 0 and 4 always ready
    /// with the [`MIXED`] packets and the seed's weights 1 and 2.
    fn first_grants(method: WdrrMethod, n: usize) -> (Vec<u8>, [i64; 2]) {
        let config = seed_example(QosScheduler::WeightedDeficitRoundRobin, method);
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(&mut scheduler, LINK, TC0_TC4, MIXED, n, u64::MAX);
        (sent.order, [scheduler.credit[0], scheduler.credit[4]])
    }

    #[test]
    fn wdrr_mtu_quantum_step_by_step() {
        // Units: class 0 packets cost 12, class 4 packets 71; both counters start at the 2 KB
        // quantum, 16 units; a replenishment adds 16 (weight 1) and 32 (weight 2).
        // 0: 16-12 = 4; 0: 4-12 = -8; 4: 16-71 = -55;
        // replenish once (class 0 needs 1, class 4 2): -8+16 = 8, -55+32 = -23; 0: 8-12 = -4;
        // replenish once: 12, 9; the round goes on after class 0, so 4: 9-71 = -62;
        // 0: 12-12 = 0; 0: 0-12 = -12 (0 is not negative: served again).
        assert_eq!(
            first_grants(WdrrMethod::MtuQuantum, 7),
            (vec![0, 0, 4, 0, 4, 0, 0], [-12, -62])
        );
    }

    #[test]
    fn wdrr_power_of_two_k_recomputes_k_at_each_replenishment() {
        // Bytes; the counters start at the weights, 1 and 2.
        // 0: 1-1500 = -1499; 4: 2-9000 = -8998.
        // K: class 0 needs 2^K > 1499 (K = 11), class 4 2^K x 2 > 8998 (K = 13): K = 13,
        // 0: -1499+8192 = 6693, 4: -8998+16384 = 7386.
        // 0 five times: 6693 - 5 x 1500 = -807; 4: 7386-9000 = -1614.
        assert_eq!(
            first_grants(WdrrMethod::PowerOfTwoK, 8),
            (vec![0, 4, 0, 0, 0, 0, 0, 4], [-807, -1614])
        );
        // K again: 2^K > 807 and 2^K x 2 > 1614 both give K = 10: 0: -807+1024 = 217,
        // 4: -1614+2048 = 434. 0: 217-1500 = -1283; 4: 434-9000 = -8566.
        let (order, credit) = first_grants(WdrrMethod::PowerOfTwoK, 10);
        assert_eq!((&order[8..], credit), (&[0, 4][..], [-1283, -8566]));
    }

    #[test]
    fn wdrr_power_of_two_k_counts_the_debt_of_an_empty_class() {
        // "K is calculated so that it is the minimum value required to make all credit
        // counters positive": all, so an empty class's debt sets K too. Class 0 (weight 1)
        // sends one 9000-byte packet and empties: 1-9000 = -8999. Class 4 (weight 2), alone,
        // sends 1500: 2-1500 = -1498. Class 4 alone would need 2^K x 2 > 1498, K = 10; class 0
        // needs 2^K > 8999, K = 14. So class 4 gains 2^14 x 2 = 32768: -1498+32768 = 31270, and
        // class 0 16384: -8999+16384 = 7385.
        let config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::PowerOfTwoK,
        );
        let mut scheduler = Scheduler::new(&config, LINK);
        let sizes = [9000, 0, 0, 0, 1500, 0, 0, 0];
        let sent = drive(&mut scheduler, LINK, TC0_TC4, sizes, 1, u64::MAX);
        assert_eq!(sent.order, [0]);
        let sent = drive(&mut scheduler, LINK, 1 << 4, sizes, 2, u64::MAX);
        assert_eq!(sent.order, [4, 4]);
        // The second grant replenished and then charged 1500: 31270 - 1500 = 29770.
        assert_eq!([scheduler.credit[0], scheduler.credit[4]], [7385, 29770]);
    }

    #[test]
    fn no_credit_exceeds_its_cap_while_a_class_is_idle() {
        // Class 0 idle while class 4 sends for many rounds: "No queue's credit can ever be
        // more than quantum value x weight" = 16 units for weight 1.
        let config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::MtuQuantum,
        );
        let mut scheduler = Scheduler::new(&config, LINK);
        drive(&mut scheduler, LINK, 1 << 4, MIXED, 1000, u64::MAX);
        assert_eq!(scheduler.credit[0], 16);
        // So class 0, back, sends 16 units' worth before class 4 sends again: 12, then 4-12 < 0.
        let sent = drive(&mut scheduler, LINK, TC0_TC4, MIXED, 2, u64::MAX);
        assert_eq!(sent.packets[0], 2);
    }

    /// 10 ms at 10 Gb/s: 12.5e6 bytes.
    const RUN_PS: u64 = 10 * PS_PER_MS;
    const RUN_BYTES: f64 = 12.5e6;

    #[test]
    fn maxbw_caps_a_strict_class_and_the_others_share_the_rest() {
        // "configure qosprofile qp8 maxbw 20": class 7 strict, capped at 20% of 10 Gb/s.
        let mut config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::MtuQuantum,
        );
        config.qp8.maxbw = 20;
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(
            &mut scheduler,
            LINK,
            TC0_TC4 | 1 << 7,
            EQUAL,
            usize::MAX,
            RUN_PS,
        );
        // At most 20% x 12.5e6 = 2.5e6 bytes plus the 18,432-byte burst the bucket starts
        // with; at least 2.5e6 + 18,432 less what the bucket holds at the end (under 2 packets).
        let bound = 0.2 * RUN_BYTES + f64::from(config.rate_burst_bytes);
        let class7 = sent.bytes[7] as f64;
        assert!(class7 <= bound, "{class7} above {bound}");
        assert!(class7 >= bound - 3000.0, "{class7} well below {bound}");
        // The link never idles, and classes 0 and 4 split the other 80% 1:2 (equal packets:
        // 12 units each, exact up to a round, 3 packets in 8,300).
        let rest = (sent.bytes[0] + sent.bytes[4]) as f64;
        assert!((rest + class7 - RUN_BYTES).abs() <= 1500.0);
        assert!((sent.bytes[0] as f64 / rest - 1.0 / 3.0).abs() < 1e-3);
    }

    #[test]
    fn maxbw_caps_a_weighted_class_below_its_weighted_share() {
        // Weights 1 and 2 would give class 4 two thirds; maxbw 50 holds it to half, and class 0,
        // work-conserving, takes the other half. Tolerance: the 18,432-byte burst over 12.5e6
        // bytes (0.15%), plus a packet.
        let mut config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::PowerOfTwoK,
        );
        config.qp5.as_mut().unwrap().maxbw = 50;
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(&mut scheduler, LINK, TC0_TC4, EQUAL, usize::MAX, RUN_PS);
        let bound = 0.5 * RUN_BYTES + f64::from(config.rate_burst_bytes);
        assert!(sent.bytes[4] as f64 <= bound);
        assert!((sent.share(4) - 0.5).abs() < 2e-3, "{}", sent.share(4));
    }

    #[test]
    fn minbw_guarantees_a_class_against_a_heavier_weight() {
        // "configure qosprofile qp1 minbw 40": "the reported bandwidth would change to 40% for
        // class 0 (qp1) and 60% for class 4 (qp5)" against the 33% and 67% of weights 1 and 2.
        // Tolerance 0.3%: the 18,432-byte starting burst is 0.15% of 12.5e6 bytes, plus packets.
        let minbw_40 = |method| {
            let mut config = seed_example(QosScheduler::WeightedDeficitRoundRobin, method);
            config.qp1.minbw = 40;
            let mut scheduler = Scheduler::new(&config, LINK);
            drive(&mut scheduler, LINK, TC0_TC4, EQUAL, usize::MAX, RUN_PS).share(0)
        };
        for method in [WdrrMethod::MtuQuantum, WdrrMethod::TenKbDoubling] {
            let share = minbw_40(method);
            assert!((share - 0.4).abs() < 3e-3, "{method:?}: {share}");
        }
        // Power of two K forgives the bytes sent under the minimum at each replenishment (K
        // makes every counter positive), so class 0 keeps some weighted share on top: at least
        // its 40%, and less than 40% plus a third of the other 60% (60%).
        let share = minbw_40(WdrrMethod::PowerOfTwoK);
        assert!((0.4 - 3e-3..0.6).contains(&share), "{share}");
        // A minbw below the weighted share changes nothing: class 0 keeps its 33%.
        let mut config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::MtuQuantum,
        );
        config.qp1.minbw = 20;
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(&mut scheduler, LINK, TC0_TC4, EQUAL, usize::MAX, RUN_PS);
        assert!(
            (sent.share(0) - 1.0 / 3.0).abs() < 3e-3,
            "{}",
            sent.share(0)
        );
    }

    #[test]
    fn minbw_goes_before_strict_priority() {
        // Class 7 strict and unlimited would take everything; class 0 has committed_rate
        // 4000000K, 40% of the link: "a class with a minbw will have priority over other classes
        // (including strict priority classes) until the minbw is met". Class 0 gets 40%
        // (tolerance as above), class 7 the other 60%, class 4 nothing.
        let mut config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::MtuQuantum,
        );
        config.qp1.committed_rate = Some(Rate::from_kbps(4_000_000));
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(
            &mut scheduler,
            LINK,
            TC0_TC4 | 1 << 7,
            EQUAL,
            usize::MAX,
            RUN_PS,
        );
        assert!((sent.share(0) - 0.4).abs() < 3e-3, "{}", sent.share(0));
        assert_eq!(sent.bytes[4], 0);
    }

    /// The byte shares of class 0 (minbw `minbw`) and class 7 (strict, unlimited), both always
    /// ready with packets of `sizes`, under strict priority with buckets `burst` bytes deep.
    fn minbw_beside_strict(minbw: u8, burst: u32, sizes: [u32; TRAFFIC_CLASSES]) -> (f64, f64) {
        let mut config = EtsConfig {
            rate_burst_bytes: burst,
            ..EtsConfig::default()
        };
        config.qp1.minbw = minbw;
        config.validate().unwrap();
        let mut scheduler = Scheduler::new(&config, LINK);
        let sent = drive(&mut scheduler, LINK, 1 | 1 << 7, sizes, usize::MAX, RUN_PS);
        (sent.share(0), sent.share(7))
    }

    #[test]
    fn a_minbw_class_with_frames_larger_than_its_bucket_gets_only_its_minimum() {
        // 9000-byte jumbo frames on class 0 (minbw 40) beside 1500-byte frames on the greedy
        // strict class 7, buckets 1500 bytes deep. Each jumbo frame takes class 0's bucket
        // 7500 bytes below zero; it is full again 9000 bytes' worth at 40% later, 22,500 bytes
        // of link time: the frame and 9 of class 7's. Class 0 gets 40%, class 7 keeps its 60%.
        // Tolerance 2e-3: the starting bucket and a frame are 8.4e-4 of 12.5e6 bytes.
        let sizes = [9000, 0, 0, 0, 0, 0, 0, 1500];
        let (minbw, strict) = minbw_beside_strict(40, 1500, sizes);
        assert!((minbw - 0.4).abs() < 2e-3, "{minbw}");
        assert!((strict - 0.6).abs() < 2e-3, "{strict}");
        // RoCE frames of a 4096-byte payload (4158 bytes) on both: the bucket is full again
        // 2.5 frames after class 0's, and checked at each frame's end, so one frame in 3 is
        // class 0's (a shallow bucket's rounding to whole frames, tested below) and class 7
        // keeps two thirds.
        let (minbw, strict) = minbw_beside_strict(40, 1500, [4158; 8]);
        assert!((minbw - 1.0 / 3.0).abs() < 2e-3, "{minbw}");
        assert!((strict - 2.0 / 3.0).abs() < 2e-3, "{strict}");
    }

    #[test]
    fn a_bucket_one_frame_deep_rounds_the_minimum_down_to_whole_frames() {
        // 1500-byte frames, minbw 30 and a 1500-byte bucket: after class 0 sends, its bucket
        // gains 450 bytes per frame class 7 sends (30% of 1500) and is checked at each frame's
        // end: 450, 900, 1350, then 1800 held as 1500. One frame in 4 is class 0's: 25%.
        // Exact up to the last, partial period (1 frame in 8,333).
        let (minbw, _) = minbw_beside_strict(30, 1500, EQUAL);
        assert!((minbw - 0.25).abs() < 2e-4, "{minbw}");
        // A bucket deeper than the frame by 30% of a frame (1950 bytes) loses nothing: 30%.
        let (minbw, _) = minbw_beside_strict(30, 1950, EQUAL);
        assert!((minbw - 0.3).abs() < 2e-3, "{minbw}");
    }

    #[test]
    fn a_class_over_its_peak_rate_says_when_it_may_send() {
        // peak_rate 1M on class 0, the bucket 18,432 bytes and full at 0: twelve 1500-byte
        // packets (18,000 bytes) go at once, leaving 432. The thirteenth needs 1068 more:
        // 1068 x 8 bits / 1e6 b/s = 8.544 ms = 8,544,000,000 ps.
        let mut config = EtsConfig::default();
        config.qp1.peak_rate = Some(Rate::from_kbps(1000));
        config.validate().unwrap();
        let mut scheduler = Scheduler::new(&config, LINK);
        let sizes = |_| 1500;
        for _ in 0..12 {
            assert_eq!(scheduler.next(0, 1, sizes), Grant::Send { tc: 0 });
        }
        let wake = Grant::WaitUntil { ps: 8_544_000_000 };
        assert_eq!(scheduler.next(0, 1, sizes), wake);
        // One picosecond early it is still 1 byte short (1499), with the same answer.
        assert_eq!(scheduler.next(8_543_999_999, 1, sizes), wake);
        assert_eq!(
            scheduler.next(8_544_000_000, 1, sizes),
            Grant::Send { tc: 0 }
        );
        // Class 7, unlimited, goes meanwhile: a wait is only when every ready class waits.
        assert_eq!(
            scheduler.next(8_544_000_000, 1 | 1 << 7, sizes),
            Grant::Send { tc: 7 }
        );
    }

    #[test]
    fn validate_names_each_impossible_setting() {
        let check = |edit: &dyn Fn(&mut EtsConfig), expected: EtsError| {
            let mut config = EtsConfig::default();
            edit(&mut config);
            assert_eq!(config.validate(), Err(expected));
        };
        let (qp1, qp5, qp8) = (
            QosProfileId::new(1).unwrap(),
            QosProfileId::new(5).unwrap(),
            QosProfileId::new(8).unwrap(),
        );
        check(
            &|c| {
                c.qosscheduler = QosScheduler::WeightedDeficitRoundRobin;
                c.wdrr_method = WdrrMethod::TenKbDoubling;
                c.qp8.weight = 16;
            },
            EtsError::WeightOutOfRange {
                qp: qp8,
                weight: 16,
                scheduler: "the ten-kb-doubling weighted-deficit-round-robin",
                min: 0,
                max: 15,
            },
        );
        check(
            &|c| c.qp1.weight = 0,
            EtsError::WeightOutOfRange {
                qp: qp1,
                weight: 0,
                scheduler: "ExtremeXOS",
                min: 1,
                max: 127,
            },
        );
        check(
            &|c| c.qp1.minbw = 101,
            EtsError::NotAPercentage {
                qp: qp1,
                field: "minbw",
                value: 101,
            },
        );
        check(&|c| c.qp8.maxbw = 0, EtsError::ZeroMaxbw { qp: qp8 });
        check(
            &|c| {
                c.qp1.minbw = 30;
                c.qp1.maxbw = 20;
            },
            EtsError::MaxbwBelowMinbw {
                qp: qp1,
                minbw: 30,
                maxbw: 20,
            },
        );
        check(
            &|c| {
                c.qp1.minbw = 60;
                c.qp8.minbw = 50;
            },
            EtsError::MinbwOver100 { sum: 110 },
        );
        check(
            &|c| {
                c.qp1.minbw = 10;
                c.qp1.committed_rate = Some(Rate::from_kbps(1000));
            },
            EtsError::MinimumTwice { qp: qp1 },
        );
        check(
            &|c| {
                c.qp1.maxbw = 50;
                c.qp1.peak_rate = Some(Rate::from_kbps(1000));
            },
            EtsError::MaximumTwice { qp: qp1 },
        );
        check(
            &|c| {
                c.qp1.committed_rate = Some(Rate::from_kbps(2000));
                c.qp1.peak_rate = Some(Rate::from_kbps(1500));
            },
            EtsError::PeakBelowCommitted {
                qp: qp1,
                committed: Rate::from_kbps(2000),
                peak: Rate::from_kbps(1500),
            },
        );
        check(
            &|c| c.qp1.peak_rate = Some(Rate::from_kbps(0)),
            EtsError::ZeroPeakRate { qp: qp1 },
        );
        check(
            &|c| c.dot1p[4] = qp5,
            EtsError::MissingProfile { pcp: 4, qp: qp5 },
        );
        check(&|c| c.rate_burst_bytes = 0, EtsError::ZeroBurst);
        // The messages say what and why, in the seed's words.
        let error = EtsError::PeakBelowCommitted {
            qp: qp1,
            committed: Rate::from_kbps(2000),
            peak: Rate::from_kbps(1500),
        };
        assert_eq!(
            error.to_string(),
            "qp1 peak_rate 1500K is below its committed_rate 2M"
        );
        // Weight 0 is strict priority in the ten-KB method, and valid there.
        let mut config = seed_example(
            QosScheduler::WeightedDeficitRoundRobin,
            WdrrMethod::TenKbDoubling,
        );
        config.qp5.as_mut().unwrap().weight = 0;
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(Scheduler::new(&config, LINK).strict, 1 << 4 | 1 << 7);
    }

    #[test]
    fn the_configuration_reads_from_toml_in_the_seeds_names() {
        let config: EtsConfig = toml::from_str(
            r#"
            qosscheduler = "weighted-deficit-round-robin"
            wdrr-method = "power-of-two-k"
            dot1p = ["qp1", "qp1", "qp1", "qp1", "QP5", "qp1", "qp1", "qp8"]
            [qp1]
            weight = 1
            minbw = 40
            [qp5]
            weight = 2
            committed_rate = "500 K"
            peak_rate = "40M"
            [qp8]
            use-strict-priority = true
            maxbw = 20
            "#,
        )
        .unwrap();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.wdrr_method, WdrrMethod::PowerOfTwoK);
        assert_eq!(config.traffic_class(4), 4);
        let qp5 = config.qp5.unwrap();
        assert_eq!(
            (
                qp5.committed_rate.unwrap().bps(),
                qp5.peak_rate.unwrap().bps()
            ),
            (500_000, 40_000_000)
        );
        assert!(config.qp8.use_strict_priority && config.qp8.maxbw == 20);
        assert_eq!(config.qp2, None);
        // Mistakes are named.
        for (text, message) in [
            ("[qp1]\nwieght = 2", "unknown field `wieght`"),
            ("[qp1]\npeak_rate = \"40G\"", "`40G` is not a rate"),
            (
                "dot1p = [\"qp9\", \"qp1\", \"qp1\", \"qp1\", \"qp1\", \"qp1\", \"qp1\", \"qp8\"]",
                "`qp9` is not a QoS profile",
            ),
            ("dot1p = [\"qp1\"]", "invalid length 1"),
            (
                "qosscheduler = \"round-robin\"",
                "unknown variant `round-robin`",
            ),
        ] {
            let error = toml::from_str::<EtsConfig>(text).unwrap_err().to_string();
            assert!(error.contains(message), "{text}: {error}");
        }
    }

    /// The profile of one class in the proptest: exists, weight, use-strict-priority, minbw,
    /// maxbw (below 20 none, 20 to 59 maxbw, 60 and above a peak rate instead), peak rate - 1.
    type ProfileDraw = (bool, u8, bool, u8, u8, u64);
    /// One step of the proptest: ready classes, head size seed, picoseconds idle before, and
    /// whether to sleep until a wait ends.
    type Step = (u8, u32, u64, bool);

    /// A configuration from the proptest's draws, valid by construction.
    fn drawn_config(
        scheduler: usize,
        method: usize,
        profiles: &[ProfileDraw],
        burst: u32,
    ) -> EtsConfig {
        let mut config = EtsConfig {
            qosscheduler: [
                QosScheduler::StrictPriority,
                QosScheduler::WeightedRoundRobin,
                QosScheduler::WeightedDeficitRoundRobin,
            ][scheduler],
            wdrr_method: [
                WdrrMethod::MtuQuantum,
                WdrrMethod::PowerOfTwoK,
                WdrrMethod::TenKbDoubling,
            ][method],
            rate_burst_bytes: burst,
            ..EtsConfig::default()
        };
        let (_, min_weight, _) = config.weight_range();
        for (tc, &(exists, weight, strict, minbw, maxbw, peak_kbps)) in (0u8..).zip(profiles) {
            let profile = QosProfile {
                weight: weight.max(min_weight),
                use_strict_priority: strict,
                minbw,
                maxbw: if (20..60).contains(&maxbw) {
                    maxbw.max(minbw)
                } else {
                    100
                },
                committed_rate: None,
                peak_rate: (maxbw >= 60).then(|| Rate::from_kbps(peak_kbps + 1)),
            };
            let slot = match tc {
                0 => {
                    config.qp1 = profile;
                    continue;
                }
                1 => &mut config.qp2,
                2 => &mut config.qp3,
                3 => &mut config.qp4,
                4 => &mut config.qp5,
                5 => &mut config.qp6,
                6 => &mut config.qp7,
                _ => {
                    config.qp8 = profile;
                    continue;
                }
            };
            *slot = exists.then_some(profile);
        }
        config
    }

    /// Runs a port through `steps` and checks the invariants of the proptest below.
    fn check_port(
        config: &EtsConfig,
        link_bps: u64,
        steps: &[Step],
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        use proptest::{prop_assert, prop_assert_eq};
        prop_assert_eq!(config.validate(), Ok(()));
        let mut port = Scheduler::new(config, link_bps);
        let mut now = 0u64;
        // (class, time, bytes, sent in the minbw tier)
        let mut grants: Vec<(u8, u64, u32, bool)> = Vec::new();
        for &(ready, size, gap, sleep) in steps {
            now += gap;
            // The head sizes differ by class, some larger than the bucket.
            let head = |tc: u8| 64 + (size + 997 * u32::from(tc)) % (9216 - 63);
            // A class granted while below its minimum was granted by the minbw tier.
            let below_minimum = |tc: u8| {
                let mut bucket = port.min[usize::from(tc)];
                bucket.refill(now, port.burst);
                port.has_min & 1 << tc != 0 && bucket.tokens >= port.need(head(tc))
            };
            let below: Vec<bool> = (0..TRAFFIC_CLASSES as u8).map(below_minimum).collect();
            match port.next(now, ready, head) {
                Grant::Send { tc } => {
                    prop_assert!(ready & port.exists & 1 << tc != 0);
                    grants.push((tc, now, head(tc), below[usize::from(tc)]));
                    now += wire_ps(head(tc), link_bps);
                }
                Grant::WaitUntil { ps } => {
                    prop_assert!(ps > now);
                    prop_assert_eq!(ready & port.exists & !port.has_max, 0);
                    if ps != u64::MAX {
                        let early = port.clone().next(ps - 1, ready, head);
                        prop_assert_eq!(early, Grant::WaitUntil { ps });
                        let on_time = port.clone().next(ps, ready, head);
                        prop_assert!(matches!(on_time, Grant::Send { .. }), "{on_time:?} at {ps}");
                        if sleep {
                            now = ps;
                        }
                    }
                }
                Grant::Idle => prop_assert_eq!(ready & port.exists, 0),
            }
            if let Weighting::Packets
            | Weighting::Deficit(WdrrMethod::MtuQuantum | WdrrMethod::TenKbDoubling) =
                port.weighting
            {
                for tc in bits(port.weighted) {
                    prop_assert!(port.credit[usize::from(tc)] <= port.quantum(tc));
                }
            }
        }
        for tc in bits(port.has_max) {
            let sent = grants.iter().filter(|g| g.0 == tc).map(|g| (g.1, g.2));
            within_rate(tc, &port.max[usize::from(tc)], config, sent, "its maximum")?;
        }
        for tc in bits(port.has_min) {
            let sent = (grants.iter().filter(|g| g.0 == tc && g.3)).map(|g| (g.1, g.2));
            within_rate(
                tc,
                &port.min[usize::from(tc)],
                config,
                sent,
                "the minbw tier",
            )?;
        }
        Ok(())
    }

    /// Checks that class `tc`'s packets `sent` (time, bytes) keep to `bucket`'s rate over every
    /// interval: at most rate_burst_bytes + rate x time, plus the last packet's excess over
    /// the bucket (which takes it below zero).
    fn within_rate(
        tc: u8,
        bucket: &Bucket,
        config: &EtsConfig,
        sent: impl Iterator<Item = (u64, u32)>,
        what: &str,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let sent: Vec<(u64, u32)> = sent.collect();
        let (burst, rate) = (config.rate_burst_bytes, u128::from(bucket.rate_bps));
        for (first, &(start, _)) in sent.iter().enumerate() {
            let mut bytes = 0u128;
            for &(at, size) in &sent[first..] {
                bytes += u128::from(size);
                let allowed = u128::from(burst.max(size));
                let span = u128::from(at - start);
                proptest::prop_assert!(
                    bytes * BIT_PS_PER_BYTE <= allowed * BIT_PS_PER_BYTE + rate * span,
                    "class {tc} sent {bytes} bytes in {what} in {span} ps at {rate} b/s"
                );
            }
        }
        Ok(())
    }

    proptest::proptest! {
        /// Whatever the configuration and the traffic:
        /// - a grant is for a ready class with a profile;
        /// - a wait is for later and is exact: one picosecond earlier the answer is the same
        ///   wait, at that time a send;
        /// - no class sends more than its peak allows over any interval, nor more in the minbw
        ///   tier than its minimum allows: rate_burst_bytes + rate x time, plus the last
        ///   packet's excess over the bucket;
        /// - where the cap is fixed, no weighted credit is above one replenishment.
        #[test]
        fn grants_are_ready_classes_within_their_rates(
            scheduler in 0usize..3,
            method in 0usize..3,
            profiles in proptest::collection::vec(
                (any::<bool>(), 0u8..16, any::<bool>(), 0u8..12, 0u8..100, 0u64..3_000_000),
                8,
            ),
            burst in 1000u32..20_000,
            link_gbps in proptest::sample::select(vec![1u64, 10, 100]),
            steps in proptest::collection::vec(
                (any::<u8>(), 64u32..=9216, 0u64..3_000_000, any::<bool>()),
                1..300,
            ),
        ) {
            let config = drawn_config(scheduler, method, &profiles, burst);
            check_port(&config, link_gbps * GBPS, &steps)?;
        }
    }
}
