//! Fault injection on the receive path: a transport wrapper that loses or damages what the
//! fabric sends back, seeded so a failing run can be replayed exactly (the idea of smoltcp's
//! `phy::FaultInjector`). It tests the SM's retries and its handling of malformed MADs against
//! any fabric, ibsim included.

use std::time::{Duration, Instant};

use ibqos_mad::damage;
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

use super::{Incoming, LocalPort, Outgoing, Transport, TransportError};

/// How often each fault strikes a received MAD, as probabilities in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FaultConfig {
    /// The MAD is lost.
    pub loss: f64,
    /// The MAD is truncated or has bytes of its header flipped.
    pub corrupt: f64,
    pub seed: u64,
}

impl FaultConfig {
    pub fn is_active(&self) -> bool {
        self.loss > 0.0 || self.corrupt > 0.0
    }
}

/// A transport whose received MADs are lost or damaged at the configured rates.
#[derive(Debug)]
pub struct Faulty<T> {
    inner: T,
    config: FaultConfig,
    rng: Pcg64,
}

impl<T: Transport> Faulty<T> {
    pub fn new(inner: T, config: FaultConfig) -> Faulty<T> {
        Faulty {
            inner,
            rng: Pcg64::seed_from_u64(config.seed),
            config,
        }
    }
}

impl<T: Transport> Transport for Faulty<T> {
    fn send(&mut self, out: &Outgoing) -> Result<(), TransportError> {
        self.inner.send(out)
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Incoming>, TransportError> {
        match self.inner.recv(timeout)? {
            Some(Incoming::Mad { mut mad, from }) => {
                if self.rng.random_bool(self.config.loss.clamp(0.0, 1.0)) {
                    return Ok(None);
                }
                if self.rng.random_bool(self.config.corrupt.clamp(0.0, 1.0)) {
                    damage(&mut mad, |n| self.rng.random_range(0..n));
                }
                Ok(Some(Incoming::Mad { mad, from }))
            }
            // Hand-backs of our own requests pass untouched: they never crossed the fabric.
            other => Ok(other),
        }
    }

    fn local_port(&self) -> LocalPort {
        self.inner.local_port()
    }

    fn now(&self) -> Instant {
        self.inner.now()
    }
}
