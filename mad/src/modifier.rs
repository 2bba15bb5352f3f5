//! Typed attribute modifiers.
//!
//! Each type converts to the raw 32-bit AttributeModifier with `u32::from`, and back with
//! `TryFrom<u32>` (or `From<u32>` when every value is meaningful). Decoding rejects set bits that
//! the IBA reserves, which is what an SMA answers with status 0x001C, but drops bits the IBA says
//! to ignore (an SL2VL port number next to its "all ports" bit), so decode(encode(x)) == x always
//! and encode(decode(raw)) == raw for every raw value without ignored bits.

use crate::{Error, Priority, Result};

/// Fails with `BadValue` if `raw` has any bit of `reserved` set.
fn check_reserved(raw: u32, reserved: u32) -> Result<()> {
    if raw & reserved == 0 {
        Ok(())
    } else {
        Err(Error::BadValue {
            field: "attribute_modifier",
            value: raw.into(),
        })
    }
}

/// The PortInfo modifier: which port of a switch (a CA or router answers for the receiving port
/// whatever the number).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PortInfoModifier {
    /// Port number, bits 7:0 (0 = a switch's management port).
    pub port: u8,
    /// Bit 31: the requester handles the extended-speed fields (LinkSpeedExt*).
    pub extended_speeds: bool,
}

impl PortInfoModifier {
    const EXTENDED_SPEEDS: u32 = 1 << 31;
}

impl From<PortInfoModifier> for u32 {
    fn from(m: PortInfoModifier) -> Self {
        u32::from(m.port)
            | if m.extended_speeds {
                PortInfoModifier::EXTENDED_SPEEDS
            } else {
                0
            }
    }
}

impl TryFrom<u32> for PortInfoModifier {
    type Error = Error;
    fn try_from(raw: u32) -> Result<Self> {
        check_reserved(raw, !(Self::EXTENDED_SPEEDS | 0xff))?;
        Ok(Self {
            port: raw as u8,
            extended_speeds: raw & Self::EXTENDED_SPEEDS != 0,
        })
    }
}

/// The P_KeyTable modifier: a block of 32 entries of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct PKeyTableModifier {
    /// Port number, bits 31:16 (switches only; a CA uses the receiving port).
    pub port: u16,
    /// Block number, bits 15:0.
    pub block: u16,
}

impl From<PKeyTableModifier> for u32 {
    fn from(m: PKeyTableModifier) -> Self {
        u32::from(m.port) << 16 | u32::from(m.block)
    }
}

impl From<u32> for PKeyTableModifier {
    fn from(raw: u32) -> Self {
        Self {
            port: (raw >> 16) as u16,
            block: raw as u16,
        }
    }
}

/// The LinearForwardingTable modifier: the block of 64 LIDs starting at `64 * block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct LftModifier {
    /// Block number. LIDs are 16 bits, so blocks stop at 1023 and bits 31:16 are never used.
    pub block: u16,
}

impl LftModifier {
    /// LIDs per block.
    pub const LIDS_PER_BLOCK: u16 = 64;

    /// The block holding `lid`.
    pub fn containing(lid: u16) -> Self {
        Self {
            block: lid / Self::LIDS_PER_BLOCK,
        }
    }
}

impl From<LftModifier> for u32 {
    fn from(m: LftModifier) -> Self {
        m.block.into()
    }
}

impl TryFrom<u32> for LftModifier {
    type Error = Error;
    fn try_from(raw: u32) -> Result<Self> {
        check_reserved(raw, 0xffff_0000)?;
        Ok(Self { block: raw as u16 })
    }
}

/// The MulticastForwardingTable modifier: the block of 32 MLIDs starting at
/// `0xC000 + 32 * block`, and the position of the 16 ports starting at `16 * position` whose
/// bits the block's masks carry (IBA 14.2.5.12). Bits 27:9 are reserved.
///
/// The fields are private so that a value always fits its bits: [`MftModifier::new`] checks
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MftModifier {
    block: u16,
    position: u8,
}

impl MftModifier {
    /// The first multicast LID, entry 0 of block 0.
    pub const FIRST_MLID: u16 = 0xc000;
    /// MLIDs per block.
    pub const MLIDS_PER_BLOCK: u16 = 32;
    /// Ports per position (the bits of one mask).
    pub const PORTS_PER_POSITION: u8 = 16;
    /// The highest block, bits 8:0: block 511 ends at MLID 0xFFFF.
    pub const MAX_BLOCK: u16 = 0x1ff;
    /// The highest position, bits 31:28: position 15 ends at port 255.
    pub const MAX_POSITION: u8 = 0xf;
    const POSITION_SHIFT: u32 = 28;

    /// The modifier of `block` and `position`, if both fit their bits.
    pub fn new(block: u16, position: u8) -> Result<Self> {
        if block > Self::MAX_BLOCK {
            return Err(Error::BadValue {
                field: "mft_block",
                value: block.into(),
            });
        }
        if position > Self::MAX_POSITION {
            return Err(Error::BadValue {
                field: "mft_position",
                value: position.into(),
            });
        }
        Ok(Self { block, position })
    }

    /// The block and position holding the bit of `port` for multicast LID `mlid`, `None` for a
    /// unicast LID.
    pub fn containing(mlid: u16, port: u8) -> Option<Self> {
        let offset = mlid.checked_sub(Self::FIRST_MLID)?;
        Some(Self {
            block: offset / Self::MLIDS_PER_BLOCK,
            position: port / Self::PORTS_PER_POSITION,
        })
    }

    /// Block number, 0..=[`Self::MAX_BLOCK`].
    pub const fn block(self) -> u16 {
        self.block
    }

    /// Position, 0..=[`Self::MAX_POSITION`].
    pub const fn position(self) -> u8 {
        self.position
    }

    /// The MLID of entry 0 of the block.
    pub const fn first_mlid(self) -> u16 {
        Self::FIRST_MLID + self.block * Self::MLIDS_PER_BLOCK
    }
}

impl From<MftModifier> for u32 {
    fn from(m: MftModifier) -> Self {
        u32::from(m.position) << MftModifier::POSITION_SHIFT | u32::from(m.block)
    }
}

impl TryFrom<u32> for MftModifier {
    type Error = Error;
    fn try_from(raw: u32) -> Result<Self> {
        check_reserved(raw, 0x0fff_fe00)?;
        Ok(Self {
            block: (raw & u32::from(Self::MAX_BLOCK)) as u16,
            position: (raw >> Self::POSITION_SHIFT) as u8,
        })
    }
}

/// The GUIDInfo modifier: the block of 8 GUIDs starting at GUID `8 * block`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GuidInfoModifier {
    /// Block number. GUIDCap is 8 bits, so there are at most 32 blocks and bits 31:8 are never
    /// used.
    pub block: u8,
}

impl From<GuidInfoModifier> for u32 {
    fn from(m: GuidInfoModifier) -> Self {
        m.block.into()
    }
}

impl TryFrom<u32> for GuidInfoModifier {
    type Error = Error;
    fn try_from(raw: u32) -> Result<Self> {
        check_reserved(raw, 0xffff_ff00)?;
        Ok(Self { block: raw as u8 })
    }
}

/// The SLtoVLMappingTable modifier: which table of a switch (input port x output port); the four
/// shapes are the four settings of the "all input ports" (bit 17) and "all output ports" (bit 16)
/// bits. A CA or router ignores the modifier and answers for the receiving port.
///
/// The "all" forms are only for switches whose SwitchInfo advertises optimized SL2VL programming
/// (see `SwitchInfoRepr::supports_optimized_sl_to_vl`); ibsim ignores the bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlToVlModifier {
    /// The table of one (input, output) pair: `input << 8 | output`.
    Pair {
        /// Input port, bits 15:8.
        input: u8,
        /// Output port, bits 7:0.
        output: u8,
    },
    /// One input port, every output port: bit 16 set, bits 7:0 ignored.
    AllOutputs {
        /// Input port, bits 15:8.
        input: u8,
    },
    /// Every input port, one output port: bit 17 set, bits 15:8 ignored.
    AllInputs {
        /// Output port, bits 7:0.
        output: u8,
    },
    /// Every table of the switch: bits 16 and 17 set (0x30000).
    All,
}

impl SlToVlModifier {
    const ALL_OUTPUTS: u32 = 1 << 16;
    const ALL_INPUTS: u32 = 1 << 17;
    const INPUT_SHIFT: u32 = 8;

    /// The (input, output) port pairs whose tables this modifier writes, output by output:
    /// `inputs` and `outputs` are the ports the "all input ports" and "all output ports" bits
    /// stand for on the switch at hand (which ports have tables is the switch's business, so the
    /// caller says), and a port the modifier names is taken as named.
    pub fn pairs<I, O>(self, inputs: I, outputs: O) -> impl Iterator<Item = (u8, u8)>
    where
        I: IntoIterator<Item = u8>,
        O: IntoIterator<Item = u8>,
    {
        let (input, output) = match self {
            Self::Pair { input, output } => (Some(input), Some(output)),
            Self::AllOutputs { input } => (Some(input), None),
            Self::AllInputs { output } => (None, Some(output)),
            Self::All => (None, None),
        };
        let inputs: Vec<u8> = input.map_or_else(|| inputs.into_iter().collect(), |i| vec![i]);
        let outputs: Vec<u8> = output.map_or_else(|| outputs.into_iter().collect(), |o| vec![o]);
        outputs
            .into_iter()
            .flat_map(move |o| inputs.clone().into_iter().map(move |i| (i, o)))
    }
}

impl From<SlToVlModifier> for u32 {
    fn from(m: SlToVlModifier) -> Self {
        use SlToVlModifier as M;
        match m {
            M::Pair { input, output } => u32::from(input) << M::INPUT_SHIFT | u32::from(output),
            M::AllOutputs { input } => M::ALL_OUTPUTS | u32::from(input) << M::INPUT_SHIFT,
            M::AllInputs { output } => M::ALL_INPUTS | u32::from(output),
            M::All => M::ALL_INPUTS | M::ALL_OUTPUTS,
        }
    }
}

impl TryFrom<u32> for SlToVlModifier {
    type Error = Error;
    fn try_from(raw: u32) -> Result<Self> {
        check_reserved(raw, !(Self::ALL_INPUTS | Self::ALL_OUTPUTS | 0xffff))?;
        let input = (raw >> Self::INPUT_SHIFT) as u8;
        let output = raw as u8;
        Ok(
            match (raw & Self::ALL_INPUTS != 0, raw & Self::ALL_OUTPUTS != 0) {
                (false, false) => Self::Pair { input, output },
                (false, true) => Self::AllOutputs { input },
                (true, false) => Self::AllInputs { output },
                (true, true) => Self::All,
            },
        )
    }
}

/// Which quarter of a port's VL arbitration tables a VLArbitrationTable MAD carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VlArbBlock {
    /// Low-priority table, entries 0-31 (block 1).
    Low0To31,
    /// Low-priority table, entries 32-63 (block 2; only if VLArbitrationLowCap > 32).
    Low32To63,
    /// High-priority table, entries 0-31 (block 3).
    High0To31,
    /// High-priority table, entries 32-63 (block 4; only if VLArbitrationHighCap > 32).
    High32To63,
}

impl VlArbBlock {
    /// Every block, in block-number order.
    pub const ALL: [VlArbBlock; 4] = [
        VlArbBlock::Low0To31,
        VlArbBlock::Low32To63,
        VlArbBlock::High0To31,
        VlArbBlock::High32To63,
    ];

    /// Entries in one block (one MAD).
    pub const ENTRIES: usize = 32;

    /// The block number the attribute modifier carries in bits 31:16 (1..=4).
    pub const fn number(self) -> u8 {
        match self {
            VlArbBlock::Low0To31 => 1,
            VlArbBlock::Low32To63 => 2,
            VlArbBlock::High0To31 => 3,
            VlArbBlock::High32To63 => 4,
        }
    }

    /// The table the block belongs to.
    pub const fn priority(self) -> Priority {
        match self {
            VlArbBlock::Low0To31 | VlArbBlock::Low32To63 => Priority::Low,
            VlArbBlock::High0To31 | VlArbBlock::High32To63 => Priority::High,
        }
    }

    /// The two blocks of a table, entries 0-31 first.
    pub const fn of(priority: Priority) -> [VlArbBlock; 2] {
        match priority {
            Priority::Low => [VlArbBlock::Low0To31, VlArbBlock::Low32To63],
            Priority::High => [VlArbBlock::High0To31, VlArbBlock::High32To63],
        }
    }

    /// How many of the block's 32 entries a table of `cap` entries (its PortInfo
    /// VLArbitration*Cap) has: 0 for the second block of a table of 32 or fewer.
    pub fn entries_within(self, cap: u8) -> usize {
        let first = match self {
            VlArbBlock::Low0To31 | VlArbBlock::High0To31 => 0,
            VlArbBlock::Low32To63 | VlArbBlock::High32To63 => Self::ENTRIES,
        };
        usize::from(cap).saturating_sub(first).min(Self::ENTRIES)
    }
}

/// The VLArbitrationTable modifier: a block of an output port's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlArbModifier {
    /// The block, bits 31:16 (1..=4).
    pub block: VlArbBlock,
    /// Output port, bits 7:0 (switches; a CA answers for the receiving port).
    pub port: u8,
}

impl VlArbModifier {
    const BLOCK_SHIFT: u32 = 16;
}

impl From<VlArbModifier> for u32 {
    fn from(m: VlArbModifier) -> Self {
        u32::from(m.block.number()) << VlArbModifier::BLOCK_SHIFT | u32::from(m.port)
    }
}

impl TryFrom<u32> for VlArbModifier {
    type Error = Error;
    fn try_from(raw: u32) -> Result<Self> {
        check_reserved(raw, 0xff00)?;
        let block = VlArbBlock::ALL
            .into_iter()
            .find(|b| u32::from(b.number()) == raw >> Self::BLOCK_SHIFT)
            .ok_or(Error::BadValue {
                field: "attribute_modifier",
                value: raw.into(),
            })?;
        Ok(Self {
            block,
            port: raw as u8,
        })
    }
}

open_enum! {
    /// The SMInfo modifier: 0 in a SubnGet, the requested transition in a SubnSet.
    pub enum SmInfoModifier(u32) {
        /// SubnGet(SMInfo).
        Get = 0,
        /// HANDOVER: the master hands mastership to the receiver.
        Handover = 1,
        /// ACKNOWLEDGE: the new master acknowledges a handover.
        Acknowledge = 2,
        /// DISABLE: the receiver should stop acting as an SM.
        Disable = 3,
        /// STANDBY: the receiver should go to Standby.
        Standby = 4,
        /// DISCOVER: the receiver should go to Discovering.
        Discover = 5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bad(raw: u32) -> Error {
        Error::BadValue {
            field: "attribute_modifier",
            value: raw.into(),
        }
    }

    #[test]
    fn port_info() {
        let m = PortInfoModifier {
            port: 5,
            extended_speeds: true,
        };
        assert_eq!(u32::from(m), 0x8000_0005);
        assert_eq!(PortInfoModifier::try_from(0x8000_0005), Ok(m));
        assert_eq!(PortInfoModifier::try_from(0x0000_0100), Err(bad(0x100)));
    }

    #[test]
    fn p_key_table() {
        let m = PKeyTableModifier { port: 3, block: 1 };
        assert_eq!(u32::from(m), 0x0003_0001);
        assert_eq!(PKeyTableModifier::from(0x0003_0001), m);
    }

    #[test]
    fn lft() {
        assert_eq!(LftModifier::containing(0xbfff), LftModifier { block: 767 });
        assert_eq!(u32::from(LftModifier { block: 767 }), 767);
        assert_eq!(LftModifier::try_from(0x1_0000), Err(bad(0x1_0000)));
    }

    /// Block 511 position 15 is the last: MLID 0xFFE0, ports 240-255; bits 27:9 are reserved.
    #[test]
    fn mft() {
        let last = MftModifier::new(511, 15).unwrap();
        assert_eq!(u32::from(last), 0xf000_01ff);
        assert_eq!(MftModifier::try_from(0xf000_01ff), Ok(last));
        assert_eq!(last.first_mlid(), 0xffe0);
        assert_eq!(MftModifier::containing(0xffff, 255), Some(last));
        let m = MftModifier::new(2, 1).unwrap();
        assert_eq!((m.block(), m.position()), (2, 1));
        assert_eq!(u32::from(m), 0x1000_0002);
        assert_eq!(MftModifier::containing(0xc040, 16), Some(m));
        assert_eq!(MftModifier::containing(0xc05f, 31), Some(m));
        assert_eq!(MftModifier::containing(0xbfff, 0), None);
        assert_eq!(MftModifier::try_from(0x0000_0200), Err(bad(0x200)));
        assert_eq!(MftModifier::try_from(0x0800_0000), Err(bad(0x0800_0000)));
        assert_eq!(
            MftModifier::new(512, 0),
            Err(Error::BadValue {
                field: "mft_block",
                value: 512
            })
        );
        assert_eq!(
            MftModifier::new(0, 16),
            Err(Error::BadValue {
                field: "mft_position",
                value: 16
            })
        );
    }

    #[test]
    fn guid_info() {
        assert_eq!(u32::from(GuidInfoModifier { block: 31 }), 31);
        assert_eq!(
            GuidInfoModifier::try_from(31),
            Ok(GuidInfoModifier { block: 31 })
        );
        assert_eq!(GuidInfoModifier::try_from(256), Err(bad(256)));
    }

    /// The modifiers OpenSM sends: `in << 8 | out`, 0x30000, and `0x20000 | out`.
    #[test]
    fn sl_to_vl() {
        use SlToVlModifier as M;
        let cases = [
            (
                M::Pair {
                    input: 3,
                    output: 5,
                },
                0x0305,
            ),
            (
                M::Pair {
                    input: 0,
                    output: 0,
                },
                0,
            ),
            (M::AllOutputs { input: 7 }, 0x1_0700),
            (M::AllInputs { output: 9 }, 0x2_0009),
            (M::All, 0x3_0000),
        ];
        for (m, raw) in cases {
            assert_eq!(u32::from(m), raw);
            assert_eq!(M::try_from(raw), Ok(m));
        }
        // Ignored port bits are dropped, reserved bits rejected.
        assert_eq!(M::try_from(0x1_0705), Ok(M::AllOutputs { input: 7 }));
        assert_eq!(M::try_from(0x3_0705), Ok(M::All));
        assert_eq!(M::try_from(0x4_0000), Err(bad(0x4_0000)));
    }

    #[test]
    fn sl_to_vl_pairs() {
        use SlToVlModifier as M;
        let pairs = |m: M| m.pairs(0..=2, [1, 2]).collect::<Vec<_>>();
        let one = M::Pair {
            input: 3,
            output: 5,
        };
        assert_eq!(pairs(one), [(3, 5)]);
        assert_eq!(pairs(M::AllOutputs { input: 1 }), [(1, 1), (1, 2)]);
        assert_eq!(pairs(M::AllInputs { output: 7 }), [(0, 7), (1, 7), (2, 7)]);
        assert_eq!(
            pairs(M::All),
            [(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2)]
        );
    }

    #[test]
    fn vl_arb() {
        let cases = [
            (VlArbBlock::Low0To31, 0x1_0003),
            (VlArbBlock::Low32To63, 0x2_0003),
            (VlArbBlock::High0To31, 0x3_0003),
            (VlArbBlock::High32To63, 0x4_0003),
        ];
        for (block, raw) in cases {
            let m = VlArbModifier { block, port: 3 };
            assert_eq!(u32::from(m), raw);
            assert_eq!(VlArbModifier::try_from(raw), Ok(m));
        }
        assert_eq!(VlArbModifier::try_from(0x0_0003), Err(bad(3)));
        assert_eq!(VlArbModifier::try_from(0x5_0003), Err(bad(0x5_0003)));
        assert_eq!(VlArbModifier::try_from(0x1_0103), Err(bad(0x1_0103)));
    }

    #[test]
    fn vl_arb_blocks_of_a_table() {
        for priority in [Priority::High, Priority::Low] {
            for block in VlArbBlock::of(priority) {
                assert_eq!(block.priority(), priority);
            }
        }
        let [first, second] = VlArbBlock::of(Priority::High);
        assert_eq!((first.number(), second.number()), (3, 4));
        let within = |cap| VlArbBlock::of(Priority::Low).map(|b| b.entries_within(cap));
        assert_eq!(within(0), [0, 0]);
        assert_eq!(within(8), [8, 0]);
        assert_eq!(within(32), [32, 0]);
        assert_eq!(within(33), [32, 1]);
        assert_eq!(within(64), [32, 32]);
        assert_eq!(within(255), [32, 32]);
    }

    #[test]
    fn sm_info() {
        assert_eq!(SmInfoModifier::from(1), SmInfoModifier::Handover);
        assert_eq!(SmInfoModifier::from(5), SmInfoModifier::Discover);
        assert_eq!(u32::from(SmInfoModifier::Standby), 4);
        assert_eq!(SmInfoModifier::from(6), SmInfoModifier::Unknown(6));
    }

    fn any_sl_to_vl() -> impl Strategy<Value = SlToVlModifier> {
        prop_oneof![
            (any::<u8>(), any::<u8>())
                .prop_map(|(input, output)| SlToVlModifier::Pair { input, output }),
            any::<u8>().prop_map(|input| SlToVlModifier::AllOutputs { input }),
            any::<u8>().prop_map(|output| SlToVlModifier::AllInputs { output }),
            Just(SlToVlModifier::All),
        ]
    }

    fn any_vl_arb() -> impl Strategy<Value = VlArbModifier> {
        let block = proptest::sample::select(
            &[
                VlArbBlock::Low0To31,
                VlArbBlock::Low32To63,
                VlArbBlock::High0To31,
                VlArbBlock::High32To63,
            ][..],
        );
        (block, any::<u8>()).prop_map(|(block, port)| VlArbModifier { block, port })
    }

    proptest! {
        #[test]
        fn port_info_round_trip(port: u8, extended_speeds: bool) {
            let m = PortInfoModifier { port, extended_speeds };
            prop_assert_eq!(PortInfoModifier::try_from(u32::from(m)), Ok(m));
        }

        #[test]
        fn p_key_table_round_trip(port: u16, block: u16) {
            let m = PKeyTableModifier { port, block };
            prop_assert_eq!(PKeyTableModifier::from(u32::from(m)), m);
        }

        #[test]
        fn lft_round_trip(block: u16) {
            let m = LftModifier { block };
            prop_assert_eq!(LftModifier::try_from(u32::from(m)), Ok(m));
        }

        #[test]
        fn mft_round_trip(
            block in 0..=MftModifier::MAX_BLOCK,
            position in 0..=MftModifier::MAX_POSITION,
        ) {
            let m = MftModifier::new(block, position).unwrap();
            prop_assert_eq!(MftModifier::try_from(u32::from(m)), Ok(m));
        }

        /// Every port of every multicast LID has its bit in the block and position that
        /// `containing` names.
        #[test]
        fn mft_containing(mlid in MftModifier::FIRST_MLID.., port: u8) {
            let m = MftModifier::containing(mlid, port).unwrap();
            prop_assert!((m.first_mlid()..=m.first_mlid() + 31).contains(&mlid));
            prop_assert_eq!(port / MftModifier::PORTS_PER_POSITION, m.position());
        }

        #[test]
        fn guid_info_round_trip(block: u8) {
            let m = GuidInfoModifier { block };
            prop_assert_eq!(GuidInfoModifier::try_from(u32::from(m)), Ok(m));
        }

        #[test]
        fn sl_to_vl_round_trip(m in any_sl_to_vl()) {
            prop_assert_eq!(SlToVlModifier::try_from(u32::from(m)), Ok(m));
        }

        #[test]
        fn vl_arb_round_trip(m in any_vl_arb()) {
            prop_assert_eq!(VlArbModifier::try_from(u32::from(m)), Ok(m));
        }

        #[test]
        fn sm_info_round_trip(raw: u32) {
            prop_assert_eq!(u32::from(SmInfoModifier::from(raw)), raw);
        }

        /// Whatever a raw modifier decodes to re-encodes to a value that decodes the same.
        #[test]
        fn decoding_is_stable(raw: u32) {
            if let Ok(m) = PortInfoModifier::try_from(raw) { prop_assert_eq!(u32::from(m), raw); }
            prop_assert_eq!(u32::from(PKeyTableModifier::from(raw)), raw);
            if let Ok(m) = LftModifier::try_from(raw) { prop_assert_eq!(u32::from(m), raw); }
            if let Ok(m) = GuidInfoModifier::try_from(raw) { prop_assert_eq!(u32::from(m), raw); }
            if let Ok(m) = MftModifier::try_from(raw) { prop_assert_eq!(u32::from(m), raw); }
            if let Ok(m) = SlToVlModifier::try_from(raw) {
                prop_assert_eq!(SlToVlModifier::try_from(u32::from(m)), Ok(m));
            }
            if let Ok(m) = VlArbModifier::try_from(raw) { prop_assert_eq!(u32::from(m), raw); }
        }
    }
}
