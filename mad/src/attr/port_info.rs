//! PortInfo (attribute 0x0015, IBA 14.2.5.6): a port's addresses, link state, speeds, widths and
//! VL capabilities; the attribute an SM reads and writes most.

open_enum! {
    /// PortInfo PortState (the logical link state).
    pub enum PortState(u8) {
        /// In a Set: leave the state alone.
        NoChange = 0,
        /// Down.
        Down = 1,
        /// Init: the link is up, only SMPs pass.
        Init = 2,
        /// Armed: ready to go Active.
        Armed = 3,
        /// Active: data flows.
        Active = 4,
    }
}

open_enum! {
    /// PortInfo PortPhysicalState. In a Set only `NoChange`, `Polling` and `Disabled` mean
    /// anything.
    pub enum PhysPortState(u8) {
        /// In a Set: leave the state alone.
        NoChange = 0,
        /// Sleep.
        Sleep = 1,
        /// Polling: looking for a peer.
        Polling = 2,
        /// Disabled.
        Disabled = 3,
        /// PortConfigurationTraining.
        PortConfigurationTraining = 4,
        /// LinkUp: the physical link is up (directed routes need this on every hop).
        LinkUp = 5,
        /// LinkErrorRecovery.
        LinkErrorRecovery = 6,
        /// PhyTest.
        PhyTest = 7,
    }
}

flags! {
    /// PortInfo CapabilityMask (bytes 20-23): what the port supports. Bit 0 is reserved.
    pub struct CapabilityMask(u32) {
        /// An SM runs behind this port (set while someone holds the port's `issm` device).
        const IS_SM = 1 << 1;
        /// IsNoticeSupported.
        const IS_NOTICE_SUPPORTED = 1 << 2;
        /// IsTrapSupported.
        const IS_TRAP_SUPPORTED = 1 << 3;
        /// IsOptionalIPDSupported.
        const IS_OPTIONAL_IPD_SUPPORTED = 1 << 4;
        /// IsAutomaticMigrationSupported.
        const IS_AUTOMATIC_MIGRATION_SUPPORTED = 1 << 5;
        /// IsSLMappingSupported: the port has SL-to-VL tables. OpenSM checks it on CA ports and
        /// switch port 0 before programming SL2VL.
        const IS_SL_MAPPING_SUPPORTED = 1 << 6;
        /// IsM_KeyNVRAM.
        const IS_M_KEY_NVRAM = 1 << 7;
        /// IsP_KeyNVRAM.
        const IS_P_KEY_NVRAM = 1 << 8;
        /// IsLedInfoSupported.
        const IS_LED_INFO_SUPPORTED = 1 << 9;
        /// IsSMdisabled: the port does not take SMPs (newer kernels split SMI and GSI ports).
        const IS_SM_DISABLED = 1 << 10;
        /// IsSystemImageGUIDSupported.
        const IS_SYSTEM_IMAGE_GUID_SUPPORTED = 1 << 11;
        /// IsPKeySwitchExternalPortTrapSupported.
        const IS_P_KEY_SWITCH_EXTERNAL_PORT_TRAP_SUPPORTED = 1 << 12;
        /// IsCableInfoSupported.
        const IS_CABLE_INFO_SUPPORTED = 1 << 13;
        /// IsExtendedSpeedsSupported: the LinkSpeedExt fields are valid.
        const IS_EXTENDED_SPEEDS_SUPPORTED = 1 << 14;
        /// IsCapabilityMask2Supported: CapabilityMask2 is valid.
        const IS_CAPABILITY_MASK2_SUPPORTED = 1 << 15;
        /// IsCommunicationManagementSupported.
        const IS_COMMUNICATION_MANAGEMENT_SUPPORTED = 1 << 16;
        /// IsSNMPTunnelingSupported.
        const IS_SNMP_TUNNELING_SUPPORTED = 1 << 17;
        /// IsReinitSupported.
        const IS_REINIT_SUPPORTED = 1 << 18;
        /// IsDeviceManagementSupported.
        const IS_DEVICE_MANAGEMENT_SUPPORTED = 1 << 19;
        /// IsVendorClassSupported.
        const IS_VENDOR_CLASS_SUPPORTED = 1 << 20;
        /// IsDRNoticeSupported.
        const IS_DR_NOTICE_SUPPORTED = 1 << 21;
        /// IsCapabilityMaskNoticeSupported: the port sends trap 144 when this mask changes.
        const IS_CAPABILITY_MASK_NOTICE_SUPPORTED = 1 << 22;
        /// IsBootManagementSupported.
        const IS_BOOT_MANAGEMENT_SUPPORTED = 1 << 23;
        /// IsLinkRoundTripLatencySupported.
        const IS_LINK_ROUND_TRIP_LATENCY_SUPPORTED = 1 << 24;
        /// IsClientReregistrationSupported.
        const IS_CLIENT_REREGISTRATION_SUPPORTED = 1 << 25;
        /// IsOtherLocalChangesNoticeSupported.
        const IS_OTHER_LOCAL_CHANGES_NOTICE_SUPPORTED = 1 << 26;
        /// IsLinkSpeedWidthPairsTableSupported.
        const IS_LINK_SPEED_WIDTH_PAIRS_TABLE_SUPPORTED = 1 << 27;
        /// IsVendorSpecificMadsTableSupported.
        const IS_VENDOR_SPECIFIC_MADS_TABLE_SUPPORTED = 1 << 28;
        /// IsMcastPkeyTrapSuppressionSupported.
        const IS_MCAST_PKEY_TRAP_SUPPRESSION_SUPPORTED = 1 << 29;
        /// IsMulticastFDBTopSupported.
        const IS_MULTICAST_FDB_TOP_SUPPORTED = 1 << 30;
        /// IsHierarchyInfoSupported.
        const IS_HIERARCHY_INFO_SUPPORTED = 1 << 31;
    }
}

flags! {
    /// PortInfo CapabilityMask2 (bytes 60-61), valid when CapabilityMask has
    /// [`IS_CAPABILITY_MASK2_SUPPORTED`](CapabilityMask::IS_CAPABILITY_MASK2_SUPPORTED).
    pub struct CapabilityMask2(u16) {
        /// IsSetNodeDescriptionSupported.
        const IS_SET_NODE_DESCRIPTION_SUPPORTED = 1 << 0;
        /// IsPortInfoExtendedSupported.
        const IS_PORT_INFO_EXTENDED_SUPPORTED = 1 << 1;
        /// IsVirtualizationSupported.
        const IS_VIRTUALIZATION_SUPPORTED = 1 << 2;
        /// IsSwitchPortStateTableSupported.
        const IS_SWITCH_PORT_STATE_TABLE_SUPPORTED = 1 << 3;
        /// IsLinkWidth2xSupported.
        const IS_LINK_WIDTH_2X_SUPPORTED = 1 << 4;
        /// IsLinkSpeedHDRSupported.
        const IS_LINK_SPEED_HDR_SUPPORTED = 1 << 5;
        /// IsMKeyProtectBitsExtSupported.
        const IS_M_KEY_PROTECT_BITS_EXT_SUPPORTED = 1 << 6;
        /// IsEnhancedTrap128Supported.
        const IS_ENHANCED_TRAP128_SUPPORTED = 1 << 7;
        /// IsPartitionTopSupported.
        const IS_PARTITION_TOP_SUPPORTED = 1 << 8;
        /// IsEnhancedQoSArbiterSupported.
        const IS_ENHANCED_QOS_ARBITER_SUPPORTED = 1 << 9;
        /// IsLinkSpeedNDRSupported.
        const IS_LINK_SPEED_NDR_SUPPORTED = 1 << 10;
    }
}

layout! {
    /// A view of a PortInfo attribute (64 bytes; bits 274-276, 416-418, 448 and 504-506 are
    /// reserved).
    ///
    /// Encodings (speeds, widths, MTUs, VL counts) are kept as the raw numbers of the IBA so that
    /// a Set echoes exactly what a Get returned; the QoS layer gives them meaning.
    pub struct PortInfo[64];
    /// A PortInfo attribute, every field.
    pub struct PortInfoRepr;
    {
        /// M_Key.
        m_key / set_m_key: u64 = 0, 64;
        /// GidPrefix (SubnetPrefix).
        gid_prefix / set_gid_prefix: u64 = 64, 64;
        /// LID (base LID of the port).
        lid / set_lid: u16 = 128, 16;
        /// MasterSMLID: where the port sends traps.
        master_sm_lid / set_master_sm_lid: u16 = 144, 16;
        /// CapabilityMask.
        capability_mask / set_capability_mask: CapabilityMask = 160, 32;
        /// DiagCode.
        diag_code / set_diag_code: u16 = 192, 16;
        /// M_KeyLeasePeriod.
        m_key_lease_period / set_m_key_lease_period: u16 = 208, 16;
        /// LocalPortNum: the port the SMP arrived on.
        local_port_num / set_local_port_num: u8 = 224, 8;
        /// LinkWidthEnabled mask (1 = 1x, 2 = 4x, 4 = 8x, 8 = 12x, 16 = 2x; 0 no change,
        /// 255 = set to supported).
        link_width_enabled / set_link_width_enabled: u8 = 232, 8;
        /// LinkWidthSupported mask.
        link_width_supported / set_link_width_supported: u8 = 240, 8;
        /// LinkWidthActive (one bit of the width mask).
        link_width_active / set_link_width_active: u8 = 248, 8;
        /// LinkSpeedSupported mask (1 SDR, 2 DDR, 4 QDR).
        link_speed_supported / set_link_speed_supported: u8 = 256, 4;
        /// PortState.
        port_state / set_port_state: PortState = 260, 4;
        /// PortPhysicalState.
        port_phys_state / set_port_phys_state: PhysPortState = 264, 4;
        /// LinkDownDefaultState (0 no change, 1 Sleep, 2 Polling).
        link_down_default_state / set_link_down_default_state: u8 = 268, 4;
        /// M_KeyProtectBits.
        m_key_protect_bits / set_m_key_protect_bits: u8 = 272, 2;
        /// LMC: 2^LMC LIDs per port.
        lmc / set_lmc: u8 = 277, 3;
        /// LinkSpeedActive (0 when an extended speed is active).
        link_speed_active / set_link_speed_active: u8 = 280, 4;
        /// LinkSpeedEnabled mask (0 no change, 15 = set to supported).
        link_speed_enabled / set_link_speed_enabled: u8 = 284, 4;
        /// NeighborMTU (1 = 256 ... 5 = 4096).
        neighbor_mtu / set_neighbor_mtu: u8 = 288, 4;
        /// MasterSMSL: the SL for traps to the SM.
        master_sm_sl / set_master_sm_sl: u8 = 292, 4;
        /// VLCap (1 = VL0, 2 = VL0-1, 3 = VL0-3, 4 = VL0-7, 5 = VL0-14).
        vl_cap / set_vl_cap: u8 = 296, 4;
        /// InitType.
        init_type / set_init_type: u8 = 300, 4;
        /// VLHighLimit: how much the high-priority VLArb table may send (in 4096-byte units)
        /// before a low-priority packet must go.
        vl_high_limit / set_vl_high_limit: u8 = 304, 8;
        /// VLArbitrationHighCap: entries in the high-priority VLArb table.
        vl_arbitration_high_cap / set_vl_arbitration_high_cap: u8 = 312, 8;
        /// VLArbitrationLowCap: entries in the low-priority VLArb table.
        vl_arbitration_low_cap / set_vl_arbitration_low_cap: u8 = 320, 8;
        /// InitTypeReply.
        init_type_reply / set_init_type_reply: u8 = 328, 4;
        /// MTUCap.
        mtu_cap / set_mtu_cap: u8 = 332, 4;
        /// VLStallCount: consecutive head-of-queue drops that stall a VL.
        vl_stall_count / set_vl_stall_count: u8 = 336, 3;
        /// HOQLife: head-of-queue lifetime, 4.096 us x 2^n (20 or more: infinite).
        hoq_life / set_hoq_life: u8 = 339, 5;
        /// OperationalVLs (encoded as VLCap; 0 = no change).
        operational_vls / set_operational_vls: u8 = 344, 4;
        /// PartitionEnforcementInbound.
        partition_enforcement_inbound / set_partition_enforcement_inbound: bool = 348, 1;
        /// PartitionEnforcementOutbound.
        partition_enforcement_outbound / set_partition_enforcement_outbound: bool = 349, 1;
        /// FilterRawInbound.
        filter_raw_inbound / set_filter_raw_inbound: bool = 350, 1;
        /// FilterRawOutbound.
        filter_raw_outbound / set_filter_raw_outbound: bool = 351, 1;
        /// M_KeyViolations.
        m_key_violations / set_m_key_violations: u16 = 352, 16;
        /// P_KeyViolations.
        p_key_violations / set_p_key_violations: u16 = 368, 16;
        /// Q_KeyViolations.
        q_key_violations / set_q_key_violations: u16 = 384, 16;
        /// GUIDCap: GUIDInfo entries.
        guid_cap / set_guid_cap: u8 = 400, 8;
        /// ClientReregister.
        client_reregister / set_client_reregister: bool = 408, 1;
        /// MulticastPKeyTrapSuppressionEnabled.
        multicast_pkey_trap_suppression_enabled
            / set_multicast_pkey_trap_suppression_enabled: u8 = 409, 2;
        /// SubnetTimeOut.
        subnet_timeout / set_subnet_timeout: u8 = 411, 5;
        /// RespTimeValue.
        resp_time_value / set_resp_time_value: u8 = 419, 5;
        /// LocalPhyErrors threshold.
        local_phy_errors / set_local_phy_errors: u8 = 424, 4;
        /// OverrunErrors threshold.
        overrun_errors / set_overrun_errors: u8 = 428, 4;
        /// MaxCreditHint.
        max_credit_hint / set_max_credit_hint: u16 = 432, 16;
        /// LinkSpeedExtActive2 (XDR, IBA 1.7).
        link_speed_ext_active2 / set_link_speed_ext_active2: u8 = 449, 2;
        /// LinkSpeedExtSupported2 (XDR).
        link_speed_ext_supported2 / set_link_speed_ext_supported2: u8 = 451, 2;
        /// LinkSpeedExtEnabled2 (XDR).
        link_speed_ext_enabled2 / set_link_speed_ext_enabled2: u8 = 453, 3;
        /// LinkRoundTripLatency.
        link_round_trip_latency / set_link_round_trip_latency: u32 = 456, 24;
        /// CapabilityMask2.
        capability_mask2 / set_capability_mask2: CapabilityMask2 = 480, 16;
        /// LinkSpeedExtActive (1 FDR, 2 EDR, 4 HDR, 8 NDR).
        link_speed_ext_active / set_link_speed_ext_active: u8 = 496, 4;
        /// LinkSpeedExtSupported mask.
        link_speed_ext_supported / set_link_speed_ext_supported: u8 = 500, 4;
        /// LinkSpeedExtEnabled mask (0 no change, 30 disable, 31 = set to supported).
        link_speed_ext_enabled / set_link_speed_ext_enabled: u8 = 507, 5;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[rustfmt::skip]
    static BYTES: [u8; 64] = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, // 0: M_Key
        0xfe, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, // 8: GidPrefix
        0x00, 0x03,                                     // 16: LID 3
        0x00, 0x01,                                     // 18: MasterSMLID 1
        0x00, 0x50, 0xc0, 0x4a,                         // 20: CapabilityMask (ibsim CA + IsSM)
        0x0a, 0x0b,                                     // 24: DiagCode
        0x0c, 0x0d,                                     // 26: M_KeyLeasePeriod
        0x05,                                           // 28: LocalPortNum
        0x03,                                           // 29: LinkWidthEnabled 1x|4x
        0x1f,                                           // 30: LinkWidthSupported
        0x02,                                           // 31: LinkWidthActive 4x
        0x74,                                           // 32: LinkSpeedSupported 7 | PortState 4
        0x52,                                           // 33: PhysState 5 | LinkDownDefault 2
        0x83,                                           // 34: ProtectBits 0b10, reserved 000, LMC 3
        0x43,                                           // 35: SpeedActive 4 | SpeedEnabled 3
        0x4a,                                           // 36: NeighborMTU 4 | MasterSMSL 10
        0x36,                                           // 37: VLCap 3 | InitType 6
        0x09,                                           // 38: VLHighLimit
        0x08,                                           // 39: VLArbitrationHighCap
        0x10,                                           // 40: VLArbitrationLowCap
        0xb4,                                           // 41: InitTypeReply 11 | MTUCap 4
        0xf2,                                           // 42: VLStallCount 111 | HOQLife 10010
        0x3a,                                           // 43: OperVLs 3 | PE in/out 1 0 | FR 1 0
        0xe1, 0xe2,                                     // 44: M_KeyViolations
        0xe3, 0xe4,                                     // 46: P_KeyViolations
        0xe5, 0xe6,                                     // 48: Q_KeyViolations
        0x20,                                           // 50: GUIDCap
        0xd1,                                           // 51: Rereg 1, McastTrap 10, STO 10001
        0x13,                                           // 52: reserved 000 | RespTimeValue 0x13
        0x8c,                                           // 53: LocalPhyErrors 8 | OverrunErrors 12
        0x13, 0x57,                                     // 54: MaxCreditHint
        0x3e,                                           // 56: resv, ExtAct2 01 Sup2 11 En2 110
        0x24, 0x68, 0xac,                               // 57: LinkRoundTripLatency
        0x04, 0x30,                                     // 60: CapabilityMask2
        0x27,                                           // 62: ExtActive 2 | ExtSupported 7
        0x1e,                                           // 63: reserved 000 | LinkSpeedExtEnabled 30
    ];

    fn repr() -> PortInfoRepr {
        PortInfoRepr {
            m_key: 0x0102_0304_0506_0708,
            gid_prefix: 0xfe80_0000_0000_0001,
            lid: 3,
            master_sm_lid: 1,
            capability_mask: CapabilityMask(0x0050_c04a),
            diag_code: 0x0a0b,
            m_key_lease_period: 0x0c0d,
            local_port_num: 5,
            link_width_enabled: 3,
            link_width_supported: 0x1f,
            link_width_active: 2,
            link_speed_supported: 7,
            port_state: PortState::Active,
            port_phys_state: PhysPortState::LinkUp,
            link_down_default_state: 2,
            m_key_protect_bits: 2,
            lmc: 3,
            link_speed_active: 4,
            link_speed_enabled: 3,
            neighbor_mtu: 4,
            master_sm_sl: 10,
            vl_cap: 3,
            init_type: 6,
            vl_high_limit: 9,
            vl_arbitration_high_cap: 8,
            vl_arbitration_low_cap: 16,
            init_type_reply: 11,
            mtu_cap: 4,
            vl_stall_count: 7,
            hoq_life: 0x12,
            operational_vls: 3,
            partition_enforcement_inbound: true,
            partition_enforcement_outbound: false,
            filter_raw_inbound: true,
            filter_raw_outbound: false,
            m_key_violations: 0xe1e2,
            p_key_violations: 0xe3e4,
            q_key_violations: 0xe5e6,
            guid_cap: 32,
            client_reregister: true,
            multicast_pkey_trap_suppression_enabled: 2,
            subnet_timeout: 0x11,
            resp_time_value: 0x13,
            local_phy_errors: 8,
            overrun_errors: 12,
            max_credit_hint: 0x1357,
            link_speed_ext_active2: 1,
            link_speed_ext_supported2: 3,
            link_speed_ext_enabled2: 6,
            link_round_trip_latency: 0x24_68ac,
            capability_mask2: CapabilityMask2(0x0430),
            link_speed_ext_active: 2,
            link_speed_ext_supported: 7,
            link_speed_ext_enabled: 30,
        }
    }

    #[test]
    fn deconstruct() {
        let v = PortInfo::new_checked(&BYTES[..]).unwrap();
        assert_eq!(v.m_key(), 0x0102_0304_0506_0708);
        assert_eq!(v.gid_prefix(), 0xfe80_0000_0000_0001);
        assert_eq!(v.lid(), 3);
        assert_eq!(v.master_sm_lid(), 1);
        assert_eq!(v.capability_mask(), CapabilityMask(0x0050_c04a));
        assert_eq!(v.diag_code(), 0x0a0b);
        assert_eq!(v.m_key_lease_period(), 0x0c0d);
        assert_eq!(v.local_port_num(), 5);
        assert_eq!(v.link_width_enabled(), 3);
        assert_eq!(v.link_width_supported(), 0x1f);
        assert_eq!(v.link_width_active(), 2);
        assert_eq!(v.link_speed_supported(), 7);
        assert_eq!(v.port_state(), PortState::Active);
        assert_eq!(v.port_phys_state(), PhysPortState::LinkUp);
        assert_eq!(v.link_down_default_state(), 2);
        assert_eq!(v.m_key_protect_bits(), 2);
        assert_eq!(v.lmc(), 3);
        assert_eq!(v.link_speed_active(), 4);
        assert_eq!(v.link_speed_enabled(), 3);
        assert_eq!(v.neighbor_mtu(), 4);
        assert_eq!(v.master_sm_sl(), 10);
        assert_eq!(v.vl_cap(), 3);
        assert_eq!(v.init_type(), 6);
        assert_eq!(v.vl_high_limit(), 9);
        assert_eq!(v.vl_arbitration_high_cap(), 8);
        assert_eq!(v.vl_arbitration_low_cap(), 16);
        assert_eq!(v.init_type_reply(), 11);
        assert_eq!(v.mtu_cap(), 4);
        assert_eq!(v.vl_stall_count(), 7);
        assert_eq!(v.hoq_life(), 0x12);
        assert_eq!(v.operational_vls(), 3);
        assert!(v.partition_enforcement_inbound());
        assert!(!v.partition_enforcement_outbound());
        assert!(v.filter_raw_inbound());
        assert!(!v.filter_raw_outbound());
        assert_eq!(v.m_key_violations(), 0xe1e2);
        assert_eq!(v.p_key_violations(), 0xe3e4);
        assert_eq!(v.q_key_violations(), 0xe5e6);
        assert_eq!(v.guid_cap(), 32);
        assert!(v.client_reregister());
        assert_eq!(v.multicast_pkey_trap_suppression_enabled(), 2);
        assert_eq!(v.subnet_timeout(), 0x11);
        assert_eq!(v.resp_time_value(), 0x13);
        assert_eq!(v.local_phy_errors(), 8);
        assert_eq!(v.overrun_errors(), 12);
        assert_eq!(v.max_credit_hint(), 0x1357);
        assert_eq!(v.link_speed_ext_active2(), 1);
        assert_eq!(v.link_speed_ext_supported2(), 3);
        assert_eq!(v.link_speed_ext_enabled2(), 6);
        assert_eq!(v.link_round_trip_latency(), 0x24_68ac);
        assert_eq!(v.capability_mask2(), CapabilityMask2(0x0430));
        assert_eq!(v.link_speed_ext_active(), 2);
        assert_eq!(v.link_speed_ext_supported(), 7);
        assert_eq!(v.link_speed_ext_enabled(), 30);
        assert_eq!(PortInfoRepr::parse(&v), Ok(repr()));
    }

    #[test]
    fn construct() {
        let mut bytes = [0xa5; 64];
        repr().emit(&mut PortInfo::new_unchecked(&mut bytes[..]));
        assert_eq!(bytes, BYTES);
    }

    /// Every row, set to all ones on a zeroed buffer, must light exactly the non-reserved bits:
    /// this catches a gap or an overlap in the table that distinct golden values could miss.
    #[test]
    fn table_covers_every_non_reserved_bit() {
        let mut ones = [0; 64];
        let mut v = PortInfo::new_unchecked(&mut ones[..]);
        let all = PortInfoRepr::parse(&PortInfo::new_checked(&[0xff; 64][..]).unwrap()).unwrap();
        all.emit(&mut v);
        let mut expected = [0xff; 64];
        expected[34] = 0b1100_0111; // bits 274-276
        expected[52] = 0b0001_1111; // bits 416-418
        expected[56] = 0b0111_1111; // bit 448
        expected[63] = 0b0001_1111; // bits 504-506
        assert_eq!(ones, expected);
    }

    #[test]
    fn truncated() {
        assert_eq!(
            PortInfo::new_checked(&BYTES[..63]),
            Err(crate::Error::Truncated {
                len: 63,
                needed: 64
            })
        );
    }

    #[test]
    fn capability_masks() {
        // ibsim's CA port mask: IsTrap, IsSLMapping, IsExtendedSpeeds, IsCapabilityMask2,
        // IsVendorClass and IsCapabilityMaskNotice.
        let ca = CapabilityMask(0x0050_c048);
        assert!(ca.contains(CapabilityMask::IS_SL_MAPPING_SUPPORTED));
        assert!(ca.contains(CapabilityMask::IS_EXTENDED_SPEEDS_SUPPORTED));
        assert!(!ca.contains(CapabilityMask::IS_SM));
        let mut with_sm = ca;
        with_sm |= CapabilityMask::IS_SM;
        assert_eq!(with_sm, CapabilityMask(0x0050_c04a));
        assert_eq!(CapabilityMask::IS_SL_MAPPING_SUPPORTED.0, 0x40);
        assert_eq!(
            format!("{ca:?}"),
            "CapabilityMask(0x50c048: IS_TRAP_SUPPORTED | IS_SL_MAPPING_SUPPORTED | \
             IS_EXTENDED_SPEEDS_SUPPORTED | IS_CAPABILITY_MASK2_SUPPORTED | \
             IS_VENDOR_CLASS_SUPPORTED | IS_CAPABILITY_MASK_NOTICE_SUPPORTED)"
        );
        assert_eq!(
            CapabilityMask2::IS_SWITCH_PORT_STATE_TABLE_SUPPORTED
                | CapabilityMask2::IS_LINK_WIDTH_2X_SUPPORTED
                | CapabilityMask2::IS_LINK_SPEED_HDR_SUPPORTED,
            CapabilityMask2(0x38)
        );
        assert_eq!(format!("{:?}", CapabilityMask2(0)), "CapabilityMask2(0x0)");
    }

    proptest! {
        #[test]
        fn round_trip(repr: PortInfoRepr) {
            prop_assert_round_trip!(PortInfo, PortInfoRepr, repr);
        }
    }
}
