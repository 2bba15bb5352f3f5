//! The manager's congestion control: OpenSM's `osm_congestion_control_setup` after a master's
//! sweep that brought the subnet up, the wait for its answers, and its notices.

use ibqos_congestion::{CcNotice, CongestionManager};
use ibqos_mad::SmState;
use tracing::{error, warn};

use super::{Manager, State};
use crate::congestion::cc_ports;
use crate::engine::sweep::{Phase, SweepMode};

impl Manager {
    /// The congestion control manager, while this SM is master: OpenSM's runs from its state
    /// manager's master sweeps.
    pub(super) fn running_congestion(&mut self) -> Option<&mut CongestionManager> {
        let master = self.election.state() == SmState::Master;
        Some(&mut self.congestion).filter(|_| master)
    }

    /// Logs what the congestion control manager noticed.
    pub(super) fn log_congestion_notices(&mut self) {
        for notice in self.congestion.take_notices() {
            match notice {
                CcNotice::NoAnswer { .. } | CcNotice::ForeignKey { .. } => {
                    error!(target: "ibqos::congestion", "{notice}")
                }
                CcNotice::Unavailable { .. }
                | CcNotice::NotKept { .. }
                | CcNotice::NotHeld { .. }
                | CcNotice::Unread { .. }
                | CcNotice::KeyRefused { .. } => warn!(target: "ibqos::congestion", "{notice}"),
            }
        }
    }

    /// `osm_congestion_control_setup` after a sweep that brought the subnet up, and its wait
    /// for every answer before SUBNET UP: whether the sweep must still wait. The Sets go out
    /// once per sweep, with the read back around them (every master sweep, as the QoS tables
    /// are read back); with `congestion_control` FALSE there are none.
    pub(super) fn awaiting_congestion(&mut self) -> bool {
        let State::Sweeping { sweep, mode, .. } = &self.state else {
            return false;
        };
        if *sweep.phase() != Phase::SubnetUp || *mode == SweepMode::DryRun {
            return false;
        }
        if !self.congestion_programmed {
            self.congestion_programmed = true;
            let force = std::mem::take(&mut self.congestion_forced);
            self.congestion.program(&cc_ports(sweep.subnet()), force);
        }
        !self.congestion.is_idle()
    }
}
