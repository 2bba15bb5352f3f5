//! The SA's ClassPortInfo (SA attribute 0x0001): the common 72-byte ClassPortInfo of every GS
//! class (IBA 13.4.8.1), with the SA's meanings for its capability bits (IBA 15.2.5.1).

use super::{Record, SaAttributeId};
use crate::Result;
use crate::perf::class_port_info::{ClassPortInfo, ClassPortInfoRepr};

impl Record for ClassPortInfoRepr {
    const ATTRIBUTE_ID: SaAttributeId = SaAttributeId::ClassPortInfo;
    const SIZE: usize = 72;

    fn parse_bytes(bytes: &[u8]) -> Result<Self> {
        Self::parse(&ClassPortInfo::new_unchecked(bytes))
    }

    fn emit_bytes(&self, bytes: &mut [u8]) {
        self.emit(&mut ClassPortInfo::new_unchecked(bytes));
    }
}

flags! {
    /// The SA's ClassPortInfo CapabilityMask (IBA 15.2.5.1; OpenSM
    /// include/opensm/osm_base.h:715-796): the SA's optional features. Compare with
    /// `ClassPortInfoRepr::capability_mask.0`.
    pub struct SaCapabilityMask(u16) {
        /// IsTrapSupported.
        const IS_TRAP_SUPPORTED = 1 << 0;
        /// IsNoticeSupported: Get and Set of Notice, so InformInfo subscriptions.
        const IS_NOTICE_SUPPORTED = 1 << 1;
        /// IsOptionalRecordsSupported.
        const IS_OPTIONAL_RECORDS_SUPPORTED = 1 << 8;
        /// IsUDMulticastSupported: MCMemberRecord joins.
        const IS_UD_MULTICAST_SUPPORTED = 1 << 9;
        /// IsMultiPathSupported: MultiPathRecord with GetMulti.
        const IS_MULTI_PATH_SUPPORTED = 1 << 10;
        /// IsReinitSupported.
        const IS_REINIT_SUPPORTED = 1 << 11;
        /// IsPortInfoCapMaskMatchSupported: AttributeModifier bit 31 of a PortInfoRecord query
        /// matches CapabilityMask bits instead of the whole value.
        const IS_PORT_INFO_CAP_MASK_MATCH_SUPPORTED = 1 << 13;
    }
}

flags! {
    /// The SA's ClassPortInfo CapabilityMask2 (27 bits; IBA 15.2.5.1; OpenSM
    /// include/opensm/osm_base.h:808-934). Compare with `ClassPortInfoRepr::capability_mask2`.
    pub struct SaCapabilityMask2(u32) {
        /// IsQoSSupported.
        const IS_QOS_SUPPORTED = 1 << 1;
        /// IsReversePathPKeySupported.
        const IS_REVERSE_PATH_P_KEY_SUPPORTED = 1 << 2;
        /// IsMcastTopSupported: the SM sets MulticastFDBTop.
        const IS_MCAST_TOP_SUPPORTED = 1 << 3;
        /// IsHierarchyInfoSupported.
        const IS_HIERARCHY_INFO_SUPPORTED = 1 << 4;
        /// IsAliasGUIDsSupported.
        const IS_ALIAS_GUIDS_SUPPORTED = 1 << 5;
        /// IsFullPortInfoRecordSupported.
        const IS_FULL_PORT_INFO_RECORD_SUPPORTED = 1 << 6;
        /// IsExtendedSpeedsSupported.
        const IS_EXTENDED_SPEEDS_SUPPORTED = 1 << 7;
        /// IsMulticastServiceRecordsSupported.
        const IS_MULTICAST_SERVICE_RECORDS_SUPPORTED = 1 << 8;
        /// IsPortInfoCapMask2MatchSupported.
        const IS_PORT_INFO_CAP_MASK2_MATCH_SUPPORTED = 1 << 10;
        /// IsSendOnlyFullMemberSupported: the kernel gates send-only full joins on it.
        const IS_SEND_ONLY_FULL_MEMBER_SUPPORTED = 1 << 12;
        /// IsLinkWidth2xSupported.
        const IS_LINK_WIDTH_2X_SUPPORTED = 1 << 13;
        /// IsLinkSpeedHDRSupported.
        const IS_LINK_SPEED_HDR_SUPPORTED = 1 << 15;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sa::record::assert_golden;

    /// OpenSM 3.3.23's answer with its defaults (osm_sa_class_port_info.c:73-190):
    /// CapabilityMask 0x2602, CapabilityMask2 0xB5E8 (use_mfttop on), RespTimeValue 16,
    /// RedirectQP 1, both Q_Keys 0x80010000.
    #[rustfmt::skip]
    static OPENSM: [u8; 72] = [
        0x01, 0x02, 0x26, 0x02,                         // 0: versions, CapabilityMask
        0x00, 0x16, 0xbd, 0x10,                         // 4: CapabilityMask2 << 5 | 16
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 8: RedirectGID
        0, 0, 0, 0, 0, 0, 0, 0,                         // 24: TC/SL/FL, LID, P_Key
        0x00, 0x00, 0x00, 0x01,                         // 32: RedirectQP
        0x80, 0x01, 0x00, 0x00,                         // 36: RedirectQ_Key
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 40: TrapGID
        0, 0, 0, 0, 0, 0, 0, 0,                         // 56: TC/SL/FL, LID, P_Key
        0, 0, 0, 0,                                     // 64: TrapHL, TrapQP
        0x80, 0x01, 0x00, 0x00,                         // 68: TrapQ_Key
    ];

    #[test]
    fn opensm_defaults() {
        let v = ClassPortInfo::new_checked(&OPENSM[..]).unwrap();
        let repr = ClassPortInfoRepr::parse(&v).unwrap();
        let caps = SaCapabilityMask(repr.capability_mask.0);
        assert_eq!(
            caps,
            SaCapabilityMask::IS_NOTICE_SUPPORTED
                | SaCapabilityMask::IS_UD_MULTICAST_SUPPORTED
                | SaCapabilityMask::IS_MULTI_PATH_SUPPORTED
                | SaCapabilityMask::IS_PORT_INFO_CAP_MASK_MATCH_SUPPORTED
        );
        let caps2 = SaCapabilityMask2(repr.capability_mask2);
        assert_eq!(caps2.0, 0xb5e8);
        assert!(caps2.contains(
            SaCapabilityMask2::IS_SEND_ONLY_FULL_MEMBER_SUPPORTED
                | SaCapabilityMask2::IS_MCAST_TOP_SUPPORTED
        ));
        assert!(!caps2.contains(SaCapabilityMask2::IS_QOS_SUPPORTED));
        assert_eq!(repr.resp_time_value, 16);
        assert_eq!((repr.redirect_qp, repr.redirect_q_key), (1, 0x8001_0000));
        assert_eq!(ClassPortInfoRepr::SIZE, 72);
        assert_golden(&OPENSM, &repr);
    }
}
