//! What a run measured: per flow, per SL and per VL on every link. Serializable, with every list
//! in a fixed order (flows as given, SLs and VLs ascending, links by their sending port), so
//! the same run gives the same bytes.

use std::sync::Arc;

use ibqos_fabric::credit_loops::Channel;
use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two in a [`Histogram`]: a value is known within 1/16 (6.25 %).
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;

/// A log-linear latency histogram in nanoseconds: exact below 16 ns, then 16 buckets per power
/// of two. Stored as the span of buckets actually used, so a flow whose latencies cluster costs
/// a few hundred bytes, whatever its packet count. While every value is in one bucket, that
/// bucket is `first` and its count `total`, with nothing on the heap. Why: in a large
/// all-to-all most flows deliver a packet or two, and an allocation per flow was a tenth of the
/// run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Histogram {
    /// Index of `counts[0]`, or of the one bucket used while `counts` is empty.
    first: usize,
    counts: Vec<u64>,
    total: u64,
    sum: u128,
    max: u64,
}

impl Histogram {
    fn index(value: u64) -> usize {
        if value < SUB {
            return value as usize;
        }
        let exp = 63 - value.leading_zeros();
        let mantissa = (value >> (exp - SUB_BITS)) & (SUB - 1);
        ((u64::from(exp - SUB_BITS + 1) << SUB_BITS) + mantissa) as usize
    }

    /// The largest value bucket `index` holds.
    fn upper(index: usize) -> u64 {
        let index = index as u64;
        if index < SUB {
            return index;
        }
        let exp = (index >> SUB_BITS) + u64::from(SUB_BITS) - 1;
        let mantissa = index & (SUB - 1);
        ((SUB + mantissa + 1) << (exp - u64::from(SUB_BITS))) - 1
    }

    pub fn record(&mut self, value: u64) {
        let index = Self::index(value);
        if self.counts.is_empty() && (self.total == 0 || index == self.first) {
            self.first = index;
        } else {
            self.add(index, 1);
        }
        self.total += 1;
        self.sum += u128::from(value);
        self.max = self.max.max(value);
    }

    /// Adds `count` values to bucket `index`, the buckets spelled out.
    fn add(&mut self, index: usize, count: u64) {
        if self.counts.is_empty() {
            if self.total > 0 {
                self.counts.push(self.total);
            } else {
                self.first = index;
            }
        }
        if index < self.first {
            let grow = self.first - index;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.first = index;
        }
        let at = index - self.first;
        if at >= self.counts.len() {
            self.counts.resize(at + 1, 0);
        }
        self.counts[at] += count;
    }

    /// Every bucket used or within the span of those used, in order: (index, count).
    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let lone = (self.counts.is_empty() && self.total > 0).then_some((self.first, self.total));
        lone.into_iter()
            .chain((self.first..).zip(self.counts.iter().copied()))
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        for (index, count) in other.buckets() {
            if count > 0 {
                self.add(index, count);
            }
        }
        self.total += other.total;
        self.sum += other.sum;
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// Whether `value`, as [`Histogram::quantile`] gives it, is exact: no smaller value shares
    /// its bucket. Otherwise it is an upper bound, at most 1/16 above the value it stands for.
    pub fn is_exact(value: u64) -> bool {
        let index = Self::index(value);
        index == 0 || Self::upper(index - 1) + 1 == value
    }

    /// The value at quantile `q` (0..=1): the upper edge of its bucket, never above the largest
    /// value recorded; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((q * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, count) in self.buckets() {
            seen += count;
            if seen >= rank {
                return Self::upper(index).min(self.max);
            }
        }
        self.max
    }

    /// (value, fraction of values at or below it) at every bucket used: a CDF to plot.
    pub fn cdf(&self) -> Vec<(u64, f64)> {
        let mut seen = 0;
        self.buckets()
            .filter(|(_, c)| *c > 0)
            .map(|(index, count)| {
                seen += count;
                (
                    Self::upper(index).min(self.max),
                    seen as f64 / self.total as f64,
                )
            })
            .collect()
    }

    pub fn summary(&self) -> Latency {
        Latency {
            p50: self.quantile(0.5),
            p99: self.quantile(0.99),
            max: self.max,
            mean: if self.total == 0 {
                0.0
            } else {
                (self.sum as f64 / self.total as f64 * 10.0).round() / 10.0
            },
        }
    }
}

/// Equal when they hold the same values, however the buckets are stored.
impl PartialEq for Histogram {
    fn eq(&self, other: &Histogram) -> bool {
        let used =
            |h: &Histogram| -> Vec<(usize, u64)> { h.buckets().filter(|(_, c)| *c > 0).collect() };
        (self.total, self.sum, self.max) == (other.total, other.sum, other.max)
            && used(self) == used(other)
    }
}
impl Eq for Histogram {}

/// Latency percentiles in nanoseconds: p50 and p99 the upper bounds of their histogram buckets
/// (at most 6.25 % above the value; [`Histogram::is_exact`] says when they are the value), max
/// exact.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub mean: f64,
}

/// One flow's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowReport {
    /// The flow's names, shared with its description and with the other flows' reports.
    pub name: Arc<str>,
    pub src: Arc<str>,
    pub dst: Arc<str>,
    /// The SL; on an Ethernet run, the flow's priority.
    pub sl: u8,
    pub management: bool,
    pub sent_packets: u64,
    pub delivered_packets: u64,
    /// Payload bytes delivered.
    pub delivered_bytes: u64,
    /// Delivered payload over the flow's active time (start to stop, within the run).
    pub throughput_gbps: f64,
    pub latency_ns: Latency,
    /// Dropped anywhere: an SL mapped to VL15 or to a VL the link does not run (at the source
    /// or a switch), or no route.
    pub dropped_packets: u64,
    /// Still in the fabric or the source queue when the run ended.
    pub in_flight_packets: u64,
    /// DCQCN's view of the flow, on an Ethernet run with `[dcqcn]`. Boxed: the other runs'
    /// rows, hundreds of thousands in an all-to-all, hold 8 bytes for it instead of 48.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dcqcn: Option<Box<FlowDcqcnReport>>,
    /// InfiniBand congestion control's view of the flow, on a run with it. Boxed, as `dcqcn`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub congestion_control: Option<Box<FlowCcReport>>,
}

/// One flow under InfiniBand congestion control: its packets marked FECN on the way, the
/// BECNs that reached its source, and its reaction point's index into the table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowCcReport {
    pub fecn_marked: u64,
    pub becns_received: u64,
    /// The highest index a BECN raised it to, and the index at the end of the run (0 for a
    /// flow whose SL is not controlled).
    pub max_ccti: u16,
    pub final_ccti: u16,
}

/// One flow under DCQCN: the CNPs its notification point (the destination) sent and its
/// reaction point (the source) received, and the rates the reaction point set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowDcqcnReport {
    /// CNPs the destination sent for the flow's ECN-marked frames.
    pub cnps_sent: u64,
    /// CNPs that reached the source (the rest were dropped or still in flight).
    pub cnps_received: u64,
    /// Times the reaction point lowered the rate (the first CNP's and each cut).
    pub rate_cuts: u64,
    /// The rate at the end of the run, and the lowest of the run (the line rate when the flow
    /// had no reaction point or no CNP).
    pub final_rate_gbps: f64,
    pub min_rate_gbps: f64,
}

/// All flows of one SL together (management flows excluded); on an Ethernet run, of one
/// priority.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SlReport {
    pub sl: u8,
    pub flows: usize,
    pub delivered_bytes: u64,
    /// Delivered payload over the run's duration.
    pub throughput_gbps: f64,
    pub latency_ns: Latency,
    pub dropped_packets: u64,
}

/// One VL in one direction of one link, as the sending port saw it (blocking) and the receiving
/// port's buffer held it (occupancy).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VlReport {
    pub vl: u8,
    /// Packets whose transmission started.
    pub packets: u64,
    /// Bytes that left the port during the run: headers included, in whole 64-byte blocks (of
    /// a packet still leaving at the end, the blocks sent by then).
    pub bytes: u64,
    pub throughput_gbps: f64,
    /// This VL's part of the bytes the link carried.
    pub share: f64,
    /// This VL's part of the link's capacity over the run.
    pub utilization: f64,
    /// Time a packet waited at the head of this VL for credits.
    pub blocked_ns: u64,
    /// Receive buffer occupancy at the far end, time-averaged and peak (management VL15: the
    /// bytes waiting, without a credit limit).
    pub buffer_mean_bytes: f64,
    pub buffer_peak_bytes: u64,
    /// Packets dropped here because the switch's SL-to-VL table maps their SL to VL15 (counted
    /// on VL15), or to this VL, which the link does not run.
    pub dropped_packets: u64,
}

/// One direction of one link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// `NODE[PORT]`.
    pub from: String,
    pub to: String,
    pub gbps: f64,
    pub bytes: u64,
    pub utilization: f64,
    /// The VLs that carried, held, blocked or dropped anything, ascending (empty on Ethernet).
    pub vls: Vec<VlReport>,
    /// An Ethernet link direction's traffic classes and priorities (absent on InfiniBand).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ethernet: Option<EthernetLinkReport>,
    /// Under InfiniBand congestion control: the data packets its sending port marked FECN.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fecn_marked: Option<u64>,
}

/// One direction of an Ethernet link: what its sending port's egress queues (traffic classes)
/// sent, and per priority the frames, the pauses and what the receiving end dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EthernetLinkReport {
    /// The traffic classes that sent anything, ascending.
    pub traffic_classes: Vec<TrafficClassReport>,
    /// The priorities that sent, were paused or dropped anything, ascending.
    pub priorities: Vec<PriorityReport>,
}

/// One egress queue (traffic class) of an Ethernet port: the lane the ETS scheduler serves.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrafficClassReport {
    pub tc: u8,
    /// Frames started, and the bytes that left the port during the run (RoCEv2 frames:
    /// payload + 62, no preamble or gap; of a frame still leaving at the end, the bytes sent by
    /// then).
    pub frames: u64,
    pub bytes: u64,
    pub throughput_gbps: f64,
    /// This class's part of the bytes the link carried.
    pub share: f64,
    /// This class's part of the link's capacity over the run (frame bytes only, so a link
    /// sending back to back stays a little under 1).
    pub utilization: f64,
}

/// One priority in one direction of an Ethernet link, as both ends count it: the sender's
/// frames and pause time, the receiver's pause frames and drops.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorityReport {
    pub priority: u8,
    /// Frames whose transmission ended, and their bytes.
    pub frames: u64,
    pub bytes: u64,
    pub throughput_gbps: f64,
    /// Time the sending port had this priority paused.
    pub paused_ns: u64,
    /// Pause frames naming this priority that the receiving port sent (its buffer's Xoff,
    /// refreshes and Xon, or a pause storm there).
    pub pause_frames_sent: u64,
    /// Pause frames the sending port received that acted on this priority.
    pub pause_frames_received: u64,
    /// Frames of this priority the receiving switch dropped on arrival (buffer full).
    pub dropped_packets: u64,
    /// The most the receiving switch port's headroom for this priority's PG held.
    pub headroom_peak_bytes: u64,
    /// Frames of this priority the sending switch port marked ECN CE at its egress queue.
    pub ecn_marks: u64,
}

/// One Ethernet switch's shared buffer: the peak of every pool its configuration defines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchReport {
    pub name: String,
    pub pools: Vec<PoolReport>,
}

/// The most shared space a pool (`iPool0`, `ePool1`, ...) held at once.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolReport {
    pub pool: String,
    pub peak_bytes: u64,
}

/// Bytes each VL sent on one link direction in each interval of the run, for plots.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Timeline {
    pub from: String,
    pub to: String,
    pub interval_ns: u64,
    /// (VL, bytes per interval).
    pub vls: Vec<(u8, Vec<u64>)>,
}

/// Each DCQCN flow's rate over time, on the timeline's intervals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DcqcnRates {
    pub interval_ns: u64,
    /// Each flow with a reaction point, and its rate in Gb/s at the end of each interval.
    pub flows: Vec<(String, Vec<f64>)>,
}

/// Each flow under InfiniBand congestion control: its index into the table over time, on the
/// timeline's intervals.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CctiTimeline {
    pub interval_ns: u64,
    /// Each flow with a reaction point, and its CCTI at the end of each interval.
    pub flows: Vec<(String, Vec<u16>)>,
}

/// Ethernet: what the switches' shared buffers held at the end of each timeline interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BufferOccupancy {
    pub interval_ns: u64,
    /// Per switch (in node order): every pool the configuration defines, then each port's
    /// iPort.PG and ePort.TC regions that held anything at some sample (the rest are zero
    /// throughout, left out so that a fabric of thousands of ports stays readable).
    pub series: Vec<OccupancySeries>,
}

/// One pool's or region's bytes at the end of each interval. A pool counts its shared bytes
/// ([`crate::shared_buffer::SwitchBuffer::pool_used`]); an iPort.PG region its reserved, shared
/// and headroom bytes; an ePort.TC region its reserved and shared bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OccupancySeries {
    pub switch: String,
    /// The port of a region (absent for a pool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u8>,
    /// `iPool0`, `ePool1`, `iPort.pg3`, `ePort.tc3`, ...
    pub region: String,
    pub bytes: Vec<u64>,
}

/// Everything a run measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub seed: u64,
    pub duration_ns: u64,
    pub events: u64,
    /// Packets sent on a link: one per packet per hop.
    pub packet_hops: u64,
    pub flows: Vec<FlowReport>,
    pub sls: Vec<SlReport>,
    pub links: Vec<LinkReport>,
    /// Ethernet: every switch's pool peaks (absent on InfiniBand).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub switches: Vec<SwitchReport>,
    /// Per SL (management flows excluded), the latency histogram, for CDF plots.
    #[serde(skip)]
    pub sl_latency: Vec<(u8, Histogram)>,
    /// The busiest link direction's bytes per VL over time, when asked for.
    #[serde(skip)]
    pub timeline: Option<Timeline>,
    /// Ethernet with `[dcqcn]`, when a timeline is recorded: each flow's DCQCN rate over time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dcqcn_rates: Option<DcqcnRates>,
    /// InfiniBand with `[congestion_control]`, when a timeline is recorded: each flow's CCTI
    /// over time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ccti: Option<CctiTimeline>,
    /// Ethernet, when a timeline is recorded: the switch buffers' occupancy over time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer_occupancy: Option<BufferOccupancy>,
    /// InfiniBand, on one core: the credit loop that stopped the run, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadlock: Option<Deadlock>,
}

/// A credit loop that stopped the fabric for good: full receive buffers, each waiting for
/// credits that only the next one's packets leaving could return. The run stopped when it was
/// found; nothing moved after `at_ns`, so the report's figures are those of a fabric frozen
/// from then to the run's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Deadlock {
    /// When the watch found it (the loop closed up to one watch interval before).
    pub at_ns: u64,
    /// Every channel that can never send again: the cycle's, and those stuck behind it.
    pub stuck_channels: usize,
    /// One cycle among the stuck channels, in the order packets go: each channel's packets
    /// wait in the receive buffer at the far end of the one before it, for the next channel's
    /// credits. It starts at its smallest channel. A node is named by its index in the
    /// network: a topology's [`ibqos_fabric::NodeId`] when built from one.
    #[serde(skip)]
    pub cycle: Vec<Channel>,
    /// `cycle` as the credit-loop checker prints it, `"S1"/P3 VL0`.
    #[serde(rename = "cycle")]
    pub cycle_names: Vec<String>,
}

/// What a lane (a VL, or an Ethernet traffic class) or an Ethernet priority of one port sent:
/// packets and blocks (bytes on Ethernet), counted as each packet starts.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub(crate) struct Sent {
    pub(crate) packets: u64,
    pub(crate) blocks: u64,
}

/// Six significant decimals: enough for any report, and the same digits on every run.
pub(crate) fn round(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values() {
        for value in [0u64, 1, 15, 16, 17, 31, 32, 33, 100, 1_000, 65_535, 1 << 40] {
            let i = Histogram::index(value);
            assert!(Histogram::upper(i) >= value, "{value}");
            assert!(i == 0 || Histogram::upper(i - 1) < value, "{value}");
            // Within 1/16 of the value.
            assert!(Histogram::upper(i) - value <= value / 16, "{value}");
        }
    }

    #[test]
    fn a_quantile_is_exact_only_when_its_bucket_holds_nothing_smaller() {
        // Below 32 every bucket holds one value.
        assert!((0..32).all(Histogram::is_exact));
        // 96 to 99 share a bucket: 96 is its lowest value, 97 and 99 bounds.
        assert!(Histogram::is_exact(96));
        assert!(!Histogram::is_exact(97) && !Histogram::is_exact(99));
        // 100 and 101 recorded: the median is 100, given as 101 (the bucket's edge, 103,
        // capped at the largest value): a bound. A lone value is its bucket's lowest: exact.
        let mut h = Histogram::default();
        h.record(100);
        h.record(101);
        assert_eq!(h.quantile(0.5), 101);
        assert!(!Histogram::is_exact(h.quantile(0.5)));
        let mut lone = Histogram::default();
        lone.record(96);
        assert!(Histogram::is_exact(lone.quantile(0.5)));
    }

    #[test]
    fn quantiles_and_merge() {
        let mut h = Histogram::default();
        for v in 1..=100 {
            h.record(v * 10);
        }
        let s = h.summary();
        assert!((490..=530).contains(&s.p50), "{s:?}");
        assert!((980..=1000).contains(&s.p99), "{s:?}");
        assert_eq!(s.max, 1000);
        let mut low = Histogram::default();
        low.record(3);
        low.merge(&h);
        assert_eq!(low.count(), 101);
        assert_eq!(low.quantile(0.0), 3);
        assert_eq!(Histogram::default().summary().p99, 0);
        assert_eq!(h.cdf().last().map(|p| p.1), Some(1.0));
    }

    /// Values in one bucket are kept without the bucket list, and read back as they would be
    /// with it: quantiles, CDF, merges either way, equality.
    #[test]
    fn one_bucket_held_inline_reads_as_a_list() {
        let mut lone = Histogram::default();
        lone.record(100);
        lone.record(101);
        assert!(lone.counts.is_empty(), "{lone:?}");
        assert_eq!((lone.quantile(0.5), lone.quantile(1.0)), (101, 101));
        assert_eq!(lone.cdf(), vec![(101, 1.0)]);
        let mut merged = Histogram::default();
        merged.merge(&lone);
        assert!(!merged.counts.is_empty());
        assert_eq!(merged, lone);
        // A value in another bucket, below and above: the list is spelled out.
        let mut wide = lone.clone();
        wide.record(7);
        wide.record(5_000);
        assert_eq!(wide.count(), 4);
        assert_eq!(wide.quantile(0.25), 7);
        // 100 and 101 share the bucket up to 103, no longer capped by the largest value.
        assert_eq!(wide.quantile(0.75), 103);
        assert_eq!(wide.cdf().len(), 3);
        let mut other = Histogram::default();
        other.merge(&wide);
        other.merge(&lone);
        assert_eq!(other.count(), 6);
        assert_eq!(other.quantile(0.5), 103);
        assert_ne!(other, wide);
    }

    proptest::proptest! {
        /// Recording the same values in another order gives the same histogram, down to how
        /// its buckets are held: what lets the engine record a batch of deliveries sorted by
        /// flow rather than as they happen.
        #[test]
        fn the_order_of_records_changes_nothing(
            values in proptest::collection::vec(0u64..100_000, 0..60),
            rotate in 0usize..60,
        ) {
            let mut reordered = values.clone();
            reordered.sort_unstable();
            let shift = rotate.min(reordered.len());
            reordered.rotate_left(shift);
            let (mut a, mut b) = (Histogram::default(), Histogram::default());
            values.iter().for_each(|v| a.record(*v));
            reordered.iter().for_each(|v| b.record(*v));
            proptest::prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
        }
    }
}
