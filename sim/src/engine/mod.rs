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
//!   output) pair; a data packet whose SL maps to VL15 is dropped there and counted, and so is
//!   one mapped to a VL the link does not run (at or above the OperVLs of either end): neither
//!   end has a buffer for it.
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
//!   a head packet and no priority mapped to it is paused (the pause stops the queue, so a
//!   lossy priority that shares a class with a paused lossless one waits too: give lossless
//!   priorities classes of their own); among those, the port's ETS [`crate::ets::Scheduler`]
//!   picks, in place of the VL arbiter. When none may send until some time (a pause's end, a
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
//!   ([`crate::dcqcn::NotificationPoint`]), a real frame of 78 bytes (the RoCEv2 CNP: 16
//!   reserved bytes after the BTH, [`crate::CNP_PAYLOAD_BYTES`]) on the CNP priority
//!   (the host's trust mode applied to its PCP and DSCP), queued ahead of greedy traffic on the
//!   destination's port and routed to the flow's source like data, subject to pauses and
//!   buffers; one dropped is counted nowhere but in the flow's `cnps_sent` - `cnps_received`.
//!   Reaction point: a greedy flow of a priority with one gets a
//!   [`crate::dcqcn::ReactionPoint`]; while limited it leaves its lane's rotation and sends a
//!   frame every (frame + 20) x 8 / rate, into its source queue only when its previous frame
//!   has left it (a slot the port was too busy for is lost, not made up), and rejoins the
//!   rotation when released. Its timers are events only while it has one. Flows with a rate
//!   of their own have no reaction point (their application's rate is the limit).
//!
//! # More than one core
//! [`Parallel`] runs an InfiniBand fabric in partitions of its nodes, a thread each, and gives
//! the report one core gives, byte for byte ([`crate::window`] says how). Each partition is a
//! whole [`Simulation`] that takes only the events of its own ports; what its ports push for
//! another partition's (an arrival, a credit return: only across a link) crosses at the
//! window's end, and the report is put together from each port's and flow's owner.
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

mod parallel;

use crate::ethernet::engine as ethernet;

pub use parallel::{Parallel, Run};

use crate::infiniband::arbiter::{Arbiter, ArbiterOptions, ArbiterTables, BLOCK_BYTES};
use crate::infiniband::link::{
    CNP_PAYLOAD_BYTES, LinkParams, PS_PER_NS, Speed, Width, ethernet_wire_ps, frame_bytes,
    wire_blocks,
};
use crate::network::{Flow, Network, NetworkError, NodeKind, PortAddr};
use crate::queue::Queue;
use crate::report::{FlowReport, Histogram, LinkReport, Report, SlReport, Timeline, VlReport};

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
#[derive(Debug, Clone, Copy)]
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
    /// Ethernet: timeline interval `interval` ends; the switch buffers are sampled (before
    /// any other event of this time).
    Sample { interval: u32 },
}

const _: () = assert!(size_of::<Event>() == 12);

/// One port of the network, as the engine indexes it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PortSlot {
    pub(crate) node: u32,
    pub(crate) num: u8,
    /// The port at the other end of the link, `None` for an unlinked port.
    pub(crate) peer: Option<u32>,
    pub(crate) link: LinkParams,
    /// The data VLs the link runs: VL0 up to one below this, the lower OperVLs of its ends.
    pub(crate) vls: u8,
}

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

/// What one VL of one port sent: packets and blocks, counted as each packet starts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Sent {
    pub(crate) packets: u64,
    pub(crate) blocks: u64,
}

/// One VL of one port as a sender, 32 bytes, two to a cache line: what arbitration reads (the
/// head's size and the credits), its queue and what it sent, so that sending a packet touches
/// one line of the lane, and a fabric's lanes take half the cache they would alone in a line.
/// The greedy flows taking turns on it ([`Simulation::rotations`]: only source ports have
/// any) and its wait for credits ([`Simulation::waits`]: rare) are apart.
#[derive(Debug, Clone, Copy)]
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
/// occupancy and peak, and its occupancy integrated over the run (for the mean) as it will be
/// at the run's end if nothing else changes: blocks taken in with `left` picoseconds of the run
/// left add `blocks x left`, blocks freed take theirs back off. So no time of the last change
/// is kept, and at the end `to_end` is the integral. It is at most the peak times the run's
/// length; past 2^64 block-picoseconds (a flood on VL15, which has no credits, for long) the
/// high part is carried out ([`Buffer::change`]).
#[derive(Debug, Clone, Copy, Default)]
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
#[derive(Debug, Clone, Copy)]
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
#[derive(Debug, Clone, Copy)]
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
#[derive(Debug, Clone, Copy)]
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
    /// Ethernet: ECN Congestion Experienced, set by a switch's egress queue.
    pub(crate) ce: bool,
    /// Ethernet: a DCQCN CNP for `flow`, on its way back to the flow's source.
    pub(crate) cnp: bool,
}

const _: () = assert!(size_of::<Packet>() == 32);

/// A run in progress. [`Simulation::run_until`] can be called in steps (for a progress bar);
/// the events processed, and so the report, do not depend on the steps.
#[derive(Debug)]
pub struct Simulation<'n> {
    pub(crate) network: &'n Network,
    pub(crate) options: SimOptions,
    pub(crate) ports: Vec<PortSlot>,
    /// Per kind of link ([`PortState::kind`]), its delays and wire times.
    kinds: Vec<LinkKind>,
    /// The arbitration tables the ports' arbiters read, and the arbiter options.
    arbiter_tables: ArbiterTables,
    /// Per port, its arbiter.
    arbiters: Vec<Arbiter>,
    pub(crate) node_base: Vec<u32>,
    pub(crate) lanes: Vec<Lane>,
    /// Per lane of a host's port (the first lanes, [`Simulation::with_lanes_of`]), the greedy
    /// flows taking turns on it: only a flow's source has any.
    pub(crate) rotations: Vec<Rotation>,
    /// Per lane, its time waiting for credits while its port is idle, in picoseconds, as it
    /// will be at the run's end if nothing else changes, as [`Buffer`] keeps its integral: a
    /// wait that starts with `left` of the run left adds `left`, its end takes its own `left`
    /// back off. At most the run's length.
    waits: Vec<u64>,
    buffers: Vec<Buffer>,
    /// Per lane, the 2^64s carried out of its [`Buffer::to_end`], for the few (if any) that
    /// have any.
    carried: BTreeMap<usize, i64>,
    /// Per port, what its events read: where its lanes are, what arbitration and the wait
    /// timing read of them, its peer and kind of link.
    pub(crate) states: Vec<PortState>,
    /// Data packets dropped at an output port, by port and VL: those mapped to VL15 or to a VL
    /// the link does not run, which has no lane. Rare, so kept apart from the lanes.
    dropped: BTreeMap<(u32, u8), u64>,
    /// The flows as the caller describes them, by index: read for what the run does not
    /// keep in [`FlowState`] (names, rates, sizes), at set-up, for rate flows and in the report.
    pub(crate) specs: &'n [Flow],
    pub(crate) flows: Vec<FlowState>,
    pub(crate) flow_hot: Vec<FlowHot>,
    tallies: Vec<Tally>,
    /// Deliveries not yet in their flows' tallies: the flow in the high 32 bits, the latency
    /// in ns in the low 32 (a latency of 2^32 ns, 4.3 s, or more is recorded at once).
    deliveries: Vec<u64>,
    /// The deliveries [`Simulation::record_deliveries`] takes at a time.
    delivery_batch: usize,
    /// Per flow, the packets dropped: apart from the tallies, as few packets are.
    flow_drops: Vec<u64>,
    pub(crate) packets: Vec<Packet>,
    pub(crate) free: Vec<u32>,
    pub(crate) queue: Queue<Event>,
    /// The flows' Start and Stop events, by time (in flow order among equal times), apart from
    /// the queue: they are known before the run and would otherwise fill it. They come before
    /// any queued event of the same time, as the events pushed first.
    pub(crate) schedule: Vec<(u64, Event)>,
    /// The next of `schedule` to handle.
    scheduled: usize,
    pub(crate) now: u64,
    events: u64,
    packet_hops: u64,
    /// `[port][interval][VL]` blocks sent, when recording a timeline.
    pub(crate) timeline: Vec<u64>,
    /// The lossless-Ethernet state of a `pfc` run, apart from everything an InfiniBand hop
    /// reads; `None` on InfiniBand, which is the one check where the paths part.
    pub(crate) eth: Option<Box<ethernet::EthernetState>>,
    /// The partition this is of a [`Parallel`] run; `None` in a run of one.
    split: Option<Box<parallel::Split>>,
}

/// SplitMix64: a seeded, order-independent hash for per-flow randomness.
pub(crate) fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<'n> Simulation<'n> {
    /// Checks the network and flows and sets up the run at time 0.
    pub fn new(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
    ) -> Result<Simulation<'n>, NetworkError> {
        Self::with_lanes_of(network, flows, options, &|_| true)
    }

    /// [`Simulation::new`] with lanes (and their rotations, waits and buffers) only for the
    /// ports of the nodes `kept` says: a partition of a [`Parallel`] run, which never touches
    /// another partition's.
    fn with_lanes_of(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
        kept: &dyn Fn(usize) -> bool,
    ) -> Result<Simulation<'n>, NetworkError> {
        let mut node_base = Vec::with_capacity(network.nodes.len());
        let mut ports = Vec::new();
        for (i, node) in network.nodes.iter().enumerate() {
            let n = usize::from(node.num_ports) + 1;
            if node.lids.len() != n || node.arbitration.len() != n {
                return Err(NetworkError::BadTables {
                    name: node.name.clone(),
                    num_ports: node.num_ports,
                });
            }
            node_base.push(ports.len() as u32);
            ports.extend((0..=node.num_ports).map(|num| PortSlot {
                node: i as u32,
                num,
                peer: None,
                link: UNLINKED,
                vls: node.arbitration[usize::from(num)].oper_vls.count(),
            }));
        }
        let index = |addr: PortAddr, link: usize| -> Result<u32, NetworkError> {
            let node = network
                .nodes
                .get(addr.node)
                .ok_or(NetworkError::NoSuchNode {
                    index: link,
                    node: addr.node,
                    nodes: network.nodes.len(),
                })?;
            if addr.port > node.num_ports || (addr.port == 0 && node.kind == NodeKind::Switch) {
                return Err(NetworkError::NoSuchPort {
                    index: link,
                    name: node.name.clone(),
                    port: addr.port,
                    num_ports: node.num_ports,
                });
            }
            Ok(node_base[addr.node] + u32::from(addr.port))
        };
        for (i, link) in network.links.iter().enumerate() {
            let (a, b) = (index(link.a, i)?, index(link.b, i)?);
            for (from, to) in [(a, b), (b, a)] {
                let port = &mut ports[from as usize];
                if port.peer.is_some() {
                    return Err(NetworkError::LinkedTwice {
                        name: network.nodes[port.node as usize].name.clone(),
                        port: port.num,
                    });
                }
                port.peer = Some(to);
                port.link = link.params;
            }
            let vls = ports[a as usize].vls.min(ports[b as usize].vls);
            ports[a as usize].vls = vls;
            ports[b as usize].vls = vls;
        }
        let ethernet = network.ethernet.as_ref();
        if ethernet.is_some() {
            // An Ethernet port's lanes are its eight traffic classes.
            for port in &mut ports {
                port.vls = ethernet::TRAFFIC_CLASSES;
            }
        }
        let units = |payload| match ethernet {
            Some(_) => frame_bytes(payload),
            None => wire_blocks(payload),
        };
        // Each distinct link's time on the wire for every packet size a flow sends, worked out
        // once: a fabric has few kinds of links, and a division per packet-hop is dear.
        let largest = flows.iter().map(|f| units(f.payload)).max().unwrap_or(0);
        // An Ethernet run may send DCQCN's CNPs.
        let largest = match ethernet {
            Some(_) => largest.max(frame_bytes(CNP_PAYLOAD_BYTES)),
            None => largest,
        };
        let mut kind_of: HashMap<LinkParams, u16> = HashMap::new();
        let mut kinds = Vec::new();
        let mut arbiter_tables = ArbiterTables::new(options.arbiter);
        let mut arbiters = Vec::with_capacity(ports.len());
        let mut states = Vec::with_capacity(ports.len());
        // Each port's first lane, the hosts' ports' lanes first: only a flow's source, a host's
        // port, has greedy flows taking turns, so the rotations are kept for those lanes alone.
        let is_host = |port: &PortSlot| network.nodes[port.node as usize].kind == NodeKind::Host;
        let mut bases = vec![NO_LANES; ports.len()];
        let (mut lane_count, mut source_lanes) = (0u32, 0u32);
        for hosts in [true, false] {
            for (base, port) in bases.iter_mut().zip(&ports) {
                if is_host(port) == hosts && kept(port.node as usize) {
                    *base = lane_count;
                    lane_count += u32::from(port.vls) + 1;
                }
            }
            if hosts {
                source_lanes = lane_count;
            }
        }
        let mut lanes = vec![Lane::default(); lane_count as usize];
        for (port, &base) in ports.iter().zip(&bases) {
            let link = port.link;
            let kind = match kind_of.get(&link) {
                Some(&kind) => kind,
                None => {
                    let kind =
                        u16::try_from(kinds.len()).map_err(|_| NetworkError::TooManyLinkKinds)?;
                    kind_of.insert(link, kind);
                    kinds.push(LinkKind {
                        propagation_ps: link.propagation_ps,
                        credit_return_ps: link.credit_latency_ps + link.propagation_ps,
                        wire_ps: (0..=largest)
                            .map(|units| match ethernet {
                                Some(eth) => ethernet_wire_ps(units, eth.link_bps),
                                None => link.serialization_ps(units),
                            })
                            .collect(),
                    });
                    kind
                }
            };
            if base != NO_LANES {
                // Ethernet has no credits: an allowance that never runs out (what a frame
                // takes is given back when it has left).
                let credits = match ethernet {
                    Some(_) => u32::MAX,
                    None => port.link.vl_buffer_blocks,
                };
                let first = base as usize;
                for lane in &mut lanes[first..=first + usize::from(port.vls)] {
                    lane.credits = credits;
                }
            }
            let arb = &network.nodes[port.node as usize].arbitration[usize::from(port.num)];
            arbiters.push(arbiter_tables.arbiter(&arb.high, &arb.low, arb.high_limit));
            states.push(PortState {
                peer: port.peer.unwrap_or(NO_PORT),
                node: port.node,
                num: port.num,
                kind,
                base,
                vls: port.vls,
                busy: false,
                queued: 0,
                starved: 0,
                waiting: 0,
                refused: false,
                far: false,
            });
        }
        let mut sim = Simulation {
            network,
            specs: flows,
            options,
            states,
            dropped: BTreeMap::new(),
            ports,
            kinds,
            arbiter_tables,
            arbiters,
            node_base,
            rotations: vec![Rotation::default(); source_lanes as usize],
            waits: vec![0; lanes.len()],
            buffers: vec![Buffer::default(); lanes.len()],
            carried: BTreeMap::new(),
            lanes,
            flows: Vec::with_capacity(flows.len()),
            flow_hot: Vec::with_capacity(flows.len()),
            tallies: (0..flows.len()).map(|_| Tally::default()).collect(),
            deliveries: Vec::new(),
            delivery_batch: flows
                .len()
                .clamp(*DELIVERY_BATCH.start(), *DELIVERY_BATCH.end()),
            flow_drops: vec![0; flows.len()],
            packets: Vec::new(),
            free: Vec::new(),
            queue: Queue::default(),
            schedule: Vec::new(),
            scheduled: 0,
            now: 0,
            events: 0,
            packet_hops: 0,
            timeline: Vec::new(),
            eth: None,
            split: None,
        };
        if let Some(config) = ethernet {
            let state = ethernet::EthernetState::new(&sim, config)?;
            sim.eth = Some(Box::new(state));
            sim.start_storms();
        }
        // The greedy flows that will join each lane's rotation, to size it once: growing
        // every rotation as its flows start was a tenth of the flows' start events.
        let mut joining = vec![0usize; sim.rotations.len()];
        for (i, spec) in flows.iter().enumerate() {
            let state = sim.flow_state(spec, i as u64)?;
            if spec.start_ps < state.stop_ps {
                let flow = i as u32;
                if state.greedy && state.vl != VL15 {
                    let (port, vl) = (state.port, state.vl);
                    sim.schedule
                        .push((spec.start_ps, Event::Join { flow, port, vl }));
                    sim.schedule
                        .push((state.stop_ps, Event::Stop { flow, port, vl }));
                    if sim.states[port as usize].base != NO_LANES {
                        joining[sim.lane(port, vl)] += 1;
                    }
                } else {
                    sim.schedule.push((spec.start_ps, Event::Start { flow }));
                }
            }
            sim.flow_hot.push(FlowHot {
                sent: 0,
                shape: Shape {
                    dlid: spec.dlid,
                    blocks: state.blocks as u16,
                    sl: spec.sl.get(),
                    management: spec.management,
                },
                stopped: false,
            });
            sim.flows.push(state);
        }
        for (rotation, &flows) in sim.rotations.iter_mut().zip(&joining) {
            rotation.turns.reserve_exact(flows);
        }
        if sim.eth.is_some() {
            sim.start_dcqcn();
            sim.schedule_samples();
        }
        // Stable: equal times keep the order they were listed in.
        sim.schedule.sort_by_key(|(time, _)| *time);
        if options.timeline_intervals > 0 {
            sim.timeline = vec![0; sim.ports.len() * options.timeline_intervals * VLS];
        }
        Ok(sim)
    }

    fn flow_state(&self, flow: &Flow, index: u64) -> Result<FlowState, NetworkError> {
        let bad_source = || NetworkError::BadSource {
            flow: flow.name.to_string(),
            port: format!("node {} port {}", flow.src.node, flow.src.port),
        };
        let node = self
            .network
            .nodes
            .get(flow.src.node)
            .ok_or_else(bad_source)?;
        if node.kind != NodeKind::Host || flow.src.port == 0 || flow.src.port > node.num_ports {
            return Err(bad_source());
        }
        let port = self.node_base[flow.src.node] + u32::from(flow.src.port);
        let info = self.ports[port as usize];
        if info.peer.is_none() {
            return Err(bad_source());
        }
        if let Some(eth) = &self.eth {
            if flow.management {
                return Err(NetworkError::ManagementOnEthernet {
                    flow: flow.name.to_string(),
                });
            }
            return Ok(
                self.source_state(flow, index, port, frame_bytes(flow.payload), {
                    eth.traffic_class(flow.sl.get())
                }),
            );
        }
        let blocks = wire_blocks(flow.payload);
        if !flow.management && blocks > info.link.vl_buffer_blocks {
            return Err(NetworkError::BufferTooSmall {
                flow: flow.name.to_string(),
                payload: flow.payload,
                needed: blocks,
                buffer: info.link.vl_buffer_blocks,
            });
        }
        let vl = match node.sl2vl(0, flow.src.port).vl(flow.sl).get() {
            _ if flow.management => VL15,
            // No VL the link runs: the source drops it, as one mapped to VL15.
            vl if vl >= info.vls => VL15,
            vl => vl,
        };
        Ok(self.source_state(flow, index, port, blocks, vl))
    }

    /// A flow leaving from `port` on lane `vl` with packets of `blocks` units, at its start.
    fn source_state(&self, flow: &Flow, index: u64, port: u32, blocks: u32, vl: u8) -> FlowState {
        let stop = flow.stop_ps.min(self.options.duration_ps);
        let greedy = flow.rate_bps == 0;
        let phase = if greedy {
            0
        } else {
            // Uniform in one inter-packet gap, so that rate flows do not all fire together.
            let gap = self.gap_ps(flow, 1).max(1);
            mix(self.options.seed, index) % gap
        };
        FlowState {
            blocks,
            port,
            vl,
            greedy,
            stop_ps: stop,
            origin: flow.start_ps + phase,
            generated: 0,
        }
    }

    /// The time a rate flow takes to offer `packets` packets.
    fn gap_ps(&self, flow: &Flow, packets: u64) -> u64 {
        let bits = u128::from(packets) * u128::from(flow.payload) * 8;
        (bits * 1_000_000_000_000 / u128::from(flow.rate_bps.max(1))) as u64
    }

    /// The current simulated time.
    pub fn now_ps(&self) -> u64 {
        self.now
    }

    /// The events handled so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Processes every event up to `until` (at most the run's duration).
    pub fn run_until(&mut self, until: u64) {
        if self.split.is_some() {
            self.take_events::<true>(until);
        } else {
            self.take_events::<false>(until);
        }
    }

    /// [`Simulation::run_until`]; as a partition (`LOG`), noting each event that pushed any
    /// event, its rank and the pushes before it, in the window's log. One loop for both, made
    /// twice, so that a run on one core does not ask at each event whether to log it.
    fn take_events<const LOG: bool>(&mut self, until: u64) {
        let until = until.min(self.options.duration_ps);
        let after = until.saturating_add(1);
        // The time of the next scheduled event (the schedule does not change during the run).
        let next_scheduled = |sim: &Self| {
            sim.schedule
                .get(sim.scheduled)
                .map_or(u64::MAX, |(time, _)| *time)
        };
        let mut scheduled = next_scheduled(self);
        loop {
            // A scheduled event goes before queued events of its time.
            let (rank, event) = match self.queue.pop_before(scheduled.min(after)) {
                Some(next) => next,
                None if scheduled <= until => {
                    self.scheduled += 1;
                    scheduled = next_scheduled(self);
                    let (time, event) = self.schedule[self.scheduled - 1];
                    let number = match &self.split {
                        Some(split) if LOG => split.scheduled_number(self.scheduled - 1),
                        _ => 0,
                    };
                    (u128::from(time) << 64 | u128::from(number), event)
                }
                None => break,
            };
            let pushed = self.queue.next_number();
            self.now = (rank >> 64) as u64;
            self.events += 1;
            self.load_next_event_ports();
            self.handle(event);
            // Only the order of events that pushed something matters to the numbering.
            if LOG
                && self.queue.next_number() != pushed
                && let Some(split) = &mut self.split
            {
                split.log(rank, pushed);
            }
        }
        self.now = self.now.max(until);
    }

    /// Loads what the next event will read first of its ports and packet, so that the loads
    /// that miss the cache overlap the current event's work instead of waiting for it. At the
    /// scale of the 10,416-node fat tree a packet-hop's time is mostly such misses (the ports'
    /// states are a random line each in megabytes), and this made the whole permutation run
    /// 1.10 times as fast; on fat-tree-648, whose states fit the cache, it changes nothing
    /// measurable. A plain load kept by `black_box`: the prefetch instruction needs `unsafe`.
    /// Loads whose index depends on another load (a lane, a buffer) waited for it and made
    /// the run slower, as did loading the arbiter too.
    #[inline(always)]
    fn load_next_event_ports(&self) {
        match self.queue.peek() {
            Some(&Event::Arrive { port, packet }) => {
                std::hint::black_box(self.states[port as usize].base);
                std::hint::black_box(self.packets[packet as usize].dlid);
            }
            Some(&Event::Credit { port, .. }) => {
                std::hint::black_box(self.states[port as usize].base);
            }
            Some(&Event::TxDone { port, release, .. }) => {
                std::hint::black_box(self.states[port as usize].base);
                if release != NO_PORT {
                    std::hint::black_box(self.states[release as usize].base);
                }
            }
            _ => {}
        }
    }

    // Inlined into the run loop, as it was before the DCQCN events made it larger: called
    // apart, it cost the InfiniBand run 7.8% more instructions (callgrind).
    #[inline(always)]
    fn handle(&mut self, event: Event) {
        match event {
            Event::Start { flow } | Event::Inject { flow } => self.inject(flow),
            Event::Join { flow, port, vl } => {
                let lane = self.lane(port, vl);
                let rotation = &mut self.rotations[lane].turns;
                rotation.push_back(self.flow_hot[flow as usize].turn(flow));
                // Joining behind other flows changes neither the lane's head nor what it
                // waits for: only the first flow of a rotation makes a new head.
                if rotation.len() == 1 {
                    self.greedy_turn(lane);
                    self.refresh_lane(port, vl);
                }
                self.try_send(port);
            }
            Event::Stop { flow, port, vl } => {
                self.flow_hot[flow as usize].stopped = true;
                let lane = self.lane(port, vl);
                let rotation = &mut self.rotations[lane];
                rotation.stopping += 1;
                // A flow behind the front leaves when its turn comes (skip_stopped): until
                // then the lane's head is the front's, unchanged.
                if rotation.turns.front().is_some_and(|turn| turn.flow == flow) {
                    self.skip_stopped(lane);
                    self.refresh_lane(port, vl);
                }
            }
            Event::TxDone {
                port,
                release,
                vl,
                blocks,
            } => {
                let next = if self.eth.is_some() {
                    self.ethernet_sent(port, release, vl, blocks);
                    self.ethernet_grant(port)
                } else {
                    if release != NO_PORT {
                        self.release(release, vl, blocks);
                    }
                    self.credit_grant(port)
                };
                // The port stays busy when it sends again at once: marking it idle first would
                // start, and end at the same instant, the wait of each of its starved lanes.
                match next {
                    Some((peer, vl)) => self.transmit(port, peer, vl),
                    None => self.set_idle(port),
                }
            }
            Event::Arrive { port, packet } => self.arrive(port, packet),
            Event::Wake { port } => self.try_send(port),
            Event::PauseArrive { port, frame } => self.pause_arrive(port, frame),
            Event::PauseApply { port, frame } => self.pause_apply(port, frame),
            Event::Refresh { port } => self.pause_refresh(port),
            Event::Storm { storm } => self.storm(storm),
            Event::RpTimer { flow } => self.rp_timer(flow),
            Event::Pace { flow } => self.pace(flow),
            Event::Sample { interval } => self.sample_buffers(interval as usize),
            Event::Credit { port, vl, blocks } => {
                let lane = self.lane(port, vl);
                let l = &mut self.lanes[lane];
                l.credits += u32::from(blocks);
                let bits = &mut self.states[port as usize];
                if bits.busy {
                    // All refresh_lane and try_send would do: a busy port times no wait for
                    // credits and does not arbitrate.
                    bits.note_head(vl, l);
                } else {
                    self.refresh_lane(port, vl);
                    self.try_send(port);
                }
            }
        }
    }

    /// The time `port` takes to send a packet of `blocks`.
    fn serialization(&self, port: u32, blocks: u32) -> u64 {
        let kind = self.states[port as usize].kind;
        self.kinds[usize::from(kind)].wire_ps[blocks as usize]
    }

    /// The index of the lane of `vl` at `port`, which has one: VL15, or a data VL its link runs.
    pub(crate) fn lane(&self, port: u32, vl: u8) -> usize {
        self.states[port as usize].lane(vl)
    }

    /// Drops the stopped flows at the front of a lane's rotation. A stopped flow leaves the
    /// rotation only when it comes to the front, which keeps the others' order as removing it
    /// at once would, without searching the rotation for it. [`Rotation::stopping`] spares
    /// the look at the flow table (a random line per greedy packet) while none of the lane's
    /// flows has stopped.
    pub(crate) fn skip_stopped(&mut self, lane: usize) {
        let rotation = &mut self.rotations[lane];
        while rotation.stopping > 0 {
            let Some(turn) = rotation.turns.front().copied() else {
                break;
            };
            let hot = &mut self.flow_hot[turn.flow as usize];
            if !hot.stopped {
                break;
            }
            hot.sent += u64::from(turn.sent);
            rotation.stopping -= 1;
            rotation.turns.pop_front();
        }
        self.greedy_turn(lane);
    }

    /// Notes in the lane's head the size of the packet of the greedy flow whose turn it is.
    pub(crate) fn greedy_turn(&mut self, lane: usize) {
        self.lanes[lane].greedy = self.rotations[lane]
            .turns
            .front()
            .map_or(0, |turn| turn.shape.blocks);
    }

    /// Adds the packets the turns of every rotation hold to their flows' counts.
    fn settle_turns(&mut self) {
        for rotation in &mut self.rotations {
            for turn in &mut rotation.turns {
                self.flow_hot[turn.flow as usize].sent += u64::from(turn.sent);
                turn.sent = 0;
            }
        }
    }

    /// A generated packet: queued at its source, or dropped there if its SL maps to VL15 or to a
    /// VL its link does not run.
    fn inject(&mut self, flow: u32) {
        let now = self.now;
        let state = &self.flows[flow as usize];
        if now >= state.stop_ps {
            return;
        }
        let (port, vl) = (state.port, state.vl);
        let next = if state.greedy {
            // Dropped at its source: the host offers it as fast as its link would carry it.
            now + self.serialization(port, state.blocks)
        } else {
            state.origin + self.gap_ps(&self.specs[flow as usize], state.generated + 1)
        };
        self.flow_hot[flow as usize].sent += 1;
        let state = &mut self.flows[flow as usize];
        state.generated += 1;
        if vl == VL15 && !self.specs[flow as usize].management {
            self.flow_drops[flow as usize] += 1;
        } else {
            let packet = self.alloc(flow, vl);
            self.enqueue(port, vl, packet);
            self.try_send(port);
        }
        if next < self.flows[flow as usize].stop_ps {
            self.queue.push(now, next, Event::Inject { flow });
        }
    }

    pub(crate) fn alloc(&mut self, flow: u32, vl: u8) -> u32 {
        self.store_packet(self.new_packet(flow, vl))
    }

    /// A packet of `flow` leaving its source now on lane `vl`.
    pub(crate) fn new_packet(&self, flow: u32, vl: u8) -> Packet {
        self.packet_of(flow, self.flow_hot[flow as usize].shape, vl)
    }

    /// A packet of `flow`, of `f`'s shape, leaving its source now on lane `vl`.
    fn packet_of(&self, flow: u32, f: Shape, vl: u8) -> Packet {
        Packet {
            created: self.now,
            flow,
            in_port: NO_PORT,
            next: NO_PACKET,
            next_blocks: 0,
            dlid: f.dlid,
            blocks: f.blocks,
            // Read only once the packet is in a switch (which sets it), but for Ethernet's
            // sender counters: the packet's priority.
            in_vl: f.sl,
            vl,
            sl: f.sl,
            management: f.management,
            ce: false,
            cnp: false,
        }
    }

    /// Puts `packet` in a free slot.
    pub(crate) fn store_packet(&mut self, packet: Packet) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.packets[id as usize] = packet;
                id
            }
            None => {
                self.packets.push(packet);
                (self.packets.len() - 1) as u32
            }
        }
    }

    /// Queues `packet` to leave `port` by the lane of `vl`. Only a packet that finds the
    /// queue empty changes the lane's head, and so the port's bits: the head of a queue that
    /// had packets, its credits and the port's business stay what the bits already say.
    pub(crate) fn enqueue(&mut self, port: u32, vl: u8, packet: u32) {
        if self.append(self.lane(port, vl), packet) {
            self.refresh_lane(port, vl);
        }
    }

    /// Appends `packet` to a lane's queue; true if the queue was empty.
    fn append(&mut self, lane: usize, packet: u32) -> bool {
        let p = &mut self.packets[packet as usize];
        // The last of its queue: what follows it, nothing, 0 blocks (a packet queued here
        // after it sets them). A packet is queued once per hop, so these hold the last hop's.
        (p.next, p.next_blocks) = (NO_PACKET, 0);
        let blocks = p.blocks;
        let l = &mut self.lanes[lane];
        let was_empty = l.last == NO_PACKET;
        if was_empty {
            l.first = packet;
            l.first_blocks = blocks;
        } else {
            let last = &mut self.packets[l.last as usize];
            last.next = packet;
            last.next_blocks = blocks;
        }
        l.last = packet;
        was_empty
    }

    /// Takes the first packet of a lane's queue.
    fn dequeue(&mut self, lane: usize) -> Option<u32> {
        let l = &mut self.lanes[lane];
        let packet = l.first;
        if packet == NO_PACKET {
            return None;
        }
        let p = &self.packets[packet as usize];
        (l.first, l.first_blocks) = (p.next, p.next_blocks);
        if l.first == NO_PACKET {
            l.last = NO_PACKET;
        }
        Some(packet)
    }

    /// Updates a port's bits after a lane's head or credits changed: whether the lane has a
    /// head, whether the head lacks credits, and its wait for credits.
    pub(crate) fn refresh_lane(&mut self, port: u32, vl: u8) {
        let bits = &mut self.states[port as usize];
        let lane = bits.lane(vl);
        let starved = bits.note_head(vl, &self.lanes[lane]);
        let bit = 1u16 << vl;
        let blocked = starved && !bits.busy;
        if blocked != (bits.waiting & bit != 0) {
            bits.waiting ^= bit;
            self.account_blocked(lane, blocked);
        }
    }

    /// Starts or ends a lane's wait for credits. A lane is blocked while its port is idle and
    /// its head packet lacks credits: while the port sends something else, it waits for the
    /// wire, not for credits. Called only when that changes (the port's `waiting` bits).
    fn account_blocked(&mut self, lane: usize, blocked: bool) {
        let left = self.left_ps();
        let wait = &mut self.waits[lane];
        if blocked {
            *wait += left;
        } else {
            *wait -= left;
        }
    }

    /// Marks `port` idle, which starts the wait of each of its starved lanes. (A port becomes
    /// busy only in [`Simulation::transmit`], which ends every wait.)
    fn set_idle(&mut self, port: u32) {
        let bits = &mut self.states[port as usize];
        bits.busy = false;
        let mut started = bits.starved & !bits.waiting;
        bits.waiting = bits.starved;
        let state = *bits;
        while started != 0 {
            let vl = started.trailing_zeros() as u8;
            started &= started - 1;
            self.account_blocked(state.lane(vl), true);
        }
    }

    /// The run's time left: what a change now weighs in the integrals kept as at the run's end
    /// (the waits, [`Simulation::waits`], and the buffers', [`Buffer`]).
    fn left_ps(&self) -> u64 {
        self.options.duration_ps - self.now
    }

    /// `port`'s receive buffer takes in (`fill`) or frees `blocks` on `vl`, now. Inlined: a
    /// call costs as much as the change, twice a packet-hop.
    #[inline(always)]
    fn change_buffer(&mut self, port: u32, vl: u8, blocks: u32, fill: bool) {
        let (lane, left) = (self.lane(port, vl), self.left_ps());
        let carry = self.buffers[lane].change(blocks, left, fill);
        if carry != 0 {
            self.carry(lane, carry);
        }
    }

    /// Notes what carried out of a lane's [`Buffer::to_end`]: never, but on a run of 2^64
    /// block-picoseconds or more. Apart, so that the map's code stays out of the inlined path.
    #[cold]
    #[inline(never)]
    fn carry(&mut self, lane: usize, carry: i64) {
        *self.carried.entry(lane).or_default() += carry;
    }

    /// `port`'s receive buffer frees `blocks` on `vl`; the credits go back to the sender.
    fn release(&mut self, port: u32, vl: u8, blocks: u16) {
        self.change_buffer(port, vl, u32::from(blocks), false);
        let state = self.states[port as usize];
        // A packet only arrives over a link, so a port that releases one has a peer.
        let sender = state.peer;
        if vl != VL15 {
            let at = self.now + self.kinds[usize::from(state.kind)].credit_return_ps;
            let credit = Event::Credit {
                port: sender,
                vl,
                blocks,
            };
            self.push_to_peer(state.far, sender, at, credit);
        }
    }

    fn arrive(&mut self, port: u32, packet: u32) {
        if self.eth.is_some() {
            self.ethernet_arrive(port, packet);
            return;
        }
        let info = self.states[port as usize];
        let p = self.packets[packet as usize];
        let (blocks, dlid, management) = (u32::from(p.blocks), p.dlid, p.management);
        self.change_buffer(port, p.vl, blocks, true);
        let network = self.network;
        let node = &network.nodes[info.node as usize];
        let out = match node.kind {
            NodeKind::Host => None,
            NodeKind::Switch => node.route(dlid),
        };
        let Some(out) = out else {
            // Delivered at a host (if it owns the LID), or no route at a switch.
            self.release(port, p.vl, p.blocks);
            let delivered = node.kind == NodeKind::Host && node.lids[usize::from(info.num)] == dlid;
            self.retire(packet, &p, delivered);
            return;
        };
        let out_port = self.node_base[info.node as usize] + u32::from(out);
        let vl = if management {
            VL15
        } else {
            node.sl2vl(info.num, out).0[usize::from(p.sl)].get()
        };
        if !management && (vl == VL15 || vl >= self.states[out_port as usize].vls) {
            self.release(port, p.vl, p.blocks);
            self.flow_drops[p.flow as usize] += 1;
            *self.dropped.entry((out_port, vl)).or_default() += 1;
            self.free.push(packet);
            return;
        }
        let pk = &mut self.packets[packet as usize];
        pk.in_port = port;
        pk.in_vl = pk.vl;
        pk.vl = vl;
        self.enqueue(out_port, vl, packet);
        self.try_send(out_port);
    }

    /// A packet leaves the fabric: delivered (its latency recorded) or dropped.
    pub(crate) fn retire(&mut self, packet: u32, p: &Packet, delivered: bool) {
        let latency = (self.now - p.created) / PS_PER_NS;
        if delivered {
            match u32::try_from(latency) {
                Ok(ns) => {
                    self.deliveries
                        .push(u64::from(p.flow) << 32 | u64::from(ns));
                    if self.deliveries.len() == self.delivery_batch {
                        self.record_deliveries();
                    }
                }
                Err(_) => self.tallies[p.flow as usize].latency.record(latency),
            }
        } else {
            self.flow_drops[p.flow as usize] += 1;
        }
        self.free.push(packet);
    }

    /// Records the deliveries logged so far in their flows' latency histograms, in flow order.
    /// Why not at each delivery: a flow's tally and its buckets are two random lines in
    /// tables of every flow (27 MB of tallies for the 648-host all-to-all), and recorded at
    /// each delivery they took a third of the run's time; a batch of about one delivery per
    /// flow, sorted, reads them nearly as a stream (and lays the buckets out in flow order,
    /// which the report reads faster too). A histogram is the same whatever order its values
    /// came in, so the report is too.
    fn record_deliveries(&mut self) {
        self.deliveries.sort_unstable();
        for &delivery in &self.deliveries {
            let (flow, ns) = (delivery >> 32, delivery & u64::from(u32::MAX));
            self.tallies[flow as usize].latency.record(ns);
        }
        self.deliveries.clear();
    }

    /// If `port` is idle, sends what VL15 or the arbiter gives it.
    pub(crate) fn try_send(&mut self, port: u32) {
        if self.states[port as usize].busy {
            return;
        }
        if let Some((peer, vl)) = self.grant(port) {
            self.transmit(port, peer, vl);
        }
    }

    /// The peer and the lane `port` sends on next, whether or not the port is busy: by
    /// credits and the VL arbiter, or on Ethernet by pauses and the ETS scheduler.
    fn grant(&mut self, port: u32) -> Option<(u32, u8)> {
        if self.eth.is_some() {
            self.ethernet_grant(port)
        } else {
            self.credit_grant(port)
        }
    }

    /// The peer and the VL `port` sends on next, if it is linked and VL15 or the arbiter
    /// grants one, whether or not the port is busy.
    fn credit_grant(&mut self, port: u32) -> Option<(u32, u8)> {
        let p = port as usize;
        let bits = self.states[p];
        let peer = bits.peer;
        if peer == NO_PORT {
            return None;
        }
        // VL15 never has greedy flows, so its head is queued exactly when its queue is not
        // empty.
        let vl = if bits.queued & 1 << VL15 != 0 {
            VL15
        } else {
            let ready_vls = bits.queued & !bits.starved;
            // A refusal leaves the arbiter where the next refusal would: asking again with
            // nothing ready changes nothing, and is skipped.
            if ready_vls == 0 && bits.refused {
                return None;
            }
            let lanes = &self.lanes[bits.lanes()];
            let grant = self.arbiters[p].next_among(&self.arbiter_tables, ready_vls, |vl| {
                let lane = &lanes[usize::from(vl)];
                let head = u32::from(lane.head());
                (head > 0 && lane.credits >= head).then_some(head)
            });
            self.states[p].refused = grant.is_none();
            grant?.0
        };
        Some((peer, vl))
    }

    fn transmit(&mut self, port: u32, peer: u32, vl: u8) {
        let now = self.now;
        // What the port's state says of its lanes and link does not change below: one read.
        let state = self.states[port as usize];
        let lane = state.lane(vl);
        let packet = match self.dequeue(lane) {
            Some(packet) => packet,
            None => {
                // Only a host's port has a rotation: a switch's lane sends what is queued.
                let Some(rotation) = self.rotations.get_mut(lane) else {
                    return;
                };
                let turns = &mut rotation.turns;
                let Some(mut turn) = turns.pop_front() else {
                    return;
                };
                turn.sent += 1;
                if turn.sent == u32::MAX {
                    self.flow_hot[turn.flow as usize].sent += u64::from(turn.sent);
                    turn.sent = 0;
                }
                turns.push_back(turn);
                self.skip_stopped(lane);
                self.store_packet(self.packet_of(turn.flow, turn.shape, vl))
            }
        };
        let p = self.packets[packet as usize];
        let blocks = u32::from(p.blocks);
        let kind = &self.kinds[usize::from(state.kind)];
        let (serialization, propagation) = (kind.wire_ps[blocks as usize], kind.propagation_ps);
        // A packet still leaving when the run ends counts only the units that left by then:
        // a link's bytes over the run never exceed what its rate carries in it.
        let left_ps = self.options.duration_ps.saturating_sub(now);
        let counted = units_sent_by(blocks, serialization, left_ps);
        let l = &mut self.lanes[lane];
        if vl != VL15 {
            l.credits -= blocks;
        }
        l.sent.packets += 1;
        l.sent.blocks += counted;
        // The lane's new head, as refresh_lane would note it on a busy port: a busy port times
        // no wait for credits, so every wait it timed ends now.
        let bits = &mut self.states[port as usize];
        bits.busy = true;
        bits.note_head(vl, l);
        let mut ended = std::mem::take(&mut bits.waiting);
        while ended != 0 {
            let waited = ended.trailing_zeros() as u8;
            ended &= ended - 1;
            self.account_blocked(state.lane(waited), false);
        }
        if !self.timeline.is_empty() {
            self.count_in_timeline(port, vl, blocks, serialization, counted);
        }
        self.packet_hops += 1;
        self.queue.push(
            now,
            now + serialization,
            Event::TxDone {
                port,
                release: p.in_port,
                vl: p.in_vl,
                blocks: p.blocks,
            },
        );
        self.packets[packet as usize].vl = vl;
        let arrive = Event::Arrive { port: peer, packet };
        self.push_to_peer(state.far, peer, now + serialization + propagation, arrive);
    }

    /// Pushes `event`, due at `time`, for `peer`, a port linked to one of this run's: into the
    /// queue, or when the peer is another partition's (`far`) into that partition's outbox.
    #[inline(always)]
    fn push_to_peer(&mut self, far: bool, peer: u32, time: u64, event: Event) {
        if far {
            self.cross(peer, time, event);
        } else {
            self.queue.push(self.now, time, event);
        }
    }

    /// Runs to the end (if not there yet) and reports.
    pub fn finish(mut self) -> Report {
        self.run_until(self.options.duration_ps);
        self.close();
        self.report()
    }

    /// At the end of the run: puts every count where the report reads it (the deliveries in
    /// their tallies, the rotations' packets in their flows). The waits and buffer integrals
    /// are kept as at the end throughout.
    fn close(&mut self) {
        let end = self.options.duration_ps;
        self.now = end;
        self.record_deliveries();
        self.settle_turns();
    }

    /// The report of a closed run.
    fn report(mut self) -> Report {
        let end = self.options.duration_ps;
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
        // The flows' reports come last. Each source port's name is made once: a run of many
        // flows has few source ports.
        let mut source_names: Vec<Option<Arc<str>>> = vec![None; self.ports.len()];
        let flows: Vec<FlowReport> = (0..)
            .zip(&self.flows)
            .zip(&self.flow_hot)
            .zip(&self.tallies)
            .zip(&self.flow_drops)
            .map(|((((i, f), hot), tally), &dropped)| {
                let src = source_names[f.port as usize]
                    .get_or_insert_with(|| self.port_name(f.port).into())
                    .clone();
                let spec = &self.specs[i];
                let mut report = Self::flow_report(spec, f, src, hot.sent, tally, dropped);
                report.dcqcn = self.flow_dcqcn(i);
                report
            })
            .collect();
        Report {
            seed: self.options.seed,
            duration_ns: end / PS_PER_NS,
            events: self.events,
            packet_hops: self.packet_hops,
            flows,
            sls,
            links,
            switches,
            sl_latency,
            dcqcn_rates,
            buffer_occupancy,
            timeline,
        }
    }

    pub(crate) fn port_name(&self, port: u32) -> String {
        let info = self.ports[port as usize];
        format!(
            "{}[{}]",
            self.network.nodes[info.node as usize].name, info.num
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
        for ((f, tally), &dropped) in self.specs.iter().zip(&self.tallies).zip(&self.flow_drops) {
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
                    throughput_gbps: Self::gbps(sum.bytes, self.options.duration_ps),
                    latency_ns: sum.latency.summary(),
                    dropped_packets: sum.dropped,
                };
                (report, (sl, sum.latency))
            })
            .unzip()
    }

    /// The timeline interval of time `at` (when recording one).
    pub(crate) fn interval_of(&self, at: u64) -> usize {
        let intervals = self.options.timeline_intervals;
        let interval = (u128::from(at) * intervals as u128
            / u128::from(self.options.duration_ps.max(1))) as usize;
        interval.min(intervals - 1)
    }

    /// Counts in the timeline the `counted` units, of a packet of `units` taking
    /// `serialization_ps`, that `port` starts sending on `vl` now: in each interval the units
    /// that left the port during it, so that no interval holds more than the link carries.
    fn count_in_timeline(
        &mut self,
        port: u32,
        vl: u8,
        units: u32,
        serialization_ps: u64,
        counted: u64,
    ) {
        let (start, intervals) = (self.now, self.options.timeline_intervals);
        let duration = u128::from(self.options.duration_ps.max(1));
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
            self.timeline[index] += by_end - before;
            before = by_end;
            interval += 1;
        }
    }

    /// Where the timeline counts the blocks `port` sent on `vl` in interval `interval`.
    fn timeline_index(&self, port: u32, interval: usize, vl: u8) -> usize {
        (port as usize * self.options.timeline_intervals + interval) * VLS + usize::from(vl)
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
            .zip(&self.ports)
            .filter_map(|(port, slot)| Some((port, slot.peer?)))
    }

    fn link_reports(&self) -> Vec<LinkReport> {
        let duration = self.options.duration_ps;
        let block = self.unit_bytes();
        self.linked_ports()
            .map(|(p, peer)| {
                let info = self.ports[p as usize];
                let (near, far) = (self.states[p as usize], self.states[peer as usize]);
                let total: u64 = self.lanes[near.lanes()]
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
                    };
                }
                // Both ends of a link run the same VLs; a VL without a lane only drops.
                let vls = (0..VLS as u8)
                    .filter_map(|vl| {
                        let dropped = self.dropped.get(&(p, vl)).copied().unwrap_or(0);
                        let (s, blocked_ps) =
                            near.lane_of(vl).map_or_else(Default::default, |lane| {
                                (self.lanes[lane].sent, self.waits[lane])
                            });
                        let (f, area) = far.lane_of(vl).map_or_else(Default::default, |lane| {
                            let carried = self.carried.get(&lane).copied().unwrap_or(0);
                            (self.buffers[lane], self.buffers[lane].integral(carried))
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
                }
            })
            .collect()
    }

    /// The busiest link direction's bytes per VL per interval (the first of equals).
    fn timeline_report(&self, links: &[LinkReport]) -> Option<Timeline> {
        let intervals = self.options.timeline_intervals;
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
                    .map(|i| self.timeline[self.timeline_index(*busiest, i, vl)] * unit)
                    .collect();
                (vl, series)
            })
            .collect();
        Some(Timeline {
            from: link.from.clone(),
            to: link.to.clone(),
            interval_ns: self.options.duration_ps / intervals as u64 / PS_PER_NS,
            vls,
        })
    }
}

/// The whole units of a packet of `units`, on the wire for `serialization_ps`, that have left
/// its port `elapsed_ps` after it started.
fn units_sent_by(units: u32, serialization_ps: u64, elapsed_ps: u64) -> u64 {
    if elapsed_ps >= serialization_ps {
        return u64::from(units);
    }
    (u128::from(units) * u128::from(elapsed_ps) / u128::from(serialization_ps)) as u64
}

/// Six significant decimals: enough for any report, and the same digits on every run.
pub(crate) fn round(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
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
mod tests {
    use super::*;
    use crate::build::{Tables, TopologyHosts, build_network};
    use crate::network::{Link, Node, PortArbitration};
    use crate::traffic;
    use ibqos_fabric::netfile::parse_net_file;
    use ibqos_qos::policy::setup::SetupTables;
    use ibqos_qos::{QosConfig, Sl2VlTable};

    /// Each interval of the timeline holds what left the port during it, to a block. H1 sends
    /// 4 KB packets (4160 bytes, 1.04 us at 32 Gb/s) back to back to H4 for 200 us, in 30
    /// intervals of 6.667 us, 6.4 packets' time each: counted where they started, some
    /// intervals held 7 packets, 1.09 times what the link carries in one.
    #[test]
    fn no_interval_of_the_timeline_holds_more_than_the_link_carries() {
        let net = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sim/star.net");
        let mut topo = parse_net_file(std::path::Path::new(net)).unwrap().topology;
        let text = "duration_us = 200\n[[flow]]\nname = \"f\"\nsrc = \"H1\"\ndst = \"H4\"\n\
                    payload = 4096\n";
        let traffic = traffic::parse("t.toml", text.as_bytes()).unwrap();
        let tables = Tables::Planned {
            qos: &QosConfig::default(),
            setup: &SetupTables::default(),
            max_op_vls: None,
        };
        let network = build_network(&mut topo, tables, &traffic).unwrap();
        let flows = traffic.flows(&TopologyHosts(&topo), 0).unwrap();
        let options = SimOptions {
            duration_ps: traffic.duration_ps,
            seed: 0,
            arbiter: traffic.arbiter,
            timeline_intervals: 30,
        };
        let report = simulate(&network, &flows, options).unwrap();
        let timeline = report.timeline.unwrap();
        let [(0, bytes)] = &timeline.vls[..] else {
            panic!("{timeline:?}");
        };
        // 32 Gb/s x 200 us / 30 = 26,666.7 bytes per interval, 416.7 blocks: an interval
        // counts the blocks that ended in it, 416 or 417.
        let capacity = 32e9 / 8.0 * 200e-6 / 30.0 + 64.0;
        assert!(bytes.iter().all(|&b| b as f64 <= capacity), "{bytes:?}");
        // The link is saturated: every interval but the first holds more than 6 packets.
        assert!(bytes[1..].iter().all(|&b| b > 6 * 4160), "{bytes:?}");
        let link = (report.links.iter())
            .find(|l| l.from == timeline.from && l.to == timeline.to)
            .unwrap();
        assert_eq!(bytes.iter().sum::<u64>(), link.bytes);
    }

    /// A port's state names its kind of link in 16 bits: a fabric whose links come in more
    /// kinds than that is refused at once, never simulated with a wrapped index. The kinds are
    /// counted with the unlinked ports' (port 0 of every host here), which are one more.
    #[test]
    fn more_than_65536_kinds_of_link_are_refused() {
        let link = |i: usize| Link {
            a: PortAddr {
                node: 2 * i,
                port: 1,
            },
            b: PortAddr {
                node: 2 * i + 1,
                port: 1,
            },
            params: LinkParams {
                speed: Speed::Qdr,
                width: Width::X4,
                propagation_ps: i as u64,
                vl_buffer_blocks: 1024,
                credit_latency_ps: 0,
            },
        };
        let links = usize::from(u16::MAX);
        let host = |i: usize| {
            let arbitration = PortArbitration::default();
            Node::new(
                format!("H{i}"),
                NodeKind::Host,
                1,
                arbitration,
                Sl2VlTable::ALL_VL0,
            )
        };
        let mut network = Network {
            nodes: (0..2 * (links + 1)).map(host).collect(),
            links: (0..links).map(link).collect(),
            ethernet: None,
        };
        // 65,535 kinds of link and the unlinked ports': 65,536, the most.
        assert!(Simulation::new(&network, &[], SimOptions::default()).is_ok());
        network.links.push(link(links));
        let refused = Simulation::new(&network, &[], SimOptions::default());
        assert!(
            matches!(refused, Err(NetworkError::TooManyLinkKinds)),
            "{:?}",
            refused.err()
        );
    }

    proptest::proptest! {
        /// A receive buffer's integral, kept as it will be at the run's end with what carries
        /// out of its 64 bits, is the occupancy integrated step by step, on runs long enough
        /// to carry (blocks x picoseconds past 2^64) and on short ones; so is its peak.
        #[test]
        fn a_buffer_integral_kept_to_the_end_is_the_one_integrated_step_by_step(
            end in proptest::prop_oneof![0u64..1_000_000, (u64::MAX / 4)..=u64::MAX],
            steps in proptest::collection::vec(
                (proptest::num::u64::ANY, 1u32..(1 << 24), proptest::bool::ANY),
                0..40,
            ),
        ) {
            let mut times: Vec<u64> = steps.iter().map(|s| s.0 % end.saturating_add(1)).collect();
            times.sort_unstable();
            let mut buffer = Buffer::default();
            let mut carried = 0i64;
            let (mut occupancy, mut peak, mut integral, mut last) = (0u32, 0u32, 0u128, 0u64);
            for (t, &(_, blocks, fill)) in times.into_iter().zip(&steps) {
                integral += u128::from(occupancy) * u128::from(t - last);
                last = t;
                let fill = fill || occupancy == 0;
                let blocks = if fill { blocks } else { blocks.min(occupancy) };
                if fill {
                    occupancy += blocks;
                    peak = peak.max(occupancy);
                } else {
                    occupancy -= blocks;
                }
                carried += buffer.change(blocks, end - t, fill);
            }
            integral += u128::from(occupancy) * u128::from(end - last);
            proptest::prop_assert_eq!(buffer.integral(carried), integral);
            proptest::prop_assert_eq!((buffer.occupancy, buffer.peak), (occupancy, peak));
        }
    }
}
