//! What the SM tells systemd (`Type=notify`): its state on the socket `NOTIFY_SOCKET` names, and
//! `WATCHDOG=1` at half the interval the unit's `WatchdogSec=` asks for (`WATCHDOG_USEC`, for
//! the process `WATCHDOG_PID` names), so that a main loop that hangs gets the daemon restarted.

use std::time::{Duration, Instant};

use sd_notify::NotifyState;
use tracing::debug;

/// Tells the service manager (systemd's `NOTIFY_SOCKET`, when it set one) how the SM stands; a
/// message that cannot be sent costs only a debug line.
pub fn tell_systemd(states: &[NotifyState]) {
    if let Err(error) = sd_notify::notify(states) {
        debug!(%error, "cannot notify the service manager");
    }
}

/// The watchdog systemd asked for, if it did: when `WATCHDOG=1` is next due.
#[derive(Debug)]
pub struct Watchdog {
    /// Half the unit's `WatchdogSec=`, as sd_watchdog_enabled(3) advises; `None` without one.
    every: Option<Duration>,
    last: Instant,
}

impl Watchdog {
    /// The watchdog of this process's environment (`WATCHDOG_USEC`, and `WATCHDOG_PID` if set
    /// naming this process).
    pub fn from_env() -> Watchdog {
        Watchdog {
            every: sd_notify::watchdog_enabled().map(|interval| interval / 2),
            last: Instant::now(),
        }
    }

    /// Whether `WATCHDOG=1` is due: a main loop that waits must stop waiting for it.
    pub fn due(&self) -> bool {
        self.every.is_some_and(|every| self.last.elapsed() >= every)
    }

    /// Sends `WATCHDOG=1` if it is due.
    pub fn keep_alive(&mut self) {
        if self.due() {
            tell_systemd(&[NotifyState::Watchdog]);
            self.last = Instant::now();
        }
    }
}
