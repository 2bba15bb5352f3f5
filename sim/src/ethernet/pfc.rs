//! Priority flow control (IEEE 802.1Qbb) and global pause (IEEE 802.3x) on one Ethernet link:
//! the arithmetic of pause quanta and headroom, and the per-priority state of both ends.
//!
//! A pause frame carries, per priority, a time in quanta; one quantum is the time to send 512
//! bits at the link's speed, and 0 quanta resumes the priority at once. Global pause (802.3x) is
//! the one-priority case: one time that stops every priority.
//!
//! Two halves, one per end of the link:
//! - [`PauseGenerator`], at the end that receives data: the buffer model (the Xoff/Xon thresholds
//!   of [`XoffXon`], applied by [`crate::shared_buffer`] to a lossless priority group) says when
//!   priorities cross Xoff or fall back under Xon; the generator turns that into pause frames,
//!   refreshes the pause while it lasts and sends 0 quanta to resume.
//! - [`PauseResponder`], at the end that sends data: a frame takes effect after the sender's
//!   response delay (the IEEE 802.3 Annex 31B limit for the speed, the "PFC delay" of the SONiC
//!   pause response-time test plan, and any processing delay), then holds the priority for the
//!   frame's quanta. A frame already on the wire finishes; that is the engine's business.
//!
//! The cable between them is the link's propagation, which the engine applies to pause frames as
//! to any other. [`headroom_bytes`] is the buffer a lossless priority group needs for what is in
//! flight when it asks for a pause, and [`PauseStorm`] is a port that keeps priorities paused.
//!
//! Time is integer picoseconds, link rates bits per second. Everything here is small `Copy`
//! state in fixed arrays of eight, so the engine can call it per packet.

use serde::Deserialize;

use crate::infiniband::link::{PS_PER_NS, PS_PER_US};

/// Bit times per pause quantum (IEEE 802.3 Annex 31B).
pub const QUANTUM_BITS: u64 = 512;

/// A pause frame is a minimum-size (64-byte) MAC control frame, PFC and 802.3x alike.
pub const PAUSE_FRAME_BYTES: u32 = 64;

/// Preamble and start-of-frame delimiter (8 bytes) and the inter-frame gap (12 bytes): the wire
/// time every Ethernet frame takes besides its own bytes.
pub const FRAME_OVERHEAD_BYTES: u32 = 20;

/// Priorities on an Ethernet link (the 3-bit PCP).
pub const PRIORITIES: usize = 8;

const PS_PER_S: u128 = 1_000_000_000_000;

/// The duration of `quanta` pause quanta at `link_bps`, in picoseconds, rounded up (a sender
/// never resumes early). 65535 quanta at 40 Gb/s is 65535 x 512 / 40e9 s = 838,848,000 ps.
///
/// # Panics
/// If `link_bps` is 0: a link has a speed.
pub fn pause_ps(quanta: u32, link_bps: u64) -> u64 {
    assert!(link_bps > 0, "a link of 0 b/s has no pause quantum");
    let bits = u128::from(quanta) * u128::from(QUANTUM_BITS);
    // At most 2^32 x 512 x 1e12 / 1: fits in u128 and, for any real link, in u64.
    u64::try_from((bits * PS_PER_S).div_ceil(u128::from(link_bps))).unwrap_or(u64::MAX)
}

/// The bytes a link at `link_bps` carries in `ps` picoseconds, rounded up.
fn bytes_in(ps: u64, link_bps: u64) -> u64 {
    let bits = u128::from(ps) * u128::from(link_bps);
    u64::try_from(bits.div_ceil(PS_PER_S * 8)).unwrap_or(u64::MAX)
}

/// The most a sender may take to act on a pause frame, in quanta, by link speed: IEEE 802.3
/// clause 31B.3.7 as SONiC's Mellanox headroom script tabulates it (800G 905, 400G 905, 200G 453,
/// 100G 394, 50G 147, 40G 118, 25G 80, 10G 67, 1G 2, 100M 1). A speed between two rows takes
/// the faster row's (larger) value, so the delay is never under-estimated; a Cisco account gives
/// 60 quanta at 10G where SONiC gives 67, hence [`PfcConfig::response_quanta`] to override it.
pub fn ieee_response_quanta(link_bps: u64) -> u32 {
    const TABLE: [(u64, u32); 10] = [
        (100_000_000, 1),
        (1_000_000_000, 2),
        (10_000_000_000, 67),
        (25_000_000_000, 80),
        (40_000_000_000, 118),
        (50_000_000_000, 147),
        (100_000_000_000, 394),
        (200_000_000_000, 453),
        (400_000_000_000, 905),
        (800_000_000_000, 905),
    ];
    TABLE
        .iter()
        .find(|&&(bps, _)| link_bps <= bps)
        .map_or(905, |&(_, quanta)| quanta)
}

/// The time light takes along `meters` of fibre: 5 ns a metre (the figure of the Cisco
/// accounts; Cisco's PFC white paper gives 513 ns per 100 m of single-mode fibre and 476 ns of
/// copper).
pub const fn cable_ps(meters: u64) -> u64 {
    meters * 5 * PS_PER_NS
}

/// The headroom a lossless priority group needs: the bytes that may still arrive after its
/// occupancy reaches Xoff, in the worst case, at `link_bps` over a cable of `propagation_ps`
/// one way, frames of at most `mtu_bytes` and a sender that takes `response_delay_ps` to act
/// ([`PfcConfig::response_delay_ps`]).
///
/// This follows the worst-case account of Cisco's lossless-Ethernet headroom derivation: a
/// Cisco Press chapter on congestion management in Ethernet storage networks, reproduced in the
/// article "How to compute headroom for lossless Ethernet links". It sums, in bit times:
/// - a maximum frame the receiver has just started, which the pause frame must wait for;
/// - the pause frame itself (64 bytes, 672 bit times with preamble and gap);
/// - the cable there and back, and the sender's response;
/// - the lossless frame the sender has just started when the pause takes hold.
///
/// Cisco adds the PHY and MAC latency of both interfaces (D-Intf); the simulator has none
/// of its own, so they belong in `response_delay_ps` if wanted. Every bit time counts as a byte
/// that may be stored, so preamble and gap make this a slight over-estimate of what a buffer
/// holds, never an under-estimate. A lossless PG of [`crate::shared_buffer`] needs this much
/// above its Xoff threshold.
///
/// ```text
/// bytes = 2 x (mtu + 20) + (64 + 20) + (2 x propagation + response) x rate / 8
/// ```
pub fn headroom_bytes(
    link_bps: u64,
    propagation_ps: u64,
    mtu_bytes: u32,
    response_delay_ps: u64,
) -> u64 {
    let frames = 2 * u64::from(mtu_bytes + FRAME_OVERHEAD_BYTES)
        + u64::from(PAUSE_FRAME_BYTES + FRAME_OVERHEAD_BYTES);
    let round_trip = propagation_ps
        .saturating_mul(2)
        .saturating_add(response_delay_ps);
    frames.saturating_add(bytes_in(round_trip, link_bps))
}

/// A change of a lossless buffer's pause state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// Occupancy reached Xoff: ask the sender to pause.
    Xoff,
    /// Occupancy fell to Xon: let the sender resume.
    Xon,
}

/// The Xoff and Xon thresholds of a lossless buffer, in bytes of its occupancy: pause when the
/// occupancy reaches `xoff`, resume when it falls to `xon` or below (Onyx: "Reaching Xoff
/// threshold ... will generate pause frames ... Reaching Xon threshold ceases pause frames
/// transmission").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XoffXon {
    pub xoff: u64,
    pub xon: u64,
}

impl XoffXon {
    /// What `occupancy` does to a buffer that is (`paused`) or is not asking for a pause.
    pub fn transition(self, paused: bool, occupancy: u64) -> Option<Transition> {
        if !paused && occupancy >= self.xoff {
            Some(Transition::Xoff)
        } else if paused && occupancy <= self.xon {
            Some(Transition::Xon)
        } else {
            None
        }
    }
}

/// Per-priority pause (802.1Qbb PFC) or global pause (802.3x).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowControlMode {
    /// PFC: each priority of [`PfcConfig::priorities`] is paused on its own.
    #[default]
    Pfc,
    /// 802.3x: one pause time stops every priority (Onyx "flowcontrol send/receive on").
    Global,
}

/// A port's flow control settings, under the names of the sources: Onyx for the lossless
/// priorities, the SONiC PFC pause response-time test plan for `pfc_delay`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PfcConfig {
    pub mode: FlowControlMode,
    /// The priorities PFC is enabled on (Onyx "dcb priority-flow-control priority N enable"):
    /// only these send and obey pause frames; the others are lossy and never paused. Empty
    /// (the default) is PFC off. Left empty in global mode, which pauses every priority.
    pub priorities: Vec<u8>,
    /// The quanta an Xoff frame carries: 65535, the most a frame can say, so that (as Cisco's
    /// PFC white paper puts it) the receiver relies on "setting PAUSE for a large number of
    /// quanta and then explicitly resuming".
    pub pause_quanta: u16,
    /// How often, in quanta, a pause is sent again while the buffer stays above Xoff. The
    /// default 32767 is half the pause time, as the open Ethernet MACs of Alex Forencich
    /// (verilog-ethernet, taxi) configure it (refresh 0x7fff with quanta 0xffff); Xilinx and
    /// Intel MACs make it a register ("legacy refresh value", "XOFF request hold quanta"). It must
    /// be shorter than `pause_quanta`, or the pause lapses between refreshes.
    pub refresh_quanta: u16,
    /// The SONiC plan's "PFC delay": quanta a sender waits after a pause frame arrives before
    /// it stops ("with a PFC Delay of N ... the port will wait for N quanta before stopping
    /// traffic"), on top of its own response time. 0 by default.
    pub pfc_delay: u32,
    /// The sender's own response time in quanta; absent, the IEEE 802.3 31B.3.7 maximum for the
    /// link speed ([`ieee_response_quanta`]).
    pub response_quanta: Option<u32>,
    /// Any further delay before the sender acts, in nanoseconds (processing, PHY and MAC
    /// latency). 0 by default.
    pub processing_delay_ns: u64,
}

impl Default for PfcConfig {
    fn default() -> Self {
        PfcConfig {
            mode: FlowControlMode::Pfc,
            priorities: Vec::new(),
            pause_quanta: u16::MAX,
            refresh_quanta: u16::MAX / 2,
            pfc_delay: 0,
            response_quanta: None,
            processing_delay_ns: 0,
        }
    }
}

/// An impossible flow control setting.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PfcError {
    #[error("priority {0} is out of range: an Ethernet priority is 0-7")]
    BadPriority(u8),
    #[error("priority {0} is listed twice")]
    DuplicatePriority(u8),
    #[error(
        "global pause (802.3x) stops every priority: leave `priorities` out in global mode, or use mode = \"pfc\""
    )]
    PrioritiesInGlobalMode,
    #[error("pause_quanta = 0 would resume, not pause: give 1-65535")]
    ZeroPauseQuanta,
    #[error(
        "refresh_quanta = {refresh} must be from 1 to below pause_quanta = {pause}, or the pause lapses between refreshes"
    )]
    BadRefresh { refresh: u16, pause: u16 },
    #[error("{field} = {value} is not a time: give a number of us from 0 to 1e9")]
    BadTime { field: &'static str, value: f64 },
    #[error("stop_us ({stop}) is before start_us ({start})")]
    StopBeforeStart { start: f64, stop: f64 },
    #[error(
        "interval_quanta = {interval} must be from 1 to below quanta = {quanta}, or the storm lets traffic through between frames"
    )]
    BadStormInterval { interval: u16, quanta: u16 },
    #[error("a pause storm needs at least one priority")]
    NoStormPriority,
}

/// The bit mask of `priorities`, each checked to be 0-7 and listed once.
fn priority_mask(priorities: &[u8]) -> Result<u8, PfcError> {
    priorities.iter().try_fold(0u8, |mask, &p| {
        let bit = 1u8
            .checked_shl(u32::from(p))
            .filter(|_| p < 8)
            .ok_or(PfcError::BadPriority(p))?;
        if mask & bit != 0 {
            return Err(PfcError::DuplicatePriority(p));
        }
        Ok(mask | bit)
    })
}

impl PfcConfig {
    /// Checks the settings; the error says which one is impossible and why.
    pub fn validate(&self) -> Result<(), PfcError> {
        priority_mask(&self.priorities)?;
        if self.mode == FlowControlMode::Global && !self.priorities.is_empty() {
            return Err(PfcError::PrioritiesInGlobalMode);
        }
        check_pause_and_refresh(self.pause_quanta, self.refresh_quanta).map_err(|()| {
            PfcError::BadRefresh {
                refresh: self.refresh_quanta,
                pause: self.pause_quanta,
            }
        })
    }

    /// The priorities that send and obey pause frames, as a bit mask: all eight in global mode.
    fn enabled_mask(&self) -> u8 {
        match self.mode {
            FlowControlMode::Global => u8::MAX,
            // Validated; an invalid entry enables nothing.
            FlowControlMode::Pfc => priority_mask(&self.priorities).unwrap_or(0),
        }
    }

    /// The time from a pause frame's arrival at the sender to the pause taking hold:
    /// `pfc_delay` plus the response time in quanta, plus the processing delay.
    pub fn response_delay_ps(&self, link_bps: u64) -> u64 {
        let response = self
            .response_quanta
            .unwrap_or_else(|| ieee_response_quanta(link_bps));
        pause_ps(self.pfc_delay.saturating_add(response), link_bps)
            .saturating_add(self.processing_delay_ns.saturating_mul(PS_PER_NS))
    }
}

/// Pause quanta above 0 and a refresh from 1 to below them.
fn check_pause_and_refresh(pause: u16, refresh: u16) -> Result<(), ()> {
    if pause == 0 || refresh == 0 || refresh >= pause {
        return Err(());
    }
    Ok(())
}

/// A pause frame as it leaves the port that asks for the pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PauseFrame {
    /// 802.1Qbb: the class-enable vector (bit N for priority N) and a time per priority; a
    /// priority whose bit is clear is not affected.
    Priority { class_enable: u8, quanta: [u16; 8] },
    /// 802.3x: one time for every priority.
    Global { quanta: u16 },
}

impl PauseFrame {
    /// The priorities this frame acts on, as a bit mask.
    pub fn priorities(&self) -> u8 {
        match *self {
            PauseFrame::Priority { class_enable, .. } => class_enable,
            PauseFrame::Global { .. } => u8::MAX,
        }
    }

    /// The quanta it gives `priority` (meaningful when [`Self::priorities`] has its bit).
    pub fn quanta(&self, priority: usize) -> u16 {
        match *self {
            PauseFrame::Priority { quanta, .. } => quanta[priority],
            PauseFrame::Global { quanta } => quanta,
        }
    }
}

/// Time accumulated per priority over intervals that open and close: a priority's time asking
/// for a pause, or its time paused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Stopwatch {
    /// The current (or last) interval, `[start, until)`.
    start: u64,
    until: u64,
    /// Picoseconds in the intervals before it.
    closed: u64,
}

impl Stopwatch {
    /// Whether `now` is inside the current interval.
    fn running(&self, now: u64) -> bool {
        now < self.until
    }

    /// From `now`, the interval ends at `until` (`now` to end it at once): it continues the
    /// current one if that has not ended yet, else starts a new one.
    fn extend(&mut self, now: u64, until: u64) {
        if !self.running(now) {
            self.closed += self.until - self.start;
            self.start = now;
        }
        self.until = until;
    }

    /// The time inside intervals up to `now`.
    fn total(&self, now: u64) -> u64 {
        self.closed + now.min(self.until).saturating_sub(self.start)
    }
}

/// The end of a link that receives data and asks for pauses: it holds which priorities are in
/// Xoff, builds the frames, refreshes the pause while it lasts, and counts.
///
/// The buffer model decides when (see [`XoffXon`]); [`Self::request`] takes its transitions. The
/// engine sends each frame returned and calls [`Self::refresh`] at [`Self::next_refresh_ps`].
#[derive(Debug, Clone)]
pub struct PauseGenerator {
    mode: FlowControlMode,
    enabled: u8,
    pause_quanta: u16,
    refresh_ps: u64,
    /// Priorities in Xoff.
    xoff: u8,
    next_refresh_ps: u64,
    asking: [Stopwatch; PRIORITIES],
    frames_sent: [u64; PRIORITIES],
}

impl PauseGenerator {
    /// The generator of a port with `config` (validated) on a link of `link_bps`.
    pub fn new(config: &PfcConfig, link_bps: u64) -> Self {
        PauseGenerator {
            mode: config.mode,
            enabled: config.enabled_mask(),
            pause_quanta: config.pause_quanta,
            refresh_ps: pause_ps(u32::from(config.refresh_quanta), link_bps),
            xoff: 0,
            next_refresh_ps: 0,
            asking: [Stopwatch::default(); PRIORITIES],
            frames_sent: [0; PRIORITIES],
        }
    }

    /// `priorities` (a bit mask) crossed Xoff or fell to Xon at `now`: the frame to send, if
    /// any. Priorities without PFC are ignored (lossy traffic is never paused), as is a
    /// transition a priority is already in. An Xoff frame carries every priority in Xoff (so it
    /// refreshes them all) and restarts the refresh timer; an Xon frame carries 0 quanta for
    /// those that resume. In global mode one pause covers the port: it starts with the first
    /// priority in Xoff and ends with the last.
    pub fn request(
        &mut self,
        priorities: u8,
        transition: Transition,
        now: u64,
    ) -> Option<PauseFrame> {
        let before = self.xoff;
        match transition {
            Transition::Xoff => self.xoff |= priorities & self.enabled,
            Transition::Xon => self.xoff &= !priorities,
        }
        let started = self.xoff & !before;
        let ended = before & !self.xoff;
        for p in 0..PRIORITIES {
            if started & (1 << p) != 0 {
                self.asking[p].extend(now, u64::MAX);
            } else if ended & (1 << p) != 0 {
                self.asking[p].extend(now, now);
            }
        }
        match self.mode {
            FlowControlMode::Pfc if started != 0 => Some(self.xoff_frame(now)),
            FlowControlMode::Pfc if ended != 0 => Some(self.send(ended, 0)),
            FlowControlMode::Global if before == 0 && self.xoff != 0 => Some(self.xoff_frame(now)),
            FlowControlMode::Global if before != 0 && self.xoff == 0 => Some(self.send(0, 0)),
            _ => None,
        }
    }

    /// The refresh due at `now`, if the port is still in Xoff and the refresh time has come.
    pub fn refresh(&mut self, now: u64) -> Option<PauseFrame> {
        (self.xoff != 0 && now >= self.next_refresh_ps).then(|| self.xoff_frame(now))
    }

    /// When the next refresh is due, while any priority is in Xoff.
    pub fn next_refresh_ps(&self) -> Option<u64> {
        (self.xoff != 0).then_some(self.next_refresh_ps)
    }

    /// The priorities in Xoff, as a bit mask.
    pub fn xoff_mask(&self) -> u8 {
        self.xoff
    }

    /// Pause frames sent that named `priority` (Xoff and Xon alike, as a switch's per-priority
    /// pause counters count them; a global frame names every priority).
    pub fn frames_sent(&self, priority: usize) -> u64 {
        self.frames_sent[priority]
    }

    /// Picoseconds `priority` has spent in Xoff up to `now`.
    pub fn xoff_ps(&self, priority: usize, now: u64) -> u64 {
        self.asking[priority].total(now)
    }

    fn xoff_frame(&mut self, now: u64) -> PauseFrame {
        self.next_refresh_ps = now.saturating_add(self.refresh_ps);
        self.send(self.xoff, self.pause_quanta)
    }

    /// The frame giving `quanta` to the priorities of `mask` (ignored in global mode), counted.
    fn send(&mut self, mask: u8, quanta: u16) -> PauseFrame {
        let frame = match self.mode {
            FlowControlMode::Pfc => {
                let mut times = [0; PRIORITIES];
                for (p, time) in times.iter_mut().enumerate() {
                    if mask & (1 << p) != 0 {
                        *time = quanta;
                    }
                }
                PauseFrame::Priority {
                    class_enable: mask,
                    quanta: times,
                }
            }
            FlowControlMode::Global => PauseFrame::Global { quanta },
        };
        let named = frame.priorities();
        for (p, count) in self.frames_sent.iter_mut().enumerate() {
            *count += u64::from(named >> p & 1);
        }
        frame
    }
}

/// The end of a link that sends data and obeys pauses: per priority, until when it is paused.
///
/// The engine calls [`Self::receive`] when a frame arrives (after the cable), which counts it
/// and gives the time it takes hold; at that time it calls [`Self::apply`]. Before starting a
/// packet of a priority it checks [`Self::paused_mask`], and wakes the priority at
/// [`Self::paused_until`]. A packet already started finishes.
#[derive(Debug, Clone)]
pub struct PauseResponder {
    mode: FlowControlMode,
    enabled: u8,
    link_bps: u64,
    response_delay_ps: u64,
    paused: [Stopwatch; PRIORITIES],
    frames_received: [u64; PRIORITIES],
}

impl PauseResponder {
    /// The responder of a port with `config` (validated) on a link of `link_bps`.
    pub fn new(config: &PfcConfig, link_bps: u64) -> Self {
        PauseResponder {
            mode: config.mode,
            enabled: config.enabled_mask(),
            link_bps,
            response_delay_ps: config.response_delay_ps(link_bps),
            paused: [Stopwatch::default(); PRIORITIES],
            frames_received: [0; PRIORITIES],
        }
    }

    /// The priorities `frame` acts on at this port: those with PFC enabled for a PFC frame in
    /// PFC mode, all for a global frame in global mode, none otherwise (the two modes exclude
    /// each other on a port).
    fn affected(&self, frame: &PauseFrame) -> u8 {
        match (self.mode, frame) {
            (FlowControlMode::Pfc, PauseFrame::Priority { .. })
            | (FlowControlMode::Global, PauseFrame::Global { .. }) => {
                frame.priorities() & self.enabled
            }
            _ => 0,
        }
    }

    /// `frame` arrived at `now`: counts it per priority it acts on and returns when it takes
    /// hold (`now` plus the response delay).
    pub fn receive(&mut self, frame: &PauseFrame, now: u64) -> u64 {
        let affected = self.affected(frame);
        for (p, count) in self.frames_received.iter_mut().enumerate() {
            *count += u64::from(affected >> p & 1);
        }
        now.saturating_add(self.response_delay_ps)
    }

    /// `frame` takes hold at `now`: each priority it acts on is paused for its quanta from now
    /// (0 resumes it), replacing what an earlier frame said.
    pub fn apply(&mut self, frame: &PauseFrame, now: u64) {
        let affected = self.affected(frame);
        for (p, watch) in self.paused.iter_mut().enumerate() {
            if affected & (1 << p) != 0 {
                let until = now.saturating_add(pause_ps(u32::from(frame.quanta(p)), self.link_bps));
                watch.extend(now, until);
            }
        }
    }

    /// The priorities paused at `now`, as a bit mask.
    pub fn paused_mask(&self, now: u64) -> u8 {
        self.paused.iter().enumerate().fold(0, |mask, (p, watch)| {
            mask | u8::from(watch.running(now)) << p
        })
    }

    /// When `priority`'s pause ends (in the past if it is not paused).
    pub fn paused_until(&self, priority: usize) -> u64 {
        self.paused[priority].until
    }

    /// Pause frames received that acted on `priority`.
    pub fn frames_received(&self, priority: usize) -> u64 {
        self.frames_received[priority]
    }

    /// Picoseconds `priority` has been paused up to `now`.
    pub fn paused_ps(&self, priority: usize, now: u64) -> u64 {
        self.paused[priority].total(now)
    }

    /// The response delay of this port ([`PfcConfig::response_delay_ps`]).
    pub fn response_delay_ps(&self) -> u64 {
        self.response_delay_ps
    }
}

/// A port that keeps priorities paused whatever its buffers hold, as the IXIA receive port of
/// the SONiC PFC pause response-time test plan does ("persistent PFC pause frames ... the
/// inter-frame transmission interval should be smaller than per-frame pause duration").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseStormConfig {
    /// The priorities it pauses.
    pub priorities: Vec<u8>,
    /// The quanta of each frame (65535 by default).
    #[serde(default = "max_quanta")]
    pub quanta: u16,
    /// Quanta between frames (32767 by default, half the pause): below `quanta`.
    #[serde(default = "half_quanta")]
    pub interval_quanta: u16,
    /// When the first frame leaves, in microseconds (0 by default).
    #[serde(default)]
    pub start_us: f64,
    /// When the storm stops (no frame at or after it; no resume is sent, the last pause runs
    /// out); absent, it lasts the whole run.
    #[serde(default)]
    pub stop_us: Option<f64>,
}

fn max_quanta() -> u16 {
    u16::MAX
}

fn half_quanta() -> u16 {
    u16::MAX / 2
}

/// Microseconds as picoseconds, if a time from 0 to 1e9 us.
fn us_to_ps(field: &'static str, value: f64) -> Result<u64, PfcError> {
    if !(0.0..=1e9).contains(&value) {
        return Err(PfcError::BadTime { field, value });
    }
    // Exact for any whole number of picoseconds below 2^53.
    Ok((value * PS_PER_US as f64).round() as u64)
}

impl PauseStormConfig {
    /// Checks the settings; the error says which one is impossible and why.
    pub fn validate(&self) -> Result<(), PfcError> {
        if priority_mask(&self.priorities)? == 0 {
            return Err(PfcError::NoStormPriority);
        }
        check_pause_and_refresh(self.quanta, self.interval_quanta).map_err(|()| {
            PfcError::BadStormInterval {
                interval: self.interval_quanta,
                quanta: self.quanta,
            }
        })?;
        us_to_ps("start_us", self.start_us)?;
        if let Some(stop) = self.stop_us {
            us_to_ps("stop_us", stop)?;
            if stop < self.start_us {
                return Err(PfcError::StopBeforeStart {
                    start: self.start_us,
                    stop,
                });
            }
        }
        Ok(())
    }

    /// The storm on a link of `link_bps` whose flow control is `mode`, checked. In global mode
    /// it sends global pause frames (a PFC frame would pause nothing there).
    pub fn storm(&self, mode: FlowControlMode, link_bps: u64) -> Result<PauseStorm, PfcError> {
        self.validate()?;
        let config = PfcConfig {
            mode,
            priorities: self.priorities.clone(),
            pause_quanta: self.quanta,
            refresh_quanta: self.interval_quanta,
            ..PfcConfig::default()
        };
        Ok(PauseStorm {
            mask: config.enabled_mask(),
            generator: PauseGenerator::new(&config, link_bps),
            start_ps: us_to_ps("start_us", self.start_us)?,
            stop_ps: self
                .stop_us
                .map(|stop| us_to_ps("stop_us", stop))
                .transpose()?
                .unwrap_or(u64::MAX),
            started: false,
        })
    }
}

/// A running pause storm: a [`PauseGenerator`] held in Xoff from the start to the stop time.
#[derive(Debug, Clone)]
pub struct PauseStorm {
    mask: u8,
    generator: PauseGenerator,
    start_ps: u64,
    stop_ps: u64,
    started: bool,
}

impl PauseStorm {
    /// The frame due at `now`, if any; the engine calls it at [`Self::next_ps`].
    pub fn poll(&mut self, now: u64) -> Option<PauseFrame> {
        if now >= self.stop_ps || now < self.start_ps {
            return None;
        }
        if !self.started {
            self.started = true;
            return self.generator.request(self.mask, Transition::Xoff, now);
        }
        self.generator.refresh(now)
    }

    /// When the next frame is due, or `None` once the storm is over.
    pub fn next_ps(&self) -> Option<u64> {
        let next = if self.started {
            self.generator.next_refresh_ps()?
        } else {
            self.start_ps
        };
        (next < self.stop_ps).then_some(next)
    }

    /// The storm's counters: frames sent per priority.
    pub fn generator(&self) -> &PauseGenerator {
        &self.generator
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: u64 = 1_000_000_000;

    #[test]
    fn pause_duration_from_quanta() {
        // 65535 x 512 bits / 40e9 b/s = 33,553,920 / 40e9 s = 838.848 us = 838,848,000 ps,
        // exactly (the SONiC plan's 838.84 us, the issue's 838.85): tolerance 0.
        assert_eq!(pause_ps(65535, 40 * G), 838_848_000);
        // One quantum: 512 / 10e9 s = 51.2 ns; 512 / 100e9 = 5.12 ns; 512 / 25e9 = 20.48 ns.
        assert_eq!(pause_ps(1, 10 * G), 51_200);
        assert_eq!(pause_ps(1, 100 * G), 5_120);
        assert_eq!(pause_ps(1, 25 * G), 20_480);
        // 65535 at 400G: 65535 x 1.28 ns = 83,884.8 ns (the reference's 83.9 us).
        assert_eq!(pause_ps(65535, 400 * G), 83_884_800);
        // Not a whole picosecond: 512 bits at 3 b/s is 170.67 s, rounded up.
        assert_eq!(pause_ps(1, 3), 170_666_666_666_667);
        assert_eq!(pause_ps(0, 40 * G), 0);
    }

    #[test]
    fn ieee_response_by_speed() {
        assert_eq!(ieee_response_quanta(10 * G), 67);
        assert_eq!(ieee_response_quanta(40 * G), 118);
        assert_eq!(ieee_response_quanta(100 * G), 394);
        // 2.5G lies between 1G (2) and 10G (67): the faster row's 67.
        assert_eq!(ieee_response_quanta(2_500_000_000), 67);
        // Above 800G: the last row's.
        assert_eq!(ieee_response_quanta(1600 * G), 905);
    }

    #[test]
    fn response_delay_sums_pfc_delay_response_and_processing() {
        let config = PfcConfig {
            pfc_delay: 100,
            processing_delay_ns: 250,
            ..PfcConfig::default()
        };
        // 100G: (100 + 394) quanta x 5.12 ns = 2529.28 ns, + 250 ns = 2779.28 ns.
        assert_eq!(config.response_delay_ps(100 * G), 2_779_280);
        let fixed = PfcConfig {
            response_quanta: Some(60),
            ..PfcConfig::default()
        };
        // 10G, Cisco's 60 quanta: 60 x 51.2 ns = 3072 ns.
        assert_eq!(fixed.response_delay_ps(10 * G), 3_072_000);
    }

    #[test]
    fn headroom_worst_case() {
        // 100G, 100 m of fibre (500 ns one way), 1500-byte frames, response 394 quanta
        // (2017.28 ns):
        //   frames: 2 x (1500 + 20) + 84 = 3124 B
        //   time: 2 x 500 + 2017.28 = 3017.28 ns at 100 Gb/s = 12.5 B/ns -> 37,716 B
        //   total 40,840 B. Tolerance 0 (integer arithmetic, exact here).
        let response = PfcConfig::default().response_delay_ps(100 * G);
        assert_eq!(response, 2_017_280);
        assert_eq!(
            headroom_bytes(100 * G, cable_ps(100), 1500, response),
            40_840
        );
        // 10G, 5 m (25 ns), 9216-byte frames, no response delay:
        //   2 x 9236 + 84 = 18,556 B; 50 ns at 1.25 B/ns = 62.5 -> 63 B (rounded up): 18,619 B.
        assert_eq!(headroom_bytes(10 * G, cable_ps(5), 9216, 0), 18_619);
    }

    #[test]
    fn xoff_xon_hysteresis() {
        let t = XoffXon {
            xoff: 20_480,
            xon: 10_240,
        };
        assert_eq!(t.transition(false, 20_479), None);
        assert_eq!(t.transition(false, 20_480), Some(Transition::Xoff));
        assert_eq!(t.transition(true, 10_241), None);
        assert_eq!(t.transition(true, 10_240), Some(Transition::Xon));
        assert_eq!(t.transition(true, 30_000), None);
    }

    fn pfc(priorities: &[u8]) -> PfcConfig {
        PfcConfig {
            priorities: priorities.to_vec(),
            ..PfcConfig::default()
        }
    }

    #[test]
    fn generator_pauses_refreshes_and_resumes() {
        let mut generator = PauseGenerator::new(&pfc(&[3, 4]), 40 * G);
        // Priority 3 crosses Xoff at 1 us: one frame, 65535 quanta for 3 only.
        let frame = generator.request(1 << 3, Transition::Xoff, 1_000_000);
        let mut expected = [0; 8];
        expected[3] = 65535;
        assert_eq!(
            frame,
            Some(PauseFrame::Priority {
                class_enable: 1 << 3,
                quanta: expected
            })
        );
        // Refresh after 32767 quanta at 40G: 32767 x 12.8 ns = 419,417.6 ns -> 419,417,600 ps.
        assert_eq!(generator.next_refresh_ps(), Some(1_000_000 + 419_417_600));
        assert_eq!(generator.refresh(1_000_000 + 419_417_599), None);
        assert!(generator.refresh(1_000_000 + 419_417_600).is_some());
        // Lossy priority 0 is never paused.
        assert_eq!(generator.request(1, Transition::Xoff, 500_000_000), None);
        // Priority 4 joins: the frame refreshes 3 and pauses 4.
        let Some(PauseFrame::Priority { class_enable, .. }) =
            generator.request(1 << 4, Transition::Xoff, 600_000_000)
        else {
            panic!("no frame for a new Xoff")
        };
        assert_eq!(class_enable, 1 << 3 | 1 << 4);
        // A repeated Xoff sends nothing.
        assert_eq!(
            generator.request(1 << 4, Transition::Xoff, 650_000_000),
            None
        );
        // 3 resumes at 800 us: a frame with 0 quanta for 3 alone.
        assert_eq!(
            generator.request(1 << 3, Transition::Xon, 800_000_000),
            Some(PauseFrame::Priority {
                class_enable: 1 << 3,
                quanta: [0; 8]
            })
        );
        assert_eq!(generator.xoff_mask(), 1 << 4);
        // Counters: 3 was named by Xoff, refresh, Xoff-with-4 and Xon = 4 frames; 4 by one.
        assert_eq!(generator.frames_sent(3), 4);
        assert_eq!(generator.frames_sent(4), 1);
        assert_eq!(generator.frames_sent(0), 0);
        // 3 asked from 1 us to 800 us: 799 us; 4 from 600 us, still at 900 us: 300 us.
        assert_eq!(generator.xoff_ps(3, 900_000_000), 799_000_000);
        assert_eq!(generator.xoff_ps(4, 900_000_000), 300_000_000);
        generator.request(1 << 4, Transition::Xon, 1_000_000_000);
        assert_eq!(generator.next_refresh_ps(), None);
    }

    #[test]
    fn global_pause_is_one_priority_covering_all() {
        let config = PfcConfig {
            mode: FlowControlMode::Global,
            ..PfcConfig::default()
        };
        let mut generator = PauseGenerator::new(&config, 10 * G);
        let frame = generator.request(1 << 3, Transition::Xoff, 0).unwrap();
        assert_eq!(frame, PauseFrame::Global { quanta: 65535 });
        assert_eq!(generator.request(1 << 5, Transition::Xoff, 10), None);
        assert_eq!(generator.request(1 << 3, Transition::Xon, 20), None);
        assert_eq!(
            generator.request(1 << 5, Transition::Xon, 30),
            Some(PauseFrame::Global { quanta: 0 })
        );
        let mut responder = PauseResponder::new(&config, 10 * G);
        responder.apply(&frame, 0);
        assert_eq!(responder.paused_mask(0), 0xff);
        // A PFC frame does nothing on a global-pause port.
        let mut other = PauseResponder::new(&config, 10 * G);
        other.apply(
            &PauseFrame::Priority {
                class_enable: 0xff,
                quanta: [65535; 8],
            },
            0,
        );
        assert_eq!(other.paused_mask(0), 0);
    }

    #[test]
    fn responder_obeys_after_the_response_delay() {
        let config = PfcConfig {
            pfc_delay: 10,
            response_quanta: Some(0),
            ..pfc(&[3])
        };
        let mut responder = PauseResponder::new(&config, 40 * G);
        let mut quanta = [0; 8];
        quanta[3] = 1000;
        quanta[0] = 1000; // priority 0 has no PFC here: ignored
        let frame = PauseFrame::Priority {
            class_enable: 1 | 1 << 3,
            quanta,
        };
        // Arrives at 1 us; takes hold 10 quanta x 12.8 ns = 128 ns later.
        let at = responder.receive(&frame, 1_000_000);
        assert_eq!(at, 1_128_000);
        assert_eq!(responder.frames_received(3), 1);
        assert_eq!(responder.frames_received(0), 0);
        responder.apply(&frame, at);
        // Paused for 1000 x 12.8 ns = 12.8 us, to 13.928 us.
        assert_eq!(responder.paused_mask(at), 1 << 3);
        assert_eq!(responder.paused_until(3), 13_928_000);
        assert_eq!(responder.paused_mask(13_927_999), 1 << 3);
        assert_eq!(responder.paused_mask(13_928_000), 0);
        // A refresh at 10 us extends to 22.8 us; a resume at 15 us ends it there.
        responder.apply(&frame, 10_000_000);
        assert_eq!(responder.paused_until(3), 22_800_000);
        let resume = PauseFrame::Priority {
            class_enable: 1 << 3,
            quanta: [0; 8],
        };
        responder.apply(&resume, 15_000_000);
        assert_eq!(responder.paused_mask(15_000_000), 0);
        // Paused from 1.128 us to 15 us without a break: 13.872 us.
        assert_eq!(responder.paused_ps(3, 20_000_000), 13_872_000);
        // A new pause at 30 us, still running at 31 us: 1 us more.
        responder.apply(&frame, 30_000_000);
        assert_eq!(responder.paused_ps(3, 31_000_000), 14_872_000);
    }

    #[test]
    fn storm_keeps_priorities_paused_until_it_stops() {
        let config = PauseStormConfig {
            priorities: vec![3, 4],
            quanta: 65535,
            interval_quanta: 32767,
            start_us: 1.0,
            stop_us: Some(2000.0),
        };
        let mut storm = config.storm(FlowControlMode::Pfc, 40 * G).unwrap();
        assert_eq!(storm.next_ps(), Some(1_000_000));
        assert_eq!(storm.poll(999_999), None);
        let first = storm.poll(1_000_000).unwrap();
        assert_eq!(first.priorities(), 1 << 3 | 1 << 4);
        // Frames every 419.4176 us (32767 quanta at 40G): 1, 420.4176, 839.8352, 1259.2528,
        // 1678.6704 us; the next (2098.088) is after the stop.
        let mut times = vec![1_000_000];
        while let Some(next) = storm.next_ps() {
            assert!(storm.poll(next).is_some());
            times.push(next);
        }
        assert_eq!(
            times,
            [
                1_000_000,
                420_417_600,
                839_835_200,
                1_259_252_800,
                1_678_670_400
            ]
        );
        assert_eq!(storm.generator().frames_sent(3), 5);
        assert_eq!(storm.poll(2_098_088_000), None);
        // Each frame pauses 838.848 us, longer than the 419.4176 us between them: a responder
        // fed the storm stays paused from 1 us to 1678.6704 + 838.848 = 2517.5184 us.
        let mut responder = PauseResponder::new(&pfc(&[3, 4]), 40 * G);
        for &t in &times {
            responder.apply(&first, t);
        }
        assert_eq!(responder.paused_until(4), 2_517_518_400);
        assert_eq!(responder.paused_ps(4, 3_000_000_000), 2_516_518_400);
    }

    #[test]
    fn validate_errors() {
        assert_eq!(pfc(&[8]).validate(), Err(PfcError::BadPriority(8)));
        assert_eq!(pfc(&[3, 3]).validate(), Err(PfcError::DuplicatePriority(3)));
        let global = PfcConfig {
            mode: FlowControlMode::Global,
            ..pfc(&[3])
        };
        assert_eq!(global.validate(), Err(PfcError::PrioritiesInGlobalMode));
        let lapse = PfcConfig {
            pause_quanta: 1000,
            refresh_quanta: 1000,
            ..pfc(&[3])
        };
        assert_eq!(
            lapse.validate(),
            Err(PfcError::BadRefresh {
                refresh: 1000,
                pause: 1000
            })
        );
        assert!(pfc(&[3, 4]).validate().is_ok());
        let storm = PauseStormConfig {
            priorities: vec![],
            quanta: 65535,
            interval_quanta: 100,
            start_us: 0.0,
            stop_us: None,
        };
        assert_eq!(storm.validate(), Err(PfcError::NoStormPriority));
        let late = PauseStormConfig {
            priorities: vec![3],
            start_us: 5.0,
            stop_us: Some(1.0),
            ..storm.clone()
        };
        assert_eq!(
            late.validate(),
            Err(PfcError::StopBeforeStart {
                start: 5.0,
                stop: 1.0
            })
        );
        let slow = PauseStormConfig {
            priorities: vec![3],
            interval_quanta: 65535,
            ..storm
        };
        assert!(matches!(
            slow.validate(),
            Err(PfcError::BadStormInterval { .. })
        ));
    }

    #[test]
    fn config_from_toml() {
        let config: PfcConfig = toml::from_str(
            "mode = \"pfc\"\npriorities = [3, 4]\npfc_delay = 200\nresponse_quanta = 60\n",
        )
        .unwrap();
        assert_eq!(config.priorities, [3, 4]);
        assert_eq!(config.pfc_delay, 200);
        assert_eq!(config.pause_quanta, 65535);
        let unknown = toml::from_str::<PfcConfig>("pfc_dely = 3\n").unwrap_err();
        assert!(unknown.to_string().contains("pfc_dely"), "{unknown}");
        let storm: PauseStormConfig = toml::from_str("priorities = [3]\nstart_us = 10\n").unwrap();
        assert_eq!((storm.quanta, storm.interval_quanta), (65535, 32767));
    }
}
