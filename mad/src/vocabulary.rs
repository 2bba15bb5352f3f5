//! The identifiers and the one choice of the subnet that every layer above the wire names: a
//! node's or port's [`Guid`], a port's [`Lid`], a [`PortNum`], and the [`Priority`] of a VL
//! arbitration table.
//!
//! Each identifier is a newtype over its wire integer, converted both ways with `From`, so a
//! GUID cannot be passed where a LID is meant and every layer prints them alike.

use core::fmt;

use crate::bits::FieldValue;

/// A 64-bit EUI-64 node, port or system image GUID (IBA 4.1.1). Displays as `0x` and 16 hex
/// digits, as OpenSM and infiniband-diags print GUIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Guid(pub u64);

/// A local identifier (IBA 4.1.3): 0 is unassigned, 0xFFFF the permissive LID. Displays in
/// decimal, as smpquery prints LIDs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Lid(pub u16);

/// A port number on a node: 1.. on a CA or router, 0 for a switch's management port. Displays in
/// decimal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PortNum(pub u8);

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
            fn from_bits(bits: u64) -> Self {
                Self(bits as $repr)
            }
            fn to_bits(self) -> u64 {
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

    #[test]
    fn identifiers_convert_both_ways_and_fit_a_layout_row() {
        assert_eq!(u64::from(Guid::from(7u64)), 7);
        assert_eq!(u16::from(Lid::from(9u16)), 9);
        assert_eq!(u8::from(PortNum::from(2u8)), 2);
        assert_eq!(Lid::from_bits(0x1_ffff), Lid(0xffff));
        assert_eq!(PortNum(5).to_bits(), 5);
    }
}
