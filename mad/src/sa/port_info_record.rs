//! PortInfoRecord (SA attribute 0x0012, IBA 15.2.5.3): a port's PortInfo under its node's LID.

use crate::attr::port_info::{PortInfo, PortInfoRepr};

sa_record! {
    /// A view of a PortInfoRecord (72 bytes: EndportLID, PortNum, Options, PortInfo at 4, 4
    /// bytes of padding).
    pub struct PortInfoRecord[72];
    /// A PortInfoRecord.
    pub struct PortInfoRecordRepr = SaAttributeId::PortInfoRecord;
    {
        /// EndportLID: the base LID of the node's port (a switch's port 0 for all its ports).
        lid / set_lid: u16 = 0, 16;
        /// PortNum.
        port_num / set_port_num: u8 = 16, 8;
        /// Options: bit 7 asks for LinkSpeed fields without the QDR bit OpenSM adds for ports
        /// with an extended speed (OpenSM osm_sa_portinfo_record.c:107-125).
        options / set_options: u8 = 24, 8;
    }
    {
        /// PortInfo.
        port_info / port_info_mut: PortInfo(PortInfoRepr) = 4;
    }
}

flags! {
    /// PortInfoRecord ComponentMask bits (include/iba/ib_types.h:2690-2747): LID, PortNum and
    /// Options, then every PortInfo field in table order from bit 3. Reserved fields (bits 19,
    /// 44, 46, 51, 56) have no name.
    pub struct PortInfoRecordMask(u64) {
        /// EndportLID.
        const LID = 1 << 0;
        /// PortNum.
        const PORT_NUM = 1 << 1;
        /// Options.
        const OPTIONS = 1 << 2;
        /// M_Key.
        const M_KEY = 1 << 3;
        /// GidPrefix.
        const GID_PREFIX = 1 << 4;
        /// LID (the port's base LID).
        const BASE_LID = 1 << 5;
        /// MasterSMLID.
        const MASTER_SM_LID = 1 << 6;
        /// CapabilityMask.
        const CAPABILITY_MASK = 1 << 7;
        /// DiagCode.
        const DIAG_CODE = 1 << 8;
        /// M_KeyLeasePeriod.
        const M_KEY_LEASE_PERIOD = 1 << 9;
        /// LocalPortNum.
        const LOCAL_PORT_NUM = 1 << 10;
        /// LinkWidthEnabled.
        const LINK_WIDTH_ENABLED = 1 << 11;
        /// LinkWidthSupported.
        const LINK_WIDTH_SUPPORTED = 1 << 12;
        /// LinkWidthActive.
        const LINK_WIDTH_ACTIVE = 1 << 13;
        /// LinkSpeedSupported.
        const LINK_SPEED_SUPPORTED = 1 << 14;
        /// PortState.
        const PORT_STATE = 1 << 15;
        /// PortPhysicalState.
        const PORT_PHYS_STATE = 1 << 16;
        /// LinkDownDefaultState.
        const LINK_DOWN_DEFAULT_STATE = 1 << 17;
        /// M_KeyProtectBits.
        const M_KEY_PROTECT_BITS = 1 << 18;
        /// LMC.
        const LMC = 1 << 20;
        /// LinkSpeedActive.
        const LINK_SPEED_ACTIVE = 1 << 21;
        /// LinkSpeedEnabled.
        const LINK_SPEED_ENABLED = 1 << 22;
        /// NeighborMTU.
        const NEIGHBOR_MTU = 1 << 23;
        /// MasterSMSL.
        const MASTER_SM_SL = 1 << 24;
        /// VLCap.
        const VL_CAP = 1 << 25;
        /// InitType.
        const INIT_TYPE = 1 << 26;
        /// VLHighLimit.
        const VL_HIGH_LIMIT = 1 << 27;
        /// VLArbitrationHighCap.
        const VL_ARB_HIGH_CAP = 1 << 28;
        /// VLArbitrationLowCap.
        const VL_ARB_LOW_CAP = 1 << 29;
        /// InitTypeReply (ignored by OpenSM).
        const INIT_TYPE_REPLY = 1 << 30;
        /// MTUCap.
        const MTU_CAP = 1 << 31;
        /// VLStallCount.
        const VL_STALL_COUNT = 1 << 32;
        /// HOQLife.
        const HOQ_LIFE = 1 << 33;
        /// OperationalVLs.
        const OPERATIONAL_VLS = 1 << 34;
        /// PartitionEnforcementInbound.
        const PARTITION_ENFORCEMENT_INBOUND = 1 << 35;
        /// PartitionEnforcementOutbound.
        const PARTITION_ENFORCEMENT_OUTBOUND = 1 << 36;
        /// FilterRawInbound.
        const FILTER_RAW_INBOUND = 1 << 37;
        /// FilterRawOutbound.
        const FILTER_RAW_OUTBOUND = 1 << 38;
        /// M_KeyViolations.
        const M_KEY_VIOLATIONS = 1 << 39;
        /// P_KeyViolations.
        const P_KEY_VIOLATIONS = 1 << 40;
        /// Q_KeyViolations.
        const Q_KEY_VIOLATIONS = 1 << 41;
        /// GUIDCap.
        const GUID_CAP = 1 << 42;
        /// ClientReregister (ignored by OpenSM).
        const CLIENT_REREGISTER = 1 << 43;
        /// SubnetTimeOut.
        const SUBNET_TIMEOUT = 1 << 45;
        /// RespTimeValue.
        const RESP_TIME_VALUE = 1 << 47;
        /// LocalPhyErrors.
        const LOCAL_PHY_ERRORS = 1 << 48;
        /// OverrunErrors.
        const OVERRUN_ERRORS = 1 << 49;
        /// MaxCreditHint (ignored by OpenSM).
        const MAX_CREDIT_HINT = 1 << 50;
        /// LinkRoundTripLatency (ignored by OpenSM).
        const LINK_ROUND_TRIP_LATENCY = 1 << 52;
        /// CapabilityMask2.
        const CAPABILITY_MASK2 = 1 << 53;
        /// LinkSpeedExtActive.
        const LINK_SPEED_EXT_ACTIVE = 1 << 54;
        /// LinkSpeedExtSupported.
        const LINK_SPEED_EXT_SUPPORTED = 1 << 55;
        /// LinkSpeedExtEnabled.
        const LINK_SPEED_EXT_ENABLED = 1 << 57;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::port_info::PortState;
    use crate::sa::SaAttributeId;
    use crate::sa::record::assert_golden;

    /// Switch LID 7, port 3, Options 0x80; in PortInfo only M_Key, GidPrefix, LID 7,
    /// MasterSMLID 1, PortState Active and LinkSpeedSupported 1 are set.
    fn bytes() -> [u8; 72] {
        let mut b = [0; 72];
        b[..4].copy_from_slice(&[0x00, 0x07, 0x03, 0x80]);
        b[4..12].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x09]);
        b[12..20].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0]);
        b[20..24].copy_from_slice(&[0x00, 0x07, 0x00, 0x01]);
        b[36] = 0x14;
        b
    }

    #[test]
    fn deconstruct() {
        let bytes = bytes();
        let v = PortInfoRecord::new_checked(&bytes[..]).unwrap();
        assert_eq!((v.lid(), v.port_num(), v.options()), (7, 3, 0x80));
        let port_info = v.port_info();
        assert_eq!(port_info.m_key(), 9);
        assert_eq!(port_info.gid_prefix(), 0xfe80_0000_0000_0000);
        assert_eq!((port_info.lid(), port_info.master_sm_lid()), (7, 1));
        assert_eq!(port_info.link_speed_supported(), 1);
        assert_eq!(port_info.port_state(), PortState::Active);
    }

    #[test]
    fn golden() {
        let bytes = bytes();
        let repr = PortInfoRecordRepr {
            lid: 7,
            port_num: 3,
            options: 0x80,
            port_info: PortInfoRepr::parse(&PortInfo::new_checked(&bytes[4..68]).unwrap()).unwrap(),
        };
        assert_eq!(repr.port_info.lid, 7);
        assert_golden(&bytes, &repr);
        assert_eq!(PortInfoRecordRepr::SIZE, 72);
        assert_eq!(
            PortInfoRecordRepr::ATTRIBUTE_ID,
            SaAttributeId::PortInfoRecord
        );
    }

    #[test]
    fn mask_bits_follow_the_port_info_fields() {
        assert_eq!(PortInfoRecordMask::CAPABILITY_MASK.0, 1 << 7);
        assert_eq!(PortInfoRecordMask::PORT_STATE.0, 1 << 15);
        assert_eq!(PortInfoRecordMask::LMC.0, 1 << 20);
        assert_eq!(PortInfoRecordMask::NEIGHBOR_MTU.0, 1 << 23);
        assert_eq!(PortInfoRecordMask::MTU_CAP.0, 1 << 31);
        assert_eq!(PortInfoRecordMask::CAPABILITY_MASK2.0, 1 << 53);
    }
}
