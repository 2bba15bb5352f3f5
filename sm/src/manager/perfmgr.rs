//! The manager's performance manager: created with the SM, run on a master and, after a
//! discovery of its own, on an SM that is not master; its notices logged at OpenSM's levels;
//! and the QoS conformance report over its readings.

use std::time::Instant;

use ibqos_exchange::{Engine, Peer};
use ibqos_mad::SmState;
use ibqos_perfmgr::{Level, Notice, PerfMgr, PerfMgrConfig, SweepState};
use tracing::{debug, error, info};

use super::{Manager, State};
use crate::engine::sweep::{Phase, Sweep, SweepConfig, SweepMode};
use crate::perf::{PortLids, monitored_nodes};
use crate::qos_report::{QosReport, qos_report};

impl Manager {
    /// A performance manager with `config`, created at `now`, which was `unix_now` on the
    /// wall clock (its readings are dated from it). It runs once the first sweep has found
    /// whether this SM is master.
    pub fn with_perfmgr(mut self, config: PerfMgrConfig, now: Instant, unix_now: i64) -> Self {
        self.perfmgr = Some(PerfMgr::new(config, now, unix_now));
        self
    }

    pub fn perfmgr(&self) -> Option<&PerfMgr> {
        self.perfmgr.as_ref()
    }

    /// The QoS conformance report over the PerfMgr's last readings, with the configured
    /// tolerance; `None` without a PerfMgr.
    pub fn qos_report(&self) -> Option<QosReport> {
        let perfmgr = self.perfmgr.as_ref()?;
        Some(qos_report(
            &self.qos_promises,
            perfmgr.lanes(),
            self.qos_report_tolerance,
        ))
    }

    pub fn perfmgr_mut(&mut self) -> Option<&mut PerfMgr> {
        self.perfmgr.as_mut()
    }

    /// Whether the PerfMgr runs: on a master, and on an SM that is not master between the
    /// election's polls. Not while the SM's first sweep finds out which it is.
    pub(super) fn perfmgr_runs(&self) -> bool {
        self.election.state() == SmState::Master || self.is_not_master()
    }

    /// STANDBY or NOTACTIVE, with no sweep of its own: a PerfMgr sweep discovers first.
    pub(super) fn is_not_master(&self) -> bool {
        matches!(self.state, State::NotMaster)
    }

    /// The PerfMgr, while it runs.
    pub(super) fn running_perfmgr(&mut self) -> Option<&mut PerfMgr> {
        let runs = self.perfmgr_runs();
        self.perfmgr.as_mut().filter(|_| runs)
    }

    /// A PerfMgr sweep now (its timer, or the console's `perfmgr sweep`): at once on a
    /// master; on an SM that is not master, after a discovery of the subnet, unless the last
    /// sweep still has queries to send (then it is skipped, as `osm_perfmgr_process` skips
    /// it before it discovers). `false` when the PerfMgr does not run yet.
    pub fn perf_sweep(&mut self, now: Instant) -> bool {
        let discover = self.is_not_master();
        let discovering = self.perf_discovery.is_some();
        let Some(perfmgr) = self.running_perfmgr() else {
            return false;
        };
        if !discover || perfmgr.sweep_state() != SweepState::Sleep {
            perfmgr.sweep(now);
        } else if discovering {
            let skipped = Notice::SweepSkipped {
                state: SweepState::Active as u8,
            };
            info!(target: "ibqos::perfmgr", "{skipped}");
        } else {
            let config = SweepConfig {
                mode: SweepMode::Diff,
                ..self.config.clone()
            };
            let discovery = Sweep::start_electing(config, self.learned.clone(), now);
            self.perf_discovery = Some(Box::new(discovery));
        }
        self.log_perf_notices();
        true
    }

    /// The standby's discovery reached [`Phase::Discovered`] (or failed): the PerfMgr monitors
    /// what it found, and sweeps. A discovery that failed leaves the subnet it had.
    pub(super) fn end_perf_discovery_if_done(&mut self, now: Instant) {
        let ended = self.perf_discovery.as_deref().is_some_and(|discovery| {
            *discovery.phase() == Phase::Discovered || discovery.is_done()
        });
        let Some(discovery) = self.perf_discovery.take_if(|_| ended) else {
            return;
        };
        self.counters.add_sweep(&discovery);
        let Some(perfmgr) = self.perfmgr.as_mut() else {
            return;
        };
        if *discovery.phase() == Phase::Discovered {
            perfmgr.set_subnet(monitored_nodes(discovery.subnet(), PortLids::Held));
        }
        perfmgr.sweep(now);
        self.log_perf_notices();
    }

    /// Logs what the PerfMgr noticed, at OpenSM's levels.
    pub(super) fn log_perf_notices(&mut self) {
        let Some(perfmgr) = self.perfmgr.as_mut() else {
            return;
        };
        for notice in perfmgr.take_notices() {
            match notice.level() {
                Level::Error => error!(target: "ibqos::perfmgr", "{notice}"),
                Level::Info => info!(target: "ibqos::perfmgr", "{notice}"),
                Level::Verbose => debug!(target: "ibqos::perfmgr", "{notice}"),
            }
        }
    }

    /// A PerfMgt answer: the PerfMgr's, whatever the SM's state (it asked as master).
    pub(super) fn on_perf_mad(&mut self, now: Instant, mad: &[u8], from: Peer) {
        if let Some(perfmgr) = self.perfmgr.as_mut() {
            perfmgr.on_mad(now, mad, from);
        }
        self.log_perf_notices();
    }
}
