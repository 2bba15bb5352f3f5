//! ClassPortInfo (attribute 0x0001 of every GS class, IBA 13.4.8.1): what a class agent
//! supports, how fast it answers, and where it redirects requests and sends traps.

use super::PerfCapabilityMask;

layout! {
    /// A view of ClassPortInfo (72 bytes; bits 256-263 are reserved). Each GID is split into
    /// its 64-bit subnet prefix and interface ID so that every row is a number.
    pub struct ClassPortInfo[72];
    /// A ClassPortInfo, every field. The CapabilityMask is read with the PerfMgt names; other
    /// classes give bits 8-15 other meanings.
    pub struct ClassPortInfoRepr;
    {
        /// BaseVersion of the MADs the agent takes (1).
        base_version / set_base_version: u8 = 0, 8;
        /// ClassVersion the agent implements.
        class_version / set_class_version: u8 = 8, 8;
        /// CapabilityMask.
        capability_mask / set_capability_mask: PerfCapabilityMask = 16, 16;
        /// CapabilityMask2.
        capability_mask2 / set_capability_mask2: u32 = 32, 27;
        /// RespTimeValue: the agent answers within 4.096 us * 2^value.
        resp_time_value / set_resp_time_value: u8 = 59, 5;
        /// RedirectGID, subnet prefix.
        redirect_gid_prefix / set_redirect_gid_prefix: u64 = 64, 64;
        /// RedirectGID, interface ID.
        redirect_gid_interface_id / set_redirect_gid_interface_id: u64 = 128, 64;
        /// RedirectTC.
        redirect_tc / set_redirect_tc: u8 = 192, 8;
        /// RedirectSL.
        redirect_sl / set_redirect_sl: u8 = 200, 4;
        /// RedirectFL.
        redirect_fl / set_redirect_fl: u32 = 204, 20;
        /// RedirectLID: 0 unless requests are redirected.
        redirect_lid / set_redirect_lid: u16 = 224, 16;
        /// RedirectP_Key.
        redirect_p_key / set_redirect_p_key: u16 = 240, 16;
        /// RedirectQP.
        redirect_qp / set_redirect_qp: u32 = 264, 24;
        /// RedirectQ_Key.
        redirect_q_key / set_redirect_q_key: u32 = 288, 32;
        /// TrapGID, subnet prefix.
        trap_gid_prefix / set_trap_gid_prefix: u64 = 320, 64;
        /// TrapGID, interface ID.
        trap_gid_interface_id / set_trap_gid_interface_id: u64 = 384, 64;
        /// TrapTC.
        trap_tc / set_trap_tc: u8 = 448, 8;
        /// TrapSL.
        trap_sl / set_trap_sl: u8 = 456, 4;
        /// TrapFL.
        trap_fl / set_trap_fl: u32 = 460, 20;
        /// TrapLID.
        trap_lid / set_trap_lid: u16 = 480, 16;
        /// TrapP_Key.
        trap_p_key / set_trap_p_key: u16 = 496, 16;
        /// TrapHL.
        trap_hl / set_trap_hl: u8 = 512, 8;
        /// TrapQP.
        trap_qp / set_trap_qp: u32 = 520, 24;
        /// TrapQ_Key.
        trap_q_key / set_trap_q_key: u32 = 544, 32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 72] = [
        0x01,                   // 0: BaseVersion
        0x02,                   // 1: ClassVersion
        0x13, 0x00,             // 2: CapabilityMask: AllPortSelect, ExtendedWidth, XmitWait
        0xaa, 0xaa, 0xaa, 0xb2, // 4: CapabilityMask2 0x5555555 (27 bits) | RespTimeValue 0x12
        0xfe, 0x80, 0, 0, 0, 0, 0, 0,                   // 8: RedirectGID prefix
        0x00, 0x02, 0xc9, 0x03, 0x00, 0x10, 0x00, 0x01, // 16: RedirectGID interface ID
        0x40,                   // 24: RedirectTC
        0x9a, 0xbc, 0xde,       // 25: RedirectSL 9 | RedirectFL 0xabcde
        0x00, 0x07,             // 28: RedirectLID
        0xff, 0xff,             // 30: RedirectP_Key
        0x00,                   // 32: reserved
        0x00, 0x00, 0x01,       // 33: RedirectQP
        0x80, 0x01, 0x00, 0x00, // 36: RedirectQ_Key
        0xfe, 0x80, 0, 0, 0, 0, 0, 1,                   // 40: TrapGID prefix
        0, 0, 0, 0, 0, 0, 0, 2,                         // 48: TrapGID interface ID
        0x20,                   // 56: TrapTC
        0x30, 0x00, 0x01,       // 57: TrapSL 3 | TrapFL 1
        0x00, 0x01,             // 60: TrapLID
        0x7f, 0xff,             // 62: TrapP_Key
        0x40,                   // 64: TrapHL
        0x00, 0x00, 0x01,       // 65: TrapQP
        0x80, 0x01, 0x00, 0x00, // 68: TrapQ_Key
    ];

    fn repr() -> ClassPortInfoRepr {
        ClassPortInfoRepr {
            base_version: 1,
            class_version: 2,
            capability_mask: PerfCapabilityMask(0x1300),
            capability_mask2: 0x555_5555,
            resp_time_value: 0x12,
            redirect_gid_prefix: 0xfe80_0000_0000_0000,
            redirect_gid_interface_id: 0x0002_c903_0010_0001,
            redirect_tc: 0x40,
            redirect_sl: 9,
            redirect_fl: 0xabcde,
            redirect_lid: 7,
            redirect_p_key: 0xffff,
            redirect_qp: 1,
            redirect_q_key: 0x8001_0000,
            trap_gid_prefix: 0xfe80_0000_0000_0001,
            trap_gid_interface_id: 2,
            trap_tc: 0x20,
            trap_sl: 3,
            trap_fl: 1,
            trap_lid: 1,
            trap_p_key: 0x7fff,
            trap_hl: 0x40,
            trap_qp: 1,
            trap_q_key: 0x8001_0000,
        }
    }

    #[test]
    fn deconstruct() {
        let v = ClassPortInfo::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.capability_mask(), PerfCapabilityMask(0x1300));
        assert!(
            v.capability_mask()
                .contains(PerfCapabilityMask::ALL_PORT_SELECT)
        );
        assert_eq!(v.capability_mask2(), 0x555_5555);
        assert_eq!(v.resp_time_value(), 0x12);
        assert_eq!((v.redirect_sl(), v.redirect_fl()), (9, 0xabcde));
        assert_eq!(ClassPortInfoRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 72];
        repr().emit(&mut ClassPortInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            ClassPortInfo::new_checked(&BYTES[..71]),
            Err(crate::Error::Truncated {
                len: 71,
                needed: 72
            })
        );
    }

    proptest! {
        #[test]
        fn round_trip(repr: ClassPortInfoRepr) {
            prop_assert_round_trip!(ClassPortInfo, ClassPortInfoRepr, repr);
        }
    }
}
