//! The subnet manager's whole lifetime, sans-IO: which sweep comes next and why, what it has
//! learned from the fabric, and the answers to what reaches it. Time, MADs and the operator's
//! requests come in; MADs to send and events go out. The caller owns the clock, the fabric and
//! the files (`ibqos-transport`'s driver feeds a [`Manager`] from a transport).
//!
//! The policy, as OpenSM's state manager has it:
//! - The first sweep is forced: it Sets every value, whatever the fabric holds (OpenSM's first
//!   heavy sweep forces every table). Every later sweep is a diff sweep: it reads what the
//!   fabric holds and Sets only what differs, so it repairs what changed behind the SM's back
//!   and applies an edited configuration.
//! - A dry run is one sweep that reads and compares like a diff sweep and sends no Set.
//! - [`Run::Once`] (`opensm -o`) sweeps again at once until the subnet is up, and again at once
//!   when a trap 128 came during the sweep (a link changed after discovery saw it, so what the
//!   sweep found may already be stale); it gives up after [`ONCE_MAX_SWEEPS`] sweeps. Only the
//!   last sweep is reported.
//! - [`Run::Daemon`] reports every sweep. It sweeps again at once after a trap 128 during a
//!   sweep, at once on a trap 128 between sweeps, and otherwise after the sweep interval.
//! - A [`reload`](Manager::reload) (SIGHUP) applies to the next sweep, which starts at once (at
//!   once after the current one, if a sweep is under way); the LID cache the SM started with and
//!   what it learned from the fabric are kept, so the diff sweep Sets only what the new
//!   configuration changes.
//! - A [`stop`](Manager::stop) ends the run at once between sweeps. A sweep under way sends
//!   nothing more: the Sets already sent take effect, and their answers are awaited for at most
//!   [`STOP_WAIT`] so that the M_Keys they gave are learned and saved; then the run ends.
//! - Every sweep but a dry run leaves the LIDs it found to be saved ([`Event::SaveLids`]), so a
//!   restarted SM gives each port its old address.
//!
//! - Whether it sweeps at all is the [`Election`]'s (IBA 14.4, see the `election` module): the
//!   SM starts DISCOVERING, and every sweep stops after discovery until the election has read
//!   the other SMs' SMInfo. Only a MASTER's sweep goes on to Set anything; a STANDBY (or
//!   NOTACTIVE) SM runs no sweep and sends no Set, only its polls of the master, and its SA
//!   drops every query, as OpenSM's does when not MASTER. A standby that takes over (its master
//!   stopped answering, or handed over) sweeps as master with a diff sweep: it Sets only what
//!   the fabric holds differently, so the traffic never loses its tables. A master that finds
//!   another SM (trap 144 from another port) sweeps at once to hold the election. A sweep the
//!   election stops to discover again (another SM asked for this one's SMInfo while it was
//!   DISCOVERING) is started again at once in its own mode: a first sweep stays forced.
//!
//! Traps, SMInfo and other requests are answered by the [`Responder`] and the [`Election`],
//! during a sweep and between sweeps alike; their answers go out before the sweep's next SMP.
//!
//! Every SMP request that leaves the manager, whoever made it, carries the M_Key of the port it
//! goes to, as the [`KeyRing`] knows it (the `mkey` module). Every response that comes back teaches
//! the key ring. When what it knows of the keys changed, the manager hands out the guid2mkey cache
//! to keep ([`Event::SaveMkeys`]) after the sweep.
//!
//! With a [`PerfMgr`] ([`with_perfmgr`](Manager::with_perfmgr)), the SM also reads the ports'
//! counters, on the PerfMgr's own timer, as OpenSM's `osm_perfmgr_process`. A master hands it
//! the subnet of each sweep that brings the subnet up, and its PerfMgt MADs go out after the
//! sweep's. A STANDBY (or NOTACTIVE) SM sweeps no subnet, so each PerfMgr sweep starts with a
//! discovery of its own (`perfmgr_discovery`): the sweep's discovery and nothing after it. The
//! nodes it no longer finds leave the PerfMgr, as OpenSM's drop manager takes them out, and the
//! PMAs are asked at the LIDs the master gave. Its notices are logged here.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use ibqos_congestion::CongestionManager;
use ibqos_exchange::Engine;
use ibqos_exchange::smp::parse_smp;
use ibqos_exchange::{OutgoingMad, Peer};
use ibqos_mad::{Guid, Mad, Method, MgmtClass, SmState};
use ibqos_opensm::Settings;
use ibqos_perfmgr::PerfMgr;
use tracing::{debug, info, warn};

use crate::cache::write_guid2lid;
use crate::config::{congestion_options, election_config, mkey_config, sa_config, sweep_config};
use crate::counters::Counters;
use crate::election::{Election, Next, StateChange, Verdict};
use crate::engine::credit_loops::CreditLoopWatch;
use crate::engine::lids::endport_lmc;
use crate::engine::sweep::{Learned, Phase, Sweep, SweepConfig, SweepMode};
use crate::mkey::{KeyRing, Neighbors};
use crate::perf::{PortLids, monitored_nodes};
use crate::qos_report::Promises;
use crate::responder::{Heard, Responder, Unsolicited, generic_notice};
use crate::sa::{Sa, SaDb};
use crate::summary::{SmSummary, SweepSummary};

/// Sweeps a [`Run::Once`] makes before it gives up on bringing the subnet up.
pub const ONCE_MAX_SWEEPS: u32 = 4;

/// The longest a stop waits for the answers to the SMPs a sweep had on the wire. A fabric
/// answers in microseconds; a slow one must not hold a stop that systemd times.
pub const STOP_WAIT: Duration = Duration::from_millis(300);

/// How long the SM lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// Sweep until the subnet is up, then end (`ibqos sm --once`, `opensm -o`).
    Once,
    /// One sweep that Sets nothing and lists what it would change (`ibqos sm --dry-run`).
    DryRun,
    /// Sweep until stopped (`ibqos sm`).
    Daemon,
}

/// Why a sweep starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepReason {
    /// The run's first sweep.
    First,
    /// The sweep interval passed.
    Interval,
    /// A trap 128 came between sweeps: a link changed state.
    LinkChange,
    /// A trap 128 came during the last sweep, so what it found may be stale already.
    LinkChangeDuringSweep,
    /// [`Run::Once`]: the subnet is not up yet.
    NotUpYet,
    /// The configuration was read again.
    Reload,
    /// Trap 144 from another port: an SM came, went or changed its priority.
    SmChange,
    /// The election: the master stopped answering, or handed over, or a master is to be
    /// found out.
    Election,
    /// The operator asked for one (`ibqos ctl sweep`, OpenSM's console `resweep`).
    Requested,
}

/// What the manager has for its caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The SM's state changed (IBA 14.4), logged as OpenSM logs it ("Entering MASTER state").
    StateChanged(StateChange),
    /// A sweep started: the `sweep`th of the run.
    SweepStarted {
        sweep: u32,
        mode: SweepMode,
        reason: SweepReason,
    },
    /// The LIDs the ports hold after a sweep, as a guid2lid file to keep for the next run.
    SaveLids(String),
    /// The M_Keys the ports hold and the links between the ports, as guid2mkey and neighbors
    /// files to keep for the next run (or a standby that takes over), when they changed.
    /// guid2mkey holds secrets: write it where only the SM reads.
    SaveMkeys {
        guid2mkey: String,
        neighbors: String,
    },
    /// A sweep ended (a [`Run::Once`] reports only its last).
    SweepDone(Box<SweepSummary>),
    /// The multicast forwarding tables were programmed again after joins or leaves.
    MulticastUpdated {
        /// MFT blocks Set or found in place.
        blocks: usize,
        /// Switches whose blocks failed or echoed back different.
        failed_switches: usize,
    },
    /// Nothing more to send or wait for.
    Finished(Outcome),
}

/// How the SM's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// [`Run::Once`]: the subnet is up.
    SubnetUp,
    /// [`Run::DryRun`]: its sweep ended.
    DryRunDone,
    /// [`Run::Once`]: the subnet was not up after [`ONCE_MAX_SWEEPS`] sweeps.
    GaveUp,
    /// [`Run::Once`]: another SM is master; this one is STANDBY (or NOTACTIVE) and Set
    /// nothing (`opensm -o` ends so as a standby too).
    NotMaster,
    /// [`Manager::stop`] was called.
    Stopped,
}

impl Outcome {
    /// Whether the run did what it was asked to.
    pub fn is_success(self) -> bool {
        self != Outcome::GaveUp
    }
}

#[derive(Debug)]
enum State {
    /// The next sweep starts at the next [`Manager::poll_transmit`].
    Due(SweepReason),
    /// Between sweeps, until this time.
    Waiting {
        until: Instant,
    },
    Sweeping {
        sweep: Box<Sweep>,
        mode: SweepMode,
        /// Traps 128 that arrived during this sweep.
        link_changes: u64,
        /// The election asked for another sweep during this one.
        elect_again: bool,
    },
    /// Programming the multicast forwarding tables alone; then back to waiting until `resume`.
    UpdatingMulticast {
        update: Box<Sweep>,
        resume: Instant,
        /// A sweep is due once the update ends, and why.
        sweep_after: Option<SweepReason>,
    },
    /// Another SM is master, or this one is NOTACTIVE: no sweep, no Set; only the election's
    /// polls.
    NotMaster,
    /// Stopped during a sweep: nothing is sent; the answers to the `unanswered` SMPs it had on
    /// the wire are awaited until `until`.
    Stopping {
        until: Instant,
        unanswered: usize,
    },
    Finished,
}

/// The subnet manager of one port, from its first sweep to its end.
#[derive(Debug)]
pub struct Manager {
    run: Run,
    config: SweepConfig,
    interval: Duration,
    /// PortInfo fields each port was seen not to keep; not compared by diff sweeps.
    learned: Learned,
    /// The GUID of the SM's port.
    port_guid: Guid,
    /// The SM's state and the other SMs.
    election: Election,
    responder: Responder,
    /// The subnet administrator: answers from the last sweep that brought the subnet up.
    sa: Sa,
    /// The M_Keys the ports hold, and the one each SMP carries.
    keys: KeyRing,
    state: State,
    last_sweep: Option<Box<Sweep>>,
    /// Sweeps started so far.
    sweeps: u32,
    /// The election stopped a forced sweep to discover again: the next sweep is forced too.
    forced_again: bool,
    reloaded: Option<Settings>,
    /// Joins or leaves changed some MLID's members since the multicast forwarding tables were
    /// last computed.
    multicast_due: bool,
    /// MADs to send before the sweep's next: answers to requests, and what a sweep left queued
    /// when it ended.
    queued: VecDeque<OutgoingMad>,
    events: VecDeque<Event>,
    /// What the SM has done since it started, for monitoring.
    counters: Counters,
    /// Each routing checked for credit loops.
    credit_loops: CreditLoopWatch,
    /// The performance manager, which sweeps while this SM is master, standby or NOTACTIVE.
    perfmgr: Option<PerfMgr>,
    /// A standby's discovery for the PerfMgr's sweep under way, which ends at
    /// [`Phase::Discovered`].
    perf_discovery: Option<Box<Sweep>>,
    /// The congestion control manager, which a master runs after each sweep that brings the
    /// subnet up (with `congestion_control TRUE`).
    congestion: CongestionManager,
    /// The next congestion control programming sends every Set, whatever the ports hold
    /// (OpenSM's `need_update`): the first after a sweep that began this SM's mastership.
    congestion_forced: bool,
    /// The sweep under way has sent its congestion control Sets.
    congestion_programmed: bool,
    /// The VL arbitration the last sweep that brought the subnet up verified on each port,
    /// which the QoS conformance report holds the ports to.
    qos_promises: Promises,
    /// `qos_report_tolerance`: how many percentage points a share may be from its promise.
    qos_report_tolerance: u8,
}

impl Manager {
    /// The SM of the port `port_guid`, configured by `settings`, with the LIDs of an earlier
    /// run (a guid2lid cache). Its first sweep starts at the first [`poll_transmit`].
    ///
    /// [`poll_transmit`]: Manager::poll_transmit
    pub fn new(
        run: Run,
        settings: &Settings,
        guid2lid: BTreeMap<u64, u16>,
        port_guid: Guid,
    ) -> Self {
        let election = election_config(settings, port_guid);
        Manager {
            run,
            config: sweep_config(settings, guid2lid),
            interval: interval(settings),
            learned: Learned::default(),
            port_guid,
            election: match run {
                Run::DryRun => Election::inactive(election),
                Run::Once | Run::Daemon => Election::new(election),
            },
            responder: Responder::default(),
            sa: Sa::new(sa_config(settings)),
            keys: KeyRing::new(
                mkey_config(settings),
                BTreeMap::new(),
                Neighbors::new(),
                port_guid,
            ),
            state: State::Due(SweepReason::First),
            last_sweep: None,
            sweeps: 0,
            forced_again: false,
            reloaded: None,
            multicast_due: false,
            queued: VecDeque::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            credit_loops: CreditLoopWatch::default(),
            perfmgr: None,
            perf_discovery: None,
            congestion: CongestionManager::new(congestion_options(settings)),
            congestion_forced: false,
            congestion_programmed: false,
            qos_promises: Promises::default(),
            qos_report_tolerance: settings.qos_report_tolerance,
        }
    }

    /// The M_Keys of an earlier run (a guid2mkey cache) and its neighbors (which port each
    /// directed route reaches before it answers), to reach the ports it protected.
    pub fn with_key_caches(mut self, guid2mkey: BTreeMap<u64, u64>, neighbors: Neighbors) -> Self {
        let config = self.keys.config().clone();
        self.keys = KeyRing::new(config, guid2mkey, neighbors, self.port_guid);
        self
    }

    /// The next MAD to send: an answer to something that reached the SM, else the sweep's next
    /// SMP, with the M_Key of the port it goes to. Starts the next sweep when it is due.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        self.start_sweep_if_due(now);
        let next = match self.queued.pop_front() {
            Some(mut queued) => {
                self.keys.stamp(&mut queued);
                queued
            }
            None => match self.running().and_then(|sweep| sweep.poll_transmit(now)) {
                Some(mut transmit) => {
                    self.keys.stamp_smp(&mut transmit.mad, transmit.dlid);
                    OutgoingMad::from(&transmit)
                }
                // The congestion manager's and the PerfMgr's GMPs carry no M_Key and are no
                // SMPs to count.
                None => {
                    if let Some(set) = self
                        .running_congestion()
                        .and_then(|cc| cc.poll_transmit(now))
                    {
                        return Some(set);
                    }
                    return self.running_perfmgr()?.poll_transmit(now);
                }
            },
        };
        if self.counters.count_sent(&next.mad) {
            self.election.count_smp_sent();
        }
        Some(next)
    }

    /// What the SM has done since it started, for monitoring.
    /// The credit loops the last check of a routing found; `None` before the first routing.
    pub fn credit_loops(&self) -> Option<usize> {
        self.credit_loops.loops()
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// SMPs of the sweep under way that are on the wire, waiting for their answers.
    pub fn smps_outstanding(&self) -> usize {
        match &self.state {
            State::Sweeping { sweep, .. } => sweep.outstanding(),
            State::UpdatingMulticast { update, .. } => update.outstanding(),
            State::NotMaster => self.perf_discovery.as_ref().map_or(0, |d| d.outstanding()),
            _ => 0,
        }
    }

    /// The M_Keys the SM knows the ports hold, by port GUID.
    pub fn m_keys(&self) -> &BTreeMap<u64, u64> {
        self.keys.held()
    }

    /// The sweep under way: a whole sweep, an update of the multicast forwarding tables, or
    /// a standby's discovery for the PerfMgr.
    fn running(&mut self) -> Option<&mut Sweep> {
        match &mut self.state {
            State::Sweeping { sweep, .. } => Some(sweep),
            State::UpdatingMulticast { update, .. } => Some(update),
            State::NotMaster => self.perf_discovery.as_deref_mut(),
            _ => None,
        }
    }

    /// The SM's state (IBA 14.4) and what it knows of the other SMs.
    pub fn election(&self) -> &Election {
        &self.election
    }

    /// The next thing for the caller, in the order it happened.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`on_time`](Manager::on_time) is next needed: a request's timeout, or the end of
    /// the wait for the next sweep. `None` when nothing is timed, which includes a sweep that
    /// is due now (it starts at the next [`poll_transmit`](Manager::poll_transmit)).
    pub fn next_deadline(&self) -> Option<Instant> {
        let state = match &self.state {
            State::Sweeping { sweep, .. } => sweep.next_deadline(),
            State::UpdatingMulticast { update, .. } => update.next_deadline(),
            State::Waiting { until } | State::Stopping { until, .. } => Some(*until),
            State::Due(_) | State::NotMaster | State::Finished => None,
        };
        if self.is_ending() {
            return state;
        }
        let election = self.election.next_deadline();
        let perfmgr = self.perfmgr.as_ref().filter(|_| self.perfmgr_runs());
        let perfmgr = perfmgr.and_then(|perfmgr| perfmgr.next_deadline());
        let discovery = self.perf_discovery.as_ref();
        let discovery = discovery.and_then(|discovery| discovery.next_deadline());
        let congestion = self.congestion.next_deadline();
        [
            state,
            self.sa.next_deadline(),
            election,
            perfmgr,
            discovery,
            congestion,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The last sweep that ended: what the SM knows of the fabric.
    pub fn last_sweep(&self) -> Option<&Sweep> {
        self.last_sweep.as_deref()
    }

    /// The SA's snapshot: that of the last sweep that brought the subnet up (a dry run leaves
    /// it as it was).
    pub fn sa_snapshot(&self) -> Option<&SaDb> {
        self.sa.snapshot()
    }

    /// A MAD from `from` (LID 0xFFFF for a directed-route MAD): an answer to the sweep, a
    /// request or trap for the SM, or a query for the SA.
    pub fn on_mad(&mut self, now: Instant, mad: &[u8], from: Peer) {
        self.counters.count_received(mad);
        if self.is_ending() {
            return self.await_answer(mad);
        }
        match Mad::new_checked(mad).map(|header| header.mgmt_class()) {
            // An SA query changes no sweep.
            Ok(MgmtClass::SubnAdm) => return self.on_sa_mad(now, mad, from),
            Ok(MgmtClass::SubnLid | MgmtClass::SubnDirectedRoute) => {
                self.on_smp(now, mad, from.lid)
            }
            Ok(MgmtClass::PerfMgt) if self.perfmgr.is_some() => {
                return self.on_perf_mad(now, mad, from);
            }
            Ok(MgmtClass::CongestionControl) => {
                self.congestion.on_mad(now, mad, from);
                self.log_congestion_notices();
            }
            // No class this SM serves (a vendor's, PerfMgt without a PerfMgr), or no MAD at all.
            _ => self.responder.on_malformed(),
        }
        self.end_sweep_if_done(now);
    }

    /// An SA request: answered by the SA, and only by a master.
    fn on_sa_mad(&mut self, now: Instant, mad: &[u8], from: Peer) {
        if self.election.state() != SmState::Master {
            // `sa_mad_ctrl_rcv_callback`: "Received SA MAD while SM not MASTER. MAD ignored".
            debug!("an SA MAD while this SM is not master; ignored");
            return;
        }
        let act_count = self.election.own_info().act_count;
        if let Some(answer) = self.sa.on_request(now, mad, from, act_count) {
            self.queued.push_back(answer);
        }
        // A join or leave may have created or deleted a group: traps 66 and 67.
        self.queued.extend(self.sa.take_outgoing());
        self.note_multicast_change(now);
    }

    /// An SMP from LID `slid`: the answer to one of the SM's own requests, or a request or
    /// trap for the SM.
    fn on_smp(&mut self, now: Instant, mad: &[u8], slid: u16) {
        match parse_smp(mad) {
            Some(smp) if Election::is_own_answer(&smp) => {
                let next = self.election.on_answer(&smp);
                self.follow_election(now, next);
            }
            Some(smp) if smp.method.is_response() => {
                self.keys.observe(&smp);
                match self.running() {
                    Some(sweep) => sweep.on_response(now, smp),
                    None => debug!("a response after its sweep ended; ignored"),
                }
            }
            smp => {
                // A trap is repressed by the responder and forwarded to subscribers by the SA.
                if let Some(trap) = smp.filter(|smp| smp.method == Method::Trap) {
                    if let Some(notice) = generic_notice(&trap.data) {
                        *self.counters.traps.entry(notice.trap_number()).or_default() += 1;
                    }
                    self.sa.on_trap(now, &trap.data, slid);
                    self.queued.extend(self.sa.take_outgoing());
                }
                match self.responder.on_request(mad, slid) {
                    Heard::LinkChange(reply) => {
                        self.queued.push_back(reply);
                        self.on_link_change();
                    }
                    Heard::CapabilityChange { repress, issuer } => {
                        self.queued.push_back(repress);
                        self.on_capability_change(issuer);
                    }
                    Heard::SmInfo(request) => {
                        let (reply, next) = self.election.on_request(now, request, slid);
                        self.queued.push_back(reply);
                        self.follow_election(now, next);
                    }
                    Heard::Request(reply) | Heard::BadMKey(reply) => self.queued.push_back(reply),
                    Heard::Repressed | Heard::Unanswerable => {}
                }
            }
        }
    }

    /// One of the SM's own MADs handed back undelivered.
    pub fn on_dropped(&mut self, now: Instant, mad: &[u8]) {
        let class = Mad::new_checked(mad).map(|header| header.mgmt_class());
        if class == Ok(MgmtClass::CongestionControl) {
            self.congestion.on_dropped(now, mad);
            self.log_congestion_notices();
            return self.end_sweep_if_done(now);
        }
        if class == Ok(MgmtClass::PerfMgt)
            && let Some(perfmgr) = self.perfmgr.as_mut()
        {
            perfmgr.on_dropped(now, mad);
            return self.log_perf_notices();
        }
        if matches!(self.state, State::Stopping { .. }) {
            return self.count_answered();
        }
        if self.running().is_none() {
            return;
        }
        match parse_smp(mad) {
            Some(request) => {
                if let Some(sweep) = self.running() {
                    sweep.on_dropped(now, request);
                }
            }
            None => self.responder.on_malformed(),
        }
        self.end_sweep_if_done(now);
    }

    /// Time has passed: requests past their deadline are retried or given up, and the wait for
    /// the next sweep may be over.
    pub fn on_time(&mut self, now: Instant) {
        match self.state {
            State::Stopping { until, .. } if now >= until => return self.end_stop(),
            State::Stopping { .. } | State::Finished => return,
            _ => {}
        }
        if let Some(sweep) = self.running() {
            sweep.on_time(now);
        }
        let next = self.election.on_time(now);
        self.follow_election(now, next);
        self.sa.on_time(now);
        self.queued.extend(self.sa.take_outgoing());
        // Not master, the timer's sweep discovers first; a master's PerfMgr sweeps on its own.
        let discover = self.is_not_master();
        if discover
            && self
                .running_perfmgr()
                .is_some_and(|pm| pm.take_due_sweep(now))
        {
            self.perf_sweep(now);
        }
        if let Some(perfmgr) = self.running_perfmgr() {
            perfmgr.on_time(now);
        }
        self.log_perf_notices();
        self.congestion.on_time(now);
        self.log_congestion_notices();
        self.end_sweep_if_done(now);
        self.start_sweep_if_due(now);
    }

    /// A new configuration, for the next sweep, which starts at once (after the current one if
    /// a sweep is under way).
    pub fn reload(&mut self, settings: Settings) {
        self.reloaded = Some(settings);
        if matches!(self.state, State::Waiting { .. }) {
            self.state = State::Due(SweepReason::Reload);
        }
    }

    /// A sweep now, at the operator's request, if the SM is waiting for its next one; `false`
    /// when one is due or under way already, or the SM is not master and does not sweep.
    pub fn sweep_now(&mut self) -> bool {
        match &mut self.state {
            State::Waiting { .. } => {
                self.state = State::Due(SweepReason::Requested);
                true
            }
            State::UpdatingMulticast { sweep_after, .. } => {
                sweep_after.get_or_insert(SweepReason::Requested);
                true
            }
            State::Due(_)
            | State::Sweeping { .. }
            | State::NotMaster
            | State::Stopping { .. }
            | State::Finished => false,
        }
    }

    /// Ends the run: at once between sweeps. A sweep (or multicast update) under way sends
    /// nothing more from `now`; what its Sets already sent changes stays changed, and the run
    /// ends once they are answered or [`STOP_WAIT`] has passed, whichever comes first.
    pub fn stop(&mut self, now: Instant) {
        let sweep = match std::mem::replace(&mut self.state, State::Finished) {
            State::Sweeping { sweep, .. } | State::UpdatingMulticast { update: sweep, .. } => sweep,
            ending @ (State::Stopping { .. } | State::Finished) => {
                self.state = ending;
                return;
            }
            State::Due(_) | State::Waiting { .. } | State::NotMaster => return self.end_stop(),
        };
        let unanswered = sweep.outstanding();
        info!(
            phase = ?sweep.phase(),
            unanswered,
            "stopping during a sweep: it sends nothing more"
        );
        self.counters.add_sweep(&sweep);
        if unanswered == 0 {
            return self.end_stop();
        }
        self.state = State::Stopping {
            until: now + STOP_WAIT,
            unanswered,
        };
    }

    /// Whether the run is over, or stopping and only awaiting answers.
    fn is_ending(&self) -> bool {
        matches!(self.state, State::Stopping { .. } | State::Finished)
    }

    /// While stopping, a response still teaches the key ring the M_Key its Set gave; nothing
    /// else is answered or acted on.
    fn await_answer(&mut self, mad: &[u8]) {
        let Some(smp) =
            parse_smp(mad).filter(|smp| smp.method.is_response() && !Election::is_own_answer(smp))
        else {
            return;
        };
        self.keys.observe(&smp);
        self.count_answered();
    }

    /// One SMP of those a stop awaits came back, or was handed back undelivered.
    fn count_answered(&mut self) {
        if let State::Stopping { unanswered, .. } = &mut self.state {
            *unanswered -= 1;
            if *unanswered == 0 {
                self.end_stop();
            }
        }
    }

    /// The stop is over: the M_Keys learned since the last save are handed out to be kept, and
    /// the run ends.
    fn end_stop(&mut self) {
        if let Some((guid2mkey, neighbors)) = self.keys.take_changed() {
            self.events.push_back(Event::SaveMkeys {
                guid2mkey,
                neighbors,
            });
        }
        self.state = self.finished(Outcome::Stopped);
    }

    fn on_link_change(&mut self) {
        match &mut self.state {
            State::Sweeping { link_changes, .. } => *link_changes += 1,
            State::Waiting { .. } => {
                info!("trap 128: a link changed; sweeping now");
                self.state = State::Due(SweepReason::LinkChange);
            }
            State::UpdatingMulticast { sweep_after, .. } => {
                sweep_after.get_or_insert(SweepReason::LinkChange);
            }
            State::Due(_) | State::NotMaster | State::Stopping { .. } | State::Finished => {}
        }
    }

    /// Trap 144: OpenSM sweeps on it (`osm_trap_rcv.c`), so that a new SM is found and the
    /// election held. A master between sweeps sweeps at once; the SM's own trap (its port
    /// claiming IsSM) is not news.
    fn on_capability_change(&mut self, issuer: u16) {
        let own_lid = self.last_sweep.as_deref().map(|s| s.own_port().lid);
        if self.election.state() == SmState::Master
            && matches!(self.state, State::Waiting { .. })
            && own_lid.is_some_and(|lid| lid != issuer)
        {
            info!(
                issuer,
                "trap 144: another port's capabilities changed; sweeping now"
            );
            self.state = State::Due(SweepReason::SmChange);
        }
    }

    /// What the election heard leads to: its SMPs go out, its changes of state are reported,
    /// and a sweep starts, or every sweep stops.
    fn follow_election(&mut self, now: Instant, next: Next) {
        self.queued.extend(self.election.take_outgoing());
        let changes = self.election.take_changes();
        let yielded = changes
            .iter()
            .any(|c| c.from == SmState::Master && c.to != SmState::Master);
        if yielded {
            // The SA's state is not handed over (`state_mgr_sa_clean`).
            self.sa.reset();
        }
        self.events
            .extend(changes.into_iter().map(Event::StateChanged));
        match next {
            Next::Continue => {}
            Next::Sweep => match &mut self.state {
                State::Sweeping { elect_again, .. } => *elect_again = true,
                State::UpdatingMulticast { sweep_after, .. } => {
                    sweep_after.get_or_insert(SweepReason::Election);
                }
                State::Waiting { .. } | State::NotMaster => {
                    self.state = State::Due(SweepReason::Election);
                }
                State::Due(_) | State::Stopping { .. } | State::Finished => {}
            },
            Next::Yield => self.stand_down(now),
        }
    }

    /// Another SM is master (or this one is disabled): the sweep under way ends before its
    /// next Set, and none starts until the election says so.
    fn stand_down(&mut self, now: Instant) {
        match std::mem::replace(&mut self.state, State::NotMaster) {
            State::Finished => self.state = State::Finished,
            State::Sweeping { sweep, mode, .. } => self.report_stopped(now, sweep, mode),
            _ => {}
        }
        self.state = if self.run == Run::Once {
            self.finished(Outcome::NotMaster)
        } else {
            State::NotMaster
        };
    }

    /// A sweep the election stopped after discovery: reported (in a daemon), Set nothing.
    fn report_stopped(&mut self, now: Instant, mut sweep: Box<Sweep>, mode: SweepMode) {
        // Only Gets were on the wire; what is still queued would go to a fabric this SM no
        // longer programs.
        while sweep.poll_transmit(now).is_some() {}
        self.learned = sweep.learned().clone();
        self.counters.add_sweep(&sweep);
        if self.run == Run::Daemon {
            let heard = self.responder.take_heard();
            let summary = self.summary(&sweep, mode, &heard, now);
            self.events.push_back(Event::SweepDone(Box::new(summary)));
        }
        self.last_sweep = Some(sweep);
    }

    /// The summary of `sweep`, ending `now`, with the SM's state.
    fn summary(
        &self,
        sweep: &Sweep,
        mode: SweepMode,
        heard: &Unsolicited,
        now: Instant,
    ) -> SweepSummary {
        let state = SmSummary {
            state: self.election.state(),
            reason: self.election.reason(),
            master: self.election.master(),
        };
        SweepSummary::new(sweep, mode, self.sweeps, heard, state, now)
    }

    /// A sweep paused after discovery: the election decides whether it goes on.
    fn elect_if_discovered(&mut self, now: Instant) {
        let State::Sweeping { sweep, mode, .. } = &mut self.state else {
            return;
        };
        if *sweep.phase() != Phase::Discovered {
            return;
        }
        let found = sweep.remote_sms().to_vec();
        let own = sweep.own_port();
        match self.election.after_discovery(now, found, own) {
            Verdict::Proceed => {
                let first = self.election.is_first_master_sweep();
                self.congestion_forced |= first;
                sweep.proceed(now, first);
                self.follow_election(now, Next::Continue);
            }
            Verdict::Stop if self.election.state() == SmState::Master => {
                self.follow_election(now, Next::Continue);
                // Waiting for the other master's handover: sweep again after the interval.
                let until = now + self.interval;
                self.end_stopped_sweep(now, State::Waiting { until });
            }
            Verdict::Stop => self.follow_election(now, Next::Yield),
            Verdict::Rediscover => {
                // Done again as it was meant: a first sweep stays forced.
                self.forced_again = *mode == SweepMode::Forced;
                self.end_stopped_sweep(now, State::Due(SweepReason::Election));
            }
        }
    }

    /// The sweep the election stopped after discovery ends, reported; then `next`.
    fn end_stopped_sweep(&mut self, now: Instant, next: State) {
        let State::Sweeping { sweep, mode, .. } =
            std::mem::replace(&mut self.state, State::NotMaster)
        else {
            return;
        };
        self.report_stopped(now, sweep, mode);
        self.state = next;
    }

    /// After an SA request: if a join or leave changed some MLID's members, the multicast
    /// forwarding tables are due, and between sweeps they are programmed at once.
    fn note_multicast_change(&mut self, now: Instant) {
        if self.sa.take_multicast_changed() {
            self.multicast_due = true;
        }
        if let State::Waiting { until } = self.state {
            self.update_multicast_if_due(now, until);
        }
    }

    /// Starts an update of the multicast forwarding tables when joins or leaves are waiting for
    /// one and a sweep brought the subnet up; afterwards the SM waits until `resume`. Returns
    /// whether it started one.
    fn update_multicast_if_due(&mut self, now: Instant, resume: Instant) -> bool {
        let Some(last) = self.last_sweep.as_deref() else {
            return false;
        };
        if !self.multicast_due || *last.phase() != Phase::SubnetUp || self.run != Run::Daemon {
            return false;
        }
        self.multicast_due = false;
        let config = SweepConfig {
            mode: SweepMode::Forced,
            multicast: self.sa.multicast_members(),
            ..self.config.clone()
        };
        info!("multicast members changed; programming the multicast forwarding tables");
        let learned = std::mem::take(&mut self.learned);
        self.state = State::UpdatingMulticast {
            update: Box::new(Sweep::update_multicast(config, learned, last, now)),
            resume,
            sweep_after: None,
        };
        true
    }

    fn start_sweep_if_due(&mut self, now: Instant) {
        let reason = match self.state {
            State::Due(reason) => reason,
            State::Waiting { until } if now >= until => SweepReason::Interval,
            _ => return,
        };
        if let Some(settings) = self.reloaded.take() {
            self.apply(&settings);
        }
        // A standby that takes over sweeps the subnet itself.
        self.perf_discovery = None;
        // The first sweep Sets everything; a standby that takes over, like every later sweep,
        // Sets only what differs from what the fabric holds.
        let mode = match self.run {
            Run::DryRun => SweepMode::DryRun,
            _ if self.sweeps == 0 || std::mem::take(&mut self.forced_again) => SweepMode::Forced,
            _ => SweepMode::Diff,
        };
        self.sweeps += 1;
        self.congestion_programmed = false;
        // The sweep routes the members the SA holds now; joins from here on make another update.
        self.multicast_due = false;
        let config = SweepConfig {
            mode,
            multicast: self.sa.multicast_members(),
            ..self.config.clone()
        };
        let learned = std::mem::take(&mut self.learned);
        let sweep = match self.run {
            Run::DryRun => Sweep::start(config, learned, now),
            Run::Once | Run::Daemon => Sweep::start_electing(config, learned, now),
        };
        self.state = State::Sweeping {
            sweep: Box::new(sweep),
            mode,
            link_changes: 0,
            elect_again: false,
        };
        self.events.push_back(Event::SweepStarted {
            sweep: self.sweeps,
            mode,
            reason,
        });
    }

    /// Settings read again: the LID cache the SM started with is kept.
    fn apply(&mut self, settings: &Settings) {
        let guid2lid = std::mem::take(&mut self.config.guid2lid);
        self.config = sweep_config(settings, guid2lid);
        self.interval = interval(settings);
        self.election
            .set_config(election_config(settings, self.port_guid));
        self.sa.set_config(sa_config(settings));
        self.keys.set_config(mkey_config(settings));
        self.congestion.set_options(congestion_options(settings));
        self.qos_report_tolerance = settings.qos_report_tolerance;
    }

    fn end_sweep_if_done(&mut self, now: Instant) {
        self.end_perf_discovery_if_done(now);
        self.elect_if_discovered(now);
        if self.awaiting_congestion() {
            return;
        }
        match &self.state {
            State::Sweeping { sweep, .. } if sweep.is_done() => {}
            State::UpdatingMulticast { update, .. } if update.is_done() => {
                return self.end_multicast_update(now);
            }
            _ => return,
        }
        let State::Sweeping {
            mut sweep,
            mode,
            link_changes,
            elect_again,
        } = std::mem::replace(&mut self.state, State::Finished)
        else {
            unreachable!("matched above")
        };
        // What the sweep queued before it ended still goes out.
        while let Some(transmit) = sweep.poll_transmit(now) {
            self.queued.push_back((&transmit).into());
        }
        self.learned = sweep.learned().clone();
        self.counters.add_sweep(&sweep);
        self.counters.congestion_drift = self.congestion.drift().clone();
        // A dry run writes no table: what it would route is not what the fabric holds.
        if mode != SweepMode::DryRun
            && self
                .credit_loops
                .after_sweep(&sweep, self.config.path_sls())
        {
            self.counters.credit_loop_checks += 1;
        }
        let heard = self.responder.take_heard();
        let up = *sweep.phase() == Phase::SubnetUp;
        if up {
            // OpenSM clears `first_time_master_sweep` at the end of the sweep.
            self.election.master_sweep_done();
        }
        // The SA answers once a sweep brought the subnet up (OpenSM drops SA requests until its
        // first "SUBNET UP"), then from every later sweep's snapshot.
        if mode != SweepMode::DryRun && (up || self.sa.is_serving()) {
            let sms = self.election.known().map(|sm| sm.info);
            self.sa.update(now, SaDb::new(&sweep).with_remote_sms(sms));
            self.queued.extend(self.sa.take_outgoing());
        }
        if up
            && mode != SweepMode::DryRun
            && let Some(perfmgr) = self.perfmgr.as_mut()
        {
            perfmgr.set_subnet(monitored_nodes(sweep.subnet(), PortLids::Assigned));
            self.qos_promises = Promises::from_sweep(&sweep);
        }
        if mode != SweepMode::DryRun {
            let subnet = sweep.subnet();
            let ports = subnet.endports().filter(|(_, _, p)| p.lid != 0);
            let ports: Vec<(u64, u16, u8)> = ports
                .map(|(node, _, p)| {
                    let is_switch = subnet.nodes.get(&node).is_some_and(|n| n.is_switch());
                    (p.guid, p.lid, endport_lmc(is_switch, self.config.lmc))
                })
                .collect();
            self.events
                .push_back(Event::SaveLids(write_guid2lid(ports.iter().copied())));
            self.keys
                .set_lids(ports.into_iter().map(|(guid, lid, _)| (guid, lid)));
            if let Some((guid2mkey, neighbors)) = self.keys.take_changed() {
                self.events.push_back(Event::SaveMkeys {
                    guid2mkey,
                    neighbors,
                });
            }
        }
        let last = match self.run {
            Run::Daemon => None,
            Run::DryRun => Some(Outcome::DryRunDone),
            Run::Once if up && (link_changes == 0 || self.sweeps >= ONCE_MAX_SWEEPS) => {
                Some(Outcome::SubnetUp)
            }
            Run::Once if self.sweeps >= ONCE_MAX_SWEEPS => Some(Outcome::GaveUp),
            Run::Once => None,
        };
        if self.run == Run::Daemon || last.is_some() {
            let summary = self.summary(&sweep, mode, &heard, now);
            self.events.push_back(Event::SweepDone(Box::new(summary)));
        }
        self.last_sweep = Some(sweep);
        self.state = if let Some(outcome) = last {
            self.finished(outcome)
        } else if link_changes > 0 {
            info!(
                traps = link_changes,
                "a link changed during the sweep; sweeping again"
            );
            State::Due(SweepReason::LinkChangeDuringSweep)
        } else if self.run == Run::Once {
            warn!(sweep = self.sweeps, "subnet not up yet; sweeping again");
            State::Due(SweepReason::NotUpYet)
        } else if elect_again {
            State::Due(SweepReason::Election)
        } else if self.reloaded.is_some() {
            State::Due(SweepReason::Reload)
        } else {
            State::Waiting {
                until: now + self.interval,
            }
        };
        // Joins answered during the sweep, or members the new snapshot dropped.
        if self.sa.take_multicast_changed() {
            self.multicast_due = true;
        }
        if let State::Waiting { until } = self.state {
            self.update_multicast_if_due(now, until);
        }
    }

    /// An update of the multicast forwarding tables ended: the SA learns the tables, and the SM
    /// goes back to what it was waiting for (or to another update if members changed again).
    fn end_multicast_update(&mut self, now: Instant) {
        let State::UpdatingMulticast {
            mut update,
            resume,
            sweep_after,
        } = std::mem::replace(&mut self.state, State::Finished)
        else {
            return;
        };
        while let Some(transmit) = update.poll_transmit(now) {
            self.queued.push_back((&transmit).into());
        }
        self.learned = update.learned().clone();
        self.counters.add_sweep(&update);
        self.sa.learn_mfts(update.verified_mfts());
        let counts = update.mft_counts();
        self.events.push_back(Event::MulticastUpdated {
            blocks: update.verified_mfts().count(),
            failed_switches: counts.failed,
        });
        self.state = if let Some(reason) = sweep_after {
            info!(
                ?reason,
                "a sweep became due during the multicast update; sweeping now"
            );
            State::Due(reason)
        } else if self.reloaded.is_some() {
            State::Due(SweepReason::Reload)
        } else {
            State::Waiting { until: resume }
        };
        if let State::Waiting { until } = self.state {
            self.update_multicast_if_due(now, until);
        }
    }

    fn finished(&mut self, outcome: Outcome) -> State {
        self.events.push_back(Event::Finished(outcome));
        State::Finished
    }
}

/// The manager as the transport's driver runs it: its own methods.
impl Engine for Manager {
    fn poll_transmit(&mut self, now: Instant) -> Option<OutgoingMad> {
        Manager::poll_transmit(self, now)
    }
    fn next_deadline(&self) -> Option<Instant> {
        Manager::next_deadline(self)
    }
    fn on_mad(&mut self, now: Instant, mad: &[u8], from: Peer) {
        Manager::on_mad(self, now, mad, from)
    }
    fn on_dropped(&mut self, now: Instant, mad: &[u8]) {
        Manager::on_dropped(self, now, mad)
    }
    fn on_time(&mut self, now: Instant) {
        Manager::on_time(self, now)
    }
}

/// The time between two sweeps when nothing happens; OpenSM's 0 (no periodic sweeps) is taken
/// as one second.
pub(crate) fn interval(settings: &Settings) -> Duration {
    Duration::from_secs(u64::from(settings.sm.sweep_interval.max(1)))
}

mod congestion;
mod perfmgr;
#[cfg(test)]
mod tests;
