//! `ibqos sm` may start before its port can be used: the driver or ib_umad not loaded yet, the port
//! GUID not there, the cable not in. Instead of exiting, and being restarted in a loop as Fedora's
//! opensm-launch does, the SM waits. It says why in the log and in systemd's `STATUS=`, looks again
//! every [`RETRY`], and goes on once the port is there with its link up. A run that is to end
//! (`--once`, `--dry-run`) waits only so long, then fails saying what it waited for.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use ibqos_transport::ports::{PortSelector, Readiness, SysfsRoot, readiness};
use sd_notify::NotifyState;
use tracing::info;

use crate::signals::Signals;
use crate::systemd::{Watchdog, tell_systemd};

/// How often sysfs is read again while waiting: a few small files, so often enough that the SM
/// starts within a second of the link coming up.
const RETRY: Duration = Duration::from_secs(1);
/// How often a stop signal and the watchdog are looked at between two looks at sysfs.
const TICK: Duration = Duration::from_millis(50);

/// How the wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// The port is there with its link up.
    Ready,
    /// SIGTERM or SIGINT came first.
    Stopped,
}

/// How long `--once` and `--dry-run` wait for their port: a link trains in a few seconds.
pub const ONCE_PORT_WAIT: Duration = Duration::from_secs(10);

/// Waits until the port `selector` names is there with its link up, or a stop signal; an error
/// once `limit` (if any) has passed without either.
pub fn wait_for_port(
    selector: &PortSelector,
    signals: &Signals,
    watchdog: &mut Watchdog,
    limit: Option<Duration>,
) -> Result<Waited> {
    let root = SysfsRoot::from_env();
    let started = Instant::now();
    let mut told = None;
    loop {
        let now = readiness(&root, selector)?;
        let (status, reason) = match &now {
            Readiness::Ready => {
                if told.is_some() {
                    info!("{selector} is up; opening it");
                }
                return Ok(Waited::Ready);
            }
            Readiness::Absent(reason) => (
                format!("waiting for {selector} to appear"),
                Some(reason.as_str()),
            ),
            Readiness::LinkDown { port_guid } => {
                (format!("waiting for link on {port_guid:#018x}"), None)
            }
        };
        if let Some(limit) = limit
            && started.elapsed() >= limit
        {
            let why = reason
                .map(|reason| format!(": {reason}"))
                .unwrap_or_default();
            bail!("gave up after {} s {status}{why}", limit.as_secs());
        }
        if told.as_ref() != Some(&now) {
            let until = limit.map(|limit| format!(" (giving up after {} s)", limit.as_secs()));
            let until = until.unwrap_or_default();
            match reason {
                Some(reason) => info!(reason, "{status}{until}"),
                None => info!("{status}{until}"),
            }
            tell_systemd(&[NotifyState::Status(&status)]);
            told = Some(now);
        }
        let next_look = Instant::now() + RETRY;
        while Instant::now() < next_look {
            if signals.take_stop() {
                return Ok(Waited::Stopped);
            }
            watchdog.keep_alive();
            std::thread::sleep(TICK);
        }
    }
}
