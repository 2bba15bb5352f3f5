//! The end of a run: the counts put in place and the report made of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::run::units_sent_by;
use super::{Buffer, FlowState, Simulation, Tally, VLS};
use crate::infiniband::arbiter::BLOCK_BYTES;
use crate::infiniband::link::PS_PER_NS;
use crate::network::Flow;
use crate::report::{
    FlowReport, Histogram, LinkReport, Report, SlReport, Timeline, VlReport, round,
};

/// What the run counts for its report.
#[derive(Debug)]
pub(crate) struct Counts {
    /// Per lane, its time waiting for credits while its port is idle, in picoseconds, as it
    /// will be at the run's end if nothing else changes, as [`Buffer`] keeps its integral: a
    /// wait that starts with `left` of the run left adds `left`, its end takes its own `left`
    /// back off. At most the run's length.
    pub(super) waits: Vec<u64>,
    /// Per lane, its receive buffer.
    pub(super) buffers: Vec<Buffer>,
    /// Per lane, the 2^64s carried out of its [`Buffer::to_end`], for the few (if any) that
    /// have any.
    pub(super) carried: BTreeMap<usize, i64>,
    /// Data packets dropped at an output port, by port and VL: those mapped to VL15 or to a VL
    /// the link does not run, which has no lane. Rare, so kept apart from the lanes.
    pub(super) dropped: BTreeMap<(u32, u8), u64>,
    /// Per flow, its delivered packets' latencies.
    pub(super) tallies: Vec<Tally>,
    /// Deliveries not yet in their flows' tallies: the flow in the high 32 bits, the latency
    /// in ns in the low 32 (a latency of 2^32 ns, 4.3 s, or more is recorded at once).
    pub(super) deliveries: Vec<u64>,
    /// The deliveries [`Simulation::record_deliveries`] takes at a time.
    pub(super) delivery_batch: usize,
    /// Per flow, the packets dropped: apart from the tallies, as few packets are.
    pub(super) flow_drops: Vec<u64>,
    pub(super) packet_hops: u64,
    /// `[port][interval][VL]` blocks sent, when recording a timeline.
    pub(crate) timeline: Vec<u64>,
}

impl<'n> Simulation<'n> {
    /// Runs to the end (if not there yet) and reports.
    pub fn finish(mut self) -> Report {
        self.finish_in_place()
    }

    /// [`Simulation::finish`] for a simulation the caller cannot give up (one that borrows
    /// the set-up it is kept with): it is spent afterwards.
    pub(crate) fn finish_in_place(&mut self) -> Report {
        self.run_until(self.layout.options.duration_ps);
        self.close();
        self.report()
    }

    /// At the end of the run: puts every count where the report reads it (the deliveries in
    /// their tallies, the rotations' packets in their flows). The waits and buffer integrals
    /// are kept as at the end throughout.
    pub(super) fn close(&mut self) {
        let end = self.layout.options.duration_ps;
        self.clock.now = end;
        self.record_deliveries();
        self.settle_turns();
    }

    /// The report of a closed run.
    pub(super) fn report(&mut self) -> Report {
        let end = self.layout.options.duration_ps;
        let links = self.link_reports();
        let timeline = self.timeline_report(&links);
        self.finish_dcqcn();
        let (sls, sl_latency) = self.sl_reports();
        let switches = self.switch_reports();
        let dcqcn_rates = timeline
            .as_ref()
            .and_then(|t| self.dcqcn_rates(t.interval_ns));
        let buffer_occupancy = timeline
            .as_ref()
            .and_then(|t| self.buffer_occupancy(t.interval_ns));
        let ccti = timeline
            .as_ref()
            .and_then(|t| self.ccti_timeline(t.interval_ns));
        // The flows' reports come last. Each source port's name is made once: a run of many
        // flows has few source ports.
        let mut source_names: Vec<Option<Arc<str>>> = vec![None; self.layout.ports.len()];
        let flows: Vec<FlowReport> = (0..)
            .zip(&self.sources.flows)
            .zip(&self.sources.hot)
            .zip(&self.counts.tallies)
            .zip(&self.counts.flow_drops)
            .map(|((((i, f), hot), tally), &dropped)| {
                let src = source_names[f.port as usize]
                    .get_or_insert_with(|| self.port_name(f.port).into())
                    .clone();
                let spec = &self.layout.specs[i];
                let mut report = Self::flow_report(spec, f, src, hot.sent, tally, dropped);
                report.dcqcn = self.flow_dcqcn(i);
                report.congestion_control = self.flow_cc(i);
                report
            })
            .collect();
        Report {
            seed: self.layout.options.seed,
            duration_ns: end / PS_PER_NS,
            events: self.clock.events,
            packet_hops: self.counts.packet_hops,
            flows,
            sls,
            links,
            switches,
            sl_latency,
            dcqcn_rates,
            ccti,
            buffer_occupancy,
            timeline,
            deadlock: self.watch.take().and_then(|watch| watch.found),
        }
    }

    pub(crate) fn port_name(&self, port: u32) -> String {
        let info = self.layout.ports[port as usize];
        format!(
            "{}[{}]",
            self.layout.network.nodes[info.node as usize].name, info.num
        )
    }

    pub(crate) fn gbps(bytes: u64, ps: u64) -> f64 {
        if ps == 0 {
            return 0.0;
        }
        round(bytes as f64 * 8.0 / ps as f64 * 1e3)
    }

    /// The report of flow `f`, described by `spec`, which leaves from the port named `src`.
    fn flow_report(
        spec: &Flow,
        f: &FlowState,
        src: Arc<str>,
        sent: u64,
        tally: &Tally,
        dropped: u64,
    ) -> FlowReport {
        let delivered = tally.latency.count();
        let bytes = delivered * u64::from(spec.payload);
        let active = f.stop_ps.saturating_sub(spec.start_ps);
        FlowReport {
            name: Arc::clone(&spec.name),
            src,
            dst: Arc::clone(&spec.dst_name),
            sl: spec.sl.get(),
            management: spec.management,
            sent_packets: sent,
            delivered_packets: delivered,
            delivered_bytes: bytes,
            throughput_gbps: Self::gbps(bytes, active),
            latency_ns: tally.latency.summary(),
            dropped_packets: dropped,
            in_flight_packets: sent - delivered - dropped,
            dcqcn: None,
            congestion_control: None,
        }
    }

    fn sl_reports(&self) -> (Vec<SlReport>, Vec<(u8, Histogram)>) {
        /// What the data flows of one SL add up to, in one pass over the flows.
        #[derive(Default)]
        struct Sum {
            flows: usize,
            latency: Histogram,
            bytes: u64,
            dropped: u64,
        }
        let mut sums: [Sum; 16] = Default::default();
        for ((f, tally), &dropped) in self
            .layout
            .specs
            .iter()
            .zip(&self.counts.tallies)
            .zip(&self.counts.flow_drops)
        {
            if f.management {
                continue;
            }
            let sum = &mut sums[usize::from(f.sl.get())];
            sum.flows += 1;
            sum.latency.merge(&tally.latency);
            sum.bytes += tally.latency.count() * u64::from(f.payload);
            sum.dropped += dropped;
        }
        (0..)
            .zip(sums)
            .filter(|(_, sum)| sum.flows > 0)
            .map(|(sl, sum)| {
                let report = SlReport {
                    sl,
                    flows: sum.flows,
                    delivered_bytes: sum.bytes,
                    throughput_gbps: Self::gbps(sum.bytes, self.layout.options.duration_ps),
                    latency_ns: sum.latency.summary(),
                    dropped_packets: sum.dropped,
                };
                (report, (sl, sum.latency))
            })
            .unzip()
    }

    /// The timeline interval of time `at` (when recording one).
    pub(crate) fn interval_of(&self, at: u64) -> usize {
        let intervals = self.layout.options.timeline_intervals;
        let interval = (u128::from(at) * intervals as u128
            / u128::from(self.layout.options.duration_ps.max(1))) as usize;
        interval.min(intervals - 1)
    }

    /// Counts in the timeline the `counted` units, of a packet of `units` taking
    /// `serialization_ps`, that `port` starts sending on `vl` now: in each interval the units
    /// that left the port during it, so that no interval holds more than the link carries.
    pub(super) fn count_in_timeline(
        &mut self,
        port: u32,
        vl: u8,
        units: u32,
        serialization_ps: u64,
        counted: u64,
    ) {
        let (start, intervals) = (self.clock.now, self.layout.options.timeline_intervals);
        let duration = u128::from(self.layout.options.duration_ps.max(1));
        let mut interval = self.interval_of(start);
        let mut before = 0;
        while before < counted {
            // Interval k ends where interval_of reaches k + 1; the last one at the run's end.
            let end = (((interval + 1) as u128 * duration).div_ceil(intervals as u128)) as u64;
            let by_end = if interval + 1 == intervals {
                counted
            } else {
                units_sent_by(units, serialization_ps, end - start).min(counted)
            };
            let index = self.timeline_index(port, interval, vl);
            self.counts.timeline[index] += by_end - before;
            before = by_end;
            interval += 1;
        }
    }

    /// Where the timeline counts the blocks `port` sent on `vl` in interval `interval`.
    fn timeline_index(&self, port: u32, interval: usize, vl: u8) -> usize {
        (port as usize * self.layout.options.timeline_intervals + interval) * VLS + usize::from(vl)
    }

    /// The bytes of the engine's unit of size: a 64-byte block on InfiniBand, a byte on
    /// Ethernet. Reports convert sizes here.
    fn unit_bytes(&self) -> u64 {
        match self.eth {
            Some(_) => 1,
            None => u64::from(BLOCK_BYTES),
        }
    }

    /// Every linked port and its peer, in port order: one per direction of each link.
    fn linked_ports(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..)
            .zip(&self.layout.ports)
            .filter_map(|(port, slot)| Some((port, slot.peer?)))
    }

    fn link_reports(&self) -> Vec<LinkReport> {
        let duration = self.layout.options.duration_ps;
        let block = self.unit_bytes();
        self.linked_ports()
            .map(|(p, peer)| {
                let info = self.layout.ports[p as usize];
                let (near, far) = (
                    self.fabric.states[p as usize],
                    self.fabric.states[peer as usize],
                );
                let total: u64 = self.fabric.lanes[near.lanes()]
                    .iter()
                    .map(|l| l.sent.blocks * block)
                    .sum();
                let gbps = match &self.eth {
                    Some(eth) => eth.gbps(),
                    None => info.link.gbps(),
                };
                let capacity_bits = gbps * duration as f64 / 1e3;
                let fraction = |bytes: u64, of: f64| {
                    if of > 0.0 {
                        round(bytes as f64 / of)
                    } else {
                        0.0
                    }
                };
                if self.eth.is_some() {
                    return LinkReport {
                        from: self.port_name(p),
                        to: self.port_name(peer),
                        gbps: round(gbps),
                        bytes: total,
                        utilization: fraction(total * 8, capacity_bits),
                        vls: Vec::new(),
                        ethernet: Some(self.ethernet_link(p, peer, capacity_bits)),
                        fecn_marked: None,
                    };
                }
                // Both ends of a link run the same VLs; a VL without a lane only drops.
                let vls = (0..VLS as u8)
                    .filter_map(|vl| {
                        let dropped = self.counts.dropped.get(&(p, vl)).copied().unwrap_or(0);
                        let (s, blocked_ps) =
                            near.lane_of(vl).map_or_else(Default::default, |lane| {
                                (self.fabric.lanes[lane].sent, self.counts.waits[lane])
                            });
                        let (f, area) = far.lane_of(vl).map_or_else(Default::default, |lane| {
                            let carried = self.counts.carried.get(&lane).copied().unwrap_or(0);
                            (
                                self.counts.buffers[lane],
                                self.counts.buffers[lane].integral(carried),
                            )
                        });
                        (s.packets > 0 || dropped > 0 || blocked_ps > 0 || f.peak > 0)
                            .then_some((vl, s, blocked_ps, f, area, dropped))
                    })
                    .map(|(vl, s, blocked_ps, f, area, dropped)| {
                        let bytes = s.blocks * block;
                        VlReport {
                            vl,
                            packets: s.packets,
                            bytes,
                            throughput_gbps: Self::gbps(bytes, duration),
                            share: fraction(bytes, total as f64),
                            utilization: fraction(bytes * 8, capacity_bits),
                            blocked_ns: blocked_ps / PS_PER_NS,
                            buffer_mean_bytes: round(
                                area as f64 * block as f64 / duration.max(1) as f64,
                            ),
                            buffer_peak_bytes: u64::from(f.peak) * block,
                            dropped_packets: dropped,
                        }
                    })
                    .collect();
                LinkReport {
                    from: self.port_name(p),
                    to: self.port_name(peer),
                    gbps: round(gbps),
                    bytes: total,
                    utilization: fraction(total * 8, capacity_bits),
                    vls,
                    ethernet: None,
                    fecn_marked: self.cc.as_deref().map(|cc| cc.fecn_marked[p as usize]),
                }
            })
            .collect()
    }

    /// The busiest link direction's bytes per VL per interval (the first of equals).
    fn timeline_report(&self, links: &[LinkReport]) -> Option<Timeline> {
        let intervals = self.layout.options.timeline_intervals;
        if intervals == 0 {
            return None;
        }
        let linked: Vec<u32> = self.linked_ports().map(|(port, _)| port).collect();
        let (busiest, link) = linked
            .iter()
            .zip(links)
            .rev()
            .max_by_key(|(_, l)| l.bytes)?;
        // The lanes that carried anything: VLs, or an Ethernet port's traffic classes.
        let lanes: Vec<u8> = match &link.ethernet {
            Some(eth) => eth.traffic_classes.iter().map(|t| t.tc).collect(),
            None => link
                .vls
                .iter()
                .filter(|v| v.bytes > 0)
                .map(|v| v.vl)
                .collect(),
        };
        let unit = self.unit_bytes();
        let vls = lanes
            .into_iter()
            .map(|vl| {
                let series = (0..intervals)
                    .map(|i| self.counts.timeline[self.timeline_index(*busiest, i, vl)] * unit)
                    .collect();
                (vl, series)
            })
            .collect();
        Some(Timeline {
            from: link.from.clone(),
            to: link.to.clone(),
            interval_ns: self.layout.options.duration_ps / intervals as u64 / PS_PER_NS,
            vls,
        })
    }
}
