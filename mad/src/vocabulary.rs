//! The identifiers and the one choice of the subnet that every layer above the wire names: a
//! node's or port's [`Guid`], a port's [`Gid`] and [`Lid`], a [`PortNum`], and the [`Priority`]
//! of a VL arbitration table.
//!
//! Each identifier is a newtype over its wire integer, converted both ways with `From`, so a
//! GUID cannot be passed where a LID is meant and every layer prints them alike.

use core::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use crate::bits::FieldValue;

/// A 64-bit EUI-64 node, port or system image GUID (IBA 4.1.1). Displays as `0x` and 16 hex
/// digits, as OpenSM and infiniband-diags print GUIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub u64);

/// A 128-bit global identifier (IBA 4.1.1): a 64-bit subnet prefix, then a 64-bit interface ID
/// (a port's GUID in its default GID). Multicast GIDs start with 0xFF.
///
/// Displays as an IPv6 address exactly as `inet_ntop` writes one, which is how saquery and
/// OpenSM print GIDs: `fe80::2:c903:0:1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Gid(pub u128);

impl Gid {
    /// The link-local subnet prefix every port has before an SM sets another (IBA 4.1.1), and
    /// OpenSM's default `subnet_prefix`.
    pub const DEFAULT_SUBNET_PREFIX: u64 = 0xfe80_0000_0000_0000;

    /// The GID with this subnet prefix and interface ID.
    pub const fn new(subnet_prefix: u64, interface_id: u64) -> Self {
        Self((subnet_prefix as u128) << 64 | interface_id as u128)
    }

    /// The GID from its 16 wire bytes (network order).
    pub const fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(u128::from_be_bytes(bytes))
    }

    /// The 16 wire bytes (network order).
    pub const fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// The upper 64 bits: the subnet prefix, or a multicast GID's flags, scope and signature.
    pub const fn subnet_prefix(self) -> u64 {
        (self.0 >> 64) as u64
    }

    /// The lower 64 bits: the interface ID.
    pub const fn interface_id(self) -> u64 {
        self.0 as u64
    }

    /// The interface ID read as the port GUID it is in a unicast GID.
    pub const fn guid(self) -> Guid {
        Guid(self.interface_id())
    }

    /// Whether this is a multicast GID: first byte 0xFF (IBA 4.1.1).
    pub const fn is_multicast(self) -> bool {
        self.0 >> 120 == 0xff
    }

    /// Whether this unicast GID's prefix is link-local, FE80::/10, as OpenSM tests it
    /// (`ib_gid_is_link_local`, include/iba/ib_types.h:2408-2412).
    pub const fn is_link_local(self) -> bool {
        self.subnet_prefix() & 0xffc0_0000_0000_0000 == Self::DEFAULT_SUBNET_PREFIX
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let address = Ipv6Addr::from(self.0);
        // glibc's inet_ntop also writes an IPv4-compatible address (96 zero bits, then anything
        // but 0.0.x.y) with a dotted quad; Rust's Ipv6Addr only does so for IPv4-mapped ones.
        if self.0 >> 32 == 0 && self.0 >> 16 != 0 {
            write!(f, "::{}", Ipv4Addr::from(self.0 as u32))
        } else {
            write!(f, "{address}")
        }
    }
}

/// A local identifier (IBA 4.1.3): 0 is unassigned, 0xFFFF the permissive LID. Displays in
/// decimal, as smpquery prints LIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lid(pub u16);

/// A port number on a node: 1.. on a CA or router, 0 for a switch's management port. Displays in
/// decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortNum(pub u8);

impl Guid {
    /// The key OpenSM's GUID tables (nodes, ports, switches) are sorted by: they are `cl_qmap`s
    /// keyed by the GUID as it is on the wire (big-endian) and compared as a host (x86,
    /// little-endian) integer, so they hold GUIDs in the order of the byte-swapped value. Every
    /// walk of such a table (LID assignment, SA record lists, the multicast root's tie-break)
    /// follows that order.
    pub const fn opensm_order(self) -> u64 {
        self.0.swap_bytes()
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#018x}", self.0)
    }
}

/// One newtype's conversions both ways, its decimal `Display` (when asked for) and its
/// `FieldValue`, so that a `layout!` row can carry it.
macro_rules! identifier {
    ($name:ident($repr:ty) $(, $display:ident)?) => {
        impl From<$repr> for $name {
            fn from(raw: $repr) -> Self {
                Self(raw)
            }
        }

        impl From<$name> for $repr {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl FieldValue for $name {
            const BITS: usize = <$repr>::BITS as usize;
            fn from_bits(bits: u128) -> Self {
                Self(bits as $repr)
            }
            fn to_bits(self) -> u128 {
                self.0.into()
            }
        }

        $(
            impl fmt::$display for $name {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    fmt::Display::fmt(&self.0, f)
                }
            }
        )?
    };
}

identifier!(Guid(u64));
identifier!(Gid(u128));
identifier!(Lid(u16), Display);
identifier!(PortNum(u8), Display);

/// Which of a port's two VL arbitration tables (IBA 7.6.9): the high-priority table is served
/// first, up to VLHighLimit, then the low-priority one. Displays as `high` or `low`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// The high-priority table (VLArbitrationTable blocks 3 and 4).
    High,
    /// The low-priority table (blocks 1 and 2).
    Low,
}

impl Priority {
    /// The table's name as the IBA spells it in PortInfo (VLArbitration`High`Cap).
    pub const fn name(self) -> &'static str {
        match self {
            Priority::High => "High",
            Priority::Low => "Low",
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Priority::High => "high",
            Priority::Low => "low",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_display_as_the_tools_print_them() {
        assert_eq!(
            Guid(0x0002_c900_0000_1000).to_string(),
            "0x0002c90000001000"
        );
        assert_eq!(Guid(1).to_string(), "0x0000000000000001");
        assert_eq!(Lid(49151).to_string(), "49151");
        assert_eq!(PortNum(3).to_string(), "3");
        assert_eq!(Priority::High.to_string(), "high");
        assert_eq!(Priority::Low.name(), "Low");
    }

    /// Expected strings are glibc's `inet_ntop(AF_INET6, ...)` for the same 16 bytes.
    #[test]
    fn gid_displays_as_inet_ntop() {
        let cases = [
            (
                0xfe80_0000_0000_0000_0002_c903_0000_0001,
                "fe80::2:c903:0:1",
            ),
            (
                0xff12_401b_ffff_0000_0000_0000_ffff_ffff,
                "ff12:401b:ffff::ffff:ffff",
            ),
            (0xfe80_0000_0000_0000_0000_0000_0000_0000, "fe80::"),
            (0, "::"),
            (1, "::1"),
            (0x0001_0002, "::0.1.0.2"),
            (0xc0a8_0001, "::192.168.0.1"),
            (0xffff_c0a8_0001, "::ffff:192.168.0.1"),
            (0x0001_0000_0001_0000_0001_0000_0001_0000, "1:0:1:0:1:0:1:0"),
        ];
        for (raw, text) in cases {
            assert_eq!(Gid(raw).to_string(), text, "{raw:#x}");
        }
    }

    #[test]
    fn gid_halves_and_predicates() {
        let gid = Gid::new(Gid::DEFAULT_SUBNET_PREFIX, 0x0002_c903_0000_0001);
        assert_eq!(gid.0, 0xfe80_0000_0000_0000_0002_c903_0000_0001);
        assert_eq!(gid.subnet_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!(gid.interface_id(), 0x0002_c903_0000_0001);
        assert_eq!(gid.guid(), Guid(0x0002_c903_0000_0001));
        assert_eq!(Gid::from_bytes(gid.to_bytes()), gid);
        assert_eq!(gid.to_bytes()[..2], [0xfe, 0x80]);
        assert!(gid.is_link_local() && !gid.is_multicast());
        // FE80::/10 covers FEBF but not FEC0 (site-local) or a configured prefix.
        assert!(Gid::new(0xfebf_0000_0000_0001, 1).is_link_local());
        assert!(!Gid::new(0xfec0_0000_0000_0000, 1).is_link_local());
        assert!(!Gid::new(0x0011_2233_4455_6677, 1).is_link_local());
        let broadcast = Gid(0xff12_401b_ffff_0000_0000_0000_ffff_ffff);
        assert!(broadcast.is_multicast() && !broadcast.is_link_local());
        assert_eq!(Gid::from_bits(gid.to_bits()), gid);
    }

    /// The last wire byte decides first: GUID 0x100 comes before GUID 0x1.
    #[test]
    fn opensm_orders_guids_by_their_byte_swapped_value() {
        assert!(Guid(0x100).opensm_order() < Guid(0x1).opensm_order());
        assert_eq!(
            Guid(0x0002_c900_0000_1000).opensm_order(),
            0x0010_0000_00c9_0200
        );
    }

    #[test]
    fn identifiers_convert_both_ways_and_fit_a_layout_row() {
        assert_eq!(u64::from(Guid::from(7u64)), 7);
        assert_eq!(u16::from(Lid::from(9u16)), 9);
        assert_eq!(u8::from(PortNum::from(2u8)), 2);
        assert_eq!(Lid::from_bits(0x1_ffff), Lid(0xffff));
        assert_eq!(PortNum(5).to_bits(), 5);
    }
}
