//! The discrete-event engine: packets, credits and arbitration, port by port.
//!
//! The model, and why:
//! - **Packets, not flits.** Arbitration happens only at packet boundaries and a packet's blocks
//!   follow back to back (as in Mellanox's flit-level model `ib_flit_sim`, `src/vlarb.cc`), so
//!   one event per packet per hop is exact for arbitration and 65x cheaper than flits for 4 KB
//!   packets (65 blocks each).
//! - **Store and forward.** A packet is received when its last bit arrives (serialization +
//!   propagation after it started) and only then is forwarded.
//! - **Credits.** Every data VL of every receive port has a buffer of `vl_buffer_blocks` 64-byte
//!   blocks. A sender starts a packet only when it holds credits for all of it (IBA link-level
//!   flow control) and spends them at once. The receiver frees the blocks when the packet has
//!   left it (a switch: when its transmission out of the next port ends; a host: on arrival)
//!   and the credits reach the sender `credit_latency + propagation` later.
//! - **Switch buffering.** A packet waits in the queue of the output port and VL it will leave
//!   by, while holding its credits in the input port's buffer; so a congested output
//!   back-pressures its inputs, and through their credits everything upstream of them.
//! - **VL15** outranks every data VL and is not flow-controlled (IBA C7-18): its packets never
//!   wait for credits and are served first at every packet boundary.
//! - **SL to VL per hop.** A host uses its port's table, a switch the table of the (input,
//!   output) pair. A data packet whose SL maps to VL15 is dropped there and counted. So is one
//!   mapped to a VL the link does not run (at or above the OperVLs of either end): neither end
//!   has a buffer for it.
//! - **Sources.** A flow with a rate generates packets on a fixed schedule (with a seeded
//!   phase) into an unbounded source queue; a flow with rate 0 always has a packet ready, and
//!   several such flows on one port and VL take turns. Latency runs from a packet's creation
//!   to its delivery, so a rate-limited flow's includes its wait at the source.
//!
//! # Lossless Ethernet (`flow_control = "pfc"`)
//! A run is all InfiniBand or all Ethernet: with [`Network::ethernet`] every link is an Ethernet
//! link of one rate, and the same events, sources, queues and reports carry it, in these terms
//! (the `ethernet` submodule holds the state, apart from what an InfiniBand hop reads):
//! - **Units.** Sizes are counted in units: 64-byte blocks on InfiniBand, bytes on Ethernet,
//!   where a packet is a RoCEv2 frame of payload + 62 bytes ([`crate::frame_bytes`]) that
//!   takes (frame + 20) x 8 / rate on the wire (preamble and inter-frame gap). Reports turn
//!   units into bytes in one place.
//! - **Priorities and lanes.** A flow's class is its priority (0-7, given by the source host's
//!   QoS settings from its PCP or DSCP; carried in the flow's and the packet's SL field) and
//!   rides the packet unchanged. A port's lanes are its eight traffic classes, the ETS dot1p
//!   map's class of each priority (VL15's lane is never used).
//! - **Sender.** No credits (a lane's allowance never runs out). A class may send when it has
//!   a head packet and no priority mapped to it is paused. The pause stops the whole queue, so
//!   a lossy priority that shares a class with a paused lossless one waits too: give lossless
//!   priorities classes of their own. Among the classes that may send, the port's ETS
//!   [`crate::ets::Scheduler`] picks, in place of the VL arbiter. When none may send until some time (a pause's end, a
//!   rate bucket's refill) the port is woken then, by one event. A frame already started
//!   finishes.
//! - **Switch buffer.** A frame arriving at a switch is admitted by the switch's
//!   [`crate::shared_buffer::SwitchBuffer`] (ingress PG by the buffer's priority map, egress TC
//!   by the ETS map), or dropped and counted per ingress port and priority; it is freed when
//!   its transmission out of the egress port ends, as InfiniBand frees its input buffer. A
//!   host receives without limit (it drains at line rate).
//! - **Pause frames.** The buffer's Xoff and Xon of a lossless PG go to the ingress port's
//!   [`crate::pfc::PauseGenerator`], which refreshes the pause while it lasts (an event at its
//!   refresh time). A frame reaches the peer its own wire time (64 + 20 bytes) and the cable
//!   later, **out of band**: it neither waits for the data frame being sent the other way nor
//!   delays the next one. Why: the engine keeps no per-direction time of the frame in progress
//!   on the reverse path, and the worst case that waiting adds (one maximum frame) is in
//!   [`crate::pfc::headroom_bytes`] already, so a headroom sized by it still holds. The peer's
//!   [`crate::pfc::PauseResponder`] counts it on arrival and applies it after its response
//!   delay. `pfc_delay` (the SONiC plan's delay of the sending tester port) applies to host
//!   ports; a switch port obeys within its own response time (`response_quanta`, by default
//!   the IEEE limit for the speed).
//! - **Occupancy.** With a timeline, an event at each interval's end (before the others of its
//!   time) samples every switch's pools and its ports' non-empty iPort.PG and ePort.TC regions
//!   ([`crate::report::BufferOccupancy`]).
//! - **Storms.** A `[[storm]]` host port sends pause frames for its priorities from its start
//!   to its stop time ([`crate::pfc::PauseStorm`]), counted as pause frames sent and received;
//!   global frames in global mode, where they stop every priority.
//! - **DCQCN** (`[ecn]`, `[dcqcn]`). ECN: a data frame queued on a switch's egress class is
//!   marked CE by [`crate::dcqcn::EcnMarker`] on the class's queued bytes, this frame included
//!   (random words from `mix(seed, draw number)`, so a run is repeatable); CNPs are never marked.
//!   Notification point: a marked frame delivered at a host may get a CNP
//!   ([`crate::dcqcn::NotificationPoint`]). A CNP is a real frame of 78 bytes: the RoCEv2
//!   CNP has 16 reserved bytes after the BTH ([`crate::CNP_PAYLOAD_BYTES`]). It goes on the
//!   CNP priority (the host's trust mode applied to its PCP and DSCP), queued ahead of greedy
//!   traffic on the destination's port. It is routed to the flow's source like data, subject
//!   to pauses and buffers. One dropped is counted nowhere but in the flow's `cnps_sent` -
//!   `cnps_received`. Reaction point: a greedy flow of a priority with one gets a
//!   [`crate::dcqcn::ReactionPoint`]. While limited, the flow leaves its lane's rotation and
//!   sends a frame every (frame + 20) x 8 / rate. The frame enters its source queue only when
//!   the previous one has left it: a slot the port was too busy for is lost, not made up. The
//!   flow rejoins the rotation when released. Its timers are events only while it has one. Flows with a rate
//!   of their own have no reaction point (their application's rate is the limit).
//!
//! # More than one core
//! [`Parallel`] runs an InfiniBand fabric in partitions of its nodes, a thread each, and gives
//! the report one core gives, byte for byte ([`crate::window`] says how). Each partition is a
//! whole [`Simulation`] that takes only the events of its own ports; what its ports push for
//! another partition's (an arrival, a credit return: only across a link) crosses at the
//! window's end, and the report is put together from each port's and flow's owner.
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

mod congestion;
mod deadlock;
mod parallel;
mod report;
mod run;
mod sample;
mod setup;

use deadlock::Watch;
use report::Counts;
use run::{Clock, Fabric, Sources};
use setup::Layout;

use crate::ethernet::state as ethernet;

pub use parallel::{Parallel, Ranked, Run, WindowCost};
pub use sample::{LaneCount, PortSample};

use crate::infiniband::arbiter::ArbiterOptions;
use crate::infiniband::link::{LinkParams, Speed, Width};
use crate::network::{Flow, Network, NetworkError};
use crate::report::{Histogram, Report, Sent};

/// VLs a port can name: data VLs 0-14 and VL15; the timeline counts each.
const VLS: usize = 16;
const VL15: u8 = 15;

/// The parameters of a port without a link: never used, as such a port sends nothing.
const UNLINKED: LinkParams = LinkParams {
    speed: Speed::Sdr,
    width: Width::X4,
    propagation_ps: 0,
    vl_buffer_blocks: 0,
    credit_latency_ps: 0,
};

/// How a run is set up besides the network and flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SimOptions {
    pub duration_ps: u64,
    /// Seeds the phase of every rate-limited flow; the same seed gives the same run.
    pub seed: u64,
    pub arbiter: ArbiterOptions,
    /// Intervals to record bytes per VL per link in, for [`Report::timeline`]; 0 records none
    /// (and saves ports x VLs x intervals counters).
    pub timeline_intervals: usize,
}

/// What happens at a time, 12 bytes (so that a queued event, with its time and push number,
/// takes 32).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) enum Event {
    /// A flow's start time: it generates (a rate flow, or a flow its source drops).
    Start { flow: u32 },
    /// A greedy flow's start time: it joins the rotation of its port's lane of `vl`. The port
    /// and VL ride the event, so that neither this nor [`Event::Stop`] reads the flow's
    /// description (every flow's, in a run of many: a table of tens of megabytes).
    Join { flow: u32, port: u32, vl: u8 },
    /// A flow generates its next packet (rate flows, and any flow its source drops).
    Inject { flow: u32 },
    /// A greedy flow's stop time; its port and lane's VL, as [`Event::Join`].
    Stop { flow: u32, port: u32, vl: u8 },
    /// A port finished sending a packet that held `blocks` of `release`'s buffer on `vl`
    /// ([`NO_PORT`] for a packet that left its source).
    TxDone {
        port: u32,
        release: u32,
        vl: u8,
        blocks: u16,
    },
    /// A packet's last bit reached `port`.
    Arrive { port: u32, packet: u32 },
    /// Credits for `blocks` of VL `vl` reached the sending port `port`.
    Credit { port: u32, vl: u8, blocks: u16 },
    /// Ethernet: `port` may send again (a pause ran out, or an ETS rate bucket filled).
    Wake { port: u32 },
    /// Ethernet: pause frame `frame` (an index into the Ethernet state's frames) reached `port`.
    PauseArrive { port: u32, frame: u32 },
    /// Ethernet: pause frame `frame` takes hold at `port`, its response delay after arriving.
    PauseApply { port: u32, frame: u32 },
    /// Ethernet: the pause refresh of ingress port `port` is due.
    Refresh { port: u32 },
    /// Ethernet: pause storm number `storm` sends its next frame.
    Storm { storm: u32 },
    /// DCQCN: a timer of `flow`'s reaction point is due.
    RpTimer { flow: u32 },
    /// DCQCN: `flow`, paced by its reaction point, may send its next frame.
    Pace { flow: u32 },
    /// InfiniBand congestion control: a BECN for `flow` reached its source.
    Becn { flow: u32 },
    /// InfiniBand congestion control: `flow`, paced by its table's delay, may send its next
    /// packet.
    CcPace { flow: u32 },
    /// Ethernet: timeline interval `interval` ends; the switch buffers are sampled (before
    /// any other event of this time).
    Sample { interval: u32 },
}

const _: () = assert!(size_of::<Event>() == 12);

/// What the run reads of a kind of link (a fabric has a handful): its delays, and the
/// serialization time of a packet of each size in units, up to the largest a flow sends,
/// worked out once (a division per packet-hop is dear).
#[derive(Debug)]
struct LinkKind {
    propagation_ps: u64,
    /// From a receive buffer freeing blocks to the credits reaching the peer: credit latency
    /// plus propagation.
    credit_return_ps: u64,
    wire_ps: Vec<u64>,
}

/// The first lane of a port that has none here (another partition's, [`Parallel`]): past the
/// end of the lanes, so that any use of it fails at once.
const NO_LANES: u32 = u32::MAX / 2;

/// No packet: the end of a lane's queue.
pub(crate) const NO_PACKET: u32 = u32::MAX;

/// What every event at a port reads of it, 32 bytes, two to a cache line: where its lanes
/// are and their state as bit sets by VL, its peer and its kind of link (a copy of what
/// [`PortSlot`] describes, which the run reads only to set up and report). Its arbiter, read
/// only when it sends, is apart ([`Simulation::arbiters`]): in one line with this, a fabric
/// of 43,000 ports needed 2.8 MB for what each arrival and release reads of a port. A port
/// has a lane for each data VL its link runs and one for VL15, in VL order: an 8-VL fabric
/// needs 9 of the 16 VLs a port could name.
#[derive(Debug, Clone, Copy)]
#[repr(align(32))]
pub(crate) struct PortState {
    /// The port at the other end of the link, [`NO_PORT`] for an unlinked port.
    pub(crate) peer: u32,
    pub(crate) node: u32,
    pub(crate) num: u8,
    /// The link's kind, an index into [`Simulation::kinds`] (65,536 at most).
    pub(crate) kind: u16,
    /// The index of the port's first lane (VL0's).
    pub(crate) base: u32,
    /// The data VLs the link runs, as [`PortSlot::vls`]; VL15's lane follows theirs.
    pub(crate) vls: u8,
    /// Sending a packet.
    pub(crate) busy: bool,
    /// VLs with a packet at their head.
    pub(crate) queued: u16,
    /// VLs whose head packet lacks credits.
    pub(crate) starved: u16,
    /// VLs whose wait for credits is being timed: starved while the port is idle.
    pub(crate) waiting: u16,
    /// The arbiter granted nothing when last asked.
    pub(crate) refused: bool,
    /// The peer is another partition's ([`Parallel`]): what the port pushes for it crosses.
    pub(crate) far: bool,
}

const _: () = assert!(size_of::<PortState>() == 32, "two port states to a line");

impl PortState {
    /// The index of the lane of `vl`, which is VL15 or one of the data VLs the port runs:
    /// VL15's lane is the one after the last data VL's.
    pub(crate) fn lane(&self, vl: u8) -> usize {
        self.base as usize + usize::from(vl.min(self.vls))
    }

    /// The index of the lane of `vl`, if the port has one.
    fn lane_of(&self, vl: u8) -> Option<usize> {
        (vl < self.vls || vl == VL15).then(|| self.lane(vl))
    }

    /// Notes whether the lane of `vl`, `lane`, has a head packet and whether that lacks
    /// credits; returns the latter (VL15 never lacks them).
    fn note_head(&mut self, vl: u8, lane: &Lane) -> bool {
        let head = lane.head();
        let starved = vl != VL15 && head > 0 && lane.credits < u32::from(head);
        let bit = 1u16 << vl;
        if head > 0 {
            self.queued |= bit;
        } else {
            self.queued &= !bit;
        }
        if starved {
            self.starved |= bit;
        } else {
            self.starved &= !bit;
        }
        starved
    }

    /// The indices of the port's lanes.
    pub(crate) fn lanes(&self) -> std::ops::Range<usize> {
        self.lane(0)..self.lane(VL15) + 1
    }
}

/// One VL of one port as a sender, 32 bytes, two to a cache line: what arbitration reads (the
/// head's size and the credits), its queue and what it sent, so that sending a packet touches
/// one line of the lane, and a fabric's lanes take half the cache they would alone in a line.
/// The greedy flows taking turns on it ([`Simulation::rotations`]: only source ports have
/// any) and its wait for credits ([`Simulation::waits`]: rare) are apart.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[repr(align(32))]
pub(crate) struct Lane {
    pub(crate) sent: Sent,
    /// Credits toward the peer, in blocks.
    pub(crate) credits: u32,
    /// The queue of packets waiting to leave by this lane, linked through
    /// [`Packet::next`]: its first and last packet, [`NO_PACKET`] when empty.
    pub(crate) first: u32,
    pub(crate) last: u32,
    /// Blocks of the first packet of the queue (0: none), so that the head's size is known
    /// without reading the packet.
    pub(crate) first_blocks: u16,
    /// Blocks of a packet of the greedy flow whose turn it is (0: none), kept by
    /// [`Simulation::greedy_turn`].
    pub(crate) greedy: u16,
}

const _: () = assert!(size_of::<Lane>() == 32, "two lanes to a cache line");

impl Default for Lane {
    fn default() -> Self {
        Lane {
            sent: Sent::default(),
            credits: 0,
            first: NO_PACKET,
            last: NO_PACKET,
            first_blocks: 0,
            greedy: 0,
        }
    }
}

impl Lane {
    /// Blocks of the packet at the head (0: none): the first queued, else the greedy flow's
    /// whose turn it is.
    pub(crate) fn head(&self) -> u16 {
        if self.first_blocks > 0 {
            self.first_blocks
        } else {
            self.greedy
        }
    }
}

/// The greedy flows taking turns on a lane, and at least the stopped flows still among them
/// (a flow stopped while out of the rotation, paced by DCQCN, is counted and never found):
/// while 0, no turn asks whether its flow stopped.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rotation {
    pub(crate) turns: VecDeque<Turn>,
    pub(crate) stopping: u32,
}

/// A greedy flow's place in its lane's rotation, 16 bytes: what its packets copy, and the
/// packets it sent since they were last added to [`FlowHot::sent`]. So neither the arbiter
/// reading a lane's head nor a greedy packet's making touches the flow table (a random line
/// per source hop, in a table of every flow).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turn {
    pub(crate) flow: u32,
    pub(crate) sent: u32,
    pub(crate) shape: Shape,
}

/// What one VL of a port's receive buffer holds, 16 bytes, four to a cache line: its
/// occupancy and peak, and its occupancy integrated over the run (for the mean). The integral
/// is kept as it will be at the run's end if nothing else changes. Blocks taken in with `left`
/// picoseconds of the run left add `blocks x left`; blocks freed take theirs back off. So no time of the last change
/// is kept, and at the end `to_end` is the integral. It is at most the peak times the run's
/// length; past 2^64 block-picoseconds (a flood on VL15, which has no credits, for long) the
/// high part is carried out ([`Buffer::change`]).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
struct Buffer {
    occupancy: u32,
    peak: u32,
    /// The low 64 bits of the integral to the end, in block-picoseconds.
    to_end: u64,
}

const _: () = assert!(size_of::<Buffer>() == 16, "four buffers to a line");

impl Buffer {
    /// Takes in (`fill`) or frees `blocks` with `left_ps` of the run left; returns what
    /// carries out of `to_end`'s 64 bits (a count of 2^64s, negative when borrowed), which is
    /// 0 but on a run of 2^64 block-picoseconds or more.
    fn change(&mut self, blocks: u32, left_ps: u64, fill: bool) -> i64 {
        let integral = u128::from(blocks) * u128::from(left_ps);
        // Below 2^96: the high part fits an i64.
        let (low, high) = (integral as u64, (integral >> 64) as i64);
        if fill {
            self.occupancy += blocks;
            self.peak = self.peak.max(self.occupancy);
            let (sum, carried) = self.to_end.overflowing_add(low);
            self.to_end = sum;
            high + i64::from(carried)
        } else {
            self.occupancy -= blocks;
            let (difference, borrowed) = self.to_end.overflowing_sub(low);
            self.to_end = difference;
            -high - i64::from(borrowed)
        }
    }

    /// The occupancy integrated over the run so far and to its end (the whole run's, once it
    /// has ended), in block-picoseconds, given the count of 2^64s carried out of `to_end`.
    fn integral(&self, carried: i64) -> u128 {
        ((i128::from(carried) << 64) + i128::from(self.to_end)) as u128
    }
}

/// What the run keeps of a flow besides its description (the caller's, read through
/// [`Simulation::specs`]: a partition of a [`Parallel`] run copies none of it), 40 bytes.
#[derive(Debug)]
pub(crate) struct FlowState {
    pub(crate) blocks: u32,
    pub(crate) port: u32,
    /// The VL at the source; [`VL15`] for a data flow its source drops.
    pub(crate) vl: u8,
    pub(crate) greedy: bool,
    /// The end of its time: its stop time, or the run's end if that comes first.
    pub(crate) stop_ps: u64,
    /// First generation time of a rate flow (start plus the seeded phase).
    pub(crate) origin: u64,
    pub(crate) generated: u64,
}

const _: () = assert!(size_of::<FlowState>() == 40);

/// A flow's delivered packets: their latencies, whose count is the packets delivered. The one
/// part of a flow a delivery touches ([`Simulation::record_deliveries`]), alone in a cache
/// line, so that it reads one line of the flow besides the histogram's buckets.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Tally {
    latency: Histogram,
}

const _: () = assert!(size_of::<Tally>() == 64, "a tally fills one cache line");

/// What a packet copies from its flow: its destination, size and SL (priority).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Shape {
    pub(crate) dlid: u16,
    /// At most 65 blocks (a 4 KB payload), or 4158 bytes (its frame) on Ethernet.
    pub(crate) blocks: u16,
    pub(crate) sl: u8,
    pub(crate) management: bool,
}

/// The part of a flow that every packet it sends touches, 16 bytes, apart from its
/// description and latency histogram: what a new packet copies, the packets sent (but those
/// a greedy flow's [`Turn`] holds), and whether a greedy flow is past its stop time (it leaves
/// its lane's rotation at the front).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct FlowHot {
    pub(crate) sent: u64,
    pub(crate) shape: Shape,
    pub(crate) stopped: bool,
}

impl FlowHot {
    /// The turn of `flow` (this one's) as it joins its lane's rotation.
    pub(crate) fn turn(&self, flow: u32) -> Turn {
        Turn {
            flow,
            sent: 0,
            shape: self.shape,
        }
    }
}

/// The deliveries logged before [`Simulation::record_deliveries`] puts them in their flows'
/// tallies: one per flow (8 bytes each), within these bounds.
const DELIVERY_BATCH: std::ops::RangeInclusive<usize> = (1 << 14)..=(1 << 20);

/// No port: where a packet at its source is held.
pub(crate) const NO_PORT: u32 = u32::MAX;

/// A packet in flight, 32 bytes. It carries what forwarding needs (a copy of its flow's LID,
/// SL, size), so that a hop touches the flow table only when the packet is delivered or
/// dropped.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(crate) struct Packet {
    pub(crate) created: u64,
    pub(crate) flow: u32,
    /// The port whose receive buffer holds it, [`NO_PORT`] at its source.
    pub(crate) in_port: u32,
    /// The next packet in the lane queue it waits in ([`NO_PACKET`]: the last), and its
    /// blocks: what becomes the lane's head when this one leaves, known without reading it.
    pub(crate) next: u32,
    pub(crate) next_blocks: u16,
    pub(crate) dlid: u16,
    pub(crate) blocks: u16,
    pub(crate) in_vl: u8,
    pub(crate) vl: u8,
    pub(crate) sl: u8,
    pub(crate) management: bool,
    /// Ethernet: ECN Congestion Experienced, set by a switch's egress queue. InfiniBand:
    /// BTH.FECN, set by a switch port under congestion control.
    pub(crate) ce: bool,
    /// Ethernet: a DCQCN CNP for `flow`, on its way back to the flow's source.
    pub(crate) cnp: bool,
}

const _: () = assert!(size_of::<Packet>() == 32);

/// A run in progress. [`Simulation::run_until`] can be called in steps (for a progress bar);
/// the events processed, and so the report, do not depend on the steps.
///
/// Its parts belong to the engine's rooms. Set-up works out the `Layout`; the event loop
/// changes the `Fabric`, the `Sources` and the `Clock`; the report reads the `Counts`. The
/// Ethernet link mode and a partition of a parallel run keep their own state.
#[derive(Debug)]
pub struct Simulation<'n> {
    pub(crate) layout: Layout<'n>,
    pub(crate) fabric: Fabric,
    pub(crate) sources: Sources,
    pub(crate) clock: Clock,
    pub(crate) counts: Counts,
    /// The lossless-Ethernet state of a `pfc` run, apart from everything an InfiniBand hop
    /// reads; `None` on InfiniBand, which is the one check where the paths part.
    pub(crate) eth: Option<Box<ethernet::EthernetState>>,
    /// The partition this is of a [`Parallel`] run; `None` in a run of one.
    split: Option<Box<parallel::Split>>,
    /// The deadlock watch of an InfiniBand run on one core; `None` on Ethernet and in a
    /// partition.
    pub(crate) watch: Option<Watch>,
    /// InfiniBand congestion control, when the network has it on; `None` in any other run.
    pub(crate) cc: Option<Box<congestion::CcState>>,
    /// The per-port counts of a sampled run ([`Simulation::sampled`]); `None` in any other.
    pub(crate) sampler: Option<Box<sample::Sampler>>,
}

/// Runs `flows` over `network` for the whole duration.
pub fn simulate(
    network: &Network,
    flows: &[Flow],
    options: SimOptions,
) -> Result<Report, NetworkError> {
    Ok(Simulation::new(network, flows, options)?.finish())
}

#[cfg(test)]
mod tests;
