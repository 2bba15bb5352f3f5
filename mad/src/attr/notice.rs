//! Notice (attribute 0x0002, IBA 14.2.5.1): the payload of a trap, such as trap 128 (link state
//! change) and trap 144 (capability mask change).

use crate::Result;
use crate::attr::port_info::CapabilityMask;
use crate::vocabulary::Gid;

open_enum! {
    /// Notice Type (7 bits): how serious the event is.
    pub enum NoticeType(u8) {
        /// Fatal.
        Fatal = 0,
        /// Urgent (trap 128 is urgent).
        Urgent = 1,
        /// Security.
        Security = 2,
        /// Subnet management.
        SubnetManagement = 3,
        /// Informational (trap 144 is informational).
        Informational = 4,
    }
}

layout! {
    /// A view of the first 64 bytes of a Notice, which is all an SMP carries (the IssuerGID at
    /// bytes 64-79 does not fit).
    ///
    /// The `trap*` rows overlay DataDetails: they mean something only for the trap number they
    /// name, as in libibmad.
    pub struct Notice[64];
    {
        /// IsGeneric: an IBA-defined trap rather than a vendor one.
        is_generic / set_is_generic: bool = 0, 1;
        /// Type.
        notice_type / set_notice_type: NoticeType = 1, 7;
        /// ProducerType for a generic notice (1 CA, 2 switch, 3 router, 4 SM), else VendorID.
        producer_type / set_producer_type: u32 = 8, 24;
        /// TrapNumber for a generic notice, else DeviceID.
        trap_number / set_trap_number: u16 = 32, 16;
        /// IssuerLID.
        issuer_lid / set_issuer_lid: u16 = 48, 16;
        /// NoticeToggle.
        notice_toggle / set_notice_toggle: bool = 64, 1;
        /// NoticeCount.
        notice_count / set_notice_count: u16 = 65, 15;
        /// DataDetails: 54 bytes whose layout depends on the trap number.
        data_details / data_details_mut: bytes = 80, 432;
        /// Traps 64 to 67 (a GID in or out of service, a multicast group created or deleted):
        /// the port's GID or the group's MGID.
        trap64_gid / set_trap64_gid: Gid = 128, 128;
        /// Trap 128 (link state change): LIDAddr of the switch.
        trap128_lid_addr / set_trap128_lid_addr: u16 = 80, 16;
        /// Trap 144 (local changes): LIDAddr of the port.
        trap144_lid_addr / set_trap144_lid_addr: u16 = 96, 16;
        /// Trap 144: LocalChanges, whose bit 0 says that something other than the
        /// CapabilityMask changed (OpenSM's `TRAP_144_MASK_OTHER_LOCAL_CHANGES`).
        trap144_local_changes / set_trap144_local_changes: u8 = 120, 8;
        /// Trap 144: the port's new CapabilityMask.
        trap144_capability_mask / set_trap144_capability_mask: CapabilityMask = 128, 32;
        /// Trap 144: ChangeFlags, what changed (bit 3: the SM's priority).
        trap144_change_flags / set_trap144_change_flags: u16 = 176, 16;
        /// Trap 256 (bad M_Key): LIDAddr of the port whose key the SMP failed.
        trap256_lid_addr / set_trap256_lid_addr: u16 = 96, 16;
        /// Trap 256: the failed SMP's Method.
        trap256_method / set_trap256_method: u8 = 128, 8;
        /// Trap 256: the failed SMP's AttributeID.
        trap256_attribute_id / set_trap256_attribute_id: u16 = 144, 16;
        /// Trap 256: the failed SMP's AttributeModifier.
        trap256_attribute_modifier / set_trap256_attribute_modifier: u32 = 160, 32;
        /// Trap 256: the M_Key the failed SMP carried.
        trap256_m_key / set_trap256_m_key: u64 = 192, 64;
    }
}

/// A Notice, every field of the 64 bytes; DataDetails kept raw, to be read through the
/// [`Notice`] view's trap accessors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NoticeRepr {
    /// IsGeneric.
    pub is_generic: bool,
    /// Type.
    pub notice_type: NoticeType,
    /// ProducerType (generic) or VendorID (24 bits).
    pub producer_type: u32,
    /// TrapNumber (generic) or DeviceID.
    pub trap_number: u16,
    /// IssuerLID.
    pub issuer_lid: u16,
    /// NoticeToggle.
    pub notice_toggle: bool,
    /// NoticeCount (15 bits).
    pub notice_count: u16,
    /// DataDetails.
    pub data_details: [u8; 54],
}

impl NoticeRepr {
    /// TrapNumber 128: "link state of at least one port of a switch has changed" (IBA 14.2.5.1).
    pub const TRAP_LINK_STATE_CHANGE: u16 = 128;
    /// TrapNumber 144: "a port's CapabilityMask, NodeDescription or other local attribute
    /// changed" (IBA 14.2.5.1); an SM port's IsSM bit or SM priority among them.
    pub const TRAP_CAPABILITY_CHANGE: u16 = 144;
    /// TrapNumber 256: "bad M_Key" (IBA 14.2.5.1), an SMP failed a port's M_Key check.
    pub const TRAP_BAD_M_KEY: u16 = 256;
    /// ProducerType of a generic notice from a CA.
    pub const PRODUCER_CA: u32 = 1;
    /// ProducerType of a generic notice from a switch (1 is a CA, 3 a router, 4 an SM).
    pub const PRODUCER_SWITCH: u32 = 2;

    /// Reads every field, after checking the buffer length.
    pub fn parse<T: AsRef<[u8]>>(view: &Notice<T>) -> Result<Self> {
        view.check_len()?;
        let mut data_details = [0; 54];
        data_details.copy_from_slice(view.data_details());
        Ok(Self {
            is_generic: view.is_generic(),
            notice_type: view.notice_type(),
            producer_type: view.producer_type(),
            trap_number: view.trap_number(),
            issuer_lid: view.issuer_lid(),
            notice_toggle: view.notice_toggle(),
            notice_count: view.notice_count(),
            data_details,
        })
    }

    /// Writes all 64 bytes.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, view: &mut Notice<T>) {
        view.set_is_generic(self.is_generic);
        view.set_notice_type(self.notice_type);
        view.set_producer_type(self.producer_type);
        view.set_trap_number(self.trap_number);
        view.set_issuer_lid(self.issuer_lid);
        view.set_notice_toggle(self.notice_toggle);
        view.set_notice_count(self.notice_count);
        view.data_details_mut().copy_from_slice(&self.data_details);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A vendor notice with every field distinct.
    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0x03,             // 0: IsGeneric 0 | Type 3
        0x00, 0x02, 0xc9, // 1: VendorID
        0xbe, 0xef,       // 4: DeviceID
        0x00, 0x07,       // 6: IssuerLID
        0x92, 0x34,       // 8: NoticeToggle 1 | NoticeCount 0x1234
        // 10..64: DataDetails, 0x80 + i
        0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
        0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e, 0x8f,
        0x90, 0x91, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97,
        0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f,
        0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7,
        0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf,
        0xb0, 0xb1, 0xb2, 0xb3, 0xb4, 0xb5,
    ];

    fn repr() -> NoticeRepr {
        NoticeRepr {
            is_generic: false,
            notice_type: NoticeType::SubnetManagement,
            producer_type: 0x0002c9,
            trap_number: 0xbeef,
            issuer_lid: 7,
            notice_toggle: true,
            notice_count: 0x1234,
            data_details: core::array::from_fn(|i| 0x80 + i as u8),
        }
    }

    /// Observed from ibsim: trap 128 from switch LID 3 (bytes past 12 are zero).
    fn trap128() -> [u8; 64] {
        let mut b = [0; 64];
        b[..12].copy_from_slice(&[
            0x81, 0x00, 0x00, 0x02, 0x00, 0x80, 0x00, 0x03, 0x00, 0x00, 0x00, 0x03,
        ]);
        b
    }

    /// Observed from ibsim: trap 144 from CA LID 1 whose CapabilityMask became 0x0050C04A.
    fn trap144() -> [u8; 64] {
        let mut b = [0; 64];
        #[rustfmt::skip]
        b[..20].copy_from_slice(&[
            0x84, 0x00, 0x00, 0x01, 0x00, 0x90, 0x00, 0x01, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x50, 0xc0, 0x4a,
        ]);
        b
    }

    #[test]
    fn deconstruct() {
        let v = Notice::new_checked(&BYTES[..]).unwrap();
        assert!(!v.is_generic());
        assert_eq!(v.notice_type(), NoticeType::SubnetManagement);
        assert_eq!(v.producer_type(), 0x0002c9);
        assert_eq!(v.trap_number(), 0xbeef);
        assert_eq!(v.issuer_lid(), 7);
        assert!(v.notice_toggle());
        assert_eq!(v.notice_count(), 0x1234);
        assert_eq!(v.data_details(), &BYTES[10..]);
        assert_eq!(v.trap128_lid_addr(), 0x8081);
        assert_eq!(v.trap144_lid_addr(), 0x8283);
        assert_eq!(v.trap144_capability_mask(), CapabilityMask(0x8687_8889));
        assert_eq!(NoticeRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut Notice::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    #[test]
    fn ibsim_trap_128() {
        let bytes = trap128();
        let v = Notice::new_checked(&bytes[..]).unwrap();
        assert!(v.is_generic());
        assert_eq!(v.notice_type(), NoticeType::Urgent);
        assert_eq!(v.producer_type(), 2);
        assert_eq!(v.trap_number(), 128);
        assert_eq!(v.issuer_lid(), 3);
        assert!(!v.notice_toggle());
        assert_eq!(v.notice_count(), 0);
        assert_eq!(v.trap128_lid_addr(), 3);

        let mut built = [0xa5; 64];
        let mut n = Notice::new_unchecked(&mut built[..]);
        n.clear();
        n.set_is_generic(true);
        n.set_notice_type(NoticeType::Urgent);
        n.set_producer_type(2);
        n.set_trap_number(128);
        n.set_issuer_lid(3);
        n.set_trap128_lid_addr(3);
        assert_eq!(built, bytes);
    }

    #[test]
    fn ibsim_trap_144() {
        let bytes = trap144();
        let v = Notice::new_checked(&bytes[..]).unwrap();
        assert!(v.is_generic());
        assert_eq!(v.notice_type(), NoticeType::Informational);
        assert_eq!(v.producer_type(), 1);
        assert_eq!(v.trap_number(), 144);
        assert_eq!(v.issuer_lid(), 1);
        assert_eq!(v.trap144_lid_addr(), 1);
        assert_eq!(v.trap144_capability_mask(), CapabilityMask(0x0050_c04a));
        assert!(v.trap144_capability_mask().contains(CapabilityMask::IS_SM));

        let mut built = [0xa5; 64];
        let mut n = Notice::new_unchecked(&mut built[..]);
        n.clear();
        n.set_is_generic(true);
        n.set_notice_type(NoticeType::Informational);
        n.set_producer_type(1);
        n.set_trap_number(144);
        n.set_issuer_lid(1);
        n.set_trap144_lid_addr(1);
        n.set_trap144_capability_mask(CapabilityMask(0x0050_c04a));
        assert_eq!(built, bytes);
    }

    #[test]
    fn trap_details_sit_where_opensm_puts_them() {
        // ib_mad_notice_attr_t's ntc_144 and ntc_64_67 (include/iba/ib_types.h): DataDetails
        // starts at byte 10 of the Notice.
        let mut bytes = [0u8; 64];
        let mut n = Notice::new_unchecked(&mut bytes[..]);
        n.set_trap144_lid_addr(0x0102);
        n.set_trap144_local_changes(0x01);
        n.set_trap144_capability_mask(CapabilityMask(0x0304_0506));
        n.set_trap144_change_flags(0x0008);
        let mut details = [0u8; 54];
        details[2..4].copy_from_slice(&[0x01, 0x02]);
        details[5] = 0x01;
        details[6..10].copy_from_slice(&[0x03, 0x04, 0x05, 0x06]);
        details[12..14].copy_from_slice(&[0x00, 0x08]);
        assert_eq!(n.data_details(), &details[..]);

        let gid = Gid(0xfe80_0000_0000_0000_0002_c900_0000_0001);
        let mut bytes = [0u8; 64];
        Notice::new_unchecked(&mut bytes[..]).set_trap64_gid(gid);
        let mut details = [0u8; 54];
        details[6..22].copy_from_slice(&gid.to_bytes());
        assert_eq!(&bytes[10..], &details[..]);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Notice::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    prop_compose! {
        fn any_notice()(
            is_generic: bool,
            notice_type in 0u8..0x80,
            producer_type in 0u32..1 << 24,
            trap_number: u16,
            issuer_lid: u16,
            notice_toggle: bool,
            notice_count in 0u16..1 << 15,
            details in proptest::collection::vec(any::<u8>(), 54),
        ) -> NoticeRepr {
            let mut data_details = [0; 54];
            data_details.copy_from_slice(&details);
            NoticeRepr {
                is_generic,
                notice_type: notice_type.into(),
                producer_type,
                trap_number,
                issuer_lid,
                notice_toggle,
                notice_count,
                data_details,
            }
        }
    }

    proptest! {
        #[test]
        fn round_trip(repr in any_notice()) {
            prop_assert_round_trip!(Notice, NoticeRepr, repr);
        }
    }
}
