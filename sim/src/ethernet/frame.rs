//! RoCEv2 frames: their bytes besides the payload, and their time on an Ethernet link.

use crate::ethernet::pfc::FRAME_OVERHEAD_BYTES;
use crate::infiniband::link::{BTH_BYTES, ICRC_BYTES};

/// A RoCEv2 frame's bytes besides its payload: Ethernet header 14, IPv4 20, UDP 8, BTH 12, ICRC 4
/// and the Ethernet FCS 4 (no VLAN tag: the priority rides the DSCP or is the port's).
pub const ETHERNET_HEADER_BYTES: u32 = 14;
pub const IPV4_HEADER_BYTES: u32 = 20;
pub const UDP_HEADER_BYTES: u32 = 8;
pub const FCS_BYTES: u32 = 4;
pub const ROCE_HEADER_BYTES: u32 = ETHERNET_HEADER_BYTES
    + IPV4_HEADER_BYTES
    + UDP_HEADER_BYTES
    + BTH_BYTES
    + ICRC_BYTES
    + FCS_BYTES;

/// A RoCEv2 CNP's payload: its BTH is followed by 16 reserved bytes (IBTA RoCEv2 annex A17.9.3),
/// so a CNP is a frame of `frame_bytes(CNP_PAYLOAD_BYTES)` = 78 bytes.
pub const CNP_PAYLOAD_BYTES: u32 = 16;

/// The bytes of a RoCEv2 frame with `payload` bytes: what an Ethernet run counts in buffers and
/// schedulers (its "units"; an InfiniBand run counts 64-byte blocks, [`crate::wire_blocks`]).
pub const fn frame_bytes(payload: u32) -> u32 {
    payload + ROCE_HEADER_BYTES
}

/// The time a frame of `bytes` takes on an Ethernet link of `link_bps`, with its preamble and
/// inter-frame gap ([`FRAME_OVERHEAD_BYTES`]), rounded up to a picosecond.
pub fn ethernet_wire_ps(bytes: u32, link_bps: u64) -> u64 {
    let bits = u128::from(bytes + FRAME_OVERHEAD_BYTES) * 8;
    let ps = (bits * 1_000_000_000_000).div_ceil(u128::from(link_bps.max(1)));
    u64::try_from(ps).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roce_frames_and_their_wire_time() {
        assert_eq!(ROCE_HEADER_BYTES, 62);
        assert_eq!(frame_bytes(4096), 4158);
        // (4158 + 20) x 8 = 33,424 bits at 100 Gb/s: 334.24 ns; at 40 Gb/s 835.6 ns.
        assert_eq!(ethernet_wire_ps(4158, 100_000_000_000), 334_240);
        assert_eq!(ethernet_wire_ps(4158, 40_000_000_000), 835_600);
        // A pause frame: (64 + 20) x 8 = 672 bits at 100 Gb/s, 6.72 ns.
        assert_eq!(ethernet_wire_ps(64, 100_000_000_000), 6_720);
    }
}
