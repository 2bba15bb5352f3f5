//! InfiniBand congestion control in the run ([`crate::cc`] holds the rules): where a switch
//! marks FECN, how the BECN gets back, and how a source paces a flow.
//!
//! The choices, and why:
//! - **Marking.** A data packet is judged as it starts leaving a switch port, against the blocks
//!   queued behind it in its VL queue: a lone packet on an idle link is not congestion. The queue is a
//!   victim when the packet behind lacks credits after this one took its own: the
//!   downstream, not this port, holds it up.
//! - **BECN.** The destination's answer is not a packet in the run: it reaches the source
//!   out of band, after the flow's path back (each hop's propagation and the wire time of a
//!   one-block packet: an ACK carrying BTH.BECN is 26 bytes). Modelling it as traffic would
//!   need a reverse flow per flow; its queueing on an uncongested return path is small.
//! - **Pacing.** Only greedy flows are paced, as DCQCN paces them: a flow with a rate of its
//!   own is held by its application. While its table entry gives a delay, the flow leaves its
//!   lane's rotation and sends a packet every wire time plus delay. A slot the port was too
//!   busy for is not made up. It rejoins the rotation once the entry gives no delay.
//! - **Reaction points.** One per flow (a QP), or with `Port_Control` bit 0 one per source
//!   port and SL, shared by its flows. SLs outside `Control_Map` never slow.
//! - **Cost.** A run without congestion control checks one `Option` per packet sent at a
//!   switch or delivered; its events and report are those of a run before this module.

use std::collections::HashMap;

use super::{Event, NO_PORT, Simulation};
use crate::infiniband::cc::{CcParams, Marker, ReactionPoint};
use crate::network::NodeKind;
use crate::report::{CctiTimeline, FlowCcReport};

/// No reaction point: a flow whose SL is not controlled.
const UNCONTROLLED: u32 = u32::MAX;

/// The most hops a BECN's way back is followed: far more than any fabric's diameter, and a
/// bound on a routing loop.
const MAX_HOPS: usize = 64;

/// The run's congestion control state.
#[derive(Debug)]
pub(crate) struct CcState {
    params: CcParams,
    /// Per lane, the marker of a switch port's VL queue.
    markers: Vec<Marker>,
    /// Per flow, its reaction point in `points`, or [`UNCONTROLLED`].
    point_of: Vec<u32>,
    points: Vec<ReactionPoint>,
    /// Per reaction point, with a timeline: its state after each BECN and when. The index
    /// between BECNs follows from it (the timer is a function of time), so the report replays
    /// it at each interval's end instead of the run sampling it.
    histories: Vec<Vec<(u64, ReactionPoint)>>,
    flows: Vec<FlowCc>,
    /// Per port, the packets it marked FECN as they left it.
    pub(super) fecn_marked: Vec<u64>,
}

/// What the run keeps of one flow under congestion control.
#[derive(Debug, Clone, Copy, Default)]
struct FlowCc {
    /// From delivery at the destination to the BECN reaching the source.
    becn_return_ps: u64,
    /// Out of the rotation, sending at the table's delay.
    paced: bool,
    /// A pace event is queued (it may outlive `paced`: it then ends the pacing).
    pacing: bool,
    marked: u64,
    becns: u64,
    max_ccti: u16,
}

impl<'n> Simulation<'n> {
    /// Sets up congestion control when the network has it on.
    pub(super) fn start_congestion_control(&mut self) {
        let Some(params) = self.layout.network.congestion_control.clone() else {
            return;
        };
        // Every lane gets a marker; only a switch port's are asked.
        let mut markers = vec![params.marker(0, 0); self.fabric.lanes.len()];
        for (state, slot) in self.fabric.states.iter().zip(&self.layout.ports) {
            let marker = params.marker(state.num, slot.link.vl_buffer_blocks);
            for lane in state.lanes() {
                markers[lane] = marker;
            }
        }
        let mut shared: HashMap<(u32, u8), u32> = HashMap::new();
        let mut points = Vec::new();
        let mut point_of = Vec::with_capacity(self.layout.specs.len());
        let mut flows = Vec::with_capacity(self.layout.specs.len());
        for (i, spec) in self.layout.specs.iter().enumerate() {
            let sl = spec.sl.get();
            let port = self.sources.flows[i].port;
            let point = if spec.management || !params.controls(sl) {
                UNCONTROLLED
            } else if params.per_sl {
                *shared.entry((port, sl)).or_insert_with(|| {
                    points.push(ReactionPoint::default());
                    points.len() as u32 - 1
                })
            } else {
                points.push(ReactionPoint::default());
                points.len() as u32 - 1
            };
            point_of.push(point);
            flows.push(FlowCc {
                becn_return_ps: self.path_back_ps(port, spec.dlid),
                ..FlowCc::default()
            });
        }
        let histories = if self.layout.options.timeline_intervals > 0 {
            vec![Vec::new(); points.len()]
        } else {
            Vec::new()
        };
        self.cc = Some(Box::new(CcState {
            params,
            markers,
            point_of,
            points,
            histories,
            flows,
            fecn_marked: vec![0; self.fabric.states.len()],
        }));
    }

    /// The time a BECN takes from the destination of packets leaving `port` for `dlid` back
    /// to `port`: per hop of their path, its propagation and a one-block packet's wire time.
    pub(super) fn path_back_ps(&self, mut port: u32, dlid: u16) -> u64 {
        let network = self.layout.network;
        let mut total = 0;
        for _ in 0..MAX_HOPS {
            let state = self.fabric.states[port as usize];
            if state.peer == NO_PORT {
                break;
            }
            let kind = &self.layout.kinds[usize::from(state.kind)];
            total += kind.propagation_ps + kind.wire_ps.get(1).copied().unwrap_or(0);
            let peer = self.fabric.states[state.peer as usize];
            let node = &network.nodes[peer.node as usize];
            match (node.kind, node.route(dlid)) {
                (NodeKind::Switch, Some(out)) => {
                    port = self.layout.node_base[peer.node as usize] + u32::from(out);
                }
                _ => break,
            }
        }
        total
    }

    /// Whether the data packet `packet` of `blocks`, starting to leave switch port `port` by
    /// its lane `lane`, is marked FECN; `starved` says the lane's next packet lacks credits.
    #[inline(never)]
    pub(super) fn mark_fecn(&mut self, port: u32, lane: usize, packet: u32, starved: bool) {
        let Some(cc) = self.cc.as_deref_mut() else {
            return;
        };
        let p = self.fabric.packets[packet as usize];
        let mut queue = 0;
        let mut next = self.fabric.lanes[lane].first;
        while next != super::NO_PACKET {
            let q = &self.fabric.packets[next as usize];
            queue += u32::from(q.blocks);
            next = q.next;
        }
        if cc.markers[lane].mark(queue, p.blocks, starved) {
            cc.fecn_marked[port as usize] += 1;
            cc.flows[p.flow as usize].marked += 1;
            self.fabric.packets[packet as usize].ce = true;
        }
    }

    /// A packet of `flow` marked FECN reached its destination: the BECN is on its way back.
    pub(super) fn return_becn(&mut self, flow: u32) {
        let now = self.clock.now;
        if let Some(cc) = self.cc.as_deref() {
            let at = now + cc.flows[flow as usize].becn_return_ps;
            self.clock.queue.push(now, at, Event::Becn { flow });
        }
    }

    /// A BECN for `flow` reached its source: its reaction point raises the index, and a
    /// greedy flow the table now delays is paced.
    pub(super) fn becn_arrive(&mut self, flow: u32) {
        let now = self.clock.now;
        let (greedy, port) = (
            self.sources.flows[flow as usize].greedy,
            self.sources.flows[flow as usize].port,
        );
        let sl_number = self.layout.specs[flow as usize].sl.get();
        self.sample_notification(port, sl_number, true);
        let Some(cc) = self.cc.as_deref_mut() else {
            return;
        };
        let f = &mut cc.flows[flow as usize];
        f.becns += 1;
        let point = cc.point_of[flow as usize];
        if point == UNCONTROLLED {
            return;
        }
        let sl = &cc.params.sls[usize::from(sl_number)];
        let limit = cc.params.cct.len() as u16 - 1;
        let rp = &mut cc.points[point as usize];
        rp.on_becn(sl, limit, now);
        let ccti = rp.ccti(sl, now);
        if let Some(history) = cc.histories.get_mut(point as usize) {
            history.push((now, *rp));
        }
        f.max_ccti = f.max_ccti.max(ccti);
        let delayed = cc.params.cct[usize::from(ccti)].multiplier > 0;
        if greedy && delayed && !f.paced {
            f.paced = true;
            let start = !f.pacing;
            f.pacing = true;
            self.leave_rotation(flow);
            if start {
                self.clock.queue.push(now, now, Event::CcPace { flow });
            }
        }
    }

    /// A paced flow's next packet: into its source queue unless its last one is still there,
    /// and the next one its wire time plus the table's delay later; or back to the rotation
    /// once the table gives no delay.
    pub(super) fn cc_pace(&mut self, flow: u32) {
        let now = self.clock.now;
        let state = &self.sources.flows[flow as usize];
        let (port, vl, blocks, stop) = (state.port, state.vl, state.blocks, state.stop_ps);
        let lane = self.lane(port, vl);
        let waiting = self.queued_frame_of(lane, flow);
        let packet_ps = self.serialization(port, blocks);
        let Some(cc) = self.cc.as_deref_mut() else {
            return;
        };
        let point = cc.point_of[flow as usize];
        let sl = &cc.params.sls[usize::from(self.layout.specs[flow as usize].sl.get())];
        let delay = cc.points[point as usize].delay_ps(sl, &cc.params.cct, packet_ps, now);
        let f = &mut cc.flows[flow as usize];
        if now >= stop {
            (f.paced, f.pacing) = (false, false);
            return;
        }
        if delay == 0 {
            (f.paced, f.pacing) = (false, false);
            self.rejoin_rotation(flow);
            return;
        }
        if !waiting {
            self.sources.hot[flow as usize].sent += 1;
            let packet = self.alloc(flow, vl);
            self.enqueue(port, vl, packet);
            self.try_send(port);
        }
        let next = now + packet_ps + delay;
        self.clock.queue.push(now, next, Event::CcPace { flow });
    }

    /// Flow `flow`'s congestion control counts, on a run with congestion control.
    pub(super) fn flow_cc(&self, flow: usize) -> Option<Box<FlowCcReport>> {
        let end = self.layout.options.duration_ps;
        let cc = self.cc.as_deref()?;
        let f = cc.flows[flow];
        let point = cc.point_of[flow];
        let final_ccti = if point == UNCONTROLLED {
            0
        } else {
            let sl = &cc.params.sls[usize::from(self.layout.specs[flow].sl.get())];
            // A copy: the report does not move the run's timers.
            let mut rp = cc.points[point as usize];
            rp.ccti(sl, end)
        };
        Some(Box::new(FlowCcReport {
            fecn_marked: f.marked,
            becns_received: f.becns,
            max_ccti: f.max_ccti,
            final_ccti,
        }))
    }

    /// Each controlled flow's index at the end of each timeline interval (of `interval_ns`), on
    /// a run with congestion control and a timeline.
    pub(super) fn ccti_timeline(&self, interval_ns: u64) -> Option<CctiTimeline> {
        let cc = self.cc.as_deref()?;
        let intervals = self.layout.options.timeline_intervals as u64;
        let duration = self.layout.options.duration_ps;
        let flows = (self.layout.specs.iter().zip(&cc.point_of))
            .filter(|(_, point)| **point != UNCONTROLLED)
            .map(|(spec, &point)| {
                let sl = &cc.params.sls[usize::from(spec.sl.get())];
                let history = &cc.histories[point as usize];
                let ccti = (1..=intervals)
                    .map(|i| {
                        let end = duration * i / intervals;
                        // The state after the last BECN by then, its timer run on to the end.
                        let last = history.partition_point(|(at, _)| *at <= end);
                        last.checked_sub(1).map_or(0, |k| {
                            let mut rp = history[k].1;
                            rp.ccti(sl, end)
                        })
                    })
                    .collect();
                (spec.name.to_string(), ccti)
            })
            .collect();
        Some(CctiTimeline { interval_ns, flows })
    }
}
