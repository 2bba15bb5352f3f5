//! What each port's performance management agent would count, taken as the run goes: the
//! data and packets it sent and received per SL and VL, each VL's XmitWait and the packets it
//! discarded ([`Simulation::sampled`], [`Simulation::take_port_samples`]).
//!
//! The choices, and why:
//! - **Data packets only.** A management flow's packets (VL15) are left out: a fabric that
//!   carries the run counts its own MADs.
//! - **When a packet counts.** Sent, when it starts leaving the port, with the units the report
//!   counts (a packet still leaving at the run's end counts the blocks that left by then), so
//!   that the samples of a whole run add up to the report's per-link, per-VL figures. Received,
//!   when its last bit arrives.
//! - **Words.** Data counters count 4-byte words; a 64-byte credit block is 16.
//! - **XmitWait.** IBA counts, per VL, the ticks during which the VL had data to send and sent
//!   none for the whole tick, for lack of credits or of arbitration. Here a VL waits while it
//!   has a packet at its head and its port is not sending on it (idle, or sending another VL).
//!   A port's tick is the time one 64-byte block takes on its link: 5.12 ns at 4x EDR. Each
//!   lane's wait is timed exactly; a sample hands out the whole ticks it added since the last.
//! - **Relay errors.** A packet a switch drops, for want of a route for its DLID or because its
//!   SL maps to VL15 or to a VL the output link does not run, is counted where it came in, as
//!   PortRcvSwitchRelayErrors counts it.
//! - **Congestion notifications.** Under congestion control, a data packet marked FECN counts
//!   at its destination's port when delivered, and a BECN at its source's port when it
//!   arrives, by SL, as PortSLRcvFECN and PortSLRcvBECN count them.
//! - **Cost.** Only a sampled run counts: a run without sampling checks one `Option` per packet
//!   sent, received or re-queued, and its report is the same.

use std::collections::BTreeMap;

use super::{NO_LANES, SimOptions, Simulation, VL15, VLS};
use crate::infiniband::arbiter::BLOCK_BYTES;
use crate::network::{Flow, Network, NetworkError, PortSlot};

/// 4-byte words in a 64-byte credit block.
const WORDS_PER_BLOCK: u64 = BLOCK_BYTES as u64 / 4;

/// No VL: a port that is not sending.
const NOT_SENDING: u8 = u8::MAX;

/// Data and packets that crossed a port on one SL and VL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct LaneCount {
    pub sl: u8,
    pub vl: u8,
    /// In 4-byte words, as PortXmitData and PortRcvData count.
    pub words: u64,
    pub packets: u64,
}

/// What one port counted since the last sample.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PortSample {
    /// The port's node, by index in [`crate::Network::nodes`], and its number.
    pub node: usize,
    pub port: u8,
    /// Sent, by SL then VL.
    pub sent: Vec<LaneCount>,
    /// Received, by SL then VL.
    pub received: Vec<LaneCount>,
    /// Ticks each VL (the index) waited.
    pub xmit_wait: [u64; VLS],
    /// Packets received that the switch could not relay.
    pub relay_errors: u64,
    /// Under congestion control: by SL, data packets received marked FECN (a destination's
    /// PortSLRcvFECN) and BECNs received (a source's PortSLRcvBECN).
    pub rcv_fecn: [u64; 16],
    pub rcv_becn: [u64; 16],
}

/// Words and packets since the last sample.
#[derive(Debug, Clone, Copy, Default)]
struct Count {
    blocks: u64,
    packets: u64,
}

/// The sampled run's own counts, apart from what every run counts.
#[derive(Debug)]
pub(crate) struct Sampler {
    /// Per port: the data VLs that have a packet to send and are not being sent.
    waiting: Vec<u16>,
    /// Per port: the VL it is sending on, [`NOT_SENDING`] when idle.
    sending: Vec<u8>,
    /// Per port: its XmitWait tick.
    tick_ps: Vec<u64>,
    /// Per lane: its wait as it will be at the run's end if nothing changes, kept as
    /// [`super::Counts::waits`] keeps the credit waits.
    wait_to_end: Vec<u64>,
    /// Per lane: the ticks samples have handed out.
    ticks_taken: Vec<u64>,
    /// Since the last sample, by (port, SL, VL).
    sent: BTreeMap<(u32, u8, u8), Count>,
    received: BTreeMap<(u32, u8, u8), Count>,
    /// Since the last sample, by the port they came in by.
    relay_errors: BTreeMap<u32, u64>,
    /// Since the last sample, by (port, SL): FECN-marked packets and BECNs received.
    fecn: BTreeMap<(u32, u8), u64>,
    becn: BTreeMap<(u32, u8), u64>,
}

impl Sampler {
    fn count(counts: &mut BTreeMap<(u32, u8, u8), Count>, at: (u32, u8, u8), blocks: u64) {
        let count = counts.entry(at).or_default();
        count.blocks += blocks;
        count.packets += 1;
    }
}

impl<'n> Simulation<'n> {
    /// [`Simulation::new`], counting per port for [`Simulation::take_port_samples`]. An
    /// InfiniBand run only: Ethernet ports have no PMA.
    pub fn sampled(
        network: &'n Network,
        flows: &'n [Flow],
        options: SimOptions,
    ) -> Result<Simulation<'n>, NetworkError> {
        if network.ethernet.is_some() {
            return Err(NetworkError::SampledEthernet);
        }
        let mut sim = Simulation::new(network, flows, options)?;
        sim.start_sampling();
        Ok(sim)
    }

    fn start_sampling(&mut self) {
        let ports = self.fabric.states.len();
        let tick_ps = self
            .layout
            .ports
            .iter()
            .map(|slot| slot.link.serialization_ps(1).max(1))
            .collect();
        self.sampler = Some(Box::new(Sampler {
            waiting: vec![0; ports],
            sending: vec![NOT_SENDING; ports],
            tick_ps,
            wait_to_end: vec![0; self.fabric.lanes.len()],
            ticks_taken: vec![0; self.fabric.lanes.len()],
            sent: BTreeMap::new(),
            received: BTreeMap::new(),
            relay_errors: BTreeMap::new(),
            fecn: BTreeMap::new(),
            becn: BTreeMap::new(),
        }));
    }

    /// Notes that `port` started sending `blocks` of a packet of `sl` on `vl`, or stopped
    /// sending (`None`), when sampling.
    #[inline(always)]
    pub(super) fn sample_sending(&mut self, port: u32, sending: Option<(u8, u8, u64, bool)>) {
        if let Some(sampler) = self.sampler.as_deref_mut() {
            let vl = match sending {
                Some((sl, vl, blocks, management)) => {
                    if !management {
                        Sampler::count(&mut sampler.sent, (port, sl, vl), blocks);
                    }
                    vl
                }
                None => NOT_SENDING,
            };
            sampler.sending[port as usize] = vl;
            self.sample_waits(port);
        }
    }

    /// Notes a data packet of `sl` on `vl`, of `blocks`, arriving at `port`, when sampling.
    #[inline(always)]
    pub(super) fn sample_arrival(&mut self, port: u32, sl: u8, vl: u8, blocks: u32) {
        if let Some(sampler) = self.sampler.as_deref_mut()
            && vl != VL15
        {
            Sampler::count(&mut sampler.received, (port, sl, vl), u64::from(blocks));
        }
    }

    /// Notes a packet that came in by `port` and that its switch could not relay, when
    /// sampling.
    #[inline(always)]
    pub(super) fn sample_relay_error(&mut self, port: u32) {
        if let Some(sampler) = self.sampler.as_deref_mut() {
            *sampler.relay_errors.entry(port).or_default() += 1;
        }
    }

    /// Notes a congestion notification of `sl` received at `port`, when sampling: a data
    /// packet marked FECN at its destination, or a BECN at its source (`becn`).
    pub(super) fn sample_notification(&mut self, port: u32, sl: u8, becn: bool) {
        if let Some(sampler) = self.sampler.as_deref_mut() {
            let counts = if becn {
                &mut sampler.becn
            } else {
                &mut sampler.fecn
            };
            *counts.entry((port, sl)).or_default() += 1;
        }
    }

    /// Starts or ends the XmitWait of each data VL of `port` whose wait changed: one that has a
    /// packet at its head and is not being sent waits. Called when sampling after a lane's head
    /// or the port's sending changed.
    #[inline(always)]
    pub(super) fn note_waits(&mut self, port: u32) {
        if self.sampler.is_some() {
            self.sample_waits(port);
        }
    }

    #[inline(never)]
    fn sample_waits(&mut self, port: u32) {
        let left = self.left_ps();
        let state = self.fabric.states[port as usize];
        let Some(sampler) = self.sampler.as_deref_mut() else {
            return;
        };
        let p = port as usize;
        let sent = match sampler.sending[p] {
            NOT_SENDING => 0,
            vl => 1u16 << vl,
        };
        let waiting = state.queued & !sent & !(1 << VL15);
        let mut changed = waiting ^ sampler.waiting[p];
        sampler.waiting[p] = waiting;
        while changed != 0 {
            let vl = changed.trailing_zeros() as u8;
            changed &= changed - 1;
            let wait = &mut sampler.wait_to_end[state.lane(vl)];
            if waiting & 1 << vl != 0 {
                *wait += left;
            } else {
                *wait -= left;
            }
        }
    }

    /// What every port counted since the last call (or the run's start), for the ports that
    /// counted anything, in port order. Empty unless the run is [`Simulation::sampled`].
    pub fn take_port_samples(&mut self) -> Vec<PortSample> {
        let left = self.left_ps();
        let Some(sampler) = self.sampler.as_deref_mut() else {
            return Vec::new();
        };
        let mut samples: BTreeMap<u32, PortSample> = BTreeMap::new();
        let ports = &self.layout.ports[..];
        let lane_count = |(&(_, sl, vl), count): (&(u32, u8, u8), &Count)| LaneCount {
            sl,
            vl,
            words: count.blocks * WORDS_PER_BLOCK,
            packets: count.packets,
        };
        for (at, count) in std::mem::take(&mut sampler.sent) {
            sample_of(&mut samples, ports, at.0)
                .sent
                .push(lane_count((&at, &count)));
        }
        for (at, count) in std::mem::take(&mut sampler.received) {
            sample_of(&mut samples, ports, at.0)
                .received
                .push(lane_count((&at, &count)));
        }
        for (port, errors) in std::mem::take(&mut sampler.relay_errors) {
            sample_of(&mut samples, ports, port).relay_errors = errors;
        }
        for ((port, sl), count) in std::mem::take(&mut sampler.fecn) {
            sample_of(&mut samples, ports, port).rcv_fecn[usize::from(sl)] = count;
        }
        for ((port, sl), count) in std::mem::take(&mut sampler.becn) {
            sample_of(&mut samples, ports, port).rcv_becn[usize::from(sl)] = count;
        }
        for (port, state) in (0..).zip(&self.fabric.states) {
            if state.base == NO_LANES {
                continue;
            }
            let tick = sampler.tick_ps[port as usize];
            for vl in 0..state.vls {
                let lane = state.lane(vl);
                let ongoing = if sampler.waiting[port as usize] & 1 << vl != 0 {
                    left
                } else {
                    0
                };
                let ticks = (sampler.wait_to_end[lane] - ongoing) / tick;
                let new = ticks - sampler.ticks_taken[lane];
                if new > 0 {
                    sampler.ticks_taken[lane] = ticks;
                    sample_of(&mut samples, ports, port).xmit_wait[usize::from(vl)] = new;
                }
            }
        }
        samples.into_values().collect()
    }
}

/// The sample of `port` in `samples`, made empty if it has none yet.
fn sample_of<'s>(
    samples: &'s mut BTreeMap<u32, PortSample>,
    ports: &[PortSlot],
    port: u32,
) -> &'s mut PortSample {
    samples.entry(port).or_insert_with(|| {
        let slot = ports[port as usize];
        PortSample {
            node: slot.node as usize,
            port: slot.num,
            ..PortSample::default()
        }
    })
}
