//! The signals the long-running commands (`ibqos sm`, `ibqos fabric serve`) act on: SIGTERM and
//! SIGINT ask them to stop, SIGHUP (and SIGCONT, as OpenSM) to read their configuration again.
//! The handlers only raise flags, which the command reads when it is ready to. SIGUSR1 reopens
//! `ibqos sm`'s log file (`logfile`) and never ends the process: logrotate signals every
//! instance, those that log to the journal too.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGCONT, SIGHUP, SIGINT, SIGTERM, SIGUSR1};

/// What SIGHUP does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hangup {
    /// Its default action: the process ends.
    Ends,
    /// It asks the command to read its configuration again; so does SIGCONT, as in OpenSM.
    Reloads,
}

/// The flags the signal handlers raise.
#[derive(Debug)]
pub struct Signals {
    stop: Arc<AtomicBool>,
    reload: Arc<AtomicBool>,
}

impl Signals {
    /// SIGTERM and SIGINT raise the stop flag; SIGHUP and SIGCONT the reload flag if `hangup`
    /// says so; SIGUSR1 is caught so that it does not end the process.
    pub fn install(hangup: Hangup) -> Result<Signals> {
        let signals = Signals {
            stop: Arc::new(AtomicBool::new(false)),
            reload: Arc::new(AtomicBool::new(false)),
        };
        let mut handled = vec![(SIGTERM, &signals.stop), (SIGINT, &signals.stop)];
        if hangup == Hangup::Reloads {
            handled.push((SIGHUP, &signals.reload));
            handled.push((SIGCONT, &signals.reload));
        }
        // A flag nobody reads: SIGUSR1's default action (the process ends) is what is replaced.
        let ignored = Arc::new(AtomicBool::new(false));
        handled.push((SIGUSR1, &ignored));
        for (signal, flag) in handled {
            signal_hook::flag::register(signal, Arc::clone(flag))
                .with_context(|| format!("cannot install the handler of signal {signal}"))?;
        }
        Ok(signals)
    }

    /// Raised once SIGTERM or SIGINT came, for a loop that polls it.
    pub fn stop(&self) -> &AtomicBool {
        &self.stop
    }

    /// Whether a signal came that the command has not acted on yet.
    pub fn pending(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.reload.load(Ordering::Relaxed)
    }

    /// Whether SIGTERM or SIGINT came since the last call.
    pub fn take_stop(&self) -> bool {
        self.stop.swap(false, Ordering::Relaxed)
    }

    /// Whether SIGHUP or SIGCONT came since the last call.
    pub fn take_reload(&self) -> bool {
        self.reload.swap(false, Ordering::Relaxed)
    }
}
