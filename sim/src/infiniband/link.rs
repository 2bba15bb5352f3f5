//! Links: speed, width, propagation, buffers and credit latency, and the wire size of packets.
//!
//! Time is integer picoseconds throughout the simulator: fine enough that a 64-byte block at
//! 4x NDR (1.28 ns) is exact, coarse enough that a `u64` holds 213 days.

use serde::{Deserialize, Serialize};

use crate::infiniband::arbiter::BLOCK_BYTES;

/// Picoseconds per nanosecond and per microsecond.
pub const PS_PER_NS: u64 = 1_000;
pub const PS_PER_US: u64 = 1_000_000;

/// Local Route Header, Base Transport Header, Invariant CRC and Variant CRC: the bytes every data
/// packet carries besides its payload (IBA 1.2.1 chapter 7 for LRH and CRCs, chapter 9 for BTH).
pub const LRH_BYTES: u32 = 8;
pub const BTH_BYTES: u32 = 12;
pub const ICRC_BYTES: u32 = 4;
pub const VCRC_BYTES: u32 = 2;
pub const HEADER_BYTES: u32 = LRH_BYTES + BTH_BYTES + ICRC_BYTES + VCRC_BYTES;

/// The largest payload (the 4096-byte MTU).
pub const MAX_PAYLOAD: u32 = 4096;

/// The 64-byte blocks (credits) a packet with `payload` bytes occupies on the wire and in a
/// receive buffer: payload plus headers, rounded up. 4096 B is 65 blocks, not 64.
pub const fn wire_blocks(payload: u32) -> u32 {
    (payload + HEADER_BYTES).div_ceil(BLOCK_BYTES)
}

/// The signalling generations, SDR to NDR.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Speed {
    Sdr,
    Ddr,
    Qdr,
    Fdr,
    Edr,
    Hdr,
    Ndr,
}

impl Speed {
    /// Data rate of one lane after line coding, in Gb/s as a fraction: 8b/10b for SDR-QDR
    /// (2.5/5/10 GBd -> 2/4/8), 64b/66b for FDR (14.0625 GBd -> 150/11) and the nominal
    /// 25/50/100 for EDR, HDR, NDR.
    const fn lane_gbps(self) -> (u64, u64) {
        match self {
            Speed::Sdr => (2, 1),
            Speed::Ddr => (4, 1),
            Speed::Qdr => (8, 1),
            Speed::Fdr => (150, 11),
            Speed::Edr => (25, 1),
            Speed::Hdr => (50, 1),
            Speed::Ndr => (100, 1),
        }
    }
}

/// Lanes per link: 1, 2, 4, 8 or 12.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Width(u8);

impl Width {
    pub const X4: Width = Width(4);

    pub const fn lanes(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Width {
    type Error = String;
    fn try_from(lanes: u8) -> Result<Width, String> {
        match lanes {
            1 | 2 | 4 | 8 | 12 => Ok(Width(lanes)),
            _ => Err(format!(
                "link width {lanes} does not exist: a link has 1, 2, 4, 8 or 12 lanes"
            )),
        }
    }
}

impl From<Width> for u8 {
    fn from(width: Width) -> u8 {
        width.0
    }
}

/// Everything the simulator needs to know about one link (both directions alike).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinkParams {
    pub speed: Speed,
    pub width: Width,
    /// One-way propagation delay.
    pub propagation_ps: u64,
    /// Receive buffer per data VL, per port, in 64-byte blocks (credits).
    pub vl_buffer_blocks: u32,
    /// From a receive buffer freeing blocks to the FCP that returns them leaving the port; the
    /// FCP then crosses the cable ([`LinkParams::propagation_ps`]).
    pub credit_latency_ps: u64,
}

impl LinkParams {
    /// Time on the wire for `blocks` 64-byte blocks, rounded up to a picosecond.
    pub fn serialization_ps(&self, blocks: u32) -> u64 {
        let (num, den) = self.speed.lane_gbps();
        let bits = u64::from(blocks) * u64::from(BLOCK_BYTES) * 8;
        // bits / (num/den Gb/s x lanes) in ns, times 1000 for ps.
        (bits * den * PS_PER_NS).div_ceil(num * u64::from(self.width.lanes()))
    }

    /// The data rate in Gb/s.
    pub fn gbps(&self) -> f64 {
        let (num, den) = self.speed.lane_gbps();
        (num * u64::from(self.width.lanes())) as f64 / den as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_sizes_round_up_to_blocks() {
        assert_eq!(wire_blocks(4096), 65);
        assert_eq!(wire_blocks(2048), 33);
        assert_eq!(wire_blocks(1024), 17);
        assert_eq!(wire_blocks(256), 5);
        assert_eq!(wire_blocks(1), 1);
        assert_eq!(wire_blocks(38), 1);
        assert_eq!(wire_blocks(39), 2);
    }

    #[test]
    fn serialization_times() {
        let link = |speed, lanes| LinkParams {
            speed,
            width: Width::try_from(lanes).unwrap(),
            propagation_ps: 0,
            vl_buffer_blocks: 1024,
            credit_latency_ps: 0,
        };
        // 4x QDR = 32 Gb/s: 64 B = 512 bits = 16 ns.
        assert_eq!(link(Speed::Qdr, 4).serialization_ps(1), 16_000);
        // 4x NDR = 400 Gb/s: 1.28 ns.
        assert_eq!(link(Speed::Ndr, 4).serialization_ps(1), 1_280);
        // 1x SDR = 2 Gb/s: 65 blocks = 33,280 bits = 16.64 us.
        assert_eq!(link(Speed::Sdr, 1).serialization_ps(65), 16_640_000);
        assert!((link(Speed::Fdr, 4).gbps() - 54.545).abs() < 0.001);
        assert!(Width::try_from(3).is_err());
    }
}
