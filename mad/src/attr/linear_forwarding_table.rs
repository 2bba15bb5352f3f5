//! LinearForwardingTable (attribute 0x0019, IBA 14.2.5.10): the egress ports of one block of 64
//! LIDs.

use crate::Result;

layout! {
    /// A view of one LinearForwardingTable block (64 bytes).
    pub struct LinearForwardingTable[64];
    {
        /// The egress port for LID `64 * block + i` at index `i`; 0xFF means no route.
        ports / ports_mut: bytes = 0, 512;
    }
}

/// One LinearForwardingTable block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LinearForwardingTableRepr {
    /// Egress port per LID of the block ([`Self::NO_ROUTE`] for none).
    pub ports: [u8; 64],
}

impl LinearForwardingTableRepr {
    /// The port value that means "drop": no route to this LID.
    pub const NO_ROUTE: u8 = 0xff;

    /// Reads the block, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &LinearForwardingTable<T>) -> Result<Self> {
        view.check_len()?;
        let mut ports = [0; 64];
        ports.copy_from_slice(view.ports());
        Ok(Self { ports })
    }

    /// Writes all 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut LinearForwardingTable<T>) {
        view.ports_mut().copy_from_slice(&self.ports);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Block 0 of a small switch: LID 0 unused, the switch itself (LID 1) on port 0, LIDs 2-9
    /// spread over ports 1-8, everything else unrouted.
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0xff, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06,
        0x07, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x24,
    ];

    fn repr() -> LinearForwardingTableRepr {
        let mut ports = [LinearForwardingTableRepr::NO_ROUTE; 64];
        ports[1..10].copy_from_slice(&[0, 1, 2, 3, 4, 5, 6, 7, 8]);
        ports[63] = 36;
        LinearForwardingTableRepr { ports }
    }

    #[test]
    fn deconstruct() {
        let v = LinearForwardingTable::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.ports()[0], 0xff);
        assert_eq!(v.ports()[1], 0);
        assert_eq!(v.ports()[9], 8);
        assert_eq!(v.ports()[63], 36);
        assert_eq!(LinearForwardingTableRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut LinearForwardingTable::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            LinearForwardingTable::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(ports in proptest::collection::vec(any::<u8>(), 64)) {
            let mut repr = LinearForwardingTableRepr { ports: [0; 64] };
            repr.ports.copy_from_slice(&ports);
            prop_assert_round_trip!(LinearForwardingTable, LinearForwardingTableRepr, repr);
        }
    }
}
