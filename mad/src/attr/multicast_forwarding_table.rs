//! MulticastForwardingTable (attribute 0x001B, IBA 14.2.5.12): one block of 32 MLIDs, for one
//! position of 16 ports (see [`MftModifier`](crate::MftModifier)).

use crate::Result;

layout! {
    /// A view of one MulticastForwardingTable block (64 bytes).
    pub struct MulticastForwardingTable[64];
    {
        /// The port mask of MLID `0xC000 + 32 * block + index`: bit `k` (LSB 0) is port
        /// `16 * position + k`.
        port_mask / set_port_mask: u16[32] = 0, 16, 16;
    }
}

/// One MulticastForwardingTable block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct MulticastForwardingTableRepr {
    /// The 32 port masks, one per MLID of the block, in MLID order.
    pub port_masks: [u16; 32],
}

impl MulticastForwardingTableRepr {
    /// Reads the block, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &MulticastForwardingTable<T>) -> Result<Self> {
        view.check_len()?;
        Ok(Self {
            port_masks: core::array::from_fn(|i| view.port_mask(i)),
        })
    }

    /// Writes all 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut MulticastForwardingTable<T>) {
        for (i, &mask) in self.port_masks.iter().enumerate() {
            view.set_port_mask(i, mask);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Block 0, position 0 of a switch: MLID 0xC000 to the switch itself and ports 1 and 3
    /// (0x000B), 0xC001 to port 15 alone (0x8000), 0xC01F to ports 4-7 (0x00F0), the rest
    /// unused.
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0x00, 0x0b, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0,
    ];

    fn repr() -> MulticastForwardingTableRepr {
        let mut port_masks = [0; 32];
        port_masks[0] = 0x000b;
        port_masks[1] = 0x8000;
        port_masks[31] = 0x00f0;
        MulticastForwardingTableRepr { port_masks }
    }

    #[test]
    fn deconstruct() {
        let v = MulticastForwardingTable::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.port_mask(0), 0x000b);
        assert_eq!(v.port_mask(1), 0x8000);
        assert_eq!(v.port_mask(2), 0);
        assert_eq!(v.port_mask(31), 0x00f0);
        assert_eq!(MulticastForwardingTableRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut MulticastForwardingTable::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            MulticastForwardingTable::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    #[test]
    #[should_panic(expected = "index 32 out of range")]
    fn index_past_the_block_panics() {
        MulticastForwardingTable::new_checked(&BYTES[..])
            .unwrap()
            .port_mask(32);
    }

    proptest! {
        #[test]
        fn round_trip(port_masks: [u16; 32]) {
            let repr = MulticastForwardingTableRepr { port_masks };
            prop_assert_round_trip!(MulticastForwardingTable, MulticastForwardingTableRepr, repr);
        }
    }
}
