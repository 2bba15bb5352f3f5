//! Time and faults on the emulated fabric: how long an SMP takes to come back and what the
//! fabric loses, delays or damages on the way, all drawn from one seeded generator so that the
//! same seed, given the same requests at the same emulated times, gives the same bytes.
//!
//! The emulator stays sans-IO: time is a number of nanoseconds the caller passes in, and a
//! response carries the emulated time at which it arrives back at the SM
//! ([`super::Reply`]). Holding it until then is the transport's business.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;

/// How long an SMP takes: the links it crosses and the SMA that answers it.
///
/// The defaults are assumptions of the right order of magnitude, not measurements: ibsim has no
/// latency at all. A hop is about what switch vendors quote as port-to-port latency for EDR/HDR
/// ASICs (90-130 ns), plus a few metres of cable at 5 ns/m. An SMA's time is dominated by firmware
/// on a management processor. On a switch that is a small embedded CPU serving every port (hence 20
/// us); on an HCA, the adapter's own firmware (hence 2 us).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Latency {
    /// One link crossed one way, in ns: cable and a switch's cut-through forwarding.
    pub wire_ns: u64,
    /// A switch's SMA answering one SMP, in ns.
    pub switch_sma_ns: u64,
    /// A CA's or router's SMA answering one SMP, in ns.
    pub ca_sma_ns: u64,
}

impl Latency {
    /// No latency at all: every response arrives at the time its request was sent.
    pub const ZERO: Latency = Latency {
        wire_ns: 0,
        switch_sma_ns: 0,
        ca_sma_ns: 0,
    };
}

impl Default for Latency {
    fn default() -> Self {
        Latency {
            wire_ns: 100,
            switch_sma_ns: 20_000,
            ca_sma_ns: 2_000,
        }
    }
}

/// Random faults of the fabric itself. The default is a fabric without any.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Faults {
    /// The probability (0-1) that a MAD crossing the fabric is lost, drawn once for the request
    /// and once for its response: a lost request changes nothing, a lost response leaves a Set
    /// done that the SM never hears of. A round trip thus fails with 1 - (1 - loss)^2.
    pub loss: f64,
    /// The probability (0-1) that a response arrives truncated or with bytes of its MAD header
    /// flipped (see [`ibqos_mad::damage`]).
    pub corrupt: f64,
    /// Each response arrives up to this many ns late, uniformly: responses overtake each other.
    pub jitter_ns: u64,
}

/// Everything random or timed about an emulated fabric apart from its schedule of events.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Models {
    pub latency: Latency,
    pub faults: Faults,
    /// Seeds every random draw.
    pub seed: u64,
}

/// Asks Linux to wake the calling thread within 1 ns of the time it asked for, rather than
/// within its timer slack (50 us by default). A fabric that holds answers in real time waits
/// for microsecond-scale deadlines; with the default slack every wait could oversleep by more
/// than a switch SMA's whole answer time, and the latency model would not be the one applied.
/// Best effort: where the kernel refuses, the waits are only coarser.
pub fn precise_timers() {
    let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
}

/// The seeded generator behind the fault models.
#[derive(Debug, Clone)]
pub(crate) struct Dice(Pcg64);

impl Dice {
    pub(crate) fn new(seed: u64) -> Dice {
        Dice(Pcg64::seed_from_u64(seed))
    }

    /// True with probability `p`; draws nothing when `p` is 0, so a fabric without faults does
    /// not consume the sequence.
    pub(crate) fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.0.random_bool(p.min(1.0))
    }

    /// Uniform in 0..=max.
    pub(crate) fn up_to(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else {
            self.0.random_range(0..=max)
        }
    }

    /// Damages a MAD as [`ibqos_mad::damage`] does, with draws from this generator.
    pub(crate) fn damage(&mut self, mad: &mut Vec<u8>) {
        ibqos_mad::damage(mad, |n| self.0.random_range(0..n));
    }
}
